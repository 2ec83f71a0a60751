// results/bench/tile_alone.c: gemm_tile (nn/kernels.c), attention's small products, alone on one core with its
// operands in cache, at small's shapes (head 64, query blocks of 32, key tiles of 64, qkv rows 3C = 1152 apart):
// GFLOP/s, the best of 5 rounds of 40000 calls. "rot": the key rows (A) or value rows (B) move through 768 rows
// of qkv (3.5 MB, past L2) call by call, as attention's tiles do.
// cc -O3 -march=native -fopenmp -I. results/bench/tile_alone.c build/float/nn/kernels.o build/float/util/*.o -lm
// run: OMP_NUM_THREADS=1 taskset -c 0 ./a.out
#include "nn/kernels.h"
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static float buf[3][1 << 20];
static void run(const char *name, int M, int N, int K, size_t a_rs, size_t a_cs, size_t ldb, size_t ldc, int rot_a, int rot_b) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < (1 << 20); j++) buf[i][j] = (j % 7) * 0.01f;
    const int calls = 40000;
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (int i = 0; i < calls; i++) {
            const float *a = buf[0] + (rot_a ? (size_t)((i * 64) % rot_a) * a_rs : (size_t)(i & 1));
            const float *b = buf[1] + (rot_b ? (size_t)((i * 64) % rot_b) * ldb : 0);
            gemm_tile(M, N, K, a, a_rs, a_cs, b, ldb, buf[2], ldc, 1);
        }
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    printf("%-22s M %2d N %2d K %2d: %.1f GFLOP/s\n", name, M, N, K, 2.0 * M * N * K * calls / best / 1e9);
}
int main(void) {
    run("S = K_t xT", 64, 32, 64, 1152, 1, 32, 32, 0, 0);
    run("S = K_t xT, rot", 64, 32, 64, 1152, 1, 32, 32, 768, 0);
    run("O += P V_t", 32, 64, 64, 1, 32, 1152, 64, 0, 0);
    run("O += P V_t, rot", 32, 64, 64, 1, 32, 1152, 64, 0, 768);
    run("dV_t += P^T dO", 64, 64, 32, 32, 1, 384, 1152, 0, 0);
    run("dQ += dS K_t", 32, 64, 64, 1, 32, 1152, 1152, 0, 0);
    run("dQ += dS K_t, rot", 32, 64, 64, 1, 32, 1152, 1152, 0, 768);
    run("S, diagonal (32 keys)", 32, 32, 64, 1152, 1, 32, 32, 0, 0);
    return 0;
}
