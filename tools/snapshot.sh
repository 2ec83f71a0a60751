#!/usr/bin/env bash
# tools/snapshot.sh TREE OUT TEXT: the behaviour of a build, as files to compare byte for byte.
# With TREE's binaries (build them first: make -C TREE all) it trains every scheme (and a mixed
# schedule, YaRN, bf16, dropout with accumulation), saves, resumes, exports (safetensors and llm.c),
# loads each export back, evaluates (validation loss, perplexity by window, attention statistics,
# sampling, a task's accuracy, fit-first, the attention distance), runs two small ./compare grids
# (a task with claims and distances; text with a RoPE extension) and ./tokenize (train, encode,
# decode); it keeps every file written and every printed line with the timing fields removed.
# A restructuring shows it changed nothing by running this on the old and the new tree with the same
# OUT (printed paths include it; move the first result away before the second run), then diff -r.
# TEXT: any text file of >= 20 KB that stays the same between the two runs (it is the --data of the
# text grid and the tokenizer's corpus). About 15 s on 2 cores.
set -u
[ $# -eq 3 ] || { echo "usage: tools/snapshot.sh TREE OUT TEXT" >&2; exit 2; }
TREE=$(cd "$1" && pwd); OUT=$2; TEXT=$(readlink -f "$3")
rm -rf "$OUT"; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd); cd "$TREE"
T=./train; export OMP_NUM_THREADS=2
# file:line prefixes of error messages (code moves), speeds, elapsed times and ETAs are not behaviour
strip() { sed -E 's/^[a-z_/]+\.c:[0-9]+: //; s/[0-9.]+ ?(tok\/s|tokens\/s|s left|ms|s elapsed| s)\b/X/g;
  s/elapsed [0-9.]+/elapsed X/g; s/[0-9]+(\.[0-9]+)? tok\/s/X/g; s/ +X/ X/g; s/ETA [0-9]+[smh]/ETA X/g'; }
TINY0="--layers 2 --heads 2 --dim 16 --batch 4 --seq 32 --steps 12 --seed 3 --threads 2 --log-every 4"
TINY="$TINY0 --val-every 6 --val-batches 2"
for s in nope learned sinusoidal rope alibi t5 kerple fire xpos p-rope mixed yarn; do
  case $s in
    mixed) pe="--pe-layers rope,alibi --input-pe learned";;
    yarn) pe="--pe rope --rope-scaling yarn --rope-factor 4";;
    *) pe="--pe $s";;
  esac
  $T $TINY $pe --log $OUT/$s.log.csv --save $OUT/$s.ckpt 2>&1 | strip > $OUT/$s.train.txt
  cut -d, -f1-5 $OUT/$s.log.csv > $OUT/$s.log5.csv; rm $OUT/$s.log.csv
  $T --load $OUT/$s.ckpt --export $OUT/$s.safetensors > $OUT/$s.export.txt 2>&1
  $T --load $OUT/$s.ckpt --ppl-out $OUT/$s.ppl.csv --ppl-tokens 1024 --ppl-windows 0.5,1,2 2>&1 | strip > $OUT/$s.ppl.txt
  $T --load $OUT/$s.ckpt --attention-stats $OUT/$s.as.csv --attention-windows 2 --attention-lengths 1,2 2>&1 |
    strip > $OUT/$s.as.txt
  $T --load $OUT/$s.ckpt --sample 24 --temperature 0.8 --seed 5 --prompt "In the" 2>&1 | strip > $OUT/$s.sample.txt
  $T --load $OUT/$s.ckpt --eval-batches 2 --batch 2 --seq 32 2>&1 | strip > $OUT/$s.evalb.txt
  $T --load $OUT/$s.ckpt --batch 1 --seq 8 --dump-step $OUT/$s.dump.safetensors > /dev/null 2>&1
  $T $TINY0 $pe --task copy --train-max 5 --eval-per-length 8 --eval-out $OUT/$s.task.csv --save $OUT/$s.task.ckpt 2>&1 |
    strip > $OUT/$s.task.txt
done
$T --load $OUT/learned.ckpt --export-llmc $OUT/learned.llmc.bin > $OUT/llmc.txt 2>&1
$T --load $OUT/learned.llmc.bin --eval-batches 2 --batch 2 --seq 32 2>&1 | strip > $OUT/llmc.eval.txt
$T --load $OUT/rope.safetensors --eval-batches 2 --batch 2 --seq 32 2>&1 | strip > $OUT/st.eval.txt
$T --load $OUT/nope.task.ckpt --task copy --train-max 5 --attention-distance $OUT/dist.csv --distance-to $OUT/rope.task.ckpt 2>&1 |
  strip > $OUT/dist.txt
$T $TINY --pe rope --save-every 6 --save $OUT/res_{step}.ckpt --steps 12 2>&1 | strip > $OUT/res_full.txt
$T --resume $OUT/res_6.ckpt --steps 12 --save $OUT/res_resumed.ckpt 2>&1 | strip > $OUT/res_resumed.txt
$T --layers 2 --heads 2 --dim 16 --batch 4 --seq 32 --seed 3 --threads 2 --log-every 4 --pe alibi --task copy-repeat \
  --train-max 5 --fit-target 0.5 --max-steps 30 --fit-every 10 --eval-per-length 5 --eval-out $OUT/fit.csv 2>&1 | strip > $OUT/fit.txt
$T $TINY --pe rope --precision bf16 --save $OUT/bf16.ckpt 2>&1 | strip > $OUT/bf16.txt
$T $TINY --pe t5 --dropout 0.1 --accum 2 --save $OUT/drop.ckpt 2>&1 | strip > $OUT/drop.txt
./compare --out $OUT/cmp --task copy --schemes nope,rope --scheme 'al=--pe alibi' --seeds 1,2 --jobs 1 --quiet \
  --eval-per-length 5 --claims 'nope>rope,al>rope' --attention-distance -- --dim 16 --layers 1 --heads 2 --steps 20 --batch 4 \
  > /dev/null 2>&1
./compare --out $OUT/cmpt --data "$TEXT" --schemes nope,rope --seeds 1,2 --jobs 1 --quiet --rope-extensions linear \
  --eval-flags '--ppl-tokens 512' -- --dim 16 --layers 1 --heads 2 --steps 10 --batch 4 --seq 32 > /dev/null 2>&1
find $OUT/cmp $OUT/cmpt \( -name '*.log' -o -name '*.ckpt' \) -delete
for f in $(find $OUT/cmp $OUT/cmpt -name 'log.csv'); do cut -d, -f1-5 $f > $f.5; rm $f; done
mkdir -p $OUT/tok; head -c 20000 "$TEXT" > $OUT/tok/in.txt
./tokenize train --vocab-size 300 --out-dir $OUT/tok/v $OUT/tok/in.txt > /dev/null 2>&1
./tokenize encode --encoder $OUT/tok/v/encoder.json --merges $OUT/tok/v/vocab.bpe --out $OUT/tok/s.bin $OUT/tok/in.txt \
  > /dev/null 2>&1
./tokenize decode --tokenizer $OUT/tok/v/tokenizer.bin $OUT/tok/s.bin > $OUT/tok/dec.txt 2>&1
./train --help > $OUT/train.help 2>&1; ./compare --help > $OUT/compare.help 2>&1; ./tokenize --help > $OUT/tokenize.help 2>&1
echo "snapshot: $(find $OUT -type f | wc -l) files in $OUT"
