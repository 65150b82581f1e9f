package leveldb_test

import (
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/indexkit/indexkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunPersistent(t, func(dir string) (store.Store, error) {
		return leveldb.Open(dir)
	})
}

// The suite again with a record cache of about two records, so that nearly
// every lookup of a record or context reads it from LevelDB.
func TestConformanceTinyRecordCache(t *testing.T) {
	storetest.RunPersistent(t, func(dir string) (store.Store, error) {
		return leveldb.Open(dir, leveldb.WithRecordCache(700))
	})
}
