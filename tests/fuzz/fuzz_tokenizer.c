// tests/fuzz/fuzz_tokenizer.c: llm.c tokenizer files (tokenizer_load, dataset/data.c). An
// accepted tokenizer's pieces have their stated lengths; encoding a prompt gives ids inside it.
#include <string.h>

#include "dataset/data.h"
#include "tests/fuzz/fuzz.h"

void fuzz_one(const uint8_t *data, size_t size) {
    Tokenizer t;
    tokenizer_load(fuzz_file(data, size), &t);
    FUZZ_ASSERT(t.n > 0 && t.eot >= -1 && t.eot < t.n);
    for (int i = 0; i < t.n; i++) FUZZ_ASSERT(t.piece_len[i] >= 0 && t.piece_len[i] <= 255 && t.piece[i][t.piece_len[i]] == 0);
    // a prompt: refused (CHECK) when a byte has no piece
    int ids[16];
    int n = tokenizer_encode(&t, "Hello, world", ids, 16);
    FUZZ_ASSERT(n >= 1 && n <= 12);
    for (int i = 0; i < n; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < t.n);
    tokenizer_free(&t);
}
