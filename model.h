// model.h: a GPT-2 decoder whose positional encoding is a plug (posenc.h). The one header of the
// model, in the order of its files: config and weights, build and free (model_build.c), forward
// and backward and the KV cache (model.c), the optimiser (model_optim.c).
//
// Shape legend, used in every comment:
//   B batch, T time, C channels, NH heads, hs = C/NH head size, L layers,
//   V vocab, Vp vocab padded to a multiple of 64, N = B*T tokens.
// Weights are stored (out, in): a linear layer is out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias(OC).
// Backward functions ACCUMULATE into their gradient outputs (+=); the caller zeroes them
// (gpt_zero_grad) before a step. This is what makes gradient accumulation free. The exceptions:
// hook 2's backward (qk_hook, nn/attention.h), which transforms its buffer in place, and the
// parameter gradients of the first gpt_backward after gpt_zero_grad, which it overwrites.
// The layers are declared in nn/layers.h, attention in nn/attention.h, the batch in dataset/batch.h (all
// three included here).
#ifndef MODEL_H
#define MODEL_H

#include "util/common.h"
#include "nn/attention.h"
#include "dataset/batch.h"
#include "nn/layers.h"
#include "posenc.h"

// ==============================================================================================
// config and weights (and the run's state, which GPT holds with them)

typedef struct {
    int vocab_size;     // V, e.g. 256 for bytes or 50257 for GPT-2 tokens
    int padded_vocab;   // Vp >= V, a multiple of 64 (extra rows stay zero and are never predicted)
    int n_layer;        // L
    int n_head;         // NH
    int n_embd;         // C
    int max_seq_len;    // the model's context: the learned table size, the longest training T
    PosConfig pe;       // input scheme, per-layer schedule and scheme settings
} GPTConfig;

// Parameter tensors; all point into one contiguous buffer (gradients and AdamW moments share it).
typedef struct {
    real *wte;                      // (Vp, C) token embedding, tied with the LM head
    real *ln1w, *ln1b;              // (L, C)
    real *qkvw;                     // (L, 3C, C)
    real *qkvb;                     // (L, 3C)
    real *attprojw;                 // (L, C, C)
    real *attprojb;                 // (L, C)
    real *ln2w, *ln2b;              // (L, C)
    real *fcw;                      // (L, 4C, C)
    real *fcb;                      // (L, 4C)
    real *fcprojw;                  // (L, C, 4C)
    real *fcprojb;                  // (L, C)
    real *lnfw, *lnfb;              // (C)
    real *pe_input;                 // the input scheme's parameters, or NULL
    real *pe_layer[PE_MAX_LAYERS];  // each layer's scheme parameters, or NULL (shared: one block)
} ParamTensors;

typedef enum { INIT_ZERO, INIT_ONE, INIT_NORMAL, INIT_SCHEME } InitKind;

// One named tensor of the parameter buffer, for init, weight decay, export and tests.
typedef struct {
    char name[96];       // HF GPT-2 name, e.g. transformer.h.3.attn.c_attn.weight
    size_t offset;       // into the parameter buffer, in reals
    int rows, cols;      // internal layout (out, in); a vector has rows = 1
    int export_rows;     // rows written on export (wte: V of Vp)
    int vector;          // 1: exported 1-D, (cols) (biases, LayerNorm, FIRE's block); 0: (export_rows, cols)
    int transpose;       // 1: export as Conv1D (in, out)
    int decay;           // 1: AdamW weight decay applies (matrices and embedding tables)
    int init;            // InitKind: zeros, ones, normal(0, std), or the scheme's own init
    double std;
    int scheme;          // the positional scheme owning the tensor, or -1
    int layer;           // the transformer block it belongs to, or -1 (wte, ln_f, input and shared
                         // positional tensors)
} TensorInfo;

typedef struct {
    real *encoded;     // (B,T,C) token + input position embedding
    real *ln1;         // (L,B,T,C)
    real *ln1_mean;    // (L,B,T)
    real *ln1_rstd;    // (L,B,T)
    real *qkv;         // (L,B,T,3C) after the q/k hook (rotated q and k)
    real *atty;        // (L,B,T,C) attention output before the projection
    real *att_lse;     // (L,B,NH,T) log-sum-exp of each attention row (the backward recomputes p)
    real *residual2;   // (L,B,T,C)
    real *ln2;         // (L,B,T,C)
    real *ln2_mean;    // (L,B,T)
    real *ln2_rstd;    // (L,B,T)
    real *fch;         // (L,B,T,4C)
    real *fch_gelu;    // (L,B,T,4C)
    real *residual3;   // (L,B,T,C)
    real *lnf;         // (B,T,C)
    real *lnf_mean;    // (B,T)
    real *lnf_rstd;    // (B,T)
    real *logits;      // (B,T,Vp)
    real *probs;       // (B,T,Vp), turned into dlogits in place by backward (or by the forward: GptPass.loss_grad_scale)
    real *losses;      // (B,T) per-token cross-entropy
    real *scratch;     // (B,T,C) projection outputs before the residual add
    real *att_scratch; // (threads, ATT_SCRATCH(hs)) attention tiles per thread
} Activations;

typedef struct {
    real *dresidual;   // (B,T,C) gradient flowing down the residual stream
    real *dln;         // (B,T,C)
    real *dqkv;        // (B,T,3C)
    real *datty;       // (B,T,C)
    real *dfch;        // (B,T,4C) gradient of the MLP's hidden layer before GELU
    real *dfch_gelu;   // (B,T,4C) gradient after GELU
} GradActivations;

// --detect-anomaly (gpt_set_detect_anomaly): the first value that was NaN or Inf in the last checked
// call. Tensors are named as the Activations and GradActivations fields are (fch, dfch; README's
// Numerics lists them all), parameters and their gradients by their HF names (grad.NAME).
typedef struct {
    int found;               // 1: the fields below describe it; 0: every checked value was finite
    const char *pass;        // "forward", "backward", "optimiser step" (gpt_adamw) or "parameters"
    int layer;               // the transformer block, or -1 outside the blocks
    char tensor[112];        // the tensor, e.g. "fch", "dqkv", "transformer.h.1.mlp.c_fc.weight"
    size_t index, bad, n;    // the first bad element (flat index), how many are bad, of n
    char before[112];        // the tensor the same call checked just before, all finite ("": none)
    double before_max;       // its largest |x|
    char msg[640];           // all of it as a sentence: "layer 1 forward: fch has NaN at (b=0, t=3, c=17), ..."
} Anomaly;

// Time spent (seconds, accumulated since the model was built) by kind of work; bench reads it.
enum { PROF_MATMUL, PROF_ATTENTION, PROF_OPTIMIZER, PROF_N };

// The gradient's sum of squares as the backward gathers it (gpt_norm_*, model_optim.c): each
// parameter gradient's squares are summed right after the backward's last write into it, so that
// gpt_grad_norm needs no pass of its own over the whole gradient buffer.
typedef struct {
    int running;         // the running backward gathers
    int valid;           // ss is the sum of squares of the gradient buffer as it is now
    double ss;           // (valid) that sum
    double part;         // the running backward's sum so far
    size_t count;        // the elements it has gathered: every parameter once, by its end
} GradNorm;

// The parameters and everything laid out with them (model_build.c): one contiguous buffer each for
// the parameters, their gradients and AdamW's moments, their named views, and the tensor list.
typedef struct {
    size_t num_params;
    real *params, *grads;          // (num_params,)
    real *adam_m, *adam_v;         // AdamW moments (num_params,), allocated on the first update
    ParamTensors p, g;             // named views into params and grads
    size_t pe_layer_n[PE_MAX_LAYERS];   // number of parameters behind p.pe_layer[l]
    TensorInfo *tensors; int n_tensors;
    int table_rows;                // rows of a learned position table (its context when built), else 0:
                                   // an evaluation may run the model at a shorter context and back
} GPTWeights;

// The modes of one pass, chosen by its caller and given to gpt_forward and to the gpt_backward that
// follows it. Zero-initialised (GptPass pass = { 0 }, or a NULL pointer) it is an evaluation
// forward: every layer's activations kept, no dropout, the probabilities written, no attention
// statistics; and a backward that gathers the gradient's norm. What a whole run keeps stays on the
// model: its context (gpt_set_context), the memory check, the precision (gpt_set_bf16) and anomaly
// detection (gpt_set_detect_anomaly).
typedef struct {
    // 1: evaluation keeps one layer's activations: every layer reuses one layer's slices and no
    // gradient buffers exist: 16 T C floats of layer activations instead of 16 L T C (the logits
    // and probabilities, 2 T Vp, stay), so a 32768-token window of `small` needs 1.1 GB instead of
    // the training mode's 4.9 GB. Losses and logits are bit-identical to the normal forward;
    // gpt_backward and attention_probs refuse to run after such a forward. The activations are
    // reallocated when a forward's mode differs from the last one's.
    int forward_only;
    // Dropout, as GPT-2 trains (embd_pdrop = attn_pdrop = resid_pdrop = dropout): at rate dropout
    // (0 <= p < 1, kept values scaled by 1/(1-p)) the forward drops elements of the embedding sum
    // (token + input position, before block 0), the attention probabilities (after the softmax,
    // before V) and each residual branch (the attention and MLP projections, before the residual
    // add); its gpt_backward repeats the masks. Each mask is a hash of drop_key (gpt_dropout_key),
    // the layer, the site and the element (nn/kernels.h): the same key gives the same masks whatever
    // the thread count. 0: no dropout (every evaluation; gpt_forward_cached never drops).
    double dropout;
    uint64_t drop_key;
    // Under MPI each rank's batch is rows drop_row0 .. drop_row0 + B - 1 of the step's global batch
    // (drop_row0 = rank x B): the masks are drawn for those global rows, so N ranks drop what one
    // process with N x B rows drops. 0 for one process.
    uint64_t drop_row0;
    // Training's step: > 0 is the grad_scale that the gpt_backward after this forward will be given.
    // The forward's cross-entropy then writes the loss's gradient with respect to the logits,
    // w_n * grad_scale * (probs - onehot(target)), in its last pass over each row (the same
    // operations as the backward's pass: the same bits), instead of the probabilities, and the
    // backward skips its own pass over the (B T, Vp) buffer: 51 MB read and 51 MB written fewer for
    // GPT-2's vocabulary at 256 rows. A backward given another scale stops with an error (the
    // probabilities are gone). 0: probabilities; forwards without targets, forward-only ones and
    // those of --detect-anomaly (which checks the probabilities) write probabilities anyway.
    double loss_grad_scale;
    // Attention statistics (attention_stats, nn/attention.h): when set, (L, NH, ATT_NSTAT) sums to
    // which the forward adds each layer's sums over the batch, layer by layer as it runs (so
    // forward-only mode works). The caller zeroes and owns it. The KV cache's forward adds nothing.
    double *attn_stats;
    // gpt_backward: 1 gathers no norm (train.c's micro-batches before a step's last: the values
    // they leave are not final, so their gathering would be work thrown away). Only speed depends
    // on it: without a gathered norm gpt_grad_norm makes its own pass.
    int skip_norm;
} GptPass;

// What the forwards and backwards write and the settings they read (model.c): activations for the
// largest batch seen, the last forward's modes, batch and loss, the precision, the anomaly record,
// the profiler and the backward's grad_ready hook.
typedef struct {
    // activations, allocated for the largest B*T seen so far
    int act_B, act_T, act_threads;   // act_threads: rows of the per-thread scratch
    double act_bytes;                // what the activation buffers hold, in bytes
    int act_forward_only;            // the mode the activations were allocated in
    Activations a;
    GradActivations ga;
    GptPass act;                   // the last forward's modes (its backward repeats its dropout masks)
    const Batch *batch;            // the batch of the last forward
    double loss;                   // weighted mean loss of the last forward
    double weight_sum;             // sum of loss weights of the last forward
    double dlogits_scale;          // > 0: the last forward wrote dlogits over probs, at this grad_scale
    int bf16;                      // gpt_set_bf16: the linear layers' products with bf16 operands
    int detect_anomaly;            // gpt_set_detect_anomaly: forwards, backwards and AdamW check what they write
    int checking;                  // 1 while a checked call runs
    Anomaly anomaly;               // what the last checked call found
    real *check_saved;             // (check_cap,) the running block's input, (N,C), kept for its replay (model_check.c)
    size_t check_cap;
    double prof[PROF_N];           // seconds in matmul (all three products), attention (hooks 2 and 3
                                   // included), and the optimiser (the gradient's norm, gathered in
                                   // the backward or in a pass of its own, and AdamW)
    GradNorm norm;                 // the gradient's norm as the last backward gathered it
    int grads_zero;                // gpt_zero_grad: the gradient is 0 and the buffer not yet written
    // Called by gpt_backward as soon as gradients are final: grad_ready(ctx, l) after block l's
    // (l = L-1 down to 0: the tensors whose TensorInfo.layer is l), then grad_ready(ctx, -1) for
    // the rest (wte, ln_f, the input scheme's and shared positional tensors) at the very end.
    // NULL (the default): nothing is called. The training loop's MPI layer (mpi/dist.h) starts the
    // reduction of a block's gradients there while the backward goes on below.
    void (*grad_ready)(void *ctx, int layer);
    void *grad_ready_ctx;
    // gpt_decode_begin .. gpt_decode_end: the transposed copies of the linear weights, each made on
    // its first one-row product (decode_w[i] -> decode_wt[i], C x OC)
    int decode_on, decode_n;
    const real *decode_w[4 * PE_MAX_LAYERS + 1];
    real *decode_wt[4 * PE_MAX_LAYERS + 1];
} GPTRunState;

// A model, as llama2.c lays one out: its configuration, the position tables built from it, its
// parameters (GPTWeights) and what its forwards and backwards write (GPTRunState).
typedef struct {
    GPTConfig cfg;                 // shapes (L, NH, C, V, context) and positional schemes
    PosTables pt;                  // built from cfg: tables for positions 0 .. max_pos-1
    GPTWeights weights;            // parameters, gradients, AdamW moments, tensor list
    GPTRunState state;             // activations, modes, last loss, anomaly, profiler, grad_ready hook
} GPT;

// ==============================================================================================
// build and free (model_build.c)

// Builds a model (parameters initialised from seed; each tensor draws from its own stream, so
// the initial value of a shared tensor does not depend on the positional scheme). max_pos: the
// largest position id the model will see (tables are built for it); 0 means max_seq_len.
void gpt_build(GPT *m, const GPTConfig *cfg, uint64_t seed, int max_pos);

// The bytes a model of `cfg` allocates to train on (B, T) batches with `threads` threads (or,
// forward_only, to evaluate them: no AdamW moments, one layer's activations); padded_vocab must
// be set (gpt_config_check). The same sums gpt_build and the first forward allocate.
typedef struct { double params, grads, adam, acts; } GPTMemory;
GPTMemory gpt_memory(const GPTConfig *cfg, int B, int T, int forward_only, int threads);
// Memory is checked before it is allocated: a program may set a check that gpt_alloc_acts (a
// larger batch, a longer window) and kv_cache_init call with the bytes they are about to allocate,
// the bytes they free first and what they are for; it exits with a message when they do not fit
// (./train's: train_guards.c). NULL, the default: no check.
typedef void (*GptMemoryCheck)(double bytes, double freed, const char *what);
void gpt_set_memory_check(GptMemoryCheck check);
// The check set (NULL: none); kv_cache_init and gpt_alloc_acts call it.
GptMemoryCheck gpt_memory_check(void);
void gpt_free(GPT *m);
// The tensors a model of cfg has (names, shapes, offsets: what gpt_build lays out) without building
// it, so a reader can check a file against them before allocating; *n of them, the parameter count
// in *num_params. cfg must have passed gpt_config_check. The caller frees the list.
TensorInfo *gpt_tensor_list(const GPTConfig *cfg, int *n, size_t *num_params);
// The model's tensor named `name` (its HF name, e.g. transformer.wte.weight), or NULL
const TensorInfo *gpt_find_tensor(const GPT *m, const char *name);
// Fills cfg->padded_vocab, checks every field; returns 0 with a message if something is wrong.
int gpt_config_check(GPTConfig *cfg, char *msg, size_t cap);
// Position ids the model can take: 0 .. limit-1 (its tables; a learned input table: its context).
// gpt_forward and gpt_forward_cached refuse others with a message.
int gpt_position_limit(const GPT *m);
// Rebuilds the position tables (never the parameters) to cover ids 0 .. max_pos-1 when they are
// shorter, for evaluation beyond the context. A learned input table keeps its rows.
void gpt_reserve_positions(GPT *m, int max_pos);
// Runs the model at another context (the length its position tables are built for; dynamic NTK
// scaling reads the sequence length from it) and rebuilds the tables; parameters are untouched.
void gpt_set_context(GPT *m, int context);

// ==============================================================================================
// forward and backward (model.c)

// Forward over a batch in the modes of pass (GptPass; NULL: an evaluation forward): fills
// activations; returns the weighted mean cross-entropy over tokens (sum w*loss / sum w; 0 when
// every weight is 0). targets may be NULL (inference: logits only).
double gpt_forward(GPT *m, const Batch *b, const GptPass *pass);
// --precision bf16 (on = 1): every later forward and backward computes the linear layers' products
// (q/k/v, attention output, MLP, LM head) with bf16 operands and fp32 sums (nn/bf16.h, gemm_bf16);
// attention's own products, layernorm, softmax, the loss, the gradients' sums across micro-batches
// and AdamW stay fp32, and so do the parameters. on = 0 (the default): fp32 everywhere.
void gpt_set_bf16(GPT *m, int on);
// The key of micro-batch `micro` of optimiser step `step` (0-based) of the run seeded with `seed`
// (GptPass.drop_key): a resumed run draws the masks the uninterrupted run drew.
uint64_t gpt_dropout_key(uint64_t seed, int64_t step, int micro);
// The gradient is 0 from now: without a pass over the buffer, which the next gpt_backward overwrites
// tensor by tensor (and gpt_adamw zeroes, when no backward came). So read or write
// m->weights.grads only after a gpt_backward that ran to its end.
void gpt_zero_grad(GPT *m);
// Anomaly detection (on = 1), for debugging a new scheme or a diverging run: gpt_forward,
// gpt_backward and gpt_adamw check every tensor they write for NaN and Inf (forward: the
// embedding, each block's ln1, qkv, q/k after hook 2, hook 3's bias, atty, attproj, residual2, ln2,
// fch, fch_gelu, fcproj, residual3, then lnf, logits, probs, losses; backward: their gradients in
// reverse and every parameter gradient; AdamW: every parameter it updated). The passes check once
// per stage (the embedding, each block, the head; model_check.c): a scan of the tensors the stage
// left, and only when one holds a bad value a replay of the stage from its inputs, checked after
// each operation, which names the first tensor that went bad. Each such call clears
// m->state.anomaly first and describes its first bad value there (found = 1); a forward stops at it and
// returns NaN (no backward of it may follow), a backward stops at it; nothing exits, the caller
// decides (./train --detect-anomaly stops). Values are never changed: with finite values every loss
// and gradient is bit-identical to detection off.
// gpt_forward_cached is checked too (pass "cached forward"; it stops at the bad value, its cache
// not advanced): the evaluations look after each forward (eval_stop_on_anomaly, eval/eval.h).
void gpt_set_detect_anomaly(GPT *m, int on);
// Scans every parameter (the weights a run starts from, say) as above: m->state.anomaly, pass
// "parameters"; returns found. Runs whether or not detection is on.
int gpt_check_parameters(GPT *m);
// The attention probabilities p(i,j) (T,T) of layer `layer`, head `head`, batch row b of the last
// gpt_forward (m->state.batch must still be alive), recomputed as the forward computed them: row i sums
// to 1 over the keys it may attend; masked keys (future, other document, padding) are exactly 0.
void attention_probs(const GPT *m, int layer, int b, int head, real *out);
// Backward of the last forward, accumulating into m->weights.grads; pass: the modes its forward was
// given (the backward reads skip_norm; the dropout masks are the forward's own). Each token's loss
// is scaled by weight * grad_scale; grad_scale = 1 / (sum of weights over every micro-batch of the
// step) gives the gradient of the mean over the whole accumulated batch. On its way it gathers the
// sum of squares of the whole gradient buffer as it leaves it (gpt_grad_norm reads it), unless
// pass->skip_norm or grad_ready is set (under MPI the gradients are summed across ranks after the
// backward: its local values are not the ones the norm is of).
void gpt_backward(GPT *m, double grad_scale, const GptPass *pass);

// ==============================================================================================
// KV cache (model.c)

// KV cache for incremental decoding of one sequence (batch 1). Keys are stored after the q/k hook
// (rotated at their own positions), so a chunk appended after P cached tokens only hooks its own
// tokens, at the positions the caller gives (P..P+T-1 for plain decoding).
typedef struct {
    int cap;           // tokens it can hold
    int len;           // tokens cached so far
    int C, L;
    real *k, *v;       // (L, cap, C)
    int *pos, *doc;    // (cap,) position and document id of each cached token
    real *att_row;     // (threads, cap) scratch
    int threads;       // rows of att_row
} KVCache;

void kv_cache_init(KVCache *c, const GPT *m, int cap);
void kv_cache_free(KVCache *c);
// Runs T new tokens (token ids tokens (T,), position ids pos (T,), one document) after the cached
// ones, appends their keys and values, and leaves the chunk's logits in m->state.a.logits (T, Vp).
void gpt_forward_cached(GPT *m, KVCache *c, const int *tokens, const int *pos, int T);
// Decoding one token at a time reads every weight once per token, one row of products. Between
// gpt_decode_begin and gpt_decode_end the cached forward's one-token products read a transposed
// copy of each weight (made on first use, freed by gpt_decode_end or gpt_free) in vector lanes,
// with the bits of the products without it (nn/layers.h, matmul_forward_wt). The weights must not
// change in between (the copies would not follow). No effect with bf16 products or BLAS=openblas.
void gpt_decode_begin(GPT *m);
void gpt_decode_end(GPT *m);

// ==============================================================================================
// optimiser (model_optim.c)

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
} AdamWConfig;
// A step's update: the gradient's global L2 norm, then AdamW (one pass over the buffers) on the
// gradient times grad_scale, where clipping puts gpt_clip_scale(norm, max_norm):
//     double norm = gpt_grad_norm(m);
//     gpt_adamw(m, &o, t, gpt_clip_scale(norm, max_norm));
// The norm is the one the last gpt_backward gathered when nothing else wrote the gradient buffer
// since (gpt_zero_grad's zeros count: a norm of 0), else a pass of its own over the buffer. Code that
// writes m->weights.grads itself calls gpt_grads_written first. Either way the sum is in doubles, in
// a fixed order for a given thread count (the same bits run after run; the two orders agree to
// ~1e-15 relative, not bit for bit); the gradient buffer is left as it is.
double gpt_grad_norm(GPT *m);
// The gradient buffer was written outside gpt_backward and gpt_zero_grad: the next gpt_grad_norm
// makes its own pass.
void gpt_grads_written(GPT *m);
// sum x[i]^2 over n values in doubles: each thread's static span in order, then the spans in thread
// order (an OpenMP reduction adds them as the threads finish: other bits from run to run)
double sum_squares_ordered(const real *x, size_t n);
// max_norm / norm when max_norm > 0 and norm > max_norm, else 1
double gpt_clip_scale(double norm, double max_norm);
// One AdamW step (decoupled weight decay on tensors with decay=1) on grads * grad_scale; t is the
// 1-based step.
void gpt_adamw(GPT *m, const AdamWConfig *o, int t, double grad_scale);
// What gpt_adamw does to one tensor's elements [offset, offset + n) of the parameter buffer, with
// that span's gradient and moments given (grad, mm, vv: (n,)) and decay its TensorInfo.decay: the
// same numbers, for an update that owns only slices of the tensors (mpi/dist.c's --zero 1). Threaded.
void gpt_adamw_span(GPT *m, const AdamWConfig *o, int t, double grad_scale, size_t offset, size_t n,
                    const real *grad, real *mm, real *vv, int decay);
// The constraints schemes put on their parameters (KERPLE's r1, r2 >= 0.01), which gpt_adamw
// applies after its update; gpt_adamw_span's caller calls it once every slice is in place.
void gpt_project_parameters(GPT *m);

// ==============================================================================================
// internal: shared by model.c, model_build.c and model_optim.c, not for callers

// (model.c's stages and model_check.c's checks of them are declared in model_ops.h)

// the dimensions a positional scheme sees (PosDims, posenc.h) for a model of cfg (model_build.c)
PosDims gpt_pos_dims(const GPTConfig *cfg);
// (Re)allocates the activations for a (B, T) forward when they are smaller or in the other mode
// (forward_only, GptPass); the forwards call it (model_build.c)
void gpt_alloc_acts(GPT *m, int B, int T, int forward_only);
// The backward's gathering of the gradient's norm (GradNorm): gpt_norm_begin at its start (gather:
// 0 when the pass skips it);
// gpt_norm_gather(x, n) once the backward has written the last of the n gradients at x (each
// parameter exactly once per backward); gpt_norm_gather_layer(l) the same for every tensor of block
// l (-1: outside the blocks) that pick_pe selects (1: only the positional schemes' tensors, 0: all);
// gpt_norm_end at its end checks that every parameter was gathered and makes the sum the norm
// gpt_grad_norm returns (model_optim.c)
void gpt_norm_begin(GPT *m, int gather);
void gpt_norm_gather(GPT *m, const real *x, size_t n);
void gpt_norm_gather_layer(GPT *m, int layer, int pick_pe);
void gpt_norm_end(GPT *m);
// Starts a check of every parameter for NaN and Inf (pass: "parameters", "optimiser step"; on = 0:
// none) and runs it into m->state.anomaly (gpt_check_parameters, gpt_adamw; model_check.c)
void gpt_watch_parameters(GPT *m, const char *pass, int on);

#endif
