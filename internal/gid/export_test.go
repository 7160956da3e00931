package gid

// FromStack is the portable reading, which Current is on architectures
// without assembly; exported here so that its tests run everywhere.
var FromStack = fromStack
