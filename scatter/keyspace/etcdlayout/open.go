package etcdlayout

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// retryDelay is the pause before a broken watch is started again.
const retryDelay = 200 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Scheme is the URL scheme of an etcd layout: etcd://HOST:PORT[,HOST:PORT...]/PREFIX.
const Scheme = "etcd"

// IsURL reports whether spec names an etcd layout (etcd://...) rather
// than a layout file.
func IsURL(spec string) bool { return strings.HasPrefix(spec, Scheme+"://") }

// ParseURL splits etcd://HOST:PORT[,HOST:PORT...]/PREFIX into the client
// endpoints and the key prefix (the path without its first slash, with a
// trailing slash added; "indexkit/keyspace/" when empty).
func ParseURL(spec string) (endpoints []string, prefix string, err error) {
	u, err := url.Parse(spec)
	if err != nil || u.Scheme != Scheme || u.Host == "" {
		return nil, "", fmt.Errorf("%w: %q is not etcd://HOST:PORT[,HOST:PORT...]/PREFIX", keyspace.ErrInvalidLayout, spec)
	}
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, "", fmt.Errorf("%w: %q has an empty endpoint", keyspace.ErrInvalidLayout, spec)
		}
		endpoints = append(endpoints, "http://"+h)
	}
	prefix = strings.TrimPrefix(u.Path, "/")
	if prefix == "" {
		prefix = "indexkit/keyspace"
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return endpoints, prefix, nil
}

// Dial connects to the cluster an etcd layout URL names and returns its
// store; Close closes both.
func Dial(spec string) (*Store, io.Closer, error) {
	eps, prefix, err := ParseURL(spec)
	if err != nil {
		return nil, nil, err
	}
	cli, err := etcdjson.New(eps, 5*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("etcdlayout: connect to %s: %w", strings.Join(eps, ","), err)
	}
	s := New(cli, prefix)
	return s, closers{s, cli}, nil
}

type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
