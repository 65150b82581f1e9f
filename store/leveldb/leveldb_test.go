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
// every lookup of a record or context reads it from LevelDB, and reopened
// (a cold cache). The cache holds nothing the disk does not, so the crash
// test, which TestConformance runs, adds nothing here.
func TestConformanceTinyRecordCache(t *testing.T) {
	open := func(dir string) (store.Store, error) { return leveldb.Open(dir, leveldb.WithRecordCache(700)) }
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	storetest.RunReopen(t, open)
}
