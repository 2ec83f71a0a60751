// tools/bench/attn_group_ab.c: the fused attention alone (B batch rows, 6 heads of 64, nope), its
// query blocks each alone (attention_set_group(1)) against in groups (the argument), switching call by
// call in one process (A B B A ...), so that the machine's drift falls on both alike. Prints the
// medians and the median of the pairs' ratios (quartiles) of the forward and the backward.
// Built by make bench-tools.
// usage: build/bench/attn_group_ab T B PAIRS GROUP [0: forward only]
#include "tools/bench/attn_setup.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static void med(double *v, int n, double *m, double *q1, double *q3) { qsort(v, n, 8, cmp); *m = v[n / 2]; *q1 = v[n / 4]; *q3 = v[3 * n / 4]; }
int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: attn_group_ab T B PAIRS GROUP [0: forward only]\n"); return 2; }
    int T = atoi(argv[1]), B = atoi(argv[2]), pairs = atoi(argv[3]), group = atoi(argv[4]), bwd = argc < 6 || atoi(argv[5]);
    int NH = 6, C = 384;
    AttnSetup h;
    attn_setup(&h, B, T, C, NH, PE_NOPE);
    size_t N = h.N;
    real *qkv = h.qkv, *out = h.out, *dout = h.dout, *dqkv = h.dqkv, *lse = h.lse, *scratch = h.scratch;
    const AttnPos ap = h.ap;
    double *tf[2], *tb[2], *rf = malloc(8 * pairs), *rb = malloc(8 * pairs);
    for (int v = 0; v < 2; v++) { tf[v] = malloc(8 * pairs); tb[v] = malloc(8 * pairs); }
    for (int s = -2; s < 2 * pairs; s++) {
        int e = (s & 1) ^ ((s / 2) & 1);                 // A B B A: 0 = blocks alone, 1 = groups
        attention_set_group(e ? group : 1);
        memset(dqkv, 0, sizeof(real) * N * 3 * C);
        double t0 = now();
        attention_forward(out, lse, qkv, &ap, scratch, B, T, C, NH);
        double t1 = now();
        if (bwd) attention_backward(dqkv, scratch, dout, qkv, out, lse, &ap, B, T, C, NH);
        double t2 = now();
        if (s >= 0) { tf[e][s / 2] = t1 - t0; tb[e][s / 2] = t2 - t1; }
    }
    for (int i = 0; i < pairs; i++) { rf[i] = tf[0][i] / tf[1][i]; rb[i] = bwd ? tb[0][i] / tb[1][i] : 1; }
    double m[2], mb[2], r, q1, q3, rb_m, rb_1, rb_3, x, y;
    for (int v = 0; v < 2; v++) { med(tf[v], pairs, &m[v], &x, &y); med(tb[v], pairs, &mb[v], &x, &y); }
    med(rf, pairs, &r, &q1, &q3); med(rb, pairs, &rb_m, &rb_1, &rb_3);
    printf("T=%d B=%d, groups of %d, %d pairs: forward %.2f -> %.2f ms, x%.3f (quartiles %.3f-%.3f)", T, B, group, pairs,
           1e3 * m[0], 1e3 * m[1], r, q1, q3);
    if (bwd) printf("; backward %.2f -> %.2f ms, x%.3f (quartiles %.3f-%.3f)", 1e3 * mb[0], 1e3 * mb[1], rb_m, rb_1, rb_3);
    printf("\n");
    for (int v = 0; v < 2; v++) { free(tf[v]); free(tb[v]); }
    free(rf); free(rb);
    attn_setup_free(&h);
    return 0;
}
