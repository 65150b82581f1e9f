package httperr

import (
	"errors"
	"testing"
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
