package redistest_test

import (
	"fmt"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
)

// Match is the SCAN pattern behind Prefix's cleanup and Unlink: the
// prefix's glob characters are escaped, so a prefix matches only keys
// that start with it.
func ExampleMatch() {
	fmt.Println(redistest.Match("indexkit-test:piece:"))
	fmt.Println(redistest.Match("odd[1]*?:"))
	// Output:
	// indexkit-test:piece:*
	// odd\[1\]\*\?:*
}
