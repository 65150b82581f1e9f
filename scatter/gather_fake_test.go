package scatter

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

var errGatherBoom = errors.New("boom")

// gatherFake is an in-memory Backend for the gather tests. Its fields are
// set before a call and not changed while one runs.
type gatherFake struct {
	results []find.ProviderResult
	err     error         // yielded after the results
	delay   time.Duration // before answering, unless ctx is done first
	wait    chan struct{} // when non-nil, closed before answering
	// canceled, when non-nil, is closed when a call sees its ctx done.
	canceled chan struct{}

	providers []find.ProviderInfo
	provErr   error

	calls atomic.Int32
}

func (f *gatherFake) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		f.calls.Add(1)
		if err := f.pause(ctx); err != nil {
			yield(find.ProviderResult{}, err)
			return
		}
		for _, r := range f.results {
			if !yield(r, nil) {
				return
			}
		}
		if f.err != nil {
			yield(find.ProviderResult{}, f.err)
		}
	}
}

func (f *gatherFake) pause(ctx context.Context) error {
	var timer <-chan time.Time
	if f.delay > 0 {
		timer = time.After(f.delay)
	}
	for timer != nil || f.wait != nil {
		select {
		case <-timer:
			timer = nil
		case <-f.wait:
			return nil
		case <-ctx.Done():
			if f.canceled != nil {
				close(f.canceled)
			}
			return ctx.Err()
		}
	}
	return nil
}

func (f *gatherFake) Providers(ctx context.Context) ([]find.ProviderInfo, error) {
	f.calls.Add(1)
	if err := f.pause(ctx); err != nil {
		return nil, err
	}
	return f.providers, f.provErr
}

func (f *gatherFake) Provider(ctx context.Context, id peer.ID) (find.ProviderInfo, error) {
	f.calls.Add(1)
	if err := f.pause(ctx); err != nil {
		return find.ProviderInfo{}, err
	}
	if f.provErr != nil {
		return find.ProviderInfo{}, f.provErr
	}
	for _, p := range f.providers {
		if p.AddrInfo.ID == id {
			return p, nil
		}
	}
	return find.ProviderInfo{}, fmt.Errorf("fake: %s: %w", id, find.ErrNotFound)
}

// gres is a result of provider p for context c with metadata md.
func gres(p, c, md string) find.ProviderResult {
	return find.ProviderResult{ContextID: []byte(c), Metadata: []byte(md), Provider: &peer.AddrInfo{ID: peer.ID(p)}}
}

// prString is "provider/context=metadata".
func prString(r find.ProviderResult) string {
	return fmt.Sprintf("%s/%s=%s", string(r.Provider.ID), r.ContextID, r.Metadata)
}

var gatherMH = func() multihash.Multihash {
	mh, err := multihash.Sum([]byte("gather"), multihash.SHA2_256, -1)
	if err != nil {
		panic(err)
	}
	return mh
}()

func gatherBackends(fs ...*gatherFake) []find.Backend {
	bs := make([]find.Backend, len(fs))
	for i, f := range fs {
		bs[i] = f
	}
	return bs
}

// gatherCollect reads a whole Find, returning its results as prString and its
// error.
func gatherCollect(t *testing.T, seq iter.Seq2[find.ProviderResult, error]) ([]string, error) {
	t.Helper()
	var got []string
	var last error
	for r, err := range seq {
		if last != nil {
			t.Fatalf("yield after the error %v", last)
		}
		if err != nil {
			last = err
			continue
		}
		got = append(got, prString(r))
	}
	return got, last
}

func checkPartialErr(t *testing.T, err error, want *find.PartialError, is error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	var pe *find.PartialError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v, want a *find.PartialError", err)
	}
	if pe.Answered != want.Answered || pe.Total != want.Total || pe.TimedOut != want.TimedOut {
		t.Errorf("PartialError %d/%d answered, %d timed out; want %d/%d, %d", pe.Answered, pe.Total, pe.TimedOut, want.Answered, want.Total, want.TimedOut)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("error %v does not wrap %v", err, is)
	}
	if errors.Is(err, find.ErrNotFound) {
		t.Errorf("error %v wraps find.ErrNotFound", err)
	}
}
