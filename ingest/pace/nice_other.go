//go:build !linux

package pace

import "errors"

// lowerThread does nothing where a thread's priority cannot be set on
// its own.
func lowerThread(int) bool { return false }

func threadNice() (int, error) { return 0, errors.ErrUnsupported }
