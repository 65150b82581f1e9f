package announce_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/multiformats/go-multiaddr"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

const (
	libipniCID  = "QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB"
	libipniPeer = "12D3KooWBckWLKiYoUX4k3HTrbrSe4DD5SPNTKgP6vKTva1NaRkJ"
)

// vector is one golden announce: the message and its two encodings.
// testdata/vectors.json is meant to be checked against go-libipni's
// MarshalCBOR / encoding/json in the interop module.
type vector struct {
	Name      string
	Cid       string
	Addrs     []string // nil: Addrs nil
	ExtraData string   // hex; "" is nil
	OrigPeer  string
	CBOR      string // hex
	JSON      string
}

func (v vector) message(t *testing.T) announce.Message {
	m := announce.Message{Cid: mustCID(t, v.Cid)}
	if v.Addrs != nil {
		m.Addrs = mustAddrs(t, v.Addrs...)
	}
	if v.ExtraData != "" {
		m.ExtraData = unhex(t, v.ExtraData)
	}
	if v.OrigPeer != "" {
		m.OrigPeer = mustPeer(t, v.OrigPeer)
	}
	return m
}

func vectorInputs(t *testing.T) []vector {
	return []vector{{
		// The message of go-libipni's announce/message tests.
		Name:      "libipni-message-test",
		Cid:       libipniCID,
		Addrs:     []string{"/ip4/127.0.0.1/tcp/2701", "/dns4/localhost/tcp/7663"},
		ExtraData: hex.EncodeToString([]byte("t01000")),
		OrigPeer:  libipniPeer,
	}, {
		// The shape of wire-formats.md's example: dag-json CIDv1, one
		// http address, ExtraData "f01234", no OrigPeer.
		Name:      "http-announce-no-p2p",
		Cid:       testCID(t, "ad-1").String(),
		Addrs:     []string{"/ip4/127.0.0.1/tcp/40341/http"},
		ExtraData: hex.EncodeToString([]byte("f01234")),
	}, {
		Name:  "http-announce-with-p2p",
		Cid:   testCID(t, "ad-2").String(),
		Addrs: []string{"/ip4/127.0.0.1/tcp/3104/http/p2p/" + libipniPeer, "/dns4/pub.example/tcp/443/https/p2p/" + libipniPeer},
	}, {
		// A gossip republish as go-libipni makes it: addresses without
		// /p2p/, no ExtraData, OrigPeer set.
		Name:     "republish",
		Cid:      testCID(t, "ad-3").String(),
		Addrs:    []string{"/ip4/192.0.2.7/tcp/3104/http"},
		OrigPeer: libipniPeer,
	}, {
		Name:  "empty-addrs",
		Cid:   testCID(t, "ad-4").String(),
		Addrs: []string{},
	}, {
		Name: "nil-addrs",
		Cid:  testCID(t, "ad-5").String(),
	}}
}

func TestVectors(t *testing.T) {
	var got []vector
	for _, v := range vectorInputs(t) {
		m := v.message(t)
		c, err := m.EncodeCBOR()
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		j, err := m.EncodeJSON()
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		v.CBOR, v.JSON = hex.EncodeToString(c), string(j)
		got = append(got, v)

		for _, dec := range []struct {
			name string
			f    func([]byte) (announce.Message, error)
			in   []byte
		}{{"DecodeCBOR", announce.DecodeCBOR, c}, {"DecodeJSON", announce.DecodeJSON, j}} {
			d, err := dec.f(dec.in)
			if err != nil || !d.Equal(m) {
				t.Errorf("%s: %s = %+v, %v; want %+v", v.Name, dec.name, d, err, m)
			}
		}
	}
	enc, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	enc = append(enc, '\n')
	const path = "testdata/vectors.json"
	if *update {
		if err := os.WriteFile(path, enc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestVectors -update)", err)
	}
	if !bytes.Equal(enc, want) {
		t.Errorf("encodings differ from %s; got\n%s", path, enc)
	}
}

// TestCBORByHand checks the encoder against bytes assembled field by field
// from the CBOR rules and go-libipni's tuple layout, independent of the
// encoder.
func TestCBORByHand(t *testing.T) {
	m := vectorInputs(t)[0].message(t)
	want := "84" + // array(4): OrigPeer present
		"d82a" + "5823" + "00" + "12200f4684269a64e8d29b381eb9491a9148b5cccc34a0a8a3cd91928d2d2a775ab0" + // tag 42, bytes(35): 0x00 ‖ CIDv0
		"82" + // array(2)
		"48" + "047f000001" + "060a8d" + // bytes(8): /ip4/127.0.0.1/tcp/2701
		"4e" + "3609" + hex.EncodeToString([]byte("localhost")) + "061def" + // bytes(14): /dns4/localhost/tcp/7663
		"46" + hex.EncodeToString([]byte("t01000")) + // bytes(6)
		"7834" + hex.EncodeToString([]byte(libipniPeer)) // text(52)
	got, err := m.EncodeCBOR()
	if err != nil || hex.EncodeToString(got) != want {
		t.Fatalf("EncodeCBOR = %x, %v\nwant        %s", got, err, want)
	}
	const wantJSON = `{"Cid":{"/":"QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB"},"Addrs":["BH8AAAEGCo0=","Nglsb2NhbGhvc3QGHe8="],"ExtraData":"dDAxMDAw","OrigPeer":"12D3KooWBckWLKiYoUX4k3HTrbrSe4DD5SPNTKgP6vKTva1NaRkJ"}`
	j, err := m.EncodeJSON()
	if err != nil || string(j) != wantJSON {
		t.Fatalf("EncodeJSON = %s, %v", j, err)
	}
	// wire-formats.md: one address /ip4/127.0.0.1/tcp/40341/http is
	// 4a 047f000001069d95e003, base64 BH8AAAEGnZXgAw==.
	a := mustAddrs(t, "/ip4/127.0.0.1/tcp/40341/http")[0]
	if hex.EncodeToString(a.Bytes()) != "047f000001069d95e003" {
		t.Fatalf("address bytes %x", a.Bytes())
	}
}

func TestDecodeCBORRejects(t *testing.T) {
	good, err := vectorInputs(t)[1].message(t).EncodeCBOR()
	if err != nil {
		t.Fatal(err)
	}
	gh := hex.EncodeToString(good)
	cidPart := gh[2 : 2+4+4+2+len(testCID(t, "ad-1").Bytes())*2] // d82a 5825 00 <cid>
	tests := []struct {
		name, in, words string
	}{
		{"empty", "", "unexpected end"},
		{"not an array", "a0", "map, want array"},
		{"array of 2", "82" + cidPart + "80", "array of 2"},
		{"array of 5", "85", "length 5 over 4"},
		{"indefinite array", "9f", "indefinite"},
		{"non-shortest head", "9803" + gh[2:], "shortest form"},
		{"trailing byte", gh + "00", "1 bytes after"},
		{"truncated", gh[:len(gh)-2], "runs past the end"},
		{"wrong tag", "83d82b" + gh[6:], "tag 43"},
		{"no 0x00 prefix", "83d82a5824" + gh[12:], "want 0x00"},
		{"cid bytes as text", "83d82a7825" + gh[10:], "text string, want byte string"},
		{"empty address", "83" + cidPart + "814040", "address 0 is empty"},
		{"bad address", "83" + cidPart + "8142ffff40", "address 0"},
		{"addrs count past input", "83" + cidPart + "991000", "cannot fit"},
		{"bad OrigPeer", "84" + cidPart + "8040" + "6378797a", "OrigPeer"},
		{"OrigPeer as bytes", "84" + cidPart + "8040" + "4100", "byte string, want text string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := announce.DecodeCBOR(unhex(t, tt.in))
			if !errors.Is(err, announce.ErrMalformed) || !strings.Contains(err.Error(), tt.words) {
				t.Fatalf("DecodeCBOR = %+v, %v; want ErrMalformed saying %q", m, err, tt.words)
			}
		})
	}
}

func TestDecodeCBORLenient(t *testing.T) {
	v := vectorInputs(t)[1]
	want := v.message(t)
	good, _ := want.EncodeCBOR()
	gh := hex.EncodeToString(good)
	body := gh[2:] // after the array head
	// A 4-tuple with an empty OrigPeer is a 3-tuple.
	m, err := announce.DecodeCBOR(unhex(t, "84"+body+"60"))
	if err != nil || !m.Equal(want) {
		t.Fatalf("empty OrigPeer: %+v, %v", m, err)
	}
	// An address with a protocol go-multiaddr does not know is dropped
	// (code 9999 = 8f 4e, as in go-libipni's TestUnknownProtocol).
	unknown := "3609" + hex.EncodeToString([]byte("localhost")) + "9102" + "04d2" + "8f4e"
	in := "83" + gh[2:2+4+4+2+len(want.Cid.Bytes())*2] + "82" + "4a047f000001069d95e003" + "51" + unknown + "40"
	m, err = announce.DecodeCBOR(unhex(t, in))
	if err != nil || len(m.Addrs) != 1 || m.Addrs[0].String() != "/ip4/127.0.0.1/tcp/40341/http" {
		t.Fatalf("unknown protocol: %+v, %v", m, err)
	}
}

func TestDecodeJSON(t *testing.T) {
	c := testCID(t, "ad-1").String()
	ok := []struct{ name, in string }{
		{"reference form", `{"Cid":{"/":"` + c + `"},"Addrs":["BH8AAAEGnZXgAw=="],"ExtraData":"ZjAxMjM0","OrigPeer":""}`},
		{"trailing newline (json.Encoder)", `{"Cid":{"/":"` + c + `"},"Addrs":["BH8AAAEGnZXgAw=="],"ExtraData":"ZjAxMjM0","OrigPeer":""}` + "\n"},
		{"field order and case", `{"origpeer":"","extradata":"ZjAxMjM0","addrs":["BH8AAAEGnZXgAw=="],"cid":{"/":"` + c + `"}}`},
	}
	for _, tt := range ok {
		m, err := announce.DecodeJSON([]byte(tt.in))
		if err != nil || m.Cid.String() != c || len(m.Addrs) != 1 || string(m.ExtraData) != "f01234" || m.OrigPeer != "" {
			t.Errorf("%s: %+v, %v", tt.name, m, err)
		}
	}
	bad := []struct{ name, in, words string }{
		{"empty", ``, "JSON"},
		{"no Cid", `{"Addrs":[]}`, "no Cid"},
		{"null Cid", `{"Cid":null}`, "no Cid"},
		{"Cid as string", `{"Cid":"` + c + `"}`, "JSON"},
		{"bad Cid", `{"Cid":{"/":"bafyxx"}}`, "Cid"},
		{"unknown field", `{"Cid":{"/":"` + c + `"},"Extra":1}`, "unknown field"},
		{"two objects", `{"Cid":{"/":"` + c + `"}}{}`, "after the object"},
		{"addr as string", `{"Cid":{"/":"` + c + `"},"Addrs":["/ip4/1.2.3.4"]}`, "base64"},
		{"bad addr", `{"Cid":{"/":"` + c + `"},"Addrs":["//8="]}`, "address 0"},
		{"bad OrigPeer", `{"Cid":{"/":"` + c + `"},"OrigPeer":"xyz"}`, "OrigPeer"},
	}
	for _, tt := range bad {
		m, err := announce.DecodeJSON([]byte(tt.in))
		if !errors.Is(err, announce.ErrMalformed) || !strings.Contains(err.Error(), tt.words) {
			t.Errorf("%s: %+v, %v; want ErrMalformed saying %q", tt.name, m, err, tt.words)
		}
	}
	// json.Marshal/Unmarshal go through the same codec.
	m := vectorInputs(t)[0].message(t)
	b, err := json.Marshal(struct{ M announce.Message }{m})
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ M announce.Message }
	if err := json.Unmarshal(b, &back); err != nil || !back.M.Equal(m) {
		t.Fatalf("json round trip: %+v, %v", back.M, err)
	}
}

func TestEncodeRejects(t *testing.T) {
	c := testCID(t, "x")
	for _, m := range []announce.Message{
		{},
		{Cid: c, Addrs: []multiaddr.Multiaddr{nil}},
		{Cid: c, ExtraData: make([]byte, announce.MaxFieldLen+1)},
	} {
		if _, err := m.EncodeCBOR(); !errors.Is(err, announce.ErrInvalidMessage) {
			t.Errorf("EncodeCBOR(%+v): %v", m, err)
		}
		if _, err := m.EncodeJSON(); !errors.Is(err, announce.ErrInvalidMessage) {
			t.Errorf("EncodeJSON(%+v): %v", m, err)
		}
	}
}

func TestPublisherAddrInfo(t *testing.T) {
	p, q := newPeer(t), newPeer(t)
	tests := []struct {
		name  string
		addrs []string
		want  error
		n     int
	}{
		{"one", []string{"/ip4/127.0.0.1/tcp/1/http/p2p/" + p.String()}, nil, 1},
		{"two same", []string{"/ip4/127.0.0.1/tcp/1/p2p/" + p.String(), "/dns4/x.example/tcp/443/https/p2p/" + p.String()}, nil, 2},
		{"only p2p", []string{"/p2p/" + p.String()}, nil, 0},
		{"none", nil, announce.ErrNoPublisher, 0},
		{"no p2p", []string{"/ip4/127.0.0.1/tcp/1/http"}, announce.ErrNoPublisher, 0},
		{"one without p2p", []string{"/ip4/127.0.0.1/tcp/1/p2p/" + p.String(), "/ip4/127.0.0.1/tcp/2"}, announce.ErrNoPublisher, 0},
		{"two peers", []string{"/ip4/127.0.0.1/tcp/1/p2p/" + p.String(), "/ip4/127.0.0.1/tcp/2/p2p/" + q.String()}, announce.ErrManyPublishers, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := announce.Message{Cid: testCID(t, "x"), Addrs: mustAddrs(t, tt.addrs...)}
			ai, err := m.PublisherAddrInfo()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			if ai.ID != p || len(ai.Addrs) != tt.n {
				t.Fatalf("got %v", ai)
			}
			for _, a := range ai.Addrs {
				if strings.Contains(a.String(), "/p2p/") {
					t.Fatalf("address %s keeps /p2p/", a)
				}
			}
			if id, err := m.Publisher(); id != p || err != nil {
				t.Fatalf("Publisher = %v, %v", id, err)
			}
		})
	}
}
