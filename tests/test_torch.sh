#!/usr/bin/env bash
# tests/test_torch.sh: the C model against PyTorch, for every fixture in tests/fixtures.list.
#  1. Always: recompute the dump (2 x T tokens of the line's data) with ./train from the committed
#     checkpoint and compare with the committed PyTorch results (loss, logits, every gradient;
#     tests/st_compare). Tolerance rtol 1e-4 of each tensor's largest value, with an absolute floor
#     of only 1e-10: the gradients of a few-step model reach 1e-5 (attention weights), and
#     st_compare's default floor 1e-6 would let a wrong one pass.
#  2. When Debian's python3-torch is installed: also run the reference live on a fresh export and
#     dump (every fixture in one process), and check the transformers config.json written beside a
#     learned+nope export; run the reference's own self-test (tests/torch_selftest.py); and load
#     llm.c model files (versions 3 and 5) that tests/torch_llmc.py writes and checks. Without it
#     this part is skipped, saying so, and the script exits 77 (tests/lib.sh).
. "$(dirname "$0")/lib.sh"
have_torch=0
"$PY" -c "import torch, numpy" 2> /dev/null && have_torch=1
# part 2's live checks are listed as the fixtures go, and run in one Python process afterwards
# (tests/torch_ref.py --list: torch imported once, not once per fixture)
: > "$tmp/live.list"
names=""
while IFS='|' read -r name T data _; do
  case "$name" in ''|'#'*) continue;; esac
  ck=tests/fixtures/$name.ckpt ref=tests/fixtures/$name.torch.safetensors
  [ -f "$ck" ] && [ -f "$ref" ] || { check 1 "$name: fixture files missing (run make fixtures)"; continue; }
  # shellcheck disable=SC2086
  ./train --load "$ck" $data --batch 2 --seq "$T" --dump-step "$tmp/$name.dump" 2> "$tmp/err" &&
     ./tests/st_compare "$tmp/$name.dump" "$ref" --rtol 1e-4 --atol 1e-10 > "$tmp/$name.cmp"
  check $? "$name: C dump differs from the committed PyTorch reference" || cat "$tmp/err" "$tmp/$name.cmp"
  if [ $have_torch = 1 ]; then
    mkdir -p "$tmp/$name"
    ./train --load "$ck" --export "$tmp/$name/model.safetensors" 2> "$tmp/err"
    check $? "$name: export for the live PyTorch reference" || { cat "$tmp/err"; continue; }
    echo "dump $tmp/$name/model.safetensors $tmp/$name.dump $tmp/$name.live" >> "$tmp/live.list"
    [ -f "$tmp/$name/config.json" ] && echo "hf $tmp/$name/model.safetensors $tmp/$name/config.json $tmp/$name.hf" >> "$tmp/live.list"
    names="$names $name"
  fi
done < tests/fixtures.list
if [ $have_torch = 1 ]; then
  "$PY" tests/torch_ref.py --list "$tmp/live.list" > "$tmp/live.out" 2>&1
  list_rc=$?
  for name in $names; do
    grep -qx 'status: ok' "$tmp/$name.live" 2> /dev/null
    check $? "$name: live PyTorch reference" || cat "$tmp/$name.live" "$tmp/live.out" 2> /dev/null
    if [ -f "$tmp/$name/config.json" ]; then
      grep -qx 'status: ok' "$tmp/$name.hf" 2> /dev/null
      check $? "$name: config.json for GPT2LMHeadModel" || cat "$tmp/$name.hf" 2> /dev/null
    fi
  done
  [ -n "$names" ] && { [ $list_rc = 0 ]; check $? "torch_ref.py --list exits 0 when every check passes (rc $list_rc)"; }
  # a list is read whole before any check runs: a malformed line stops it with nothing run; and
  # EXPORT or DUMP beside --list is refused rather than ignored
  first=$(head -1 "$tmp/live.list")
  printf '%s\ndump only-three-fields x\n' "$(echo "$first" | sed "s|[^ ]*$|$tmp/bad.live|")" > "$tmp/bad.list"
  "$PY" tests/torch_ref.py --list "$tmp/bad.list" > "$tmp/bad.out" 2>&1
  rc=$?
  [ $rc = 1 ] && grep -q "a line must be" "$tmp/bad.out" && [ ! -e "$tmp/bad.live" ]
  check $? "torch_ref.py --list with a malformed second line: exit 1 (rc $rc), the message, the first line not run"
  "$PY" tests/torch_ref.py --list "$tmp/live.list" "$tmp/extra.safetensors" > "$tmp/bad.out" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q "give no EXPORT" "$tmp/bad.out"
  check $? "torch_ref.py --list with an EXPORT beside it: refused (rc $rc)"
  # the reference's own tests: torch-made models against a second, loop-by-loop forward and the
  # specification's worked numbers (tests/torch_selftest.py)
  "$PY" tests/torch_ref.py --self-test --tmp-prefix "$tmp/selftest" > "$tmp/selftest.out" 2>&1
  check $? "torch_ref.py --self-test: $(grep -v ' ok$' "$tmp/selftest.out" | tail -5 | tr '\n' ' ')"
fi
# llm.c GPT-2 files (versions 3 and 5) written by tests/torch_llmc.py from llm.c's layout, loaded by
# ./train and checked against the float64 reference read from the same file by the script
if [ $have_torch = 1 ]; then
  "$PY" tests/torch_llmc.py write "$tmp"
  for v in 3 5; do
    ./train --load "$tmp/model_v$v.bin" --data "$tmp/tokens.bin" --batch 2 --seq 16 --dump-step "$tmp/llmc$v.dump" 2> "$tmp/err" &&
       "$PY" tests/torch_llmc.py check "$tmp/model_v$v.bin" "$tmp/llmc$v.dump" > "$tmp/llmc$v.out"
    check $? "llm.c version $v file against PyTorch" || cat "$tmp/err" "$tmp/llmc$v.out"
  done
fi
[ $have_torch = 1 ] || skip "part 2: the live PyTorch reference, config.json and llm.c files (PyTorch for $PY)" \
  "apt-get install python3-torch python3-numpy"
finish
