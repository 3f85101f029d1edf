#!/usr/bin/env bash
# Installs the Debian packages Strata builds and tests with, when missing.
# Safe to run repeatedly; does nothing when everything is there.
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache libeigen3-dev catch2 libbenchmark-dev
      libcli11-dev nlohmann-json3-dev python3-numpy python3-torch clang-format)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
