package logtap

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/internal/logfields"
)

// ErrClosed is wrapped by the waits of a [Tap] that was closed before the
// awaited line came: the role has returned without writing it.
var ErrClosed = errkind.New(errkind.Closed, "logtap: closed")

// maxLines bounds the lines a Tap keeps; older lines are dropped (a
// listening line comes early, but a wait may start late, so the first
// lines are kept apart, see Tap.first).
const maxLines = 4096

// keepFirst is how many of the first lines a Tap keeps for good, since
// the listening and starting lines are among them.
const keepFirst = 256

// Tap is an io.Writer that passes what it is given to the next writer and
// keeps the slog text lines for [Tap.Addr] and [Tap.WaitMsg].
type Tap struct {
	next io.Writer

	mu      sync.Mutex
	buf     []byte        // output after the last newline
	first   []string      // the first keepFirst lines
	recent  []string      // later lines, at most maxLines
	closed  bool          // Close was called
	changed chan struct{} // closed and replaced at each new line and at Close
}

// New returns a Tap that writes through to next (nil: [io.Discard]).
func New(next io.Writer) *Tap {
	if next == nil {
		next = io.Discard
	}
	return &Tap{next: next, changed: make(chan struct{})}
}

// Write passes b on to the next writer and records the complete lines in
// it. It returns what the next writer returns.
func (t *Tap) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, b...)
	added := false
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.buf[:i]))
		t.buf = t.buf[i+1:]
		added = true
	}
	if added {
		t.notify()
	}
	// Under the lock, so that the next writer sees writes in the order
	// their lines were recorded.
	n, err := t.next.Write(b)
	t.mu.Unlock()
	return n, err
}

// add keeps a line; t.mu is held.
func (t *Tap) add(line string) {
	if len(t.first) < keepFirst {
		t.first = append(t.first, line)
		return
	}
	if len(t.recent) == maxLines {
		t.recent = append(t.recent[:0], t.recent[maxLines/2:]...)
	}
	t.recent = append(t.recent, line)
}

// notify wakes the waits; t.mu is held.
func (t *Tap) notify() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Close records that no more lines will come (the role has returned), so
// that waits for a line that never came fail with [ErrClosed] instead of
// waiting for their context. A partial last line counts as a line. Close
// is idempotent and does not close the next writer.
func (t *Tap) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if len(t.buf) > 0 {
		t.add(string(t.buf))
		t.buf = nil
	}
	t.closed = true
	t.notify()
	return nil
}

// Lines returns the lines the Tap holds: the first ones and the most
// recent ones (a long-running role's middle lines are dropped).
func (t *Tap) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.first)+len(t.recent))
	return append(append(out, t.first...), t.recent...)
}

// wait returns the fields of the first line, oldest first, for which match
// holds, waiting for it until ctx is done or the Tap is closed.
func (t *Tap) wait(ctx context.Context, what string, match func(map[string]string) bool) (map[string]string, error) {
	for {
		t.mu.Lock()
		for _, lines := range [][]string{t.first, t.recent} {
			for _, l := range lines {
				if f := Fields(l); match(f) {
					t.mu.Unlock()
					return f, nil
				}
			}
		}
		closed, changed := t.closed, t.changed
		t.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("waiting for %s: %w", what, ErrClosed)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		}
	}
}

// WaitMsg waits for the first line with msg=<msg> and returns its
// key=value pairs.
func (t *Tap) WaitMsg(ctx context.Context, msg string) (map[string]string, error) {
	return t.wait(ctx, "msg="+msg, func(f map[string]string) bool { return f["msg"] == msg })
}

// Addr waits for the first line msg=listening name=<name> addr=<address>
// and returns the address (host:port, or a multiaddr for name=p2p).
func (t *Tap) Addr(ctx context.Context, name string) (string, error) {
	f, err := t.wait(ctx, "msg=listening name="+name, func(f map[string]string) bool {
		return f["msg"] == "listening" && f["name"] == name && f["addr"] != ""
	})
	if err != nil {
		return "", err
	}
	return f["addr"], nil
}

// Fields parses the key=value pairs of a slog text line, unquoting quoted
// values (internal/logfields, which internal/testbed/proctest uses too).
func Fields(line string) map[string]string { return logfields.Parse(line) }
