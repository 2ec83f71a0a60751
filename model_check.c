// model_check.c: anomaly detection (gpt_set_detect_anomaly, ./train --detect-anomaly). model.c's
// passes call one check per stage (the embedding, each block, the head; forward and backward) once
// the stage has run: a scan of the tensors it left, in the order it wrote them. Only when one holds
// a NaN or Inf is the stage replayed from its inputs, checked after each operation (watch), so that
// the message names the first tensor that went bad, as a check after every operation would: some of
// a stage's tensors are gone when it ends (hook 2 rotates qkv and its gradient in place, the
// projections and g->dln are scratch, dresidual is added to). A bad value in one of those reaches a
// tensor that stays (hook 2 turns pairs of values, a product or a LayerNorm spreads one over its row,
// a sum keeps it), so the scan sees it. The replay starts from the stage's input, kept by check_keep
// (in forward-only mode a block writes its output over its input; a block's backward adds into
// g->dresidual); it adds no attention statistics. Values are never changed: the replay computes the
// bits the stage computed. AdamW's and the parameters' checks are here too (gpt_watch_parameters).
#include "model_ops.h"

#include <string.h>
#include <tgmath.h>

// ----------------------------------------------------------------------------------------------
// scans and messages

// A tensor's shape for messages: one word per dimension ("b t c"), row-major sizes
typedef struct { const char *names; int rank; size_t size[4]; } Dims;
static Dims dims(const char *names, size_t d0, size_t d1, size_t d2, size_t d3) {
    Dims d = { names, 1, { d0, d1, d2, d3 } };
    for (const char *c = names; *c; c++) d.rank += *c == ' ';
    return d;
}
static Dims btc(size_t B, size_t T, size_t X) { return dims("b t c", B, T, X, 0); }

void check_begin(GPT *m, const char *pass, int on) {
    GPTRunState *s = &m->state;
    s->checking = on;
    if (!on) return;
    memset(&s->anomaly, 0, sizeof s->anomaly);
    s->anomaly.pass = pass;
}

// The first bad value of the call: tensor `name` of layer `layer`, shape d, as scan s found it
static void record_anomaly(GPT *m, int layer, const char *name, Dims d, FiniteScan s) {
    Anomaly *a = &m->state.anomaly;
    a->found = 1; a->layer = layer; a->index = s.first; a->bad = s.bad; a->n = s.n;
    snprintf(a->tensor, sizeof a->tensor, "%s", name);
    char at[160] = "", word[16], where[32] = "";
    size_t rest = s.first;
    const char *w = d.names;
    for (int k = 0; k < d.rank; k++) {          // the flat index as coordinates, outermost first
        size_t stride = 1;
        for (int j = k + 1; j < d.rank; j++) stride *= d.size[j];
        int len = (int)strcspn(w, " ");
        snprintf(word, sizeof word, "%.*s", len, w);
        w += len + (w[len] == ' ');
        size_t used = strlen(at);
        snprintf(at + used, sizeof at - used, "%s%s=%zu", k ? ", " : "", word, rest / stride);
        rest %= stride;
    }
    if (layer >= 0) snprintf(where, sizeof where, "layer %d ", layer);
    const char *kind = isnan(s.first_value) ? "NaN" : s.first_value > 0 ? "+Inf" : "-Inf";
    int len = snprintf(a->msg, sizeof a->msg, "%s%s: %s has %s at (%s), first bad of %zu values (of %zu)",
                       where, a->pass, name, kind, at, s.bad, s.n);
    if (a->before[0] && len > 0 && (size_t)len < sizeof a->msg)
        snprintf(a->msg + len, sizeof a->msg - len, "; the tensor checked before it, %s, was finite (max |x| = %g)",
                 a->before, a->before_max);
}

// Scan s of tensor `name` (layer, shape d): records the call's first bad one, else remembers it as
// the last finite tensor
static void note_scan(GPT *m, int layer, const char *name, Dims d, FiniteScan s) {
    if (s.bad) { record_anomaly(m, layer, name, d, s); return; }
    snprintf(m->state.anomaly.before, sizeof m->state.anomaly.before, "%s", name);
    m->state.anomaly.before_max = s.maxabs;
}

// After a checked call writes x (shape d): returns 1 when the call has met its first bad value (the
// call then stops: past a NaN, attention's own divergence check would end the process).
static int watch(GPT *m, int layer, const char *name, const real *x, Dims d) {
    if (!m->state.checking) return 0;
    size_t n = 1;
    for (int k = 0; k < d.rank; k++) n *= d.size[k];
    note_scan(m, layer, name, d, finite_scan(x, n));
    return m->state.anomaly.found;
}

// Every tensor of layer `layer` (-1: outside the blocks) in the buffer base (params or grads);
// prefix "grad." names a gradient; returns 1 as watch does
static int watch_tensors(GPT *m, int layer, const real *base, const char *prefix) {
    if (!m->state.checking) return 0;
    for (int k = 0; k < m->weights.n_tensors; k++) {
        const TensorInfo *ti = &m->weights.tensors[k];
        if (ti->layer != layer) continue;
        char name[112];
        snprintf(name, sizeof name, "%s%s", prefix, ti->name);
        if (watch(m, layer, name, base + ti->offset, ti->rows == 1 ? dims("i", ti->cols, 0, 0, 0) :
                  dims("row col", ti->rows, ti->cols, 0, 0))) return 1;
    }
    return 0;
}

// A call that checks every parameter starts (check_begin), then scans them, the tensors outside
// the blocks first, then block by block (gpt_check_parameters; gpt_adamw, model_optim.c)
void gpt_watch_parameters(GPT *m, const char *pass, int on) {
    check_begin(m, pass, on);
    for (int l = -1; l < m->cfg.n_layer && !watch_tensors(m, l, m->weights.params, ""); l++) {}
}


void gpt_set_detect_anomaly(GPT *m, int on) {
    m->state.detect_anomaly = on != 0;
    memset(&m->state.anomaly, 0, sizeof m->state.anomaly);
}

int gpt_check_parameters(GPT *m) {
    gpt_watch_parameters(m, "parameters", 1);
    return m->state.anomaly.found;
}

// ----------------------------------------------------------------------------------------------
// a stage's scan: the tensors it left, in the order written

// One tensor a stage left, as a check after the operation that wrote it last names it; x NULL:
// hook 3's bias of ap (d: b h i j), which attention computes and keeps nothing of
typedef struct {
    const char *name;
    int layer;
    const real *x;
    Dims d;
    const AttnPos *bias;
} Left;

// Scans t[0..n) in order; returns 1 at the first bad one (m->state.anomaly names it)
static int scan(GPT *m, const Left *t, int n) {
    for (int k = 0; k < n; k++) {
        const Dims *d = &t[k].d;
        size_t count = 1;
        for (int j = 0; j < d->rank; j++) count *= d->size[j];
        FiniteScan sc = t[k].x ? finite_scan(t[k].x, count)
                               : attention_bias_scan(t[k].bias, (int)d->size[0], (int)d->size[2], (int)d->size[1]);
        note_scan(m, t[k].layer, t[k].name, *d, sc);
        if (m->state.anomaly.found) return 1;
    }
    return 0;
}

// The anomaly record as a stage found it, to replay the stage from: the tensor checked before it
typedef struct { char before[112]; double before_max; } Mark;
static Mark mark(const GPT *m) {
    Mark k;
    memcpy(k.before, m->state.anomaly.before, sizeof k.before);
    k.before_max = m->state.anomaly.before_max;
    return k;
}
static void rewind_to(GPT *m, const Mark *k) {
    Anomaly *a = &m->state.anomaly;
    const char *pass = a->pass;
    memset(a, 0, sizeof *a);
    a->pass = pass;
    memcpy(a->before, k->before, sizeof a->before);
    a->before_max = k->before_max;
}
// after a replay, which finds what the scan found (the same bits)
static int replayed(const GPT *m, const char *stage) {
    CHECK(m->state.anomaly.found, "internal: --detect-anomaly's replay of %s found no bad value where its scan did", stage);
    return 1;
}

void check_keep(GPT *m, const real *x, size_t n) {
    GPTRunState *s = &m->state;
    if (!s->checking) return;
    if (n > s->check_cap) {
        free(s->check_saved);
        s->check_saved = xmalloc(sizeof(real) * n);
        s->check_cap = n;
    }
    memcpy(s->check_saved, x, sizeof(real) * n);
}

// ----------------------------------------------------------------------------------------------
// the forward's stages

int check_embedding(GPT *m, const int *tokens, const int *pos, int B, int T, double drop) {
    if (!m->state.checking) return 0;
    const GPTConfig *c = &m->cfg;
    const Activations *a = &m->state.a;
    int C = c->n_embd, hook = posenc_scheme(c->pe.input)->input_forward != NULL;
    const char *sum = hook ? "encoded after hook 1" : "encoded";
    Left t[] = { { sum, -1, drop > 0 ? a->scratch : a->encoded, btc(B, T, C), NULL },
                 { "encoded after dropout", -1, a->encoded, btc(B, T, C), NULL } };
    Mark k = mark(m);
    if (!scan(m, t, drop > 0 ? 2 : 1)) return 0;
    rewind_to(m, &k);
    // replay: embed_forward's operations, each checked
    const ParamTensors *p = &m->weights.p;
    size_t N = (size_t)B * T;
    real *emb = drop > 0 ? m->state.a.scratch : m->state.a.encoded;
    encoder_forward(emb, tokens, p->wte, embed_scale(c), N, C);
    if (watch(m, -1, "encoded", emb, btc(B, T, C))) return 1;
    if (hook) {
        posenc_scheme(c->pe.input)->input_forward(&m->pt, p->pe_input, emb, pos, N);
        if (watch(m, -1, "encoded after hook 1", emb, btc(B, T, C))) return 1;
    }
    if (drop > 0) {
        dropout_forward(m->state.a.encoded, emb, drop_site(m->state.act.drop_key, -1, DROP_EMBEDDING), drop, N, C,
                        m->state.act.drop_row0 * T);
        if (watch(m, -1, "encoded after dropout", m->state.a.encoded, btc(B, T, C))) return 1;
    }
    return replayed(m, "the embedding");
}

// block_forward's operations again from its input (check_keep), each checked
static int replay_block_forward(GPT *m, int l, const AttnPos *ap, int B, int T, KVCache *kc) {
    GPTRunState *s = &m->state;
    int C = m->cfg.n_embd, NH = m->cfg.n_head;
    size_t N = (size_t)B * T;
    const ParamTensors *p = &m->weights.p;
    const real *residual = s->check_saved;
    real *proj = s->a.scratch;
    double drop = kc ? 0 : s->act.dropout;
    AttnPos strict = *ap;                      // past its checked inputs, attention's own divergence stop
    strict.unchecked_scores = 0;
    ap = &strict;
    uint64_t key = s->act.drop_key, row0 = s->act.drop_row0 * T;
    LayerActs la = layer_acts(m, l, B, T);
    layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, residual, p->ln1w + l * C, p->ln1b + l * C, N, C);
    if (watch(m, l, "ln1", la.ln1, btc(B, T, C))) return 1;
    linear_forward(m, la.qkv, la.ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, N, C, 3 * C);
    if (watch(m, l, "qkv", la.qkv, btc(B, T, 3 * C))) return 1;
    rotate_qk(m, la.qkv, ap, N, QK_FORWARD);
    if ((ap->scheme->hooks & PE_HOOK_QK) && watch(m, l, "qkv after hook 2", la.qkv, btc(B, T, 3 * C))) return 1;
    if (ap->scheme->bias_forward) {
        note_scan(m, l, "hook 3 bias", dims("b h i j", B, NH, T, T), attention_bias_scan(ap, B, T, NH));
        if (s->anomaly.found) return 1;
    }
    double *stats = s->act.attn_stats;
    s->act.attn_stats = NULL;                  // added once, by the forward itself
    block_attention(m, l, &la, ap, B, T, kc);
    s->act.attn_stats = stats;
    if (watch(m, l, "atty", la.atty, btc(B, T, C))) return 1;
    linear_forward(m, proj, la.atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, N, C, C);
    if (drop > 0) dropout_forward(proj, proj, drop_site(key, l, DROP_ATTN_OUT), drop, N, C, row0);
    if (watch(m, l, "attproj", proj, btc(B, T, C))) return 1;
    residual_add(la.residual2, residual, proj, N * C);
    if (watch(m, l, "residual2", la.residual2, btc(B, T, C))) return 1;
    layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, p->ln2w + l * C, p->ln2b + l * C, N, C);
    if (watch(m, l, "ln2", la.ln2, btc(B, T, C))) return 1;
    linear_forward(m, la.fch, la.ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, N, C, 4 * C);
    if (watch(m, l, "fch", la.fch, btc(B, T, 4 * C))) return 1;
    gelu_forward(la.fch_gelu, la.fch, N * 4 * C);
    if (watch(m, l, "fch_gelu", la.fch_gelu, btc(B, T, 4 * C))) return 1;
    linear_forward(m, proj, la.fch_gelu, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, N, 4 * C, C);
    if (drop > 0) dropout_forward(proj, proj, drop_site(key, l, DROP_MLP_OUT), drop, N, C, row0);
    if (watch(m, l, "fcproj", proj, btc(B, T, C))) return 1;
    residual_add(la.residual3, la.residual2, proj, N * C);
    return watch(m, l, "residual3", la.residual3, btc(B, T, C));
}

int check_block_forward(GPT *m, int l, const AttnPos *ap, int B, int T, KVCache *kc) {
    if (!m->state.checking) return 0;
    int C = m->cfg.n_embd, NH = m->cfg.n_head, hook = (ap->scheme->hooks & PE_HOOK_QK) != 0;
    LayerActs la = layer_acts(m, l, B, T);
    Left t[] = {
        { "ln1", l, la.ln1, btc(B, T, C), NULL },
        { hook ? "qkv after hook 2" : "qkv", l, la.qkv, btc(B, T, 3 * C), NULL },
        { "hook 3 bias", l, NULL, dims("b h i j", B, NH, T, T), ap },
        { "atty", l, la.atty, btc(B, T, C), NULL },
        { "residual2", l, la.residual2, btc(B, T, C), NULL },     // = the input + attproj
        { "ln2", l, la.ln2, btc(B, T, C), NULL },
        { "fch", l, la.fch, btc(B, T, 4 * C), NULL },
        { "fch_gelu", l, la.fch_gelu, btc(B, T, 4 * C), NULL },
        { "fcproj", l, m->state.a.scratch, btc(B, T, C), NULL },
        { "residual3", l, la.residual3, btc(B, T, C), NULL },
    };
    Mark k = mark(m);
    int bias = ap->scheme->bias_forward != NULL;
    if (!scan(m, t, 2) && !(bias && scan(m, t + 2, 1)) && !scan(m, t + 3, 7)) return 0;
    rewind_to(m, &k);
    replay_block_forward(m, l, ap, B, T, kc);
    return replayed(m, "a block's forward");
}

int check_head_forward(GPT *m, int B, int T, int probs, int losses) {
    if (!m->state.checking) return 0;
    const Activations *a = &m->state.a;
    int C = m->cfg.n_embd, Vp = m->cfg.padded_vocab;
    Left t[] = {
        { "lnf", -1, a->lnf, btc(B, T, C), NULL },
        { "logits", -1, a->logits, dims("b t v", B, T, Vp, 0), NULL },
        { "probs", -1, a->probs, dims("b t v", B, T, Vp, 0), NULL },
        { "losses", -1, a->losses, dims("b t", B, T, 0, 0), NULL },
    };
    return scan(m, t, 2 + (probs != 0) + (probs && losses));      // all kept: no replay
}

// ----------------------------------------------------------------------------------------------
// the backward's stages

int check_head_backward(GPT *m, int B, int T) {
    if (!m->state.checking) return 0;
    const GPTRunState *s = &m->state;
    int C = m->cfg.n_embd, Vp = m->cfg.padded_vocab;
    Left t[] = {
        { "dlogits", -1, s->a.probs, dims("b t v", B, T, Vp, 0), NULL },
        { "dlnf", -1, s->ga.dln, btc(B, T, C), NULL },
        { "dresidual3", m->cfg.n_layer - 1, s->ga.dresidual, btc(B, T, C), NULL },
    };
    return scan(m, t, 3);                                          // all kept: no replay
}

// block_backward's operations again from dL/dresidual3 (check_keep), each checked. The parameter
// gradients are added to a second time: a backward that stops leaves them undefined.
static int replay_block_backward(GPT *m, int l, const Batch *b, int acc) {
    GPTRunState *s = &m->state;
    int B = b->B, T = b->T, C = m->cfg.n_embd;
    size_t N = (size_t)B * T;
    const Activations *a = &s->a;
    GradActivations *g = &s->ga;
    const ParamTensors *p = &m->weights.p;
    ParamTensors *dp = &m->weights.g;
    double drop = s->act.dropout;
    uint64_t key = s->act.drop_key, row0 = s->act.drop_row0 * (uint64_t)T;
    const real *residual = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * N * C;
    LayerActs la = layer_acts(m, l, B, T);
    AttnPos ap = attn_pos(m, b, l, 1);
    memcpy(g->dresidual, s->check_saved, sizeof(real) * N * C);
    const real *dproj = g->dresidual;
    if (drop > 0) {
        dproj = dropped_grad(g->dln, g->dresidual, drop_site(key, l, DROP_MLP_OUT), drop, N, C, row0);
        if (watch(m, l, "dfcproj", dproj, btc(B, T, C))) return 1;
    }
    linear_backward(m, g->dfch_gelu, dp->fcprojw + (size_t)l * 4 * C * C, dp->fcprojb + l * C, dproj, la.fch_gelu,
                    p->fcprojw + (size_t)l * 4 * C * C, N, 4 * C, C, acc);
    if (watch(m, l, "dfch_gelu", g->dfch_gelu, btc(B, T, 4 * C))) return 1;
    gelu_backward(g->dfch, la.fch, g->dfch_gelu, N * 4 * C);
    if (watch(m, l, "dfch", g->dfch, btc(B, T, 4 * C))) return 1;
    linear_backward(m, g->dln, dp->fcw + (size_t)l * 4 * C * C, dp->fcb + l * 4 * C, g->dfch, la.ln2,
                    p->fcw + (size_t)l * 4 * C * C, N, C, 4 * C, acc);
    if (watch(m, l, "dln2", g->dln, btc(B, T, C))) return 1;
    ln_backward(m, g->dresidual, dp->ln2w + l * C, dp->ln2b + l * C, g->dln, la.residual2, p->ln2w + l * C,
                la.ln2_mean, la.ln2_rstd, N, C, acc);
    if (watch(m, l, "dresidual2", g->dresidual, btc(B, T, C))) return 1;
    dproj = g->dresidual;
    if (drop > 0) {
        dproj = dropped_grad(g->dln, g->dresidual, drop_site(key, l, DROP_ATTN_OUT), drop, N, C, row0);
        if (watch(m, l, "dattproj", dproj, btc(B, T, C))) return 1;
    }
    linear_backward(m, g->datty, dp->attprojw + (size_t)l * C * C, dp->attprojb + l * C, dproj, la.atty,
                    p->attprojw + (size_t)l * C * C, N, C, C, acc);
    if (watch(m, l, "datty", g->datty, btc(B, T, C))) return 1;
    attn_backward(m, &la, &ap, B, T);
    if (watch(m, l, "dqkv", g->dqkv, btc(B, T, 3 * C))) return 1;
    rotate_qk(m, g->dqkv, &ap, N, QK_BACKWARD);
    if ((ap.scheme->hooks & PE_HOOK_QK) && watch(m, l, "dqkv before hook 2", g->dqkv, btc(B, T, 3 * C))) return 1;
    linear_backward(m, g->dln, dp->qkvw + (size_t)l * 3 * C * C, dp->qkvb + l * 3 * C, g->dqkv, la.ln1,
                    p->qkvw + (size_t)l * 3 * C * C, N, C, 3 * C, acc);
    if (watch(m, l, "dln1", g->dln, btc(B, T, C))) return 1;
    ln_backward(m, g->dresidual, dp->ln1w + l * C, dp->ln1b + l * C, g->dln, residual, p->ln1w + l * C,
                la.ln1_mean, la.ln1_rstd, N, C, acc);
    return watch(m, l, "dresidual", g->dresidual, btc(B, T, C));
}

// The activations' gradients first; the parameter gradients after them, as a check after each
// operation takes them: those need no replay (the block writes each once, where it stays)
int check_block_backward(GPT *m, int l, const Batch *b, int acc) {
    if (!m->state.checking) return 0;
    const GradActivations *g = &m->state.ga;
    int B = b->B, T = b->T, C = m->cfg.n_embd;
    int hook = (posenc_scheme(m->cfg.pe.layer[l])->hooks & PE_HOOK_QK) != 0;
    Left t[] = {
        { "dfch_gelu", l, g->dfch_gelu, btc(B, T, 4 * C), NULL },
        { "dfch", l, g->dfch, btc(B, T, 4 * C), NULL },
        { "datty", l, g->datty, btc(B, T, C), NULL },
        { hook ? "dqkv before hook 2" : "dqkv", l, g->dqkv, btc(B, T, 3 * C), NULL },
        { "dln1", l, g->dln, btc(B, T, C), NULL },
        { "dresidual", l, g->dresidual, btc(B, T, C), NULL },      // at the block's input
    };
    Mark k = mark(m);
    if (scan(m, t, 6)) {
        rewind_to(m, &k);
        replay_block_backward(m, l, b, acc);
        return replayed(m, "a block's backward");
    }
    return watch_tensors(m, l, m->weights.grads, "grad.");     // the block's parameter gradients
}

int check_tail_backward(GPT *m, int B, int T, const real *demb) {
    if (!m->state.checking) return 0;
    if (demb && watch(m, -1, "dencoded before dropout", demb, btc(B, T, m->cfg.n_embd))) return 1;
    return watch_tensors(m, -1, m->weights.grads, "grad.");   // wte, ln_f, the input scheme's and shared tensors
}
