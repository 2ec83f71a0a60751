// dataset/data.h: token data in memory, the readers that fill it, and the embedded corpus.
//
// Every reader checks sizes, magic numbers and ranges, and on bad input exits through CHECK with
// a sentence that names the file and what is wrong with it (see common.h).
#ifndef DATA_H
#define DATA_H

#include <stddef.h>

typedef struct {
    int *tokens;     // (n,) token ids, each in [0, vocab_size)
    size_t n;        // number of tokens
    int vocab_size;  // 256 for byte data; 50257 (or the tokenizer's size) for llm.c shards
    int eot;         // end-of-text token id, or -1 when the data has none
} TokenData;

// Reads FILE. An llm.c token shard (header h[0]=20240520, h[1]=1, h[2]=ntok, then ntok uint16;
// 256 little-endian int32 header) gives its tokens with vocab_size 50257 and eot 50256;
// any other file is read as raw bytes (vocab 256, eot -1). An empty file, a truncated shard
// (fewer tokens than the header says) or a shard with the wrong version is a clear error.
void data_load(const char *path, TokenData *out);

// Fills out with the embedded default corpus: English-like text that the project generates
// itself, deterministically (the same bytes on every machine), as bytes (vocab 256).
// Also used to write the corpus to a file (see data_default_corpus_text).
void data_default_corpus(TokenData *out);
// The same corpus as a NUL-terminated string; *len receives its length. Caller frees.
char *data_default_corpus_text(size_t *len);

// Splits `all` into a training part (the first n - n_val tokens) and a validation part (the
// last n_val tokens, n_val = floor(n * val_frac)). The parts point into all's buffer (no copy).
// val_frac in [0, 0.5]; when val_frac is 0 the validation part is empty.
void data_split(const TokenData *all, double val_frac, TokenData *train, TokenData *val);

void data_free(TokenData *d);

// Tokenizer for decoding samples: n pieces of bytes. bytes: piece i is the single byte i.
// llm.c tokenizer file: 256 int32 header h[0]=20240328, h[1]=2, h[2]=n, h[3]=eot; then n records
// of uint8 len followed by len bytes.
typedef struct {
    int n;           // number of pieces (vocab size)
    int eot;         // end-of-text id or -1
    char **piece;    // (n,) NUL-terminated byte strings
    int *piece_len;  // (n,) their lengths (a piece may contain NUL bytes)
} Tokenizer;

void tokenizer_bytes(Tokenizer *t);
void tokenizer_load(const char *path, Tokenizer *t);
// Encodes text for a prompt: bytes map to themselves under the byte tokenizer; for an llm.c
// tokenizer this is a greedy longest-match over the pieces (good enough for prompts).
// Returns the number of ids written to out (at most cap).
int tokenizer_encode(const Tokenizer *t, const char *text, int *out, int cap);
void tokenizer_free(Tokenizer *t);

// Writes tokens as an llm.c shard (uint16; every token must be < 65536), through a temporary
// file renamed into place. Used by tests and by tools that prepare data.
void data_write_shard(const char *path, const int *tokens, size_t n);

#endif
