package piece_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/memory"
	"github.com/indexkit/indexkit/piece/piecetest"
)

// A server answers a sample request with a signed answer, and the client
// checks it against the server's peer ID.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	dir, _ := os.MkdirTemp("", "piece-example")
	defer os.RemoveAll(dir)

	provider, pieceCID := piecetest.Provider(1), piecetest.PieceCID(1)

	// README: piece
	// Server: a store (piece/memory, or piece/redis), a persisted key, the
	// handler. In a service a piece.Tracker fills the store: /providers
	// polling, announces, chain walks.
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if err := store.AddPayloads(ctx, provider, pieceCID, piecetest.Payloads(0, 100)...); err != nil {
		panic(err)
	}
	key, err := piece.LoadOrCreateKey(filepath.Join(dir, "sampler.key"))
	if err != nil {
		panic(err)
	}
	h, err := piece.NewHandler(store, key) // GET /sample/..., GET /ingestion-status/...
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	defer srv.Close()
	serverID, err := peer.IDFromPrivateKey(key) // published by the operator
	if err != nil {
		panic(err)
	}

	// Client: ask with a seed, check the answer against the server's peer ID.
	seed := "8e41cc2ad2ee1ef7d1ba1b46e7adb9c7b0c6d6fe3a33b2c4e0f6ee1a6cba1b4d" // e.g. a DRAND round
	resp, err := http.Get(srv.URL + "/sample/" + provider.String() + "/" + pieceCID.String() + "?seed=" + seed + "&n=2")
	if err != nil {
		panic(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		panic(err)
	}
	v, err := piece.VerifySample(body, provider, pieceCID, seed, piece.WithServer(serverID))
	fmt.Println(resp.StatusCode, resp.Header.Get("Cache-Control"), len(v.Samples), "samples, verified:", err == nil)
	// README end

	// A piece the provider never advertised: a signed 404.
	other := piecetest.PieceCID(2)
	resp, _ = http.Get(srv.URL + "/sample/" + provider.String() + "/" + other.String() + "?seed=" + seed)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	v, err = piece.VerifySample(body, provider, other, seed, piece.WithServer(serverID))
	fmt.Println(resp.StatusCode, v.Error, "verified:", err == nil)

	// Output:
	// 200 no-store 2 samples, verified: true
	// 404 PIECE_NOT_FOUND verified: true
}
