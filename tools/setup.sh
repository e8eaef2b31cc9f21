#!/usr/bin/env bash
# Installs everything nanort's build, tests and sample need, from Debian's
# packages and PyPI. Idempotent: a second run installs nothing new.
#
# Python packages go into a virtual environment made from Debian's own
# /usr/bin/python3 (PEP 668: Debian 12's python3 refuses a system-wide pip
# install): $NANORT_VENV, by default .venv at the top of the tree. The run
# scripts and CMake (when .venv exists) use its python3; by hand:
#   source .venv/bin/activate
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${NANORT_VENV:-$here/.venv}"

DEB_PACKAGES=(
  cmake ninja-build ccache g++ pkg-config git clang-format-14
  llvm-22-dev llvm-22-tools lld-22 libzstd-dev
  flatbuffers-compiler libflatbuffers-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libmimalloc-dev
  # The fuzz targets (tests/fuzz): clang of the same LLVM release, libFuzzer
  # and the sanitizer runtimes.
  clang-22 libclang-rt-22-dev
  # The Triton backend (serving/triton) reads its model configuration with it.
  rapidjson-dev
  qemu-user-static g++-aarch64-linux-gnu g++-riscv64-linux-gnu
  gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm
  # The virtual environment for tools/requirements.txt, and pip's HTTPS.
  python3 python3-venv python3-pip ca-certificates
  # Model exports for tests/models (Debian's python3, not the pip wheel's CUDA stack).
  python3-torch python3-torchvision
)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python packages: tests and the sample's training script only. The venv is
# (re)made when missing or broken (e.g. Debian's python3 changed under it);
# pip runs only when tools/requirements.txt differs from what was installed.
if ! "$venv/bin/python3" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null; then
  echo "setup: creating the virtual environment $venv"
  /usr/bin/python3 -m venv --clear "$venv"
fi
stamp="$venv/.nanort-requirements.sha256"
want="$(sha256sum <"$here/tools/requirements.txt")"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing tools/requirements.txt into $venv"
  rm -f "$stamp"
  "$venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$here/tools/requirements.txt"
  # Packages pinned on "# no-deps: NAME==VERSION" lines, without their
  # dependencies (see tools/requirements.txt).
  sed -n 's/^# no-deps: *//p' "$here/tools/requirements.txt" | while read -r pkg; do
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check --no-deps "$pkg"
  done
  echo "$want" >"$stamp"
fi
