# tests/lib.sh: the start and the end every tests/*.sh script shares. Sourced first thing
# (`. "$(dirname "$0")/lib.sh"`), it moves to the repository root, makes a temporary folder $tmp
# (removed at exit, with any job the script left running) and gives one way to check:
#
#   CMD...; check $? WHAT       a pass when the status is 0; else "FAIL: WHAT", counted. check
#                               returns the status, so `...; check $? WHAT || cat "$tmp/log"`
#                               shows more on a failure
#   expect_fail WHAT NEEDLE CMD...
#                               CMD must refuse: exit status 1, NEEDLE (a fixed string) in its
#                               stderr ($tmp/err; stdout in $tmp/out), and nothing written. A script
#                               whose refusals may write sets the scene in refusal_setup and prints
#                               what CMD wrote in refusal_written (nothing: nothing written)
#   have TOOL WHAT HOW          true when TOOL (a command or a path) is installed; else skip WHAT HOW
#   skip WHAT HOW               a part not run for want of an optional tool: "SKIPPED: WHAT (HOW)",
#                               HOW being the apt-get line that installs it; counted. With
#                               REQUIRE_ALL=1 in the environment a skip is a failure
#   abort WHAT                  a failure the rest of the script cannot run after: FAIL, then finish
#   finish                      the closing line, "NAME: P passed, F failed[, S skipped (...)]"; exits 1
#                               on a failure, else 77 (automake's "skipped") when a part was skipped,
#                               else 0. tests/run.sh (make test) counts the scripts by that status.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
NAME=$(basename "$0" .sh)
PY=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d) || exit 1
cleanup() {
    local j; j=$(jobs -p)
    [ -z "$j" ] || kill -9 $j 2> /dev/null
    chmod -R u+w "$tmp" 2> /dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
pass=0; fail=0; skipped=()

check() {   # check STATUS WHAT
    if [ "$1" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi
    return "$1"
}

expect_fail() {   # expect_fail WHAT NEEDLE CMD...
    local what=$1 needle=$2 rc written=""; shift 2
    if declare -F refusal_setup > /dev/null; then refusal_setup; fi
    "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    if [ $rc != 1 ]; then
        check 1 "$what: exit status $rc, not 1"; sed 's/^/    /' "$tmp/err"; return 1
    fi
    if ! grep -qF -- "$needle" "$tmp/err"; then
        check 1 "$what: stderr lacks '$needle':"; sed 's/^/    /' "$tmp/err"; return 1
    fi
    if declare -F refusal_written > /dev/null; then written=$(refusal_written); fi
    [ -z "$written" ]; check $? "$what: $written"
}

skip() {   # skip WHAT HOW
    if [ "${REQUIRE_ALL:-0}" = 1 ]; then
        check 1 "$1: skipped, and REQUIRE_ALL=1 asks for every part ($2)"; return
    fi
    echo "SKIPPED: $1 ($2)"
    skipped+=("$1")
    if [ -n "${TEST_SKIPS:-}" ]; then echo "$NAME: $1 ($2)" >> "$TEST_SKIPS"; fi
}

have() {   # have TOOL WHAT HOW
    command -v "$1" > /dev/null && return 0
    skip "$2" "$3"; return 1
}

abort() {   # abort WHAT
    check 1 "$1"; finish
}

finish() {
    local s="" w
    for w in "${skipped[@]}"; do s="${s:+$s; }$w"; done
    [ -z "$s" ] || s=", ${#skipped[@]} skipped ($s)"
    echo "$NAME: $pass passed, $fail failed$s"
    [ "$fail" = 0 ] || exit 1
    [ ${#skipped[@]} = 0 ] || exit 77
    exit 0
}
