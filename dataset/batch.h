// dataset/batch.h: one batch as data, what the data layer fills and the model reads.
#ifndef BATCH_H
#define BATCH_H

#include "util/common.h"

// One batch as data. Positions and documents are per token, never loop indices (docs/positions.md):
// query i may attend key j of the same row when j <= i, doc[j] == doc[i]. Padding has doc -1,
// so real tokens never see it; its loss weight must be 0.
typedef struct {
    int B, T;
    int *tokens;        // (B,T) input ids in [0, V)
    int *targets;       // (B,T) next-token ids in [0, V)
    float *weights;     // (B,T) loss weight: 1 counts the token, 0 excludes it (prompt, padding)
    int *pos;           // (B,T) position ids
    int *doc;           // (B,T) document ids
} Batch;

void batch_alloc(Batch *b, int B, int T);
void batch_free(Batch *b);
// Fills pos = t and doc = 0 and weights = 1 for every row (a plain contiguous batch).
void batch_default_positions(Batch *b);

#endif
