// posenc_schemes.c: the positional schemes: their hooks, the tables they derive from a config
// (posenc_tables_build), and the table SCHEMES[] of them all. Adding a scheme = one entry in
// SCHEMES[] plus its test; the gradient and property tests loop over this table. Settings, the
// schedule and serialisation are in posenc.c.
#include "posenc.h"

#include <math.h>
#include <string.h>

// Every hook has the signature and shapes of its slot in PosScheme (posenc.h): hook 1 adds a row to
// x (N,C) for each of the N positions pos (N,) (backward: dp += the rows of dx); hook 2 turns one
// head vector x (hs,) in place; hook 3 adds the bias of one query (head h, position qpos) to its n
// keys' scores, kpos (n,) -> out (n,) (backward: dout (n,) -> dp, or dcache with a per-call cache).

// ----------------------------------------------------------------------------------------------
// learned absolute (GPT-2): a (max_seq_len, C) parameter table added at the input

static void learned_shape(const PosConfig *c, const PosDims *d, int *rows, int *cols) {
    (void)c; *rows = d->max_seq_len; *cols = d->n_embd;
}

static void check_pos_in_table(const PosTables *t, int pos) {
    // A learned table has no row for a position at or past max_seq_len: refuse, never wrap.
    CHECK(pos >= 0 && pos < t->d.max_seq_len,
          "position %d is outside the learned position table (max context %d); train with a "
          "larger --context, or use a scheme that extrapolates", pos, t->d.max_seq_len);
}

// x (N,C) += wpe[pos[n]]; wpe is (max_seq_len, C)
static void learned_input_forward(const PosTables *t, const real *wpe, real *x, const int *pos, int N) {
    int C = t->d.n_embd;
    for (int n = 0; n < N; n++) {
        check_pos_in_table(t, pos[n]);
        const real *row = wpe + (size_t)pos[n] * C;
        real *x_n = x + (size_t)n * C;
        for (int c = 0; c < C; c++) x_n[c] += row[c];
    }
}

// dwpe[pos[n]] += dx[n]; serial so that two tokens at one position never race
static void learned_input_backward(const PosTables *t, real *dwpe, const real *dx, const int *pos, int N) {
    int C = t->d.n_embd;
    for (int n = 0; n < N; n++) {
        real *row = dwpe + (size_t)pos[n] * C;
        const real *dx_n = dx + (size_t)n * C;
        for (int c = 0; c < C; c++) row[c] += dx_n[c];
    }
}

// ----------------------------------------------------------------------------------------------
// sinusoidal (Vaswani et al. 2017): PE[pos,2i] = sin(pos/10000^(2i/C)), PE[pos,2i+1] = cos(...);
// the NoPE paper's form (--sinusoidal-scale paper) puts them in halves: PE[pos,i] = sin(...),
// PE[pos,C/2+i] = cos(...) (its FixedAbsolutePositionalEmbedding: torch.cat((sin, cos), dim=-1))

static const char *sinusoidal_check(const PosConfig *c, const PosDims *d, char *msg, size_t cap) {
    (void)c;
    if (d->n_embd % 2) { snprintf(msg, cap, "sinusoidal positions need an even --dim (got %d)", d->n_embd); return msg; }
    return NULL;
}

// The table's entries are O(1), GPT-2's token embeddings N(0, 0.02): added as they are, position
// would outweigh the token ~50x at the start. The original Transformer (Vaswani et al. 2017, 3.4)
// and fairseq (embed_scale) multiply the embeddings by sqrt(d_model) first; --sinusoidal-scale none
// keeps them unscaled (the form of models stored before the setting existed). The NoPE paper's code
// adds the table unscaled to embeddings that start N(0, 1) (sinusoidal_token_std).
static double sinusoidal_embed_scale(const PosConfig *c, const PosDims *d) {
    return c->sinusoidal_scale == PE_SIN_SQRT ? sqrt((double)d->n_embd) : 1;
}

// The NoPE paper's APE sits in a T5 model whose token embeddings start N(0, 1) (nn.Embedding's
// default, and T5's own std of factor * 1.0 for `shared`), tied to the LM head
// (tie_word_embeddings); T5 then scales the final hidden state by d_model^-0.5 before the head
// (CustomDecoderOnlyT5.forward, after mesh-tensorflow), so the first logits are O(1), not O(sqrt(C)).
static double sinusoidal_token_std(const PosConfig *c, const PosDims *d) {
    (void)d;
    return c->sinusoidal_scale == PE_SIN_PAPER ? 1 : 0;
}
static double sinusoidal_head_scale(const PosConfig *c, const PosDims *d) {
    return c->sinusoidal_scale == PE_SIN_PAPER ? 1 / sqrt((double)d->n_embd) : 1;
}

static void sinusoidal_build(PosTables *t) {
    int C = t->d.n_embd, halves = t->cfg.sinusoidal_scale == PE_SIN_PAPER;
    t->sinusoid = xmalloc(sizeof(real) * (size_t)t->max_pos * C);
    for (int p = 0; p < t->max_pos; p++)
        for (int i = 0; 2 * i < C; i++) {
            double a = p / pow(10000.0, 2.0 * i / C);
            real *row = t->sinusoid + (size_t)p * C;
            if (halves) { row[i] = (real)sin(a); row[C / 2 + i] = (real)cos(a); continue; }   // C even: checked
            row[2 * i] = (real)sin(a);
            if (2 * i + 1 < C) row[2 * i + 1] = (real)cos(a);
        }
}

// i - j for a bias, clamped at 0: a masked key (another document, or j > i when bidirectional) may
// sit at a larger position than the query, and its bias must stay finite though it is never used.
static inline real distance(int qpos, int kpos) { return qpos > kpos ? (real)(qpos - kpos) : 0; }

static void table_pos_check(const PosTables *t, int pos) {
    CHECK(pos >= 0 && pos < t->max_pos,
          "position %d is outside the precomputed position tables (0..%d); this is a bug in the "
          "caller, which must build the tables for the longest sequence it runs", pos, t->max_pos - 1);
}

static void sinusoidal_input_forward(const PosTables *t, const real *p, real *x, const int *pos, int N) {
    (void)p;
    int C = t->d.n_embd;
    for (int n = 0; n < N; n++) {
        table_pos_check(t, pos[n]);
        const real *row = t->sinusoid + (size_t)pos[n] * C;
        real *x_n = x + (size_t)n * C;
        for (int c = 0; c < C; c++) x_n[c] += row[c];
    }
}

// ----------------------------------------------------------------------------------------------
// The RoPE family (rope, p-rope, xpos). Pair i of the first d_rot channels turns by pos*theta_i:
//   split-half  [c c s s]: pair i = (i, i + d_rot/2)      (HF Llama, GPT-NeoX)
//   interleaved [c s c s]: pair i = (2i, 2i + 1)          (paper, GPT-J, llama2.c)
// Channels d_rot .. hs-1 pass unchanged (partial RoPE). Backward = the transpose: the same factor
// (YaRN's and LongRoPE's attention factor, xpos's scale) with the angle negated; for plain RoPE,
// the rotation by -angle.

// longrope: both lists, d_rot/2 factors each, and an L0 whose log the attention factor divides by;
// lists without longrope would be ignored, so they are refused.
static const char *longrope_check(const PosConfig *c, int rot, char *msg, size_t cap) {
    const PosFactors *lists[2] = { &c->longrope_short, &c->longrope_long };
    const char *flags[2] = { "--longrope-short", "--longrope-long" };
    for (int k = 0; k < 2; k++) {
        if (c->rope_scaling != ROPE_SCALING_LONGROPE) {
            if (lists[k]->n == 0) continue;
            snprintf(msg, cap, "%s acts only with --rope-scaling longrope; drop it, add --rope-scaling longrope, or "
                     "clear a loaded model's list with %s ''", flags[k], flags[k]);
            return msg;
        }
        if (lists[k]->n != rot / 2) {
            snprintf(msg, cap, "--rope-scaling longrope needs %s with d_rot/2 = %d factors, one per rotated pair "
                     "(d_rot = %d), but it has %d", flags[k], rot / 2, rot, lists[k]->n);
            return msg;
        }
    }
    if (c->rope_scaling == ROPE_SCALING_LONGROPE && c->longrope_attention == 0 && c->rope_factor > 1 &&
        c->rope_original_context < 2) {
        snprintf(msg, cap, "longrope's attention factor divides by ln(L0): --rope-original-context must be >= 2 "
                 "(or give --longrope-attention)");
        return msg;
    }
    return NULL;
}

static const char *rope_check(const PosConfig *c, const PosDims *d, char *msg, size_t cap) {
    int rot = posenc_rope_width(c, d->head_size);
    if (rot < 2 || rot % 2) {
        snprintf(msg, cap, "rope rotates int(head_size * --rope-fraction) = int(%d * %g) = %d channels, "
                 "which must be even and at least 2; change --rope-fraction or --dim/--heads",
                 d->head_size, c->rope_fraction, rot);
        return msg;
    }
    if (c->rope_scaling == ROPE_SCALING_LLAMA3 && !(c->llama3_low_freq_factor < c->llama3_high_freq_factor)) {
        snprintf(msg, cap, "--rope-scaling llama3 needs --llama3-low-freq-factor < --llama3-high-freq-factor (got %g, %g)",
                 c->llama3_low_freq_factor, c->llama3_high_freq_factor);
        return msg;
    }
    if (longrope_check(c, rot, msg, cap)) return msg;
    if (c->rope_scaling == ROPE_SCALING_DYNAMIC && rot <= 2) {
        snprintf(msg, cap, "--rope-scaling dynamic needs more than 2 rotated channels (its exponent is d/(d-2))");
        return msg;
    }
    return NULL;
}

// x (hs) of one head: pair i -> scale_i * R(pos*theta_i * sign) pair i. scale is NULL (all 1) except
// for xpos. Forward is sign +1; backward is sign -1 with the same scale (S and R commute per pair,
// so (S R)^T = S R^T).
static inline void rope_apply(const PosTables *t, const RopeTable *rt, real *x, int pos, real sign, const real *scale) {
    table_pos_check(t, pos);
    int half = rt->rot / 2;
    const real *cs = rt->cos + (size_t)pos * half, *sn = rt->sin + (size_t)pos * half;
    int stride = t->cfg.rope_interleaved ? 1 : half;   // distance between the two members of a pair
    int step = t->cfg.rope_interleaved ? 2 : 1;        // distance between consecutive pairs
    for (int i = 0; i < half; i++) {
        real *a = x + i * step, *b = a + stride;
        real c = cs[i], s = sign * sn[i], f = scale ? scale[(size_t)pos * half + i] : 1;
        real a0 = *a, b0 = *b;
        *a = f * (a0 * c - b0 * s);
        *b = f * (a0 * s + b0 * c);
    }
}

// kept: pairs that rotate (the highest frequencies), -1 for all; xpos: also the per-pair scales.
static void rope_table_build(PosTables *t, RopeTable *rt, int kept, int xpos) {
    int rot = posenc_rope_width(&t->cfg, t->d.head_size), half = rot / 2;
    size_t n = (size_t)t->max_pos * half;
    double *freq = xmalloc(sizeof(double) * half), factor;
    posenc_rope_freqs(&t->cfg, rot, t->d.max_seq_len, freq, &factor);
    for (int i = kept < 0 ? half : kept; i < half; i++) freq[i] = 0;   // p-rope: lowest ones stop
    rt->rot = rot;
    rt->cos = xmalloc(sizeof(real) * n);
    rt->sin = xmalloc(sizeof(real) * n);
    for (int p = 0; p < t->max_pos; p++)
        for (int i = 0; i < half; i++) {
            double a = (double)p * freq[i];     // angle in double; float loses positions ~1e6
            rt->cos[(size_t)p * half + i] = (real)(factor * cos(a));
            rt->sin[(size_t)p * half + i] = (real)(factor * sin(a));
        }
    if (xpos) {
        // zeta_i = (2i + 0.4 d)/(1.4 d); q scales by zeta^(p/gamma), k by zeta^(-p/gamma)
        rt->q_scale = xmalloc(sizeof(real) * n);
        rt->k_scale = xmalloc(sizeof(real) * n);
        double gamma = t->cfg.xpos_scale_base, zeta0 = 0.4 / 1.4;
        double big = pow(zeta0, -(double)(t->max_pos - 1) / gamma);
        CHECK(big < (sizeof(real) == 4 ? 1e37 : 1e300), "xpos: the key scale zeta^(-p/gamma) reaches %.3g at "
              "position %d and overflows %s; use a shorter --context (or train with a larger --xpos-scale-base)",
              big, t->max_pos - 1, sizeof(real) == 4 ? "float" : "double");
        for (int p = 0; p < t->max_pos; p++)
            for (int i = 0; i < half; i++) {
                double zeta = (2.0 * i + 0.4 * rot) / (1.4 * rot);
                rt->q_scale[(size_t)p * half + i] = (real)pow(zeta, p / gamma);
                rt->k_scale[(size_t)p * half + i] = (real)pow(zeta, -p / gamma);
            }
    }
    free(freq);
}

static void rope_build(PosTables *t) { rope_table_build(t, &t->rope, -1, 0); }
static void rope_qk_forward(const PosTables *t, real *x, int pos, int is_key) { (void)is_key; rope_apply(t, &t->rope, x, pos, 1, NULL); }
static void rope_qk_backward(const PosTables *t, real *dx, int pos, int is_key) { (void)is_key; rope_apply(t, &t->rope, dx, pos, -1, NULL); }

// p-rope (Barbero et al. 2024): only the floor(p * d_rot/2) highest frequencies rotate
static int prope_kept(const PosConfig *c, int rot) { return (int)floor(c->p_rope_fraction * (rot / 2) + 1e-9); }
static const char *prope_check(const PosConfig *c, const PosDims *d, char *msg, size_t cap) {
    if (rope_check(c, d, msg, cap)) return msg;
    int rot = posenc_rope_width(c, d->head_size);
    if (prope_kept(c, rot) < 1) {
        snprintf(msg, cap, "p-rope keeps floor(--p-rope-fraction %g x %d pairs) = 0 frequencies; raise "
                 "--p-rope-fraction (or use nope)", c->p_rope_fraction, rot / 2);
        return msg;
    }
    return NULL;
}
static void prope_build(PosTables *t) {
    rope_table_build(t, &t->prope, prope_kept(&t->cfg, posenc_rope_width(&t->cfg, t->d.head_size)), 0);
}
static void prope_qk_forward(const PosTables *t, real *x, int pos, int is_key) { (void)is_key; rope_apply(t, &t->prope, x, pos, 1, NULL); }
static void prope_qk_backward(const PosTables *t, real *dx, int pos, int is_key) { (void)is_key; rope_apply(t, &t->prope, dx, pos, -1, NULL); }

// xpos (Sun et al. 2022): rope whose pairs also scale, queries by zeta^(m/gamma), keys by
// zeta^(-n/gamma), so the score carries zeta^((m-n)/gamma): a decay with distance.
static void xpos_build(PosTables *t) { rope_table_build(t, &t->xpos, -1, 1); }
static void xpos_qk_forward(const PosTables *t, real *x, int pos, int is_key) {
    rope_apply(t, &t->xpos, x, pos, 1, is_key ? t->xpos.k_scale : t->xpos.q_scale);
}
static void xpos_qk_backward(const PosTables *t, real *dx, int pos, int is_key) {
    rope_apply(t, &t->xpos, dx, pos, -1, is_key ? t->xpos.k_scale : t->xpos.q_scale);
}

// ----------------------------------------------------------------------------------------------
// ALiBi (Press et al. 2021): score(i, j) += -m_h * (pos_i - pos_j)

static void alibi_build(PosTables *t) {
    t->alibi_slope = xmalloc(sizeof(double) * t->d.n_head);
    posenc_alibi_slopes(t->d.n_head, t->alibi_slope);
}

static void alibi_bias_forward(const PosTables *t, const real *p, const real *cache, int h, int qpos, const int *kpos,
                               int n, real *out) {
    (void)p; (void)cache;
    real m = (real)t->alibi_slope[h];
    for (int j = 0; j < n; j++) out[j] -= m * distance(qpos, kpos[j]);
}

// ----------------------------------------------------------------------------------------------
// T5 relative bias (Raffel et al. 2020), decoder bucketing: one (num_buckets, NH) table shared by
// every t5 layer; score(i, j) += table[bucket(i - j), h].

static const char *t5_check(const PosConfig *c, const PosDims *d, char *msg, size_t cap) {
    (void)d;
    if (c->t5_num_buckets < 2 || c->t5_max_distance <= c->t5_num_buckets / 2) {
        snprintf(msg, cap, "t5 needs --t5-num-buckets >= 2 and --t5-max-distance > num_buckets/2 (got %d, %d)",
                 c->t5_num_buckets, c->t5_max_distance);
        return msg;
    }
    return NULL;
}
static void t5_shape(const PosConfig *c, const PosDims *d, int *rows, int *cols) { *rows = c->t5_num_buckets; *cols = d->n_head; }
static void t5_build(PosTables *t) {
    t->t5_bucket = xmalloc(sizeof(int) * t->max_pos);
    for (int n = 0; n < t->max_pos; n++) t->t5_bucket[n] = posenc_t5_bucket(n, t->cfg.t5_num_buckets, t->cfg.t5_max_distance);
}
static void t5_bias_forward(const PosTables *t, const real *table, const real *cache, int h, int qpos, const int *kpos,
                            int n, real *out) {
    (void)cache;
    int NH = t->d.n_head;
    for (int j = 0; j < n; j++) {
        int dist = qpos - kpos[j];
        table_pos_check(t, dist < 0 ? 0 : dist);
        out[j] += table[(size_t)t->t5_bucket[dist < 0 ? 0 : dist] * NH + h];
    }
}
static void t5_bias_backward(const PosTables *t, const real *table, const real *cache, real *dtable, real *dcache, int h,
                             int qpos, const int *kpos, int n, const real *dout) {
    (void)table; (void)cache; (void)dcache;
    int NH = t->d.n_head;
    for (int j = 0; j < n; j++) {
        int dist = qpos - kpos[j];
        dtable[(size_t)t->t5_bucket[dist < 0 ? 0 : dist] * NH + h] += dout[j];
    }
}

// ----------------------------------------------------------------------------------------------
// KERPLE, log variant (Chi et al. 2022): score(i, j) += -r1_h log(1 + r2_h (i - j)), r1, r2 > 0.
// Per layer, (2, NH): row 0 r1, row 1 r2. As in the paper's code, r1 and r2 are kept >= 0.01 by
// clamping the parameters themselves (kerple_project runs after every optimiser step), so the
// bias uses them as they are and their gradient is never cut off.
// A key of another document (masked) may sit at a larger position than the query: distances are
// clamped at 0 so that its bias, which the softmax ignores, stays finite.

#define KERPLE_EPS 0.01
static void kerple_shape(const PosConfig *c, const PosDims *d, int *rows, int *cols) { (void)c; *rows = 2; *cols = d->n_head; }
static void kerple_project(const PosConfig *c, const PosDims *d, real *p) {
    (void)c;
    for (int k = 0; k < 2 * d->n_head; k++) if (p[k] < (real)KERPLE_EPS) p[k] = (real)KERPLE_EPS;
}
static void kerple_init(const PosConfig *c, const PosDims *d, real *p, Rng *rng) {   // the paper's code: U(0,2), U(0,1)
    for (int h = 0; h < d->n_head; h++) p[h] = (real)(2 * rng_uniform(rng));
    for (int h = 0; h < d->n_head; h++) p[d->n_head + h] = (real)rng_uniform(rng);
    kerple_project(c, d, p);
}
// A bias cache (bias_prepare) starts with D, the query positions it covers, as an int in its first
// real; the rest is the scheme's.
static void cache_set_D(real *cache, int D) { memcpy(cache, &D, sizeof D); }
static int cache_D(const real *cache, int qpos) {
    int D;
    memcpy(&D, cache, sizeof D);
    CHECK(qpos >= 0 && qpos < D, "internal: a bias cache covers query positions 0..%d, not %d", D - 1, qpos);
    return D;
}

// Cache: D, then log(1 + r2_h d) for each head h and distance d < D, so neither direction takes a
// log per key. The bias is -r1 * that log with or without the cache (the same expression).
static size_t kerple_cache_size(const PosTables *t, int D) { return 1 + (size_t)t->d.n_head * D; }
static void kerple_prepare(const PosTables *t, const real *p, int D, real *cache) {
    int NH = t->d.n_head;
    cache_set_D(cache, D);
    for (int h = 0; h < NH; h++)
        for (int d = 0; d < D; d++) cache[1 + (size_t)h * D + d] = (real)log(1 + p[NH + h] * (real)d);
}
static void kerple_bias_forward(const PosTables *t, const real *p, const real *cache, int h, int qpos, const int *kpos,
                                int n, real *out) {
    int NH = t->d.n_head;
    real r1 = p[h], r2 = p[NH + h];
    if (cache) {
        const real *lg = cache + 1 + (size_t)h * cache_D(cache, qpos);
        for (int j = 0; j < n; j++) out[j] -= r1 * lg[qpos > kpos[j] ? qpos - kpos[j] : 0];
        return;
    }
    for (int j = 0; j < n; j++) out[j] -= r1 * (real)log(1 + r2 * distance(qpos, kpos[j]));
}
// d/dr1 = -log(1 + r2 d), d/dr2 = -r1 d / (1 + r2 d)
static void kerple_bias_backward(const PosTables *t, const real *p, const real *cache, real *dp, real *dcache, int h,
                                 int qpos, const int *kpos, int n, const real *dout) {
    int NH = t->d.n_head;
    if (cache && dcache) {      // the gradient of the cached logs' bias, per distance (kerple_finish)
        real *g = dcache + 1 + (size_t)h * cache_D(cache, qpos);
        for (int j = 0; j < n; j++) g[qpos > kpos[j] ? qpos - kpos[j] : 0] += dout[j];
        return;
    }
    real r1 = p[h], r2 = p[NH + h], g1 = 0, g2 = 0;
    for (int j = 0; j < n; j++) {
        if (dout[j] == 0) continue;
        real d = distance(qpos, kpos[j]);
        g1 -= dout[j] * log(1 + r2 * d);
        g2 -= dout[j] * r1 * d / (1 + r2 * d);
    }
    dp[h] += g1;
    dp[NH + h] += g2;
}
static void kerple_finish(const PosTables *t, const real *p, const real *cache, const real *dcache, real *dp) {
    int NH = t->d.n_head, D = cache_D(cache, 0);
    for (int h = 0; h < NH; h++) {
        const real *lg = cache + 1 + (size_t)h * D, *g = dcache + 1 + (size_t)h * D;
        real r1 = p[h], r2 = p[NH + h], g1 = 0, g2 = 0;
        for (int d = 0; d < D; d++) { g1 -= g[d] * lg[d]; g2 -= g[d] * r1 * (real)d / (1 + r2 * (real)d); }
        dp[h] += g1;
        dp[NH + h] += g2;
    }
}

// ----------------------------------------------------------------------------------------------
// FIRE (Li et al. 2023): score(i, j) += f(psi(i - j) / psi(max(L, i)))_h, psi(x) = log(|c| x + 1),
// f an MLP 1 -> W -> NH with ReLU, per layer; c and the threshold L (the paper's letter, `thresh` in
// the code) are learned too. L is learned
// through lambda = log L, so that Adam moves it at a rate that does not depend on its size (the
// paper learns a multiplier of an initial L for the same reason).
// Parameters (flat): [w1 (W), b1 (W), w2 (NH, W), b2 (NH), c, lambda].
// Speed: for a query before L the bias depends on the distance alone, so the model's per-call cache
// (bias_prepare) holds it for every distance and head: the attention's inner loop reads a table,
// and its backward adds dscore into a table's gradient that fire_finish takes through the MLP once
// per distance. Queries at or past L (evaluation beyond L, or L learned below the context) run the
// MLP per key, vectorised across keys, on psi(d) from the cache's table (no log per key).

enum { FIRE_W = 32, FIRE_CHUNK = 64 };
#define FIRE_EPS 1e-6
static void fire_shape(const PosConfig *c, const PosDims *d, int *rows, int *cols) {
    (void)c; *rows = 1; *cols = 2 * FIRE_W + d->n_head * FIRE_W + d->n_head + 2;
}
static void fire_init(const PosConfig *c, const PosDims *d, real *p, Rng *rng) {
    (void)c;
    int NH = d->n_head;
    real *w1 = p, *b1 = w1 + FIRE_W, *w2 = b1 + FIRE_W, *b2 = w2 + NH * FIRE_W, *cl = b2 + NH;
    for (int w = 0; w < FIRE_W; w++) { w1[w] = (real)(2 * rng_uniform(rng) - 1); b1[w] = (real)(0.2 * rng_uniform(rng) - 0.1); }
    for (int k = 0; k < NH * FIRE_W; k++) w2[k] = (real)(0.2 * (2 * rng_uniform(rng) - 1) / sqrt((double)FIRE_W));
    for (int h = 0; h < NH; h++) b2[h] = 0;
    cl[0] = (real)0.1;                       // c
    cl[1] = (real)log((double)d->max_seq_len);   // lambda: L starts at the training context
}

// One layer's parameters by name; c = |c_raw|, thresh = L = exp(lambda) (FIRE's threshold L, named
// thresh in code: L is the layer count everywhere else).
typedef struct { const real *w1, *b1, *w2, *b2; real craw, c, thresh; int NH; } FireParams;
static FireParams fire_params(const PosTables *t, const real *p) {
    int NH = t->d.n_head;
    FireParams f = { p, p + FIRE_W, p + 2 * FIRE_W, p + 2 * FIRE_W + NH * FIRE_W, 0, 0, 0, NH };
    f.craw = f.b2[NH]; f.c = (real)fabs(f.craw); f.thresh = (real)exp(f.b2[NH + 1]);
    return f;
}
// psi(x) = log(c x + 1), rounded to real once, so the cached table and the direct path agree
static inline real fire_psi(real c, real x) { return (real)log(c * x + 1); }
static inline int fire_dist(int qpos, int kpos) { return qpos > kpos ? qpos - kpos : 0; }   // as distance()

// y[k] = f_h(u[k]) for k < n: b2_h, then + w2_hw relu(w1_w u + b1_w) for w = 0, 1, ... in this
// order, vectorised across k. The cached table and the direct path both evaluate f here.
static void fire_mlp(const FireParams *f, int h, const real *u, int n, real *y) {
    const real *w2 = f->w2 + (size_t)h * FIRE_W;
    for (int k = 0; k < n; k++) y[k] = f->b2[h];
    for (int w = 0; w < FIRE_W; w++) {
        real a = f->w1[w], b = f->b1[w], o = w2[w];
        #pragma omp simd
        for (int k = 0; k < n; k++) { real hid = a * u[k] + b; y[k] += o * (hid > 0 ? hid : 0); }
    }
}

// Backward of sum_k g[k] b_h for n keys at distances x[k] with A[k] = psi(x[k]), u = A / denom,
// denom = psi(M) + eps, M = max(L, query position); lam: 1 when M = L (denom then moves with
// lambda). Accumulates into dp (the layout of p).
static void fire_backward_keys(const FireParams *f, real *dp, int h, const real *x, const real *A, const real *g,
                               int n, real M, int lam) {
    int NH = f->NH;
    real *dw1 = dp, *db1 = dp + FIRE_W, *dw2 = dp + 2 * FIRE_W + (size_t)h * FIRE_W, *db2 = dp + 2 * FIRE_W + (size_t)NH * FIRE_W;
    const real *w2 = f->w2 + (size_t)h * FIRE_W;
    real c = f->c, denom = fire_psi(c, M) + (real)FIRE_EPS, sc = f->craw >= 0 ? 1 : -1;
    real u[FIRE_CHUNK], du[FIRE_CHUNK], gs = 0;
    for (int k = 0; k < n; k++) { u[k] = A[k] / denom; du[k] = 0; gs += g[k]; }
    db2[h] += gs;
    for (int w = 0; w < FIRE_W; w++) {      // the MLP; du[k] = g[k] f_h'(u[k])
        real a = f->w1[w], b = f->b1[w], o = w2[w], s2 = 0, s1 = 0, s0 = 0;
        #pragma omp simd reduction(+:s2, s1, s0)
        for (int k = 0; k < n; k++) {
            real hid = a * u[k] + b, on = hid > 0 ? 1 : 0, dh = g[k] * o * on;   // ReLU and its derivative
            s2 += g[k] * hid * on; s1 += dh * u[k]; s0 += dh; du[k] += dh * a;
        }
        dw2[w] += s2; dw1[w] += s1; db1[w] += s0;
    }
    // u = A(c) / denom(c, lambda): dA/dc = sc x / (c x + 1), ddenom/dc = sc M / (c M + 1),
    // ddenom/dlambda = c L / (c L + 1) (L = M)
    real sdA = 0, suA = 0;
    #pragma omp simd reduction(+:sdA, suA)
    for (int k = 0; k < n; k++) { sdA += du[k] * x[k] / (c * x[k] + 1); suA += du[k] * A[k]; }
    db2[NH] += sc * (sdA / denom - suA / (denom * denom) * M / (c * M + 1));
    if (lam) db2[NH + 1] += -suA / (denom * denom) * (c * M / (c * M + 1));
}

// The cache (bias_prepare): D (an int in the first real), psi(d) for d < D, then for each head h
// the table f_h(psi(d) / (psi(L) + eps)), d < D: the bias of every query before L, where it
// depends on the distance alone. The table is filled for d < fire_table_len (queries before L).
static size_t fire_cache_size(const PosTables *t, int D) { return 1 + (size_t)(t->d.n_head + 1) * D; }
static int fire_table_len(const FireParams *f, int D) {   // query positions q < D with L > q
    int n = 0;
    while (n < D && f->thresh > n) n++;
    return n;
}
static void fire_prepare(const PosTables *t, const real *p, int D, real *cache) {
    FireParams f = fire_params(t, p);
    cache_set_D(cache, D);
    real *psi = cache + 1, denom = fire_psi(f.c, f.thresh) + (real)FIRE_EPS, u[FIRE_CHUNK];
    for (int d = 0; d < D; d++) psi[d] = fire_psi(f.c, (real)d);
    int Dt = fire_table_len(&f, D);
    for (int h = 0; h < f.NH; h++)
        for (int d0 = 0; d0 < Dt; d0 += FIRE_CHUNK) {
            int n = Dt - d0 < FIRE_CHUNK ? Dt - d0 : FIRE_CHUNK;
            for (int k = 0; k < n; k++) u[k] = psi[d0 + k] / denom;
            fire_mlp(&f, h, u, n, psi + (size_t)(h + 1) * D + d0);
        }
}
static void fire_finish(const PosTables *t, const real *p, const real *cache, const real *dcache, real *dp) {
    FireParams f = fire_params(t, p);
    int D = cache_D(cache, 0), Dt = fire_table_len(&f, D);
    const real *psi = cache + 1;
    real x[FIRE_CHUNK];
    for (int h = 0; h < f.NH; h++)
        for (int d0 = 0; d0 < Dt; d0 += FIRE_CHUNK) {
            int n = Dt - d0 < FIRE_CHUNK ? Dt - d0 : FIRE_CHUNK;
            for (int k = 0; k < n; k++) x[k] = (real)(d0 + k);
            fire_backward_keys(&f, dp, h, x, psi + d0, dcache + 1 + (size_t)(h + 1) * D + d0, n, f.thresh, 1);
        }
}

static void fire_bias_forward(const PosTables *t, const real *p, const real *cache, int h, int qpos, const int *kpos,
                              int n, real *out) {
    FireParams f = fire_params(t, p);
    int D = cache ? cache_D(cache, qpos) : 0;
    const real *psi = cache ? cache + 1 : NULL;
    if (cache && f.thresh > qpos) {           // a query before L: its bias is the cached table's row
        const real *tab = psi + (size_t)(h + 1) * D;
        for (int j = 0; j < n; j++) out[j] += tab[fire_dist(qpos, kpos[j])];
        return;
    }
    real M = f.thresh > qpos ? f.thresh : (real)qpos, denom = fire_psi(f.c, M) + (real)FIRE_EPS, u[FIRE_CHUNK], y[FIRE_CHUNK];
    for (int j0 = 0; j0 < n; j0 += FIRE_CHUNK) {
        int m = n - j0 < FIRE_CHUNK ? n - j0 : FIRE_CHUNK;
        for (int k = 0; k < m; k++) {
            int d = fire_dist(qpos, kpos[j0 + k]);
            u[k] = (psi ? psi[d] : fire_psi(f.c, (real)d)) / denom;
        }
        fire_mlp(&f, h, u, m, y);
        for (int k = 0; k < m; k++) out[j0 + k] += y[k];
    }
}
static void fire_bias_backward(const PosTables *t, const real *p, const real *cache, real *dp, real *dcache, int h,
                               int qpos, const int *kpos, int n, const real *dout) {
    FireParams f = fire_params(t, p);
    int D = cache ? cache_D(cache, qpos) : 0;
    const real *psi = cache ? cache + 1 : NULL;
    if (cache && dcache && f.thresh > qpos) {  // the gradient of the cached table's row (fire_finish carries it to dp)
        real *dtab = dcache + 1 + (size_t)(h + 1) * D;
        for (int j = 0; j < n; j++) dtab[fire_dist(qpos, kpos[j])] += dout[j];
        return;
    }
    real M = f.thresh > qpos ? f.thresh : (real)qpos, x[FIRE_CHUNK], A[FIRE_CHUNK];
    for (int j0 = 0; j0 < n; j0 += FIRE_CHUNK) {
        int m = n - j0 < FIRE_CHUNK ? n - j0 : FIRE_CHUNK;
        for (int k = 0; k < m; k++) {
            int d = fire_dist(qpos, kpos[j0 + k]);
            x[k] = (real)d;
            A[k] = psi ? psi[d] : fire_psi(f.c, x[k]);
        }
        fire_backward_keys(&f, dp, h, x, A, dout + j0, m, M, f.thresh > qpos);
    }
}

// ----------------------------------------------------------------------------------------------
// the table

static const PosScheme SCHEMES[] = {
    { .name = "nope", .summary = "no positional signal; order comes only from the causal mask "
                                 "(Kazemnejad et al. 2023)" },
    { .name = "learned", .summary = "learned absolute table (max_context, C) added to the token "
                                    "embeddings (GPT-2)",
      .hooks = PE_HOOK_INPUT, .fixed_context = 1, .param_shape = learned_shape,
      .export_name = "transformer.wpe.weight", .init_std = 0.01,
      .input_forward = learned_input_forward, .input_backward = learned_input_backward },
    { .name = "sinusoidal", .summary = "fixed sin/cos table added to the token embeddings x sqrt(dim) "
                                       "(Vaswani et al. 2017); --sinusoidal-scale",
      .hooks = PE_HOOK_INPUT, .embed_scale = sinusoidal_embed_scale, .token_init_std = sinusoidal_token_std,
      .head_scale = sinusoidal_head_scale, .check = sinusoidal_check, .build = sinusoidal_build,
      .input_forward = sinusoidal_input_forward },
    { .name = "rope", .summary = "rotate q and k by position in every layer (Su et al. 2021); "
                                 "--rope-base, --rope-fraction, --rope-pairing, --rope-scaling",
      .hooks = PE_HOOK_QK, .takes_extension = 1, .check = rope_check, .build = rope_build,
      .qk_forward = rope_qk_forward, .qk_backward = rope_qk_backward },
    { .name = "alibi", .summary = "linear distance penalty -m_h*(i-j) on the scores, fixed "
                                  "per-head slopes (Press et al. 2021)",
      .hooks = PE_HOOK_BIAS, .build = alibi_build, .bias_forward = alibi_bias_forward },
    { .name = "t5", .summary = "learned bias per (log-bucketed distance, head), one table shared by "
                               "all t5 layers (Raffel et al. 2020); --t5-num-buckets, --t5-max-distance",
      .hooks = PE_HOOK_BIAS, .shared = 1, .param_shape = t5_shape, .init_std = 0.02,
      .check = t5_check, .build = t5_build,
      .bias_forward = t5_bias_forward, .bias_backward = t5_bias_backward },
    { .name = "kerple", .summary = "learned per-head bias -r1*log(1 + r2*(i-j)), r1, r2 >= 0.01, per "
                                   "layer (Chi et al. 2022, log variant)",
      .hooks = PE_HOOK_BIAS, .param_shape = kerple_shape, .init = kerple_init, .project = kerple_project,
      .bias_forward = kerple_bias_forward, .bias_backward = kerple_bias_backward,
      .bias_cache_size = kerple_cache_size, .bias_prepare = kerple_prepare, .bias_finish = kerple_finish },
    { .name = "fire", .summary = "learned bias f(psi(i-j)/psi(max(L,i))), psi(x) = log(|c|x+1), f a "
                                 "per-layer MLP, c and log L learned (Li et al. 2023)",
      .hooks = PE_HOOK_BIAS, .param_shape = fire_shape, .param_vector = 1, .init = fire_init,
      .bias_forward = fire_bias_forward, .bias_backward = fire_bias_backward,
      .bias_cache_size = fire_cache_size, .bias_prepare = fire_prepare, .bias_finish = fire_finish },
    { .name = "xpos", .summary = "RoPE with per-pair exponential scaling of q and k, a decay with "
                                 "distance (Sun et al. 2022); --xpos-scale-base and the rope flags",
      .hooks = PE_HOOK_QK, .takes_extension = 1, .check = rope_check, .build = xpos_build,
      .qk_forward = xpos_qk_forward, .qk_backward = xpos_qk_backward },
    { .name = "p-rope", .summary = "RoPE keeping only the highest fraction of frequencies, the rest "
                                   "rotate by zero (Barbero et al. 2024); --p-rope-fraction",
      .hooks = PE_HOOK_QK, .takes_extension = 1, .check = prope_check, .build = prope_build,
      .qk_forward = prope_qk_forward, .qk_backward = prope_qk_backward },
};
enum { N_SCHEMES = (int)(sizeof(SCHEMES) / sizeof(SCHEMES[0])) };
_Static_assert(N_SCHEMES <= 64, "posenc_tables_build tracks at most 64 schemes");

int posenc_count(void) { return N_SCHEMES; }
const PosScheme *posenc_scheme(int id) {
    CHECK(id >= 0 && id < N_SCHEMES, "internal: positional scheme id %d out of range", id);
    return &SCHEMES[id];
}
int posenc_find(const char *name) {
    for (int i = 0; i < N_SCHEMES; i++) if (strcmp(SCHEMES[i].name, name) == 0) return i;
    return -1;
}

int posenc_rope_width(const PosConfig *c, int head_size) { return (int)(head_size * c->rope_fraction); }

// theta_i = base^(-2i/d), then the context-extension method (HF modeling_rope_utils; the worked
// examples from HF transformers' modeling_rope_utils are in tests/test_posenc.c). s = factor, L0 = original context.
void posenc_rope_freqs(const PosConfig *c, int d, int context, double *out, double *attn_factor) {
    int half = d / 2;
    double base = c->rope_base, s = c->rope_factor;
    double L0 = c->rope_original_context > 0 ? c->rope_original_context : context;
    *attn_factor = 1;
    if (c->rope_scaling == ROPE_SCALING_DYNAMIC && context > L0)   // NTK: a larger base
        base *= pow(s * context / L0 - (s - 1), (double)d / (d - 2));
    for (int i = 0; i < half; i++) out[i] = pow(base, -2.0 * i / d);
    if (c->rope_scaling == ROPE_SCALING_LINEAR) {                  // position interpolation
        for (int i = 0; i < half; i++) out[i] /= s;
    } else if (c->rope_scaling == ROPE_SCALING_YARN) {
        // dims below `low` keep their frequency, above `high` are interpolated, a ramp between
        double lo = d * log(L0 / (2 * M_PI * c->yarn_beta_fast)) / (2 * log(base));
        double hi = d * log(L0 / (2 * M_PI * c->yarn_beta_slow)) / (2 * log(base));
        double low = fmax(floor(lo), 0), high = fmin(ceil(hi), d - 1);
        if (low == high) high += 0.001;
        for (int i = 0; i < half; i++) {
            double ramp = fmin(fmax((i - low) / (high - low), 0), 1), ext = 1 - ramp;
            out[i] = out[i] / s * (1 - ext) + out[i] * ext;
        }
        *attn_factor = 0.1 * log(s) + 1;
    } else if (c->rope_scaling == ROPE_SCALING_LONGROPE) {
        // inv_freq_i = 1 / (f_i base^(2i/d)): the long list past L0, else the short one (HF picks by
        // the current sequence length; here the context the tables are built for)
        const PosFactors *f = context > L0 ? &c->longrope_long : &c->longrope_short;
        CHECK(f->n == half, "internal: longrope has %d factors for %d rotated pairs (rope_check)", f->n, half);
        for (int i = 0; i < half; i++) out[i] = 1.0 / (f->f[i] * pow(base, 2.0 * i / d));
        *attn_factor = posenc_longrope_attention(s, (int)L0, c->longrope_attention);
    } else if (c->rope_scaling == ROPE_SCALING_LLAMA3) {
        double lo_ff = c->llama3_low_freq_factor, hi_ff = c->llama3_high_freq_factor;
        for (int i = 0; i < half; i++) {
            double wavelen = 2 * M_PI / out[i];
            if (wavelen < L0 / hi_ff) continue;                      // high frequency: unchanged
            if (wavelen > L0 / lo_ff) { out[i] /= s; continue; }     // low frequency: interpolated
            double smooth = (L0 / wavelen - lo_ff) / (hi_ff - lo_ff);
            out[i] = (1 - smooth) * out[i] / s + smooth * out[i];
        }
    }
}

double posenc_longrope_attention(double s, int L0, double given) {
    if (given > 0) return given;
    return s > 1 ? sqrt(1 + log(s) / log((double)L0)) : 1;
}

int posenc_longrope_target(const PosConfig *c, int hs, LongropeTarget *t, char *msg, size_t cap) {
    int rope = 0;
    for (int l = 0; l < c->n_layer; l++) rope |= SCHEMES[c->layer[l]].takes_extension;
    if (!rope) { snprintf(msg, cap, "the model has no layer of the RoPE family: there are no factors to search"); return 0; }
    int rot = posenc_rope_width(c, hs);
    t->pairs = rot / 2;
    t->L0 = c->rope_original_context;
    t->s = c->rope_factor;
    t->short_window = t->L0;
    t->long_window = (int)lround(t->s * t->L0);
    if (!(t->s > 1) || t->long_window <= t->L0) {
        snprintf(msg, cap, "the search extends L0 = %d by --rope-factor s; give s > 1 with s * L0 > L0 (got %g)", t->L0, t->s);
        return 0;
    }
    if (t->pairs > PE_MAX_FACTORS || rot < 4) {
        snprintf(msg, cap, "the search needs 2..%d rotated pairs (d_rot = %d)", PE_MAX_FACTORS, rot);
        return 0;
    }
    if (t->L0 < 2) { snprintf(msg, cap, "the search needs --rope-original-context >= 2 (got %d)", t->L0); return 0; }
    return 1;
}

int posenc_longrope_seeds(const PosConfig *c, const LongropeTarget *t, double *out, int n_out) {
    int h = t->pairs, d = 2 * h, n = 0;
    double plain[PE_MAX_FACTORS], scaled[PE_MAX_FACTORS], a;
    PosConfig yc = *c;
    yc.rope_scaling = ROPE_SCALING_NONE;
    posenc_rope_freqs(&yc, d, t->L0, plain, &a);
    yc.rope_scaling = ROPE_SCALING_YARN;
    yc.rope_factor = t->s;
    yc.rope_original_context = t->L0;
    posenc_rope_freqs(&yc, d, t->long_window, scaled, &a);
    for (int k = 0; k < 4 && n < n_out; k++, n++)
        for (int i = 0; i < h; i++) {
            double *f = out + (size_t)n * h + i;
            if (k == 0) *f = 1;                                           // no change
            else if (k == 1) *f = t->s;                                   // position interpolation
            else if (k == 2) *f = pow(t->s, 2.0 * i / (d - 2));          // NTK-aware
            else *f = plain[i] / scaled[i];                               // YaRN's ramp
        }
    return n;
}

void posenc_longrope_use(PosConfig *c, const double *short_f, const double *long_f, int pairs) {
    CHECK(pairs >= 1 && pairs <= PE_MAX_FACTORS, "internal: %d longrope pairs", pairs);
    c->rope_scaling = ROPE_SCALING_LONGROPE;
    memset(&c->longrope_short, 0, sizeof c->longrope_short);
    memset(&c->longrope_long, 0, sizeof c->longrope_long);
    c->longrope_short.n = c->longrope_long.n = pairs;
    memcpy(c->longrope_short.f, short_f, sizeof(double) * pairs);
    memcpy(c->longrope_long.f, long_f, sizeof(double) * pairs);
}

// T5's decoder bucketing of a distance n = i - j >= 0 (Raffel et al. 2020; HF's T5Attention._relative_position_bucket)
int posenc_t5_bucket(int n, int num_buckets, int max_distance) {
    int exact = num_buckets / 2;
    if (n < exact) return n < 0 ? 0 : n;
    int b = exact + (int)floor(log((double)n / exact) / log((double)max_distance / exact) * (num_buckets - exact));
    return b < num_buckets - 1 ? b : num_buckets - 1;
}

// Slopes for a power of two n: 2^(-8h/n), h = 1..n. Otherwise, with m = 2^floor(log2 n):
// slopes(m), then every other slope of slopes(2m), the first n - m of them.
void posenc_alibi_slopes(int n, double *out) {
    int m = 1;
    while (m * 2 <= n) m *= 2;
    for (int h = 0; h < m; h++) out[h] = pow(2.0, -8.0 * (h + 1) / m);
    for (int k = 0; k < n - m; k++) out[m + k] = pow(2.0, -8.0 * (2 * k + 1) / (2 * m));
}

void posenc_tables_build(PosTables *t, const PosConfig *c, const PosDims *d, int max_pos) {
    memset(t, 0, sizeof *t);
    t->d = *d;
    t->cfg = *c;
    t->max_pos = max_pos;
    // each scheme in use builds its tables once, however many layers use it
    int built[64] = { 0 };
    for (int l = -1; l < c->n_layer; l++) {
        int id = l < 0 ? c->input : c->layer[l];
        if (!built[id] && SCHEMES[id].build) SCHEMES[id].build(t);
        built[id] = 1;
    }
}

void posenc_tables_free(PosTables *t) {
    RopeTable *r[3] = { &t->rope, &t->prope, &t->xpos };
    for (int i = 0; i < 3; i++) { free(r[i]->cos); free(r[i]->sin); free(r[i]->q_scale); free(r[i]->k_scale); }
    free(t->sinusoid); free(t->alibi_slope); free(t->t5_bucket);
    memset(t, 0, sizeof *t);
}
