package announce_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// Encode an announce in both wire forms and read it back.
func Example() {
	ad, _ := cid.Decode("QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB")
	m := announce.Message{
		Cid:       ad,
		Addrs:     []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/2701")},
		ExtraData: []byte("t01000"),
	}
	c, _ := m.EncodeCBOR()
	fmt.Println(hex.EncodeToString(c))
	j, _ := m.EncodeJSON()
	fmt.Println(string(j))

	back, err := announce.DecodeCBOR(c)
	fmt.Println(back.Cid, back.Addrs, string(back.ExtraData), err)

	_, err = announce.DecodeCBOR(c[:10])
	fmt.Println(err)
	// Output:
	// 83d82a58230012200f4684269a64e8d29b381eb9491a9148b5cccc34a0a8a3cd91928d2d2a775ab08148047f000001060a8d46743031303030
	// {"Cid":{"/":"QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB"},"Addrs":["BH8AAAEGCo0="],"ExtraData":"dDAxMDAw","OrigPeer":""}
	// QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB [/ip4/127.0.0.1/tcp/2701] t01000 <nil>
	// announce: malformed message: Cid at offset 3: length 35 runs past the end
}

// An indexer mounts a Receiver on its ingest listener and takes announces
// with Next; a publisher sends them with an HTTPSender. Each source IP may
// send 10 announces a second, 20 at once; beyond, it gets 429.
func ExampleReceiver() {
	r, _ := announce.NewReceiver(announce.WithSourceRate(10, 20))
	defer r.Close()
	srv := httptest.NewServer(r)
	defer srv.Close()

	publisher, _ := peer.Decode("12D3KooWBckWLKiYoUX4k3HTrbrSe4DD5SPNTKgP6vKTva1NaRkJ")
	s, _ := announce.NewHTTPSender([]string{srv.URL}, publisher)
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ad, _ := cid.Decode("QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB")
	err := s.Send(ctx, announce.Message{
		Cid:   ad,
		Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")},
	})
	fmt.Println("sent:", err)

	a, err := r.Next(ctx)
	fmt.Println(a.Source, a.Publisher, a.Cid, a.Addrs, err)

	// A repeat is answered 204 but not delivered again.
	_ = s.Send(ctx, announce.Message{Cid: ad, Addrs: a.Addrs})
	fmt.Printf("%+v\n", r.Stats())
	// Output:
	// sent: <nil>
	// http 12D3KooWBckWLKiYoUX4k3HTrbrSe4DD5SPNTKgP6vKTva1NaRkJ QmPNHBy5h7f19yJDt7ip9TvmMRbqmYsa6aetkrsc1ghjLB [/ip4/127.0.0.1/tcp/3104/http] <nil>
	// {Accepted:1 HTTP:1 Gossip:0 Duplicates:1 Denied:0 Malformed:0 RateLimited:0 PublisherLimited:0 Coalesced:0 Refused:0 Dropped:0 Republished:0 RepublishFailed:0 Queued:0 Sources:1}
}
