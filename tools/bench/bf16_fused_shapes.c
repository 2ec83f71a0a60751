// tools/bench/bf16_fused_shapes.c: gemm_bf16 on the training shapes of gpt2-124m (B4 T64) and small
// (B8 T256), B packed ahead of the product (bf16_set_fused(0)) against B packed by each thread inside
// it (1), in one process: per shape, ROUNDS rounds of (ahead, inside), each the best of 5 calls with
// the caches flushed (64 MB written) before every call, as a step finds its weights. Prints the
// median of each and of the rounds' ratios, and the packing's share of the call (bf16_pack_seconds).
// Built by make bench-tools.
// usage: build/bench/bf16_fused_shapes PEAK_GFLOPS [ROUNDS] [NAME_PREFIX]   (PEAK: ./bench --bf16's VDPBF16PS loop)
// Built with -DPACK_CONVERT (by hand: make bench-tools builds without), the switch is bf16_set_pack_convert
// instead (nn/bf16.h): the packers round with integer arithmetic (the columns headed "ahead") or with
// VCVTNE2PS2BF16 ("inside"), B packed inside the product in both (results/bench/bf16-convert-zen5-dec05.txt).
#include "nn/bf16.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
typedef struct { const char *name; int M, N, K, mode; } Shape;   // mode 0: B row-major, 1: B transposed (Bt), 2: A transposed (T)
static char *junk;
static double best_of(const Shape *s, const float *a, const float *b, float *c, double *pack) {
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        memset(junk, r, 64 << 20);
        double p0 = bf16_pack_seconds(), t0 = now();
        if (s->mode == 0) gemm_bf16(s->M, s->N, s->K, a, s->K, 1, b, s->N, 1, c, s->N, 0);
        else if (s->mode == 1) gemm_bf16(s->M, s->N, s->K, a, s->K, 1, b, 1, s->K, c, s->N, 0);
        else gemm_bf16(s->M, s->N, s->K, a, 1, s->M, b, s->N, 1, c, s->N, 0);
        double t = now() - t0;
        if (t < best) { best = t; *pack = (bf16_pack_seconds() - p0) / t; }
    }
    return best;
}
int main(int argc, char **argv) {
    double peak = argc > 1 ? atof(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    const char *only = argc > 3 ? argv[3] : "";
    if (peak <= 0 || rounds < 1 || rounds > 64) { fprintf(stderr, "usage: %s PEAK_GFLOPS [ROUNDS] [NAME_PREFIX]\n", argv[0]); return 2; }
    static const Shape shapes[] = {
        { "gpt2 qkv", 256, 2304, 768, 1 }, { "gpt2 qkv dX", 256, 768, 2304, 0 }, { "gpt2 qkv dW", 2304, 768, 256, 2 },
        { "gpt2 proj", 256, 768, 768, 1 }, { "gpt2 proj dX", 256, 768, 768, 0 }, { "gpt2 proj dW", 768, 768, 256, 2 },
        { "gpt2 fc", 256, 3072, 768, 1 }, { "gpt2 fc dX", 256, 768, 3072, 0 }, { "gpt2 fc dW", 3072, 768, 256, 2 },
        { "gpt2 fcproj", 256, 768, 3072, 1 }, { "gpt2 fcproj dX", 256, 3072, 768, 0 }, { "gpt2 fcproj dW", 768, 3072, 256, 2 },
        { "gpt2 lmhead", 256, 50304, 768, 1 }, { "gpt2 lmhead dX", 256, 768, 50304, 0 }, { "gpt2 lmhead dW", 50304, 768, 256, 2 },
        { "small qkv", 2048, 1152, 384, 1 }, { "small qkv dX", 2048, 384, 1152, 0 }, { "small qkv dW", 1152, 384, 2048, 2 },
        { "small proj", 2048, 384, 384, 1 }, { "small proj dX", 2048, 384, 384, 0 }, { "small proj dW", 384, 384, 2048, 2 },
        { "small fc", 2048, 1536, 384, 1 }, { "small fc dX", 2048, 384, 1536, 0 }, { "small fc dW", 1536, 384, 2048, 2 },
        { "small fcproj", 2048, 384, 1536, 1 }, { "small fcproj dX", 2048, 1536, 384, 0 }, { "small fcproj dW", 384, 1536, 2048, 2 },
        { "small lmhead", 2048, 256, 384, 1 }, { "small lmhead dX", 2048, 384, 256, 0 }, { "small lmhead dW", 256, 384, 2048, 2 },
    };
    junk = malloc(64 << 20);
    printf("bf16 path %s; %d rounds of (B packed ahead, B packed inside), best of 5 calls each; %%pk of %.1f GFLOP/s\n",
           bf16_path_name(bf16_path()), rounds, peak);
    printf("%-16s %18s %9s %6s %6s %9s %6s %6s %7s %13s\n", "shape", "M x N x K", "ahead", "%pk", "pack", "inside", "%pk", "pack",
           "ratio", "ratio range");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const Shape *s = &shapes[i];
        if (*only && strncmp(s->name, only, strlen(only))) continue;
        size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N;
        float *a = malloc(4 * na), *b = malloc(4 * nb), *c = malloc(4 * (size_t)s->M * s->N);
        for (size_t j = 0; j < na; j++) a[j] = (float)(j % 7) * 0.1f;
        for (size_t j = 0; j < nb; j++) b[j] = (float)(j % 5) * 0.1f;
        double t0[64], t1[64], p0[64], p1[64], r[64];
        for (int k = 0; k < rounds; k++) {
#ifdef PACK_CONVERT
            bf16_set_pack_convert(0); t0[k] = best_of(s, a, b, c, &p0[k]);
            bf16_set_pack_convert(1); t1[k] = best_of(s, a, b, c, &p1[k]);
#else
            bf16_set_fused(0); t0[k] = best_of(s, a, b, c, &p0[k]);
            bf16_set_fused(1); t1[k] = best_of(s, a, b, c, &p1[k]);
#endif
            r[k] = t0[k] / t1[k];
        }
        qsort(t0, rounds, 8, cmp); qsort(t1, rounds, 8, cmp); qsort(r, rounds, 8, cmp); qsort(p0, rounds, 8, cmp); qsort(p1, rounds, 8, cmp);
        double f = 2.0 * s->M * s->N * s->K / 1e9, g0 = f / t0[rounds / 2], g1 = f / t1[rounds / 2];
        char dims[40];
        snprintf(dims, sizeof dims, "%dx%dx%d%s", s->M, s->N, s->K, s->mode == 0 ? "" : s->mode == 1 ? "Bt" : "T");
        printf("%-16s %18s %9.1f %5.1f%% %5.1f%% %9.1f %5.1f%% %5.1f%% %6.3fx %6.3f-%.3fx\n", s->name, dims, g0, 100 * g0 / peak,
               100 * p0[rounds / 2], g1, 100 * g1 / peak, 100 * p1[rounds / 2], r[rounds / 2], r[0], r[rounds - 1]);
        free(a); free(b); free(c);
    }
    return 0;
}
