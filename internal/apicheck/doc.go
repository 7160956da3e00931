// Package apicheck holds the test that pins crisp's public API: every
// exported name of every public package, with the method sets of its
// types, including methods promoted from embedded fields. A change to
// the API shows up as a diff against testdata/api.txt; a deliberate one
// is recorded with
//
//	go test ./internal/apicheck -update
//
// and listed in CHANGES.md. Plumbing that leaks onto a public type (a
// method promoted from an unexported embedded type, say) fails the test.
package apicheck
