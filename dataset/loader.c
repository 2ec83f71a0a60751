// dataset/loader.c: batches from a token stream (see loader.h).
#include "dataset/loader.h"

int loader_starts_document(const TokenData *d, size_t k) {
    if (d->eot >= 0) return d->tokens[k] == d->eot;
    return k > 0 && d->tokens[k] == '\n' && d->tokens[k - 1] == '\n';
}

void loader_next(Loader *l, Batch *b) {
    size_t need = (size_t)b->B * b->T + 1;
    CHECK(l->d->n >= need, "internal: %zu tokens cannot fill a batch of %d x %d", l->d->n, b->B, b->T);
    if (l->pos + need > l->d->n) l->pos = 0;
    batch_default_positions(b);
    for (int r = 0; r < b->B; r++) {
        int doc = 0, p = 0;
        for (int t = 0; t < b->T; t++) {
            size_t k = (size_t)r * b->T + t, src = l->pos + k;
            b->tokens[k] = l->d->tokens[src];
            b->targets[k] = l->d->tokens[src + 1];
            if (l->pack) {
                if (t > 0 && loader_starts_document(l->d, src)) { doc++; p = 0; }
                b->pos[k] = p++;
                b->doc[k] = doc;
            }
        }
    }
    l->pos += (size_t)b->B * b->T;
}
