#!/usr/bin/env bash
# tests/test_longrope.sh: --rope-scaling longrope and --longrope-search from the command line.
#  1. The lists travel: a longrope model's checkpoint, its export and the export loaded again
#     hold the same lists (the export round trip is the identity, bit for bit).
#  2. The search is reproducible (two runs write the same files, byte for byte), and its lists,
#     scored independently by --ppl-out, are at least as good as the seeds' lists (no change and
#     position interpolation) at the windows they serve.
#  3. Refusals name the flag and write nothing.
. "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=2
small="--pe rope --layers 2 --heads 2 --dim 16 --seq 16 --batch 4 --val-every 0 --log-every 1000 --seed 5"
./train $small --steps 30 --save "$tmp/rope.ckpt" > /dev/null || abort "training the test model"

# ---- 1. the lists in a checkpoint, an export, and the export loaded again
lists="--rope-scaling longrope --rope-factor 4 --rope-original-context 8 --longrope-short 1,1.25,1.5,2 --longrope-long 2,3,4,5"
mkdir -p "$tmp/a" "$tmp/b"
printf '2\n3 4\t5\n' > "$tmp/long.txt"
# shellcheck disable=SC2086
./train $small --steps 2 --rope-scaling longrope --rope-factor 4 --rope-original-context 8 \
     --longrope-short 1,1.25,1.5,2 --longrope-long "$tmp/long.txt" --save "$tmp/lr.ckpt" > /dev/null 2>&1 &&
   grep -aq '^longrope_short=1,1.25,1.5,2$' "$tmp/lr.ckpt" && grep -aq '^longrope_long=2,3,4,5$' "$tmp/lr.ckpt" &&
   ./train --load "$tmp/lr.ckpt" --export "$tmp/a/m.safetensors" 2> /dev/null &&
   grep -aq '"longrope_short\\":\[1,1.25,1.5,2\]' "$tmp/a/m.safetensors" &&
   grep -aq '"longrope_long":"2,3,4,5"' "$tmp/a/m.safetensors" &&
   ./train --load "$tmp/a/m.safetensors" --export "$tmp/b/m.safetensors" 2> /dev/null &&
   cmp -s "$tmp/a/m.safetensors" "$tmp/b/m.safetensors"
check $? "longrope lists through a checkpoint, an export and its import"

# ---- 2. the search: reproducible, and no worse than its seeds
search() {   # search PREFIX
  ./train --load "$tmp/rope.ckpt" --rope-factor 4 --ppl-tokens 256 --longrope-search "$1" --longrope-population 4 \
    --longrope-generations 2 --seed 9 > "$1.log" 2>&1
}
search "$tmp/s1" && search "$tmp/s2" && cmp -s "$tmp/s1.short" "$tmp/s2.short" && cmp -s "$tmp/s1.long" "$tmp/s2.long" &&
   [ "$(wc -l < "$tmp/s1.long")" = 4 ] && grep -q "generation 2/2" "$tmp/s1.log"
check $? "two searches with the same seed write the same lists" || cat "$tmp/s1.log"
# the nonoverlap ppl at windows of 64 (s L0: the long list) and 16 (L0: the short list), scored by --ppl-out
ppl_at() {   # ppl_at SHORT LONG WINDOW
  ./train --load "$tmp/rope.ckpt" --rope-scaling longrope --rope-factor 4 --longrope-short "$1" --longrope-long "$2" \
    --ppl-out "$tmp/p.csv" --ppl-windows 1,4 --ppl-tokens 256 > /dev/null 2>&1 &&
  awk -F, -v w="$3" '$1 == w && $2 == "nonoverlap" { print $5 }' "$tmp/p.csv"
}
found_long=$(ppl_at "$tmp/s1.short" "$tmp/s1.long" 64) found_short=$(ppl_at "$tmp/s1.short" "$tmp/s1.long" 16)
ones_long=$(ppl_at 1,1,1,1 1,1,1,1 64) pi_long=$(ppl_at 1,1,1,1 4,4,4,4 64) ones_short=$(ppl_at 1,1,1,1 1,1,1,1 16)
pi_short=$(ppl_at 4,4,4,4 1,1,1,1 16)
[ -n "$found_long" ] && [ -n "$ones_long" ] && [ -n "$pi_long" ] && [ -n "$found_short" ] && [ -n "$ones_short" ] &&
   awk -v f="$found_long" -v a="$ones_long" -v b="$pi_long" -v g="$found_short" -v c="$ones_short" -v d="$pi_short" \
     'BEGIN { exit !(f <= a && f <= b && g <= c && g <= d) }' &&
   grep -q "long list: ppl $(printf '%.4f' "$found_long") " "$tmp/s1.log"
check $? "the searched lists score no worse than the seeds (long $found_long vs none $ones_long, PI $pi_long; short $found_short vs none $ones_short, PI $pi_short)" || cat "$tmp/s1.log"

# ---- 3. refusals: a message naming the flag, and no file written
refusal_written() { if ls "$tmp"/never* > /dev/null 2>&1; then echo "wrote a file"; fi; }   # (expect_fail)
printf '1 2 x\n' > "$tmp/bad.txt"
# shellcheck disable=SC2086
expect_fail "a list of the wrong length" "--longrope-short with d_rot/2 = 4 factors" \
  ./train $small --steps 1 --rope-scaling longrope --longrope-short 1,2 --longrope-long 1,2,3,4 --save "$tmp/never.ckpt"
# shellcheck disable=SC2086
expect_fail "a non-positive factor" "--longrope-long must be a list of numbers" \
  ./train $small --steps 1 --rope-scaling longrope --longrope-short 1,1,1,1 --longrope-long 1,0,1,1 --save "$tmp/never.ckpt"
# shellcheck disable=SC2086
expect_fail "a factor file with a word" "--longrope-long: file '$tmp/bad.txt': factor 3, 'x', is not a number" \
  ./train $small --steps 1 --rope-scaling longrope --longrope-short 1,1,1,1 --longrope-long "$tmp/bad.txt" --save "$tmp/never.ckpt"
# shellcheck disable=SC2086
expect_fail "an unreadable factor file" "--longrope-short '$tmp/none.txt' is neither a list of numbers" \
  ./train $small --steps 1 --rope-scaling longrope --longrope-short "$tmp/none.txt" --longrope-long 1,1,1,1 --save "$tmp/never.ckpt"
# shellcheck disable=SC2086
expect_fail "lists without longrope" "--longrope-short acts only with --rope-scaling longrope" \
  ./train $small --steps 1 --rope-scaling yarn --longrope-short 1,1,1,1 --save "$tmp/never.ckpt"
expect_fail "a search without --load" "--longrope-search searches the factors of a trained RoPE model: give --load" \
  ./train --longrope-search "$tmp/never"
expect_fail "a search at s = 1" "give s > 1" ./train --load "$tmp/rope.ckpt" --longrope-search "$tmp/never"
./train --pe alibi --layers 1 --heads 2 --dim 16 --seq 16 --batch 4 --steps 1 --val-every 0 --save "$tmp/alibi.ckpt" > /dev/null
expect_fail "a search on a model without RoPE" "no layer of the RoPE family" \
  ./train --load "$tmp/alibi.ckpt" --rope-factor 4 --longrope-search "$tmp/never"
expect_fail "a population without a search" "--longrope-population applies to the factor search" \
  ./train --load "$tmp/rope.ckpt" --longrope-population 6 --ppl-out "$tmp/never.csv"
expect_fail "too little text for one long window" "fewer than one long window of 64 tokens" \
  ./train --load "$tmp/rope.ckpt" --rope-factor 4 --ppl-tokens 32 --longrope-search "$tmp/never"

finish
