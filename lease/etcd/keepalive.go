package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keepAlive renews etcd leases over a few long-lived LeaseKeepAlive
// streams: a batch of n renewals is n requests sent and n answers read on
// one stream, in order, where clientv3's KeepAliveOnce opens a new stream
// for each lease. A batch of more than 16 is split over up to
// keepAliveStreams streams at once, and concurrent calls spread over
// them too, each stream used by one call at a time; a stream is opened
// on first use and again after any error.
type keepAlive struct {
	cli  *clientv3.Client
	done <-chan struct{} // the store's: closing it ends the streams

	next    atomic.Uint32
	streams [keepAliveStreams]kaStream
}

// keepAliveStreams is how many renewals can be in flight at once.
const keepAliveStreams = 8

type kaStream struct {
	mu     sync.Mutex
	stream pb.Lease_LeaseKeepAliveClient
	cancel context.CancelFunc
}

// errStream marks a failure of the stream itself (not of a lease): the
// caller's renewal is then unknown, as a failed call is.
var errStream = errors.New("lease/etcd: keep-alive stream")

// renew sends one keep-alive for each of ids and returns, for each, the
// TTL etcd answered: positive when the lease was renewed, 0 or less when
// it is gone (expired or revoked). It retries once on a fresh stream when
// the stream it had failed before anything was sent on it.
func (k *keepAlive) renew(ctx context.Context, ids []clientv3.LeaseID) ([]int64, error) {
	// A server answers one stream's keep-alives one after the other, each
	// after its applies caught up with its commits: under a write load
	// that is milliseconds each, so a holder's many leases are spread
	// over the streams, renewed at once.
	const perStream = 16
	if len(ids) <= perStream {
		return k.renewOn(ctx, ids)
	}
	n := min(keepAliveStreams, (len(ids)+perStream-1)/perStream)
	size := (len(ids) + n - 1) / n
	ttls := make([]int64, len(ids))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		lo, hi := i*size, min(len(ids), (i+1)*size)
		if lo >= hi {
			break
		}
		wg.Go(func() {
			t, err := k.renewOn(ctx, ids[lo:hi])
			if err != nil {
				errs[i] = err
				return
			}
			copy(ttls[lo:hi], t)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ttls, nil
}

// renewOn renews ids on one stream.
func (k *keepAlive) renewOn(ctx context.Context, ids []clientv3.LeaseID) ([]int64, error) {
	ks := &k.streams[k.next.Add(1)%keepAliveStreams]
	ks.mu.Lock()
	defer ks.mu.Unlock()
	var err error
	for attempt := range 2 {
		if ks.stream == nil {
			if err = ks.open(k.cli, k.done); err != nil {
				return nil, err
			}
		}
		var ttls []int64
		var sent bool
		ttls, sent, err = ks.roundTrip(ctx, ids)
		if err == nil {
			return ttls, nil
		}
		ks.reset()
		if sent || ctx.Err() != nil || attempt == 1 {
			break
		}
	}
	return nil, err
}

func (k *kaStream) open(cli *clientv3.Client, done <-chan struct{}) error {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	st, err := pb.NewLeaseClient(cli.ActiveConnection()).LeaseKeepAlive(ctx)
	if err != nil {
		cancel()
		return fmt.Errorf("%w: open: %w", errStream, err)
	}
	k.stream, k.cancel = st, cancel
	return nil
}

func (k *kaStream) reset() {
	if k.cancel != nil {
		k.cancel()
	}
	k.stream, k.cancel = nil, nil
}

// roundTrip sends the requests and reads the answers; ctx ending cancels
// the stream. sent says whether any request went out.
func (k *kaStream) roundTrip(ctx context.Context, ids []clientv3.LeaseID) (ttls []int64, sent bool, err error) {
	cancel := k.cancel
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	for i, id := range ids {
		if err := k.stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)}); err != nil {
			return nil, i > 0, fmt.Errorf("%w: send: %w", errStream, orCtx(ctx, err))
		}
	}
	ttls = make([]int64, len(ids))
	for i, id := range ids {
		resp, err := k.stream.Recv()
		if err != nil {
			return nil, true, fmt.Errorf("%w: receive: %w", errStream, orCtx(ctx, err))
		}
		if resp.ID != int64(id) {
			return nil, true, fmt.Errorf("%w: answer for lease %x, want %x", errStream, resp.ID, int64(id))
		}
		ttls[i] = resp.TTL
	}
	return ttls, true, nil
}

// orCtx prefers the context's error, which says why the stream was
// cancelled under the caller.
func orCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
