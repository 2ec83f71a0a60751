// tools/bench/adamw_bw.c: gpt_adamw over gpt2-124m's 123.7M parameters against a plain loop with the
// same four streams read and three written, and a copy, on all threads: the best of 8 each, in ms and
// GB/s (of 7 streams of 4-byte floats for the first two). Says whether the update runs at the memory's
// speed (no code can then make it faster; only fewer bytes could).
// Built by make bench-tools (build/bench/adamw_bw).
// usage: build/bench/adamw_bw [LAYERS CHANNELS VOCAB]   (default 12 768 50257: gpt2-124m)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include "model.h"
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char **argv){
  int L = argc > 3 ? atoi(argv[1]) : 12, C = argc > 3 ? atoi(argv[2]) : 768, V = argc > 3 ? atoi(argv[3]) : 50257, T = 64;
  if (argc != 1 && argc != 4) { fprintf(stderr, "usage: %s [LAYERS CHANNELS VOCAB]\n", argv[0]); return 2; }
  if (L < 1 || C < 64 || C % 64 || V < 1) { fprintf(stderr, "%s: LAYERS >= 1, CHANNELS a multiple of 64, VOCAB >= 1\n", argv[0]); return 2; }
  int NH = C / 64;
  GPTConfig cfg = { .vocab_size = V, .n_layer = L, .n_head = NH, .n_embd = C, .max_seq_len = T };
  posenc_defaults(&cfg.pe, L); char msg[256];
  if (!posenc_schedule(&cfg.pe, L, NULL, NULL, NULL, msg, sizeof msg)) { puts(msg); return 1; }
  GPT m; gpt_build(&m, &cfg, 1, T);
  size_t n = m.weights.num_params;
  for (size_t i = 0; i < n; i++) m.weights.grads[i] = 1e-3f * (float)(i % 13);
  AdamWConfig o = { 1e-4, 0.9, 0.95, 1e-8, 0.1 };
  float *p = aligned_alloc(64, n*4), *a = aligned_alloc(64, n*4), *b = aligned_alloc(64, n*4), *g = aligned_alloc(64, n*4);
  #pragma omp parallel for
  for (size_t i = 0; i < n; i++) { p[i] = 1; a[i] = 0; b[i] = 0; g[i] = 1e-3f; }
  double ta = 1e9, ts = 1e9, tc = 1e9;
  for (int r = 0; r < 8; r++) {
    double t0 = now(); gpt_adamw(&m, &o, r + 1, 1.0); double t1 = now(); if (t1 - t0 < ta) ta = t1 - t0;
    t0 = now();
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) { float gg = g[i]; a[i] = 0.9f*a[i] + 0.1f*gg; b[i] = 0.95f*b[i] + 0.05f*gg*gg; p[i] -= 1e-4f*(a[i]/(b[i]+1e-8f) + 0.1f*p[i]); }
    t1 = now(); if (t1 - t0 < ts) ts = t1 - t0;
    t0 = now();
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = g[i];
    t1 = now(); if (t1 - t0 < tc) tc = t1 - t0;
  }
  double gb = 7.0 * n * 4 / 1e9;
  printf("%zu params: gpt_adamw %.1f ms (%.1f GB/s of 7 streams), plain 4R3W loop %.1f ms (%.1f GB/s), copy %.1f ms (%.1f GB/s of 2 streams)\n",
         n, ta*1e3, gb/ta, ts*1e3, gb/ts, tc*1e3, 2.0*n*4/1e9/tc);
  free(p); free(a); free(b); free(g); gpt_free(&m);
  return 0; }
