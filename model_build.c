// model_build.c: the model's parameter layout and allocation: the tensor list (names, shapes, offsets),
// the config check, gpt_build (layout, initialisation, position tables) and gpt_free, the activation
// buffers and the memory a run needs (gpt_memory). Shapes follow the legend in model.h.
#include "model.h"

#include "nn/kernels.h"

#include <string.h>
#include <tgmath.h>   // sqrt, log, cos: the initialisation draws in doubles

// ----------------------------------------------------------------------------------------------
// parameter layout and initialisation

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

// the dimensions a positional scheme sees, from the config (model_optim.c's projection needs them too)
PosDims gpt_pos_dims(const GPTConfig *c) {
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
    PosDims d = gpt_pos_dims(c);
    return posenc_validate(&c->pe, &d, msg, cap);
}

// Registers a tensor; returns its offset. Tensors are laid out in registration order.
static size_t add_tensor(GPT *m, int cap, const char *name, int rows, int cols, int transpose,
                         int decay, int init, double std) {
    CHECK(m->weights.n_tensors < cap, "internal: too many tensors");
    TensorInfo *t = &m->weights.tensors[m->weights.n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = m->weights.num_params; t->rows = rows; t->cols = cols; t->export_rows = rows;
    t->transpose = transpose; t->decay = decay; t->init = init; t->std = std; t->scheme = -1; t->layer = -1;
    m->weights.num_params += (size_t)rows * cols;
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
    GPTWeights *w = &m->weights;
    const GPTConfig *c = &m->cfg;
    int L = c->n_layer, C = c->n_embd;
    int cap = N_KINDS * L + 2 * PE_MAX_LAYERS + 8;
    w->tensors = xcalloc(cap, sizeof(TensorInfo));
    w->n_tensors = 0; w->num_params = 0;
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
            // wte: the input scheme may set its std (the NoPE paper's APE: N(0, 1))
            double s = k == 0 ? posenc_token_init_std(&c->pe, C, std) : kd->residual_proj ? proj_std : std;
            size_t o = add_tensor(m, cap, name, rows, cols, transpose, kd->decay, kd->init, s);
            if (kd->per_layer) w->tensors[w->n_tensors - 1].layer = l;
            w->tensors[w->n_tensors - 1].vector = !is_matrix && k != 0;
            if (l == 0) off[k] = o;
        }
    }
    w->tensors[0].export_rows = c->vocab_size;   // wte: the padding rows are not exported
}

// Positional parameters: the input scheme's block, then per layer (shared schemes: one block).
// Offsets are SIZE_MAX where a hook has no parameters.
static void layout_pe(GPT *m, size_t *input_off, size_t layer_off[PE_MAX_LAYERS]) {
    GPTWeights *w = &m->weights;
    const GPTConfig *c = &m->cfg;
    PosDims d = gpt_pos_dims(c);
    int cap = N_KINDS * c->n_layer + 2 * PE_MAX_LAYERS + 8, rows, cols;
    char name[96];
    const PosScheme *in = posenc_scheme(c->pe.input);
    *input_off = SIZE_MAX;
    if (in->param_shape) {
        in->param_shape(&c->pe, &d, &rows, &cols);
        snprintf(name, sizeof name, "%s", in->export_name ? in->export_name : "pe.input.weight");
        *input_off = add_tensor(m, cap, name, rows, cols, 0, 1, in->init ? INIT_SCHEME : INIT_NORMAL, in->init_std);
        w->tensors[w->n_tensors - 1].scheme = c->pe.input;
        w->tensors[w->n_tensors - 1].vector = in->param_vector;
    }
    for (int l = 0; l < c->n_layer; l++) {
        const PosScheme *s = posenc_scheme(c->pe.layer[l]);
        layer_off[l] = SIZE_MAX;
        w->pe_layer_n[l] = 0;
        if (!s->param_shape) continue;
        s->param_shape(&c->pe, &d, &rows, &cols);
        w->pe_layer_n[l] = (size_t)rows * cols;
        if (s->shared) {
            for (int k = 0; k < l; k++)
                if (c->pe.layer[k] == c->pe.layer[l]) { layer_off[l] = layer_off[k]; break; }
            if (layer_off[l] != SIZE_MAX) continue;
            snprintf(name, sizeof name, "pe.%s.weight", s->name);
        } else {
            snprintf(name, sizeof name, "pe.h.%d.%s.weight", l, s->name);
        }
        layer_off[l] = add_tensor(m, cap, name, rows, cols, 0, 0, s->init ? INIT_SCHEME : INIT_NORMAL, s->init_std);
        w->tensors[w->n_tensors - 1].scheme = c->pe.layer[l];
        w->tensors[w->n_tensors - 1].vector = s->param_vector;
        if (!s->shared) w->tensors[w->n_tensors - 1].layer = l;
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
    GPTWeights *w = &m->weights;
    m->cfg = *cfg;
    char msg[512];
    CHECK(gpt_config_check(&m->cfg, msg, sizeof msg), "%s", msg);
    w->table_rows = posenc_fixed_table(&m->cfg.pe) ? m->cfg.max_seq_len : 0;
    size_t off[N_KINDS];
    size_t pe_input_off, pe_layer_off[PE_MAX_LAYERS];
    layout(m, off);
    layout_pe(m, &pe_input_off, pe_layer_off);
    w->params = xcalloc_big(w->num_params, sizeof(real));
    w->grads = xcalloc_big(w->num_params, sizeof(real));
    point_tensors(&w->p, w->params, off, pe_input_off, pe_layer_off, cfg->n_layer);
    point_tensors(&w->g, w->grads, off, pe_input_off, pe_layer_off, cfg->n_layer);
    // Initialise each tensor from its own stream, seeded by (seed, name): adding a positional
    // table does not change the initial value of any other tensor, so schemes start equal.
    for (int i = 0; i < w->n_tensors; i++) {
        const TensorInfo *t = &w->tensors[i];
        real *p = w->params + t->offset;
        size_t n = (size_t)t->export_rows * t->cols;   // padded vocab rows stay zero
        Rng r;
        rng_seed(&r, hash_name(t->name, seed));
        if (t->init == INIT_SCHEME) { PosDims d = gpt_pos_dims(cfg); posenc_scheme(t->scheme)->init(&m->cfg.pe, &d, p, &r); continue; }
        for (size_t k = 0; k < n; k++) p[k] = t->init == INIT_ONE ? 1 : t->init == INIT_NORMAL ? (real)(t->std * normal(&r)) : 0;
    }
    PosDims d = gpt_pos_dims(cfg);
    posenc_tables_build(&m->pt, &m->cfg.pe, &d, max_pos > cfg->max_seq_len ? max_pos : cfg->max_seq_len);
}

TensorInfo *gpt_tensor_list(const GPTConfig *cfg, int *n, size_t *num_params) {
    GPT m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg;
    size_t off[N_KINDS], pe_input_off, pe_layer_off[PE_MAX_LAYERS];
    layout(&m, off);
    layout_pe(&m, &pe_input_off, pe_layer_off);
    *n = m.weights.n_tensors;
    *num_params = m.weights.num_params;
    return m.weights.tensors;
}

const TensorInfo *gpt_find_tensor(const GPT *m, const char *name) {
    const GPTWeights *w = &m->weights;
    for (int i = 0; i < w->n_tensors; i++) if (strcmp(w->tensors[i].name, name) == 0) return &w->tensors[i];
    return NULL;
}

// ----------------------------------------------------------------------------------------------
// position tables

void gpt_set_context(GPT *m, int context) {
    int rows = m->weights.table_rows;
    CHECK(!rows || context <= rows, "internal: a learned position table of %d rows cannot serve a context of %d",
          rows, context);
    m->cfg.max_seq_len = context;
    int max_pos = m->pt.max_pos > context ? m->pt.max_pos : context;
    PosDims d = gpt_pos_dims(&m->cfg);
    posenc_tables_free(&m->pt);
    posenc_tables_build(&m->pt, &m->cfg.pe, &d, max_pos);
}

void gpt_reserve_positions(GPT *m, int max_pos) {
    if (max_pos <= m->pt.max_pos) return;
    PosDims d = gpt_pos_dims(&m->cfg);
    posenc_tables_free(&m->pt);
    posenc_tables_build(&m->pt, &m->cfg.pe, &d, max_pos);
}

int gpt_position_limit(const GPT *m) {
    return posenc_position_limit(&m->cfg.pe, &m->pt, m->weights.table_rows ? m->weights.table_rows : m->cfg.max_seq_len);
}

// ----------------------------------------------------------------------------------------------
// activations, the memory of a run, and freeing

static void free_acts(GPT *m) {
    GPTRunState *s = &m->state;
    real **a = (real **)&s->a;
    for (size_t i = 0; i < sizeof(Activations) / sizeof(real *); i++) free(a[i]);
    real **g = (real **)&s->ga;
    for (size_t i = 0; i < sizeof(GradActivations) / sizeof(real *); i++) free(g[i]);
    memset(&s->a, 0, sizeof s->a); memset(&s->ga, 0, sizeof s->ga);
    s->act_bytes = 0;
}

void gpt_free(GPT *m) {
    GPTWeights *w = &m->weights;
    free(w->params); free(w->grads); free(w->adam_m); free(w->adam_v); free(w->tensors);
    gpt_decode_end(m);
    free_acts(m);
    free(m->state.check_saved);
    posenc_tables_free(&m->pt);
    memset(m, 0, sizeof *m);
}

// The activation buffers for (B, T) on `threads` threads: each slot of m->state.a / m->state.ga with its
// element count. gpt_alloc_acts allocates exactly these and gpt_memory adds them up, so the memory
// check before a run (train.c) and the allocation cannot disagree.
enum { ACT_MAX = sizeof(Activations) / sizeof(real *) + sizeof(GradActivations) / sizeof(real *) };
static int act_buffers(GPT *m, size_t B, size_t T, int threads, int forward_only, real **slot[ACT_MAX],
                       size_t count[ACT_MAX]) {
    GPTRunState *s = &m->state;
    size_t L = forward_only ? 1 : m->cfg.n_layer, C = m->cfg.n_embd, NH = m->cfg.n_head, Vp = m->cfg.padded_vocab;
    size_t N = B * T;
    int n = 0;
#define BUF(field, elems) (slot[n] = &(field), count[n++] = (elems))
    Activations *a = &s->a;
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
    if (!forward_only) {
        GradActivations *g = &s->ga;
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

static GptMemoryCheck memory_check;
void gpt_set_memory_check(GptMemoryCheck check) { memory_check = check; }
GptMemoryCheck gpt_memory_check(void) { return memory_check; }

// Activations are sized for (act_B, act_T) and reused by any batch that fits in both. Forward-only
// (GptPass.forward_only): one layer's slices, which every layer reuses, and no gradient buffers.
void gpt_alloc_acts(GPT *m, int B, int T, int forward_only) {
    GPTRunState *s = &m->state;
    forward_only = forward_only != 0;
    if (B <= s->act_B && T <= s->act_T && max_threads() <= s->act_threads && forward_only == s->act_forward_only) return;
    if (forward_only == s->act_forward_only) {   // grow, never shrink, while the mode stays
        if (B < s->act_B) B = s->act_B;
        if (T < s->act_T) T = s->act_T;
    }
    real **slot[ACT_MAX];
    size_t count[ACT_MAX];
    int n = act_buffers(m, (size_t)B, (size_t)T, max_threads(), forward_only, slot, count);
    double bytes = 0;
    for (int i = 0; i < n; i++) bytes += (double)sizeof(real) * count[i];
    if (memory_check) {
        char what[160];
        snprintf(what, sizeof what, forward_only ? "the evaluation's activations (one layer's, for %d x %d tokens)"
                                                    : "the activations of a %d x %d batch", B, T);
        memory_check(bytes, s->act_bytes, what);
    }
    free_acts(m);
    for (int i = 0; i < n; i++) *slot[i] = xmalloc_big(sizeof(real) * count[i]);
    s->act_B = B; s->act_T = T; s->act_threads = max_threads(); s->act_forward_only = forward_only;
    s->act_bytes = bytes;
}

GPTMemory gpt_memory(const GPTConfig *cfg, int B, int T, int forward_only, int threads) {
    GPT m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg;
    size_t off[N_KINDS], pe_input_off, pe_layer_off[PE_MAX_LAYERS];
    layout(&m, off);
    layout_pe(&m, &pe_input_off, pe_layer_off);
    free(m.weights.tensors);
    GPTMemory r = { 0 };
    r.params = r.grads = (double)sizeof(real) * m.weights.num_params;
    r.adam = forward_only ? 0 : 2 * r.params;
    real **slot[ACT_MAX];
    size_t count[ACT_MAX];
    int n = act_buffers(&m, (size_t)B, (size_t)T, threads, forward_only, slot, count);
    for (int i = 0; i < n; i++) r.acts += (double)sizeof(real) * count[i];
    return r;
}
