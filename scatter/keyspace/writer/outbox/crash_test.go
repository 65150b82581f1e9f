package outbox_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
)

// crashDirEnv names the outbox directory a re-executed test binary
// writes into; its presence makes TestCrash act as the child.
// crashRoundEnv is the child's round, which goes into every payload it
// writes, so that a Seq written twice shows.
const (
	crashDirEnv   = "INDEXKIT_OUTBOX_CRASH_DIR"
	crashRoundEnv = "INDEXKIT_OUTBOX_CRASH_ROUND"
	crashSegSize  = 16 << 10
	crashRounds   = 5
	crashSyncK    = 7 // the child Syncs every crashSyncK appends
)

var crashDests = []string{"a", "b"}

// crashPayload is the payload of record seq of dest written in round;
// its length varies so that segments roll at varying records, and one
// record in 16 is 2 to 4 MiB, a write long enough for a SIGKILL to cut
// it short (the kernel stops a write between pages when a fatal signal
// is pending), which leaves a torn tail.
func crashPayload(dest string, seq uint64, round int) []byte {
	p := fmt.Appendf(nil, "%s/%d/%d/", dest, seq, round)
	n := int(seq * 131 % 3000)
	if seq%16 == 0 {
		n = 2<<20 + int(seq*7919%(2<<20))
	}
	return append(p, bytes.Repeat([]byte{byte('a' + seq%26)}, n)...)
}

var syncedLine = regexp.MustCompile(`^synced a=(\d+) b=(\d+) acka=(\d+) ackb=(\d+)$`)

// A child process appends to two queues, Syncs every few records and
// reports each Sync, acknowledges some records, and is killed with
// SIGKILL at a random moment (in every other round, just as it starts a
// long write); five times over the same directory, which
// the parent reopens and checks between kills. Every record reported
// synced is there, once, in Seq order, with its payload; a Seq is never
// written twice (each payload carries the round that wrote it); no
// record comes back once an ack that covers it was synced.
func TestCrash(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		round, _ := strconv.Atoi(os.Getenv(crashRoundEnv))
		crashChild(t, dir, round)
		return
	}
	lane.Integration(t, "re-executes the test binary")
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	synced := map[string]uint64{}   // highest Seq reported synced
	ackedMin := map[string]uint64{} // highest ack known written
	seen := map[string]map[uint64]int{}
	for _, d := range crashDests {
		seen[d] = map[uint64]int{}
	}
	for round := 1; round <= crashRounds; round++ {
		t.Setenv(crashDirEnv, dir)
		t.Setenv(crashRoundEnv, strconv.Itoa(round))
		p := proctest.Start(t, os.Args[0], "-test.run=^TestCrash$", "-test.count=1", "-test.v=false")
		waitFor := 1 + rng.IntN(40)
		from := 0
		for range waitFor {
			p.WaitLine(&from, syncedLine.String(), time.Minute)
		}
		if round%2 == 0 {
			// Aim at a long write: kill just after the child says it
			// starts one.
			p.WaitLine(&from, `^big$`, time.Minute)
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
		} else {
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
		p.Signal(syscall.SIGKILL)
		if code := p.Wait(time.Minute); code != -1 {
			t.Fatalf("round %d: child exited with %d before the kill", round, code)
		}
		lines := 0
		for line := range strings.Lines(p.Output()) {
			m := syncedLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			lines++
			for i, d := range crashDests {
				h, _ := strconv.ParseUint(m[1+i], 10, 64)
				a, _ := strconv.ParseUint(m[3+i], 10, 64)
				synced[d] = max(synced[d], h)
				ackedMin[d] = max(ackedMin[d], a)
			}
		}
		t.Logf("round %d: killed after %d Syncs; synced through a=%d b=%d", round, lines, synced["a"], synced["b"])
		crashCheck(t, dir, round, synced, ackedMin, seen, rng)
	}
}

// crashCheck reopens the outbox after a kill, checks every queue against
// what the children reported, and acknowledges part of each (a delivery
// between the crashes).
func crashCheck(t *testing.T, dir string, round int, synced, ackedMin map[string]uint64, seen map[string]map[uint64]int, rng *rand.Rand) {
	t.Helper()
	var logs bytes.Buffer
	o, err := outbox.Open(dir, outbox.WithSegmentSize(crashSegSize), outbox.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatalf("round %d: reopen after the kill: %v", round, err)
	}
	defer o.Close()
	if n := strings.Count(logs.String(), "torn tail"); n > 0 {
		t.Logf("round %d: %d torn tail(s) truncated", round, n)
	}
	for _, d := range crashDests {
		st := o.Status(d)
		if st.Acked < ackedMin[d] {
			t.Fatalf("round %d, %s: acked %d, but an ack through %d was synced", round, d, st.Acked, ackedMin[d])
		}
		if st.Head < synced[d] {
			t.Fatalf("round %d, %s: head %d, but %d was reported synced", round, d, st.Head, synced[d])
		}
		next := st.Acked + 1
		for next <= st.Head {
			recs, err := o.Peek(d, next-1, 100, 4<<20)
			if err != nil {
				t.Fatalf("round %d, %s: Peek(%d): %v", round, d, next-1, err)
			}
			if len(recs) == 0 {
				t.Fatalf("round %d, %s: Peek(%d) is empty, head %d", round, d, next-1, st.Head)
			}
			for _, r := range recs {
				if r.Seq != next {
					t.Fatalf("round %d, %s: record %d where %d was due", round, d, r.Seq, next)
				}
				f := strings.SplitN(string(r.Payload), "/", 4)
				w, err := strconv.Atoi(f[min(2, len(f)-1)])
				if err != nil || w < 1 || w > round || !bytes.Equal(r.Payload, crashPayload(d, r.Seq, w)) {
					t.Fatalf("round %d, %s: record %d has a wrong payload (%.40q)", round, d, r.Seq, r.Payload)
				}
				if prev, ok := seen[d][r.Seq]; ok && prev != w {
					t.Fatalf("round %d, %s: Seq %d written in round %d, and again in round %d", round, d, r.Seq, prev, w)
				}
				seen[d][r.Seq] = w
				next++
			}
		}
		if st.Head > st.Acked {
			a := st.Acked + 1 + rng.Uint64N(st.Head-st.Acked)
			if err := o.Ack(d, a); err != nil {
				t.Fatal(err)
			}
			ackedMin[d] = a // written by the Close below
		}
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
}

// crashChild appends until it is killed: to a and b, a Sync every
// crashSyncK appends followed by a line with the synced heads and acks,
// and now and then a delivery: a Peek of a few records, checked, and
// their Ack.
func crashChild(t *testing.T, dir string, round int) {
	o, err := outbox.Open(dir, outbox.WithSegmentSize(crashSegSize))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(round), 1))
	for i := 1; i <= 1_000_000; i++ {
		d := crashDests[rng.IntN(len(crashDests))]
		want := o.Status(d).Head + 1
		p := crashPayload(d, want, round)
		if want%16 == 0 {
			fmt.Println("big")
		}
		seq, err := o.Append(d, uint64(round), p)
		if err != nil {
			t.Fatal(err)
		}
		if seq != want {
			t.Fatalf("Append to %s: seq %d, want %d", d, seq, want)
		}
		if rng.IntN(10) == 0 {
			// Deliver a few records: read them, check them, ack them.
			recs, err := o.Peek(d, o.Status(d).Acked, 1+rng.IntN(10), 8<<20)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				f := strings.SplitN(string(r.Payload), "/", 4)
				w, _ := strconv.Atoi(f[min(2, len(f)-1)])
				if !bytes.Equal(r.Payload, crashPayload(d, r.Seq, w)) {
					t.Fatalf("%s: record %d has a wrong payload (%.40q)", d, r.Seq, r.Payload)
				}
			}
			if len(recs) > 0 {
				if err := o.Ack(d, recs[len(recs)-1].Seq); err != nil {
					t.Fatal(err)
				}
			}
		}
		if i%crashSyncK == 0 {
			a, b := o.Status("a"), o.Status("b")
			if err := o.Sync(); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("synced a=%d b=%d acka=%d ackb=%d\n", a.Head, b.Head, a.Acked, b.Acked)
		}
	}
	t.Fatal("not killed")
}
