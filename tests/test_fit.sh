#!/usr/bin/env bash
# tests/test_fit.sh: fit-first training (--fit-target) through ./train.
#  - a target reached early: training stops at the first check whose validation accuracy reaches
#    it (every earlier check is below), the log and the checkpoint end at that step, and the last
#    line says "fit: fitted at step S";
#  - an unreachable target: every step of the budget runs, a check at the last step, and the line
#    says "fit: not fitted in N steps";
#  - lengths with fewer validation instances than --fit-per-length are named ("fit set: ...").
. "$(dirname "$0")/lib.sh"
# copy-repeat with 26 symbols at lengths 1-4 fits 0.4 within tens of steps at this learning rate
t="--task copy-repeat --alphabet 26 --train-min 1 --train-max 4 --test-max 4 --layers 1 --heads 2 --dim 32 --batch 8 --lr 1e-2 --threads 2 --eval-per-length 5 --log-every 1000"

./train $t --fit-target 0.4 --max-steps 200 --fit-every 10 --log "$tmp/fit.csv" --save "$tmp/fit.ckpt" > "$tmp/fit.out" 2>&1
check $? "the fitted run"
# the checks: step and accuracy of each
grep "^fit check: step" "$tmp/fit.out" | sed 's/^fit check: step \([0-9]*\) | validation accuracy \([0-9.]*\) .*/\1 \2/' > "$tmp/checks"
n=$(wc -l < "$tmp/checks")
last_step=$(tail -1 "$tmp/checks" | cut -d' ' -f1)
[ "$n" -ge 2 ] && [ "$last_step" -lt 200 ]; check $? "the target is reached early, after a check that missed it ($n checks, last at step $last_step)"
awk -v n="$n" '{ if (NR < n && $2 >= 0.4) bad = 1; if (NR == n && $2 < 0.4) bad = 1; if ($1 != 10 * NR) bad = 1 } END { exit bad }' "$tmp/checks"
check $? "every check before the last is below 0.4, the last reaches it, one every 10 steps: $(tr '\n' ' ' < "$tmp/checks")"
grep -q "^fit: fitted at step $last_step: validation accuracy [0-9.]* >= 0.4000$" "$tmp/fit.out"
check $? "the line 'fit: fitted at step $last_step: ...': $(grep '^fit:' "$tmp/fit.out")"
[ "$(tail -1 "$tmp/fit.csv" | cut -d, -f1)" = "$last_step" ] && [ "$(wc -l < "$tmp/fit.csv")" = $((last_step + 1)) ]
check $? "the log ends at step $last_step"
grep -q "^saved $tmp/fit.ckpt" "$tmp/fit.out" && grep -q "^accuracy on copy-repeat" "$tmp/fit.out"
check $? "the checkpoint is saved and the test evaluation follows"
# copy-repeat has 26 instances per length, about 3 of them validation: fewer than --fit-per-length's
# 20 at every length, so the line names each, and its counts add up to the checks' total
total=$(grep -m1 "^fit check: step" "$tmp/fit.out" | sed 's|.*/\([0-9]*\))$|\1|')
line=$(grep "^fit set: fewer than 20 validation instances (all there are):" "$tmp/fit.out")
echo "$line" | grep -q " len 1: [0-9]* len 2: [0-9]* len 3: [0-9]* len 4: [0-9]*; the check pools $total over lengths 1-4$" &&
  [ "$(echo "$line" | grep -o 'len [0-9]*: [0-9]*' | awk '{ s += $3 } END { print s }')" = "$total" ]
check $? "the small validation sets are named and add up to the pooled $total: $line"
./train --resume "$tmp/fit.ckpt" --max-steps 300 --threads 2 --eval-per-length 0 > "$tmp/res.out" 2>&1
grep -q "step *$((last_step + 1))/300" "$tmp/res.out"; check $? "the checkpoint holds step $last_step: a resume goes on from $((last_step + 1))"

./train $t --fit-target 1 --max-steps 25 --fit-every 10 --log "$tmp/nofit.csv" > "$tmp/nofit.out" 2>&1
check $? "the unfitted run"
[ "$(grep -c '^fit check' "$tmp/nofit.out")" = 3 ] && grep -q "^fit check: step 25 " "$tmp/nofit.out"
check $? "checks at steps 10, 20 and the last, 25"
[ "$(tail -1 "$tmp/nofit.csv" | cut -d, -f1)" = 25 ]; check $? "the whole budget runs"
grep -q "^fit: not fitted in 25 steps: validation accuracy [0-9.]* < 1.0000$" "$tmp/nofit.out"
check $? "the line 'fit: not fitted in 25 steps: ...': $(grep '^fit:' "$tmp/nofit.out")"
grep -q "^step    25/25 " "$tmp/nofit.out"; check $? "the lr schedule spans --max-steps (step 25/25)"

finish
