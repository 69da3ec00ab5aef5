#!/usr/bin/env bash
# Installs the Debian 12 packages exedev-cpp needs, and only those that are missing.
# Does nothing (and needs no network) when everything is already installed.
# With --tests, also node, npm and python3, then the npm packages of the MCP integration tests
# (tests/mcp) when they changed: only the test command needs them, not the demo.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
for_tests=false
[[ "${1:-}" == --tests ]] && for_tests=true

packages=(g++ clang cmake ninja-build pkg-config libboost1.81-dev libssl-dev nlohmann-json3-dev
          libfmt-dev catch2 ccache curl ca-certificates openssl git libssh2-1-dev
          openssh-server openssh-client)  # the emulator's SSH endpoints (sshd, sftp-server), ssh and sftp for its tests
if $for_tests; then
  # python3: the source lints (tests/lint) and the HTTP server the port-forwarding test runs.
  packages+=(nodejs python3)
  # Debian's npm is its own package; NodeSource's nodejs bundles npm (and conflicts with it).
  command -v npm >/dev/null || packages+=(npm)
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
    sudo=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The official MCP SDK client for tests/mcp, at the versions of its package-lock.json, in the
# folder tests/mcp/CMakeLists.txt reads (EXEDEV_MCP_SDK_DIR). Reinstalled only when the lock changed.
$for_tests || exit 0
sdk_dir=${EXEDEV_MCP_SDK_DIR:-$repo/build/mcp-sdk}
if ! cmp -s "$repo/tests/mcp/package-lock.json" "$sdk_dir/installed-package-lock.json"; then
  echo "install-deps: npm ci of tests/mcp into $sdk_dir" >&2
  mkdir -p "$sdk_dir"
  cp "$repo/tests/mcp/package.json" "$repo/tests/mcp/package-lock.json" "$sdk_dir/"
  (cd "$sdk_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$repo/tests/mcp/package-lock.json" "$sdk_dir/installed-package-lock.json"
fi
