package scattercmd

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		file    string // config file contents, if any
		want    config
		wantErr string
	}{
		{
			name: "flags",
			args: []string{"-backends", "http://a:1, HTTP://B:2/,https://c/prefix/", "-backends", "http://d"},
			want: config{Backends: []string{"http://a:1", "HTTP://B:2/", "https://c/prefix/", "http://d"}, Timeout: 5 * time.Second},
		},
		{
			name: "indexstar array",
			file: `["http://a:1", "http://b:2"]`,
			want: config{Backends: []string{"http://a:1", "http://b:2"}, Timeout: 5 * time.Second},
		},
		{
			name: "object with flags first",
			args: []string{"-backends", "http://x"},
			file: `{"Backends": ["http://a:1"], "Timeout": "2s", "Ring": {"Replication": 2}}`,
			want: config{Backends: []string{"http://x", "http://a:1"}, Timeout: 2 * time.Second, Ring: &ringConfig{Replication: 2}},
		},
		{
			name: "explicit -timeout wins over the file",
			args: []string{"-timeout", "700ms"},
			file: `{"Backends": ["http://a:1"], "Timeout": "2s"}`,
			want: config{Backends: []string{"http://a:1"}, Timeout: 700 * time.Millisecond},
		},
		{name: "no backends in file", file: `[]`, wantErr: "no backends"},
		{name: "empty file", file: ` `, wantErr: "empty file"},
		{name: "not JSON", file: `http://a`, wantErr: "want a JSON array"},
		{name: "trailing data", file: `["http://a"] ["http://b"]`, wantErr: "data after"},
		{name: "unknown field", file: `{"Backend": ["http://a"]}`, wantErr: `unknown field "Backend"`},
		{name: "bad timeout", file: `{"Backends": ["http://a"], "Timeout": "5"}`, wantErr: `Timeout "5"`},
		{name: "bad scheme", args: []string{"-backends", "ftp://a"}, wantErr: `"ftp://a": scheme must be http or https`},
		{name: "no host", args: []string{"-backends", "http:///x"}, wantErr: "no host"},
		{name: "unparsable", args: []string{"-backends", "http://a b:1"}, wantErr: `backend "http://a b:1"`},
		{name: "query", args: []string{"-backends", "http://a/?x=1"}, wantErr: "no query"},
		{name: "credentials", args: []string{"-backends", "http://u:p@a"}, wantErr: "credentials"},
		{name: "duplicate", args: []string{"-backends", "http://a,http://a"}, wantErr: `"http://a" is listed twice`},
		{name: "duplicate across flag and file", args: []string{"-backends", "http://A/"}, file: `["http://a"]`, wantErr: `"http://a" is listed twice (also as "http://A/")`},
		{name: "replication too high", file: `{"Backends": ["http://a"], "Ring": {"Replication": 2}}`, wantErr: "Ring.Replication 2 must be between 1 and the number of backends, 1"},
		{name: "negative vnodes", file: `{"Backends": ["http://a"], "Ring": {"Vnodes": -1, "Replication": 1}}`, wantErr: "Ring.Vnodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				p := filepath.Join(t.TempDir(), "config.json")
				if err := os.WriteFile(p, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(slices.Clone(args), "-config", p)
			}
			o, err := parseFlags(args, io.Discard)
			if err != nil {
				t.Fatalf("parseFlags: %v", err)
			}
			got, err := loadConfig(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v (ring %+v), want %+v (ring %+v)", got, got.Ring, tc.want, tc.want.Ring)
			}
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, "no backends"},
		{[]string{"-backends", "http://a", "-timeout", "0s"}, "-timeout 0s must be positive"},
		{[]string{"-backends", "http://a", "-cache", "-1"}, "-cache -1"},
		{[]string{"-backends", "http://a", "-listen", ""}, "-listen must not be empty"},
		{[]string{"-backends", "http://a", "-log-level", "loud"}, "log-level"},
		{[]string{"-backends", "http://a", "extra"}, "unexpected arguments"},
		{[]string{"-backends", "http://a", "-layout-poll", "1s"}, "-layout-poll needs -layout"},
		{[]string{"-layout", "x.json", "-layout-poll", "-1s"}, "-layout-poll -1s must not be negative"},
		{[]string{"-config", "/nonexistent/scatter.json"}, ""}, // a missing file is found by loadConfig
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.wantErr)
		}
	}
}
