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
# Scheme names are read from posenc's tables: the schemes' and presets' .name fields (not the settings'
# rows, whose .key follows their .name), and the RoPE
# scaling methods of SCALING_NAMES (none, linear, ...), which count as scheme names in 1 and 2.
#   5. No line of a flag table is over 120 columns, in any C file: a table is a top-level or local
#      array initializer (from "NAME[] = {" to "};") with a row of util/flags.h's FlagRow, which
#      starts with the flag and its type, { "flag", FLAG_TYPE, ...} (every program's table), or
#      names its fields, { .name = "flag", ...} (posenc.c's settings); every line of it counts,
#      continuation lines too.
. "$(dirname "$0")/lib.sh"
rule() {   # rule NAME HITS: HITS empty passes; else they are listed under the FAIL line
    [ -z "$2" ]; check $? "$1:" || sed 's/^/    /' <<< "$2"
}

names=$(cat posenc*.c | grep -v '\.key = ' | grep -o '\.name = "[a-z0-9-]*"' | sed 's/.*"\(.*\)"/\1/' | paste -sd'|')
[ -n "$names" ] || abort "no scheme names found in posenc*.c"
scalings=$(cat posenc*.c | grep -o 'SCALING_NAMES\[\] = {[^}]*}' | grep -o '"[a-z0-9-]*"' | tr -d '"' | grep -vx none | paste -sd'|')
[ -n "$scalings" ] || abort "no RoPE scaling names (SCALING_NAMES) found in posenc*.c"
names="$names|$scalings"
fields=$(sed -n '/int n_layer; /,/} PosConfig;/p' posenc.h | tail -n +2 | sed 's://.*::' | grep -E '^ +(int|double|RopeScaling) ' |
         sed -E 's/^ +[A-Za-z]+ +//; s/[;,]/ /g' | tr -s ' ' '\n' | grep . | paste -sd'|')
[ -n "$fields" ] || abort "no scheme settings found in PosConfig (posenc.h)"
files=$(find . -name '*.[ch]' -not -path './tests/*' -not -name 'posenc*' | sed 's|^\./||' | sort)
[ -n "$files" ] || abort "no source files found"

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

rule "a scheme, preset or RoPE scaling name as a string literal outside posenc" "$(grep -E "\"($names)\"" <<< "$lits")"
rule "a list of scheme names in a string outside posenc" \
     "$(grep -E "$word($names)(,|\\||, | or )($names)$end" <<< "$lits")"
rule "posenc_find with a literal outside posenc" "$(grep -E 'posenc_find\( *"' <<< "$code")"
rule "a scheme-specific enum outside posenc" "$(grep -E '\b(RopeScaling|ROPE_SCALING_[A-Z0-9_]*)\b' <<< "$code")"
rule "a scheme setting of PosConfig used outside posenc" "$(grep -E "(\\.|->)($fields)\\b" <<< "$code")"
echo "test_rules: $(wc -w <<< "$files") files outside posenc"

# 5. FILE:LINE: N columns for every line over 120 of a flag table (a table ends at a line that ends
# with "};", its own or its last row's: "{ ... } };")
all=$(find . -name '*.[ch]' -not -path './build/*' | sed 's|^\./||' | sort)
tables=$(awk '
    FNR == 1 { inb = 0 }
    !inb && /\[[A-Za-z0-9_]*\] *= *\{ *$/ { inb = 1; n = 0; isflag = 0; next }
    inb && /\};[ \t]*$/ {
        if (isflag) for (i = 1; i <= n; i++) if (length(text[i]) > 120) print FILENAME ":" at[i] ": " length(text[i]) " columns"
        inb = 0; next
    }
    inb {
        text[++n] = $0; at[n] = FNR
        if ($0 ~ /^[ \t]*\{ *("[a-z][a-z0-9-]*", *FLAG_[A-Z]|\.name *= *")/) isflag = 1
    }' $all)
rule "a line of a flag table over 120 columns" "$tables"
finish
