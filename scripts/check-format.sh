#!/usr/bin/env bash
# Checks that every C++ file of the project follows the committed .clang-format (Debian's clang-format 14).
# Prints the files that do not and exits 1; `scripts/check-format.sh --fix` formats them in place.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(find app capture model decode views tests -type f \( -name '*.cpp' -o -name '*.h' \) 2>/dev/null | sort)
((${#files[@]})) || { echo "check-format: no C++ files found" >&2; exit 2; }
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'not formatted: %s\n' "${bad[@]}"
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ from .clang-format; scripts/check-format.sh --fix formats them"
  exit 1
fi
echo "check-format: ${#files[@]} files follow .clang-format"
