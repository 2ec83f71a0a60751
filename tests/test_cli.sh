#!/usr/bin/env bash
# tests/test_cli.sh: bad input gets a clear message naming the problem, a non-zero exit, and
# clobbers no file. Each case runs ./train with --save/--export pointing at an existing file and
# checks that the file is unchanged afterwards.
. "$(dirname "$0")/lib.sh"
small="--layers 1 --heads 2 --dim 16 --seq 8 --batch 2 --val-every 0 --log-every 1000"
# python3 writes or reads a few inputs: without it those cases are skipped (py=0)
py=1
have "$PY" "the cases python3 writes or reads: llm.c token shards, a config with a huge learned table, a context-1 export's shapes" \
  "apt-get install python3" || py=0

# expect_fail "what" "needle in stderr" ./train args... (tests/lib.sh): most cases write to $tmp/keep,
# which must keep its bytes, with no temporary of it left
refusal_setup() { echo "precious" > "$tmp/keep"; }
refusal_written() {
  if ! echo "precious" | cmp -s - "$tmp/keep" || ls "$tmp"/keep.tmp* > /dev/null 2>&1; then echo "clobbered the output file"; fi
}

# ---- flags
expect_fail "unknown flag" "unknown flag --bogus" ./train --bogus 3 --save "$tmp/keep"
expect_fail "unknown flag without a value" "unknown flag --bogus" ./train --bogus
expect_fail "internal key as a flag" "unknown flag --layer-pe" ./train --layer-pe rope,rope --save "$tmp/keep"
expect_fail "underscore spelling" "unknown flag --rope_base" ./train --rope_base 500 --save "$tmp/keep"
expect_fail "flag without a value" "needs a value" ./train --steps
expect_fail "stray argument" "unexpected argument" ./train data.txt
expect_fail "non-numeric --steps" "'10x' is not an integer" ./train --steps 10x --save "$tmp/keep"
expect_fail "negative --steps" "out of range" ./train --steps -1 --save "$tmp/keep"
expect_fail "zero --batch" "--batch 0 is out of range" ./train --batch 0 --save "$tmp/keep"
expect_fail "non-numeric --lr" "'abc' is not a number" ./train --lr abc --save "$tmp/keep"
expect_fail "--lr nan" "not a number" ./train --lr nan --save "$tmp/keep"
expect_fail "--dim not a multiple of --heads" "multiple of --heads" ./train --dim 30 --heads 4 --save "$tmp/keep"
expect_fail "--seq longer than --context" "raise --context" ./train $small --context 4 --save "$tmp/keep"
expect_fail "--load and --resume" "not both" ./train --load a --resume b
expect_fail "--export without a model" "need the model from --load" ./train --export "$tmp/keep"
expect_fail "--save into a missing folder" "cannot write into the folder" ./train $small --steps 1 --save "$tmp/nodir/x.ckpt"

# ---- schemes
expect_fail "unknown scheme" "unknown scheme 'bogus'" ./train --pe bogus --save "$tmp/keep"
expect_fail "unknown layer scheme" "'spiral' is not a layer scheme" ./train --layers 2 --pe-layers rope,spiral --save "$tmp/keep"
expect_fail "input scheme as a layer" "not a layer scheme" ./train --layers 2 --pe-layers rope,learned --save "$tmp/keep"
expect_fail "wrong number of layer names" "names 2 layers but the model has --layers 3" ./train --layers 3 --pe-layers rope,rope --save "$tmp/keep"
expect_fail "--pe and --pe-layers" "not both" ./train --pe rope --pe-layers rope,rope,rope,rope --save "$tmp/keep"
expect_fail "bad --input-pe" "not an input scheme" ./train --input-pe rope --save "$tmp/keep"
expect_fail "rope with an odd rotated width" "must be even" ./train --pe rope --dim 24 --heads 4 --rope-fraction 0.5 --save "$tmp/keep"
expect_fail "--rope-fraction above 1" "--rope-fraction must be a number in (0, 1]" ./train --pe rope --rope-fraction 1.5 --save "$tmp/keep"
expect_fail "bad --rope-pairing" "split or interleaved" ./train --pe rope --rope-pairing diagonal --save "$tmp/keep"
expect_fail "--rope-base 1" "--rope-base must be a number in (1," ./train --pe rope --rope-base 1 --save "$tmp/keep"

# ---- data
: > "$tmp/empty.txt"
expect_fail "empty data file" "empty" ./train --data "$tmp/empty.txt" --save "$tmp/keep"
expect_fail "missing data file" "$tmp/nothere.txt" ./train --data "$tmp/nothere.txt" --save "$tmp/keep"
head -c 100 /dev/urandom > "$tmp/tiny.txt"
expect_fail "data shorter than one batch" "fewer than --batch" ./train --data "$tmp/tiny.txt" --batch 4 --seq 64 --save "$tmp/keep"
./train $small --steps 2 --save "$tmp/bytes.ckpt" > /dev/null; check $? "could not train a small model"
mkdir -p "$tmp/set" "$tmp/mixed" "$tmp/empty"
expect_fail "a glob that matches nothing" "matches no file" ./train --data "$tmp/set/*.txt" --save "$tmp/keep"
expect_fail "an empty folder" "holds no files" ./train --data "$tmp/empty" --save "$tmp/keep"
expect_fail "--shuffle with --task" "drop it" ./train --task copy --shuffle --save "$tmp/keep"
# token shards (python3 writes them): an llm.c shard whose tokens exceed a byte model's vocabulary of 256
if [ $py = 1 ]; then
"$PY" - "$tmp" << 'PY'
import struct, sys
d = sys.argv[1]
def shard(path, toks, ntok=None):
    h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = len(toks) if ntok is None else ntok
    open(path, "wb").write(struct.pack("<256i", *h) + struct.pack("<%dH" % len(toks), *toks))
shard(d + "/big.bin", [i % 1000 for i in range(400)])
shard(d + "/trunc.bin", [1] * 100, ntok=200)
shard(d + "/oov.bin", [60000] * 50)
shard(d + "/short.bin", [1] * 6)
PY
expect_fail "token id >= vocab" "outside the model's vocabulary" ./train --load "$tmp/bytes.ckpt" --data "$tmp/big.bin" --batch 2 --seq 8 --dump-step "$tmp/keep"
expect_fail "truncated shard" "truncated" ./train --data "$tmp/trunc.bin" --save "$tmp/keep"
expect_fail "shard token >= 50257" "60000" ./train --data "$tmp/oov.bin" --save "$tmp/keep"
echo "some validation text, read as bytes" > "$tmp/val.txt"
expect_fail "--val-data of another kind than --data" "--val-data $tmp/val.txt holds bytes, but the training data ($tmp/big.bin) llm.c GPT-2 shards (uint16)" ./train --data "$tmp/big.bin" --val-data "$tmp/val.txt" --save "$tmp/keep"
# sets of files (--data as a folder or a glob): every header is checked before anything runs
cp "$tmp/big.bin" "$tmp/set/a.bin"; cp "$tmp/big.bin" "$tmp/set/b.bin"; cp "$tmp/trunc.bin" "$tmp/set/c.bin"
cp "$tmp/big.bin" "$tmp/mixed/a.bin"; echo "some text" > "$tmp/mixed/b.txt"
expect_fail "a truncated shard among good ones" "$tmp/set/c.bin is truncated" ./train --data "$tmp/set/*.bin" --save "$tmp/keep"
expect_fail "a shard and a byte file in one folder" "the files of one data set must all be of one kind" ./train --data "$tmp/mixed" --save "$tmp/keep"
expect_fail "an unquoted glob" "quote a glob" ./train --data "$tmp/set/a.bin" "$tmp/set/b.bin" --save "$tmp/keep"
mkdir -p "$tmp/short"; for i in 1 2 3 4; do cp "$tmp/short.bin" "$tmp/short/$i.bin"; done   # 4 x 6 tokens: no window of 9
expect_fail "--shuffle with fewer windows than a batch" "hold 0 windows of --seq 8 + 1 tokens" ./train $small --data "$tmp/short" --val-frac 0 --shuffle --save "$tmp/keep"
fi

# ---- checkpoints
size=$(stat -c %s "$tmp/bytes.ckpt")
head -c $((size - 10)) "$tmp/bytes.ckpt" > "$tmp/trunc.ckpt"
expect_fail "truncated checkpoint" "truncated" ./train --load "$tmp/trunc.ckpt" --export "$tmp/keep"
head -c 30 "$tmp/bytes.ckpt" > "$tmp/short.ckpt"
expect_fail "checkpoint cut inside the config" "truncated" ./train --load "$tmp/short.ckpt" --export "$tmp/keep"
cp "$tmp/bytes.ckpt" "$tmp/long.ckpt"; echo junk >> "$tmp/long.ckpt"
expect_fail "checkpoint with trailing bytes" "extra bytes" ./train --load "$tmp/long.ckpt" --export "$tmp/keep"
# a damaged config whose learned table would need 10^7 rows: refused by its parameter count before
# anything is allocated (under a 600 MB address-space limit; the table alone would be 640 MB)
if [ $py = 1 ]; then
"$PY" - "$tmp/bytes.ckpt" "$tmp/ctx.ckpt" << 'PY'
import re, struct, sys
b = open(sys.argv[1], "rb").read()
k = struct.unpack_from("<I", b, 16)[0]
text = b[20:20 + k].decode()
assert "input_pe=learned" in text
text = re.sub(r"^max_seq_len=\d+$", "max_seq_len=10000000", text, flags=re.M).encode()
open(sys.argv[2], "wb").write(b[:16] + struct.pack("<I", len(text)) + text + b[20 + k:])
PY
# (AddressSanitizer cannot run under ulimit -v: there the message alone is checked)
limit="ulimit -v 600000;"; nm ./train 2> /dev/null | grep __asan_init > /dev/null && limit=""   # (not grep -q: under pipefail its early exit fails nm)
expect_fail "a config with a huge learned table" "but its config needs" bash -c "$limit ./train --load '$tmp/ctx.ckpt' --export '$tmp/keep'"
fi
echo "this is not a checkpoint at all" > "$tmp/foreign.ckpt"
expect_fail "foreign checkpoint" "not a checkpoint" ./train --load "$tmp/foreign.ckpt" --export "$tmp/keep"
expect_fail "missing checkpoint" "cannot open checkpoint" ./train --load "$tmp/none.ckpt" --export "$tmp/keep"
expect_fail "--layers with --load" "cannot change the architecture" ./train --load "$tmp/bytes.ckpt" --layers 3 --export "$tmp/keep"
expect_fail "--rope-base with --load" "--rope-base cannot change the model" ./train --load "$tmp/bytes.ckpt" --rope-base 500 --export "$tmp/keep"
expect_fail "--context of a learned table" "learned position table has 8 rows" ./train --load "$tmp/bytes.ckpt" --context 16 --export "$tmp/keep"
expect_fail "bad --rope-scaling" "none, linear, dynamic, yarn, llama3 or longrope" ./train --pe rope --rope-scaling ntk --save "$tmp/keep"
expect_fail "--rope-factor below 1" "--rope-factor must be a number in [1," ./train --pe rope --rope-factor 0.5 --save "$tmp/keep"
expect_fail "p-rope keeping no frequency" "keeps floor" ./train --pe p-rope --dim 16 --heads 2 --p-rope-fraction 0.1 --save "$tmp/keep"
expect_fail "--eval-batches without a model" "need the model from --load" ./train --eval-batches 2
./train $small --steps 2 --save "$tmp/w.ckpt" > /dev/null
./train --load "$tmp/w.ckpt" --export "$tmp/w.safetensors" 2> /dev/null
expect_fail "safetensors as a checkpoint" "not a checkpoint" ./train --resume "$tmp/w.safetensors" --save "$tmp/keep"

# ---- a failure after training (the checkpoint cannot be written) keeps the old file intact
mkdir -p "$tmp/late" && echo "precious" > "$tmp/late/keep" && mkdir "$tmp/late/keep.tmp"
before=$(md5sum < "$tmp/late/keep")
if ./train $small --steps 3 --save "$tmp/late/keep" > /dev/null 2> "$tmp/err"; then
  check 1 "a checkpoint that cannot be written must exit non-zero"
else
  grep -q "cannot create" "$tmp/err" && [ "$(md5sum < "$tmp/late/keep")" = "$before" ]
  check $? "failed checkpoint write: message or old file" || cat "$tmp/err"
fi

# ---- resume and token models
./train $small --steps 4 --save "$tmp/r.ckpt" > /dev/null
expect_fail "--resume with nothing left to do" "already done 4 steps" ./train --resume "$tmp/r.ckpt" --steps 4 --save "$tmp/keep"
# the stored stream position is a token offset in order, a window of a permutation (from --seed, of
# --seq windows) when shuffled: a resume that reads it the other way is refused; the same settings go on
expect_fail "--resume in order with --shuffle" "read its text in order; resuming it shuffled" ./train --resume "$tmp/r.ckpt" --shuffle --steps 6 --save "$tmp/keep"
./train $small --shuffle --steps 2 --save "$tmp/sh.ckpt" > /dev/null 2>&1
expect_fail "--resume shuffled with another --seed" "drawn from --seed 1337 over windows of --seq 8; --seed 5 --seq 8" ./train --resume "$tmp/sh.ckpt" --seed 5 --steps 4 --save "$tmp/keep"
expect_fail "--resume shuffled with another --seq" "--seed 1337 --seq 4 would go on in another order" ./train --resume "$tmp/sh.ckpt" --seq 4 --steps 4 --save "$tmp/keep"
./train --resume "$tmp/sh.ckpt" --steps 4 --seed 1337 --seq 8 --shuffle > "$tmp/out" 2>&1
check $? "a shuffled resume with its own settings given again was refused: $(tail -2 "$tmp/out")"
if [ $py = 1 ]; then
  ./train $small --data "$tmp/big.bin" --steps 1 --save "$tmp/tok.ckpt" > /dev/null
  expect_fail "sampling a token model without a tokenizer" "pass --tokenizer" ./train --load "$tmp/tok.ckpt" --sample 5
fi

# --load restores no training setting: evaluating on the data it was trained on with a larger
# --val-frac scores tokens it trained on, which a warning says; the same --val-frac or other data: none
./train $small --steps 2 --val-frac 0.05 --save "$tmp/vf.ckpt" > /dev/null 2>&1
./train --load "$tmp/vf.ckpt" --eval-batches 2 --batch 2 --seq 8 > /dev/null 2> "$tmp/vf1"
./train --load "$tmp/vf.ckpt" --eval-batches 2 --batch 2 --seq 8 --val-frac 0.05 > /dev/null 2> "$tmp/vf2"
./train --load "$tmp/vf.ckpt" --data README.md --eval-batches 2 --batch 2 --seq 8 > "$tmp/vf3o" 2> "$tmp/vf3"
grep -q "was trained on the embedded corpus with --val-frac 0.05; --val-frac 0.1 scores the last 0.1 of it, of which the first 0.05 were trained on" "$tmp/vf1" &&
   ! grep -q "warning" "$tmp/vf2" && ! grep -q "was trained on" "$tmp/vf3" && grep -q "^eval: loss" "$tmp/vf3o"
check $? "the --val-frac warning on --load: $(cat "$tmp/vf1" "$tmp/vf2" "$tmp/vf3")"

# ---- sampling from a checkpoint: greedy is deterministic, top-k 1 is greedy, a seed repeats
./train --load "$tmp/r.ckpt" --sample 40 --prompt "The cat" --temperature 0 > "$tmp/g1" 2>&1
./train --load "$tmp/r.ckpt" --sample 40 --prompt "The cat" --temperature 0 > "$tmp/g2" 2>&1
./train --load "$tmp/r.ckpt" --sample 40 --prompt "The cat" --temperature 0.7 --top-k 1 > "$tmp/k1" 2>&1
./train --load "$tmp/r.ckpt" --sample 40 --prompt "The cat" --temperature 1 --seed 5 > "$tmp/s1" 2>&1
./train --load "$tmp/r.ckpt" --sample 40 --prompt "The cat" --temperature 1 --seed 5 > "$tmp/s2" 2>&1
./train --load "$tmp/r.ckpt" --sample 40 --prompt "The cat" --temperature 1 --seed 6 > "$tmp/s3" 2>&1
grep -q "^The cat" "$tmp/g1" && cmp -s "$tmp/g1" "$tmp/g2" && [ "$(sed 1d "$tmp/g1")" = "$(sed 1d "$tmp/k1")" ] &&
   cmp -s "$tmp/s1" "$tmp/s2" && ! cmp -s "$tmp/s1" "$tmp/s3"
check $? "sampling from --load" || cat "$tmp/g1" "$tmp/k1" "$tmp/s1" "$tmp/s3"

# ---- context extension and evaluation of a trained RoPE model at 4x its context
./train $small --pe rope --steps 3 --save "$tmp/rope.ckpt" > /dev/null
./train --load "$tmp/rope.ckpt" --context 32 --seq 32 --batch 1 --eval-batches 2 --rope-scaling yarn --rope-factor 4 > "$tmp/ev" 2>&1 &&
   grep -q "^eval: loss [0-9.]* (perplexity [0-9.]*) over 2 batches of 1 x 32 validation tokens (model context 32)" "$tmp/ev" &&
   ./train --load "$tmp/rope.ckpt" --rope-scaling llama3 --rope-factor 8 --export "$tmp/rs.safetensors" 2> /dev/null &&
   grep -aq '"rope_scaling\\":\\"llama3\\"' "$tmp/rs.safetensors"
check $? "--load with --context and --rope-scaling" || cat "$tmp/ev"
expect_fail "--rope-scaling on --resume" "--resume continues the same run" ./train --resume "$tmp/rope.ckpt" --steps 9 --rope-scaling yarn
# continued training at a longer context, and packed training
./train --load "$tmp/rope.ckpt" --context 16 --seq 16 --steps 2 --save "$tmp/long.ckpt" > /dev/null &&
   ./train $small --pe alibi --pack 1 --steps 2 > /dev/null
check $? "continued training with a new --context, or --pack 1"

# ---- the lr schedule (the log's lr column, 7 digits) against hand-computed values, and dropout
# lr_ok "what" "expected lr of steps 1..N, space-separated" ./train args...
lr_ok() {
  local what=$1 want=$2; shift 2
  "$@" --log "$tmp/lr.csv" > "$tmp/lrout" 2>&1 &&
     [ "$(tail -n +2 "$tmp/lr.csv" | cut -d, -f4 | tr '\n' ' ')" != "" ] &&
     awk -v want="$want" -F, 'NR > 1 { split(want, w, " "); e = w[NR - 1]; if ($4 < e * (1 - 1e-6) || $4 > e * (1 + 1e-6)) bad = 1; n++ }
        END { exit bad || n != split(want, w, " ") }' "$tmp/lr.csv"
        check $? "$what: lr column $(cut -d, -f4 "$tmp/lr.csv" | tr '\n' ' '), expected $want" || cat "$tmp/lrout"
}
# poly, power 2, 2 warm-up steps of 10, lr 0.01 to 0.001: 0.001 + 0.009 (1 - (s-2)/7)^2 from step s = 2
lr_ok "--schedule poly --poly-power 2" "0.005 0.01 0.01 0.00761224489795919 0.00559183673469388 0.00393877551020408 0.0026530612244898 0.00173469387755102 0.00118367346938776 0.001" \
  ./train $small --steps 10 --lr 0.01 --warmup 2 --schedule poly --poly-power 2
# --warmup-frac 0.25 of 9 steps: 3 warm-up steps (2.25 rounded up), then linear decay (power 1) to 0
lr_ok "--warmup-frac with linear poly decay" "0.00333333333333333 0.00666666666666667 0.01 0.01 0.008 0.006 0.004 0.002 0" \
  ./train $small --steps 9 --lr 0.01 --min-lr-frac 0 --warmup-frac 0.25 --schedule poly
grep -q "^training: dropout 0 | lr 0.01, 3 warm-up steps, poly decay to 0 (power 1)$" "$tmp/lrout"
check $? "the training line of --schedule poly" || cat "$tmp/lrout"
# cosine, the default: 1 warm-up step of 5, then 0.001 + 0.0045 (1 + cos(pi (s-1)/3))
lr_ok "the cosine schedule" "0.01 0.01 0.00775 0.00325 0.001" ./train $small --steps 5 --lr 0.01 --warmup 1
expect_fail "--warmup with --warmup-frac" "give either --warmup N or --warmup-frac F, not both" ./train $small --warmup 3 --warmup-frac 0.1 --save "$tmp/keep"
expect_fail "unknown --schedule" "--schedule linear: give cosine or poly" ./train $small --schedule linear --save "$tmp/keep"
expect_fail "--poly-power without poly" "--poly-power applies to --schedule poly" ./train $small --poly-power 2 --save "$tmp/keep"
expect_fail "unknown --precision" "--precision fp16: give fp32 or bf16" ./train $small --precision fp16 --save "$tmp/keep"
expect_fail "an unknown bf16 path" "PEGPT_BF16_PATH=avx2: give amx, avx512bf16, portable, avx512bf16-emulated or amx-emulated" \
  env PEGPT_BF16_PATH=avx2 ./train $small --steps 2 --precision bf16 --save "$tmp/keep"
if grep -qw avx512_bf16 /proc/cpuinfo; then
  echo "test_cli: this CPU has AVX512_BF16: forcing that path cannot be refused here (not tested)"
else
  expect_fail "a bf16 path the CPU lacks" "PEGPT_BF16_PATH=avx512bf16: this CPU (or its OS) has no AVX512_BF16" \
    env PEGPT_BF16_PATH=avx512bf16 ./train $small --steps 2 --precision bf16 --save "$tmp/keep"
fi
if grep -qw amx_bf16 /proc/cpuinfo; then
  echo "test_cli: this CPU has AMX-BF16: forcing the amx path is refused only where Linux refuses the tile state (not tested)"
else
  expect_fail "the amx path on a CPU without it" "PEGPT_BF16_PATH=amx: this CPU (or its OS) has no AMX-BF16 tiles; unset it" \
    env PEGPT_BF16_PATH=amx ./train $small --steps 2 --precision bf16 --save "$tmp/keep"
fi
expect_fail "a cache size that is not one" "PEGPT_GEMM_L1=big: give the cache size in KiB, 1 to 65536 (unset: cpuid's)" \
  env PEGPT_GEMM_L1=big ./train $small --steps 2 --save "$tmp/keep"
expect_fail "an unknown gemm path" "PEGPT_GEMM_PATH=sse: give avx512, avx2 or generic" \
  env PEGPT_GEMM_PATH=sse ./train $small --steps 2 --save "$tmp/keep"
expect_fail "--dropout 1" "--dropout 1 is out of range" ./train $small --dropout 1 --save "$tmp/keep"
expect_fail "--warmup-frac above 1" "--warmup-frac 1.5 is out of range" ./train $small --warmup-frac 1.5 --save "$tmp/keep"
# dropout changes the training losses, and the run says so
./train $small --steps 3 --log "$tmp/d0.csv" > /dev/null &&
./train $small --steps 3 --dropout 0.1 --log "$tmp/d1.csv" > "$tmp/dout" && [ -s "$tmp/d0.csv" ] &&
grep -q "^training: dropout 0.1 | lr 0.001, 0 warm-up steps, cosine decay to 0.0001$" "$tmp/dout" &&
   [ "$(cut -d, -f2 "$tmp/d0.csv")" != "$(cut -d, -f2 "$tmp/d1.csv")" ]
check $? "--dropout 0.1 must change the losses and be printed" || cat "$tmp/dout"

# --detect-anomaly: a run driven to overflow (lr 10 and weight decay 10 grow every weight 99-fold a
# step) stops at the first NaN or Inf, naming the pass, the tensor and the index; a healthy run's
# losses are unchanged by it
expect_fail "--detect-anomaly on a diverging run" "(--detect-anomaly)" ./train $small --steps 40 --lr 10 --wd 10 --detect-anomaly --save "$tmp/keep"
grep -qE "error: anomaly at step [0-9]+: (layer [0-9]+ )?(forward|backward|optimiser step): [a-z0-9_.]+ has (NaN|[+-]Inf) at \([a-z]+=[0-9]+(, [a-z]+=[0-9]+)*\), first bad of [0-9]+ values \(of [0-9]+\)" "$tmp/err"
check $? "--detect-anomaly's message" || cat "$tmp/err"
expect_fail "the same run without --detect-anomaly" "training diverged" ./train $small --steps 40 --lr 10 --wd 10 --save "$tmp/keep"
./train $small --steps 3 --dropout 0.1 --detect-anomaly --log "$tmp/d2.csv" > /dev/null
[ "$(cut -d, -f2 "$tmp/d1.csv")" = "$(cut -d, -f2 "$tmp/d2.csv")" ]
check $? "--detect-anomaly must not change a finite run's losses" || paste "$tmp/d1.csv" "$tmp/d2.csv"
# the evaluations are checked too: a NaN planted in layer 0's ln_1 weight of a checkpoint (byte-vocabulary
# model, C = 32: parameter 256 x 32, after wte) stops the perplexity evaluation (gpt_forward) and
# sampling (the cached forward), naming them, the layer, the pass and the tensor; a healthy model
# samples the same tokens with and without the flag
./train --layers 1 --heads 2 --dim 32 --seq 16 --batch 2 --steps 1 --threads 1 --save "$tmp/da.ckpt" > /dev/null
cp "$tmp/da.ckpt" "$tmp/nan.ckpt"
K=$(od -An -tu4 -j16 -N4 "$tmp/da.ckpt" | tr -d ' ')
printf '\x00\x00\xc0\x7f' | dd of="$tmp/nan.ckpt" bs=1 seek=$((20 + K + 8 + 4 * 256 * 32)) conv=notrunc 2> /dev/null
expect_fail "--detect-anomaly in the perplexity evaluation" "anomaly in the perplexity evaluation: layer 0 forward: ln1 has NaN at (b=0, t=0, c=0)" \
    ./train --load "$tmp/nan.ckpt" --ppl-out "$tmp/nan_ppl.csv" --ppl-windows 1 --ppl-tokens 64 --threads 1 --detect-anomaly
expect_fail "--detect-anomaly in sampling (the cached forward)" "anomaly in sampling: layer 0 cached forward: ln1 has NaN at (b=0, t=0, c=0)" \
    ./train --load "$tmp/nan.ckpt" --sample 5 --threads 1 --detect-anomaly
./train --load "$tmp/da.ckpt" --sample 20 --threads 1 > "$tmp/s0.out" &&
    ./train --load "$tmp/da.ckpt" --sample 20 --threads 1 --detect-anomaly > "$tmp/s1.out" && cmp -s "$tmp/s0.out" "$tmp/s1.out"
check $? "--detect-anomaly must not change a healthy model's sample"
expect_fail "--detect-anomaly with a mode it does not check" "--export and --export-llmc are not checked" ./train --load "$tmp/da.ckpt" --detect-anomaly --export "$tmp/da.st"
expect_fail "--detect-anomaly with nothing to check" "this run has neither" ./train --load "$tmp/da.ckpt" --detect-anomaly

# ---- --save and --log with nothing to train: refused, not silently unwritten
expect_fail "a run with nothing to do" "nothing to do: the run trains no step (--steps 0)" ./train $small --steps 0
expect_fail "a loaded model with nothing to do" "(--steps 0, the default with --load)" ./train --load "$tmp/bytes.ckpt"
expect_fail "--save with --steps 0" "--save and --log keep what training steps make, and this run trains none (--steps 0)" ./train $small --steps 0 --save "$tmp/keep"
./train $small --steps 1 --save "$tmp/one.ckpt" > /dev/null 2>&1
expect_fail "--load then --save without --steps" "trains none (--load trains only with --steps)" ./train --load "$tmp/one.ckpt" --save "$tmp/keep"
expect_fail "--log while evaluating" "trains none (it evaluates)" ./train --load "$tmp/one.ckpt" --eval-batches 1 --log "$tmp/keep"

# ---- --warmup-frac: 0.07 x 100 steps is 7 warm-up steps (in doubles 7.000000000000001, which ceil
# made 8): step s of the warm-up runs at lr x s / 7, so the log's lr reaches 1e-3 at step 7, not 8
./train $small --steps 100 --lr 1e-3 --warmup-frac 0.07 --log "$tmp/wu.csv" > /dev/null 2>&1
awk -F, '$1 == 6 { a = $4 } $1 == 7 { b = $4 } END { exit !(a + 0 < 1e-3 && b + 0 == 1e-3) }' "$tmp/wu.csv"
check $? "--warmup-frac 0.07 x 100 steps: the lr should peak at step 7" || sed -n 1,10p "$tmp/wu.csv"

# ---- a learned table at context 1 exports as [1, C] (the config says n_positions 1), biases as [C];
# the export loads back and exports again byte for byte
./train --steps 1 --layers 1 --heads 1 --dim 8 --seq 1 --batch 1 --context 1 --pe learned --save "$tmp/c1.ckpt" > /dev/null 2>&1
./train --load "$tmp/c1.ckpt" --export "$tmp/c1.st" > /dev/null 2>&1 && ./train --load "$tmp/c1.st" --export "$tmp/c1b.st" > /dev/null 2>&1
if [ $py = 1 ]; then
  shapes=$("$PY" -c "
import json, struct, sys
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
print(h['transformer.wpe.weight']['shape'], h['transformer.h.0.ln_1.bias']['shape'])" "$tmp/c1.st" 2>&1)
  [ "$shapes" = "[1, 8] [8]" ] && cmp -s "$tmp/c1.st" "$tmp/c1b.st"
  check $? "a learned table at context 1 should export as [1, 8] and round-trip: $shapes"
fi

# ---- a validation text of fewer whole batches than --val-batches: those are read, each once (13
# tokens hold 3 batches of 1 x 4; reading 8 wrapped to the start and counted some twice)
printf 'abcdefghijklm' > "$tmp/v13.txt"
vb="--layers 1 --heads 2 --dim 16 --seq 4 --batch 1 --steps 1 --val-data $tmp/v13.txt --val-frac 0 --sample 0"
./train $vb --val-batches 8 > "$tmp/vb8" 2> "$tmp/vb8.err"; ./train $vb --val-batches 3 > "$tmp/vb3" 2> "$tmp/vb3.err"
grep -q "hold 3 whole batches of 1 x 4, fewer than --val-batches 8" "$tmp/vb8.err" && ! grep -q "whole batches" "$tmp/vb3.err" &&
   [ -n "$(grep -o '| val [0-9.]*' "$tmp/vb8")" ] && [ "$(grep -o '| val [0-9.]*' "$tmp/vb8")" = "$(grep -o '| val [0-9.]*' "$tmp/vb3")" ]
check $? "--val-batches past the validation text" || cat "$tmp/vb8.err" "$tmp/vb8" "$tmp/vb3"

# ---- model import: --load takes llm.c GPT-2 files and --export safetensors by content (both round
# trip, byte for byte, with the same loss); --export-llmc only for what llm.c runs; a loaded model's
# positional schedule changes only with --new-schedule
./train $small --steps 2 --save "$tmp/gpt2.ckpt" > /dev/null
ev="--val-data $tmp/tiny.txt --val-frac 0 --batch 2 --seq 8 --eval-batches 1"
./train --load "$tmp/gpt2.ckpt" --export-llmc "$tmp/gpt2.bin" 2> /dev/null
./train --load "$tmp/gpt2.ckpt" --export "$tmp/gpt2.st" 2> /dev/null
./train --load "$tmp/gpt2.bin" --export-llmc "$tmp/gpt2-again.bin" --export "$tmp/gpt2-via-llmc.st" 2> /dev/null &&
   ./train --load "$tmp/gpt2.st" --export "$tmp/gpt2-again.st" 2> /dev/null &&
   cmp -s "$tmp/gpt2.bin" "$tmp/gpt2-again.bin" && cmp -s "$tmp/gpt2.st" "$tmp/gpt2-again.st" && cmp -s "$tmp/gpt2.st" "$tmp/gpt2-via-llmc.st" &&
   [ "$(head -c 8 "$tmp/gpt2.bin" | od -An -tu4 | tr -s ' ')" = " 20240326 3" ]
check $? "llm.c and safetensors round trips through --load"
for f in gpt2.ckpt gpt2.bin gpt2.st; do
  ./train --load "$tmp/$f" $ev 2> /dev/null | grep "^eval:" > "$tmp/ev.$f"
done
grep -q "^eval: loss" "$tmp/ev.gpt2.ckpt" && cmp -s "$tmp/ev.gpt2.ckpt" "$tmp/ev.gpt2.bin" && cmp -s "$tmp/ev.gpt2.ckpt" "$tmp/ev.gpt2.st"
check $? "the same loss from the checkpoint, its llm.c file and its export" || cat "$tmp"/ev.gpt2.*
size=$(stat -c %s "$tmp/gpt2.bin")
head -c $((size - 8)) "$tmp/gpt2.bin" > "$tmp/trunc.bin"
expect_fail "truncated llm.c model" "llm.c model '$tmp/trunc.bin' is $((size - 8)) bytes but its header needs $size: it is truncated" ./train --load "$tmp/trunc.bin" --export "$tmp/keep"
./train --load "$tmp/gpt2.ckpt" --batch 1 --seq 4 --dump-step "$tmp/dump.st" 2> /dev/null
expect_fail "a --dump-step file as a model" "safetensors file $tmp/dump.st lacks the tensor transformer.wte.weight" ./train --load "$tmp/dump.st" --export "$tmp/keep"
expect_fail "--export-llmc of a RoPE model" "positions are rope; llm.c cannot run it" ./train --load "$tmp/rope.ckpt" --export "$tmp/keep" --export-llmc "$tmp/rope.bin"
[ ! -e "$tmp/rope.bin" ]; check $? "a refused --export-llmc wrote a file"
expect_fail "--export-llmc without a model" "--export-llmc, --dump-step and --eval-batches need the model from --load" ./train --export-llmc "$tmp/keep"
# the model-only modes end the run: anything else asked beside them is refused, not dropped
expect_fail "--export with --steps and --save" "--export runs on the model alone and ends the run (no training, evaluation or sampling): --steps would be ignored" \
  ./train --load "$tmp/gpt2.ckpt" --export "$tmp/keep" --steps 5 --save "$tmp/keep2"
expect_fail "--export with --dump-step" "--dump-step would be ignored" ./train --load "$tmp/gpt2.ckpt" --export "$tmp/keep" --dump-step "$tmp/keep2"
expect_fail "--export-llmc with --ppl-out" "--export-llmc runs on the model alone and ends the run (no training, evaluation or sampling): --ppl-out would be ignored" \
  ./train --load "$tmp/gpt2.ckpt" --export-llmc "$tmp/keep" --ppl-out "$tmp/keep2"
expect_fail "--attention-map with --export" "--attention-map runs on the model alone and ends the run (no training, evaluation or sampling): --export would be ignored" \
  ./train --load "$tmp/gpt2.ckpt" --attention-map "$tmp/keep" --prompt ab --export "$tmp/keep2"
[ ! -e "$tmp/keep2" ]; check $? "a refused model-only mode wrote nothing"
# flags that only modify something not asked for are refused, not ignored
expect_fail "a training setting on a run that trains nothing" "--lr shapes training, and this run trains no step (with --load, give --steps N to train)" \
  ./train --load "$tmp/gpt2.ckpt" --sample 3 --lr 0.1
expect_fail "--zero in one process" "--zero and --verify-ranks work across the ranks of mpirun" ./train $small --steps 1 --zero 1 --save "$tmp/keep"
expect_fail "--verify-ranks in one process" "this run is one process: drop them" ./train $small --steps 1 --verify-ranks --save "$tmp/keep"
expect_fail "a schedule flag with --resume" "--pe: --resume continues the run of '$tmp/gpt2.ckpt' with its own positional schedule (learned); to train it with another, --load it with --new-schedule" \
  ./train --resume "$tmp/gpt2.ckpt" --steps 9 --pe rope --save "$tmp/keep"
expect_fail "a RoPE setting for an ALiBi model" "--rope-base is read only with a rope, xpos or p-rope layer, which this model does not have (its positions: alibi)" \
  ./train $small --pe alibi --rope-base 500 --save "$tmp/keep"
expect_fail "a YaRN setting without --rope-scaling yarn" "--yarn-beta-fast is read only with --rope-scaling yarn" ./train $small --pe rope --yarn-beta-fast 5 --save "$tmp/keep"
expect_fail "--rope-factor without a --rope-scaling" "--rope-factor is read only with a --rope-scaling other than none" ./train $small --pe rope --rope-factor 2 --save "$tmp/keep"
expect_fail "a context extension for a loaded model without RoPE" "--rope-scaling is read only with a rope, xpos or p-rope layer" \
  ./train --load "$tmp/bytes.ckpt" --rope-scaling yarn --rope-factor 4 --sample 5
expect_fail "--sinusoidal-scale without a sinusoidal input" "--sinusoidal-scale is read only with a sinusoidal input" ./train $small --pe t5 --sinusoidal-scale none --save "$tmp/keep"
expect_fail "--temperature without --sample" "--temperature and --top-k shape --sample's draws" ./train --load "$tmp/gpt2.ckpt" --temperature 0.5 --save "$tmp/keep"
expect_fail "--prompt without --sample" "--prompt is the text --sample continues" ./train --load "$tmp/gpt2.ckpt" --prompt ab --save "$tmp/keep"
expect_fail "--sample with --eval-batches" "--sample is not run beside --dump-step, --eval-batches" ./train --load "$tmp/gpt2.ckpt" $ev --sample 5
expect_fail "--steps with --eval-batches" "evaluate the model instead of training it" ./train --load "$tmp/gpt2.ckpt" $ev --steps 3 --save "$tmp/keep"
expect_fail "--save-every without --save" "--save-every 3 checkpoints to --save FILE" ./train $small --steps 3 --save-every 3 --log "$tmp/keep"
expect_fail "--val-frac with --val-data" "--val-frac 0.2 with --val-data" ./train $small --steps 1 --val-data "$tmp/tiny.txt" --val-frac 0.2 --save "$tmp/keep"
expect_fail "--eval-out with --eval-per-length 0" "which --eval-per-length 0 turns off" ./train --task copy --steps 1 --eval-per-length 0 --eval-out "$tmp/keep"
expect_fail "--pe with --load of a learned model" "--pe would give the model of '$tmp/gpt2.bin' a new positional schedule, dropping the learned position table it was trained with; add --new-schedule" \
  ./train --load "$tmp/gpt2.bin" --pe rope --steps 2 --save "$tmp/keep"
expect_fail "--pe-layers with --load of a RoPE model" "a new positional schedule in place of its own (rope); add --new-schedule" ./train --load "$tmp/rope.ckpt" --pe-layers nope --save "$tmp/keep"
expect_fail "--new-schedule with --resume" "--new-schedule gives the model of --load FILE a new positional schedule; give --load" ./train --resume "$tmp/r.ckpt" --new-schedule --pe rope --steps 9 --save "$tmp/keep"
expect_fail "--new-schedule without a schedule" "give the new positional schedule with --pe, --pe-layers or --input-pe" ./train --load "$tmp/gpt2.bin" --new-schedule --steps 2 --save "$tmp/keep"
expect_fail "--new-schedule keeping a learned table at a new context" "keeps the learned position table of '$tmp/gpt2.bin', which has 8 rows" \
  ./train --load "$tmp/gpt2.bin" --new-schedule --input-pe learned --pe-layers t5 --context 16 --save "$tmp/keep"
# accepted: GPT-2 weights with RoPE in place of the learned table, at twice the context; every other
# weight kept exactly; then trained, resumed, and extended like any RoPE model
./train --load "$tmp/gpt2.bin" --new-schedule --pe rope --export "$tmp/ns.st" 2> "$tmp/nsout" &&
   grep -q "^--new-schedule: the model of '$tmp/gpt2.bin' had positions learned, now rope; dropped: transformer.wpe.weight; new (from --seed): nothing$" "$tmp/nsout" &&
   ! grep -q "transformer.wpe" "$tmp/ns.st" && ./tests/st_compare "$tmp/ns.st" "$tmp/gpt2.st" --rtol 0 --atol 0 --skip transformer.wpe > /dev/null &&
   ./train --load "$tmp/gpt2.bin" --new-schedule --pe rope --context 16 --seq 16 --steps 2 --save "$tmp/ns.ckpt" > /dev/null 2>&1 &&
   ./train --resume "$tmp/ns.ckpt" --steps 3 > /dev/null &&
   ./train --load "$tmp/ns.ckpt" --context 32 --seq 32 --batch 1 --eval-batches 1 --rope-scaling yarn --rope-factor 2 > "$tmp/ev" 2>&1 &&
   grep -q "^eval: loss .* (model context 32)" "$tmp/ev"
check $? "--new-schedule --pe rope on a loaded GPT-2, then training and extension" || cat "$tmp/nsout" "$tmp/ev"
# a t5 table added beside the kept learned one (new from --seed; the learned table kept exactly)
./train --load "$tmp/gpt2.st" --new-schedule --input-pe learned --pe-layers t5 --export "$tmp/ns5.st" 2> "$tmp/nsout" &&
   grep -q "had positions learned, now learned+t5; dropped: nothing; new (from --seed): pe.t5.weight$" "$tmp/nsout" &&
   ./tests/st_compare "$tmp/ns5.st" "$tmp/gpt2.st" --rtol 0 --atol 0 > /dev/null
check $? "--new-schedule adding a t5 table" || cat "$tmp/nsout"

# ---- the good paths print what a user needs
./train --help > "$tmp/help" && grep -q -- "--rope-pairing" "$tmp/help" && grep -q -- "--dump-step" "$tmp/help"; check $? "--help"
for f in data steps batch seq layers heads dim lr seed threads save load resume pe pe-layers input-pe \
         rope-base rope-fraction rope-pairing sample prompt export dump-step pack eval-batches rope-scaling \
         rope-factor rope-original-context yarn-beta-fast yarn-beta-slow llama3-low-freq-factor \
         llama3-high-freq-factor xpos-scale-base p-rope-fraction t5-num-buckets t5-max-distance \
         dropout schedule poly-power warmup-frac detect-anomaly export-llmc new-schedule; do
  grep -q -- "--$f " "$tmp/help"; check $? "--help lacks --$f"
done

# ---- perplexity against window length (--ppl-out): a learned table gets no number past its context
./train $small --steps 2 --save "$tmp/ppl.ckpt" > /dev/null
./train --load "$tmp/ppl.ckpt" --ppl-out "$tmp/ppl.csv" --ppl-positions "$tmp/pos.csv" --ppl-tokens 640 > "$tmp/pplout" 2>&1 &&
   [ "$(head -1 "$tmp/ppl.csv")" = "window,mode,tokens,loss,ppl,note" ] && [ "$(wc -l < "$tmp/ppl.csv")" = 11 ] &&
   [ "$(grep -c '^\(4\|8\),\(nonoverlap\|sliding\),640,[0-9.]*,[0-9.]*,$' "$tmp/ppl.csv")" = 4 ] &&
   [ "$(grep -c '^\(16\|32\|64\),\(nonoverlap\|sliding\),0,,,learned table has 8 rows$' "$tmp/ppl.csv")" = 6 ] &&
   [ "$(head -1 "$tmp/pos.csv")" = "window,position,loss" ] && [ "$(wc -l < "$tmp/pos.csv")" = 13 ] &&
   grep -q "learned table has 8 rows" "$tmp/pplout" && ! ls "$tmp"/*.tmp > /dev/null 2>&1
check $? "--ppl-out on a learned-table model" || cat "$tmp/pplout" "$tmp/ppl.csv"
# a RoPE model with context extension: every window gets a number
./train --load "$tmp/rope.ckpt" --ppl-out "$tmp/pplr.csv" --ppl-windows 1,4 --ppl-stride 0.25 --ppl-tokens 320 --rope-scaling yarn --rope-factor 4 > "$tmp/pplout" 2>&1 &&
   [ "$(grep -c '^\(8\|32\),\(nonoverlap\|sliding\),[0-9][0-9]*,[0-9.]*,[0-9.]*,$' "$tmp/pplr.csv")" = 4 ]
check $? "--ppl-out with --rope-scaling" || cat "$tmp/pplout" "$tmp/pplr.csv"
# --ppl-skip N scores the text from its token N on: the same numbers as the text without its first N
# bytes (the byte tokenizer: a token per byte); a skip that leaves nothing is refused
head -c 3000 README.md > "$tmp/v.txt"; tail -c +201 "$tmp/v.txt" > "$tmp/v2.txt"
./train --load "$tmp/rope.ckpt" --val-data "$tmp/v.txt" --ppl-skip 200 --ppl-tokens 320 --ppl-windows 1,4 --ppl-out "$tmp/sk1.csv" > "$tmp/pplout" 2>&1
./train --load "$tmp/rope.ckpt" --val-data "$tmp/v2.txt" --ppl-tokens 320 --ppl-windows 1,4 --ppl-out "$tmp/sk2.csv" > /dev/null 2>&1
./train --load "$tmp/rope.ckpt" --val-data "$tmp/v.txt" --ppl-tokens 320 --ppl-windows 1,4 --ppl-out "$tmp/sk3.csv" > /dev/null 2>&1
[ -s "$tmp/sk1.csv" ] && cmp -s "$tmp/sk1.csv" "$tmp/sk2.csv" && ! cmp -s "$tmp/sk1.csv" "$tmp/sk3.csv" &&
   grep -q "its tokens 200\.\.520 scored" "$tmp/pplout"
check $? "--ppl-skip 200 does not score the text without its first 200 tokens" || cat "$tmp/pplout"
expect_fail "--ppl-skip past the text" "--ppl-skip 2999: the validation text" ./train --load "$tmp/rope.ckpt" --val-data "$tmp/v.txt" --ppl-skip 2999 --ppl-out "$tmp/keep"
expect_fail "--ppl-skip without an evaluation" "--ppl-skip applies to the perplexity evaluation" ./train --load "$tmp/rope.ckpt" --ppl-skip 5
expect_fail "--ppl-out without a model" "--ppl-out and --ppl-positions need the model from --load" ./train --ppl-out "$tmp/keep"
expect_fail "--ppl-windows without --ppl-out" "--ppl-windows applies to the perplexity evaluation" ./train --load "$tmp/ppl.ckpt" --ppl-windows 1,2
expect_fail "--ppl-windows with zero" "--ppl-windows '0' in '1,0': a window must be a positive multiple" ./train --load "$tmp/ppl.ckpt" --ppl-windows 1,0 --ppl-out "$tmp/keep"
expect_fail "--ppl-windows negative" "--ppl-windows '-2'" ./train --load "$tmp/ppl.ckpt" --ppl-windows -2 --ppl-out "$tmp/keep"
expect_fail "--ppl-windows not numbers" "--ppl-windows 'x' in '1,x' is not a number" ./train --load "$tmp/ppl.ckpt" --ppl-windows 1,x --ppl-out "$tmp/keep"
expect_fail "--ppl-windows malformed" "is not a comma-separated list" ./train --load "$tmp/ppl.ckpt" --ppl-windows 1,,2 --ppl-out "$tmp/keep"
expect_fail "--ppl-windows under one token" "a window needs at least 1 token" ./train --load "$tmp/ppl.ckpt" --ppl-windows 0.1,1 --ppl-out "$tmp/keep"
expect_fail "--ppl-stride 0" "--ppl-stride 0: the sliding stride is a fraction of the window in (0, 1]" ./train --load "$tmp/ppl.ckpt" --ppl-stride 0 --ppl-out "$tmp/keep"
expect_fail "--ppl-stride above 1" "--ppl-stride 1.5 is out of range" ./train --load "$tmp/ppl.ckpt" --ppl-stride 1.5 --ppl-out "$tmp/keep"
expect_fail "--ppl-tokens beyond the text" "--ppl-tokens 100000: the validation text" ./train --load "$tmp/ppl.ckpt" --ppl-tokens 100000 --ppl-out "$tmp/keep"
expect_fail "--ppl-tokens under the largest window" "--ppl-tokens 50 is fewer than the largest window, 64 tokens" ./train --load "$tmp/ppl.ckpt" --ppl-tokens 50 --ppl-out "$tmp/keep"
expect_fail "no validation text for --ppl-out" "give more text with --val-data FILE or a larger --val-frac" ./train --load "$tmp/ppl.ckpt" --val-frac 0 --ppl-out "$tmp/keep"
expect_fail "--ppl-out into a missing folder" "--ppl-out $tmp/nodir/p.csv: cannot write into the folder" ./train --load "$tmp/ppl.ckpt" --ppl-out "$tmp/nodir/p.csv"
for f in ppl-out ppl-positions ppl-windows ppl-stride ppl-tokens ppl-skip; do
  grep -q -- "--$f " "$tmp/help"; check $? "--help lacks --$f"
done

# ---- attention statistics (--attention-stats): 16 windows per length, every query row but row 0;
# a learned table gets no number past its context (8)
./train --load "$tmp/ppl.ckpt" --attention-stats "$tmp/as.csv" --collapse-threshold 0.2 > "$tmp/asout" 2>&1 &&
   [ "$(head -1 "$tmp/as.csv")" = "window,layer,head,windows,rows,sink_mass,entropy,distance,collapsed,layer_collapsed_frac,note" ] &&
   [ "$(wc -l < "$tmp/as.csv")" = 11 ] && [ "$(grep -c '^4,0,[01],16,48,' "$tmp/as.csv")" = 2 ] &&
   [ "$(grep -c '^8,0,[01],16,112,' "$tmp/as.csv")" = 2 ] &&
   [ "$(grep -c '^\(16\|32\|64\),0,[01],0,0,,,,,,learned table has 8 rows$' "$tmp/as.csv")" = 6 ] &&
   awk -F, 'NR > 1 && $5 > 0 { if ($6 < 0 || $6 > 1 || $7 < 0 || $8 < 0 || $9 != ($6 >= 0.2) || $11 != "") bad = 1 }
            END { exit bad }' "$tmp/as.csv" &&
   grep -q "fraction of heads collapsed (mean first-key mass >= 0.2)" "$tmp/asout" && ! ls "$tmp"/*.tmp > /dev/null 2>&1
            check $? "--attention-stats on a learned-table model" || cat "$tmp/asout" "$tmp/as.csv"
# --bos: each window is the boundary token and W-1 bytes of text (other numbers than without it); the
# rows summed stay W-1 per window, at 8x the context too
./train --load "$tmp/rope.ckpt" --attention-stats "$tmp/asb.csv" --attention-lengths 1,8 --attention-windows 3 --bos > "$tmp/asout" 2>&1 &&
   grep -q "each opened by the boundary token (--bos)" "$tmp/asout" && [ "$(grep -c '^64,0,[01],3,189,' "$tmp/asb.csv")" = 2 ] &&
   ./train --load "$tmp/rope.ckpt" --attention-stats "$tmp/asn.csv" --attention-lengths 1,8 --attention-windows 3 > /dev/null 2>&1 &&
   [ "$(grep -c '^64,0,[01],3,189,' "$tmp/asn.csv")" = 2 ] && ! diff -q "$tmp/asb.csv" "$tmp/asn.csv" > /dev/null
check $? "--attention-stats --bos at 8x the context" || cat "$tmp/asout" "$tmp/asb.csv"
# evaluations in one run each start from the model's own context: dynamic scaling runs a window at its
# length, and the next evaluation (or window) must not inherit it: the attention statistics after a
# perplexity run up to 4x are at 0.5x and 1x of 8 tokens; a learned table with RoPE layers keeps its
# 8 rows after a 6-token window (it was refused at 8 tokens as 'learned table has 6 rows')
./train $small --pe-layers rope --input-pe learned --steps 3 --save "$tmp/lrope.ckpt" > /dev/null 2>&1
./train --load "$tmp/rope.ckpt" --rope-scaling dynamic --rope-factor 8 --ppl-out "$tmp/dp.csv" --ppl-windows 0.5,4 \
     --attention-stats "$tmp/da.csv" --attention-lengths 0.5,1 --attention-windows 2 > "$tmp/out" 2>&1 &&
   [ "$(tail -n +2 "$tmp/da.csv" | cut -d, -f1 | sort -un | tr '\n' ' ')" = "4 8 " ] &&
   ./train --load "$tmp/lrope.ckpt" --rope-scaling dynamic --rope-factor 2 --rope-original-context 4 --ppl-windows 0.75,1,2 \
     --ppl-out "$tmp/dl.csv" > "$tmp/out2" 2>&1 &&
   grep -q "^8,nonoverlap,[1-9][0-9]*,[0-9.]*,[0-9.]*,$" "$tmp/dl.csv" && grep -q "^16,sliding,0,,,learned table has 8 rows$" "$tmp/dl.csv"
check $? "evaluations after a dynamic-scaling window keep the model's context" || { tail -3 "$tmp/out" "$tmp/out2"; cat "$tmp/da.csv" "$tmp/dl.csv"; }
expect_fail "--longrope-search with --attention-stats" "--longrope-search runs alone" ./train --load "$tmp/rope.ckpt" --longrope-search "$tmp/keep" --attention-stats "$tmp/keep2"
expect_fail "--longrope-search with --bos" "--longrope-search scores perplexity windows" ./train --load "$tmp/rope.ckpt" --longrope-search "$tmp/keep" --bos
expect_fail "--attention-stats without a model" "--attention-stats needs the model from --load" ./train --attention-stats "$tmp/keep"
expect_fail "--attention-stats on a task" "--attention-stats measures windows of text" ./train --task copy --load "$tmp/ppl.ckpt" --attention-stats "$tmp/keep"
expect_fail "--attention-windows without --attention-stats" "--attention-windows applies to the attention statistics" ./train --load "$tmp/ppl.ckpt" --attention-windows 2
expect_fail "--collapse-threshold 0" "--collapse-threshold 0: a head's mean first-key mass" ./train --load "$tmp/ppl.ckpt" --collapse-threshold 0 --attention-stats "$tmp/keep"
expect_fail "--attention-lengths malformed" "--attention-lengths 'x' in '1,x' is not a number" ./train --load "$tmp/ppl.ckpt" --attention-lengths 1,x --attention-stats "$tmp/keep"
expect_fail "--attention-lengths of one token" "the statistics need at least 2" ./train --load "$tmp/ppl.ckpt" --attention-lengths 0.15,1 --attention-stats "$tmp/keep"
expect_fail "--attention-windows beyond the text" "need 800000 tokens of text" ./train --load "$tmp/ppl.ckpt" --attention-windows 100000 --attention-lengths 1 --attention-stats "$tmp/keep"
expect_fail "--attention-stats into a missing folder" "--attention-stats $tmp/nodir/a.csv" ./train --load "$tmp/ppl.ckpt" --attention-stats "$tmp/nodir/a.csv"
expect_fail "--bos with --ppl-out" "the perplexity windows do not start with a boundary token" ./train --load "$tmp/ppl.ckpt" --bos --ppl-out "$tmp/keep"
expect_fail "--bos on a task" "--bos starts windows of text" ./train --task copy --bos --save "$tmp/keep"
./train --task copy --layers 2 --heads 2 --dim 16 --steps 2 --save "$tmp/viz-task.ckpt" --eval-per-length 0 > /dev/null 2>&1
./train --task copy --layers 1 --heads 2 --dim 16 --steps 2 --save "$tmp/viz-task1.ckpt" --eval-per-length 0 > /dev/null 2>&1
expect_fail "--distance-to without --attention-distance" "give --attention-distance FILE" ./train --load "$tmp/ppl.ckpt" --distance-to "$tmp/ppl.ckpt"
expect_fail "--attention-distance on text" "give --load A.ckpt --task NAME --distance-to B.ckpt" ./train --load "$tmp/ppl.ckpt" --attention-distance "$tmp/keep" --distance-to "$tmp/ppl.ckpt"
expect_fail "--attention-distance to a model of other layers" "the distance compares layer by layer" ./train --load "$tmp/viz-task.ckpt" --task copy --attention-distance "$tmp/keep" --distance-to "$tmp/viz-task1.ckpt"
for f in attention-stats attention-lengths attention-windows collapse-threshold bos attention-distance distance-to distance-per-length; do
  grep -q -- "--$f " "$tmp/help"; check $? "--help lacks --$f"
done

# ---- attention pictures (--attention-map): data and scripts always, PNG when gnuplot is installed
./train --layers 2 --heads 2 --dim 16 --seq 8 --context 32 --batch 2 --pe-layers rope,alibi --input-pe learned --steps 2 --val-every 0 --save "$tmp/viz.ckpt" > /dev/null
viz_files="attn_layer0 attn_layer1 pos_input pos_rope_layer0 pos_bias_layer1"
./train --load "$tmp/viz.ckpt" --attention-map "$tmp/pics" --prompt "it's a \"test\"" > "$tmp/vizout" 2>&1
check $? "--attention-map" || cat "$tmp/vizout"
for f in $viz_files; do
  [ -s "$tmp/pics/$f.dat" ] && [ -s "$tmp/pics/$f.gp" ]; check $? "--attention-map did not write $f.dat/.gp"
done
if have gnuplot "the PNG pictures of --attention-map (gnuplot draws them)" "apt-get install gnuplot-nox"; then
  for f in $viz_files; do [ -s "$tmp/pics/$f.png" ]; check $? "--attention-map did not draw $f.png"; done
fi
# without gnuplot: the data and scripts, a line saying how to install it, exit status 0
PATH=/nonexistent ./train --load "$tmp/viz.ckpt" --attention-map "$tmp/pics2" --task copy --alphabet 26 --train-max 4 > "$tmp/vizout" 2>&1 &&
   grep -q "gnuplot not found: apt-get install gnuplot-nox" "$tmp/vizout" && [ -s "$tmp/pics2/attn_layer1.dat" ] &&
   [ -s "$tmp/pics2/pos_bias_layer1.gp" ] && ! ls "$tmp"/pics2/*.png > /dev/null 2>&1
check $? "--attention-map without gnuplot" || cat "$tmp/vizout"
expect_fail "--attention-map without a model" "--attention-map needs a trained model: give --load CKPT" ./train --attention-map "$tmp/pics3" --prompt hi
expect_fail "--attention-map without an input" "give --prompt TEXT or --task NAME" ./train --load "$tmp/viz.ckpt" --attention-map "$tmp/pics3"
expect_fail "--attention-map under a missing folder" "cannot create the folder" ./train --load "$tmp/viz.ckpt" --attention-map "$tmp/nodir/pics" --prompt hi
expect_fail "--attention-map input past the context" "shorten --prompt" ./train --load "$tmp/viz.ckpt" --attention-map "$tmp/pics3" --prompt "$(printf '%040d' 0)"
grep -q -- "--attention-map " "$tmp/help"; check $? "--help lacks --attention-map"

# ---- task flags: the alphabet, fit-first training
t="--task copy-repeat --train-max 4 --eval-per-length 0 --layers 1 --heads 2 --dim 16 --batch 2"
# --train-max without --test-max: the task's own ratio of test to train lengths, rounded (scan 48 of 25,
# pcfg 35 of 8, copy 2x), at most the longest the task builds (lego: 26 variables)
for case in "scan 6 12" "pcfg 6 26" "copy 6 12" "lego 20 26" "retrieval 128 512"; do
  set -- $case
  ./train --task $1 --train-max $2 --steps 1 --eval-per-length 0 --layers 1 --heads 2 --dim 16 --batch 2 > "$tmp/tmax" 2>&1
  grep -q -- "-$2 (tested to $3)" "$tmp/tmax"
  check $? "--task $1 --train-max $2: tested to $3 ($(grep -o 'tested to [0-9]*' "$tmp/tmax"))"
done
expect_fail "--alphabet on a task without symbols" "--alphabet applies to the symbol tasks" ./train --task parity --alphabet 30 --save "$tmp/keep"
expect_fail "--alphabet 1" "--alphabet 1 must be in [2," ./train $t --alphabet 1 --save "$tmp/keep"
expect_fail "--alphabet without --task" "--alphabet applies to a synthetic task" ./train $small --alphabet 30 --save "$tmp/keep"
expect_fail "--fit-target without --task" "--fit-target applies to a synthetic task" ./train $small --fit-target 0.5 --max-steps 5 --save "$tmp/keep"
expect_fail "--fit-target without a budget" "--fit-target needs --max-steps" ./train $t --fit-target 0.5 --save "$tmp/keep"
expect_fail "--fit-target 0" "--fit-target 0: the validation accuracy to reach is in (0, 1]" ./train $t --fit-target 0 --max-steps 5 --save "$tmp/keep"
expect_fail "--max-steps without --fit-target" "--max-steps is the budget of --fit-target" ./train $t --max-steps 5 --save "$tmp/keep"
expect_fail "--steps and --max-steps" "drop --steps" ./train $t --fit-target 0.5 --max-steps 5 --steps 5 --save "$tmp/keep"
expect_fail "--fit-every without --fit-target" "--fit-every applies to fit-first training" ./train $t --fit-every 5 --save "$tmp/keep"
expect_fail "--fit-per-length without --fit-target" "--fit-per-length sizes the validation check of --fit-target or --select-every" ./train $t --fit-per-length 5 --save "$tmp/keep"
./train $t --alphabet 30 --steps 1 --save "$tmp/a30.ckpt" > /dev/null
expect_fail "--load with another --alphabet" "the model's is 260" ./train --load "$tmp/a30.ckpt" --task copy-repeat --alphabet 40 --eval-per-length 1 --save "$tmp/keep"
./train --load "$tmp/a30.ckpt" --task copy-repeat --eval-per-length 2 > "$tmp/a30out" 2>&1 && grep -q "accuracy on copy-repeat" "$tmp/a30out"
check $? "--load --task takes the stored --alphabet" || cat "$tmp/a30out"
for f in alphabet fit-target max-steps fit-every fit-per-length; do
  grep -q -- "--$f " "$tmp/help"; check $? "--help lacks --$f"
done

finish
