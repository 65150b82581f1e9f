package etcdjson

import (
	"encoding/json"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a/": "a0", "ab": "ac", "a\xff": "b", "\xff\xff": "\x00"} {
		if got := prefixEnd(in); got != want {
			t.Errorf("prefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestInt64AsString: etcd's gateway writes int64 fields as strings and
// reads them so; a number is taken too.
func TestInt64AsString(t *testing.T) {
	var v struct {
		A, B, C i64
	}
	if err := json.Unmarshal([]byte(`{"A":"9007199254740993","B":7}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != 9007199254740993 || v.B != 7 || v.C != 0 {
		t.Fatalf("decoded %+v", v)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"A":"9007199254740993","B":"7","C":"0"}` {
		t.Fatalf("encoded %s", b)
	}
	if err := json.Unmarshal([]byte(`{"A":"x"}`), &v); err == nil {
		t.Fatal("a non-number decoded without an error")
	}
}
