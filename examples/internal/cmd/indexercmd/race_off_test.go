//go:build !race

package indexercmd_test

const raceEnabled = false
