#!/bin/bash
# The GPU unit tests, each suite in a process of its own, so that a crash or
# a sticky CUDA error (one that ends the process's CUDA context) costs one
# suite instead of every test after it; then every test of a suite that did
# not pass runs again alone, which says whether it fails by itself or only
# after another test broke the context:
#
#   scripts/gpu-unit-tests.sh [BUILD_DIR] [FILTER]
#
# FILTER is a googletest filter of positive patterns (default: every GPU
# suite, the runtime layer first); suites run in the order of its patterns,
# each with the tests of it that the filter names.
#
# Each suite's process gets at most SUITE_LIMIT_S seconds (default 240),
# each rerun TEST_LIMIT_S (default 60), and all of them together BUDGET_S
# (default 290): once it is spent, the suites left are listed as not run, so
# that a caller with a hard limit still gets the summary. The last lines
# say, per suite, how many tests passed, were skipped and failed, and list
# the tests that fail alone. Exit code: 0 when every test passed or was
# skipped, 1 otherwise (2 for usage).
#
# RUN_UNDER, when set, is a command each test process runs under, e.g.
# RUN_UNDER='compute-sanitizer --tool memcheck --error-exitcode 1' to check
# the kernels' memory accesses (many times slower: give it one suite).
set -uo pipefail

build=${1:-build}
filter=${2:-'CudaRuntime*:CudaGraph*:CudaBackend*:CudaKernels*:CudaModels*:GpuMemory*:CudaDeviceSpec*:CudaPlatform*:CudaDeviceCli*:CudaExecutor*'}
suite_limit=${SUITE_LIMIT_S:-240}
test_limit=${TEST_LIMIT_S:-60}
budget=${BUDGET_S:-290}
tests="$build/tests/hetsched_unit_tests"
[[ -x $tests ]] || { echo "$0: $tests: not built (ninja -C $build hetsched_unit_tests)" >&2; exit 2; }

# Suites in the order of the filter's patterns, each listed once. A binary
# that cannot list its tests (a library missing) is a failure, not 0 tests.
if ! list=$("$tests" --gtest_filter="$filter" --gtest_list_tests 2>&1); then
  echo "$0: $tests cannot list its tests:"
  echo "$list"
  exit 1
fi
mapfile -t listing < <(grep -v '^Running main' <<<"$list")
declare -A suite_tests
suites=()
suite=""
for line in "${listing[@]}"; do
  if [[ $line != " "* ]]; then
    suite=${line%%.*}
    suites+=("$suite")
  else
    read -r name _ <<<"$line"
    suite_tests[$suite]+="$suite.$name "
  fi
done
ordered=()
IFS=: read -ra patterns <<<"$filter"
for pattern in "${patterns[@]}"; do
  for s in "${suites[@]}"; do
    [[ " ${ordered[*]} " == *" $s "* ]] && continue
    [[ $s == ${pattern%%.*} ]] && ordered+=("$s")
  done
done
if ((${#ordered[@]} == 0)); then
  echo "$0: no test matches $filter"
  exit 1
fi

# run LIMIT FILTER: the tests' output on stdout, "exit N" on the last line;
# LIMIT is cut to what is left of the budget (with 10 s for the summary).
run() {
  local limit=$1 left=$((budget - SECONDS - 10))
  ((limit > left)) && limit=$left
  if ((limit < 5)); then
    echo "not run: the budget of $budget s is spent"
    echo "exit 124"
    return
  fi
  # shellcheck disable=SC2086 # RUN_UNDER is a command with its arguments
  timeout --kill-after=5 "$limit" ${RUN_UNDER:-} "$tests" --gtest_filter="$2" 2>&1
  local rc=$?
  ((rc == 124 || rc == 137)) && echo "stopped at its limit of $limit s"
  echo "exit $rc"
}

# outcome TEST OUTPUT: passed, skipped or failed (not run counts as failed).
outcome() {
  if grep -qF "[       OK ] $1 " <<<"$2"; then
    echo passed
  elif grep -qF "[  SKIPPED ] $1 " <<<"$2"; then
    echo skipped
  else
    echo failed
  fi
}

summary=()
fail_alone=()
failed_any=0
for s in "${ordered[@]}"; do
  echo "=== $s"
  suite_filter=${suite_tests[$s]% }
  output=$(run "$suite_limit" "${suite_filter// /:}")
  echo "$output"
  if [[ $output == "not run:"* ]]; then
    summary+=("$(printf '%-16s not run: the budget of %d s was spent' "$s" "$budget")")
    failed_any=1
    continue
  fi
  declare -A count=([passed]=0 [skipped]=0 [failed]=0)
  left=()
  for t in ${suite_tests[$s]}; do
    result=$(outcome "$t" "$output")
    count[$result]=$((count[$result] + 1))
    [[ $result == failed ]] && left+=("$t")
  done
  alone=0
  for t in "${left[@]}"; do
    echo "=== $t alone"
    output=$(run "$test_limit" "$t")
    echo "$output"
    if [[ $(outcome "$t" "$output") == failed ]]; then
      alone=$((alone + 1))
      fail_alone+=("$t")
    else
      echo "--- $t passes alone: an earlier test of $s broke it"
    fi
  done
  ((${#left[@]})) && failed_any=1
  summary+=("$(printf '%-16s %2d passed, %2d skipped, %2d failed in the suite (%d of them alone too)' \
    "$s" "${count[passed]}" "${count[skipped]}" "${count[failed]}" "$alone")")
done

echo "=== summary"
printf '%s\n' "${summary[@]}"
((${#fail_alone[@]})) && echo "fail alone: ${fail_alone[*]}"
exit "$failed_any"
