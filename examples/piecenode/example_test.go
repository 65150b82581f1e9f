package piecenode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"

	"github.com/indexkit/indexkit/examples/piecenode"
)

// A piece sampler in process, with an in-memory store, that learns of
// publishers only from announces: its signed API answers for a provider
// it has not walked yet.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	cfg := piecenode.DefaultConfig()
	cfg.ProvidersURL = "" // no /providers to poll: announces only
	sampler, err := piecenode.New(ctx, cfg, piecenode.Listeners{API: ln})
	if err != nil {
		panic(err)
	}
	defer sampler.Close()
	done := make(chan error, 1)
	go func() { done <- sampler.Run(ctx) }()

	const provider = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"
	const pieceCID = "baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq"
	resp, err := http.Get(sampler.Addrs().APIURL() + "/sample/" + provider + "/" + pieceCID + "?seed=round-1")
	if err != nil {
		panic(err)
	}
	var answer struct{ Error, PubKey, Signature string }
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, answer.Error)
	fmt.Println("signed by the sampler:", answer.PubKey == sampler.PubKey() && answer.Signature != "")

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// 404 Not Found PROVIDER_NOT_FOUND
	// signed by the sampler: true
	// stopped: <nil>
}
