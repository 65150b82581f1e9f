package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/store"
)

// findResult is the find API's answer, as the reference encodes it.
type findResult struct {
	MultihashResults []struct {
		Multihash       []byte
		ProviderResults []struct {
			ContextID []byte
			Metadata  []byte
			Provider  peer.AddrInfo
		}
	}
}

// find GETs /multihash/{mh} and returns the values, or nil on 404.
func find(t *testing.T, findURL string, mh multihash.Multihash) []store.Value {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, findURL+"/multihash/"+mh.B58String(), nil)
	switch code {
	case http.StatusNotFound:
		return nil
	case http.StatusOK:
	default:
		t.Fatalf("find %s: %d %s", mh, code, body)
	}
	var res findResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("find %s: %v", mh, err)
	}
	var out []store.Value
	for _, r := range res.MultihashResults {
		for _, pr := range r.ProviderResults {
			out = append(out, store.Value{ProviderID: pr.Provider.ID, ContextID: pr.ContextID, Metadata: pr.Metadata})
		}
	}
	return out
}

func sameValues(a, b []store.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		if !slices.ContainsFunc(b, v.Equal) {
			return false
		}
	}
	return true
}

// sample returns up to n of mhs, chosen with a fixed seed.
func sample(mhs []multihash.Multihash, n int) []multihash.Multihash {
	r := rand.New(rand.NewPCG(1, 2))
	s := slices.Clone(mhs)
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s[:min(n, len(s))]
}

// unknown returns multihashes no chain holds.
func unknown(t *testing.T, n int) []multihash.Multihash {
	var out []multihash.Multihash
	for i := range n {
		mh, err := multihash.Sum(fmt.Appendf(nil, "unknown %d", i), multihash.SHA2_256, -1)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, mh)
	}
	return out
}

// ownResults drops the results of the chain's extended providers, which
// the find API adds and the model does not list, and fails on any other
// provider.
func ownResults(t *testing.T, chain *chaingen.Chain, vs []store.Value) []store.Value {
	t.Helper()
	return slices.DeleteFunc(vs, func(v store.Value) bool {
		if v.ProviderID == chain.Provider {
			return false
		}
		if !slices.Contains(chain.Extended, v.ProviderID) {
			t.Fatalf("result of unknown provider %s", v.ProviderID)
		}
		return true
	})
}

// checkFinds checks that findURL answers every multihash of want with the
// model's values, and unknown ones with 404.
func checkFinds(t *testing.T, findURL string, chain *chaingen.Chain, m *chaingen.Model, mhs []multihash.Multihash) {
	t.Helper()
	for _, mh := range mhs {
		if got, want := ownResults(t, chain, find(t, findURL, mh)), m.Values(mh); !sameValues(got, want) {
			t.Fatalf("find %s: got %v, want %v", mh, got, want)
		}
	}
	for _, mh := range unknown(t, 3) {
		if got := find(t, findURL, mh); got != nil {
			t.Fatalf("find of unknown %s: got %v, want 404", mh, got)
		}
	}
}

// The binary as a real process: a chain announced over HTTP (CBOR, as the
// reference assigner sends it) is indexed and found; the node freezes
// through the admin API, stops cleanly on SIGTERM, and after a restart on
// the same data directory it is still frozen and finds the same.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	chain, err := chaingen.Generate(chaingen.Config{Seed: 7, Ads: 30, MhsPerAd: 40, ChunkSize: 16,
		RemoveEvery: 7, UpdateEvery: 5, ExtendedEvery: 6, PublisherSigns: true})
	if err != nil {
		t.Fatal(err)
	}
	model := chain.Model()
	_, all := entryChunks(t, chain, 0, chain.Len())
	live := slices.DeleteFunc(slices.Clone(all), func(mh multihash.Multihash) bool { return model.Values(mh) == nil })
	if len(live) < model.Multihashes() {
		t.Fatalf("%d live multihashes found in the chain, model has %d", len(live), model.Multihashes())
	}
	pub := newPublisher(t, chain)
	dir := t.TempDir()
	bin := proctest.Build(t, indexerPkg)

	n := startNode(t, bin, dir)
	pub.announce(t, n.url("ingest"))
	checks := sample(live, 200)
	last := checks[len(checks)-1]
	waitFor(t, "the chain to be indexed", func() bool {
		var st []admin.PublisherStatus
		code, b := httpDo(t, http.MethodGet, n.url("admin")+"/ingest/status", nil)
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil || len(st) != 1 {
			return false
		}
		return st[0].LastHead.Equals(chain.Head()) && find(t, n.url("find"), last) != nil
	})
	checkFinds(t, n.url("find"), chain, model, checks)

	var provs []struct {
		AddrInfo          peer.AddrInfo
		Publisher         *peer.AddrInfo
		LastAdvertisement map[string]string
		FrozenAt          map[string]string
	}
	getJSON(t, n.url("find")+"/providers", &provs)
	if len(provs) != 1 || provs[0].AddrInfo.ID != chain.Provider || provs[0].Publisher == nil || provs[0].Publisher.ID != chain.Publisher ||
		provs[0].LastAdvertisement["/"] != chain.Head().String() || provs[0].FrozenAt != nil {
		t.Fatalf("GET /providers: %+v", provs)
	}

	var st admin.Status
	getJSON(t, n.url("admin")+"/status", &st)
	if st.Frozen || st.ID == "" || st.Usage < 0 && st.Usage != -1 {
		t.Fatalf("GET /status: %+v", st)
	}
	id := st.ID
	if code, b := httpDo(t, http.MethodPut, n.url("admin")+"/freeze", nil); code != http.StatusOK {
		t.Fatalf("PUT /freeze: %d %s", code, b)
	}
	getJSON(t, n.url("admin")+"/status", &st)
	if !st.Frozen || st.ID != id {
		t.Fatalf("GET /status after PUT /freeze: %+v", st)
	}
	getJSON(t, n.url("find")+"/providers", &provs)
	if len(provs) != 1 || provs[0].FrozenAt["/"] != chain.Head().String() {
		t.Fatalf("GET /providers after the freeze: FrozenAt %v, want the head %s", provs[0].FrozenAt, chain.Head())
	}
	code, body := httpDo(t, http.MethodGet, n.url("metrics")+"/metrics", nil)
	if code != http.StatusOK || !bytes.Contains(body, []byte("indexkit_indexer_multihashes_indexed_total")) ||
		!bytes.Contains(body, []byte("indexkit_indexer_frozen 1")) ||
		!bytes.Contains(body, []byte("indexkit_indexer_pebble_compaction_debt_bytes ")) ||
		!bytes.Contains(body, []byte("indexkit_indexer_pebble_bytes_in_total ")) ||
		!bytes.Contains(body, []byte("indexkit_indexer_pace_queried ")) {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	n.stop()

	// The identity key is kept, private.
	fi, err := os.Stat(filepath.Join(dir, indexernode.KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity key: %v, %v", fi, err)
	}

	n = startNode(t, bin, dir)
	getJSON(t, n.url("admin")+"/status", &st)
	if !st.Frozen || st.ID != id {
		t.Fatalf("GET /status after the restart: %+v, want frozen with ID %s", st, id)
	}
	checkFinds(t, n.url("find"), chain, model, checks)
	n.stop()
}
