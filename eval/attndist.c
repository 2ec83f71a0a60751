// eval/attndist.c: the NoPE paper's attention distance, textbook and as its code computes it (eval/attndist.h).
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

double attn_jsd_paper(const real *p, const real *q, int n) {
    double s = 0;
    for (int j = 0; j < n; j++) {
        double a = p[j], b = q[j], m = 0.5 * (a + b);
        if (m <= 0) continue;                                  // 0 log 0 = 0
        s += 0.5 * m * (log(m / (a > ATTN_P_FLOOR ? a : ATTN_P_FLOOR)) + log(m / (b > ATTN_P_FLOOR ? b : ATTN_P_FLOOR)));
    }
    return s > 0 ? s : 0;
}

void attn_layer_distance(const real *pa, int HA, const real *pb, int HB, int T, double *jsd, double *paper) {
    size_t TT = (size_t)T * T;
    double *d = xmalloc(sizeof(double) * (size_t)HA * HB), *dp = xmalloc(sizeof(double) * (size_t)HA * HB);
    // d[h][g], dp[h][g]: the mean over the T rows (row i spans keys 0..i; the rest are 0 in both);
    // the paper's only for g < h, the pairs its code visits
    #pragma omp parallel for collapse(2) schedule(static)
    for (int h = 0; h < HA; h++)
        for (int g = 0; g < HB; g++) {
            double s = 0, sp = 0;
            for (int i = 0; i < T; i++) {
                const real *p = pa + (size_t)h * TT + (size_t)i * T, *q = pb + (size_t)g * TT + (size_t)i * T;
                s += attn_jsd(p, q, i + 1);
                if (g < h) sp += attn_jsd_paper(q, p, i + 1);
            }
            d[(size_t)h * HB + g] = s / T;
            dp[(size_t)h * HB + g] = g < h ? sp / T : INFINITY;
        }
    double sum = 0, best_pair = INFINITY;
    for (int h = 0; h < HA; h++) {
        double best = INFINITY;
        for (int g = 0; g < HB; g++) {
            if (d[(size_t)h * HB + g] < best) best = d[(size_t)h * HB + g];
            if (dp[(size_t)h * HB + g] < best_pair) best_pair = dp[(size_t)h * HB + g];
        }
        sum += best;
    }
    *jsd = sum / HA;
    *paper = isinf(best_pair) ? NAN : best_pair;
    free(d); free(dp);
}

// every head's probabilities (NH, T, T) of layer l of the model's last forward
static void layer_probs(const GPT *m, int l, int T, real *out) {
    for (int h = 0; h < m->cfg.n_head; h++) attention_probs(m, l, 0, h, out + (size_t)h * T * T);
}

void attention_distance(GPT *a, GPT *b, const int *tokens, int T, double *jsd, double *paper) {
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
    gpt_forward(a, &ba, NULL);
    gpt_forward(b, &bb, NULL);
    size_t TT = (size_t)T * T;
    real *pa = xmalloc(sizeof(real) * HA * TT), *pb = xmalloc(sizeof(real) * HB * TT);
    for (int l = 0; l < L; l++) {
        layer_probs(a, l, T, pa);
        layer_probs(b, l, T, pb);
        attn_layer_distance(pa, HA, pb, HB, T, &jsd[l], &paper[l]);
    }
    free(pa); free(pb);
    batch_free(&ba); batch_free(&bb);
}
