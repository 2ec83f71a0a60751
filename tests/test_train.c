// tests/test_train.c: training-level properties in the float build.
//   - every scheme in posenc's table (and a mixed schedule) overfits one small batch;
//   - the same seed and thread count give bit-identical losses;
//   - gradient accumulation over two micro-batches equals one batch of both;
//   - tokens with loss weight 0 change neither the loss nor the gradient;
//   - a checkpoint round trip restores every parameter and optimiser moment exactly;
//   - the fused update (gradient norm, then AdamW with the clip scale inside) equals clipping the
//     gradient in place and then a plain AdamW loop per tensor.
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "../checkpoint.h"
#include "../dataset/loader.h"
#include "testutil.h"

static GPTConfig small_config(const char *pe, const char *pe_layers, const char *input_pe) {
    GPTConfig c = { .vocab_size = 32, .n_layer = 2, .n_head = 4, .n_embd = 32, .max_seq_len = 16 };
    posenc_defaults(&c.pe, c.n_layer);
    char msg[256];
    CHECK(posenc_schedule(&c.pe, c.n_layer, pe, pe_layers, input_pe, msg, sizeof msg), "%s", msg);
    return c;
}

static void random_batch(Batch *b, uint64_t seed) {
    Rng r; rng_seed(&r, seed);
    for (int i = 0; i < b->B * b->T; i++) { b->tokens[i] = (int)(rng_u64(&r) % 32); b->targets[i] = (int)(rng_u64(&r) % 32); }
}

static double train_steps(GPT *m, Batch *b, int steps, double lr, double *losses) {
    AdamWConfig o = { lr, 0.9, 0.95, 1e-8, 0.0 };
    double loss = 0;
    for (int s = 0; s < steps; s++) {
        loss = gpt_forward(m, b);
        if (losses) losses[s] = loss;
        gpt_zero_grad(m);
        gpt_backward(m, 1.0 / m->weight_sum);
        gpt_adamw(m, &o, s + 1, gpt_clip_scale(gpt_grad_norm(m), 1.0));
    }
    return gpt_forward(m, b);
}

static void test_overfit(const char *label, const char *pe, const char *pe_layers, const char *input_pe) {
    GPTConfig c = small_config(pe, pe_layers, input_pe);
    GPT m; gpt_build(&m, &c, 1, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 99);
    double first = gpt_forward(&m, &b);
    double last = train_steps(&m, &b, 120, 3e-3, NULL);
    EXPECT(first > 3.0 && last < 0.25, "%s: one batch should be memorised: loss %.3f -> %.3f", label, first, last);
    batch_free(&b); gpt_free(&m);
}

static void test_determinism(void) {
    double a[6], b2[6];
    for (int run = 0; run < 2; run++) {
        GPTConfig c = small_config(NULL, "rope,alibi", "learned");
        GPT m; gpt_build(&m, &c, 5, 0);
        Batch b; batch_alloc(&b, 3, 16);
        random_batch(&b, 3);
        train_steps(&m, &b, 6, 1e-3, run ? b2 : a);
        batch_free(&b); gpt_free(&m);
    }
    EXPECT(memcmp(a, b2, sizeof a) == 0, "two runs with one seed must give bit-identical losses");
}

static void test_accumulation(void) {
    GPTConfig c = small_config("rope", NULL, NULL);
    GPT m; gpt_build(&m, &c, 2, 0);
    Batch both; batch_alloc(&both, 2, 16);
    random_batch(&both, 11);
    both.weights[3] = 0; both.weights[20] = 0;
    gpt_forward(&m, &both);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.weight_sum);
    real *g_both = xmalloc(sizeof(real) * m.num_params);
    memcpy(g_both, m.grads, sizeof(real) * m.num_params);
    Batch half[2];
    double wtotal = 0;
    for (int k = 0; k < 2; k++) {
        batch_alloc(&half[k], 1, 16);
        memcpy(half[k].tokens, both.tokens + 16 * k, 16 * sizeof(int));
        memcpy(half[k].targets, both.targets + 16 * k, 16 * sizeof(int));
        memcpy(half[k].weights, both.weights + 16 * k, 16 * sizeof(float));
        for (int t = 0; t < 16; t++) wtotal += half[k].weights[t];
    }
    gpt_zero_grad(&m);
    for (int k = 0; k < 2; k++) { gpt_forward(&m, &half[k]); gpt_backward(&m, 1.0 / wtotal); }
    double err = 0, mx = 0;
    for (size_t i = 0; i < m.num_params; i++) { err = fmax(err, fabs(m.grads[i] - g_both[i])); mx = fmax(mx, fabs(g_both[i])); }
    EXPECT(mx > 0 && err <= 1e-4 * mx, "accumulated gradient differs from the full batch's: %.3g of %.3g", err, mx);
    free(g_both); batch_free(&both); batch_free(&half[0]); batch_free(&half[1]); gpt_free(&m);
}

static void test_loss_weights(void) {
    GPTConfig c = small_config("alibi", NULL, NULL);
    GPT m; gpt_build(&m, &c, 4, 0);
    Batch b; batch_alloc(&b, 1, 16);
    random_batch(&b, 12);
    for (int t = 0; t < 6; t++) b.weights[t] = 0;      // a "prompt" of six tokens
    double l1 = gpt_forward(&m, &b);
    gpt_zero_grad(&m); gpt_backward(&m, 1.0 / m.weight_sum);
    real *g1 = xmalloc(sizeof(real) * m.num_params);
    memcpy(g1, m.grads, sizeof(real) * m.num_params);
    for (int t = 0; t < 6; t++) b.targets[t] = (b.targets[t] + 7) % 32;   // change excluded targets
    double l2 = gpt_forward(&m, &b);
    gpt_zero_grad(&m); gpt_backward(&m, 1.0 / m.weight_sum);
    EXPECT(l1 == l2, "targets with weight 0 must not change the loss (%.9g vs %.9g)", l1, l2);
    EXPECT(memcmp(g1, m.grads, sizeof(real) * m.num_params) == 0, "targets with weight 0 must not change the gradient");
    free(g1); batch_free(&b); gpt_free(&m);
}

static void test_checkpoint_roundtrip(void) {
    GPTConfig c = small_config(NULL, "rope,nope", "sinusoidal");
    c.pe.rope_interleaved = 1; c.pe.rope_fraction = 0.5; c.pe.rope_base = 500;
    GPT m; gpt_build(&m, &c, 8, 0);
    Batch b; batch_alloc(&b, 1, 16);
    random_batch(&b, 1);
    train_steps(&m, &b, 3, 1e-3, NULL);
    char path[] = "/tmp/test_train_ckpt_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    TrainState st = { 1, 3, 12345, 678 }, st2;
    ckpt_save(path, &m, "train.steps=9\n", &st);
    GPT m2; char *kv = NULL;
    ckpt_load(path, &m2, 0, &kv, &st2, NULL, NULL);
    EXPECT(m2.num_params == m.num_params && memcmp(m2.params, m.params, sizeof(real) * m.num_params) == 0, "parameters restored exactly");
    EXPECT(memcmp(m2.m, m.m, sizeof(real) * m.num_params) == 0 && memcmp(m2.v, m.v, sizeof(real) * m.num_params) == 0, "AdamW moments restored exactly");
    EXPECT(st2.step == 3 && st2.rng == 12345 && st2.data_pos == 678, "step, RNG and data position restored");
    EXPECT(kv && strcmp(kv, "train.steps=9\n") == 0, "training settings restored: %s", kv ? kv : "(null)");
    EXPECT(m2.cfg.pe.rope_interleaved == 1 && m2.cfg.pe.rope_fraction == 0.5 && m2.cfg.pe.rope_base == 500 &&
           m2.cfg.pe.input == posenc_find("sinusoidal") && m2.cfg.pe.layer[1] == PE_NOPE, "scheme settings restored");
    EXPECT(gpt_forward(&m2, &b) == gpt_forward(&m, &b), "the loaded model computes the same loss");
    free(kv); remove(path);
    batch_free(&b); gpt_free(&m); gpt_free(&m2);
}

// The loader: rows in order, wrap-around, and --pack's document ids and position resets.
static void test_loader(void) {
    const char *text = "ab\n\ncde\n\nfghij\n\nk";
    int toks[64];
    int n = (int)strlen(text);
    for (int i = 0; i < n; i++) toks[i] = (unsigned char)text[i];
    TokenData d = { toks, (size_t)n, 256, -1 };
    Batch b; batch_alloc(&b, 1, 8);
    Loader plain = { &d, 0, 0 }, packed = { &d, 0, 1 };
    loader_next(&plain, &b);
    EXPECT(b.tokens[0] == 'a' && b.targets[7] == toks[8] && b.pos[7] == 7 && b.doc[7] == 0 && plain.pos == 8,
           "plain rows: tokens, shifted targets, positions 0..T-1, one document");
    loader_next(&packed, &b);
    // "ab\n" | "\ncde\n" | "\nfghij..." : the second newline of a blank line opens a document
    static const int want_doc[8] = { 0, 0, 0, 1, 1, 1, 1, 1 }, want_pos[8] = { 0, 1, 2, 0, 1, 2, 3, 4 };
    int ok = 1;
    for (int t = 0; t < 8; t++) ok &= b.doc[t] == want_doc[t] && b.pos[t] == want_pos[t];
    EXPECT(ok, "packed rows: a document opens at the second newline of each blank line, at position 0");
    loader_next(&packed, &b);
    EXPECT(b.tokens[0] == '\n' && b.pos[0] == 0 && b.doc[1] == 0 && b.pos[1] == 1, "packed rows: a row starts at position 0");
    loader_next(&packed, &b);     // 8 + 8 + 8 + 1 > 19 tokens: wraps to the start
    EXPECT(b.tokens[0] == 'a', "the loader wraps to the start when a batch no longer fits");
    TokenData e = { toks, (size_t)n, 50257, 'c' };            // an end-of-text token opens documents
    Loader pe = { &e, 0, 1 };
    loader_next(&pe, &b);
    EXPECT(b.doc[3] == 0 && b.doc[4] == 1 && b.pos[4] == 0 && b.tokens[4] == 'c', "with an eot token, a document opens at it");
    batch_free(&b);
}

// The update as the definition states it, one tensor at a time: the norm, the gradient scaled in
// place when it exceeds max_norm, then AdamW (decay on tensors with decay=1) and the scheme's
// projection. Returns the norm.
static double reference_update(GPT *m, real *mm, real *vv, const AdamWConfig *o, int t, double max_norm) {
    double ss = 0;
    for (size_t i = 0; i < m->num_params; i++) ss += (double)m->grads[i] * m->grads[i];
    double norm = sqrt(ss);
    if (max_norm > 0 && norm > max_norm)
        for (size_t i = 0; i < m->num_params; i++) m->grads[i] *= (real)(max_norm / norm);
    real ibc1 = (real)(1 / (1 - pow(o->beta1, t))), ibc2 = (real)(1 / (1 - pow(o->beta2, t)));
    real lr = (real)o->lr, b1 = (real)o->beta1, b2 = (real)o->beta2, eps = (real)o->eps;
    for (int k = 0; k < m->n_tensors; k++) {
        const TensorInfo *ti = &m->tensors[k];
        real wd = ti->decay ? (real)o->weight_decay : 0;
        for (size_t i = ti->offset; i < ti->offset + (size_t)ti->rows * ti->cols; i++) {
            real g = m->grads[i];
            mm[i] = b1 * mm[i] + (1 - b1) * g;
            vv[i] = b2 * vv[i] + (1 - b2) * g * g;
            m->params[i] -= lr * ((mm[i] * ibc1) / (sqrtf(vv[i] * ibc2) + eps) + wd * m->params[i]);
        }
        if (ti->scheme >= 0 && posenc_scheme(ti->scheme)->project) {
            PosDims d = { m->cfg.n_layer, m->cfg.n_head, m->cfg.n_embd, m->cfg.n_embd / m->cfg.n_head, m->cfg.max_seq_len };
            posenc_scheme(ti->scheme)->project(&m->cfg.pe, &d, m->params + ti->offset);
        }
    }
    return norm;
}

// Three steps (clipped, with a large norm, then not clipped), a learned input table (decay) and
// kerple layers (no decay, projected): the fused update against reference_update.
static void test_fused_update(void) {
    GPTConfig c = small_config(NULL, "kerple,kerple", "learned");
    GPT a, r;
    gpt_build(&a, &c, 5, 0); gpt_build(&r, &c, 5, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 17);
    real *mm = xcalloc(r.num_params, sizeof(real)), *vv = xcalloc(r.num_params, sizeof(real));
    double clips[3] = { 0.05, 0.05, 1e9 };
    for (int t = 1; t <= 3; t++) {
        AdamWConfig o = { 1e-2, 0.9, 0.95, 1e-8, 0.1 };
        gpt_forward(&a, &b); gpt_zero_grad(&a); gpt_backward(&a, 1.0 / a.weight_sum);
        gpt_forward(&r, &b); gpt_zero_grad(&r); gpt_backward(&r, 1.0 / r.weight_sum);
        double norm = gpt_grad_norm(&a);
        gpt_adamw(&a, &o, t, gpt_clip_scale(norm, clips[t - 1]));
        double want = reference_update(&r, mm, vv, &o, t, clips[t - 1]);
        EXPECT(fabs(norm - want) <= 1e-12 * want, "step %d: gradient norm %.17g, expected %.17g", t, norm, want);
        EXPECT(t == 3 || norm > clips[t - 1], "step %d: the norm %g should be clipped at %g", t, norm, clips[t - 1]);
        double worst = 0, worst_m = 0;
        for (size_t i = 0; i < a.num_params; i++) {
            worst = fmax(worst, fabs(a.params[i] - r.params[i]) / (fabs(r.params[i]) + 1e-3));
            worst_m = fmax(worst_m, fabs(a.m[i] - mm[i]) / (fabs(mm[i]) + 1e-6) + fabs(a.v[i] - vv[i]) / (fabs(vv[i]) + 1e-9));
        }
        EXPECT(worst < 1e-6 && worst_m < 1e-5, "step %d: fused update differs from clip-then-AdamW: params %.3g, moments %.3g",
               t, worst, worst_m);
    }
    free(mm); free(vv); batch_free(&b); gpt_free(&a); gpt_free(&r);
}

int main(void) {
    test_loader();
    for (int s = 0; s < posenc_count(); s++) test_overfit(posenc_scheme(s)->name, posenc_scheme(s)->name, NULL, NULL);
    test_overfit("mixed learned + rope,alibi", NULL, "rope,alibi", "learned");
    test_determinism();
    test_accumulation();
    test_loss_weights();
    test_checkpoint_roundtrip();
    test_fused_update();
    return test_summary("test_train");
}
