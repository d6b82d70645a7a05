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

# build.ninja, not CMakeCache.txt: a configure that failed leaves the cache
# behind but no build.ninja, and must run again.
$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
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
# auto's local search: the time of one evaluation, and what the default
# budget buys (a minute; see bench/README.md). Results in
# bench/results/auto_search.csv.
.PHONY: bench-auto-search
bench-auto-search: build
	/usr/bin/python3 bench/auto_search.py --hetsched $(BUILD_DIR)/hetsched

# auto on real cores (cpu:0,cpu:1 plus their union) against the best single
# device over 13 torchvision models, interleaved rounds (20-30 minutes; see
# bench/README.md). Results in bench/results/auto_vs_single.csv.
.PHONY: bench-auto
bench-auto: build
	/usr/bin/python3 bench/auto_vs_single.py --hetsched $(BUILD_DIR)/hetsched \
	  --torchvision resnet18,resnet50,googlenet,inception_v3,squeezenet1_0,mobilenet_v2,densenet121,mobilenet_v3_small,shufflenet_v2_x1_0,mnasnet1_0,efficientnet_b0,regnet_x_400mf,alexnet --models ""

# Throughput mode (--mode throughput on cpu:0,cpu:1) against one request at a
# time on both cores, over the zoo CNNs, a BERT encoder and torchvision
# exports, interleaved rounds (about 15 minutes; see bench/README.md).
# Results in bench/results/throughput.csv.
.PHONY: bench-throughput
bench-throughput: build
	/usr/bin/python3 bench/throughput.py --hetsched $(BUILD_DIR)/hetsched \
	  --torchvision densenet121,shufflenet_v2_x1_0,efficientnet_b0,mobilenet_v3_small,regnet_x_400mf

# `hetsched serve` under 8 HTTP clients against `run --mode throughput` on
# the same devices, every answer checked (a few minutes; see
# bench/README.md). Results in bench/results/serve.csv.
.PHONY: bench-serve
bench-serve: build
	/usr/bin/python3 bench/serve.py --hetsched $(BUILD_DIR)/hetsched --python $(BUILD_DIR)/python

# `hetsched serve --max-batch 8` against the same server without batching,
# 8 HTTP clients, every answer checked (a few minutes; see bench/README.md).
# Results in bench/results/serve_batching.csv.
.PHONY: bench-serve-batching
bench-serve-batching: build
	/usr/bin/python3 bench/serve_batching.py --hetsched $(BUILD_DIR)/hetsched --python $(BUILD_DIR)/python

# Free dims: one session running resnet18 and a transformer encoder at three
# input shapes each against sessions made for each shape, on one core,
# interleaved rounds (a few minutes; see bench/README.md). Results in
# bench/results/free_dims.csv.
.PHONY: bench-free-dims
bench-free-dims: build
	/usr/bin/python3 bench/free_dims.py --python $(BUILD_DIR)/python

# hetsched.dask on a LocalCluster: rows/s with 1 and 2 one-core workers,
# interleaved rounds (a few minutes; see bench/README.md). Results in
# bench/results/dask.csv.
.PHONY: bench-dask
bench-dask: build
	/usr/bin/python3 bench/dask_rows.py --python $(BUILD_DIR)/python

# LSTM and GRU exports on one core: hetsched (oneDNN's recurrent primitives)
# against PyTorch eager and hetsched's reference kernels, interleaved rounds
# (about 2 minutes; see bench/README.md). Results in
# bench/results/rnn_vs_pytorch.csv.
.PHONY: bench-rnn
bench-rnn: build
	/usr/bin/python3 bench/rnn_vs_pytorch.py --python $(BUILD_DIR)/python

# ONNX Runtime 1.30 (the CPU library inside the npm package onnxruntime-node)
# into bench/peers: the peer of bench-ort. --ignore-scripts: the package's
# install script only downloads GPU binaries.
.PHONY: bench-peers
bench-peers:
	@command -v npm >/dev/null || { echo "bench-peers needs node and npm (apt-get install nodejs npm)"; exit 1; }
	cd bench/peers && npm ci --ignore-scripts --no-audit --no-fund

# hetsched against ONNX Runtime on the same .onnx files: torchvision models in
# float32, their int8 twins from `hetsched quantize`, BERT in float32 and
# dynamic int8, at 1 and 2 threads, interleaved rounds (about 20 minutes; see
# bench/README.md). Results in bench/results/cpu_vs_ort.csv.
.PHONY: bench-ort
bench-ort: build bench-peers
	/usr/bin/python3 bench/cpu_vs_ort.py --hetsched $(BUILD_DIR)/hetsched --python $(BUILD_DIR)/python

# float16 and int8 twins of torchvision models against their float32 originals (minutes).
.PHONY: bench-precision
bench-precision: build
	/usr/bin/python3 bench/precision.py --python $(BUILD_DIR)/python --hetsched $(BUILD_DIR)/hetsched

# Every scheduler's plan predicted and measured as compare shows them, on
# googlenet, inception_v3 and mobilenet_v2 (minutes; see bench/README.md).
.PHONY: bench-compare-fidelity
bench-compare-fidelity: build
	/usr/bin/python3 bench/compare_fidelity.py --hetsched $(BUILD_DIR)/hetsched

.PHONY: bench-cuda
bench-cuda: build
	/usr/bin/python3 bench/cuda.py --hetsched $(BUILD_DIR)/hetsched

# libFuzzer targets for every loader (fuzz/README.md), each run for
# FUZZ_SECONDS (default 60) in build-fuzz/; needs clang. Not part of `make test`.
.PHONY: fuzz
fuzz: deps
	FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) JOBS=$(JOBS) ./fuzz/run.sh

# ---------------------------------------------------------------- reliability
# docs/reliability.md.
#   make check-sanitizers  ASan+UBSan build (build-asan/): the unit tests and
#                          the ONNX node conformance; TSan build (build-tsan/):
#                          the executor, device, concurrency, session and
#                          profiler tests. Two more full builds: slow.
#   make soak              a multi-device plan SOAK_RUNS times (10,000).
SANITIZE_CMAKE_FLAGS = -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETSCHED_BUILD_PYTHON=OFF $(CMAKE_FLAGS)
# Not under ASan: the PyTorch comparison and the report rendering spend their
# time in uninstrumented Python and Chromium, and the install test links a
# plain example program against the instrumented library.
ASAN_CTEST_EXCLUDE = torchvision_vs_pytorch|install_and_use_from_cpp|html_report_render
# Left out: AutoSession.* and ExecutorTest.WideAndNarrow*, which spend their
# time in TSan's handling of the suppressed reports from oneDNN's OpenMP
# regions (neither had finished after 10 and 20 minutes on 2 cores;
# docs/reliability.md).
TSAN_TESTS = ExecutorTest.*:FaultInjection.*:CpuDeviceTest.*:CpuConcurrency.*:ProfileDbTest.TwoThreads*:ProfileDbTest.Calibration*:ProfileDbTest.Profiler*:ResourceLimits.*:-ExecutorTest.WideAndNarrow*

.PHONY: check-sanitizers check-asan check-tsan soak

check-sanitizers: check-asan check-tsan

check-asan: deps
	cmake -S . -B build-asan $(SANITIZE_CMAKE_FLAGS) -DHETSCHED_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -E '$(ASAN_CTEST_EXCLUDE)'

check-tsan: deps
	cmake -S . -B build-tsan $(SANITIZE_CMAKE_FLAGS) -DHETSCHED_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target hetsched_unit_tests
	./build-tsan/tests/hetsched_unit_tests --gtest_filter='$(TSAN_TESTS)'

soak: build
	./$(BUILD_DIR)/tests/hetsched_soak $(SOAK_MODEL)

clean:
	rm -rf $(BUILD_DIR)
