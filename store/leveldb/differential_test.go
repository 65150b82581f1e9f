package leveldb_test

import (
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
)

// TestDifferential runs storetest.RunDifferential against a LevelDB store,
// with the memory store as the reference.
func TestDifferential(t *testing.T) {
	storetest.RunDifferential(t, storetest.DifferentialConfig{
		Open: func(dir string) (store.Store, error) {
			s, err := leveldb.Open(dir)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Model: func() store.Store { return memory.New() },
		Seed:  20260101,
	})
}
