//go:build !linux

package gid_test

func threadID() int { return -1 }
