#!/usr/bin/env bash
# tests/test_torch.sh: the C model against PyTorch, for every fixture in tests/fixtures.list.
#  1. Always: recompute the dump (2 x T tokens of the line's data) with ./train from the committed
#     checkpoint and compare with the committed PyTorch results (loss, logits, every gradient;
#     tests/st_compare). Tolerance rtol 1e-4 of each tensor's largest value, with an absolute floor
#     of only 1e-10: the gradients of a few-step model reach 1e-5 (attention weights), and
#     st_compare's default floor 1e-6 would let a wrong one pass.
#  2. When Debian's python3-torch is installed: also run the reference live on a fresh export and
#     dump, and check the transformers config.json written beside a learned+nope export; and load
#     llm.c model files (versions 3 and 5) that tests/torch_llmc.py writes and checks.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
have_torch=0
"$PY" -c "import torch, numpy" 2> /dev/null && have_torch=1
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
while IFS='|' read -r name T data _; do
  case "$name" in ''|'#'*) continue;; esac
  ck=tests/fixtures/$name.ckpt ref=tests/fixtures/$name.torch.safetensors
  [ -f "$ck" ] && [ -f "$ref" ] || { bad "$name: fixture files missing (run make fixtures)"; continue; }
  # shellcheck disable=SC2086
  if ./train --load "$ck" $data --batch 2 --seq "$T" --dump-step "$tmp/$name.dump" 2> "$tmp/err" &&
     ./tests/st_compare "$tmp/$name.dump" "$ref" --rtol 1e-4 --atol 1e-10 > "$tmp/$name.cmp"; then ok
  else bad "$name: C dump differs from the committed PyTorch reference"; cat "$tmp/err" "$tmp/$name.cmp"; fi
  if [ $have_torch = 1 ]; then
    mkdir -p "$tmp/$name"
    if ./train --load "$ck" --export "$tmp/$name/model.safetensors" 2> /dev/null &&
       "$PY" tests/torch_ref.py "$tmp/$name/model.safetensors" "$tmp/$name.dump" > "$tmp/$name.live"; then ok
    else bad "$name: live PyTorch reference"; cat "$tmp/$name.live"; fi
    if [ -f "$tmp/$name/config.json" ]; then
      if "$PY" tests/torch_ref.py "$tmp/$name/model.safetensors" --check-hf-config "$tmp/$name/config.json" > "$tmp/$name.hf"; then ok
      else bad "$name: config.json for GPT2LMHeadModel"; cat "$tmp/$name.hf"; fi
    fi
  fi
done < tests/fixtures.list
# llm.c GPT-2 files (versions 3 and 5) written by tests/torch_llmc.py from llm.c's layout, loaded by
# ./train and checked against the float64 reference read from the same file by the script
if [ $have_torch = 1 ]; then
  "$PY" tests/torch_llmc.py write "$tmp"
  for v in 3 5; do
    if ./train --load "$tmp/model_v$v.bin" --data "$tmp/tokens.bin" --batch 2 --seq 16 --dump-step "$tmp/llmc$v.dump" 2> "$tmp/err" &&
       "$PY" tests/torch_llmc.py check "$tmp/model_v$v.bin" "$tmp/llmc$v.dump" > "$tmp/llmc$v.out"; then ok
    else bad "llm.c version $v file against PyTorch"; cat "$tmp/err" "$tmp/llmc$v.out"; fi
  done
fi
[ $have_torch = 1 ] || echo "test_torch: python3-torch not installed: checked the committed fixtures only"
echo "test_torch: $pass passed, $fail failed"
[ $fail = 0 ]
