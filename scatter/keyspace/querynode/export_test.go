package querynode

// SetCopyHook has fn called after each export frame a copy of n takes
// in, before the copy goes on.
func SetCopyHook(n *Node, fn func(source string, frame int)) { n.copyHook = fn }

// Scans returns how many scans of its store n's exports have made.
func Scans(n *Node) int64 { return n.scans.Load() }
