#!/usr/bin/env bash
# tools/nope_protocol.sh TEMPLATE STAGE_A STAGE_B OUT: the confirmatory protocol from a template
# committed before the pilot (protocols/nope-learned.in) and the pilot's finished stages. STAGE_B
# may be absent only when stage A admitted every configuration.
#
# The template's line @BUDGETS H@ (H: the cap, hours of 2 cores) becomes the pilot's table (as
# comments), the cost, and the lines --task and --task-flags that tools/pilot_budgets.sh gives.
# Cost of a configuration: its budget x the pilot's run-minutes per 1000 steps x schemes x seeds,
# in hours of 2 cores (./compare --jobs 2). The cap: the admitted configurations are taken from the
# cheapest up, in the pilot's order at equal cost, while their sum stays within H; the rest are
# listed as over the cap. --paper lines of configurations not taken are dropped. Nothing else
# changes. A template tracked by git must be as committed. OUT is written whole (a temporary name,
# renamed) and never replaced by another: a protocol is fixed once made. Made again from the same
# stages, it is left as it is.
set -euo pipefail
. "$(dirname "$0")/fixed_file.sh"
[ $# -eq 4 ] || { echo "usage: tools/nope_protocol.sh TEMPLATE STAGE_A_DIR STAGE_B_DIR OUT" >&2; exit 2; }
tpl=$1 a=$2 b=$3 out=$4
die() { echo "nope_protocol: $*" >&2; exit 1; }
[ -r "$tpl" ] || die "$tpl cannot be read"
[ "$(grep -cxE '@BUDGETS [0-9]+(\.[0-9]+)?@' "$tpl")" = 1 ] || die "$tpl has no line @BUDGETS H@, H the cap in hours (or more than one)"
cap=$(sed -nE 's/^@BUDGETS ([0-9.]+)@$/\1/p' "$tpl")
# a template tracked by git must be as committed: the pre-registration is the commit
tdir=$(dirname "$tpl")
if command -v git > /dev/null && git -C "$tdir" ls-files --error-unmatch -- "$(basename "$tpl")" > /dev/null 2>&1; then
    git -C "$tdir" diff --quiet HEAD -- "$(basename "$tpl")" || die "$tpl differs from its committed version: the template is fixed by its commit"
fi
if [ -d "$b" ]; then budgets=$(tools/pilot_budgets.sh "$a" "$b") || exit 1
else
    budgets=$(tools/pilot_budgets.sh "$a") || exit 1
    ! grep -q '^stage B: ' <<< "$budgets" || die "stage B ($b) has not run: $(sed -n 's/^stage B: --task //p' <<< "$budgets") await it"
fi
left=$(sed -n 's/^stage B: --task //p' <<< "$budgets")
[ -z "$left" ] || die "$left did not run in stage B ($b): run stage B on every configuration stage A did not admit"
grep -q '^--task ' <<< "$budgets" || die "the pilot admitted no configuration: there is nothing to confirm"$'\n'"$budgets"
schemes=$(awk '/^--schemes / { n += split($2, x, ",") } /^--scheme / { n++ } END { print n + 0 }' "$tpl")
seeds=$(awk '/^--seeds / { n += split($2, x, ",") } END { print n + 0 }' "$tpl")
runs=$((schemes * seeds))
# per admitted configuration: order, task, budget, hours; then the cap keeps the cheapest
chosen=$(awk -F'|' -v runs=$runs '
    $6 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $2); gsub(/ /, "", $6); printf "%d %s %d %.4f\n", ++n, $2, $6, $6 * $8 / 1000 * runs / 60 / 2 }' <<< "$budgets" \
  | sort -k4,4g -k1,1n | awk -v cap="$cap" '
    { if (sum + $4 <= cap + 1e-9) { sum += $4; keep[$1] = $2 " " $3 } else { over = over (over ? ", " : "") $2 " (" sprintf("%.1f", $4) " h)" } }
    END { printf "%.1f\t%s\t", sum, over
          for (i = 1; i <= 64; i++) if (i in keep) printf "%s;", keep[i] }')
hours=$(cut -f1 <<< "$chosen"); over=$(cut -f2 <<< "$chosen"); keep=$(cut -f3 <<< "$chosen")
[ -n "$keep" ] || die "no admitted configuration fits the cap of $cap hours: $over"
tasks=$(tr ';' '\n' <<< "$keep" | sed '/^$/d' | cut -d' ' -f1 | paste -sd,)
count=$(tr ',' '\n' <<< "$tasks" | wc -l)
tmp="$out.tmp.$$"; trap 'rm -f "$tmp"' EXIT
awk -v budgets="$budgets" -v keep="$keep" -v tasks=",$tasks," -v hours="$hours" -v cap="$cap" -v over="$over" \
    -v runs=$runs -v count="$count" '
    /^@BUDGETS [0-9.]+@$/ {
        n = split(budgets, l, "\n")
        for (i = 1; i <= n; i++) if (l[i] ~ /^\|/) print "# " l[i]
        print "# Estimated cost: " hours " hours of 2 cores (" runs " runs per configuration), within the cap of " cap "."
        if (over != "") print "# Over the cap, left out: " over "."
        if (count < 5) print "# Fewer than 5 configurations: the claims cover only these " count "."
        gsub(/,$/, "", tasks); print "--task " substr(tasks, 2)
        m = split(keep, k, ";")
        for (i = 1; i <= m; i++) if (k[i] != "") { split(k[i], f, " "); print "--task-flags " f[1] "=--steps " f[2] }
        tasks = tasks ","
        next }
    /^--paper / { t = $2; sub(/:.*/, "", t); if (index(tasks, "," t ",") == 0) next }
    { print }' "$tpl" > "$tmp"
fixed_file "$tmp" "$out" nope_protocol "the pilot"
trap - EXIT
echo "nope_protocol: $out: $count configurations, about $hours hours of 2 cores${over:+; over the cap of $cap hours: $over}"
