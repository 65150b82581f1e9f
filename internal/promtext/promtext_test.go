package promtext_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/internal/promtext"
)

const page = `# HELP grpc_server_msg_received_total Total number of RPC stream messages received on the server.
# TYPE grpc_server_msg_received_total counter
grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 12
grpc_server_msg_received_total{grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 30
grpc_server_msg_received_totalx{a="b"} 1000
process_cpu_seconds_total 1.25
`

func serve(t *testing.T, body string, code int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

func TestSum(t *testing.T) {
	url := serve(t, page, http.StatusOK)
	ctx := context.Background()
	for name, want := range map[string]float64{"grpc_server_msg_received_total": 42, "process_cpu_seconds_total": 1.25} {
		got, err := promtext.Sum(ctx, http.DefaultClient, url, name)
		if err != nil || got != want {
			t.Errorf("Sum(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := promtext.Sum(ctx, http.DefaultClient, url, "absent_total"); err == nil || !strings.Contains(err.Error(), "no absent_total") {
		t.Errorf("Sum of an absent metric: %v", err)
	}
	bad := serve(t, "x_total{a=\"b\"} notanumber\n", http.StatusOK)
	if _, err := promtext.Sum(ctx, http.DefaultClient, bad, "x_total"); err == nil || !strings.Contains(err.Error(), "notanumber") {
		t.Errorf("Sum of a bad sample: %v", err)
	}
	down := serve(t, "", http.StatusServiceUnavailable)
	if _, err := promtext.Sum(ctx, http.DefaultClient, down, "x_total"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("Sum of a 503 page: %v", err)
	}
}
