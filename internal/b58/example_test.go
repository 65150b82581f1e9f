package b58_test

import (
	"fmt"

	"github.com/indexkit/indexkit/internal/b58"
)

func Example() {
	mh, err := b58.Decode("QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bytes: code %#x, digest of %d\n", len(mh), mh[0], mh[1])
	_, err = b58.Decode("Qm0")
	fmt.Println(err)
	// Output:
	// 34 bytes: code 0x12, digest of 32
	// b58: invalid character "0" at 2
}
