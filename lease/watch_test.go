package lease_test

import (
	"testing"

	"github.com/indexkit/indexkit/lease"
)

// TestRowNewer walks one item through the life a feed reports (put, an
// auction opened and joined, closed without a winner, a grant, owner
// updates, a release, a catalog change) and checks that every state is
// Newer than each earlier one and never the other way round, as a consumer
// that merges a listing with a feed needs.
func TestRowNewer(t *testing.T) {
	item := lease.Item{ID: "a", Commit: "c1"}
	steps := []struct {
		name string
		row  lease.Row
	}{
		{"put", lease.Row{Item: item, Version: 1}},
		{"put again", lease.Row{Item: item, Version: 2}},
		{"auction opened", lease.Row{Item: item, Version: 2, Round: 1, Bids: 1}},
		{"auction joined", lease.Row{Item: item, Version: 2, Round: 1, Bids: 2}},
		{"closed, no winner", lease.Row{Item: item, Version: 2, Round: 1, Unleased: 1}},
		{"second auction", lease.Row{Item: item, Version: 2, Round: 2, Bids: 1, Unleased: 1}},
		{"granted", lease.Row{Item: item, Version: 2, Round: 2, Fence: 7, Owner: "n", State: lease.Leased}},
		{"ready", lease.Row{Item: item, Version: 3, Round: 2, Fence: 7, Owner: "n", State: lease.Leased, Ready: true}},
		{"draining", lease.Row{Item: item, Version: 4, Round: 2, Fence: 7, Owner: "n", State: lease.Draining}},
		{"released", lease.Row{Item: item, Version: 4, Round: 2, Fence: 7}},
		{"new commit", lease.Row{Item: lease.Item{ID: "a", Commit: "c2"}, Version: 5, Round: 2, Fence: 7}},
		{"regranted", lease.Row{Item: item, Version: 5, Round: 3, Fence: 9, Owner: "m", State: lease.Leased}},
	}
	for i, later := range steps {
		if later.row.Newer(later.row) {
			t.Errorf("%s is Newer than itself", later.name)
		}
		for _, earlier := range steps[:i] {
			if !later.row.Newer(earlier.row) {
				t.Errorf("%s is not Newer than %s", later.name, earlier.name)
			}
			if earlier.row.Newer(later.row) {
				t.Errorf("%s is Newer than the later %s", earlier.name, later.name)
			}
		}
	}
	// A lapse leaves everything but the owner: the idle row wins.
	held := lease.Row{Item: item, Fence: 3, Owner: "n", State: lease.Leased}
	lapsed := lease.Row{Item: item, Fence: 3}
	if !lapsed.Newer(held) || held.Newer(lapsed) {
		t.Error("a lapsed row should be Newer than the held one with the same fence")
	}
}
