package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/localpool"
)

// TestView renders a fixed snapshot: a frozen indexer whose publisher was
// handed off, an indexer down, a malicious publisher, and probes.
func TestView(t *testing.T) {
	s := &localpool.Snapshot{
		AssignerUp: true,
		Indexers: []localpool.IndexerState{
			{Name: "indexer-0", Up: true, ID: "12D3KooWFrozenAAAAAAAA", Frozen: true, Usage: 91.2, DiskBytes: 470 << 10, Multihashes: 5800, MultihashesExact: true,
				Publishers: []localpool.Held{{Publisher: "12D3KooWPublisherOne1"}}},
			{Name: "indexer-1", Up: true, ID: "12D3KooWActiveBBBBBBBB", Usage: 0.4, DiskBytes: 3 << 20, Multihashes: 8900,
				Publishers: []localpool.Held{{Publisher: "12D3KooWPublisherOne1", Continued: "indexer-0"}}},
			{Name: "indexer-2", Usage: -1, DiskBytes: 100 << 10},
		},
		Publishers: []localpool.PublisherState{
			{Name: "publisher-0", ID: "12D3KooWPublisherOne1", Head: "bafyHeadOfPublisherOne", Ads: 75, Lag: 0,
				Owners: []string{"indexer-1"}, Frozen: []string{"indexer-0"}},
			{Name: "publisher-1", ID: "12D3KooWPublisherTwo2", Head: "bafyHeadOfPublisherTwo", Ads: 74, Lag: -1, Owners: []string{"indexer-1"}},
			{Name: "malicious-0", ID: "12D3KooWMaliciousOne1", Fault: "corrupt", Head: "bafyHeadOfMalicious", Ads: 10, Lag: -1},
		},
		Handoffs: []localpool.Handoff{{Publisher: "12D3KooWPublisherOne1", From: "indexer-0", To: "indexer-1", Done: true}},
	}
	var b bytes.Buffer
	v := newView(&b)
	v.render(s, "42s")
	v.render(s, "44s") // the handoff is reported once
	v.probes([]localpool.Probe{
		{Multihash: "QmFirstProbeMultihash", Publisher: "12D3KooWPublisherOne1", Want: 1, Got: 1, Complete: true, HeldBy: []string{"indexer-0"}},
		{Multihash: "QmSecondProbeMultihash", Publisher: "12D3KooWPublisherTwo2", Want: 2, Got: 1},
	})
	want := `HANDOFF done: publisher …sherOne1 from indexer-0 (frozen) to indexer-1, which resumes after its last ad
── 42s ── assigner up
  INDEXER    STATE   ID         MULTIHASHES   DISK (of budget)  PUBLISHERS
  indexer-0  FROZEN  …AAAAAAAA          5800       470KiB (91%)  …sherOne1
  indexer-1  active  …BBBBBBBB    about 8900        3.0MiB (0%)  …sherOne1(from indexer-0)
  indexer-2  down                         -         100KiB (?)  
  PUBLISHER              ID          ADS HEAD        LAG  OWNER
  publisher-0            …sherOne1    75 …isherOne     0  indexer-1 (frozen: indexer-0)
  publisher-1            …sherTwo2    74 …isherTwo    ≥1  indexer-1
  malicious-0 [corrupt]  …iousOne1    10 …alicious     -  -
── 44s ── assigner up
`
	got := b.String()
	if !bytes.HasPrefix(b.Bytes(), []byte(want)) {
		t.Fatalf("view:\n%s\nwant it to begin with:\n%s", got, want)
	}
	for _, line := range []string{
		"  probe …ultihash (publisher …sherOne1): 1/1 providers via the front end, held by indexer-0: COMPLETE\n",
		"  probe …ultihash (publisher …sherTwo2): 1/2 providers via the front end, held by none: INCOMPLETE\n",
	} {
		if !bytes.Contains(b.Bytes(), []byte(line)) {
			t.Errorf("view lacks %q:\n%s", line, got)
		}
	}
	if n := bytes.Count(b.Bytes(), []byte("HANDOFF")); n != 1 {
		t.Errorf("%d HANDOFF lines, want 1", n)
	}
}

// TestHelp: -h prints the usage and what the program does; the status is
// 0.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &out)
	if code := exitCode(err, io.Discard); code != 0 {
		t.Errorf("-h: %v, exit status %d, want 0", err, code)
	}
	if want := "usage: pool [flags]\nRuns a whole local IPNI pool"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("-h prints %q..., want %q first", out.String()[:min(len(out.String()), 120)], want)
	}
}
