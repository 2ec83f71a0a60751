#!/usr/bin/env bash
# tests/test_signals.sh: interrupted training resumes to the same result, bit for bit.
#  - SIGTERM and SIGINT at random moments: the run finishes its step, writes a checkpoint, exits 75
#    and prints the command that continues it; following those commands to the end gives the same
#    log (every loss) and the same final checkpoint, byte for byte, as an uninterrupted run;
#  - kill -9 at random moments (no chance to save): resuming from the newest checkpoint gets the
#    same final checkpoint and log too (the rows past that checkpoint are cut from the log), and the
#    temporary a killed save may leave is removed;
#  - a second signal stops the run at once (killed by the signal, no new checkpoint);
#  - a signal during the last step lets the run finish as if none had come (exit 0);
#  - without --save: exit 128 + the signal and a message that nothing was saved.
# The moments come from a seeded $RANDOM, counted in steps of the log: the steps are the same every
# run, the moment within the step a signal lands in is not, and every outcome must pass.
. "$(dirname "$0")/lib.sh"
losses() { cut -d, -f1-3 "$1"; }
RANDOM=2026
steps=200
common="--layers 2 --heads 2 --dim 64 --seq 64 --batch 8 --steps $steps --val-every 50 --threads 1 --pe rope"   # steps of a few ms: the polling below lands within a few steps

./train $common --log "$tmp/full.csv" --save "$tmp/full.ckpt" > /dev/null
check $? "the uninterrupted run"
# one step's time here (the uninterrupted run's elapsed_s over its steps), for a moment within a step
step_ms=$(awk -F, 'END { printf "%d", $7 * 1000 / $1 + 1 }' "$tmp/full.csv")

# run_and_signal SIG LOG CMD...: start CMD in the background and signal it once its --log LOG has
# grown by a random 1-30 steps (moments measured in steps, not seconds, so the test means the same
# on a fast machine and under AddressSanitizer), a random 0-99% of a step into the next; sets rc.
run_and_signal() {
    local sig=$1 log=$2; shift 2
    local n0=0 k=$((RANDOM % 30 + 1))
    [[ " $* " == *" --resume "* ]] && [ -f "$log" ] && n0=$(wc -l < "$log")    # a new run starts its log again
    "$@" > "$tmp/out" 2> "$tmp/err" &
    local pid=$!
    while kill -0 "$pid" 2> /dev/null && [ "$(cat "$log" 2> /dev/null | wc -l)" -lt $((n0 + k)) ]; do sleep 0.005; done
    sleep "$(awk -v ms="$step_ms" -v r=$((RANDOM % 100)) 'BEGIN { printf "%.4f", ms * r / 100000 }')"
    kill -"$sig" "$pid" 2> /dev/null
    { wait "$pid"; } 2> /dev/null; rc=$?      # (quiet: bash reports a job killed by a signal)
}

# SIGTERM and SIGINT, alternating, 5 times (then no more): follow the printed command to the end
cmd=(./train $common --log "$tmp/int.csv" --save "$tmp/int{step}.ckpt" --save-every 100)
interrupts=0; rounds=0; sig=TERM
while [ $rounds -lt 40 ]; do
    rounds=$((rounds + 1))
    [ $interrupts -ge 5 ] && sig=0                   # kill -0 signals nothing: this round runs to the end
    run_and_signal $sig "$tmp/int.csv" "${cmd[@]}"
    if [ $rc = 0 ]; then break; fi
    if [ $rc = 75 ]; then
        interrupts=$((interrupts + 1))
        name=$([ $sig = TERM ] && echo SIGTERM || echo SIGINT)
        grep -q "^interrupted by $name after step [0-9]* of $steps: checkpoint " "$tmp/out"
        check $? "the interrupted run names $name, the step and the checkpoint: $(tail -2 "$tmp/out")"
        # the printed command, a line of its own, is what a user would paste
        line=$(grep -A1 '^interrupted by' "$tmp/out" | tail -1)
        eval "cmd=($line)"
        [ "${cmd[1]}" = --resume ] && [ -f "${cmd[2]}" ]; check $? "the command resumes from a checkpoint that exists: $line"
    else
        check 1 "an interrupted run exits 75, not $rc: $(tail -3 "$tmp/err")"
        break
    fi
    sig=$([ $sig = TERM ] && echo INT || echo TERM)
done
[ $interrupts = 5 ]; check $? "5 interruptions during training ($interrupts in $rounds rounds)"
diff <(losses "$tmp/full.csv") <(losses "$tmp/int.csv") > "$tmp/diff"
check $? "interrupted and resumed, the log equals the uninterrupted run's: $(head -4 "$tmp/diff")"
cmp -s "$tmp/full.ckpt" "$tmp/int$steps.ckpt"
check $? "interrupted and resumed, the final checkpoint equals the uninterrupted run's byte for byte"
ls "$tmp"/*.tmp > /dev/null 2>&1; [ $? != 0 ]; check $? "no temporary file is left"

# kill -9, 4 times (then no more): nothing is saved at the kill; resume from the newest checkpoint
every=25
cmd=(./train $common --log "$tmp/k.csv" --save "$tmp/k{step}.ckpt" --save-every $every)
kills=0
for round in $(seq 1 40); do
    run_and_signal $([ $kills -ge 4 ] && echo 0 || echo KILL) "$tmp/k.csv" "${cmd[@]}"
    [ $rc = 0 ] && break
    [ $rc = 137 ] || { check 1 "kill -9 gives 137, not $rc"; break; }
    kills=$((kills + 1))
    newest=$(ls "$tmp"/k*.ckpt 2> /dev/null | sed 's/.*k\([0-9]*\)\.ckpt/\1/' | sort -n | tail -1)
    if [ -n "$newest" ]; then cmd=(./train --resume "$tmp/k$newest.ckpt" --threads 1 --log "$tmp/k.csv" --save "$tmp/k{step}.ckpt" --save-every $every); fi
done
[ $kills = 4 ]; check $? "4 kills ($kills)"
cmp -s "$tmp/full.ckpt" "$tmp/k$steps.ckpt"
check $? "killed with -9 and resumed from the newest checkpoint, the final checkpoint equals the uninterrupted run's"
diff <(losses "$tmp/full.csv") <(losses "$tmp/k.csv") > "$tmp/diff"
check $? "killed with -9 and resumed, the log holds every step once, as the uninterrupted run's (rows past the checkpoint cut): $(head -4 "$tmp/diff")"
ls "$tmp"/*.tmp > /dev/null 2>&1; [ $? != 0 ]; check $? "no temporary file is left after the last run"

# stale temporaries of the --save pattern are removed when a run starts; other files are not
touch "$tmp/s77.ckpt.tmp" "$tmp/sx.ckpt.tmp" "$tmp/other.tmp"
./train $common --steps 2 --save "$tmp/s{step}.ckpt" > /dev/null 2> "$tmp/err"
check $? "a run next to stale temporaries"
[ ! -e "$tmp/s77.ckpt.tmp" ] && grep -q "removed $tmp/s77.ckpt.tmp" "$tmp/err"
check $? "the temporary of an interrupted save of the pattern is removed, and said so"
[ -e "$tmp/sx.ckpt.tmp" ] && [ -e "$tmp/other.tmp" ]; check $? "files that do not match the pattern stay"

# a second signal: at once, no checkpoint of this step (steps here take ~0.1 s or more)
big="--layers 4 --heads 4 --dim 256 --seq 256 --batch 8 --steps 200 --threads 1"
./train $big --save "$tmp/twice.ckpt" > "$tmp/out" 2> "$tmp/err" &
pid=$!
for i in $(seq 50); do grep -q '^step' "$tmp/out" && break; sleep 0.2; done
kill -TERM $pid; sleep 0.02; kill -TERM $pid
wait $pid; rc=$?
[ $rc = 143 ] && [ ! -e "$tmp/twice.ckpt" ]; check $? "a second SIGTERM kills the run at once (rc $rc, 143 expected; no checkpoint)"
[ "$(grep -c 'signal received' "$tmp/err")" = 1 ]; check $? "the first signal says what happens, once"

# a signal during the last step: the run is done, so it finishes as an uninterrupted one would (its
# checkpoint, then what follows training: here the samples), exit 0; it used to exit 75 and print a
# command that --resume refused (every step done)
./train $big --steps 2 --save "$tmp/last.ckpt" --log "$tmp/last.csv" --sample 8 > "$tmp/out" 2> "$tmp/err" &
pid=$!
# (up to 5 minutes for step 1: under AddressSanitizer the setup and a step take seconds)
for i in $(seq 30000); do [ "$(cat "$tmp/last.csv" 2> /dev/null | wc -l)" -ge 2 ] && break; sleep 0.01; done
kill -TERM $pid; wait $pid; rc=$?
[ $rc = 0 ] && [ -e "$tmp/last.ckpt" ] && ! grep -q "^interrupted by" "$tmp/out" && grep -q "^saved $tmp/last.ckpt" "$tmp/out" &&
  grep -q "^---- end of sample ----" "$tmp/out" && [ "$(tail -1 "$tmp/last.csv" | cut -d, -f1)" = 2 ]
check $? "SIGTERM in the last step: the run finishes, exit 0, checkpoint and samples (rc $rc: $(tail -2 "$tmp/out"))"

# without --save (signalled once it trains)
./train $common --steps 100000 > "$tmp/out" 2> /dev/null &
pid=$!
for i in $(seq 50); do grep -q '^step' "$tmp/out" && break; sleep 0.2; done
kill -INT $pid; wait $pid; rc=$?
[ $rc = 130 ] && grep -q "interrupted by SIGINT after step [0-9]* of 100000: nothing saved (no --save)" "$tmp/out"
check $? "without --save: exit 130 and says nothing was saved (rc $rc: $(tail -1 "$tmp/out"))"

# the command that resumes repeats a switch (--detect-anomaly) without a value, and not --load's
# --new-schedule (the checkpoint holds the new schedule): pasted, it runs to the end
./train --layers 1 --heads 2 --dim 16 --seq 8 --batch 2 --steps 1 --save "$tmp/sw0.ckpt" > /dev/null
# (20000 steps: this model takes ~50 us a step, so 200 could all run before the signal arrives)
run_and_signal TERM "$tmp/sw.csv" ./train --load "$tmp/sw0.ckpt" --new-schedule --pe rope --steps 20000 --detect-anomaly \
  --seq 8 --batch 2 --log "$tmp/sw.csv" --save "$tmp/sw.ckpt" --val-every 0 --threads 1
line=$(grep -A1 '^interrupted by' "$tmp/out" | tail -1)
[ $rc = 75 ] && [[ "$line" == *" --detect-anomaly "* && "$line" != *new-schedule* ]] && eval "cmd=($line)" &&
  "${cmd[@]}" > /dev/null 2> "$tmp/err" && [ "$(tail -1 "$tmp/sw.csv" | cut -d, -f1)" = 20000 ]
check $? "the printed command of a --detect-anomaly --new-schedule run resumes it (rc $rc): $line $(tail -1 "$tmp/err")"

finish
