//go:build race

package pebble_test

// raceEnabled says the race detector is on: sync.Pool then drops items at
// random, so allocation counts do not hold.
const raceEnabled = true
