package querynode

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// spoolPrefix begins the names of the directories, in Config.Dir, where a
// source spools an epoch's exports.
const spoolPrefix = "export-"

// spool is one scan of a source's store for the exports of an epoch to
// every gaining node (a leave, where every node of Next gains): the scan
// writes each destination's stream, frame by frame, to a file of its own,
// and each destination's export request streams its file as it grows.
// So a source scans its store once per epoch (and set of skipped
// sources), not once per gaining node.
type spool struct {
	dir    string
	cancel context.CancelFunc

	mu    sync.Mutex
	sizes map[string]int64 // dest -> bytes of whole frames in its file
	wake  chan struct{}    // closed and replaced when sizes or done change
	done  bool
	err   error
}

// spoolKey names a spool: the epoch and the sorted skipped nodes.
func spoolKey(epoch uint64, skip []int) string {
	s := slices.Sorted(slices.Values(skip))
	var b strings.Builder
	b.WriteString(strconv.FormatUint(epoch, 10))
	for _, i := range s {
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// spoolFor returns the spool of place's epoch and skip, starting its scan
// if it is the first request for it. Spools of other epochs are dropped.
func (n *Node) spoolFor(place *keyspace.Placement, self int, dests, skip []int, skipFn func(int) bool) (*spool, error) {
	epoch := place.Epoch()
	key := spoolKey(epoch, skip)
	n.spoolMu.Lock()
	defer n.spoolMu.Unlock()
	if n.spoolClosed {
		return nil, fmt.Errorf("%w: node closed", ErrState)
	}
	n.dropSpoolsLocked(epoch)
	if sp := n.spools[key]; sp != nil {
		sp.mu.Lock()
		failed := sp.done && sp.err != nil
		sp.mu.Unlock()
		if !failed {
			return sp, nil
		}
		// A scan that failed is tried again for the next request.
		os.RemoveAll(sp.dir)
		delete(n.spools, key)
	}
	dir := filepath.Join(n.cfg.Dir, spoolPrefix+key)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := place.Layout()
	sp := &spool{dir: dir, sizes: map[string]int64{}, wake: make(chan struct{})}
	fws := make([]*frameWriter, len(dests))
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for i, d := range dests {
		name := l.Nodes[d].Name
		f, err := os.Create(sp.path(name))
		if err != nil {
			closeAll()
			os.RemoveAll(dir)
			return nil, err
		}
		files = append(files, f)
		cw := &countWriter{w: f}
		fw := &frameWriter{w: bufio.NewWriterSize(cw, 256<<10), name: n.cfg.Name, epoch: epoch, idx: map[string]int{}}
		fw.onFrame = func() error {
			if err := fw.w.Flush(); err != nil {
				return err
			}
			sp.publish(name, cw.n)
			return nil
		}
		fws[i] = fw
	}
	ctx, cancel := context.WithCancel(n.closing)
	sp.cancel = cancel
	if n.spools == nil {
		n.spools = map[string]*spool{}
	}
	n.spools[key], n.spoolEpoch = sp, epoch
	n.spoolWG.Add(1)
	go func() {
		defer n.spoolWG.Done()
		err := n.export(ctx, place, self, dests, fws, skipFn)
		closeAll()
		if err != nil {
			n.log.Warn("export scan cut short", "epoch", epoch, "err", err)
		}
		sp.finish(err)
		if ctx.Err() != nil {
			os.RemoveAll(dir) // dropped: no reader wants it any more
		}
	}()
	return sp, nil
}

// dropSpoolsLocked drops the spools of epochs other than keep (0: all):
// their scans stop and their files go. The caller holds n.spoolMu.
func (n *Node) dropSpoolsLocked(keep uint64) {
	if n.spoolEpoch == keep || len(n.spools) == 0 {
		return
	}
	for key, sp := range n.spools {
		sp.cancel()
		sp.mu.Lock()
		finished := sp.done
		sp.mu.Unlock()
		if finished {
			os.RemoveAll(sp.dir)
		}
		delete(n.spools, key)
	}
}

// closeSpools stops every scan, waits for them and deletes the spools.
func (n *Node) closeSpools() {
	n.spoolMu.Lock()
	n.spoolClosed = true
	n.dropSpoolsLocked(0)
	n.spoolMu.Unlock()
	n.spoolWG.Wait()
}

// removeSpools deletes what spools a node stopped without Close left in
// dir.
func removeSpools(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), spoolPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("%w: %w", ErrState, err)
			}
		}
	}
	return nil
}

func (sp *spool) path(dest string) string {
	return filepath.Join(sp.dir, url.PathEscape(dest)+".frames")
}

func (sp *spool) publish(dest string, size int64) {
	sp.mu.Lock()
	sp.sizes[dest] = size
	close(sp.wake)
	sp.wake = make(chan struct{})
	sp.mu.Unlock()
}

func (sp *spool) finish(err error) {
	sp.mu.Lock()
	sp.done, sp.err = true, err
	close(sp.wake)
	sp.wake = make(chan struct{})
	sp.mu.Unlock()
}

// stream copies dest's part of the spool to w as the scan writes it; it
// returns nil once the whole stream, end frame included, is copied, and
// the scan's error if the scan failed (the stream then has no end frame).
func (sp *spool) stream(ctx context.Context, w http.ResponseWriter, dest string) error {
	f, err := os.Open(sp.path(dest))
	if err != nil {
		return err
	}
	defer f.Close()
	rc := http.NewResponseController(w)
	var off int64
	for {
		sp.mu.Lock()
		size, done, serr, wake := sp.sizes[dest], sp.done, sp.err, sp.wake
		sp.mu.Unlock()
		if off < size {
			if _, err := io.Copy(w, io.NewSectionReader(f, off, size-off)); err != nil {
				return err
			}
			off = size
			rc.Flush()
			continue
		}
		if done {
			return serr
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
