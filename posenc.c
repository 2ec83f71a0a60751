// posenc.c: the positional schemes. Adding a scheme = one entry in SCHEMES[] plus its test;
// the gradient and property tests loop over this table.
#include "posenc.h"

#include <math.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// learned absolute (GPT-2): a (max_seq_len, C) parameter table added at the input

static size_t learned_n_params(const PosDims *d) { return (size_t)d->max_seq_len * d->n_embd; }
static void learned_shape(const PosDims *d, int *rows, int *cols) { *rows = d->max_seq_len; *cols = d->n_embd; }

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
// sinusoidal (Vaswani et al. 2017): PE[pos,2i] = sin(pos/10000^(2i/C)), PE[pos,2i+1] = cos(...)

static const char *sinusoidal_check(const PosConfig *c, const PosDims *d, char *msg, size_t cap) {
    (void)c;
    if (d->n_embd % 2) { snprintf(msg, cap, "sinusoidal positions need an even --dim (got %d)", d->n_embd); return msg; }
    return NULL;
}

static void sinusoidal_build(PosTables *t) {
    int C = t->d.n_embd;
    t->sinusoid = xmalloc(sizeof(real) * (size_t)t->max_pos * C);
    for (int p = 0; p < t->max_pos; p++)
        for (int i = 0; 2 * i < C; i++) {
            double a = p / pow(10000.0, 2.0 * i / C);
            t->sinusoid[(size_t)p * C + 2 * i] = (real)sin(a);
            if (2 * i + 1 < C) t->sinusoid[(size_t)p * C + 2 * i + 1] = (real)cos(a);
        }
}

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
// RoPE (Su et al. 2021). Pair i of the first d_rot channels rotates by angle pos*theta_i.
//   split-half  [c c s s]: pair i = (i, i + d_rot/2)      (HF Llama, GPT-NeoX)
//   interleaved [c s c s]: pair i = (2i, 2i + 1)          (paper, GPT-J, llama2.c)
// Channels d_rot .. hs-1 pass unchanged (partial RoPE). Backward = rotation by -angle.

static const char *rope_check(const PosConfig *c, const PosDims *d, char *msg, size_t cap) {
    int rot = posenc_rope_width(c, d->head_size);
    if (rot < 2 || rot % 2) {
        snprintf(msg, cap, "rope rotates int(head_size * --rope-fraction) = int(%d * %g) = %d channels, "
                 "which must be even and at least 2; change --rope-fraction or --dim/--heads",
                 d->head_size, c->rope_fraction, rot);
        return msg;
    }
    return NULL;
}

static inline void rope_apply(const PosTables *t, real *x, int pos, real sign) {
    table_pos_check(t, pos);
    int half = t->rope_rot / 2;
    const real *cs = t->rope_cos + (size_t)pos * half;
    const real *sn = t->rope_sin + (size_t)pos * half;
    int stride = t->cfg.rope_interleaved ? 1 : half;   // distance between the two members of a pair
    int step = t->cfg.rope_interleaved ? 2 : 1;        // distance between consecutive pairs
    for (int i = 0; i < half; i++) {
        real *a = x + i * step, *b = a + stride;
        real c = cs[i], s = sign * sn[i];
        real a0 = *a, b0 = *b;
        *a = a0 * c - b0 * s;
        *b = a0 * s + b0 * c;
    }
}
// cos/sin tables (max_pos, d_rot/2): angles pos*theta_i computed in double, then cast (in float,
// positions near 1e6 would lose distinct angles)
static void rope_build(PosTables *t) {
    int rot = posenc_rope_width(&t->cfg, t->d.head_size), half = rot / 2;
    t->rope_rot = rot;
    double *freq = xmalloc(sizeof(double) * half);
    posenc_rope_freqs(&t->cfg, rot, freq);
    t->rope_cos = xmalloc(sizeof(real) * (size_t)t->max_pos * half);
    t->rope_sin = xmalloc(sizeof(real) * (size_t)t->max_pos * half);
    for (int p = 0; p < t->max_pos; p++)
        for (int i = 0; i < half; i++) {
            double a = (double)p * freq[i];
            t->rope_cos[(size_t)p * half + i] = (real)cos(a);
            t->rope_sin[(size_t)p * half + i] = (real)sin(a);
        }
    free(freq);
}

static void rope_qk_forward(const PosTables *t, real *x, int pos) { rope_apply(t, x, pos, 1); }
static void rope_qk_backward(const PosTables *t, real *dx, int pos) { rope_apply(t, dx, pos, -1); }

// ----------------------------------------------------------------------------------------------
// ALiBi (Press et al. 2021): score(i, j) += -m_h * (pos_i - pos_j)

static void alibi_build(PosTables *t) {
    t->alibi_slope = xmalloc(sizeof(double) * t->d.n_head);
    posenc_alibi_slopes(t->d.n_head, t->alibi_slope);
}

static void alibi_bias_forward(const PosTables *t, const real *p, int h, int qpos, const int *kpos, int n, real *out) {
    (void)p;
    real m = (real)t->alibi_slope[h];
    for (int j = 0; j < n; j++) out[j] -= m * (real)(qpos - kpos[j]);
}

// ----------------------------------------------------------------------------------------------
// the table

static const PosScheme SCHEMES[] = {
    { .name = "nope", .summary = "no positional signal; order comes only from the causal mask "
                                 "(Kazemnejad et al. 2023)" },
    { .name = "learned", .summary = "learned absolute table (max_context, C) added to the token "
                                    "embeddings (GPT-2)",
      .hooks = PE_HOOK_INPUT, .n_params = learned_n_params, .param_shape = learned_shape,
      .export_name = "transformer.wpe.weight", .init_std = 0.01,
      .input_forward = learned_input_forward, .input_backward = learned_input_backward },
    { .name = "sinusoidal", .summary = "fixed sin/cos table added to the token embeddings "
                                       "(Vaswani et al. 2017)",
      .hooks = PE_HOOK_INPUT, .check = sinusoidal_check, .build = sinusoidal_build,
      .input_forward = sinusoidal_input_forward },
    { .name = "rope", .summary = "rotate q and k by position in every layer (Su et al. 2021); "
                                 "--rope-base, --rope-fraction, --rope-pairing",
      .hooks = PE_HOOK_QK, .check = rope_check, .build = rope_build,
      .qk_forward = rope_qk_forward, .qk_backward = rope_qk_backward },
    { .name = "alibi", .summary = "linear distance penalty -m_h*(i-j) on the scores, fixed "
                                  "per-head slopes (Press et al. 2021)",
      .hooks = PE_HOOK_BIAS, .build = alibi_build, .bias_forward = alibi_bias_forward },
};
enum { N_SCHEMES = (int)(sizeof(SCHEMES) / sizeof(SCHEMES[0])) };
_Static_assert(N_SCHEMES <= 64, "posenc_tables_build tracks at most 64 schemes");

// Scheme settings a user may give on the command line (--rope-base X -> posenc_set("rope_base", X)).
static const char *const FLAGS[] = { "rope-base", "rope-fraction", "rope-pairing" };

int posenc_is_flag(const char *flag) {
    for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++) if (strcmp(FLAGS[i], flag) == 0) return 1;
    return 0;
}

int posenc_is_gpt2(const PosConfig *c) {
    if (c->input != posenc_find("learned")) return 0;
    for (int l = 0; l < c->n_layer; l++) if (c->layer[l] != PE_NOPE) return 0;
    return 1;
}

int posenc_count(void) { return N_SCHEMES; }
const PosScheme *posenc_scheme(int id) {
    CHECK(id >= 0 && id < N_SCHEMES, "internal: positional scheme id %d out of range", id);
    return &SCHEMES[id];
}
int posenc_find(const char *name) {
    for (int i = 0; i < N_SCHEMES; i++) if (strcmp(SCHEMES[i].name, name) == 0) return i;
    return -1;
}

static int is_input_scheme(int id) { return id == PE_NOPE || (SCHEMES[id].hooks & PE_HOOK_INPUT); }
static int is_layer_scheme(int id) { return !(SCHEMES[id].hooks & PE_HOOK_INPUT); }

void posenc_defaults(PosConfig *c, int n_layer) {
    memset(c, 0, sizeof *c);
    c->input = posenc_find("learned");
    c->n_layer = n_layer;
    c->rope_base = 10000.0;
    c->rope_fraction = 1.0;
    c->rope_interleaved = 0;
}

static void scheme_names(char *buf, size_t cap, int want_input) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < N_SCHEMES && k < cap; i++) {
        if (want_input ? !is_input_scheme(i) || i == PE_NOPE : !is_layer_scheme(i)) continue;
        k += snprintf(buf + k, cap - k, "%s%s", k ? ", " : "", SCHEMES[i].name);
    }
}

int posenc_schedule(PosConfig *c, int n_layer, const char *pe, const char *pe_layers,
                    const char *input_pe, char *msg, size_t cap) {
    char names[256];
    if (n_layer < 1 || n_layer > PE_MAX_LAYERS) {
        snprintf(msg, cap, "--layers must be in 1..%d (got %d)", PE_MAX_LAYERS, n_layer);
        return 0;
    }
    if (pe && pe_layers) { snprintf(msg, cap, "give either --pe or --pe-layers, not both"); return 0; }
    c->n_layer = n_layer;
    if (pe || pe_layers) {             // an explicit schedule replaces the default input scheme
        c->input = PE_NOPE;
        for (int l = 0; l < n_layer; l++) c->layer[l] = PE_NOPE;
    }
    if (pe) {
        int id = posenc_find(pe);
        if (id < 0) {
            scheme_names(names, sizeof names, 0);
            snprintf(msg, cap, "--pe: unknown scheme '%s' (known: %s, learned, sinusoidal)", pe, names);
            return 0;
        }
        if (is_layer_scheme(id)) for (int l = 0; l < n_layer; l++) c->layer[l] = id;
        else c->input = id;
    }
    if (pe_layers) {
        const char *s = pe_layers;
        int l = 0;
        while (1) {
            const char *e = strchr(s, ',');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            char name[64];
            if (len == 0 || len >= sizeof name) { snprintf(msg, cap, "--pe-layers: empty or overlong name in '%s'", pe_layers); return 0; }
            memcpy(name, s, len); name[len] = 0;
            int id = posenc_find(name);
            if (id < 0 || !is_layer_scheme(id)) {
                scheme_names(names, sizeof names, 0);
                snprintf(msg, cap, "--pe-layers: '%s' is not a layer scheme (layer schemes: %s; put "
                         "learned/sinusoidal in --input-pe)", name, names);
                return 0;
            }
            if (l >= n_layer) { snprintf(msg, cap, "--pe-layers names more than --layers %d layers", n_layer); return 0; }
            c->layer[l++] = id;
            if (!e) break;
            s = e + 1;
        }
        if (l != n_layer) { snprintf(msg, cap, "--pe-layers names %d layers but the model has --layers %d", l, n_layer); return 0; }
    }
    if (input_pe) {
        int id = strcmp(input_pe, "none") == 0 ? PE_NOPE : posenc_find(input_pe);
        if (id < 0 || !is_input_scheme(id)) {
            scheme_names(names, sizeof names, 1);
            snprintf(msg, cap, "--input-pe: '%s' is not an input scheme (use none, %s)", input_pe, names);
            return 0;
        }
        c->input = id;
    }
    return 1;
}

int posenc_validate(const PosConfig *c, const PosDims *d, char *msg, size_t cap) {
    for (int l = -1; l < c->n_layer; l++) {
        const PosScheme *s = posenc_scheme(l < 0 ? c->input : c->layer[l]);
        if (s->check && s->check(c, d, msg, cap)) return 0;
    }
    return 1;
}

int posenc_rope_width(const PosConfig *c, int head_size) { return (int)(head_size * c->rope_fraction); }

void posenc_rope_freqs(const PosConfig *c, int d_rot, double *out) {
    for (int i = 0; i < d_rot / 2; i++) out[i] = pow(c->rope_base, -2.0 * i / d_rot);
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
    free(t->rope_cos); free(t->rope_sin); free(t->sinusoid); free(t->alibi_slope);
    memset(t, 0, sizeof *t);
}

void posenc_layer_list(const PosConfig *c, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = 0;
    for (int l = 0; l < c->n_layer && k < cap; l++)
        k += snprintf(buf + k, cap - k, "%s%s", l ? "," : "", SCHEMES[c->layer[l]].name);
}

static const char *input_name(const PosConfig *c) { return c->input == PE_NOPE ? "none" : SCHEMES[c->input].name; }

void posenc_write_kv(const PosConfig *c, FILE *f) {
    char layers[PE_MAX_LAYERS * 24];
    posenc_layer_list(c, layers, sizeof layers);
    fprintf(f, "input_pe=%s\nlayer_pe=%s\nrope_base=%.17g\nrope_fraction=%.17g\nrope_pairing=%s\n",
            input_name(c), layers, c->rope_base, c->rope_fraction,
            c->rope_interleaved ? "interleaved" : "split");
}

// strict number parsing: the whole string must be a finite number
static int parse_double(const char *v, double *out) {
    char *end;
    if (!*v) return 0;
    double x = strtod(v, &end);
    if (*end || !isfinite(x)) return 0;
    *out = x;
    return 1;
}

int posenc_set(PosConfig *c, const char *key, const char *value, char *msg, size_t cap) {
    double x;
    if (strcmp(key, "rope_base") == 0) {
        if (!parse_double(value, &x) || x <= 1.0) { snprintf(msg, cap, "--rope-base must be a number > 1 (got '%s')", value); return -1; }
        c->rope_base = x;
    } else if (strcmp(key, "rope_fraction") == 0) {
        if (!parse_double(value, &x) || x <= 0.0 || x > 1.0) { snprintf(msg, cap, "--rope-fraction must be in (0, 1] (got '%s')", value); return -1; }
        c->rope_fraction = x;
    } else if (strcmp(key, "rope_pairing") == 0) {
        if (strcmp(value, "split") == 0) c->rope_interleaved = 0;
        else if (strcmp(value, "interleaved") == 0) c->rope_interleaved = 1;
        else { snprintf(msg, cap, "--rope-pairing must be split or interleaved (got '%s')", value); return -1; }
    } else if (strcmp(key, "input_pe") == 0) {
        if (!posenc_schedule(c, c->n_layer, NULL, NULL, value, msg, cap)) return -1;
    } else if (strcmp(key, "layer_pe") == 0) {
        int n = 1;
        for (const char *s = value; *s; s++) n += *s == ',';
        int input = c->input;
        if (!posenc_schedule(c, n, NULL, value, NULL, msg, cap)) return -1;
        c->input = input;
    } else {
        return 0;
    }
    return 1;
}

size_t posenc_json(const PosConfig *c, char *buf, size_t cap) {
    size_t k = snprintf(buf, cap, "\"input_pe\":\"%s\",\"layer_pe\":[", input_name(c));
    for (int l = 0; l < c->n_layer; l++)
        k += snprintf(buf + (k < cap ? k : cap), k < cap ? cap - k : 0, "%s\"%s\"", l ? "," : "", SCHEMES[c->layer[l]].name);
    k += snprintf(buf + (k < cap ? k : cap), k < cap ? cap - k : 0,
                  "],\"rope_base\":%.17g,\"rope_fraction\":%.17g,\"rope_pairing\":\"%s\"",
                  c->rope_base, c->rope_fraction, c->rope_interleaved ? "interleaved" : "split");
    return k;
}

void posenc_help(FILE *f) {
    fprintf(f, "Positional schemes (--pe NAME, --pe-layers a,b,..., --input-pe none|learned|sinusoidal):\n");
    for (int i = 0; i < N_SCHEMES; i++) fprintf(f, "  %-11s %s\n", SCHEMES[i].name, SCHEMES[i].summary);
    fprintf(f, "Scheme settings:\n"
               "  --rope-base X        RoPE base, theta_i = X^(-2i/d_rot)              (10000)\n"
               "  --rope-fraction F    rotate the first int(head_size*F) channels, (0,1] (1.0)\n"
               "  --rope-pairing P     split (i, i+d/2) [ccss] or interleaved (2i,2i+1) (split)\n");
}
