#!/usr/bin/env bash
# clang-format (.clang-format) over the native addon's C++ and GPU kernel sources tracked by git.
# --check: list what is not formatted and fail (npm run lint); --write: format in place (npm run format).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
if [ "$mode" != --check ] && [ "$mode" != --write ]; then
  echo "cpp-format: usage: scripts/cpp-format.sh --check|--write (got '${mode}')" >&2
  exit 2
fi
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-19}
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  echo "cpp-format: $CLANG_FORMAT not found (bash scripts/setup-system.sh installs clang-format-19; or set CLANG_FORMAT)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files 'native/*.cc' 'native/*.h' 'native/*.cu')
if [ "$mode" = --write ]; then
  "$CLANG_FORMAT" -i "${files[@]}"
else
  "$CLANG_FORMAT" --dry-run -Werror "${files[@]}"
fi
