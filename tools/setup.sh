#!/usr/bin/env bash
# Installs everything nanort's build, tests and sample need, from Debian's
# packages and PyPI. Idempotent: a second run installs nothing new.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

DEB_PACKAGES=(
  cmake ninja-build ccache g++ pkg-config git clang-format-14
  llvm-22-dev llvm-22-tools lld-22 libzstd-dev
  flatbuffers-compiler libflatbuffers-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libmimalloc-dev
  qemu-user-static g++-aarch64-linux-gnu g++-riscv64-linux-gnu
  gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm
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

# Python packages: tests and the sample's training script only.
# pip skips what is already installed at the pinned version.
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -r "$here/tools/requirements.txt"
