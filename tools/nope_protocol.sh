#!/usr/bin/env bash
# tools/nope_protocol.sh TEMPLATE STAGE_A STAGE_B OUT: the confirmatory protocol from a template
# committed before the pilot (protocols/nope-learned.in) and the pilot's two finished stages.
# The template's line @BUDGETS@ becomes the pilot's table (as comments), its estimated cost, and the
# lines --task and --task-flags that tools/pilot_budgets.sh prints. --paper lines of configurations
# not admitted are dropped. Nothing else changes. OUT is written whole (a temporary name, renamed)
# and never replaced by another: a protocol is fixed once made. Made again from the same stages, it
# is left as it is.
# Cost estimate: per admitted configuration, its budget x the pilot's run-minutes per 1000 steps x
# schemes x seeds, in hours of 2 cores (./compare --jobs 2).
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: tools/nope_protocol.sh TEMPLATE STAGE_A_DIR STAGE_B_DIR OUT" >&2; exit 2; }
tpl=$1 a=$2 b=$3 out=$4
die() { echo "nope_protocol: $*" >&2; exit 1; }
[ -r "$tpl" ] || die "$tpl cannot be read"
[ "$(grep -cx '@BUDGETS@' "$tpl")" = 1 ] || die "$tpl has no line @BUDGETS@ (or more than one)"
budgets=$(tools/pilot_budgets.sh "$a" "$b") || exit 1
left=$(sed -n 's/^stage B: --task //p' <<< "$budgets")
[ -z "$left" ] || die "$left did not run in stage B ($b): run stage B on every configuration stage A did not admit"
tasks=$(sed -n 's/^--task //p' <<< "$budgets")
[ -n "$tasks" ] || die "the pilot admitted no configuration: there is nothing to confirm"$'\n'"$budgets"
schemes=$(awk '/^--schemes / { n += split($2, x, ",") } /^--scheme / { n++ } END { print n + 0 }' "$tpl")
seeds=$(awk '/^--seeds / { n += split($2, x, ",") } END { print n + 0 }' "$tpl")
hours=$(awk -F'|' -v runs=$((schemes * seeds)) '
    $6 ~ /^ *[0-9]+ *$/ && $2 !~ /configuration/ { h += $6 * $8 / 1000 * runs / 60 / 2 }
    END { printf "%.1f", h }' <<< "$budgets")
tmp="$out.tmp.$$"; trap 'rm -f "$tmp"' EXIT
awk -v budgets="$budgets" -v tasks=",$tasks," -v hours="$hours" -v runs=$((schemes * seeds)) '
    $0 == "@BUDGETS@" {
        n = split(budgets, l, "\n")
        for (i = 1; i <= n; i++) if (l[i] ~ /^\|/) print "# " l[i]
        print "# Estimated cost: " hours " hours of 2 cores (" runs " runs per configuration)."
        for (i = 1; i <= n; i++) if (l[i] ~ /^--task/) print l[i]
        next }
    /^--paper / { t = $2; sub(/:.*/, "", t); if (index(tasks, "," t ",") == 0) next }
    { print }' "$tpl" > "$tmp"
if [ -e "$out" ]; then
    cmp -s "$tmp" "$out" || die "$out exists and differs from what the pilot gives: a protocol is fixed once made (delete it first only if it never ran)"
    echo "nope_protocol: $out is made already"; exit 0
fi
mv "$tmp" "$out"
trap - EXIT
echo "nope_protocol: $out: $(tr ',' '\n' <<< "$tasks" | wc -l) configurations, about $hours hours of 2 cores"
