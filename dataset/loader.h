// dataset/loader.h: batches from a token stream, in order, for training and evaluation.
#ifndef LOADER_H
#define LOADER_H

#include "dataset/data.h"
#include "dataset/batch.h"

typedef struct {
    const TokenData *d;
    uint64_t pos;        // index of the next token to read (stored in checkpoints for --resume)
    int pack;            // --pack: documents isolated, positions restart at each document
} Loader;

// 1 if token k opens a document: an end-of-text token (llm.c shards put one before each document),
// or, in byte data (eot -1), the second newline of a blank line. So every target lies in its own
// token's document, except that a document's last token predicts the boundary token that opens
// the next one: "the document ends here", learned from that document alone.
int loader_starts_document(const TokenData *d, size_t k);

// Fills b (B rows of T). Row r reads tokens[pos + r*T .. pos + r*T + T] (inputs, and targets shifted
// by one); pos then advances by B*T, wrapping to 0 when fewer than B*T + 1 tokens remain.
// Every token gets loss weight 1. Without pack a row is one sequence at positions 0..T-1 (doc 0).
// With pack a row holds the documents it spans: each starts (at its boundary token) at position 0
// with its own document id, so attention never crosses from one to another (a row that begins
// mid-document starts at 0).
void loader_next(Loader *l, Batch *b);

#endif
