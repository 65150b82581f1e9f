package indexernode

import "github.com/indexkit/indexkit/handoff"

// handoffOption is the receiver's option for a list of frozen indexers'
// find URLs or a file of them (path), nil for neither: any FrozenURL is
// accepted.
func handoffOption(list []string, path string) handoff.Option {
	switch {
	case len(list) > 0:
		return handoff.WithFrozenIndexers(list...) // the handoff package checks the URLs
	case path != "":
		return handoff.WithFrozenIndexersFile(path)
	}
	return nil
}
