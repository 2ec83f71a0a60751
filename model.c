// model.c: the GPT-2 model's forward (the transformer block, written once for the batch and the KV
// cache) and backward passes, and dropout's keys. The layout and allocation are in model_build.c,
// the optimiser in model_optim.c, --detect-anomaly's checks in model_check.c, the layers in
// nn/layers.c, attention in nn/attention.c. Shapes follow the legend in model.h. Every backward
// ACCUMULATES (+=) into its outputs, but the first after gpt_zero_grad overwrites the parameter
// gradients (gpt_backward).
#include "model_ops.h"

#include "nn/kernels.h"

#include <string.h>
#include <tgmath.h>   // exp, sqrt, tanh follow the type of `real` (expf in the float build)

// ----------------------------------------------------------------------------------------------
// decoding's transposed weights (model.h, gpt_decode_begin)

void gpt_decode_begin(GPT *m) {
    GptMemoryCheck check = gpt_memory_check();
    if (check) check((double)sizeof(real) * (double)m->weights.num_params, 0, "the transposed weights for decoding");
    m->state.decode_on = 1;
}

void gpt_decode_end(GPT *m) {
    GPTRunState *s = &m->state;
    for (int i = 0; i < s->decode_n; i++) free(s->decode_wt[i]);
    s->decode_n = 0;
    s->decode_on = 0;
}

// the transposed copy (C,OC) of weight w (OC,C) while decoding, made on first use; NULL otherwise
static const real *decode_weight(GPT *m, const real *w, int C, int OC) {
    GPTRunState *s = &m->state;
#ifdef USE_OPENBLAS
    (void)w; (void)C; (void)OC;
    return NULL;                                  // OpenBLAS's one-row sums are its own, not gemm_tile's
#else
    if (!s->decode_on || s->bf16) return NULL;
    for (int i = 0; i < s->decode_n; i++) if (s->decode_w[i] == w) return s->decode_wt[i];
    if (s->decode_n == (int)(sizeof s->decode_w / sizeof s->decode_w[0])) return NULL;
    real *wt = xmalloc(sizeof(real) * (size_t)C * OC);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < C; k++)
        for (int o = 0; o < OC; o++) wt[(size_t)k * OC + o] = w[(size_t)o * C + k];
    s->decode_w[s->decode_n] = w;
    s->decode_wt[s->decode_n++] = wt;
    return wt;
#endif
}

// ----------------------------------------------------------------------------------------------
// the operations of the stages, each timed where a benchmark reads the share of each kind of work
// (m->state.prof): the products of the linear layers, attention with its hooks

// the linear layers' products in the model's precision (gpt_set_bf16)
#define MATMUL_FORWARD(m) ((m)->state.bf16 ? matmul_forward_bf16 : matmul_forward)
#define MATMUL_BACKWARD(m) ((m)->state.bf16 ? matmul_backward_bf16 : matmul_backward)

// out (N,OC) = inp (N,C) @ w^T (+ bias): the LM head's and the linear layers' product
static void matmul(GPT *m, real *out, const real *inp, const real *w, const real *bias, size_t N, int C, int OC) {
    double t0 = now_seconds();
    MATMUL_FORWARD(m)(out, inp, w, bias, (int)N, C, OC);
    m->state.prof[PROF_MATMUL] += now_seconds() - t0;
}

// its backward: dinp (N,C) overwritten, dw (OC,C) and db (OC) added to (acc) or overwritten
static void matmul_grad(GPT *m, real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                        int N, int C, int OC, int acc) {
    double t0 = now_seconds();
    MATMUL_BACKWARD(m)(dinp, dw, db, dout, inp, w, N, C, OC, acc, 0);
    m->state.prof[PROF_MATMUL] += now_seconds() - t0;
}

void linear_forward(GPT *m, real *out, const real *inp, const real *w, const real *bias, size_t N, int C, int OC) {
    const real *wt = N == 1 ? decode_weight(m, w, C, OC) : NULL;
    if (!wt) { matmul(m, out, inp, w, bias, N, C, OC); return; }
    double t0 = now_seconds();
    matmul_forward_wt(out, inp, wt, bias, 1, C, OC);
    m->state.prof[PROF_MATMUL] += now_seconds() - t0;
}

// No other call of a backward writes dw and db, so they are final: their squares go into the norm.
void linear_backward(GPT *m, real *dinp, real *dw, real *db, const real *dout, const real *inp,
                     const real *w, int N, int C, int OC, int acc) {
    matmul_grad(m, dinp, dw, db, dout, inp, w, N, C, OC, acc);
    gpt_norm_gather(m, dw, (size_t)OC * C);
    gpt_norm_gather(m, db, (size_t)OC);
}

void ln_backward(GPT *m, real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                 const real *mean, const real *rstd, int N, int C, int acc) {
    layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, acc);
    gpt_norm_gather(m, dw, (size_t)C);
    gpt_norm_gather(m, db, (size_t)C);
}

void rotate_qk(GPT *m, real *qkv, const AttnPos *ap, size_t N, int dir) {
    double t0 = now_seconds();
    qk_hook(qkv, ap, (int)N, m->cfg.n_embd, m->cfg.n_head, dir);
    m->state.prof[PROF_ATTENTION] += now_seconds() - t0;
}

// The tiled kernel over the batch (B,T) when kc is NULL, with the layer's statistics while its qkv
// and lse exist (GptPass.attn_stats); otherwise the chunk's T queries (B = 1) against the KV cache,
// to which the chunk's keys and values are appended first.
void block_attention(GPT *m, int l, const LayerActs *la, const AttnPos *ap, int B, int T, KVCache *kc) {
    int C = m->cfg.n_embd, NH = m->cfg.n_head;
    double t0 = now_seconds(), *stats = m->state.act.attn_stats;
    if (!kc) {
        attention_forward(la->atty, la->att_lse, la->qkv, ap, m->state.a.att_scratch, B, T, C, NH);
        if (stats)
            attention_stats(stats + (size_t)l * NH * ATT_NSTAT, la->qkv, la->att_lse, ap, m->state.a.att_scratch, B, T, C, NH);
    } else {
        int P = kc->len;
        real *Kl = kc->k + (size_t)l * kc->cap * C, *Vl = kc->v + (size_t)l * kc->cap * C;
        for (int t = 0; t < T; t++) {      // append this chunk's keys and values
            memcpy(Kl + (size_t)(P + t) * C, la->qkv + (size_t)t * 3 * C + C, sizeof(real) * C);
            memcpy(Vl + (size_t)(P + t) * C, la->qkv + (size_t)t * 3 * C + 2 * C, sizeof(real) * C);
        }
        KVKeys kv = { .k = Kl, .v = Vl, .pos = kc->pos, .doc = kc->doc, .P = P, .rows = kc->att_row, .row_cap = kc->cap };
        attention_forward_cached(la->atty, la->qkv, ap, &kv, T, C, NH);
    }
    m->state.prof[PROF_ATTENTION] += now_seconds() - t0;
}

void attn_backward(GPT *m, const LayerActs *la, const AttnPos *ap, int B, int T) {
    GradActivations *g = &m->state.ga;
    double t0 = now_seconds();
    attention_backward(g->dqkv, m->state.a.att_scratch, g->datty, la->qkv, la->atty, la->att_lse, ap, B, T,
                       m->cfg.n_embd, m->cfg.n_head);
    m->state.prof[PROF_ATTENTION] += now_seconds() - t0;
}

// Its backward is the identity for both: block_backward hands dL/dout on to each side unchanged.
void residual_add(real *out, const real *a, const real *b, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

const real *dropped_grad(real *buf, const real *dout, uint64_t key, double p, size_t N, int C, uint64_t row0) {
    memset(buf, 0, sizeof(real) * N * C);
    dropout_backward(buf, dout, key, p, (int)N, C, row0);
    return buf;
}

// The embedding multiplies wte's rows by it, its backward the gradient that reaches them.
real embed_scale(const GPTConfig *c) { return (real)posenc_embed_scale(&c->pe, c->n_embd); }

// The factor on ln_f's output before the LM head tied to wte: C^-0.5 for the NoPE paper's APE (T5
// rescales a tied head's input so), else 1 (posenc_head_scale).
real head_scale(const GPTConfig *c) { return (real)posenc_head_scale(&c->pe, c->n_embd); }

// ln_f of the last residual (N,C) into a->lnf, times head_scale: what the LM head reads.
static void final_norm(GPT *m, const real *residual, size_t N) {
    const ParamTensors *p = &m->weights.p;
    Activations *a = &m->state.a;
    size_t C = m->cfg.n_embd;
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, residual, p->lnfw, p->lnfb, N, C);
    real s = head_scale(&m->cfg);
    if (s != 1) for (size_t k = 0; k < N * C; k++) a->lnf[k] *= s;
}

// scale * wte[token] + hook 1's position into a->encoded; with dropout the sum goes to a->scratch
// first and the dropout from there into a->encoded, so that what it drops stays to be checked
void embed_forward(GPT *m, const int *tokens, const int *pos, int B, int T, double drop) {
    const GPTConfig *c = &m->cfg;
    const ParamTensors *p = &m->weights.p;
    Activations *a = &m->state.a;
    size_t N = (size_t)B * T;
    real *emb = drop > 0 ? a->scratch : a->encoded;                   // (N,C)
    encoder_forward(emb, tokens, p->wte, embed_scale(c), N, c->n_embd);
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_forward) in->input_forward(&m->pt, p->pe_input, emb, pos, N);       // hook 1
    if (drop > 0)
        dropout_forward(a->encoded, emb, drop_site(m->state.act.drop_key, -1, DROP_EMBEDDING), drop, N, c->n_embd,
                        m->state.act.drop_row0 * T);
}

// ----------------------------------------------------------------------------------------------
// softmax + cross-entropy over the V real classes of each (Vp,) logits row

// probs (N,Vp) = softmax of logits (N,Vp) over the first V columns (the padding columns 0);
// losses (N,) = -log probs[n][targets[n]], when targets (N,) is not NULL. Its backward,
// dlogits = weight * grad_scale * (probs - onehot(target)), is written inline at the top of
// gpt_backward, over probs; or, when grad_scale > 0 (GptPass.loss_grad_scale: the training step),
// here in the last pass, with the same operations, instead of probs. Three vectorised passes over
// a row (V = 50257 for GPT-2): the max, the exponentials and their sum, the normalisation. exp_fast is exp_vec in the float build (relative
// error ~2.3e-7; 0 below exp(-87), far under a sum >= 1) and libm's exp in the double build, the
// one the gradient checks run. The exponentials are summed in CE_LANES running sums (a vector's
// lanes), then those in a double: a fixed order whether the loop is vectorised or not (at -O1 it
// is not), so the same bits run after run, and ~1e-7 relative where one float sum of 50257 terms
// was off by ~1e-5. A NaN logit makes its row's probabilities and loss NaN.
enum { CE_LANES = 16 };
static void crossentropy_forward(real *probs, real *losses, const real *logits, const int *targets,
                                 const float *weights, double grad_scale, int N, int V, int Vp) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *l = logits + (size_t)n * Vp;
        real *p = probs + (size_t)n * Vp;
        real mx = -INFINITY;
        #pragma omp simd reduction(max:mx)
        for (int v = 0; v < V; v++) mx = l[v] > mx ? l[v] : mx;
        real lane[CE_LANES] = { 0 };       // lane j sums the exponentials j, j + CE_LANES, ...
        int v0 = 0;
        for (; v0 + CE_LANES <= V; v0 += CE_LANES) {
            #pragma omp simd
            for (int j = 0; j < CE_LANES; j++) { real e = exp_fast(l[v0 + j] - mx); p[v0 + j] = e; lane[j] += e; }
        }
        double sum = 0;
        for (int j = 0; j < CE_LANES; j++) sum += lane[j];
        for (int v = v0; v < V; v++) { p[v] = exp_fast(l[v] - mx); sum += p[v]; }
        real inv = (real)(1 / sum);
        if (grad_scale > 0) {              // dlogits, as gpt_backward's pass computes them: (p * inv) * s
            real s = (real)(weights[n] * grad_scale);
            #pragma omp simd
            for (int v = 0; v < V; v++) p[v] = p[v] * inv * s;
            p[targets[n]] -= s;
        } else {
            #pragma omp simd
            for (int v = 0; v < V; v++) p[v] *= inv;
        }
        for (int v = V; v < Vp; v++) p[v] = 0;
        // -log softmax computed from the logits, not from a rounded probability
        if (targets) losses[n] = -(l[targets[n]] - mx - log(sum));
    }
}

// ----------------------------------------------------------------------------------------------
// dropout's keys: the step's key (GptPass.drop_key), then one per layer and site, then one per row
// of the site (nn/kernels.h)

void gpt_set_bf16(GPT *m, int on) { m->state.bf16 = on != 0; }

uint64_t gpt_dropout_key(uint64_t seed, int64_t step, int micro) {
    return mix64(mix64(mix64(seed ^ 0xD50F0D50F0D50Full) + (uint64_t)step) + (uint64_t)micro);
}

uint64_t drop_site(uint64_t key, int layer, int site) {
    return mix64(key ^ mix64(((uint64_t)(layer + 1) << 2) + (uint64_t)site));
}

LayerActs layer_acts(const GPT *m, int l, int B, int T) {
    const Activations *a = &m->state.a;
    size_t N = (size_t)B * T, C = m->cfg.n_embd, NH = m->cfg.n_head;
    if (m->state.act_forward_only) l = 0;
    LayerActs la = {
        a->ln1 + l * N * C, a->ln1_mean + l * N, a->ln1_rstd + l * N,
        a->qkv + l * N * 3 * C, a->atty + l * N * C, a->att_lse + (size_t)l * B * NH * T,
        a->residual2 + l * N * C, a->ln2 + l * N * C, a->ln2_mean + l * N, a->ln2_rstd + l * N,
        a->fch + l * N * 4 * C, a->fch_gelu + l * N * 4 * C, a->residual3 + l * N * C,
    };
    return la;
}

AttnPos attn_pos(const GPT *m, const Batch *b, int l, int grads) {
    const GPTWeights *w = &m->weights;
    const GptPass *act = &m->state.act;
    AttnPos ap = { .pos = b->pos, .doc = b->doc, .scheme = posenc_scheme(m->cfg.pe.layer[l]), .tables = &m->pt,
                   .pe_params = w->p.pe_layer[l], .pe_dparams = grads ? w->g.pe_layer[l] : NULL,
                   .pe_nparams = w->pe_layer_n[l], .dropout = act->dropout,
                   .drop_key = drop_site(act->drop_key, l, DROP_ATTENTION), .drop_b0 = act->drop_row0,
                   .unchecked_scores = m->state.checking };
    return ap;
}

static void check_positions(const GPT *m, const int *pos, size_t N) {
    int limit = gpt_position_limit(m);
    for (size_t n = 0; n < N; n++)
        CHECK(pos[n] >= 0 && pos[n] < limit, "position id %d at index %zu is outside the model's position "
              "tables (0..%d)%s", pos[n], n, limit - 1, limit < m->pt.max_pos ? ": its input table has one row per "
              "position of the context" : "");
}

// ----------------------------------------------------------------------------------------------
// the forward

// Transformer block l on the N = B*T tokens of residual (N,C), into layer l's activations; returns
// its output residual3 (N,C). ap: the layer's positions; kc: NULL, or the KV cache (block_attention).
// Its backward is block_backward, below.
//   residual2 = residual + attproj(attention(qkv(ln1(residual))))      (hook 2 on q, k; hook 3 inside)
//   residual3 = residual2 + fcproj(gelu(fc(ln2(residual2))))
// With dropout (the batch forward only): attention drops inside, and each projection is dropped
// before its residual add.
static const real *block_forward(GPT *m, int l, const real *residual, const AttnPos *ap, int B, int T, KVCache *kc) {
    int C = m->cfg.n_embd;
    size_t N = (size_t)B * T;
    const ParamTensors *p = &m->weights.p;
    real *proj = m->state.a.scratch;                            // (N,C) each projection before its residual add
    double drop = kc ? 0 : m->state.act.dropout;
    uint64_t key = m->state.act.drop_key, row0 = m->state.act.drop_row0 * T;
    LayerActs la = layer_acts(m, l, B, T);

    layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, residual, p->ln1w + l * C, p->ln1b + l * C, N, C);
    linear_forward(m, la.qkv, la.ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, N, C, 3 * C);
    rotate_qk(m, la.qkv, ap, N, QK_FORWARD);                                                // hook 2
    block_attention(m, l, &la, ap, B, T, kc);                                               // hook 3 inside
    linear_forward(m, proj, la.atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, N, C, C);
    if (drop > 0) dropout_forward(proj, proj, drop_site(key, l, DROP_ATTN_OUT), drop, N, C, row0);
    residual_add(la.residual2, residual, proj, N * C);

    layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, p->ln2w + l * C, p->ln2b + l * C, N, C);
    linear_forward(m, la.fch, la.ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, N, C, 4 * C);
    gelu_forward(la.fch_gelu, la.fch, N * 4 * C);
    linear_forward(m, proj, la.fch_gelu, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, N, 4 * C, C);
    if (drop > 0) dropout_forward(proj, proj, drop_site(key, l, DROP_MLP_OUT), drop, N, C, row0);
    residual_add(la.residual3, la.residual2, proj, N * C);
    return la.residual3;
}

// A forward that met an anomaly stops there: no loss, and no backward of it
static double forward_stopped(GPT *m) {
    GPTRunState *s = &m->state;
    s->loss = NAN; s->weight_sum = 0; s->batch = NULL;
    return NAN;
}

static void check_ids(const GPT *m, const Batch *b) {
    int V = m->cfg.vocab_size;
    check_positions(m, b->pos, (size_t)b->B * b->T);
    for (size_t n = 0; n < (size_t)b->B * b->T; n++) {
        CHECK(b->tokens[n] >= 0 && b->tokens[n] < V, "token id %d at batch index %zu is outside the "
              "vocabulary (0..%d); the data does not match this model's vocabulary", b->tokens[n], n, V - 1);
        CHECK(!b->targets || (b->targets[n] >= 0 && b->targets[n] < V), "target id %d at batch index "
              "%zu is outside the vocabulary (0..%d)", b->targets ? b->targets[n] : 0, n, V - 1);
    }
}

// The embedding, the blocks, then the head: ln_f, the logits (tied to wte), the cross-entropy.
// With --detect-anomaly each stage is checked once it has run (model_check.c).
double gpt_forward(GPT *m, const Batch *b, const GptPass *pass) {
    static const GptPass evaluation = { 0 };
    GPTRunState *s = &m->state;
    const GPTConfig *c = &m->cfg;
    int B = b->B, T = b->T, L = c->n_layer, C = c->n_embd, V = c->vocab_size, Vp = c->padded_vocab;
    size_t N = (size_t)B * T;
    if (!pass) pass = &evaluation;
    CHECK(pass->dropout >= 0 && pass->dropout < 1, "internal: dropout rate %g outside [0, 1)", pass->dropout);
    s->dlogits_scale = 0;
    check_ids(m, b);
    gpt_alloc_acts(m, B, T, pass->forward_only);
    s->batch = b;
    s->act = *pass;
    Activations *a = &s->a;
    const ParamTensors *p = &m->weights.p;
    check_begin(m, "forward", s->detect_anomaly);

    embed_forward(m, b->tokens, b->pos, B, T, pass->dropout);
    if (check_embedding(m, b->tokens, b->pos, B, T, pass->dropout)) return forward_stopped(m);
    const real *residual = a->encoded;
    for (int l = 0; l < L; l++) {
        AttnPos ap = attn_pos(m, b, l, 0);
        check_keep(m, residual, N * C);
        residual = block_forward(m, l, residual, &ap, B, T, NULL);
        if (check_block_forward(m, l, &ap, B, T, NULL)) return forward_stopped(m);
    }
    final_norm(m, residual, N);
    matmul(m, a->logits, a->lnf, p->wte, NULL, N, C, Vp);                     // LM head tied to wte
    // the loss's gradient in the same pass when a backward with a known scale follows (the training step)
    double gs = b->targets && !s->act_forward_only && !s->detect_anomaly ? pass->loss_grad_scale : 0;
    crossentropy_forward(a->probs, a->losses, a->logits, b->targets, b->weights, gs > 0 ? gs : 0, N, V, Vp);
    s->dlogits_scale = gs > 0 ? gs : 0;
    if (check_head_forward(m, B, T, 1, b->targets != NULL)) return forward_stopped(m);

    double sum = 0, wsum = 0;
    if (b->targets)
        for (size_t n = 0; n < N; n++) { sum += (double)b->weights[n] * a->losses[n]; wsum += b->weights[n]; }
    s->weight_sum = wsum;
    s->loss = wsum > 0 ? sum / wsum : 0;
    return s->loss;
}

// The attention probabilities of one layer, head and batch row of the last gpt_forward: out (T, T),
// recomputed from the row's q, k and log-sum-exps by attention_head_probs (nn/attention.c).
void attention_probs(const GPT *m, int layer, int b, int head, real *out) {
    CHECK(!m->state.act_forward_only, "internal: attention_probs needs every layer's activations; the last forward "
          "was forward-only (GptPass.forward_only)");
    const Batch *bt = m->state.batch;
    const GPTConfig *c = &m->cfg;
    CHECK(bt, "internal: attention_probs needs a gpt_forward first (a cached forward keeps no batch)");
    CHECK(layer >= 0 && layer < c->n_layer && b >= 0 && b < bt->B && head >= 0 && head < c->n_head,
          "internal: attention_probs(layer %d, row %d, head %d) outside %d layers, %d rows, %d heads",
          layer, b, head, c->n_layer, bt->B, c->n_head);
    int T = bt->T, C = c->n_embd, NH = c->n_head;
    LayerActs la = layer_acts(m, layer, bt->B, T);
    AttnPos ap = attn_pos(m, bt, layer, 0);
    ap.pos += (size_t)b * T; ap.doc += (size_t)b * T;                  // row b's ids
    attention_head_probs(out, la.qkv + (size_t)b * T * 3 * C, la.att_lse + (size_t)b * NH * T, &ap, T, C, NH, head);
}

// ----------------------------------------------------------------------------------------------
// incremental decoding with a KV cache

void kv_cache_init(KVCache *c, const GPT *m, int cap) {
    GptMemoryCheck check = gpt_memory_check();
    if (check) {
        char what[96];
        snprintf(what, sizeof what, "the KV cache of %d tokens", cap);
        check((double)sizeof(real) * ((2.0 * m->cfg.n_layer * m->cfg.n_embd + max_threads()) * cap) + 2.0 * sizeof(int) * cap, 0, what);
    }
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
    int L = c->n_layer, C = c->n_embd, V = c->vocab_size, Vp = c->padded_vocab;
    int P = kc->len;
    CHECK(P + T <= kc->cap, "internal: the KV cache holds %d tokens; %d + %d do not fit", kc->cap, P, T);
    for (int t = 0; t < T; t++)
        CHECK(tokens[t] >= 0 && tokens[t] < V, "token id %d is outside the vocabulary (0..%d)", tokens[t], V - 1);
    check_positions(m, pos, (size_t)T);
    gpt_alloc_acts(m, 1, T, 0);
    m->state.batch = NULL;                       // no backward through a cached forward
    check_begin(m, "cached forward", m->state.detect_anomaly);
    if (max_threads() > kc->threads) {     // the thread count grew since kv_cache_init
        free(kc->att_row);
        kc->threads = max_threads();
        kc->att_row = xmalloc(sizeof(real) * (size_t)kc->threads * kc->cap);
    }
    Activations *a = &m->state.a;
    const ParamTensors *p = &m->weights.p;
    for (int t = 0; t < T; t++) { kc->pos[P + t] = pos[t]; kc->doc[P + t] = 0; }

    // with detection on, a bad value stops the call (the cache is not advanced); the caller looks
    embed_forward(m, tokens, pos, 1, T, 0);
    if (check_embedding(m, tokens, pos, 1, T, 0)) return;
    const real *residual = a->encoded;
    for (int l = 0; l < L; l++) {
        AttnPos ap = { .pos = pos, .doc = kc->doc + P, .scheme = posenc_scheme(c->pe.layer[l]), .tables = &m->pt,
                       .pe_params = m->weights.p.pe_layer[l], .unchecked_scores = m->state.checking };
        check_keep(m, residual, (size_t)T * C);
        residual = block_forward(m, l, residual, &ap, 1, T, kc);
        if (check_block_forward(m, l, &ap, 1, T, kc)) return;
    }
    final_norm(m, residual, T);
    linear_forward(m, a->logits, a->lnf, p->wte, NULL, T, C, Vp);
    if (check_head_forward(m, 1, T, 0, 0)) return;
    kc->len = P + T;
}

// No pass over the buffer: the next backward's first write into each tensor overwrites it
// (gpt_backward), or gpt_adamw zeroes the buffer when no backward came.
void gpt_zero_grad(GPT *m) {
    m->state.grads_zero = 1;
    m->state.norm.valid = 1;            // a norm of exactly 0
    m->state.norm.ss = 0;
}

// The positional schemes' gradients (t5's, kerple's and fire's bias parameters, summed over threads
// and shared by layers; the learned input table, of which a batch writes only the rows of its
// positions): zeroed for a backward that overwrites the others. A few thousand values.
static void zero_scheme_grads(GPT *m) {
    const GPTWeights *w = &m->weights;
    for (int k = 0; k < w->n_tensors; k++)
        if (w->tensors[k].scheme >= 0)
            memset(w->grads + w->tensors[k].offset, 0, sizeof(real) * w->tensors[k].rows * w->tensors[k].cols);
}

// ----------------------------------------------------------------------------------------------
// the backward

// The backward of block_forward (read them side by side): block l's parameter gradients, and
// g->dresidual (N,C) carried from the block's output, dL/dresidual3, to its input, dL/dresidual.
// The forward's steps in reverse:
//   fcproj -> gelu -> fc -> ln2, into dresidual: now dL/dresidual2
//   attproj -> attention (hook 3's bias gradient inside) -> hook 2's transpose on dq, dk -> qkv -> ln1,
//   into dresidual: now dL/dresidual
// The skip connections need no code of their own: residual3 = residual2 + branch, so dL/dresidual2
// is dL/dresidual3 (the skip path, already in dresidual) plus the branch's share, which
// layernorm_backward adds (+=) into dresidual. The other gradient buffers are scratch that the
// linear layers', GELU's and attention's backward overwrite; g->dln holds the gradient at a
// LayerNorm's output (ln_f's above, ln2's, then ln1's) and, with dropout, at a projection's output
// (dresidual through the branch's mask). Each parameter gradient of the block goes into the
// gathered norm right after its one write (linear_backward, ln_backward; the layer's own
// positional tensors after attention and hook 2). acc = 0: the linear and LayerNorm parameter
// gradients are overwritten (gpt_backward).
static void block_backward(GPT *m, int l, const Batch *b, int acc) {
    int B = b->B, T = b->T, C = m->cfg.n_embd;
    size_t N = (size_t)B * T;
    const Activations *a = &m->state.a;
    GradActivations *g = &m->state.ga;
    const ParamTensors *p = &m->weights.p;
    ParamTensors *dp = &m->weights.g;
    double drop = m->state.act.dropout;          // the forward's dropout: its masks again, from its key
    uint64_t key = m->state.act.drop_key, row0 = m->state.act.drop_row0 * (uint64_t)T;
    const real *residual = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * N * C;   // the block's input
    LayerActs la = layer_acts(m, l, B, T);
    AttnPos ap = attn_pos(m, b, l, 1);

    // residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))): dresidual reaches both terms
    const real *dproj = drop > 0 ? dropped_grad(g->dln, g->dresidual, drop_site(key, l, DROP_MLP_OUT), drop, N, C, row0)
                                 : g->dresidual;
    linear_backward(m, g->dfch_gelu, dp->fcprojw + (size_t)l * 4 * C * C, dp->fcprojb + l * C, dproj, la.fch_gelu,
                    p->fcprojw + (size_t)l * 4 * C * C, N, 4 * C, C, acc);
    gelu_backward(g->dfch, la.fch, g->dfch_gelu, N * 4 * C);
    linear_backward(m, g->dln, dp->fcw + (size_t)l * 4 * C * C, dp->fcb + l * 4 * C, g->dfch, la.ln2,
                    p->fcw + (size_t)l * 4 * C * C, N, C, 4 * C, acc);
    ln_backward(m, g->dresidual, dp->ln2w + l * C, dp->ln2b + l * C, g->dln, la.residual2, p->ln2w + l * C,
                la.ln2_mean, la.ln2_rstd, N, C, acc);

    // residual2 = residual + attproj(attention(qkv(ln1(residual))))
    dproj = drop > 0 ? dropped_grad(g->dln, g->dresidual, drop_site(key, l, DROP_ATTN_OUT), drop, N, C, row0)
                     : g->dresidual;
    linear_backward(m, g->datty, dp->attprojw + (size_t)l * C * C, dp->attprojb + l * C, dproj, la.atty,
                    p->attprojw + (size_t)l * C * C, N, C, C, acc);
    attn_backward(m, &la, &ap, B, T);                       // dqkv; hook 3's parameter gradients inside
    rotate_qk(m, g->dqkv, &ap, N, QK_BACKWARD);             // gradient w.r.t. the unrotated q and k
    gpt_norm_gather_layer(m, l, 1);   // the layer's own positional tensors (a shared one: gpt_backward's end)
    linear_backward(m, g->dln, dp->qkvw + (size_t)l * 3 * C * C, dp->qkvb + l * 3 * C, g->dqkv, la.ln1,
                    p->qkvw + (size_t)l * 3 * C * C, N, C, 3 * C, acc);
    ln_backward(m, g->dresidual, dp->ln1w + l * C, dp->ln1b + l * C, g->dln, residual, p->ln1w + l * C,
                la.ln1_mean, la.ln1_rstd, N, C, acc);
}

// dloss_n/dlogits = w_n * grad_scale * (probs - onehot(target)), written over probs (the backward
// of crossentropy_forward): after a backward the probabilities are gone (dump_step copies the
// logits before it calls backward). Skipped when the forward wrote them (GptPass.loss_grad_scale).
static void crossentropy_backward(GPT *m, const Batch *b, double grad_scale) {
    GPTRunState *s = &m->state;
    int V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab;
    if (s->dlogits_scale > 0)
        CHECK(grad_scale == s->dlogits_scale, "internal: gpt_backward's grad_scale %.17g is not the %.17g its "
              "forward wrote dlogits with (GptPass.loss_grad_scale)", grad_scale, s->dlogits_scale);
    else {
        #pragma omp parallel for schedule(static)
        for (size_t n = 0; n < (size_t)b->B * b->T; n++) {
            real *d = s->a.probs + n * Vp;
            real sc = (real)(b->weights[n] * grad_scale);
            for (int v = 0; v < V; v++) d[v] *= sc;
            d[b->targets[n]] -= sc;
        }
    }
    s->dlogits_scale = 0;
}

// The backward of gpt_forward (model.h), its steps in reverse: the cross-entropy (dlogits over
// probs) -> the LM head, tied to wte (dwte's first contribution) -> ln_f -> blocks L-1..0
// (block_backward, each from dL/dresidual3 to dL/dresidual in g->dresidual) -> the embedding's
// dropout -> hook 1's input_backward (dpe_input) -> the token rows of wte (encoder_backward: dwte's
// second contribution). The norm is gathered as the gradients become final: each block's in
// block_backward, then at the end the tensors outside the blocks (wte after its second
// contribution, ln_f, the input scheme's and the shared positional tensors). The first backward
// after gpt_zero_grad overwrites instead of adding (acc = 0): the LM head's dW (all Vp rows of
// dwte, which the embedding then adds to), every linear and LayerNorm parameter gradient; the
// schemes' few are zeroed first. Those are all the parameters, each tensor's first write; a
// backward that stops at an anomaly (--detect-anomaly: each stage checked once it has run,
// model_check.c) leaves the gradient undefined.
void gpt_backward(GPT *m, double grad_scale, const GptPass *pass) {
    GPTWeights *w = &m->weights;
    GPTRunState *s = &m->state;
    CHECK(!s->act_forward_only, "internal: gpt_backward after a forward-only pass (GptPass.forward_only): "
          "the activations of the earlier layers are gone");
    const Batch *b = s->batch;
    CHECK(b && b->targets, "internal: gpt_backward needs a forward pass with targets first");
    const GPTConfig *c = &m->cfg;
    int B = b->B, T = b->T, L = c->n_layer, C = c->n_embd, Vp = c->padded_vocab;
    size_t N = (size_t)B * T;
    Activations *a = &s->a;
    GradActivations *g = &s->ga;
    const ParamTensors *p = &w->p;
    ParamTensors *dp = &w->g;
    double drop = s->act.dropout;          // the forward's dropout: its masks again, from its key
    uint64_t key = s->act.drop_key, row0 = s->act.drop_row0 * (uint64_t)T;
    check_begin(m, "backward", s->detect_anomaly);
    gpt_norm_begin(m, !(pass && pass->skip_norm));
    int acc = !s->grads_zero;
    if (!acc) zero_scheme_grads(m);
    s->grads_zero = 0;

    crossentropy_backward(m, b, grad_scale);                    // dlogits (N,Vp), over probs
    const real *residual_last = L ? a->residual3 + (size_t)(L - 1) * N * C : a->encoded;
    // logits = lnf @ wte^T: dlnf (N,C), and dwte (Vp,C) += dlogits^T lnf (the tied head's share; not
    // final, so not gathered here: the embedding's backward adds to dwte last)
    matmul_grad(m, g->dln, dp->wte, NULL, a->probs, a->lnf, p->wte, N, C, Vp, acc);
    real hs = head_scale(c);                                   // a->lnf = hs * ln_f's output
    if (hs != 1) for (size_t k = 0; k < N * C; k++) g->dln[k] *= hs;
    memset(g->dresidual, 0, sizeof(real) * N * C);
    layernorm_backward(g->dresidual, dp->lnfw, dp->lnfb, g->dln, residual_last, p->lnfw, a->lnf_mean, a->lnf_rstd, N, C, acc);
    if (check_head_backward(m, B, T)) return;

    for (int l = L - 1; l >= 0; l--) {                      // dresidual: dL/dresidual3 of block l
        check_keep(m, g->dresidual, N * C);
        block_backward(m, l, b, acc);                       // now dL/dresidual at its input
        if (check_block_backward(m, l, b, acc)) return;
        // block l's gradients are final: MPI may reduce them
        if (s->grad_ready) s->grad_ready(s->grad_ready_ctx, l);
    }
    const real *demb = g->dresidual;        // the gradient at the embedding sum, before its dropout
    if (drop > 0) demb = dropped_grad(g->dln, g->dresidual, drop_site(key, -1, DROP_EMBEDDING), drop, N, C, row0);
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_backward) in->input_backward(&m->pt, dp->pe_input, demb, b->pos, N);
    encoder_backward(dp->wte, demb, b->tokens, embed_scale(c), N, C);   // dwte's rows of the batch's tokens += scale * demb
    if (check_tail_backward(m, B, T, drop > 0 ? demb : NULL)) return;
    gpt_norm_gather_layer(m, -1, 0);
    gpt_norm_end(m);
    if (s->grad_ready) s->grad_ready(s->grad_ready_ctx, -1);
}
