#!/bin/bash
# Installs the Python package as a user would, offline: `pip install .` into
# a fresh venv that sees Debian's packages (numpy, dask), then uses it from
# outside the source and build trees: `import hetsched` from the venv, a
# model run, hetsched.dask imported, the `hetsched` command; and `pip wheel .`
# makes a wheel holding the extension, library, CLI and platform files.
#
#   python_package_test.sh SOURCE_DIR BUILD_DIR VERSION
#
# BUILD_DIR is the configured and built CMake folder setup.py builds in and
# installs from (HETSCHED_CMAKE_BUILD_DIR): ninja finds nothing to do, so the
# test takes seconds. Without it, `pip install .` configures and builds a
# Release build of its own (docs/python.md).
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 SOURCE_DIR BUILD_DIR VERSION" >&2
  exit 2
fi
source=$1 build=$2 version=$3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hetsched-python-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH PYTHONPATH
export XDG_CACHE_HOME=$tmp/cache HETSCHED_CMAKE_BUILD_DIR=$build PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1

source "$(dirname "$0")/steps.sh"

step "python3 -m venv --system-site-packages; pip install $source (no index)"
quiet "venv" /usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
quiet "pip install" "$tmp/venv/bin/pip" install "$source"
site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
package=$site/hetsched
for f in __init__.py dask.py _cli.py bin/hetsched share/hetsched/platforms/phone-soc.json; do
  [[ -f $package/$f ]] || fail "the installed package lacks hetsched/$f"
done
[[ -z $(find "$package" -type l) ]] || fail "the installed package holds symbolic links: $(find "$package" -type l)"
for elf in "$package"/_hetsched*.so "$package/bin/hetsched"; do
  resolved=$(ldd "$elf" | grep 'libhetsched\.so' || true)
  [[ $resolved == *"=> $package/"* ]] || fail "$elf: libhetsched resolves to '$resolved', not into the package"
done

step "the package from outside the trees"
cd "$tmp"
out=$("$tmp/venv/bin/python" - <<'PY'
import numpy as np
import hetsched
import hetsched.dask
print("module", hetsched.__file__)
print("version", hetsched.__version__)
s = hetsched.Session("zoo:squeezenet1_0", devices="cpu")
y = s.run(s.random_inputs())["output"]
print("output", y.dtype, "x".join(map(str, y.shape)), bool(np.isfinite(y).all()))
PY
) || { echo "$out"; fail "import and run"; }
echo "$out"
[[ $out == *"module $package/__init__.py"* ]] || fail "hetsched imported from elsewhere than $package"
[[ $out == *"version $version"* ]] || fail "hetsched.__version__ is not $version"
[[ $out == *"output float32 1x1000 True"* ]] || fail "the run gave no finite 1x1000 output"
out=$("$tmp/venv/bin/hetsched" --version) || fail "hetsched --version"
[[ $out == "hetsched $version" ]] || fail "hetsched --version printed '$out'"
# The CLI reads the package's platform files (relative to itself).
out=$("$tmp/venv/bin/hetsched" ops --markdown) || fail "hetsched ops --markdown"
grep -q '`phone-soc.json`' <<< "$out" || fail "hetsched ops --markdown shows no phone-soc.json column"
status=0
"$tmp/venv/bin/hetsched" run zoo:squeezenet1_0 --devices nonsense > /dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "hetsched run --devices nonsense: exit code $status, expected 2 (usage)"

step "pip wheel $source"
quiet "pip wheel" "$tmp/venv/bin/pip" wheel --no-deps -w "$tmp/wheels" "$source"
wheel=$(ls "$tmp"/wheels/hetsched-"$version"-cp3*-linux_x86_64.whl 2>/dev/null || true)
[[ -n $wheel ]] || fail "no platform wheel hetsched-$version-cp3*-linux_x86_64.whl in $(ls "$tmp/wheels")"
listing=$("$tmp/venv/bin/python" -m zipfile -l "$wheel")
for f in "hetsched/_hetsched" "hetsched/lib/libhetsched.so" "hetsched/bin/hetsched" "hetsched/dask.py" \
         "hetsched/share/hetsched/platforms/phone-soc.json" "entry_points.txt"; do
  grep -q "$f" <<< "$listing" || fail "the wheel lacks $f"
done
echo "PASS"
