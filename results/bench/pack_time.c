// results/bench/pack_time.c: how long gemm_own's B packs of the weights take in a training step, per
// thread: the forward's (W read transposed, Bt) and dX's (W row-major), apart. Needs the measurement
// build of tried-zen5-dec05d-packtime.patch (git apply on 91c501b: nn/kernels.c times each pack_b whose
// product's K is not the batch's B T, i.e. every pack but dW's, where B is an activation).
// cc -O3 -march=native -fopenmp -I. results/bench/pack_time.c build/float/model*.o build/float/posenc*.o
//    build/float/nn/*.o build/float/util/*.o build/float/dataset/*.o -lm
// usage: pack_time small|gpt2 STEPS
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "model.h"
extern int gemm_keep_k; extern double gemm_pack_sec[4];
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char **argv){
  int gpt2 = !strcmp(argv[1], "gpt2"); int steps = atoi(argv[2]);
  int L = gpt2 ? 12 : 6, C = gpt2 ? 768 : 384, NH = gpt2 ? 12 : 6, V = gpt2 ? 50257 : 256, B = gpt2 ? 4 : 8, T = gpt2 ? 64 : 256;
  gemm_keep_k = B * T;
  GPTConfig cfg = { .vocab_size = V, .n_layer = L, .n_head = NH, .n_embd = C, .max_seq_len = T };
  posenc_defaults(&cfg.pe, L); char msg[256];
  if (!posenc_schedule(&cfg.pe, L, NULL, NULL, NULL, msg, sizeof msg)) { puts(msg); return 1; }
  GPT m; gpt_build(&m, &cfg, 1, T); Batch b; batch_alloc(&b, B, T); Rng r; rng_seed(&r, 7);
  for (int i = 0; i < B * T; i++) { b.tokens[i] = (int)(rng_u64(&r) % V); b.targets[i] = (int)(rng_u64(&r) % V); }
  AdamWConfig o = { 1e-4, 0.9, 0.95, 1e-8, 0.1 }; double tot = 0;
  for (int s = -2; s < steps; s++) {
    if (s == 0) for (int q = 0; q < 4; q++) gemm_pack_sec[q] = 0;
    double t0 = now();
    gpt_forward(&m, &b); gpt_zero_grad(&m); gpt_backward(&m, 1.0 / (double)(B * T));
    gpt_adamw(&m, &o, s + 4, gpt_clip_scale(gpt_grad_norm(&m), 1.0));
    if (s >= 0) tot += now() - t0;
  }
  printf("%s: %.1f ms/step; per thread, the forward's weight packs (Bt) %.2f %.2f ms/step (%.1f%% %.1f%% of the step), "
         "dX's (row-major) %.2f %.2f ms/step (%.1f%% %.1f%%)\n", argv[1], tot / steps * 1e3,
         gemm_pack_sec[0] / steps * 1e3, gemm_pack_sec[1] / steps * 1e3, 100 * gemm_pack_sec[0] / tot, 100 * gemm_pack_sec[1] / tot,
         gemm_pack_sec[2] / steps * 1e3, gemm_pack_sec[3] / steps * 1e3, 100 * gemm_pack_sec[2] / tot, 100 * gemm_pack_sec[3] / tot);
  return 0; }
