#!/usr/bin/env bash
# tests/run.sh: what make test runs. Each argument is one test, a command line split at spaces
# ('OMP_NUM_THREADS=2 ./tests/test_grad', './tests/test_cli.sh'); every test runs to its end, and
# one closing line counts them:
#   make test: 40 passed, 2 skipped (test_mpi: ... (apt-get install ...); ...)
# A test passes with exit status 0 and is skipped, in whole or in part, with 77 (tests/lib.sh
# prints each skipped part as "SKIPPED: WHAT (HOW)" and records it here through $TEST_SKIPS); any
# other status is a failure. With REQUIRE_ALL=1 in the environment (CI) a skip is a failure too.
# Exits 1 when a test failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# a test that builds something (test_mpi's make) runs its own make: not one that waits on the jobs of
# the make running this script, whose job server it cannot reach
unset MAKEFLAGS MFLAGS MAKELEVEL
TEST_SKIPS=$(mktemp) || exit 1
export TEST_SKIPS
trap 'rm -f "$TEST_SKIPS"' EXIT
passed=0; failed=(); skipped=()
for t in "$@"; do
    read -ra cmd <<< "$t"
    name=""
    for w in "${cmd[@]}"; do [[ $w == *=* ]] || { name=$(basename "$w" .sh); break; }; done
    echo "== $t"
    lines=$(wc -l < "$TEST_SKIPS")
    env "${cmd[@]}"; rc=$?
    why=$(tail -n +$((lines + 1)) "$TEST_SKIPS" | sed "s/^$name: //" | paste -sd';' | sed 's/;/; /g')
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
    elif [ $rc = 77 ] && [ "${REQUIRE_ALL:-0}" != 1 ]; then
        skipped+=("$name: ${why:-no reason given}")
    elif [ $rc = 77 ]; then
        failed+=("$name (skipped, and REQUIRE_ALL=1)")
    else
        failed+=("$name")
        echo "FAIL: $t exited with status $rc"
    fi
done
line="make test: $passed passed"
join() { local s="" w; for w in "$@"; do s="${s:+$s; }$w"; done; echo "$s"; }
[ ${#failed[@]} = 0 ] || line+=", ${#failed[@]} FAILED ($(join "${failed[@]}"))"
[ ${#skipped[@]} = 0 ] || line+=", ${#skipped[@]} skipped ($(join "${skipped[@]}"))"
echo "$line"
[ ${#failed[@]} = 0 ]
