package loopbench_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/loopbench"
)

// A benchmark of a handler over loopback; here run once through
// testing.Benchmark, as go test -bench would.
func Example() {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	res := testing.Benchmark(func(b *testing.B) { loopbench.Run(b, h, []string{"/a", "/b"}, 2) })
	fmt.Println("measured:", res.N > 0, "lookups/s reported:", res.Extra["lookups/s"] > 0)
	// Output: measured: true lookups/s reported: true
}
