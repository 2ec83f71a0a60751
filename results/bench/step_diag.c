// results/bench/step_diag.c: where a training step's matrix products lose time against their speed alone,
// measured inside the step (a measurement build only; the committed code has none of this). The library is
// built with gemm_own (nn/kernels.c) renamed gemm_own_ and wrapped by:
//   int g_rerun; double g_cold, g_hot, g_hotflops, g_imb_span, g_imb_wait, g_imb_wall; long g_imb_n;
//   void gemm_own(...) {  // without g_rerun, or when accumulating: gemm_own_ once
//       t0; gemm_own_(...); t1; gemm_own_(...same operands, overwriting C again...); t2;
//       g_cold += t1 - t0; g_hot += t2 - t1; g_hotflops += 2 M N K; }
// and, at the end of gemm_own_, after speed_learn, the threads' times of the product (sec[t], each from
// before the parallel region to the thread's last item):
//   g_imb_span += max_t sec[t]; g_imb_wait += team * max_t sec[t] - sum_t sec[t]; g_imb_n++;
//   g_imb_wall += now_seconds() - t0;
// Prints, per step: the products' wall time and share, the threads' idle time inside the products (one
// waiting for the other at the product's end), and with a third argument every overwriting product run a
// second time at once on the same operands (so in cache, as the bench's per-shape table runs them): the
// first run's speed against the second's. (The step is then about twice as long: only those two numbers
// are read from such a run.)
// cc -O3 -march=native -fopenmp -I. results/bench/step_diag.c build/float/model*.o build/float/posenc*.o
//    build/float/nn/*.o build/float/util/*.o build/float/dataset/*.o -lm -lopenblas
// usage: step_diag small|gpt2 [STEPS] [rerun]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "model.h"
extern int g_rerun;
extern double g_cold, g_hot, g_hotflops, g_imb_span, g_imb_wait, g_imb_wall;
extern long g_imb_n;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    int gpt2 = argc > 1 && !strcmp(argv[1], "gpt2"), steps = argc > 2 ? atoi(argv[2]) : 10;
    int L = gpt2 ? 12 : 6, C = gpt2 ? 768 : 384, NH = gpt2 ? 12 : 6, V = gpt2 ? 50257 : 256, B = gpt2 ? 4 : 8, T = gpt2 ? 64 : 256;
    GPTConfig cfg = { .vocab_size = V, .n_layer = L, .n_head = NH, .n_embd = C, .max_seq_len = T };
    posenc_defaults(&cfg.pe, L);
    char msg[256];
    if (!posenc_schedule(&cfg.pe, L, NULL, NULL, NULL, msg, sizeof msg)) { puts(msg); return 1; }
    GPT m;
    gpt_build(&m, &cfg, 1, T);
    Batch b;
    batch_alloc(&b, B, T);
    Rng r;
    rng_seed(&r, 7);
    for (int i = 0; i < B * T; i++) { b.tokens[i] = (int)(rng_u64(&r) % V); b.targets[i] = (int)(rng_u64(&r) % V); }
    AdamWConfig o = { 1e-4, 0.9, 0.95, 1e-8, 0.1 };
    double tot = 0;
    for (int s = -2; s < steps; s++) {
        if (s == 0) { g_imb_span = g_imb_wait = g_imb_wall = 0; g_imb_n = 0; g_rerun = argc > 3; g_cold = g_hot = g_hotflops = 0; }
        double t0 = now();
        gpt_forward(&m, &b);
        gpt_zero_grad(&m);
        gpt_backward(&m, 1.0 / (double)(B * T));
        gpt_adamw(&m, &o, s + 4, gpt_clip_scale(gpt_grad_norm(&m), 1.0));
        if (s >= 0) tot += now() - t0;
    }
    printf("%s: step %.1f ms; %ld products a step, %.1f ms (%.1f%%); the slower thread's %.1f ms; idle thread-time in the "
           "products %.1f ms (%.1f%% of both threads' time in them)\n", gpt2 ? "gpt2-124m" : "small", 1e3 * tot / steps, g_imb_n / steps,
           1e3 * g_imb_wall / steps, 100 * g_imb_wall / tot, 1e3 * g_imb_span / steps, 1e3 * g_imb_wait / steps,
           100 * g_imb_wait / (2 * g_imb_wall));
    if (g_rerun)
        printf("  overwriting products: %.1f GFLOP a step; first run %.1f ms (%.1f GFLOP/s), again at once %.1f ms (%.1f GFLOP/s): "
               "%.3fx\n", g_hotflops / steps / 1e9, 1e3 * g_cold / steps, g_hotflops / g_cold / 1e9, 1e3 * g_hot / steps,
               g_hotflops / g_hot / 1e9, g_cold / g_hot);
    return 0;
}
