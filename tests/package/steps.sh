# Helpers the packaging tests share (sourced; the caller sets $tmp first).
step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# Runs a command quietly; on failure prints its output and fails the step.
quiet() {
  local what=$1
  shift
  if ! "$@" > "$tmp/step.log" 2>&1; then
    cat "$tmp/step.log"
    fail "$what"
  fi
}
