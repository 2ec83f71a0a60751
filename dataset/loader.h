// dataset/loader.h: batches from a token set (dataset/data.h), in order or shuffled, for training
// and evaluation; the place in the stream is three numbers a checkpoint stores.
//
// A row of a batch is a window of T + 1 tokens of the set: T inputs, and the targets shifted by
// one. Which windows, in which order:
//   in order (default): the set's tokens as one sequence, the files one after the other. A batch
//     reads B consecutive rows from token `offset` (row r starts at offset + r*T), then offset
//     moves on by B*T; when fewer than B*T + 1 tokens remain it starts again at 0 (a new epoch).
//     A row may span two files.
//   shuffled (--shuffle): each file is cut into windows at multiples of T (file f of m tokens has
//     floor((m - 1) / T) of them; its last < T + 1 tokens are not read in that mode). Every epoch
//     visits the files in a new order and, within a file, its windows in a new order; both orders
//     are pseudo-random permutations drawn from (seed, epoch) and (seed, epoch, file), computed
//     from the index (no table: memory does not grow with the data). A row never spans two files.
// Data parallel (an MPI trainer, later): a global batch is nranks x B rows; rank r takes rows
// r*B .. r*B + B - 1 of it (loader_next_slice) and every rank moves the position past all of
// them, so the stream, its position and a checkpoint do not depend on the number of ranks
// beyond the global batch size.
#ifndef LOADER_H
#define LOADER_H

#include "dataset/data.h"
#include "dataset/batch.h"

// Where the stream stands, stored in checkpoints (TrainState) so that --resume continues it.
typedef struct {
    uint64_t epoch;      // the pass over the data being read, from 0
    uint64_t shard;      // shuffled: the place in this epoch's file order; in order: 0
    uint64_t offset;     // shuffled: the place in that file's window order; in order: the next token
} StreamPos;

typedef struct {
    const TokenSet *d;
    int pack;            // --pack: documents isolated, positions restart at each document
    int shuffle;         // --shuffle: the shuffled order above
    int bos;             // --bos: each row starts with the boundary token loader_bos_token (see loader_next)
    uint64_t seed;       // the shuffled orders' seed
    StreamPos pos;
} Loader;

// 1 if row[t] (t >= 1) opens a document: an end-of-text token (llm.c shards put one before each
// document), or, in data without one (eot -1, bytes), the second newline of a blank line. So
// every target lies in its own token's document, except that a document's last token predicts the
// boundary token that opens the next one: "the document ends here", learned from that document
// alone. A row's first token is always at position 0 of its first document.
int loader_starts_document(const int *row, int t, int eot);

// --bos: the boundary token a row starts with: the data's end-of-text (eot), or in byte data (no
// eot) byte LOADER_BYTE_BOS, 2 (ASCII STX, "start of text"; text files hardly hold it, so it marks
// the row's start); -1 when the data have neither (a vocabulary without a boundary token).
#define LOADER_BYTE_BOS 2
int loader_bos_token(const TokenSet *d);

// Fills b (B rows of T) with the next B rows of the stream and moves the position past them.
// Every token gets loss weight 1 (but see bos). Without pack a row is one sequence at positions 0..T-1 (doc 0).
// With pack a row holds the documents it spans: each starts (at its boundary token) at position 0
// with its own document id, so attention never crosses from one to another (a row that begins
// mid-document starts at 0).
// With bos a row reads the same window but only its first T tokens: inputs [BOS, w_0 .. w_{T-2}],
// targets [w_0 .. w_{T-1}] (BOS predicts the window's first token; every token of the stream is
// still a target once); the stream, its positions and a checkpoint's are those without bos. With
// pack too, BOS opens the row's first document. A window that starts with the boundary token itself
// (a document's start in shard data) gives [BOS, BOS, ...]: that first prediction, of the boundary
// from BOS alone, is no pair of the text and gets weight 0 (with pack, the document then opens at its
// own boundary token and BOS stands alone).
void loader_next(Loader *l, Batch *b);
// The same for rank `rank` of nranks: b receives rows rank*B .. rank*B + B - 1 of the next global
// batch of nranks*B rows, and the position moves past the whole global batch.
void loader_next_slice(Loader *l, Batch *b, int rank, int nranks);

// The rows of T + 1 tokens one epoch holds: shuffled, the windows of all files; in order, the
// number of rows of T tokens (with one more as the last target) the sequence holds.
uint64_t loader_rows(const Loader *l, int T);
// Refuses a position this loader cannot be at with rows of T tokens (a --resume position from other
// data, or a damaged checkpoint); what: where it comes from, for the message.
void loader_check_pos(const Loader *l, int T, const char *what);

#endif
