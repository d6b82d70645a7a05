#!/bin/bash
# Packs a build for a machine that has a GPU but not the packages the build
# was made with: a GPU server with the NVIDIA driver, CUDA 13 and cuDNN 9, on
# which `scripts/setup-deps.sh` cannot run (no network, another distribution).
#
#   scripts/pack-prebuilt.sh [BUILD_DIR] OUT.tar.xz      (default BUILD_DIR: build)
#
# The archive holds, under BUILD_DIR's name:
#   hetsched, libhetsched.so*, tests/hetsched_unit_tests  the build's binaries;
#                          hetsched is a small wrapper that runs hetsched.bin
#                          with the libraries below, so that other programs
#                          (bench/cuda.py's PyTorch) keep their own
#   prebuilt-lib/          every shared library they load that is not the C
#                          library, libstdc++ / libgcc (a newer system's serve),
#                          the NVIDIA driver or the CUDA toolkit and cuDNN
#                          (too large to carry; the target machine has them)
#
# On the other machine, in a checkout of the same commit at the same path as
# here (the tests name the build and source folders by absolute path):
#   tar -xJf OUT.tar.xz
#   export HETSCHED_CUDA_LIBS=<folders holding libcudart.so.13, libcublas.so.13,
#                              libcublasLt.so.13 and libcudnn.so.9, ':'-separated>
#   LD_LIBRARY_PATH=BUILD_DIR/prebuilt-lib:$HETSCHED_CUDA_LIBS BUILD_DIR/tests/hetsched_unit_tests ...
#   BUILD_DIR/hetsched devices
set -euo pipefail

if [[ $# -eq 1 ]]; then
  build=build out=$1
elif [[ $# -eq 2 ]]; then
  build=$1 out=$2
else
  echo "usage: $0 [BUILD_DIR] OUT.tar.xz" >&2
  exit 2
fi
for f in "$build/hetsched" "$build/tests/hetsched_unit_tests"; do
  [[ -x $f ]] || { echo "$0: $f: not built (make build, and ninja -C $build hetsched_unit_tests)" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
name=$(basename "$build")
mkdir -p "$stage/$name/tests" "$stage/$name/prebuilt-lib"
cp -a "$build"/libhetsched.so* "$stage/$name/"
cp "$build/tests/hetsched_unit_tests" "$stage/$name/tests/"
cp "$build/hetsched" "$stage/$name/hetsched.bin"
cat >"$stage/$name/hetsched" <<'EOF'
#!/bin/sh
# hetsched with the libraries packed beside it (scripts/pack-prebuilt.sh).
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here:$here/prebuilt-lib${HETSCHED_CUDA_LIBS:+:$HETSCHED_CUDA_LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  exec "$here/hetsched.bin" "$@"
EOF
chmod +x "$stage/$name/hetsched"

# What the target machine provides itself: the C library, the C++ runtime,
# the driver, the CUDA toolkit's libraries and cuDNN.
provided='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libnvidia|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc|libnvJitLink)\.so'
for binary in "$build/hetsched" "$build/tests/hetsched_unit_tests" "$build"/libhetsched.so.*; do
  ldd "$binary" | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r soname path; do
  [[ $soname =~ $provided || $path == "$(readlink -f "$build")"/* ]] && continue
  cp -L "$path" "$stage/$name/prebuilt-lib/$soname"
done

tar -C "$stage" -cJf "$out" "$name"
echo "$out: $(du -h "$out" | cut -f1) ($(ls "$stage/$name/prebuilt-lib" | wc -l) libraries)"
