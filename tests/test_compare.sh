#!/usr/bin/env bash
# tests/test_compare.sh: ./compare end to end on a grid small enough for seconds: the folder it
# writes, finished runs kept, a redone run bit-identical, text mode with RoPE extensions, the
# message when gnuplot is missing, and bad input.
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
model="--layers 1 --heads 2 --dim 16 --batch 4 --log-every 1000"

# ---- a task grid: 2 schemes x 2 seeds
out="$tmp/grid"
./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log1" 2>&1 || { bad "task grid failed:"; cat "$tmp/log1"; }
for s in nope alibi; do for seed in 1 2; do
  d="$out/runs/copy-repeat/$s/seed$seed"
  for f in done eval.csv log.csv model.ckpt train.log; do [ -f "$d/$f" ] || bad "missing $d/$f"; done
done; done
head -1 "$out/results.csv" | grep -q '^task,scheme,seed,length,depth,split,n,correct,accuracy$' && ok || bad "results.csv header"
for s in nope alibi; do for seed in 1 2; do
  grep -q "^copy-repeat,$s,$seed,8,,ood," "$out/results.csv" && ok || bad "results.csv lacks $s seed $seed length 8"
done; done
grep -q "^| nope | " "$out/summary.md" && grep -q "^| alibi | " "$out/summary.md" && ok || bad "summary.md lacks a scheme row"
grep -q "Mean reciprocal rank" "$out/summary.md" && grep -q "over 2 task x seed" "$out/summary.md" && ok || bad "summary.md lacks the MRR"
grep -q "in-distribution" "$out/summary.md" && ok || bad "summary.md lacks the in-distribution column"
[ -f "$out/accuracy_copy-repeat.gp" ] && [ -f "$out/accuracy_copy-repeat.dat" ] && [ -f "$out/loss_copy-repeat.gp" ] && ok || bad "plot scripts missing"
if command -v gnuplot > /dev/null; then
  [ -s "$out/accuracy_copy-repeat.png" ] && [ -s "$out/accuracy_copy-repeat.svg" ] && [ -s "$out/loss_copy-repeat.png" ] && ok || bad "plots missing"
fi

# ---- run again: nothing retrained, same results
cp "$out/results.csv" "$tmp/results1.csv"
./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log2" 2>&1 || bad "second run failed"
grep -q "4 already done, 0 to train" "$tmp/log2" && ok || { bad "finished runs were not kept:"; head -3 "$tmp/log2"; }
cmp -s "$out/results.csv" "$tmp/results1.csv" && ok || bad "results changed without training"

# ---- a run redone from scratch gives the same numbers, bit for bit (same seed, same threads)
d="$out/runs/copy-repeat/alibi/seed2"
cp "$d/eval.csv" "$tmp/eval_before.csv"; cp "$d/log.csv" "$tmp/log_before.csv"
rm "$d/done"
./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log3" 2>&1 || bad "third run failed"
grep -q "3 already done, 1 to train" "$tmp/log3" && ok || bad "the run without its done marker was not redone"
cmp -s "$d/eval.csv" "$tmp/eval_before.csv" && ok || bad "a redone run gives other accuracies"
cut -d, -f1-3 "$d/log.csv" > "$tmp/a"; cut -d, -f1-3 "$tmp/log_before.csv" > "$tmp/b"
cmp -s "$tmp/a" "$tmp/b" && ok || bad "a redone run gives other losses"

# ---- text: perplexity by window, RoPE with an extension, a learned table past its rows
head -c 60000 README.md > "$tmp/text.txt"
./compare --out "$tmp/text" --data "$tmp/text.txt" --schemes rope,learned --rope-extensions yarn --quiet \
  --eval-flags '--ppl-tokens 2048' -- $model --steps 2 --seq 16 > "$tmp/log4" 2>&1 || { bad "text grid failed:"; cat "$tmp/log4"; }
head -1 "$tmp/text/results.csv" | grep -q '^data,scheme,seed,window,mode,tokens,loss,ppl,note$' && ok || bad "text results.csv header"
grep -q ",rope+yarn,1,128,sliding,2048," "$tmp/text/results.csv" && ok || bad "no rope+yarn row at 8x"
grep -q ",learned,1,128,nonoverlap,.*learned table" "$tmp/text/results.csv" && ok || bad "learned past its table has no note"
grep -q "^| rope+yarn |" "$tmp/text/summary.md" && ok || bad "summary lacks rope+yarn"

# ---- retrieval: accuracy by haystack length and key depth
./compare --out "$tmp/find" --task retrieval --schemes nope --eval-per-length 2 --quiet \
  -- $model --steps 2 --depths 3 --train-max 64 --test-max 128 > "$tmp/log6" 2>&1 || { bad "retrieval grid failed:"; cat "$tmp/log6"; }
grep -q "^| nope | depth 0.00 | depth 0.50 | depth 1.00 |" "$tmp/find/summary.md" && grep -q "^| 128 |" "$tmp/find/summary.md" \
  && ok || bad "summary.md lacks the length x depth table"
grep -q "^retrieval,nope,1,128,0.5,ood," "$tmp/find/results.csv" && ok || bad "results.csv lacks a depth row"

# ---- without gnuplot: a message, the CSV and summary still written, exit 0
mkdir -p "$tmp/nobin"
PATH="$tmp/nobin" ./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log5" 2>&1 && ok || bad "compare without gnuplot failed"
grep -q "apt-get install gnuplot-nox" "$tmp/log5" && ok || bad "no install hint without gnuplot"

# ---- bad input: a message naming the problem, non-zero exit
expect_fail() {
  local what=$1 needle=$2; shift 2
  if "$@" > "$tmp/o" 2> "$tmp/e"; then bad "$what: exit status 0"; return; fi
  grep -qiF -- "$needle" "$tmp/e" "$tmp/o" && ok || { bad "$what: no '$needle' in:"; cat "$tmp/e"; }
}
expect_fail "no --out" "--out DIR" ./compare --task copy
expect_fail "task and data" "either --task" ./compare --out "$tmp/x" --task copy --data README.md
expect_fail "neither task nor data" "either --task" ./compare --out "$tmp/x"
expect_fail "unknown flag" "unknown flag --bogus" ./compare --out "$tmp/x" --task copy --bogus 1
expect_fail "scheme without =" "LABEL=FLAGS" ./compare --out "$tmp/x" --task copy --scheme rope
expect_fail "scheme twice" "given twice" ./compare --out "$tmp/x" --task copy --schemes rope,rope
expect_fail "flag compare sets" "set by ./compare" ./compare --out "$tmp/x" --task copy -- --pe rope
expect_fail "bad seed" "--seeds" ./compare --out "$tmp/x" --task copy --seeds 1,x
expect_fail "seed twice" "given twice" ./compare --out "$tmp/x" --task copy --seeds 1,1
expect_fail "task twice" "given twice" ./compare --out "$tmp/x" --task copy,copy
expect_fail "other settings in a finished grid" "made with other settings" ./compare --out "$out" --task copy-repeat \
  --schemes nope,alibi --seeds 1,2 --eval-per-length 4 --quiet -- $model --steps 3 --train-max 4 --test-max 8
expect_fail "unreadable data" "cannot be read" ./compare --out "$tmp/x" --data "$tmp/missing.txt"
expect_fail "extensions without text" "--rope-extensions applies" ./compare --out "$tmp/x" --task copy --rope-extensions yarn
expect_fail "a failing run" "failed" ./compare --out "$tmp/y" --task nosuchtask --schemes nope --quiet -- $model --steps 1
grep -q "is not a task" "$tmp/y/runs/nosuchtask/nope/seed1/train.log" && ok || bad "the failing run's train.log lacks the reason"

echo "test_compare: $pass passed, $fail failed"
[ $fail = 0 ]
