package pebble

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// minPrealloc is the least a log is preallocated ahead of what it holds
// (see growingFS).
const minPrealloc = 256 << 10

// growingFS makes the preallocation of files (Pebble preallocates its
// write-ahead logs only) grow with what they hold. Pebble preallocates
// each log to 110% of the memtable as soon as it is written to: some 70
// MiB of disk for a 64 MiB memtable, however little the database holds
// (a node of a few thousand multihashes showed 140 to 352 MiB, all of it
// logs of which a few KiB were written). Here a file asked to preallocate
// up to some end gets at least minPrealloc and then about twice what has
// been written to it, up to that end: a log that fills reaches what Pebble
// asked in a few steps (it doubles once half of it is written: nine
// fallocate calls for a 70 MiB log), one that holds little takes little.
type growingFS struct{ vfs.FS }

// growLogs returns fs (vfs.Default when nil) with growing preallocation;
// fs already wrapped is returned as is.
func growLogs(fs vfs.FS) vfs.FS {
	switch fs.(type) {
	case nil:
		return growingFS{vfs.Default}
	case growingFS:
		return fs
	}
	return growingFS{fs}
}

// Unwrap returns the file system wrapped.
func (fs growingFS) Unwrap() vfs.FS { return fs.FS }

func (fs growingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &growingFile{File: f}, nil
}

func (fs growingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return &growingFile{File: f}, nil
}

// growingFile is a file of a growingFS.
type growingFile struct {
	vfs.File

	mu        sync.Mutex
	written   int64 // bytes written through Write
	allocated int64 // preallocated up to here
	want      int64 // the end the caller asked to preallocate up to
}

// Preallocate records how far the caller wants the file preallocated and
// preallocates what the file's size justifies of it.
func (f *growingFile) Preallocate(offset, length int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.want = max(f.want, offset+length)
	return f.growLocked()
}

func (f *growingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.mu.Lock()
	f.written += int64(n)
	if f.want > f.allocated && 2*f.written > f.allocated {
		_ = f.growLocked() // as Pebble does, a failed preallocation is no error
	}
	f.mu.Unlock()
	return n, err
}

// growLocked preallocates up to twice what was written or was
// preallocated, whichever is more (at least minPrealloc), but not past
// want. Write calls it once half of what is preallocated is written.
func (f *growingFile) growLocked() error {
	end := min(f.want, max(2*f.written, 2*f.allocated, minPrealloc))
	if end <= f.allocated {
		return nil
	}
	from := f.allocated
	f.allocated = end
	return f.File.Preallocate(from, end-from)
}
