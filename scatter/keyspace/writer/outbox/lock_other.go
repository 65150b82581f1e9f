//go:build !(linux || darwin || freebsd)

package outbox

import (
	"fmt"
	"os"
)

// lockDir opens path; without flock, it does not keep a second process
// out.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("outbox: open: %w", err)
	}
	return f, nil
}
