package chaingen_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store/memory"
)

// Generate a chain, read it as a walker would, and check a store against
// its ground truth.
func Example() {
	ctx := context.Background()
	c, err := chaingen.Generate(chaingen.Config{
		Seed: 42, Ads: 10, MhsPerAd: 100, ChunkSize: 40,
		RemoveEvery: 4, UpdateEvery: 3, ExtendedEvery: 5,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(c.Ads), "ads in", c.Blocks(), "blocks, head", c.Head())

	// A walker starts at the head of the source and follows PreviousID.
	src := c.Source()
	head, _ := src.Head(ctx)
	b, _ := src.Block(ctx, head)
	ad, err := schema.DecodeAdvertisement(head, b)
	if err != nil {
		fmt.Println(err)
		return
	}
	signer, err := ad.VerifySignature()
	fmt.Println("signed by the provider:", signer == c.Provider, err)
	_, err = src.Block(ctx, schema.NoEntries)
	fmt.Println("NoEntries is not a block:", errors.Is(err, chaingen.ErrNotFound))

	// After a walk, the store must hold exactly the model.
	m := c.Model()
	fmt.Println(m.Multihashes(), "multihashes in", len(m.Contexts()), "contexts")
	s := memory.New()
	defer s.Close()
	err = m.Equal(ctx, s)
	fmt.Println("empty store matches:", err == nil, errors.Is(err, chaingen.ErrMismatch))
	// Output:
	// 10 ads in 25 blocks, head baguqeera5wzcwjvv2m3vm5d6vioczllccmtgnnaxensrko5hmeods63zpuqq
	// signed by the provider: true <nil>
	// NoEntries is not a block: true
	// 300 multihashes in 3 contexts
	// empty store matches: false true
}
