// tools/bench/tile_time.c: gemm_tile alone at the fused attention's tile shapes (hs 64, blocks of 32
// queries, tiles of 64 keys; nn/attention.c), operands warm in L1/L2, on the calling thread: the best of
// 5 rounds of CALLS calls each (default 200000), in GFLOP/s, to set against the FMA loop's rate per core.
// Built by make bench-tools. usage: taskset -c 0 build/bench/tile_time [CALLS]
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "nn/kernels.h"
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
static float qkv[256 * 1152], S[64 * 32], O[64 * 64], xT[64 * 32];
static int reps = 200000;
static void run(const char *name, int M, int N, int K, const float *a, size_t ars, size_t acs, const float *b, size_t ldb, float *c, size_t ldc, int acc) {
  double best = 1e9;
  for (int round = 0; round < 5; round++) {
    double t0 = now();
    for (int i = 0; i < reps; i++) gemm_tile(M, N, K, a, ars, acs, b, ldb, c, ldc, acc);
    double dt = now() - t0; if (dt < best) best = dt;
  }
  printf("%-28s %3dx%3dx%3d a_rs %4zu a_cs %3zu: %.1f GFLOP/s\n", name, M, N, K, ars, acs, 2.0 * M * N * K * reps / best / 1e9);
}
int main(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && (reps = atoi(argv[1])) < 1)) { fprintf(stderr, "usage: %s [CALLS]\n", argv[0]); return 2; }
  for (int i = 0; i < 256 * 1152; i++) qkv[i] = (i % 7) * 0.01f;
  for (int i = 0; i < 64 * 32; i++) { S[i] = 0.001f * (i % 5); xT[i] = 0.01f; }
  run("S = K xT", 64, 32, 64, qkv + 384, 1152, 1, xT, 32, S, 32, 0);
  run("O += P V", 32, 64, 64, S, 1, 32, qkv + 768, 1152, O, 64, 1);
  run("dV += P^T dO", 64, 64, 32, S, 32, 1, O, 64, O + 0, 64, 1);
  run("dQ += dS K", 32, 64, 64, S, 1, 32, qkv + 384, 1152, O, 64, 1);
  return 0;
}
