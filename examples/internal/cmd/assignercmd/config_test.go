package assignercmd

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/internal/testbed/deadline"
)

// testPeer is a deterministic peer ID for config tests.
func testPeer(t *testing.T, seed byte) peer.ID {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{seed}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// writeConfig writes body to a config file of the test and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "assigner.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const ix1 = "admin=127.0.0.1:3002,find=127.0.0.1:3000,ingest=127.0.0.1:3001"

// TestLoadConfig: defaults, the -indexer flag, the JSON file, and flags
// given on the command line overriding the file (wherever -config is
// among them), -indexer adding to the file's pool.
func TestLoadConfig(t *testing.T) {
	p1, p2 := testPeer(t, 1), testPeer(t, 2)
	file := writeConfig(t, `{
	  "Indexers": [
	    {"ID": "a", "AdminURL": "http://10.0.0.1:3002", "FindURL": "http://10.0.0.1:3000",
	     "IngestURL": "http://10.0.0.1:3001", "PresetPeers": ["`+p1.String()+`"]},
	    {"AdminURL": "10.0.0.2:3002", "FindURL": "10.0.0.2:3000", "IngestURL": "10.0.0.2:3001"}
	  ],
	  "Replication": 2,
	  "PresetReplication": 3,
	  "PollInterval": "30s",
	  "Policy": {"Allow": false, "Except": ["`+p2.String()+`"]},
	  "Topic": "/indexer/ingest/testnet",
	  "Listen": "127.0.0.1:4001",
	  "StateListen": "127.0.0.1:4010",
	  "Metrics": "",
	  "P2P": "/ip4/127.0.0.1/tcp/4003",
	  "RequestTimeout": "2s",
	  "AdminToken": "secret",
	  "LogLevel": "debug",
	  "ShutdownTimeout": "1m"
	}`)
	fileIndexers := []fileIndexer{
		{ID: "a", AdminURL: "http://10.0.0.1:3002", FindURL: "http://10.0.0.1:3000", IngestURL: "http://10.0.0.1:3001", PresetPeers: []string{p1.String()}},
		{AdminURL: "10.0.0.2:3002", FindURL: "10.0.0.2:3000", IngestURL: "10.0.0.2:3001"},
	}
	fromFile := fileConfig{
		Indexers: fileIndexers, Replication: 2, PresetReplication: 3, PollInterval: duration(30 * time.Second),
		Policy: filePolicy{Allow: false, Except: []string{p2.String()}}, Topic: "/indexer/ingest/testnet",
		Listen: "127.0.0.1:4001", StateListen: "127.0.0.1:4010", Metrics: "", P2P: "/ip4/127.0.0.1/tcp/4003",
		RequestTimeout: duration(2 * time.Second), AdminToken: "secret", LogLevel: "debug", ShutdownTimeout: duration(time.Minute),
	}
	// Keys the file does not set keep their defaults.
	def := defaultFileConfig()
	fromFile.MaxConns, fromFile.MaxConnsPerIP = def.MaxConns, def.MaxConnsPerIP
	fromFile.AnnounceRate, fromFile.AnnounceRateExempt, fromFile.GossipPeerRate = def.AnnounceRate, def.AnnounceRateExempt, def.GossipPeerRate
	fromFile.P2PVerify = def.P2PVerify
	defaultsWith := func(f func(*fileConfig)) fileConfig {
		c := defaultFileConfig()
		c.P2P = "" // "none" disables
		f(&c)
		return c
	}
	flagIndexer := fileIndexer{AdminURL: "127.0.0.1:3002", FindURL: "127.0.0.1:3000", IngestURL: "127.0.0.1:3001"}

	for _, tc := range []struct {
		name string
		args []string
		want fileConfig
	}{
		{
			name: "one -indexer, defaults",
			args: []string{"-indexer", ix1},
			want: defaultsWith(func(c *fileConfig) { c.Indexers = []fileIndexer{flagIndexer} }),
		},
		{
			name: "repeated -indexer with id and presets, in order",
			args: []string{
				"-indexer", "id=x,admin=http://h1:2,find=http://h1:0,ingest=http://h1:1,preset=" + p1.String() + ",preset=" + p2.String(),
				"-indexer", "admin=h2:2,id=y,ingest=h2:1", // any key order; find optional
				"-indexer", ix1,
			},
			want: defaultsWith(func(c *fileConfig) {
				c.Indexers = []fileIndexer{
					{ID: "x", AdminURL: "http://h1:2", FindURL: "http://h1:0", IngestURL: "http://h1:1", PresetPeers: []string{p1.String(), p2.String()}},
					{ID: "y", AdminURL: "h2:2", IngestURL: "h2:1"},
					flagIndexer,
				}
			}),
		},
		{
			name: "every flag",
			args: []string{"-indexer", ix1, "-replication", "3", "-preset-replication", "2", "-poll-interval", "1s",
				"-request-timeout", "250ms", "-topic", "/indexer/ingest/x", "-listen", "127.0.0.1:0", "-state-listen", "127.0.0.1:1",
				"-metrics", "", "-p2p", "/ip4/0.0.0.0/tcp/0", "-admin-token", "t", "-log-level", "warn", "-shutdown-timeout", "3s",
				"-max-conns", "10", "-max-conns-per-ip", "2", "-announce-rate", "0.5", "-announce-rate-exempt", "10.0.0.0/8", "-gossip-peer-rate", "0",
				"-allow-private-addrs", "-p2p-verify=false"},
			want: defaultsWith(func(c *fileConfig) {
				c.Indexers = []fileIndexer{flagIndexer}
				c.Replication, c.PresetReplication, c.PollInterval, c.RequestTimeout = 3, 2, duration(time.Second), duration(250*time.Millisecond)
				c.Topic, c.Listen, c.StateListen, c.Metrics, c.P2P = "/indexer/ingest/x", "127.0.0.1:0", "127.0.0.1:1", "", "/ip4/0.0.0.0/tcp/0"
				c.AdminToken, c.LogLevel, c.ShutdownTimeout = "t", "warn", duration(3*time.Second)
				c.MaxConns, c.MaxConnsPerIP, c.AnnounceRate, c.AnnounceRateExempt, c.GossipPeerRate = 10, 2, 0.5, "10.0.0.0/8", 0
				c.AllowPrivateAddrs, c.P2PVerify = true, false
			}),
		},
		{
			name: "replication 0 is the default's 1 (valid)",
			args: []string{"-indexer", ix1, "-replication", "0", "-preset-replication", "0"},
			want: defaultsWith(func(c *fileConfig) {
				c.Indexers = []fileIndexer{flagIndexer}
				c.Replication, c.PresetReplication = 0, 0
			}),
		},
		{
			name: "-p2p NONE, any case, disables libp2p",
			args: []string{"-indexer", ix1, "-p2p", "NONE"},
			want: defaultsWith(func(c *fileConfig) { c.Indexers = []fileIndexer{flagIndexer} }),
		},
		{
			name: "file alone",
			args: []string{"-config", file},
			want: fromFile,
		},
		{
			name: "flags override the file, before or after -config; -indexer adds to its pool",
			args: []string{"-replication", "5", "-config", file, "-poll-interval", "2s", "-metrics", "127.0.0.1:9",
				"-p2p", "none", "-indexer", ix1, "-log-level", "error"},
			want: func() fileConfig {
				c := fromFile
				c.Indexers = append(append([]fileIndexer(nil), fileIndexers...), flagIndexer)
				c.Replication, c.PollInterval, c.Metrics, c.P2P, c.LogLevel = 5, duration(2*time.Second), "127.0.0.1:9", "", "error"
				return c
			}(),
		},
		{
			name: "a flag set to its default still overrides the file",
			args: []string{"-config", file, "-replication", "1", "-topic", assigner.DefaultTopic},
			want: func() fileConfig {
				c := fromFile
				c.Replication, c.Topic = 1, assigner.DefaultTopic
				return c
			}(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadConfig(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}

	// A file without a key keeps the default.
	c, err := loadConfig([]string{"-config", writeConfig(t, "{\"Indexers\":[{\"AdminURL\":\"h:1\"}]}\n\n")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := defaultsWith(func(c *fileConfig) { c.Indexers = []fileIndexer{{AdminURL: "h:1"}} }); !reflect.DeepEqual(c, want) {
		t.Fatalf("sparse file: got %+v\nwant %+v", c, want)
	}

	if _, err := loadConfig([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
}

// TestServiceConfig: the config as the role's service gets it: URLs normalised
// (scheme added, trailing slash cut), IDs defaulting to the admin URL,
// presets and the policy as peer IDs.
func TestServiceConfig(t *testing.T) {
	p1, p2, p3 := testPeer(t, 1), testPeer(t, 2), testPeer(t, 3)
	for _, tc := range []struct {
		name               string
		policy             filePolicy
		allowed, forbidden []peer.ID
	}{
		{"allow all", filePolicy{Allow: true}, []peer.ID{p1, p2, p3}, nil},
		{"deny list", filePolicy{Allow: true, Except: []string{p2.String()}}, []peer.ID{p1, p3}, []peer.ID{p2}},
		{"allow list", filePolicy{Allow: false, Except: []string{p2.String()}}, []peer.ID{p2}, []peer.ID{p1, p3}},
		{"allow nothing", filePolicy{Allow: false}, nil, []peer.ID{p1, p2, p3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultFileConfig()
			c.Policy = tc.policy
			c.Indexers = []fileIndexer{
				{AdminURL: "127.0.0.1:3002/", FindURL: "http://127.0.0.1:3000/", IngestURL: "127.0.0.1:3001", PresetPeers: []string{p1.String()}},
				{ID: "b", AdminURL: "https://b:3002"},
			}
			cfg, err := c.config("", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			a, err := assignernode.New(t.Context(), cfg, assignernode.Listeners{Announce: ln})
			if err != nil {
				ln.Close()
				t.Fatal(err)
			}
			defer a.Close()
			got := a.Service().Config()
			want := []assigner.ServiceIndexer{
				{ID: "http://127.0.0.1:3002", AdminURL: "http://127.0.0.1:3002", FindURL: "http://127.0.0.1:3000",
					IngestURL: "http://127.0.0.1:3001", PresetPublishers: []peer.ID{p1}},
				{ID: "b", AdminURL: "https://b:3002", PresetPublishers: []peer.ID{}},
			}
			if len(got.Indexers) != 2 || !reflect.DeepEqual(got.Indexers[0], want[0]) ||
				got.Indexers[1].ID != want[1].ID || got.Indexers[1].AdminURL != want[1].AdminURL || len(got.Indexers[1].PresetPublishers) != 0 {
				t.Fatalf("indexers %+v\nwant %+v", got.Indexers, want)
			}
			if got.Replication != 1 || got.PresetReplication != 1 || got.PollInterval != assigner.DefaultPollInterval || got.Topic != assigner.DefaultTopic {
				t.Fatalf("service config %+v", got)
			}
			allow := got.Policy
			if allow == nil {
				allow = func(peer.ID) bool { return true }
			}
			for _, p := range tc.allowed {
				if !allow(p) {
					t.Errorf("%s denied", p)
				}
			}
			for _, p := range tc.forbidden {
				if allow(p) {
					t.Errorf("%s allowed", p)
				}
			}
		})
	}
}

// TestLoadConfigErrors: every invalid configuration is an error naming
// what is wrong, from flags and from the file.
func TestLoadConfigErrors(t *testing.T) {
	p1 := testPeer(t, 1)
	ix := func(extra string) string {
		return `{"Indexers":[{"AdminURL":"h:2","FindURL":"h:0","IngestURL":"h:1"}]` + extra + `}`
	}
	for _, tc := range []struct {
		name string
		args []string
		file string // written to a file given as -config first, if set
		want string // a substring of the error
	}{
		// The pool.
		{name: "no indexer", args: nil, want: "no indexer in the pool"},
		{name: "empty file pool", file: `{"Indexers":[]}`, want: "no indexer in the pool"},
		{name: "-indexer without =", args: []string{"-indexer", "admin"}, want: `"admin": want key=value`},
		{name: "-indexer unknown key", args: []string{"-indexer", "admin=h:2,port=3"}, want: `unknown key "port"`},
		{name: "-indexer without admin", args: []string{"-indexer", "find=h:0,ingest=h:1"}, want: "no AdminURL"},
		{name: "file indexer without admin", file: `{"Indexers":[{"FindURL":"h:0"}]}`, want: "no AdminURL"},
		{name: "-indexer bad preset", args: []string{"-indexer", ix1 + ",preset=notapeer"}, want: `Indexers[0].PresetPeers "notapeer"`},
		{name: "file bad preset", file: `{"Indexers":[{"AdminURL":"h:2","PresetPeers":["` + p1.String() + `","x"]}]}`, want: `Indexers[0].PresetPeers "x"`},
		{name: "bad Policy.Except", file: ix(`,"Policy":{"Allow":true,"Except":["nope"]}`), want: `Policy.Except "nope"`},
		{name: "duplicate ID", args: []string{"-indexer", "id=a,admin=h:1", "-indexer", "id=a,admin=h:2"}, want: `duplicate ID "a"`},
		{name: "same ID as another's admin URL", args: []string{"-indexer", "admin=h:1", "-indexer", "id=http://h:1,admin=h:2"}, want: `duplicate ID "http://h:1"`},

		// Duplicate URLs, after normalisation, across fields and indexers.
		{name: "duplicate admin URL", args: []string{"-indexer", "admin=h:1", "-indexer", "admin=h:1"}, want: "URL http://h:1 used twice"},
		{name: "duplicate admin URL after normalisation", args: []string{"-indexer", "admin=h:1", "-indexer", "admin=http://h:1/"}, want: "URL http://h:1 used twice"},
		{name: "one indexer's find is another's ingest", args: []string{"-indexer", "admin=h:1,find=h:5", "-indexer", "admin=h:2,ingest=http://h:5"}, want: "Indexers[1]: URL http://h:5 used twice"},
		{name: "one indexer's admin is its find", args: []string{"-indexer", "admin=h:1,find=h:1"}, want: "URL http://h:1 used twice"},
		{name: "file and -indexer share a URL", file: ix(""), args: []string{"-indexer", "admin=h:3,ingest=h:1"}, want: "Indexers[1]: URL http://h:1 used twice"},

		// Replication.
		{name: "-replication negative", args: []string{"-indexer", ix1, "-replication", "-1"}, want: "must not be negative"},
		{name: "-preset-replication negative", args: []string{"-indexer", ix1, "-preset-replication", "-2"}, want: "must not be negative"},
		{name: "-replication not a number", args: []string{"-indexer", ix1, "-replication", "two"}, want: `invalid value "two" for flag -replication`},
		{name: "file Replication negative", file: ix(`,"Replication":-1`), want: "must not be negative"},
		{name: "file PresetReplication negative", file: ix(`,"PresetReplication":-3`), want: "must not be negative"},
		{name: "file Replication a string", file: ix(`,"Replication":"2"`), want: "Config.Replication"},
		{name: "file Replication fractional", file: ix(`,"Replication":1.5`), want: "Config.Replication"},

		// Durations.
		{name: "-poll-interval without unit", args: []string{"-indexer", ix1, "-poll-interval", "5"}, want: `invalid value "5" for flag -poll-interval`},
		{name: "-poll-interval zero", args: []string{"-indexer", ix1, "-poll-interval", "0s"}, want: "must be positive"},
		{name: "-request-timeout negative", args: []string{"-indexer", ix1, "-request-timeout", "-1s"}, want: "must be positive"},
		{name: "-request-timeout garbage", args: []string{"-indexer", ix1, "-request-timeout", "soon"}, want: "-request-timeout"},
		{name: "-shutdown-timeout zero", args: []string{"-indexer", ix1, "-shutdown-timeout", "0"}, want: "must be positive"},
		{name: "file PollInterval a number", file: ix(`,"PollInterval":300`), want: `want a string such as "5m"`},
		{name: "file PollInterval no unit", file: ix(`,"PollInterval":"300"`), want: "missing unit"},
		{name: "file PollInterval words", file: ix(`,"PollInterval":"5 minutes"`), want: `unknown unit " minutes"`},
		{name: "file PollInterval zero", file: ix(`,"PollInterval":"0s"`), want: "must be positive"},
		{name: "file RequestTimeout negative", file: ix(`,"RequestTimeout":"-5s"`), want: "must be positive"},
		{name: "file ShutdownTimeout zero", file: ix(`,"ShutdownTimeout":"0s"`), want: "must be positive"},

		// Unknown fields, at every level.
		{name: "unknown top-level field", file: ix(`,"Replicas":2`), want: `unknown field "Replicas"`},
		{name: "unknown indexer field", file: `{"Indexers":[{"AdminURL":"h:2","Admin":"h:3"}]}`, want: `unknown field "Admin"`},
		{name: "unknown policy field", file: ix(`,"Policy":{"Allow":true,"Deny":[]}`), want: `unknown field "Deny"`},
		{name: "unknown flag", args: []string{"-indexer", ix1, "-replicas", "2"}, want: "flag provided but not defined: -replicas"},
		{name: "unknown flag after -config", file: ix(""), args: []string{"-replicas", "2"}, want: "flag provided but not defined: -replicas"},

		// The file itself.
		{name: "missing file", args: []string{"-config", filepath.Join(t.TempDir(), "nope.json")}, want: "-config: open"},
		{name: "not JSON", file: `Indexers = 1`, want: "invalid character"},
		{name: "truncated JSON", file: `{"Indexers":[`, want: "unexpected EOF"},
		{name: "a list, not an object", file: `[]`, want: "cannot unmarshal array"},
		{name: "trailing data", file: ix("") + `}`, want: "after the configuration object"},
		{name: "two objects", file: ix("") + ` {"Replication":2}`, want: "after the configuration object"},

		// Other fields.
		{name: "empty -listen", args: []string{"-indexer", ix1, "-listen", ""}, want: "must not be empty"},
		{name: "empty StateListen", file: ix(`,"StateListen":""`), want: "must not be empty"},
		{name: "bad -log-level", args: []string{"-indexer", ix1, "-log-level", "verbose"}, want: `-log-level "verbose"`},
		{name: "-max-conns negative", args: []string{"-indexer", ix1, "-max-conns", "-1"}, want: "-max-conns -1 must not be negative"},
		{name: "file MaxConnsPerIP negative", file: ix(`,"MaxConnsPerIP":-2`), want: "-max-conns-per-ip -2 must not be negative"},
		{name: "-announce-rate negative", args: []string{"-indexer", ix1, "-announce-rate", "-1"}, want: "-announce-rate -1: want 0 (no limit) or a positive rate"},
		{name: "-gossip-peer-rate infinite", args: []string{"-indexer", ix1, "-gossip-peer-rate", "+Inf"}, want: "-gossip-peer-rate +Inf"},
		{name: "bad -announce-rate-exempt", args: []string{"-indexer", ix1, "-announce-rate-exempt", "10.0.0.0/8,x"}, want: `-announce-rate-exempt "10.0.0.0/8,x"`},
		{name: "bad -topic", args: []string{"-indexer", ix1, "-topic", "/foo"}, want: `Topic "/foo"`},
		{name: "-topic without network", args: []string{"-indexer", ix1, "-topic", "/indexer/ingest/"}, want: `Topic "/indexer/ingest/"`},
		{name: "extra argument", args: []string{"-indexer", ix1, "extra"}, want: `unexpected arguments ["extra"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeConfig(t, tc.file)}, args...)
			}
			_, err := loadConfig(args, io.Discard)
			if err == nil {
				t.Fatalf("%q: no error, want %q", args, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q: error %q, want it to contain %q", args, err, tc.want)
			}
		})
	}
}

// TestRunConfigError: run reports a bad configuration before listening.
func TestRunConfigError(t *testing.T) {
	var stderr bytes.Buffer
	err := Main(deadline.Context(t, time.Minute), []string{"-indexer", "admin=h:1", "-indexer", "admin=h:1"}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Fatalf("run: %v", err)
	}
	if err := Main(deadline.Context(t, time.Minute), []string{"-h"}, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-indexer") {
		t.Fatalf("run -h: %v\n%s", err, stderr.String())
	}
}
