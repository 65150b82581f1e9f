package repogen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// File is one generated file: its path in the tree and its bytes.
type File struct {
	Path string
	Data []byte
}

// Repo is a generated bare git repository, one item of a catalog.
type Repo struct {
	ID     string // repo-0000, repo-0001, …
	Path   string // the bare repository
	URL    string // file:// URL of Path
	Commit string // HEAD of branch main
	Files  []File
	Text   int64 // bytes of the text files (all but the binary one)
}

// binaryPath is the binary file of every fifth repo.
const binaryPath = "assets/blob.bin"

// Sizes is the range of a generated repo's text size: each repo's size is
// drawn log-uniformly between Min and Max bytes.
type Sizes struct{ Min, Max int64 }

// Syllables make the words of generated text: varied enough to give many
// distinct trigrams, pronounceable enough to pick queries from.
var Syllables = []string{"ka", "lo", "mi", "zu", "re", "ta", "po", "shi", "ne", "vo", "gri", "da",
	"fen", "qua", "bel", "tor", "wix", "sa", "mu", "jo", "ple", "dra", "ki", "ul", "os", "ean"}

// genText returns about n bytes of lines of words from rng.
func genText(rng *rand.Rand, n int64) []byte {
	var b bytes.Buffer
	for int64(b.Len()) < n {
		words := 3 + rng.IntN(10)
		for w := range words {
			if w > 0 {
				b.WriteByte(' ')
			}
			for range 1 + rng.IntN(3) {
				b.WriteString(Syllables[rng.IntN(len(Syllables))])
			}
			switch rng.IntN(12) {
			case 0:
				b.WriteString("()")
			case 1:
				fmt.Fprintf(&b, "_%d", rng.IntN(1000))
			case 2:
				b.WriteByte(',')
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Files returns the files of repo number i: a README.md with the line
// "marker-NNNN is the unique line of this repo", text files whose total
// size is drawn from sizes, and in every fifth repo (i%5 == 0) a binary
// file, assets/blob.bin, with a NUL in its first bytes.
func Files(rng *rand.Rand, i int, sizes Sizes) []File {
	total := sizes.Min
	if sizes.Max > sizes.Min {
		total = int64(float64(sizes.Min) * math.Pow(float64(sizes.Max)/float64(sizes.Min), rng.Float64()))
	}
	nfiles := 1 + rng.IntN(int(min(20, 1+total/2048)))
	dirs := []string{"", "src/", "docs/", "src/internal/"}
	files := []File{{Path: "README.md", Data: fmt.Appendf(nil, "# repo %d\nmarker-%04d is the unique line of this repo\n", i, i)}}
	for f := range nfiles {
		path := fmt.Sprintf("%sfile%02d.txt", dirs[rng.IntN(len(dirs))], f)
		files = append(files, File{Path: path, Data: genText(rng, total/int64(nfiles))})
	}
	if i%5 == 0 {
		bin := make([]byte, 512)
		for j := range bin {
			bin[j] = byte(rng.IntN(256))
		}
		bin[7] = 0
		files = append(files, File{Path: binaryPath, Data: bin})
	}
	return files
}

// Git runs git with args in dir and returns its standard output, with
// the system's git configuration left out and no terminal prompt: for the
// generated repositories and the tests that add commits to them.
func Git(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// Make creates the bare repository path with one commit of files on
// branch main, committed at the Unix time when, with git fast-import, and
// returns the commit's object name.
func Make(ctx context.Context, path string, files []File, when int64) (string, error) {
	if _, err := Git(ctx, "", nil, "init", "-q", "--bare", "--initial-branch=main", path); err != nil {
		return "", err
	}
	var s bytes.Buffer
	fmt.Fprintf(&s, "commit refs/heads/main\nmark :1\ncommitter Fleet Demo <fleet@example.invalid> %d +0000\n", when)
	fmt.Fprintf(&s, "data %d\n%s\n", len("generated"), "generated")
	for _, f := range files {
		fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n", f.Path, len(f.Data))
		s.Write(f.Data)
		s.WriteByte('\n')
	}
	s.WriteString("\nget-mark :1\n")
	out, err := Git(ctx, path, s.Bytes(), "fast-import", "--quiet", "--date-format=raw")
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	if len(sha) != 40 {
		return "", fmt.Errorf("git fast-import in %s: unexpected mark %q", path, out)
	}
	return sha, nil
}

// Generate creates n bare repositories under dir, named repo-0000 on,
// with text sizes drawn from sizes by a generator seeded with seed, two at
// a time (git fast-import, no network). The same seed gives the same
// files; the commits differ only if git's object format does.
func Generate(ctx context.Context, dir string, n int, sizes Sizes, seed uint64) ([]Repo, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("generate repos: %w", err)
	}
	repos := make([]Repo, n)
	for i := range repos {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		r := Repo{ID: fmt.Sprintf("repo-%04d", i), Files: Files(rng, i, sizes)}
		r.Path = filepath.Join(dir, r.ID+".git")
		r.URL = "file://" + filepath.ToSlash(r.Path)
		for _, f := range r.Files {
			if f.Path != binaryPath {
				r.Text += int64(len(f.Data))
			}
		}
		repos[i] = r
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range 2 {
		wg.Go(func() {
			for i := range next {
				sha, err := Make(ctx, repos[i].Path, repos[i].Files, 1700000000+int64(i))
				mu.Lock()
				repos[i].Commit = sha
				if err != nil {
					errs = append(errs, fmt.Errorf("repo %s: %w", repos[i].ID, err))
				}
				mu.Unlock()
			}
		})
	}
	for i := range repos {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, err
	}
	return repos, nil
}
