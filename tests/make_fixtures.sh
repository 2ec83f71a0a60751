#!/usr/bin/env bash
# tests/make_fixtures.sh: regenerate the PyTorch reference fixtures (make fixtures).
# For each line of tests/fixtures.list: train a small model for a few steps (so LayerNorm gains
# and biases are no longer at their initial values), keep its checkpoint, and let the independent
# PyTorch script (tests/torch_ref.py) compute loss, logits and every gradient for the first batch
# of the embedded corpus. tests/test_torch.sh then checks the C code against these files without
# needing torch. Needs Debian's python3-torch.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
out=tests/fixtures
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
grep -v '^#' tests/fixtures.list | while IFS='|' read -r name flags; do
  # shellcheck disable=SC2086
  ./train $flags --seq 16 --batch 2 --steps 8 --val-every 0 --log-every 100 --seed 7 --save "$out/$name.ckpt" > /dev/null
  ./train --load "$out/$name.ckpt" --export "$tmp/$name.safetensors" 2> /dev/null
  ./train --load "$out/$name.ckpt" --batch 2 --seq 16 --dump-step "$tmp/$name.dump.safetensors" 2> /dev/null
  "$PY" tests/torch_ref.py "$tmp/$name.safetensors" "$tmp/$name.dump.safetensors" \
        --write-ref "$out/$name.torch.safetensors" > "$tmp/$name.log" || { cat "$tmp/$name.log"; exit 1; }
  echo "fixture $name: $(tail -n 1 "$tmp/$name.log")"
done
