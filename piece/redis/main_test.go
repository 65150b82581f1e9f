package redis_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes the clients it opens, so go-redis's pool goroutines
// are gone by the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
