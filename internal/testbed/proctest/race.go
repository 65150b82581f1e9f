//go:build race

package proctest

// raceEnabled is whether this test binary runs with the race detector;
// [Build] then builds with -race too.
const raceEnabled = true
