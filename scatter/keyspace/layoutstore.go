package keyspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Revision names one published layout in a [LayoutStore]: [LayoutStore.Publish]
// replaces the layout in force only if it is still the one of the revision
// it is given, so two coordinators can never both publish over the same
// epoch. Revisions of one store grow with each publish; they mean nothing
// across stores.
type Revision int64

// ErrConflict is wrapped by the error of a [LayoutStore.Publish] whose
// revision is no longer the one in force: someone published meanwhile.
var ErrConflict = errors.New("keyspace: the layout changed since it was read")

// LayoutStore keeps the one layout of a keyspace layer: the source of the
// epoch. Every process follows it ([LayoutStore.Watch]) and a
// [Coordinator] publishes each next epoch into it as a transaction.
//
// Two backends exist: [FileStore], a layout file on one host (the
// processes re-read it on SIGHUP or by polling), and the etcd store of
// package scatter/keyspace/etcdlayout, for layers past one machine:
// one key, a compare-and-swap per epoch, watches, leases for liveness
// and an elected coordinator.
type LayoutStore interface {
	// Load returns the layout in force and its revision.
	Load(ctx context.Context) (Layout, Revision, error)
	// Publish makes next the layout in force if the one in force is
	// still at prev, and returns next's revision. It returns an error
	// wrapping [ErrConflict] if another layout was published since prev,
	// and one wrapping [ErrInvalidLayout] for a next that does not
	// validate or does not come after the layout in force.
	Publish(ctx context.Context, prev Revision, next Layout) (Revision, error)
	// Watch calls apply with the layout in force, then with each layout
	// published later, until ctx ends; it returns nil then. Layouts
	// published in quick succession may reach apply only as the last of
	// them; apply must be idempotent (it may see the same layout again,
	// after a reconnection say). An error of apply or a layout that does
	// not read goes to onError (when not nil) and the watch goes on.
	Watch(ctx context.Context, apply func(Layout) error, onError func(error)) error
}

// FileStore is a [LayoutStore] over a layout file ([Load], [Save]) on
// one host. A publish takes an exclusive lock beside the file
// (Path+".lock", flock), compares and writes under it, so coordinators
// on the same host publish one at a time. The revision of a layout is
// its epoch: every publish increments it.
type FileStore struct {
	// Path is the layout file. Required.
	Path string
	// Interval is how often Watch reads the file (0: 1 s).
	Interval time.Duration
	// Reload, when not nil, makes Watch read the file and call apply at
	// each receive (a program's SIGHUP).
	Reload <-chan struct{}
}

// Load reads the file.
func (f *FileStore) Load(context.Context) (Layout, Revision, error) {
	l, err := Load(f.Path)
	if err != nil {
		return Layout{}, 0, err
	}
	return l, Revision(l.Epoch), nil
}

// Publish writes next over the file if the file still holds the layout
// of revision prev.
func (f *FileStore) Publish(_ context.Context, prev Revision, next Layout) (Revision, error) {
	if err := next.Validate(); err != nil {
		return 0, err
	}
	unlock, err := lockFile(f.Path + ".lock")
	if err != nil {
		return 0, fmt.Errorf("keyspace: publish epoch %d: %w", next.Epoch, err)
	}
	defer unlock()
	cur, err := Load(f.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	if err == nil {
		if Revision(cur.Epoch) != prev {
			return 0, fmt.Errorf("%w: %s holds epoch %d, not %d", ErrConflict, f.Path, cur.Epoch, prev)
		}
		if next.Epoch <= cur.Epoch {
			return 0, fmt.Errorf("%w: epoch %d does not come after %d", ErrInvalidLayout, next.Epoch, cur.Epoch)
		}
	} else if prev != 0 {
		return 0, fmt.Errorf("%w: %s does not exist, expected epoch %d", ErrConflict, f.Path, prev)
	}
	if err := Save(f.Path, next); err != nil {
		return 0, err
	}
	return Revision(next.Epoch), nil
}

// Watch follows the file with [WatchFile].
func (f *FileStore) Watch(ctx context.Context, apply func(Layout) error, onError func(error)) error {
	iv := f.Interval
	if iv <= 0 {
		iv = time.Second
	}
	return WatchFile(ctx, WatchConfig{Path: f.Path, Interval: iv, Reload: f.Reload, Apply: apply, OnError: onError})
}

var _ LayoutStore = (*FileStore)(nil)
