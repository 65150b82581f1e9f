package freeze

import (
	"io/fs"
	"path/filepath"
)

// Budget returns the [DiskReader] of a node given a disk budget instead of
// a filesystem of its own: the usage of every directory is the bytes of
// the regular files under dir out of budget bytes, as if the node had a
// disk of that size to itself. Every directory reads as one device
// ([DeviceReader]), so a [Monitor] watching dir and directories below it
// reads dir once per check. A file removed during the walk (a compaction)
// is skipped. Bytes are the bytes allocated on disk (stat's blocks times
// 512 on Linux, macOS and FreeBSD), not apparent sizes: a file preallocated
// beyond its length (Pebble's WAL) counts all it holds, a sparse file only
// what is written. Elsewhere, and on a file whose stat gives no block count,
// the apparent size is counted.
//
// A usage that moves with what the node ingests is worth reading often:
// pair it with [WithPollIntervals] of a second or a few.
func Budget(dir string, budget uint64) DiskReader { return budgetReader{dir: dir, budget: budget} }

type budgetReader struct {
	dir    string
	budget uint64
}

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
			used += allocated(info)
		}
		return nil
	})
	return used, r.budget, err
}

func (budgetReader) Device(string) (uint64, error) { return 0, nil }
