package etcd_test

import (
	"os"
	"sync"
	"testing"
)

// sharedTB lends the first test's TB to etcdtest.Start for the shared
// server, but keeps the cleanups (killing the server) and the temporary
// directory for the end of the package's run.
type sharedTB struct {
	testing.TB
	mu  sync.Mutex
	fns []func()
	dir string
}

func (s *sharedTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fns = append(s.fns, f)
}

func (s *sharedTB) TempDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		d, err := os.MkdirTemp("", "lease-etcd-")
		if err != nil {
			s.TB.Fatal(err)
		}
		s.dir = d
	}
	return s.dir
}

func (s *sharedTB) cleanup() {
	s.mu.Lock()
	fns := s.fns
	s.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
