// tests/test_grad.c: finite-difference gradient checks, built with -DREAL=double.
// Every layer's backward, then the whole model under every scheme in posenc's table and a mixed
// schedule, with and without dropout (its masks are a function of a fixed key, so the perturbed
// forwards drop the same elements). Central differences with h = 1e-5 are exact to ~1e-10
// relative in double, so the tolerance (1e-6 relative to the tensor's largest gradient) leaves no
// room for a wrong term. Then dropout's properties: its rate, evaluation without it, the same key
// giving the same result and another key another, and no dependence on the thread count. Every
// whole-model backward's gathered gradient norm is checked against a pass over the gradient.
// Attention: the tiled kernel (nn/attention.h) against the plain reference (nn/attention_ref.h),
// forward and backward, for every scheme at T = 1, 6, 37, 70 and 600 (3 heads, packed documents,
// with and without dropout and the causal limit), and both by finite differences at T = 1, 6 and 37.
#include <string.h>

#include "nn/attention_ref.h"
#include "nn/kernels.h"
#include "model.h"
#include "tests/testutil.h"

#define H 1e-5
#define TOL 1e-6

static Rng rng;
static double uni(void) { return 2 * rng_uniform(&rng) - 1; }
static void fill(real *x, size_t n, double scale) { for (size_t i = 0; i < n; i++) x[i] = (real)(scale * uni()); }

// Compares an analytic gradient with central differences of f over the entries of x.
// f must return sum(R * out) for the fixed random R used to seed the backward pass.
typedef double (*LossFn)(void *ctx);
static void check_grad(const char *what, real *x, const real *analytic, size_t n, LossFn f, void *ctx) {
    double max_err = 0, max_g = 0;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        real old = x[i];
        x[i] = old + H; double lp = f(ctx);
        x[i] = old - H; double lm = f(ctx);
        x[i] = old;
        double num = (lp - lm) / (2 * H);
        double err = fabs(num - analytic[i]);
        finite &= isfinite(num) && isfinite(analytic[i]);
        if (err > max_err) max_err = err;
        if (fabs(num) > max_g) max_g = fabs(num);
    }
    EXPECT(finite, "%s: a gradient is NaN or infinite", what);
    EXPECT(max_err <= TOL * (max_g + 1e-8), "%s: max |analytic - numeric| = %.3g, max |grad| = %.3g", what, max_err, max_g);
    EXPECT(max_g > 0, "%s: the gradient is identically zero, so this check tests nothing", what);
}

static double dot(const real *a, const real *b, size_t n) { double s = 0; for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i]; return s; }

// ---- layernorm --------------------------------------------------------------------------------
typedef struct { int N, C; real *inp, *w, *b, *out, *mean, *rstd, *R; } LnCtx;
static double ln_loss(void *p) {
    LnCtx *c = p;
    layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C);
    return dot(c->out, c->R, (size_t)c->N * c->C);
}
// N rows of C channels; C > 64: the parameter gradients' several blocks of channels (and a partial
// one), the same bits on 1 and 2 threads
static void test_layernorm(int N, int C) {
    LnCtx c = { .N = N, .C = C };
    size_t n = (size_t)c.N * c.C;
    c.inp = xmalloc(n * sizeof(real)); c.out = xmalloc(n * sizeof(real)); c.R = xmalloc(n * sizeof(real));
    c.w = xmalloc(c.C * sizeof(real)); c.b = xmalloc(c.C * sizeof(real));
    c.mean = xmalloc(c.N * sizeof(real)); c.rstd = xmalloc(c.N * sizeof(real));
    fill(c.inp, n, 2); fill(c.w, c.C, 1); fill(c.b, c.C, 1); fill(c.R, n, 1);
    real *di = xcalloc(n, sizeof(real)), *dw = xcalloc(c.C, sizeof(real)), *db = xcalloc(c.C, sizeof(real));
    ln_loss(&c);
    layernorm_backward(di, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C, 1);
    check_grad("layernorm dinp", c.inp, di, n, ln_loss, &c);
    check_grad("layernorm dweight", c.w, dw, c.C, ln_loss, &c);
    check_grad("layernorm dbias", c.b, db, c.C, ln_loss, &c);
    // acc = 1 accumulates: a second backward doubles the gradient
    layernorm_backward(di, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C, 1);
    real *di1 = xcalloc(n, sizeof(real)), *dw1 = xcalloc(c.C, sizeof(real)), *db1 = xcalloc(c.C, sizeof(real));
    layernorm_backward(di1, dw1, db1, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C, 1);
    EXPECT(fabs(di[3] - 2 * di1[3]) < 1e-12 && fabs(dw[2] - 2 * dw1[2]) < 1e-12, "layernorm_backward must accumulate (+=)");
    // acc = 0 overwrites dweight and dbias (here NaN) with what acc = 1 adds to zeros; dinp still adds
    for (int k = 0; k < C; k++) dw[k] = db[k] = NAN;
    memcpy(di, di1, n * sizeof(real));
    layernorm_backward(di, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C, 0);
    EXPECT(!memcmp(dw, dw1, C * sizeof(real)) && !memcmp(db, db1, C * sizeof(real)) && fabs(di[3] - 2 * di1[3]) < 1e-12,
           "layernorm_backward with acc = 0 must overwrite dweight and dbias and add to dinp");
    if (C > 64) {
        int saved = omp_get_max_threads();
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            memset(di, 0, n * sizeof(real)); memset(dw, 0, C * sizeof(real)); memset(db, 0, C * sizeof(real));
            layernorm_backward(di, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C, 1);
            EXPECT(!memcmp(dw, dw1, C * sizeof(real)) && !memcmp(db, db1, C * sizeof(real)),
                   "layernorm (N %d, C %d): dweight and dbias on %d thread(s) differ from those on %d", N, C, t, saved);
        }
        omp_set_num_threads(saved);
    }
    free(c.inp); free(c.out); free(c.R); free(c.w); free(c.b); free(c.mean); free(c.rstd);
    free(di); free(dw); free(db); free(di1); free(dw1); free(db1);
}

// ---- matmul (odd sizes exercise the remainder rows) -------------------------------------------
typedef struct { int N, C, OC; real *inp, *w, *b, *out, *R; } MmCtx;
static double mm_loss(void *p) {
    MmCtx *c = p;
    matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC);
    return dot(c->out, c->R, (size_t)c->N * c->OC);
}
static void test_matmul(void) {
    MmCtx c = { .N = 7, .C = 5, .OC = 6 };
    size_t ni = (size_t)c.N * c.C, nw = (size_t)c.OC * c.C, no = (size_t)c.N * c.OC;
    c.inp = xmalloc(ni * sizeof(real)); c.w = xmalloc(nw * sizeof(real)); c.b = xmalloc(c.OC * sizeof(real));
    c.out = xmalloc(no * sizeof(real)); c.R = xmalloc(no * sizeof(real));
    fill(c.inp, ni, 1); fill(c.w, nw, 1); fill(c.b, c.OC, 1); fill(c.R, no, 1);
    real *di = xcalloc(ni, sizeof(real)), *dw = xcalloc(nw, sizeof(real)), *db = xcalloc(c.OC, sizeof(real));
    mm_loss(&c);
    // the plain definition, element by element
    double max_err = 0;
    for (int n = 0; n < c.N; n++)
        for (int o = 0; o < c.OC; o++) {
            double s = c.b[o];
            for (int k = 0; k < c.C; k++) s += (double)c.inp[n * c.C + k] * c.w[o * c.C + k];
            max_err = err_max(max_err, fabs(s - c.out[n * c.OC + o]));
        }
    EXPECT(max_err < 1e-12, "matmul_forward differs from the definition by %.3g", max_err);
    matmul_backward(di, dw, db, c.R, c.inp, c.w, c.N, c.C, c.OC, 1, 1);
    check_grad("matmul dinp", c.inp, di, ni, mm_loss, &c);
    check_grad("matmul dweight", c.w, dw, nw, mm_loss, &c);
    check_grad("matmul dbias", c.b, db, c.OC, mm_loss, &c);
    free(c.inp); free(c.w); free(c.b); free(c.out); free(c.R); free(di); free(dw); free(db);
}

// ---- gelu -------------------------------------------------------------------------------------
typedef struct { int n; real *inp, *out, *R; } GeluCtx;
static double gelu_loss(void *p) { GeluCtx *c = p; gelu_forward(c->out, c->inp, c->n); return dot(c->out, c->R, c->n); }
static void test_gelu(void) {
    GeluCtx c = { .n = 33 };
    c.inp = xmalloc(c.n * sizeof(real)); c.out = xmalloc(c.n * sizeof(real)); c.R = xmalloc(c.n * sizeof(real));
    fill(c.inp, c.n, 4); fill(c.R, c.n, 1);
    real *di = xcalloc(c.n, sizeof(real));
    gelu_loss(&c);
    EXPECT_NEAR(c.out[0], 0.5 * c.inp[0] * (1 + tanh(sqrt(2 / M_PI) * (c.inp[0] + 0.044715 * pow(c.inp[0], 3)))), 1e-14, 0, "gelu(x0)");
    gelu_backward(di, c.inp, c.R, c.n);
    check_grad("gelu dinp", c.inp, di, c.n, gelu_loss, &c);
    free(c.inp); free(c.out); free(c.R); free(di);
}

// ---- encoder ----------------------------------------------------------------------------------
typedef struct { int N, C; int *tok; real *wte, *out, *R, scale; } EncCtx;
static double enc_loss(void *p) { EncCtx *c = p; encoder_forward(c->out, c->tok, c->wte, c->scale, c->N, c->C); return dot(c->out, c->R, (size_t)c->N * c->C); }
// scale 1 (a copy) and 2.5 (a sinusoidal input's sqrt(C) is such a factor): out = scale * wte rows
static void test_encoder(real scale) {
    int tok[6] = { 3, 1, 3, 0, 2, 3 };   // repeated ids must accumulate
    EncCtx c = { .N = 6, .C = 4, .tok = tok, .scale = scale };
    c.wte = xmalloc(5 * 4 * sizeof(real)); c.out = xmalloc(24 * sizeof(real)); c.R = xmalloc(24 * sizeof(real));
    fill(c.wte, 20, 1); fill(c.R, 24, 1);
    real *dw = xcalloc(20, sizeof(real));
    enc_loss(&c);
    EXPECT(c.out[5] == scale * c.wte[1 * 4 + 1], "encoder scale %g: out[1][1] is %g, scale * wte[1][1] = %g", (double)scale,
           (double)c.out[5], (double)(scale * c.wte[5]));
    encoder_backward(dw, c.R, tok, scale, 6, 4);
    char what[64];
    snprintf(what, sizeof what, "encoder dwte (scale %g)", (double)scale);
    check_grad(what, c.wte, dw, 20, enc_loss, &c);
    EXPECT(dw[16] == 0 && dw[19] == 0, "encoder: the row of an unused token must get zero gradient");
    free(c.wte); free(c.out); free(c.R); free(dw);
}

// ---- dropout ------------------------------------------------------------------------------------
typedef struct { int N, C; double p; uint64_t key; real *inp, *out, *R; } DropCtx;
static double drop_loss(void *p) { DropCtx *c = p; dropout_forward(c->out, c->inp, c->key, c->p, c->N, c->C, 0); return dot(c->out, c->R, (size_t)c->N * c->C); }
static void test_dropout_layer(double p) {
    DropCtx c = { .N = 9, .C = 7, .p = p, .key = 77 };
    size_t n = (size_t)c.N * c.C;
    c.inp = xmalloc(n * sizeof(real)); c.out = xmalloc(n * sizeof(real)); c.R = xmalloc(n * sizeof(real));
    fill(c.inp, n, 2); fill(c.R, n, 1);
    real *di = xcalloc(n, sizeof(real));
    drop_loss(&c);
    dropout_backward(di, c.R, c.key, c.p, c.N, c.C, 0);
    char what[64];
    snprintf(what, sizeof what, "dropout %g dinp", p);
    check_grad(what, c.inp, di, n, drop_loss, &c);
    // in place equals out of place; each element is 0 or inp / (1 - p)
    drop_loss(&c);
    real *inplace = xmalloc(n * sizeof(real));
    memcpy(inplace, c.inp, n * sizeof(real));
    dropout_forward(inplace, inplace, c.key, c.p, c.N, c.C, 0);
    int same = memcmp(inplace, c.out, n * sizeof(real)) == 0, values = 1, zeros = 0;
    for (size_t k = 0; k < n; k++) { values &= c.out[k] == 0 || c.out[k] == c.inp[k] * (real)(1 / (1 - p)); zeros += c.out[k] == 0; }
    EXPECT(same && values && zeros > 0 && zeros < (int)n, "dropout %g: in place %d, values 0 or x/(1-p) %d, %d of %zu dropped",
           p, same, values, zeros, n);
    free(c.inp); free(c.out); free(c.R); free(di); free(inplace);
}

// ---- attention with each scheme's q/k and score hooks ---------------------------------------
// ref: 1, the loss through the plain reference (nn/attention_ref.h); 0, through the tiled kernel
typedef struct { int B, T, C, NH, ref; real *qkv_raw, *qkv, *out, *lse, *scratch, *R; AttnPos ap; } AttCtx;
static double att_loss(void *p) {
    AttCtx *c = p;
    size_t n = (size_t)c->B * c->T * 3 * c->C;
    memcpy(c->qkv, c->qkv_raw, n * sizeof(real));
    qk_hook(c->qkv, &c->ap, c->B * c->T, c->C, c->NH, QK_FORWARD);
    if (c->ref) attention_ref_forward(c->out, c->lse, c->qkv, &c->ap, c->B, c->T, c->C, c->NH);
    else attention_forward(c->out, c->lse, c->qkv, &c->ap, c->scratch, c->B, c->T, c->C, c->NH);
    return dot(c->out, c->R, (size_t)c->B * c->T * c->C);
}

// max |a - b| over n, relative to the largest |a| (at least 1: xpos at T = 70 with scale base 4
// scales q and k by up to ~1e8, and its gradients with them)
static double rel_err(const real *a, const real *b, size_t n) {
    double big = 1, e = 0;
    for (size_t k = 0; k < n; k++) big = fmax(big, fabs(a[k]));
    for (size_t k = 0; k < n; k++) e = err_max(e, fabs(a[k] - b[k]) / big);
    return e;
}

// The tiled kernel against the plain reference (nn/attention_ref.h), forward (out, lse) and
// backward (dqkv, the learned bias's gradient); c's buffers as att_loss and the kernel's backward
// left them, dqkv (B,T,3C) and dp (np) the kernel's gradients.
static void expect_reference(AttCtx *c, const real *dqkv, const real *dp, size_t np, const char *what) {
    size_t nq = (size_t)c->B * c->T * 3 * c->C, no = (size_t)c->B * c->T * c->C, nl = (size_t)c->B * c->NH * c->T;
    real *out = xmalloc(no * sizeof(real)), *lse = xmalloc(nl * sizeof(real)), *dq = xmalloc(nq * sizeof(real));
    real *rdp = xcalloc(np + 1, sizeof(real));
    AttnPos ap = c->ap;
    ap.pe_dparams = np ? rdp : NULL;
    attention_ref_forward(out, lse, c->qkv, &ap, c->B, c->T, c->C, c->NH);
    attention_ref_backward(dq, c->R, c->qkv, &ap, c->B, c->T, c->C, c->NH);
    double ef = rel_err(out, c->out, no), el = rel_err(lse, c->lse, nl), eb = rel_err(dq, dqkv, nq), ep = np ? rel_err(rdp, dp, np) : 0;
    EXPECT(ef < 1e-12 && el < 1e-12 && eb < 1e-12 && ep < 1e-12, "%s: the tiled attention differs from nn/attention_ref: "
           "out %.3g, lse %.3g, dqkv %.3g, d(parameters) %.3g (relative to the largest value)", what, ef, el, eb, ep);
    free(out); free(lse); free(dq); free(rdp);
}

// The reference's own gradients by finite differences: dqkv through hook 2, and the learned bias's
static void check_reference_grad(AttCtx *c, size_t np, const char *what) {
    size_t nq = (size_t)c->B * c->T * 3 * c->C;
    real *dq = xmalloc(nq * sizeof(real)), *rdp = xcalloc(np + 1, sizeof(real)), *dp = c->ap.pe_dparams;
    c->ref = 1;
    att_loss(c);
    c->ap.pe_dparams = np ? rdp : NULL;
    attention_ref_backward(dq, c->R, c->qkv, &c->ap, c->B, c->T, c->C, c->NH);
    c->ap.pe_dparams = dp;
    qk_hook(dq, &c->ap, c->B * c->T, c->C, c->NH, QK_BACKWARD);
    char label[192];
    snprintf(label, sizeof label, "nn/attention_ref dqkv [%s]", what);
    check_grad(label, c->qkv_raw, dq, nq, att_loss, c);
    if (np && c->T > 1) {         // (as test_attention's)
        snprintf(label, sizeof label, "nn/attention_ref d(parameters) [%s]", what);
        check_grad(label, (real *)c->ap.pe_params, rdp, np, att_loss, c);
    }
    c->ref = 0;
    free(dq); free(rdp);
}

// T = 6 is one block of queries in the kernel; T = 37 spans three, the last one partial; T = 1 one
// query. Row 1 holds two packed documents: tokens 0..T/2-1 and T/2..T-1. dropout: the rate, at a fixed key.
static void test_attention(int scheme, int interleaved, double fraction, int T, int finite_differences, int bidirectional,
                           double dropout) {
    AttCtx c = { .B = 2, .T = T, .C = 12, .NH = 3 };
    int N = c.B * c.T, half = T / 2;
    size_t nq = (size_t)N * 3 * c.C, no = (size_t)N * c.C;
    int *pos = xmalloc(sizeof(int) * N), *doc = xmalloc(sizeof(int) * N);
    for (int t = 0; t < T; t++) {
        pos[t] = t; doc[t] = 0;
        pos[T + t] = t < half ? t : t - half; doc[T + t] = t < half ? 4 : 5;
    }
    PosConfig pc; posenc_defaults(&pc, 1);
    pc.input = PE_NOPE; pc.layer[0] = scheme; pc.rope_interleaved = interleaved; pc.rope_fraction = fraction;
    pc.t5_num_buckets = 6; pc.t5_max_distance = 8;          // several T5 buckets within T = 6
    pc.p_rope_fraction = 0.5; pc.xpos_scale_base = 4;      // visible effects at small sizes
    PosDims d = { 1, c.NH, c.C, c.C / c.NH, 5 };
    PosTables t; posenc_tables_build(&t, &pc, &d, T + 8);
    const PosScheme *s = posenc_scheme(scheme);
    // a learned bias: parameters moved off their initial values, and their gradient checked too
    real *p = NULL, *dp = NULL;
    size_t np = 0;
    if (s->param_shape) {
        int rows, cols;
        s->param_shape(&pc, &d, &rows, &cols);
        np = (size_t)rows * cols;
        p = xmalloc(np * sizeof(real)); dp = xcalloc(np, sizeof(real));
        Rng r; rng_seed(&r, 5);
        if (s->init) s->init(&pc, &d, p, &r); else fill(p, np, 0.5);
        for (size_t k = 0; k < np; k++) p[k] += (real)(0.05 * uni());
    }
    c.ap = (AttnPos){ .pos = pos, .doc = doc, .scheme = s, .tables = &t, .pe_params = p, .pe_dparams = dp, .pe_nparams = np,
                      .bidirectional = bidirectional, .dropout = dropout, .drop_key = 0xC0FFEE };
    c.qkv_raw = xmalloc(nq * sizeof(real)); c.qkv = xmalloc(nq * sizeof(real));
    c.out = xmalloc(no * sizeof(real)); c.R = xmalloc(no * sizeof(real));
    c.lse = xmalloc((size_t)c.B * c.NH * c.T * sizeof(real));
    c.scratch = xmalloc((size_t)64 * ATT_SCRATCH(c.C / c.NH) * sizeof(real));
    fill(c.qkv_raw, nq, 1.5); fill(c.R, no, 1);
    att_loss(&c);
    real *dqkv = xcalloc(nq, sizeof(real));
    attention_backward(dqkv, c.scratch, c.R, c.qkv, c.out, c.lse, &c.ap, c.B, c.T, c.C, c.NH);
    char what[128];
    snprintf(what, sizeof what, "%s%s, fraction %g, T = %d%s, dropout %g", s->name, interleaved ? " interleaved" : "", fraction,
             T, bidirectional ? ", bidirectional" : "", dropout);
    expect_reference(&c, dqkv, dp, np, what);
    // masking: row 1's second document never sees the first
    real *saved = xmalloc(no * sizeof(real));
    memcpy(saved, c.out, no * sizeof(real));
    for (int tk = T; tk < T + half; tk++) for (int k = 0; k < 3 * c.C; k++) c.qkv_raw[(size_t)tk * 3 * c.C + k] += 1;
    att_loss(&c);
    double leak = 0;
    for (size_t k = (size_t)(T + half) * c.C; k < no; k++) leak = err_max(leak, fabs(saved[k] - c.out[k]));
    EXPECT(leak == 0, "%s: attention crosses a document boundary (%.3g)", s->name, leak);
    for (int tk = T; tk < T + half; tk++) for (int k = 0; k < 3 * c.C; k++) c.qkv_raw[(size_t)tk * 3 * c.C + k] -= 1;
    att_loss(&c);
    qk_hook(dqkv, &c.ap, N, c.C, c.NH, QK_BACKWARD);
    free(saved);
    if (finite_differences) {
        char label[192];
        snprintf(label, sizeof label, "attention dqkv [%s]", what);
        check_grad(label, c.qkv_raw, dqkv, nq, att_loss, &c);
        if (np && T > 1) {        // (T = 1: one key per query, p = 1 whatever the bias: no gradient)
            snprintf(label, sizeof label, "attention d(%s parameters) [%s]", s->name, what);
            check_grad(label, p, dp, np, att_loss, &c);
        }
        check_reference_grad(&c, np, what);
    }
    posenc_tables_free(&t);
    free(c.qkv_raw); free(c.qkv); free(c.out); free(c.R); free(c.lse); free(c.scratch); free(dqkv); free(p); free(dp);
    free(pos); free(doc);
}

// ---- whole model ------------------------------------------------------------------------------

// The sum of squares the backward gathered (as each gradient became final) against a pass over the
// whole gradient buffer: the same squares summed in other orders
static void expect_gathered_norm(GPT *m, const char *label) {
    double pass = sum_squares_ordered(m->weights.grads, m->weights.num_params), got = m->state.norm.ss;
    EXPECT(m->state.norm.valid && pass > 0 && fabs(got - pass) <= 1e-12 * pass && gpt_grad_norm(m) == sqrt(got),
           "%s: the backward gathered a sum of squares of %.17g (valid %d), the gradient has %.17g", label, got,
           m->state.norm.valid, pass);
}
typedef struct { GPT *m; Batch *b; const GptPass *pass; } ModelCtx;
static double model_loss(void *p) { ModelCtx *c = p; return gpt_forward(c->m, c->b, c->pass); }

// dropout: the rate of every forward of the check, at one fixed key; setting: NULL or one scheme
// setting "key=value" (posenc_set)
static void model_case(const char *label, const char *pe, const char *pe_layers, const char *input_pe,
                       int interleaved, double fraction, int n_head, double dropout, const char *setting) {
    GPTConfig cfg = { .vocab_size = 19, .n_layer = 3, .n_head = n_head, .n_embd = 4 * n_head, .max_seq_len = 9 };
    posenc_defaults(&cfg.pe, cfg.n_layer);
    char msg[256];
    EXPECT(posenc_schedule(&cfg.pe, cfg.n_layer, pe, pe_layers, input_pe, msg, sizeof msg), "%s: %s", label, msg);
    cfg.pe.rope_interleaved = interleaved; cfg.pe.rope_fraction = fraction;
    cfg.pe.t5_num_buckets = 6; cfg.pe.t5_max_distance = 8;   // several buckets within 6 positions
    cfg.pe.p_rope_fraction = 0.5; cfg.pe.xpos_scale_base = 4;
    if (setting) {
        char key[64];
        const char *eq = strchr(setting, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - setting), setting);
        EXPECT(posenc_set(&cfg.pe, key, eq + 1, msg, sizeof msg) == 1, "%s: %s", label, msg);
    }
    GPT m; gpt_build(&m, &cfg, 1234, 0);
    // move every parameter off its initial value so LayerNorm gains, biases etc. are generic
    for (size_t i = 0; i < m.weights.num_params; i++) m.weights.params[i] += (real)(0.1 * uni());
    for (size_t i = (size_t)cfg.vocab_size * cfg.n_embd; i < (size_t)cfg.padded_vocab * cfg.n_embd; i++) m.weights.p.wte[i] = 0;
    const GptPass pass = { .dropout = dropout, .drop_key = 0xD0D0 };
    Batch b; batch_alloc(&b, 2, 6);
    for (int i = 0; i < 12; i++) { b.tokens[i] = (int)(rng_u64(&rng) % 19); b.targets[i] = (int)(rng_u64(&rng) % 19); }
    b.weights[0] = 0; b.weights[7] = 0;                        // excluded tokens (a prompt)
    for (int t = 3; t < 6; t++) { b.doc[6 + t] = 1; b.pos[6 + t] = t - 3; }   // row 1: packed docs
    ModelCtx c = { &m, &b, &pass };
    gpt_forward(&m, &b, &pass);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, &pass);
    expect_gathered_norm(&m, label);
    // one check per named tensor (excluding wte's padding rows, which are never used)
    for (int k = 0; k < m.weights.n_tensors; k++) {
        const TensorInfo *t = &m.weights.tensors[k];
        char what[192];
        snprintf(what, sizeof what, "%s: %s", label, t->name);
        check_grad(what, m.weights.params + t->offset, m.weights.grads + t->offset, (size_t)t->export_rows * t->cols, model_loss, &c);
    }
    // a learned table: rows of unused positions (6, 7, 8) get exactly zero, used rows non-zero
    const TensorInfo *wpe = gpt_find_tensor(&m, "transformer.wpe.weight");
    if (wpe) {
        int C = cfg.n_embd, zero_unused = 1, nonzero_used = 1;
        for (int p = 0; p < cfg.max_seq_len; p++) {
            double s = 0;
            for (int j = 0; j < C; j++) s += fabs(m.weights.grads[wpe->offset + (size_t)p * C + j]);
            if (p >= 6 && s != 0) zero_unused = 0;
            if (p < 6 && s == 0) nonzero_used = 0;
        }
        EXPECT(zero_unused, "%s: unused rows of the learned table must get exactly zero gradient", label);
        EXPECT(nonzero_used, "%s: every used row of the learned table must get a gradient", label);
    }
    batch_free(&b);
    gpt_free(&m);
}

// ---- dropout's properties ------------------------------------------------------------------------

// The fraction of dropped elements, within 5 standard deviations of p. Attention through the kernel:
// q = k = 0 gives p(i,j) = 1/(i+1) and v = 1 gives out_i = kept(i) / ((i+1)(1-p)), so each row's
// number of kept keys reads off its output (33280 elements); lse stays log(i+1), the undropped
// normaliser. A residual site: dropout_forward on ones (64000 elements), where two neighbours
// (along a row, and down a column) are both dropped at rate p^2 (the masks are not correlated).
static void test_dropout_rates(double p) {
    int B = 4, T = 64, C = 16, NH = 4, N = B * T, hs = C / NH;
    real *qkv = xcalloc((size_t)N * 3 * C, sizeof(real)), *out = xmalloc(sizeof(real) * N * C);
    real *lse = xmalloc(sizeof(real) * B * NH * T), *scratch = xmalloc(sizeof(real) * 64 * ATT_SCRATCH(hs));
    int *pos = xmalloc(sizeof(int) * N), *doc = xcalloc(N, sizeof(int));
    for (int n = 0; n < N; n++) { pos[n] = n % T; for (int c = 0; c < C; c++) qkv[(size_t)n * 3 * C + 2 * C + c] = 1; }
    PosConfig pc; posenc_defaults(&pc, 1);
    PosDims d = { 1, NH, C, hs, T };
    PosTables t; posenc_tables_build(&t, &pc, &d, T);
    AttnPos ap = { .pos = pos, .doc = doc, .scheme = posenc_scheme(PE_NOPE), .tables = &t, .dropout = p, .drop_key = 0xBEEF };
    attention_forward(out, lse, qkv, &ap, scratch, B, T, C, NH);
    double kept = 0, total = 0, off_integer = 0, lse_err = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                double k = out[((size_t)b * T + i) * C + h * hs] * (i + 1) * (1 - p);
                off_integer = err_max(off_integer, fabs(k - round(k)));
                lse_err = err_max(lse_err, fabs(lse[((size_t)b * NH + h) * T + i] - log(i + 1.0)));
                kept += round(k); total += i + 1;
            }
    double rate = 1 - kept / total, sd = sqrt(p * (1 - p) / total);
    EXPECT(off_integer < 1e-9 && lse_err < 1e-12, "attention dropout %g: outputs are not whole kept counts (%.3g) or lse moved (%.3g)",
           p, off_integer, lse_err);
    EXPECT(fabs(rate - p) < 5 * sd, "attention dropout %g: %.5f of %.0f probabilities dropped (sd %.5f)", p, rate, total, sd);

    int R = 1000, W = 64;
    real *x = xmalloc(sizeof(real) * R * W);
    for (int k = 0; k < R * W; k++) x[k] = 1;
    dropout_forward(x, x, 0xF00D, p, R, W, 0);
    double dropped = 0, along = 0, down = 0, n_along = 0, n_down = 0, bad = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < W; c++) {
            int z = x[r * W + c] == 0;
            dropped += z;
            bad += !z && x[r * W + c] != (real)(1 / (1 - p));
            if (c % 2 == 0) { along += z && x[r * W + c + 1] == 0; n_along++; }
            if (r % 2 == 0) { down += z && x[(r + 1) * W + c] == 0; n_down++; }
        }
    double n = (double)R * W, sd_pair = sqrt(p * p * (1 - p * p) / n_along);
    EXPECT(bad == 0 && fabs(dropped / n - p) < 5 * sqrt(p * (1 - p) / n), "residual dropout %g: %.5f of %.0f dropped, %.0f kept values not 1/(1-p)",
           p, dropped / n, n, bad);
    EXPECT(fabs(along / n_along - p * p) < 5 * sd_pair && fabs(down / n_down - p * p) < 5 * sd_pair,
           "residual dropout %g: neighbours both dropped at %.5f (row) and %.5f (column), expected %.5f", p,
           along / n_along, down / n_down, p * p);
    posenc_tables_free(&t);
    free(qkv); free(out); free(lse); free(scratch); free(pos); free(doc); free(x);
}

// A forward (loss, logits) and backward (every gradient) of m on b at dropout p, key
static double forward_backward(GPT *m, const Batch *b, double p, uint64_t key, real *logits, real *grads) {
    const GptPass pass = { .dropout = p, .drop_key = key };
    double loss = gpt_forward(m, b, &pass);
    memcpy(logits, m->state.a.logits, sizeof(real) * (size_t)b->B * b->T * m->cfg.padded_vocab);
    gpt_zero_grad(m);
    gpt_backward(m, 1.0 / m->state.weight_sum, &pass);
    memcpy(grads, m->weights.grads, sizeof(real) * m->weights.num_params);
    return loss;
}

// The whole model: the same key gives bit-identical losses, logits and gradients, another key
// (another micro-batch or step: gpt_dropout_key) another loss; with p = 0 again every number equals
// the forward before any dropout, bit for bit, whatever the key (no mask at all); 1 and 2 threads
// give the same numbers, bit for bit.
static void test_dropout_model(void) {
    GPTConfig cfg = { .vocab_size = 19, .n_layer = 2, .n_head = 2, .n_embd = 8, .max_seq_len = 40 };
    posenc_defaults(&cfg.pe, cfg.n_layer);
    char msg[256];
    EXPECT(posenc_schedule(&cfg.pe, cfg.n_layer, NULL, "rope,alibi", "learned", msg, sizeof msg), "dropout model: %s", msg);
    GPT m; gpt_build(&m, &cfg, 7, 0);
    Batch b; batch_alloc(&b, 3, 40);           // T = 40: blocks of 16 queries in the double build, 3 blocks
    for (int i = 0; i < 120; i++) { b.tokens[i] = (int)(rng_u64(&rng) % 19); b.targets[i] = (int)(rng_u64(&rng) % 19); }
    size_t nl = (size_t)120 * m.cfg.padded_vocab, np = m.weights.num_params;
    real *l0 = xmalloc(sizeof(real) * nl), *g0 = xmalloc(sizeof(real) * np), *l1 = xmalloc(sizeof(real) * nl), *g1 = xmalloc(sizeof(real) * np);
    real *l2 = xmalloc(sizeof(real) * nl), *g2 = xmalloc(sizeof(real) * np);
    uint64_t k00 = gpt_dropout_key(1337, 0, 0), k01 = gpt_dropout_key(1337, 0, 1), k10 = gpt_dropout_key(1337, 1, 0);
    EXPECT(k00 != k01 && k00 != k10 && k01 != k10 && k00 == gpt_dropout_key(1337, 0, 0) && k00 != gpt_dropout_key(1338, 0, 0),
           "gpt_dropout_key: one key per (seed, step, micro-batch)");
    double clean = forward_backward(&m, &b, 0, 0, l0, g0);
    double a = forward_backward(&m, &b, 0.1, k00, l1, g1);
    double a2 = forward_backward(&m, &b, 0.1, k00, l2, g2);
    EXPECT(a == a2 && !memcmp(l1, l2, sizeof(real) * nl) && !memcmp(g1, g2, sizeof(real) * np),
           "dropout: two forwards and backwards with the same key differ");
    EXPECT(a != clean, "dropout 0.1 left the loss unchanged (%.17g)", a);
    double other = forward_backward(&m, &b, 0.1, k01, l2, g2), step = forward_backward(&m, &b, 0.1, k10, l2, g2);
    EXPECT(other != a && step != a && other != step, "dropout: other keys must give other losses (%.17g, %.17g, %.17g)", a, other, step);
    double eval = forward_backward(&m, &b, 0, k01, l2, g2);     // p = 0: no mask, whatever the key
    EXPECT(eval == clean && !memcmp(l0, l2, sizeof(real) * nl) && !memcmp(g0, g2, sizeof(real) * np),
           "after dropout, a forward at p = 0 (another key) must equal the one before it bit for bit (%.17g vs %.17g)", eval, clean);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    double one = forward_backward(&m, &b, 0.1, k00, l1, g1);
    omp_set_num_threads(2);
    double two = forward_backward(&m, &b, 0.1, k00, l2, g2);
    omp_set_num_threads(saved);
    EXPECT(one == two && !memcmp(l1, l2, sizeof(real) * nl) && !memcmp(g1, g2, sizeof(real) * np),
           "dropout: 1 thread and 2 threads differ (loss %.17g vs %.17g)", one, two);
    // the masks follow the global row (GptPass.drop_row0): rows 1-2 as a batch of their own with
    // b0 = 1 (an MPI rank's share) drop what they dropped as rows 1-2 of the whole batch; the
    // gradients of row 0 (b0 = 0) and rows 1-2 (b0 = 1), each scaled by the whole batch's weight,
    // add up to the whole batch's
    GptPass pass = { .dropout = 0.1, .drop_key = k00 };
    gpt_forward(&m, &b, &pass);
    memcpy(l1, m.state.a.logits, sizeof(real) * nl);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / 120, &pass);
    memcpy(g1, m.weights.grads, sizeof(real) * np);
    Batch head, tail;
    batch_alloc(&head, 1, 40);
    batch_alloc(&tail, 2, 40);
    memcpy(head.tokens, b.tokens, sizeof(int) * 40); memcpy(head.targets, b.targets, sizeof(int) * 40);
    memcpy(tail.tokens, b.tokens + 40, sizeof(int) * 80); memcpy(tail.targets, b.targets + 40, sizeof(int) * 80);
    gpt_zero_grad(&m);
    gpt_forward(&m, &head, &pass);
    gpt_backward(&m, 1.0 / 120, &pass);
    pass.drop_row0 = 1;
    gpt_forward(&m, &tail, &pass);
    int rows_same = !memcmp(l1 + (size_t)40 * m.cfg.padded_vocab, m.state.a.logits, sizeof(real) * 80 * m.cfg.padded_vocab);
    gpt_backward(&m, 1.0 / 120, &pass);
    expect_gathered_norm(&m, "dropout by global row: two micro-batches accumulated");
    double worst = 0;
    for (size_t i = 0; i < np; i++) worst = err_max(worst, fabs(m.weights.grads[i] - g1[i]) / (fabs(g1[i]) + 1e-12));
    EXPECT(rows_same && worst < 1e-9, "dropout by global row: rows 1-2 with b0 = 1 drop as in the whole batch (logits %s; "
           "gradients' sum off by %.3g relative)", rows_same ? "equal" : "differ", worst);
    pass.drop_row0 = 0;
    gpt_forward(&m, &tail, &pass);
    EXPECT(memcmp(l1 + (size_t)40 * m.cfg.padded_vocab, m.state.a.logits, sizeof(real) * 80 * m.cfg.padded_vocab) != 0,
           "dropout by global row: rows 1-2 as rows 0-1 (b0 = 0) must drop otherwise");
    batch_free(&head); batch_free(&tail);
    free(l0); free(g0); free(l1); free(g1); free(l2); free(g2);
    batch_free(&b);
    gpt_free(&m);
}

int main(void) {
    rng_seed(&rng, 42);
    test_layernorm(5, 7);
    test_matmul();
    test_gelu();
    test_encoder(1);
    test_encoder(2.5);
    for (int s = 0; s < posenc_count(); s++) {
        if (posenc_scheme(s)->hooks & PE_HOOK_INPUT) continue;     // input schemes: model cases
        test_attention(s, 0, 1.0, 6, 1, 0, 0);
        test_attention(s, 0, 1.0, 37, 1, 0, 0);     // several blocks of queries, the last partial
        // (double build: blocks of 16 queries, tiles of 32 keys) several full key tiles before the
        // diagonal, tiles with no key visible to a block (row 1's second document against its
        // first) and rows that see no key of a tile: against the plain attention only
        test_attention(s, 0, 1.0, 70, 0, 0, 0);
        test_attention(s, 0, 1.0, 70, 0, 1, 0);     // bidirectional: key tiles past the diagonal too
        // groups of 16 blocks that share 8 and 16 full key tiles (one and two spans: nn/attention.c)
        test_attention(s, 0, 1.0, 600, 0, 0, 0);
        if (posenc_scheme(s)->hooks & PE_HOOK_QK) { test_attention(s, 1, 1.0, 6, 1, 0, 0); test_attention(s, 0, 0.5, 6, 1, 0, 0); test_attention(s, 1, 0.5, 6, 1, 0, 0); }
    }
    // every scheme in the table, through --pe
    for (int s = 0; s < posenc_count(); s++) {
        const char *name = posenc_scheme(s)->name;
        model_case(name, name, NULL, NULL, 0, 1.0, 2, 0, NULL);
    }
    model_case("rope interleaved, fraction 0.5", "rope", NULL, NULL, 1, 0.5, 2, 0, NULL);
    model_case("alibi with 3 heads", "alibi", NULL, NULL, 0, 1.0, 3, 0, NULL);
    model_case("mixed: learned input + rope,alibi,nope", NULL, "rope,alibi,nope", "learned", 0, 1.0, 2, 0, NULL);
    model_case("mixed: sinusoidal input + alibi,rope,rope", NULL, "alibi,rope,rope", "sinusoidal", 1, 1.0, 2, 0, NULL);
    model_case("mixed: one t5 table shared by two layers + fire", NULL, "t5,fire,t5", NULL, 0, 1.0, 2, 0, NULL);
    model_case("mixed: xpos,p-rope,kerple with a learned input", NULL, "xpos,p-rope,kerple", "learned", 1, 1.0, 2, 0, NULL);
    // dropout, after the rest (which so draw the random numbers they drew before it existed): the
    // layer; attention, finite differences at a fixed mask and the plain attention with the mask;
    // the whole model (every site: embedding, attention, both residual branches), every tensor
    test_dropout_layer(0.1);
    test_dropout_layer(0.5);
    for (int s = 0; s < posenc_count(); s++) {
        if (posenc_scheme(s)->hooks & PE_HOOK_INPUT) continue;
        test_attention(s, 0, 1.0, 6, 1, 0, 0.5);
        test_attention(s, 0, 1.0, 37, 0, 0, 0.1);
        test_attention(s, 0, 1.0, 70, 0, 0, 0.5);
        test_attention(s, 0, 1.0, 70, 0, 1, 0.1);
        test_attention(s, 0, 1.0, 600, 0, 1, 0.1);
    }
    model_case("dropout 0.1: learned input + rope,alibi,t5", NULL, "rope,alibi,t5", "learned", 0, 1.0, 2, 0.1, NULL);
    model_case("dropout 0.5: sinusoidal input + t5,rope,alibi", NULL, "t5,rope,alibi", "sinusoidal", 1, 1.0, 2, 0.5, NULL);
    model_case("dropout 0.1: alibi with 3 heads", "alibi", NULL, NULL, 0, 1.0, 3, 0.1, NULL);
    test_dropout_rates(0.1);
    test_dropout_rates(0.5);
    test_dropout_model();
    // after the rest too: C = 150, blocks of 64 + 64 + 22 channels in the parameter gradients
    test_layernorm(9, 150);
    // the sinusoidal input with unscaled embeddings (--sinusoidal-scale none; "sinusoidal" above is
    // the default, sqrt(C)), last so that the cases above draw what they drew before it
    model_case("sinusoidal, unscaled embeddings", "sinusoidal", NULL, NULL, 0, 1.0, 2, 0, "sinusoidal_scale=none");
    // the NoPE paper's APE (--sinusoidal-scale paper): the table in halves, embeddings N(0, 1) unscaled,
    // the tied head reading ln_f's output x C^-0.5 (its gradient to wte and to the blocks)
    model_case("sinusoidal, the NoPE paper's APE", "sinusoidal", NULL, NULL, 0, 1.0, 2, 0, "sinusoidal_scale=paper");
    model_case("dropout 0.1: the NoPE paper's APE + rope,alibi,t5", NULL, "rope,alibi,t5", "sinusoidal", 1, 1.0, 2, 0.1,
               "sinusoidal_scale=paper");
    // one query (T = 1) of each scheme, without and with dropout, last too: the kernel against the
    // reference, and both by finite differences
    for (int s = 0; s < posenc_count(); s++) {
        if (posenc_scheme(s)->hooks & PE_HOOK_INPUT) continue;
        test_attention(s, 0, 1.0, 1, 1, 0, 0);
        test_attention(s, 0, 1.0, 1, 1, 0, 0.5);
    }
    return test_summary("test_grad");
}
