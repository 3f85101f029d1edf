#!/usr/bin/env bash
# Stages the header-only dependency of the strata tool (CLI11: headers plus
# its CMake package config) from this Debian machine's
# packages into DEST (git-ignored), for a machine that lacks them (the GPU
# machine; see gpu_cli.sh).
set -eu
DEST=${1:-build-cli/deps}
mkdir -p "$DEST/include" "$DEST/share/cmake"
cp -r /usr/include/CLI "$DEST/include/"
cp -r /usr/share/cmake/CLI11 "$DEST/share/cmake/"
du -sh "$DEST"
