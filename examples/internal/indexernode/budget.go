package indexernode

import (
	"io/fs"
	"path/filepath"
	"time"
)

// Polls of a node with a disk budget (-disk-budget): its usage moves with
// what it ingests, so it is read often.
const (
	budgetMinInterval = time.Second
	budgetMaxInterval = 5 * time.Second
)

// budgetReader is the freeze.DiskReader of a node with a disk budget: the
// bytes of the files under the data directory out of the budget, as if the
// node had a disk of that size to itself. Every directory reads as one
// device, so the Monitor reads the data directory (the first it watches,
// which holds the others) once per check.
type budgetReader struct {
	dir    string
	budget uint64
}

// Usage sums the sizes of the regular files under r.dir; a file removed
// during the walk (a compaction) is skipped.
func (r budgetReader) Usage(string) (used, total uint64, err error) {
	err = filepath.WalkDir(r.dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && !d.IsDir() {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			used += uint64(info.Size())
		}
		return nil
	})
	return used, r.budget, err
}

// Device implements freeze.DeviceReader: one device for every directory.
func (budgetReader) Device(string) (uint64, error) { return 0, nil }
