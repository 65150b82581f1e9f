package handoff_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/handoff"
)

func TestReadFrozenIndexersFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := handoff.ReadFrozenIndexersFile(write("ok", "# pool\n\n  http://a:3000  \n#http://b:3000\nhttp://c:3000"))
	if want := []string{"http://a:3000", "http://c:3000"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	for name, body := range map[string]string{
		"empty":    "",
		"comments": "# nothing\n\n",
	} {
		if _, err := handoff.ReadFrozenIndexersFile(write(name, body)); err == nil || !strings.Contains(err.Error(), "no URL") {
			t.Errorf("%s: %v, want no URL", name, err)
		}
	}
	// The size bound: at it read, one byte over refused.
	line := "http://a:3000\n"
	pad := handoff.MaxFrozenIndexersFile - len(line)
	at := strings.Repeat(strings.Repeat("#", 1023)+"\n", pad/1024) + strings.Repeat("#", pad%1024-1) + "\n" + line
	if _, err := handoff.ReadFrozenIndexersFile(write("at", at)); err != nil {
		t.Errorf("file of %d bytes: %v", len(at), err)
	}
	if _, err := handoff.ReadFrozenIndexersFile(write("over", at+"#")); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("file of %d bytes: %v, want refused", len(at)+1, err)
	}
	if _, err := handoff.ReadFrozenIndexersFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// A pool's operator keeps the find URLs of its indexers in a file; the
// receiver reads it at every handoff (WithFrozenIndexersFile).
func ExampleReadFrozenIndexersFile() {
	path := filepath.Join(os.TempDir(), "indexkit-example-pool")
	defer os.Remove(path)
	if err := os.WriteFile(path, []byte("# the pool's indexers\nhttp://indexer-1:3000\n\nhttp://indexer-2:3000\n"), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	urls, err := handoff.ReadFrozenIndexersFile(path)
	fmt.Println(urls, err)
	// Output: [http://indexer-1:3000 http://indexer-2:3000] <nil>
}
