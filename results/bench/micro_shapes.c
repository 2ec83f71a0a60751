// results/bench/micro_shapes.c: register tiles of R rows x V vectors (AVX-512, 16 floats) for gemm's micro-kernel,
// on packed operands in cache (A: R x kc, k-major; B panels: kc x 16 V, as many as fill ~512 KB of L2), one
// core; every element the same multiply-add chain over k, whatever the tile. GFLOP/s, best of 7 rounds.
// gcc -O3 -march=native results/bench/micro_shapes.c; run: taskset -c 0 ./a.out
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef float v16 __attribute__((vector_size(64), aligned(4)));
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define KERNEL(NAME, R, V) \
static __attribute__((noinline)) void NAME(int kc, const float *restrict ap, const float *restrict bp, float *restrict c, size_t ldc) { \
    v16 acc[R][V]; \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] = *(const v16 *)(c + r * ldc + 16 * v); \
    for (int k = 0; k < kc; k++) { \
        v16 b[V]; \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) b[v] = *(const v16 *)(bp + (size_t)k * 16 * V + 16 * v); \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) { float a = ap[(size_t)k * R + r]; _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] += a * b[v]; } \
    } \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) *(v16 *)(c + r * ldc + 16 * v) = acc[r][v]; \
}
KERNEL(k12x2, 12, 2)
KERNEL(k8x3, 8, 3)
KERNEL(k6x4, 6, 4)
KERNEL(k14x2, 14, 2)
static float A[1 << 16], B[1 << 20], Cm[1 << 16];
static void bench(const char *name, void (*f)(int, const float *, const float *, float *, size_t), int R, int V, int kc, int panels) {
    double best = 1e9; long calls = 0;
    for (int rep = 0; rep < 7; rep++) {
        double t0 = now(); calls = 0;
        for (int it = 0; it < 400; it++)
            for (int p = 0; p < panels; p++) { f(kc, A, B + (size_t)p * kc * 16 * V, Cm + 16 * V * p % 4096, 4096); calls++; }
        double dt = now() - t0; if (dt < best) best = dt;
    }
    printf("%-6s kc %d, %d B panels (%.0f KB): %.1f GFLOP/s\n", name, kc, panels, panels * kc * 16.0 * V * 4 / 1024, 2.0 * R * 16 * V * kc * calls / best / 1e9);
}
int main(void) {
    for (int i = 0; i < (1 << 16); i++) A[i] = 1e-3f * (i % 13);
    for (int i = 0; i < (1 << 20); i++) B[i] = 1e-3f * (i % 7);
    for (int pass = 0; pass < 2; pass++) {
        bench("12x32", k12x2, 12, 2, 256, 16);
        bench("8x48", k8x3, 8, 3, 256, 11);
        bench("6x64", k6x4, 6, 4, 256, 8);
        bench("14x32", k14x2, 14, 2, 256, 16);
        bench("12x32", k12x2, 12, 2, 192, 16);
        bench("8x48", k8x3, 8, 3, 192, 11);
    }
    return 0;
}
