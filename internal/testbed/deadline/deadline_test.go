package deadline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/deadline"
)

// A call that blocks until its context ends returns within the bound,
// with context.DeadlineExceeded.
func TestContextEndsAfterDuration(t *testing.T) {
	ctx := deadline.Context(t, 50*time.Millisecond)
	dl, ok := ctx.Deadline()
	if !ok {
		t.Fatal("context has no deadline")
	}
	if left := time.Until(dl); left > 50*time.Millisecond || left <= 0 {
		t.Fatalf("deadline in %v, want within 50ms", left)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("context not done 5s after a 50ms bound")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("ctx.Err() = %v, want DeadlineExceeded", ctx.Err())
	}
}

// The binary's own deadline wins when it is nearer than the duration.
func TestContextBeforeBinaryDeadline(t *testing.T) {
	bin, ok := t.Deadline()
	if !ok {
		t.Skip("go test -timeout 0: the binary has no deadline")
	}
	ctx := deadline.Context(t, time.Until(bin)+time.Hour)
	dl, _ := ctx.Deadline()
	if !dl.Before(bin) {
		t.Fatalf("deadline %v not before the binary's %v", dl, bin)
	}
}

// The context ends with the test: a goroutine left waiting on it is
// released by the test's cleanup.
func TestContextCancelledWithTest(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) { ctx = deadline.Context(t, time.Hour) })
	select {
	case <-ctx.Done():
	default:
		t.Fatal("context still live after its test ended")
	}
}
