# Makefile — a thin wrapper over CMake. `make demo` and `make test` are the README's two
# commands: each installs what is missing (Debian packages, `make deps`), builds, and runs.
# `make test-all` (what CI runs) is `make test` plus the slow tiers: the robustness matrix,
# fuzzing, valgrind, ThreadSanitizer, the ASan/UBSan build and the performance gate.
# `make build` and the other targets only build and run: they never call apt.
BUILD ?= build
JOBS ?= $(shell nproc)
# -Werror: off by default (a released tree builds with any compiler); CI turns it on.
WERROR ?= OFF

.PHONY: all deps build demo test test-all test-newest unit e2e embed bench clean sanitize perf-gate

all: build

deps:
	./scripts/install-deps.sh

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOP_WERROR=$(WERROR)
	cmake --build $(BUILD) -j $(JOBS)

demo: deps
	$(MAKE) build
	./examples/demo/run-demo.sh $(BUILD)/sopctl

# Unit tests and the readers that judge no timing run side by side, one more at a time than
# there are CPUs (many of them wait on their targets more than they compute); every test whose
# windows measure CPU or waits is RUN_SERIAL, so a scenario's verdict never shares the CPUs with
# another test (tests/CMakeLists.txt).
test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $$(( $(JOBS) + 1 )) -LE full || { ../scripts/ctest-failures.sh; exit 1; }

test-all: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) || { ../scripts/ctest-failures.sh; exit 1; }
	$(MAKE) sanitize
	$(MAKE) perf-gate

# The newest CPython releases (3.13-3.15 from Debian sid, in a root built once and cached under
# /var/cache/sop; scripts/sid-root.sh): layouts against their headers, the peer and task
# conformance, the heap census, chroot / namespace / podman targets, a scenario subset on 3.14.
# Also part of test-all.
test-newest: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -L newest

unit: build
	cd $(BUILD) && ctest --output-on-failure -L unit

e2e: build
	cd $(BUILD) && ctest --output-on-failure -L e2e

embed: build
	cd $(BUILD) && ctest --output-on-failure -L embed

bench: build
	./bench/bench_snapshot.sh $(BUILD)/sopctl

# The performance gate (docs/performance.md): this build against a baseline build of
# PERF_BASELINE (default auto: the newest tag, else the merge-base with main, else HEAD~1),
# side by side in one run; fails on a measure slower than 1.5x the baseline. Root (ptrace).
PERF_BASELINE ?= auto
perf-gate: build
	python3 bench/perf_gate.py --quick --build $(BUILD) --baseline $(PERF_BASELINE)

# The sanitizer tier CI runs: clang, ASan+UBSan, -Werror, the unit label (unit + replay tests),
# in a tree of its own (scripts/sanitize.sh).
sanitize: deps
	CC=clang SOP_WERROR=$(WERROR) ./scripts/sanitize.sh $(BUILD)-asan unit

clean:
	rm -rf $(BUILD) $(BUILD)-asan
