package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strings"
)

// EnvAdminToken is the environment variable that holds the bearer token
// of the indexers' admin API when neither -admin-token nor
// -admin-token-file is given: the indexer requires it, the assigner sends
// it.
const EnvAdminToken = "INDEXKIT_ADMIN_TOKEN"

// Token is a bearer token and where it came from.
type Token struct {
	// Value is the token; "" when no source gave one.
	Value string
	// Source names where Value came from, for logs: "-admin-token",
	// "-admin-token-file <path>", "$INDEXKIT_ADMIN_TOKEN", or "" for none.
	// It never holds the token.
	Source string
	// Warning, when not "", is something the program should log at WARN:
	// a token file that others can read.
	Warning string
}

// ErrTokenSources is wrapped by [ResolveAdminToken] when both
// -admin-token and -admin-token-file are given.
var ErrTokenSources = errors.New("give -admin-token or -admin-token-file, not both")

// ResolveAdminToken returns the admin token from, in this order: flagValue
// (-admin-token, or the AdminToken key of a -config file), the first line
// of the file at path (-admin-token-file), and the environment variable
// [EnvAdminToken] read through getenv. Giving both flagValue and path is
// [ErrTokenSources]: two explicit sources would leave one silently unused.
// The environment is only a fallback, so that a token exported in a shell
// does not override the one a command line names.
//
// The flag shows in ps and in /proc/<pid>/cmdline to every local user;
// the file and the environment do not, which is why a pool passes a file.
// A file whose first line is empty after trimming is an error. A file
// readable by its group or by others is used but reported in
// Token.Warning (it is not refused: secret volumes, Kubernetes' among
// them, are mounted 0644 by default).
func ResolveAdminToken(flagValue, path string, getenv func(string) string) (Token, error) {
	switch {
	case flagValue != "" && path != "":
		return Token{}, ErrTokenSources
	case flagValue != "":
		return Token{Value: flagValue, Source: "-admin-token"}, nil
	case path != "":
		tok, warn, err := ReadTokenFile(path)
		if err != nil {
			return Token{}, fmt.Errorf("-admin-token-file: %w", err)
		}
		return Token{Value: tok, Source: "-admin-token-file " + path, Warning: warn}, nil
	}
	if getenv != nil {
		if v := strings.TrimSpace(getenv(EnvAdminToken)); v != "" {
			return Token{Value: v, Source: "$" + EnvAdminToken}, nil
		}
	}
	return Token{}, nil
}

// maxTokenLine bounds the first line of a token file.
const maxTokenLine = 4 << 10

// ReadTokenFile returns the first line of the file at path, trimmed of
// white space, and a warning when the file is readable by its group or by
// others. An empty first line, or one longer than 4 KiB, is an error.
func ReadTokenFile(path string) (token, warning string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("%s: not a regular file", path)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 512), maxTokenLine)
	if sc.Scan() {
		token = strings.TrimSpace(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("%s: %w", path, err)
	}
	if token == "" {
		return "", "", fmt.Errorf("%s: empty first line: no token", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		warning = fmt.Sprintf("token file %s has mode %v: others on this machine can read it (chmod 600)", path, fs.FileMode(perm))
	}
	return token, warning, nil
}

// IsLoopback reports whether the listen address addr ("host:port") binds
// loopback only: a loopback IP (127.0.0.0/8, ::1) or the name localhost.
// An empty host (":3002"), an unspecified IP (0.0.0.0, ::), any other IP
// and any other name are not: a name may resolve to anything.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if h := strings.TrimSuffix(strings.ToLower(host), "."); h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
