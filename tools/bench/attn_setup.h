// tools/bench/attn_setup.h: the inputs the attention harnesses share (attn_group_ab.c, attn_time.c,
// attn_bits.c): B batch rows of T tokens, NH heads over C channels; qkv (B,T,3C) and dout
// (B,T,C) filled with a fixed pattern in [-0.5, 0.5), positions 0 .. T-1 in every row, one document,
// one scheme's attention (an id, posenc.h; its tables built for T); out, lse and dqkv allocated, scratch for 64 threads.
// A harness may change the documents and ap's fields (mask, dropout) after attn_setup.
#ifndef ATTN_SETUP_H
#define ATTN_SETUP_H
#include "nn/attention.h"
#include "posenc.h"
#include "util/common.h"

typedef struct {
    int B, T, C, NH;
    size_t N;                                  // B T
    real *qkv, *out, *dout, *dqkv, *lse, *scratch;
    int *pos, *doc;
    PosConfig pc;
    PosTables tables;
    AttnPos ap;                                // points at tables: set up in place, never copied
} AttnSetup;

static void attn_setup(AttnSetup *h, int B, int T, int C, int NH, int scheme) {
    size_t N = (size_t)B * T;
    h->B = B; h->T = T; h->C = C; h->NH = NH; h->N = N;
    h->qkv = xmalloc_big(sizeof(real) * N * 3 * C); h->out = xmalloc_big(sizeof(real) * N * C);
    h->dout = xmalloc_big(sizeof(real) * N * C); h->dqkv = xcalloc_big(N * 3 * C, sizeof(real));
    h->lse = xmalloc(sizeof(real) * B * NH * T);
    h->scratch = xmalloc(sizeof(real) * 64 * ATT_SCRATCH(C / NH));
    h->pos = xmalloc(sizeof(int) * N); h->doc = xcalloc(N, sizeof(int));
    for (size_t i = 0; i < N * 3 * C; i++) h->qkv[i] = (real)(((i * 2654435761u) % 1000) / 1000.0 - 0.5);
    for (size_t i = 0; i < N * C; i++) h->dout[i] = (real)(((i * 40503u) % 1000) / 1000.0 - 0.5);
    for (size_t i = 0; i < N; i++) h->pos[i] = (int)(i % T);
    int s = scheme;
    posenc_defaults(&h->pc, 1);
    h->pc.input = PE_NOPE; h->pc.layer[0] = s;
    PosDims d = { 1, NH, C, C / NH, T };
    posenc_tables_build(&h->tables, &h->pc, &d, T);
    h->ap = (AttnPos){ .pos = h->pos, .doc = h->doc, .scheme = posenc_scheme(s), .tables = &h->tables };
}

static void attn_setup_free(AttnSetup *h) {
    free(h->qkv); free(h->out); free(h->dout); free(h->dqkv); free(h->lse); free(h->scratch);
    free(h->pos); free(h->doc);
    posenc_tables_free(&h->tables);
}
#endif
