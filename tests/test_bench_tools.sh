#!/usr/bin/env bash
# tests/test_bench_tools.sh: the measuring programs of tools/bench/ (make bench-tools builds them as
# build/bench/NAME against the library's objects) still build and run: each once with its smallest
# arguments (a few seconds in all), exit status 0 and its result line; and a bad argument gets the
# usage line and exit 2. The numbers are not checked: they measure the machine.
. "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=2
B=build/bench
for t in adamw_bw attn_bits attn_group_ab attn_time bf16_fused_shapes fma_runs gemm_ab machine_latency tile_time; do
    [ -x "$B/$t" ] || abort "$B/$t is missing: run make bench-tools"
done
# run WHAT NEEDLE CMD...: CMD exits 0 and prints NEEDLE (a fixed string)
run() {
    local what=$1 needle=$2; shift 2
    "$@" > "$tmp/out" 2>&1; local rc=$?
    [ $rc = 0 ] && grep -qF -- "$needle" "$tmp/out"; check $? "$what: exit status $rc, or no '$needle' in its output" ||
        sed 's/^/    /' "$tmp/out"
}
run "adamw_bw (1 layer of 64, 256 tokens)" "params: gpt_adamw" $B/adamw_bw 1 64 256
run "attn_bits" "scheme alibi docs 1" $B/attn_bits alibi
run "attn_group_ab" "groups of 2, 1 pairs: forward" $B/attn_group_ab 64 1 1 2
run "attn_time" "T 64 B 1: forward" $B/attn_time 64 1 1
run "bf16_fused_shapes (small's lm head)" "small lmhead dW" $B/bf16_fused_shapes 100 1 "small lmhead"
run "fma_runs (1 set, long runs of 1)" "short (" $B/fma_runs 1 1
run "gemm_ab" "64x64x64Bt" $B/gemm_ab 64 64 64 Bt 1
run "machine_latency (256 KiB, 100 round trips)" "dependent loads in    256 KiB" $B/machine_latency 256 100
run "tile_time (100 calls)" "dQ += dS K" $B/tile_time 100
# bad arguments: the usage line and exit 2
for cmd in "gemm_ab 64 64" "gemm_ab 64 64 64 X" "attn_time 64" "fma_runs 0" "machine_latency 1" "tile_time 0" "adamw_bw 1 2" \
           "bf16_fused_shapes" "attn_group_ab 64" "attn_bits no-such-scheme"; do
    $B/$cmd > "$tmp/out" 2>&1; rc=$?
    [ $rc = 2 ]; check $? "$cmd: exit status $rc, not 2" || sed 's/^/    /' "$tmp/out"
done
finish
