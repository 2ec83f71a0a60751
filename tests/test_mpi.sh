#!/usr/bin/env bash
# tests/test_mpi.sh: data-parallel training under mpirun (mpi/dist_grad.h; docs/mpi.md).
# Builds tests/train_mpi (./train with MPI) and checks, with 2 ranks:
#  - equivalence: 2 ranks x --batch B log the losses of one process with --batch 2B (relative
#    difference <= 1e-6: the same sums in another order) and end with the same parameters (to
#    float tolerance), for a scheme of each hook kind (rope: q/k, alibi and t5: scores, learned:
#    input), on a --task and on packed text (--pack) with gradient accumulation, and with --dropout
#    (each rank draws the masks of its rows of the global batch); on text, the validation losses too
#    (every rank scores its rows of each global validation batch);
#  - every rank holds bit-identical parameters after every step (--verify-ranks), with and without
#    --zero 1, and --zero 1 logs the losses of --zero 0;
#  - a checkpoint written by 2 ranks with --zero 1 resumes on 1 process, and one written by 1
#    process resumes on 2 ranks with --zero 1, each continuing the uninterrupted run's losses;
#  - a rank killed mid-run makes mpirun exit non-zero naming the rank, and the last checkpoint
#    stays intact (it resumes);
#  - text too short for the ranks' global batch is refused up front, naming it;
#  - the one-process modes are refused under 2 ranks with a message; a batch that fits the machine
#    once but not twice is refused under 2 ranks (each rank counts on its share of the memory);
#  - ./compare under mpirun shares a grid's runs over the ranks and reports what one ./compare
#    does; ./compare --launch 'mpirun -np 2 ...' trains each run on 2 ranks.
# Skipped (exit 77, saying so) where mpicc or mpirun is missing (apt-get install openmpi-bin libopenmpi-dev).
. "$(dirname "$0")/lib.sh"
if ! command -v mpicc > /dev/null || ! command -v mpirun > /dev/null; then
    skip "every case: training under mpirun (no mpicc or mpirun)" "apt-get install openmpi-bin libopenmpi-dev"; finish
fi
${MAKE:-make} -s tests/train_mpi tests/compare_mpi || abort "building tests/train_mpi and tests/compare_mpi"
# Root in a container: Open MPI refuses root unless told; 2 ranks on fewer cores need --oversubscribe.
# Open MPI's own allocations at exit are not this project's leaks (make asan): suppressed by library
# (tests/lsan_mpi.supp), which needs whole stacks: the fast unwinder stops at the first frame of a
# library built without frame pointers, and the leak would be charged to no library at all.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan_mpi.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
MPIRUN="mpirun -np 2 --oversubscribe --bind-to none"
# the loss column of two logs agrees step by step: |a - b| <= 1e-6 |b|
same_losses() {
    paste -d, <(cut -d, -f1,2 "$1") <(cut -d, -f1,2 "$2") | awk -F, 'NR > 1 {
        n++; if ($1 != $3) bad = 1; d = $2 - $4; if (d < 0) d = -d; r = $4 < 0 ? -$4 : $4
        if (d > 1e-6 * r) { bad = 1; print "  step " $1 ": " $2 " vs " $4 } }
        END { exit (bad || n == 0) }'
}
# the validation losses (column 3) of two logs agree, at the same steps, relative 1e-6; at least one
same_val() {
    paste -d, <(cut -d, -f1,3 "$1") <(cut -d, -f1,3 "$2") | awk -F, 'NR > 1 && ($2 != "" || $4 != "") {
        n++; if ($1 != $3 || $2 == "" || $4 == "") { bad = 1; print "  step " $1 ": " $2 " vs " $4; next }
        d = $2 - $4; if (d < 0) d = -d; r = $4 < 0 ? -$4 : $4
        if (d > 1e-6 * r) { bad = 1; print "  step " $1 ": " $2 " vs " $4 } }
        END { exit (bad || n == 0) }'
}
# the parameters of two checkpoints agree (exported by ./train, compared tensor by tensor). atol
# 1e-5: the key part of c_attn.bias has a gradient that is 0 but for rounding (a key bias adds the
# same q.b to every score of a row), and AdamW scales such noise up to steps of ~lr; a missing or
# doubled reduction moves every tensor by ~lr = 1e-3, a hundred times more.
same_params() {
    ./train --load "$1" --export "$tmp/a.st" 2> /dev/null && ./train --load "$2" --export "$tmp/b.st" 2> /dev/null &&
        ./tests/st_compare "$tmp/a.st" "$tmp/b.st" --rtol 1e-5 --atol 1e-5 > "$tmp/st.out" 2>&1
}

tiny="--layers 2 --heads 2 --dim 32 --steps 6 --log-every 1 --threads 1"
task="--task copy-repeat --train-max 8 --test-max 10 --seq 48 --eval-per-length 2"
configs=(
    "rope|$task --pe rope"
    "alibi|$task --pe alibi"
    "t5|$task --pe t5"
    "learned-pack|--input-pe learned --pe nope --seq 32 --pack 1 --accum 2 --val-every 2 --val-batches 3"
    "dropout|$task --pe rope --dropout 0.1 --accum 2"
)
for c in "${configs[@]}"; do
    name=${c%%|*}; flags=${c#*|}
    $MPIRUN ./tests/train_mpi $tiny $flags --batch 2 --verify-ranks --log "$tmp/$name-2.csv" --save "$tmp/$name-2.ckpt" \
        > "$tmp/$name-2.out" 2>&1
    check $? "$name: 2 ranks ($(tail -3 "$tmp/$name-2.out"))"
    ./train $tiny $flags --batch 4 --log "$tmp/$name-1.csv" --save "$tmp/$name-1.ckpt" > /dev/null 2>&1
    check $? "$name: one process with the global batch"
    same_losses "$tmp/$name-2.csv" "$tmp/$name-1.csv" > "$tmp/diff"
    check $? "$name: 2 ranks x 2 rows must log the losses of 1 process x 4 rows: $(head -3 "$tmp/diff")"
    same_params "$tmp/$name-2.ckpt" "$tmp/$name-1.ckpt"
    check $? "$name: the final parameters must agree: $(grep -v ' ok ' "$tmp/st.out" | head -3)"
    grep -q "parameters bit-identical on every rank" "$tmp/$name-2.out"
    check $? "$name: the ranks' parameters are compared at the end"
done
# validation: every rank scores its rows of each global batch, so 2 ranks x 2 rows validate on the
# tokens of 1 process x 4 rows (rank 0 alone read half of them, and logged another val_loss)
same_val "$tmp/learned-pack-2.csv" "$tmp/learned-pack-1.csv" > "$tmp/diff"
check $? "learned-pack: 2 ranks x 2 rows must log the validation losses of 1 process x 4 rows: $(head -3 "$tmp/diff")"
grep -q "ranks: 2 x 1 threads | global batch 2 x 2 rows x accum 2" "$tmp/learned-pack-2.out"
check $? "the setup line states the ranks, threads and global batch"

# --zero 1: the same losses, bit-identical ranks after every step
$MPIRUN ./tests/train_mpi $tiny $task --pe rope --batch 2 --zero 1 --verify-ranks --log "$tmp/z.csv" > "$tmp/z.out" 2>&1
check $? "--zero 1 ($(tail -3 "$tmp/z.out"))"
grep -q "ZeRO-1" "$tmp/z.out"; check $? "--zero 1 says so in the setup line"
same_losses "$tmp/z.csv" "$tmp/rope-2.csv" > "$tmp/diff"
check $? "--zero 1 must log the losses of --zero 0: $(head -3 "$tmp/diff")"

# resume across process counts: 2 ranks (ZeRO-1) -> 1 process, and 1 process -> 2 ranks (ZeRO-1)
long="$tiny $task --pe alibi --steps 10"
./train $long --batch 4 --log "$tmp/full.csv" --save "$tmp/full{step}.ckpt" --save-every 5 > /dev/null 2>&1
check $? "the uninterrupted run"
$MPIRUN ./tests/train_mpi $long --batch 2 --zero 1 --save "$tmp/r2-{step}.ckpt" --save-every 5 > "$tmp/r2.out" 2>&1
check $? "2 ranks, ZeRO-1, checkpoints at steps 5 and 10 ($(tail -2 "$tmp/r2.out"))"
./train --resume "$tmp/r2-5.ckpt" --batch 4 --threads 1 --log "$tmp/r1.csv" > /dev/null 2>&1
check $? "resuming the 2-rank ZeRO-1 checkpoint on 1 process"
same_losses <(sed -n '1p;7,11p' "$tmp/full.csv") "$tmp/r1.csv" > "$tmp/diff"
check $? "2 ranks -> 1 process: steps 6-10 must continue the uninterrupted run: $(head -3 "$tmp/diff")"
$MPIRUN ./tests/train_mpi --resume "$tmp/full5.ckpt" --batch 2 --zero 1 --threads 1 --verify-ranks \
    --log "$tmp/r12.csv" > "$tmp/r12.out" 2>&1
check $? "resuming a 1-process checkpoint on 2 ranks with ZeRO-1 ($(tail -2 "$tmp/r12.out"))"
same_losses <(sed -n '1p;7,11p' "$tmp/full.csv") "$tmp/r12.csv" > "$tmp/diff"
check $? "1 process -> 2 ranks: steps 6-10 must continue the uninterrupted run: $(head -3 "$tmp/diff")"

# a rank that dies: every rank stops, mpirun exits non-zero naming it, the last checkpoint is intact
$MPIRUN ./tests/train_mpi --layers 2 --heads 2 --dim 32 --seq 32 --batch 2 --steps 100000 --threads 1 --val-every 0 \
    --save "$tmp/dies.ckpt" --save-every 5 --log-every 100000 > "$tmp/dies.out" 2>&1 &
mp=$!
for _ in $(seq 200); do [ -f "$tmp/dies.ckpt" ] && break; sleep 0.1; done
victim=$(pgrep -f "train_mpi .*$tmp/dies.ckpt" | tail -1)
[ -n "$victim" ] && kill -9 "$victim"
wait "$mp"; rc=$?
[ "$rc" != 0 ]; check $? "mpirun must exit non-zero when a rank is killed (exit $rc)"
grep -qiE "rank [0-9]|process rank|exited on signal" "$tmp/dies.out"
check $? "mpirun's message names the rank that died: $(tail -5 "$tmp/dies.out")"
./train --resume "$tmp/dies.ckpt" --steps 1 --threads 1 > /dev/null 2>&1 ||
    ./train --load "$tmp/dies.ckpt" --export "$tmp/dies.st" > /dev/null 2>&1
check $? "the last checkpoint of the killed run loads"

# the one-process modes are refused under 2 ranks
$MPIRUN ./tests/train_mpi --load "$tmp/full5.ckpt" --export "$tmp/x.st" > "$tmp/refused.out" 2>&1
[ $? != 0 ] && grep -q "run them without mpirun" "$tmp/refused.out"
check $? "--export under 2 ranks must be refused with a message: $(head -2 "$tmp/refused.out")"

# text that fills one process's batch but not the 2 ranks' global batch (2 x 20 rows of 32 + 1 =
# 1281 tokens; 900 here): refused up front with the ranks in the message, not an internal error
head -c 900 /dev/zero | tr '\0' 'a' > "$tmp/900.txt"
small_data="--data $tmp/900.txt --val-frac 0 --layers 1 --heads 2 --dim 16 --batch 20 --seq 32 --steps 1"
./train $small_data > /dev/null 2>&1; one=$?
$MPIRUN ./tests/train_mpi $small_data > "$tmp/900.out" 2>&1; two=$?
[ $one = 0 ] && [ $two != 0 ] && grep -q "has 900 training tokens, fewer than 2 ranks x --batch 20 x --seq 32 + 1 = 1281" "$tmp/900.out"
check $? "2 ranks on too little text must be refused naming the global batch (1 process: rc $one; 2 ranks: rc $two): $(grep -m1 error "$tmp/900.out")"

# two ranks on one machine share its memory: each counts on half of MemAvailable + SwapFree. A batch
# that needs ~70% of it (sized from ./train's own refusal of a huge batch) is refused under 2 ranks as
# beyond the rank's share, before anything is allocated; ulimit -v at 90% keeps a wrong check from
# taking the machine (and would refuse with another reason). Not under ASan, which cannot run under
# ulimit -v.
if ! nm ./tests/train_mpi 2> /dev/null | grep __asan_init > /dev/null; then
    mem="--task copy-repeat --layers 4 --heads 4 --dim 256 --seq 1024 --steps 1 --threads 1"
    avail_kb=$(awk '/^MemAvailable:/ { m = $2 } /^SwapFree:/ { s = $2 } END { print m + s }' /proc/meminfo)
    ./train $mem --batch 100000 > /dev/null 2> "$tmp/huge.err"
    per100k=$(sed -n 's/.*activations \([0-9.]*\) for --batch 100000.*/\1/p' "$tmp/huge.err")
    rows=$(awk -v a="$avail_kb" -v p="${per100k:-0}" 'BEGIN { if (p > 0) printf "%d", 0.7 * a / 1048576 / (p / 100000); else print 0 }')
    ( ulimit -v $((avail_kb * 9 / 10)); $MPIRUN ./tests/train_mpi $mem --batch "$rows" ) > "$tmp/share.out" 2>&1; rc=$?
    [ "$rows" -gt 0 ] && [ $rc != 0 ] && grep -q "share of the available memory (MemAvailable + SwapFree, over the ranks and runs on this machine) is [0-9.]* GiB (1/2)" "$tmp/share.out"
    check $? "2 ranks with a batch of ~70% of the machine's memory each must be refused as beyond a rank's share (rows $rows, rc $rc): $(grep -m1 error "$tmp/share.out")"
fi

# ./compare under mpirun: the runs shared out over 2 ranks, rank 0 writes the report, the same
# results as one ./compare; its children are jobs of their own even when ./train is built with MPI
grid="--task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 5 --threads 1 -- --layers 1 --heads 2 --dim 16 --steps 20 --train-max 8 --test-max 10 --seq 48"
$MPIRUN ./tests/compare_mpi --train ./tests/train_mpi --out "$tmp/grid2" $grid > "$tmp/grid2.out" 2>&1
check $? "./compare under 2 ranks ($(tail -3 "$tmp/grid2.out"))"
grep -q "compare: 2 ranks trained 4 runs" "$tmp/grid2.out"; check $? "./compare says the ranks shared the runs"
./compare --train ./train --out "$tmp/grid1" $grid > /dev/null 2>&1
check $? "the same grid in one ./compare"
diff "$tmp/grid2/results.csv" "$tmp/grid1/results.csv" > /dev/null
check $? "the grid's results.csv must be the same under 2 ranks and in one process"
grep -q "^threads: 1" "$tmp/grid2/runs/copy-repeat/alibi/seed2/train.log"
check $? "a run of ./compare under mpirun is a one-rank job of its own: $(grep -m1 -E '^(ranks|threads)' "$tmp/grid2/runs/copy-repeat/alibi/seed2/train.log")"
# a stop that reaches one rank alone (SIGTERM to rank 1's ./compare mid-run) stops both ranks without
# a report, each finalizing MPI; the same command then finishes the grid with the results of one
# ./compare
# (runs of 1500 steps, ~3 s each here: long enough for the stop to land inside one, the loop below
# finding rank 1 and a started run within a few tenths of a second)
long="--task copy-repeat --schemes nope,alibi --seeds 1,2 --eval-per-length 5 --threads 1 -- --layers 1 --heads 2 --dim 16 --steps 1500 --train-max 8 --test-max 10 --seq 48"
$MPIRUN ./tests/compare_mpi --train ./tests/train_mpi --out "$tmp/stop2" $long > "$tmp/stop2.out" 2>&1 &
mpi_pid=$!
rank1=""
for _ in $(seq 300); do
    for p in $(pgrep -x compare_mpi); do     # rank 1 itself, not a run it forked (same environment)
        [ "$(ps -o comm= -p "$(ps -o ppid= -p "$p" | tr -d ' ')" 2> /dev/null)" = compare_mpi ] && continue
        tr '\0' '\n' < /proc/$p/environ 2> /dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && [ -z "$rank1" ] && rank1=$p
    done
    [ -n "$rank1" ] && [ -n "$(ls "$tmp"/stop2/runs/*/*/*/started 2> /dev/null)" ] && break
    sleep 0.1
done
kill -TERM "$rank1" 2> /dev/null
wait "$mpi_pid"; rc=$?
[ -n "$rank1" ] && [ $rc != 0 ] && [ "$(grep -c 'stopped by SIGTERM before the end; no report written now' "$tmp/stop2.out")" = 2 ] && [ ! -e "$tmp/stop2/results.csv" ]
check $? "SIGTERM to rank 1 alone stops both ranks, no report (rank1 '$rank1', rc $rc): $(grep -m2 compare: "$tmp/stop2.out" | tr '\n' ' ')"
$MPIRUN ./tests/compare_mpi --train ./tests/train_mpi --out "$tmp/stop2" $long > "$tmp/stop2b.out" 2>&1
check $? "the same command under mpirun finishes the stopped grid ($(tail -2 "$tmp/stop2b.out" | tr '\n' ' '))"
./compare --train ./train --jobs 2 --out "$tmp/stop1" $long > /dev/null 2>&1
diff "$tmp/stop2/results.csv" "$tmp/stop1/results.csv" > /dev/null
check $? "the grid stopped under 2 ranks and finished has the results.csv of one uninterrupted ./compare"
# --launch: each run of the grid trained on 2 ranks
./compare --train ./tests/train_mpi --launch "$MPIRUN" --out "$tmp/grid-launch" $grid > "$tmp/launch.out" 2>&1
check $? "./compare --launch 'mpirun -np 2 ...' ($(tail -3 "$tmp/launch.out"))"
grep -q "^ranks: 2 x 1 threads" "$tmp/grid-launch/runs/copy-repeat/nope/seed1/train.log"
check $? "--launch runs each training on 2 ranks"

finish
