// nn/attention.h: causal self-attention with positions as data: the fused tiled kernel (forward,
// backward), the KV cache's attention, the probabilities for pictures, hook 2 over a qkv buffer,
// and hook 3's bias scanned for NaN and Inf.
//
// Shapes follow model.h's legend (B batch, T time, C channels, NH heads, hs = C/NH head size).
// qkv (B,T,3C) holds per token q at [0,C), k at [C,2C), v at [2C,3C), each NH heads of hs.
// Backward functions ACCUMULATE (+=) into their gradient outputs, but for qk_hook's QK_BACKWARD,
// which rewrites its buffer in place (see there).
#ifndef ATTENTION_H
#define ATTENTION_H

#include "util/common.h"
#include "nn/layers.h"
#include "posenc.h"

// What attention needs to know besides q, k and v: the batch's position and document ids, the
// layer's scheme, and dropout (training only; the KV cache and attention_head_probs never drop).
typedef struct {
    const int *pos;            // (B,T)
    const int *doc;            // (B,T)
    const PosScheme *scheme;   // the layer's scheme (its bias hook is used here)
    const PosTables *tables;
    const real *pe_params;     // the layer's scheme parameters or NULL
    real *pe_dparams;          // their gradient or NULL
    size_t pe_nparams;         // their number
    int bidirectional;         // 1: no causal limit (keys j > i allowed; tests of equivariance)
    double dropout;            // rate p at which attention_forward drops probabilities (kept ones
                               // x 1/(1-p)); 0: none. Its backward is given the same p and key.
    uint64_t drop_key;         // the mask: p(i,j) of batch row b, head h is kept when
                               // drop_keep(drop_row_key(drop_key, ((b0 + b)*NH + h)*T + i), j) (nn/kernels.h)
    uint64_t drop_b0;          // b0: the index of batch row 0 among the global batch's rows (under
                               // MPI rank r x B), so the ranks draw one process's masks
    int unchecked_scores;      // 1: a row whose largest score is NaN or Inf does not stop the process
                               // (its output is NaN): --detect-anomaly's passes, whose check after
                               // the block names the first bad tensor (model_check.c); 0: it stops
} AttnPos;

// The mask, in one place (the tiled kernel, the KV cache, the probabilities and the plain reference,
// nn/attention_ref.h): query i may attend the keys j < attn_limit(ap, i, T) whose document is its
// own (key_visible; padding has doc -1, so a real token never sees it).
static inline int attn_limit(const AttnPos *ap, int i, int T) { return ap->bidirectional ? T : i + 1; }
static inline int key_visible(int kdoc, int qdoc) { return kdoc == qdoc; }

// The fused kernel, tiled: blocks of ATT_QB query rows against tiles of up to ATT_KB keys, with an
// online softmax. Memory: lse, one number per (b, h, query row), and a scratch of ATT_SCRATCH(hs)
// reals per thread that does not grow with T; never a (T, T) matrix.
#define ATT_QB ((int)(128 / sizeof(real)))              // query rows per block: 32 floats, 16 doubles
#define ATT_KB (2 * ATT_QB)                             // keys per tile: 64 floats, 32 doubles
#define ATT_G 16                                        // blocks that share a pass over the keys
#define ATT_SPAN 8                                      // the tiles of that pass each block runs in a row
#define ATT_SCRATCH(hs) ((size_t)ATT_QB * (2 * ATT_KB + 3 * ATT_G * (size_t)(hs)) + ATT_KB)
// Blocks per group, 1 .. ATT_G (default ATT_G): for tests and measurements; no bit of the outputs
// depends on it (nn/attention.c, pair_visit).
void attention_set_group(int g);
// out (B,T,C), lse (B,NH,T); qkv (B,T,3C) holds q, k, v (q and k already hooked);
// scratch (threads, ATT_SCRATCH(C/NH))
void attention_forward(real *out, real *lse, const real *qkv, const AttnPos *ap, real *scratch,
                       int B, int T, int C, int NH);
// dqkv (B,T,3C) overwritten; dout (B,T,C); qkv, out and lse as the forward left them; scratch as the forward's
void attention_backward(real *dqkv, real *scratch, const real *dout, const real *qkv, const real *out,
                        const real *lse, const AttnPos *ap, int B, int T, int C, int NH);
// The attention probabilities p(i,j) of head h of one batch row, recomputed as the forward computed
// them (same tiles, mask, hook 3 and exp): out (T,T), row i the probabilities of query i over the
// keys (exactly 0 where it may not attend); qkv (T,3C) and lse (NH,T) the row's, as the forward
// left them; ap->pos and ap->doc the row's ids (T,).
void attention_head_probs(real *out, const real *qkv, const real *lse, const AttnPos *ap, int T, int C,
                          int NH, int h);

// Attention statistics (./train --attention-stats, eval/attnstats.h), summed over query rows per head.
// Query i's sink is the first key of its document (key 0 of an unpacked row; with --bos, the BOS);
// the rows summed are every query i of a real document (doc >= 0, so padding is skipped) except
// the document's first, which attends only to itself (mass 1, entropy 0, distance 0 always):
//   ATT_STAT_ROWS     the number of rows summed
//   ATT_STAT_SINK     p(i, first)
//   ATT_STAT_ENTROPY  -sum_j p(i,j) ln p(i,j), in nats
//   ATT_STAT_DIST     sum_j p(i,j) (i - j), in tokens
enum { ATT_STAT_ROWS, ATT_STAT_SINK, ATT_STAT_ENTROPY, ATT_STAT_DIST, ATT_NSTAT };
// acc (NH, ATT_NSTAT) += the sums over the batch; qkv (B,T,3C) and lse (B,NH,T) as
// attention_forward left them; scratch as the forward's. Causal attention only. A second pass over
// the keys with the known log-sum-exps: O(T) memory, never a (T, T) matrix; the sums are added in
// a fixed order (the same numbers for any thread count).
void attention_stats(double *acc, const real *qkv, const real *lse, const AttnPos *ap, real *scratch,
                     int B, int T, int C, int NH);

// The keys and values that a chunk of T new queries attends in incremental decoding: those of the
// P tokens before it, then the chunk's own. Query t of the chunk sees keys 0 .. P+t.
typedef struct {
    const real *k, *v;       // (P+T, C) keys (after hook 2) and values, one token per row
    const int *pos, *doc;    // (P+T,) their position and document ids
    int P;                   // tokens before the chunk
    real *rows;              // (threads, row_cap) scratch: one row of scores per thread
    int row_cap;             // >= P+T
} KVKeys;
// out (T,C); qkv (T,3C) the chunk's (q hooked; its k and v already in kv); ap->pos, ap->doc (T,)
// the chunk's ids. One softmax row per query, O(P+T) memory per thread.
void attention_forward_cached(real *out, const real *qkv, const AttnPos *ap, const KVKeys *kv,
                              int T, int C, int NH);

// Hook 3's bias b_h(pos_i, pos_j) over the batch as the tiled kernel adds it (every key j below
// query i's limit, masked by documents or not), scanned for NaN and Inf (--detect-anomaly): the flat
// index is that of (B,NH,T,T), ((b*NH + h)*T + i)*T + j. Nothing is scanned (n = 0) without hook 3.
FiniteScan attention_bias_scan(const AttnPos *ap, int B, int T, int NH);

// hook 2 over a whole qkv buffer (N,3C): rotate q and k of every head (QK_FORWARD), or their
// gradient by the transpose (QK_BACKWARD). Both work in place: the backward OVERWRITES the q and k
// gradients dL/d(rotated) with dL/d(unrotated), so the buffer must hold only the attention's
// gradient (attention_backward, its one writer before the hook, overwrites all of it). Does nothing for
// schemes without a q/k hook.
enum { QK_FORWARD = 1, QK_BACKWARD = -1 };
void qk_hook(real *qkv, const AttnPos *ap, int N, int C, int NH, int dir);

#endif
