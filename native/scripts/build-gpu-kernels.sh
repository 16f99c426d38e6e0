#!/usr/bin/env bash
# Compiles every GPU kernel source (native/src/gpu/kernels/*.cu) into code objects the native
# backend loads at run time: native/build/gpu/<arch>/<family>.hsaco (AMD) or .cubin (NVIDIA).
#
#   build-gpu-kernels.sh [ARCH ...]      default: gfx940 gfx942 sm_90 (the CI compile checks)
#
# Which compiler builds which target (architecture.md, "Native backend"):
#   gfx940, gfx90a  Debian's hipcc (clang 15; HIP_PLATFORM=amd, else it picks nvcc)
#   gfx942, gfx950  clang-19 as a bare HIP compiler: no device libraries exist for it here,
#                   so -nogpulib -nogpuinc (the kernels need only gpu/vendor.h); on a ROCm
#                   machine set HCSP_HIPCC to its hipcc/amdclang++ to use that instead
#   sm_*            nvcc (HCSP_NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc)
# Contraction is off on every target (-ffp-contract=off, nvcc --fmad=false): the kernels
# round every fp32 step as the reference does. A kernel that does not compile fails the build,
# naming the file and the target.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# (the two overrides are for the script's own test)
src="${HCSP_GPU_KERNELS_DIR:-$here/../src/gpu/kernels}"
out="${HCSP_GPU_OUT_DIR:-$here/../build/gpu}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gfx940 gfx942 sm_90)

need() {
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -x "$1" ]; then
    echo "build-gpu-kernels: $2 needs $1, which is not installed ($3)" >&2
    exit 1
  fi
}

nvcc_bin() {
  if [ -n "${HCSP_NVCC:-}" ]; then echo "$HCSP_NVCC"; elif command -v nvcc >/dev/null 2>&1; then command -v nvcc; else echo /usr/local/cuda/bin/nvcc; fi
}

common=(-std=c++17 -O3 -I"$here/../src")
failed=0
shopt -s nullglob
sources=("$src"/*.cu)
if [ ${#sources[@]} -eq 0 ]; then
  echo "build-gpu-kernels: no kernel sources in $src" >&2
  exit 1
fi
for arch in "${targets[@]}"; do
  mkdir -p "$out/$arch"
  case "$arch" in
    gfx9*)
      if [ -n "${HCSP_HIPCC:-}" ]; then
        cc=("$HCSP_HIPCC" -x hip --offload-arch="$arch" --cuda-device-only -ffp-contract=off); ext=hsaco
      elif [ "$arch" = gfx942 ] || [ "$arch" = gfx950 ]; then
        need clang++-19 "$arch" "Debian: apt-get install clang-19 lld-19"
        cc=(clang++-19 -x hip --offload-arch="$arch" -nogpulib -nogpuinc --cuda-device-only -ffp-contract=off); ext=hsaco
      else
        need hipcc "$arch" "Debian: apt-get install hipcc"
        cc=(env HIP_PLATFORM=amd hipcc --offload-arch="$arch" --genco -ffp-contract=off); ext=hsaco
      fi
      ;;
    sm_*)
      nvcc="$(nvcc_bin)"
      need "$nvcc" "$arch" "the CUDA toolkit; set HCSP_NVCC"
      cc=("$nvcc" -arch="$arch" --cubin --fmad=false -prec-div=true -prec-sqrt=true -ftz=false); ext=cubin
      ;;
    *)
      echo "build-gpu-kernels: unknown target '$arch' (gfx940, gfx942, gfx950, gfx90a, sm_80, sm_90, ...)" >&2
      exit 1
      ;;
  esac
  for f in "${sources[@]}"; do
    name="$(basename "$f" .cu)"
    if ! "${cc[@]}" "${common[@]}" -o "$out/$arch/$name.$ext" "$f" 2>"$out/$arch/$name.log"; then
      echo "build-gpu-kernels: $name.cu does not compile for $arch:" >&2
      sed 's/^/  /' "$out/$arch/$name.log" | head -40 >&2
      failed=1
    else
      rm -f "$out/$arch/$name.log"
    fi
  done
  echo "build-gpu-kernels: $arch: ${#sources[@]} kernel files -> $out/$arch"
done
exit $failed
