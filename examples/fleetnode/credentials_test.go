package fleetnode

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/lease"
)

// privateGitServer serves the bare repositories under root over git's
// smart HTTP protocol (git http-backend, as a CGI) on 127.0.0.1, to
// clients that give user and pass by HTTP basic authentication; others
// get 401 with a challenge, as a private forge answers. It counts the
// requests refused.
func privateGitServer(t *testing.T, root, user, pass string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	needGit(t)
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"},
	}
	refused := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
			refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, refused
}

// A private repository over HTTP with basic authentication: a node's
// fetch finds no credentials and fails with git's own message (it never
// waits for a terminal prompt); with a credential helper (git's standard
// "store" helper reading a credentials file, given as
// -git-credential-helper) it fetches and indexes the repo; with a helper
// that holds a wrong password it fails; and no error message carries a
// password, even from a clone URL that has one in it.
func TestPrivateRepoCredentialHelper(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	repos, err := repogen.Generate(ctx, root, 1, repogen.Sizes{Min: 4 << 10, Max: 8 << 10}, 21)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	const user, pass = "fleet-bot", "s3cret-token"
	srv, refused := privateGitServer(t, root, user, pass)
	url := srv.URL + "/" + filepath.Base(r.Path)
	row := lease.Row{Item: lease.Item{ID: r.ID, Commit: r.Commit}}
	// Keep the user's own git configuration out of the test: HOME is
	// where git reads ~/.gitconfig (and the store helper's default file).
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())

	indexer := func(helpers ...string) *repoIndexer {
		x := newRepoIndexer(t.TempDir(), func(context.Context, string) (string, error) { return url, nil })
		x.credentialHelpers = helpers
		return x
	}
	credFile := func(p string) string {
		f := filepath.Join(t.TempDir(), "git-credentials")
		if err := os.WriteFile(f, fmt.Appendf(nil, "%s://%s:%s@%s\n", "http", user, p, strings.TrimPrefix(srv.URL, "http://")), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}

	_, err = indexer().Index(ctx, row)
	if err == nil || !strings.Contains(err.Error(), "could not read Username") {
		t.Fatalf("fetch without credentials: %v; want git's could not read Username", err)
	}
	if refused.Load() == 0 {
		t.Fatal("the server refused nothing: the fetch did not reach it")
	}

	x := indexer("store --file=" + credFile(pass))
	if _, err := x.Index(ctx, row); err != nil {
		t.Fatalf("fetch with the store helper: %v", err)
	}
	q := fmt.Sprintf("marker-%04d", 0)
	if got, _, err := x.get(r.ID).Search(q, 10); err != nil || len(got) != 1 {
		t.Fatalf("the private repo's index: Search(%q) = %v, %v", q, got, err)
	}

	_, err = indexer("store --file="+credFile("wrong")).Index(ctx, row)
	if err == nil || !strings.Contains(err.Error(), "Authentication failed") {
		t.Fatalf("fetch with a wrong password: %v; want git's Authentication failed", err)
	}

	withPass := strings.Replace(url, "http://", "http://"+user+":wrong-"+pass+"@", 1)
	y := newRepoIndexer(t.TempDir(), func(context.Context, string) (string, error) { return withPass, nil })
	_, err = y.Index(ctx, row)
	if err == nil || strings.Contains(err.Error(), pass) {
		t.Fatalf("fetch from a URL with a (wrong) password in it: %v; want an error without the password", err)
	}
}
