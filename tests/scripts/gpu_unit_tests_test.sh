#!/bin/bash
# scripts/gpu-unit-tests.sh against a stand-in for the unit-test binary that
# prints what googletest prints: suite A's process dies after A.first (as a
# sticky CUDA error or a crash would end it), A.second then passes alone and
# A.third fails alone; suite B skips. The script must run every suite, rerun
# the two tests A's process never finished, tell the two apart, and fail.
#
#   gpu_unit_tests_test.sh SOURCE_DIR
set -uo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/tests"
cat >"$work/build/tests/hetsched_unit_tests" <<'STANDIN'
#!/bin/bash
filter=${1#--gtest_filter=}
if [[ ${2:-} == --gtest_list_tests ]]; then
  printf 'Running main() from gtest_main.cc\nB.\n  only\nA.\n  first\n  second  # GetParam() = 1\n  third\n'
  exit 0
fi
case $filter in
  A.first:A.second:A.third) printf '[ RUN      ] A.first\n[       OK ] A.first (1 ms)\n[ RUN      ] A.second\nSegmentation fault\n'; exit 139 ;;
  A.second) printf '[ RUN      ] A.second\n[       OK ] A.second (1 ms)\n' ;;
  A.third) printf '[ RUN      ] A.third\nexpected 1, got 2\n[  FAILED  ] A.third (1 ms)\n'; exit 1 ;;
  B.only) printf '[ RUN      ] B.only\n[  SKIPPED ] B.only (0 ms)\n' ;;
  *) echo "unexpected filter $filter" >&2; exit 3 ;;
esac
STANDIN
chmod +x "$work/build/tests/hetsched_unit_tests"

output=$("$source_dir/scripts/gpu-unit-tests.sh" "$work/build" 'A*:B*')
rc=$?
fail() { echo "FAIL: $1"; echo "--- output:"; echo "$output"; exit 1; }
[[ $rc == 1 ]] || fail "exit code $rc, expected 1"
grep -qx 'A                 1 passed,  0 skipped,  2 failed in the suite (1 of them alone too)' <<<"$output" ||
  fail "suite A's summary line"
grep -qx 'B                 0 passed,  1 skipped,  0 failed in the suite (0 of them alone too)' <<<"$output" ||
  fail "suite B's summary line"
grep -qx 'fail alone: A.third' <<<"$output" || fail "the list of tests that fail alone"
grep -qx -- '--- A.second passes alone: an earlier test of A broke it' <<<"$output" || fail "A.second's rerun"
# The filter's order: A's suite before B's, though the binary lists B first.
[[ $(grep -n '^=== A$' <<<"$output" | cut -d: -f1) -lt $(grep -n '^=== B$' <<<"$output" | cut -d: -f1) ]] ||
  fail "suites out of the filter's order"

# RUN_UNDER wraps every test process.
cat >"$work/under" <<'UNDER'
#!/bin/bash
echo "under: $*" >>"$(dirname "$0")/under.log"
exec "$@"
UNDER
chmod +x "$work/under"
RUN_UNDER="$work/under --flag" "$source_dir/scripts/gpu-unit-tests.sh" "$work/build" 'B*' >/dev/null
grep -qx "under: --flag $work/build/tests/hetsched_unit_tests --gtest_filter=B.only" "$work/under.log" ||
  fail "RUN_UNDER not used: $(cat "$work/under.log" 2>&1)"

# A binary that cannot list its tests, or a filter that matches none, fails.
output=$("$source_dir/scripts/gpu-unit-tests.sh" "$work/build" 'C*')
rc=$?
[[ $rc == 1 ]] || fail "exit code $rc for a filter matching no test, expected 1"
grep -q 'no test matches C\*' <<<"$output" || fail "no word of the filter matching nothing"
mv "$work/build/tests/hetsched_unit_tests" "$work/standin"
printf '#!/bin/sh\necho "error while loading shared libraries: libdnnl.so.2" >&2\nexit 127\n' \
  >"$work/build/tests/hetsched_unit_tests"
chmod +x "$work/build/tests/hetsched_unit_tests"
output=$("$source_dir/scripts/gpu-unit-tests.sh" "$work/build")
rc=$?
[[ $rc == 1 ]] || fail "exit code $rc for a binary that cannot start, expected 1"
grep -q 'libdnnl.so.2' <<<"$output" || fail "the loader's message not shown"
mv "$work/standin" "$work/build/tests/hetsched_unit_tests"

# With its budget spent, the suites left are named as not run, and it fails.
output=$(BUDGET_S=12 "$source_dir/scripts/gpu-unit-tests.sh" "$work/build" 'A*:B*')
rc=$?
[[ $rc == 1 ]] || fail "exit code $rc with the budget spent, expected 1"
grep -q '^B  *not run: the budget of 12 s was spent' <<<"$output" || fail "suite B not named as not run"
echo "gpu-unit-tests.sh: suites isolated, reruns told apart, budget kept"
