// dataset/batch.c: allocation and default positions of a Batch (see batch.h).
#include "dataset/batch.h"

void batch_alloc(Batch *b, int B, int T) {
    size_t n = (size_t)B * T;
    b->B = B; b->T = T;
    b->tokens = xcalloc(n, sizeof(int));
    b->targets = xcalloc(n, sizeof(int));
    b->weights = xcalloc(n, sizeof(float));
    b->pos = xcalloc(n, sizeof(int));
    b->doc = xcalloc(n, sizeof(int));
    batch_default_positions(b);
}

void batch_free(Batch *b) {
    free(b->tokens); free(b->targets); free(b->weights); free(b->pos); free(b->doc);
    memset(b, 0, sizeof *b);
}

void batch_default_positions(Batch *b) {
    for (int i = 0; i < b->B; i++)
        for (int t = 0; t < b->T; t++) {
            size_t k = (size_t)i * b->T + t;
            b->pos[k] = t; b->doc[k] = 0; b->weights[k] = 1.0f;
        }
}
