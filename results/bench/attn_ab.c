// results/bench/attn_ab.c: attention alone (B=1, 6 heads, C=384, nope), forward and backward, best of 3 (tried-zen5-dec04.txt, part 11).
// cc -std=gnu11 -O3 -march=native -ffp-contract=fast -fno-math-errno -fopenmp -I. results/bench/attn_ab.c nn/attention.c build/float/util/*.o
//    build/float/posenc.o build/float/posenc_schemes.o build/float/nn/kernels.o build/float/nn/layers.o build/float/nn/bf16.o build/float/nn/bf16_cpu.o -lm
// usage: attn_ab T [1: also the backward]
#include "results/bench/attn_setup.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: attn_ab T [1: also the backward]\n"); return 2; }
    int T = atoi(argv[1]), NH = 6, C = 384, B = 1, bwd = argc > 2 && atoi(argv[2]);
    AttnSetup h;
    attn_setup(&h, B, T, C, NH, PE_NOPE);
    size_t N = h.N;
    real *qkv = h.qkv, *out = h.out, *dout = h.dout, *dqkv = h.dqkv, *lse = h.lse, *scratch = h.scratch;
    const AttnPos ap = h.ap;
    double best = 1e9, bestb = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        attention_forward(out, lse, qkv, &ap, scratch, B, T, C, NH);
        double t1 = now();
        if (bwd) attention_backward(dqkv, scratch, dout, qkv, out, lse, &ap, B, T, C, NH);
        double t2 = now();
        if (t1 - t0 < best) best = t1 - t0;
        if (t2 - t1 < bestb) bestb = t2 - t1;
    }
    double fl = 2.0 * 2 * ((double)T * T / 2) * (C / NH) * NH;   // q.k and p.v over T/2 keys on average
    double cs = 0; for (size_t i = 0; i < N * C; i++) cs += out[i];
    printf("T=%d forward %.1f ms (%.1f GFLOP/s)", T, best * 1e3, fl / best / 1e9);
    if (bwd) printf(" backward %.1f ms", bestb * 1e3);
    printf(" checksum %.9g\n", cs);
    return 0;
}
