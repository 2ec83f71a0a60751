#!/usr/bin/env bash
# tests/test_tokenize.sh: ./tokenize without GPT-2's files or node (tests/test_tokenize_ref.sh
# compares with tiktoken): train is deterministic and its files encode and decode any bytes back;
# documents, --doc-sep and numbered shards; the tokenizer file samples in ./train; bad flags, bad
# encoder.json / vocab.bpe, bad inputs and bad shards get a message naming the file and the
# problem, exit 1, and write nothing.
. "$(dirname "$0")/lib.sh"
chmod 755 "$tmp"

# expect_fail "what" "needle in stderr" ./tokenize args... (tests/lib.sh): exit 1, the needle, and
# nothing written: $tmp/keep (the output of the cases that write one) unchanged, no temporary, no
# new file in $tmp/w, nothing on stdout
refusal_setup() { echo "precious" > "$tmp/keep"; rm -rf "$tmp/w"; mkdir "$tmp/w"; }
refusal_written() {
  if [ "$(cat "$tmp/keep")" != precious ] || [ -e "$tmp/keep.tmp" ] || [ -n "$(ls -A "$tmp/w")" ] || [ -s "$tmp/out" ]; then
    echo "something was written (the output file, a temporary, a file in the output folder, or stdout)"
  fi
}

# python3 writes or reads some inputs: without it those parts are skipped (py=0)
py=1
have "$PY" "the parts python3 writes or reads: random bytes, the tokens of three documents and of shards, bad encoder.json and vocab.bpe, bad shards" \
  "apt-get install python3" || py=0
# the corpus: this project's own README and sources (any text will do)
cat README.md dataset/*.c *.c > "$tmp/corpus.txt"
inputs=(corpus.txt)
# random bytes (seeded), a fifth of them not UTF-8, and runs of spaces, digits, letters
if [ $py = 1 ]; then
inputs+=(random.bin)
"$PY" - "$tmp/random.bin" << 'PY'
import random, sys
r = random.Random(7)
out = bytearray()
while len(out) < 200000:
    k = r.random()
    if k < 0.2: out += bytes(r.randrange(256) for _ in range(r.randrange(1, 8)))
    elif k < 0.3: out += r.choice([b" ", b"\n", b"\t", b"0", b"a", b"!"]) * r.randrange(1, 300)
    else: out += r.choice(["the", " cat", "'s", " 12", "\u00e9t\u00e9", " \u4e2d\u6587", "\U0001F600", "\u00a0", "\r\n", "..."]).encode()
open(sys.argv[1], "wb").write(bytes(out))
PY
fi

# ---- train: deterministic, its files round-trip any bytes
V=$tmp/v1
./tokenize train --vocab-size 600 --out-dir "$V" "$tmp/corpus.txt" > "$tmp/train.log"; check $? "train failed: $(cat "$tmp/train.log")"
./tokenize train --vocab-size 600 --out-dir "$tmp/v2" "$tmp/corpus.txt" > /dev/null
for f in encoder.json vocab.bpe tokenizer.bin; do cmp -s "$V/$f" "$tmp/v2/$f"; check $? "train: two runs give different $f"; done
n=$(od -An -tu4 -j8 -N4 "$V/tokenizer.bin" | tr -d ' ')
[ "$n" = 600 ] && [ "$(grep -o '": [0-9]*' "$V/encoder.json" | wc -l)" = 600 ] && [ "$(wc -l < "$V/vocab.bpe")" = 344 ]
check $? "train: 600 tokens = 256 bytes + 343 merges + the end of text (tokenizer says $n)"
grep -q "600 tokens (343 merges, end of text 599)" "$tmp/train.log"; check $? "train's summary line: $(cat "$tmp/train.log")"
enc=(--encoder "$V/encoder.json" --merges "$V/vocab.bpe")
for f in "${inputs[@]}"; do
  ./tokenize encode "${enc[@]}" --out "$tmp/$f.bin" "$tmp/$f" > /dev/null; check $? "encode $f failed"
  ./tokenize decode --tokenizer "$V/tokenizer.bin" "$tmp/$f.bin" | cmp -s - "$tmp/$f"; check $? "decode(encode($f)) is not $f"
done
ntok=$(od -An -td4 -j8 -N4 "$tmp/corpus.txt.bin" | tr -d ' ')
[ "$ntok" -lt $(($(wc -c < "$tmp/corpus.txt") * 6 / 10)) ]; check $? "600 tokens should make fewer tokens than 0.6 x the corpus's bytes ($ntok tokens)"

# ---- documents: one per input (the end of text first), --doc-sep, numbered shards
printf 'First doc.' > "$tmp/a.txt"; printf 'Second one\n' > "$tmp/b.txt"; : > "$tmp/empty.txt"
printf 'First doc.<SEP>Second one\n<SEP>' > "$tmp/joined.txt"
./tokenize encode "${enc[@]}" --out "$tmp/three.bin" "$tmp/a.txt" "$tmp/b.txt" "$tmp/empty.txt" > /dev/null
./tokenize encode "${enc[@]}" --out "$tmp/sep.bin" --doc-sep '<SEP>' "$tmp/joined.txt" > "$tmp/sep.log"
cmp -s "$tmp/three.bin" "$tmp/sep.bin"; check $? "--doc-sep: 'a<SEP>b<SEP>' is the documents a, b and an empty one"
grep -q "3 documents" "$tmp/sep.log"; check $? "--doc-sep: the summary counts 3 documents: $(cat "$tmp/sep.log")"
if [ $py = 1 ]; then
"$PY" - "$tmp/three.bin" << 'PY'; check $? "three documents: the end of text (599) before each, nothing else 599"
import struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack_from("<i", b, 8)[0]; t = struct.unpack_from("<%dH" % n, b, 1024)
eot = [i for i, x in enumerate(t) if x == 599]
sys.exit(0 if len(eot) == 3 and eot[0] == 0 and eot[-1] == n - 1 else 1)
PY
fi
./tokenize decode --tokenizer "$V/tokenizer.bin" "$tmp/three.bin" | cmp -s - <(cat "$tmp/a.txt" "$tmp/b.txt")
check $? "decode writes the end of text as nothing: the documents back to back"

./tokenize encode "${enc[@]}" --out "$tmp/s.bin" --shard-tokens 50000 "$tmp/corpus.txt" > "$tmp/shard.log"
shards=("$tmp"/s_0*.bin)
[ ${#shards[@]} = $(((ntok + 49999) / 50000)) ] && [ ${#shards[@]} -gt 2 ] && [ ! -e "$tmp/s.bin" ]
check $? "--shard-tokens 50000: ${#shards[@]} shards for $ntok tokens"
if [ $py = 1 ]; then
"$PY" - "$tmp/corpus.txt.bin" "${shards[@]}" << 'PY'; check $? "the shards hold the unsharded tokens in order, 50000 each but the last"
import struct, sys
def toks(p):
    b = open(p, "rb").read(); n = struct.unpack_from("<i", b, 8)[0]
    assert len(b) == 1024 + 2 * n
    return list(struct.unpack_from("<%dH" % n, b, 1024))
whole, parts = toks(sys.argv[1]), [toks(p) for p in sys.argv[2:]]
sys.exit(0 if sum(parts, []) == whole and all(len(p) == 50000 for p in parts[:-1]) and 0 < len(parts[-1]) <= 50000 else 1)
PY
fi
./tokenize decode --tokenizer "$V/tokenizer.bin" "${shards[@]}" | cmp -s - "$tmp/corpus.txt"; check $? "decode of all shards is the corpus"
grep -q "s_000000.bin \.\. .*s_$(printf %06d $((${#shards[@]} - 1))).bin" "$tmp/shard.log"; check $? "the summary names the shards: $(cat "$tmp/shard.log")"

# ---- the tokenizer file samples in ./train
if [ -x ./train ]; then
  ./tokenize encode "${enc[@]}" --out "$tmp/w.bin" --tokenizer-out "$tmp/tok.bin" "$tmp/corpus.txt" > /dev/null
  cmp -s "$tmp/tok.bin" "$V/tokenizer.bin"; check $? "--tokenizer-out writes the tokenizer train wrote"
  ./train --data "$tmp/w.bin" --tokenizer "$tmp/tok.bin" --layers 1 --heads 2 --dim 16 --seq 16 --batch 2 --steps 3 \
    --val-every 0 --log-every 1000 --sample 30 > "$tmp/train.out" 2>&1 && grep -q -- "---- end of sample" "$tmp/train.out" \
    && grep -q "vocab 600" "$tmp/train.out"; check $? "./train on the shard with the tokenizer file:" || sed 's/^/    /' "$tmp/train.out"
  # --pack takes the tokenizer's end of text (599, not GPT-2's 50256) as the document boundary:
  # the shard's documents (one per file, three files) then change the first step's loss
  printf 'one document\n' > "$tmp/d1.txt"; printf 'and another one\n' > "$tmp/d2.txt"; printf 'a third\n' > "$tmp/d3.txt"
  ./tokenize encode "${enc[@]}" --out "$tmp/docs.bin" "$tmp/d1.txt" "$tmp/d2.txt" "$tmp/d3.txt" "$tmp/d1.txt" "$tmp/d2.txt" > /dev/null
  small=(--data "$tmp/docs.bin" --tokenizer "$tmp/tok.bin" --layers 1 --heads 2 --dim 16 --seq 32 --batch 1 --steps 1 --val-frac 0 --val-every 0 --log-every 1 --pack)
  # the first step's loss to 17 digits (--log): the 4 printed ones can agree by chance (the vocabulary
  # is learned from this project's sources, so it changes with them)
  ./train "${small[@]}" 0 --log "$tmp/pack0.csv" > /dev/null 2>&1; l0=$(sed -n 2p "$tmp/pack0.csv" | cut -d, -f2)
  ./train "${small[@]}" 1 --log "$tmp/pack1.csv" > /dev/null 2>&1; l1=$(sed -n 2p "$tmp/pack1.csv" | cut -d, -f2)
  [ -n "$l0" ] && [ -n "$l1" ] && [ "$l0" != "$l1" ]; check $? "--pack on a learned vocabulary's shard: the same loss as without ($l0, $l1): its end of text is not a boundary"
  # --resume without --tokenizer keeps the documents: the stored path gives the same end of text,
  # and the resumed steps log the uninterrupted run's losses
  run=(--data "$tmp/docs.bin" --layers 1 --heads 2 --dim 16 --seq 32 --batch 1 --val-frac 0 --val-every 0 --pack 1 --steps 6)
  ./train "${run[@]}" --tokenizer "$tmp/tok.bin" --log "$tmp/u.csv" > /dev/null 2>&1
  ./train "${run[@]}" --tokenizer "$tmp/tok.bin" --steps 6 --save "$tmp/r{step}.ckpt" --save-every 3 > /dev/null 2>&1
  ./train --resume "$tmp/r3.ckpt" --log "$tmp/r.csv" > /dev/null 2>&1
  [ -s "$tmp/r.csv" ] && diff <(tail -3 "$tmp/u.csv" | cut -d, -f1,2) <(tail -3 "$tmp/r.csv" | cut -d, -f1,2) > /dev/null
  check $? "--resume without --tokenizer: steps 4-6 differ from the uninterrupted run's (the documents' boundary was lost)"
fi

# ---- --help lists every flag
./tokenize --help > "$tmp/help"; check $? "--help exits 0"
./tokenize encode -h | cmp -s - "$tmp/help"; check $? "./tokenize encode -h is the usage"
# ... but not as a flag's value, nor as an input after --: there it is a separator, or a file
printf 'a-hb' > "$tmp/dash.txt"
./tokenize encode "${enc[@]}" --out "$tmp/dash.bin" --doc-sep -h "$tmp/dash.txt" > "$tmp/dash.log" 2>&1 &&
  grep -q "2 documents" "$tmp/dash.log"; check $? "--doc-sep -h: -h is the separator: $(cat "$tmp/dash.log")"
root=$PWD
(cd "$tmp" && printf 'x' > ./--help && "$root/tokenize" encode "${enc[@]}" --out h.bin -- --help > h.log 2>&1) &&
  [ -s "$tmp/h.bin" ]; check $? "an input named --help after --: $(cat "$tmp/h.log")"
for f in encode train decode --encoder --merges --out --tokenizer-out --shard-tokens --doc-sep --vocab-size --out-dir --tokenizer; do
  grep -qE -- "$f([^a-z-]|\$)" "$tmp/help"; check $? "--help lacks $f"
done

# ---- bad flags
T=./tokenize
expect_fail "no command" "needs a command" $T
expect_fail "unknown command" "unknown command 'encod'" $T encod
expect_fail "unknown flag" "unknown flag --bogus" $T encode "${enc[@]}" --out "$tmp/keep" --bogus 1 "$tmp/a.txt"
expect_fail "another command's flag" "--vocab-size is a flag of another command" $T encode --vocab-size 300 "${enc[@]}" --out "$tmp/keep" "$tmp/a.txt"
expect_fail "missing --encoder" "needs --encoder FILE" $T encode --merges "$V/vocab.bpe" --out "$tmp/keep" "$tmp/a.txt"
expect_fail "missing value" "--out needs a value" $T encode "${enc[@]}" "$tmp/a.txt" --out
expect_fail "flag twice" "--out is given twice" $T encode "${enc[@]}" --out "$tmp/keep" --out "$tmp/keep" "$tmp/a.txt"
expect_fail "--shard-tokens 0" "--shard-tokens 0 is out of range" $T encode "${enc[@]}" --out "$tmp/keep" --shard-tokens 0 "$tmp/a.txt"
expect_fail "--shard-tokens x" "'12x' is not an integer" $T encode "${enc[@]}" --out "$tmp/keep" --shard-tokens 12x "$tmp/a.txt"
expect_fail "empty --doc-sep" "--doc-sep needs a non-empty TEXT" $T encode "${enc[@]}" --out "$tmp/keep" --doc-sep '' "$tmp/a.txt"
expect_fail "no input" "needs at least one INPUT" $T encode "${enc[@]}" --out "$tmp/keep"
expect_fail "--vocab-size 256" "--vocab-size 256 is out of range" $T train --vocab-size 256 --out-dir "$tmp/w" "$tmp/a.txt"
expect_fail "--vocab-size 65537" "--vocab-size 65537 is out of range" $T train --vocab-size 65537 --out-dir "$tmp/w" "$tmp/a.txt"

# ---- bad inputs
expect_fail "missing input" "$tmp/nothere.txt" $T encode "${enc[@]}" --out "$tmp/keep" "$tmp/a.txt" "$tmp/nothere.txt"
expect_fail "input is a folder" "is a folder" $T encode "${enc[@]}" --out "$tmp/keep" "$tmp/w"
expect_fail "--out in a missing folder" "the folder $tmp/nodir does not exist" $T encode "${enc[@]}" --out "$tmp/nodir/x.bin" "$tmp/a.txt"
rm -f "$tmp"/s_0*.bin
stale=$tmp/s_$(printf %06d ${#shards[@]}).bin; touch "$stale"
expect_fail "a stale shard after the new ones" "$stale exists, from an earlier run with more shards" $T encode "${enc[@]}" --out "$tmp/s.bin" --shard-tokens 50000 "$tmp/corpus.txt"
[ "$(ls "$tmp"/s_0*.bin)" = "$stale" ]; check $? "a refused sharded encode wrote shards"
rm -f "$tmp"/s_0*.bin
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2> /dev/null; then
  as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else as_nobody=(); fi
cp "$tmp/a.txt" "$tmp/secret.txt"; chmod 000 "$tmp/secret.txt"; chmod -R a+rX "$V"
if [ "$(id -u)" != 0 ] || [ ${#as_nobody[@]} != 0 ]; then
  expect_fail "unreadable input" "cannot read the input $tmp/secret.txt" "${as_nobody[@]}" $T encode "${enc[@]}" --out "$tmp/w/x.bin" "$tmp/secret.txt"
else skip "the unreadable-input case (as root, whom permissions do not stop)" \
       "setpriv (util-linux) able to switch to the user nobody, or the tests run by another user"; fi
expect_fail "train: too large a vocabulary" "pass --vocab-size" $T train --vocab-size 5000 --out-dir "$tmp/w" "$tmp/a.txt"
expect_fail "train: too large a vocabulary, a new --out-dir" "pass --vocab-size" $T train --vocab-size 5000 --out-dir "$tmp/w/new" "$tmp/a.txt"
expect_fail "train: --out-dir is a file" "--out-dir $tmp/keep is a file" $T train --vocab-size 300 --out-dir "$tmp/keep" "$tmp/a.txt"
expect_fail "train: --out-dir in a missing folder" "the folder $tmp/nodir does not exist" $T train --vocab-size 300 --out-dir "$tmp/nodir/v" "$tmp/a.txt"

# ---- bad encoder.json and vocab.bpe: each a copy of the good one with one thing wrong
# mutate SRC DST 'python expression of s': DST is SRC (the good encoder.json or vocab.bpe) changed
if [ $py = 1 ]; then
mutate() { "$PY" -c "import sys, re; s = open(sys.argv[1], encoding='utf-8').read(); open(sys.argv[2], 'w', encoding='utf-8').write($3)" "$V/$1" "$tmp/$2"; }
bad_enc() { local what=$1 needle=$2 file=$3; expect_fail "$what" "$needle" $T encode --encoder "$tmp/$file" --merges "$V/vocab.bpe" --out "$tmp/keep" "$tmp/a.txt"; }
bad_mrg() { local what=$1 needle=$2 file=$3; expect_fail "$what" "$needle" $T encode --encoder "$V/encoder.json" --merges "$tmp/$file" --out "$tmp/keep" "$tmp/a.txt"; }
mutate encoder.json encoder-notjson.json '"hello"';                                         bad_enc "encoder.json not JSON" "expected '{' at the start" encoder-notjson.json
mutate encoder.json encoder-cut.json 's[:len(s) // 2]';                                       bad_enc "encoder.json cut short" "encoder-cut.json" encoder-cut.json
mutate encoder.json encoder-nobyte.json 's.replace("\"!\": 0, ", "")';                        bad_enc "encoder.json without byte '!'" "lacks byte 0x21 ('!')" encoder-nobyte.json
mutate encoder.json encoder-dupid.json 's.replace("\"#\": 2", "\"#\": 1")';                   bad_enc "duplicate id" "id 1 is given twice" encoder-dupid.json
mutate encoder.json encoder-big.json 's.replace("\"<|endoftext|>\": 599", "\"<|endoftext|>\": 70000")'; bad_enc "id 70000" "does not fit the uint16 token shards" encoder-big.json
mutate encoder.json encoder-neg.json 's.replace("\"#\": 2", "\"#\": -2")';                   bad_enc "negative id" "negative id" encoder-neg.json
mutate encoder.json encoder-float.json 's.replace("\"#\": 2", "\"#\": 2.0")';                bad_enc "id 2.0" "is not an integer" encoder-float.json
mutate encoder.json encoder-dupkey.json 's[:-1] + ", \"!\": 600}"';                            bad_enc "duplicate key" "the key '!' appears twice" encoder-dupkey.json
mutate encoder.json encoder-char.json 's[:-1] + ", \"\u4e2d\": 600}"';                         bad_enc "a key outside GPT-2's alphabet" "U+4E2D" encoder-char.json
mutate encoder.json encoder-extra.json 's[:-1] + ", \"zzqx\": 600}"';                          bad_enc "an entry no merge makes" "'zzqx' (id 600), which neither a byte nor a merge" encoder-extra.json
mutate encoder.json encoder-noeot.json 're.sub(r", \"<\|endoftext\|>\": \d+", "", s)';       bad_enc "no end of text" "has no \"<|endoftext|>\" entry" encoder-noeot.json
mutate encoder.json encoder-eot.json 's.replace("\"<|endoftext|>\": 599", "\"<|endoftext|>\": 650")'; bad_enc "end of text not last" "must come right after the last merge, id 599" encoder-eot.json
mutate encoder.json encoder-swap.json 're.sub(r"\": 256,", "\": 9999,", s).replace("\": 257,", "\": 256,").replace("\": 9999,", "\": 257,")'
bad_enc "ids out of rank order" "so its id (rank) is 256" encoder-swap.json
mutate encoder.json encoder-tail.json 's + " x"';                                            bad_enc "text after the object" "more text after the closing '}'" encoder-tail.json
mutate vocab.bpe vocab-part.bpe 's.replace("\n", "\nzzqx q\n", 1)';                        bad_mrg "a merge of a token not in encoder.json" "merges 'zzqx', which is not in the encoder file" vocab-part.bpe
# the first line that joins a merged token, moved to the top
mutate vocab.bpe vocab-order.bpe '(lambda L, k: "\n".join([L[0], L[k]] + L[1:k] + L[k + 1:]))(s.split("\n"), next(i for i, l in enumerate(s.split("\n")) if i and max(map(len, l.split(" "))) > 1))'
bad_mrg "merges out of rank order" "before any earlier line makes it" vocab-order.bpe
mutate vocab.bpe vocab-three.bpe 's.replace("\n", "\na b c\n", 1)';                         bad_mrg "three fields" "line 2 is not two tokens separated by one space" vocab-three.bpe
mutate vocab.bpe vocab-empty.bpe 's.replace("\n", "\n\n", 1)';                              bad_mrg "an empty line" "line 2 is empty" vocab-empty.bpe
mutate vocab.bpe vocab-dup.bpe 's + s.split("\n")[1] + "\n"';                               bad_mrg "a merge twice" "already made" vocab-dup.bpe
fi
./tokenize train --vocab-size 500 --out-dir "$tmp/v3" "$tmp/corpus.txt" > /dev/null
expect_fail "encoder.json and vocab.bpe of different vocabularies" "which neither a byte nor a merge of $tmp/v3/vocab.bpe makes" \
  $T encode --encoder "$V/encoder.json" --merges "$tmp/v3/vocab.bpe" --out "$tmp/keep" "$tmp/a.txt"
expect_fail "missing encoder.json" "cannot open the encoder file $tmp/none.json" $T encode --encoder "$tmp/none.json" --merges "$V/vocab.bpe" --out "$tmp/keep" "$tmp/a.txt"

# ---- bad shards for decode: nothing on stdout
dec() { local what=$1 needle=$2; shift 2; expect_fail "decode: $what" "$needle" $T decode --tokenizer "$V/tokenizer.bin" "$tmp/corpus.txt.bin" "$@"; }
dec "a text file" "$tmp/a.txt is not an llm.c token shard" "$tmp/a.txt"
expect_fail "decode: a text file as the tokenizer" "is not an llm.c tokenizer file" $T decode --tokenizer "$tmp/a.txt" "$tmp/corpus.txt.bin"
if [ $py = 1 ]; then
"$PY" - "$tmp" << 'PY'
import struct, sys
d = sys.argv[1]
def shard(name, toks, magic=20240520, version=1, ntok=None, extra=b""):
    h = [0] * 256; h[0] = magic; h[1] = version; h[2] = len(toks) if ntok is None else ntok
    open(d + "/" + name, "wb").write(struct.pack("<256i", *h) + struct.pack("<%dH" % len(toks), *toks) + extra)
shard("trunc.bin", [1] * 10, ntok=20)
shard("extra.bin", [1] * 10, extra=b"\0")
shard("llama3.bin", [1] * 10, magic=20240801, version=7)
shard("v2.bin", [1] * 10, version=2)
shard("oov.bin", [1, 2, 5000, 3])
open(d + "/short.bin", "wb").write(struct.pack("<3i", 20240520, 1, 0))
PY
dec "a truncated shard" "$tmp/trunc.bin is truncated: its header says 20 tokens" "$tmp/trunc.bin"
dec "bytes after the tokens" "$tmp/extra.bin is 1 bytes longer than its 10 tokens" "$tmp/extra.bin"
dec "a Llama-3 shard" "$tmp/llama3.bin is a Llama-3 shard" "$tmp/llama3.bin"
dec "version 2" "$tmp/v2.bin has version 2" "$tmp/v2.bin"
dec "a header cut short" "$tmp/short.bin is truncated: 12 bytes" "$tmp/short.bin"
dec "a token outside the tokenizer" "$tmp/oov.bin has token 5000 at index 2, but the tokenizer $V/tokenizer.bin has 600 tokens" "$tmp/oov.bin"
fi

finish
