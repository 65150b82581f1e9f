package outbox_test

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
)

// TestAckWrittenBeforeSegmentDeleted: the segment an Ack frees is deleted
// only after the ack file holds that Ack. The ack file is made
// unwritable (a directory in its place) when an Ack frees two segments:
// the Ack fails, both segments stay, and after a crash the queue opens
// whole with every record still to deliver. Deleting before writing would
// lose records 1 to 6 with no ack to say so, and Open would find the
// queue starting after a gap.
func TestAckWrittenBeforeSegmentDeleted(t *testing.T) {
	dir := t.TempDir()
	// 3 records of 28+300 bytes fill a segment of 1024.
	o, err := outbox.Open(dir, outbox.WithSegmentSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 12; i++ {
		mustAppend(t, o, "d", 1, payload("d", i, 300))
	}
	if err := o.Sync(); err != nil {
		t.Fatal(err)
	}
	before := segFiles(t, dir, "d")
	ack := filepath.Join(dir, "q-"+hex.EncodeToString([]byte("d")), "ack")
	if err := os.Mkdir(ack, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := o.Ack("d", 6); err == nil {
		t.Fatal("Ack(6) with the ack file unwritable: no error")
	}
	if got := segFiles(t, dir, "d"); !slices.Equal(got, before) {
		t.Fatalf("segments after a failed ack write: %v, want all of %v", got, before)
	}
	o.Crash()
	if err := os.Remove(ack); err != nil {
		t.Fatal(err)
	}
	o = open(t, dir, outbox.WithSegmentSize(1024))
	if st := o.Status("d"); st.Acked != 0 || st.Head != 12 {
		t.Fatalf("after a crash: %+v, want Acked 0 and Head 12", st)
	}
	if got := seqs(mustPeek(t, o, "d", 0, 12, 1<<20)); len(got) != 12 || got[0] != 1 || got[11] != 12 {
		t.Fatalf("Peek after a crash = %v, want 1 to 12", got)
	}
	// With a writable ack file the same Ack frees them, and a crash
	// right after keeps it.
	if err := o.Ack("d", 6); err != nil {
		t.Fatal(err)
	}
	if got := segFiles(t, dir, "d"); len(got) != 2 || got[0] != "00000000000000000007.seg" {
		t.Fatalf("segments after Ack(6): %v, want 2 from 7", got)
	}
	o.Crash()
	o = open(t, dir, outbox.WithSegmentSize(1024))
	if st := o.Status("d"); st.Acked != 6 || st.Head != 12 {
		t.Fatalf("after Ack(6) and a crash: %+v, want Acked 6 and Head 12", st)
	}
}
