#!/usr/bin/env bash
# tests/test_resume.sh: reproducibility of training runs through ./train.
#  - two runs with the same seed and thread count log identical losses;
#  - a run resumed from its step-15 checkpoint logs the same losses for steps 16..30 as the
#    uninterrupted run (weights, AdamW moments, step, data position and RNG all restored);
#  - sampling after the resumed run equals sampling after the uninterrupted one;
#  - a fit-first task run (--fit-target, checks every 10 steps) resumed from step 15 logs the same
#    losses and the same validation checks as the uninterrupted run.
#  - the same with --dropout 0.1 and --schedule poly --warmup-frac 0.06 (masks and lr resume exactly),
#    and with --bos (stored: the resumed rows open with the boundary token too), and with --precision
#    bf16 on the portable and both emulated paths (stored: the resumed run computes in bf16), and with
#    --data-seed (stored: the resumed task run draws from the data seed's stream, not --seed's).
. "$(dirname "$0")/lib.sh"
# step,loss,val_loss without the timing columns
losses() { cut -d, -f1-3 "$1"; }
common="--layers 2 --heads 2 --dim 32 --seq 32 --batch 4 --accum 2 --steps 30 --val-every 10 --threads 2 --input-pe learned --pe-layers rope,alibi"

./train $common --log "$tmp/full.csv" --save "$tmp/ck{step}" --save-every 15 > /dev/null
check $? "the full run"
[ -f "$tmp/ck15" ] && [ -f "$tmp/ck30" ]; check $? "--save with {step} keeps ck15 and ck30"
./train $common --log "$tmp/again.csv" --sample 60 > "$tmp/again.out"
diff <(losses "$tmp/full.csv") <(losses "$tmp/again.csv") > /dev/null
check $? "two runs with the same seed and threads must log identical losses"
./train --resume "$tmp/ck15" --threads 2 --log "$tmp/resumed.csv" --sample 60 > "$tmp/resumed.out"
check $? "resume from step 15"
grep -q "step    16/30" "$tmp/resumed.out"; check $? "the resumed run starts at step 16"
diff <(losses "$tmp/full.csv" | sed -n '17,31p') <(losses "$tmp/resumed.csv" | tail -n +2) > "$tmp/diff"
check $? "resumed losses (steps 16..30) must equal the uninterrupted run's: $(head -4 "$tmp/diff")"
[ "$(wc -l < "$tmp/resumed.csv")" = 16 ]; check $? "the resumed log has the 15 remaining steps"

# with dropout and the poly schedule: the masks come from (--seed, step, micro-batch), so the
# resumed run drops what the uninterrupted one dropped; the stored flags apply on --resume
drop="$common --dropout 0.1 --wd 0.05 --schedule poly --warmup-frac 0.06"
./train $drop --log "$tmp/dfull.csv" --save "$tmp/dck{step}" --save-every 15 > /dev/null
check $? "the full run with --dropout 0.1"
./train --resume "$tmp/dck15" --threads 2 --log "$tmp/dres.csv" > /dev/null
diff <(losses "$tmp/dfull.csv" | sed -n '17,31p') <(losses "$tmp/dres.csv" | tail -n +2) > "$tmp/diff"
check $? "with dropout, resumed losses (steps 16..30) must equal the uninterrupted run's: $(head -4 "$tmp/diff")"
diff <(cut -d, -f4 "$tmp/dfull.csv" | sed -n '17,31p') <(cut -d, -f4 "$tmp/dres.csv" | tail -n +2) > /dev/null
check $? "the resumed run keeps the poly schedule (its lr column)"
! diff <(losses "$tmp/full.csv") <(losses "$tmp/dfull.csv") > /dev/null
check $? "dropout must change the losses"

# --bos is a training setting stored in the checkpoint: the resumed run opens its rows with the
# boundary token as the uninterrupted one did
./train $common --bos --log "$tmp/bfull.csv" --save "$tmp/bck{step}" --save-every 15 > /dev/null
check $? "the full run with --bos"
./train --resume "$tmp/bck15" --threads 2 --log "$tmp/bres.csv" > /dev/null
diff <(losses "$tmp/bfull.csv" | sed -n '17,31p') <(losses "$tmp/bres.csv" | tail -n +2) > "$tmp/diff"
check $? "with --bos, resumed losses (steps 16..30) must equal the uninterrupted run's: $(head -4 "$tmp/diff")"
! diff <(losses "$tmp/full.csv") <(losses "$tmp/bfull.csv") > /dev/null
check $? "--bos must change the losses"

# --precision bf16 is stored too: the resumed run computes in bf16 as the uninterrupted one did (the
# checkpoint holds the fp32 master weights), on the portable path and on both emulated paths (the
# fast paths' code, which every CPU runs)
for path in portable avx512bf16-emulated amx-emulated; do
  PEGPT_BF16_PATH=$path ./train $common --precision bf16 --log "$tmp/h$path.csv" --save "$tmp/hck$path{step}" --save-every 15 > "$tmp/h$path.out"
  check $? "the full run with --precision bf16 ($path)"
  grep -q "precision: bf16 .*path $path" "$tmp/h$path.out"; check $? "the bf16 run names its path ($path)"
  PEGPT_BF16_PATH=$path ./train --resume "$tmp/hck${path}15" --threads 2 --log "$tmp/hres$path.csv" > /dev/null
  diff <(losses "$tmp/h$path.csv" | sed -n '17,31p') <(losses "$tmp/hres$path.csv" | tail -n +2) > "$tmp/diff"
  check $? "with bf16 ($path), resumed losses (steps 16..30) must equal the uninterrupted run's: $(head -4 "$tmp/diff")"
  ! diff <(losses "$tmp/full.csv") <(losses "$tmp/h$path.csv") > /dev/null
  check $? "bf16 ($path) must change the losses"
done

# --data-seed is a training setting stored in the checkpoint: a task run resumed without it goes on
# with its stream (instances and dropout masks), not --seed's
ds="--task copy --layers 1 --heads 2 --dim 16 --batch 4 --steps 12 --threads 2 --eval-per-length 0 --dropout 0.1 --seed 5 --data-seed 77"
./train $ds --log "$tmp/dsfull.csv" --save "$tmp/dsck{step}" --save-every 6 > /dev/null
check $? "the full run with --data-seed 77"
./train --resume "$tmp/dsck6" --threads 2 --eval-per-length 0 --log "$tmp/dsres.csv" > /dev/null
diff <(losses "$tmp/dsfull.csv" | sed -n '8,13p') <(losses "$tmp/dsres.csv" | tail -n +2) > "$tmp/diff"
check $? "with --data-seed, resumed losses (steps 7..12) must equal the uninterrupted run's: $(head -4 "$tmp/diff")"
./train ${ds% --data-seed 77} --log "$tmp/dsnone.csv" > /dev/null && [ -s "$tmp/dsnone.csv" ] &&
  ! diff <(losses "$tmp/dsfull.csv") <(losses "$tmp/dsnone.csv") > /dev/null
check $? "--data-seed 77 must change the losses of --seed 5"

diff <(sed -n '/^---- sample/,$p' "$tmp/again.out") <(sed -n '/^---- sample/,$p' "$tmp/resumed.out") > /dev/null
check $? "a sample after the resumed run must equal the uninterrupted run's"
grep -q "^---- end of sample" "$tmp/resumed.out"; check $? "the resumed run samples"

# fit-first: the checks read their own instances, never the training stream, so resume stays exact
fit="--task sum --train-min 1 --train-max 3 --layers 1 --heads 2 --dim 32 --batch 8 --lr 1e-2 --threads 2 --eval-per-length 0 --fit-target 1 --max-steps 30 --fit-every 10"
./train $fit --log "$tmp/fit.csv" --save "$tmp/fit{step}" --save-every 15 > "$tmp/fit.out"
check $? "the fit-first run"
./train --resume "$tmp/fit15" --threads 2 --eval-per-length 0 --log "$tmp/fitres.csv" > "$tmp/fitres.out"
check $? "resume the fit-first run from step 15"
diff <(losses "$tmp/fit.csv" | sed -n '17,31p') <(losses "$tmp/fitres.csv" | tail -n +2) > "$tmp/diff"
check $? "resumed fit-first losses (steps 16..30) must equal the uninterrupted run's: $(head -4 "$tmp/diff")"
diff <(grep -E '^fit check: step (20|30) |^fit: ' "$tmp/fit.out") <(grep -E '^fit( check)?: ' "$tmp/fitres.out") > "$tmp/diff"
check $? "the resumed run's checks (steps 20, 30) and its fit line equal the uninterrupted run's: $(head -4 "$tmp/diff")"

finish
