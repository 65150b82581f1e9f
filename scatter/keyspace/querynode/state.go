package querynode

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// The durable state in Config.Dir:
//
//	writers/<hex of the writer's name>  a writerFile (JSON), one per writer
//	guard-<epoch>.log                   the copy guard of that epoch
//	member                              the last layout adopted: its epoch, whether it named the node (rejoin.go)
//
// Position and member files are replaced atomically (a temporary file synced and
// renamed, then the directory synced); the guard is an append-only log
// synced before each batch that wrote to it is acknowledged.

const writersDir = "writers"

type writerFile struct {
	Stream  uint64
	Applied uint64
}

func writerPath(dir, name string) string {
	return filepath.Join(dir, writersDir, hex.EncodeToString([]byte(name)))
}

// loadWriters reads every writer position in dir.
func loadWriters(dir string) (map[string]keyspace.WriterPosition, error) {
	wd := filepath.Join(dir, writersDir)
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	ents, err := os.ReadDir(wd)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	out := make(map[string]keyspace.WriterPosition, len(ents))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue // a temporary file left by a crash
		}
		name, err := hex.DecodeString(e.Name())
		if err != nil {
			return nil, fmt.Errorf("%w: unexpected file %s in %s", ErrState, e.Name(), wd)
		}
		b, err := os.ReadFile(filepath.Join(wd, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrState, err)
		}
		var f writerFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("%w: position of writer %q: %w", ErrState, name, err)
		}
		out[string(name)] = keyspace.WriterPosition{Stream: f.Stream, Applied: f.Applied}
	}
	return out, nil
}

// saveWriter durably records a writer's position.
func saveWriter(dir, name string, pos keyspace.WriterPosition) error {
	b, _ := json.Marshal(writerFile{Stream: pos.Stream, Applied: pos.Applied})
	if err := writeFileAtomic(writerPath(dir, name), b); err != nil {
		return fmt.Errorf("%w: position of writer %q: %w", ErrState, name, err)
	}
	return nil
}

// writeFileAtomic replaces path by a file holding b: a temporary file in the
// same directory, synced, renamed over path, and the directory synced.
func writeFileAtomic(path string, b []byte) error {
	d := filepath.Dir(path)
	tmp, err := os.CreateTemp(d, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(d)
}

func syncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
