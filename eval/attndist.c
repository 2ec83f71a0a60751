// eval/attndist.c: the NoPE paper's attention distance (eval/attndist.h).
#include "eval/attndist.h"

#include <math.h>
#include <string.h>

double attn_jsd(const real *p, const real *q, int n) {
    double s = 0;
    for (int j = 0; j < n; j++) {
        double a = p[j], b = q[j], m = 0.5 * (a + b);
        if (a > 0) s += 0.5 * a * log(a / m);
        if (b > 0) s += 0.5 * b * log(b / m);
    }
    return s > 0 ? s : 0;          // rounding may leave -1e-17 for equal rows
}

// every head's probabilities (NH, T, T) of layer l of the model's last forward
static void layer_probs(const GPT *m, int l, int T, real *out) {
    for (int h = 0; h < m->cfg.n_head; h++) attention_probs(m, l, 0, h, out + (size_t)h * T * T);
}

void attention_distance(GPT *a, GPT *b, const int *tokens, int T, double *out) {
    int L = a->cfg.n_layer, HA = a->cfg.n_head, HB = b->cfg.n_head;
    CHECK(b->cfg.n_layer == L, "the attention distance compares layer by layer: the models have %d and %d layers",
          L, b->cfg.n_layer);
    CHECK(T >= 1 && T <= gpt_position_limit(a) && T <= gpt_position_limit(b), "internal: attention_distance of %d "
          "tokens, past a model's positions (%d, %d)", T, gpt_position_limit(a), gpt_position_limit(b));
    Batch ba, bb;                                        // one row, positions 0..T-1, document 0
    batch_alloc(&ba, 1, T); batch_alloc(&bb, 1, T);
    memcpy(ba.tokens, tokens, sizeof(int) * (size_t)T);
    memcpy(bb.tokens, tokens, sizeof(int) * (size_t)T);
    free(ba.targets); ba.targets = NULL;                 // inference: logits only
    free(bb.targets); bb.targets = NULL;
    gpt_forward(a, &ba);
    gpt_forward(b, &bb);
    size_t TT = (size_t)T * T;
    real *pa = xmalloc(sizeof(real) * HA * TT), *pb = xmalloc(sizeof(real) * HB * TT);
    double *d = xmalloc(sizeof(double) * (size_t)HA * HB);
    for (int l = 0; l < L; l++) {
        layer_probs(a, l, T, pa);
        layer_probs(b, l, T, pb);
        // d(h, g): the mean JSD over the T rows (row i spans keys 0..i; the rest are 0 in both)
        #pragma omp parallel for collapse(2) schedule(static)
        for (int h = 0; h < HA; h++)
            for (int g = 0; g < HB; g++) {
                double s = 0;
                for (int i = 0; i < T; i++)
                    s += attn_jsd(pa + (size_t)h * TT + (size_t)i * T, pb + (size_t)g * TT + (size_t)i * T, i + 1);
                d[(size_t)h * HB + g] = s / T;
            }
        double sum = 0;
        for (int h = 0; h < HA; h++) {
            double best = INFINITY;
            for (int g = 0; g < HB; g++) if (d[(size_t)h * HB + g] < best) best = d[(size_t)h * HB + g];
            sum += best;
        }
        out[l] = sum / HA;
    }
    free(pa); free(pb); free(d);
    batch_free(&ba); batch_free(&bb);
}
