// model_ops.h: internal to the model, not for callers (model.h is the API). The operations model.c's
// stages are made of (the embedding, a block, the head; forward and backward), which
// model_check.c's replays call again, and the checks of --detect-anomaly that model.c's passes
// make once per stage. Shapes follow model.h's legend.
#ifndef MODEL_OPS_H
#define MODEL_OPS_H

#include "model.h"

// ----------------------------------------------------------------------------------------------
// the operations (model.c)

// dropout's sites: one key per layer (-1: the embedding) and site under the step's key
enum { DROP_EMBEDDING, DROP_ATTENTION, DROP_ATTN_OUT, DROP_MLP_OUT };
uint64_t drop_site(uint64_t key, int layer, int site);

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
LayerActs layer_acts(const GPT *m, int l, int B, int T);
// layer l's attention inputs for the batch b, with the last forward's dropout; grads: 1 for the
// backward (the scheme's parameter gradients). While a call checks (--detect-anomaly), scores that
// are not finite do not stop attention: the check after the block replays it, and the replay's
// attention (AttnPos.unchecked_scores = 0) stops where a check after every operation would.
AttnPos attn_pos(const GPT *m, const Batch *b, int l, int grads);

// The factor on the token embeddings before hook 1 (1 but for a sinusoidal input's sqrt(C))
real embed_scale(const GPTConfig *c);
real head_scale(const GPTConfig *c);     // the factor on ln_f's output before the tied LM head
// out (N,OC) = inp (N,C) @ w^T + bias in the model's precision; one row while decoding reads w's
// transposed copy (the same bits). Timed as PROF_MATMUL.
void linear_forward(GPT *m, real *out, const real *inp, const real *w, const real *bias, size_t N, int C, int OC);
// A linear layer's backward: dinp (N,C) overwritten; dw (OC,C), db (OC) added to (acc) or
// overwritten, final, so their squares go into the gathered norm. Timed as PROF_MATMUL.
void linear_backward(GPT *m, real *dinp, real *dw, real *db, const real *dout, const real *inp,
                     const real *w, int N, int C, int OC, int acc);
// A block's LayerNorm backward: dinp (N,C) += ; its dw, db (C) final, as linear_backward's
void ln_backward(GPT *m, real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                 const real *mean, const real *rstd, int N, int C, int acc);
// hook 2 on qkv (N,3C) in place, QK_FORWARD or QK_BACKWARD (nn/attention.h). Timed as PROF_ATTENTION.
void rotate_qk(GPT *m, real *qkv, const AttnPos *ap, size_t N, int dir);
// Layer l's attention from its qkv (hooked) into atty: the batch (kc NULL) or the KV cache's chunk.
// Timed as PROF_ATTENTION.
void block_attention(GPT *m, int l, const LayerActs *la, const AttnPos *ap, int B, int T, KVCache *kc);
// attention's backward into g->dqkv (N,3C) from g->datty (N,C). Timed as PROF_ATTENTION.
void attn_backward(GPT *m, const LayerActs *la, const AttnPos *ap, int B, int T);
// a->encoded (N,C) = the embedding of tokens (N,) at positions pos (N,), then its dropout at rate
// drop (the forward's key and rows)
void embed_forward(GPT *m, const int *tokens, const int *pos, int B, int T, double drop);
// out = a + b, each (n,)
void residual_add(real *out, const real *a, const real *b, size_t n);
// buf (N,C) = the gradient dout (N,C) through a dropout site's mask; returns buf
const real *dropped_grad(real *buf, const real *dout, uint64_t key, double p, size_t N, int C, uint64_t row0);

// ----------------------------------------------------------------------------------------------
// --detect-anomaly's checks, one per stage (model_check.c). Each returns 0 at once when the running
// call checks nothing; else it scans what the stage left, in the order it was written, and returns
// 1 when a value is NaN or Inf, with m->state.anomaly naming the first tensor that went bad (the
// stage replayed from its inputs, checked after each operation, when the scan alone cannot tell).

// A call that may check starts (pass: "forward", ...): with on, m->state.anomaly is cleared
void check_begin(GPT *m, const char *pass, int on);
// Keeps x (n,), a block's input (its residual, forward; g->dresidual, backward) for its replay
void check_keep(GPT *m, const real *x, size_t n);
// the embedding (tokens, pos (N,), N = B*T) into a->encoded, dropped at rate drop (0: none)
int check_embedding(GPT *m, const int *tokens, const int *pos, int B, int T, double drop);
// block l's forward from the residual check_keep kept
int check_block_forward(GPT *m, int l, const AttnPos *ap, int B, int T, KVCache *kc);
// ln_f, the logits and (probs, losses: 1 when the forward wrote them) the probabilities and losses
int check_head_forward(GPT *m, int B, int T, int probs, int losses);
// the backward's dlogits, dlnf and dL/dresidual3 of the last block
int check_head_backward(GPT *m, int B, int T);
// block l's backward from the g->dresidual check_keep kept; its parameter gradients
int check_block_backward(GPT *m, int l, const Batch *b, int acc);
// the gradient at the embedding before its dropout (demb (N,C); NULL without dropout) and the
// parameter gradients outside the blocks
int check_tail_backward(GPT *m, int B, int T, const real *demb);

#endif
