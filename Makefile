# Narad build. GNU make; needs only go (which fetches modules through the
# module proxy) and make. `make help` lists the targets.
#
# Every recipe runs in bash with -e, -u and pipefail, so a step that fails
# stops the target.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

GO ?= go
# Extra flags for go build (e.g. GO_BUILD_FLAGS='-trimpath').
GO_BUILD_FLAGS ?=
NARAD_BIN := bin/narad
# Extra arguments for `make run`, appended to `server start --dev`.
RUN_ARGS ?=
# `make cluster`: node count (3 or 5), HTTP port of n1 (node i uses
# base+10*(i-1), its node-to-node port one above), data directory (empty:
# ~/.narad/cluster/<nodes>-nodes-port-<base>), and how long after a node
# died it is started again (empty: never; 10s, say).
NODES ?= 3
BASE_PORT ?= 7942
CLUSTER_DIR ?=
RESTART_AFTER ?=

# Per test binary; the default 10m is too short for the race step.
TEST_TIMEOUT ?= 20m
# Directories with real concurrency, tested again under the race detector.
# Only those that exist are used, so the step works as packages appear.
RACE_DIRS := host httpapi auth cmd client peer

# Benchmarks: regexp, time per benchmark, packages. Output is also kept in
# .bench/latest.txt for comparison between runs.
BENCH ?= .
BENCHTIME ?= 1s
BENCH_PACKAGES ?= ./...

# Native fuzzing: time per fuzz target in ./fuzz.
FUZZTIME ?= 30s

# Simulator sweep: how many seeds, starting from which, in worlds of how
# many nodes (make sim: SEEDS seeds for each entry of SIM_NODES; a world of
# more than one node runs the moves scenario), and the smaller sweeps make
# test runs (sized to stay within a few minutes): CI_SEEDS single-node
# seeds, then CI_MOVES_SEEDS five-node moves seeds from CI_MOVES_SEED (the
# range holds 2032, a metastore crash found there), and at most
# CI_PLANTED_SEEDS three-node moves seeds per planted cluster bug (each
# stops at the first seed that catches it; 50 is also the test's bound).
SEEDS ?= 1000
SEED ?= 1
SIM_NODES ?= 1 3 5
CI_SEEDS ?= 100
CI_SEED ?= 1
CI_MOVES_SEEDS ?= 20
CI_MOVES_SEED ?= 2020
CI_PLANTED_SEEDS ?= 50
SIM_TIMEOUT ?= 60m

# Real-process soak, and the wall time of make nightly (which takes 1h
# when DURATION is not given on the command line or in the environment).
DURATION ?= 30m
# make nightly: the first seed (empty: drawn from today's date, UTC).
NIGHTLY_SEED ?=
# make nightly: worker processes sharing the runs (empty: one per CPU).
NIGHTLY_PROCS ?=
nightly_duration = $(if $(filter file,$(origin DURATION)),1h,$(DURATION))

# make move-bench: bytes of payload the moved partition is filled with
# (default 1 GiB), and the bound of the whole run.
MOVE_BENCH_BYTES ?= 1073741824
MOVE_BENCH_TIMEOUT ?= 40m

# The targets, in the order `make help` lists them. Each one has a
# help_<target> line; `make help` fails if one is missing.
TARGETS := help build run cluster test bench move-bench fuzz sim nightly soak fmt clean
.PHONY: $(TARGETS)

help_help := List the targets and the variables that tune them.
help:
	@echo 'Usage: make <target> [VARIABLE=value ...]'
	@echo
	@$(foreach target,$(TARGETS),$(if $(help_$(target)),printf '  %-10s %s\n' '$(target)' '$(help_$(target))';,echo 'make help: target $(target) has no help_$(target) line' >&2; exit 1;))
	@echo
	@echo 'Variables: TEST_TIMEOUT=$(TEST_TIMEOUT) BENCH=$(BENCH) BENCHTIME=$(BENCHTIME) FUZZTIME=$(FUZZTIME)'
	@echo '           SEEDS=$(SEEDS) SEED=$(SEED) SIM_NODES=$(SIM_NODES) DURATION=$(DURATION) RUN_ARGS=$(RUN_ARGS)'
	@echo '           NIGHTLY_SEED=$(NIGHTLY_SEED) (make nightly runs for DURATION when given, else 1h)'
	@echo '           NIGHTLY_PROCS=$(NIGHTLY_PROCS) (make nightly: worker processes; empty: one per CPU)'
	@echo '           NODES=$(NODES) BASE_PORT=$(BASE_PORT) CLUSTER_DIR=$(CLUSTER_DIR) RESTART_AFTER=$(RESTART_AFTER)'
	@echo '           MOVE_BENCH_BYTES=$(MOVE_BENCH_BYTES) MOVE_BENCH_TIMEOUT=$(MOVE_BENCH_TIMEOUT)'

help_build := Compile every package and the binary $(NARAD_BIN) from ./cmd/narad.
build:
	$(GO) build $(GO_BUILD_FLAGS) ./...
	$(GO) build $(GO_BUILD_FLAGS) -o $(NARAD_BIN) ./cmd/narad

help_run := Build, then run a zero-config single node on loopback (server start --dev).
run: build
	./$(NARAD_BIN) server start --dev $(RUN_ARGS)

help_cluster := Build, then run a local NODES=3 (or 5) node cluster on loopback until Ctrl-C (narad cluster up; RESTART_AFTER=10s starts a dead node again).
cluster: build
	./$(NARAD_BIN) cluster up --nodes $(NODES) --base-port $(BASE_PORT) $(if $(CLUSTER_DIR),--data-dir '$(CLUSTER_DIR)') $(if $(RESTART_AFTER),--restart-after '$(RESTART_AFTER)')

# The RACE_DIRS that exist now, as ./dir/... patterns (go list then drops
# the ones that hold no package yet).
# Expanded when the recipe runs, not when make reads this file.
race_patterns = $(strip $(foreach dir,$(RACE_DIRS),$(if $(wildcard $(dir)/.),./$(dir)/...)))

help_test := What CI runs, failing fast: format, vet, lint, unit tests, race tests, simulator sweep, planted bugs.
test:
	@echo '==> test 1/7: gofmt'
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	@echo '==> test 2/7: go vet ./...'
	$(GO) vet ./...
	@echo '==> test 3/7: lint (go test ./lint)'
	$(GO) test -timeout $(TEST_TIMEOUT) ./lint
	@echo '==> test 4/7: unit, HTTP, CLI and real-process tests, fuzz seed corpora (go test ./...)'
	$(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e '/e2e$$' -e '/soak$$')
	@# e2e builds the binary itself, which go test's cache cannot see: never cache it.
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./e2e
	@# The short real-process soak: one cycle of every fault, then the replay audit (about a minute; not cached either).
	$(GO) test -count=1 -timeout 10m ./soak -duration=0
	@# The costly cross-structure checks of the core, behind the invariants tag.
	$(GO) test -tags invariants -timeout $(TEST_TIMEOUT) ./storage/... ./node/... ./meta/... ./rebalance/...
	@echo '==> test 5/7: race detector over the concurrent edges ($(or $(race_patterns),none yet))'
	@packages="$$($(if $(race_patterns),$(GO) list $(race_patterns)))"; \
	if [ -z "$$packages" ]; then \
		echo 'no packages under $(RACE_DIRS) yet: skipped'; \
	else \
		echo '$(GO) test -race -timeout $(TEST_TIMEOUT) $(race_patterns)'; \
		$(GO) test -race -timeout $(TEST_TIMEOUT) $(race_patterns); \
	fi
	@echo '==> test 6/7: simulator sweeps: $(CI_SEEDS) single-node seeds, $(CI_MOVES_SEEDS) five-node moves seeds'
	$(GO) test -timeout $(SIM_TIMEOUT) ./sim -run '^TestSim$$' -seeds=$(CI_SEEDS) -seed=$(CI_SEED) -v | grep -E '^(sim:|--- |ok|FAIL|PASS)|failed:|reproduce:'
	$(GO) test -timeout $(SIM_TIMEOUT) ./sim -run '^TestSim$$' -seeds=$(CI_MOVES_SEEDS) -seed=$(CI_MOVES_SEED) -nodes=5 -moves -v | grep -E '^(sim:|--- |ok|FAIL|PASS)|failed:|reproduce:'
	@echo '==> test 7/7: the simulator catches every planted bug (-tags plantedbugs)'
	$(GO) test -timeout $(SIM_TIMEOUT) -tags plantedbugs ./sim -run '^(TestPlantedBugsAreCaught|TestPlantedFanoutBugsAreCaught)$$' -v | grep -E 'caught|survived|^(--- |ok|FAIL|PASS)'
	$(GO) test -timeout $(SIM_TIMEOUT) -tags plantedbugs ./sim -run '^TestPlantedClusterBugsAreCaught$$' -planted-seeds=$(CI_PLANTED_SEEDS) -v | grep -E '^planted|^(--- |ok|FAIL|PASS)'
	@echo '==> test: all steps passed'

help_bench := Run benchmarks (BENCH=regexp BENCHTIME=1s BENCH_PACKAGES=./...); output kept in .bench/latest.txt.
bench:
	@mkdir -p .bench
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem $(BENCH_PACKAGES) | tee .bench/latest.txt

help_move-bench := Real processes: move a MOVE_BENCH_BYTES (1 GiB) partition under load; time to flip, MB/s, freeze.
move-bench:
	NARAD_MOVE_BENCH=1 NARAD_MOVE_BENCH_BYTES=$(MOVE_BENCH_BYTES) $(GO) test -count=1 -timeout $(MOVE_BENCH_TIMEOUT) ./e2e -run '^TestMoveBenchLargePartition$$' -v

help_fuzz := Fuzz every Fuzz target in ./fuzz for FUZZTIME each (default 30s).
fuzz:
	@names="$$($(GO) test -list '^Fuzz' ./fuzz)"; \
	found=0; \
	for name in $$names; do \
		case "$$name" in Fuzz*) ;; *) continue ;; esac; \
		found=$$((found + 1)); \
		echo "==> fuzz $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./fuzz; \
	done; \
	if [ "$$found" -eq 0 ]; then echo 'make fuzz: no Fuzz targets found in ./fuzz' >&2; exit 1; fi

help_sim := Simulator sweeps of SEEDS seeds from SEED (1000, 1) in each world of SIM_NODES (1 3 5; clusters run moves).
sim:
	@for nodes in $(SIM_NODES); do \
		moves=$$([ "$$nodes" -gt 1 ] && echo -moves || true); \
		echo "==> sim: $(SEEDS) seeds from $(SEED), $$nodes node(s) $$moves"; \
		$(GO) test -timeout $(SIM_TIMEOUT) ./sim -run '^TestSim$$' -seeds=$(SEEDS) -seed=$(SEED) -nodes=$$nodes $$moves -v \
			| grep -E '^(sim:|--- |ok|FAIL|PASS)|failed:|reproduce:'; \
	done

help_nightly := Simulator worlds in rotation (1, 3, 5 nodes; moves; every fault profile) on fresh seeds for DURATION (1h); marks reached, sites fired, reproduce commands.
nightly:
	$(GO) test -count=1 -timeout 0 ./sim -run '^TestNightly$$' -v -nightly=$(nightly_duration) $(if $(NIGHTLY_SEED),-nightly-seed=$(NIGHTLY_SEED)) $(if $(NIGHTLY_PROCS),-nightly-procs=$(NIGHTLY_PROCS))

help_soak := Real-process chaos soak: fault cycles for DURATION (30m), then a replay audit; more flags in SOAK_ARGS (-scenario=decommission -seed=N).
soak:
	$(GO) test -count=1 -timeout 0 ./soak -run '^TestSoak$$' -v -duration=$(DURATION) $(SOAK_ARGS)

help_fmt := Format every package with gofmt -w (through go fmt).
fmt:
	$(GO) fmt ./...

help_clean := Remove the binary, benchmark output and coverage files.
clean:
	rm -rf bin .bench coverage.out coverage.html
