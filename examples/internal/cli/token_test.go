package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:3002":       true,
		"127.0.0.1:0":          true,
		"127.8.9.10:1":         true,
		"[::1]:3002":           true,
		"[::ffff:127.0.0.1]:1": true,
		"localhost:3002":       true,
		"LocalHost.:3002":      true,
		":3002":                false,
		"0.0.0.0:3002":         false,
		"[::]:3002":            false,
		"10.0.0.5:3002":        false,
		"192.168.1.2:3002":     false,
		"8.8.8.8:3002":         false,
		"[2001:db8::1]:3002":   false,
		"admin.example:3002":   false,
		"localhost.example:1":  false,
		"127.0.0.1":            false, // no port: not a listen address
		"":                     false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestResolveAdminToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // umask-proof
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "  s3cret-file \nsecond line ignored\n", 0o600)
	open := write("open", "s3cret-open\n", 0o644)
	empty := write("empty", " \n\nnot the first line\n", 0o600)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvAdminToken {
				return v
			}
			return ""
		}
	}

	for _, tc := range []struct {
		name            string
		flag, file, env string
		value, source   string
		warn            bool
		wantErr         error  // errors.Is, when set
		errText         string // else a substring of the error, when set
	}{
		{name: "none", value: "", source: ""},
		{name: "flag", flag: "f", value: "f", source: "-admin-token"},
		{name: "flag over env", flag: "f", env: "e", value: "f", source: "-admin-token"},
		{name: "file, trimmed first line", file: good, value: "s3cret-file", source: "-admin-token-file " + good},
		{name: "file over env", file: good, env: "e", value: "s3cret-file", source: "-admin-token-file " + good},
		{name: "env", env: " e \n", value: "e", source: "$" + EnvAdminToken},
		{name: "readable file warns", file: open, value: "s3cret-open", source: "-admin-token-file " + open, warn: true},
		{name: "flag and file", flag: "f", file: good, wantErr: ErrTokenSources},
		{name: "empty file", file: empty, errText: "empty first line"},
		{name: "missing file", file: filepath.Join(dir, "nope"), wantErr: os.ErrNotExist},
		{name: "directory", file: dir, errText: "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := ResolveAdminToken(tc.flag, tc.file, env(tc.env))
			switch {
			case tc.wantErr != nil || tc.errText != "":
				if err == nil {
					t.Fatalf("got %+v, want an error", tok)
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %q does not say %q", err, tc.errText)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if tok.Value != tc.value || tok.Source != tc.source || (tok.Warning != "") != tc.warn {
				t.Fatalf("got %+v, want value %q source %q warning %v", tok, tc.value, tc.source, tc.warn)
			}
			if strings.Contains(tok.Source+tok.Warning, "s3cret") {
				t.Fatalf("source or warning leaks the token: %+v", tok)
			}
		})
	}
}
