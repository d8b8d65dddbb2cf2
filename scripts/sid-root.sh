#!/usr/bin/env bash
# sid-root.sh — build (once) and print the path of a Debian sid root holding the newest CPython
# releases (3.14, 3.15, and sid's 3.13), their -dev headers and the tests' workload packages.
# The tests run targets inside it (chroot, a mount+pid namespace, a podman container), so the
# newest interpreters are read from the host as a container's would be. Needs root, debootstrap
# and the Debian mirror this machine's apt sources already name (no mirror host is written here).
#
#   scripts/sid-root.sh          build if missing or stale, print the root's path on stdout
#   scripts/sid-root.sh --check  print the path if a current root exists, else exit 1 (no build)
#
# The root is cached outside the clone (SOP_SID_ROOT, default /var/cache/sop/sid-root) and
# rebuilt when the package list below changes (its hash is kept in the root as .sop-stamp).
# Everything goes to stderr except the path; on failure the reason is the last stderr line.
set -euo pipefail

root=${SOP_SID_ROOT:-/var/cache/sop/sid-root}
packages=(
  python3.13 python3.14 python3.15
  libpython3.13-dev libpython3.14-dev libpython3.15-dev
  python3-numpy python3-aiohttp python3-uvloop python3-torch
  procps
)
stamp_text="sid ${packages[*]}"
stamp=$(printf '%s' "$stamp_text" | sha256sum | cut -c1-16)

current() { [[ -f $root/.sop-stamp && $(cat "$root/.sop-stamp") == "$stamp" ]]; }

if [[ ${1:-} == --check ]]; then
  current && { echo "$root"; exit 0; }
  exit 1
fi
if current; then
  echo "$root"
  exit 0
fi

die() { echo "sid-root: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot)"
# One build at a time (tests run side by side may all ask for it): wait for another's.
mkdir -p "$(dirname "$root")"
exec 9>"$(dirname "$root")/.sid-root.lock"
flock 9
if current; then
  echo "$root"
  exit 0
fi
command -v debootstrap >/dev/null || {
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends debootstrap >&2 ||
    { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends debootstrap >&2; } ||
    die "debootstrap is not installed and could not be"
}

# The Debian mirror the host's apt already uses: the first deb.debian.org-style archive entry
# (deb822 'URIs:' or one-line 'deb URI suite'), skipping the security archive.
mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r $f ]] || continue
    awk '
      /^[[:space:]]*#/ { next }
      /^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }
      /^deb[[:space:]]/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i ~ /\/debian\/?$/) { print $i; exit } }
    ' "$f"
  done | head -n1
}
url=$(mirror)
[[ -n $url ]] || die "no Debian archive in /etc/apt/sources*: cannot pick a mirror"

echo "sid-root: building $root from $url (once; several minutes)" >&2
tmp="$root.new"
# A base system left by an interrupted build is reused (.sop-base marks a finished debootstrap).
if [[ ! -f $tmp/.sop-base ]]; then
  rm -rf "$tmp"
  if ! debootstrap --variant=minbase sid "$tmp" "$url" >"$tmp.log" 2>&1; then
    tail -n 5 "$tmp.log" >&2
    rm -rf "$tmp"
    die "debootstrap sid failed (log: $tmp.log)"
  fi
  touch "$tmp/.sop-base"
fi
# A mirror may serve a dated snapshot of sid whose Release file has expired: the signature is
# still checked, the date is not (as this host's own apt may be told to).
cat >"$tmp/etc/apt/apt.conf.d/99sop-snapshot" <<'APT'
Acquire::Check-Valid-Until "false";
Acquire::Check-Date "false";
APT
# Packages through apt inside the root: sid's own resolver, no recommends.
cp /etc/resolv.conf "$tmp/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$tmp/proc"
trap 'umount "$tmp/proc" 2>/dev/null || true' EXIT
if ! chroot "$tmp" env DEBIAN_FRONTEND=noninteractive sh -c \
  "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${packages[*]}" >>"$tmp.log" 2>&1; then
  tail -n 5 "$tmp.log" >&2
  die "apt-get install in the sid root failed (log: $tmp.log)"
fi
chroot "$tmp" apt-get clean >/dev/null 2>&1 || true
umount "$tmp/proc"
trap - EXIT
echo "$stamp" >"$tmp/.sop-stamp"
rm -f "$tmp/.sop-base"
rm -rf "$root"
mv "$tmp" "$root"
rm -f "$tmp.log"
echo "sid-root: ready: $(du -sh "$root" | cut -f1)" >&2
echo "$root"
