// results/bench/step_ab.c: two variants of the code in ONE process, step by step (A B B A ...), so that the
// machine's drift between runs (10% on these virtual machines) falls on both alike. The library is built
// with a global 'int gemm_exp' that switches the change under test (a measurement build only; the
// committed code has no such switch). Prints each variant's median step and the median of the pairs' ratios.
// Built with -DBF16_FUSED instead, it needs no such build: the steps run with --precision bf16 and the
// switch is the committed bf16_set_fused (nn/bf16.h), B packed ahead (exp0) or inside the product (exp1).
// Built with -DBF16_FUSED -DPACK_CONVERT, the switch is bf16_set_pack_convert (nn/bf16.h): the bf16
// packers round with integer arithmetic (exp0) or with VCVTNE2PS2BF16 (exp1).
// Built with -DLOSS_GRAD, the switch is gpt_set_loss_grad_scale (model.h): dlogits written by the
// backward's own pass (exp0) or by the forward's cross-entropy (exp1).
// Built with -DATT_GROUP, the switch is attention_set_group (nn/attention.h): each block of queries
// alone (exp0) or in groups of ATT_G (exp1).
// cc -O3 -march=native -fopenmp -I. results/bench/step_ab.c <the library's objects> -lm -lopenblas
// usage: step_ab small|gpt2|tiny-gpt2|gpt2-t1024|gpt2-t4096 [PAIRS]   (tiny-gpt2: ./bench's, L4 C128 with
// GPT-2's vocabulary; gpt2-t1024 and gpt2-t4096: gpt2-124m at B1 T1024 and T4096, as ./bench's configs)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "model.h"
#if defined(BF16_FUSED) || defined(LOSS_GRAD) || defined(ATT_GROUP)
#include "nn/attention.h"
#include "nn/bf16.h"
static int gemm_exp;
#else
extern int gemm_exp;
#endif
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc, char **argv){
  int t1024 = argc > 1 && !strcmp(argv[1], "gpt2-t1024"), t4096 = argc > 1 && !strcmp(argv[1], "gpt2-t4096");
  int gpt2 = argc > 1 && (!strcmp(argv[1], "gpt2") || t1024 || t4096), tiny = argc > 1 && !strcmp(argv[1], "tiny-gpt2");
  int pairs = argc > 2 ? atoi(argv[2]) : 20;
  int L = gpt2 ? 12 : 6, C = gpt2 ? 768 : 384, NH = gpt2 ? 12 : 6, V = gpt2 ? 50257 : 256, B = gpt2 ? 4 : 8, T = gpt2 ? 64 : 256;
  if (tiny) { L = 4; C = 128; NH = 4; V = 50257; B = 4; T = 64; }
  if (t1024 || t4096) { B = 1; T = t1024 ? 1024 : 4096; }
  GPTConfig cfg = { .vocab_size = V, .n_layer = L, .n_head = NH, .n_embd = C, .max_seq_len = T };
  posenc_defaults(&cfg.pe, L);
  char msg[256];
  if (!posenc_schedule(&cfg.pe, L, NULL, NULL, NULL, msg, sizeof msg)) { puts(msg); return 1; }
  GPT m; gpt_build(&m, &cfg, 1, T);
#ifdef BF16_FUSED
  gpt_set_bf16(&m, 1);
#endif
  Batch b; batch_alloc(&b, B, T);
  Rng r; rng_seed(&r, 7);
  for (int i = 0; i < B * T; i++) { b.tokens[i] = (int)(rng_u64(&r) % V); b.targets[i] = (int)(rng_u64(&r) % V); }
  AdamWConfig o = { 1e-4, 0.9, 0.95, 1e-8, 0.1 };
  double *t0s = malloc(sizeof(double) * pairs), *t1s = malloc(sizeof(double) * pairs), *rat = malloc(sizeof(double) * pairs);
  for (int s = -2; s < 2 * pairs; s++) {
    gemm_exp = (s & 1) ^ ((s / 2) & 1);   // ABBA order
#if defined(BF16_FUSED) && defined(PACK_CONVERT)
    bf16_set_pack_convert(gemm_exp);
#elif defined(BF16_FUSED)
    bf16_set_fused(gemm_exp);
#endif
#ifdef ATT_GROUP
    attention_set_group(gemm_exp ? ATT_G : 1);
#endif
#ifdef LOSS_GRAD
    gpt_set_loss_grad_scale(&m, gemm_exp ? 1.0 / (B * T) : 0);   // every weight 1: weight_sum = B T
#endif
    double t0 = now();
    gpt_forward(&m, &b); gpt_zero_grad(&m); gpt_backward(&m, 1.0 / (double)(B * T));
    gpt_adamw(&m, &o, s + 4, gpt_clip_scale(gpt_grad_norm(&m), 1.0));
    double dt = now() - t0;
    if (s >= 0) { if (gemm_exp) t1s[s / 2] = dt; else t0s[s / 2] = dt; }
  }
  for (int i = 0; i < pairs; i++) rat[i] = t0s[i] / t1s[i];
  qsort(t0s, pairs, 8, cmp); qsort(t1s, pairs, 8, cmp); qsort(rat, pairs, 8, cmp);
  printf("%s: exp0 %.1f ms, exp1 %.1f ms (medians of %d); speed-up exp1/exp0 median %.3f (quartiles %.3f-%.3f)\n",
         t1024 ? "gpt2-124m-t1024" : t4096 ? "gpt2-124m-t4096" : gpt2 ? "gpt2-124m" : tiny ? "tiny-gpt2" : "small", 1e3 * t0s[pairs / 2], 1e3 * t1s[pairs / 2], pairs, rat[pairs / 2], rat[pairs / 4], rat[3 * pairs / 4]);
  return 0;
}
