package querynode

// SetCopyHook has fn called after each export frame a copy of n takes
// in, before the copy goes on.
func SetCopyHook(n *Node, fn func(source string, frame int)) { n.copyHook = fn }
