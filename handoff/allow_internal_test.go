package handoff

import (
	"context"
	"errors"
	"testing"
)

// TestFrozenIndexerNearMisses: a FrozenURL matches a listed frozen
// indexer when it names the same scheme, host, port and path however it
// is spelled, and never when one of them differs, or when a listed URL
// only appears inside another one (user info, a longer host, a port
// that runs on).
func TestFrozenIndexerNearMisses(t *testing.T) {
	for _, tc := range []struct {
		listed, asked string
		match         bool
	}{
		{"http://10.0.0.5:3000", "10.0.0.5:3000", true},
		{"http://10.0.0.5:3000", "HTTP://10.0.0.5:3000/", true},
		{"http://10.0.0.5:3000", " http://10.0.0.5:3000// ", true},
		{"http://10.0.0.5:3000", "http://10.0.0.5:3000/?x=1#f", true},
		{"http://10.0.0.5:3000", "http://user:pw@10.0.0.5:3000", true},
		{"http://10.0.0.5:3000", "https://10.0.0.5:3000", false},
		{"http://10.0.0.5:3000", "http://10.0.0.5:3001", false},
		{"http://10.0.0.5:3000", "http://10.0.0.5", false},
		{"http://10.0.0.5:3000", "http://10.0.0.50:3000", false},
		{"http://10.0.0.5:3000", "http://10.0.0.5.evil.example:3000", false},
		{"http://10.0.0.5:3000", "http://10.0.0.5:30000", false},
		{"http://10.0.0.5:3000", "http://10.0.0.5:3000.evil.example", false},
		{"http://10.0.0.5:3000", "http://10.0.0.5:3000@evil.example", false},
		{"http://10.0.0.5:3000", "http://evil.example#@10.0.0.5:3000", false},
		{"http://10.0.0.5:3000", "http://evil.example/10.0.0.5:3000", false},
		{"http://10.0.0.5:3000", "http://10.0.0.5:3000/x", false},

		{"https://frozen.example", "https://FROZEN.example:443/", true},
		{"https://frozen.example", "http://frozen.example", false},
		{"https://frozen.example", "https://frozen.example:80", false},
		{"https://frozen.example", "https://frozen.example.evil", false},
		{"https://frozen.example", "https://evil-frozen.example", false},
		{"http://frozen.example:80/a", "http://frozen.example/a/", true},
		{"http://frozen.example:80/a", "http://frozen.example/a/b", false},
		{"http://frozen.example:80/a", "http://frozen.example/", false},

		{"http://[fd00::1]:80/", "http://[FD00::1]", true},
		{"http://[fd00::1]:80/", "[fd00::1]:80", true},
		{"http://[fd00::1]:80/", "http://[fd00::2]", false},
		{"http://[fd00::1]:80/", "http://[fd00::1]:8080", false},
	} {
		cfg := &config{}
		if err := WithFrozenIndexers(tc.listed)(cfg); err != nil {
			t.Fatalf("listed %q: %v", tc.listed, err)
		}
		r := &Receiver{cfg: cfg}
		err := r.checkFrozenIndexer(context.Background(), Request{FrozenURL: tc.asked})
		if got := err == nil; got != tc.match {
			t.Errorf("listed %q, asked %q: %v, want match %v", tc.listed, tc.asked, err, tc.match)
		}
		if err != nil && !errors.Is(err, ErrUnknownIndexer) && !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("listed %q, asked %q: %v, want ErrUnknownIndexer", tc.listed, tc.asked, err)
		}
	}
}
