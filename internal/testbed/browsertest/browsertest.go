package browsertest

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// Chromium returns the path of Debian's chromium; without it t skips, or
// fails when CI is set. Under -short it skips t: a browser is a process,
// so its tests are the integration lane's (internal/testbed/lane).
func Chromium(t testing.TB) string {
	t.Helper()
	lane.Integration(t, "starts Chromium")
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found and CI is set: the browser test needs Debian's chromium package (.ci/services installs it)")
	}
	t.Skip("chromium not found: skipping the browser test (apt-get install chromium, or run make test, which installs it)")
	return ""
}

// Start starts headless Chromium (bin, from [Chromium]) in its own
// process group, with a fresh profile in t.TempDir, a 1280×760 window and
// the flags that keep it off the (closed) network, plus opts (a proxy,
// more flags), and returns a browser context; stop closes the browser and
// kills what is left of its process group. stop is idempotent and also
// runs at t's cleanup.
func Start(ctx context.Context, t testing.TB, bin string, opts ...chromedp.ExecAllocatorOption) (bctx context.Context, stop func()) {
	t.Helper()
	all := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 760),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
	}, opts...)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, all...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("starting %s: %v", bin, err)
	}
	pid := chromedp.FromContext(bctx).Browser.Process().Pid
	t.Logf("chromium: pid %d", pid)
	stop = sync.OnceFunc(func() {
		cancelBrowser()
		cancelAlloc()
		// The group is Chromium's own (Setpgid): its renderers and
		// helpers, nothing else.
		if err := syscall.Kill(-pid, syscall.SIGKILL); err == nil {
			t.Logf("chromium: killed what was left of process group %d", pid)
		}
	})
	t.Cleanup(stop)
	return bctx, stop
}
