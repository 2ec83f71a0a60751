// tools/bench/attn_time.c: the fused attention alone at small's heads (6 heads of 64, C = 384, nope,
// causal): the best of REPS calls of the forward and of the backward, in ms and GFLOP/s (the causal
// flops: 4 hs T (T+1)/2 per (batch row, head) forward, 2.5 times that backward). To compare two
// builds, build it in each (make bench-tools) and run the two binaries in turn, pinned to one core
// (taskset) or on all.
// usage: build/bench/attn_time T B REPS
// (Since 2026-12-05 the backward zeroes dqkv itself, inside the timed call; the buffer is also cleared
// before it here, outside the timing, as builds before then need.)
#include "tools/bench/attn_setup.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: attn_time T B REPS\n"); return 2; }
    int T = atoi(argv[1]), B = atoi(argv[2]), reps = atoi(argv[3]);
    int NH = 6, C = 384;
    AttnSetup h;
    attn_setup(&h, B, T, C, NH, PE_NOPE);
    double flf = 4.0 * (C / NH) * (double)T * (T + 1) / 2 * B * NH, tf = 1e9, tb = 1e9;
    for (int s = 0; s < reps; s++) {
        memset(h.dqkv, 0, sizeof(real) * h.N * 3 * C);
        double t0 = now();
        attention_forward(h.out, h.lse, h.qkv, &h.ap, h.scratch, B, T, C, NH);
        double t1 = now();
        attention_backward(h.dqkv, h.scratch, h.dout, h.qkv, h.out, h.lse, &h.ap, B, T, C, NH);
        double t2 = now();
        if (t1 - t0 < tf) tf = t1 - t0;
        if (t2 - t1 < tb) tb = t2 - t1;
    }
    printf("T %d B %d: forward %.3f ms %.1f GFLOP/s, backward %.3f ms %.1f GFLOP/s (2.5x flops)\n", T, B, tf * 1e3, flf / tf / 1e9, tb * 1e3, 2.5 * flf / tb / 1e9);
    attn_setup_free(&h);
    return 0;
}
