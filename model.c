// model.c: the GPT-2 model: parameter layout and initialisation, activations, the forward (the
// transformer block, written once for the batch and the KV cache) and backward passes, and AdamW.
// The layers are in nn/layers.c, attention in nn/attention.c. Shapes follow the legend in model.h.
// Every backward ACCUMULATES (+=) into its outputs.
#include "model.h"

#include "nn/kernels.h"

#include <string.h>
#include <tgmath.h>   // exp, sqrt, tanh follow the type of `real` (expf in the float build)
#ifdef _OPENMP
#include <omp.h>
#endif

static double wall(void) {
#ifdef _OPENMP
    return omp_get_wtime();
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}
// Adds the time of `stmt` to m->prof[k] (where a benchmark reads the share of each kind of work).
#define TIMED(m, k, stmt) do { double t0_ = wall(); stmt; (m)->prof[k] += wall() - t0_; } while (0)
// the linear layers' products in the model's precision (gpt_set_bf16)
#define MATMUL_FORWARD(m) ((m)->bf16 ? matmul_forward_bf16 : matmul_forward)
#define MATMUL_BACKWARD(m) ((m)->bf16 ? matmul_backward_bf16 : matmul_backward)

// ----------------------------------------------------------------------------------------------
// softmax + cross-entropy over the V real classes of each (Vp,) logits row

// probs (N,Vp) = softmax of logits (N,Vp) over the first V columns (the padding columns 0);
// losses (N,) = -log probs[n][targets[n]], when targets (N,) is not NULL. Its backward,
// dlogits = weight * grad_scale * (probs - onehot(target)), is written inline at the top of
// gpt_backward, over probs.
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
    t->transpose = transpose; t->decay = decay; t->init = init; t->std = std; t->scheme = -1; t->layer = -1;
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
            if (kd->per_layer) m->tensors[m->n_tensors - 1].layer = l;
            m->tensors[m->n_tensors - 1].vector = !is_matrix && k != 0;
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
        m->tensors[m->n_tensors - 1].vector = in->param_vector;
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
        m->tensors[m->n_tensors - 1].vector = s->param_vector;
        if (!s->shared) m->tensors[m->n_tensors - 1].layer = l;
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
    m->table_rows = posenc_fixed_table(&m->cfg.pe) ? m->cfg.max_seq_len : 0;
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
    CHECK(!m->table_rows || context <= m->table_rows, "internal: a learned position table of %d rows cannot serve a "
          "context of %d", m->table_rows, context);
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

// The activation buffers for (B, T) on `threads` threads: each slot of m->a / m->ga with its
// element count. alloc_acts allocates exactly these and gpt_memory adds them up, so the memory
// check before a run (train.c) and the allocation cannot disagree.
enum { ACT_MAX = sizeof(Activations) / sizeof(real *) + sizeof(GradActivations) / sizeof(real *) };
static int act_buffers(GPT *m, size_t B, size_t T, int threads, real **slot[ACT_MAX], size_t count[ACT_MAX]) {
    size_t L = m->forward_only ? 1 : m->cfg.n_layer, C = m->cfg.n_embd, NH = m->cfg.n_head, Vp = m->cfg.padded_vocab;
    size_t N = B * T;
    int n = 0;
#define BUF(field, elems) (slot[n] = &(field), count[n++] = (elems))
    Activations *a = &m->a;
    BUF(a->encoded, N * C);
    BUF(a->ln1, L * N * C);
    BUF(a->ln1_mean, L * N);
    BUF(a->ln1_rstd, L * N);
    BUF(a->qkv, L * N * 3 * C);
    BUF(a->atty, L * N * C);
    BUF(a->att_lse, L * B * NH * T);
    BUF(a->residual2, L * N * C);
    BUF(a->ln2, L * N * C);
    BUF(a->ln2_mean, L * N);
    BUF(a->ln2_rstd, L * N);
    BUF(a->fch, L * N * 4 * C);
    BUF(a->fch_gelu, L * N * 4 * C);
    BUF(a->residual3, L * N * C);
    BUF(a->lnf, N * C);
    BUF(a->lnf_mean, N);
    BUF(a->lnf_rstd, N);
    BUF(a->logits, N * Vp);
    BUF(a->probs, N * Vp);
    BUF(a->losses, N);
    BUF(a->scratch, N * C);
    BUF(a->att_scratch, (size_t)threads * ATT_SCRATCH(C / NH));
    if (!m->forward_only) {
        GradActivations *g = &m->ga;
        BUF(g->dresidual, N * C);
        BUF(g->dln, N * C);
        BUF(g->dqkv, N * 3 * C);
        BUF(g->datty, N * C);
        BUF(g->dfch, N * 4 * C);
        BUF(g->dfch_gelu, N * 4 * C);
    }
#undef BUF
    return n;
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
    real **slot[ACT_MAX];
    size_t count[ACT_MAX];
    int n = act_buffers(m, (size_t)B, (size_t)T, max_threads(), slot, count);
    for (int i = 0; i < n; i++) *slot[i] = xmalloc_big(sizeof(real) * count[i]);
    m->act_B = B; m->act_T = T; m->act_threads = max_threads(); m->act_forward_only = m->forward_only;
}

TensorInfo *gpt_tensor_list(const GPTConfig *cfg, int *n, size_t *num_params) {
    GPT m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg;
    size_t off[N_KINDS], pe_input_off, pe_layer_off[PE_MAX_LAYERS];
    layout(&m, off);
    layout_pe(&m, &pe_input_off, pe_layer_off);
    *n = m.n_tensors;
    *num_params = m.num_params;
    return m.tensors;
}

GPTMemory gpt_memory(const GPTConfig *cfg, int B, int T, int forward_only, int threads) {
    GPT m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg;
    m.forward_only = forward_only;
    size_t off[N_KINDS], pe_input_off, pe_layer_off[PE_MAX_LAYERS];
    layout(&m, off);
    layout_pe(&m, &pe_input_off, pe_layer_off);
    free(m.tensors);
    GPTMemory r = { 0 };
    r.params = r.grads = (double)sizeof(real) * m.num_params;
    r.adam = forward_only ? 0 : 2 * r.params;
    real **slot[ACT_MAX];
    size_t count[ACT_MAX];
    int n = act_buffers(&m, (size_t)B, (size_t)T, threads, slot, count);
    for (int i = 0; i < n; i++) r.acts += (double)sizeof(real) * count[i];
    return r;
}

void gpt_set_forward_only(GPT *m, int on) { m->forward_only = on != 0; }
void gpt_set_attention_stats(GPT *m, double *acc) { m->attn_stats = acc; }

// ----------------------------------------------------------------------------------------------
// dropout's keys: the step's key (gpt_set_dropout), then one per layer and site, then one per
// row of the site (nn/kernels.h)

enum { DROP_EMBEDDING, DROP_ATTENTION, DROP_ATTN_OUT, DROP_MLP_OUT };   // the sites; layer -1: the embedding

void gpt_set_bf16(GPT *m, int on) { m->bf16 = on != 0; }

void gpt_set_dropout(GPT *m, double p, uint64_t key) {
    CHECK(p >= 0 && p < 1, "internal: dropout rate %g outside [0, 1)", p);
    m->dropout = p;
    m->drop_key = key;
}

void gpt_set_dropout_rows(GPT *m, uint64_t b0) { m->drop_b0 = b0; }

uint64_t gpt_dropout_key(uint64_t seed, int64_t step, int micro) {
    return mix64(mix64(mix64(seed ^ 0xD50F0D50F0D50Full) + (uint64_t)step) + (uint64_t)micro);
}

// the key of site `site` of layer `layer` under the step's key
static uint64_t drop_site(uint64_t key, int layer, int site) {
    return mix64(key ^ mix64(((uint64_t)(layer + 1) << 2) + (uint64_t)site));
}

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

// layer l's attention inputs for the batch b, with the last forward's dropout (gpt_forward sets it
// before its layers run); grads: 1 for the backward (the scheme's parameter gradients)
static AttnPos attn_pos(const GPT *m, const Batch *b, int l, int grads) {
    AttnPos ap = { .pos = b->pos, .doc = b->doc, .scheme = posenc_scheme(m->cfg.pe.layer[l]), .tables = &m->pt,
                   .pe_params = m->p.pe_layer[l], .pe_dparams = grads ? m->g.pe_layer[l] : NULL,
                   .pe_nparams = m->pe_layer_n[l], .dropout = m->act_dropout,
                   .drop_key = drop_site(m->act_drop_key, l, DROP_ATTENTION), .drop_b0 = m->act_drop_b0 };
    return ap;
}

// out = a + b, each (n,) (n = N*C: a residual stream and a branch). Its backward is the identity
// for both: block_backward hands dL/dout on to each side unchanged.
static void residual_add(real *out, const real *a, const real *b, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

int gpt_position_limit(const GPT *m) {
    return posenc_position_limit(&m->cfg.pe, &m->pt, m->table_rows ? m->table_rows : m->cfg.max_seq_len);
}

static void check_positions(const GPT *m, const int *pos, size_t N) {
    int limit = gpt_position_limit(m);
    for (size_t n = 0; n < N; n++)
        CHECK(pos[n] >= 0 && pos[n] < limit, "position id %d at index %zu is outside the model's position "
              "tables (0..%d)%s", pos[n], n, limit - 1, limit < m->pt.max_pos ? ": its input table has one row per "
              "position of the context" : "");
}

// ----------------------------------------------------------------------------------------------
// anomaly detection (gpt_set_detect_anomaly): watch() after every tensor a checked call writes

// A tensor's shape for messages: one word per dimension ("b t c"), row-major sizes
typedef struct { const char *names; int rank; size_t size[4]; } Dims;
static Dims dims(const char *names, size_t d0, size_t d1, size_t d2, size_t d3) {
    Dims d = { names, 1, { d0, d1, d2, d3 } };
    for (const char *c = names; *c; c++) d.rank += *c == ' ';
    return d;
}
static Dims btc(size_t B, size_t T, size_t X) { return dims("b t c", B, T, X, 0); }

// A call that may check starts (pass: "forward", ...): with on, m->anomaly is cleared and watch() scans
static void begin_checks(GPT *m, const char *pass, int on) {
    m->checking = on;
    if (!on) return;
    memset(&m->anomaly, 0, sizeof m->anomaly);
    m->anomaly.pass = pass;
}

// The first bad value of the call: tensor `name` of layer `layer`, shape d, as scan s found it
static void record_anomaly(GPT *m, int layer, const char *name, Dims d, FiniteScan s) {
    Anomaly *a = &m->anomaly;
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
    snprintf(m->anomaly.before, sizeof m->anomaly.before, "%s", name);
    m->anomaly.before_max = s.maxabs;
}

// After a checked call writes x (shape d): returns 1 when the call has met its first bad value (the
// call then stops: past a NaN, attention's own divergence check would end the process). One branch
// when detection is off.
static int watch(GPT *m, int layer, const char *name, const real *x, Dims d) {
    if (!m->checking) return 0;
    size_t n = 1;
    for (int k = 0; k < d.rank; k++) n *= d.size[k];
    note_scan(m, layer, name, d, finite_scan(x, n));
    return m->anomaly.found;
}

// Every tensor of layer `layer` (-1: outside the blocks) in the buffer base (params or grads);
// prefix "grad." names a gradient; returns 1 as watch does
static int watch_tensors(GPT *m, int layer, const real *base, const char *prefix) {
    if (!m->checking) return 0;
    for (int k = 0; k < m->n_tensors; k++) {
        const TensorInfo *ti = &m->tensors[k];
        if (ti->layer != layer) continue;
        char name[112];
        snprintf(name, sizeof name, "%s%s", prefix, ti->name);
        if (watch(m, layer, name, base + ti->offset, ti->rows == 1 ? dims("i", ti->cols, 0, 0, 0) :
                  dims("row col", ti->rows, ti->cols, 0, 0))) return 1;
    }
    return 0;
}

// Every parameter, the tensors outside the blocks first, then block by block
static void watch_parameters(GPT *m) {
    for (int l = -1; l < m->cfg.n_layer && !watch_tensors(m, l, m->params, ""); l++) {}
}

void gpt_set_detect_anomaly(GPT *m, int on) {
    m->detect_anomaly = on != 0;
    memset(&m->anomaly, 0, sizeof m->anomaly);
}

int gpt_check_parameters(GPT *m) {
    begin_checks(m, "parameters", 1);
    watch_parameters(m);
    return m->anomaly.found;
}

// Layer l's attention from its qkv (N,3C, hooked) into atty (N,C): the tiled kernel over the batch
// (B,T) when kc is NULL; otherwise the chunk's T queries (B = 1) against the KV cache, to which
// the chunk's keys and values are appended first.
static void block_attention(GPT *m, int l, const LayerActs *la, const AttnPos *ap, int B, int T, KVCache *kc) {
    int C = m->cfg.n_embd, NH = m->cfg.n_head;
    if (!kc) {
        attention_forward(la->atty, la->att_lse, la->qkv, ap, m->a.att_scratch, B, T, C, NH);
        if (m->attn_stats)        // gpt_set_attention_stats: this layer's statistics, while its qkv and lse exist
            attention_stats(m->attn_stats + (size_t)l * NH * ATT_NSTAT, la->qkv, la->att_lse, ap, m->a.att_scratch, B, T, C, NH);
        return;
    }
    int P = kc->len;
    real *Kl = kc->k + (size_t)l * kc->cap * C, *Vl = kc->v + (size_t)l * kc->cap * C;
    for (int t = 0; t < T; t++) {      // append this chunk's keys and values
        memcpy(Kl + (size_t)(P + t) * C, la->qkv + (size_t)t * 3 * C + C, sizeof(real) * C);
        memcpy(Vl + (size_t)(P + t) * C, la->qkv + (size_t)t * 3 * C + 2 * C, sizeof(real) * C);
    }
    KVKeys kv = { .k = Kl, .v = Vl, .pos = kc->pos, .doc = kc->doc, .P = P, .rows = kc->att_row, .row_cap = kc->cap };
    attention_forward_cached(la->atty, la->qkv, ap, &kv, T, C, NH);
}

// Transformer block l on the N = B*T tokens of residual (N,C), into layer l's activations; returns
// its output residual3 (N,C). ap: the layer's positions; kc: NULL, or the KV cache (block_attention).
// Its backward is block_backward, below.
//   residual2 = residual + attproj(attention(qkv(ln1(residual))))      (hook 2 on q, k; hook 3 inside)
//   residual3 = residual2 + fcproj(gelu(fc(ln2(residual2))))
// With dropout (the batch forward only): attention drops inside, and each projection is dropped
// before its residual add.
static const real *block_forward(GPT *m, int l, const real *residual, const AttnPos *ap, int B, int T, KVCache *kc) {
    int C = m->cfg.n_embd, NH = m->cfg.n_head;
    size_t N = (size_t)B * T;
    const ParamTensors *p = &m->p;
    real *proj = m->a.scratch;                                  // (N,C) each projection before its residual add
    double drop = kc ? 0 : m->act_dropout;
    LayerActs la = layer_acts(m, l, B, T);
    layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, residual, p->ln1w + l * C, p->ln1b + l * C, N, C);
    if (watch(m, l, "ln1", la.ln1, btc(B, T, C))) return NULL;
    TIMED(m, PROF_MATMUL, MATMUL_FORWARD(m)(la.qkv, la.ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, N, C, 3 * C));
    if (watch(m, l, "qkv", la.qkv, btc(B, T, 3 * C))) return NULL;
    TIMED(m, PROF_ATTENTION, qk_hook(la.qkv, ap, N, C, NH, QK_FORWARD));                                      // hook 2
    if ((ap->scheme->hooks & PE_HOOK_QK) && watch(m, l, "qkv after hook 2", la.qkv, btc(B, T, 3 * C))) return NULL;
    if (m->checking && ap->scheme->bias_forward) {                                                            // hook 3
        note_scan(m, l, "hook 3 bias", dims("b h i j", B, NH, T, T), attention_bias_scan(ap, B, T, NH));
        if (m->anomaly.found) return NULL;
    }
    TIMED(m, PROF_ATTENTION, block_attention(m, l, &la, ap, B, T, kc));
    if (watch(m, l, "atty", la.atty, btc(B, T, C))) return NULL;
    TIMED(m, PROF_MATMUL, MATMUL_FORWARD(m)(proj, la.atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, N, C, C));
    if (drop > 0) dropout_forward(proj, proj, drop_site(m->act_drop_key, l, DROP_ATTN_OUT), drop, N, C, m->act_drop_b0 * T);
    if (watch(m, l, "attproj", proj, btc(B, T, C))) return NULL;
    residual_add(la.residual2, residual, proj, N * C);
    if (watch(m, l, "residual2", la.residual2, btc(B, T, C))) return NULL;
    layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, p->ln2w + l * C, p->ln2b + l * C, N, C);
    if (watch(m, l, "ln2", la.ln2, btc(B, T, C))) return NULL;
    TIMED(m, PROF_MATMUL, MATMUL_FORWARD(m)(la.fch, la.ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, N, C, 4 * C));
    if (watch(m, l, "fch", la.fch, btc(B, T, 4 * C))) return NULL;
    gelu_forward(la.fch_gelu, la.fch, N * 4 * C);
    if (watch(m, l, "fch_gelu", la.fch_gelu, btc(B, T, 4 * C))) return NULL;
    TIMED(m, PROF_MATMUL, MATMUL_FORWARD(m)(proj, la.fch_gelu, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, N, 4 * C, C));
    if (drop > 0) dropout_forward(proj, proj, drop_site(m->act_drop_key, l, DROP_MLP_OUT), drop, N, C, m->act_drop_b0 * T);
    if (watch(m, l, "fcproj", proj, btc(B, T, C))) return NULL;
    residual_add(la.residual3, la.residual2, proj, N * C);
    if (watch(m, l, "residual3", la.residual3, btc(B, T, C))) return NULL;
    return la.residual3;
}

// buf (N,C) = the gradient dout (N,C) through a dropout site's mask (key, rate p, first global
// row row0); returns buf
static const real *dropped_grad(real *buf, const real *dout, uint64_t key, double p, size_t N, int C, uint64_t row0) {
    memset(buf, 0, sizeof(real) * N * C);
    dropout_backward(buf, dout, key, p, (int)N, C, row0);
    return buf;
}

// The backward of block_forward (read them side by side): block l's parameter gradients, and
// g->dresidual (N,C) carried from the block's output, dL/dresidual3, to its input, dL/dresidual.
// The forward's steps in reverse:
//   fcproj -> gelu -> fc -> ln2, into dresidual: now dL/dresidual2
//   attproj -> attention (hook 3's bias gradient inside) -> hook 2's transpose on dq, dk -> qkv -> ln1,
//   into dresidual: now dL/dresidual
// The skip connections need no code of their own: residual3 = residual2 + branch, so dL/dresidual2
// is dL/dresidual3 (the skip path, already in dresidual) plus the branch's share, which
// layernorm_backward adds (+=) into dresidual. Each other gradient buffer is zeroed before the
// backward that accumulates into it. Returns 1 when a check (--detect-anomaly) stopped the backward.
static int block_backward(GPT *m, int l, const Batch *b) {
    int B = b->B, T = b->T, C = m->cfg.n_embd, NH = m->cfg.n_head;
    size_t N = (size_t)B * T;
    const Activations *a = &m->a;
    GradActivations *g = &m->ga;
    const ParamTensors *p = &m->p;
    ParamTensors *dp = &m->g;
    double drop = m->act_dropout;          // the forward's dropout: its masks again, from its key
    uint64_t key = m->act_drop_key, row0 = m->act_drop_b0 * (uint64_t)T;
    const real *residual = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * N * C;   // the block's input
    LayerActs la = layer_acts(m, l, B, T);
    AttnPos ap = attn_pos(m, b, l, 1);


    // residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))): dresidual reaches both terms.
    // g->dln is scratch for the gradient at a LayerNorm's output (ln_f's above, ln2's, then ln1's)
    // and, with dropout, at a projection's output (dresidual through the branch's mask).
    const real *dproj = g->dresidual;
    if (drop > 0) {
        dproj = dropped_grad(g->dln, g->dresidual, drop_site(key, l, DROP_MLP_OUT), drop, N, C, row0);
        if (watch(m, l, "dfcproj", dproj, btc(B, T, C))) return 1;
    }
    memset(g->dfch_gelu, 0, sizeof(real) * N * 4 * C);
    TIMED(m, PROF_MATMUL, MATMUL_BACKWARD(m)(g->dfch_gelu, dp->fcprojw + (size_t)l * 4 * C * C, dp->fcprojb + l * C, dproj,
                    la.fch_gelu, p->fcprojw + (size_t)l * 4 * C * C, N, 4 * C, C));
    if (watch(m, l, "dfch_gelu", g->dfch_gelu, btc(B, T, 4 * C))) return 1;
    memset(g->dfch, 0, sizeof(real) * N * 4 * C);
    gelu_backward(g->dfch, la.fch, g->dfch_gelu, N * 4 * C);
    if (watch(m, l, "dfch", g->dfch, btc(B, T, 4 * C))) return 1;
    memset(g->dln, 0, sizeof(real) * N * C);
    TIMED(m, PROF_MATMUL, MATMUL_BACKWARD(m)(g->dln, dp->fcw + (size_t)l * 4 * C * C, dp->fcb + l * 4 * C, g->dfch, la.ln2,
                    p->fcw + (size_t)l * 4 * C * C, N, C, 4 * C));
    if (watch(m, l, "dln2", g->dln, btc(B, T, C))) return 1;
    layernorm_backward(g->dresidual, dp->ln2w + l * C, dp->ln2b + l * C, g->dln, la.residual2, p->ln2w + l * C,
                       la.ln2_mean, la.ln2_rstd, N, C);
    if (watch(m, l, "dresidual2", g->dresidual, btc(B, T, C))) return 1;
    // residual2 = residual + attproj(attention(qkv(ln1(residual))))
    dproj = g->dresidual;
    if (drop > 0) {
        dproj = dropped_grad(g->dln, g->dresidual, drop_site(key, l, DROP_ATTN_OUT), drop, N, C, row0);
        if (watch(m, l, "dattproj", dproj, btc(B, T, C))) return 1;
    }
    memset(g->datty, 0, sizeof(real) * N * C);
    TIMED(m, PROF_MATMUL, MATMUL_BACKWARD(m)(g->datty, dp->attprojw + (size_t)l * C * C, dp->attprojb + l * C, dproj, la.atty,
                    p->attprojw + (size_t)l * C * C, N, C, C));
    if (watch(m, l, "datty", g->datty, btc(B, T, C))) return 1;
    memset(g->dqkv, 0, sizeof(real) * N * 3 * C);
    TIMED(m, PROF_ATTENTION, attention_backward(g->dqkv, a->att_scratch, g->datty, la.qkv, la.atty, la.att_lse, &ap, B, T, C, NH));
    if (watch(m, l, "dqkv", g->dqkv, btc(B, T, 3 * C))) return 1;
    TIMED(m, PROF_ATTENTION, qk_hook(g->dqkv, &ap, N, C, NH, QK_BACKWARD));  // gradient w.r.t. the unrotated q and k
    if ((ap.scheme->hooks & PE_HOOK_QK) && watch(m, l, "dqkv before hook 2", g->dqkv, btc(B, T, 3 * C))) return 1;
    memset(g->dln, 0, sizeof(real) * N * C);
    TIMED(m, PROF_MATMUL, MATMUL_BACKWARD(m)(g->dln, dp->qkvw + (size_t)l * 3 * C * C, dp->qkvb + l * 3 * C, g->dqkv, la.ln1,
                    p->qkvw + (size_t)l * 3 * C * C, N, C, 3 * C));
    if (watch(m, l, "dln1", g->dln, btc(B, T, C))) return 1;
    layernorm_backward(g->dresidual, dp->ln1w + l * C, dp->ln1b + l * C, g->dln, residual, p->ln1w + l * C,
                       la.ln1_mean, la.ln1_rstd, N, C);
    if (watch(m, l, "dresidual", g->dresidual, btc(B, T, C))) return 1;        // at the block's input
    if (watch_tensors(m, l, m->grads, "grad.")) return 1;          // the block's parameter gradients
    return 0;
}

// A forward that met an anomaly stops there: no loss, and no backward of it
static double forward_stopped(GPT *m) {
    m->loss = NAN; m->weight_sum = 0; m->batch = NULL;
    return NAN;
}

double gpt_forward(GPT *m, const Batch *b) {
    const GPTConfig *c = &m->cfg;
    int B = b->B, T = b->T, L = c->n_layer, C = c->n_embd, V = c->vocab_size, Vp = c->padded_vocab;
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
    m->act_dropout = m->dropout; m->act_drop_key = m->drop_key; m->act_drop_b0 = m->drop_b0;
    Activations *a = &m->a;
    const ParamTensors *p = &m->p;
    begin_checks(m, "forward", m->detect_anomaly);

    encoder_forward(a->encoded, b->tokens, p->wte, N, C);
    if (watch(m, -1, "encoded", a->encoded, btc(B, T, C))) return forward_stopped(m);
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_forward) {
        in->input_forward(&m->pt, p->pe_input, a->encoded, b->pos, N);   // hook 1
        if (watch(m, -1, "encoded after hook 1", a->encoded, btc(B, T, C))) return forward_stopped(m);
    }
    if (m->act_dropout > 0) {
        dropout_forward(a->encoded, a->encoded, drop_site(m->act_drop_key, -1, DROP_EMBEDDING), m->act_dropout, N, C,
                        m->act_drop_b0 * T);
        if (watch(m, -1, "encoded after dropout", a->encoded, btc(B, T, C))) return forward_stopped(m);
    }

    const real *residual = a->encoded;
    for (int l = 0; l < L; l++) {
        AttnPos ap = attn_pos(m, b, l, 0);
        residual = block_forward(m, l, residual, &ap, B, T, NULL);
        if (!residual) return forward_stopped(m);
    }
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, residual, p->lnfw, p->lnfb, N, C);
    if (watch(m, -1, "lnf", a->lnf, btc(B, T, C))) return forward_stopped(m);
    TIMED(m, PROF_MATMUL, MATMUL_FORWARD(m)(a->logits, a->lnf, p->wte, NULL, N, C, Vp));     // LM head tied to wte
    if (watch(m, -1, "logits", a->logits, dims("b t v", B, T, Vp, 0))) return forward_stopped(m);
    crossentropy_forward(a->probs, a->losses, a->logits, b->targets, N, V, Vp);
    if (watch(m, -1, "probs", a->probs, dims("b t v", B, T, Vp, 0))) return forward_stopped(m);
    if (b->targets && watch(m, -1, "losses", a->losses, dims("b t", B, T, 0, 0))) return forward_stopped(m);

    double sum = 0, wsum = 0;
    if (b->targets)
        for (size_t n = 0; n < N; n++) { sum += (double)b->weights[n] * a->losses[n]; wsum += b->weights[n]; }
    m->weight_sum = wsum;
    m->loss = wsum > 0 ? sum / wsum : 0;
    return m->loss;
}

// The attention probabilities of one layer, head and batch row of the last gpt_forward: out (T, T),
// recomputed from the row's q, k and log-sum-exps by attention_head_probs (nn/attention.c).
void attention_probs(const GPT *m, int layer, int b, int head, real *out) {
    CHECK(!m->act_forward_only, "internal: attention_probs needs every layer's activations; the last forward "
          "was forward-only (gpt_set_forward_only)");
    const Batch *bt = m->batch;
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
    alloc_acts(m, 1, T);
    m->batch = NULL;                       // no backward through a cached forward
    begin_checks(m, "forward", 0);         // and no anomaly detection
    if (max_threads() > kc->threads) {     // the thread count grew since kv_cache_init
        free(kc->att_row);
        kc->threads = max_threads();
        kc->att_row = xmalloc(sizeof(real) * (size_t)kc->threads * kc->cap);
    }
    Activations *a = &m->a;
    const ParamTensors *p = &m->p;
    for (int t = 0; t < T; t++) { kc->pos[P + t] = pos[t]; kc->doc[P + t] = 0; }

    encoder_forward(a->encoded, tokens, p->wte, T, C);
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_forward) in->input_forward(&m->pt, p->pe_input, a->encoded, pos, T);
    const real *residual = a->encoded;
    for (int l = 0; l < L; l++) {
        AttnPos ap = { .pos = pos, .doc = kc->doc + P, .scheme = posenc_scheme(c->pe.layer[l]), .tables = &m->pt,
                       .pe_params = m->p.pe_layer[l] };
        residual = block_forward(m, l, residual, &ap, 1, T, kc);
    }
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, residual, p->lnfw, p->lnfb, T, C);
    MATMUL_FORWARD(m)(a->logits, a->lnf, p->wte, NULL, T, C, Vp);
    kc->len = P + T;
}

void gpt_zero_grad(GPT *m) { memset(m->grads, 0, sizeof(real) * m->num_params); }

// The backward of gpt_forward (model.h), its steps in reverse: the cross-entropy (the backward of
// crossentropy_forward, written inline: dlogits over probs) -> the LM head, tied to wte (dwte's first
// contribution) -> ln_f -> blocks L-1..0 (block_backward, each from dL/dresidual3 to dL/dresidual
// in g->dresidual) -> the embedding's dropout -> hook 1's input_backward (dpe_input) -> the token
// rows of wte (encoder_backward: dwte's second contribution).
void gpt_backward(GPT *m, double grad_scale) {
    CHECK(!m->act_forward_only, "internal: gpt_backward after a forward-only pass (gpt_set_forward_only): "
          "the activations of the earlier layers are gone");
    const Batch *b = m->batch;
    CHECK(b && b->targets, "internal: gpt_backward needs a forward pass with targets first");
    const GPTConfig *c = &m->cfg;
    int B = b->B, T = b->T, L = c->n_layer, C = c->n_embd, V = c->vocab_size, Vp = c->padded_vocab;
    size_t N = (size_t)B * T;
    Activations *a = &m->a;
    GradActivations *g = &m->ga;
    const ParamTensors *p = &m->p;
    ParamTensors *dp = &m->g;
    double drop = m->act_dropout;          // the forward's dropout: its masks again, from its key
    uint64_t key = m->act_drop_key, row0 = m->act_drop_b0 * (uint64_t)T;

    // dloss_n/dlogits = w_n * grad_scale * (probs - onehot(target)), written over probs: after a
    // backward the probabilities are gone (dump_step copies the logits before it calls backward)
    real *dlogits = a->probs;
    begin_checks(m, "backward", m->detect_anomaly);
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        real *d = dlogits + n * Vp;
        real s = (real)(b->weights[n] * grad_scale);
        for (int v = 0; v < V; v++) d[v] *= s;
        d[b->targets[n]] -= s;
    }
    if (watch(m, -1, "dlogits", dlogits, dims("b t v", B, T, Vp, 0))) return;
    const real *residual_last = L ? a->residual3 + (size_t)(L - 1) * N * C : a->encoded;
    memset(g->dln, 0, sizeof(real) * N * C);
    // logits = lnf @ wte^T: dlnf (N,C), and dwte (Vp,C) += dlogits^T lnf (the tied head's share)
    TIMED(m, PROF_MATMUL, MATMUL_BACKWARD(m)(g->dln, dp->wte, NULL, dlogits, a->lnf, p->wte, N, C, Vp));
    if (watch(m, -1, "dlnf", g->dln, btc(B, T, C))) return;
    memset(g->dresidual, 0, sizeof(real) * N * C);
    layernorm_backward(g->dresidual, dp->lnfw, dp->lnfb, g->dln, residual_last, p->lnfw, a->lnf_mean, a->lnf_rstd, N, C);
    if (watch(m, L - 1, "dresidual3", g->dresidual, btc(B, T, C))) return;

    for (int l = L - 1; l >= 0; l--) {                      // dresidual: dL/dresidual3 of block l
        if (block_backward(m, l, b)) return;                   // now dL/dresidual at its input
        if (m->grad_ready) m->grad_ready(m->grad_ready_ctx, l);   // block l's gradients are final: MPI may reduce them
    }
    const real *demb = g->dresidual;        // the gradient at the embedding sum, before its dropout
    if (drop > 0) {
        demb = dropped_grad(g->dln, g->dresidual, drop_site(key, -1, DROP_EMBEDDING), drop, N, C, row0);
        if (watch(m, -1, "dencoded before dropout", demb, btc(B, T, C))) return;
    }
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_backward) in->input_backward(&m->pt, dp->pe_input, demb, b->pos, N);
    encoder_backward(dp->wte, demb, b->tokens, N, C);      // dwte's rows of the batch's tokens += demb
    if (watch_tensors(m, -1, m->grads, "grad.")) return;     // wte, ln_f, the input scheme's and shared tensors
    if (m->grad_ready) m->grad_ready(m->grad_ready_ctx, -1);
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

double sum_squares_ordered(const real *x, size_t n) {
    int nt = max_threads();
    double *part = xcalloc((size_t)nt, sizeof(double)), ss = 0;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(n, &lo, &hi);
        double acc = 0;
        #pragma omp simd reduction(+:acc)
        for (size_t i = lo; i < hi; i++) acc += (double)x[i] * x[i];
        part[thread_id()] = acc;
    }
    for (int t = 0; t < nt; t++) ss += part[t];   // in thread order: the same bits for the same threads
    free(part);
    return ss;
}

double gpt_grad_norm(GPT *m) {
    double t0 = wall();
    double ss = sum_squares_ordered(m->grads, m->num_params);
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
    gpt_project_parameters(m);
    begin_checks(m, "optimiser step", m->detect_anomaly);
    watch_parameters(m);
    m->prof[PROF_OPTIMIZER] += wall() - t0;
}

void gpt_project_parameters(GPT *m) {
    // a scheme may constrain its parameters (KERPLE keeps r1, r2 >= 0.01 as the paper's code does)
    for (int k = 0; k < m->n_tensors; k++) {
        const TensorInfo *ti = &m->tensors[k];
        const PosScheme *sc = ti->scheme >= 0 ? posenc_scheme(ti->scheme) : NULL;
        if (sc && sc->project) { PosDims d = dims_of(&m->cfg); sc->project(&m->cfg.pe, &d, m->params + ti->offset); }
    }
}

void gpt_adamw_span(GPT *m, const AdamWConfig *o, int t, double grad_scale, size_t offset, size_t n,
                    const real *grad, real *mm, real *vv, int decay) {
    double t0 = wall();
    CHECK(offset + n <= m->num_params, "internal: gpt_adamw_span [%zu, %zu) past the %zu parameters", offset, offset + n,
          m->num_params);
    // the factors exactly as gpt_adamw computes them, so a slice gets the bits the whole would
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    real ibc1 = (real)(1 / bc1), ibc2 = (real)(1 / bc2), gs = (real)grad_scale;
    real wd = decay ? (real)o->weight_decay : 0;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(n, &lo, &hi);
        if (lo < hi) adamw_span(m->params + offset + lo, mm + lo, vv + lo, grad + lo, hi - lo, o, ibc1, ibc2, wd, gs);
    }
    m->prof[PROF_OPTIMIZER] += wall() - t0;
}

const TensorInfo *gpt_find_tensor(const GPT *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++) if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}
