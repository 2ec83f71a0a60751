#!/usr/bin/env bash
# tools/pilot_stage_b.sh PILOT STAGE_A OUT: stage B's protocol of a fit-first pilot
# (protocols/nope-pilot.txt). It is the pilot's file with --task holding only the configurations
# that stage A did not admit (tools/pilot_budgets.sh), --max-steps 12000 for --max-steps 3000, its
# first line naming OUT and its command line OUT's. The rule chooses it, not a person. OUT is
# written whole (a temporary name, renamed); made again from the same stage it is left as it is,
# and it is never replaced by another. When stage A admitted every configuration there is no stage
# B: it says so, writes nothing and exits 0.
set -euo pipefail
. "$(dirname "$0")/fixed_file.sh"
[ $# -eq 3 ] || { echo "usage: tools/pilot_stage_b.sh PILOT_PROTOCOL STAGE_A_DIR OUT" >&2; exit 2; }
pilot=$1 a=$2 out=$3
die() { echo "pilot_stage_b: $*" >&2; exit 1; }
[ -r "$pilot" ] || die "$pilot cannot be read"
[ "$(grep -c '^--task ' "$pilot")" = 1 ] && [ "$(grep -c -- ' --max-steps 3000 ' "$pilot")" = 1 ] \
  || die "$pilot has not one --task line and one train line with --max-steps 3000 (the pilot's stage A)"
budgets=$(tools/pilot_budgets.sh "$a") || exit 1
left=$(sed -n 's/^stage B: --task //p' <<< "$budgets")
if [ -z "$left" ]; then echo "pilot_stage_b: stage A ($a) admitted every configuration: there is no stage B"; exit 0; fi
tmp="$out.tmp.$$"; trap 'rm -f "$tmp"' EXIT
awk -v left="$left" -v pilot="$pilot" -v out="$out" '
    NR == 1 { print "# " out ": stage B of the pilot " pilot ", made by tools/pilot_stage_b.sh from stage A."; next }
    /^# \.\/compare --protocol / { print "# ./compare --protocol " out " --out DIR --jobs 2"; next }
    /^# Stage A \(this file\):/ { sub(/\(this file\)/, "(" pilot ")") }
    /^--task / { print "--task " left; next }
    /^-- / { sub(/ --max-steps 3000 /, " --max-steps 12000 ") }
    { print }' "$pilot" > "$tmp"
fixed_file "$tmp" "$out" pilot_stage_b "stage A"
trap - EXIT
echo "pilot_stage_b: $out: stage B trains $left"
