// tests/fuzz/fuzz_shard.c: token sets (data_open_files, dataset/data.c) and the loader that reads
// them. The input is one file, or several joined by the line FILE_BREAK: llm.c token shards
// (uint16 or uint32) or byte files. Every file's header and size is checked when the set opens;
// every accepted token is inside the vocabulary the reader reports; a split covers the set; and a
// few batches of the shuffled and the ordered stream read only windows inside the set.
#include <string.h>

#include "dataset/data.h"
#include "dataset/loader.h"
#include "tests/fuzz/fuzz.h"

#define FILE_BREAK "\n--next-file--\n"
enum { MAX_PARTS = 4, T = 3, B = 2 };

// The first FILE_BREAK in data[0..size), or NULL.
static const uint8_t *find_break(const uint8_t *data, size_t size) {
    size_t n = strlen(FILE_BREAK);
    for (size_t i = 0; i + n <= size; i++)
        if (!memcmp(data + i, FILE_BREAK, n)) return data + i;
    return NULL;
}

void fuzz_one(const uint8_t *data, size_t size) {
    const char *paths[MAX_PARTS];
    int n = 0;
    size_t brk = strlen(FILE_BREAK);
    for (;;) {                                  // the input cut at each FILE_BREAK, at most MAX_PARTS files
        const uint8_t *cut = n + 1 < MAX_PARTS ? find_break(data, size) : NULL;
        size_t len = cut ? (size_t)(cut - data) : size;
        paths[n++] = fuzz_file(data, len);
        if (!cut) break;
        data += len + brk;
        size -= len + brk;
    }
    TokenSet d, train, val;
    data_open_files(paths, n, &d);
    FUZZ_ASSERT(d.n > 0 && d.n_files == n && d.files[n - 1].first + d.files[n - 1].n == d.n);
    FUZZ_ASSERT(d.vocab_size == 256 || d.vocab_size == 50257 || d.vocab_size == 128256);
    FUZZ_ASSERT(d.eot < d.vocab_size);
    data_check_vocab(&d, d.vocab_size);
    int tok[256];
    for (uint64_t i = 0; i < d.n; i += 256) {
        size_t k = d.n - i < 256 ? (size_t)(d.n - i) : 256;
        data_read(&d, i, k, tok);
        for (size_t j = 0; j < k; j++) FUZZ_ASSERT(tok[j] >= 0 && tok[j] < d.vocab_size);
    }
    data_split(&d, 0.1, &train, &val);
    FUZZ_ASSERT(train.n + val.n == d.n && val.begin == train.n);
    Batch b;
    batch_alloc(&b, B, T);
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        Loader l = { .d = &d, .pack = 1, .shuffle = shuffle, .seed = size };
        if (loader_rows(&l, T) < B) continue;          // not one batch: ./train refuses it before reading
        for (int k = 0; k < 5; k++) {
            loader_next(&l, &b);
            for (int i = 0; i < B * T; i++) FUZZ_ASSERT(b.tokens[i] < d.vocab_size && b.doc[i] >= 0 && b.pos[i] <= i % T);
        }
    }
    batch_free(&b);
    data_close(&d);
}
