#!/usr/bin/env bash
# tests/test_faults.sh: faults a long run meets, each reported in words with nothing lost.
#  - a full disk (a file-size limit, ulimit -f, which fails writes with EFBIG as a full disk fails
#    them with ENOSPC) while writing a checkpoint, a safetensors export, the log, the accuracy CSV
#    and the perplexity CSV: exit 1, a message naming the file and the reason, the previous file
#    byte for byte intact, no temporary left;
#  - an output folder the run cannot write into is refused before anything runs, for every output
#    flag (as root, whom permissions do not stop, the run drops to the user nobody);
#  - a model or batch too large for the memory (or for ulimit -v) is refused with the sizes it
#    needs before allocating, not killed by the kernel or segfaulting.
. "$(dirname "$0")/lib.sh"
small="--layers 2 --heads 2 --dim 64 --seq 32 --batch 4 --threads 1"
./train $small --steps 3 --save "$tmp/ck" > /dev/null; check $? "a small run"
cp "$tmp/ck" "$tmp/ck.orig"

# full_disk KIB WHAT FILE CMD...: with files limited to KIB KiB, CMD fails writing FILE, which keeps
# its old bytes (or stays absent)
full_disk() {
    local kib=$1 what=$2 file=$3; shift 3
    local before=absent; [ -e "$file" ] && before=$(cksum < "$file")
    ( ulimit -f $kib; "$@" > /dev/null 2> "$tmp/err" ); local rc=$?
    local after=absent; [ -e "$file" ] && after=$(cksum < "$file")
    [ $rc = 1 ] && grep -q "could not write the .*'$file': File too large" "$tmp/err"
    check $? "disk full while writing $what: exit 1 and a message naming it (rc $rc: $(tail -1 "$tmp/err"))"
    [ "$before" = "$after" ]; check $? "disk full while writing $what: the previous file is intact"
    [ ! -e "$file.tmp" ]; check $? "disk full while writing $what: no temporary left"
}
full_disk 64 "a checkpoint" "$tmp/ck" ./train $small --steps 3 --seed 2 --save "$tmp/ck"
grep -q "the previous file is intact" "$tmp/err"; check $? "the message says the previous checkpoint is intact"
cmp -s "$tmp/ck" "$tmp/ck.orig"; check $? "the checkpoint is the one from before"
full_disk 64 "a new export" "$tmp/model.safetensors" ./train --load "$tmp/ck" --export "$tmp/model.safetensors"
grep -q "nothing was written" "$tmp/err"; check $? "the message says nothing was written"
# the log grows a line a step: with a 1 KiB limit it fails after a few steps; the run stops there
( ulimit -f 1; ./train $small --steps 200 --log "$tmp/log.csv" > /dev/null 2> "$tmp/err" ); rc=$?
[ $rc = 1 ] && grep -q "could not write the log '$tmp/log.csv' at step [0-9]*: File too large" "$tmp/err"
check $? "disk full while writing the log: the run stops with a message (rc $rc: $(tail -1 "$tmp/err"))"
# results, a few KiB each, with a 1 KiB limit (the previous files are kept whatever their size)
./train --task copy --train-max 4 --layers 1 --heads 2 --dim 32 --steps 2 --threads 1 --save "$tmp/task.ck" > /dev/null
echo "an old result" > "$tmp/eval.csv"
full_disk 1 "the accuracy CSV" "$tmp/eval.csv" ./train --load "$tmp/task.ck" --task copy --eval-per-length 1 --test-max 40 \
    --eval-out "$tmp/eval.csv"
echo "an old result" > "$tmp/pos.csv"
full_disk 1 "the per-position loss CSV" "$tmp/pos.csv" ./train --load "$tmp/ck" --ppl-out "$tmp/ppl.csv" \
    --ppl-positions "$tmp/pos.csv" --ppl-windows 0.5,1,2 --ppl-tokens 256

# read-only output folders: refused before the run starts, for every output flag
mkdir "$tmp/ro"; chmod 555 "$tmp/ro"; chmod 755 "$tmp"
as_user=()
if [ "$(id -u)" = 0 ]; then
    if command -v setpriv > /dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2> /dev/null; then
        as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    else
        skip "the read-only folder cases (as root, whom permissions do not stop)" \
             "setpriv (util-linux) able to switch to the user nobody, or the tests run by another user"
        as_user=(skip)
    fi
fi
if [ "${as_user[0]:-}" != skip ]; then
    for flag in save log eval-out ppl-out export dump-step; do
        case $flag in
            eval-out) args=(--task copy --train-max 4 --steps 1000000) ;;
            ppl-out | export | dump-step) args=(--load "$tmp/ck") ;;
            *) args=(--steps 1000000) ;;
        esac
        timeout 60 "${as_user[@]}" ./train $small "${args[@]}" --$flag "$tmp/ro/out" > "$tmp/out" 2> "$tmp/err"; rc=$?
        [ $rc = 1 ] && grep -q -- "--$flag $tmp/ro/out: cannot write into the folder '$tmp/ro': Permission denied" "$tmp/err" \
            && ! grep -q '^step' "$tmp/out"
        check $? "--$flag into a read-only folder is refused before anything runs (rc $rc: $(tail -1 "$tmp/err"))"
    done
    timeout 60 "${as_user[@]}" ./train $small --load "$tmp/ck" --prompt hi --attention-map "$tmp/ro" > /dev/null 2> "$tmp/err"
    grep -q -- "--attention-map $tmp/ro: cannot write into the folder" "$tmp/err"
    check $? "--attention-map into a read-only folder is refused: $(tail -1 "$tmp/err")"
fi
timeout 60 ./train $small --steps 1000000 --save /proc/no/such/ck > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q "cannot write into the folder '/proc/no/such'" "$tmp/err" && ! grep -q '^step' "$tmp/out"
check $? "--save into a folder that does not exist is refused before training"

# memory: refused with the sizes, before allocating (sizes no machine has: the model needs ~1.5 TiB,
# the batch ~20 TiB of activations; a --task, whose data has no end)
./train --layers 64 --heads 64 --dim 16384 --steps 1 > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q "out of memory: this model needs [0-9.]* GiB (parameters [0-9.]*, gradients [0-9.]*; 64 layers, dim 16384" "$tmp/err"
check $? "a model larger than the memory is refused with its sizes (rc $rc: $(tail -1 "$tmp/err"))"
./train --task copy --layers 12 --heads 12 --dim 768 --seq 4096 --batch 8192 --steps 1 --threads 1 > /dev/null 2> "$tmp/err"; rc=$?
grep -q "out of memory: this model and batch need [0-9.]* GiB (.*activations [0-9.]* for --batch 8192 x --seq 4096" "$tmp/err" \
    && grep -q "lower --batch or --seq" "$tmp/err"
check $? "a batch larger than the memory is refused with the sizes and what to lower (rc $rc: $(tail -1 "$tmp/err"))"
# ulimit -v caps the address space; AddressSanitizer reserves terabytes of it, so not under make asan
if ! nm ./train 2> /dev/null | grep __asan_init > /dev/null; then   # (not -q: with pipefail, nm would die of SIGPIPE)
    ( ulimit -v 1500000; ./train --layers 8 --heads 8 --dim 512 --seq 512 --batch 16 --steps 1 --threads 1 > /dev/null 2> "$tmp/err" ); rc=$?
    [ $rc = 1 ] && grep -q "out of memory: .*the address space left under the limit (ulimit -v)" "$tmp/err"
    check $? "a batch beyond ulimit -v is refused with the sizes (rc $rc: $(tail -1 "$tmp/err"))"
fi

# the evaluations' allocations are checked too (gpt_set_memory_check): a KV cache and a long
# perplexity window too large for this run's share of the memory are refused, naming what for.
# PEGPT_MEMORY_SHARE (what ./compare sets to the runs it trains at once) divides the available
# memory: here about 4 MiB each, room for the model (0.3 MiB) but not for a 16 MiB cache of 65536
# tokens or a 16384-token window's activations
./train --layers 1 --heads 2 --dim 32 --pe nope --context 65536 --seq 16 --batch 2 --steps 1 --threads 1 --save "$tmp/long.ckpt" > /dev/null 2>&1
check $? "a model of context 65536"
share=$(( $(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) / 4096 ))
PEGPT_MEMORY_SHARE=$share ./train --load "$tmp/long.ckpt" --sample 5 --threads 1 > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q "out of memory for the KV cache of 65536 tokens: 0.016 GiB needed, but the share of the available memory .* (1/$share)" "$tmp/err"
check $? "a KV cache beyond the run's share is refused (rc $rc: $(tail -1 "$tmp/err"))"
PEGPT_MEMORY_SHARE=$share ./train --load "$tmp/long.ckpt" --ppl-out "$tmp/long.csv" --ppl-windows 0.25 --ppl-tokens 16384 --threads 1 > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 1 ] && grep -q "out of memory for the evaluation's activations (one layer's, for 1 x 16384 tokens): .* GiB needed" "$tmp/err" && [ ! -e "$tmp/long.csv" ]
check $? "a perplexity window beyond the run's share is refused before it writes (rc $rc: $(tail -1 "$tmp/err"))"
./train --load "$tmp/long.ckpt" --ppl-out "$tmp/long.csv" --ppl-windows 0.25 --ppl-tokens 16384 --threads 1 > /dev/null 2>&1
check $? "the same window with the whole memory"

# ---- a busy machine: a run of 2 threads that starts while the load average leaves fewer free
# cores than threads says so on stderr (PEGPT_LOAD stands in for the load average and the terminal
# the note is otherwise kept to); 1 thread, an idle machine or a wait policy set by the user: nothing
cores=$(nproc)
b="--layers 1 --heads 2 --dim 16 --seq 8 --batch 2 --steps 1 --val-every 0"
env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY PEGPT_LOAD=$cores ./train $b --threads 2 > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 0 ] && grep -q "note: the load average is $cores.0 on the .* cores this run may use: .*--threads .*GOMP_SPINCOUNT=2000" "$tmp/err" \
  && ! grep -q "note:" "$tmp/out"
check $? "a busy machine is noted on stderr (rc $rc: $(head -c 300 "$tmp/err"))"
# (an idle machine of one core has fewer cores than 2 threads: noted, rightly, so not asked there)
idle="PEGPT_LOAD=0 THREADS=2"; [ "$cores" -ge 2 ] || idle="PEGPT_LOAD=0 THREADS=1"
for v in "$idle" "PEGPT_LOAD=$cores THREADS=1" "PEGPT_LOAD=$cores GOMP_SPINCOUNT=2000 THREADS=2" \
         "PEGPT_LOAD=$cores OMP_WAIT_POLICY=passive THREADS=2"; do
  env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY $v sh -c './train '"$b"' --threads $THREADS' > /dev/null 2> "$tmp/err"; rc=$?
  [ $rc = 0 ] && ! grep -q "note: the load average" "$tmp/err"
  check $? "no note with $v (rc $rc)"
done

finish
