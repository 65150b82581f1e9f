// Package promtext reads one metric off a server's /metrics page in the
// Prometheus text format: the sum of its samples over every label set.
// Tests, benchmarks and the fleet sim use it to read a server's own
// counters (etcd's received messages and CPU seconds) before and after a
// measurement; only the difference of two readings means anything.
package promtext
