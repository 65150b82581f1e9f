package scale

import (
	"slices"
	"testing"
	"time"
)

func TestParseCount(t *testing.T) {
	for s, want := range map[string]uint64{"20000": 20000, "20k": 20000, "10M": 10_000_000, "1.5M": 1_500_000, "1G": 1e9} {
		if got, err := parseCount(s); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "ten", "-1", "1T", "M"} {
		if got, err := parseCount(s); err == nil {
			t.Errorf("parseCount(%q) = %d, want an error", s, got)
		}
	}
}

// TestNodeArgs checks that node flags come after the benchmark's, so
// that they override them, except a -log-level that would hide the lines
// the benchmark reads.
func TestNodeArgs(t *testing.T) {
	for _, tt := range []struct {
		flags []string
		tail  []string
	}{
		{nil, []string{"-freeze-at", "-1"}},
		{[]string{"-poll", "1s"}, []string{"-poll", "1s"}},
		{[]string{"-log-level=debug"}, []string{"-log-level=debug"}},
		{[]string{"--log-level", "warn"}, []string{"--log-level", "warn", "-log-level", "info"}},
		{[]string{"-log-level=error", "-x"}, []string{"-log-level=error", "-x", "-log-level", "info"}},
	} {
		args := nodeArgs(Config{NodeFlags: tt.flags}, "/d")
		if args[0] != "node" || !slices.Equal(args[len(args)-len(tt.tail):], tt.tail) {
			t.Errorf("node flags %q: args %q, want them to end with %q", tt.flags, args, tt.tail)
		}
	}
}

// A run inside one tick of the CPU clock reads 0 CPU: its per-CPU rates
// show "—", not 9,223,372,036,854,775,808 (a float +Inf made an integer).
func TestPerCPUBelowTick(t *testing.T) {
	if got := perCPU(Figures{Multihashes: 4107}.PerCPU()); got != "—" {
		t.Errorf("0 CPU: %q, want —", got)
	}
	if got := perCPU(Figures{Multihashes: 4_000_000, CPU: 2 * time.Second}.PerCPU()); got != "2,000,000" {
		t.Errorf("2 CPU-s: %q, want 2,000,000", got)
	}
}
