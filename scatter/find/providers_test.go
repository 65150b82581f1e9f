package find_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/scatter/find"
)

// ProviderRecords yields each element of a /providers answer, nothing for
// null or [], and ends with an error for anything else or a broken array.
func TestProviderRecords(t *testing.T) {
	id := findPeer(t, 1).String()
	for _, tt := range []struct {
		name, body string
		want       int
		fail       bool
	}{
		{"null", "null", 0, false},
		{"empty", "[]", 0, false},
		{"two", `[{"AddrInfo":{"ID":"` + id + `","Addrs":[]}},{"Odd":1}]`, 2, false},
		{"object", `{}`, 0, true},
		{"broken", `[{"AddrInfo":{}},{"AddrInfo"`, 1, true},
		{"empty body", ``, 0, true},
	} {
		n, failed := 0, false
		for raw, err := range find.ProviderRecords(strings.NewReader(tt.body)) {
			if err != nil {
				failed = true
				continue
			}
			n++
			if !json.Valid(raw) {
				t.Errorf("%s: record %q is not JSON", tt.name, raw)
			}
		}
		if n != tt.want || failed != tt.fail {
			t.Errorf("%s: %d records, failed %t; want %d, %t", tt.name, n, failed, tt.want, tt.fail)
		}
	}
	var pi find.ProviderInfo
	for raw := range find.ProviderRecords(strings.NewReader(`[{"AddrInfo":{"ID":"` + id + `","Addrs":[]},"FrozenAtTime":"2024-05-06T06:08:09Z"}]`)) {
		if err := json.Unmarshal(raw, &pi); err != nil {
			t.Fatal(err)
		}
	}
	if pi.AddrInfo.ID.String() != id || pi.FrozenAtTime != "2024-05-06T06:08:09Z" {
		t.Errorf("decoded %+v", pi)
	}
}
