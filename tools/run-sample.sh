#!/usr/bin/env bash
# Sets up (idempotently), builds the whole project (nanoc, nanort, the tools,
# the tests and the samples), then runs the digits sample: its two models were
# trained, compiled for this machine's CPU and linked with nanort into one
# static binary by the build; it prints accuracy and per-inference latency.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${NANORT_BUILD_DIR:-$here/build}"
jobs="${NANORT_JOBS:-$(nproc)}"

"$here/tools/setup.sh"
python="${NANORT_VENV:-$here/.venv}/bin/python3"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$python"
cmake --build "$build" -j "$jobs"
"$build/samples/digits/digits_app" "$build/samples/digits/data"
