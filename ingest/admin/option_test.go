package admin_test

import (
	"errors"
	"testing"

	"github.com/indexkit/indexkit/ingest/admin"
)

// An option given a value out of range fails its constructor with
// ErrInvalidOption; the empty token is no token, not an error.
func TestInvalidOptions(t *testing.T) {
	node := newFakeNode(testID(t, 1))
	for name, opt := range map[string]admin.Option{
		"WithMaxRequestBody(0)":  admin.WithMaxRequestBody(0),
		"WithMaxRequestBody(-1)": admin.WithMaxRequestBody(-1),
		"WithLogger(nil)":        admin.WithLogger(nil),
	} {
		if h, err := admin.NewHandler(node, opt); !errors.Is(err, admin.ErrInvalidOption) || h != nil {
			t.Errorf("NewHandler(%s) = %v, %v; want nil, ErrInvalidOption", name, h, err)
		}
	}
	if _, err := admin.NewHandler(node, admin.WithToken("")); err != nil {
		t.Errorf("NewHandler(WithToken(\"\")): %v", err)
	}
	for name, opt := range map[string]admin.ClientOption{
		"WithMaxResponseBody(0)": admin.WithMaxResponseBody(0),
		"WithHTTPClient(nil)":    admin.WithHTTPClient(nil),
	} {
		if c, err := admin.NewClient("127.0.0.1:3002", opt); !errors.Is(err, admin.ErrInvalidOption) || c != nil {
			t.Errorf("NewClient(%s) = %v, %v; want nil, ErrInvalidOption", name, c, err)
		}
	}
	if _, err := admin.NewClient("127.0.0.1:3002", admin.WithClientToken("")); err != nil {
		t.Errorf("NewClient(WithClientToken(\"\")): %v", err)
	}
}
