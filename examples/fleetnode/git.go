package fleetnode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// fetchGit runs git as a node fetches a repository: with the user's and
// the system's git configuration (so their credential helpers, proxies
// and URL rewrites apply), never asking on a terminal. Its error shows
// git's message with the user and password of every URL hidden.
func fetchGit(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
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
