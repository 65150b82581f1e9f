package localonly_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/indexkit/indexkit/internal/localonly"
)

// TestCheckNearMisses holds the Host and browser headers one step away
// from an accepted value, each beside the accepted value it nearly is:
// trailing dots, case, ports, brackets, the edges of 127.0.0.0/8, names
// that only start or end like an accepted one, and IP forms a resolver
// would read as loopback but a guard must not.
func TestCheckNearMisses(t *testing.T) {
	g, err := localonly.New("the admin API", "set a token", "indexer.internal", "10.0.0.5", "fd00::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host   string
		header [2]string
		want   error // nil: let through
	}{
		// localhost: a trailing dot and case are the same name; the
		// port, even 0 or empty, does not matter.
		{host: "localhost."},
		{host: "localhost.:3002"},
		{host: "LocalHost:3002"},
		{host: "localhost:0"},
		{host: "localhost:"},
		{host: "localhost..", want: localonly.ErrForeignHost},
		{host: " localhost", want: localonly.ErrForeignHost},
		{host: "localhostx", want: localonly.ErrForeignHost},
		{host: "xlocalhost", want: localonly.ErrForeignHost},
		{host: "localhost:3002:3002", want: localonly.ErrForeignHost},
		{host: "localhost.localdomain", want: localonly.ErrForeignHost},
		{host: "localhost.:3002.evil.example", want: localonly.ErrForeignHost},

		// 127.0.0.0/8 at its edges, and what only looks like it.
		{host: "127.0.0.0"},
		{host: "127.255.255.255:1"},
		{host: "126.255.255.255", want: localonly.ErrForeignHost},
		{host: "128.0.0.0", want: localonly.ErrForeignHost},
		{host: "127.0.0.1.evil.example:3002", want: localonly.ErrForeignHost},
		{host: "127.0.0.1.", want: localonly.ErrForeignHost}, // a DNS name, not the literal
		{host: "127.1", want: localonly.ErrForeignHost},      // inet_aton forms resolve through DNS
		{host: "2130706433", want: localonly.ErrForeignHost},
		{host: "0x7f000001", want: localonly.ErrForeignHost},
		{host: "0177.0.0.1", want: localonly.ErrForeignHost},

		// ::1 with and without brackets and port; its neighbours.
		{host: "[::1]"},
		{host: "[::1]:0"},
		{host: "::1"},
		{host: "[0:0:0:0:0:0:0:1]:3002"},
		{host: "[::ffff:127.0.0.1]"},
		{host: "[::2]:3002", want: localonly.ErrForeignHost},
		{host: "[::]:3002", want: localonly.ErrForeignHost},
		{host: "[::1", want: localonly.ErrForeignHost},
		{host: "[::1]]:3002", want: localonly.ErrForeignHost},
		{host: "[::ffff:128.0.0.1]", want: localonly.ErrForeignHost},
		{host: "[::7f00:1]", want: localonly.ErrForeignHost}, // IPv4-compatible, not loopback

		// Configured names: case, trailing dot and port are ignored,
		// a longer or shorter name is another name.
		{host: "INDEXER.INTERNAL:80"},
		{host: "indexer.internal."},
		{host: "indexer.internal.evil.example", want: localonly.ErrForeignHost},
		{host: "evil.indexer.internal", want: localonly.ErrForeignHost},
		{host: "indexer", want: localonly.ErrForeignHost},
		{host: "indexer.internalx", want: localonly.ErrForeignHost},
		// Configured addresses: compared as addresses, not as text.
		{host: "10.0.0.5:0"},
		{host: "[::ffff:10.0.0.5]:3002"},
		{host: "10.0.0.50", want: localonly.ErrForeignHost},
		{host: "10.0.0.4", want: localonly.ErrForeignHost},
		{host: "10.0.0.5.evil.example", want: localonly.ErrForeignHost},
		{host: "[FD00::1]:80"},
		{host: "[fd00:0::0001]"},
		{host: "[fd00::2]", want: localonly.ErrForeignHost},

		// Browser headers: any Origin, even empty; any Sec-Fetch-Site
		// but the exact "none".
		{host: "localhost", header: [2]string{"Origin", ""}, want: localonly.ErrBrowser},
		{host: "localhost", header: [2]string{"Origin", "http://localhost"}, want: localonly.ErrBrowser},
		{host: "localhost", header: [2]string{"Sec-Fetch-Site", "same-origin"}, want: localonly.ErrBrowser},
		{host: "localhost", header: [2]string{"Sec-Fetch-Site", "NONE"}, want: localonly.ErrBrowser},
		{host: "localhost", header: [2]string{"Sec-Fetch-Site", "none "}, want: localonly.ErrBrowser},
		{host: "localhost", header: [2]string{"Sec-Fetch-Site", "none"}},
		{host: "localhost", header: [2]string{"Sec-Fetch-Mode", "cors"}}, // not a header the guard reads
	} {
		r := httptest.NewRequest(http.MethodPut, "/freeze", nil)
		r.Host = tc.host
		if tc.header[0] != "" {
			r.Header[tc.header[0]] = []string{tc.header[1]}
		}
		err := g.Check(r)
		if (tc.want == nil) != (err == nil) || !errors.Is(err, tc.want) {
			t.Errorf("Host %q %q: %v, want %v", tc.host, tc.header, err, tc.want)
		}
	}
}
