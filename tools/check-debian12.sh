#!/usr/bin/env bash
# Proves the README's first command on a clean Debian 12: debootstraps
# bookworm (with bookworm-updates and bookworm-security, as Debian's installer
# sets up) into ROOT, clones this repository's HEAD (committed work only) into
# ROOT/root/nanort and runs ./tools/run-sample.sh there as root under chroot.
# Exits with its status and prints how long it took.
#
#   sudo tools/check-debian12.sh [--fresh] [ROOT]    (ROOT: build/debian12-root)
#
# An existing ROOT is reused (its clone is moved to HEAD, its build kept);
# --fresh deletes it first. Only this machine's network plumbing goes in:
# resolv.conf, extra CA certificates (/usr/local/share/ca-certificates), apt's
# Acquire settings and /etc/pip.conf, where present. Needs root and
# debootstrap (installed when missing); $NANORT_DEBIAN_MIRROR picks the mirror.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mirror="${NANORT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${NANORT_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

fresh=0
root=""
for a in "$@"; do
  case "$a" in
    --fresh) fresh=1 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "check-debian12: unknown option $a" >&2; exit 2 ;;
    *) root="$a" ;;
  esac
done
root="${root:-$here/build/debian12-root}"
mkdir -p "$(dirname "$root")"
root="$(cd "$(dirname "$root")" && pwd)/$(basename "$root")"

[ "$(id -u)" = 0 ] || { echo "check-debian12: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
log() { echo "check-debian12: $*"; }
start=$SECONDS

mounted=()
# shellcheck disable=SC2317 # called by the trap below
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -lR "${mounted[i]}" || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for m in proc sys dev; do # left over by a killed run
  if mountpoint -q "$root/$m" 2>/dev/null; then umount -R "$root/$m" || umount -lR "$root/$m"; fi
done

if ((fresh)) && [ -e "$root" ]; then
  log "removing $root"
  rm -rf --one-file-system "$root"
fi

if [ ! -e "$root/.nanort-debootstrap-done" ]; then
  command -v debootstrap >/dev/null || {
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap
  }
  rm -rf --one-file-system "$root"
  log "debootstrap bookworm $root $mirror"
  debootstrap bookworm "$root" "$mirror"
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  # No daemons started by packages' maintainer scripts inside the chroot.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  touch "$root/.nanort-debootstrap-done"
  log "debootstrap done after $((SECONDS - start)) s"
fi

# This machine's network plumbing (not set-up: a stock machine has its own).
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
for f in /etc/apt/apt.conf.d/*; do
  if [ -f "$f" ] && grep -q '^[[:space:]]*Acquire::' "$f"; then cp "$f" "$root/etc/apt/apt.conf.d/"; fi
done
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$root/etc/pip.conf"

clone="$root/root/nanort"
head="$(git -C "$here" rev-parse HEAD)"
if [ -d "$clone/.git" ]; then
  git -C "$clone" fetch -q "$here" "$head"
else
  git clone -q --no-checkout "$here" "$clone"
fi
git -C "$clone" checkout -q --detach "$head"
log "clone at $(git -C "$clone" log --oneline -1)"

mount -t proc proc "$root/proc"
mounted+=("$root/proc")
mount -t sysfs sys "$root/sys"
mounted+=("$root/sys")
mount --rbind /dev "$root/dev"
mounted+=("$root/dev")
mount --make-rslave "$root/dev"

log "chroot $root: cd /root/nanort && ./tools/run-sample.sh"
run_start=$SECONDS
set +e
chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  ${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
  ${no_proxy:+no_proxy=$no_proxy} \
  /bin/bash -c 'cd /root/nanort && ./tools/run-sample.sh'
status=$?
set -e
el=$((SECONDS - run_start))
tot=$((SECONDS - start))
log "./tools/run-sample.sh exited $status after $((el / 60))m$((el % 60))s (all: $((tot / 60))m$((tot % 60))s)"
exit $status
