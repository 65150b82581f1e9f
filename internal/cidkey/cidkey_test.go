package cidkey_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/internal/cidkey"
)

func ExampleParse() {
	mh, err := cidkey.Parse("bafkreifvpqiqpzw6vfu77akdwd2axkezl5ilp4rbwnknadn3y4l5fevzjm")
	fmt.Println(mh.B58String(), err)
	_, err = cidkey.Parse("bafyfoo")
	fmt.Println(err)
	// Output:
	// QmaZ6EAuFva8Kq2j3CAvAkhe6yYuH3HRbCw8Ud7eLwb3Px <nil>
	// not a valid CID: varints malformed, could not reach the end
}

// TestParseErrors: each bad CID is named once, without go-cid's repeated
// "invalid cid:" prefix.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty CID"},
		{"notacid", `unsupported multibase prefix "n"`},
		{"#abc", `unsupported multibase prefix "#"`},
		{"b", "not a valid CID: cid too short"},
		{"bafyfoo", "not a valid CID: varints malformed, could not reach the end"},
		{"zzzz", "not a valid CID: expected 1 as the cid version number, got: 2"},
	} {
		_, err := cidkey.Parse(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q): %v, want %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(strings.ToLower(err.Error()), "invalid cid") {
			t.Errorf("Parse(%q): %v repeats go-cid's prefix", tc.in, err)
		}
	}
	if _, err := cidkey.Parse("QmaZ6EAuFva8Kq2j3CAvAkhe6yYuH3HRbCw8Ud7eLwb3Px"); err != nil {
		t.Errorf("a CIDv0: %v", err)
	}
}
