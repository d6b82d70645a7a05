#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets with clang in build-fuzz/ and runs
# each for a bounded time; fails when any target finds a crash, a sanitizer
# report, a leak, a hang or an allocation over the limit, and leaves the
# input that did it in build-fuzz/crashes/<target>/ (see fuzz/README.md).
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   the targets to run (default: all, see below)
#   FUZZ_RSS_MB    memory limit per target, also the largest single
#                  allocation allowed (default 2048)
#   FUZZ_TIMEOUT   seconds one input may take before it counts as a hang (default 10)
#   FUZZ_BUILD_DIR build folder (default build-fuzz)
#   FUZZ_CXX       the clang++ to build with (default clang++)
#   JOBS           build parallelism (default: nproc)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"onnx_model plan_json task_graph platform_file npy tensor_pb"}
RSS_MB=${FUZZ_RSS_MB:-2048}
TIMEOUT=${FUZZ_TIMEOUT:-10}
CXX=${FUZZ_CXX:-clang++}
JOBS=${JOBS:-$(nproc)}
INSTALL_HINT="install clang with libFuzzer (Debian: sudo apt-get install clang libclang-rt-14-dev libomp-dev)"

# The largest input each target is given: big enough for its seeds, small
# enough to keep every run fast.
max_len() {
  case "$1" in
    onnx_model | plan_json) echo 16384 ;;
    task_graph | platform_file) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

if ! command -v "$CXX" > /dev/null 2>&1; then
  echo "make fuzz: $CXX not found: $INSTALL_HINT" >&2
  exit 1
fi
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe_dir/probe.cpp"
if ! "$CXX" -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cpp" -o "$probe_dir/probe" > "$probe_dir/log" 2>&1; then
  echo "make fuzz: $CXX cannot build a libFuzzer target: $INSTALL_HINT" >&2
  sed 's/^/  /' "$probe_dir/log" >&2
  exit 1
fi

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  launcher=()
  if command -v ccache > /dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX" \
    "${launcher[@]}" -DHETSCHED_FUZZ=ON -DHETSCHED_BUILD_TESTS=OFF -DHETSCHED_BUILD_PYTHON=OFF
fi
cmake --build "$BUILD" --target fuzz_targets -j "$JOBS"

failed=()
summary=()
for target in $TARGETS; do
  binary="$BUILD/fuzz/fuzz_$target"
  seeds="$ROOT/fuzz/corpus/$target"
  work="$BUILD/corpus/$target"       # what the fuzzer adds; the seeds stay as they are
  artifacts="$BUILD/crashes/$target"
  log="$BUILD/logs/$target.log"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  if [ ! -x "$binary" ]; then
    echo "make fuzz: unknown target '$target' (no $binary)" >&2
    exit 1
  fi
  # First the inputs that once found bugs, under the sanitizers and limits
  # (the normal build's regression test cannot see, e.g., a huge allocation).
  regressions=("$ROOT/tests/data/fuzz_regressions/$target"/*)
  if [ -e "${regressions[0]}" ]; then
    if ! "$binary" -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$RSS_MB" -timeout="$TIMEOUT" \
        "${regressions[@]}" > "$BUILD/logs/$target.regressions.log" 2>&1; then
      echo "-- fuzz_$target: a regression input fails again (log: $BUILD/logs/$target.regressions.log)"
      tail -n 20 "$BUILD/logs/$target.regressions.log" | sed 's/^/   /'
      failed+=("$target")
      summary+=("$(printf '%-14s regression inputs: FAILED' "$target")")
      continue
    fi
  fi
  dict=()
  if [ -f "$ROOT/fuzz/dict/$target.dict" ]; then dict=(-dict="$ROOT/fuzz/dict/$target.dict"); fi
  echo "== fuzz_$target: ${SECONDS_PER_TARGET}s (log: $log)"
  set +e
  "$binary" "$work" "$seeds" "${dict[@]}" -max_total_time="$SECONDS_PER_TARGET" -max_len="$(max_len "$target")" \
    -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$RSS_MB" -timeout="$TIMEOUT" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" > "$log" 2>&1
  rc=$?
  set -e
  # The last status line: "#N DONE cov: C ft: F corp: U/S ..." (or the last
  # one before a crash).
  status=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo "${status%% *}")
  cov=$(grep -oE 'cov: [0-9]+' <<< "$status" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<< "$status" | grep -oE '[0-9]+' || echo "?")
  corp=$(grep -oE 'corp: [0-9]+' <<< "$status" | grep -oE '[0-9]+' || echo "?")
  if [ "$rc" -eq 0 ]; then
    result="ok"
  else
    result="FAILED (exit $rc)"
    failed+=("$target")
    echo "-- fuzz_$target failed; the end of its log:"
    tail -n 40 "$log" | sed 's/^/   /'
    ls "$artifacts"/* 2> /dev/null | sed 's/^/   input kept: /' || true
  fi
  summary+=("$(printf '%-14s %6ss %10s execs  cov %6s  ft %7s  corpus %5s  %s' "$target" "$SECONDS_PER_TARGET" \
    "${runs#\#}" "$cov" "$ft" "$corp" "$result")")
done

echo
echo "== make fuzz: ${SECONDS_PER_TARGET}s per target"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "make fuzz: ${failed[*]} failed; reproduce with build-fuzz/fuzz/fuzz_TARGET FILE, add the input to" \
    "tests/data/fuzz_regressions/TARGET/ (see fuzz/README.md)" >&2
  exit 1
fi
