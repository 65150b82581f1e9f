# indexkit: the tasks a developer and CI run. `make` alone lists them.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# The Redis that lease/redis and piece tests use; .ci/services starts it.
export REDIS_ADDR ?= 127.0.0.1:6379

# `make test` is what CI runs, so it sets CI: the tests that need Redis,
# Chromium, a tmpfs mount or root then fail when these are missing instead
# of skipping (internal/testbed/redistest.Unavailable, the front end's browser test,
# freeze's tmpfs test). .ci/services installs Redis and Chromium when they
# are missing. `make test CI=` lets them skip.
test: export CI ?= true

# Every Go file of the repository but those under .git, NUL-separated.
GOFILES := find . -path ./.git -prune -o -type f -name '*.go' -print0

.PHONY: help demo bench-table scale check test bench fmt gofmt-check

help: ## list the targets
	@echo "usage: make <target>"
	@awk 'BEGIN { FS = ":.*## " } /^[a-z-]+:.*## / { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@echo "REDIS_ADDR=$(REDIS_ADDR) (override: make test REDIS_ADDR=host:port)"

# DEMO_FLAGS are flags of the demo (examples/pool/doc.go lists them), as in
# make demo DEMO_FLAGS='--duration 2m --store memory'.
DEMO_FLAGS ?=

# The demo is built into a temporary directory and run from there rather
# than with `go run`, which exits 1 when interrupted whatever the program
# returns: Ctrl-C reaches the program, which stops the pool and runs its end
# check, and make's status is the program's (0, or 3 when the end check
# found the pool incomplete). `set -m` runs the program as a job of its
# own: its own process group, which the shell makes the terminal's
# foreground group, so that Ctrl-C reaches the program alone. Otherwise
# make, in the foreground group too, would get SIGINT as well and die of
# it (status 130) whatever the program returns; and `make demo | tee log`
# would lose tee. Without a terminal, `set -m` changes nothing but the
# process group. (examples/pool's TestMakeDemoCtrlC types a Ctrl-C into a
# pseudo-terminal.)
demo: ## run a whole local IPNI pool (publishers, assigner, indexers, front end, piece sampler) and show it live until Ctrl-C
	@dir="$$(mktemp -d)"; trap 'rm -rf "$$dir"' EXIT; \
	echo "building the demo: go build -o $$dir/pool ./examples/pool"; \
	echo "  (the first build compiles about $$(go list -deps ./examples/pool | wc -l) packages: a few minutes on 2 cores; later builds take seconds)"; \
	go build -o "$$dir/pool" ./examples/pool; \
	set -m; status=0; "$$dir/pool" $(DEMO_FLAGS) || status=$$?; exit "$$status"

# The short benchmark run of `make bench-table`: the backends, one package
# at a time (-p 1) so that no two benchmarks share the machine.
TABLE_PKGS := ./store/pebble ./store/leveldb ./store/memory
TABLE_TEST := go test -p 1 -run '^$$'

bench-table: ## run the store benchmarks briefly (about a minute) and show store vs raw engine as a table
	{ \
	INDEXKIT_BENCH_KEYS=200000 $(TABLE_TEST) -bench '^BenchmarkPut$$' -benchtime 1x -count 3 $(TABLE_PKGS); \
	$(TABLE_TEST) -bench '^BenchmarkGet(Parallel)?$$' -benchtime 500000x $(TABLE_PKGS); \
	$(TABLE_TEST) -bench '^BenchmarkUpdateMetadata$$' -benchtime 200000x ./store/pebble ./store/memory; \
	$(TABLE_TEST) -bench '^BenchmarkUpdateMetadata$$' -benchtime 2000x ./store/leveldb; \
	} 2>&1 | go run ./examples/benchtable

# SCALE_FLAGS are flags of the scale benchmark (examples/scale/doc.go
# lists them), as in make scale SCALE_FLAGS='-mh 100M' or
# make scale SCALE_FLAGS='-shape contexts -mh 10M'; node flags go after --.
SCALE_FLAGS ?= -mh 10M

# Built into a temporary directory and run from there, as the demo is, so
# that Ctrl-C reaches the program, which stops its children (the node and
# the raw Pebble baseline) and removes its data.
scale: ## ingest generated chains (default 10M multihashes) into a node and a raw Pebble; print the figures per million multihashes
	@dir="$$(mktemp -d)"; trap 'rm -rf "$$dir"' EXIT; \
	echo "go build -o $$dir/scale ./examples/scale"; \
	go build -o "$$dir/scale" ./examples/scale; \
	"$$dir/scale" $(SCALE_FLAGS)

# The two test lanes (internal/testbed/lane). The unit lane, `go test
# -short`, runs in the test binaries' own processes: no child processes,
# no whole pools, no etcd clusters, no Redis server of a test's own (the
# test beds that start them skip under -short, naming the lane). The
# integration lane is the rest; `make test` runs it with the unit lane.

# The lanes wait more than they compute (child processes, real-time lease
# suites, fsyncs): on 2 cores the race lane used 1.2 of them at -p 2. The
# unit lane (with or without -race) runs twice as many packages at once as
# there are cores, the integration lane one more than there are cores.
NPROC := $(shell nproc 2>/dev/null || echo 2)
UNIT_P ?= $(shell echo $$(( $(NPROC) * 2 )))
RACE_P ?= $(UNIT_P)
INTEGRATION_P ?= $(shell echo $$(( $(NPROC) + 1 )))

check: ## the unit lane, for the edit loop: gofmt, vet, go test -short (import rules included; no processes, pools or clusters); a few minutes warm
	@$(MAKE) --no-print-directory gofmt-check
	go vet ./...
	go test -p $(UNIT_P) -short -count=1 -timeout 10m ./...

# `make test` runs the unit lane under -race, where the race detector sees
# the library's goroutines, then, without -race, the packages that hold
# integration-lane tests (internal/testbed/lane/lanes reads the first run's
# JSON and lists them): the integration lane's child processes are not
# race-instrumented, its whole pools under -race take several times as long
# for races the unit lane's concurrent tests already look for, and a
# package whose tests all ran under -short has nothing left to run. Without
# -race the manager tests of lease/agent run too (lease/agent/race_test.go
# lists the package).
test: ## everything CI checks: services, vet, gofmt, import rules, the unit lane under -race, the integration lane without it, interop under -race
	bash .ci/services
	@$(MAKE) --no-print-directory gofmt-check
	go vet ./...
	go test -count=1 -run TestImportRules ./internal/importrules/
	@list="$$(mktemp)"; trap 'rm -f "$$list"' EXIT; \
	echo "go test -p $(RACE_P) -race -short -count=1 -json ./... | lanes -integration $$list"; \
	go test -p $(RACE_P) -race -short -count=1 -timeout 15m -json ./... | go run ./internal/testbed/lane/lanes -integration "$$list"; \
	echo "go test -p $(INTEGRATION_P) -count=1, $$(wc -l < "$$list") packages with integration-lane tests:" $$(sed 's|.*/indexkit/||' "$$list"); \
	if [ -s "$$list" ]; then go test -p $(INTEGRATION_P) -count=1 -timeout 15m $$(cat "$$list"); fi
	@if [ -f interop/go.mod ]; then \
		echo "cd interop && go vet ./... && go test -race -count=1 ./..."; \
		cd interop && go vet ./... && go test -race -count=1 -timeout 15m ./...; \
	fi

gofmt-check:
	@echo "gofmt -l (all .go files but .git)"
	@unformatted="$$($(GOFILES) | xargs -0 -r gofmt -l)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files are not formatted (run make fmt):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi

bench: ## run every benchmark in full, with allocations
	go test -run '^$$' -bench . -benchmem ./...

fmt: ## gofmt every .go file in place
	$(GOFILES) | xargs -0 -r gofmt -l -w
