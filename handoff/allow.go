package handoff

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// canonicalURL is the form in which [WithFrozenIndexers] compares find
// URLs: "http://" added when there is no scheme (as [Request] does),
// scheme and host in lower case, the scheme's default port dropped, no
// trailing slash, no query or fragment.
func canonicalURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q: want an http or https URL with a host", s)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		u.Host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		u.Host = "[" + host + "]"
	} else {
		u.Host = host
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// canonicalURLs canonicalises the URLs of [WithFrozenIndexers].
func canonicalURLs(urls []string) ([]string, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no frozen indexer URL (leave the option out to accept any)", ErrInvalidOption)
	}
	out := make([]string, 0, len(urls))
	for _, s := range urls {
		c, err := canonicalURL(s)
		if err != nil {
			return nil, fmt.Errorf("%w: frozen indexer URL: %v", ErrInvalidOption, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// checkFrozenIndexer refuses a request whose FrozenURL is not among the
// configured frozen indexers ([WithFrozenIndexers]); with none configured
// every FrozenURL passes. req is valid.
func (r *Receiver) checkFrozenIndexer(ctx context.Context, req Request) error {
	if r.cfg.frozenIndexers == nil {
		return nil
	}
	list, err := r.cfg.frozenIndexers(ctx)
	if err != nil {
		return fmt.Errorf("handoff: list of frozen indexers: %w", err)
	}
	want, err := canonicalURL(req.FrozenURL)
	if err != nil { // Validate accepted it, so this does not happen
		return fmt.Errorf("%w: FrozenURL: %v", ErrInvalidRequest, err)
	}
	if slices.ContainsFunc(list, func(s string) bool {
		c, err := canonicalURL(s)
		return err == nil && c == want
	}) {
		return nil
	}
	return fmt.Errorf("%w: %s is none of the %d configured", ErrUnknownIndexer, want, len(list))
}
