// An assembly file, empty: it lets yield.go declare goyield without a
// body, as go:linkname needs.
