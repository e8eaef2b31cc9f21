#!/usr/bin/env bash
# Fails, listing the files, when a tracked C or C++ file is not formatted by
# the tree's .clang-format. `tools/check-format.sh --fix` formats them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
files=$(git ls-files '*.c' '*.cc' '*.h' '*.hpp')
if [ "${1:-}" = "--fix" ]; then
  clang-format-14 -i $files
  exit 0
fi
bad=()
for f in $files; do
  clang-format-14 --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'not formatted (run tools/check-format.sh --fix):\n'
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "all $(echo "$files" | wc -l) files formatted"
