package etcdtest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	url := endpoint + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("etcd metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("etcd metrics %s: %s", url, resp.Status)
	}
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("etcd metrics %s: %q: %w", url, line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("etcd metrics %s: %w", url, err)
	}
	if !found {
		return 0, fmt.Errorf("etcd metrics %s: no %s", url, name)
	}
	return sum, nil
}
