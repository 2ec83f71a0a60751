#!/usr/bin/env bash
# tools/bench_stream.sh (run by make bench): the memory of training on shard sets of growing size.
# Peak RSS (GNU time's %M) of ./train with the bench's `small` config (6 layers, dim 384, 6 heads,
# batch 8 x 256, vocabulary 256 through a 256-piece llm.c tokenizer) for 3 steps with --shuffle and
# a validation at the end, on llm.c GPT-2 shard sets of 1, 2 and 20 shards of 1e8 tokens each (the
# size of llm.c's fineweb shards: 0.2, 0.4 and 4 GB). The shards are sparse files (a 12-byte
# header, then zeros: token 0) in build/bench-stream/, removed at the end; reading them costs no
# disk. The one-shard run is the model's footprint; the 4 GB run must stay within 64 MB of it and of
# the 0.4 GB run (the data grows 10x). Prints one RESULT line; exits 1 when memory is not flat.
#   BENCH_STREAM_TOKENS=N  tokens per shard (default 100000000)
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${BENCH_STREAM_TOKENS:-100000000}
dir=build/bench-stream
rm -rf "$dir"; mkdir -p "$dir"; trap 'rm -rf "$dir"' EXIT

le32() { local v=$1; printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $((v >> 8 & 255)))\\x$(printf %02x $((v >> 16 & 255)))\\x$(printf %02x $((v >> 24 & 255)))"; }
# a tokenizer of the 256 bytes (llm.c format: 256 int32 header 20240328, 2, n, eot; then length + bytes)
{ le32 20240328; le32 2; le32 256; le32 10; head -c 1008 /dev/zero; for i in $(seq 0 255); do printf "\\x01\\x$(printf %02x "$i")"; done; } > "$dir/tok.bin"
make_set() {   # make_set NAME SHARDS: sparse GPT-2 shards of $tokens tokens
  mkdir -p "$dir/$1"
  for i in $(seq 1 "$2"); do
    f=$(printf "%s/%s/shard_%06d.bin" "$dir" "$1" "$i")
    { le32 20240520; le32 1; le32 "$tokens"; } > "$f"
    truncate -s $((1024 + 2 * tokens)) "$f"
  done
}
small="--layers 6 --dim 384 --heads 6 --batch 8 --seq 256 --steps 3 --val-every 0 --log-every 1 --shuffle --tokenizer $dir/tok.bin"
declare -A rss secs
for n in 1 2 20; do
  make_set "set$n" $n
  start=$(date +%s.%N)
  /usr/bin/time -f %M -o "$dir/rss" ./train $small --data "$dir/set$n" > "$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
  secs[$n]=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  rss[$n]=$(( $(tail -1 "$dir/rss") / 1024 ))
  printf "stream: %2d shards (%5.1f GB of tokens): peak RSS %5d MB, %5.1f s (the start-up vocabulary scan included)\n" \
    $n "$(awk -v n=$n -v t="$tokens" 'BEGIN { print n * t * 2 / 1e9 }')" "${rss[$n]}" "${secs[$n]}"
  rm -rf "${dir:?}/set$n"
done
flat=$(( rss[20] - rss[1] < 64 && rss[20] - rss[2] < 64 ))
echo "RESULT stream_rss_mb_1=${rss[1]} stream_rss_mb_2=${rss[2]} stream_rss_mb_20=${rss[20]} flat=$flat"
[ "$flat" = 1 ] || { echo "stream: the peak RSS grows with the data (more than 64 MB over the one-shard run)"; exit 1; }
