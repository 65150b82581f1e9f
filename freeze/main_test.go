package freeze_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Run must leave no goroutine behind when it returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
