#!/usr/bin/env bash
# System packages the tests need on Debian: headless Chromium (the WebGPU device host on
# machines without a GPU; its SwiftShader adapter) and the Vulkan loader (dawn.node) for the
# WebGPU backend; a C++ toolchain and CMake to build the native addon (npm run build:native);
# OpenBLAS (loaded at run time) for the native host device's BLAS GEMM mode; hipcc (gfx940)
# and clang-19 + lld-19 (gfx942) for the GPU kernels' compile checks (nvcc comes with the
# CUDA toolkit, not from Debian: native/scripts/build-gpu-kernels.sh names it when missing);
# Open MPI (libopenmpi-dev to build the MPI addon hcsp_mpi.node, openmpi-bin for mpirun) for
# the multi-process host-device ranks (--comm mpi) and their tests; clang-format-19 for the C++
# format check (npm run lint).
# Installs only what is missing; runs apt-get update at most once; never prompts.
set -euo pipefail

PACKAGES=(chromium libvulkan1 g++ make cmake libopenblas0-pthread hipcc clang-19 lld-19 libopenmpi-dev openmpi-bin clang-format-19)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then missing+=("$p"); fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-system: all present (${PACKAGES[*]})"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-system: missing ${missing[*]} and apt-get is not available: install them with your system's package manager" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); else
    echo "setup-system: missing ${missing[*]}; run as root (or install sudo) to install them" >&2
    exit 1
  fi
fi

echo "setup-system: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get update -q; then
  echo "setup-system: apt-get update failed; cannot install ${missing[*]}" >&2
  exit 1
fi
if ! "${SUDO[@]}" apt-get install -y -q "${missing[@]}"; then
  echo "setup-system: apt-get install ${missing[*]} failed" >&2
  exit 1
fi

for p in "${missing[@]}"; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    echo "setup-system: $p is still not installed after apt-get" >&2
    exit 1
  fi
done
echo "setup-system: installed ${missing[*]}"
