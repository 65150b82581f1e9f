package keyspace_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

func layoutAt(epoch uint64) keyspace.Layout {
	return keyspace.Layout{Epoch: epoch, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://q1"}}, Current: []string{"q1"}}
}

// watched records what WatchFile hands over.
type watched struct {
	mu      sync.Mutex
	applied []uint64
	errs    []error
	cur     uint64 // the epoch in force; Apply refuses older ones
	changed chan struct{}
}

func (w *watched) apply(l keyspace.Layout) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.notify()
	if l.Epoch < w.cur {
		return fmt.Errorf("epoch %d is older than %d", l.Epoch, w.cur)
	}
	w.cur = l.Epoch
	w.applied = append(w.applied, l.Epoch)
	return nil
}

func (w *watched) onError(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.notify()
	w.errs = append(w.errs, err)
}

func (w *watched) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *watched) counts() (applied, errs int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.applied), len(w.errs)
}

// waitFor waits until cond holds of the record, or fails the test.
func (w *watched) waitFor(t *testing.T, what string, cond func(applied []uint64, errs []error) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		w.mu.Lock()
		ok := cond(w.applied, w.errs)
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-w.changed:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("no %s: applied %v, errors %v", what, w.applied, w.errs)
		}
	}
}

// WatchFile applies the layout at the start and at each change of the
// file, not when the file is unchanged; a file that does not load and an
// Apply that refuses are reported once each, and Reload reads the file
// whatever its content.
func TestWatchFile(t *testing.T) {
	const interval = 2 * time.Millisecond
	path := filepath.Join(t.TempDir(), "layout.json")
	if err := keyspace.Save(path, layoutAt(1)); err != nil {
		t.Fatal(err)
	}
	w := &watched{changed: make(chan struct{}, 1)}
	reload := make(chan struct{})
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- keyspace.WatchFile(ctx, keyspace.WatchConfig{Path: path, Interval: interval, Reload: reload, Apply: w.apply, OnError: w.onError})
	}()
	// quiet waits for many intervals and checks that nothing more came.
	quiet := func(what string) {
		t.Helper()
		a, e := w.counts()
		time.Sleep(50 * interval)
		if a2, e2 := w.counts(); a2 != a || e2 != e {
			t.Errorf("%s: %d applies and %d errors more over 50 intervals, want none", what, a2-a, e2-e)
		}
	}
	lastErr := func(errs []error, target error, text string) bool {
		return len(errs) > 0 && (target == nil || errors.Is(errs[len(errs)-1], target)) && strings.Contains(errs[len(errs)-1].Error(), text)
	}

	w.waitFor(t, "layout at the start", func(a []uint64, _ []error) bool { return len(a) == 1 && a[0] == 1 })
	quiet("an unchanged file")

	if err := keyspace.Save(path, layoutAt(2)); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "epoch 2 after the file changed", func(a []uint64, _ []error) bool { return len(a) == 2 && a[1] == 2 })

	// Written whole (renamed over the file), so that the watcher reads it
	// once, not a half-written file first.
	if err := os.WriteFile(path+".tmp", []byte(`{"Epoch": 3,`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "error for a file that is not JSON", func(_ []uint64, e []error) bool { return lastErr(e, keyspace.ErrInvalidLayout, path) })
	quiet("a bad file, unchanged")
	_, errs := w.counts()
	reload <- struct{}{}
	w.waitFor(t, "error again on Reload", func(_ []uint64, e []error) bool { return len(e) == errs+1 })

	if err := keyspace.Save(path, layoutAt(1)); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "Apply's refusal of an older epoch", func(_ []uint64, e []error) bool { return lastErr(e, nil, "epoch 1 is older than 2") })
	quiet("a refused layout, unchanged")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "error for a missing file", func(_ []uint64, e []error) bool { return lastErr(e, fs.ErrNotExist, "read layout") })
	quiet("a missing file")

	if err := keyspace.Save(path, layoutAt(3)); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "epoch 3 after the file came back", func(a []uint64, _ []error) bool { return len(a) == 3 && a[2] == 3 })
	reload <- struct{}{}
	w.waitFor(t, "epoch 3 again on Reload", func(a []uint64, _ []error) bool { return len(a) == 4 && a[3] == 3 })

	stop()
	if err := <-done; err != nil {
		t.Fatalf("WatchFile: %v", err)
	}
}

// A WatchConfig without a path or Apply, or with a negative Interval, is
// refused at once, naming the field.
func TestWatchFileConfig(t *testing.T) {
	apply := func(keyspace.Layout) error { return nil }
	for _, tc := range []struct {
		cfg  keyspace.WatchConfig
		want string
	}{
		{keyspace.WatchConfig{Apply: apply}, "WatchConfig.Path"},
		{keyspace.WatchConfig{Path: "layout.json"}, "WatchConfig.Apply"},
		{keyspace.WatchConfig{Path: "layout.json", Apply: apply, Interval: -time.Second}, "WatchConfig.Interval -1s"},
	} {
		if err := keyspace.WatchFile(t.Context(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// A component that reads by a layout file follows it: the layout at the
// start, then each one a Reload (a program's SIGHUP) finds.
func ExampleWatchFile() {
	dir, _ := os.MkdirTemp("", "watch-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "layout.json")
	keyspace.Save(path, layoutAt(1))

	ctx, stop := context.WithCancel(context.Background())
	reload := make(chan struct{})
	applied := make(chan keyspace.Layout)
	done := make(chan error, 1)
	go func() {
		done <- keyspace.WatchFile(ctx, keyspace.WatchConfig{
			Path:   path,
			Reload: reload, // Interval 0: no polling
			Apply: func(l keyspace.Layout) error {
				applied <- l
				return nil
			},
		})
	}()
	fmt.Println("epoch", (<-applied).Epoch)
	keyspace.Save(path, layoutAt(2))
	reload <- struct{}{}
	fmt.Println("epoch", (<-applied).Epoch)
	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// epoch 1
	// epoch 2
	// stopped: <nil>
}
