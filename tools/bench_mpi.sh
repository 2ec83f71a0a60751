#!/usr/bin/env bash
# tools/bench_mpi.sh (run by make bench): data parallel on this machine, and a model on paper of
# gpt2-124m on many nodes. Needs mpicc and mpirun (skipped, with a message, without them).
#
# Measured, for the bench's `small` (6 layers, dim 384, bytes, global batch 8 x 256) and gpt2-124m
# (12 layers, dim 768, GPT-2's vocabulary, global batch 4 x 64, on a sparse GPT-2 shard of token 0):
#   1 rank x 2 threads (./train --threads 2, the global batch in one process)
#   2 ranks x 1 thread (mpirun -np 2 --bind-to core, half the batch each), with and without --zero 1
# and gpt2-124m again at a global batch of 16 x 64 (1 x 2 against 2 x 1 with --zero 1)
# tokens/s over the steps after the first three (warm-up) but the last (which also validates), their
# ratio to 1 rank x 2 threads, and
# the share of rank 0's step time spent waiting for communication (./train's last line).
# Then the scaling model (docs/mpi.md, "Scaling on paper"): per step a ring all-reduce of the
# gradient (S bytes: the parameter count x 4) costs 2 (N-1)/N S / bandwidth + 2 (N-1) latency on
# N nodes; the compute of a node is this machine's 1 rank x 2 threads step at the per-node batch
# (weak scaling: the global batch grows with N). Exposed communication: all of it (no overlap), or
# what the backward (2/3 of the step's compute: two of its three matrix products) cannot hide; for
# a node like this machine, and for one 32 times faster (64 such cores).
# Output: bench_mpi.csv (config,setup,tokens_per_s,ratio,wait_pct) and the model's table.
#   BENCH_MPI_STEPS=N  steps per run (default 8)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mpicc > /dev/null || ! command -v mpirun > /dev/null; then
    echo "bench_mpi: SKIPPED (no mpicc or mpirun: apt-get install openmpi-bin libopenmpi-dev)"
    exit 0
fi
make -s train tests/train_mpi
steps=${BENCH_MPI_STEPS:-8}
dir=build/bench-mpi
rm -rf "$dir"; mkdir -p "$dir"; trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
le32() { local v=$1; printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $((v >> 8 & 255)))\\x$(printf %02x $((v >> 16 & 255)))\\x$(printf %02x $((v >> 24 & 255)))"; }
{ le32 20240520; le32 1; le32 1000000; } > "$dir/gpt2.bin"; truncate -s $((1024 + 2 * 1000000)) "$dir/gpt2.bin"

# tokens/s over steps 4..N-1 of a log (the first three warm up, the last also validates):
# tokens per step x steps / the time they took
rate() { awk -F, -v tok="$2" '{ s[NR] = $1; t[NR] = $7 } END { printf "%.1f", tok * (s[NR - 1] - s[4]) / (t[NR - 1] - t[4]) }' "$1"; }
echo "config,setup,tokens_per_s,ratio,wait_pct" > bench_mpi.csv
declare -A base
run() {   # run CONFIG SETUP TOKENS_PER_STEP COMMAND...
    local cfg=$1 setup=$2 tok=$3; shift 3
    "$@" --steps "${STEPS:-$steps}" --val-every 0 --val-batches 1 --log-every 1000 --log "$dir/log.csv" > "$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
    local r; r=$(rate "$dir/log.csv" "$tok")
    local wait; wait=$(sed -n 's/.*steps (\([0-9.]*\)%) for communication.*/\1/p' "$dir/out"); wait=${wait:-0}
    [ "$setup" = "1x2" ] && base[$cfg]=$r
    local ratio; ratio=$(awk -v a="$r" -v b="${base[$cfg]}" 'BEGIN { printf "%.3f", a / b }')
    printf "mpi: %-9s %-17s %9.1f tok/s  ratio %s  waiting %5.1f%% of rank 0's step time\n" "$cfg" "$setup" "$r" "$ratio" "$wait"
    echo "$cfg,$setup,$r,$ratio,$wait" >> bench_mpi.csv
    grep -m1 '^model:' "$dir/out" > "$dir/model-$cfg"
}
MPI2="mpirun -np 2 --bind-to core ./tests/train_mpi --threads 1"
small="--layers 6 --dim 384 --heads 6 --seq 256"
g124="--layers 12 --dim 768 --heads 12 --seq 64 --data $dir/gpt2.bin --val-frac 0.1"
run small 1x2 2048 ./train $small --batch 8 --threads 2
run small 2x1 2048 $MPI2 $small --batch 4
run small 2x1-zero1 2048 $MPI2 $small --batch 4 --zero 1
run gpt2-124m 1x2 256 ./train $g124 --batch 4 --threads 2
t_node=$(awk -v r="${base[gpt2-124m]}" 'BEGIN { print 256 / r }')
run gpt2-124m 2x1 256 $MPI2 $g124 --batch 2
run gpt2-124m 2x1-zero1 256 $MPI2 $g124 --batch 2 --zero 1
# 4 times the batch: is the gap the small per-rank batch? (6 steps: 2 measured)
STEPS=6 run gpt2-124m-b16 1x2 1024 ./train $g124 --batch 16 --threads 2
STEPS=6 run gpt2-124m-b16 2x1-zero1 1024 $MPI2 $g124 --batch 8 --zero 1

params=$(sed -n 's/.*| \([0-9]*\) parameters.*/\1/p' "$dir/model-gpt2-124m")
echo
echo "scaling model, gpt2-124m: $params parameters, a ring all-reduce of S = $(awk -v p="$params" 'BEGIN { printf "%.0f", p * 4 / 1e6 }') MB per step;"
echo "a node = this machine (1 rank x 2 threads, batch 4 x 64: $(awk -v t="$t_node" 'BEGIN { printf "%.2f", t }') s per step); latency 5 us per message"
echo "node          nodes  network    comm s/step  efficiency (no overlap)  efficiency (backward hides)  tokens/s (hidden)"
for speed in 1 32; do
    for gbit in 10 25 100; do
        for n in 8 64 512; do
            awk -v n="$n" -v gb="$gbit" -v p="$params" -v t="$t_node" -v k="$speed" 'BEGIN {
                S = p * 4; bw = gb * 1e9 / 8; lat = 5e-6; t = t / k
                c = 2 * (n - 1) / n * S / bw + 2 * (n - 1) * lat
                exposed = c - 2.0 / 3 * t; if (exposed < 0) exposed = 0
                printf "%-12s  %5d  %3d Gbit/s  %11.3f  %23.1f%%  %26.1f%%  %17.0f\n", k == 1 ? "this machine" : k "x faster", n, gb, c,
                       100 * t / (t + c), 100 * t / (t + exposed), n * 256 / (t + exposed) }'
        done
    done
done
