//go:build !race

package indexernode_test

const raceEnabled = false
