package httperr

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStatusError(t *testing.T) {
	sentinel := errors.New("boom")
	e := &StatusError{Client: "admin", Method: "GET", URL: "http://x/y", Code: 500, Body: "disk on fire", Err: sentinel}
	if got, want := e.Error(), "admin: GET http://x/y: 500 Internal Server Error: disk on fire"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, sentinel) {
		t.Error("errors.Is(e, sentinel) = false")
	}
	bare := &StatusError{Method: "GET", URL: "http://x", Code: 404}
	if got, want := bare.Error(), "GET http://x: 404 Not Found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if bare.Unwrap() != nil {
		t.Error("Unwrap() of a StatusError without sentinel is not nil")
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"  not found\n", "not found"},
		{"<html>\r\n<head>\t<title>502 Bad Gateway</title></head>\n\n<body>", "<html> <head> <title>502 Bad Gateway</title></head> <body>"},
		{"bad \xff\xfe bytes\x00here", "bad bytes here"},
		{long, strings.Repeat("é", 100) + "..."},
		{strings.Repeat("a", 200), strings.Repeat("a", 200)},
		{strings.Repeat(" ", 900) + "x", "..."},
	} {
		got := Snippet([]byte(c.in))
		if got != c.want {
			t.Errorf("Snippet(%.40q) = %q, want %q", c.in, got, c.want)
		}
		if len(got) > SnippetLen+len("...") || strings.ContainsAny(got, "\n\r\t") || !utf8.ValidString(got) {
			t.Errorf("Snippet(%.40q) = %q: not one bounded line of UTF-8", c.in, got)
		}
	}
}

// A decoding error quotes the start of the answer, on one line, not the
// one character encoding/json shows.
func TestDecodeError(t *testing.T) {
	body := []byte("<html>\n<head><title>503 Service Temporarily Unavailable</title></head>\n" + strings.Repeat("<p>padding</p>\n", 100))
	var v struct{}
	jerr := json.Unmarshal(body, &v)
	err := DecodeError(jerr, body)
	msg := err.Error()
	if !strings.Contains(msg, "<title>503 Service Temporarily Unavailable</title>") || strings.Contains(msg, "\n") || len(msg) > 400 {
		t.Errorf("DecodeError = %q, want the start of the answer on one bounded line", msg)
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); !ok || se != jerr {
		t.Errorf("DecodeError does not wrap the decoder's error")
	}
	if DecodeError(nil, body) != nil {
		t.Error("DecodeError(nil) is not nil")
	}
}

// JSONError quotes nothing of the input, and keeps the decoder's error in
// the chain.
func TestJSONError(t *testing.T) {
	long := strings.Repeat("7", 5000)
	for _, c := range []struct {
		in   string
		v    any
		want string
	}{
		{"<html>", new(map[string]int), "invalid JSON at byte offset 1"},
		{`{"a":` + long + `}`, new(map[string]string), "cannot decode a JSON number into string at byte offset"},
		{`{"` + long + `":1}`, new(map[int8]int), "cannot decode a JSON number into int8 at byte offset"},
		{`{"A":"x"}`, new(struct{ A int }), "cannot decode a JSON string into int (field A) at byte offset"},
		{`"` + long + `"`, new(int), "cannot decode a JSON string into int at byte offset"},
	} {
		jerr := json.Unmarshal([]byte(c.in), c.v)
		if jerr == nil {
			t.Fatalf("%.20q decoded", c.in)
		}
		err := JSONError(fmt.Errorf("decoding: %w", jerr))
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "<") || strings.Contains(err.Error(), "777") {
			t.Errorf("JSONError(%v) = %q, want %q and nothing of the input", jerr, err, c.want)
		}
		if !errors.Is(err, jerr) {
			t.Errorf("JSONError(%v) does not wrap it", jerr)
		}
	}
	other := errors.New("unexpected EOF")
	if JSONError(other) != other {
		t.Error("JSONError changed an error that quotes nothing")
	}
}
