#!/usr/bin/env bash
# Installs every Debian package hetsched needs to build and test. Idempotent:
# when everything is already installed it does nothing (no apt-get update).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libdnnl-dev libhwloc-dev libsqlite3-dev coinor-libcbc-dev
  libfp16-dev  # float16 <-> float32 conversions (header only)
  # oneDNN's CMake config (dnnl-config.cmake) calls find_package(OpenCL)
  # (Debian builds it with the OpenCL GPU runtime); libdnnl-dev only
  # recommends these, and recommends are not installed here:
  ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
  python3 python3-numpy python3-onnx python3-torch python3-torchvision
  python3-dev pybind11-dev
  # `pip install .` (setup.py, offline, into a venv) and hetsched.dask
  python3-pip python3-venv python3-setuptools python3-wheel python3-distributed
  # `hetsched serve` (serve/): HTTP, gRPC, and the Python clients its test uses
  libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-grpc-tools
  chromium  # for the report rendering test (tests/python/check_report_render.py)
  # For `make fuzz` (fuzz/README.md), which checks for them and names them
  # itself; `make test` does not need them:
  #   clang libclang-rt-14-dev libomp-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
