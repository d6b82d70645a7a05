#!/bin/sh
# A packager's first command: plain `cmake -S SOURCE -B BUILD` with CMake's
# default generator (not the Makefile's Ninja) must configure, with the CUDA
# toolkit installed or not.
set -eu
source=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if ! env -u CMAKE_GENERATOR cmake -S "$source" -B "$dir/build" > "$dir/log" 2>&1; then
  cat "$dir/log"
  echo "cmake -S . -B build (default generator) failed to configure" >&2
  exit 1
fi
grep -E "^CMAKE_GENERATOR:" "$dir/build/CMakeCache.txt"
echo "configured with the default generator"
