package handoff

import (
	"context"
	"fmt"
	"time"

	"github.com/indexkit/indexkit/store"
)

// snapshotPasses bounds the passes of Snapshot over the provider records.
const snapshotPasses = 5

// Snapshot records the frozen point of every provider record of st, as an
// indexer does when it freezes: FrozenAt = LastAdvertisement, FrozenAtTime
// = at. A record that has a FrozenAt keeps it, and one with no
// LastAdvertisement gets none. This is what a handoff receiver reads from
// the frozen indexer's /providers, and what [ResumePoints] resumes after.
// Walks may go on meanwhile and write a record between its read and its
// write, so Snapshot passes over the records again until a pass changes
// nothing (at most a few passes, then [ErrSnapshotUnsettled]).
func Snapshot(ctx context.Context, st store.ProviderRecords, at time.Time) error {
	for range snapshotPasses {
		changed := 0
		for info, err := range st.Providers(ctx) {
			if err != nil {
				return fmt.Errorf("handoff: freeze snapshot: %w", err)
			}
			if info.FrozenAt.Defined() || !info.LastAdvertisement.Defined() {
				continue
			}
			info.FrozenAt, info.FrozenAtTime = info.LastAdvertisement, at
			if err := st.PutProvider(ctx, info); err != nil {
				return fmt.Errorf("handoff: freeze snapshot of %s: %w", info.AddrInfo.ID, err)
			}
			changed++
		}
		if changed == 0 {
			return nil
		}
	}
	return ErrSnapshotUnsettled
}
