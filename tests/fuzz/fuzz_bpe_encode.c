// tests/fuzz/fuzz_bpe_encode.c: encoding arbitrary bytes (bpe_encode, dataset/bpe.c) with a
// vocabulary of 1000 tokens learned once from the embedded corpus. Every input is accepted; the
// tokens are those of tiktoken's merge loop (tests/bpe_naive.h), each piece ends past where it
// starts, and decoding the tokens gives the input back byte for byte.
#include <string.h>

#include "dataset/bpe.h"
#include "dataset/data.h"
#include "tests/bpe_naive.h"
#include "tests/fuzz/fuzz.h"

static Bpe vocab;      // built by the first input (which always returns: nothing here can refuse)
static int have_vocab;

void fuzz_one(const uint8_t *data, size_t size) {
    if (!have_vocab) {
        size_t n;
        char *corpus = data_default_corpus_text(&n);
        const unsigned char *t = (const unsigned char *)corpus;
        bpe_train(&vocab, &t, &n, 1, 1000, "the embedded corpus");
        free(corpus);
        have_vocab = 1;
    }
    for (size_t i = 0; i < size;) {
        size_t j = bpe_piece_end(data, size, i);
        FUZZ_ASSERT(j > i && j <= size);
        i = j;
    }
    BpeEncoder e;
    bpe_encoder_init(&e, &vocab);
    IdList fast = { 0 }, slow = { 0 };
    bpe_encode(&e, data, size, &fast);
    naive_encode(&vocab, data, size, &slow);
    FUZZ_ASSERT(fast.n == slow.n && (!fast.n || !memcmp(fast.id, slow.id, fast.n * sizeof *fast.id)));
    size_t at = 0;
    for (size_t i = 0; i < fast.n; i++) {
        FUZZ_ASSERT(fast.id[i] >= 0 && fast.id[i] < vocab.eot);
        size_t n;
        const unsigned char *s = bpe_token(&vocab, fast.id[i], &n);
        FUZZ_ASSERT(at + n <= size && !memcmp(data + at, s, n));
        at += n;
    }
    FUZZ_ASSERT(at == size);
    id_list_free(&fast);
    id_list_free(&slow);
    bpe_encoder_free(&e);
}
