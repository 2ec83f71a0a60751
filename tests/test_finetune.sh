#!/usr/bin/env bash
# tests/test_finetune.sh: context extension as it is used. ./train fine-tunes a loaded RoPE model
# under a context-extension method (--load --rope-scaling M ... --steps N): it trains with the
# scaling applied and the checkpoint keeps it, so its evaluation applies it again. Then ./compare
# --finetune and --long-length on a grid small enough for seconds: the +ft variants, their
# folders, markers and windows, the section against the runs at K x T, nothing trained twice, a
# stopped fine-tune or evaluation redone alone with the same bits; the section's numbers on
# hand-made runs; --double-length as --long-length with factor 2; and bad combinations refused.
. "$(dirname "$0")/lib.sh"
model="--layers 1 --heads 2 --dim 16 --log-every 1000"
cat README.md docs/*.md | head -c 60000 > "$tmp/text.txt"   # any text of >= ~42 KB
has() { grep -qF -- "$2" "$1"; check $? "$(basename "$1") lacks: $2"; }
stored() { grep -aqx -- "$2" "$1"; check $? "$1 does not store $2"; }   # a line of a checkpoint's settings

# ---- ./train: a fine-tune under a method trains with it and stores it
./train --data "$tmp/text.txt" --pe rope $model --batch 4 --seq 16 --steps 3 --threads 1 --sample 0 --save "$tmp/base.ckpt" \
  > "$tmp/base.log" 2>&1; check $? "the base model did not train:" || cat "$tmp/base.log"
ft() {   # ft NAME FLAGS...: 2 steps at 64 tokens from base.ckpt
  local name=$1; shift
  ./train --load "$tmp/base.ckpt" --data "$tmp/text.txt" "$@" --context 64 --seq 64 --batch 1 --steps 2 --threads 1 \
    --sample 0 --log "$tmp/$name.csv" --save "$tmp/$name.ckpt" > "$tmp/$name.log" 2>&1
  check $? "the fine-tune $name failed:" || cat "$tmp/$name.log"
}
ft plain
ft linear --rope-scaling linear --rope-factor 4 --rope-original-context 16
for l in rope_scaling=linear rope_factor=4 rope_original_context=16 max_seq_len=64; do stored "$tmp/linear.ckpt" "$l"; done
stored "$tmp/plain.ckpt" rope_scaling=none
# the same weights, data and steps: only the scaling differs, and the first step's loss with it
[ "$(sed -n 2p "$tmp/linear.csv" | cut -d, -f2)" != "$(sed -n 2p "$tmp/plain.csv" | cut -d, -f2)" ]
check $? "the fine-tune under linear scaling has the unscaled one's first loss: the scaling is not applied in training"
# evaluated with no flag, the fine-tuned model applies its stored scaling: the numbers of the
# explicit flags, not those of none
ev() { ./train --load "$tmp/linear.ckpt" --data "$tmp/text.txt" --threads 1 --ppl-tokens 512 --ppl-windows 0.5,1 "$@" > /dev/null 2>&1; }
ev --ppl-out "$tmp/stored.csv" && ev --rope-scaling linear --rope-factor 4 --ppl-out "$tmp/explicit.csv" &&
  ev --rope-scaling none --ppl-out "$tmp/none.csv"
check $? "the fine-tuned model's evaluations failed"
cmp -s "$tmp/stored.csv" "$tmp/explicit.csv" && ! cmp -s "$tmp/stored.csv" "$tmp/none.csv"
check $? "the fine-tuned model is not evaluated with its stored scaling" || paste -d'|' "$tmp/stored.csv" "$tmp/none.csv"

# ---- ./compare: rope fine-tuned under linear and yarn at S x T = 128 (S = 8: --rope-factor's
# default) with 1 row, rope also trained at K x T = 64 with 2 rows for 3 steps (--long-steps), and alibi
out="$tmp/grid"
flags=(--data "$tmp/text.txt" --schemes rope,alibi --rope-extensions linear,yarn --finetune 3 --finetune-flags '--lr 1e-3'
       --long-length rope --long-factor 4 --long-steps 3 --eval-flags '--ppl-tokens 2048' --seeds 1,2 --jobs 2 --threads 1 --quiet)
grid=(./compare --out "$out" "${flags[@]}" -- $model --steps 2 --seq 16 --batch 8)
"${grid[@]}" > "$tmp/log1" 2>&1; check $? "the grid with --finetune failed:" || cat "$tmp/log1"
r="$out/runs/text"; d="$r/rope/seed1"
for v in linear yarn; do
  for f in trained evaluated model.ckpt log.csv ppl.csv train.log; do [ -f "$d/ft-$v/$f" ]; check $? "missing $d/ft-$v/$f"; done
  for l in rope_scaling=$v rope_factor=8 rope_original_context=16 max_seq_len=128; do stored "$d/ft-$v/model.ckpt" "$l"; done
  has "$d/done" "--rope-scaling $v --rope-factor 8 --rope-original-context 16 --context 128 --seq 128 --batch 1 --steps 3 --lr 1e-3"
  # its evaluation: the fine-tuned weights alone (their stored method), windows divided by 8
  grep "ft-$v/model.ckpt --threads" "$d/done" | grep -q -- "--ppl-windows 0.0625,0.125,0.25,0.5,1 --ppl-out $d/ft-$v/ppl.csv" &&
    ! grep "ft-$v/model.ckpt --threads" "$d/done" | grep -q -- "--rope-scaling"
  check $? "the evaluation of ft-$v:" || grep "ft-$v/model.ckpt --threads" "$d/done"
  [ "$(cut -d, -f1 "$d/ft-$v/ppl.csv" | sort -u | tr '\n' ' ')" = "$(cut -d, -f1 "$d/ppl.csv" | sort -u | tr '\n' ' ')" ]
  check $? "ft-$v is not scored at the run's windows"
  grep -q ",rope+$v+ft,2,128,sliding,2048," "$out/results.csv"; check $? "results.csv lacks rope+$v+ft"
  # the fine-tune changed the weights: another perplexity than the same method without it
  a=$(grep ",rope+$v,1,128,nonoverlap," "$out/results.csv" | cut -d, -f8)
  b=$(grep ",rope+$v+ft,1,128,nonoverlap," "$out/results.csv" | cut -d, -f8)
  [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]; check $? "rope+$v+ft has rope+$v's perplexity ($a, $b)"
done
! grep -q "alibi+\|rope@64+" "$out/results.csv" && [ ! -e "$r/alibi/seed1/ft-yarn" ] && [ ! -e "$r/rope@64/seed1/ft-yarn" ]
check $? "a variant of a scheme without RoPE, or of one trained at K x T"
head -1 "$r/rope@64/seed1/done" | grep -q -- "--seq 16 --batch 8 --seq 64 --batch 2 --steps 3$" && grep -q "context 64" "$r/rope@64/seed1/train.log" &&
  [ "$(tail -1 "$r/rope@64/seed1/log.csv" | cut -d, -f1)" = 3 ] && [ "$(tail -1 "$d/log.csv" | cut -d, -f1)" = 2 ]
check $? "rope@64 did not train 3 steps at 64 tokens with 2 rows"
s="$out/summary.md"
grep -q "^| rope+linear |" "$s" && grep -A1 "^| rope+linear |" "$s" | grep -q "^| rope+linear+ft |" && grep -q "^| rope+yarn+ft |" "$s"
check $? "summary.md lacks the +ft rows beside the methods"
has "$s" "A row LABEL+M+ft is that model fine-tuned under M for 3 steps at S x T = 128 tokens"
has "$s" "### Trained at 16 tokens and tested at 64, against trained at 64"
has "$s" "### Extended to 64 tokens, with and without a fine-tune, against trained at 64"
has "$s" "the comparison is at K x T = 64 (--long-factor 4), within the length they were made for"
[ "$(grep -c '^| rope+\(linear\|yarn\)\(+ft\)\? | rope@64 |' "$s")" = 8 ]; check $? "the section lacks its 4 rows per table"
head -1 "$out/ppl_by_length.dat" | grep -q " rope+yarn rope+yarn+ft " && grep -q "title 'rope+yarn+ft'" "$out/ppl_by_length.gp"
check $? "the plot lacks rope+yarn+ft"

# ---- run again: nothing trained; a finished fine-tune is kept, a stopped one (or its evaluation) redone alone
cp "$out/results.csv" "$tmp/results1.csv"; cp "$d/ft-yarn/model.ckpt" "$tmp/ft1.ckpt"; cp "$d/ft-yarn/ppl.csv" "$tmp/ftppl1.csv"
cp "$d/ft-linear/train.log" "$tmp/ftlin.log"; cp "$d/ft-yarn/log.csv" "$tmp/ftlog1.csv"
"${grid[@]}" > "$tmp/log2" 2>&1; check $? "the second command failed"
grep -q "6 already done, 0 to train" "$tmp/log2" && cmp -s "$out/results.csv" "$tmp/results1.csv"
check $? "the grid trained again:" || head -2 "$tmp/log2"
rm "$d/done" "$d/ft-yarn/evaluated"         # stopped after the fine-tune, before its evaluation
"${grid[@]}" > "$tmp/log3" 2>&1; check $? "the third command failed"
grep -q "5 already done, 1 to train" "$tmp/log3" && [ "$(grep -c '^\$' "$d/ft-yarn/train.log")" = 3 ] &&
  cmp -s "$d/ft-yarn/log.csv" "$tmp/ftlog1.csv" && cmp -s "$d/ft-linear/train.log" "$tmp/ftlin.log" && [ -f "$d/ft-yarn/evaluated" ]
check $? "a finished fine-tune was not kept, or its evaluation not redone:" || cat "$d/ft-yarn/train.log"
cmp -s "$d/ft-yarn/ppl.csv" "$tmp/ftppl1.csv"; check $? "the evaluation redone gives other numbers"
rm "$d/done" "$d/ft-yarn/trained"           # stopped during the fine-tune: it starts again
"${grid[@]}" > "$tmp/log4" 2>&1; check $? "the fourth command failed"
cmp -s "$d/ft-yarn/model.ckpt" "$tmp/ft1.ckpt" && cmp -s "$d/ft-yarn/ppl.csv" "$tmp/ftppl1.csv" && cmp -s "$out/results.csv" "$tmp/results1.csv" &&
  cmp -s "$d/ft-linear/train.log" "$tmp/ftlin.log" && [ -f "$d/ft-yarn/evaluated" ]
check $? "a fine-tune started again does not give the same bits"
# the report again from the kept files (tools/keep_results.sh keeps the fine-tunes' ppl.csv)
tools/keep_results.sh "$out" "$tmp/kept" > /dev/null && [ -f "$tmp/kept/runs/text/rope/seed2/ft-yarn/ppl.csv" ] &&
  ./compare --out "$tmp/kept" "${flags[@]}" --report-only -- $model --steps 2 --seq 16 --batch 8 > "$tmp/log5" 2>&1 &&
  cmp -s "$tmp/kept/summary.md" "$s"
check $? "--report-only on the kept files does not give the same summary.md:" || tail -3 "$tmp/log5"

# ---- the section's numbers, on hand-made runs: at 64 tokens rope+yarn 6.0, 6.2, 6.4, rope+yarn+ft
# 5.5, 5.6, 5.7 and rope@64 5.9, 6.0, 6.1. Geometric means with t-intervals on the log (t(0.975, 2)
# = 4.3027): 5.599 [5.356, 5.853] and 5.999 [5.756, 6.253]; X / Y 0.932, 0.933, 0.934: 0.933 [0.931,
# 0.936]; sign-flip p 2 / 8 (all three below 1), Holm over the table's 2 comparisons: 0.5 each.
# rope+yarn's row is the 2T test's hand-made one (tests/test_compare.sh). Python's math module
# computed these.
fk="$tmp/fake"
row() {   # row DIR CONTEXT PPL [FILE]: a finished run's folder (FILE: ppl.csv) with one perplexity at 64 tokens
  mkdir -p "$1"; : > "$1/done"
  echo "model: 1 layers, 2 heads, dim 16, context $2, vocab 256 | 1 parameters" > "$1/train.log"
  printf 'step,loss\n1,2.0\n' > "$1/log.csv"
  printf 'window,mode,tokens,loss,ppl,note\n64,nonoverlap,64,1.0,%s,\n' "$3" > "$1/${4:-ppl.csv}"
}
for sd in 1 2 3; do
  row "$fk/runs/text/rope/seed$sd" 16 7.0
  row "$fk/runs/text/rope/seed$sd" 16 "$(awk -v s=$sd 'BEGIN { print 5.8 + 0.2 * s }')" ppl_yarn.csv
  mkdir -p "$fk/runs/text/rope/seed$sd/ft-yarn"
  printf 'window,mode,tokens,loss,ppl,note\n64,nonoverlap,64,1.0,%s,\n' "$(awk -v s=$sd 'BEGIN { print 5.4 + 0.1 * s }')" \
    > "$fk/runs/text/rope/seed$sd/ft-yarn/ppl.csv"
  row "$fk/runs/text/rope@64/seed$sd" 64 "$(awk -v s=$sd 'BEGIN { print 5.8 + 0.1 * s }')"
done
./compare --out "$fk" --data "$tmp/text.txt" --schemes rope --rope-extensions yarn --finetune 10 --long-length rope --long-factor 4 \
  --seeds 1,2,3 --report-only -- --seq 16 --batch 8 > "$tmp/logf" 2>&1; check $? "--report-only with --finetune failed:" || cat "$tmp/logf"
has "$fk/summary.md" "| rope+yarn | rope@64 | 6.198 [5.720, 6.715] | 5.999 [5.756, 6.253] | 1: 1.017, 2: 1.033, 3: 1.049 | 3 | 1.033 | [0.994, 1.074] | 0.25 | 0.5 | not distinguishable with 3 seeds |"
has "$fk/summary.md" "| rope+yarn+ft | rope@64 | 5.599 [5.356, 5.853] | 5.999 [5.756, 6.253] | 1: 0.932, 2: 0.933, 3: 0.934 | 3 | 0.933 | [0.931, 0.936] | 0.25 | 0.5 | not distinguishable with 3 seeds |"
# --double-length is --long-length at factor 2: the same report of the same runs
for sd in 1 2 3; do row "$tmp/fd/runs/text/alibi/seed$sd" 16 "6.$sd"; row "$tmp/fd/runs/text/alibi@32/seed$sd" 32 "5.9$sd"; done
for sd in 1 2 3; do for sc in alibi alibi@32; do sed -i 's/^64,/32,/' "$tmp/fd/runs/text/$sc/seed$sd/ppl.csv"; done; done
fd=(./compare --out "$tmp/fd" --data "$tmp/text.txt" --schemes alibi --seeds 1,2,3 --report-only)
"${fd[@]}" --double-length alibi -- --seq 16 --batch 4 > /dev/null 2>&1 && cp "$tmp/fd/summary.md" "$tmp/fd_double.md" &&
  "${fd[@]}" --long-length alibi --long-factor 2 -- --seq 16 --batch 4 > /dev/null 2>&1 && cmp -s "$tmp/fd/summary.md" "$tmp/fd_double.md" &&
  grep -q "^| alibi | alibi@32 | " "$tmp/fd_double.md"
check $? "--long-length at factor 2 does not report as --double-length"

# --extend LIST: only the listed RoPE schemes take the extensions (rows and fine-tunes); the others keep their own row
fe=(./compare --out "$tmp/fe" --data "$tmp/text.txt" --schemes rope --scheme 'rope50=--pe rope --rope-fraction 0.5' --seeds 1
    --rope-extensions yarn --finetune 2 --extend rope50 -- $model --steps 2 --seq 16 --batch 8)
"${fe[@]}" > "$tmp/loge" 2>&1; check $? "a grid with --extend failed:" || cat "$tmp/loge"
has "$tmp/fe/summary.md" "| rope50+yarn+ft |"
grep -q "^| rope+yarn" "$tmp/fe/summary.md"; check $((!$?)) "--extend rope50 still extends rope"
[ -f "$tmp/fe/runs/text/rope50/seed1/ft-yarn/trained" ] && [ ! -e "$tmp/fe/runs/text/rope/seed1/ft-yarn" ]
check $? "--extend rope50: the fine-tunes are not rope50's alone"

# ---- bad combinations: refused, naming the flag
expect_fail "--extend without --rope-extensions" "--extend names the schemes that take --rope-extensions" ./compare --out "$tmp/x" \
  --data "$tmp/text.txt" --schemes rope --extend rope -- --seq 16 --batch 8
expect_fail "--extend naming a scheme without RoPE" "--extend: 'alibi' has no RoPE layer" ./compare --out "$tmp/x" \
  --data "$tmp/text.txt" --schemes rope,alibi --rope-extensions yarn --extend alibi -- --seq 16 --batch 8
expect_fail "--extend naming no scheme compared" "--extend: 'rope9' is not one of the schemes compared" ./compare --out "$tmp/x" \
  --data "$tmp/text.txt" --schemes rope --rope-extensions yarn --extend rope9 -- --seq 16 --batch 8
x=(./compare --out "$tmp/x" --data "$tmp/text.txt" --schemes rope)
expect_fail "--finetune without --rope-extensions" "give --data and --rope-extensions" "${x[@]}" --finetune 3 -- --seq 16 --batch 8
expect_fail "--finetune on a task" "give --data and --rope-extensions" ./compare --out "$tmp/x" --task copy --finetune 3
expect_fail "--finetune at a factor that is not an integer" "give an integer --rope-factor" "${x[@]}" --rope-extensions yarn \
  --rope-factor 2.5 --finetune 3 -- --seq 16 --batch 8
expect_fail "--finetune with rows that the factor does not divide" "--finetune: --batch 4 after -- must be a multiple of 8" \
  "${x[@]}" --rope-extensions yarn --finetune 3 -- --seq 16 --batch 4
expect_fail "--finetune without --seq" "--finetune needs the context and the rows per step" "${x[@]}" --rope-extensions yarn --finetune 3 -- --batch 8
expect_fail "--finetune without a RoPE scheme" "--finetune: no scheme compared" ./compare --out "$tmp/x" --data "$tmp/text.txt" \
  --schemes alibi --rope-extensions yarn --finetune 3 -- --seq 16 --batch 8
expect_fail "--finetune 0" "--finetune 0 must be an integer" "${x[@]}" --rope-extensions yarn --finetune 0 -- --seq 16 --batch 8
expect_fail "--finetune-flags without --finetune" "--finetune-flags are the fine-tunes' flags" "${x[@]}" --rope-extensions yarn \
  --finetune-flags '--lr 1e-4' -- --seq 16 --batch 8
expect_fail "--finetune-flags setting the length" "--finetune-flags: --seq is set by ./compare" "${x[@]}" --rope-extensions yarn \
  --finetune 3 --finetune-flags '--lr 1e-4 --seq 64' -- --seq 16 --batch 8
expect_fail "--finetune-flags with a positional setting" "--finetune-flags: --rope-base is a positional setting" "${x[@]}" \
  --rope-extensions yarn --finetune 3 --finetune-flags '--rope-base 500' -- --seq 16 --batch 8
expect_fail "a method given twice" "--rope-extensions: 'yarn' is given twice" "${x[@]}" --rope-extensions yarn,yarn -- --seq 16
expect_fail "--long-factor without --long-length" "--long-factor is the factor of --long-length" "${x[@]}" --long-factor 4 -- --seq 16 --batch 8
expect_fail "--long-factor with --double-length" "in place of --double-length" "${x[@]}" --double-length rope --long-factor 4 -- --seq 16 --batch 8
expect_fail "--long-length with --double-length" "give either --double-length LIST or --long-length LIST" "${x[@]}" \
  --double-length rope --long-length rope -- --seq 16 --batch 8
expect_fail "--long-factor 1" "--long-factor 1 must be an integer in [2" "${x[@]}" --long-length rope --long-factor 1 -- --seq 16 --batch 8
expect_fail "--long-factor that does not divide --batch" "--long-length: --batch 8 after -- must be a multiple of 3" "${x[@]}" \
  --long-length rope --long-factor 3 -- --seq 16 --batch 8
expect_fail "--long-factor past the windows" "the comparison is at 3T = 48 tokens, which the perplexity windows (0.5,1,2,4,8) do not include" \
  "${x[@]}" --long-length rope --long-factor 3 -- --seq 16 --batch 6
expect_fail "--long-length without --seq" "--long-length needs the context and the rows per step" "${x[@]}" --long-length rope -- --batch 8
expect_fail "--long-length of an unknown scheme" "--long-length: 'alibi' is not one of the schemes" "${x[@]}" --long-length alibi -- --seq 16 --batch 8
expect_fail "--long-steps without long runs" "--long-steps is the step count of the runs of --long-length" "${x[@]}" --long-steps 5 -- --seq 16 --batch 8

finish
