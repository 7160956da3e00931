package policy

// Index reports the position of it in the Heap holding it, -1 when it has
// left one. Tests use it to see what a panic left behind.
func Index(it *Item) int { return it.index }
