#!/usr/bin/env bash
# tools/keep_results.sh SRC DST [EVERY]: the small files of a ./compare folder SRC copied to DST
# (e.g. results/NAME, to commit): what `./compare ... --out DST --report-only` and ./ladder read to
# write every table and plot again, and its sittings' record. Kept: summary.md, results.csv, runs.csv,
# compare.log (what each sitting of the grid printed), the plots (.png, and the .gp/.dat that draw
# them) and per run what the report reads: done (the run's settings, checked against the command),
# train.log (its fit or select line, train lengths, parameter count), eval.csv (tasks), ppl.csv,
# ppl_EXT.csv and ft-EXT/ppl.csv (text; --finetune), attention.csv, distance.csv; and log.csv
# thinned: the columns step, loss (the loss plot's `using 1:2`) and elapsed_s (a pilot's cost,
# tools/pilot_budgets.sh), on its header, every EVERY-th step (default 50), the last, and the
# rows where a sitting that was stopped ends and the next begins (its clock restarts). Left out:
# checkpoints (model.ckpt*), started, ppl_positions*.csv, the longrope lists, distance.pair and
# distance.log (only a later distance command reads them), the SVGs, OUT/.lock.
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
    for f in "$run"/ppl*.csv "$run"/ft-*/ppl.csv; do
        case "$f" in */ppl_positions*) continue ;; esac
        [ -f "$f" ] || continue
        sub=$(dirname "${f#"$run/"}")
        mkdir -p "$dst/$rel/$sub" && cp "$f" "$dst/$rel/$sub/"
    done
    if [ -f "$run/log.csv" ]; then
        awk -F, -v k="$every" '
            function row() { return $1 "," $2 (e ? "," $e : "") }
            NR == 1 { for (i = 1; i <= NF; i++) if ($i == "elapsed_s") e = i; print row(); next }
            e && $e + 0 < pe { if (held != "") print held; print row(); held = ""; pe = $e + 0; next }   # a sitting ends, the next begins
            e { pe = $e + 0 }
            $1 % k == 0 { print row(); held = ""; next }
            { held = row() }
            END { if (held != "") print held }' "$run/log.csv" > "$dst/$rel/log.csv"
    fi
    n=$((n + 1))
done < <(find "$src/runs" -name done | sort)
echo "keep_results: $n finished runs of $src in $dst ($(du -sh "$dst" | cut -f1)); log.csv's step, loss and clock every $every steps"
