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
