#!/usr/bin/env bash
# tests/test_rules.sh: design rules that a grep can check.
#  - the model (model.c, layers.c, attention.c) contains no branch on a scheme's name: schemes are
#    reached only through posenc's hooks (shared/DESIGN.md), so a new scheme never touches the model.
set -uo pipefail
model="model.c layers.c attention.c"
cd "$(dirname "$0")/.."
pass=0; fail=0
names=$(grep -o '\.name = "[a-z0-9-]*"' posenc.c | sed 's/.*"\(.*\)"/\1/' | paste -sd'|')
[ -n "$names" ] || { echo "FAIL: no scheme names found in posenc.c"; exit 1; }
if grep -nE "\"($names)\"" $model; then fail=$((fail + 1)); echo "FAIL: the model names a scheme (above)"
else pass=$((pass + 1)); fi
if grep -nE "posenc_find\(" $model; then fail=$((fail + 1)); echo "FAIL: the model looks a scheme up by name"
else pass=$((pass + 1)); fi
echo "test_rules: $pass passed, $fail failed"
[ $fail = 0 ]
