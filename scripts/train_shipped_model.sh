#!/usr/bin/env bash
# Trains the shipped model (models/tiny-llama, docs/guide/models.md) from
# scratch with `strata train`: the licence texts Debian ships, joined as
# scripts/train_tiny_lm.py (its PyTorch peer) joins them, 2500 steps of
# 64 x 256 bytes in bf16 mixed precision on the cuda backend.
#   [BACKEND=cuda] [STEPS=2500] scripts/train_shipped_model.sh STRATA OUT [TEXT_DIR_OR_FILE] [options]
# OUT gets corpus.txt and run/ (strata train's out folder: checkpoint/,
# train_log.csv); copy run/checkpoint/{config.json,model.safetensors} into
# models/tiny-llama to ship it.
set -euo pipefail
strata=${1:?usage: scripts/train_shipped_model.sh STRATA OUT [TEXT] [options]}
out=${2:?usage: scripts/train_shipped_model.sh STRATA OUT [TEXT] [options]}
src=${3:-/usr/share/common-licenses}
shift $(( $# < 3 ? $# : 3 ))
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
if [ -f "$src" ]; then
  cp "$src" "$out/corpus.txt"
else
  # The regular files of the folder in name order, joined by a blank line.
  python3 - "$src" "$out/corpus.txt" <<'PY'
import os, sys
d, dst = sys.argv[1], sys.argv[2]
parts = []
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name)
    if os.path.isfile(p) and not os.path.islink(p):
        parts.append(open(p, "rb").read())
open(dst, "wb").write(b"\n\n".join(parts))
PY
fi
"$strata" train --config "$root/models/tiny-llama/config.json" --data "$out/corpus.txt" \
  --seq-len 256 --batch 64 --steps "${STEPS:-2500}" --lr 3e-3 --warmup 100 --schedule cosine --min-lr 0 \
  --weight-decay 0.1 --clip 1 --dtype bf16 --backend "${BACKEND:-cuda}" --order shuffled --seed 0 \
  --val-fraction 0.05 --val-every 250 --save-every 500 --out "$out/run" "$@"
