#!/usr/bin/env bash
# Sets up (idempotently), builds nanoc and nanort, trains the digits sample's
# two models, compiles them for this machine's CPU, links them with nanort
# into one static binary and runs it: accuracy and per-inference latency.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${NANORT_BUILD_DIR:-$here/build}"

"$here/tools/setup.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)" --target digits_app
"$build/samples/digits/digits_app" "$build/samples/digits/data"
