#!/usr/bin/env bash
# Stages the header-only dependencies of the strata tool (xtensor, xtl, CLI11:
# headers plus CMake package configs, about 3 MB) from this Debian machine's
# packages into DEST (git-ignored), for a machine that lacks them (the GPU
# machine; see gpu_cli.sh).
set -eu
DEST=${1:-build-cli/deps}
mkdir -p "$DEST/include" "$DEST/share/cmake" "$DEST/lib/x86_64-linux-gnu/cmake"
cp -r /usr/include/xtensor /usr/include/xtl /usr/include/CLI "$DEST/include/"
cp -r /usr/share/cmake/xtl /usr/share/cmake/CLI11 "$DEST/share/cmake/"
cp -r /usr/lib/x86_64-linux-gnu/cmake/xtensor "$DEST/lib/x86_64-linux-gnu/cmake/"
du -sh "$DEST"
