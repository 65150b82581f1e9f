package netpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// A node dials what strangers name through a policy: the default one
// refuses a publisher on this machine, a private pool's allows it.
func Example() {
	strict, _ := netpolicy.New()
	for _, a := range []string{"198.51.100.7", "10.0.0.5", "::ffff:127.0.0.1", "169.254.169.254"} {
		fmt.Println(strict.Check(netip.MustParseAddr(a)))
	}

	// A publisher on 127.0.0.1, as in a pool that runs on one machine.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()

	get := func(p *netpolicy.Policy) error {
		hc := p.Client()
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	err := get(strict)
	fmt.Println("strict:", errors.Is(err, netpolicy.ErrForbiddenAddress))

	pool, _ := netpolicy.New(netpolicy.AllowPrivate())
	fmt.Println("private pool:", get(pool))
	fmt.Println(pool.Check(netip.MustParseAddr("169.254.169.254")))
	// Output:
	// <nil>
	// netpolicy: 10.0.0.5: private address not allowed (allow private addresses for a private pool)
	// netpolicy: ::ffff:127.0.0.1: loopback address not allowed (allow private addresses for a private pool)
	// netpolicy: 169.254.169.254: cloud metadata address not allowed (refused even for a private pool; allow cloud metadata explicitly only if this is really wanted)
	// strict: true
	// private pool: <nil>
	// netpolicy: 169.254.169.254: cloud metadata address not allowed (refused even for a private pool; allow cloud metadata explicitly only if this is really wanted)
}
