package policy

// Index reports the position of it in the Heap holding it: 0 or more in
// the binary heap, -2 or less in the sorted run, -1 when it has left one.
// Tests use it to see what a panic left behind.
func Index(it *Item) int { return int(it.index) }
