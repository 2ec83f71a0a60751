// tests/bpe_naive.h: tiktoken's merge loop as its Rust core writes it (_byte_pair_merge), for
// checking dataset/bpe.c's heap version against: the parts of a piece are kept in an array, and
// after every merge all adjacent pairs are scanned again for the one whose bytes are the token of
// lowest id, the leftmost on a tie. It looks tokens up by their bytes (Bpe.tokens), not through
// the pair table, as tiktoken does. O(n^2) per piece: for tests only.
#ifndef BPE_NAIVE_H
#define BPE_NAIVE_H

#include <limits.h>
#include <stdlib.h>

#include "dataset/bpe.h"

static inline void naive_encode_piece(const Bpe *b, const unsigned char *p, size_t n, IdList *out) {
    int whole = bytes_map_find(&b->tokens, p, n);
    if (whole >= 0) { id_list_push(out, whole); return; }
    size_t *start = malloc((n + 1) * sizeof *start), parts = n;   // part i is p[start[i] .. start[i + 1])
    if (!start) abort();
    for (size_t i = 0; i <= n; i++) start[i] = i;
    for (;;) {
        int best_rank = INT_MAX;
        size_t best = 0;
        for (size_t i = 0; i + 1 < parts; i++) {
            int r = bytes_map_find(&b->tokens, p + start[i], start[i + 2] - start[i]);
            if (r >= 0 && r < best_rank) { best_rank = r; best = i; }
        }
        if (best_rank == INT_MAX) break;
        for (size_t i = best + 1; i < parts; i++) start[i] = start[i + 1];   // parts best and best+1 become one
        parts--;
    }
    for (size_t i = 0; i < parts; i++) id_list_push(out, bytes_map_find(&b->tokens, p + start[i], start[i + 1] - start[i]));
    free(start);
}

// The whole text: bpe_piece_end's pieces, each by naive_encode_piece.
static inline void naive_encode(const Bpe *b, const unsigned char *text, size_t n, IdList *out) {
    for (size_t i = 0; i < n;) {
        size_t j = bpe_piece_end(text, n, i);
        naive_encode_piece(b, text + i, j - i, out);
        i = j;
    }
}

#endif
