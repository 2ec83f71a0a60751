#!/usr/bin/env bash
# tests/test_rules.sh: design rules that a grep can check.
# Scheme knowledge lives in posenc (posenc.h, posenc.c, posenc_schemes.c). Every other C source and
# header (all *.c and *.h outside tests/, found by this script, so new files are covered) reaches a
# scheme only through posenc's hooks and properties (README.md, Adding a scheme), so a new scheme, preset or
# setting never touches them. Outside comments, none of them may hold:
#   1. a scheme or preset name as a string literal ("rope"), or a list of names in one
#      ("nope,rope", "learned|sinusoidal", "learned or sinusoidal"): help text that names schemes
#      comes from posenc (posenc_help, posenc_schedule_help, PE_DEFAULT_COMPARISON);
#   2. posenc_find with a literal;
#   3. a scheme-specific enum (RopeScaling, ROPE_SCALING_*);
#   4. a scheme setting of PosConfig (pe.rope_original_context ...): posenc answers what it means
#      (posenc_resolve, posenc_window_context, ...).
set -uo pipefail
cd "$(dirname "$0")/.."
pass=0; fail=0
rule() {   # rule NAME HITS: HITS empty passes
    if [ -z "$2" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); printf '%s\nFAIL: %s (above)\n' "$2" "$1"; fi
}

names=$(cat posenc*.c | grep -o '\.name = "[a-z0-9-]*"' | sed 's/.*"\(.*\)"/\1/' | paste -sd'|')
[ -n "$names" ] || { echo "FAIL: no scheme names found in posenc*.c"; exit 1; }
fields=$(sed -n '/int n_layer; /,/} PosConfig;/p' posenc.h | tail -n +2 | sed 's://.*::' | grep -E '^ +(int|double|RopeScaling) ' |
         sed -E 's/^ +[A-Za-z]+ +//; s/[;,]/ /g' | tr -s ' ' '\n' | grep . | paste -sd'|')
[ -n "$fields" ] || { echo "FAIL: no scheme settings found in PosConfig (posenc.h)"; exit 1; }
files=$(find . -name '*.[ch]' -not -path './tests/*' -not -name 'posenc*' | sed 's|^\./||' | sort)
[ -n "$files" ] || { echo "FAIL: no source files found"; exit 1; }

# FILE:LINE:TEXT for every line, comments removed; with strings=1 TEXT is only the line's string
# literals, each in its quotes.
strip() {
    awk -v strings="$1" '
    FNR == 1 { block = 0 }
    {
        code = ""; lits = ""; lit = ""; instr = 0; n = length($0)
        for (i = 1; i <= n; i++) {
            ch = substr($0, i, 1); two = substr($0, i, 2)
            if (block) { if (two == "*/") { block = 0; i++ } continue }
            if (instr) {
                code = code ch; lit = lit ch
                if (ch == "\\") { i++; code = code substr($0, i, 1); lit = lit substr($0, i, 1); continue }
                if (ch == q) { instr = 0; if (q == "\"") lits = lits " " lit }
                continue
            }
            if (ch == "\"" || ch == "'\''") { instr = 1; q = ch; lit = ch; code = code ch; continue }
            if (two == "//") break
            if (two == "/*") { block = 1; i++; continue }
            code = code ch
        }
        print FILENAME ":" FNR ":" (strings ? lits : code)
    }' $files
}
# words of the synthetic corpus that are also scheme names, and are not schemes
allowed='^dataset/corpus\.c:[0-9]+:.*"rope" "ropes"'
word='(^|[^A-Za-z0-9_-])'; end='([^A-Za-z0-9_-]|$)'
lits=$(strip 1 | grep -vE "$allowed")
code=$(strip 0)

rule "a scheme or preset name as a string literal outside posenc" "$(grep -E "\"($names)\"" <<< "$lits")"
rule "a list of scheme names in a string outside posenc" \
     "$(grep -E "$word($names)(,|\\||, | or )($names)$end" <<< "$lits")"
rule "posenc_find with a literal outside posenc" "$(grep -E 'posenc_find\( *"' <<< "$code")"
rule "a scheme-specific enum outside posenc" "$(grep -E '\b(RopeScaling|ROPE_SCALING_[A-Z0-9_]*)\b' <<< "$code")"
rule "a scheme setting of PosConfig used outside posenc" "$(grep -E "(\\.|->)($fields)\\b" <<< "$code")"
echo "test_rules: $pass passed, $fail failed ($(wc -w <<< "$files") files outside posenc)"
[ $fail = 0 ]
