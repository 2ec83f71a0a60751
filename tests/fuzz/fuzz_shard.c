// tests/fuzz/fuzz_shard.c: token data files (data_load, dataset/data.c): an llm.c token shard, or
// any other file as bytes. Every accepted token is inside the vocabulary the reader reports.
#include "dataset/data.h"
#include "tests/fuzz/fuzz.h"

void fuzz_one(const uint8_t *data, size_t size) {
    TokenData d, train, val;
    data_load(fuzz_file(data, size), &d);
    FUZZ_ASSERT(d.n > 0 && d.tokens);
    FUZZ_ASSERT(d.vocab_size == 256 || d.vocab_size == 50257);
    FUZZ_ASSERT(d.eot < d.vocab_size);
    for (size_t i = 0; i < d.n; i++) FUZZ_ASSERT(d.tokens[i] >= 0 && d.tokens[i] < d.vocab_size);
    data_split(&d, 0.1, &train, &val);
    FUZZ_ASSERT(train.n + val.n == d.n);
    data_free(&d);
}
