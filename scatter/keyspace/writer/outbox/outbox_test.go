package outbox_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
)

// payload is the deterministic payload of record seq of dest, n bytes
// long at least.
func payload(dest string, seq uint64, n int) []byte {
	p := fmt.Appendf(nil, "%s/%d/", dest, seq)
	for len(p) < n {
		p = append(p, byte('a'+seq%26))
	}
	return p
}

func open(t *testing.T, dir string, opts ...outbox.Option) *outbox.Outbox {
	t.Helper()
	o, err := outbox.Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func mustAppend(t *testing.T, o *outbox.Outbox, dest string, epoch uint64, p []byte) uint64 {
	t.Helper()
	seq, err := o.Append(dest, epoch, p)
	if err != nil {
		t.Fatalf("Append(%q): %v", dest, err)
	}
	return seq
}

func mustPeek(t *testing.T, o *outbox.Outbox, dest string, after uint64, n, size int) []outbox.Record {
	t.Helper()
	recs, err := o.Peek(dest, after, n, size)
	if err != nil {
		t.Fatalf("Peek(%q, %d): %v", dest, after, err)
	}
	return recs
}

func seqs(recs []outbox.Record) []uint64 {
	var s []uint64
	for _, r := range recs {
		s = append(s, r.Seq)
	}
	return s
}

// segFiles lists the segment files of dest's queue.
func segFiles(t *testing.T, dir, dest string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "q-"+hex.EncodeToString([]byte(dest)), "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

func TestAppendPeekAck(t *testing.T) {
	o := open(t, t.TempDir())
	const dest = "query/1 é:\x00"
	for i := uint64(1); i <= 10; i++ {
		if seq := mustAppend(t, o, dest, 100+i, payload(dest, i, 50)); seq != i {
			t.Fatalf("Append %d: seq %d", i, seq)
		}
	}
	if seq := mustAppend(t, o, "other", 7, []byte("x")); seq != 1 {
		t.Fatalf("first Append to another dest: seq %d, want 1", seq)
	}
	if got := seqs(mustPeek(t, o, dest, 0, 3, 1<<20)); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("Peek(0, 3 records) = %v", got)
	}
	// maxBytes: whole records only, but always one.
	if got := seqs(mustPeek(t, o, dest, 3, 100, 1)); !slices.Equal(got, []uint64{4}) {
		t.Fatalf("Peek(3, 1 byte) = %v, want [4]", got)
	}
	if got := seqs(mustPeek(t, o, dest, 3, 100, 120)); !slices.Equal(got, []uint64{4, 5}) {
		t.Fatalf("Peek(3, 120 bytes) = %v, want [4 5]", got)
	}
	all := mustPeek(t, o, dest, 0, 100, 1<<20)
	if len(all) != 10 {
		t.Fatalf("Peek(0) = %d records", len(all))
	}
	for _, r := range all {
		if r.Epoch != 100+r.Seq || !bytes.Equal(r.Payload, payload(dest, r.Seq, 50)) {
			t.Fatalf("record %d: epoch %d payload %q", r.Seq, r.Epoch, r.Payload)
		}
	}
	if err := o.Ack(dest, 5); err != nil {
		t.Fatal(err)
	}
	want := outbox.Status{Stream: o.Status(dest).Stream, Pending: 5, Bytes: 5 * (28 + 50), Head: 10, Acked: 5, OldestEpoch: 106}
	if want.Stream == 0 || want.Stream == o.Stream() {
		t.Fatalf("a new queue's stream is %x (the outbox's %x): want one of its own", want.Stream, o.Stream())
	}
	if st := o.Status(dest); st != want {
		t.Fatalf("Status after Ack(5) = %+v, want %+v", st, want)
	}
	// Peek below the ack starts after it.
	if got := seqs(mustPeek(t, o, dest, 2, 2, 1<<20)); !slices.Equal(got, []uint64{6, 7}) {
		t.Fatalf("Peek(2) after Ack(5) = %v, want [6 7]", got)
	}
	if err := o.Ack(dest, 3); err != nil {
		t.Fatalf("Ack below the last: %v", err)
	}
	if err := o.Ack(dest, 11); !errors.Is(err, outbox.ErrAckAhead) {
		t.Fatalf("Ack past the head: %v, want ErrAckAhead", err)
	}
	if err := o.Ack(dest, 10); err != nil {
		t.Fatal(err)
	}
	if st := o.Status(dest); st != (outbox.Status{Stream: want.Stream, Head: 10, Acked: 10}) {
		t.Fatalf("Status when all acked = %+v", st)
	}
	if recs := mustPeek(t, o, dest, 0, 10, 1<<20); len(recs) != 0 {
		t.Fatalf("Peek when all acked = %v", seqs(recs))
	}
	mustAppend(t, o, dest, 200, []byte("late"))
	if st := o.Status(dest); st.OldestEpoch != 200 || st.Pending != 1 {
		t.Fatalf("Status after an Append to an empty queue = %+v", st)
	}
	if recs, err := o.Peek("nobody", 0, 10, 10); err != nil || recs != nil {
		t.Fatalf("Peek of an unknown dest = %v, %v", recs, err)
	}
	if st := o.Status("nobody"); st != (outbox.Status{}) {
		t.Fatalf("Status of an unknown dest = %+v", st)
	}
	if _, err := o.Append("", 1, nil); !errors.Is(err, outbox.ErrInvalidDest) {
		t.Fatalf("Append to \"\": %v", err)
	}
	if _, err := o.Append(strings.Repeat("x", outbox.MaxDestLen+1), 1, nil); !errors.Is(err, outbox.ErrInvalidDest) {
		t.Fatalf("Append to a long name: %v", err)
	}
	if got := o.Dests(); !slices.Equal(got, []string{"other", dest}) {
		t.Fatalf("Dests = %q", got)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	o, err := outbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	stream := o.Stream()
	if stream == 0 {
		t.Fatal("Stream() = 0")
	}
	for i := uint64(1); i <= 6; i++ {
		mustAppend(t, o, "a", 1, payload("a", i, 10))
	}
	mustAppend(t, o, "b", 2, payload("b", 1, 10))
	mustAppend(t, o, "c", 3, payload("c", 1, 10))
	if err := o.Ack("a", 4); err != nil {
		t.Fatal(err)
	}
	if err := o.Ack("c", 1); err != nil {
		t.Fatal(err)
	}
	streamA, streamC := o.Status("a").Stream, o.Status("c").Stream
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	o = open(t, dir)
	if o.Stream() != stream {
		t.Fatalf("Stream after reopen = %x, want %x", o.Stream(), stream)
	}
	if got := o.Dests(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Dests after reopen = %q", got)
	}
	if st := o.Status("a"); st != (outbox.Status{Stream: streamA, Pending: 2, Bytes: 2 * (28 + 10), Head: 6, Acked: 4, OldestEpoch: 1}) {
		t.Fatalf("Status(a) after reopen = %+v", st)
	}
	if st := o.Status("c"); st != (outbox.Status{Stream: streamC, Head: 1, Acked: 1}) {
		t.Fatalf("Status(c) after reopen = %+v", st)
	}
	recs := mustPeek(t, o, "a", 0, 10, 1<<20)
	if got := seqs(recs); !slices.Equal(got, []uint64{5, 6}) || !bytes.Equal(recs[1].Payload, payload("a", 6, 10)) {
		t.Fatalf("Peek(a) after reopen = %v", got)
	}
	if seq := mustAppend(t, o, "c", 1, nil); seq != 2 {
		t.Fatalf("Append(c) after reopen: seq %d, want 2", seq)
	}

	other := open(t, t.TempDir())
	if other.Stream() == stream || other.Stream() == 0 {
		t.Fatalf("a new outbox has stream %x (the first has %x)", other.Stream(), stream)
	}
}

// Segments roll at the segment size and go once every record in them is
// acknowledged; Seqs go on after the last file is gone, across a reopen.
func TestSegments(t *testing.T) {
	dir := t.TempDir()
	// 3 records of 28+300 bytes fill a segment of 1024 (20-byte header).
	o, err := outbox.Open(dir, outbox.WithSegmentSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 30; i++ {
		mustAppend(t, o, "d", i, payload("d", i, 300))
	}
	files := segFiles(t, dir, "d")
	if len(files) != 10 || files[0] != "00000000000000000001.seg" || files[9] != "00000000000000000028.seg" {
		t.Fatalf("segment files after 30 appends: %v", files)
	}
	if err := o.Ack("d", 8); err != nil {
		t.Fatal(err)
	}
	if files := segFiles(t, dir, "d"); len(files) != 8 || files[0] != "00000000000000000007.seg" {
		t.Fatalf("after Ack(8): %v, want 8 files from 7", files)
	}
	if got := seqs(mustPeek(t, o, "d", 0, 5, 1<<20)); !slices.Equal(got, []uint64{9, 10, 11, 12, 13}) {
		t.Fatalf("Peek after Ack(8) = %v", got)
	}
	if err := o.Ack("d", 30); err != nil {
		t.Fatal(err)
	}
	if files := segFiles(t, dir, "d"); len(files) != 0 {
		t.Fatalf("after Ack of everything: %v, want none", files)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o = open(t, dir, outbox.WithSegmentSize(1024))
	if st := o.Status("d"); st != (outbox.Status{Stream: st.Stream, Head: 30, Acked: 30}) || st.Stream == 0 {
		t.Fatalf("Status after reopen = %+v", st)
	}
	if seq := mustAppend(t, o, "d", 31, payload("d", 31, 300)); seq != 31 {
		t.Fatalf("Append after every segment went: seq %d, want 31", seq)
	}
	if files := segFiles(t, dir, "d"); !slices.Equal(files, []string{"00000000000000000031.seg"}) {
		t.Fatalf("files: %v", files)
	}
	// A record larger than the segment size goes alone.
	big := payload("d", 32, 5000)
	mustAppend(t, o, "d", 32, big)
	mustAppend(t, o, "d", 33, nil)
	if files := segFiles(t, dir, "d"); len(files) != 3 {
		t.Fatalf("files after a big record: %v", files)
	}
	if recs := mustPeek(t, o, "d", 31, 1, 10); len(recs) != 1 || !bytes.Equal(recs[0].Payload, big) {
		t.Fatalf("Peek of the big record: %v", seqs(recs))
	}
}

// An ack not yet written is lost in a crash, and those records come
// back; one written is never undone.
func TestAckPersistence(t *testing.T) {
	dir := t.TempDir()
	o, err := outbox.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 5; i++ {
		mustAppend(t, o, "a", 1, payload("a", i, 10))
	}
	if err := o.Ack("a", 2); err != nil {
		t.Fatal(err)
	}
	if err := o.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := o.Ack("a", 4); err != nil {
		t.Fatal(err)
	}
	o.Crash()
	o = open(t, dir)
	if st := o.Status("a"); st.Acked != 2 || st.Head != 5 {
		t.Fatalf("after a crash: %+v, want Acked 2 (synced) and Head 5", st)
	}
	if got := seqs(mustPeek(t, o, "a", 0, 10, 1<<20)); !slices.Equal(got, []uint64{3, 4, 5}) {
		t.Fatalf("Peek after a crash = %v", got)
	}
}

func TestRemove(t *testing.T) {
	dir := t.TempDir()
	o, err := outbox.Open(dir, outbox.WithSegmentSize(200))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 5; i++ {
		mustAppend(t, o, "gone", 1, payload("gone", i, 100))
		mustAppend(t, o, "kept", 1, payload("kept", i, 100))
	}
	first := o.Status("gone").Stream
	if first == 0 || first == o.Status("kept").Stream {
		t.Fatalf("streams: gone %x, kept %x; want each its own", first, o.Status("kept").Stream)
	}
	if err := o.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	if err := o.Remove("never"); err != nil {
		t.Fatalf("Remove of an unknown dest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "q-"+hex.EncodeToString([]byte("gone")))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the queue directory after Remove: %v", err)
	}
	if got := o.Dests(); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("Dests after Remove = %q", got)
	}
	if recs := mustPeek(t, o, "gone", 0, 10, 1<<20); len(recs) != 0 {
		t.Fatalf("Peek after Remove = %v", seqs(recs))
	}
	if st := o.Status("gone"); st != (outbox.Status{}) {
		t.Fatalf("Status after Remove = %+v", st)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o = open(t, dir, outbox.WithSegmentSize(200))
	if got := o.Dests(); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("Dests after Remove and reopen = %q", got)
	}
	// A destination removed and back is a new stream from Seq 1: no Seq
	// is reused within a stream.
	if seq := mustAppend(t, o, "gone", 1, nil); seq != 1 {
		t.Fatalf("Append after Remove: seq %d, want 1", seq)
	}
	second := o.Status("gone").Stream
	if second == 0 || second == first {
		t.Fatalf("stream after Remove and Append = %x; want a new one (was %x)", second, first)
	}
	if got := o.Dests(); !slices.Equal(got, []string{"gone", "kept"}) {
		t.Fatalf("Dests after an Append to a removed dest = %q", got)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o = open(t, dir, outbox.WithSegmentSize(200))
	if got := o.Dests(); !slices.Equal(got, []string{"gone", "kept"}) {
		t.Fatalf("Dests after reopen = %q", got)
	}
	recs := mustPeek(t, o, "gone", 0, 10, 1<<20)
	if got := seqs(recs); !slices.Equal(got, []uint64{1}) || recs[0].Stream != second {
		t.Fatalf("Peek(gone) = %v of stream %x, want [1] of %x", got, recs[0].Stream, second)
	}
	// An acknowledgement meant for the removed stream does nothing to
	// the new one.
	if err := o.AckStream("gone", first, 1); err != nil || o.Status("gone").Acked != 0 {
		t.Fatalf("AckStream of the old stream: %v, status %+v", err, o.Status("gone"))
	}
	if err := o.AckStream("gone", second, 1); err != nil || o.Status("gone").Acked != 1 {
		t.Fatalf("AckStream of the stream: %v, status %+v", err, o.Status("gone"))
	}
}

// An outbox of before queues had streams of their own: its queues go on
// in the outbox's stream, and a queue it removed (which kept its last
// Seq) is deleted at Open, so that an Append starts a new stream.
func TestLegacyQueues(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir)
	for i := uint64(1); i <= 3; i++ {
		mustAppend(t, o, "old", 1, payload("old", i, 10))
		mustAppend(t, o, "left", 1, payload("left", i, 10))
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	// What the earlier outbox left: no stream file in the queues, and
	// "left" removed (every record acknowledged, segments deleted, the
	// marker beside the ack).
	for _, d := range []string{"old", "left"} {
		if err := os.Remove(filepath.Join(dir, "q-"+hex.EncodeToString([]byte(d)), "stream")); err != nil {
			t.Fatal(err)
		}
	}
	o = open(t, dir)
	if err := o.Ack("left", 3); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	ldir := filepath.Join(dir, "q-"+hex.EncodeToString([]byte("left")))
	for _, f := range segFiles(t, dir, "left") {
		if err := os.Remove(filepath.Join(ldir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ldir, "removed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o = open(t, dir)
	if st := o.Status("old"); st.Stream != o.Stream() || st.Head != 3 {
		t.Fatalf("a queue of before: %+v, want the outbox's stream %x and head 3", st, o.Stream())
	}
	if _, err := os.Stat(ldir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a queue of before, removed: still there after Open (%v)", err)
	}
	if got := o.Dests(); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("Dests = %q", got)
	}
	if seq := mustAppend(t, o, "left", 1, nil); seq != 1 {
		t.Fatalf("Append to a queue of before, removed: seq %d, want 1", seq)
	}
	if st := o.Status("left"); st.Stream == o.Stream() || st.Stream == 0 {
		t.Fatalf("a queue of before, removed and appended to: stream %x, want a new one (outbox %x)", st.Stream, o.Stream())
	}
}

// lastSegment returns the path of dest's last segment file.
func lastSegment(t *testing.T, dir, dest string) string {
	t.Helper()
	files := segFiles(t, dir, dest)
	if len(files) == 0 {
		t.Fatal("no segment")
	}
	return filepath.Join(dir, "q-"+hex.EncodeToString([]byte(dest)), files[len(files)-1])
}

// A kill in the middle of a write leaves a torn tail: Open cuts it, logs
// it, and keeps every whole record before it; appends go on after them.
func TestTornTail(t *testing.T) {
	cases := []struct {
		name string
		cut  func(size int64) int64 // new size, from the size with 5 records
		grow int                    // zero bytes to add
	}{
		{"mid-payload", func(n int64) int64 { return n - 30 }, 0},
		{"mid-header", func(n int64) int64 { return n - (28 + 50) + 5 }, 0},
		{"whole-header", func(n int64) int64 { return n - 50 + 1 }, 0},
		{"zeros", func(n int64) int64 { return n - (28 + 50) }, 4096},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o, err := outbox.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i := uint64(1); i <= 5; i++ {
				mustAppend(t, o, "a", i, payload("a", i, 50))
			}
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			path := lastSegment(t, dir, "a")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, c.cut(fi.Size())); err != nil {
				t.Fatal(err)
			}
			if c.grow > 0 {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(make([]byte, c.grow))
				f.Close()
			}
			var logs bytes.Buffer
			o = open(t, dir, outbox.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if !strings.Contains(logs.String(), "torn tail") || !strings.Contains(logs.String(), path) {
				t.Fatalf("no log of the torn tail: %q", logs.String())
			}
			recs := mustPeek(t, o, "a", 0, 10, 1<<20)
			if got := seqs(recs); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
				t.Fatalf("records after a torn tail = %v, want [1 2 3 4]", got)
			}
			for _, r := range recs {
				if !bytes.Equal(r.Payload, payload("a", r.Seq, 50)) || r.Epoch != r.Seq {
					t.Fatalf("record %d: %q", r.Seq, r.Payload)
				}
			}
			if seq := mustAppend(t, o, "a", 5, []byte("again")); seq != 5 {
				t.Fatalf("Append after the torn tail: seq %d, want 5", seq)
			}
			mustAppend(t, o, "a", 6, []byte("more"))
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			o = open(t, dir)
			recs = mustPeek(t, o, "a", 3, 10, 1<<20)
			if got := seqs(recs); !slices.Equal(got, []uint64{4, 5, 6}) || string(recs[1].Payload) != "again" {
				t.Fatalf("records after appending past the torn tail = %v", got)
			}
		})
	}
}

// A damaged byte anywhere but in the tail is an error naming the file and
// the offset, not a silent truncation.
func TestCorruptMiddle(t *testing.T) {
	for _, c := range []struct {
		name string
		off  int64 // from the start of the file
	}{
		{"payload", 20 + 78 + 28 + 10}, // record 2's payload
		{"length", 20 + 78 + 5},        // record 2's length
		{"segment header", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o, err := outbox.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i := uint64(1); i <= 5; i++ {
				mustAppend(t, o, "a", i, payload("a", i, 50))
			}
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			path := lastSegment(t, dir, "a")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[c.off] ^= 0x40
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = outbox.Open(dir)
			if !errors.Is(err, outbox.ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open of a damaged segment: %v; want ErrCorrupt naming %s", err, path)
			}
			if c.off > 20 && !strings.Contains(err.Error(), "offset 98") {
				t.Fatalf("error does not name offset 98: %v", err)
			}
			t.Log(err)
		})
	}
}

// A segment file gone from the middle of a queue (or one of unacked
// records deleted) is an error, not a gap the receivers never see.
func TestMissingSegment(t *testing.T) {
	dir := t.TempDir()
	o, err := outbox.Open(dir, outbox.WithSegmentSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 12; i++ {
		mustAppend(t, o, "d", i, payload("d", i, 300))
	}
	if err := o.Ack("d", 2); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	qdir := filepath.Join(dir, "q-"+hex.EncodeToString([]byte("d")))
	for _, name := range []string{"00000000000000000004.seg", "00000000000000000001.seg"} {
		if err := os.Remove(filepath.Join(qdir, name)); err != nil {
			t.Fatal(err)
		}
		_, err := outbox.Open(dir, outbox.WithSegmentSize(1024))
		if !errors.Is(err, outbox.ErrCorrupt) || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("Open without %s: %v, want ErrCorrupt about missing records", name, err)
		}
		t.Log(err)
	}
}

func TestWaitAndClose(t *testing.T) {
	o, err := outbox.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	errc := make(chan error, 1)
	go func() { errc <- o.Wait(ctx, "a", 0) }()
	select {
	case err := <-errc:
		t.Fatalf("Wait on an empty queue returned %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	mustAppend(t, o, "a", 1, nil)
	if err := <-errc; err != nil {
		t.Fatalf("Wait after an Append: %v", err)
	}
	if err := o.Wait(ctx, "a", 0); err != nil {
		t.Fatalf("Wait with a record there: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := o.Wait(cctx, "a", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its context: %v", err)
	}
	go func() { errc <- o.Wait(ctx, "a", 1) }()
	time.Sleep(10 * time.Millisecond)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Wait across Close: %v", err)
	}
	if _, err := o.Append("a", 1, nil); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := o.Peek("a", 0, 1, 1); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Peek after Close: %v", err)
	}
	if err := o.Sync(); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if err := o.Ack("a", 1); !errors.Is(err, outbox.ErrClosed) {
		t.Fatalf("Ack after Close: %v", err)
	}
}

func TestInvalidOption(t *testing.T) {
	for _, opt := range []outbox.Option{outbox.WithSegmentSize(0), outbox.WithLogger(nil)} {
		if _, err := outbox.Open(t.TempDir(), opt); !errors.Is(err, outbox.ErrInvalidOption) {
			t.Fatalf("Open with an invalid option: %v", err)
		}
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	if _, err := outbox.Open(dir); !errors.Is(err, outbox.ErrLocked) {
		t.Fatalf("second Open of a directory: %v, want ErrLocked", err)
	}
}

// Many goroutines append to shared and own destinations while one
// delivery goroutine per destination Waits, Peeks and Acks: each
// destination sees each appender's records exactly once, in Seq order,
// and in each appender's order.
func TestConcurrent(t *testing.T) {
	o := open(t, t.TempDir(), outbox.WithSegmentSize(4096))
	dests := []string{"d0", "d1", "d2"}
	const appenders, per = 6, 200
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Go(func() {
			for i := range per {
				dest := dests[(a+i)%len(dests)]
				if _, err := o.Append(dest, uint64(a), fmt.Appendf(nil, "%d/%d", a, i)); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					if err := o.Sync(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	total := appenders * per / len(dests)
	got := make([][]string, len(dests))
	ctx := t.Context()
	for d, dest := range dests {
		wg.Go(func() {
			var after uint64
			for len(got[d]) < total {
				if err := o.Wait(ctx, dest, after); err != nil {
					t.Error(err)
					return
				}
				recs, err := o.Peek(dest, after, 7, 1<<10)
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range recs {
					if r.Seq != after+1 {
						t.Errorf("%s: seq %d after %d", dest, r.Seq, after)
						return
					}
					after = r.Seq
					got[d] = append(got[d], string(r.Payload))
				}
				if err := o.Ack(dest, after); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for d, dest := range dests {
		last := map[int]int{}
		for _, p := range got[d] {
			var a, i int
			fmt.Sscanf(p, "%d/%d", &a, &i)
			if prev, ok := last[a]; ok && i <= prev {
				t.Fatalf("%s: appender %d's record %d after %d", dest, a, i, prev)
			}
			last[a] = i
		}
		if len(got[d]) != total {
			t.Fatalf("%s: %d records, want %d", dest, len(got[d]), total)
		}
		if st := o.Status(dest); st.Pending != 0 || st.Head != uint64(total) {
			t.Fatalf("%s: %+v", dest, st)
		}
	}
}

// A queue directory being created or removed when the process was killed
// (under its temporary name) is deleted at Open: a queue is there whole,
// with its stream, or not at all.
func TestQueueLeftovers(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir)
	mustAppend(t, o, "kept", 1, nil)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"q-" + hex.EncodeToString([]byte("new")) + ".tmp", "q-" + hex.EncodeToString([]byte("old")) + ".removed.tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "stream"), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o = open(t, dir)
	if got := o.Dests(); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("Dests = %q", got)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("leftover %s not deleted at Open", e.Name())
		}
	}
	if seq := mustAppend(t, o, "new", 1, nil); seq != 1 || o.Status("new").Stream == 0 {
		t.Fatalf("Append to a dest whose creation was cut short: seq %d, %+v", seq, o.Status("new"))
	}
}
