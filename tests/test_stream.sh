#!/usr/bin/env bash
# tests/test_stream.sh: ./train on sets of llm.c token shards (--data as a glob or a folder).
#  - in order, a glob and a folder of three shards train as one shard of their concatenation
#    (identical losses, validation included);
#  - --shuffle over a glob of uint32 (Llama-3) shards: the same seed logs the same losses, and
#    other losses than the same run in order; a run resumed from its step-8 checkpoint logs the uninterrupted run's losses for
#    steps 9..16 bit for bit (the stream's epoch, shard and window restored; the 16 steps read two
#    epochs and a half); resuming on other data is refused; a checkpoint written before streaming
#    (tests/fixtures/learned.ckpt) resumes;
#  - memory: the peak RSS of training a tiny model on a 200 MB shard set and on a 20 MB one differ
#    by less than 64 MB (sparse shards: nothing is written but the headers).
. "$(dirname "$0")/lib.sh"
losses() { cut -d, -f1-3 "$1"; }
have "$PY" "every case: python3 writes their shards" "apt-get install python3" || finish

# shards of tokens < 300, and an llm.c tokenizer of 300 pieces: with --tokenizer the model's
# vocabulary is 300, not the 50257 or 128256 of the shards' kind, so that the runs take seconds
"$PY" - "$tmp" << 'PY'
import os, random, struct, sys
d = sys.argv[1]
def shard(path, width, toks):
    h = [0] * 256
    h[0], h[1] = (20240520, 1) if width == 2 else (20240801, 7)
    h[2] = len(toks)
    open(path, "wb").write(struct.pack("<256i", *h) + struct.pack("<%d%s" % (len(toks), "H" if width == 2 else "I"), *toks))
def tokens(n, seed):
    r = random.Random(seed)
    return [r.randrange(300) for _ in range(n)]
h = [0] * 256
h[0], h[1], h[2], h[3] = 20240328, 2, 300, 299
open(d + "/tok.bin", "wb").write(struct.pack("<256i", *h) + b"".join(bytes([1, i]) for i in range(256)) +
                                 b"".join(bytes([2, 97 + i % 26, 97 + i // 26]) for i in range(44)))
os.mkdir(d + "/three")
parts = [tokens(n, s) for n, s in ((700, 1), (300, 2), (900, 3))]
for i, t in enumerate(parts): shard("%s/three/part%d.bin" % (d, i), 2, t)
shard(d + "/one.bin", 2, parts[0] + parts[1] + parts[2])
os.mkdir(d + "/l3")      # 150, 100 and 250 tokens: 9 + 6 + 15 = 30 windows of 17 tokens
for i, (n, s) in enumerate(((150, 4), (100, 5), (250, 6))): shard("%s/l3/s%d.bin" % (d, i), 4, tokens(n, s))
os.mkdir(d + "/other")
for i, (n, s) in enumerate(((150, 4), (120, 5))): shard("%s/other/s%d.bin" % (d, i), 4, tokens(n, s))
PY
tiny="--layers 1 --heads 2 --dim 16 --seq 16 --batch 4 --threads 1 --log-every 1000 --tokenizer $tmp/tok.bin"

# ---- in order: a glob, a folder and the concatenated shard give the same run
k=0
for data in "$tmp/three/*.bin" "$tmp/three" "$tmp/one.bin"; do
  k=$((k + 1))
  ./train $tiny --steps 12 --val-every 4 --data "$data" --log "$tmp/order$k.csv" > "$tmp/order$k.out" 2>&1
  check $? "training on $data: $(tail -3 "$tmp/order$k.out")"
done
grep -qF "data: $tmp/three/*.bin (3 files of llm.c GPT-2 shards (uint16)), 1710 train / 190 val tokens" "$tmp/order1.out"
check $? "the setup line counts the files and tokens of the set: $(grep '^data:' "$tmp/order1.out")"
diff <(losses "$tmp/order1.csv") <(losses "$tmp/order3.csv") > /dev/null && diff <(losses "$tmp/order2.csv") <(losses "$tmp/order3.csv") > /dev/null
check $? "a glob and a folder of three shards must train as the one shard of their concatenation"

# ---- shuffled, resumed
shuf=($tiny --steps 16 --val-frac 0 --shuffle --data "$tmp/l3/s*.bin")   # the glob quoted: ./train expands it
./train "${shuf[@]}" --log "$tmp/full.csv" --save "$tmp/ck{step}" --save-every 8 > "$tmp/full.out"
check $? "the shuffled run: $(tail -3 "$tmp/full.out")"
grep -q "(3 files of llm.c Llama-3 shards (uint32), shuffled every epoch)" "$tmp/full.out"
check $? "the setup line names the files, their kind and the shuffle: $(grep '^data:' "$tmp/full.out")"
./train "${shuf[@]}" --log "$tmp/again.csv" > /dev/null
diff <(losses "$tmp/full.csv") <(losses "$tmp/again.csv") > /dev/null
check $? "two shuffled runs with the same seed must log identical losses"
./train $tiny --steps 16 --val-frac 0 --data "$tmp/l3/s*.bin" --log "$tmp/ordered.csv" > /dev/null &&
  [ -s "$tmp/ordered.csv" ] && ! diff <(losses "$tmp/full.csv") <(losses "$tmp/ordered.csv") > /dev/null
check $? "--shuffle must change the order (and the losses)"
./train --resume "$tmp/ck8" --threads 1 --log "$tmp/res.csv" > "$tmp/res.out"
check $? "resume the shuffled run from step 8: $(tail -3 "$tmp/res.out")"
diff <(losses "$tmp/full.csv" | sed -n '10,17p') <(losses "$tmp/res.csv" | tail -n +2) > "$tmp/diff"
check $? "resumed shuffled losses (steps 9..16) must equal the uninterrupted run's: $(head -4 "$tmp/diff")"
./train --resume "$tmp/ck8" --threads 1 --data "$tmp/other/*.bin" > "$tmp/other.out" 2>&1
[ $? != 0 ] && grep -q "was trained on 500 tokens in 3 files" "$tmp/other.out"
check $? "resuming on other data must be refused: $(tail -2 "$tmp/other.out")"

# a checkpoint written before streaming (no data.* lines) still resumes, at its stored position
./train --resume tests/fixtures/learned.ckpt --steps 9 --threads 1 > "$tmp/old.out" 2>&1 && grep -q "^step     9/9" "$tmp/old.out"
check $? "a checkpoint from before streaming must resume: $(tail -2 "$tmp/old.out")"

# ---- memory: 200 MB against 20 MB of shards (two sparse shards each: headers, then zeros)
sparse() {   # sparse FOLDER TOKENS_PER_SHARD
  mkdir -p "$1"
  for i in 0 1; do
    "$PY" -c "import struct,sys; h=[0]*256; h[0]=20240520; h[1]=1; h[2]=$2; sys.stdout.buffer.write(struct.pack('<256i',*h))" > "$1/$i.bin"
    truncate -s $((1024 + 2 * $2)) "$1/$i.bin"
  done
}
if have /usr/bin/time "the peak RSS on 200 MB of shards against 20 MB (GNU time measures it)" "apt-get install time"; then
  sparse "$tmp/s20" 5000000; sparse "$tmp/s200" 50000000
  for n in 20 200; do
    /usr/bin/time -f %M -o "$tmp/rss$n" ./train $tiny --steps 2 --val-every 0 --shuffle --data "$tmp/s$n" > /dev/null
    check $? "training on the $n MB set"
  done
  small=$(tail -1 "$tmp/rss20"); large=$(tail -1 "$tmp/rss200")
  echo "test_stream: peak RSS $((small / 1024)) MB on 20 MB of shards, $((large / 1024)) MB on 200 MB"
  [ $((large - small)) -lt $((64 * 1024)) ]
  check $? "the peak RSS on 200 MB of shards ($large KB) must be within 64 MB of that on 20 MB ($small KB)"
fi

finish
