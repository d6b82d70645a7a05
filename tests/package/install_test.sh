#!/bin/bash
# Uses a build as a C++ user would: `cmake --install` into a temporary prefix,
# examples/cpp configured and built against that prefix alone
# (find_package(hetsched) + hetsched::hetsched), the example run, and the
# installed CLI run (its RPATH, the installed platform files).
#
#   install_test.sh BUILD_DIR SOURCE_DIR VERSION CMAKE [EXTRA_CMAKE_ARGS...]
#
# EXTRA_CMAKE_ARGS go to the example's configure step (compiler, launcher).
# Fails on the first step that fails, saying which.
set -euo pipefail

if [[ $# -lt 4 ]]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR VERSION CMAKE [EXTRA_CMAKE_ARGS...]" >&2
  exit 2
fi
build=$1 source=$2 version=$3 cmake=$4
shift 4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hetsched-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
# Nothing may come from the build tree or the caller's library path, and
# profiles go to a fresh database.
unset LD_LIBRARY_PATH
export XDG_CACHE_HOME=$tmp/cache

source "$(dirname "$0")/steps.sh"
# Fails unless `text` matches the extended regex `pattern`.
expect() {
  local what=$1 pattern=$2 text=$3
  grep -Eq -- "$pattern" <<< "$text" || { echo "$text"; fail "$what: expected a line matching /$pattern/"; }
}
# Fails unless the ELF file loads libhetsched from the prefix.
loads_installed_library() {
  local exe=$1 resolved
  resolved=$(ldd "$exe" | grep 'libhetsched\.so' || true)
  [[ $resolved == *"=> $prefix/"* ]] || fail "$exe: libhetsched resolves to '$resolved', not into $prefix"
}

step "cmake --install $build --prefix $prefix"
quiet "cmake --install" "$cmake" --install "$build" --prefix "$prefix"
for f in bin/hetsched include/hetsched/session.h include/hetsched/error.h share/hetsched/platforms/phone-soc.json; do
  [[ -f $prefix/$f ]] || fail "the install lacks $f"
done
library=$(find "$prefix" -name "libhetsched.so.$version" -type f)
[[ -n $library ]] || fail "the install lacks libhetsched.so.$version"
config=$(find "$prefix" -name hetschedConfig.cmake)
[[ -n $config ]] || fail "the install lacks hetschedConfig.cmake"
soname=$(readelf -d "$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == libhetsched.so.* && -e $(dirname "$library")/$soname ]] ||
  fail "$library: SONAME '$soname' missing or not installed beside it"
# The package config requires Threads only, so the public headers may include
# the standard library and each other, nothing else.
foreign=$(grep -h '^#include' "$prefix"/include/hetsched/*.h | grep -Ev '^#include (<[a-z_]+>|"hetsched/[a-z_]+\.h")$' || true)
[[ -z $foreign ]] || fail "public headers include more than the standard library: $foreign"

step "examples/cpp against the prefix"
quiet "configure examples/cpp" "$cmake" -S "$source/examples/cpp" -B "$tmp/example" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@"
found=$(sed -n 's/^hetsched_DIR:PATH=//p' "$tmp/example/CMakeCache.txt")
[[ $found == "$prefix"/* ]] || fail "find_package(hetsched) found '$found', not the package in $prefix"
quiet "build examples/cpp" "$cmake" --build "$tmp/example"
loads_installed_library "$tmp/example/run_model"

step "examples/cpp: run_model zoo:squeezenet1_0"
out=$("$tmp/example/run_model" zoo:squeezenet1_0 --devices cpu -n 2) || { echo "$out"; fail "run_model"; }
echo "$out"
expect "run_model" '^output [^ ]+: float32 1x1000$' "$out"
expect "run_model" '^latency: median [0-9.]+ ms' "$out"
# Two lanes: the CPU and an NPU of an installed platform file, emulated.
out=$("$tmp/example/run_model" zoo:squeezenet1_0 --platform phone-soc --devices cpu,emu:npu \
  --scheduler round-robin -n 1) || { echo "$out"; fail "run_model on cpu,emu:npu"; }
echo "$out"
expect "run_model on cpu,emu:npu" '^plan: round-robin on cpu[^ ]*,emu:npu, 2 lanes' "$out"
expect "run_model on cpu,emu:npu" '^output [^ ]+: float32 1x1000$' "$out"
status=0
"$tmp/example/run_model" zoo:squeezenet1_0 --devices nonsense > /dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "run_model --devices nonsense: exit code $status, expected 2 (usage)"

step "the installed CLI"
cli=$prefix/bin/hetsched
loads_installed_library "$cli"
out=$("$cli" --version) || fail "hetsched --version"
[[ $out == "hetsched $version" ]] || fail "hetsched --version printed '$out', expected 'hetsched $version'"
out=$("$cli" zoo) || fail "hetsched zoo"
expect "hetsched zoo" '^zoo:squeezenet1_0 ' "$out"
# `ops --markdown` reads the installed platform files by default: one more
# file there must show up as its own column.
cat > "$prefix/share/hetsched/platforms/install-check.json" <<'JSON'
{"name": "install-check",
 "devices": [{"name": "probe", "kind": "npu", "peak_gflops": 1, "bandwidth_gbps": 1, "ops": ["Relu"]}]}
JSON
out=$("$cli" ops --markdown) || fail "hetsched ops --markdown"
expect "hetsched ops --markdown" '`install-check\.json` probe' "$out"
expect "hetsched ops --markdown" '^\| Relu \| yes \|' "$out"
echo "PASS"
