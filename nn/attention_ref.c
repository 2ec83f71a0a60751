// nn/attention_ref.c: the plain attention (nn/attention_ref.h), one (batch row b, head h) at a time,
// in doubles, with whole (T, T) matrices: the textbook formulas, no tiles, no online softmax.
#include "nn/attention_ref.h"

#include "nn/kernels.h"

#include <math.h>

// the head-h vector (hs,) of token t of batch row b in x (B,T,3C): part 0 is q, 1 k, 2 v
#define VEC(x, part, b, t) ((x) + ((size_t)(b) * T + (t)) * 3 * C + (size_t)(part) * C + (size_t)h * hs)

// P (T,T): row i the probabilities p(i,j) of query i over the keys (0 where it may not attend);
// lse (T,) the rows' log-sum-exps. qkv (B,T,3C); ap->pos, ap->doc (B,T).
static void probs(double *P, double *lse, const real *qkv, const AttnPos *ap, int b, int h, int T, int C, int NH) {
    int hs = C / NH;
    const int *pos = ap->pos + (size_t)b * T, *doc = ap->doc + (size_t)b * T;
    real *bias = xmalloc(sizeof(real) * T);
    for (int i = 0; i < T; i++) {
        int n = attn_limit(ap, i, T);                // keys j < n, those of query i's document
        for (int j = 0; j < n; j++) bias[j] = 0;
        if (ap->scheme->bias_forward) ap->scheme->bias_forward(ap->tables, ap->pe_params, NULL, h, pos[i], pos, n, bias);
        double *row = P + (size_t)i * T, mx = -INFINITY, sum = 0;
        for (int j = 0; j < T; j++) {
            row[j] = -INFINITY;                      // a key it may not attend: exp(-inf) = 0 below
            if (j >= n || !key_visible(doc[j], doc[i])) continue;
            const real *q = VEC(qkv, 0, b, i), *k = VEC(qkv, 1, b, j);
            double s = 0;
            for (int c = 0; c < hs; c++) s += (double)q[c] * k[c];
            row[j] = s / sqrt((double)hs) + bias[j];
            if (row[j] > mx) mx = row[j];
        }
        for (int j = 0; j < T; j++) sum += exp(row[j] - mx);
        lse[i] = mx + log(sum);
        for (int j = 0; j < T; j++) row[j] = exp(row[j] - lse[i]);
    }
    free(bias);
}

// F (T,T): attention dropout's factor on p(i,j), 1/(1-P) where the mask (nn/attention.h) keeps it,
// else 0; 1 everywhere without dropout
static void drop_factors(double *F, const AttnPos *ap, int b, int h, int T, int NH) {
    for (int i = 0; i < T; i++) {
        uint32_t rk = drop_row_key(ap->drop_key, ((ap->drop_b0 + (uint64_t)b) * NH + h) * T + i);
        for (int j = 0; j < T; j++)
            F[(size_t)i * T + j] = ap->dropout == 0 ? 1
                : drop_keep(rk, (uint32_t)j, drop_threshold(ap->dropout)) ? 1 / (1 - ap->dropout) : 0;
    }
}

void attention_ref_forward(real *out, real *lse, const real *qkv, const AttnPos *ap, int B, int T, int C, int NH) {
    int hs = C / NH;
    double *P = xmalloc(sizeof(double) * T * T), *F = xmalloc(sizeof(double) * T * T), *l = xmalloc(sizeof(double) * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            probs(P, l, qkv, ap, b, h, T, C, NH);
            drop_factors(F, ap, b, h, T, NH);
            for (int i = 0; i < T; i++) {
                lse[((size_t)b * NH + h) * T + i] = (real)l[i];
                real *o = out + ((size_t)b * T + i) * C + (size_t)h * hs;      // out_i = sum_j f p v_j
                for (int c = 0; c < hs; c++) {
                    double s = 0;
                    for (int j = 0; j < T; j++) s += F[(size_t)i * T + j] * P[(size_t)i * T + j] * VEC(qkv, 2, b, j)[c];
                    o[c] = (real)s;
                }
            }
        }
    free(P); free(F); free(l);
}

// dP(i,j) = f(i,j) dout_i . v_j; dscore(i,j) = p(i,j) (dP(i,j) - sum_j' p(i,j') dP(i,j')), the
// softmax's Jacobian; hook 3's backward takes dscore; then through score = q.k / sqrt(hs):
// dq_i = sum_j dscore(i,j) k_j / sqrt(hs), dk_j = sum_i dscore(i,j) q_i / sqrt(hs), and
// dv_j = sum_i f(i,j) p(i,j) dout_i.
void attention_ref_backward(real *dqkv, const real *dout, const real *qkv, const AttnPos *ap, int B, int T, int C, int NH) {
    int hs = C / NH, learned = ap->scheme->bias_backward && ap->pe_dparams;
    double *P = xmalloc(sizeof(double) * T * T), *F = xmalloc(sizeof(double) * T * T), *dS = xmalloc(sizeof(double) * T * T);
    double *l = xmalloc(sizeof(double) * T), scale = 1 / sqrt((double)hs);
    real *row = xmalloc(sizeof(real) * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            probs(P, l, qkv, ap, b, h, T, C, NH);
            drop_factors(F, ap, b, h, T, NH);
            #define DOUT(t) (dout + ((size_t)b * T + (t)) * C + (size_t)h * hs)
            for (int i = 0; i < T; i++) {
                double *p = P + (size_t)i * T, *f = F + (size_t)i * T, *ds = dS + (size_t)i * T, D = 0;
                for (int j = 0; j < T; j++) {
                    double dp = 0;
                    for (int c = 0; c < hs; c++) dp += (double)DOUT(i)[c] * VEC(qkv, 2, b, j)[c];
                    ds[j] = f[j] * dp;
                    D += p[j] * ds[j];
                }
                for (int j = 0; j < T; j++) ds[j] = p[j] * (ds[j] - D);
                if (learned) {                       // the bias was added to keys j < attn_limit
                    int n = attn_limit(ap, i, T);
                    for (int j = 0; j < n; j++) row[j] = (real)ds[j];
                    ap->scheme->bias_backward(ap->tables, ap->pe_params, NULL, ap->pe_dparams, NULL, h,
                                              ap->pos[(size_t)b * T + i], ap->pos + (size_t)b * T, n, row);
                }
            }
            for (int t = 0; t < T; t++)
                for (int c = 0; c < hs; c++) {
                    double dq = 0, dk = 0, dv = 0;
                    for (int u = 0; u < T; u++) {
                        dq += dS[(size_t)t * T + u] * VEC(qkv, 1, b, u)[c];
                        dk += dS[(size_t)u * T + t] * VEC(qkv, 0, b, u)[c];
                        dv += F[(size_t)u * T + t] * P[(size_t)u * T + t] * DOUT(u)[c];
                    }
                    VEC(dqkv, 0, b, t)[c] = (real)(dq * scale);
                    VEC(dqkv, 1, b, t)[c] = (real)(dk * scale);
                    VEC(dqkv, 2, b, t)[c] = (real)dv;
                }
            #undef DOUT
        }
    free(P); free(F); free(dS); free(l); free(row);
}
