package logfields_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/internal/logfields"
)

// Every value slog's TextHandler writes comes back as it went in.
func TestParseRoundTrip(t *testing.T) {
	values := []string{
		"plain", "", "with space", `quo"te`, `back\slash`, "tab\there", "new\nline",
		"a=b", "unicode é ☃", `"`, `\`, "127.0.0.1:8080", "trailing ",
	}
	for _, v := range values {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		log.Info("listening", "name", "find", "value", v, "addr", "127.0.0.1:1")
		line := strings.TrimSuffix(buf.String(), "\n")
		f := logfields.Parse(line)
		if f["value"] != v || f["msg"] != "listening" || f["name"] != "find" || f["addr"] != "127.0.0.1:1" {
			t.Errorf("Parse(%s) = %q, want value %q", line, f, v)
		}
	}
}

func TestParseEscapedQuotes(t *testing.T) {
	f := logfields.Parse(`time=2026-01-02T03:04:05Z level=INFO msg="index done" item=repo-1 err="x \"y\" z" size=12`)
	if f["msg"] != "index done" || f["err"] != `x "y" z` || f["size"] != "12" || f["item"] != "repo-1" {
		t.Errorf("got %q", f)
	}
}

// A line cut inside a quoted value keeps what there is.
func TestParseCutLine(t *testing.T) {
	f := logfields.Parse(`level=INFO msg="half a mes`)
	if f["level"] != "INFO" || f["msg"] != "half a mes" {
		t.Errorf("got %q", f)
	}
	if f := logfields.Parse("no pairs here"); len(f) != 0 {
		t.Errorf("a line without pairs: %q", f)
	}
}

func ExampleParse() {
	f := logfields.Parse(`time=2026-11-26T04:00:00Z level=INFO msg=listening name=find addr=127.0.0.1:3000 note="two words"`)
	fmt.Println(f["msg"], f["name"], f["addr"], f["note"])
	// Output: listening find 127.0.0.1:3000 two words
}
