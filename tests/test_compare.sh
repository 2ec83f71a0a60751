#!/usr/bin/env bash
# tests/test_compare.sh: the report alone (--report-only) on a hand-made grid, against numbers
# computed by hand (fitted counts, t-intervals, pools, the degenerate flag, paired tests, MRR and its
# ties, claim verdicts and the other unit's); then ./compare end to end on a grid small enough for
# seconds: the folder it writes, finished runs kept, a redone run bit-identical, --task-flags, text
# mode with RoPE extensions, text mode with --attention-stats (the collapsed fraction by layer, mean
# and t-interval over seeds), the message when gnuplot is missing, and bad input.
. "$(dirname "$0")/lib.sh"
model="--layers 1 --heads 2 --dim 16 --batch 4 --log-every 1000"

# ---- the report alone (--report-only) on a hand-made grid: 2 tasks x 3 schemes x 4 seeds.
# copy: trained on lengths 1-4, tested to 8, 10 instances per length; length 3 has no test
# instance; pools: 1-2 and 4 enumerated (10), 5-6 sampled from 500, 7-8 too many to enumerate.
# rope seed 2 is not fitted; rope seed 3 gives one answer on all instances at lengths 5-8, on
# 95% at length 1 and 94% at length 2 (degenerate at 1 and 5-8).
# reverse: the same lengths without the gaps, and no fit line (no fit criterion).
# Accuracy beyond training (%, lengths 5-8, 40 instances):
#   copy     nope 75 70 90 50   alibi 50 60 40 60   rope 10 20(not fitted) 0 10
#   reverse  nope 100 x4        alibi 50 x4         rope 0 x4
fake="$tmp/fake"
id_top() { [ "$2" = 1.0000 ] && [ $1 -le 2 ] && echo 0.9$((6 - $1))00 || echo 0.3000; }   # 0.95, 0.94 for the degenerate run
fake_run() {   # task scheme seed ood_correct_of_40 fit_line id_correct(3 numbers) top_share_of_5-8
  local task=$1 scheme=$2 seed=$3 ood=$4 fit=$5 id=$6 top=$7 d="$fake/runs/$1/$2/seed$3"
  mkdir -p "$d"; : > "$d/done"
  { echo "accuracy on $task (exact match of the greedy answer, 10 test instances per bucket; trained on lengths 1-4):"
    [ -n "$fit" ] && echo "$fit"; } > "$d/train.log"
  printf 'step,loss\n1,2.0\n2,1.5\n' > "$d/log.csv"
  local f="$d/eval.csv" l c q=$((ood / 4)) r=$((ood % 4)) k=0
  echo "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share" > "$f"
  set -- $id
  for l in 1 2 3 4; do
    if [ $task = copy ] && [ $l = 3 ]; then echo "$task,$scheme,$seed,3,,id,0,0,,0,0,0," >> "$f"; continue; fi
    c=$1; shift
    echo "$task,$scheme,$seed,$l,,id,10,$c,$(awk "BEGIN{printf \"%.6f\", $c/10}"),0,10,10,$(id_top $l "$top")" >> "$f"
  done
  for l in 5 6 7 8; do
    c=$q; [ $k -lt $r ] && c=$((q + 1)); k=$((k + 1))
    local pool=10; [ $task = copy ] && { [ $l -le 6 ] && pool=500 || pool=; }
    echo "$task,$scheme,$seed,$l,,ood,10,$c,$(awk "BEGIN{printf \"%.6f\", $c/10}"),0,$pool,10,$top" >> "$f"
  done
}
FIT="fit: fitted at step 300: validation accuracy 0.9531 >= 0.9000"
NOFIT="fit: not fitted in 500 steps: validation accuracy 0.4120 < 0.9000"
seed=1; for k in 30 28 36 20; do fake_run copy nope $seed $k "$FIT" "10 10 10" 0.3000; seed=$((seed + 1)); done
seed=1; for k in 20 24 16 24; do fake_run copy alibi $seed $k "$FIT" "10 10 10" 0.3000; seed=$((seed + 1)); done
fake_run copy rope 1 4 "$FIT" "10 10 10" 0.3000
fake_run copy rope 2 8 "$NOFIT" "5 4 3" 0.3000
fake_run copy rope 3 0 "$FIT" "10 10 10" 1.0000
fake_run copy rope 4 4 "$FIT" "10 10 10" 0.3000
for seed in 1 2 3 4; do
  fake_run reverse nope $seed 40 "" "10 10 10 10" 0.3000
  fake_run reverse alibi $seed 20 "" "10 10 10 10" 0.3000
  fake_run reverse rope $seed 0 "" "10 10 10 10" 0.3000
done
fake_cmd=(./compare --out "$fake" --task copy,reverse --schemes nope,alibi,rope --seeds 1,2,3,4 --train "$tmp/no-train" --report-only)
"${fake_cmd[@]}" --claims 'nope>rope,alibi>nope' > "$tmp/logf" 2>&1; check $? "--report-only on the hand-made grid failed:" || cat "$tmp/logf"
s="$fake/summary.md"
has() { grep -qF -- "$2" "$1"; check $? "$(basename "$1") lacks: $2"; }
# fitted counts; in-distribution over the fitted runs (rope's unfitted 40% left out); per seed
has "$s" "| nope | 4 of 4 | 100.0 [100.0, 100.0] |"
# beyond training, the t-interval over the seeds 75, 70, 90, 50: 71.25 +- 3.1824 x 16.52 / 2 =
# [45.0, 97.5] (a percentile bootstrap over these seeds stays inside 50..90)
has "$s" "| nope | 4 of 4 | 100.0 [100.0, 100.0] | 71.2 [45.0, 97.5] |"
has "$s" "| rope | 3 of 4 | 100.0 [100.0, 100.0] |"
has "$s" "| 1: 10.0, 2: 20.0 (not fitted; in-distribution 40.0), 3: 0.0, 4: 10.0 |"
has "$s" "| nope | 4 of 4 (no fit criterion) | 100.0 [100.0, 100.0] | 100.0 [100.0, 100.0] |"
# pools: enumerated, no test instance, sampled from a known pool, too many to enumerate
has "$s" "| 1-2 | 10 | 10 | every test instance |"
has "$s" "| 3 | 0 | 0 | no test instance |"
has "$s" "| 5-6 | 500 | 10 | sampled without replacement |"
has "$s" "| 7-8 | too many to enumerate | 10 | sampled without replacement |"
has "$s" "- rope seed 3: the same answer on >= 95% of instances at lengths 1, 5-8"
! grep -q "rope seed 1: the same" "$s"; check $? "a run with top_share 0.3 is flagged degenerate"
# nope - alibi on copy: d = 25, 10, 50, -10; mean 18.75; sd^2 = 1918.75/3; t(3) = 3.1824:
# [-21.5, 59.0]; p: |95 - 2S| >= 75 for 6 of 16 subsets S of {25,10,50,10}: 0.375
# Holm over copy's 3 pairs: p = 0.375, 0.25 (nope - rope), 0.25 (alibi - rope: d = 40, 40, 50) ->
# 3 x 0.25 = 0.75, max(2 x 0.25, 0.75), max(1 x 0.375, 0.75): 0.75 each
has "$s" "| nope - alibi | 1: +25.0, 2: +10.0, 3: +50.0, 4: -10.0 | 4 | +18.8 | [-21.5, +59.0] | 0.375 | 0.75 | not distinguishable with 4 seeds |"
# nope - rope on copy, seed 2 left out (rope not fitted): d = 65, 90, 40; interval [2.9, 127.1]
# excludes 0 but p = 2/8 = 0.25: three seeds cannot tell
has "$s" "| nope - rope | 1: +65.0, 3: +90.0, 4: +40.0 | 3 | +65.0 | [+2.9, +127.1] | 0.25 | 0.75 | not distinguishable with 3 seeds |"
# pooled over tasks, one value per seed (its mean over the tasks where both fitted; reverse is 100
# for every seed): 82.5, 100 (copy left out), 95, 70; mean 86.875, t(3) interval [65.5, 108.3],
# p = 2/16 = 0.125, not 7 (task, seed) pairs with p = 2/128
has "$s" "| nope - rope | 1: +82.5, 2: +100.0, 3: +95.0, 4: +70.0 | 4 | +86.9 | [+65.5, +108.3] | 0.125 | 0.375 | not distinguishable with 4 seeds |"
# MRR over the fitted runs: nope (3 x 1 + 1/2 + 4 x 1)/8, alibi (7 x 1/2 + 1)/8, rope 7 x 1/3
has "$s" "over the 8 task x seed configurations"
has "$s" "Left out: 1 run not fitted"
has "$s" "| nope | 0.938 |"
has "$s" "| alibi | 0.562 |"
# its t-interval over the seeds (each seed's mean 1/rank over its tasks): nope 1, 1, 1, 0.75 ->
# 0.9375 +- 3.1824 x 0.0625 = [0.739, 1.136]; no ranking holds a tie
has "$s" "| nope | 0.938 | [0.739, 1.136] | 8 |"
has "$s" "Ties: 0 of the 8 rankings hold a tie; in 0 every ranked run has the same accuracy, 0 of them with all 3 schemes ranked"
grep -q "^| rope | 0.333 | \[0.333, 0.333\] | 7 |" "$s"; check $? "summary.md: rope's MRR row"
# claims, by seed: nope>rope pooled as above, Holm over the 2 claims' pooled rows 2 x 0.125;
# alibi>nope: seed means (-25 - 50)/2, (-10 - 50)/2, (-50 - 50)/2, (10 - 50)/2 = -37.5, -30, -50,
# -20: mean -34.375, t(3) interval [-54.5, -14.3], p = 0.125 (counting its 8 (task, seed) pairs as
# independent gave p = 6/256 and "contradicted"); by task, Holm within the claim: copy 0.25 and
# reverse 0.125 -> 0.25, 0.25
has "$s" "| nope>rope | all tasks | 4 | +86.9 | [+65.5, +108.3] | 0.125 | 0.25 | not distinguishable with 4 seeds |"
has "$s" "| alibi>nope | all tasks | 4 | -34.4 | [-54.5, -14.3] | 0.125 | 0.25 | not distinguishable with 4 seeds |"
has "$s" "|  | copy | 3 | +65.0 | [+2.9, +127.1] | 0.25 | 0.25 | not distinguishable with 3 seeds |"
has "$s" "|  | copy | 4 | -18.8 | [-59.0, +21.5] | 0.375 | 0.375 | not distinguishable with 4 seeds |"
# the claims with the other unit (the task: each task's mean over the seeds where both counted):
# nope>rope copy (65 + 90 + 40)/3 = 65, reverse 100: 82.5 +- 12.706 x 17.5 = [-139.9, +304.9], p 2/4;
# Holm over the 2 claims (both p 0.5): 1; the rows by task are not repeated
has "$s" "## Claims with the other unit (sensitivity)"
has "$s" "| nope>rope | all tasks | 2 | +82.5 | [-139.9, +304.9] | 0.5 | 1 | not distinguishable with 2 tasks |"
[ "$(grep -c '^|  | copy | 3 | +65.0 |' "$s")" = 1 ]; check $? "the other unit's table repeats the rows by task"
# no claim can hold for the family with 4 seeds: 2/2^n < 0.05/2 needs n = 7
has "$s" "among the 2 claims at most 5% (Holm p < 0.05 and the interval on one side of 0): none. The smallest p the sign-flip test can give with 4 seeds is 0.125, and Holm asks below 0.025 of the smallest of 2 p; 7 seeds or more could pass it."
# runs.csv and results.csv
r="$fake/runs.csv"
has "$r" "task,scheme,seed,fitted,fit_step,val_accuracy,id_accuracy,ood_accuracy,degenerate_lengths"
has "$r" "copy,nope,1,1,300,0.9531,1.000000,0.750000,"
has "$r" "copy,rope,2,0,,0.4120,0.400000,0.200000,"
has "$r" "copy,rope,3,1,300,0.9531,1.000000,0.000000,1 5-8"
has "$r" "reverse,alibi,4,,,,1.000000,0.500000,"
[ "$(wc -l < "$r")" = 25 ]; check $? "runs.csv: expected 24 runs"
# the pilot's inclusion rule reads this runs.csv: reverse has no fit criterion, so it is refused
expect_fail "tools/pilot_budgets.sh on runs without a fit criterion" "reverse nope seed 1 has no fit result" tools/pilot_budgets.sh "$fake" "" 2
has "$fake/results.csv" "task,scheme,seed,length,depth,split,n,correct,accuracy,pool,distinct,top_share"
has "$fake/results.csv" "copy,nope,1,3,,id,0,0,,0,0,"
has "$fake/results.csv" "copy,rope,3,5,,ood,10,0,0.000000,500,10,1.0000"
# --floor: the runs that learned their task, at the top of summary.md (reverse's runs have no
# validation accuracy: left out of the counts, and said so)
"${fake_cmd[@]}" --claims 'nope>rope' --floor 0.5 > "$tmp/logf" 2>&1; check $? "--report-only --floor failed:" || cat "$tmp/logf"
has "$s" "| copy | 4 of 4, test 4 | 4 of 4, test 4 | 3 of 4, test 3 | 11 of 12, test 11 |"
has "$s" "| reverse | 0 of 0, test 0 | 0 of 0, test 0 | 0 of 0, test 0 | 0 of 0, test 0 |"
has "$s" "| **all tasks** | 4 of 4 (100%), test 4 (100%) | 4 of 4 (100%), test 4 (100%) | 3 of 4 (75%), test 3 (75%) | 11 of 12 (92%), test 11 (92%) |"
has "$s" "Left out: 12 finished runs with no validation accuracy"
[ "$(grep "^## " "$s" | head -1)" = "## Runs that learned their task" ]; check $? "the fit table opens summary.md"
./compare --out "$fake" --task copy --schemes nope,alibi,rope --seeds 1,2,3,4 --train "$tmp/no-train" --report-only \
  --claims 'nope>rope' --floor 0.96 > "$tmp/logf" 2>&1
# (at 0.96 the fitted runs' validation, 0.9531, falls short; their test accuracy, 100%, does not)
has "$s" "| copy | 0 of 4 (0%), test 4 (100%) | 0 of 4 (0%), test 4 (100%) | 0 of 4 (0%), test 3 (75%) | 0 of 12 (0%), test 11 (92%) |"
! grep -q "all tasks" "$s"; check $? "one task: its row holds the shares, no row of all tasks"
"${fake_cmd[@]}" --claims 'nope>rope' > "$tmp/logf" 2>&1
! grep -q "Runs that learned" "$s"; check $? "no fit table without --floor"
has "$fake/results.csv" "copy,alibi,2,7,,ood,10,6,0.600000,,10,0.3000"
# the plot's numbers: mean, lo, hi per scheme; nope at length 8 over seeds 7/10, 7/10, 9/10, 5/10
grep -q "^# length nope nope_lo nope_hi alibi" "$fake/accuracy_copy.dat"; check $? "accuracy_copy.dat header"
awk '$1 == 8 { f = 1; g = $2 == 0.7 && $3 < 0.7 && $4 > 0.7 } END { exit !(f && g) }' "$fake/accuracy_copy.dat"
check $? "accuracy_copy.dat: nope at length 8"
grep -q "filledcurves" "$fake/accuracy_copy.gp"; check $? "the accuracy plot has no band"
# a missing run: reported without it, nothing trained; no finished run: refused
rm "$fake/runs/copy/alibi/seed4/done"
"${fake_cmd[@]}" > "$tmp/logf2" 2>&1; check $? "--report-only with a missing run failed:" || cat "$tmp/logf2"
grep -q "23 of 24 runs finished" "$tmp/logf2"; check $? "--report-only does not say how many runs are finished"
grep -q "| alibi | 3 of 3 |" "$fake/summary.md"; check $? "the unfinished run was reported"
# the last run of a task unfinished (rope seed 4 comes last): the fit target still comes from the
# finished runs; a task without a finished run gets one line, not tables of empty cells
rm "$fake/runs/copy/rope/seed4/done"
./compare --out "$fake" --task copy,reverse,sort --schemes nope,alibi,rope --seeds 1,2,3,4 --train "$tmp/no-train" \
  --report-only > "$tmp/logf3" 2>&1; check $? "--report-only with an unfinished task failed:" || cat "$tmp/logf3"
grep -q "validation accuracy reached 0.9 within" "$fake/summary.md"; check $? "the fit target is not read from the finished runs"
grep -q "^No run of this task has finished (12 to train)" "$fake/summary.md"; check $? "a task without finished runs is not said to be"
[ "$(grep -c '^| scheme | fitted |' "$fake/summary.md")" = 2 ]; check $? "a task without finished runs has a table"
./compare --out "$fake" --task copy,reverse,sort --schemes nope,alibi,rope --seeds 1,2,3,4 --train "$tmp/no-train" \
  --report-only --claims 'nope>rope' > "$tmp/logf3" 2>&1; check $? "--claims with an unfinished task failed:" || cat "$tmp/logf3"
grep -q "^|  | sort | | | | | | no run finished |" "$fake/summary.md"; check $? "a claim row of a task without finished runs"
# 7 seeds, one task: nope beats rope on every seed (p = 2/128 = 0.015625), and two claims; Holm:
# 2 x 0.015625 = 0.03125 for both, so both verdicts hold for the family
fake_grid=$fake; fake="$tmp/fake7"
for seed in 1 2 3 4 5 6 7; do
  fake_run reverse nope $seed $((30 + seed)) "" "10 10 10 10" 0.3000
  fake_run reverse rope $seed 0 "" "10 10 10 10" 0.3000
done
./compare --out "$fake" --task reverse --schemes nope,rope --seeds 1,2,3,4,5,6,7 --train "$tmp/no-train" --report-only \
  --claims 'nope>rope,rope>nope' > "$tmp/logf7" 2>&1; check $? "--report-only on 7 seeds failed:" || cat "$tmp/logf7"
has "$fake/summary.md" "| nope>rope | reverse | 7 | +85.0 |"
grep -q "^| nope>rope | reverse | 7 | +85.0 | \[.*\] | 0.01562 | 0.03125 | supported |" "$fake/summary.md"
check $? "7 seeds: nope>rope not supported with Holm p 0.03125"
has "$fake/summary.md" "(Holm p < 0.05 and the interval on one side of 0): nope>rope supported, rope>nope contradicted."
# ties: seed 1 all three at 20%, seed 2 nope and alibi at 20%, rope 10%; nope (11/18 + 3/4)/2 = 0.681
fake="$tmp/fake_tie"
for sc in nope alibi rope; do fake_run sort $sc 1 8 "" "10 10 10 10" 0.3000; done
fake_run sort nope 2 8 "" "10 10 10 10" 0.3000; fake_run sort alibi 2 8 "" "10 10 10 10" 0.3000
fake_run sort rope 2 4 "" "10 10 10 10" 0.3000
./compare --out "$fake" --task sort --schemes nope,alibi,rope --seeds 1,2 --train "$tmp/no-train" --report-only \
  > "$tmp/logt" 2>&1; check $? "--report-only on the tied grid failed:" || cat "$tmp/logt"
has "$fake/summary.md" "Ties: 2 of the 2 rankings hold a tie; in 1 every ranked run has the same accuracy, 1 of them with all 3 schemes ranked (a 3-way tie)."
has "$fake/summary.md" "| nope | 0.681 |"
has "$fake/summary.md" "| rope | 0.472 |"
fake=$fake_grid

# ---- real training from here on: the task grids need ./train's eval.csv with the columns
# pool,distinct,top_share

# ---- a task grid: 2 schemes x 2 seeds
out="$tmp/grid"
./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log1" 2>&1; check $? "task grid failed:" || cat "$tmp/log1"
for s in nope alibi; do for seed in 1 2; do
  d="$out/runs/copy-repeat/$s/seed$seed"
  for f in done eval.csv log.csv model.ckpt train.log; do [ -f "$d/$f" ]; check $? "missing $d/$f"; done
done; done
head -1 "$out/results.csv" | grep -q '^task,scheme,seed,length,depth,split,n,correct,accuracy,pool,distinct,top_share$'; check $? "results.csv header"
for s in nope alibi; do for seed in 1 2; do
  grep -q "^copy-repeat,$s,$seed,8,,ood," "$out/results.csv"; check $? "results.csv lacks $s seed $seed length 8"
done; done
grep -q "^| nope | " "$out/summary.md" && grep -q "^| alibi | " "$out/summary.md"; check $? "summary.md lacks a scheme row"
grep -q "Mean reciprocal rank" "$out/summary.md" && grep -q "over the 2 task x seed" "$out/summary.md"; check $? "summary.md lacks the MRR"
grep -q "in-distribution" "$out/summary.md"; check $? "summary.md lacks the in-distribution column"
[ -f "$out/accuracy_copy-repeat.gp" ] && [ -f "$out/accuracy_copy-repeat.dat" ] && [ -f "$out/loss_copy-repeat.gp" ]; check $? "plot scripts missing"
if have gnuplot "the PNG and SVG plots of ./compare (gnuplot draws them)" "apt-get install gnuplot-nox"; then
  [ -s "$out/accuracy_copy-repeat.png" ] && [ -s "$out/accuracy_copy-repeat.svg" ] && [ -s "$out/loss_copy-repeat.png" ]; check $? "plots missing"
fi

# ---- run again: nothing retrained, same results
cp "$out/results.csv" "$tmp/results1.csv"
./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log2" 2>&1; check $? "second run failed"
grep -q "4 already done, 0 to train" "$tmp/log2"; check $? "finished runs were not kept:" || head -3 "$tmp/log2"
cmp -s "$out/results.csv" "$tmp/results1.csv"; check $? "results changed without training"

# ---- a run redone from scratch gives the same numbers, bit for bit (same seed, same threads)
d="$out/runs/copy-repeat/alibi/seed2"
cp "$d/eval.csv" "$tmp/eval_before.csv"; cp "$d/log.csv" "$tmp/log_before.csv"
rm "$d/done"
./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log3" 2>&1; check $? "third run failed"
grep -q "3 already done, 1 to train" "$tmp/log3"; check $? "the run without its done marker was not redone"
cmp -s "$d/eval.csv" "$tmp/eval_before.csv"; check $? "a redone run gives other accuracies"
cut -d, -f1-3 "$d/log.csv" > "$tmp/a"; cut -d, -f1-3 "$tmp/log_before.csv" > "$tmp/b"
cmp -s "$tmp/a" "$tmp/b"; check $? "a redone run gives other losses"

# ---- --task-flags: one task's runs get their own flags after the grid's (--steps 2 beats --steps 3),
# recorded in their commands; the same command keeps every run, other task flags redo none silently
tf="$tmp/taskflags"
tf_cmd=(./compare --out "$tf" --task copy-repeat,reverse --schemes nope --seeds 1 --eval-per-length 3 --quiet)
"${tf_cmd[@]}" --task-flags 'reverse=--steps 2 --lr 1e-2' -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/logtf" 2>&1
check $? "a grid with --task-flags failed:" || cat "$tmp/logtf"
grep -q -- "--steps 3 --train-max 4 --test-max 8 --steps 2 --lr 1e-2$" "$tf/runs/reverse/nope/seed1/done"
check $? "reverse's command does not end with its task flags: $(cat "$tf/runs/reverse/nope/seed1/done")"
! grep -q -- "--lr 1e-2" "$tf/runs/copy-repeat/nope/seed1/done"; check $? "copy-repeat's command took reverse's task flags"
[ "$(tail -n 1 "$tf/runs/reverse/nope/seed1/log.csv" | cut -d, -f1)" = 2 ] &&
  [ "$(tail -n 1 "$tf/runs/copy-repeat/nope/seed1/log.csv" | cut -d, -f1)" = 3 ]
check $? "the task's --steps 2 did not override the grid's --steps 3 (reverse trained $(tail -n 1 "$tf/runs/reverse/nope/seed1/log.csv" | cut -d, -f1) steps)"
grep -q "This task's runs also take \`--steps 2 --lr 1e-2\` (--task-flags)" "$tf/summary.md"; check $? "summary.md does not show the task flags"
"${tf_cmd[@]}" --task-flags 'reverse=--steps 2 --lr 1e-2' -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/logtf2" 2>&1
grep -q "2 already done, 0 to train" "$tmp/logtf2"; check $? "the same --task-flags retrained a run:" || head -3 "$tmp/logtf2"
"${tf_cmd[@]}" --task-flags 'reverse=--steps 4' -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/logtf3" 2>&1
[ $? = 1 ] && grep -q "runs/reverse/nope/seed1 was made with other settings" "$tmp/logtf3"
check $? "other --task-flags were not refused for the task's finished run:" || cat "$tmp/logtf3"

# ---- text: perplexity by window, RoPE with an extension, a learned table past its rows
cat README.md docs/*.md | head -c 60000 > "$tmp/text.txt"   # any text of >= ~42 KB
./compare --out "$tmp/text" --data "$tmp/text.txt" --schemes rope,learned --rope-extensions yarn,longrope --quiet \
  --eval-flags '--ppl-skip 64 --ppl-tokens 2048 --ppl-stride 0.25' -- $model --steps 2 --seq 16 > "$tmp/log4" 2>&1; check $? "text grid failed:" || cat "$tmp/log4"
head -1 "$tmp/text/results.csv" | grep -q '^data,scheme,seed,window,mode,tokens,loss,ppl,note$'; check $? "text results.csv header"
grep -q ",rope+yarn,1,128,sliding,2048," "$tmp/text/results.csv"; check $? "no rope+yarn row at 8x"
grep -q ",learned,1,128,nonoverlap,.*learned table" "$tmp/text/results.csv"; check $? "learned past its table has no note"
grep -q "^| rope+yarn |" "$tmp/text/summary.md"; check $? "summary lacks rope+yarn"
grep -q "a sliding window (stride 0.25 of the window: each token scored once, past the first window with at least 0.75 of a window" \
  "$tmp/text/summary.md"; check $? "summary.md does not state the sliding window's stride and context"
# longrope: the lists searched per run on the validation tokens after the 64 skipped + 2048 + 1 the
# evaluations read, then used by its evaluation; not for learned
tr="$tmp/text/runs/text"
grep -q -- "--rope-factor 8 --ppl-skip 2113 --longrope-search $tr/rope/seed1/longrope$" "$tr/rope/seed1/done" &&
  grep -q -- "--rope-scaling longrope --rope-factor 8 --longrope-short $tr/rope/seed1/longrope.short --longrope-long $tr/rope/seed1/longrope.long" "$tr/rope/seed1/done" &&
  [ "$(wc -l < "$tr/rope/seed1/longrope.long")" = 4 ] && grep -q ",rope+longrope,1,128,sliding,2048," "$tmp/text/results.csv" &&
  grep -q "^| rope+longrope |" "$tmp/text/summary.md" && [ ! -e "$tr/learned/seed1/longrope.long" ]
check $? "the longrope extension (search, then evaluation):" || cat "$tr/rope/seed1/done"

# ---- text with --attention-stats: ./train --attention-stats per run (with --bos, as trained) and
# per window a table of the collapsed fraction by layer in summary.md
./compare --out "$tmp/attn" --data "$tmp/text.txt" --schemes alibi --seeds 1,2 --attention-stats --quiet \
  --eval-flags '--ppl-tokens 2048' -- $model --steps 2 --seq 16 --bos > "$tmp/log7" 2>&1; check $? "text grid with --attention-stats failed:" || cat "$tmp/log7"
grep -q -- "--bos --attention-stats $tmp/attn/runs/text/alibi/seed2/attention.csv$" "$tmp/attn/runs/text/alibi/seed2/train.log"
check $? "the attention command lacks --bos or its CSV"
grep -q "^### Attention: heads collapsed onto the first key" "$tmp/attn/summary.md" && grep -q "^Windows of 128 tokens (8T):" "$tmp/attn/summary.md" \
  && grep -q "^| alibi | [0-9.]* \[[-0-9.]*, [-0-9.]*\] |" "$tmp/attn/summary.md"; check $? "summary.md lacks the attention tables"
# the numbers, on hand-made runs: layer 0's fractions 0, 0.5, 1 over three seeds at W = 32 give
# 0.50 [0.50 -+ t(0.975, 2) 0.5 / sqrt(3) = 1.242]; layer 1's 0.25 each give 0.25 [0.25, 0.25];
# W = 64 has no number (a learned table), its note below the table
fa="$tmp/fattn"
for s in 1 2 3; do
  d="$fa/runs/text/alibi/seed$s"; mkdir -p "$d"; : > "$d/done"
  echo "model: 2 layers, 4 heads, dim 16, context 16, vocab 256 | 1 parameters" > "$d/train.log"
  printf 'step,loss\n1,2.0\n' > "$d/log.csv"
  printf 'window,mode,tokens,loss,ppl,note\n32,nonoverlap,64,1.0,2.718,\n' > "$d/ppl.csv"
  f=$(awk -v s=$s 'BEGIN { print (s - 1) / 2 }')
  { echo "window,layer,head,windows,rows,sink_mass,entropy,distance,collapsed,layer_collapsed_frac,note"
    for h in 0 1 2 3; do echo "32,0,$h,16,496,0.3,1.0,2.0,0,$f,"; echo "32,1,$h,16,496,0.3,1.0,2.0,0,0.25,"; done
    for l in 0 1; do for h in 0 1 2 3; do echo "64,$l,$h,0,0,,,,,,learned table has 16 rows"; done; done; } > "$d/attention.csv"
done
./compare --out "$fa" --data "$tmp/text.txt" --schemes alibi --seeds 1,2,3 --attention-stats --report-only > "$tmp/log8" 2>&1
check $? "--report-only with --attention-stats failed:" || cat "$tmp/log8"
grep -qF "| alibi | 0.50 [-0.74, 1.74] | 0.25 [0.25, 0.25] |" "$fa/summary.md" && grep -qF "| alibi | n/a | n/a |" "$fa/summary.md" &&
  grep -qF "n/a for alibi: learned table has 16 rows." "$fa/summary.md" && grep -q "^Windows of 32 tokens (2T):" "$fa/summary.md"
check $? "the hand-made attention table:" || sed -n '/### Attention/,$p' "$fa/summary.md"
# the plot by depth: no 1x window here, so the longest with numbers (32): layer 0's 0.5 [-0.742, 1.742]
grep -q "^0 0.5 -0.742[0-9]* 1.742[0-9]*$" "$fa/attention_collapse.dat" && grep -q "^1 0.25 0.25 0.25$" "$fa/attention_collapse.dat" &&
  grep -q "windows of 32 tokens" "$fa/attention_collapse.dat" && [ -f "$fa/attention_collapse.gp" ]
check $? "the collapse plot's data:" || cat "$fa/attention_collapse.dat"
printf 'window,layer\n' > "$fa/runs/text/alibi/seed3/attention.csv"
expect_fail "an attention.csv with other columns" "has the columns 'window,layer'" ./compare --out "$fa" --data "$tmp/text.txt" --schemes alibi --seeds 1,2,3 --attention-stats --report-only

# ---- text with --double-length: the listed schemes also trained at 2T with half the rows, their
# windows the same lengths, no RoPE extension on them, and the paired table at 2T
./compare --out "$tmp/dbl" --data "$tmp/text.txt" --schemes alibi,rope --double-length alibi,rope --rope-extensions yarn --quiet \
  --eval-flags '--ppl-tokens 2048' -- $model --steps 2 --seq 16 --batch 4 > "$tmp/log9" 2>&1; check $? "text grid with --double-length failed:" || cat "$tmp/log9"
dl="$tmp/dbl/runs/text"
head -1 "$dl/alibi@32/seed1/done" | grep -q -- "--seq 16 --batch 4 --seq 32 --batch 2$" && grep -q "context 32" "$dl/alibi@32/seed1/train.log"
check $? "alibi@32 did not train at 32 tokens with 2 rows"
[ -s "$dl/alibi@32/seed1/ppl.csv" ] && [ -s "$dl/alibi/seed1/ppl.csv" ] &&
  [ "$(cut -d, -f1 "$dl/alibi@32/seed1/ppl.csv" | sort -u | tr '\n' ' ')" = "$(cut -d, -f1 "$dl/alibi/seed1/ppl.csv" | sort -u | tr '\n' ' ')" ]
check $? "the doubled run is not scored on the same windows"
# with --attention-stats the doubled run's statistics are at the same window lengths too (halved multiples)
./compare --out "$tmp/dbla" --data "$tmp/text.txt" --schemes alibi --double-length alibi --attention-stats --quiet \
  --eval-flags '--ppl-tokens 2048' -- $model --steps 2 --seq 16 --batch 4 > "$tmp/log9a" 2>&1; check $? "--double-length with --attention-stats failed:" || cat "$tmp/log9a"
da="$tmp/dbla/runs/text"
[ -s "$da/alibi@32/seed1/attention.csv" ] && [ "$(tail -n +2 "$da/alibi@32/seed1/attention.csv" | cut -d, -f1 | sort -un | tr '\n' ' ')" = "$(tail -n +2 "$da/alibi/seed1/attention.csv" | cut -d, -f1 | sort -un | tr '\n' ' ')" ]
check $? "the doubled run's attention statistics are not at the same windows: $(cut -d, -f1 "$da/alibi@32/seed1/attention.csv" | sort -u | tr '\n' ' ')"
[ -f "$dl/rope/seed1/ppl_yarn.csv" ] && [ ! -f "$dl/rope@32/seed1/ppl_yarn.csv" ]; check $? "RoPE extensions: on rope, not on rope@32"
grep -q "^### Trained at 16 tokens and tested at 32, against trained at 32" "$tmp/dbl/summary.md" \
  && [ "$(grep -c '^| \(alibi\|rope\) | \(alibi\|rope\)@32 |' "$tmp/dbl/summary.md")" = 8 ]
check $? "summary.md lacks the 2T tables (4 rows each)" || cat "$tmp/dbl/summary.md"
# the numbers, on hand-made runs: at 32 tokens X = alibi 6.0, 6.2, 6.4 and Y = alibi@32 5.9, 6.0, 6.1;
# geometric means with t-intervals on the log (t(0.975, 2) = 4.3027): X 6.198 [5.720, 6.715], Y 5.999
# [5.756, 6.253]; X / Y 1.017, 1.033, 1.049: 1.033 [0.994, 1.074]; sign-flip p of the log ratios
# 2 / 8 (all three positive). (Python's math module computed these; a mean of the raw perplexities
# would give X 6.200 [5.703, 6.697].)
fd="$tmp/fdbl"
for s in 1 2 3; do
  for sc in alibi alibi@32; do
    d="$fd/runs/text/$sc/seed$s"; mkdir -p "$d"; : > "$d/done"
    echo "model: 2 layers, 4 heads, dim 16, context $([ $sc = alibi ] && echo 16 || echo 32), vocab 256 | 1 parameters" > "$d/train.log"
    printf 'step,loss\n1,2.0\n' > "$d/log.csv"
    v=$(awk -v s=$s -v sc=$sc 'BEGIN { print sc == "alibi" ? 5.8 + 0.2 * s : 5.8 + 0.1 * s }')
    printf 'window,mode,tokens,loss,ppl,note\n32,nonoverlap,64,1.0,%s,\n' "$v" > "$d/ppl.csv"
  done
done
./compare --out "$fd" --data "$tmp/text.txt" --schemes alibi --double-length alibi --seeds 1,2,3 --report-only -- --seq 16 --batch 4 > "$tmp/log10" 2>&1
check $? "--report-only with --double-length failed:" || cat "$tmp/log10"
grep -qF "| alibi | alibi@32 | 6.198 [5.720, 6.715] | 5.999 [5.756, 6.253] | 1: 1.017, 2: 1.033, 3: 1.049 | 3 | 1.033 | [0.994, 1.074] | 0.25 | 0.25 | not distinguishable with 3 seeds |" "$fd/summary.md"
check $? "the hand-made 2T table:" || sed -n '/### Trained at/,$p' "$fd/summary.md"
# one comparison, 3 seeds: Holm needs p < 0.05, which 2 / 2^n first gives at n = 6; the sliding
# table (no sliding perplexities in these runs) has no pair, and says only none
f2t="With the chance of any false verdict among these 1 comparisons at most 5% (Holm p < 0.05 and the interval on one side of 1): none"
grep -qxF "$f2t. The smallest p the sign-flip test can give with 3 seeds is 0.25, and Holm asks below 0.05 of the smallest of 1 p; 6 seeds or more could pass it." "$fd/summary.md" \
  && grep -qxF "$f2t." "$fd/summary.md" && grep -qF "| alibi | alibi@32 | n/a | n/a |  | 0 | | | | | no seed with both perplexities |" "$fd/summary.md"
check $? "the 2T tables' family lines with 3 seeds and with none:" || sed -n '/### Trained at/,$p' "$fd/summary.md"
# a cell over fewer seeds than the grid's says how many: alibi's seed 3 without a perplexity at 32
# tokens gives the geometric mean of 6.0 and 6.2 with t(0.975, 1) = 12.706: 6.10 [4.95, 7.51], in the
# perplexity table and in the 2T table's X column
fm="$tmp/fdbl-missing"; cp -r "$fd" "$fm"; rm -f "$fm/summary.md"
printf 'window,mode,tokens,loss,ppl,note\n' > "$fm/runs/text/alibi/seed3/ppl.csv"
./compare --out "$fm" --data "$tmp/text.txt" --schemes alibi --double-length alibi --seeds 1,2,3 --report-only -- --seq 16 --batch 4 > "$tmp/log10m" 2>&1 \
  && grep -qF "| alibi | 6.10 [4.95, 7.51] (2 of 3 seeds) |" "$fm/summary.md" && grep -qF "| alibi@32 | 6.00 [5.76, 6.25] |" "$fm/summary.md" \
  && grep -qF "| alibi | alibi@32 | 6.099 [4.952, 7.512] (2 of 3 seeds) | 5.999 [5.756, 6.253] |" "$fm/summary.md"
check $? "a perplexity cell over 2 of 3 seeds:" || { cat "$tmp/log10m"; sed -n '/^Non-overlapping/,/^$/p' "$fm/summary.md"; }
# Holm over a 2T table: alibi and rope, each at 16 and at 32, 8 seeds; at 32 tokens alibi = 6 + 0.05 s,
# rope = 7 + 0.05 s, alibi@32 = 5.5 + 0.05 s, rope@32 = 7 + 0.05 s + 0.1 (odd s) or - 0.1 (even s).
# Three of the four comparisons have every seed on one side (p = 2 / 256 = 0.007812, Holm 4 x that =
# 0.03125); rope against rope@32 alternates (exact p 0.8906, its own Holm p). Python computed these.
fh="$tmp/fholm"
for s in 1 2 3 4 5 6 7 8; do
  for sc in alibi alibi@32 rope rope@32; do
    d="$fh/runs/text/$sc/seed$s"; mkdir -p "$d"; : > "$d/done"
    echo "model: 2 layers, 4 heads, dim 16, context $(case $sc in *@32) echo 32;; *) echo 16;; esac), vocab 256 | 1 parameters" > "$d/train.log"
    printf 'step,loss\n1,2.0\n' > "$d/log.csv"
    v=$(awk -v s=$s -v sc=$sc 'BEGIN { b = sc ~ /^alibi/ ? 6.0 : 7.0; if (sc == "alibi@32") b = 5.5
      v = b + 0.05 * s; if (sc == "rope@32") v += s % 2 ? 0.1 : -0.1; printf "%.4f", v }')
    printf 'window,mode,tokens,loss,ppl,note\n32,nonoverlap,64,1.0,%s,\n' "$v" > "$d/ppl.csv"
  done
done
./compare --out "$fh" --data "$tmp/text.txt" --schemes alibi,rope --double-length alibi,rope --seeds 1,2,3,4,5,6,7,8 --report-only \
  -- --seq 16 --batch 4 > "$tmp/log10h" 2>&1; check $? "--report-only with --double-length, 8 seeds, failed:" || cat "$tmp/log10h"
sed -n '/^### Trained at/,$p' "$fh/summary.md" | sed -n '/^Non-overlapping windows:/,/^With the chance/p' | grep '^| alibi \|^| rope \|^With' > "$tmp/holm2t"
cat > "$tmp/holm2t.want" <<'WANT'
| alibi | alibi@32 | 1: 1.090, 2: 1.089, 3: 1.088, 4: 1.088, 5: 1.087, 6: 1.086, 7: 1.085, 8: 1.085 | 8 | 1.087 | 0.007812 | 0.03125 | alibi@32 better |
| rope | alibi@32 | 1: 1.270, 2: 1.268, 3: 1.265, 4: 1.263, 5: 1.261, 6: 1.259, 7: 1.256, 8: 1.254 | 8 | 1.262 | 0.007812 | 0.03125 | alibi@32 better |
| alibi | rope@32 | 1: 0.846, 2: 0.871, 3: 0.848, 4: 0.873, 5: 0.850, 6: 0.875, 7: 0.852, 8: 0.877 | 8 | 0.862 | 0.007812 | 0.03125 | alibi at 16 better |
| rope | rope@32 | 1: 0.986, 2: 1.014, 3: 0.986, 4: 1.014, 5: 0.986, 6: 1.014, 7: 0.987, 8: 1.014 | 8 | 1.000 | 0.8906 | 0.8906 | not distinguishable with 8 seeds |
With the chance of any false verdict among these 4 comparisons at most 5% (Holm p < 0.05 and the interval on one side of 1): alibi@32 better than alibi at 16, alibi@32 better than rope at 16, alibi at 16 better than rope@32.
WANT
# the table's rows without the perplexity and interval columns, which the 3-seed case above checks
awk -F' [|] ' '/^[|]/ { print $1 " | " $2 " | " $5 " | " $6 " | " $7 " | " $9 " | " $10 " | " $11; next } { print }' "$tmp/holm2t" | diff "$tmp/holm2t.want" - > /dev/null
check $? "Holm over the hand-made 8-seed 2T table:" ||
  diff "$tmp/holm2t.want" <(awk -F' [|] ' '/^[|]/ { print $1 " | " $2 " | " $5 " | " $6 " | " $7 " | " $9 " | " $10 " | " $11; next } { print }' "$tmp/holm2t")
# the perplexity table and the plot's numbers are the same geometric means
grep -qF "| alibi | 6.20 [5.72, 6.72] |" "$fd/summary.md" && grep -qF "| alibi@32 | 6.00 [5.76, 6.25] |" "$fd/summary.md" &&
  grep -q "^32 6.19785 5.99944$" "$fd/ppl_by_length.dat"
check $? "the hand-made perplexity table or plot:" || cat "$fd/summary.md" "$fd/ppl_by_length.dat"

# ---- retrieval: accuracy by haystack length and key depth
./compare --out "$tmp/find" --task retrieval --schemes nope --eval-per-length 2 --quiet \
  -- $model --steps 2 --depths 3 --train-max 64 --test-max 128 > "$tmp/log6" 2>&1; check $? "retrieval grid failed:" || cat "$tmp/log6"
grep -q "^| nope | depth 0.00 | depth 0.50 | depth 1.00 |" "$tmp/find/summary.md" && grep -q "^| 128 |" "$tmp/find/summary.md"
check $? "summary.md lacks the length x depth table"
grep -q "^retrieval,nope,1,128,0.5,ood," "$tmp/find/results.csv"; check $? "results.csv lacks a depth row"
# a run not fitted stays out of the depth table: seed 1 fitted (10 of 10 at depth 0.5), seed 2 not
# (0 of 10): 100.0, not the 50.0 of both pooled
for seed in 1 2; do
  d="$tmp/depthfit/runs/retrieval/nope/seed$seed"; mkdir -p "$d"; : > "$d/done"
  { echo "accuracy on retrieval (exact match of the greedy answer; trained on lengths 1-64):"
    [ $seed = 1 ] && echo "$FIT" || echo "$NOFIT"; } > "$d/train.log"
  printf 'step,loss\n1,2.0\n' > "$d/log.csv"
  c=$((seed == 1 ? 10 : 0))
  { echo "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share"
    echo "retrieval,nope,$seed,64,0.5,id,10,10,1.000000,0,,10,0.3000"
    echo "retrieval,nope,$seed,128,0.5,ood,10,$c,$(awk "BEGIN{printf \"%.6f\", $c/10}"),0,,10,0.3000"; } > "$d/eval.csv"
done
./compare --out "$tmp/depthfit" --task retrieval --schemes nope --seeds 1,2 --train "$tmp/no-train" --report-only \
  > "$tmp/logd" 2>&1; check $? "--report-only on the retrieval runs failed:" || cat "$tmp/logd"
grep -q "^| 128 | 100.0 |" "$tmp/depthfit/summary.md"; check $? "the depth table pools a run that was not fitted"

# ---- without gnuplot: a message, the CSV and summary still written, exit 0
mkdir -p "$tmp/nobin"
PATH="$tmp/nobin" ./compare --out "$out" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 3 --quiet \
  -- $model --steps 3 --train-max 4 --test-max 8 > "$tmp/log5" 2>&1; check $? "compare without gnuplot failed"
grep -q "apt-get install gnuplot-nox" "$tmp/log5"; check $? "no install hint without gnuplot"

# ---- bad input: a message naming the problem, non-zero exit
mkdir -p "$tmp/old/runs/copy/nope/seed1"; : > "$tmp/old/runs/copy/nope/seed1/done"
printf 'task,scheme,seed,length,depth,split,n,correct,accuracy,skipped\ncopy,nope,1,1,,id,5,5,1.000000,0\n' > "$tmp/old/runs/copy/nope/seed1/eval.csv"
expect_fail "no --out" "--out DIR" ./compare --task copy
expect_fail "longrope without --ppl-tokens" "give --eval-flags '--ppl-tokens N'" ./compare --out "$tmp/x" --data README.md \
  --schemes rope --rope-extensions longrope
expect_fail "longrope with another validation text for the evaluations" "--eval-flags gives --val-frac" ./compare --out "$tmp/x" \
  --data README.md --schemes rope --rope-extensions longrope --eval-flags '--ppl-tokens 512 --val-frac 0.2'
expect_fail "task and data" "either --task" ./compare --out "$tmp/x" --task copy --data README.md
expect_fail "neither task nor data" "either --task" ./compare --out "$tmp/x"
expect_fail "unknown flag" "unknown flag --bogus" ./compare --out "$tmp/x" --task copy --bogus 1
expect_fail "scheme without =" "LABEL=FLAGS" ./compare --out "$tmp/x" --task copy --scheme rope
expect_fail "scheme twice" "given twice" ./compare --out "$tmp/x" --task copy --schemes rope,rope
expect_fail "flag compare sets" "set by ./compare" ./compare --out "$tmp/x" --task copy -- --pe rope
# only the scheme differs between a seed's runs: a scheme's flags are positional, and no scheme setting after --
expect_fail "a non-positional flag in a scheme" "--lr is not a positional setting" ./compare --out "$tmp/x" --task copy --scheme 'x=--pe nope --lr 1'
expect_fail "a scheme without flags" "give the scheme's flags" ./compare --out "$tmp/x" --task copy --scheme 'x='
expect_fail "--task-flags of a task not compared" "'sort' is not one of the tasks compared" ./compare --out "$tmp/x" --task copy --task-flags 'sort=--steps 5'
expect_fail "--task-flags twice for a task" "task 'copy' is given twice" ./compare --out "$tmp/x" --task copy --task-flags 'copy=--steps 5' --task-flags 'copy=--lr 1e-3'
expect_fail "--task-flags without =" "write TASK=FLAGS" ./compare --out "$tmp/x" --task copy --task-flags 'copy --steps 5'
expect_fail "--task-flags that is not a flag" "'steps' is not a flag" ./compare --out "$tmp/x" --task copy --task-flags 'copy=steps 5'
expect_fail "--task-flags with a flag ./compare sets" "--seed in --task-flags 'copy=--seed 3' is set by ./compare itself" ./compare --out "$tmp/x" --task copy --task-flags 'copy=--seed 3'
expect_fail "--task-flags with a scheme setting" "--rope-base in --task-flags 'copy=--rope-base 500' is a positional setting" ./compare --out "$tmp/x" --task copy --schemes rope --task-flags 'copy=--rope-base 500'
expect_fail "--task-flags --steps with --fit-target" "--steps in --task-flags 'copy=--steps 9' with --fit-target" ./compare --out "$tmp/x" --task copy --fit-target 0.9 --task-flags 'copy=--steps 9' -- --max-steps 5
expect_fail "--task-flags with text" "--task-flags applies to tasks" ./compare --out "$tmp/x" --data README.md --task-flags 'text=--steps 5'
expect_fail "a scheme setting after --" "--rope-fraction after -- is a positional setting" ./compare --out "$tmp/x" --task copy --scheme 'r=--pe rope --rope-fraction 0.25' -- --rope-fraction 1
expect_fail "bad seed" "--seeds" ./compare --out "$tmp/x" --task copy --seeds 1,x
expect_fail "seed twice" "given twice" ./compare --out "$tmp/x" --task copy --seeds 1,1
expect_fail "task twice" "given twice" ./compare --out "$tmp/x" --task copy,copy
expect_fail "other settings in a finished grid" "made with other settings" ./compare --out "$out" --task copy-repeat \
  --schemes nope,alibi --seeds 1,2 --eval-per-length 4 --quiet -- $model --steps 3 --train-max 4 --test-max 8
expect_fail "unreadable data" "cannot be read" ./compare --out "$tmp/x" --data "$tmp/missing.txt"
expect_fail "extensions without text" "--rope-extensions applies" ./compare --out "$tmp/x" --task copy --rope-extensions yarn
expect_fail "fit target without budget" "give --max-steps N after --" ./compare --out "$tmp/x" --task copy --fit-target 0.9 -- --steps 5
expect_fail "fit target with --steps" "give --max-steps N instead of --steps" ./compare --out "$tmp/x" --task copy --fit-target 0.9 \
  -- --max-steps 50 --steps 5
expect_fail "fit target out of range" "--fit-target 90" ./compare --out "$tmp/x" --task copy --fit-target 90 -- --max-steps 50
expect_fail "fit target after --" "set by ./compare" ./compare --out "$tmp/x" --task copy -- --fit-target 0.9 --max-steps 50
expect_fail "--attention-stats with a task" "--attention-stats applies to text" ./compare --out "$tmp/x" --task copy --attention-stats
expect_fail "fit target with text" "--fit-target applies to tasks" ./compare --out "$tmp/x" --data README.md --fit-target 0.9 -- --max-steps 5
expect_fail "claim of an unknown scheme" "'rope' is not one of the schemes" ./compare --out "$tmp/x" --task copy --schemes nope,alibi --claims 'nope>rope'
expect_fail "malformed claim" "write A>B" ./compare --out "$tmp/x" --task copy --schemes nope,alibi --claims 'nope<alibi'
expect_fail "claim against itself" "with itself" ./compare --out "$tmp/x" --task copy --schemes nope,alibi --claims 'nope>nope'
expect_fail "report-only without a folder" "--report-only" ./compare --out "$tmp/none" --task copy --report-only
expect_fail "report-only without finished runs" "no finished run" ./compare --out "$tmp/fake" --task sort --schemes nope --report-only
expect_fail "an eval.csv of another format" "expected 'task,scheme" ./compare --out "$tmp/old" --task copy --schemes nope --report-only
# an empty done file (made by hand) is a finished run for a report only: a training grid cannot
# check its settings, and refuses it rather than mix it with runs of other settings
expect_fail "an empty done file outside --report-only" "records no settings" ./compare --out "$tmp/old" --task copy --schemes nope --seeds 1
expect_fail "a failing run" "failed" ./compare --out "$tmp/y" --task nosuchtask --schemes nope --quiet -- $model --steps 1
grep -q "is not a task" "$tmp/y/runs/nosuchtask/nope/seed1/train.log"; check $? "the failing run's train.log lacks the reason"

# ---- --attention-distance: nope's model against each scheme's of the seed and nope's of the next seed
# (its twins, the paired tables and the claim: tests/test_distance.sh)
./compare --out "$tmp/dist" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 5 --attention-distance \
  --threads 1 --jobs 2 --quiet -- $model --steps 30 --train-max 6 --test-max 10 --seq 32 > "$tmp/dist.out" 2>&1
check $? "compare --attention-distance failed" || tail -5 "$tmp/dist.out"
for r in nope/seed1 nope/seed2 alibi/seed1 alibi/seed2; do
  [ "$(head -1 "$tmp/dist/runs/copy-repeat/$r/distance.csv" 2> /dev/null)" = "layer,split,instances,jsd,jsd_paper" ]
  check $? "--attention-distance: no distance.csv in $r"
done
grep -q "the nope row, NoPE against NoPE of another seed" "$tmp/dist/summary.md" && grep -q "^| nope (vs nope, another seed) | 1 |" "$tmp/dist/summary.md" &&
  grep -q "^| alibi | 2 |" "$tmp/dist/summary.md"; check $? "summary.md lacks the attention distance table"
# the baseline in disjoint pairs: with 2 seeds the one pair 1-2 (nope seed 1's file), not also 2-1
want=$(awk -F, '$1 == 0 && $2 == "in" { printf "%.4f", $4 }' "$tmp/dist/runs/copy-repeat/nope/seed1/distance.csv")
grep "^| nope (vs nope, another seed) | 1 |" "$tmp/dist/summary.md" | grep -qF "| 1 | $want |"
check $? "the baseline's layer 0 should be seed 1's $want: $(grep '^| nope (vs' "$tmp/dist/summary.md")"
# the table's layer 0 (in) for alibi: the mean of the two seeds' distance.csv rows
want=$(cat "$tmp/dist/runs/copy-repeat/alibi/seed"[12]/distance.csv | awk -F, '$1 == 0 && $2 == "in" { s += $4; n++ } END { printf "%.4f", s / n }')
grep "^| alibi | 2 |" "$tmp/dist/summary.md" | grep -qF "| $want ["
check $? "alibi's layer 0 distance should be $want: $(grep '^| alibi | 2 |' "$tmp/dist/summary.md")"
grep -q "^0 " "$tmp/dist/distance_copy-repeat.dat" && [ -f "$tmp/dist/distance_copy-repeat.gp" ]; check $? "no distance plot data"
rm -rf "$tmp/dist/runs/copy-repeat/alibi/seed1/distance.csv"     # a second command makes only what is missing
./compare --out "$tmp/dist" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 5 --attention-distance \
  --threads 1 --jobs 2 --quiet -- $model --steps 30 --train-max 6 --test-max 10 --seq 32 > "$tmp/dist.out" 2>&1
grep -q "compare: 1 attention distances" "$tmp/dist.out"; check $? "a second command should make the one missing distance: $(tail -3 "$tmp/dist.out")"
# distance.pair names the two models; a distance of another pair (say, another seed list gave nope
# another partner) is computed again
d1="$tmp/dist/runs/copy-repeat"
[ "$(cat "$d1/nope/seed1/distance.pair")" = "$d1/nope/seed1/model.ckpt $d1/nope/seed2/model.ckpt" ]
check $? "nope seed 1's distance.pair: $(cat "$d1/nope/seed1/distance.pair")"
echo "$d1/nope/seed1/model.ckpt $d1/nope/seed9/model.ckpt" > "$d1/alibi/seed1/distance.pair"
./compare --out "$tmp/dist" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 5 --attention-distance \
  --threads 1 --jobs 2 --quiet -- $model --steps 30 --train-max 6 --test-max 10 --seq 32 > "$tmp/dist.out" 2>&1
grep -q "compare: 1 attention distances" "$tmp/dist.out" &&
  [ "$(cat "$d1/alibi/seed1/distance.pair")" = "$d1/nope/seed1/model.ckpt $d1/alibi/seed1/model.ckpt" ]
check $? "a distance of another pair should be computed again: $(tail -3 "$tmp/dist.out"); $(cat "$d1/alibi/seed1/distance.pair")"
# a run restored without its checkpoint: its pairs are left out with a message, not failed
rm "$tmp/dist/runs/copy-repeat/alibi/seed2/distance.csv" "$tmp/dist/runs/copy-repeat/alibi/seed2/model.ckpt"
./compare --out "$tmp/dist" --task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 5 --attention-distance \
  --threads 1 --jobs 2 --quiet -- $model --steps 30 --train-max 6 --test-max 10 --seq 32 > "$tmp/dist.out" 2>&1 \
  && grep -q "no model.ckpt (its checkpoint was not kept), left out" "$tmp/dist.out" &&
  grep -q "^| alibi | 1 |" "$tmp/dist/summary.md" && grep -q "1 without a distance" "$tmp/dist/summary.md"
check $? "a pair without a checkpoint should be left out and counted: $(tail -3 "$tmp/dist.out")"
expect_fail "--attention-distance without nope" "labelled nope" ./compare --out "$tmp/z" --task copy --schemes rope,alibi --attention-distance -- $model --steps 1
expect_fail "--double-length without --seq" "give --seq T --batch B" ./compare --out "$tmp/z" --data README.md --double-length alibi -- --batch 4
expect_fail "--double-length with --context" "--context after -- would give the models" ./compare --out "$tmp/z" --data README.md --double-length alibi -- --seq 16 --batch 4 --context 64
expect_fail "--double-length with an odd batch" "must be even" ./compare --out "$tmp/z" --data README.md --double-length alibi -- --seq 16 --batch 3
long_windows=$(printf '1,%.0s' $(seq 60))1
expect_fail "--double-length with a window list too long to halve" "is too long" ./compare --out "$tmp/z" --data README.md \
  --schemes alibi --double-length alibi --eval-flags "--ppl-windows $long_windows" -- --seq 16 --batch 4
expect_fail "--double-length of an unknown scheme" "'kerple' is not one of the schemes" ./compare --out "$tmp/z" --data README.md --schemes alibi --double-length kerple -- --seq 16 --batch 4
expect_fail "--double-length on a task" "applies to text" ./compare --out "$tmp/z" --task copy --double-length nope -- --seq 16 --batch 4
expect_fail "--attention-distance on text" "applies to tasks" ./compare --out "$tmp/z" --data README.md --attention-distance -- $model --steps 1
# flags that only shape something the grid does not do are refused, not ignored
expect_fail "a scheme setting its model does not read" "--rope-base is read only with a rope, xpos or p-rope layer" ./compare --out "$tmp/z" --task copy --scheme 'x=--pe alibi --rope-base 500' -- $model --steps 1
expect_fail "--eval-per-length on text" "--eval-per-length applies to tasks" ./compare --out "$tmp/z" --data README.md --eval-per-length 5 -- $model --steps 1
expect_fail "--rope-factor without --rope-extensions" "--rope-factor is the factor of --rope-extensions" ./compare --out "$tmp/z" --task copy --rope-factor 4 -- $model --steps 1
expect_fail "--floor without --claims" "--floor sets the claims' sensitivity table" ./compare --out "$tmp/z" --task copy --floor 0.5 -- $model --steps 1
expect_fail "--claims-unit without claims" "--claims-unit is the unit of" ./compare --out "$tmp/z" --task copy --claims-unit task -- $model --steps 1

finish
