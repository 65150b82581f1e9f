package assignercmd_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/assignercmd"
	"github.com/indexkit/indexkit/internal/testbed/deadline"
)

// TestAdminTokenSources: the assigner calls the indexers' admin APIs with
// the token of -admin-token-file, or of $INDEXKIT_ADMIN_TOKEN, and never
// logs it.
func TestAdminTokenSources(t *testing.T) {
	const secret = "assigner-secret-42"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  string
		args []string
	}{
		{"file", "not-this-one", []string{"-admin-token-file", file}},
		{"environment", secret, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(cli.EnvAdminToken, c.env)
			auth := make(chan string, 16)
			indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case auth <- r.Header.Get("Authorization"):
				default:
				}
				w.WriteHeader(http.StatusNoContent) // GET /ingest/assigned: none
			}))
			defer indexer.Close()
			u := indexer.URL
			var log strings.Builder
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			done := make(chan error, 1)
			go func() {
				defer cancel() // a Run that fails at once ends the wait
				done <- assignercmd.Main(ctx, append([]string{"-indexer", "admin=" + u + "/admin,find=" + u + "/find,ingest=" + u + "/ingest",
					"-listen", "127.0.0.1:0", "-state-listen", "127.0.0.1:0", "-metrics", "", "-p2p", "none"}, c.args...), &log) // read after Run returns
			}()
			select {
			case got := <-auth:
				if got != "Bearer "+secret {
					t.Errorf("Authorization %q, want the token", got)
				}
			case <-ctx.Done():
				t.Fatalf("the assigner never called the indexer's admin API (Run: %v)", <-done)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if strings.Contains(log.String(), secret) {
				t.Fatal("the token is in the assigner's log")
			}
		})
	}
	t.Setenv(cli.EnvAdminToken, "")
	err := assignercmd.Main(deadline.Context(t, time.Minute), []string{"-indexer", "admin=127.0.0.1:1,find=127.0.0.1:2,ingest=127.0.0.1:3",
		"-admin-token", "a", "-admin-token-file", file}, io.Discard)
	if !errors.Is(err, cli.ErrTokenSources) {
		t.Fatalf("-admin-token and -admin-token-file: %v, want ErrTokenSources", err)
	}
}
