//go:build !(linux || darwin || freebsd)

package freeze

import (
	"errors"
	"fmt"
	"os"
)

// Usage implements [DiskReader]; statfs is not supported on this platform.
func (StatfsReader) Usage(dir string) (used, total uint64, err error) {
	return 0, 0, fmt.Errorf("statfs %s: %w", dir, errors.ErrUnsupported)
}

// Device implements [DeviceReader]; every directory counts as its own
// device on this platform.
func (StatfsReader) Device(dir string) (uint64, error) {
	return 0, fmt.Errorf("stat %s: %w", dir, errors.ErrUnsupported)
}

func statDevice(fi os.FileInfo) (uint64, error) {
	return 0, fmt.Errorf("stat %s: %w", fi.Name(), errors.ErrUnsupported)
}
