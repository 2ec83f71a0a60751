// posenc.h: every positional scheme behind one interface, and the per-layer schedule
// (posenc_schemes.c: the schemes' hooks and tables; posenc.c: settings, schedule, serialisation).
//
// Position can enter a GPT at three hook points (README.md, Adding a scheme):
//   1. input:  x(N,C) += a vector per position            (learned, sinusoidal; the token
//              embeddings in x first times the scheme's embed_scale: sinusoidal's sqrt(C); an
//              input scheme may also set the token embeddings' initial std and a factor on the
//              final hidden state before the tied LM head: the NoPE paper's APE)
//   2. q/k:    rotate each head's q and k before scores    (rope)
//   3. scores: add b_h(i, j) to the pre-softmax scores      (alibi)
// A scheme fills in only the hooks it uses; the model calls whatever is non-NULL and never looks
// at a scheme's name. Positions always come from the batch's position ids, never from loop indices.
#ifndef POSENC_H
#define POSENC_H

#include "util/common.h"
#include "util/flags.h"

enum { PE_HOOK_INPUT = 1, PE_HOOK_QK = 2, PE_HOOK_BIAS = 4 };
enum { PE_MAX_LAYERS = 64 };
enum { PE_MAX_FACTORS = 128 };   // longrope: d_rot/2 factors per list, rotated widths up to 256

// Scheme ids index the table returned by posenc_scheme(); 0 is always "nope". PE_T5: the one other
// scheme the lab names (the attention distance's claim "NoPE's attention is nearest to T5's");
// tests/test_posenc.c checks that the table's row PE_T5 is "t5".
enum { PE_NOPE = 0, PE_T5 = 5 };

// The schemes a comparison runs when not told which (./compare without --schemes)
#define PE_DEFAULT_COMPARISON "nope,learned,sinusoidal,rope,alibi,t5"

// RoPE context extension (HF transformers' modeling_rope_utils rope_type values)
typedef enum { ROPE_SCALING_NONE, ROPE_SCALING_LINEAR, ROPE_SCALING_DYNAMIC, ROPE_SCALING_YARN,
               ROPE_SCALING_LLAMA3, ROPE_SCALING_LONGROPE } RopeScaling;

// A list of positive factors (longrope's short and long lists), one per rotated pair
typedef struct {
    int n;                      // factors given (0: none)
    double f[PE_MAX_FACTORS];
} PosFactors;

typedef struct {
    int input;                  // scheme id at the input hook (PE_NOPE: nothing added)
    int layer[PE_MAX_LAYERS];   // scheme id of each layer's attention
    int n_layer;                // number of entries of layer[] in use
    double rope_base;           // theta_i = base^(-2i/d_rot)                      (10000)
    double rope_fraction;       // d_rot = int(head_size * fraction), must be even (1.0)
    int rope_interleaved;       // 0: split-half pairs (i, i+d/2) [ccss]; 1: (2i, 2i+1) [cscs]
    // context extension of the RoPE family (rope, p-rope, xpos)
    RopeScaling rope_scaling;   // none, linear, dynamic, yarn, llama3, longrope          (none)
    double rope_factor;         // s                                                     (1)
    int rope_original_context;  // L0, the context the model was trained at (0: the model's context)
    double yarn_beta_fast, yarn_beta_slow;                  // (32, 1)
    double llama3_low_freq_factor, llama3_high_freq_factor; // (1, 4)
    PosFactors longrope_short, longrope_long;   // theta_i / f_i at sequences <= L0 / longer (none)
    double longrope_attention;  // a on cos and sin (0: sqrt(1 + ln s / ln L0) when s > 1, else 1)
    double xpos_scale_base;     // xpos gamma                                            (512)
    double p_rope_fraction;     // p-rope keeps floor(fraction * d_rot/2) highest frequencies (0.25)
    int t5_num_buckets;         // (32)
    int t5_max_distance;        // (128)
    int sinusoidal_scale;       // the sinusoidal input's form: PE_SIN_SQRT, PE_SIN_NONE or PE_SIN_PAPER (below)
} PosConfig;

// --sinusoidal-scale (PosConfig.sinusoidal_scale), the names in this order:
//   none   the table [s c s c] added to the token embeddings as they are
//   sqrt   the token embeddings x sqrt(C) first (Vaswani et al. 2017, 3.4; fairseq's embed_scale)
//   paper  the NoPE paper's APE (its code, McGill-NLP/length-generalization, src/models/
//          custom_t5_decoder_only.py): the table concat(sin, cos) [s s c c] added unscaled to token
//          embeddings initialised N(0, 1), and the final hidden state x C^-0.5 before the LM head,
//          which is tied to them (T5's tie_word_embeddings)
enum { PE_SIN_NONE, PE_SIN_SQRT, PE_SIN_PAPER };

// Model dimensions a scheme may need.
typedef struct {
    int n_layer, n_head, n_embd, head_size;
    int max_seq_len;            // the model's context length (size of a learned table)
} PosDims;

// A rotation table of the RoPE family: pair i of the first `rot` channels of the token at
// position p turns by angle p*theta_i; cos and sin already carry YaRN's attention factor.
typedef struct {
    int rot;                    // rotated width d_rot
    real *cos, *sin;            // (max_pos, rot/2)
    real *q_scale, *k_scale;    // (max_pos, rot/2) xpos only: zeta_i^(p/gamma) and its inverse
} RopeTable;

// Constants derived once from a config (never recomputed per token): cos/sin tables whose angles
// are computed in double and then cast, ALiBi slopes, the sinusoid table, T5 buckets.
typedef struct {
    PosDims d;
    PosConfig cfg;
    int max_pos;                // tables cover position ids 0 .. max_pos-1
    RopeTable rope, prope, xpos;
    real *sinusoid;             // (max_pos, C), or NULL when the input scheme is not sinusoidal
    double *alibi_slope;        // (NH,)
    int *t5_bucket;             // (max_pos,) bucket of distance n = i - j
} PosTables;

typedef struct PosScheme {
    const char *name;
    const char *summary;        // one line for --help and README
    int hooks;                  // PE_HOOK_* bits
    // What the rest of the program may ask about a scheme (through posenc_*, never by its name):
    int fixed_context;          // 1: its table has one row per position of the model's context and
                                // none beyond (learned): the model takes no other context
    int takes_extension;        // 1: the context-extension settings (--rope-scaling ...) act on it
    // Parameters (learned schemes): one block per layer that uses the scheme, or, with shared=1, one
    // block for all of them. param_shape gives its (rows, cols) (NULL: no parameters).
    int shared;
    void (*param_shape)(const PosConfig *c, const PosDims *d, int *rows, int *cols);
    int param_vector;           // 1: the block is a vector (one row), exported 1-D; 0: a (rows, cols)
                                // table, 2-D even with one row (a learned table at context 1)
    const char *export_name;    // HF name of an input table (NULL: "pe.<name>.weight")
    double init_std;            // parameters start as N(0, init_std^2) ...
    void (*init)(const PosConfig *c, const PosDims *d, real *p, Rng *rng);   // ... or its own init
    // Keeps parameters in their domain after each optimiser step (NULL: nothing to do).
    void (*project)(const PosConfig *c, const PosDims *d, real *p);
    // The factor on the token embeddings before hook 1 adds its row (NULL: 1; posenc_embed_scale).
    double (*embed_scale)(const PosConfig *c, const PosDims *d);
    // The model around an input scheme, where its published form sets it (NULL, or a return of 0:
    // the model's own): the std of the token embeddings' initial values (posenc_token_init_std),
    // and the factor on the final hidden state before the LM head tied to them (posenc_head_scale).
    double (*token_init_std)(const PosConfig *c, const PosDims *d);
    double (*head_scale)(const PosConfig *c, const PosDims *d);
    // Fills the scheme's part of PosTables (its cos/sin tables, slopes, ...); NULL if it needs none.
    void (*build)(PosTables *t);
    // Returns NULL if the scheme can run with this config, else a sentence saying what to change.
    const char *(*check)(const PosConfig *c, const PosDims *d, char *msg, size_t cap);

    // hook 1: x (N,C) += row for pos[n]; backward accumulates into dp. p is NULL for
    // parameter-free schemes.
    void (*input_forward)(const PosTables *t, const real *p, real *x, const int *pos, int N);
    void (*input_backward)(const PosTables *t, real *dp, const real *dx, const int *pos, int N);
    // hook 2: transform one head vector x (hs) of the token at position pos in place: a query
    // (is_key 0) or a key (is_key 1). Backward applies the transpose to the gradient dx (hs).
    void (*qk_forward)(const PosTables *t, real *x, int pos, int is_key);
    void (*qk_backward)(const PosTables *t, real *dx, int pos, int is_key);
    // hook 3: out[j] += b_h(qpos, kpos[j]) for j < n (scores already scaled by 1/sqrt(hs)).
    // backward accumulates sum_j dout[j] * d b_h(qpos, kpos[j]) / d p into dp (NULL: fixed bias).
    // cache: NULL, or what bias_prepare filled for this call (below); the bias is the same, bit for
    // bit, with or without it. dcache: NULL, or a zeroed buffer of the cache's size into which
    // backward may accumulate the gradient of the cached values instead of dp (bias_finish then
    // carries it to dp); without it everything goes to dp.
    void (*bias_forward)(const PosTables *t, const real *p, const real *cache, int h, int qpos,
                         const int *kpos, int n, real *out);
    void (*bias_backward)(const PosTables *t, const real *p, const real *cache, real *dp, real *dcache, int h,
                          int qpos, const int *kpos, int n, const real *dout);
    // Optional per-call cache of hook 3, for a bias that is costly per (query, key) but cheap per
    // distance (FIRE's MLP): the model fills it once per attention call, before the hooks run
    // (from several threads, read-only), instead of evaluating the bias per (head, query, key).
    //   bias_cache_size(t, D): reals it takes for query positions < D;
    //   bias_prepare(t, p, D, cache): fills it from the parameters p;
    //   bias_finish(t, p, cache, dcache, dp): dp += what the gradient dcache of the cached values
    //   (summed over every bias_backward of the call) means for the parameters.
    size_t (*bias_cache_size)(const PosTables *t, int D);
    void (*bias_prepare)(const PosTables *t, const real *p, int D, real *cache);
    void (*bias_finish)(const PosTables *t, const real *p, const real *cache, const real *dcache, real *dp);
} PosScheme;

int posenc_count(void);
const PosScheme *posenc_scheme(int id);
int posenc_find(const char *name);              // -1 if unknown

// A scheme setting: one row of posenc.c's SETTINGS[], a FlagRow (util/flags.h) like every program's
// flags, gives its flag (.name: --rope-base), its checkpoint line and JSON member (.key: rope_base),
// its default (.def; a choice: the index of its value name), its valid values (.type FLAG_DOUBLE,
// FLAG_INT, FLAG_CHOICE or FLAG_LIST; [min, max], or (min, max] with .lo_open; an int with max
// INT_MAX: >= min; a list: each value in (min, max]), its metadata entry and --help (./train lists the
// rows under its positions heading). .absent: the value meant by a stored config without this key
// (written before the setting existed, so its model ran as this value); NULL: the default.
enum {
    PE_EVAL = 1,        // a row's tag bit: how a trained model is run (context extension), may change with --load
    PE_METADATA = 2,    // also a top-level safetensors metadata entry
};
int posenc_setting_count(void);
const FlagRow *posenc_setting(int i);

// Defaults: learned input, nope layers, every setting its row's default.
void posenc_defaults(PosConfig *c, int n_layer);
// A stored config's starting point (checkpoints, exports), before its key=value lines are read:
// posenc_defaults, then each setting with an `absent` value takes it, so that a file written before
// the setting existed loads as the model it was (sinusoidal_scale: none).
void posenc_stored_defaults(PosConfig *c, int n_layer);
// Fills the settings whose default depends on the model's context (RoPE's L0 = the context).
void posenc_resolve(PosConfig *c, int context);

// The schedule from the command line. pe: one name for every layer (an input scheme name means
// that input scheme with nope layers); pe_layers: comma list with one name per layer; input_pe:
// "none" or an input scheme. pe and pe_layers exclusive; NULL when not given.
// On error writes a sentence into msg and returns 0.
int posenc_schedule(PosConfig *c, int n_layer, const char *pe, const char *pe_layers,
                    const char *input_pe, char *msg, size_t cap);
// Checks every scheme in the schedule against the dims (e.g. rope's rotated width must be even).
int posenc_validate(const PosConfig *c, const PosDims *d, char *msg, size_t cap);

// Builds the tables for positions 0 .. max_pos-1.
void posenc_tables_build(PosTables *t, const PosConfig *c, const PosDims *d, int max_pos);
void posenc_tables_free(PosTables *t);

// ALiBi slopes for n heads (Press et al. 2021), out (n,).
void posenc_alibi_slopes(int n, double *out);
// RoPE inverse frequencies theta_i, i < d_rot/2, out (d_rot/2,), after the context-extension
// method of c (context: the model's context, which dynamic scaling compares with L0).
// *attn_factor receives the factor on cos and sin (YaRN, LongRoPE; 1 otherwise). longrope takes its
// long list when context > L0, else its short one. T5's bucket of distance n.
void posenc_rope_freqs(const PosConfig *c, int d_rot, int context, double *out, double *attn_factor);
// LongRoPE's attention factor: given when > 0, else sqrt(1 + ln(s)/ln(L0)) when s > 1, else 1.
double posenc_longrope_attention(double s, int L0, double given);
int posenc_t5_bucket(int n, int num_buckets, int max_distance);

// LongRoPE's factor search (eval/longrope.c) asks posenc what concerns the scheme:
//   posenc_longrope_target: for a model with config c (its RoPE family layers' head size hs): the
//     pairs d_rot/2, L0, s (--rope-factor, > 1) and the two windows the lists serve, L0 (short)
//     and round(s L0) (long). 0 and a sentence in msg when the model has no RoPE layer, s <= 1 or
//     there are more pairs than PE_MAX_FACTORS.
//   posenc_longrope_seeds: the lists a search starts from, each non-decreasing in i, into
//     out (n_out, pairs); returns how many (<= n_out): ones (no change), position interpolation
//     (s everywhere), NTK-aware (s^(2i/(d-2)), as base * s^(d/(d-2))) and YaRN's ramp, each
//     as the factors theta_i / theta'_i.
//   posenc_longrope_use: c runs longrope with these lists (pairs factors each).
typedef struct { int pairs, L0, short_window, long_window; double s; } LongropeTarget;
int posenc_longrope_target(const PosConfig *c, int hs, LongropeTarget *t, char *msg, size_t cap);
int posenc_longrope_seeds(const PosConfig *c, const LongropeTarget *t, double *out, int n_out);
void posenc_longrope_use(PosConfig *c, const double *short_f, const double *long_f, int pairs);
int posenc_rope_width(const PosConfig *c, int head_size);

// Serialisation: "key=value\n" lines (checkpoints) and JSON members (export metadata), all from the
// settings table, so a new scheme setting is one row of it. posenc_set parses one key; returns 0 if
// the key is not posenc's, -1 (with msg) if the value is bad, 1 on success.
void posenc_write_kv(const PosConfig *c, FILE *f);
int posenc_set(PosConfig *c, const char *key, const char *value, char *msg, size_t cap);
// The value of a scheme flag as posenc_set takes it (key: "longrope_short"). A list setting takes a
// list of numbers or the name of a file that holds one (numbers separated by commas or white
// space): a file's list is written into buf (bufcap >= PE_VALUE_CAP) as a comma list, and buf is
// returned. Any other value is returned as it is. NULL and a sentence naming the flag in msg when
// the value is neither a list nor a readable file of one.
const char *posenc_flag_value(const char *key, const char *value, char *buf, size_t bufcap, char *msg, size_t cap);
// The longest text a setting's value takes (a list of PE_MAX_FACTORS numbers), with its NUL.
enum { PE_VALUE_CAP = PE_MAX_FACTORS * 25 + 1 };
// Parses a list of numbers separated by commas and/or white space into f; each must be a finite
// number in [lo, hi]. On error writes a sentence (without a flag name) into msg and returns 0.
int posenc_parse_factors(const char *text, double lo, double hi, PosFactors *f, char *msg, size_t cap);
// Writes "input_pe":"...","layer_pe":[...],"rope_base":... into buf (JSON members, no braces).
size_t posenc_json(const PosConfig *c, char *buf, size_t cap);
// The settings marked metadata as top-level safetensors metadata entries with string values (what
// a reader that does not parse the config JSON sees): writes ,"rope_scaling":"none",... into buf.
size_t posenc_metadata(const PosConfig *c, char *buf, size_t cap);
// "nope,rope,..." for the layers
void posenc_layer_list(const PosConfig *c, char *buf, size_t cap);
// Position ids a model with config c, tables t and this context can take: 0 .. limit-1.
int posenc_position_limit(const PosConfig *c, const PosTables *t, int context);
// The input scheme whose table fixes the positions to those of the model's context (fixed_context:
// learned), or NULL: the tables of every scheme in c grow to any position (gpt_reserve_positions).
const PosScheme *posenc_fixed_table(const PosConfig *c);
// Windows of W tokens (perplexity): the context to build the tables for when they depend on the
// window's length (dynamic NTK scaling: the base grows with W past L0; longrope: its long list
// serves W > L0, its short one shorter windows), else 0.
int posenc_window_context(const PosConfig *c, int W);
// 1 if NAME is a scheme, or a --pe-layers preset with a layer of a scheme, on which the
// context-extension settings act (takes_extension: the RoPE family).
int posenc_takes_extension(const char *name);
// 1 when the context-extension method `method` (a --rope-scaling value) takes factor lists that are
// data, searched per model before it can be evaluated (longrope: ./train --longrope-search); 0 for
// the others and for a name that is not a method. ./compare asks it, so it names no method.
int posenc_scaling_searched(const char *method);
// A short name of the positions, without commas (for tables and CSV): "rope" when every layer
// uses it, "learned" for an input table over nope layers, else "sinusoidal+rope/nope/...".
void posenc_label(const PosConfig *c, char *buf, size_t cap);
// 1 if --FLAG is a scheme setting (e.g. "rope-base"); train.c passes it to posenc_set with
// '-' replaced by '_'. 2 if it may also change a trained model (context extension: --rope-scaling).
int posenc_is_flag(const char *flag);
// Expands a one-word schedule preset ("smollm3") for n layers into a comma list; 0 if not a preset.
int posenc_preset(const char *name, int n_layer, char *out, size_t cap);
// The factor on the token embeddings (wte rows) before the input scheme adds its row: sqrt(n_embd)
// for a sinusoidal input with --sinusoidal-scale sqrt (Vaswani et al. 2017; fairseq's embed_scale),
// else 1. The LM head, tied to wte, is not scaled by it (posenc_head_scale).
double posenc_embed_scale(const PosConfig *c, int n_embd);
// The std of the token embeddings' (wte's) initial values: 1 for the NoPE paper's APE
// (--sinusoidal-scale paper), else dflt (the model's own, GPT-2's 0.02).
double posenc_token_init_std(const PosConfig *c, int n_embd, double dflt);
// The factor on the final hidden state (ln_f's output) before the LM head tied to wte: C^-0.5 for
// the NoPE paper's APE (T5's rescaling of a tied head), else 1.
double posenc_head_scale(const PosConfig *c, int n_embd);
// 1 for plain GPT-2 positions: learned input, every layer nope (transformers can load it).
int posenc_is_gpt2(const PosConfig *c);
// NULL when a model with schedule c reads the setting `name` (a SETTINGS key, "rope_base", or its flag's
// name, "rope-base"); else what
// would read it ("a rope, xpos or p-rope layer", "--rope-scaling yarn", ...): a setting given for a
// scheme the model does not use would change nothing. (LongRoPE's factor search reads --rope-factor
// and --rope-original-context without a --rope-scaling, and checks its model itself: not asked then.)
const char *posenc_setting_unused(const PosConfig *c, const char *name);
// Prints the schemes for --help, and a line on the scheme settings (whose rows ./train lists).
void posenc_help(FILE *f);
// The --help text of a schedule flag ("pe", "pe-layers", "input-pe"), written into buf.
const char *posenc_schedule_help(const char *flag, char *buf, size_t cap);

#endif
