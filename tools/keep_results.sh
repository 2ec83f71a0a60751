#!/usr/bin/env bash
# tools/keep_results.sh SRC DST [EVERY]: the small files of a ./compare folder SRC copied to DST
# (e.g. results/NAME, to commit): what `./compare ... --out DST --report-only` needs to write every
# table and plot again, and its sittings' record. Kept: summary.md, results.csv, runs.csv,
# compare.log (what each sitting of the grid printed), the plots (.png,
# and the .gp/.dat that draw them) and per run done, train.log, eval.csv, ppl*.csv,
# ppl_positions*.csv, attention.csv, distance.csv; log.csv thinned to its header, every EVERY-th
# step (default 50) and the last (the loss plot's points). Left out: checkpoints (model.ckpt*),
# started, the SVGs, longrope lists, logs of the distance commands, OUT/.lock.
set -euo pipefail
[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: tools/keep_results.sh SRC DST [EVERY]" >&2; exit 2; }
src=${1%/}; dst=${2%/}; every=${3:-50}
[ -d "$src/runs" ] || { echo "keep_results: $src is not a ./compare folder (no runs/)" >&2; exit 1; }
[[ "$every" =~ ^[1-9][0-9]*$ ]] || { echo "keep_results: EVERY must be a positive step count, not '$every'" >&2; exit 1; }
mkdir -p "$dst"
for f in "$src"/summary.md "$src"/results.csv "$src"/runs.csv "$src"/compare.log "$src"/*.png "$src"/*.gp "$src"/*.dat; do
    [ -f "$f" ] && cp "$f" "$dst/"
done
n=0
while IFS= read -r done_file; do
    run=$(dirname "$done_file"); rel=${run#"$src/"}
    mkdir -p "$dst/$rel"
    for f in done train.log eval.csv attention.csv distance.csv; do [ -f "$run/$f" ] && cp "$run/$f" "$dst/$rel/"; done
    for f in "$run"/ppl*.csv; do [ -f "$f" ] && cp "$f" "$dst/$rel/"; done
    if [ -f "$run/log.csv" ]; then
        awk -F, -v k="$every" 'NR == 1 || $1 % k == 0 { print; last = NR; next } { held = $0 } END { if (held != "" && last != NR) print held }' \
            "$run/log.csv" > "$dst/$rel/log.csv"
    fi
    n=$((n + 1))
done < <(find "$src/runs" -name done | sort)
echo "keep_results: $n finished runs of $src in $dst ($(du -sh "$dst" | cut -f1)); log.csv every $every steps"
