#!/bin/bash
# docs/ops.md must be what `hetsched ops --markdown` prints now: fails, with
# the difference and the command that regenerates the page, when it is not.
#
#   ops_md_test.sh HETSCHED_CLI SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 HETSCHED_CLI SOURCE_DIR" >&2
  exit 2
fi
cli=$1 source=$2
generated=$(mktemp "${TMPDIR:-/tmp}/hetsched-ops.XXXXXX.md")
trap 'rm -f "$generated"' EXIT

"$cli" ops --markdown --platforms "$source/platforms" > "$generated"
if ! diff -u "$source/docs/ops.md" "$generated"; then
  echo "docs/ops.md is out of date; regenerate it with: build/hetsched ops --markdown > docs/ops.md" >&2
  exit 1
fi
echo "docs/ops.md is up to date"
