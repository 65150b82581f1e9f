package indexernode

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/ipfs/go-datastore"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	dspebble "github.com/ipfs/go-ds-pebble"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/store/pebble"
)

// The node's state (walker positions, assignments) is a go-datastore on
// Pebble under stateDir ([pebble.OpenDatastore]). Versions before kept it
// in go-ds-leveldb under legacyStateDir; openState moves it over once
// ([ingest.MigrateDatastore], through stateMigrateDir).
const (
	stateDir        = "state"
	legacyStateDir  = "datastore"
	stateMigrateDir = stateDir + ".migrating"
)

// openState opens the node's state datastore under dir, sized to its
// share of budget ([freeze.SplitBudget]; 0: no budget), after moving the
// state an earlier version kept in go-ds-leveldb.
func openState(ctx context.Context, dir string, budget int64, log *slog.Logger) (*dspebble.Datastore, error) {
	path := filepath.Join(dir, stateDir)
	share := freeze.SplitBudget(budget, 0).State
	openOld := func(p string) (datastore.Datastore, error) { return dsleveldb.NewDatastore(p, nil) }
	openNew := func(p string) (datastore.Batching, error) { return pebble.OpenDatastore(p, share, log) }
	if _, err := ingest.MigrateDatastore(ctx, filepath.Join(dir, legacyStateDir), path, openOld, openNew, log); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	ds, err := pebble.OpenDatastore(path, share, log)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return ds, nil
}
