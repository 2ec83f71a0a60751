// posenc.h: every positional scheme behind one interface, and the per-layer schedule.
//
// Position can enter a GPT at three hook points (shared/DESIGN.md):
//   1. input:  x(N,C) += a vector per position            (learned, sinusoidal)
//   2. q/k:    rotate each head's q and k before scores    (rope)
//   3. scores: add b_h(i, j) to the pre-softmax scores      (alibi)
// A scheme fills in only the hooks it uses; the model calls whatever is non-NULL and never looks
// at a scheme's name. Positions always come from the batch's position ids, never from loop indices.
#ifndef POSENC_H
#define POSENC_H

#include "common.h"

enum { PE_HOOK_INPUT = 1, PE_HOOK_QK = 2, PE_HOOK_BIAS = 4 };
enum { PE_MAX_LAYERS = 64 };

// Scheme ids index the table returned by posenc_scheme(); 0 is always "nope".
enum { PE_NOPE = 0 };

typedef struct {
    int input;                  // scheme id at the input hook (PE_NOPE: nothing added)
    int layer[PE_MAX_LAYERS];   // scheme id of each layer's attention
    int n_layer;                // number of entries of layer[] in use
    double rope_base;           // theta_i = base^(-2i/d_rot)                      (10000)
    double rope_fraction;       // d_rot = int(head_size * fraction), must be even (1.0)
    int rope_interleaved;       // 0: split-half pairs (i, i+d/2) [ccss]; 1: (2i, 2i+1) [cscs]
} PosConfig;

// Model dimensions a scheme may need.
typedef struct {
    int n_layer, n_head, n_embd, head_size;
    int max_seq_len;            // the model's context length (size of a learned table)
} PosDims;

// Constants derived once from a config (never recomputed per token): cos/sin tables whose angles
// are computed in double and then cast, ALiBi slopes, the sinusoid table.
typedef struct {
    PosDims d;
    PosConfig cfg;
    int max_pos;                // tables cover position ids 0 .. max_pos-1
    int rope_rot;               // rotated width d_rot (0 if no layer uses rope)
    real *rope_cos, *rope_sin;  // (max_pos, d_rot/2), angle pos * theta_i
    real *sinusoid;             // (max_pos, C), or NULL when the input scheme is not sinusoidal
    double *alibi_slope;        // (NH,)
} PosTables;

typedef struct PosScheme {
    const char *name;
    const char *summary;        // one line for --help and README
    int hooks;                  // PE_HOOK_* bits
    // Parameters (learned schemes): per instance; shared=1 means all layers using the scheme share
    // one block. Shape as (rows, cols) for export; export_name for the input hook's table.
    int shared;
    size_t (*n_params)(const PosDims *d);
    void (*param_shape)(const PosDims *d, int *rows, int *cols);
    const char *export_name;    // HF name of an input table (NULL: "pe.<name>.weight")
    double init_std;            // parameters start as N(0, init_std^2)
    // Fills the scheme's part of PosTables (its cos/sin tables, slopes, ...); NULL if it needs none.
    void (*build)(PosTables *t);
    // Returns NULL if the scheme can run with this config, else a sentence saying what to change.
    const char *(*check)(const PosConfig *c, const PosDims *d, char *msg, size_t cap);

    // hook 1: x (N,C) += row for pos[n]; backward accumulates into dp. p is NULL for
    // parameter-free schemes.
    void (*input_forward)(const PosTables *t, const real *p, real *x, const int *pos, int N);
    void (*input_backward)(const PosTables *t, real *dp, const real *dx, const int *pos, int N);
    // hook 2: rotate one head vector x (hs) of the token at position pos, in place.
    // backward applies the transpose (the rotation by -angle) to the gradient dx (hs).
    void (*qk_forward)(const PosTables *t, real *x, int pos);
    void (*qk_backward)(const PosTables *t, real *dx, int pos);
    // hook 3: out[j] += b_h(qpos, kpos[j]) for j < n (scores already scaled by 1/sqrt(hs)).
    // backward accumulates dout[j] * d b / d p into dp (NULL for fixed biases).
    void (*bias_forward)(const PosTables *t, const real *p, int h, int qpos, const int *kpos, int n, real *out);
    void (*bias_backward)(const PosTables *t, real *dp, int h, int qpos, const int *kpos, int n, const real *dout);
} PosScheme;

int posenc_count(void);
const PosScheme *posenc_scheme(int id);
int posenc_find(const char *name);              // -1 if unknown

// Defaults: learned input, nope layers, rope 10000 / 1.0 / split.
void posenc_defaults(PosConfig *c, int n_layer);

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

// ALiBi slopes for n heads (shared/REFERENCE.md), out (n,).
void posenc_alibi_slopes(int n, double *out);
// RoPE inverse frequencies theta_i, i < d_rot/2, out (d_rot/2,).
void posenc_rope_freqs(const PosConfig *c, int d_rot, double *out);
int posenc_rope_width(const PosConfig *c, int head_size);

// Serialisation: "key=value\n" lines (checkpoints) and JSON members (export metadata), so a new
// scheme setting touches only posenc.c. posenc_set parses one key; returns 0 if the key is not
// posenc's, -1 (with msg) if the value is bad, 1 on success.
void posenc_write_kv(const PosConfig *c, FILE *f);
int posenc_set(PosConfig *c, const char *key, const char *value, char *msg, size_t cap);
// Appends ,"input_pe":"...","layer_pe":[...],"rope_base":... to buf (JSON, no braces).
size_t posenc_json(const PosConfig *c, char *buf, size_t cap);
// "nope,rope,..." for the layers
void posenc_layer_list(const PosConfig *c, char *buf, size_t cap);
// 1 if --FLAG is a scheme setting (e.g. "rope-base"); train.c passes it to posenc_set with
// '-' replaced by '_'.
int posenc_is_flag(const char *flag);
// 1 for plain GPT-2 positions: learned input, every layer nope (transformers can load it).
int posenc_is_gpt2(const PosConfig *c);
// Prints the schemes and the scheme flags (--rope-base ...) for --help.
void posenc_help(FILE *f);

#endif
