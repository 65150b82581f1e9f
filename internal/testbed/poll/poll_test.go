package poll_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/poll"
)

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = format
	for _, a := range args {
		if s, ok := a.(string); ok {
			r.msg += " " + s
		}
	}
}

func TestUntil(t *testing.T) {
	var n atomic.Int64
	go func() {
		for range 3 {
			time.Sleep(10 * time.Millisecond)
			n.Add(1)
		}
	}()
	poll.Until(t, 5*time.Second, "three steps", func() (bool, string) { return n.Load() == 3, "" })

	r := &fatalRecorder{TB: t}
	start := time.Now()
	poll.Until(r, 120*time.Millisecond, "never", func() (bool, string) { return false, "still false" })
	if !strings.Contains(r.msg, "never") || !strings.Contains(r.msg, "still false") {
		t.Fatalf("Fatalf message %q; want the condition's name and last state", r.msg)
	}
	if took := time.Since(start); took < 120*time.Millisecond {
		t.Fatalf("gave up after %v, before the bound", took)
	}
}
