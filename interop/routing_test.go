package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	drclient "github.com/ipfs/boxo/routing/http/client"
	"github.com/ipfs/boxo/routing/http/types"
	"github.com/ipfs/boxo/routing/http/types/iter"
	"github.com/ipfs/go-cid"
	findclient "github.com/ipni/go-libipni/find/client"
	"github.com/ipni/go-libipni/metadata"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/publishernode"
)

// acceptJSON makes a boxo client ask for JSON only (it asks for NDJSON
// first by default).
type acceptJSON struct{ rt http.RoundTripper }

func (a acceptJSON) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", "application/json")
	return a.rt.RoundTrip(r)
}

// TestRoutingV1BoxoClient runs a pool (generated publishers, two
// indexers, a front end) and asks the front end's Delegated Routing V1
// API with boxo's routing/http/client, the client Kubo uses, in streaming
// (its default) and JSON mode: every CID of the publishers' truth must
// come back with exactly the providers of the truth, each once, with the
// protocols go-libipni decodes from the true metadata and the addresses
// go-libipni's find client reads from the find API; removed and never
// advertised CIDs must come back as no providers, with no error. The
// oracles are the publishers' truth and the reference libraries.
func TestRoutingV1BoxoClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ads = 6
	p, truth := settledPool(ctx, t, ads)
	if len(truth.Entries) < 10 || len(truth.Removed) == 0 {
		t.Fatalf("truth of %d multihashes, %d removed; want at least 10 and some removed", len(truth.Entries), len(truth.Removed))
	}
	front := p.URLs().Find
	fc, err := findclient.New(front)
	if err != nil {
		t.Fatal(err)
	}
	// Kubo's client asks for bitswap and unknown only (boxo's
	// DefaultProtocolFilter, IPIP-484); these two ask for every transport
	// and leave the filtering to the server.
	every := drclient.WithProtocolFilter([]string{"transport-bitswap", "transport-graphsync-filecoinv1", "transport-ipfs-gateway-http", "transport-filecoin-piece-http", "unknown"})
	serverSide := drclient.WithDisabledLocalFiltering(true)
	stream, err := drclient.New(front, every, serverSide)
	if err != nil {
		t.Fatal(err)
	}
	jsonOnly, err := drclient.New(front, every, serverSide, drclient.WithHTTPClient(&http.Client{Transport: acceptJSON{http.DefaultTransport}}))
	if err != nil {
		t.Fatal(err)
	}
	kubo, err := drclient.New(front, serverSide) // the default filter, applied by the server
	if err != nil {
		t.Fatal(err)
	}

	// want is a provider as the routing answer must show it.
	type want struct {
		id        string
		addrs     []string
		protocols []string
	}
	// expect builds the providers of e from the truth (IDs, protocols)
	// and from go-libipni's find answer (addresses).
	expect := func(e publishernode.Entry, mh multihash.Multihash) ([]want, error) {
		addrs := map[string][]string{}
		if len(e.Values) > 0 {
			resp, err := fc.Find(ctx, mh)
			if err != nil {
				return nil, err
			}
			if resp == nil || len(resp.MultihashResults) != 1 {
				return nil, fmt.Errorf("find: no answer yet")
			}
			for _, r := range resp.MultihashResults[0].ProviderResults {
				var as []string
				for _, a := range r.Provider.Addrs {
					as = append(as, a.String())
				}
				addrs[r.Provider.ID.String()] = as
			}
		}
		byID := map[string]*want{}
		var out []want
		for _, v := range e.Values {
			w := byID[v.ProviderID]
			if w == nil {
				out = append(out, want{id: v.ProviderID, addrs: addrs[v.ProviderID]})
				w = &out[len(out)-1]
				byID[v.ProviderID] = w
			}
			m := metadata.Default.New()
			if err := m.UnmarshalBinary(v.Metadata); err != nil {
				t.Fatalf("go-libipni cannot decode the true metadata %x: %v", v.Metadata, err)
			}
			for _, code := range m.Protocols() {
				if !slices.Contains(w.protocols, code.String()) {
					w.protocols = append(w.protocols, code.String())
				}
			}
		}
		for i := range out {
			slices.Sort(out[i].protocols)
			slices.Sort(out[i].addrs)
		}
		slices.SortFunc(out, func(a, b want) int { return strings.Compare(a.id, b.id) })
		return out, nil
	}
	read := func(c *drclient.Client, k cid.Cid) ([]want, error) {
		it, err := c.FindProviders(ctx, k)
		if err != nil {
			return nil, err
		}
		recs, err := iter.ReadAllResults(it)
		if err != nil {
			return nil, err
		}
		var out []want
		for _, r := range recs {
			pr, ok := r.(*types.PeerRecord)
			if !ok || pr.ID == nil {
				return nil, fmt.Errorf("record %#v is not a peer record with an ID", r)
			}
			w := want{id: pr.ID.String()}
			for _, a := range pr.Addrs {
				w.addrs = append(w.addrs, a.String())
			}
			w.protocols = slices.Clone(pr.Protocols)
			if slices.Contains(pr.Protocols, "transport-graphsync-filecoinv1") {
				var gs struct{ PieceCID string }
				if err := json.Unmarshal(pr.Extra["transport-graphsync-filecoinv1"], &gs); err != nil || gs.PieceCID == "" {
					return nil, fmt.Errorf("%s: graphsync field %s: %v", w.id, pr.Extra["transport-graphsync-filecoinv1"], err)
				}
			}
			slices.Sort(w.protocols)
			slices.Sort(w.addrs)
			out = append(out, w)
		}
		slices.SortFunc(out, func(a, b want) int { return strings.Compare(a.id, b.id) })
		return out, nil
	}
	equal := func(a, b []want) bool {
		return slices.EqualFunc(a, b, func(x, y want) bool {
			return x.id == y.id && slices.Equal(x.addrs, y.addrs) && slices.Equal(x.protocols, y.protocols)
		})
	}

	left := slices.Clone(truth.Entries)
	for _, mh := range truth.Removed {
		left = append(left, publishernode.Entry{Multihash: mh})
	}
	never, _ := multihash.Sum([]byte("never advertised"), multihash.SHA2_256, -1)
	left = append(left, publishernode.Entry{Multihash: never.B58String()})
	var lastErr string
	for len(left) > 0 {
		next := left[:0:0]
		for _, e := range left {
			mh, err := multihash.FromB58String(e.Multihash)
			if err != nil {
				t.Fatalf("truth multihash %q: %v", e.Multihash, err)
			}
			wantProvs, err := expect(e, mh)
			if err != nil {
				lastErr = fmt.Sprintf("%s: %v", e.Multihash, err)
				next = append(next, e)
				continue
			}
			k := cid.NewCidV1(cid.Raw, mh)
			ok := true
			var kuboWant []want
			for _, w := range wantProvs {
				if len(w.protocols) == 0 || slices.Contains(w.protocols, "transport-bitswap") {
					kuboWant = append(kuboWant, w)
				}
			}
			for mode, c := range map[string]*drclient.Client{"stream": stream, "json": jsonOnly, "kubo's filter": kubo} {
				got, err := read(c, k)
				wantProvs := wantProvs
				if c == kubo {
					wantProvs = kuboWant
				}
				if err != nil || !equal(got, wantProvs) || (len(e.Values) > 0 && slices.ContainsFunc(wantProvs, func(w want) bool { return len(w.addrs) == 0 })) {
					lastErr = fmt.Sprintf("%s (%s): got %+v, %v; want %+v", k, mode, got, err, wantProvs)
					if mode == "json" {
						if resp, err := http.Get(front + "/routing/v1/providers/" + k.String()); err == nil {
							b, _ := io.ReadAll(resp.Body)
							resp.Body.Close()
							lastErr += fmt.Sprintf("; raw: %d %s", resp.StatusCode, b)
						}
					}
					ok = false
				}
			}
			if !ok {
				next = append(next, e)
			}
		}
		if len(next) > 0 {
			select {
			case <-ctx.Done():
				t.Fatalf("%d of %d CIDs not answered right through boxo's client, e.g. %s", len(next), len(truth.Entries)+len(truth.Removed)+1, lastErr)
			case <-time.After(300 * time.Millisecond):
			}
		}
		left = next
	}

	// Peer routing from provider records: each publisher's provider.
	for _, pt := range truth.Publishers {
		id, err := peer.Decode(pt.Publisher)
		if err != nil {
			t.Fatal(err)
		}
		it, err := stream.FindPeers(ctx, id)
		if err != nil {
			t.Fatalf("FindPeers %s: %v", id, err)
		}
		recs, err := iter.ReadAllResults(it)
		if err != nil || len(recs) != 1 || recs[0].ID == nil || *recs[0].ID != id || len(recs[0].Addrs) == 0 {
			t.Errorf("FindPeers %s: %+v, %v; want its record with addresses", id, recs, err)
		}
	}
	t.Logf("%d CIDs of %d publishers found with their providers, protocols and addresses in streaming and JSON mode, and with Kubo's protocol filter; %d removed and 1 unknown CID answered with none",
		len(truth.Entries), len(truth.Publishers), len(truth.Removed))
}
