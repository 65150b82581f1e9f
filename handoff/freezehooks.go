package handoff

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/store"
)

// OnFreeze returns an indexer's freeze callback (freeze.WithOnFreeze): it
// snapshots every provider record of st ([Snapshot]: FrozenAt =
// LastAdvertisement, FrozenAtTime = the freeze's time), then flushes st,
// so that the snapshot is durable before the freezer records the freeze
// done: no chain replays it, whatever st's durability shortcuts (a Pebble
// index without its write-ahead log). A nil log discards.
func OnFreeze(st store.Store, log *slog.Logger) func(ctx context.Context, at time.Time) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, at time.Time) error {
		if err := Snapshot(ctx, st, at); err != nil {
			return err
		}
		if err := st.Flush(ctx); err != nil {
			return fmt.Errorf("freeze snapshot: %w", err)
		}
		log.Info("freeze snapshot done", "frozen_at", at)
		return nil
	}
}

// OnUnfreeze returns an indexer's unfreeze callback
// (freeze.WithOnUnfreeze): it resumes each publisher from its providers'
// FrozenAt ([Unfreeze]), then flushes st, so that the cleared FrozenAt
// are durable before the freezer records the unfreeze done. A nil log
// discards.
func OnUnfreeze(st store.Store, ing *ingest.Ingester, log *slog.Logger) func(ctx context.Context, at time.Time) error {
	return func(ctx context.Context, _ time.Time) error {
		if err := Unfreeze(ctx, st, ing, log); err != nil {
			return err
		}
		if err := st.Flush(ctx); err != nil {
			return fmt.Errorf("unfreeze: %w", err)
		}
		return nil
	}
}

// DurableRecords returns the provider records of st with each write
// flushed before it returns, for [NewReceiver]: a handoff registers
// providers, then persists the assignment that says it is done, and no
// chain replays what it registered. Handoffs are rare; a flush each costs
// nothing that matters.
func DurableRecords(st store.Store) store.ProviderRecords { return durableRecords{st} }

type durableRecords struct{ st store.Store }

func (d durableRecords) PutProvider(ctx context.Context, info store.ProviderInfo) error {
	if err := d.st.PutProvider(ctx, info); err != nil {
		return err
	}
	return d.st.Flush(ctx)
}

func (d durableRecords) Provider(ctx context.Context, id peer.ID) (store.ProviderInfo, error) {
	return d.st.Provider(ctx, id)
}

func (d durableRecords) Providers(ctx context.Context) iter.Seq2[store.ProviderInfo, error] {
	return d.st.Providers(ctx)
}

func (d durableRecords) DeleteProvider(ctx context.Context, id peer.ID) error {
	if err := d.st.DeleteProvider(ctx, id); err != nil {
		return err
	}
	return d.st.Flush(ctx)
}
