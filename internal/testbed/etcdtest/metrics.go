package etcdtest

import (
	"context"
	"net/http"
	"strings"

	"github.com/indexkit/indexkit/internal/promtext"
)

// Received returns the count of messages the etcd member at endpoint
// (host:port or a URL) has received from clients: the sum over methods of
// grpc_server_msg_received_total on its /metrics page, unary calls and
// the messages of watch and keep-alive streams alike. Only the difference
// of two readings means anything.
func Received(ctx context.Context, hc *http.Client, endpoint string) (int64, error) {
	v, err := Metric(ctx, hc, endpoint, "grpc_server_msg_received_total")
	return int64(v), err
}

// Metric returns the sum over its label sets of the metric name on the
// /metrics page of the etcd member at endpoint (host:port or a URL):
// process_cpu_seconds_total, say, for the server's CPU time.
func Metric(ctx context.Context, hc *http.Client, endpoint, name string) (float64, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	return promtext.Sum(ctx, hc, endpoint+"/metrics", name)
}
