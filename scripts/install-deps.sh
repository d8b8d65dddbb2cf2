#!/usr/bin/env bash
# install-deps.sh — install, on Debian 12, every package sop needs to build, test and run its
# demo: compilers, Lua 5.4, cJSON, libunwind, libmicrohttpd (sopctl watch --listen),
# Prometheus (promtool and the watch e2e test), and the Python packages the tests' workloads use. Installs only what is missing; needs root (or sudo) when something is.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  liblua5.4-dev libcjson-dev libunwind-dev
  python3 python3-numpy python3-torch python3-aiohttp python3-uvloop
  python3-setuptools python3-pip
  python3-pandas python3-sklearn python3-torchvision python3-pil
  lua-check procps util-linux jq
  clang clang-format libclang-rt-14-dev valgrind
  slurm-wlm munge
  libmicrohttpd-dev prometheus
  chromium tmux
  podman runc debootstrap
  python3-fastapi python3-uvicorn gunicorn
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) != 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
