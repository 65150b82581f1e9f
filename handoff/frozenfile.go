package handoff

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
)

// MaxFrozenIndexersFile bounds the size of a file of frozen indexers'
// find URLs ([ReadFrozenIndexersFile]).
const MaxFrozenIndexersFile = 1 << 20

// WithFrozenIndexersFile is [WithFrozenIndexersFunc] over a file of find
// URLs that an operator edits while the receiver runs: the file is read
// ([ReadFrozenIndexersFile]) at every handoff, and a file that does not
// read, or names no URL, fails the handoff. An empty path is
// [ErrInvalidOption].
func WithFrozenIndexersFile(path string) Option {
	return func(c *config) error {
		if path == "" {
			return fmt.Errorf("%w: empty frozen indexers file", ErrInvalidOption)
		}
		c.frozenIndexers = func(context.Context) ([]string, error) {
			urls, err := ReadFrozenIndexersFile(path)
			if err != nil {
				return nil, fmt.Errorf("handoff-from file: %w", err)
			}
			return urls, nil
		}
		return nil
	}
}

// ReadFrozenIndexersFile reads a file of find URLs, one per line; blank
// lines and lines starting with # are skipped. A file larger than
// [MaxFrozenIndexersFile] is an error, and so is one that names no URL:
// it would refuse every handoff, which is not what an empty file means to
// an operator. The URLs are returned as written; the receiver compares
// them as [WithFrozenIndexers] says.
func ReadFrozenIndexersFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFrozenIndexersFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFrozenIndexersFile)
	}
	var urls []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		urls = append(urls, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%s: no URL", path)
	}
	return urls, nil
}
