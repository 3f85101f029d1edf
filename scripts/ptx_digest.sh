#!/usr/bin/env bash
# Prints one line per CUDA kernel: "<sha256 of its PTX> <kernel name>", for
# every .cu under backends/cuda (the lab in a tuning build), compiled as the library compiles
# them (sm_90a, wgmma on) but without line info, so that moving or splitting a
# source file leaves an unchanged kernel's digest unchanged. It shows that a
# reorganisation moved code without changing it; needs nvcc only, no GPU:
#   bash scripts/ptx_digest.sh > before.txt; (move things); bash scripts/ptx_digest.sh > after.txt
#   diff before.txt after.txt
# Kernels of internal linkage count too. What depends only on where a kernel
# stands is normalised: nvcc's per-file anonymous-namespace name (ANON), branch
# labels and local depots (their numbers count kernels within the file).
#   scripts/ptx_digest.sh [ROOT [extra nvcc flags...]]   ROOT: a tree (default this one),
#                                                        e.g. -DSTRATA_TUNING=1 for a tuning build
# RENAME=old=new,... maps renamed identifiers in mangled names back; PTX_JOBS
# sets the parallelism (default nproc).
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
shift || true
extra="$*"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compile() {
  local f=$1 out
  out=$work/$(echo "${f#"$root"/}" | tr / _).ptx
  "$nvcc" -std=c++20 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
    -DSTRATA_CUDA_WGMMA=1 -O3 $extra -I"$root/backends" -I"$root/core/include" -I"$root/ops/include" \
    -I"$root/nn/include" -I/usr/include/eigen3 -ptx "$f" -o "$out" || echo "FAILED $f" >&2
}
export -f compile
export nvcc work root extra
# The lab joins only a tuning build, as in CMakeLists.txt.
lab=(-not -path '*/lab/*')
[[ "$extra" == *STRATA_TUNING* ]] && lab=()
find "$root/backends/cuda" -name '*.cu' "${lab[@]}" | sort |
  xargs -P "${PTX_JOBS:-$(nproc)}" -I{} bash -c 'compile {}'
python3 - "$work" <<'PY'
import glob, hashlib, re, sys
import os
RENAMES = [r.split("=") for r in os.environ.get("RENAME", "").split(",") if r]
def norm(s):
    for old, new in RENAMES:
        s = s.replace("%d%s" % (len(old), old), "%d%s" % (len(new), new))
    out, i = [], 0
    for m in re.finditer(r"(\d+)_GLOBAL__N__", s):
        if m.start() < i: continue
        n = int(m.group(1)); start = m.end(1)
        out.append(s[i:m.start()]); out.append("4ANON"); i = start + n
    out.append(s[i:]); s = "".join(out)
    # Labels and local depots carry the function's position in its file.
    s = re.sub(r"\$L__BB\d+_", "$L__BB_", s)
    return re.sub(r"__local_depot\d+", "__local_depot", s)
entries = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.ptx")):
    name, body = None, []
    for line in open(path):
        m = re.match(r"^(?:\.(?:visible|weak|extern)\s+)*\.entry\s+(\S+?)\(", line)
        if m:
            name, body = norm(m.group(1)), []
        if name:
            body.append(norm(line))
            if line.startswith("}"):
                h = hashlib.sha256("".join(body).encode()).hexdigest()
                if name in entries and entries[name] != h: name += "#dup"
                entries[name] = h
                name = None
for name in sorted(entries):
    print(entries[name], name)
PY
