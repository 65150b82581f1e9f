package piece

import (
	"net/url"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// FuzzParseSample: the path and query parser never panics, accepts only
// valid IDs and seeds, and what it accepts round-trips to the canonical
// forms that the signature covers.
func FuzzParseSample(f *testing.F) {
	f.Add("12D3KooWLNECf3n6ymmcXxvzmgkBsUC1876GfYLUZhxWdotqNFp7", "baga6ea4seaqg6cyyqvgix4n2gdvpedm4ed2j5mle55le7k2eszsjvml5yupgsma", "seed=abc&n=2")
	f.Add("QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N", "QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n", "seed=%41%20b")
	f.Add("bafzaajaiaejcbzf5xjwlk5rgz2ecnfiuvxeayn3pnqxgk4tebyjagyp3vtsj7b3", "zb2rhe5P4gXftAwvA4eXQ5HJwsER2owDyS9sKaQRRVQPn93bA", "n=1&seed=x&n=3")
	f.Add("", "", "")
	f.Add("1", "b", "seed=&seed=")
	ids := newMemo[peer.ID](4)
	f.Fuzz(func(t *testing.T, provider, pieceCid, rawQuery string) {
		q, aerr := parseSample(provider, pieceCid, rawQuery, MaxSamples, nil)
		// With the peer ID memo, twice: the same answer as without it.
		for range 2 {
			qm, merr := parseSample(provider, pieceCid, rawQuery, MaxSamples, ids)
			if (merr == nil) != (aerr == nil) || merr == nil && qm != q || merr != nil && *merr != *aerr {
				t.Fatalf("with the memo: %+v %+v; without: %+v %+v", qm, merr, q, aerr)
			}
		}
		if aerr != nil {
			if aerr.status != 400 || aerr.code == "" || aerr.detail == "" {
				t.Fatalf("bad error %+v", aerr)
			}
			return
		}
		if err := q.provider.Validate(); err != nil {
			t.Fatalf("accepted an invalid provider %q: %v", provider, err)
		}
		if q.providerStr != q.provider.String() {
			t.Fatalf("providerStr %q != canonical %q", q.providerStr, q.provider.String())
		}
		if q.pieceStr != q.piece.String() || !q.piece.Defined() {
			t.Fatalf("pieceStr %q != canonical %q", q.pieceStr, q.piece.String())
		}
		if err := ValidSeed(q.seed); err != nil {
			t.Fatalf("accepted seed %q: %v", q.seed, err)
		}
		if q.n < 1 || q.n > MaxSamples {
			t.Fatalf("accepted n %d", q.n)
		}
		// The seed is what url.ParseQuery sees, for a query it also parses.
		if v, err := url.ParseQuery(rawQuery); err == nil && len(v["seed"]) == 1 && !strings.Contains(rawQuery, ";") {
			if v.Get("seed") != q.seed {
				t.Fatalf("seed %q, url.ParseQuery says %q", q.seed, v.Get("seed"))
			}
		}
		msg := appendSigned(nil, q.providerStr, q.pieceStr, q.seed, []string{q.pieceStr}, "")
		if !strings.HasPrefix(string(msg), `{"pieceCid":"`) || !strings.HasSuffix(string(msg), `"}`) {
			t.Fatalf("signed bytes %q", msg)
		}
	})
}
