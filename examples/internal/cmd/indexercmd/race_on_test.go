//go:build race

package indexercmd_test

// raceEnabled says the race detector is on: the code runs several times
// slower, so load tests run at a smaller scale.
const raceEnabled = true
