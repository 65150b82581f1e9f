package main

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
	"regexp"
	"strings"
	"sync"

	"github.com/indexkit/indexkit/lease"
)

// repo is a generated bare git repository, one item of the catalog.
type repo struct {
	ID     string
	Path   string // the bare repository
	URL    string // file:// URL of Path
	Commit string // HEAD
	Files  []sourceFile
	Text   int64 // bytes of text (non-binary) files
}

// Estimate is the catalog's guess of the repo's index size: the bytes an
// Index of its text takes, by the same accounting as Index.Size, from an
// average of trigrams per byte. The node reports the exact size once it
// has indexed the repo.
func (r repo) Estimate() int64 {
	var lines int64
	for _, f := range r.Files {
		if !isBinary(f.Data) {
			lines += int64(bytes.Count(f.Data, []byte{'\n'})) + 1
		}
	}
	return r.Text*5 + lines*lineCost + int64(len(r.Files))*fileCost + 64<<10
}

// sizeRange is the range of a generated repo's text size: each repo's
// size is drawn log-uniformly between Min and Max bytes.
type sizeRange struct{ Min, Max int64 }

// syllables make the words of generated text: varied enough to give many
// distinct trigrams, pronounceable enough to pick queries from.
var syllables = []string{"ka", "lo", "mi", "zu", "re", "ta", "po", "shi", "ne", "vo", "gri", "da",
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
				b.WriteString(syllables[rng.IntN(len(syllables))])
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

// genFiles returns the files of repo number i: text files whose total size
// is drawn from sizes, and in every fifth repo a binary file.
func genFiles(rng *rand.Rand, i int, sizes sizeRange) []sourceFile {
	total := sizes.Min
	if sizes.Max > sizes.Min {
		total = int64(float64(sizes.Min) * math.Pow(float64(sizes.Max)/float64(sizes.Min), rng.Float64()))
	}
	nfiles := 1 + rng.IntN(int(min(20, 1+total/2048)))
	dirs := []string{"", "src/", "docs/", "src/internal/"}
	files := []sourceFile{{Path: "README.md", Data: fmt.Appendf(nil, "# repo %d\nmarker-%04d is the unique line of this repo\n", i, i)}}
	for f := range nfiles {
		path := fmt.Sprintf("%sfile%02d.txt", dirs[rng.IntN(len(dirs))], f)
		files = append(files, sourceFile{Path: path, Data: genText(rng, total/int64(nfiles))})
	}
	if i%5 == 0 {
		bin := make([]byte, 512)
		for j := range bin {
			bin[j] = byte(rng.IntN(256))
		}
		bin[7] = 0
		files = append(files, sourceFile{Path: "assets/blob.bin", Data: bin})
	}
	return files
}

// git runs git with args in dir and returns its standard output, with
// the system's git configuration left out: for the repositories demo and
// sim generate.
func git(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	return runGit(ctx, dir, stdin, []string{"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}, args...)
}

// fetchGit runs git as a node fetches a repository: with the user's and
// the system's git configuration (so their credential helpers, proxies
// and URL rewrites apply), never asking on a terminal.
func fetchGit(ctx context.Context, args ...string) ([]byte, error) {
	return runGit(ctx, "", nil, []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}, args...)
}

func runGit(ctx context.Context, dir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		shown := make([]string, len(args))
		for i, a := range args {
			shown[i] = redactURL(a)
		}
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(shown, " "), err, redactURL(string(bytes.TrimSpace(stderr.Bytes()))))
	}
	return stdout.Bytes(), nil
}

// userinfo matches the user and password of a URL in text.
var userinfo = regexp.MustCompile(`(://)[^/@\s]+@`)

// redactURL hides the user and password of every URL in s, so that a
// clone URL with credentials in it never reaches a log line.
func redactURL(s string) string { return userinfo.ReplaceAllString(s, "${1}***@") }

// makeRepo creates the bare repository path with one commit of files on
// branch main, with git fast-import, and returns the commit's SHA.
func makeRepo(ctx context.Context, path string, files []sourceFile, when int64) (string, error) {
	if _, err := git(ctx, "", nil, "init", "-q", "--bare", "--initial-branch=main", path); err != nil {
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
	out, err := git(ctx, path, s.Bytes(), "fast-import", "--quiet", "--date-format=raw")
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	if len(sha) != 40 {
		return "", fmt.Errorf("git fast-import in %s: unexpected mark %q", path, out)
	}
	return sha, nil
}

// generateRepos creates n bare repositories under dir, named repo-0000 on,
// with text sizes drawn from sizes by a generator seeded with seed, two at
// a time.
func generateRepos(ctx context.Context, dir string, n int, sizes sizeRange, seed uint64) ([]repo, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("generate repos: %w", err)
	}
	repos := make([]repo, n)
	for i := range repos {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		r := repo{ID: fmt.Sprintf("repo-%04d", i), Files: genFiles(rng, i, sizes)}
		r.Path = filepath.Join(dir, r.ID+".git")
		r.URL = "file://" + filepath.ToSlash(r.Path)
		for _, f := range r.Files {
			if !isBinary(f.Data) {
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
				sha, err := makeRepo(ctx, repos[i].Path, repos[i].Files, 1700000000+int64(i))
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

// putCatalog writes the repos' clone URLs into tab.repos, then one
// catalog row per repo (ID, Commit, Size and MinBid from the estimate) and
// replicas-1 replica slots of each into s.
func putCatalog(ctx context.Context, tab sideTables, s lease.Store, repos []repo, replicas int) error {
	urls := make(map[string]string, len(repos))
	for _, r := range repos {
		urls[r.ID] = r.URL
	}
	if err := tab.repos.Set(ctx, urls); err != nil {
		return fmt.Errorf("put clone URLs: %w", err)
	}
	for _, r := range repos {
		est := r.Estimate()
		if err := lease.PutReplicated(ctx, s, lease.Item{ID: r.ID, Commit: r.Commit, Size: est, MinBid: est}, replicas); err != nil {
			return fmt.Errorf("put catalog row: %w", err)
		}
	}
	return nil
}
