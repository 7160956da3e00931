package remote_test

func nodeMain() bool { return false }
