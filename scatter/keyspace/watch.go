package keyspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// WatchConfig says which layout file [WatchFile] watches and what it does
// with each layout it reads.
type WatchConfig struct {
	// Path is the layout file ([Save] writes it atomically). Required.
	Path string
	// Interval is how often the file is read to see whether it changed;
	// 0 reads it only at the start and on Reload.
	Interval time.Duration
	// Reload, when not nil, makes WatchFile read the file and call Apply
	// at each receive, changed or not (a program's SIGHUP).
	Reload <-chan struct{}
	// Apply takes a valid layout read from the file: the one at the start,
	// each one whose file content changed since the last read, and one at
	// each Reload. It returns an error to refuse it (an older epoch, a
	// layout the component cannot take); the component then keeps the
	// layout in force. Apply must be idempotent: it may get the layout in
	// force again. Required.
	Apply func(Layout) error
	// OnError, when not nil, learns of each read that failed (a file
	// missing, not JSON, or a layout that does not validate: [Load]'s
	// errors) and of each error of Apply. A failure is reported once, not
	// at each Interval: again only after the file changes, or when Reload
	// asks.
	OnError func(error)
}

// WatchFile keeps a component in step with a layout file until ctx is
// done: it calls cfg.Apply with the layout in the file at the start, and
// again whenever the file's content changes (read every cfg.Interval) or
// cfg.Reload asks. It runs in the calling goroutine and starts none; it
// returns nil when ctx is done, and an error naming the field at once for
// a cfg without Path or Apply or with a negative Interval.
//
// It reads the file's bytes rather than its modification time, whose
// granularity can hide two writes within a second; a layout file is a few
// kilobytes.
func WatchFile(ctx context.Context, cfg WatchConfig) error {
	switch {
	case cfg.Path == "":
		return errors.New("keyspace: WatchConfig.Path must name the layout file")
	case cfg.Apply == nil:
		return errors.New("keyspace: WatchConfig.Apply is required")
	case cfg.Interval < 0:
		return fmt.Errorf("keyspace: WatchConfig.Interval %v must not be negative", cfg.Interval)
	}
	var last []byte    // the content last read, applied or not; nil: none yet
	var readErr string // the last failure to read the file, reported once
	check := func(force bool) {
		b, err := os.ReadFile(cfg.Path)
		if err != nil {
			last = nil
			if (force || err.Error() != readErr) && cfg.OnError != nil {
				cfg.OnError(fmt.Errorf("shard: read layout: %w", err))
			}
			readErr = err.Error()
			return
		}
		readErr = ""
		if !force && last != nil && bytes.Equal(b, last) {
			return
		}
		last = b
		l, err := parse(cfg.Path, b)
		if err == nil {
			err = cfg.Apply(l)
		}
		if err != nil && cfg.OnError != nil {
			cfg.OnError(err)
		}
	}
	check(true)
	var tick <-chan time.Time
	if cfg.Interval > 0 {
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			check(false)
		case <-cfg.Reload:
			check(true)
		}
	}
}
