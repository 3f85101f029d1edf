#!/usr/bin/env bash
# Prints one line per CUDA kernel: "<sha256 of its PTX> <mangled name>", for
# every .cu under backends/cuda, compiled as the library compiles them (sm_90a,
# wgmma on) but without line info, so moving or splitting a source file leaves
# an unchanged kernel's digest unchanged. Shows that a reorganisation moved
# code without changing it (needs nvcc only, no GPU):
#   bash scripts/ptx_digest.sh > before.txt; (move things); bash scripts/ptx_digest.sh > after.txt
#   diff before.txt after.txt
# PTX_JOBS sets the parallelism (default nproc); PTX_KEEP=DIR keeps the PTX files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
work=${PTX_KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${PTX_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
compile() {
  local f=$1 out
  out=$work/$(echo "${f#"$root"/}" | tr / _).ptx
  "$nvcc" -std=c++20 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
    -DSTRATA_CUDA_WGMMA=1 -O3 -I"$root/backends" -I"$root/core/include" -I"$root/ops/include" \
    -I"$root/nn/include" -I/usr/include/eigen3 -ptx "$f" -o "$out"
}
export -f compile
export nvcc work root
find "$root/backends/cuda" -name '*.cu' -not -path '*/lab/*' | sort |
  xargs -P "${PTX_JOBS:-$(nproc)}" -I{} bash -c 'compile {}'
python3 - "$work" <<'PY'
import glob, hashlib, re, sys
entries = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.ptx")):
    name, body = None, []
    for line in open(path):
        m = re.match(r"^\.(?:visible |weak )*\.entry\s+(\S+?)\(", line)
        if m:
            name, body = m.group(1), []
        if name:
            body.append(line)
            if line.startswith("}"):
                entries[name] = hashlib.sha256("".join(body).encode()).hexdigest()
                name = None
for name in sorted(entries):
    print(entries[name], name)
PY
