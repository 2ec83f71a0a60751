#!/usr/bin/env bash
# tools/make_fixtures.sh [NAME...]: regenerate the PyTorch reference fixtures (make fixtures), all of
# them or the named ones. For each line of tests/fixtures.list: train a small model for a few steps
# (so LayerNorm gains and biases are no longer at their initial values), keep its checkpoint, and
# let the independent PyTorch script (tests/torch_ref.py) compute loss, logits and every gradient
# for the first batch (2 x T tokens) of the line's data (default: the embedded corpus).
# tests/test_torch.sh then checks the C code against these files without needing torch. Needs
# Debian's python3-torch.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
out=tests/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
# The 16-token data of the long fixtures: an llm.c tokenizer (version 1) of the pieces a..p, and
# 4096 bytes 0..15 from a fixed random walk (a learnable, deterministic sequence).
"$PY" - "$out/vocab16" <<'PYEOF'
import struct, sys
with open(sys.argv[1] + ".tokenizer", "wb") as f:
    f.write(struct.pack("<256i", 20240328, 1, 16, *([0] * 253)))
    for i in range(16):
        f.write(bytes([1, ord("a") + i]))
x, t, data = 12345, 0, bytearray()
for _ in range(4096):
    x = (1103515245 * x + 12345) % 2 ** 31
    t = (t + (x >> 16) % 3 + 1) % 16
    data.append(t)
with open(sys.argv[1] + ".data", "wb") as f:
    f.write(data)
PYEOF
grep -v '^#' tests/fixtures.list | while IFS='|' read -r name T data flags; do
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qxF "$name"; then continue; fi
  # shellcheck disable=SC2086
  ./train $data $flags --seq "$T" --batch 2 --steps 8 --val-every 0 --log-every 100 --seed 7 --save "$out/$name.ckpt" > /dev/null
  ./train --load "$out/$name.ckpt" --export "$tmp/$name.safetensors" 2> /dev/null
  # shellcheck disable=SC2086
  ./train --load "$out/$name.ckpt" $data --batch 2 --seq "$T" --dump-step "$tmp/$name.dump.safetensors" 2> /dev/null
  "$PY" tests/torch_ref.py "$tmp/$name.safetensors" "$tmp/$name.dump.safetensors" \
        --write-ref "$out/$name.torch.safetensors" > "$tmp/$name.log" || { cat "$tmp/$name.log"; exit 1; }
  echo "fixture $name: $(tail -n 1 "$tmp/$name.log")"
done
