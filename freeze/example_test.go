package freeze_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/freeze"
)

// exampleDisk is a DiskReader with one filesystem whose usage the example
// sets.
type exampleDisk struct{ pct atomic.Uint64 }

func (d *exampleDisk) set(pct float64)               { d.pct.Store(math.Float64bits(pct)) }
func (d *exampleDisk) Device(string) (uint64, error) { return 1, nil }
func (d *exampleDisk) Usage(string) (uint64, uint64, error) {
	return uint64(math.Float64frombits(d.pct.Load()) * 1000), 100_000, nil
}

// An indexer node freezes when its disk fills up, stays frozen across a
// restart, and is unfrozen on start once capacity was added.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "freeze-example")
	defer os.RemoveAll(dir)

	// In a node the Monitor reads the disk with the default statfs reader
	// on the default schedule; here it reads the example's disk, often.
	disk := &exampleDisk{}
	disk.set(50)
	checked := make(chan float64, 1)
	monOpts := []freeze.MonitorOption{
		freeze.WithDiskReader(disk),
		freeze.WithPollIntervals(time.Millisecond, 10*time.Millisecond),
		freeze.WithOnCheck(func(u float64, _ error) {
			select {
			case checked <- u:
			default:
			}
		}),
	}
	frozen := make(chan struct{})
	onState := freeze.WithOnStateChange(func(s freeze.State, at time.Time) {
		fmt.Println("state:", s)
		if s == freeze.Frozen {
			close(frozen)
		}
	})
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error)

	// README: freeze
	mon, err := freeze.NewMonitor([]string{"/var/lib/indexer/values", "/var/lib/indexer/state"}, monOpts...)
	if err != nil {
		log.Fatal(err)
	}
	state := freeze.FileStore(filepath.Join(dir, "freeze.json")) // crash-safe, survives restarts
	f, err := freeze.Open(ctx, state, mon,
		freeze.WithOnFreeze(func(ctx context.Context, at time.Time) error {
			// A node snapshots each provider's last ad as FrozenAt here
			// (handoff.Snapshot), and stores no new multihash while f.Frozen().
			fmt.Println("snapshot: FrozenAt = each provider's last ad")
			return nil
		}), onState)
	if err != nil {
		log.Fatal(err)
	}
	go func() { ran <- f.Run(runCtx) }() // polls disk usage; freezes at 90%, stays frozen across restarts
	// README end

	fmt.Printf("usage %.0f%%, frozen: %v\n", <-checked, f.Frozen())
	disk.set(91) // the disk fills up
	<-frozen
	cancel()
	fmt.Println("Run:", <-ran)

	froze, err := f.Freeze(ctx) // PUT /freeze on a frozen node: 200
	fmt.Println("manual freeze:", froze, err)
	s := f.Status() // GET /status
	fmt.Printf("status: frozen=%v usage=%.0f freezeAt=%.0f\n", s.Frozen, s.Usage, s.FreezeAt)

	// Restart: still frozen. Then capacity is added and the node restarts
	// with unfreeze on start.
	f, _ = freeze.Open(ctx, state, mon)
	fmt.Println("after restart, frozen:", f.Frozen())
	disk.set(60)
	f, err = freeze.Open(ctx, state, mon, freeze.WithUnfreezeOnStart(true),
		freeze.WithOnUnfreeze(func(ctx context.Context, frozenAt time.Time) error {
			fmt.Println("unfreeze: each publisher's walker reset to FrozenAt")
			return nil
		}))
	fmt.Println("after unfreeze on start, frozen:", f.Frozen(), err)
	// Output:
	// usage 50%, frozen: false
	// state: freezing
	// snapshot: FrozenAt = each provider's last ad
	// state: frozen
	// Run: <nil>
	// manual freeze: false <nil>
	// status: frozen=true usage=91 freezeAt=90
	// after restart, frozen: true
	// unfreeze: each publisher's walker reset to FrozenAt
	// after unfreeze on start, frozen: false <nil>
}
