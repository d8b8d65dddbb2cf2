# Makefile — a thin wrapper over CMake. `make demo` and `make test` are the README's two
# commands: each installs what is missing (Debian packages), builds, and runs.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build demo test unit e2e embed bench clean

all: build

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./examples/demo/run-demo.sh $(BUILD)/sopctl

test: build
	cd $(BUILD) && ctest --output-on-failure

unit: build
	cd $(BUILD) && ctest --output-on-failure -L unit

e2e: build
	cd $(BUILD) && ctest --output-on-failure -L e2e

embed: build
	cd $(BUILD) && ctest --output-on-failure -L embed

bench: build
	./bench/bench_snapshot.sh $(BUILD)/sopctl

clean:
	rm -rf $(BUILD)
