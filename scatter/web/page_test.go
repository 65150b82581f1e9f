package web

import (
	"regexp"
	"strings"
	"testing"
)

// The page parses nothing from the network as HTML and loads nothing
// from elsewhere: no HTML sinks, no external URL, no src or href but its
// own data: icon.
func TestPageSelfContained(t *testing.T) {
	p := string(page)
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(p, sink) {
			t.Errorf("the page uses %s", sink)
		}
	}
	if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).FindString(p); m != "" {
		t.Errorf("the page names an external address: %q", m)
	}
	for _, m := range regexp.MustCompile(`(?i)\b(src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(p, -1) {
		if m[2] != "data:," {
			t.Errorf("the page loads %s=%q", m[1], m[2])
		}
	}
}
