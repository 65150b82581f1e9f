package localpool

import (
	"context"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// CheckAt is [Pool.Check] against the find API at base, for a test that
// checks an answer source of its own (one that ignores removals, say).
func (p *Pool) CheckAt(ctx context.Context, base string, entries []publishernode.Entry) Check {
	return p.checkAt(ctx, base, entries)
}
