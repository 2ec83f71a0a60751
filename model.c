// model.c: the GPT-2 layers as forward/backward pairs, the model, and AdamW.
// Shapes follow the legend in model.h. Every backward ACCUMULATES (+=) into its outputs.
#include "model.h"

#include "kernels.h"

#include <string.h>
#include <tgmath.h>   // exp, sqrt, tanh follow the type of `real` (expf in the float build)
#ifdef _OPENMP
#include <omp.h>
#endif

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
static int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static double wall(void) {
#ifdef _OPENMP
    return omp_get_wtime();
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}
// Adds the time of `stmt` to m->prof[k] (where a benchmark reads the share of each kind of work).
#define TIMED(m, k, stmt) do { double t0_ = wall(); stmt; (m)->prof[k] += wall() - t0_; } while (0)

// ----------------------------------------------------------------------------------------------
// batches

void batch_alloc(Batch *b, int B, int T) {
    size_t n = (size_t)B * T;
    b->B = B; b->T = T;
    b->tokens = xcalloc(n, sizeof(int));
    b->targets = xcalloc(n, sizeof(int));
    b->weights = xcalloc(n, sizeof(float));
    b->pos = xcalloc(n, sizeof(int));
    b->doc = xcalloc(n, sizeof(int));
    batch_default_positions(b);
}

void batch_free(Batch *b) {
    free(b->tokens); free(b->targets); free(b->weights); free(b->pos); free(b->doc);
    memset(b, 0, sizeof *b);
}

void batch_default_positions(Batch *b) {
    for (int i = 0; i < b->B; i++)
        for (int t = 0; t < b->T; t++) {
            size_t k = (size_t)i * b->T + t;
            b->pos[k] = t; b->doc[k] = 0; b->weights[k] = 1.0f;
        }
}

// ----------------------------------------------------------------------------------------------
// encoder: out (N,C) = wte[inp[n]]; wte is (Vp,C). The input positional hook is applied after.

void encoder_forward(real *out, const int *inp, const real *wte, int N, int C) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)inp[n] * C, sizeof(real) * C);
}

// dwte[inp[n]] += dout[n]; serial so that repeated tokens never race
void encoder_backward(real *dwte, const real *dout, const int *inp, int N, int C) {
    for (int n = 0; n < N; n++) {
        real *row = dwte + (size_t)inp[n] * C;
        const real *d = dout + (size_t)n * C;
        for (int c = 0; c < C; c++) row[c] += d[c];
    }
}

// ----------------------------------------------------------------------------------------------
// layernorm: out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N,) kept for backward

void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *weight,
                       const real *bias, int N, int C) {
    const real eps = (real)1e-5;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        real m = 0;
        #pragma omp simd reduction(+:m)
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        real v = 0;
        #pragma omp simd reduction(+:v)
        for (int c = 0; c < C; c++) { real d = x[c] - m; v += d * d; }
        v /= C;
        real s = 1 / sqrt(v + eps);
        real *o = out + (size_t)n * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[n] = m; rstd[n] = s;
    }
}

// dinp (N,C) +=, dweight (C) +=, dbias (C) +=; dout (N,C)
void layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                        const real *weight, const real *mean, const real *rstd, int N, int C) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *d = dout + (size_t)n * C, *x = inp + (size_t)n * C;
        real m = mean[n], s = rstd[n];
        // dnorm = dout * weight; dinp = s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
        real dnorm_mean = 0, dnorm_norm_mean = 0;
        #pragma omp simd reduction(+:dnorm_mean, dnorm_norm_mean)
        for (int c = 0; c < C; c++) {
            real norm = (x[c] - m) * s, dnorm = weight[c] * d[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C; dnorm_norm_mean /= C;
        real *di = dinp + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            real norm = (x[c] - m) * s, dnorm = weight[c] * d[c];
            di[c] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
        }
    }
    // parameter gradients: each thread owns a range of channels, summing rows in order
    #pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        real dw = 0, db = 0;
        for (int n = 0; n < N; n++) {
            real dv = dout[(size_t)n * C + c];
            dw += dv * (inp[(size_t)n * C + c] - mean[n]) * rstd[n];
            db += dv;
        }
        dweight[c] += dw; dbias[c] += db;
    }
}

// ----------------------------------------------------------------------------------------------
// matmul: out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC); bias may be NULL.
// All three products go through gemm (kernels.c). The forward needs weight^T row-major, so it packs
// 512 output channels of weight^T at a time (a copy of C x 512, once per call).

enum { PACK_COLS = 512 };

void matmul_forward(real *out, const real *inp, const real *weight, const real *bias, int N, int C, int OC) {
    real *wt = xmalloc(sizeof(real) * (size_t)C * (OC < PACK_COLS ? OC : PACK_COLS));   // (C, nc) slice of weight^T
    for (int j0 = 0; j0 < OC; j0 += PACK_COLS) {
        int nc = OC - j0 < PACK_COLS ? OC - j0 : PACK_COLS;
        #pragma omp parallel for schedule(static)
        for (int k = 0; k < C; k++)
            for (int j = 0; j < nc; j++) wt[(size_t)k * nc + j] = weight[(size_t)(j0 + j) * C + k];
        gemm(N, nc, C, inp, C, 1, wt, nc, out + j0, OC, 0);
    }
    free(wt);
    if (bias) {
        #pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) out[(size_t)n * OC + o] += bias[o];
    }
}

// dinp (N,C) += dout @ weight; dweight (OC,C) += dout^T @ inp; dbias (OC) += sum_n dout.
// gemm splits the rows of its output between threads and sums over k in a fixed order, so no two
// threads write the same gradient and the result is bit-reproducible.
void matmul_backward(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC) {
    gemm(N, C, OC, dout, OC, 1, weight, C, dinp, C, 1);          // A = dout (N,OC), B = weight (OC,C)
    gemm(OC, C, N, dout, 1, OC, inp, C, dweight, C, 1);          // A = dout^T (OC,N), B = inp (N,C)
    if (dbias) {
        // dbias[o] += sum_n dout[n,o], n in order; threads take blocks of 64 columns, and each row
        // of a block is read as one contiguous run (not one column at a time, 4*OC bytes apart)
        enum { OB = 64 };
        #pragma omp parallel for schedule(static)
        for (int o0 = 0; o0 < OC; o0 += OB) {
            int no = OC - o0 < OB ? OC - o0 : OB;
            real db[OB] = { 0 };
            for (int n = 0; n < N; n++) {
                const real *d = dout + (size_t)n * OC + o0;
                #pragma omp simd
                for (int o = 0; o < no; o++) db[o] += d[o];
            }
            for (int o = 0; o < no; o++) dbias[o0 + o] += db[o];
        }
    }
}

// ----------------------------------------------------------------------------------------------
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))

#define GELU_SCALE 0.7978845608028654   // sqrt(2/pi)

// exp for floats in a form the compiler vectorises (libm's expf/tanhf are scalar calls without
// -ffast-math): 2^n * p(r), x = n ln2 + r, |r| <= ln2/2, p the degree-6 Taylor polynomial
// (relative error ~2.3e-7 against libm). n is rounded with the 1.5 * 2^23 trick and 2^n is built
// from its bits, so no float-to-int conversion (which keeps GCC from vectorising) is needed.
// x is clamped to [-87, 88] (no inf, no denormals) and below -87 the result is exactly 0 (so the
// -inf of a masked attention score gives a probability of exactly 0); a NaN stays NaN.
static inline float exp_vec(float x) {
    float xc = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float t = xc * 1.44269504088896341f + 12582912.0f;      // 1.5 * 2^23: round to an integer
    float n = t - 12582912.0f;
    float r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;   // ln2 split in two for exactness
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    uint32_t bits, scale;
    memcpy(&bits, &t, 4);                                  // the low bits of t hold n + 2^22 + 2^23
    scale = (bits - 0x4B400000u + 127u) << 23;
    float f;
    memcpy(&f, &scale, 4);
    return x < -87.0f ? 0.0f : p * f;
}
// exp_vec in the float build; the double build (gradient checks) keeps libm's exp
static inline real exp_fast(real x) { return sizeof(real) == sizeof(float) ? (real)exp_vec((float)x) : exp(x); }

// tanh(u) = 1 - 2/(exp(2u) + 1): in the float build through exp_vec (absolute error ~2e-7, which is
// what GELU's 0.5 x (1 + tanh) needs); the double build keeps libm's tanh for exact gradient checks.
static inline real tanh_fast(real u) {
    if (sizeof(real) != sizeof(float)) return tanh(u);
    return (real)(1.0f - 2.0f / (exp_vec(2.0f * (float)u) + 1.0f));
}

void gelu_forward(real *out, const real *inp, int n) {
    #pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) {
        real x = inp[i];
        out[i] = (real)0.5 * x * (1 + tanh_fast((real)GELU_SCALE * (x + (real)0.044715 * x * x * x)));
    }
}

void gelu_backward(real *dinp, const real *inp, const real *dout, int n) {
    #pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) {
        real x = inp[i];
        real u = (real)GELU_SCALE * (x + (real)0.044715 * x * x * x);
        real th = tanh_fast(u), sech2 = 1 - th * th;
        real grad = (real)0.5 * (1 + th) + (real)0.5 * x * sech2 * (real)GELU_SCALE * (1 + (real)3 * (real)0.044715 * x * x);
        dinp[i] += grad * dout[i];
    }
}

// ----------------------------------------------------------------------------------------------
// hook 2 over a qkv buffer (N,3C): q at [0,C), k at [C,2C), each NH heads of hs

void qk_hook(real *qkv, const AttnPos *ap, int N, int C, int NH, int dir) {
    const PosScheme *s = ap->scheme;
    if (!(s->hooks & PE_HOOK_QK)) return;
    int hs = C / NH;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            real *q = qkv + (size_t)n * 3 * C + h * hs, *k = q + C;
            if (dir == QK_FORWARD) { s->qk_forward(ap->tables, q, ap->pos[n], 0); s->qk_forward(ap->tables, k, ap->pos[n], 1); }
            else { s->qk_backward(ap->tables, q, ap->pos[n], 0); s->qk_backward(ap->tables, k, ap->pos[n], 1); }
        }
}

// ----------------------------------------------------------------------------------------------
// causal attention with positions as data, in O(T) memory per row.
// Query i of row b may attend key j when j <= i and doc[b,j] == doc[b,i] (j <= T-1 instead of
// j <= i when ap->bidirectional is set).
//   score(i,j) = q_i . k_j / sqrt(hs) + bias_h(pos_i, pos_j)      (hook 3, if the scheme has one)
//   p(i,j)     = exp(score(i,j) - lse_i), lse_i = log sum_j exp(score(i,j)) over allowed keys
//   out_i      = sum_j p(i,j) v_j
// The forward pass keeps only lse (one number per row); the backward pass recomputes the scores,
// tile by tile, from q, k and the bias with the same code (tile_scores, below), so no (T, T)
// matrix is ever stored.

// The mask, in one place (forward, backward, KV cache, attention_probs): query i may attend the
// keys j < attn_limit(ap, i, T) whose document is its own (key_visible; padding has doc -1, so a
// real token never sees it).
static inline int attn_limit(const AttnPos *ap, int i, int T) { return ap->bidirectional ? T : i + 1; }
static inline int key_visible(int kdoc, int qdoc) { return kdoc == qdoc; }

// The softmax of one row of scores a (n,) over the keys of the query's document (kdoc[j] == qdoc;
// the query's own key is always among them), in place: a becomes the probabilities (0 for other
// documents). Returns the row's log-sum-exp. The KV cache's softmax (the training kernel's is tiled,
// below).
static real softmax_row(real *a, const int *kdoc, int n, int qdoc, int qpos, int h) {
    real mx = -INFINITY;
    for (int j = 0; j < n; j++) if (key_visible(kdoc[j], qdoc) && a[j] > mx) mx = a[j];
    CHECK(isfinite(mx), "attention scores became %g (query position %d, head %d): the model has diverged; "
          "lower --lr", (double)mx, qpos, h);
    real sum = 0;
    for (int j = 0; j < n; j++) { a[j] = key_visible(kdoc[j], qdoc) ? exp(a[j] - mx) : 0; sum += a[j]; }
    real inv = 1 / sum;
    for (int j = 0; j < n; j++) a[j] *= inv;
    return mx + log(sum);
}

// One query row of one head, for the KV cache: output o (hs,) over keys 0..n-1 (key j's vector at
// K + j*stride, its value at V + j*stride); a (n,) is scratch.
static void attend_row(real *o, real *a, const real *q, const real *K, const real *V, size_t stride,
                       const int *kpos, const int *kdoc, int n, int qpos, int qdoc, int h, const AttnPos *ap,
                       const real *cache, int hs) {
    real scale = 1 / sqrt((real)hs);
    for (int j = 0; j < n; j++) {
        const real *k = K + (size_t)j * stride;
        real dot = 0;
        #pragma omp simd reduction(+:dot)
        for (int c = 0; c < hs; c++) dot += q[c] * k[c];
        a[j] = dot * scale;
    }
    if (ap->scheme->bias_forward) ap->scheme->bias_forward(ap->tables, ap->pe_params, cache, h, qpos, kpos, n, a);   // hook 3
    softmax_row(a, kdoc, n, qdoc, qpos, h);
    for (int c = 0; c < hs; c++) o[c] = 0;
    for (int j = 0; j < n; j++) {
        if (a[j] == 0) continue;
        const real *v = V + (size_t)j * stride;
        real pj = a[j];
        #pragma omp simd
        for (int c = 0; c < hs; c++) o[c] += pj * v[c];
    }
}

// ---- the fused kernel ----------------------------------------------------------------------------
// Work is split by (batch row b, head h): one thread owns a pair, and with it the pair's slices of
// out, lse, dq, dk and dv (no two threads write the same number). Inside a pair, queries go in
// blocks of QB = ATT_QB rows i0 .. i0+nb-1 and keys in tiles of up to KB = ATT_KB keys
// j0 .. j0+nk-1. A tile's scores are kept TRANSPOSED, S (nk, QB) with S[j*QB + r] the score of
// query i0+r against key j0+j, so that the softmax runs down the keys with the block's queries in
// vector lanes (no horizontal sums). Every product of a tile is a small matrix
// product on the thread's own cache-resident operands (gemm_tile, kernels.c):
//   forward    S    = K_t qT     (nk, QB) = (nk, hs) (hs, QB)   qT: the block's q, transposed, x 1/sqrt(hs)
//              O   += P V_t      (nb, hs) = (nb, nk) (nk, hs)   P read out of S through its strides
//   backward   dP^T = V_t dOT    (nk, QB) = (nk, hs) (hs, QB)   dOT: the block's dout, transposed
//              dV_t += P^T dO    (nk, hs) = (nk, nb) (nb, hs)
//              dK_t += dS^T Q    (nk, hs) = (nk, nb) (nb, hs)
//              dQ   += dS K_t    (nb, hs) = (nb, nk) (nk, hs)
// The forward's softmax is online (running max m and sum l per row, O rescaled when m grows);
// the backward recomputes P = exp(score - lse) tile by tile and uses D_i = dout_i . out_i for
// sum_j P(i,j) dP(i,j), so it needs no pass over a whole row either.

// One thread's scratch, ATT_SCRATCH(hs) reals from p (model.h): S and dS (KB, QB) tiles, qT and
// dOT (hs, QB), the forward's output block O (QB, hs), and one row of a tile for hook 3.
typedef struct { real *S, *dS, *xT, *yT, *O, *row; } AttScratch;
static AttScratch att_scratch(real *p, int hs) {
    AttScratch w;
    w.S = p; p += (size_t)ATT_KB * ATT_QB;
    w.dS = p; p += (size_t)ATT_KB * ATT_QB;
    w.xT = p; p += (size_t)hs * ATT_QB;
    w.yT = p; p += (size_t)hs * ATT_QB;
    w.O = p; p += (size_t)ATT_QB * hs;
    w.row = p;
    return w;
}

// xT (hs, QB) = scale x the block of nb rows x_r (row stride `stride`), transposed; zero past nb
static void block_transpose(real *xT, const real *x, size_t stride, int nb, int hs, real scale) {
    for (int c = 0; c < hs; c++)
        for (int r = 0; r < ATT_QB; r++) xT[c * ATT_QB + r] = r < nb ? x[(size_t)r * stride + c] * scale : 0;
}

// The width of the key tile at j0 for the block of queries i0 .. i0+nb-1, which see keys < nkeys:
// tiles of up to KB keys end at i0 (the last of them narrower when i0 is not a multiple of KB), then
// come the keys from i0 on: causal, one tile of nb keys (the block's own diagonal square, the only
// tile the causal limit cuts through); bidirectional, tiles of up to KB keys until T.
static int tile_width(int j0, int i0, int nkeys) {
    int end = j0 < i0 ? i0 : nkeys;
    return end - j0 < ATT_KB ? end - j0 : ATT_KB;
}

// How many keys of the tile j0 .. j0+nk-1 lie below query i's limit (hook 3 runs on those, forward
// and backward alike): 0 .. nk.
static int tile_row_keys(const AttnPos *ap, int i, int j0, int nk, int T) {
    int n = attn_limit(ap, i, T) - j0;
    return n < 0 ? 0 : n > nk ? nk : n;
}

// The scores of the block's queries (qT from block_transpose, scaled by 1/sqrt(hs)) against keys
// j0 .. j0+nk-1 of one batch row (row0: q of its token 0, head h, in (T,3C) qkv; pos_b, doc_b its
// position and document ids), transposed into S (nk, QB): q.k/sqrt(hs), plus hook 3 (cache: the
// call's bias cache or NULL), and -inf where the query may not attend the key (attn_limit,
// key_visible) and in the rows r >= nb. Returns 0, with S unfilled, when no query of the block may
// attend any key of the tile. The forward, the backward and attention_probs all score with this
// one function, so their scores are bit-identical.
static int tile_scores(real *S, real *row, const real *qT, const real *row0, const AttnPos *ap, const real *cache,
                       const int *pos_b, const int *doc_b, int i0, int nb, int j0, int nk, int T, int C, int hs, int h) {
    size_t C3 = (size_t)3 * C;
    // all visible: every key below the first query's limit, one document for all keys and queries
    int all = nb == ATT_QB && j0 + nk <= attn_limit(ap, i0, T);
    for (int j = j0; all && j < j0 + nk; j++) all = key_visible(doc_b[j], doc_b[i0]);
    for (int i = i0 + 1; all && i < i0 + nb; i++) all = doc_b[i] == doc_b[i0];
    if (!all) {      // the mask itself, 0 or -inf, onto which the products are then added
        int any = 0;
        for (int j = 0; j < nk; j++)
            for (int r = 0; r < ATT_QB; r++) {
                int i = i0 + r, vis = r < nb && j0 + j < attn_limit(ap, i, T) && key_visible(doc_b[j0 + j], doc_b[i]);
                S[(size_t)j * ATT_QB + r] = vis ? 0 : -INFINITY;
                any |= vis;
            }
        if (!any) return 0;
    }
    gemm_tile(nk, ATT_QB, hs, row0 + (size_t)j0 * C3 + C, C3, 1, qT, ATT_QB, S, ATT_QB, !all);   // S (+)= K_t qT
    if (ap->scheme->bias_forward)                                        // hook 3, one query row at a time
        for (int r = 0; r < nb; r++) {
            int n = tile_row_keys(ap, i0 + r, j0, nk, T);
            if (n == 0) continue;
            for (int j = 0; j < n; j++) row[j] = 0;
            ap->scheme->bias_forward(ap->tables, ap->pe_params, cache, h, pos_b[i0 + r], pos_b + j0, n, row);
            for (int j = 0; j < n; j++) S[(size_t)j * ATT_QB + r] += row[j];
        }
    return 1;
}

// Hook 3's per-call cache (PosScheme.bias_prepare) for the query positions pos (n,), filled once
// before the threads start: NULL when the scheme keeps none. *size receives its length in reals.
static real *bias_cache_new(const AttnPos *ap, const int *pos, size_t n, size_t *size) {
    const PosScheme *s = ap->scheme;
    *size = 0;
    if (!s->bias_prepare) return NULL;
    int D = 1;                               // it covers query positions 0 .. D-1
    for (size_t i = 0; i < n; i++) if (pos[i] >= D) D = pos[i] + 1;
    *size = s->bias_cache_size(ap->tables, D);
    real *cache = xmalloc(sizeof(real) * *size);
    s->bias_prepare(ap->tables, ap->pe_params, D, cache);
    return cache;
}

// S (nk, QB) = exp(S - shift[r]) down each column r (shift: QB reals; exp_fast, so a masked -inf
// gives exactly 0); col_sum (QB,) += the column sums, when not NULL
static void tile_exp(real *S, int nk, const real *shift, real *col_sum) {
    real sum[ATT_QB] __attribute__((aligned(64))) = { 0 };
    for (int j = 0; j < nk; j++) {
        real *p = S + (size_t)j * ATT_QB;
        #pragma omp simd
        for (int r = 0; r < ATT_QB; r++) { p[r] = exp_fast(p[r] - shift[r]); sum[r] += p[r]; }
    }
    if (col_sum) for (int r = 0; r < ATT_QB; r++) col_sum[r] += sum[r];
}

// out (B,T,C); lse (B,NH,T); qkv (B,T,3C) holds q, k, v (q and k already hooked);
// scratch (threads, ATT_SCRATCH(hs)). Memory: lse and the scratch, never (T, T).
void attention_forward(real *out, real *lse, const real *qkv, const AttnPos *ap, real *scratch,
                       int B, int T, int C, int NH) {
    int hs = C / NH;
    size_t C3 = (size_t)3 * C, ncache;
    real scale = 1 / sqrt((real)hs);
    real *cache = bias_cache_new(ap, ap->pos, (size_t)B * T, &ncache);
    #pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int *pos_b = ap->pos + (size_t)b * T, *doc_b = ap->doc + (size_t)b * T;
            const real *row0 = qkv + (size_t)b * T * C3 + h * hs;       // q of token 0, head h
            AttScratch w = att_scratch(scratch + (size_t)thread_id() * ATT_SCRATCH(hs), hs);
            for (int i0 = 0; i0 < T; i0 += ATT_QB) {
                int nb = T - i0 < ATT_QB ? T - i0 : ATT_QB, nkeys = attn_limit(ap, i0 + nb - 1, T);
                // per query row: running max m, sum l of exp(score - m), and the shift used for exp
                real m[ATT_QB] __attribute__((aligned(64))), l[ATT_QB] __attribute__((aligned(64)));
                real mt[ATT_QB] __attribute__((aligned(64))), shift[ATT_QB] __attribute__((aligned(64)));
                for (int r = 0; r < ATT_QB; r++) { m[r] = -INFINITY; l[r] = 0; }
                memset(w.O, 0, sizeof(real) * (size_t)nb * hs);
                block_transpose(w.xT, row0 + (size_t)i0 * C3, C3, nb, hs, scale);
                for (int j0 = 0, nk; j0 < nkeys; j0 += nk) {
                    nk = tile_width(j0, i0, nkeys);
                    if (!tile_scores(w.S, w.row, w.xT, row0, ap, cache, pos_b, doc_b, i0, nb, j0, nk, T, C, hs, h)) continue;
                    for (int r = 0; r < ATT_QB; r++) mt[r] = -INFINITY;
                    for (int j = 0; j < nk; j++) {
                        const real *s = w.S + (size_t)j * ATT_QB;
                        #pragma omp simd
                        for (int r = 0; r < ATT_QB; r++) mt[r] = s[r] > mt[r] ? s[r] : mt[r];
                    }
                    for (int r = 0; r < ATT_QB; r++) {
                        real mn = mt[r] > m[r] ? mt[r] : m[r];
                        if (mn != m[r]) {              // the max grew: rescale what was summed so far
                            real alpha = exp(m[r] - mn);    // 0 when m was -inf (nothing summed yet)
                            l[r] *= alpha;
                            if (r < nb) for (int c = 0; c < hs; c++) w.O[(size_t)r * hs + c] *= alpha;
                            m[r] = mn;
                        }
                        shift[r] = m[r] == -INFINITY ? 0 : m[r];   // a row that sees no key yet: exp(-inf) = 0
                    }
                    tile_exp(w.S, nk, shift, l);
                    gemm_tile(nb, hs, nk, w.S, 1, ATT_QB, row0 + (size_t)j0 * C3 + 2 * C, C3, w.O, hs, 1);   // O += P V_t
                }
                for (int r = 0; r < nb; r++) {
                    int i = i0 + r;
                    CHECK(isfinite(m[r]), "attention scores became %g (query position %d, head %d): the model has diverged; "
                          "lower --lr", (double)m[r], pos_b[i], h);
                    real inv = 1 / l[r], *o = out + ((size_t)b * T + i) * C + h * hs;
                    for (int c = 0; c < hs; c++) o[c] = w.O[(size_t)r * hs + c] * inv;
                    lse[((size_t)b * NH + h) * T + i] = m[r] + log(l[r]);
                }
            }
        }
    free(cache);
}

// dqkv (B,T,3C) +=; dout (B,T,C); qkv, out and lse as the forward left them; scratch as the
// forward's. Per block of query rows and tile of keys, after recomputing p(i,j) = exp(score - lse_i):
//   dP(i,j) = dout_i . v_j,   dv_j += sum_i p(i,j) dout_i,
//   dscore(i,j) = p(i,j) (dP(i,j) - D_i),  D_i = dout_i . out_i = sum_j p(i,j) dP(i,j)
//                                                     (softmax backward; a learned bias gets dscore)
//   dq_i += scale sum_j dscore(i,j) k_j,   dk_j += scale sum_i dscore(i,j) q_i
void attention_backward(real *dqkv, real *scratch, const real *dout, const real *qkv, const real *out,
                        const real *lse, const AttnPos *ap, int B, int T, int C, int NH) {
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    real scale = 1 / sqrt((real)hs);
    const PosScheme *s = ap->scheme;
    // A learned bias gets gradient from every (b,h): each thread accumulates into its own copy,
    // and the copies are added in thread order afterwards (no race, bit-reproducible). So does the
    // gradient of the bias cache's values, which bias_finish then carries to the parameters.
    int learned_bias = s->bias_backward && ap->pe_dparams;
    size_t np = learned_bias ? ap->pe_nparams : 0, ncache;
    CHECK(!learned_bias || np > 0, "internal: attention_backward needs pe_nparams for a learned bias");
    real *dp_threads = learned_bias ? xcalloc((size_t)max_threads() * np, sizeof(real)) : NULL;
    real *cache = bias_cache_new(ap, ap->pos, (size_t)B * T, &ncache);
    real *dcache_threads = learned_bias && cache && s->bias_finish ? xcalloc((size_t)max_threads() * ncache, sizeof(real)) : NULL;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int *pos_b = ap->pos + (size_t)b * T, *doc_b = ap->doc + (size_t)b * T;
            const real *row0 = qkv + (size_t)b * T * C3 + h * hs;
            real *grad0 = dqkv + (size_t)b * T * C3 + h * hs;
            AttScratch w = att_scratch(scratch + (size_t)thread_id() * ATT_SCRATCH(hs), hs);
            for (int i0 = 0; i0 < T; i0 += ATT_QB) {
                int nb = T - i0 < ATT_QB ? T - i0 : ATT_QB, nkeys = attn_limit(ap, i0 + nb - 1, T);
                const real *dout0 = dout + ((size_t)b * T + i0) * C + h * hs;      // dout of query i0, head h
                real L[ATT_QB] __attribute__((aligned(64))), D[ATT_QB] __attribute__((aligned(64)));
                for (int r = 0; r < ATT_QB; r++) {
                    L[r] = r < nb ? lse[((size_t)b * NH + h) * T + i0 + r] : 0;
                    real d = 0;
                    if (r < nb) {
                        const real *o = out + ((size_t)b * T + i0 + r) * C + h * hs, *g = dout0 + (size_t)r * C;
                        for (int c = 0; c < hs; c++) d += g[c] * o[c];
                    }
                    D[r] = d;
                }
                block_transpose(w.xT, row0 + (size_t)i0 * C3, C3, nb, hs, scale);
                block_transpose(w.yT, dout0, C, nb, hs, 1);
                for (int j0 = 0, nk; j0 < nkeys; j0 += nk) {
                    nk = tile_width(j0, i0, nkeys);
                    // the forward's scores again (same function), then P = exp(score - lse)
                    if (!tile_scores(w.S, w.row, w.xT, row0, ap, cache, pos_b, doc_b, i0, nb, j0, nk, T, C, hs, h)) continue;
                    tile_exp(w.S, nk, L, NULL);
                    gemm_tile(nk, ATT_QB, hs, row0 + (size_t)j0 * C3 + 2 * C, C3, 1, w.yT, ATT_QB, w.dS, ATT_QB, 0);  // dP^T = V_t dOT
                    for (int j = 0; j < nk; j++) {     // dscore = p (dP - D)
                        const real *p = w.S + (size_t)j * ATT_QB;
                        real *g = w.dS + (size_t)j * ATT_QB;
                        #pragma omp simd
                        for (int r = 0; r < ATT_QB; r++) g[r] = p[r] * (g[r] - D[r]);
                    }
                    if (learned_bias)                  // hook 3's backward, one query row at a time
                        for (int r = 0; r < nb; r++) {
                            int n = tile_row_keys(ap, i0 + r, j0, nk, T);
                            if (n == 0) continue;
                            for (int j = 0; j < n; j++) w.row[j] = w.dS[(size_t)j * ATT_QB + r];
                            s->bias_backward(ap->tables, ap->pe_params, cache, dp_threads + (size_t)thread_id() * np,
                                             dcache_threads ? dcache_threads + (size_t)thread_id() * ncache : NULL,
                                             h, pos_b[i0 + r], pos_b + j0, n, w.row);
                        }
                    for (int j = 0; j < nk * ATT_QB; j++) w.dS[j] *= scale;
                    real *dq = grad0 + (size_t)i0 * C3, *dk = grad0 + (size_t)j0 * C3 + C, *dv = dk + C;
                    gemm_tile(nk, hs, nb, w.S, ATT_QB, 1, dout0, C, dv, C3, 1);                       // dV_t += P^T dO
                    gemm_tile(nk, hs, nb, w.dS, ATT_QB, 1, row0 + (size_t)i0 * C3, C3, dk, C3, 1);    // dK_t += dS^T Q
                    gemm_tile(nb, hs, nk, w.dS, 1, ATT_QB, row0 + (size_t)j0 * C3 + C, C3, dq, C3, 1); // dQ += dS K_t
                }
            }
        }
    if (learned_bias) {
        for (int t = 0; t < max_threads(); t++)
            for (size_t k = 0; k < np; k++) ap->pe_dparams[k] += dp_threads[(size_t)t * np + k];
        free(dp_threads);
    }
    if (dcache_threads) {
        for (int t = 1; t < max_threads(); t++)
            for (size_t k = 0; k < ncache; k++) dcache_threads[k] += dcache_threads[(size_t)t * ncache + k];
        s->bias_finish(ap->tables, ap->pe_params, cache, dcache_threads, ap->pe_dparams);
        free(dcache_threads);
    }
    free(cache);
}

// ----------------------------------------------------------------------------------------------
// softmax + cross-entropy over the V real classes of each (Vp,) logits row

static void crossentropy_forward(real *probs, real *losses, const real *logits, const int *targets,
                                 int N, int V, int Vp) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *l = logits + (size_t)n * Vp;
        real *p = probs + (size_t)n * Vp;
        real mx = -INFINITY;
        for (int v = 0; v < V; v++) if (l[v] > mx) mx = l[v];
        real sum = 0;
        for (int v = 0; v < V; v++) { p[v] = exp(l[v] - mx); sum += p[v]; }
        real inv = 1 / sum;
        for (int v = 0; v < V; v++) p[v] *= inv;
        for (int v = V; v < Vp; v++) p[v] = 0;
        // -log softmax computed from the logits, not from a rounded probability
        if (targets) losses[n] = -(l[targets[n]] - mx - log(sum));
    }
}

// ----------------------------------------------------------------------------------------------
// the model

static uint64_t hash_name(const char *s, uint64_t seed) {
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ull; }
    return h;
}

static double normal(Rng *r) {
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static PosDims dims_of(const GPTConfig *c) {
    PosDims d = { c->n_layer, c->n_head, c->n_embd, c->n_embd / c->n_head, c->max_seq_len };
    return d;
}

int gpt_config_check(GPTConfig *c, char *msg, size_t cap) {
    if (c->vocab_size < 2 || c->vocab_size > (1 << 24)) { snprintf(msg, cap, "vocab size %d is out of range (2..16777216)", c->vocab_size); return 0; }
    c->padded_vocab = (c->vocab_size + 63) / 64 * 64;
    if (c->n_layer < 1 || c->n_layer > PE_MAX_LAYERS) { snprintf(msg, cap, "--layers must be in 1..%d (got %d)", PE_MAX_LAYERS, c->n_layer); return 0; }
    if (c->n_head < 1) { snprintf(msg, cap, "--heads must be >= 1 (got %d)", c->n_head); return 0; }
    if (c->n_embd < 1 || c->n_embd % c->n_head) { snprintf(msg, cap, "--dim %d must be a positive multiple of --heads %d", c->n_embd, c->n_head); return 0; }
    if (c->max_seq_len < 1) { snprintf(msg, cap, "the context length must be >= 1 (got %d)", c->max_seq_len); return 0; }
    posenc_resolve(&c->pe, c->max_seq_len);      // settings whose default is the model's context
    if (c->pe.n_layer != c->n_layer) { snprintf(msg, cap, "the positional schedule has %d layers but the model %d", c->pe.n_layer, c->n_layer); return 0; }
    PosDims d = dims_of(c);
    return posenc_validate(&c->pe, &d, msg, cap);
}

// Registers a tensor; returns its offset. Tensors are laid out in registration order.
static size_t add_tensor(GPT *m, int cap, const char *name, int rows, int cols, int transpose,
                         int decay, int init, double std) {
    CHECK(m->n_tensors < cap, "internal: too many tensors");
    TensorInfo *t = &m->tensors[m->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = m->num_params; t->rows = rows; t->cols = cols; t->export_rows = rows;
    t->transpose = transpose; t->decay = decay; t->init = init; t->std = std; t->scheme = -1;
    m->num_params += (size_t)rows * cols;
    return t->offset;
}

// The parameter layout: llm.c's order (wte, then each kind of per-layer tensor for all layers
// together, then the final LayerNorm), followed by the positional schemes' parameters.
// One row of this table per kind of tensor; both ParamTensors and the TensorInfo list come from it.
typedef struct {
    const char *name;      // HF GPT-2 name; %d is the layer for per-layer kinds
    size_t field;          // offsetof(ParamTensors, ...) of the pointer to the first instance
    int per_layer;         // 1: one instance per layer, stored contiguously (L, rows, cols)
    int rows_c, cols_c;    // shape in multiples of C: (rows_c*C, cols_c*C); rows_c = 0 means a vector (cols_c*C)
    int decay;             // AdamW weight decay applies
    int init;              // InitKind
    int residual_proj;     // GPT-2 scales the init of projections into the residual by 1/sqrt(2L)
} TensorKind;

#define PT(f) offsetof(ParamTensors, f)
static const TensorKind KINDS[] = {
    // wte's rows are the padded vocabulary, not a multiple of C: special-cased in layout()
    { "transformer.wte.weight", PT(wte), 0, 0, 1, 1, INIT_NORMAL, 0 },
    { "transformer.h.%d.ln_1.weight", PT(ln1w), 1, 0, 1, 0, INIT_ONE, 0 },
    { "transformer.h.%d.ln_1.bias", PT(ln1b), 1, 0, 1, 0, INIT_ZERO, 0 },
    { "transformer.h.%d.attn.c_attn.weight", PT(qkvw), 1, 3, 1, 1, INIT_NORMAL, 0 },
    { "transformer.h.%d.attn.c_attn.bias", PT(qkvb), 1, 0, 3, 0, INIT_ZERO, 0 },
    { "transformer.h.%d.attn.c_proj.weight", PT(attprojw), 1, 1, 1, 1, INIT_NORMAL, 1 },
    { "transformer.h.%d.attn.c_proj.bias", PT(attprojb), 1, 0, 1, 0, INIT_ZERO, 0 },
    { "transformer.h.%d.ln_2.weight", PT(ln2w), 1, 0, 1, 0, INIT_ONE, 0 },
    { "transformer.h.%d.ln_2.bias", PT(ln2b), 1, 0, 1, 0, INIT_ZERO, 0 },
    { "transformer.h.%d.mlp.c_fc.weight", PT(fcw), 1, 4, 1, 1, INIT_NORMAL, 0 },
    { "transformer.h.%d.mlp.c_fc.bias", PT(fcb), 1, 0, 4, 0, INIT_ZERO, 0 },
    { "transformer.h.%d.mlp.c_proj.weight", PT(fcprojw), 1, 1, 4, 1, INIT_NORMAL, 1 },
    { "transformer.h.%d.mlp.c_proj.bias", PT(fcprojb), 1, 0, 1, 0, INIT_ZERO, 0 },
    { "transformer.ln_f.weight", PT(lnfw), 0, 0, 1, 0, INIT_ONE, 0 },
    { "transformer.ln_f.bias", PT(lnfb), 0, 0, 1, 0, INIT_ZERO, 0 },
};
#undef PT
enum { N_KINDS = (int)(sizeof(KINDS) / sizeof(KINDS[0])) };

// Registers every model tensor; off[k] receives the offset of kind k's first instance.
static void layout(GPT *m, size_t off[N_KINDS]) {
    const GPTConfig *c = &m->cfg;
    int L = c->n_layer, C = c->n_embd;
    int cap = N_KINDS * L + 2 * PE_MAX_LAYERS + 8;
    m->tensors = xcalloc(cap, sizeof(TensorInfo));
    m->n_tensors = 0; m->num_params = 0;
    char name[96];
    double std = 0.02, proj_std = 0.02 / sqrt(2.0 * L);
    for (int k = 0; k < N_KINDS; k++) {
        const TensorKind *kd = &KINDS[k];
        int is_matrix = kd->rows_c > 0;
        int rows = k == 0 ? c->padded_vocab : is_matrix ? kd->rows_c * C : 1;
        int cols = kd->cols_c * C;
        // linear weights export as Conv1D (in, out); wte is an embedding table, not a Conv1D
        int transpose = is_matrix && k != 0;
        for (int l = 0; l < (kd->per_layer ? L : 1); l++) {
            snprintf(name, sizeof name, kd->name, l);
            size_t o = add_tensor(m, cap, name, rows, cols, transpose, kd->decay, kd->init,
                                  kd->residual_proj ? proj_std : std);
            if (l == 0) off[k] = o;
        }
    }
    m->tensors[0].export_rows = c->vocab_size;   // wte: the padding rows are not exported
}

// Positional parameters: the input scheme's block, then per layer (shared schemes: one block).
// Offsets are SIZE_MAX where a hook has no parameters.
static void layout_pe(GPT *m, size_t *input_off, size_t layer_off[PE_MAX_LAYERS]) {
    const GPTConfig *c = &m->cfg;
    PosDims d = dims_of(c);
    int cap = N_KINDS * c->n_layer + 2 * PE_MAX_LAYERS + 8, rows, cols;
    char name[96];
    const PosScheme *in = posenc_scheme(c->pe.input);
    *input_off = SIZE_MAX;
    if (in->param_shape) {
        in->param_shape(&c->pe, &d, &rows, &cols);
        snprintf(name, sizeof name, "%s", in->export_name ? in->export_name : "pe.input.weight");
        *input_off = add_tensor(m, cap, name, rows, cols, 0, 1, in->init ? INIT_SCHEME : INIT_NORMAL, in->init_std);
        m->tensors[m->n_tensors - 1].scheme = c->pe.input;
    }
    for (int l = 0; l < c->n_layer; l++) {
        const PosScheme *s = posenc_scheme(c->pe.layer[l]);
        layer_off[l] = SIZE_MAX;
        m->pe_layer_n[l] = 0;
        if (!s->param_shape) continue;
        s->param_shape(&c->pe, &d, &rows, &cols);
        m->pe_layer_n[l] = (size_t)rows * cols;
        if (s->shared) {
            for (int k = 0; k < l; k++)
                if (c->pe.layer[k] == c->pe.layer[l]) { layer_off[l] = layer_off[k]; break; }
            if (layer_off[l] != SIZE_MAX) continue;
            snprintf(name, sizeof name, "pe.%s.weight", s->name);
        } else {
            snprintf(name, sizeof name, "pe.h.%d.%s.weight", l, s->name);
        }
        layer_off[l] = add_tensor(m, cap, name, rows, cols, 0, 0, s->init ? INIT_SCHEME : INIT_NORMAL, s->init_std);
        m->tensors[m->n_tensors - 1].scheme = c->pe.layer[l];
    }
}

static void point_tensors(ParamTensors *p, real *base, const size_t off[N_KINDS], size_t input_off,
                          const size_t layer_off[PE_MAX_LAYERS], int L) {
    for (int k = 0; k < N_KINDS; k++) *(real **)((char *)p + KINDS[k].field) = base + off[k];
    p->pe_input = input_off == SIZE_MAX ? NULL : base + input_off;
    for (int l = 0; l < L; l++) p->pe_layer[l] = layer_off[l] == SIZE_MAX ? NULL : base + layer_off[l];
}

void gpt_build(GPT *m, const GPTConfig *cfg, uint64_t seed, int max_pos) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    char msg[512];
    CHECK(gpt_config_check(&m->cfg, msg, sizeof msg), "%s", msg);
    size_t off[N_KINDS];
    size_t pe_input_off, pe_layer_off[PE_MAX_LAYERS];
    layout(m, off);
    layout_pe(m, &pe_input_off, pe_layer_off);
    m->params = xcalloc_big(m->num_params, sizeof(real));
    m->grads = xcalloc_big(m->num_params, sizeof(real));
    point_tensors(&m->p, m->params, off, pe_input_off, pe_layer_off, cfg->n_layer);
    point_tensors(&m->g, m->grads, off, pe_input_off, pe_layer_off, cfg->n_layer);
    // Initialise each tensor from its own stream, seeded by (seed, name): adding a positional
    // table does not change the initial value of any other tensor, so schemes start equal.
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        real *p = m->params + t->offset;
        size_t n = (size_t)t->export_rows * t->cols;   // padded vocab rows stay zero
        Rng r;
        rng_seed(&r, hash_name(t->name, seed));
        if (t->init == INIT_SCHEME) { PosDims d = dims_of(cfg); posenc_scheme(t->scheme)->init(&m->cfg.pe, &d, p, &r); continue; }
        for (size_t k = 0; k < n; k++) p[k] = t->init == INIT_ONE ? 1 : t->init == INIT_NORMAL ? (real)(t->std * normal(&r)) : 0;
    }
    PosDims d = dims_of(cfg);
    posenc_tables_build(&m->pt, &m->cfg.pe, &d, max_pos > cfg->max_seq_len ? max_pos : cfg->max_seq_len);
}

void gpt_set_context(GPT *m, int context) {
    CHECK(posenc_position_limit(&m->cfg.pe, &m->pt, m->cfg.max_seq_len) == m->pt.max_pos || context <= m->cfg.max_seq_len,
          "internal: a learned position table cannot serve a context of %d", context);
    m->cfg.max_seq_len = context;
    int max_pos = m->pt.max_pos > context ? m->pt.max_pos : context;
    PosDims d = dims_of(&m->cfg);
    posenc_tables_free(&m->pt);
    posenc_tables_build(&m->pt, &m->cfg.pe, &d, max_pos);
}

void gpt_reserve_positions(GPT *m, int max_pos) {
    if (max_pos <= m->pt.max_pos) return;
    PosDims d = dims_of(&m->cfg);
    posenc_tables_free(&m->pt);
    posenc_tables_build(&m->pt, &m->cfg.pe, &d, max_pos);
}

static void free_acts(GPT *m) {
    real **a = (real **)&m->a;
    for (size_t i = 0; i < sizeof(Activations) / sizeof(real *); i++) free(a[i]);
    real **g = (real **)&m->ga;
    for (size_t i = 0; i < sizeof(GradActivations) / sizeof(real *); i++) free(g[i]);
    memset(&m->a, 0, sizeof m->a); memset(&m->ga, 0, sizeof m->ga);
}

void gpt_free(GPT *m) {
    free(m->params); free(m->grads); free(m->m); free(m->v); free(m->tensors);
    free_acts(m);
    posenc_tables_free(&m->pt);
    memset(m, 0, sizeof *m);
}

// Activations are sized for (act_B, act_T) and reused by any batch that fits in both. Forward-only
// (gpt_set_forward_only): one layer's slices, which every layer reuses, and no gradient buffers.
static void alloc_acts(GPT *m, int B, int T) {
    if (B <= m->act_B && T <= m->act_T && max_threads() <= m->act_threads && m->forward_only == m->act_forward_only) return;
    if (m->forward_only == m->act_forward_only) {   // grow, never shrink, while the mode stays
        if (B < m->act_B) B = m->act_B;
        if (T < m->act_T) T = m->act_T;
    }
    free_acts(m);
    size_t L = m->forward_only ? 1 : m->cfg.n_layer, C = m->cfg.n_embd, NH = m->cfg.n_head, Vp = m->cfg.padded_vocab;
    size_t N = (size_t)B * T;
    Activations *a = &m->a;
    a->encoded = xmalloc_big(sizeof(real) * N * C);
    a->ln1 = xmalloc_big(sizeof(real) * L * N * C);
    a->ln1_mean = xmalloc_big(sizeof(real) * L * N);
    a->ln1_rstd = xmalloc_big(sizeof(real) * L * N);
    a->qkv = xmalloc_big(sizeof(real) * L * N * 3 * C);
    a->atty = xmalloc_big(sizeof(real) * L * N * C);
    a->att_lse = xmalloc_big(sizeof(real) * L * B * NH * T);
    a->residual2 = xmalloc_big(sizeof(real) * L * N * C);
    a->ln2 = xmalloc_big(sizeof(real) * L * N * C);
    a->ln2_mean = xmalloc_big(sizeof(real) * L * N);
    a->ln2_rstd = xmalloc_big(sizeof(real) * L * N);
    a->fch = xmalloc_big(sizeof(real) * L * N * 4 * C);
    a->fch_gelu = xmalloc_big(sizeof(real) * L * N * 4 * C);
    a->residual3 = xmalloc_big(sizeof(real) * L * N * C);
    a->lnf = xmalloc_big(sizeof(real) * N * C);
    a->lnf_mean = xmalloc_big(sizeof(real) * N);
    a->lnf_rstd = xmalloc_big(sizeof(real) * N);
    a->logits = xmalloc_big(sizeof(real) * N * Vp);
    a->probs = xmalloc_big(sizeof(real) * N * Vp);
    a->losses = xmalloc_big(sizeof(real) * N);
    a->scratch = xmalloc_big(sizeof(real) * N * C);
    a->att_scratch = xmalloc_big(sizeof(real) * (size_t)max_threads() * ATT_SCRATCH(C / NH));
    m->act_B = B; m->act_T = T; m->act_threads = max_threads(); m->act_forward_only = m->forward_only;
    if (m->forward_only) return;
    GradActivations *g = &m->ga;
    g->dresidual = xmalloc_big(sizeof(real) * N * C);
    g->dln = xmalloc_big(sizeof(real) * N * C);
    g->dqkv = xmalloc_big(sizeof(real) * N * 3 * C);
    g->datty = xmalloc_big(sizeof(real) * N * C);
    g->dfch = xmalloc_big(sizeof(real) * N * 4 * C);
    g->dfch_gelu = xmalloc_big(sizeof(real) * N * 4 * C);
}

void gpt_set_forward_only(GPT *m, int on) { m->forward_only = on != 0; }

// The slices of layer l's activations (each buffer holds L layers back to back; forward-only, one
// layer, whose slices every layer overwrites in turn: a layer reads only its input residual, which
// it has consumed before it writes its own residual2 and residual3 over the slices).
typedef struct {
    real *ln1, *ln1_mean, *ln1_rstd;   // (N,C), (N), (N)
    real *qkv;                         // (N,3C)
    real *atty;                        // (N,C)
    real *att_lse;                     // (B,NH,T)
    real *residual2;                   // (N,C)
    real *ln2, *ln2_mean, *ln2_rstd;   // (N,C), (N), (N)
    real *fch, *fch_gelu;              // (N,4C)
    real *residual3;                   // (N,C)
} LayerActs;

static LayerActs layer_acts(const GPT *m, int l, int B, int T) {
    const Activations *a = &m->a;
    size_t N = (size_t)B * T, C = m->cfg.n_embd, NH = m->cfg.n_head;
    if (m->act_forward_only) l = 0;
    LayerActs la = {
        a->ln1 + l * N * C, a->ln1_mean + l * N, a->ln1_rstd + l * N,
        a->qkv + l * N * 3 * C, a->atty + l * N * C, a->att_lse + (size_t)l * B * NH * T,
        a->residual2 + l * N * C, a->ln2 + l * N * C, a->ln2_mean + l * N, a->ln2_rstd + l * N,
        a->fch + l * N * 4 * C, a->fch_gelu + l * N * 4 * C, a->residual3 + l * N * C,
    };
    return la;
}

static AttnPos attn_pos(const GPT *m, const Batch *b, int l, int grads) {
    AttnPos ap = { .pos = b->pos, .doc = b->doc, .scheme = posenc_scheme(m->cfg.pe.layer[l]), .tables = &m->pt,
                   .pe_params = m->p.pe_layer[l], .pe_dparams = grads ? m->g.pe_layer[l] : NULL,
                   .pe_nparams = m->pe_layer_n[l] };
    return ap;
}

static void residual_add(real *out, const real *a, const real *b, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

int gpt_position_limit(const GPT *m) { return posenc_position_limit(&m->cfg.pe, &m->pt, m->cfg.max_seq_len); }

static void check_positions(const GPT *m, const int *pos, size_t N) {
    int limit = gpt_position_limit(m);
    for (size_t n = 0; n < N; n++)
        CHECK(pos[n] >= 0 && pos[n] < limit, "position id %d at index %zu is outside the model's position "
              "tables (0..%d)%s", pos[n], n, limit - 1, limit < m->pt.max_pos ? ": its input table has one row per "
              "position of the context" : "");
}

double gpt_forward(GPT *m, const Batch *b) {
    const GPTConfig *c = &m->cfg;
    int B = b->B, T = b->T, L = c->n_layer, C = c->n_embd, NH = c->n_head, V = c->vocab_size, Vp = c->padded_vocab;
    size_t N = (size_t)B * T;
    check_positions(m, b->pos, N);
    for (size_t n = 0; n < N; n++) {
        CHECK(b->tokens[n] >= 0 && b->tokens[n] < V, "token id %d at batch index %zu is outside the "
              "vocabulary (0..%d); the data does not match this model's vocabulary", b->tokens[n], n, V - 1);
        CHECK(!b->targets || (b->targets[n] >= 0 && b->targets[n] < V), "target id %d at batch index "
              "%zu is outside the vocabulary (0..%d)", b->targets ? b->targets[n] : 0, n, V - 1);
    }
    alloc_acts(m, B, T);
    m->batch = b;
    Activations *a = &m->a;
    const ParamTensors *p = &m->p;

    encoder_forward(a->encoded, b->tokens, p->wte, N, C);
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_forward) in->input_forward(&m->pt, p->pe_input, a->encoded, b->pos, N);   // hook 1

    const real *residual = a->encoded;
    for (int l = 0; l < L; l++) {
        LayerActs la = layer_acts(m, l, B, T);
        real *ln1 = la.ln1, *qkv = la.qkv, *atty = la.atty, *lse = la.att_lse, *residual2 = la.residual2;
        real *ln2 = la.ln2, *fch = la.fch, *fch_gelu = la.fch_gelu, *residual3 = la.residual3;
        AttnPos ap = attn_pos(m, b, l, 0);

        layernorm_forward(ln1, la.ln1_mean, la.ln1_rstd, residual, p->ln1w + l * C, p->ln1b + l * C, N, C);
        TIMED(m, PROF_MATMUL, matmul_forward(qkv, ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, N, C, 3 * C));
        TIMED(m, PROF_ATTENTION, qk_hook(qkv, &ap, N, C, NH, QK_FORWARD));                                           // hook 2
        TIMED(m, PROF_ATTENTION, attention_forward(atty, lse, qkv, &ap, a->att_scratch, B, T, C, NH));              // hook 3 inside
        TIMED(m, PROF_MATMUL, matmul_forward(a->scratch, atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, N, C, C));
        residual_add(residual2, residual, a->scratch, N * C);
        layernorm_forward(ln2, la.ln2_mean, la.ln2_rstd, residual2, p->ln2w + l * C, p->ln2b + l * C, N, C);
        TIMED(m, PROF_MATMUL, matmul_forward(fch, ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, N, C, 4 * C));
        gelu_forward(fch_gelu, fch, N * 4 * C);
        TIMED(m, PROF_MATMUL, matmul_forward(a->scratch, fch_gelu, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, N, 4 * C, C));
        residual_add(residual3, residual2, a->scratch, N * C);
        residual = residual3;
    }
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, residual, p->lnfw, p->lnfb, N, C);
    TIMED(m, PROF_MATMUL, matmul_forward(a->logits, a->lnf, p->wte, NULL, N, C, Vp));     // LM head tied to wte
    crossentropy_forward(a->probs, a->losses, a->logits, b->targets, N, V, Vp);

    double sum = 0, wsum = 0;
    if (b->targets)
        for (size_t n = 0; n < N; n++) { sum += (double)b->weights[n] * a->losses[n]; wsum += b->weights[n]; }
    m->weight_sum = wsum;
    m->loss = wsum > 0 ? sum / wsum : 0;
    return m->loss;
}

// The attention probabilities of one layer, head and batch row of the last gpt_forward, recomputed
// with the forward's own scoring (tile_scores: same tiles, mask and hook 3), its exp and its
// log-sum-exp: out (T, T), row i the probabilities of query i (0 at keys it may not attend).
void attention_probs(const GPT *m, int layer, int b, int head, real *out) {
    CHECK(!m->act_forward_only, "internal: attention_probs needs every layer's activations; the last forward "
          "was forward-only (gpt_set_forward_only)");
    const Batch *bt = m->batch;
    const GPTConfig *c = &m->cfg;
    CHECK(bt, "internal: attention_probs needs a gpt_forward first (a cached forward keeps no batch)");
    CHECK(layer >= 0 && layer < c->n_layer && b >= 0 && b < bt->B && head >= 0 && head < c->n_head,
          "internal: attention_probs(layer %d, row %d, head %d) outside %d layers, %d rows, %d heads",
          layer, b, head, c->n_layer, bt->B, c->n_head);
    int B = bt->B, T = bt->T, C = c->n_embd, NH = c->n_head, hs = C / NH;
    LayerActs la = layer_acts(m, layer, B, T);
    AttnPos ap = attn_pos(m, bt, layer, 0);
    const int *pos_b = bt->pos + (size_t)b * T, *doc_b = bt->doc + (size_t)b * T;
    const real *row0 = la.qkv + (size_t)b * T * 3 * C + head * hs;
    const real *lse = la.att_lse + ((size_t)b * NH + head) * T;
    size_t ncache;
    real *cache = bias_cache_new(&ap, pos_b, (size_t)T, &ncache);
    real *scratch = xmalloc(sizeof(real) * ATT_SCRATCH(hs));
    AttScratch w = att_scratch(scratch, hs);
    memset(out, 0, sizeof(real) * (size_t)T * T);
    for (int i0 = 0; i0 < T; i0 += ATT_QB) {
        int nb = T - i0 < ATT_QB ? T - i0 : ATT_QB, nkeys = attn_limit(&ap, i0 + nb - 1, T);
        real L[ATT_QB] __attribute__((aligned(64)));
        for (int r = 0; r < ATT_QB; r++) L[r] = r < nb ? lse[i0 + r] : 0;
        block_transpose(w.xT, row0 + (size_t)i0 * 3 * C, (size_t)3 * C, nb, hs, 1 / sqrt((real)hs));
        for (int j0 = 0, nk; j0 < nkeys; j0 += nk) {
            nk = tile_width(j0, i0, nkeys);
            if (!tile_scores(w.S, w.row, w.xT, row0, &ap, cache, pos_b, doc_b, i0, nb, j0, nk, T, C, hs, head)) continue;
            tile_exp(w.S, nk, L, NULL);
            for (int j = 0; j < nk; j++)
                for (int r = 0; r < nb; r++) out[(size_t)(i0 + r) * T + j0 + j] = w.S[(size_t)j * ATT_QB + r];
        }
    }
    free(scratch);
    free(cache);
}

// ----------------------------------------------------------------------------------------------
// incremental decoding with a KV cache

void kv_cache_init(KVCache *c, const GPT *m, int cap) {
    memset(c, 0, sizeof *c);
    c->cap = cap; c->C = m->cfg.n_embd; c->L = m->cfg.n_layer;
    c->k = xmalloc(sizeof(real) * (size_t)c->L * cap * c->C);
    c->v = xmalloc(sizeof(real) * (size_t)c->L * cap * c->C);
    c->pos = xmalloc(sizeof(int) * cap);
    c->doc = xcalloc(cap, sizeof(int));
    c->threads = max_threads();
    c->att_row = xmalloc(sizeof(real) * (size_t)c->threads * cap);
}

void kv_cache_free(KVCache *c) {
    free(c->k); free(c->v); free(c->pos); free(c->doc); free(c->att_row);
    memset(c, 0, sizeof *c);
}

// The same layers as gpt_forward on a (1, T) batch, except that attention reads the keys and
// values of every earlier token from the cache: query i of the chunk sees cached keys 0..P+i.
void gpt_forward_cached(GPT *m, KVCache *kc, const int *tokens, const int *pos, int T) {
    const GPTConfig *c = &m->cfg;
    int L = c->n_layer, C = c->n_embd, NH = c->n_head, hs = C / NH, V = c->vocab_size, Vp = c->padded_vocab;
    int P = kc->len;
    CHECK(P + T <= kc->cap, "internal: the KV cache holds %d tokens; %d + %d do not fit", kc->cap, P, T);
    for (int t = 0; t < T; t++)
        CHECK(tokens[t] >= 0 && tokens[t] < V, "token id %d is outside the vocabulary (0..%d)", tokens[t], V - 1);
    check_positions(m, pos, (size_t)T);
    alloc_acts(m, 1, T);
    m->batch = NULL;                       // no backward through a cached forward
    if (max_threads() > kc->threads) {     // the thread count grew since kv_cache_init
        free(kc->att_row);
        kc->threads = max_threads();
        kc->att_row = xmalloc(sizeof(real) * (size_t)kc->threads * kc->cap);
    }
    Activations *a = &m->a;
    const ParamTensors *p = &m->p;
    for (int t = 0; t < T; t++) { kc->pos[P + t] = pos[t]; kc->doc[P + t] = 0; }
    int zero_doc[1] = { 0 };

    encoder_forward(a->encoded, tokens, p->wte, T, C);
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_forward) in->input_forward(&m->pt, p->pe_input, a->encoded, pos, T);
    const real *residual = a->encoded;
    for (int l = 0; l < L; l++) {
        LayerActs la = layer_acts(m, l, 1, T);
        AttnPos ap = { .pos = pos, .doc = zero_doc, .scheme = posenc_scheme(c->pe.layer[l]), .tables = &m->pt,
                       .pe_params = m->p.pe_layer[l] };
        layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, residual, p->ln1w + l * C, p->ln1b + l * C, T, C);
        matmul_forward(la.qkv, la.ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, T, C, 3 * C);
        qk_hook(la.qkv, &ap, T, C, NH, QK_FORWARD);
        real *Kl = kc->k + (size_t)l * kc->cap * C, *Vl = kc->v + (size_t)l * kc->cap * C;
        for (int t = 0; t < T; t++) {      // append this chunk's keys and values
            memcpy(Kl + (size_t)(P + t) * C, la.qkv + (size_t)t * 3 * C + C, sizeof(real) * C);
            memcpy(Vl + (size_t)(P + t) * C, la.qkv + (size_t)t * 3 * C + 2 * C, sizeof(real) * C);
        }
        size_t ncache;
        real *cache = bias_cache_new(&ap, pos, (size_t)T, &ncache);
        #pragma omp parallel for collapse(2) schedule(static)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                real *row = kc->att_row + (size_t)thread_id() * kc->cap;
                attend_row(la.atty + (size_t)t * C + h * hs, row, la.qkv + (size_t)t * 3 * C + h * hs,
                           Kl + h * hs, Vl + h * hs, C, kc->pos, kc->doc, P + t + 1, pos[t], 0, h, &ap, cache, hs);
            }
        free(cache);
        matmul_forward(a->scratch, la.atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, T, C, C);
        residual_add(la.residual2, residual, a->scratch, (size_t)T * C);
        layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, p->ln2w + l * C, p->ln2b + l * C, T, C);
        matmul_forward(la.fch, la.ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, T, C, 4 * C);
        gelu_forward(la.fch_gelu, la.fch, T * 4 * C);
        matmul_forward(a->scratch, la.fch_gelu, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, T, 4 * C, C);
        residual_add(la.residual3, la.residual2, a->scratch, (size_t)T * C);
        residual = la.residual3;
    }
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, residual, p->lnfw, p->lnfb, T, C);
    matmul_forward(a->logits, a->lnf, p->wte, NULL, T, C, Vp);
    kc->len = P + T;
}

void gpt_zero_grad(GPT *m) { memset(m->grads, 0, sizeof(real) * m->num_params); }

void gpt_backward(GPT *m, double grad_scale) {
    CHECK(!m->act_forward_only, "internal: gpt_backward after a forward-only pass (gpt_set_forward_only): "
          "the activations of the earlier layers are gone");
    const Batch *b = m->batch;
    CHECK(b && b->targets, "internal: gpt_backward needs a forward pass with targets first");
    const GPTConfig *c = &m->cfg;
    int B = b->B, T = b->T, L = c->n_layer, C = c->n_embd, NH = c->n_head, V = c->vocab_size, Vp = c->padded_vocab;
    size_t N = (size_t)B * T;
    Activations *a = &m->a;
    GradActivations *g = &m->ga;
    const ParamTensors *p = &m->p;
    ParamTensors *dp = &m->g;

    // dloss_n/dlogits = w_n * grad_scale * (probs - onehot(target)), written over probs: after a
    // backward the probabilities are gone (dump_step copies the logits before it calls backward)
    real *dlogits = a->probs;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        real *d = dlogits + n * Vp;
        real s = (real)(b->weights[n] * grad_scale);
        for (int v = 0; v < V; v++) d[v] *= s;
        d[b->targets[n]] -= s;
    }
    const real *residual_last = L ? a->residual3 + (size_t)(L - 1) * N * C : a->encoded;
    memset(g->dln, 0, sizeof(real) * N * C);
    TIMED(m, PROF_MATMUL, matmul_backward(g->dln, dp->wte, NULL, dlogits, a->lnf, p->wte, N, C, Vp));
    memset(g->dresidual, 0, sizeof(real) * N * C);
    layernorm_backward(g->dresidual, dp->lnfw, dp->lnfb, g->dln, residual_last, p->lnfw, a->lnf_mean, a->lnf_rstd, N, C);

    for (int l = L - 1; l >= 0; l--) {
        const real *residual = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * N * C;
        LayerActs la = layer_acts(m, l, B, T);
        AttnPos ap = attn_pos(m, b, l, 1);

        // residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))): dresidual reaches both terms.
        // g->dln is scratch for the gradient at a LayerNorm's output (ln_f's above, ln2's, then ln1's).
        memset(g->dfch_gelu, 0, sizeof(real) * N * 4 * C);
        TIMED(m, PROF_MATMUL, matmul_backward(g->dfch_gelu, dp->fcprojw + (size_t)l * 4 * C * C, dp->fcprojb + l * C, g->dresidual,
                        la.fch_gelu, p->fcprojw + (size_t)l * 4 * C * C, N, 4 * C, C));
        memset(g->dfch, 0, sizeof(real) * N * 4 * C);
        gelu_backward(g->dfch, la.fch, g->dfch_gelu, N * 4 * C);
        memset(g->dln, 0, sizeof(real) * N * C);
        TIMED(m, PROF_MATMUL, matmul_backward(g->dln, dp->fcw + (size_t)l * 4 * C * C, dp->fcb + l * 4 * C, g->dfch, la.ln2,
                        p->fcw + (size_t)l * 4 * C * C, N, C, 4 * C));
        layernorm_backward(g->dresidual, dp->ln2w + l * C, dp->ln2b + l * C, g->dln, la.residual2, p->ln2w + l * C,
                           la.ln2_mean, la.ln2_rstd, N, C);
        // residual2 = residual + attproj(attention(qkv(ln1(residual))))
        memset(g->datty, 0, sizeof(real) * N * C);
        TIMED(m, PROF_MATMUL, matmul_backward(g->datty, dp->attprojw + (size_t)l * C * C, dp->attprojb + l * C, g->dresidual, la.atty,
                        p->attprojw + (size_t)l * C * C, N, C, C));
        memset(g->dqkv, 0, sizeof(real) * N * 3 * C);
        TIMED(m, PROF_ATTENTION, attention_backward(g->dqkv, a->att_scratch, g->datty, la.qkv, la.atty, la.att_lse, &ap, B, T, C, NH));
        TIMED(m, PROF_ATTENTION, qk_hook(g->dqkv, &ap, N, C, NH, QK_BACKWARD));  // gradient w.r.t. the unrotated q and k
        memset(g->dln, 0, sizeof(real) * N * C);
        TIMED(m, PROF_MATMUL, matmul_backward(g->dln, dp->qkvw + (size_t)l * 3 * C * C, dp->qkvb + l * 3 * C, g->dqkv, la.ln1,
                        p->qkvw + (size_t)l * 3 * C * C, N, C, 3 * C));
        layernorm_backward(g->dresidual, dp->ln1w + l * C, dp->ln1b + l * C, g->dln, residual, p->ln1w + l * C,
                           la.ln1_mean, la.ln1_rstd, N, C);
    }
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_backward) in->input_backward(&m->pt, dp->pe_input, g->dresidual, b->pos, N);
    encoder_backward(dp->wte, g->dresidual, b->tokens, N, C);
}

// ----------------------------------------------------------------------------------------------
// optimiser

// Two passes over the buffers per step: the gradient's global norm, then AdamW with the clipping
// scale applied inside the update (the gradient buffer is read, never scaled in place). In each pass
// every thread takes one contiguous span of the parameter buffer (one parallel region), and inside
// it walks the runs of consecutive tensors that share a weight-decay setting, so the inner loop is
// a plain vectorised loop with no per-element tensor lookup.

// This thread's span [*lo, *hi) of n elements: contiguous, split in multiples of 16 (a cache line
// of floats), the same for every pass of a given thread count.
static void thread_span(size_t n, size_t *lo, size_t *hi) {
#ifdef _OPENMP
    size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
#else
    size_t nt = 1, t = 0;
#endif
    size_t per = (n + nt - 1) / nt;
    per = (per + 15) / 16 * 16;
    *lo = t * per < n ? t * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

double gpt_grad_norm(GPT *m) {
    double t0 = wall();
    int nt = max_threads();
    double *part = xcalloc((size_t)nt, sizeof(double)), ss = 0;
    const real *g = m->grads;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(m->num_params, &lo, &hi);
        double acc = 0;
        #pragma omp simd reduction(+:acc)
        for (size_t i = lo; i < hi; i++) acc += (double)g[i] * g[i];
        part[thread_id()] = acc;
    }
    for (int t = 0; t < nt; t++) ss += part[t];   // in thread order: the same bits for the same threads
    free(part);
    m->prof[PROF_OPTIMIZER] += wall() - t0;
    return sqrt(ss);
}

double gpt_clip_scale(double norm, double max_norm) {
    return max_norm > 0 && norm > max_norm ? max_norm / norm : 1;
}

// AdamW on n elements of one run of tensors (weight decay wd), on the gradient times gs
static void adamw_span(real *restrict w, real *restrict mm, real *restrict vv, const real *restrict grad, size_t n,
                       const AdamWConfig *o, real ibc1, real ibc2, real wd, real gs) {
    real lr = (real)o->lr, b1 = (real)o->beta1, b2 = (real)o->beta2, eps = (real)o->eps;
    #pragma omp simd
    for (size_t i = 0; i < n; i++) {
        real g = grad[i] * gs;
        real mi = b1 * mm[i] + (1 - b1) * g;
        real vi = b2 * vv[i] + (1 - b2) * g * g;
        mm[i] = mi; vv[i] = vi;
        w[i] -= lr * ((mi * ibc1) / (sqrt(vi * ibc2) + eps) + wd * w[i]);
    }
}

void gpt_adamw(GPT *m, const AdamWConfig *o, int t, double grad_scale) {
    double t0 = wall();
    if (!m->m) { m->m = xcalloc_big(m->num_params, sizeof(real)); m->v = xcalloc_big(m->num_params, sizeof(real)); }
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    real ibc1 = (real)(1 / bc1), ibc2 = (real)(1 / bc2), gs = (real)grad_scale;
    // runs of consecutive tensors with the same decay setting: run r is [begin[r], begin[r+1])
    size_t *begin = xmalloc(sizeof(size_t) * (size_t)(m->n_tensors + 1));
    int *decay = xmalloc(sizeof(int) * (size_t)(m->n_tensors + 1)), runs = 0;
    for (int k = 0; k < m->n_tensors; k++) {
        const TensorInfo *ti = &m->tensors[k];
        CHECK(ti->offset == (k ? m->tensors[k - 1].offset + (size_t)m->tensors[k - 1].rows * m->tensors[k - 1].cols : 0),
              "internal: the tensors do not tile the parameter buffer");
        if (runs == 0 || decay[runs - 1] != ti->decay) { begin[runs] = ti->offset; decay[runs++] = ti->decay; }
    }
    begin[runs] = m->num_params;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(m->num_params, &lo, &hi);
        for (int r = 0; r < runs; r++) {
            size_t a = begin[r] > lo ? begin[r] : lo, b = begin[r + 1] < hi ? begin[r + 1] : hi;
            if (a < b) adamw_span(m->params + a, m->m + a, m->v + a, m->grads + a, b - a, o, ibc1, ibc2,
                                  decay[r] ? (real)o->weight_decay : 0, gs);
        }
    }
    free(begin); free(decay);
    // a scheme may constrain its parameters (KERPLE keeps r1, r2 >= 0.01 as the paper's code does)
    for (int k = 0; k < m->n_tensors; k++) {
        const TensorInfo *ti = &m->tensors[k];
        const PosScheme *sc = ti->scheme >= 0 ? posenc_scheme(ti->scheme) : NULL;
        if (sc && sc->project) { PosDims d = dims_of(&m->cfg); sc->project(&m->cfg.pe, &d, m->params + ti->offset); }
    }
    m->prof[PROF_OPTIMIZER] += wall() - t0;
}

const TensorInfo *gpt_find_tensor(const GPT *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++) if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}
