package deadline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/deadline"
)

// A Main that should refuse its flags gets a bounded context: if a bug
// makes it run instead, the test fails after ten seconds, not after the
// binary's -timeout.
func ExampleContext() {
	var t *testing.T // the test's own *testing.T
	if t == nil {
		fmt.Println("ok")
		return
	}
	ctx := deadline.Context(t, 10*time.Second)
	main := func(ctx context.Context, args []string) error { <-ctx.Done(); return ctx.Err() }
	if err := main(ctx, []string{"-bad-flag"}); err == context.DeadlineExceeded {
		t.Fatal("Main ran instead of refusing its flags")
	}
	// Output: ok
}
