package indexernode_test

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// servePublisher serves a generated publisher of spec over HTTP until the
// test ends, and returns it with its announce address
// (/ip4/127.0.0.1/tcp/<port>/http/p2p/<id>).
func servePublisher(t *testing.T, spec publishernode.Spec) (*publishernode.Publisher, multiaddr.Multiaddr) {
	t.Helper()
	pub, err := publishernode.NewPublisher(spec)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pub)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return pub, multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%s/http/p2p/%s", u.Port(), pub.ID()))
}
