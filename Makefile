# The two commands of the README's quick start, plus helpers.
#   make demo   installs what is missing, builds, runs `hetsched demo`
#   make test   installs what is missing, builds, runs every test
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build demo test bench bench-fidelity bench-schedulers clean

all: build

deps:
	@./scripts/setup-deps.sh

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	./$(BUILD_DIR)/hetsched demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# hetsched against PyTorch on CPU (minutes; see bench/README.md).
bench: build
	/usr/bin/python3 bench/cpu_vs_pytorch.py --hetsched $(BUILD_DIR)/hetsched

# The simulator's predictions against measured runs of the same plans on
# cpu:0,cpu:1 (minutes; see bench/README.md).
bench-fidelity: build
	/usr/bin/python3 bench/sim_fidelity.py --hetsched $(BUILD_DIR)/hetsched

# Every scheduler measured on cpu:0,cpu:1 and simulated on the platform files,
# with the seed papers' published figures beside ours (minutes; see
# bench/README.md). Results in bench/results/schedulers.{csv,md}.
bench-schedulers: build
	/usr/bin/python3 bench/schedulers.py --hetsched $(BUILD_DIR)/hetsched

# hetsched's CUDA backend against PyTorch on the GPU: on a machine with an
# NVIDIA GPU (elsewhere it says why and exits 0). See docs/cuda.md and
# bench/README.md. Results in bench/results/cuda.{csv,md}.
.PHONY: bench-cuda
bench-cuda: build
	/usr/bin/python3 bench/cuda.py --hetsched $(BUILD_DIR)/hetsched

# libFuzzer targets for every loader (fuzz/README.md), each run for
# FUZZ_SECONDS (default 60) in build-fuzz/; needs clang. Not part of `make test`.
.PHONY: fuzz
fuzz: deps
	FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) JOBS=$(JOBS) ./fuzz/run.sh

clean:
	rm -rf $(BUILD_DIR)
