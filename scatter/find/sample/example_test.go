package sample_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// An indexer mounts the handler at sample.Prefix of its find listener and
// answers from its store. A context of at most store.SampleKeep multihashes
// is sampled whole, so the answer for a beacon is the same on any indexer.
func Example() {
	st := memory.New()
	defer st.Close()
	prov := "12D3KooWN34sqTaMfZE3ReELyVF3no3qU7883Mi6j2VWsv6dwhPL"
	v := store.Value{ContextID: []byte("deal-1"), Metadata: []byte{0x80, 0x12}}
	v.ProviderID, _ = peer.Decode(prov)
	var mhs []multihash.Multihash
	for _, s := range []string{"a", "b", "c", "d"} {
		mh, _ := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
		mhs = append(mhs, mh)
	}
	if err := st.Put(context.Background(), v, mhs...); err != nil {
		panic(err)
	}

	h, err := sample.NewHandler(st)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle(sample.Prefix, h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The context ID "deal-1" in base64 is ZGVhbC0x.
	resp, err := http.Get(srv.URL + sample.Prefix + prov + "/ZGVhbC0x?max=2&beacon=3439d92d58e47d34")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	fmt.Print(string(body))

	resp, err = http.Get(srv.URL + sample.Prefix + prov + "/bm9uZQ")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 200
	// {"samples":[{"/":"bafkreib6epubmabzlffdhckpmvsodmjuro6xuaei2qwevs3t52xnlhaatu"},{"/":"bafkreibopuwahkkqplrgl3hvwu2wrbnfgoj2eau5eqjzjglsmwq2ewxpyy"}]}
	// 404
}
