// tests/test_train.c: training-level properties in the float build.
//   - every scheme in posenc's table (and a mixed schedule) overfits one small batch;
//   - the same seed and thread count give bit-identical losses;
//   - gradient accumulation over two micro-batches equals one batch of both;
//   - tokens with loss weight 0 change neither the loss nor the gradient;
//   - dlogits written by the forward (GptPass.loss_grad_scale) give the backward's own bits;
//   - the softmax and cross-entropy over GPT-2's 50257 classes (the float build's vectorised exp)
//     against the same computed in doubles with libm's exp, logits spread narrow and wide;
//   - a checkpoint round trip restores every parameter and optimiser moment exactly;
//   - the fused update (gradient norm, then AdamW with the clip scale inside) equals clipping the
//     gradient in place and then a plain AdamW loop per tensor;
//   - anomaly detection names the first NaN or Inf (forward, hook 3, backward, AdamW, parameters),
//     also where a stage's replay must name a tensor it overwrote (attproj, qkv before hook 2, dln2)
//     and changes no number when everything is finite;
//   - gpt_zero_grad writes nothing, and the next backward's overwriting gives what adding onto zeros
//     gives (every scheme, a shared table, learned and sinusoidal inputs, bf16, accumulation), and
//     AdamW after it with no backward sees a zero gradient;
//   - the gradient's norm the backward gathers equals a pass over the whole gradient (every scheme,
//     a shared table, gradient accumulation), and gpt_grad_norm makes that pass where nothing was
//     gathered (a backward with gathering off, grad_ready set as under MPI, gradients written).
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "formats/checkpoint.h"
#include "dataset/loader.h"
#include "tests/testutil.h"

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
        loss = gpt_forward(m, b, NULL);
        if (losses) losses[s] = loss;
        gpt_zero_grad(m);
        gpt_backward(m, 1.0 / m->state.weight_sum, NULL);
        gpt_adamw(m, &o, s + 1, gpt_clip_scale(gpt_grad_norm(m), 1.0));
    }
    return gpt_forward(m, b, NULL);
}

static void test_overfit(const char *label, const char *pe, const char *pe_layers, const char *input_pe) {
    GPTConfig c = small_config(pe, pe_layers, input_pe);
    GPT m; gpt_build(&m, &c, 1, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 99);
    double first = gpt_forward(&m, &b, NULL);
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
    gpt_forward(&m, &both, NULL);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    real *g_both = xmalloc(sizeof(real) * m.weights.num_params);
    memcpy(g_both, m.weights.grads, sizeof(real) * m.weights.num_params);
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
    for (int k = 0; k < 2; k++) { gpt_forward(&m, &half[k], NULL); gpt_backward(&m, 1.0 / wtotal, NULL); }
    double err = 0, mx = 0;
    for (size_t i = 0; i < m.weights.num_params; i++) {
        err = err_max(err, fabs(m.weights.grads[i] - g_both[i])); mx = fmax(mx, fabs(g_both[i]));
    }
    EXPECT(mx > 0 && err <= 1e-4 * mx, "accumulated gradient differs from the full batch's: %.3g of %.3g", err, mx);
    free(g_both); batch_free(&both); batch_free(&half[0]); batch_free(&half[1]); gpt_free(&m);
}

// The forward's probabilities and per-token losses from its logits, against a softmax in doubles
// with libm's exp. gain: ln_f's weight, which spreads the logits (20: over ~+-60, so that many
// exponentials fall below exp(-87), where the float build's exp gives exactly 0).
static void crossentropy_case(double gain) {
    GPTConfig c = small_config("learned", NULL, NULL);
    c.vocab_size = 50257;
    GPT m; gpt_build(&m, &c, 9, 0);
    for (int i = 0; i < c.n_embd; i++) m.weights.p.lnfw[i] = (real)gain;
    Batch b; batch_alloc(&b, 2, 16);
    Rng r; rng_seed(&r, 41);
    for (int i = 0; i < 32; i++) { b.tokens[i] = (int)(rng_u64(&r) % 50257); b.targets[i] = (int)(rng_u64(&r) % 50257); }
    gpt_forward(&m, &b, NULL);
    int V = c.vocab_size, Vp = m.cfg.padded_vocab;
    double worst_p = 0, worst_loss = 0, worst_sum = 0, spread = 0;
    int pad_zero = 1, finite = 1;
    for (int n = 0; n < 32; n++) {
        const real *l = m.state.a.logits + (size_t)n * Vp, *p = m.state.a.probs + (size_t)n * Vp;
        double mx = -INFINITY, mn = INFINITY, sum = 0, psum = 0;
        for (int v = 0; v < V; v++) { mx = fmax(mx, l[v]); mn = fmin(mn, l[v]); }
        // l[v] - mx rounded to a float as the model's is (its rounding moves exp by up to |l - mx| 2^-24)
        for (int v = 0; v < V; v++) sum += exp((real)(l[v] - (real)mx));
        for (int v = 0; v < V; v++) {
            double want = exp((real)(l[v] - (real)mx)) / sum;
            // relative, past an absolute 2e-38: the float build's exp is 0 below exp(-87) = 1.6e-38
            double err = fabs(p[v] - want);
            if (err > 2e-38) worst_p = fmax(worst_p, err / want);
            psum += p[v];
            finite &= isfinite(p[v]);
        }
        for (int v = V; v < Vp; v++) pad_zero &= p[v] == 0;
        double loss = -(l[b.targets[n]] - mx - log(sum));
        worst_loss = err_max(worst_loss, fabs(m.state.a.losses[n] - loss) / fmax(1, loss));
        worst_sum = err_max(worst_sum, fabs(psum - 1));
        spread = fmax(spread, mx - mn);
    }
    EXPECT(finite && pad_zero && worst_p < 2e-6 && worst_loss < 1e-6 && worst_sum < 2e-6,
           "softmax over 50257 classes (logits spread over %.1f): probabilities off by %.3g relative, losses by %.3g, "
           "rows sum to 1 within %.3g, padding %s", spread, worst_p, worst_loss, worst_sum, pad_zero ? "zero" : "not zero");
    EXPECT(gain < 100 || spread > 100, "ln_f's gain %g should spread the logits past exp's range (spread %.1f)", gain, spread);
    // a NaN logit (class 5 of every row, from wte's row 5): every row's probabilities and loss are NaN
    m.weights.p.wte[5 * c.n_embd] = NAN;
    gpt_forward(&m, &b, NULL);
    int all_nan = 1;
    for (int n = 0; n < 32; n++) all_nan &= isnan(m.state.a.losses[n]) && isnan(m.state.a.probs[(size_t)n * Vp + 7]);
    EXPECT(all_nan, "a NaN logit must make its row's probabilities and loss NaN");
    gpt_free(&m);
    batch_free(&b);
}

static void test_loss_weights(void) {
    GPTConfig c = small_config("alibi", NULL, NULL);
    GPT m; gpt_build(&m, &c, 4, 0);
    Batch b; batch_alloc(&b, 1, 16);
    random_batch(&b, 12);
    for (int t = 0; t < 6; t++) b.weights[t] = 0;      // a "prompt" of six tokens
    double l1 = gpt_forward(&m, &b, NULL);
    gpt_zero_grad(&m); gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    real *g1 = xmalloc(sizeof(real) * m.weights.num_params);
    memcpy(g1, m.weights.grads, sizeof(real) * m.weights.num_params);
    for (int t = 0; t < 6; t++) b.targets[t] = (b.targets[t] + 7) % 32;   // change excluded targets
    double l2 = gpt_forward(&m, &b, NULL);
    gpt_zero_grad(&m); gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    EXPECT(l1 == l2, "targets with weight 0 must not change the loss (%.9g vs %.9g)", l1, l2);
    EXPECT(memcmp(g1, m.weights.grads, sizeof(real) * m.weights.num_params) == 0,
           "targets with weight 0 must not change the gradient");
    free(g1); batch_free(&b); gpt_free(&m);
}

// GptPass.loss_grad_scale: the forward's cross-entropy writes dlogits at the backward's scale and
// the backward skips its own pass: losses and gradients bit-identical to the backward's pass (two
// micro-batches, weight-0 tokens, a vocabulary with padding columns), the flag cleared by the next
// forward and by the backward; a backward given another scale stops (checked first in main).
static void wrong_scale_backward(const void *arg) {
    (void)arg;
    GPTConfig c = small_config("rope", NULL, NULL);
    GPT m; gpt_build(&m, &c, 3, 0);
    Batch b; batch_alloc(&b, 1, 16);
    random_batch(&b, 5);
    const GptPass pass = { .loss_grad_scale = 1.0 / 16 };
    gpt_forward(&m, &b, &pass);
    gpt_backward(&m, 1.0 / 8, &pass);
}

static void test_loss_grad(void) {
    GPTConfig c = small_config("alibi", NULL, NULL);
    c.vocab_size = 50;                                   // padded to 64: columns past V stay 0
    GPT m[2];
    Batch half[2];
    for (int k = 0; k < 2; k++) { batch_alloc(&half[k], 2, 16); random_batch(&half[k], 40 + k); }
    for (int t = 0; t < 5; t++) half[1].weights[t] = 0;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 32; i++) { half[k].tokens[i] %= 50; half[k].targets[i] = (half[k].targets[i] * 7 + 3) % 50; }
    double loss[2][2], wtotal = 59;                      // 64 tokens, 5 of weight 0
    for (int f = 0; f < 2; f++) {
        gpt_build(&m[f], &c, 9, 0);
        EXPECT(m[f].cfg.padded_vocab > 50, "the test wants padding columns (padded vocabulary %d)", m[f].cfg.padded_vocab);
        const GptPass pass = { .loss_grad_scale = f ? 1.0 / wtotal : 0 };
        gpt_zero_grad(&m[f]);
        for (int k = 0; k < 2; k++) {
            loss[f][k] = gpt_forward(&m[f], &half[k], &pass);
            EXPECT((m[f].state.dlogits_scale > 0) == f, "the forward wrote dlogits: %d, expected %d", m[f].state.dlogits_scale > 0, f);
            gpt_backward(&m[f], 1.0 / wtotal, &pass);
            EXPECT(m[f].state.dlogits_scale == 0, "the backward must clear the forward's dlogits flag");
        }
    }
    EXPECT(loss[0][0] == loss[1][0] && loss[0][1] == loss[1][1], "the losses must not change (%.17g %.17g against %.17g %.17g)",
           loss[1][0], loss[1][1], loss[0][0], loss[0][1]);
    EXPECT(memcmp(m[0].weights.grads, m[1].weights.grads, sizeof(real) * m[0].weights.num_params) == 0,
           "dlogits written by the forward must give the backward's gradient bit for bit");
    const GptPass scaled = { .loss_grad_scale = 1.0 / wtotal };
    gpt_forward(&m[1], &half[0], &scaled);                     // dlogits written, no backward follows ...
    gpt_forward(&m[1], &half[0], NULL);                        // ... and the next forward clears the flag
    EXPECT(m[1].state.dlogits_scale == 0, "a forward without the scale must clear the last forward's dlogits flag");
    gpt_set_detect_anomaly(&m[1], 1);                    // --detect-anomaly checks the probabilities
    gpt_forward(&m[1], &half[0], &scaled);
    EXPECT(m[1].state.dlogits_scale == 0, "a forward under --detect-anomaly must write probabilities");
    gpt_set_detect_anomaly(&m[1], 0);
    // an evaluation forward keeps its probabilities
    const GptPass forward_only = { .forward_only = 1, .loss_grad_scale = 1.0 / wtotal };
    gpt_forward(&m[1], &half[0], &forward_only);
    double row = 0;
    for (int v = 0; v < 50; v++) row += m[1].state.a.probs[v];
    EXPECT(m[1].state.dlogits_scale == 0 && fabs(row - 1) < 1e-5, "a forward-only pass must write probabilities (row sum %.9g)", row);
    for (int k = 0; k < 2; k++) { batch_free(&half[k]); gpt_free(&m[k]); }
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
    TrainState st = { 1, 3, 12345, 678, 4, 2, 99999, 3, 2, 0.625 }, st2;
    ckpt_save(path, &m, "train.steps=9\n", &st);
    GPT m2; char *kv = NULL;
    ckpt_load(path, &m2, 0, &kv, &st2, NULL, NULL);
    size_t bytes = sizeof(real) * m.weights.num_params;
    EXPECT(m2.weights.num_params == m.weights.num_params && memcmp(m2.weights.params, m.weights.params, bytes) == 0,
           "parameters restored exactly");
    EXPECT(memcmp(m2.weights.adam_m, m.weights.adam_m, bytes) == 0 && memcmp(m2.weights.adam_v, m.weights.adam_v, bytes) == 0,
           "AdamW moments restored exactly");
    EXPECT(st2.step == 3 && st2.rng == 12345 && st2.data_pos == 678, "step, RNG and data position restored");
    EXPECT(st2.data_epoch == 4 && st2.data_shard == 2 && st2.data_tokens == 99999 && st2.data_files == 3,
           "the data stream's epoch, shard and size restored (data.* lines)");
    EXPECT(st2.select_step == 2 && st2.select_acc == 0.625, "--select-every's best check restored (select.* lines)");
    EXPECT(kv && strcmp(kv, "train.steps=9\n") == 0, "training settings restored: %s", kv ? kv : "(null)");
    EXPECT(m2.cfg.pe.rope_interleaved == 1 && m2.cfg.pe.rope_fraction == 0.5 && m2.cfg.pe.rope_base == 500 &&
           m2.cfg.pe.input == posenc_find("sinusoidal") && m2.cfg.pe.layer[1] == PE_NOPE, "scheme settings restored");
    EXPECT(gpt_forward(&m2, &b, NULL) == gpt_forward(&m, &b, NULL), "the loaded model computes the same loss");
    free(kv); remove(path);
    batch_free(&b); gpt_free(&m); gpt_free(&m2);
}

// The loader: rows in order, wrap-around, and --pack's document ids and position resets.
static void test_loader(void) {
    const char *text = "ab\n\ncde\n\nfghij\n\nk";
    int toks[64];
    int n = (int)strlen(text);
    for (int i = 0; i < n; i++) toks[i] = (unsigned char)text[i];
    TokenSet d;
    data_from_memory(toks, (size_t)n, 256, -1, "loader test", &d);
    Batch b; batch_alloc(&b, 1, 8);
    Loader plain = { .d = &d }, packed = { .d = &d, .pack = 1 };
    loader_next(&plain, &b);
    EXPECT(b.tokens[0] == 'a' && b.targets[7] == toks[8] && b.pos[7] == 7 && b.doc[7] == 0 && plain.pos.offset == 8,
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
    EXPECT(b.tokens[0] == 'a' && packed.pos.epoch == 1, "the loader wraps to the start (a new epoch) when a batch no longer fits");
    TokenSet e;
    data_from_memory(toks, (size_t)n, 50257, 'c', "loader test", &e);   // an end-of-text token opens documents
    Loader pe = { .d = &e, .pack = 1 };
    loader_next(&pe, &b);
    EXPECT(b.doc[3] == 0 && b.doc[4] == 1 && b.pos[4] == 0 && b.tokens[4] == 'c', "with an eot token, a document opens at it");
    batch_free(&b);
    data_close(&d);
    data_close(&e);
}

// The update as the definition states it, one tensor at a time: the norm, the gradient scaled in
// place when it exceeds max_norm, then AdamW (decay on tensors with decay=1) and the scheme's
// projection. Returns the norm.
static double reference_update(GPT *m, real *mm, real *vv, const AdamWConfig *o, int t, double max_norm) {
    double ss = 0;
    for (size_t i = 0; i < m->weights.num_params; i++) ss += (double)m->weights.grads[i] * m->weights.grads[i];
    double norm = sqrt(ss);
    if (max_norm > 0 && norm > max_norm)
        for (size_t i = 0; i < m->weights.num_params; i++) m->weights.grads[i] *= (real)(max_norm / norm);
    real ibc1 = (real)(1 / (1 - pow(o->beta1, t))), ibc2 = (real)(1 / (1 - pow(o->beta2, t)));
    real lr = (real)o->lr, b1 = (real)o->beta1, b2 = (real)o->beta2, eps = (real)o->eps;
    for (int k = 0; k < m->weights.n_tensors; k++) {
        const TensorInfo *ti = &m->weights.tensors[k];
        real wd = ti->decay ? (real)o->weight_decay : 0;
        for (size_t i = ti->offset; i < ti->offset + (size_t)ti->rows * ti->cols; i++) {
            real g = m->weights.grads[i];
            mm[i] = b1 * mm[i] + (1 - b1) * g;
            vv[i] = b2 * vv[i] + (1 - b2) * g * g;
            m->weights.params[i] -= lr * ((mm[i] * ibc1) / (sqrtf(vv[i] * ibc2) + eps) + wd * m->weights.params[i]);
        }
        if (ti->scheme >= 0 && posenc_scheme(ti->scheme)->project) {
            PosDims d = { m->cfg.n_layer, m->cfg.n_head, m->cfg.n_embd, m->cfg.n_embd / m->cfg.n_head, m->cfg.max_seq_len };
            posenc_scheme(ti->scheme)->project(&m->cfg.pe, &d, m->weights.params + ti->offset);
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
    real *mm = xcalloc(r.weights.num_params, sizeof(real)), *vv = xcalloc(r.weights.num_params, sizeof(real));
    double clips[3] = { 0.05, 0.05, 1e9 };
    for (int t = 1; t <= 3; t++) {
        AdamWConfig o = { 1e-2, 0.9, 0.95, 1e-8, 0.1 };
        gpt_forward(&a, &b, NULL); gpt_zero_grad(&a); gpt_backward(&a, 1.0 / a.state.weight_sum, NULL);
        gpt_forward(&r, &b, NULL); gpt_zero_grad(&r); gpt_backward(&r, 1.0 / r.state.weight_sum, NULL);
        double norm = gpt_grad_norm(&a);
        gpt_adamw(&a, &o, t, gpt_clip_scale(norm, clips[t - 1]));
        double want = reference_update(&r, mm, vv, &o, t, clips[t - 1]);
        EXPECT(fabs(norm - want) <= 1e-12 * want, "step %d: gradient norm %.17g, expected %.17g", t, norm, want);
        EXPECT(t == 3 || norm > clips[t - 1], "step %d: the norm %g should be clipped at %g", t, norm, clips[t - 1]);
        double worst = 0, worst_m = 0;
        for (size_t i = 0; i < a.weights.num_params; i++) {
            worst = err_max(worst, fabs(a.weights.params[i] - r.weights.params[i]) / (fabs(r.weights.params[i]) + 1e-3));
            worst_m = err_max(worst_m, fabs(a.weights.adam_m[i] - mm[i]) / (fabs(mm[i]) + 1e-6) +
                                    fabs(a.weights.adam_v[i] - vv[i]) / (fabs(vv[i]) + 1e-9));
        }
        EXPECT(worst < 1e-6 && worst_m < 1e-5, "step %d: fused update differs from clip-then-AdamW: params %.3g, moments %.3g",
               t, worst, worst_m);
    }
    free(mm); free(vv); batch_free(&b); gpt_free(&a); gpt_free(&r);
}

// Anomaly detection (gpt_set_detect_anomaly): the planted fault is named with its layer, pass,
// tensor, first index and count.
static real *param_at(GPT *m, const char *name, int row, int col) {
    const TensorInfo *ti = gpt_find_tensor(m, name);
    CHECK(ti, "no tensor %s", name);
    return m->weights.params + ti->offset + (size_t)row * ti->cols + col;
}

static void expect_anomaly(const GPT *m, const char *what, const char *pass, int layer, const char *tensor,
                           size_t index, size_t bad, const char *msg_part) {
    const Anomaly *a = &m->state.anomaly;
    EXPECT(a->found && !strcmp(a->pass, pass) && a->layer == layer && !strcmp(a->tensor, tensor) && a->index == index &&
           a->bad == bad && strstr(a->msg, msg_part),
           "%s: expected layer %d %s: %s at %zu, %zu bad (\"%s\"); got found %d: %s", what, layer, pass, tensor, index,
           bad, msg_part, a->found, a->msg);
}

static void test_anomaly_forward(void) {
    GPTConfig c = small_config("learned", NULL, NULL);   // B=2, T=16, C=32: fch (2,16,128)
    GPT m; gpt_build(&m, &c, 6, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 21);
    gpt_set_detect_anomaly(&m, 1);
    gpt_forward(&m, &b, NULL);
    EXPECT(!m.state.anomaly.found, "a finite model: no anomaly, got: %s", m.state.anomaly.msg);
    // a NaN in layer 1's fc weight, output row 5: every token's fch channel 5
    *param_at(&m, "transformer.h.1.mlp.c_fc.weight", 5, 3) = NAN;
    double loss = gpt_forward(&m, &b, NULL);
    expect_anomaly(&m, "NaN weight", "forward", 1, "fch", 5, 32,
                   "layer 1 forward: fch has NaN at (b=0, t=0, c=5), first bad of 32 values (of 4096); "
                   "the tensor checked before it, ln2, was finite");
    EXPECT(isnan(loss), "the forward still completes: loss %g", loss);
    EXPECT(gpt_check_parameters(&m), "gpt_check_parameters must find the NaN weight");
    expect_anomaly(&m, "the weight itself", "parameters", 1, "transformer.h.1.mlp.c_fc.weight", 5 * 32 + 3, 1,
                   "layer 1 parameters: transformer.h.1.mlp.c_fc.weight has NaN at (row=5, col=3), first bad of 1 values (of 4096)");
    gpt_set_detect_anomaly(&m, 0);
    gpt_forward(&m, &b, NULL);
    EXPECT(!m.state.anomaly.found, "detection off: nothing recorded");
    batch_free(&b); gpt_free(&m);

    // hook 3: a learned bias table (t5, shared: its tensor is outside the blocks) made NaN; layer 1
    // is the first to add it
    c = small_config(NULL, "nope,t5", "none");
    gpt_build(&m, &c, 6, 0);
    batch_alloc(&b, 2, 16);
    random_batch(&b, 22);
    const TensorInfo *ti = gpt_find_tensor(&m, "pe.t5.weight");
    EXPECT(ti && ti->layer == -1, "the shared t5 table belongs to no block");
    for (int k = 0; ti && k < ti->rows * ti->cols; k++) m.weights.params[ti->offset + k] = NAN;
    gpt_set_detect_anomaly(&m, 1);
    gpt_forward(&m, &b, NULL);
    expect_anomaly(&m, "NaN bias", "forward", 1, "hook 3 bias", 0, 2 * 4 * 16 * 17 / 2,
                   "layer 1 forward: hook 3 bias has NaN at (b=0, h=0, i=0, j=0), first bad of 1088 values (of 1088); "
                   "the tensor checked before it, qkv, was finite");
    batch_free(&b); gpt_free(&m);
}

static void test_anomaly_backward(void) {
    GPTConfig c = small_config("rope", NULL, NULL);
    GPT m; gpt_build(&m, &c, 7, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 23);
    gpt_set_detect_anomaly(&m, 1);
    // an infinite loss weight on token (b=1, t=2): the forward's tensors stay finite; its dlogits row
    // is w * (probs - onehot): +Inf, and NaN at the target
    b.weights[16 + 2] = INFINITY;
    gpt_forward(&m, &b, NULL);
    EXPECT(!m.state.anomaly.found, "an infinite loss weight: the forward's tensors are finite, got: %s", m.state.anomaly.msg);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0, NULL);
    expect_anomaly(&m, "infinite loss weight", "backward", -1, "dlogits", (size_t)18 * 64, 32,
                   "backward: dlogits has +Inf at (b=1, t=2, v=0), first bad of 32 values (of 2048)");
    b.weights[18] = 1;
    // layer 1's fc bias at channel 7 set to 1e20: GELU's forward is finite there (x), its derivative
    // is 0 * inf = NaN: the backward's dfch at every token's channel 7
    *param_at(&m, "transformer.h.1.mlp.c_fc.bias", 0, 7) = (real)1e20;
    gpt_forward(&m, &b, NULL);
    EXPECT(!m.state.anomaly.found, "a huge fc bias: the forward is finite, got: %s", m.state.anomaly.msg);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    expect_anomaly(&m, "GELU's derivative", "backward", 1, "dfch", 7, 32,
                   "layer 1 backward: dfch has NaN at (b=0, t=0, c=7), first bad of 32 values (of 4096); "
                   "the tensor checked before it, dfch_gelu, was finite");
    *param_at(&m, "transformer.h.1.mlp.c_fc.bias", 0, 7) = 0;
    // a NaN gradient reaching AdamW: the updated parameter is named
    gpt_forward(&m, &b, NULL);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    EXPECT(!m.state.anomaly.found, "finite again, got: %s", m.state.anomaly.msg);
    const TensorInfo *ti = gpt_find_tensor(&m, "transformer.h.0.attn.c_proj.bias");
    m.weights.grads[ti->offset + 2] = NAN;
    AdamWConfig o = { 1e-3, 0.9, 0.95, 1e-8, 0.1 };
    gpt_adamw(&m, &o, 1, 1.0);
    expect_anomaly(&m, "NaN update", "optimiser step", 0, "transformer.h.0.attn.c_proj.bias", 2, 1,
                   "layer 0 optimiser step: transformer.h.0.attn.c_proj.bias has NaN at (i=2), first bad of 1 values (of 32)");
    batch_free(&b); gpt_free(&m);
}

// The passes check once per stage and replay a stage only when its scan finds a bad value
// (model_check.c): the tensors a stage overwrites or adds to are named as a check after every
// operation names them. attproj (scratch, overwritten by fcproj), in training and in forward-only
// mode (where a block writes its output over its input, which the replay needs); qkv before hook
// 2 rotates it in place; the backward's dln2 (scratch) from a weight made NaN after the forward.
static void test_anomaly_replay(void) {
    GPTConfig c = small_config("rope", NULL, "learned");
    GPT m; gpt_build(&m, &c, 6, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 25);
    gpt_set_detect_anomaly(&m, 1);
    real *bias = param_at(&m, "transformer.h.1.attn.c_proj.bias", 0, 3);
    *bias = NAN;
    for (int fo = 0; fo < 2; fo++) {
        const GptPass pass = { .forward_only = fo };
        gpt_forward(&m, &b, &pass);
        expect_anomaly(&m, fo ? "attproj, forward-only" : "attproj", "forward", 1, "attproj", 3, 32,
                       "layer 1 forward: attproj has NaN at (b=0, t=0, c=3), first bad of 32 values (of 1024); "
                       "the tensor checked before it, atty, was finite");
    }
    *bias = 0;
    real *qkv_bias = param_at(&m, "transformer.h.1.attn.c_attn.bias", 0, 5);
    *qkv_bias = INFINITY;
    gpt_forward(&m, &b, NULL);
    expect_anomaly(&m, "qkv before hook 2", "forward", 1, "qkv", 5, 32,
                   "layer 1 forward: qkv has +Inf at (b=0, t=0, c=5), first bad of 32 values (of 3072); "
                   "the tensor checked before it, ln1, was finite");
    *qkv_bias = 0;
    gpt_forward(&m, &b, NULL);
    EXPECT(!m.state.anomaly.found, "finite again, got: %s", m.state.anomaly.msg);
    *param_at(&m, "transformer.h.1.mlp.c_fc.weight", 5, 3) = NAN;      // after the forward: its backward only
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    expect_anomaly(&m, "dln2", "backward", 1, "dln2", 3, 32,
                   "layer 1 backward: dln2 has NaN at (b=0, t=0, c=3), first bad of 32 values (of 1024); "
                   "the tensor checked before it, dfch, was finite");
    batch_free(&b); gpt_free(&m);
}

// With every value finite, detection changes no number: three steps of training (dropout, hook 1,
// hook 2, hook 3 with parameters) give bit-identical losses, gradients and weights, on or off.
static void test_anomaly_identical(void) {
    GPTConfig c = small_config(NULL, "rope,t5", "learned");
    GPT m[2];
    double loss[2][3];
    real *grads[2];
    for (int on = 0; on < 2; on++) {
        gpt_build(&m[on], &c, 8, 0);
        gpt_set_detect_anomaly(&m[on], on);
        Batch b; batch_alloc(&b, 2, 16);
        random_batch(&b, 24);
        AdamWConfig o = { 3e-3, 0.9, 0.95, 1e-8, 0.1 };
        grads[on] = xmalloc(sizeof(real) * m[on].weights.num_params);
        for (int t = 0; t < 3; t++) {
            const GptPass pass = { .dropout = 0.1, .drop_key = gpt_dropout_key(8, t, 0) };
            loss[on][t] = gpt_forward(&m[on], &b, &pass);
            gpt_zero_grad(&m[on]);
            gpt_backward(&m[on], 1.0 / m[on].state.weight_sum, &pass);
            memcpy(grads[on], m[on].weights.grads, sizeof(real) * m[on].weights.num_params);
            gpt_adamw(&m[on], &o, t + 1, gpt_clip_scale(gpt_grad_norm(&m[on]), 1.0));
            EXPECT(!m[on].state.anomaly.found, "finite training: no anomaly, got: %s", m[on].state.anomaly.msg);
        }
        batch_free(&b);
    }
    EXPECT(memcmp(loss[0], loss[1], sizeof loss[0]) == 0, "detection must not change the losses");
    EXPECT(memcmp(grads[0], grads[1], sizeof(real) * m[0].weights.num_params) == 0, "detection must not change the gradients");
    EXPECT(memcmp(m[0].weights.params, m[1].weights.params, sizeof(real) * m[0].weights.num_params) == 0,
           "detection must not change the weights");
    for (int on = 0; on < 2; on++) { free(grads[on]); gpt_free(&m[on]); }
}

// The norm the last backward gathered against sum_squares_ordered's pass over the whole gradient:
// both sum exact squares (a float squared is exact in a double) in doubles, in other orders
static void expect_gathered(GPT *m, const char *what) {
    double pass = sum_squares_ordered(m->weights.grads, m->weights.num_params), got = m->state.norm.ss;
    EXPECT(m->state.norm.valid && pass > 0 && fabs(got - pass) <= 1e-12 * pass,
           "%s: gathered sum of squares %.17g (valid %d), the pass over the gradient %.17g", what, got,
           m->state.norm.valid, pass);
    EXPECT(gpt_grad_norm(m) == sqrt(got), "%s: gpt_grad_norm must return the gathered norm", what);
}

static void no_reduction(void *ctx, int layer) { (void)ctx; (void)layer; }

// The batch of two rows b as two micro-batches of one row each (gradient accumulation, as train.c)
static void accumulate_halves(GPT *m, const Batch *b, int gather_first) {
    Batch half[2];
    for (int k = 0; k < 2; k++) {
        batch_alloc(&half[k], 1, b->T);
        memcpy(half[k].tokens, b->tokens + b->T * k, sizeof(int) * b->T);
        memcpy(half[k].targets, b->targets + b->T * k, sizeof(int) * b->T);
    }
    gpt_zero_grad(m);
    for (int k = 0; k < 2; k++) {
        const GptPass pass = { .skip_norm = !(k == 1 || gather_first) };
        gpt_forward(m, &half[k], &pass);
        gpt_backward(m, 1.0 / (2 * b->T), &pass);
        if (k == 0 && !gather_first) EXPECT(!m->state.norm.valid, "a backward with gathering off gathers nothing");
    }
    batch_free(&half[0]); batch_free(&half[1]);
}

// dim: C (32, or 96, where the MLP's weights, 4 C^2 = 36864 values, are summed by the threads)
static void norm_case(const char *label, const char *pe, const char *pe_layers, const char *input_pe, int dim) {
    GPTConfig c = small_config(pe, pe_layers, input_pe);
    c.n_embd = dim;
    GPT m; gpt_build(&m, &c, 3, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 31);
    char what[160];
    const GptPass pass = { .dropout = 0.1, .drop_key = gpt_dropout_key(3, 0, 0) };
    gpt_forward(&m, &b, &pass);
    gpt_zero_grad(&m);
    EXPECT(gpt_grad_norm(&m) == 0, "%s: after gpt_zero_grad the norm is 0", label);
    gpt_backward(&m, 1.0 / m.state.weight_sum, &pass);
    snprintf(what, sizeof what, "%s: one batch", label);
    expect_gathered(&m, what);
    for (int first = 0; first < 2; first++) {
        accumulate_halves(&m, &b, first);
        snprintf(what, sizeof what, "%s: accumulated over 2 micro-batches, the first %s", label,
                 first ? "gathering too" : "not gathering");
        expect_gathered(&m, what);
    }
    batch_free(&b); gpt_free(&m);
}

// Where the backward cannot know the final gradient, gpt_grad_norm makes its own pass: grad_ready
// set (MPI sums the gradients after the backward), gathering off, the buffer written by its owner
static void test_norm_fallback(void) {
    GPTConfig c = small_config("rope", NULL, "learned");
    GPT m; gpt_build(&m, &c, 4, 0);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 32);
    gpt_forward(&m, &b, NULL);
    m.state.grad_ready = no_reduction;
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    m.state.grad_ready = NULL;
    double pass = sqrt(sum_squares_ordered(m.weights.grads, m.weights.num_params));
    EXPECT(!m.state.norm.valid && gpt_grad_norm(&m) == pass, "grad_ready set: no gathered norm, the pass's %.17g", pass);
    const GptPass no_norm = { .skip_norm = 1 };
    gpt_forward(&m, &b, &no_norm);   // (a backward turns the forward's probabilities into dlogits)
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, &no_norm);
    EXPECT(!m.state.norm.valid && gpt_grad_norm(&m) == pass, "gathering off: the pass's norm %.17g", pass);
    gpt_forward(&m, &b, NULL);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    EXPECT(m.state.norm.valid, "gathering on again: a gathered norm");
    m.weights.grads[5] += 1;
    gpt_grads_written(&m);
    EXPECT(!m.state.norm.valid && gpt_grad_norm(&m) == sqrt(sum_squares_ordered(m.weights.grads, m.weights.num_params)),
           "after gpt_grads_written: the pass over the changed buffer");
    batch_free(&b); gpt_free(&m);
}

// value by value (so -0 equals +0: adding a -0 sum onto +0 gives +0, and overwriting with it -0)
static int same_values(const real *a, const real *b, size_t n, size_t *first) {
    for (size_t i = 0; i < n; i++) if (!(a[i] == b[i])) { *first = i; return 0; }
    return 1;
}

// After gpt_zero_grad the buffer keeps its old values (NaN here) until the next backward overwrites
// each tensor: model a's gradient, so overwritten, against twin r's, added onto the zeros r was
// built with (a fresh model's first backward adds: no gpt_zero_grad before it), for one batch and
// for two micro-batches; then AdamW after gpt_zero_grad with no backward updates as with zeros.
static void zero_case(const char *label, const char *pe_layers, const char *input_pe, int bf16) {
    GPTConfig c = small_config(NULL, pe_layers, input_pe);
    Batch b; batch_alloc(&b, 2, 16);
    random_batch(&b, 51);
    for (int micro = 1; micro <= 2; micro++) {
        GPT a, r;
        gpt_build(&a, &c, 6, 0); gpt_build(&r, &c, 6, 0);
        gpt_set_bf16(&a, bf16); gpt_set_bf16(&r, bf16);
        for (size_t i = 0; i < a.weights.num_params; i++) a.weights.grads[i] = NAN;
        gpt_zero_grad(&a);
        if (micro == 1) {
            gpt_forward(&a, &b, NULL); gpt_backward(&a, 1.0 / 32, NULL);
            gpt_forward(&r, &b, NULL); gpt_backward(&r, 1.0 / 32, NULL);
        } else {
            accumulate_halves(&a, &b, 1);         // gpt_zero_grad, then two backwards
            Batch half[2];
            for (int k = 0; k < 2; k++) {
                batch_alloc(&half[k], 1, 16);
                memcpy(half[k].tokens, b.tokens + 16 * k, sizeof(int) * 16);
                memcpy(half[k].targets, b.targets + 16 * k, sizeof(int) * 16);
                gpt_forward(&r, &half[k], NULL); gpt_backward(&r, 1.0 / 32, NULL);
                batch_free(&half[k]);
            }
        }
        size_t at = 0;
        int same = same_values(a.weights.grads, r.weights.grads, a.weights.num_params, &at);
        const char *name = "";
        for (int k = 0; k < a.weights.n_tensors; k++)
            if (a.weights.tensors[k].offset <= at) name = a.weights.tensors[k].name;
        EXPECT(same, "%s%s, %d micro-batch(es): the gradient after gpt_zero_grad and an overwriting backward differs "
               "from the one added onto zeros, first at %s (%g vs %g)", label, bf16 ? " (bf16)" : "", micro, name,
               (double)a.weights.grads[at], (double)r.weights.grads[at]);
        gpt_free(&a); gpt_free(&r);
    }
    GPT a, r;                      // AdamW after gpt_zero_grad, no backward: a zero gradient (decay only)
    gpt_build(&a, &c, 6, 0); gpt_build(&r, &c, 6, 0);
    for (size_t i = 0; i < a.weights.num_params; i++) a.weights.grads[i] = NAN;
    gpt_zero_grad(&a);
    AdamWConfig o = { 1e-3, 0.9, 0.95, 1e-8, 0.1 };
    gpt_adamw(&a, &o, 1, gpt_clip_scale(gpt_grad_norm(&a), 1.0));
    gpt_adamw(&r, &o, 1, 1.0);
    EXPECT(gpt_grad_norm(&a) == 0 && !memcmp(a.weights.params, r.weights.params, sizeof(real) * a.weights.num_params),
           "%s: AdamW after gpt_zero_grad without a backward must update as with a zero gradient", label);
    gpt_free(&a); gpt_free(&r);
    batch_free(&b);
}

int main(void) {
    // first: a child forked after the parent has run an OpenMP region may hang in its own
    EXPECT(dies_with(wrong_scale_backward, NULL, "GptPass.loss_grad_scale", NULL),
           "a backward given another scale than the forward's dlogits must stop");
    test_loader();
    for (int s = 0; s < posenc_count(); s++) test_overfit(posenc_scheme(s)->name, posenc_scheme(s)->name, NULL, NULL);
    test_overfit("mixed learned + rope,alibi", NULL, "rope,alibi", "learned");
    test_determinism();
    test_accumulation();
    test_loss_weights();
    test_loss_grad();
    crossentropy_case(1);
    crossentropy_case(200);
    test_checkpoint_roundtrip();
    test_fused_update();
    test_anomaly_forward();
    test_anomaly_backward();
    test_anomaly_replay();
    test_anomaly_identical();
    for (int s = 0; s < posenc_count(); s++) norm_case(posenc_scheme(s)->name, posenc_scheme(s)->name, NULL, NULL, 32);
    norm_case("one t5 table shared by two layers, learned input", NULL, "t5,t5", "learned", 32);
    norm_case("fire,kerple, sinusoidal input", NULL, "fire,kerple", "sinusoidal", 32);
    norm_case("C = 96, rope,alibi, learned input", NULL, "rope,alibi", "learned", 96);
    test_norm_fallback();
    for (int s = 0; s < posenc_count(); s++) {
        const PosScheme *sc = posenc_scheme(s);
        int input = (sc->hooks & PE_HOOK_INPUT) != 0;       // an input scheme, with nope layers
        char layers[64];
        snprintf(layers, sizeof layers, "%s,%s", input ? posenc_scheme(PE_NOPE)->name : sc->name,
                 input ? posenc_scheme(PE_NOPE)->name : sc->name);
        zero_case(sc->name, layers, input ? sc->name : "none", 0);
    }
    zero_case("one t5 table shared by two layers, learned input", "t5,t5", "learned", 0);
    zero_case("rope,fire, sinusoidal input", "rope,fire", "sinusoidal", 1);
    return test_summary("test_train");
}
