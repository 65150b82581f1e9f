// Package storetest is the conformance suite every [store.Store] backend
// passes, with the crash test and benchmark harness that go with it. A
// backend is done when its tests call [Run] (and, for stores kept on disk,
// [RunPersistent]) and they pass under -race.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
//	}
//
// Each subtest gets a fresh store from the factory and closes it when done.
// Errors are checked with errors.Is against the sentinels of package store.
//
// [RunDifferential] runs a random sequence of operations, reopenings and
// engine-specific events against a backend and against a reference store
// (the memory store, passed in), and compares them step by step.
//
// # Crash test
//
// [RunPersistent] re-executes the test binary as a child that writes rounds
// of puts, metadata updates and context removals, flushing after most
// rounds and reporting each flush on stdout. The parent SIGKILLs it in the
// middle of the stream, reopens the store and checks that every round
// flushed before the kill is there exactly, that later rounds are whole or
// partly there but never corrupt, and that the store takes new writes.
//
// # Benchmarks
//
// [BenchPut], [BenchGet] and [BenchUpdateMetadata] measure a store;
// [BenchRawPut], [BenchRawGet] and [BenchRawUpdate] measure the raw engine
// under it, driven through a [Raw] that the backend's tests provide, with
// the same keys in the same run. The ratio of the two is the figure to
// report. The fixtures ([Multihash], [Multihashes], [PeerID]) are
// deterministic.
package storetest
