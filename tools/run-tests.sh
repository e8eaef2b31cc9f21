#!/usr/bin/env bash
# Sets up (idempotently), builds and runs the whole test suite through CTest.
# .ci/run calls this and nothing else.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${NANORT_BUILD_DIR:-$here/build}"
jobs="${NANORT_JOBS:-$(nproc)}"

"$here/tools/setup.sh"
# ccache keys on paths relative to the tree, so another clone of the same
# sources (CI's fresh one) reuses this machine's cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$here}"
python="${NANORT_VENV:-$here/.venv}/bin/python3"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$python"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
