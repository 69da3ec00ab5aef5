#!/usr/bin/env bash
# Installs the Debian 12 packages exedev-cpp needs, and only those that are missing.
# Does nothing (and needs no network) when everything is already installed.
set -euo pipefail

packages=(g++ clang cmake ninja-build pkg-config libboost1.81-dev libssl-dev nlohmann-json3-dev
          libfmt-dev catch2 ccache curl ca-certificates openssl git)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
