#!/usr/bin/env bash
# tools/bench_llmc.sh LLMC_DIR: our training step against llm.c's CPU trainer on the same model, the
# same batch and the same threads, measured in one run, alternating (ours, llm.c, ours, llm.c) so
# that a machine whose speed drifts cannot favour one side. Not part of make test or make bench:
# it needs a checkout of https://github.com/karpathy/llm.c (not fetched here).
#
# The model is llm.c's: GPT-2 124M's shape (12 layers, C = 768, 12 heads, GPT-2's vocabulary of
# 50257 padded to 50304, context 1024, learned positions), B = 4 rows of T = 64 tokens, AdamW, fp32.
# Its weights: a ./train model of that shape after one step, written with --export-llmc as the
# gpt2_124M.bin train_gpt2.c loads (the speed of a step does not depend on the values). Its data:
# an llm.c GPT-2 shard of random tokens, as dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin.
#   llm.c:  train_gpt2.c built as its Makefile builds it (cc -Ofast -march=native -fopenmp -DOMP),
#           OMP_NUM_THREADS = ours; the "took X ms" of its steps 1..STEPS (step 0 is its first,
#           after a validation pass) - it is stopped after those, before its sampling at step 20.
#   ours:   ./bench --config gpt2-124m (the same step: forward, backward, clipping, AdamW; the
#           median of its timed steps after a warm-up step).
# Prints each measurement, the medians and the ratio, and the CPU. Environment: STEPS (default 6),
# THREADS (default: every core).
set -euo pipefail
cd "$(dirname "$0")/.."
llmc=${1:?usage: tools/bench_llmc.sh LLMC_DIR (a checkout of karpathy/llm.c)}
[ -f "$llmc/train_gpt2.c" ] || { echo "bench_llmc: $llmc/train_gpt2.c not found: give a checkout of karpathy/llm.c" >&2; exit 1; }
[ -x ./train ] && [ -x ./bench ] || { echo "bench_llmc: build ./train and ./bench first (make all; make bench builds ./bench)" >&2; exit 1; }
steps=${STEPS:-6}
threads=${THREADS:-$(nproc)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=$threads

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $threads threads;" \
     "llm.c at $(git -C "$llmc" log -1 --format='%h %cs' 2> /dev/null || echo 'an unknown commit')"
cc -Ofast -Wno-unused-result -march=native -fopenmp -DOMP -I"$llmc" "$llmc/train_gpt2.c" -lm -o "$tmp/train_gpt2"
# the data: 40000 random GPT-2 tokens in an llm.c shard (header 20240520, version 1, count)
mkdir -p "$tmp/run/dev/data/tinyshakespeare"
/usr/bin/python3 - "$tmp/run/dev/data/tinyshakespeare" << 'PY'
import random, struct, sys
random.seed(1)
for name in ("tiny_shakespeare_train.bin", "tiny_shakespeare_val.bin"):
    toks = [random.randrange(50257) for _ in range(40000)]
    h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = len(toks)
    open(sys.argv[1] + "/" + name, "wb").write(struct.pack("<256i", *h) + struct.pack("<%dH" % len(toks), *toks))
PY
./train --data "$tmp/run/dev/data/tinyshakespeare/tiny_shakespeare_train.bin" --val-frac 0 --layers 12 --dim 768 --heads 12 \
  --context 1024 --pe learned --batch 4 --seq 64 --steps 1 --threads "$threads" --save "$tmp/m.ckpt" > /dev/null
./train --load "$tmp/m.ckpt" --export-llmc "$tmp/run/gpt2_124M.bin" > /dev/null 2>&1

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ours() {   # tokens/s of one ./bench --config gpt2-124m
  ./bench --config gpt2-124m | sed -n 's/^RESULT .*tokens_per_s=\([0-9.]*\).*/\1/p'
}
llmc_run() {   # tokens/s of each of llm.c's steps 1..steps (B x T / its ms), one per line
  : > "$tmp/llmc.out"
  (cd "$tmp/run" && exec stdbuf -oL "$tmp/train_gpt2") > "$tmp/llmc.out" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2> /dev/null && [ "$(grep -c '^step [0-9]*: train loss' "$tmp/llmc.out" || true)" -le "$steps" ]; do sleep 1; done
  kill "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true
  grep '^step [0-9]*: train loss' "$tmp/llmc.out" | sed -n "2,$((steps + 1))p" |
    sed 's/.*(took \([0-9.]*\) ms).*/\1/' | awk '{ printf "%.2f\n", 256 / ($1 / 1000) }'
}
: > "$tmp/o"; : > "$tmp/l"
for round in 1 2; do
  o=$(ours); echo "$o" >> "$tmp/o"
  echo "round $round: ours (./bench --config gpt2-124m): $o tokens/s"
  llmc_run > "$tmp/lr"
  [ "$(wc -l < "$tmp/lr")" = "$steps" ] || { echo "bench_llmc: llm.c gave $(wc -l < "$tmp/lr") step times, not $steps:"; tail -5 "$tmp/llmc.out"; exit 1; }
  cat "$tmp/lr" >> "$tmp/l"
  echo "round $round: llm.c train_gpt2 steps 1-$steps: $(tr '\n' ' ' < "$tmp/lr")tokens/s (median $(median < "$tmp/lr"))"
done
mo=$(median < "$tmp/o"); ml=$(median < "$tmp/l")
echo "median: ours $mo tokens/s, llm.c $ml tokens/s; ours / llm.c = $(awk -v a="$mo" -v b="$ml" 'BEGIN { printf "%.2f", a / b }')"
