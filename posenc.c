// posenc.c: the positional schemes as the rest of the program sees them: their settings (one
// table, SETTINGS[], drives the defaults, the flags, the checkpoint lines, JSON, metadata and
// --help), the per-layer schedule and its presets, and what the program may ask about a config.
// The schemes themselves (hooks, tables, SCHEMES[]) are in posenc_schemes.c.
#include "posenc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// the settings: a new one is a row here (and a field of PosConfig), then its use in the scheme

static const char *const PAIRING_NAMES[] = { "split", "interleaved", NULL };             // rope_interleaved 0, 1
static const char *const EMBED_SCALE_NAMES[] = { "none", "sqrt", "paper", NULL };       // PE_SIN_NONE, _SQRT, _PAPER
static const char *const SCALING_NAMES[] = { "none", "linear", "dynamic", "yarn", "llama3", "longrope", NULL };   // RopeScaling
_Static_assert(sizeof(RopeScaling) == sizeof(int), "rope_scaling is set through an int");

#define PC(f) offsetof(PosConfig, f)
static const FlagRow SETTINGS[] = {
    { .name = "rope-base", .key = "rope_base", .type = FLAG_DOUBLE, .off = PC(rope_base), .def = 10000, .min = 1,
      .max = 1e12, .lo_open = 1, .arg = "X", .help = "RoPE base, theta_i = X^(-2i/d_rot) (10000)" },
    { .name = "rope-fraction", .key = "rope_fraction", .type = FLAG_DOUBLE, .off = PC(rope_fraction), .def = 1,
      .min = 0, .max = 1, .lo_open = 1, .arg = "F",
      .help = "rotate the first int(head_size*F) channels, (0,1] (1.0)" },
    { .name = "rope-pairing", .key = "rope_pairing", .type = FLAG_CHOICE, .off = PC(rope_interleaved),
      .choices = PAIRING_NAMES, .arg = "P",
      .help = "split (i, i+d/2) [ccss] or interleaved (2i,2i+1) [cscs] (split)" },
    { .name = "rope-scaling", .key = "rope_scaling", .type = FLAG_CHOICE, .off = PC(rope_scaling),
      .choices = SCALING_NAMES, .tag = PE_EVAL | PE_METADATA, .arg = "M",
      .help = "context extension: none, linear, dynamic, yarn, llama3, longrope (none)" },
    { .name = "rope-factor", .key = "rope_factor", .type = FLAG_DOUBLE, .off = PC(rope_factor), .def = 1, .min = 1,
      .max = 1e6, .tag = PE_EVAL | PE_METADATA, .arg = "S", .help = "the extension factor s (1)" },
    // 0: the model's context (posenc_resolve)
    { .name = "rope-original-context", .key = "rope_original_context", .type = FLAG_INT,
      .off = PC(rope_original_context), .def = 0, .min = 1, .max = INT_MAX, .tag = PE_EVAL | PE_METADATA, .arg = "N",
      .help = "L0, the context the model was trained at (the model's context)" },
    { .name = "yarn-beta-fast", .key = "yarn_beta_fast", .type = FLAG_DOUBLE, .off = PC(yarn_beta_fast), .def = 32,
      .min = 0, .max = 1e6, .lo_open = 1, .tag = PE_EVAL | PE_METADATA, .arg = "X", .help = "YaRN beta_fast (32)" },
    { .name = "yarn-beta-slow", .key = "yarn_beta_slow", .type = FLAG_DOUBLE, .off = PC(yarn_beta_slow), .def = 1,
      .min = 0, .max = 1e6, .lo_open = 1, .tag = PE_EVAL | PE_METADATA, .arg = "X", .help = "YaRN beta_slow (1)" },
    { .name = "llama3-low-freq-factor", .key = "llama3_low_freq_factor", .type = FLAG_DOUBLE,
      .off = PC(llama3_low_freq_factor), .def = 1, .min = 0, .max = 1e6, .lo_open = 1, .tag = PE_EVAL | PE_METADATA,
      .arg = "X", .help = "llama3 low_freq_factor (1)" },
    { .name = "llama3-high-freq-factor", .key = "llama3_high_freq_factor", .type = FLAG_DOUBLE,
      .off = PC(llama3_high_freq_factor), .def = 4, .min = 0, .max = 1e6, .lo_open = 1, .tag = PE_EVAL | PE_METADATA,
      .arg = "X", .help = "llama3 high_freq_factor (4)" },
    { .name = "longrope-short", .key = "longrope_short", .type = FLAG_LIST, .off = PC(longrope_short), .min = 0,
      .max = 1e6, .lo_open = 1, .tag = PE_EVAL | PE_METADATA, .arg = "LIST",
      .help = "longrope: d_rot/2 factors for sequences <= L0, a comma list or a file of numbers" },
    { .name = "longrope-long", .key = "longrope_long", .type = FLAG_LIST, .off = PC(longrope_long), .min = 0,
      .max = 1e6, .lo_open = 1, .tag = PE_EVAL | PE_METADATA, .arg = "LIST",
      .help = "longrope: d_rot/2 factors for sequences > L0, as --longrope-short" },
    { .name = "longrope-attention", .key = "longrope_attention", .type = FLAG_DOUBLE, .off = PC(longrope_attention),
      .def = 0, .min = 0, .max = 1e6, .tag = PE_EVAL | PE_METADATA, .arg = "A",
      .help = "longrope: factor on cos and sin (0: sqrt(1 + ln s/ln L0) if s > 1, else 1) (0)" },
    { .name = "xpos-scale-base", .key = "xpos_scale_base", .type = FLAG_DOUBLE, .off = PC(xpos_scale_base), .def = 512,
      .min = 0, .max = 1e12, .lo_open = 1, .tag = PE_METADATA, .arg = "X",
      .help = "xpos gamma: zeta^(distance/gamma) (512)" },
    { .name = "p-rope-fraction", .key = "p_rope_fraction", .type = FLAG_DOUBLE, .off = PC(p_rope_fraction),
      .def = 0.25, .min = 0, .max = 1, .lo_open = 1, .tag = PE_METADATA, .arg = "F",
      .help = "p-rope keeps floor(F*d_rot/2) highest frequencies, (0,1] (0.25)" },
    { .name = "t5-num-buckets", .key = "t5_num_buckets", .type = FLAG_INT, .off = PC(t5_num_buckets), .def = 32,
      .min = 2, .max = 4096, .tag = PE_METADATA, .arg = "N", .help = "T5 distance buckets (32)" },
    { .name = "t5-max-distance", .key = "t5_max_distance", .type = FLAG_INT, .off = PC(t5_max_distance), .def = 128,
      .min = 2, .max = INT_MAX, .tag = PE_METADATA, .arg = "N",
      .help = "T5: distances from here on share the last bucket (128)" },
    // a model stored before this setting existed added the table to unscaled embeddings
    { .name = "sinusoidal-scale", .key = "sinusoidal_scale", .type = FLAG_CHOICE, .off = PC(sinusoidal_scale),
      .def = 1, .choices = EMBED_SCALE_NAMES, .absent = "none", .tag = PE_METADATA, .arg = "S",
      .help = "sqrt: token embeddings x sqrt(dim) before the sinusoid is added (Vaswani et al.); none; or paper: "
              "the NoPE paper's APE (embeddings N(0,1) unscaled, table concat(sin,cos), logits from the final "
              "state x dim^-0.5) (sqrt)" },
};
#undef PC
enum { N_SETTINGS = (int)(sizeof(SETTINGS) / sizeof(SETTINGS[0])) };

int posenc_setting_count(void) { return N_SETTINGS; }
const FlagRow *posenc_setting(int i) {
    CHECK(i >= 0 && i < N_SETTINGS, "internal: scheme setting %d out of range", i);
    return &SETTINGS[i];
}

static double *double_at(PosConfig *c, const FlagRow *s) { return (double *)((char *)c + s->off); }
static PosFactors *list_at(PosConfig *c, const FlagRow *s) { return (PosFactors *)((char *)c + s->off); }
static int *int_at(PosConfig *c, const FlagRow *s) { return (int *)((char *)c + s->off); }

// The value of setting s in c as text: %.17g (every double reads back exactly), %d, the name, or a
// list's numbers joined by commas (empty: none). cap: PE_VALUE_CAP holds any value.
static const char *format_value(const PosConfig *c, const FlagRow *s, char *buf, size_t cap) {
    const char *p = (const char *)c + s->off;
    if (s->type == FLAG_LIST) {
        const PosFactors *f = (const PosFactors *)p;
        size_t k = 0;
        buf[0] = 0;
        for (int i = 0; i < f->n && k < cap; i++) k += snprintf(buf + k, cap - k, "%s%.17g", i ? "," : "", f->f[i]);
    } else if (s->type == FLAG_DOUBLE) snprintf(buf, cap, "%.17g", *(const double *)p);
    else if (s->type == FLAG_INT) snprintf(buf, cap, "%d", *(const int *)p);
    else snprintf(buf, cap, "%s", s->choices[*(const int *)p]);
    return buf;
}

// "rope_base" -> "--rope-base" for messages and --help
static const char *flag_of(const char *key, char *buf, size_t cap) {
    size_t k = snprintf(buf, cap, "--");
    for (; *key && k + 1 < cap; key++) buf[k++] = *key == '_' ? '-' : *key;
    buf[k] = 0;
    return buf;
}

// names[0..n-1] joined with sep, and last before the last one: "a, b or c"
static void join(const char *const *names, int n, const char *sep, const char *last, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < cap; i++) k += snprintf(buf + k, cap - k, "%s%s", i == 0 ? "" : i == n - 1 ? last : sep, names[i]);
}

int posenc_is_flag(const char *flag) {
    char fl[64];
    for (int i = 0; i < N_SETTINGS; i++)
        if (strcmp(flag_of(SETTINGS[i].key, fl, sizeof fl) + 2, flag) == 0) return (SETTINGS[i].tag & PE_EVAL) ? 2 : 1;
    return 0;
}

// 1 when scheme `name` is the input scheme or any layer's
static int uses_scheme(const PosConfig *c, const char *name) {
    int id = posenc_find(name);
    if (c->input == id) return 1;
    for (int l = 0; l < c->n_layer; l++) if (c->layer[l] == id) return 1;
    return 0;
}

const char *posenc_setting_unused(const PosConfig *c, const char *name) {
    char key[64];                                  // a flag's name ("rope-base") as its key ("rope_base")
    size_t j = 0;
    for (; name[j] && j + 1 < sizeof key; j++) key[j] = name[j] == '-' ? '_' : name[j];
    key[j] = 0;
    int rotary = uses_scheme(c, "rope") || uses_scheme(c, "xpos") || uses_scheme(c, "p-rope");
    static const struct { const char *prefix; int scaling; } by_method[] = {
        { "yarn_", ROPE_SCALING_YARN }, { "llama3_", ROPE_SCALING_LLAMA3 }, { "longrope_", ROPE_SCALING_LONGROPE } };
    static const char *const method_name[] = { "--rope-scaling yarn", "--rope-scaling llama3", "--rope-scaling longrope" };
    if (!strncmp(key, "xpos_", 5)) return uses_scheme(c, "xpos") ? NULL : "an xpos layer";
    if (!strncmp(key, "p_rope_", 7)) return uses_scheme(c, "p-rope") ? NULL : "a p-rope layer";
    if (!strncmp(key, "t5_", 3)) return uses_scheme(c, "t5") ? NULL : "a t5 layer";
    if (!strncmp(key, "sinusoidal_", 11)) return uses_scheme(c, "sinusoidal") ? NULL : "a sinusoidal input (--input-pe sinusoidal)";
    if (!rotary) return "a rope, xpos or p-rope layer";
    for (int k = 0; k < 3; k++)
        if (!strncmp(key, by_method[k].prefix, strlen(by_method[k].prefix)))
            return (int)c->rope_scaling == by_method[k].scaling ? NULL : method_name[k];
    if (!strcmp(key, "rope_factor") || !strcmp(key, "rope_original_context"))
        return c->rope_scaling != ROPE_SCALING_NONE ? NULL : "a --rope-scaling other than none";
    return NULL;                                   // rope_base, rope_fraction, rope_pairing, rope_scaling
}

int posenc_is_gpt2(const PosConfig *c) {
    if (c->input != posenc_find("learned")) return 0;
    for (int l = 0; l < c->n_layer; l++) if (c->layer[l] != PE_NOPE) return 0;
    return 1;
}

// ----------------------------------------------------------------------------------------------
// the schedule

static int is_input_scheme(int id) { return id == PE_NOPE || (posenc_scheme(id)->hooks & PE_HOOK_INPUT); }
static int is_layer_scheme(int id) { return !(posenc_scheme(id)->hooks & PE_HOOK_INPUT); }

void posenc_defaults(PosConfig *c, int n_layer) {
    memset(c, 0, sizeof *c);
    c->input = posenc_find("learned");
    c->n_layer = n_layer;
    for (int i = 0; i < N_SETTINGS; i++) {
        const FlagRow *s = &SETTINGS[i];
        if (s->type == FLAG_DOUBLE) *double_at(c, s) = s->def;
        else if (s->type == FLAG_LIST) list_at(c, s)->n = 0;     // none
        else *int_at(c, s) = (int)s->def;
    }
}

static int set_value(PosConfig *c, const FlagRow *s, const char *value, char *msg, size_t cap);   // (serialisation)

void posenc_stored_defaults(PosConfig *c, int n_layer) {
    char msg[256];
    posenc_defaults(c, n_layer);
    for (int i = 0; i < N_SETTINGS; i++)
        if (SETTINGS[i].absent)
            CHECK(set_value(c, &SETTINGS[i], SETTINGS[i].absent, msg, sizeof msg), "internal: %s", msg);
}

void posenc_resolve(PosConfig *c, int context) {
    if (c->rope_original_context == 0) c->rope_original_context = context;   // L0 default
}

// One-word schedules for --pe-layers: the scheme of layer l.
static const char *smollm3_layer(int l) { return (l + 1) % 4 == 0 ? "nope" : "rope"; }   // RoPE unless (l+1) % 4 == 0
static const struct { const char *name; const char *(*layer)(int l); } PRESETS[] = {
    { .name = "smollm3", .layer = smollm3_layer },
};
enum { N_PRESETS = (int)(sizeof(PRESETS) / sizeof(PRESETS[0])) };

int posenc_preset(const char *name, int n_layer, char *out, size_t cap) {
    for (int p = 0; p < N_PRESETS; p++) {
        if (strcmp(name, PRESETS[p].name) != 0) continue;
        size_t k = 0;
        out[0] = 0;
        for (int l = 0; l < n_layer && k < cap; l++) k += snprintf(out + k, cap - k, "%s%s", l ? "," : "", PRESETS[p].layer(l));
        return 1;
    }
    return 0;
}

// The names of the input schemes (want_input; nope excluded) or of the layer schemes, joined
static void scheme_names(char *buf, size_t cap, int want_input, const char *sep, const char *last) {
    const char *names[64];
    int n = 0;
    for (int i = 0; i < posenc_count() && n < 64; i++)
        if (want_input ? is_input_scheme(i) && i != PE_NOPE : is_layer_scheme(i)) names[n++] = posenc_scheme(i)->name;
    join(names, n, sep, last, buf, cap);
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
            scheme_names(names, sizeof names, 0, ", ", ", ");
            snprintf(msg, cap, "--pe: unknown scheme '%s' (known: %s, learned, sinusoidal)", pe, names);
            return 0;
        }
        if (is_layer_scheme(id)) for (int l = 0; l < n_layer; l++) c->layer[l] = id;
        else c->input = id;
    }
    char expanded[PE_MAX_LAYERS * 8];
    if (pe_layers && posenc_preset(pe_layers, n_layer, expanded, sizeof expanded)) pe_layers = expanded;
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
                scheme_names(names, sizeof names, 0, ", ", ", ");
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
            scheme_names(names, sizeof names, 1, ", ", ", ");
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


// ----------------------------------------------------------------------------------------------
// what the program asks about a config

void posenc_layer_list(const PosConfig *c, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = 0;
    for (int l = 0; l < c->n_layer && k < cap; l++)
        k += snprintf(buf + k, cap - k, "%s%s", l ? "," : "", posenc_scheme(c->layer[l])->name);
}

static const char *input_name(const PosConfig *c) { return c->input == PE_NOPE ? "none" : posenc_scheme(c->input)->name; }

int posenc_position_limit(const PosConfig *c, const PosTables *t, int context) {
    // a learned input table has one row per position of the context and nothing beyond
    return posenc_fixed_table(c) && context < t->max_pos ? context : t->max_pos;
}

void posenc_label(const PosConfig *c, char *buf, size_t cap) {
    int same = 1;
    for (int l = 1; l < c->n_layer; l++) same &= c->layer[l] == c->layer[0];
    if (same && c->layer[0] == PE_NOPE && c->input != PE_NOPE) { snprintf(buf, cap, "%s", posenc_scheme(c->input)->name); return; }
    size_t k = 0;
    buf[0] = 0;
    if (c->input != PE_NOPE) k += snprintf(buf, cap, "%s+", posenc_scheme(c->input)->name);
    for (int l = 0; l < (same ? 1 : c->n_layer) && k < cap; l++)
        k += snprintf(buf + k, cap - k, "%s%s", l ? "/" : "", posenc_scheme(c->layer[l])->name);
}


double posenc_embed_scale(const PosConfig *c, int n_embd) {
    const PosScheme *in = posenc_scheme(c->input);
    PosDims d = { .n_layer = c->n_layer, .n_embd = n_embd };
    return in->embed_scale ? in->embed_scale(c, &d) : 1;
}

double posenc_token_init_std(const PosConfig *c, int n_embd, double dflt) {
    const PosScheme *in = posenc_scheme(c->input);
    PosDims d = { .n_layer = c->n_layer, .n_embd = n_embd };
    double s = in->token_init_std ? in->token_init_std(c, &d) : 0;
    return s > 0 ? s : dflt;
}

double posenc_head_scale(const PosConfig *c, int n_embd) {
    const PosScheme *in = posenc_scheme(c->input);
    PosDims d = { .n_layer = c->n_layer, .n_embd = n_embd };
    return in->head_scale ? in->head_scale(c, &d) : 1;
}

const PosScheme *posenc_fixed_table(const PosConfig *c) {
    const PosScheme *in = posenc_scheme(c->input);
    return in->fixed_context ? in : NULL;
}

int posenc_window_context(const PosConfig *c, int W) {
    if (c->rope_scaling != ROPE_SCALING_DYNAMIC && c->rope_scaling != ROPE_SCALING_LONGROPE) return 0;
    return W > c->rope_original_context ? W : c->rope_original_context;
}

int posenc_scaling_searched(const char *method) {
    return strcmp(method, SCALING_NAMES[ROPE_SCALING_LONGROPE]) == 0;
}

int posenc_takes_extension(const char *name) {
    int id = posenc_find(name);
    if (id >= 0) return posenc_scheme(id)->takes_extension;
    for (int p = 0; p < N_PRESETS; p++)
        if (strcmp(name, PRESETS[p].name) == 0)
            for (int l = 0; l < PE_MAX_LAYERS; l++) if (posenc_takes_extension(PRESETS[p].layer(l))) return 1;
    return 0;
}

// ----------------------------------------------------------------------------------------------
// serialisation: checkpoint lines, parsing, JSON, metadata, --help

// strict number parsing: the whole string must be a finite number
static int parse_double(const char *v, double *out) {
    char *end;
    if (!*v) return 0;
    double x = strtod(v, &end);
    if (*end || !isfinite(x)) return 0;
    *out = x;
    return 1;
}
static int parse_int(const char *v, int *out) {
    char *end;
    if (!*v) return 0;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end || errno || x < -2147483647L || x > 2147483647L) return 0;
    *out = (int)x;
    return 1;
}

int posenc_parse_factors(const char *text, double lo, double hi, PosFactors *f, char *msg, size_t cap) {
    memset(f, 0, sizeof *f);        // the unused tail too: configs compare equal as bytes
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        if (f->n >= PE_MAX_FACTORS) { snprintf(msg, cap, "more than %d factors", PE_MAX_FACTORS); return 0; }
        // one number: up to the next comma or white space
        size_t len = strcspn(p, ", \t\r\n\v\f");
        char num[64];
        double x;
        snprintf(num, sizeof num, "%.*s", (int)(len < sizeof num - 1 ? len : sizeof num - 1), p);
        if (len == 0 || len >= sizeof num || !parse_double(num, &x)) {
            snprintf(msg, cap, "factor %d, '%.*s', is not a number", f->n + 1, (int)(len < 40 ? len : 40), p);
            return 0;
        }
        if (x <= lo || x > hi) { snprintf(msg, cap, "factor %d is %g, outside (%g, %g]", f->n + 1, x, lo, hi); return 0; }
        f->f[f->n++] = x;
        p += len;
        while (isspace((unsigned char)*p)) p++;
        if (*p == ',') {            // a comma must be followed by a number
            p++;
            while (isspace((unsigned char)*p)) p++;
            if (!*p || *p == ',') { snprintf(msg, cap, "a comma after factor %d is not followed by a number", f->n); return 0; }
        }
    }
    return 1;
}

// The setting whose key this is, or NULL
static const FlagRow *setting_of(const char *key) {
    for (int i = 0; i < N_SETTINGS; i++) if (strcmp(key, SETTINGS[i].key) == 0) return &SETTINGS[i];
    return NULL;
}

const char *posenc_flag_value(const char *key, const char *value, char *buf, size_t bufcap, char *msg, size_t cap) {
    const FlagRow *s = setting_of(key);
    PosFactors f;
    char fl[64], why[160];
    if (!s || s->type != FLAG_LIST || posenc_parse_factors(value, s->min, s->max, &f, why, sizeof why)) return value;
    flag_of(s->key, fl, sizeof fl);
    FILE *in = strchr(value, ',') ? NULL : fopen(value, "rb");     // a comma: a list, never a file name
    if (!in && strchr(value, ',')) {
        snprintf(msg, cap, "%s must be a list of numbers in (%g, %g], separated by commas or white space: %s", fl, s->min, s->max, why);
        return NULL;
    }
    if (!in) {
        snprintf(msg, cap, "%s '%s' is neither a list of numbers (%s) nor a readable file (%s)", fl, value, why, strerror(errno));
        return NULL;
    }
    enum { MAX_FILE = 1 << 20 };    // PE_MAX_FACTORS numbers take far less
    char *text = xmalloc(MAX_FILE + 1);
    size_t n = fread(text, 1, MAX_FILE + 1, in);
    int failed = ferror(in);
    fclose(in);
    text[n <= MAX_FILE ? n : MAX_FILE] = 0;
    int nul = strlen(text) != n;
    int ok = !failed && n <= MAX_FILE && !nul && posenc_parse_factors(text, s->min, s->max, &f, why, sizeof why);
    free(text);
    if (!ok) {
        snprintf(msg, cap, "%s: file '%s': %s", fl, value, failed ? "cannot be read" : n > MAX_FILE ? "over 1 MiB, not a factor list"
                 : nul ? "holds a NUL byte, not a text list of numbers" : why);
        return NULL;
    }
    CHECK(bufcap >= PE_VALUE_CAP, "internal: posenc_flag_value needs a buffer of PE_VALUE_CAP");
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < f.n; i++) k += snprintf(buf + k, bufcap - k, "%s%.17g", i ? "," : "", f.f[i]);
    return buf;
}


void posenc_write_kv(const PosConfig *c, FILE *f) {
    char layers[PE_MAX_LAYERS * 24], v[PE_VALUE_CAP];
    posenc_layer_list(c, layers, sizeof layers);
    fprintf(f, "input_pe=%s\nlayer_pe=%s\n", input_name(c), layers);
    for (int i = 0; i < N_SETTINGS; i++) fprintf(f, "%s=%s\n", SETTINGS[i].key, format_value(c, &SETTINGS[i], v, sizeof v));
}

// Parses value into setting s of c; on a bad value writes a sentence into msg and returns 0.
static int set_value(PosConfig *c, const FlagRow *s, const char *value, char *msg, size_t cap) {
    char fl[64], names[128];
    double x;
    int n;
    flag_of(s->key, fl, sizeof fl);
    if (s->type == FLAG_LIST) {
        PosFactors f;
        char why[160];
        if (!posenc_parse_factors(value, s->min, s->max, &f, why, sizeof why)) {
            snprintf(msg, cap, "%s must be a list of numbers in %c%g, %g], separated by commas or white space: %s", fl,
                     s->lo_open ? '(' : '[', s->min, s->max, why);
            return 0;
        }
        *list_at(c, s) = f;
    } else if (s->type == FLAG_DOUBLE) {
        if (!parse_double(value, &x) || (s->lo_open ? x <= s->min : x < s->min) || x > s->max) {
            snprintf(msg, cap, "%s must be a number in %c%g, %g] (got '%s')", fl, s->lo_open ? '(' : '[', s->min, s->max, value);
            return 0;
        }
        *double_at(c, s) = x;
    } else if (s->type == FLAG_INT) {
        if (!parse_int(value, &n) || n < s->min || n > s->max) {
            if (s->max == INT_MAX) snprintf(msg, cap, "%s must be an integer >= %.0f (got '%s')", fl, s->min, value);
            else snprintf(msg, cap, "%s must be an integer in [%.0f, %.0f] (got '%s')", fl, s->min, s->max, value);
            return 0;
        }
        *int_at(c, s) = n;
    } else {
        for (n = 0; s->choices[n] && strcmp(value, s->choices[n]); n++) {}
        if (!s->choices[n]) {
            join(s->choices, n, ", ", " or ", names, sizeof names);
            snprintf(msg, cap, "%s must be %s (got '%s')", fl, names, value);
            return 0;
        }
        *int_at(c, s) = n;
    }
    return 1;
}

int posenc_set(PosConfig *c, const char *key, const char *value, char *msg, size_t cap) {
    const FlagRow *row = setting_of(key);
    if (row) return set_value(c, row, value, msg, cap) ? 1 : -1;
    if (strcmp(key, "input_pe") == 0) return posenc_schedule(c, c->n_layer, NULL, NULL, value, msg, cap) ? 1 : -1;
    if (strcmp(key, "layer_pe") == 0) {
        int n = 1;
        for (const char *s = value; *s; s++) n += *s == ',';
        int input = c->input;
        if (!posenc_schedule(c, n, NULL, value, NULL, msg, cap)) return -1;
        c->input = input;
        return 1;
    }
    return 0;
}

#define AT (k < cap ? buf + k : buf + cap), (k < cap ? cap - k : 0)
size_t posenc_json(const PosConfig *c, char *buf, size_t cap) {
    char v[PE_VALUE_CAP];
    size_t k = snprintf(buf, cap, "\"input_pe\":\"%s\",\"layer_pe\":[", input_name(c));
    for (int l = 0; l < c->n_layer; l++) k += snprintf(AT, "%s\"%s\"", l ? "," : "", posenc_scheme(c->layer[l])->name);
    k += snprintf(AT, "]");
    for (int i = 0; i < N_SETTINGS; i++) {     // numbers as JSON numbers, names as strings, lists as arrays
        FlagType t = SETTINGS[i].type;
        const char *open = t == FLAG_CHOICE ? "\"" : t == FLAG_LIST ? "[" : "", *close = t == FLAG_LIST ? "]" : open;
        k += snprintf(AT, ",\"%s\":%s%s%s", SETTINGS[i].key, open, format_value(c, &SETTINGS[i], v, sizeof v), close);
    }
    return k;
}

// The settings with metadata = 1 as top-level safetensors metadata (string values): ,"rope_scaling":"none",...
size_t posenc_metadata(const PosConfig *c, char *buf, size_t cap) {
    char v[PE_VALUE_CAP];
    size_t k = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < N_SETTINGS; i++)
        if ((SETTINGS[i].tag & PE_METADATA)) k += snprintf(AT, ",\"%s\":\"%s\"", SETTINGS[i].key, format_value(c, &SETTINGS[i], v, sizeof v));
    return k;
}
#undef AT

void posenc_help(FILE *f) {
    char inputs[256], presets[256];
    const char *pnames[N_PRESETS];
    for (int p = 0; p < N_PRESETS; p++) pnames[p] = PRESETS[p].name;
    join(pnames, N_PRESETS, "|", "|", presets, sizeof presets);
    scheme_names(inputs, sizeof inputs, 1, "|", "|");
    fprintf(f, "Positional schemes (--pe NAME, --pe-layers a,b,...|%s, --input-pe none|%s):\n", presets, inputs);
    for (int i = 0; i < posenc_count(); i++) fprintf(f, "  %-11s %s\n", posenc_scheme(i)->name, posenc_scheme(i)->summary);
    fprintf(f, "Scheme settings (the positions flags from --%s on): the context-extension ones may also be given with "
               "--load, all of them with --load --new-schedule.\n", SETTINGS[0].name);
}

const char *posenc_schedule_help(const char *flag, char *buf, size_t cap) {
    char names[256];
    if (strcmp(flag, "pe") == 0) {
        PosConfig d;
        posenc_defaults(&d, 1);
        snprintf(buf, cap, "scheme of every layer, or an input scheme with %s layers (%s)", posenc_scheme(PE_NOPE)->name,
                 posenc_scheme(d.input)->name);
    } else if (strcmp(flag, "pe-layers") == 0) {
        snprintf(buf, cap, "one layer scheme per layer, e.g. rope,rope,rope,nope");
    } else {
        CHECK(strcmp(flag, "input-pe") == 0, "internal: --%s is not a schedule flag", flag);
        scheme_names(names, sizeof names, 1, ", ", " or ");
        snprintf(buf, cap, "input scheme: none, %s", names);
    }
    return buf;
}
