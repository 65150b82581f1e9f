package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/indexkit/indexkit/internal/promtext"
)

// serverOps returns the store server's count of requests so far, for the
// sim's steady-state load figure: Redis's total_commands_processed (INFO
// stats), or the sum over every etcd endpoint of
// grpc_server_msg_received_total, which counts each message a client
// sends, unary calls and the messages of watch and keep-alive streams
// alike. Only differences of two readings mean anything.
func (b *backend) serverOps(ctx context.Context, hc *http.Client) (int64, error) {
	if b.etcd == nil {
		info, err := b.rdb.Info(ctx, "stats").Result()
		if err != nil {
			return 0, fmt.Errorf("redis INFO stats: %w", err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, fmt.Errorf("redis INFO stats: no total_commands_processed")
	}
	var sum int64
	for _, ep := range b.etcd.Endpoints() {
		if !strings.Contains(ep, "://") {
			ep = "http://" + ep
		}
		n, err := etcdReceived(ctx, hc, ep+"/metrics")
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// etcdReceived sums grpc_server_msg_received_total over its label sets.
func etcdReceived(ctx context.Context, hc *http.Client, url string) (int64, error) {
	n, err := promtext.Sum(ctx, hc, url, "grpc_server_msg_received_total")
	return int64(n), err
}

// steadyLoad measures the store's requests per second over d while the
// sim itself sends none: the nodes' heartbeats, renewals, feed reads and
// reconciliations, and nothing else.
func (f *fleet) steadyLoad(ctx context.Context, d time.Duration) (perSec float64, err error) {
	before, err := f.b.serverOps(ctx, f.hc)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	after, err := f.b.serverOps(ctx, f.hc)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / time.Since(t0).Seconds(), nil
}
