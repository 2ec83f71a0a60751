#!/usr/bin/env bash
# tests/test_interrupt.sh: a grid of ./compare survives being stopped. The same 4-run grid (parity,
# two schemes, two seeds, 2 runs at a time, a checkpoint every 10 steps) runs once without a stop
# and once in three sittings: the first ends with kill -9 of ./compare while runs are half way
# (its runs stop at a checkpoint through the parent-death signal), the second with SIGTERM (the
# runs checkpoint and stop, ./compare exits 143 without a report), the third finishes. Then:
#  - results.csv and runs.csv are byte for byte the uninterrupted grid's, and every run's losses
#    (log.csv) and test accuracies (eval.csv) too;
#  - runs did continue from a checkpoint (their train.log says where), so the test saw a stop;
#  - while a ./compare works in a folder, a second one there is refused (OUT/.lock);
#  - a stopped run whose `started` file holds other settings is refused, not continued;
#  - the runs, 2 at a time, check their memory against half the machine's;
#  - OUT/compare.log holds each sitting's output after a line naming it;
#  - tools/keep_results.sh keeps no checkpoint (and keeps compare.log), and --report-only on what it kept writes the
#    grid's results.csv, runs.csv and summary.md byte for byte, and its plots.
. "$(dirname "$0")/lib.sh"

have flock "the interruption test (flock waits for a stopped grid's runs)" "apt-get install util-linux" || finish
# the grid's flags after --out OUT (./compare started straight from the script, so that $! is its pid)
flags=(--task parity --schemes nope,rope --seeds 1,2 --jobs 2 --threads 1 --save-every 10 --eval-per-length 20 --quiet
       -- --dim 32 --layers 2 --heads 2 --batch 8 --steps 200 --select-every 40 --lr 1e-2 --log-every 1000)
grid() { ./compare --out "$1" "${flags[@]}"; }
# waits (up to 60 s) for a run of OUT that has a checkpoint newer than FILE and no done marker
wait_stopped_run() {   # wait_stopped_run OUT FILE
    for _ in $(seq 1200); do
        for d in "$1"/runs/parity/*/seed*; do
            [ -f "$d/model.ckpt" ] && [ ! -f "$d/done" ] && [ "$d/model.ckpt" -nt "$2" ] && return 0
        done
        sleep 0.05
    done
    return 1
}

grid "$tmp/A" > "$tmp/A.out" 2>&1
check $? "the uninterrupted grid" || cat "$tmp/A.out"

# first sitting: kill -9 once a run is half way
touch "$tmp/t0"; sleep 0.01
./compare --out "$tmp/B" "${flags[@]}" > "$tmp/B1.out" 2>&1 &
pid=$!
wait_stopped_run "$tmp/B" "$tmp/t0"; check $? "a run of the first sitting wrote a checkpoint" || abort "no checkpoint"
{ kill -9 $pid; wait $pid; } 2> /dev/null     # (bash would print "Killed")
flock -w 60 "$tmp/B/.lock" true; check $? "the runs of the killed ./compare stop (they release OUT/.lock)"
if have pgrep "the check that no ./train of a killed grid is left running" "apt-get install procps"; then
  ! pgrep -f "$tmp/B/runs" > /dev/null; check $? "no ./train of the killed grid is left running"
fi
n_done=$(ls "$tmp"/B/runs/parity/*/seed*/done 2> /dev/null | wc -l)
[ "$n_done" -lt 4 ]; check $? "kill -9 came before the grid's end ($n_done of 4 runs done)"

# second sitting: SIGTERM once a run has a checkpoint of this sitting; meanwhile a second ./compare
# on the folder is refused
touch "$tmp/t1"; sleep 0.01
./compare --out "$tmp/B" "${flags[@]}" > "$tmp/B2.out" 2>&1 &
pid=$!
wait_stopped_run "$tmp/B" "$tmp/t1"; check $? "a run of the second sitting wrote a checkpoint" || abort "no checkpoint"
expect_fail "a second ./compare in a folder in use" "another ./compare" grid "$tmp/B"
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" = 143 ]; check $? "./compare stopped by SIGTERM exits 143 (got $rc)" || cat "$tmp/B2.out"
grep -q "stopping the .* runs in progress at their checkpoints" "$tmp/B2.out"; check $? "./compare says it stops its runs"
[ ! -e "$tmp/B/summary.md" ]; check $? "a stopped grid writes no report"
flock -w 60 "$tmp/B/.lock" true; check $? "the stopped runs release OUT/.lock"

# third sitting: to the end
grid "$tmp/B" > "$tmp/B3.out" 2>&1
check $? "the third sitting finishes the grid" || cat "$tmp/B3.out"
for f in results.csv runs.csv; do
    cmp -s "$tmp/A/$f" "$tmp/B/$f"; check $? "$f of the grid stopped twice is the uninterrupted grid's, byte for byte"
done
for d in "$tmp"/A/runs/parity/*/seed*; do
    r=${d#"$tmp/A/"}
    diff <(cut -d, -f1-3 "$d/log.csv") <(cut -d, -f1-3 "$tmp/B/$r/log.csv") > /dev/null
    check $? "$r: the losses of every step are the uninterrupted run's"
    cmp -s "$d/eval.csv" "$tmp/B/$r/eval.csv"; check $? "$r: the test accuracies are the uninterrupted run's"
done
n_cont=$(cat "$tmp"/B/runs/parity/*/seed*/train.log | grep -c "^continue: going on from .* after step [1-9][0-9]* of 200")
[ "$n_cont" -ge 2 ]; check $? "runs continued from their checkpoints at least twice ($n_cont)"
grep -q "interrupted by SIGTERM" "$tmp"/B/runs/parity/*/seed*/train.log; check $? "a run checkpointed on SIGTERM"
grep -q "^memory: checked against a 1/2 share of this machine's" "$tmp/A/runs/parity/nope/seed1/train.log"
check $? "the runs of --jobs 2 check their memory against half the machine's (PEGPT_MEMORY_SHARE)"
! grep -q "interrupted by SIGTERM" "$tmp"/A/runs/parity/*/seed*/train.log; check $? "the uninterrupted grid was not stopped"
# OUT/compare.log: each sitting's header line, then what it printed, sitting after sitting (the
# refused second ./compare writes nothing there)
[ "$(grep -c '^== compare, a sitting started .*: ./compare --out ' "$tmp/B/compare.log")" = 3 ] \
  && [ "$(grep -c '^== compare, a sitting started' "$tmp/A/compare.log")" = 1 ]
check $? "compare.log: a header line per sitting (3 and 1)"
diff <(cat "$tmp/B1.out" "$tmp/B2.out" "$tmp/B3.out") <(grep -v '^== compare, a sitting started' "$tmp/B/compare.log") > /dev/null
check $? "compare.log holds the three sittings' output, in order"

# tools/keep_results.sh keeps what the report needs (no checkpoint) and the report written from it
# is the grid's, byte for byte (the loss plot from log.csv's step and loss, thinned to every 50th step)
tools/keep_results.sh "$tmp/A" "$tmp/K" > "$tmp/keep.out" 2>&1; check $? "tools/keep_results.sh" || cat "$tmp/keep.out"
! find "$tmp/K" -name 'model.ckpt*' | grep -q .; check $? "no checkpoint kept"
[ "$(wc -l < "$tmp/K/runs/parity/nope/seed1/log.csv")" = 5 ]; check $? "log.csv thinned to its header and steps 50, 100, 150, 200"
[ "$(head -1 "$tmp/K/runs/parity/nope/seed1/log.csv")" = step,loss,elapsed_s ] && [ "$(tail -1 "$tmp/K/runs/parity/nope/seed1/log.csv" | cut -d, -f1)" = 200 ]
check $? "log.csv kept with its step, loss and elapsed_s columns"
# the training time over the sittings (the clock restarts in each), as tools/pilot_budgets.sh sums it
sittings_s() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "elapsed_s") e = i; next }
                        { if ($e + 0 < p) b += p; p = $e + 0 } END { printf "%.3f\n", b + p }' "$1"; }
tools/keep_results.sh "$tmp/B" "$tmp/KB" > /dev/null 2>&1
for d in "$tmp"/B/runs/parity/*/seed*; do
    r=${d#"$tmp/B/"}
    [ "$(sittings_s "$d/log.csv")" = "$(sittings_s "$tmp/KB/$r/log.csv")" ]
    check $? "$r: the kept log.csv keeps each sitting's last clock (training time $(sittings_s "$d/log.csv") s)"
done
cmp -s "$tmp/A/compare.log" "$tmp/K/compare.log"; check $? "compare.log kept"
rm "$tmp"/K/*.png
./compare --out "$tmp/K" --report-only "${flags[@]}" > "$tmp/K.out" 2>&1; check $? "the report from the kept files" || cat "$tmp/K.out"
for f in results.csv runs.csv summary.md; do
    cmp -s "$tmp/A/$f" "$tmp/K/$f"; check $? "$f from the kept files is the grid's, byte for byte"
done
if have gnuplot "the plots from the kept files" "apt-get install gnuplot-nox"; then
    [ -s "$tmp/K/loss_parity.png" ] && [ -s "$tmp/K/accuracy_parity.png" ]; check $? "the plots drawn again from the kept files"
fi

expect_fail "./train --continue with --fit-target" "--continue with --fit-target" \
    ./train --task parity --fit-target 0.5 --max-steps 10 --save "$tmp/fit.ckpt" --continue

# a stopped run started with other settings is not continued
mkdir -p "$tmp/C/runs/parity/nope/seed1"
echo "./train --other settings" > "$tmp/C/runs/parity/nope/seed1/started"
expect_fail "a stopped run started with other settings" "was started with other settings" grid "$tmp/C"
finish
