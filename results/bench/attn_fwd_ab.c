// results/bench/attn_fwd_ab.c: attention_forward alone (small's heads: 6 of 64, C = 384, nope), one process
// switching a measurement build's global attn_exp call by call (A B B A), so that the machine's drift falls
// on both alike: medians of each and of the pairs' ratios (>1: exp1 faster). The build it was made for:
// tried-zen5-dec05c-attn-units.patch (exp1: the forward's work handed out by (pair, group of blocks)).
//   cc -std=gnu11 -O3 -march=native -fopenmp -I. results/bench/attn_fwd_ab.c build/float/nn/*.o
//      build/float/util/*.o build/float/posenc.o build/float/posenc_schemes.o -lm -o attn_fwd_ab
// usage: attn_fwd_ab T B PAIRS
#include "results/bench/attn_setup.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
extern int attn_exp;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return (x>y)-(x<y);}
int main(int argc, char **argv) {
    int T = atoi(argv[1]), B = atoi(argv[2]), pairs = atoi(argv[3]), NH = 6, C = 384;
    AttnSetup h; attn_setup(&h, B, T, C, NH, PE_NOPE);
    double flf = 4.0 * (C / NH) * (double)T * (T + 1) / 2 * B * NH, *t[2], *r = malloc(8 * pairs); int n[2] = {0, 0};
    t[0] = malloc(8 * pairs); t[1] = malloc(8 * pairs);
    for (int s = -2; s < 2 * pairs; s++) {
        int e = (s & 1) ^ ((s / 2) & 1); attn_exp = e;
        double t0 = now();
        attention_forward(h.out, h.lse, h.qkv, &h.ap, h.scratch, B, T, C, NH);
        double dt = now() - t0; if (s >= 0) t[e][n[e]++] = dt;
    }
    for (int i = 0; i < pairs; i++) r[i] = t[0][i] / t[1][i];
    qsort(t[0], pairs, 8, cmp); qsort(t[1], pairs, 8, cmp); qsort(r, pairs, 8, cmp);
    printf("T %d B %d forward: exp0 %.1f GFLOP/s, exp1 %.1f (medians of %d); exp1/exp0 speed %.3f (quartiles %.3f-%.3f)\n", T, B,
           flf / t[0][pairs / 2] / 1e9, flf / t[1][pairs / 2] / 1e9, pairs, r[pairs / 2], r[pairs / 4], r[3 * pairs / 4]);
    return 0;
}
