// nn/attention.c: causal self-attention with positions as data (nn/attention.h): the fused tiled kernel,
// forward and backward, the probabilities for pictures, the KV cache's attention, hook 2, and
// hook 3's bias scanned for NaN and Inf (--detect-anomaly).
//
// Query i of row b may attend key j when j <= i and doc[b,j] == doc[b,i] (j <= T-1 instead of
// j <= i when ap->bidirectional is set).
//   score(i,j) = q_i . k_j / sqrt(hs) + bias_h(pos_i, pos_j)      (hook 3, if the scheme has one)
//   p(i,j)     = exp(score(i,j) - lse_i), lse_i = log sum_j exp(score(i,j)) over allowed keys
//   out_i      = sum_j p(i,j) v_j
// The forward pass keeps only lse (one number per row); the backward pass recomputes the scores,
// tile by tile, from q, k and the bias with the same code (tile_scores, below), so no (T, T)
// matrix is ever stored: O(T) memory per row.
// Attention dropout at rate P (training): out_i = sum_j m(i,j)/(1-P) p(i,j) v_j, the mask m a hash
// of (ap->drop_key, row, j) (nn/kernels.h) that the backward regenerates; lse stays the undropped one.
#include "nn/attention.h"

#include "nn/kernels.h"

#include <stdatomic.h>
#include <string.h>
#include <tgmath.h>   // exp, log, sqrt follow the type of `real` (expf in the float build)

// ----------------------------------------------------------------------------------------------
// hook 2 over a qkv buffer (N,3C): q at [0,C), k at [C,2C), each NH heads of hs

void qk_hook(real *qkv, const AttnPos *ap, int N, int C, int NH, int dir) {
    const PosScheme *s = ap->scheme;
    if (!(s->hooks & PE_HOOK_QK)) return;
    int hs = C / NH;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            real *q = qkv + (size_t)n * 3 * C + h * hs, *k = q + C;
            if (dir == QK_FORWARD) { s->qk_forward(ap->tables, q, ap->pos[n], 0); s->qk_forward(ap->tables, k, ap->pos[n], 1); }
            else { s->qk_backward(ap->tables, q, ap->pos[n], 0); s->qk_backward(ap->tables, k, ap->pos[n], 1); }
        }
}

// ----------------------------------------------------------------------------------------------
// what every attention function shares: the mask, the per-call context, hook 3's cache

// The mask is attn_limit and key_visible (nn/attention.h), shared with nn/attention_ref.c.

// One attention call's fixed inputs, set once per call and read by every helper.
typedef struct {
    const AttnPos *ap;    // positions, documents, the layer's scheme and its parameters
    const real *cache;    // hook 3's per-call cache (bias_cache_new) or NULL
    const real *qkv;      // (B,T,3C) q, k, v (the KV cache: the chunk's (T,3C))
    int T, C, NH, hs;     // T: tokens per batch row (the KV cache: in the chunk)
    size_t C3;            // 3C, from one token to the next in qkv
    real scale;           // 1/sqrt(hs), applied to q
    int drop;             // 1: attention dropout (ap->dropout > 0)
    uint32_t drop_thr;    // drop_threshold(ap->dropout)
    real drop_scale;      // 1/(1 - ap->dropout), the kept probabilities' factor
} AttnCall;

// qkv (B,T,3C), ap->pos (B,T); cache: hook 3's, or NULL
static AttnCall attn_call(const AttnPos *ap, const real *cache, const real *qkv, int T, int C, int NH) {
    AttnCall x = { .ap = ap, .cache = cache, .qkv = qkv, .T = T, .C = C, .NH = NH, .hs = C / NH,
                   .C3 = (size_t)3 * C, .scale = 1 / sqrt((real)(C / NH)), .drop = ap->dropout > 0,
                   .drop_thr = drop_threshold(ap->dropout), .drop_scale = (real)(1 / (1 - ap->dropout)) };
    return x;
}

// Hook 3's per-call cache (PosScheme.bias_prepare) for the query positions pos (n,), filled once
// before the threads start: NULL when the scheme keeps none. *size receives its length in reals.
static real *bias_cache_new(const AttnPos *ap, const int *pos, size_t n, size_t *size) {
    const PosScheme *s = ap->scheme;
    *size = 0;
    if (!s->bias_prepare) return NULL;
    int D = 1;                               // it covers query positions 0 .. D-1
    for (size_t i = 0; i < n; i++) if (pos[i] >= D) D = pos[i] + 1;
    *size = s->bias_cache_size(ap->tables, D);
    real *cache = xmalloc(sizeof(real) * *size);
    s->bias_prepare(ap->tables, ap->pe_params, D, cache);
    return cache;
}

// ----------------------------------------------------------------------------------------------
// the KV cache's attention: one query row at a time against every cached key

// The softmax of one row of scores a (n,) over the keys of the query's document (kdoc (n,),
// kdoc[j] == qdoc; the query's own key is always among them), in place: a becomes the
// probabilities (0 for other documents). Returns the row's log-sum-exp. (The tiled kernel's
// softmax is online, tile by tile, below.) A row whose largest score is not finite stops the process
// ("diverged"), unless stop is 0 (AttnPos.unchecked_scores).
static real softmax_row(real *a, const int *kdoc, int n, int qdoc, int qpos, int h, int stop) {
    real mx = -INFINITY;
    for (int j = 0; j < n; j++) if (key_visible(kdoc[j], qdoc) && a[j] > mx) mx = a[j];
    CHECK(!stop || isfinite(mx), "attention scores became %g (query position %d, head %d): the model has diverged; "
          "lower --lr", (double)mx, qpos, h);
    real sum = 0;
    for (int j = 0; j < n; j++) { a[j] = key_visible(kdoc[j], qdoc) ? exp(a[j] - mx) : 0; sum += a[j]; }
    real inv = 1 / sum;
    for (int j = 0; j < n; j++) a[j] *= inv;
    return mx + log(sum);
}

// Query t of the chunk, head h: output o (hs,) over the keys 0 .. n-1 = P+t of kv (key j's vector
// at kv->k + j*C + h*hs, its value likewise in kv->v); a (n,) is scratch.
static void attend_row(const AttnCall *x, const KVKeys *kv, real *o, real *a, int t, int h) {
    const AttnPos *ap = x->ap;
    int n = kv->P + t + 1, hs = x->hs, qpos = ap->pos[t];
    const real *q = x->qkv + (size_t)t * x->C3 + h * hs;
    for (int j = 0; j < n; j++) {
        const real *k = kv->k + (size_t)j * x->C + h * hs;
        real dot = 0;
        #pragma omp simd reduction(+:dot)
        for (int c = 0; c < hs; c++) dot += q[c] * k[c];
        a[j] = dot * x->scale;
    }
    if (ap->scheme->bias_forward) ap->scheme->bias_forward(ap->tables, ap->pe_params, x->cache, h, qpos, kv->pos, n, a);   // hook 3
    softmax_row(a, kv->doc, n, ap->doc[t], qpos, h, !ap->unchecked_scores);
    for (int c = 0; c < hs; c++) o[c] = 0;
    for (int j = 0; j < n; j++) {
        if (a[j] == 0) continue;
        const real *v = kv->v + (size_t)j * x->C + h * hs;
        real pj = a[j];
        #pragma omp simd
        for (int c = 0; c < hs; c++) o[c] += pj * v[c];
    }
}

// out (T,C); qkv (T,3C) the chunk's; ap->pos, ap->doc (T,); kv the P + T keys and values
void attention_forward_cached(real *out, const real *qkv, const AttnPos *ap, const KVKeys *kv,
                              int T, int C, int NH) {
    size_t ncache;
    real *cache = bias_cache_new(ap, ap->pos, (size_t)T, &ncache);
    AttnCall x = attn_call(ap, cache, qkv, T, C, NH);
    #pragma omp parallel for collapse(2) schedule(static)
    for (int h = 0; h < NH; h++)
        for (int t = 0; t < T; t++)
            attend_row(&x, kv, out + (size_t)t * C + h * x.hs, kv->rows + (size_t)thread_id() * kv->row_cap, t, h);
    free(cache);
}

// ----------------------------------------------------------------------------------------------
// hook 3's bias, scanned for NaN and Inf (--detect-anomaly)

// Query i of pair (b, h): its keys j < attn_limit, into row (T,) zeroed first, as tile_scores adds them
static void bias_row(const AttnPos *ap, const real *cache, real *row, int b, int h, int i, int T) {
    const int *pos = ap->pos + (size_t)b * T;
    int n = attn_limit(ap, i, T);
    for (int j = 0; j < n; j++) row[j] = 0;
    ap->scheme->bias_forward(ap->tables, ap->pe_params, cache, h, pos[i], pos, n, row);
}

FiniteScan attention_bias_scan(const AttnPos *ap, int B, int T, int NH) {
    FiniteScan s = { 0, 0, SIZE_MAX, 0, 0 };
    if (!ap->scheme->bias_forward) return s;
    size_t ncache, n = 0, bad = 0, first = SIZE_MAX;
    real mx = 0;
    real *cache = bias_cache_new(ap, ap->pos, (size_t)B * T, &ncache);
    real *rows = xmalloc(sizeof(real) * (size_t)max_threads() * T);      // (threads, T)
    #pragma omp parallel for collapse(2) schedule(static) reduction(+:n, bad) reduction(min:first) reduction(max:mx)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            real *row = rows + (size_t)thread_id() * T;
            for (int i = 0; i < T; i++) {
                bias_row(ap, cache, row, b, h, i, T);
                int nk = attn_limit(ap, i, T);
                n += (size_t)nk;
                for (int j = 0; j < nk; j++) {
                    real a = fabs(row[j]);
                    size_t k = (((size_t)b * NH + h) * T + i) * T + j;
                    if (!isfinite(a)) { bad++; if (k < first) first = k; }
                    else if (a > mx) mx = a;
                }
            }
        }
    s.n = n; s.bad = bad; s.first = first; s.maxabs = mx;
    if (bad) {                                  // the first bad value, from its row again
        size_t j = first % T, i = first / T % T, h = first / T / T % NH, b = first / T / T / NH;
        bias_row(ap, cache, rows, (int)b, (int)h, (int)i, T);
        s.first_value = rows[j];
    }
    free(rows); free(cache);
    return s;
}

// ---- the (batch row, head) pairs' schedule --------------------------------------------------------
// The fused kernels below give each pair to one thread. The pairs are split as schedule(static)
// splits them: thread t owns a contiguous range, the pairs of the batch rows whose activations the
// row-split layers gave it, and runs it from the front; a thread whose range is empty then takes
// pairs from the back of the range with the most left. Where the cores run at one speed every thread
// runs its own range; where one runs slower (another process on its core, a virtual machine's
// neighbour, an efficiency core beside a performance one), the other takes over the rest of its
// range instead of waiting for it at the end. A pair's outputs are its own alone, so which thread
// runs it changes no bit; the learned biases' per-thread gradient copies would change, so their
// backward keeps every thread to its range (steal = 0).
typedef struct { _Alignas(64) _Atomic uint64_t lohi; } PairRange;   // [lo, hi) as lo | hi << 32

// Called by every thread of the team, first: sets its own range of n pairs, waits for the others',
// and returns its first pair (or -1). pr: max_threads() ranges.
static int pairs_first(PairRange *pr, int n, int steal);

// The next pair for the calling thread, or -1 when no range has any left (when stealing) or its own
// has none (when not).
static int pairs_next(PairRange *pr, int steal) {
    int t = thread_id(), nt = team_size();
    uint64_t v = atomic_load(&pr[t].lohi);
    while ((uint32_t)v < (uint32_t)(v >> 32))                  // the front of its own range
        if (atomic_compare_exchange_weak(&pr[t].lohi, &v, v + 1)) return (int)(uint32_t)v;
    while (steal) {                                            // the back of the fullest other range
        int victim = -1;
        uint32_t most = 0;
        for (int u = 0; u < nt; u++) {
            uint64_t w = atomic_load(&pr[u].lohi);
            uint32_t left = (uint32_t)(w >> 32) - (uint32_t)w;
            if (left > most) { most = left; victim = u; }
        }
        if (victim < 0) return -1;
        uint64_t w = atomic_load(&pr[victim].lohi);
        uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
        if (lo < hi && atomic_compare_exchange_strong(&pr[victim].lohi, &w, lo | (uint64_t)(hi - 1) << 32))
            return (int)(hi - 1);
    }
    return -1;
}

static int pairs_first(PairRange *pr, int n, int steal) {
    int t = thread_id(), nt = team_size(), q = n / nt, e = n % nt;
    uint32_t lo = (uint32_t)(t * q + (t < e ? t : e)), hi = lo + (uint32_t)(q + (t < e));
    atomic_store(&pr[t].lohi, lo | (uint64_t)hi << 32);
    #pragma omp barrier
    return pairs_next(pr, steal);
}

// ---- the fused kernel ----------------------------------------------------------------------------
// Work is split by (batch row b, head h): one thread owns a pair, and with it the pair's slices of
// out, lse, dq, dk and dv (no two threads write the same number). Inside a pair, queries go in
// blocks of QB = ATT_QB rows i0 .. i0+nb-1 and keys in tiles of up to KB = ATT_KB keys
// j0 .. j0+nk-1. A tile's scores are kept TRANSPOSED, S (nk, QB) with S[j*QB + r] the score of
// query i0+r against key j0+j, so that the softmax runs down the keys with the block's queries in
// vector lanes (no horizontal sums). Every product of a tile is a small matrix
// product on the thread's own cache-resident operands (gemm_tile, nn/kernels.c):
//   forward    S    = K_t xT     (nk, QB) = (nk, hs) (hs, QB)   xT: the block's q, transposed, x 1/sqrt(hs)
//                                                               (+ hook 3's bias, then the mask)
//              O   += P V_t      (nb, hs) = (nb, nk) (nk, hs)   P read out of S through its strides
//   backward   dP^T = V_t yT     (nk, QB) = (nk, hs) (hs, QB)   yT: the block's dout, transposed
//              dV_t += P^T dO    (nk, hs) = (nk, nb) (nb, hs)
//              dK_t += dS^T Q    (nk, hs) = (nk, nb) (nb, hs)   dS: the score's gradient times 1/sqrt(hs)
//              dQ   += dS K_t    (nb, hs) = (nb, nk) (nk, hs)
// The backward's order inside a tile follows the forward's in reverse: dP; dscore = P (dP - D)
// (with dropout's factor f on dP); hook 3's bias gradient, which is dscore itself since the bias is
// added after the 1/sqrt(hs) scale; then dS = dscore / sqrt(hs) for dK and dQ.
// The forward's softmax is online (running max m and sum l per row, O rescaled when m grows);
// the backward recomputes P = exp(score - lse) tile by tile and uses D_i = dout_i . out_i for
// sum_j P(i,j) dP(i,j), so it needs no pass over a whole row either.

// One thread's scratch, ATT_SCRATCH(hs) reals from p (nn/attention.h): S and dS (KB, QB) tiles; for
// each of ATT_G blocks xT, its scaled q, and yT, its dout, each (hs, QB), and O, the forward's
// output sums (QB, hs); one row of a tile for hook 3.
typedef struct { real *S, *dS, *xT, *yT, *O, *row; } AttScratch;
static AttScratch att_scratch(real *p, int hs) {
    AttScratch w;
    w.S = p; p += (size_t)ATT_KB * ATT_QB;
    w.dS = p; p += (size_t)ATT_KB * ATT_QB;
    w.xT = p; p += (size_t)ATT_G * hs * ATT_QB;
    w.yT = p; p += (size_t)ATT_G * hs * ATT_QB;
    w.O = p; p += (size_t)ATT_G * ATT_QB * hs;
    w.row = p;
    return w;
}

// One (batch row b, head h) pair, owned by one thread.
typedef struct {
    const real *q0;          // q of the row's token 0, head h, in qkv (T,3C); its k at q0 + C, v at q0 + 2C
    const int *pos, *doc;    // (T,) the row's position and document ids
    int b, h;
    AttScratch w;            // the owning thread's scratch
} AttnPair;

// pair (b, h) of the call x; scratch: the thread's ATT_SCRATCH(hs) reals
static AttnPair attn_pair(const AttnCall *x, real *scratch, int b, int h) {
    AttnPair p = { .q0 = x->qkv + (size_t)b * x->T * x->C3 + h * x->hs, .pos = x->ap->pos + (size_t)b * x->T,
                   .doc = x->ap->doc + (size_t)b * x->T, .b = b, .h = h, .w = att_scratch(scratch, x->hs) };
    return p;
}

// xT (hs, QB) = scale x the block of nb rows x_r (row stride `stride`), transposed; zero past nb
static void block_transpose(real *xT, const real *x, size_t stride, int nb, int hs, real scale) {
    transpose_block(xT, ATT_QB, x, stride, nb, hs);     // nn/kernels.h: 8 rows at a time in registers
    for (int c = 0; c < hs; c++) {
        real *t = xT + (size_t)c * ATT_QB;
        if (scale != 1) for (int r = 0; r < nb; r++) t[r] *= scale;
        for (int r = nb; r < ATT_QB; r++) t[r] = 0;
    }
}

// The width of the key tile at j0 for the block of queries i0 .. i0+nb-1, which see keys < nkeys:
// tiles of up to KB keys end at i0 (the last of them narrower when i0 is not a multiple of KB), then
// come the keys from i0 on: causal, one tile of nb keys (the block's own diagonal square, the only
// tile the causal limit cuts through); bidirectional, tiles of up to KB keys until T.
static int tile_width(int j0, int i0, int nkeys) {
    int end = j0 < i0 ? i0 : nkeys;
    return end - j0 < ATT_KB ? end - j0 : ATT_KB;
}

// How many keys of the tile j0 .. j0+nk-1 lie below query i's limit (hook 3 runs on those, forward
// and backward alike): 0 .. nk.
static int tile_row_keys(const AttnPos *ap, int i, int j0, int nk, int T) {
    int n = attn_limit(ap, i, T) - j0;
    return n < 0 ? 0 : n > nk ? nk : n;
}

// The scores of the block's queries i0 .. i0+nb-1 (p->w.xT (hs, QB), from block_transpose, scaled
// by 1/sqrt(hs)) against the pair's keys j0 .. j0+nk-1, transposed into p->w.S (nk, QB):
// q.k/sqrt(hs), plus hook 3 (p->w.row (nk,) its scratch), and -inf where the query may not attend
// the key (attn_limit, key_visible) and in the rows r >= nb. Returns 0, with S unfilled, when no
// query of the block may attend any key of the tile. The forward, the backward and the
// probabilities all score with this one function, so their scores are bit-identical.
static int tile_scores(const AttnCall *x, const AttnPair *p, const real *xT, int i0, int nb, int j0, int nk) {
    const AttnPos *ap = x->ap;
    const int *doc = p->doc;
    int T = x->T;
    real *S = p->w.S, *row = p->w.row;
    // all visible: every key below the first query's limit, one document for all keys and queries
    int all = nb == ATT_QB && j0 + nk <= attn_limit(ap, i0, T);
    for (int j = j0; all && j < j0 + nk; j++) all = key_visible(doc[j], doc[i0]);
    for (int i = i0 + 1; all && i < i0 + nb; i++) all = doc[i] == doc[i0];
    if (!all) {      // the mask itself, 0 or -inf, onto which the products are then added
        int lim[ATT_QB], qdoc[ATT_QB], any = 0;            // per row: its keys' limit (0 past nb), its document
        for (int r = 0; r < ATT_QB; r++) {
            lim[r] = r < nb ? attn_limit(ap, i0 + r, T) : 0;
            qdoc[r] = r < nb ? doc[i0 + r] : 0;
        }
        for (int j = 0; j < nk; j++) {
            int key = j0 + j, kdoc = doc[key];
            real *s = S + (size_t)j * ATT_QB;
            #pragma omp simd reduction(|:any)
            for (int r = 0; r < ATT_QB; r++) {
                int vis = (key < lim[r]) & key_visible(kdoc, qdoc[r]);
                s[r] = vis ? 0 : -INFINITY;
                any |= vis;
            }
        }
        if (!any) return 0;
    }
    gemm_tile(nk, ATT_QB, x->hs, p->q0 + (size_t)j0 * x->C3 + x->C, x->C3, 1, xT, ATT_QB, S, ATT_QB, !all);   // S (+)= K_t qT
    if (ap->scheme->bias_forward)                                        // hook 3, one query row at a time
        for (int r = 0; r < nb; r++) {
            int n = tile_row_keys(ap, i0 + r, j0, nk, T);
            if (n == 0) continue;
            for (int j = 0; j < n; j++) row[j] = 0;
            ap->scheme->bias_forward(ap->tables, ap->pe_params, x->cache, p->h, p->pos[i0 + r], p->pos + j0, n, row);
            for (int j = 0; j < n; j++) S[(size_t)j * ATT_QB + r] += row[j];
        }
    return 1;
}

// S (nk, QB) = exp(S - shift[r]) down each column r (shift: QB reals; exp_fast, so a masked -inf
// gives exactly 0); col_sum (QB,) += the column sums, when not NULL
static void tile_exp(real *S, int nk, const real *shift, real *col_sum) {
    real sum[ATT_QB] __attribute__((aligned(64))) = { 0 };
    for (int j = 0; j < nk; j++) {
        real *p = S + (size_t)j * ATT_QB;
        #pragma omp simd
        for (int r = 0; r < ATT_QB; r++) { p[r] = exp_fast(p[r] - shift[r]); sum[r] += p[r]; }
    }
    if (col_sum) for (int r = 0; r < ATT_QB; r++) col_sum[r] += sum[r];
}

// Dropout's row keys (QB,) of the block of queries i0 .. i0+ATT_QB-1 (nn/attention.h: row (b*NH + h)*T + i)
static void block_drop_keys(const AttnCall *x, const AttnPair *p, int i0, uint32_t *rk) {
    uint64_t row0 = ((x->ap->drop_b0 + (uint64_t)p->b) * x->NH + p->h) * x->T + i0;
    for (int r = 0; r < ATT_QB; r++) rk[r] = drop_row_key(x->ap->drop_key, row0 + r);
}

// The mask's factor of query row r (row key rk) and key j: 1/(1-P) when kept, else 0
static inline real drop_factor(const AttnCall *x, uint32_t rk, int j) {
    return drop_keep(rk, (uint32_t)j, x->drop_thr) ? x->drop_scale : 0;
}

// The order in which one (b, h) pair's blocks of queries meet its tiles of keys, the forward's and
// the backward's alike. Alone, a block would run its tiles in key order (tile_width), reading K and
// V from wherever they are: at long T from memory, once per block. Here blocks go in groups of up to
// ATT_G, and the full tiles below the group's first row, which every block of the group starts
// with, run in spans of ATT_SPAN tiles: for each span, each block runs the span's tiles, so the
// span's K and V (ATT_SPAN x KB keys) stay in cache for the whole group while each block's own
// operands stay in cache for the span. Then each block runs the rest of its tiles. Every block
// still meets its tiles in key order with the same widths (its row sums, dq included, are summed in
// the same order), and every key its blocks in query order (dk and dv): no bit of out, lse or dqkv
// depends on the grouping. A learned bias's gradient sums over keys and queries together, in the
// order the (block, tile) pairs come, so the backward of such a scheme runs each block alone (G 1).
typedef struct {
    void (*begin)(void *ctx, int q, int i0);        // block q of the group starts at query row i0
    void (*tile)(void *ctx, int q, int j0, int nk);  // block q meets keys j0 .. j0+nk-1
    void (*end)(void *ctx, int q);                  // block q has met all its keys (or NULL)
    void *ctx;
} TileVisitor;

static int att_group = ATT_G;      // blocks per group (attention_set_group)
void attention_set_group(int g) { att_group = g < 1 ? 1 : g > ATT_G ? ATT_G : g; }

// G: blocks per group, 1 .. ATT_G
static void pair_visit(const AttnCall *x, const TileVisitor *v, int G) {
    int T = x->T;
    for (int g0 = 0; g0 < T; g0 += G * ATT_QB) {
        int nq = (T - g0 + ATT_QB - 1) / ATT_QB, jc = g0 / ATT_KB * ATT_KB;   // keys [0, jc): shared
        if (nq > G) nq = G;
        for (int q = 0; jc > 0 && q < nq; q++) v->begin(v->ctx, q, g0 + q * ATT_QB);
        for (int js = 0; js < jc; js += ATT_SPAN * ATT_KB)
            for (int q = 0; q < nq; q++)
                for (int j0 = js; j0 < jc && j0 < js + ATT_SPAN * ATT_KB; j0 += ATT_KB) v->tile(v->ctx, q, j0, ATT_KB);
        for (int q = 0; q < nq; q++) {
            int i0 = g0 + q * ATT_QB, nb = T - i0 < ATT_QB ? T - i0 : ATT_QB, nkeys = attn_limit(x->ap, i0 + nb - 1, T);
            if (jc == 0) v->begin(v->ctx, q, i0);
            for (int j0 = jc, nk; j0 < nkeys; j0 += nk) {
                nk = tile_width(j0, i0, nkeys);
                v->tile(v->ctx, q, j0, nk);
            }
            if (v->end) v->end(v->ctx, q);
        }
    }
}

// One block of query rows i0 .. i0+nb-1 in the forward: its q transposed and scaled, xT (hs, QB);
// its output's running sums O (nb, hs); per row, the online softmax's running max m and sum l of
// exp(score - m), and dropout's row key.
typedef struct {
    int i0, nb;
    real *xT, *O;
    real m[ATT_QB] __attribute__((aligned(64))), l[ATT_QB] __attribute__((aligned(64)));
    uint32_t rk[ATT_QB] __attribute__((aligned(64)));
} FwdBlock;

// block k starts at query row i0; xT and O: its scratch (hs x QB reals each)
static void fwd_block_begin(const AttnCall *x, const AttnPair *p, FwdBlock *k, int i0, real *xT, real *O) {
    int hs = x->hs;
    k->i0 = i0; k->nb = x->T - i0 < ATT_QB ? x->T - i0 : ATT_QB; k->xT = xT; k->O = O;
    for (int r = 0; r < ATT_QB; r++) { k->m[r] = -INFINITY; k->l[r] = 0; }
    if (x->drop) block_drop_keys(x, p, i0, k->rk);
    memset(O, 0, sizeof(real) * (size_t)k->nb * hs);
    block_transpose(xT, p->q0 + (size_t)i0 * x->C3, x->C3, k->nb, hs, x->scale);
}

// the block's keys j0 .. j0+nk-1: scores, the online softmax's update, O += P V_t
static void fwd_tile(const AttnCall *x, const AttnPair *p, FwdBlock *k, int j0, int nk) {
    int hs = x->hs, nb = k->nb;
    real *S = p->w.S, *m = k->m, *O = k->O;
    real mt[ATT_QB] __attribute__((aligned(64))), shift[ATT_QB] __attribute__((aligned(64)));
    if (!tile_scores(x, p, k->xT, k->i0, nb, j0, nk)) return;
    for (int r = 0; r < ATT_QB; r++) mt[r] = -INFINITY;
    for (int j = 0; j < nk; j++) {
        const real *s = S + (size_t)j * ATT_QB;
        #pragma omp simd
        for (int r = 0; r < ATT_QB; r++) mt[r] = s[r] > mt[r] ? s[r] : mt[r];
    }
    for (int r = 0; r < ATT_QB; r++) {
        real mn = mt[r] > m[r] ? mt[r] : m[r];
        if (mn != m[r] && m[r] != -INFINITY) { // the max grew: rescale what was summed so far
            real alpha = exp(m[r] - mn);       // (with m -inf nothing was: l and O are still 0)
            k->l[r] *= alpha;
            if (r < nb) for (int c = 0; c < hs; c++) O[(size_t)r * hs + c] *= alpha;
        }
        m[r] = mn;
        shift[r] = m[r] == -INFINITY ? 0 : m[r];   // a row that sees no key yet: exp(-inf) = 0
    }
    tile_exp(S, nk, shift, k->l);
    if (x->drop)                               // l has summed the undropped P; O sums the dropped
        for (int j = 0; j < nk; j++) {
            real *s = S + (size_t)j * ATT_QB;
            #pragma omp simd
            for (int r = 0; r < ATT_QB; r++) s[r] *= drop_factor(x, k->rk[r], j0 + j);
        }
    gemm_tile(nb, hs, nk, S, 1, ATT_QB, p->q0 + (size_t)j0 * x->C3 + 2 * x->C, x->C3, O, hs, 1);   // O += P V_t
}

// the block's output rows out_i = O_i / l_i and log-sum-exps m_i + log l_i; out (B,T,C), lse (B,NH,T)
static void fwd_block_end(const AttnCall *x, const AttnPair *p, const FwdBlock *k, real *out, real *lse) {
    int hs = x->hs, T = x->T;
    for (int r = 0; r < k->nb; r++) {
        int i = k->i0 + r;
        CHECK(x->ap->unchecked_scores || isfinite(k->m[r]), "attention scores became %g (query position %d, head %d): the model has diverged; "
              "lower --lr", (double)k->m[r], p->pos[i], p->h);
        real inv = 1 / k->l[r], *o = out + ((size_t)p->b * T + i) * x->C + p->h * hs;
        for (int c = 0; c < hs; c++) o[c] = k->O[(size_t)r * hs + c] * inv;
        lse[((size_t)p->b * x->NH + p->h) * T + i] = k->m[r] + log(k->l[r]);
    }
}

// the forward's visitor (pair_visit): blocks blk (ATT_G), out, lse
typedef struct { const AttnCall *x; const AttnPair *p; FwdBlock *blk; real *out, *lse; } FwdPair;
static void fwd_begin(void *c, int q, int i0) {
    FwdPair *f = c;
    size_t n = (size_t)f->x->hs * ATT_QB;
    fwd_block_begin(f->x, f->p, &f->blk[q], i0, f->p->w.xT + q * n, f->p->w.O + q * n);
}
static void fwd_visit_tile(void *c, int q, int j0, int nk) { FwdPair *f = c; fwd_tile(f->x, f->p, &f->blk[q], j0, nk); }
static void fwd_end(void *c, int q) { FwdPair *f = c; fwd_block_end(f->x, f->p, &f->blk[q], f->out, f->lse); }

// out (B,T,C); lse (B,NH,T); qkv (B,T,3C) holds q, k, v (q and k already hooked);
// scratch (threads, ATT_SCRATCH(hs)). Memory: lse and the scratch, never (T, T).
void attention_forward(real *out, real *lse, const real *qkv, const AttnPos *ap, real *scratch,
                       int B, int T, int C, int NH) {
    size_t ncache;
    real *cache = bias_cache_new(ap, ap->pos, (size_t)B * T, &ncache);
    AttnCall x = attn_call(ap, cache, qkv, T, C, NH);
    PairRange pr[max_threads()];
    #pragma omp parallel
    for (int k = pairs_first(pr, B * NH, 1); k >= 0; k = pairs_next(pr, 1)) {
        AttnPair p = attn_pair(&x, scratch + (size_t)thread_id() * ATT_SCRATCH(x.hs), k / NH, k % NH);
        FwdBlock blk[ATT_G];
        FwdPair f = { &x, &p, blk, out, lse };
        pair_visit(&x, &(TileVisitor){ fwd_begin, fwd_visit_tile, fwd_end, &f }, att_group);
    }
    free(cache);
}

// dqkv (B,T,3C) overwritten; dout (B,T,C); qkv, out and lse as the forward left them; scratch as the
// forward's. Per block of query rows and tile of keys, after recomputing p(i,j) = exp(score - lse_i):
//   dP(i,j) = dout_i . v_j,   dv_j += sum_i p(i,j) dout_i,
//   dscore(i,j) = p(i,j) (dP(i,j) - D_i),  D_i = dout_i . out_i = sum_j p(i,j) dP(i,j)
//                                                     (softmax backward; a learned bias gets dscore)
// With dropout (mask factor f(i,j) = m(i,j)/(1-P)): dv_j += sum_i f p dout_i, dP(i,j) = f (dout_i . v_j),
// and still D_i = dout_i . out_i = sum_j p dP.
//   dq_i += scale sum_j dscore(i,j) k_j,   dk_j += scale sum_i dscore(i,j) q_i
// A learned bias gets gradient from every (b,h): each thread accumulates into its own copy, and the
// copies are added in thread order afterwards (no race, bit-reproducible). So does the gradient of
// the bias cache's values, which bias_finish then carries to the parameters.
// What the backward's tiles write besides dqkv: a learned bias's gradient, into the thread's own
// copies (dp (np,), dcache (ncache,) or NULL), when learned.
typedef struct {
    real *dqkv;                 // (B,T,3C), zeroed pair by pair, then summed into
    const real *dout, *out, *lse;
    int learned;                // hook 3's bias has parameters to learn
    real *dp_threads, *dcache_threads;   // (threads, np), (threads, ncache) or NULL
    size_t np, ncache;
} BwdCall;

// One block of query rows i0 .. i0+nb-1 in the backward: its q transposed and scaled, xT (hs, QB),
// its dout transposed, yT (hs, QB), and per row its log-sum-exp, D_i = dout_i . out_i and dropout's
// row key (QB each, 0 past nb).
typedef struct {
    int i0, nb;
    real *xT, *yT;
    real lse_q[ATT_QB] __attribute__((aligned(64))), D[ATT_QB] __attribute__((aligned(64)));
    uint32_t rk[ATT_QB] __attribute__((aligned(64)));
} BwdBlock;

// block k starts at query row i0; xT and yT: its scratch (hs x QB reals each)
static void bwd_block_begin(const AttnCall *x, const AttnPair *p, const BwdCall *g, BwdBlock *k, int i0,
                            real *xT, real *yT) {
    int T = x->T, C = x->C, hs = x->hs, nb = T - i0 < ATT_QB ? T - i0 : ATT_QB;
    const real *dout0 = g->dout + ((size_t)p->b * T + i0) * C + p->h * hs;      // dout of query i0, head h
    k->i0 = i0; k->nb = nb; k->xT = xT; k->yT = yT;
    if (x->drop) block_drop_keys(x, p, i0, k->rk);
    for (int r = 0; r < ATT_QB; r++) k->lse_q[r] = r < nb ? g->lse[((size_t)p->b * x->NH + p->h) * T + i0 + r] : 0;
    block_transpose(xT, p->q0 + (size_t)i0 * x->C3, x->C3, nb, hs, x->scale);
    block_transpose(yT, dout0, C, nb, hs, 1);
    // D_r = sum over c, in order, of the rounded products dout(r,c) out(r,c): the block's rows in
    // vector lanes, out transposed in chunks of 64 columns like dout (yT), the products rounded in
    // one pass and summed in the next (a product and a sum, not a fused multiply-add)
    real oT[64 * ATT_QB] __attribute__((aligned(64)));
    const real *out0 = g->out + ((size_t)p->b * T + i0) * C + p->h * hs;
    for (int r = 0; r < ATT_QB; r++) k->D[r] = 0;
    for (int c0 = 0; c0 < hs; c0 += 64) {
        int cw = hs - c0 < 64 ? hs - c0 : 64;
        block_transpose(oT, out0 + c0, C, nb, cw, 1);
        for (int c = 0; c < cw; c++) {
            #pragma omp simd
            for (int r = 0; r < ATT_QB; r++) oT[c * ATT_QB + r] *= yT[(size_t)(c0 + c) * ATT_QB + r];
        }
        for (int c = 0; c < cw; c++) {
            #pragma omp simd
            for (int r = 0; r < ATT_QB; r++) k->D[r] += oT[c * ATT_QB + r];
        }
    }
}

// the block's keys j0 .. j0+nk-1: P again, dP, dscore, hook 3's backward, then dV, dK and dQ
static void bwd_tile(const AttnCall *x, const AttnPair *p, const BwdCall *g, const BwdBlock *k, int j0, int nk) {
    const AttnPos *ap = x->ap;
    int T = x->T, C = x->C, hs = x->hs, i0 = k->i0, nb = k->nb;
    size_t C3 = x->C3;
    real *S = p->w.S, *dS = p->w.dS;
    const real *dout0 = g->dout + ((size_t)p->b * T + i0) * C + p->h * hs;
    // the forward's scores again (same function), then P = exp(score - lse)
    if (!tile_scores(x, p, k->xT, i0, nb, j0, nk)) return;
    tile_exp(S, nk, k->lse_q, NULL);
    gemm_tile(nk, ATT_QB, hs, p->q0 + (size_t)j0 * C3 + 2 * C, C3, 1, k->yT, ATT_QB, dS, ATT_QB, 0);  // dP^T = V_t dOT
    if (!x->drop)
        for (int j = 0; j < nk; j++) {         // dscore = p (dP - D)
            const real *pj = S + (size_t)j * ATT_QB;
            real *gj = dS + (size_t)j * ATT_QB;
            #pragma omp simd
            for (int r = 0; r < ATT_QB; r++) gj[r] = pj[r] * (gj[r] - k->D[r]);
        }
    else
        for (int j = 0; j < nk; j++) {         // dscore = p (f dP - D); then S = f p for dV
            real *pj = S + (size_t)j * ATT_QB, *gj = dS + (size_t)j * ATT_QB;
            #pragma omp simd
            for (int r = 0; r < ATT_QB; r++) {
                real f = drop_factor(x, k->rk[r], j0 + j);
                gj[r] = pj[r] * (f * gj[r] - k->D[r]);
                pj[r] *= f;
            }
        }
    // hook 3's backward, one query row at a time: before the scale below, as the bias was added
    // after it in the forward
    if (g->learned)
        for (int r = 0; r < nb; r++) {
            int n = tile_row_keys(ap, i0 + r, j0, nk, T), t = thread_id();
            if (n == 0) continue;
            for (int j = 0; j < n; j++) p->w.row[j] = dS[(size_t)j * ATT_QB + r];
            ap->scheme->bias_backward(ap->tables, ap->pe_params, x->cache, g->dp_threads + (size_t)t * g->np,
                                      g->dcache_threads ? g->dcache_threads + (size_t)t * g->ncache : NULL,
                                      p->h, p->pos[i0 + r], p->pos + j0, n, p->w.row);
        }
    for (int j = 0; j < nk * ATT_QB; j++) dS[j] *= x->scale;   // through score = q.k / sqrt(hs)
    real *grad0 = g->dqkv + (size_t)p->b * T * C3 + p->h * hs;          // dq of token 0, head h
    real *dq = grad0 + (size_t)i0 * C3, *dk = grad0 + (size_t)j0 * C3 + C, *dv = dk + C;
    gemm_tile(nk, hs, nb, S, ATT_QB, 1, dout0, C, dv, C3, 1);                         // dV_t += P^T dO
    gemm_tile(nk, hs, nb, dS, ATT_QB, 1, p->q0 + (size_t)i0 * C3, C3, dk, C3, 1);     // dK_t += dS^T Q
    gemm_tile(nb, hs, nk, dS, 1, ATT_QB, p->q0 + (size_t)j0 * C3 + C, C3, dq, C3, 1); // dQ += dS K_t
}

// the backward's visitor (pair_visit): blocks blk (ATT_G)
typedef struct { const AttnCall *x; const AttnPair *p; const BwdCall *g; BwdBlock *blk; } BwdPair;
static void bwd_begin(void *c, int q, int i0) {
    BwdPair *f = c;
    size_t n = (size_t)f->x->hs * ATT_QB;
    bwd_block_begin(f->x, f->p, f->g, &f->blk[q], i0, f->p->w.xT + q * n, f->p->w.yT + q * n);
}
static void bwd_visit_tile(void *c, int q, int j0, int nk) { BwdPair *f = c; bwd_tile(f->x, f->p, f->g, &f->blk[q], j0, nk); }

void attention_backward(real *dqkv, real *scratch, const real *dout, const real *qkv, const real *out,
                        const real *lse, const AttnPos *ap, int B, int T, int C, int NH) {
    const PosScheme *s = ap->scheme;
    int learned_bias = s->bias_backward && ap->pe_dparams;
    size_t np = learned_bias ? ap->pe_nparams : 0, ncache;
    CHECK(!learned_bias || np > 0, "internal: attention_backward needs pe_nparams for a learned bias");
    real *dp_threads = learned_bias ? xcalloc((size_t)max_threads() * np, sizeof(real)) : NULL;      // (threads, np)
    real *cache = bias_cache_new(ap, ap->pos, (size_t)B * T, &ncache);
    real *dcache_threads = learned_bias && cache && s->bias_finish ? xcalloc((size_t)max_threads() * ncache, sizeof(real)) : NULL;
    AttnCall x = attn_call(ap, cache, qkv, T, C, NH);
    BwdCall g = { .dqkv = dqkv, .dout = dout, .out = out, .lse = lse, .learned = learned_bias,
                  .dp_threads = dp_threads, .dcache_threads = dcache_threads, .np = np, .ncache = ncache };
    PairRange pr[max_threads()];
    #pragma omp parallel
    for (int k = pairs_first(pr, B * NH, !learned_bias); k >= 0; k = pairs_next(pr, !learned_bias)) {
        AttnPair p = attn_pair(&x, scratch + (size_t)thread_id() * ATT_SCRATCH(x.hs), k / NH, k % NH);
        BwdBlock blk[ATT_G];
        BwdPair f = { &x, &p, &g, blk };
        real *grad0 = dqkv + (size_t)p.b * T * x.C3 + p.h * x.hs;     // the pair's dq, dk and dv start at 0,
        for (int t = 0; t < T; t++)                                    // zeroed by the thread that sums them
            for (int part = 0; part < 3; part++) {
                real *g0 = grad0 + (size_t)t * x.C3 + (size_t)part * C;
                for (int c = 0; c < x.hs; c++) g0[c] = 0;
            }
        pair_visit(&x, &(TileVisitor){ bwd_begin, bwd_visit_tile, NULL, &f }, learned_bias ? 1 : att_group);
    }
    if (learned_bias) {
        for (int t = 0; t < max_threads(); t++)
            for (size_t k = 0; k < np; k++) ap->pe_dparams[k] += dp_threads[(size_t)t * np + k];
        free(dp_threads);
    }
    if (dcache_threads) {
        for (int t = 1; t < max_threads(); t++)
            for (size_t k = 0; k < ncache; k++) dcache_threads[k] += dcache_threads[(size_t)t * ncache + k];
        s->bias_finish(ap->tables, ap->pe_params, cache, dcache_threads, ap->pe_dparams);
        free(dcache_threads);
    }
    free(cache);
}

// ---- attention statistics -----------------------------------------------------------------------
// The statistics need each row's final normaliser, which the forward's online softmax knows only
// after its last tile. Rather than hold a head's (T, T) probabilities, this is a second pass over
// the keys, tile by tile as the backward does: with lse_i known, p(i,j) = exp(score(i,j) - lse_i)
// comes out of the forward's own tile_scores and exp, and ln p(i,j) = score(i,j) - lse_i needs no
// log. Per (b, h) pair and block of QB query rows, memory is the forward's per-thread scratch (the
// tile S (nk, QB)) plus three (QB,) sums; per call, part (B, NH, ATT_NSTAT) doubles. Cost: the
// forward's q.k products and exps again (no P V product).

// The sums of one (b, h) pair into st (ATT_NSTAT,) (nn/attention.h: which rows, what sums); lse_h
// (T,): the pair's log-sum-exp of each query row, from the forward
static void pair_stats(const AttnCall *x, AttnPair *p, const real *lse_h, double *st) {
    const int *doc = p->doc;
    int T = x->T, first = 0;
    for (int i0 = 0; i0 < T; i0 += ATT_QB) {
        int nb = T - i0 < ATT_QB ? T - i0 : ATT_QB, nkeys = attn_limit(x->ap, i0 + nb - 1, T);
        real lse_q[ATT_QB] __attribute__((aligned(64)));
        int sink[ATT_QB];                                  // each row's first key: its document's start
        double mass[ATT_QB] = { 0 }, ent[ATT_QB] = { 0 }, dist[ATT_QB] = { 0 };
        for (int r = 0; r < ATT_QB; r++) {
            int i = i0 + r;
            lse_q[r] = r < nb ? lse_h[i] : 0;
            if (r < nb && (i == 0 || doc[i] != doc[i - 1])) first = i;
            sink[r] = first;
        }
        block_transpose(p->w.xT, p->q0 + (size_t)i0 * x->C3, x->C3, nb, x->hs, x->scale);
        for (int j0 = 0, nk; j0 < nkeys; j0 += nk) {
            nk = tile_width(j0, i0, nkeys);
            if (!tile_scores(x, p, p->w.xT, i0, nb, j0, nk)) continue;
            for (int j = 0; j < nk; j++) {
                const real *s = p->w.S + (size_t)j * ATT_QB;
                for (int r = 0; r < nb; r++) {
                    real lp = s[r] - lse_q[r], pr = exp_fast(lp);      // tile_exp's p(i,j), exactly
                    if (pr == 0) continue;                             // masked (or underflowed): adds 0
                    ent[r] -= (double)pr * lp;
                    dist[r] += (double)pr * (i0 + r - (j0 + j));
                    if (j0 + j == sink[r]) mass[r] += pr;
                }
            }
        }
        for (int r = 0; r < nb; r++) {
            int i = i0 + r;
            if (doc[i] < 0 || i == sink[r]) continue;              // padding; a document's first row
            st[ATT_STAT_ROWS] += 1;
            st[ATT_STAT_SINK] += mass[r];
            st[ATT_STAT_ENTROPY] += ent[r];
            st[ATT_STAT_DIST] += dist[r];
        }
    }
}

void attention_stats(double *acc, const real *qkv, const real *lse, const AttnPos *ap, real *scratch,
                     int B, int T, int C, int NH) {
    CHECK(!ap->bidirectional, "internal: attention_stats is defined for causal attention only");
    size_t ncache;
    real *cache = bias_cache_new(ap, ap->pos, (size_t)B * T, &ncache);
    AttnCall x = attn_call(ap, cache, qkv, T, C, NH);
    double *part = xcalloc((size_t)B * NH * ATT_NSTAT, sizeof(double));   // (B, NH, ATT_NSTAT)
    PairRange pr[max_threads()];
    #pragma omp parallel
    for (int k = pairs_first(pr, B * NH, 1); k >= 0; k = pairs_next(pr, 1)) {
        int b = k / NH, h = k % NH;
        AttnPair p = attn_pair(&x, scratch + (size_t)thread_id() * ATT_SCRATCH(x.hs), b, h);
        pair_stats(&x, &p, lse + ((size_t)b * NH + h) * T, part + ((size_t)b * NH + h) * ATT_NSTAT);
    }
    for (int b = 0; b < B; b++)                    // in batch order: the same sums for any thread count
        for (size_t k = 0; k < (size_t)NH * ATT_NSTAT; k++) acc[k] += part[(size_t)b * NH * ATT_NSTAT + k];
    free(part);
    free(cache);
}

// out (T,T); qkv (T,3C) and lse (NH,T) of one batch row; ap->pos, ap->doc (T,). The forward's own
// scoring (tile_scores: same tiles, mask and hook 3), its exp and its log-sum-exp (never dropout).
void attention_head_probs(real *out, const real *qkv, const real *lse, const AttnPos *ap, int T, int C,
                          int NH, int h) {
    size_t ncache;
    real *cache = bias_cache_new(ap, ap->pos, (size_t)T, &ncache);
    AttnCall x = attn_call(ap, cache, qkv, T, C, NH);
    real *scratch = xmalloc(sizeof(real) * ATT_SCRATCH(x.hs));
    AttnPair p = attn_pair(&x, scratch, 0, h);
    const real *lse_h = lse + (size_t)h * T;
    memset(out, 0, sizeof(real) * (size_t)T * T);
    for (int i0 = 0; i0 < T; i0 += ATT_QB) {
        int nb = T - i0 < ATT_QB ? T - i0 : ATT_QB, nkeys = attn_limit(ap, i0 + nb - 1, T);
        real lse_q[ATT_QB] __attribute__((aligned(64)));
        for (int r = 0; r < ATT_QB; r++) lse_q[r] = r < nb ? lse_h[i0 + r] : 0;
        block_transpose(p.w.xT, p.q0 + (size_t)i0 * x.C3, x.C3, nb, x.hs, x.scale);
        for (int j0 = 0, nk; j0 < nkeys; j0 += nk) {
            nk = tile_width(j0, i0, nkeys);
            if (!tile_scores(&x, &p, p.w.xT, i0, nb, j0, nk)) continue;
            tile_exp(p.w.S, nk, lse_q, NULL);
            for (int j = 0; j < nk; j++)
                for (int r = 0; r < nb; r++) out[(size_t)(i0 + r) * T + j0 + j] = p.w.S[(size_t)j * ATT_QB + r];
        }
    }
    free(scratch);
    free(cache);
}
