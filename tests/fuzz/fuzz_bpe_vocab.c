// tests/fuzz/fuzz_bpe_vocab.c: GPT-2's vocabulary files (bpe_load, dataset/bpe.c): the input is an
// encoder.json, a line "---- vocab.bpe ----", then a vocab.bpe (no such line: all of it is the
// encoder.json and the vocab.bpe is empty). An accepted vocabulary is laid out as bpe.h says (ids
// of bytes, merges and the end of text), every merge joins earlier tokens into a new byte string,
// and a text with every kind of character encodes into its tokens and decodes back.
#include <string.h>

#include "dataset/bpe.h"
#include "tests/fuzz/fuzz.h"

static const char SEPARATOR[] = "\n---- vocab.bpe ----\n";

void fuzz_one(const uint8_t *data, size_t size) {
    const uint8_t *sep = NULL;
    for (size_t i = 0; !sep && i + sizeof SEPARATOR - 1 <= size; i++)
        if (!memcmp(data + i, SEPARATOR, sizeof SEPARATOR - 1)) sep = data + i;
    size_t n_enc = sep ? (size_t)(sep - data) : size, skip = sep ? sizeof SEPARATOR - 1 : 0;
    const char *enc = fuzz_file(data, n_enc), *mrg = fuzz_file(data + n_enc + skip, size - n_enc - skip);
    Bpe b;
    bpe_load(&b, enc, mrg);
    FUZZ_ASSERT(b.n_tokens == 257 + b.n_merges && b.eot == b.n_tokens - 1 && b.n_tokens <= BPE_MAX_VOCAB);
    FUZZ_ASSERT(b.tokens.n == b.eot);
    for (int i = 0; i < 256; i++) {
        size_t n;
        const unsigned char *s = bpe_token(&b, i, &n);
        FUZZ_ASSERT(n == 1 && s[0] == bpe_byte_of_id(i));
    }
    for (int m = 0; m < b.n_merges; m++) {
        size_t nl, nr, n;
        const unsigned char *l = bpe_token(&b, b.merge[2 * m], &nl), *r = bpe_token(&b, b.merge[2 * m + 1], &nr);
        const unsigned char *t = bpe_token(&b, 256 + m, &n);
        FUZZ_ASSERT(b.merge[2 * m] < 256 + m && b.merge[2 * m + 1] < 256 + m);
        FUZZ_ASSERT(n == nl + nr && n <= BPE_MAX_TOKEN_BYTES && !memcmp(t, l, nl) && !memcmp(t + nl, r, nr));
        FUZZ_ASSERT(pair_map_get(&b.pairs, b.merge[2 * m], b.merge[2 * m + 1]) == 256 + m);
    }
    static const char text[] = "Hello, world! It's 2024: caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xff\xfe  \n\n";
    BpeEncoder e;
    bpe_encoder_init(&e, &b);
    IdList ids = { 0 };
    bpe_encode(&e, (const unsigned char *)text, sizeof text - 1, &ids);
    size_t at = 0;
    for (size_t i = 0; i < ids.n; i++) {
        FUZZ_ASSERT(ids.id[i] >= 0 && ids.id[i] < b.eot);
        size_t n;
        const unsigned char *s = bpe_token(&b, ids.id[i], &n);
        FUZZ_ASSERT(at + n <= sizeof text - 1 && !memcmp(text + at, s, n));
        at += n;
    }
    FUZZ_ASSERT(at == sizeof text - 1);
    id_list_free(&ids);
    bpe_encoder_free(&e);
    bpe_free(&b);
}
