package localonly

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// The sentinels a [Refusal] wraps, for errors.Is.
var (
	// ErrForeignHost: the request's Host is not a loopback address, not
	// "localhost" and not one of the guard's names: a DNS-rebound page,
	// or a proxy or name the guard was not told about. 421.
	ErrForeignHost = errors.New("localonly: Host is not a loopback address")
	// ErrBrowser: the request carries an Origin header, or a
	// Sec-Fetch-Site other than "none": a web page sent it. 403.
	ErrBrowser = errors.New("localonly: request sent by a web page")
)

// Refusal is the error of [Guard.Check]: the status to answer with and a
// message naming the problem and the way out. It wraps [ErrForeignHost]
// or [ErrBrowser].
type Refusal struct {
	// Status is 421 (Misdirected Request) for a foreign Host, 403
	// (Forbidden) for a request a web page sent.
	Status int
	// Reason is the text body of the answer, one line.
	Reason string
	err    error
}

func (e *Refusal) Error() string { return e.Reason }
func (e *Refusal) Unwrap() error { return e.err }

// Guard checks that a request to an API open without a token comes from a
// program on this machine and not from a web page: see the package
// documentation. A Guard is immutable and safe for concurrent use.
type Guard struct {
	api   string   // what the messages call the API: "the admin API"
	hint  string   // how to allow a name: "set -admin-hosts NAME or a token to allow it"
	names []string // the extra Host names, lower case, no trailing dot
}

// New returns a guard of the API named api (as messages should name it:
// "the admin API"), that accepts, besides loopback Hosts, the names in
// hosts: host names or IP literals without a port ("indexer.internal",
// "10.0.0.5", "fd00::1" or "[fd00::1]"), compared without case and
// with any port. hint ends the refusal of a foreign Host, saying how to
// allow a name ("set -admin-hosts NAME or a token to allow it"). An empty entry, or one with a
// port, a scheme, a path or a wildcard, is an error naming it.
func New(api, hint string, hosts ...string) (*Guard, error) {
	g := &Guard{api: api, hint: hint}
	for _, h := range hosts {
		name, err := normalizeName(h)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(g.names, name) {
			g.names = append(g.names, name)
		}
	}
	return g, nil
}

// normalizeName checks one configured host name and returns it in the
// form the guard compares.
func normalizeName(h string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(h))
	if inner, ok := strings.CutPrefix(s, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if _, err := netip.ParseAddr(inner); !ok || err != nil {
			return "", fmt.Errorf("localonly: host %q: want a host name or an IP address without a port", h)
		}
		return inner, nil
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.String(), nil
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", fmt.Errorf("localonly: host %q: want a host name or an IP address, not an empty one", h)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", fmt.Errorf("localonly: host %q: want a host name or an IP address without a port, scheme or path (%q is not allowed in a name)", h, c)
		}
	}
	return s, nil
}

// Names returns the extra Host names the guard accepts, as it compares
// them (none for a nil Guard).
func (g *Guard) Names() []string {
	if g == nil {
		return nil
	}
	return slices.Clone(g.names)
}

// Check returns nil for a request the guard lets through, else a
// *[Refusal]. The Host is checked first, then the browser headers. A nil
// Guard lets every request through (an API with a token set).
func (g *Guard) Check(r *http.Request) error {
	if g == nil {
		return nil
	}
	if !g.hostAllowed(r.Host) {
		host := r.Host
		if host == "" {
			host = "(none)"
		}
		return &Refusal{Status: http.StatusMisdirectedRequest, err: ErrForeignHost, Reason: fmt.Sprintf(
			"Host %s is not a loopback address: %s has no token set, so it answers only requests to 127.0.0.0/8, [::1] or localhost%s; %s",
			clip(host), g.api, g.namesNote(), g.hint)}
	}
	if o := r.Header.Values("Origin"); len(o) > 0 {
		return &Refusal{Status: http.StatusForbidden, err: ErrBrowser, Reason: fmt.Sprintf(
			"request with Origin %s refused: %s has no token set, so it answers no web page (set a token to call it from elsewhere)",
			clip(strings.Join(o, ", ")), g.api)}
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "none" {
		return &Refusal{Status: http.StatusForbidden, err: ErrBrowser, Reason: fmt.Sprintf(
			"request with Sec-Fetch-Site %s refused: %s has no token set, so it answers no web page (set a token to call it from elsewhere)",
			clip(s), g.api)}
	}
	return nil
}

func (g *Guard) namesNote() string {
	if len(g.names) == 0 {
		return ""
	}
	return " (or " + strings.Join(g.names, ", ") + ")"
}

// hostAllowed reports whether host, a request's Host ("name", "name:port",
// "[v6]:port"), is loopback, localhost or one of g's names.
func (g *Guard) hostAllowed(host string) bool {
	if host == "" {
		return false
	}
	name := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false // "localhost.:3002.evil.example" is no port
		}
		name = h
	} else if inner, ok := strings.CutPrefix(host, "["); ok {
		if name, ok = strings.CutSuffix(inner, "]"); !ok {
			return false // "[::1" is no address
		}
	}
	name = strings.ToLower(name)
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap()
		return ip.IsLoopback() || slices.Contains(g.names, ip.WithZone("").String())
	}
	name = strings.TrimSuffix(name, ".")
	return name == "localhost" || slices.Contains(g.names, name)
}

// Handler returns next behind the guard: a refused request is answered
// with the refusal's status and its reason as a text/plain body, and
// next does not see it. A nil Guard returns next.
func (g *Guard) Handler(next http.Handler) http.Handler {
	if g == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := g.Check(r); err != nil {
			var ref *Refusal
			errors.As(err, &ref)
			http.Error(w, ref.Reason, ref.Status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clip bounds an echoed header.
func clip(s string) string {
	const n = 100
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
