package pebble_test

import (
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunPersistent(t, func(dir string) (store.Store, error) {
		return pebble.Open(dir, pebble.WithCacheSize(8<<20))
	})
}
