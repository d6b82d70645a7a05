#!/bin/bash
# The checks of docs/cuda.md "Verifying on a GPU machine", in order, each
# step's output in its own log, so that one command on a GPU machine says
# what works:
#
#   scripts/verify-gpu.sh [BUILD_DIR] [OUT_DIR]      (defaults: build, gpu-check)
#
# Steps: the GPU as hetsched sees it; the GPU unit tests (runtime, kernels
# against the reference kernels, CUDA Graphs, the executor's GPU lanes,
# step timing, the profiler; scripts/gpu-unit-tests.sh: a process per suite,
# and what fails there again alone); googlenet on cuda:0 step by step and as a
# CUDA Graph; torchvision exports against PyTorch on cuda:0; the GPU
# benchmark, quick, on googlenet and bert (bench/cuda.py; the full one is
# `make bench-cuda`); the demo (the GPU and every core but the first). A failing step does not stop the next; the exit code
# is the number of steps that failed.
#
# PYTHON names the Python with numpy, onnx and a CUDA build of PyTorch
# (default: python3). A build packed by scripts/pack-prebuilt.sh finds its
# libraries in BUILD_DIR/prebuilt-lib and HETSCHED_CUDA_LIBS.
#
# Each step has a time limit (a hang costs that step, not the rest), and
# the whole script a budget, VERIFY_BUDGET_S seconds (default 540): a step
# gets at most what is left of it, and once it is spent the remaining steps
# are skipped and counted as failed, so that a caller with a hard limit
# (a remote command of 600 s) still gets every log back. A step's command
# sees BUDGET_S, its limit less 10 s (gpu-unit-tests.sh keeps to it).
set -uo pipefail

build=${1:-build}
out=${2:-gpu-check}
python=${PYTHON:-python3}
mkdir -p "$out"
if [[ -d $build/prebuilt-lib ]]; then
  export LD_LIBRARY_PATH="$build/prebuilt-lib${HETSCHED_CUDA_LIBS:+:$HETSCHED_CUDA_LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

budget=${VERIFY_BUDGET_S:-540}
failed=0
# step NAME LIMIT_S COMMAND...
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - SECONDS))
  if ((left < 10)); then
    echo "== $name: skipped, the budget of $budget s is spent"
    failed=$((failed + 1))
    return
  fi
  ((limit > left)) && limit=$left
  echo "== $name (at most $limit s): $*"
  local start=$SECONDS
  BUDGET_S=$((limit - 10)) timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  ((rc == 124 || rc == 137)) && echo "   stopped at its limit of $limit s" | tee -a "$out/$name.log"
  echo "   exit $rc after $((SECONDS - start)) s; the log's end ($out/$name.log):"
  tail -n 8 "$out/$name.log" | sed 's/^/   | /'
  [[ $rc -eq 0 ]] || failed=$((failed + 1))
}

step devices 60 "$build/hetsched" devices
step gpu-unit-tests 300 "$(dirname "$0")/gpu-unit-tests.sh" "$build"
step googlenet-step-by-step 90 "$build/hetsched" run zoo:googlenet --devices 'cuda:0*1' --cuda-graph off -n 5
step googlenet-cuda-graph 90 "$build/hetsched" run zoo:googlenet --devices cuda:0 --cuda-graph on -n 5
step torchvision-on-cuda 180 "$python" tests/python/torch_compare.py --hetsched "$build/hetsched" --devices cuda:0 \
  resnet18 googlenet mobilenet_v3_small shufflenet_v2_x1_0 transformer_encoder
step bench-quick 300 "$python" bench/cuda.py --hetsched "$build/hetsched" --quick --models googlenet,bert \
  --out "$out/cuda.csv"
step demo 150 "$build/hetsched" demo zoo:googlenet -n 3 --report "$out/report"
echo "$failed step(s) failed"
exit "$failed"
