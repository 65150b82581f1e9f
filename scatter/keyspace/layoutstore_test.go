package keyspace_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/layouttest"
)

func TestFileStoreConformance(t *testing.T) {
	layouttest.Run(t, func(t *testing.T) keyspace.LayoutStore {
		return &keyspace.FileStore{Path: filepath.Join(t.TempDir(), "layout.json"), Interval: 10 * time.Millisecond}
	})
}
