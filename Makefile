# Orrery's entry points. `make run` and `make test` work on a fresh Debian 12 machine: each installs
# what is missing (scripts/install-deps.sh), configures and builds the release preset, then runs.
.PHONY: all deps build run test test-xl bench validate check-asan fuzz docs clean

PRESET ?= release
BUILD := build/$(PRESET)
ORRERY := $(BUILD)/orrery
RUN_ARGS ?=

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake --preset $(PRESET) > /dev/null
	@cmake --build --preset $(PRESET)

# The default scenario (configs/scenarios/default.yaml: ResNet-50 training step on 4 x A100);
# extra arguments through RUN_ARGS, e.g. RUN_ARGS='--set hardware=H100'.
run: build
	@$(ORRERY) run configs/scenarios/default.yaml $(RUN_ARGS)

test: build
	@ctest --preset $(PRESET)

# The tests too long for `make test` (ctest label "xl": the 32,768-device scenario on one process
# and on two, about 6 min on 2 cores). .ci/run runs them after `make test`.
test-xl:
	@$(MAKE) --no-print-directory build PRESET=release
	@ctest --preset release-xl

bench: build
	@bench/run_benchmarks.sh $(BUILD)

validate: build
	@tools/validate.sh $(BUILD)

# AddressSanitizer + UBSan build of everything, running the test suite (label-filtered as in
# CMakePresets.json).
check-asan: deps
	@cmake --preset asan-ubsan > /dev/null
	@cmake --build --preset asan-ubsan
	@ctest --preset asan-ubsan

# libFuzzer targets (clang), each run for a bounded time (make fuzz FUZZ_SECONDS=N, default 60).
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/install-deps.sh fuzz
	@cmake --preset fuzz -DFUZZ_SECONDS=$(FUZZ_SECONDS) > /dev/null
	@cmake --build --preset fuzz --target fuzzers
	@ctest --preset fuzz

# Regenerates docs/config.md and the preset reference in docs/compute.md from the schemas.
docs: build
	@ORRERY_UPDATE_DOCS=1 $(BUILD)/tests/config_tests --gtest_filter='ConfigReference.*' > /dev/null
	@ORRERY_UPDATE_DOCS=1 $(BUILD)/tests/compute_tests --gtest_filter='ComputeReference.*' > /dev/null
	@echo "docs/config.md and docs/compute.md regenerated"

clean:
	rm -rf build
