package announce_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/indexkit/indexkit/ingest/announce"
)

func goldenVectors(f *testing.F) []vector {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		f.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		f.Fatal(err)
	}
	return vs
}

// checkDecoded checks what any successful decode must satisfy: both
// encodings work and decode back to an equal message, and the publisher
// helpers do not panic.
func checkDecoded(t *testing.T, in []byte, m announce.Message) {
	c, err := m.EncodeCBOR()
	if err != nil {
		t.Fatalf("decoded %x to %+v, which does not encode: %v", in, m, err)
	}
	m2, err := announce.DecodeCBOR(c)
	if err != nil || !m2.Equal(m) {
		t.Fatalf("decoded %x to %+v; its CBOR %x decodes to %+v, %v", in, m, c, m2, err)
	}
	if c2, _ := m2.EncodeCBOR(); string(c2) != string(c) {
		t.Fatalf("CBOR not stable: %x then %x", c, c2)
	}
	j, err := m.EncodeJSON()
	if err != nil {
		t.Fatalf("decoded %x to %+v, which does not encode to JSON: %v", in, m, err)
	}
	m3, err := announce.DecodeJSON(j)
	if err != nil || !m3.Equal(m) {
		t.Fatalf("decoded %x to %+v; its JSON %s decodes to %+v, %v", in, m, j, m3, err)
	}
	_, _ = m.PublisherAddrInfo()
}

func FuzzDecodeCBOR(f *testing.F) {
	for _, v := range goldenVectors(f) {
		b, _ := hex.DecodeString(v.CBOR)
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(b, 0))
	}
	f.Add([]byte{})
	f.Add([]byte{0x84})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := announce.DecodeCBOR(b)
		if err != nil {
			if !errors.Is(err, announce.ErrMalformed) {
				t.Fatalf("DecodeCBOR(%x): error %v does not wrap ErrMalformed", b, err)
			}
			return
		}
		checkDecoded(t, b, m)
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, v := range goldenVectors(f) {
		f.Add([]byte(v.JSON))
		f.Add([]byte(v.JSON[:len(v.JSON)-1]))
	}
	f.Add([]byte(`{"Cid":{"/":"QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB"},"Addrs":null,"ExtraData":null,"OrigPeer":""}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := announce.DecodeJSON(b)
		if err != nil {
			if !errors.Is(err, announce.ErrMalformed) {
				t.Fatalf("DecodeJSON(%q): error %v does not wrap ErrMalformed", b, err)
			}
			return
		}
		checkDecoded(t, b, m)
	})
}
