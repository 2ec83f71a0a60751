// dataset/data.c: token data readers (raw bytes and llm.c shards), the train/validation split,
// the byte and llm.c tokenizers, and the shard writer. See dataset/data.h for the contract.
//
// All multi-byte integers in files are little-endian and are assembled byte by byte, so the code
// is correct on any host. Every failure exits through CHECK with a sentence naming the file.

#include "dataset/data.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "common.h"

enum {
    SHARD_MAGIC = 20240520,
    SHARD_VERSION = 1,
    TOKENIZER_MAGIC = 20240328,
    HEADER_INTS = 256,
    HEADER_BYTES = HEADER_INTS * 4,
    GPT2_VOCAB = 50257,
    GPT2_EOT = 50256,
    TOKENIZER_MAX_PIECES = 1 << 24,
};

static int32_t get_le32(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    return (int32_t)u;  // two's complement on every platform gcc/clang target
}

static void put_le32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u & 0xff);
    p[1] = (unsigned char)((u >> 8) & 0xff);
    p[2] = (unsigned char)((u >> 16) & 0xff);
    p[3] = (unsigned char)((u >> 24) & 0xff);
}

static void *xrealloc_checked(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    CHECK(q, "out of memory growing a buffer to %zu bytes while reading data; use a smaller file", n);
    return q;
}

// Reads the whole file into a malloc'd buffer (works for pipes too, not only regular files).
static unsigned char *read_whole_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    int err = errno;
    CHECK(f, "cannot open data file %s: %s; check the path and its permissions", path, strerror(err));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            CHECK(cap <= SIZE_MAX / 2, "data file %s is too large to read into memory", path);
            cap *= 2;
            buf = xrealloc_checked(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    err = errno;
    int bad = ferror(f);
    fclose(f);
    CHECK(!bad, "error while reading data file %s: %s; check that it is a readable regular file", path,
          strerror(err));
    *len = n;
    return buf;
}

void data_load(const char *path, TokenData *out) {
    CHECK(path && out, "data_load needs a file path and an output struct (got NULL)");
    size_t len = 0;
    unsigned char *buf = read_whole_file(path, &len);
    CHECK(len > 0, "data file %s is empty; pass a file with text or an llm.c token shard", path);

    memset(out, 0, sizeof *out);
    if (len >= 4 && get_le32(buf) == SHARD_MAGIC) {
        // llm.c token shard.
        CHECK(len >= HEADER_BYTES,
              "token shard %s is truncated: it has %zu bytes, less than the %d-byte header; "
              "regenerate the shard",
              path, len, HEADER_BYTES);
        int32_t version = get_le32(buf + 4);
        CHECK(version == SHARD_VERSION,
              "token shard %s has version %d, but only version %d (uint16 GPT-2 tokens) is supported; "
              "regenerate it with llm.c's data scripts",
              path, (int)version, SHARD_VERSION);
        int32_t ntok = get_le32(buf + 8);
        CHECK(ntok > 0, "token shard %s declares %d tokens in its header; it must hold at least one token",
              path, (int)ntok);
        size_t want = (size_t)HEADER_BYTES + 2 * (size_t)ntok;
        CHECK(len >= want,
              "token shard %s is truncated: its header says %d tokens (%zu bytes) but the file has only "
              "%zu bytes; regenerate or re-download the shard",
              path, (int)ntok, want, len);
        CHECK(len == want,
              "token shard %s has %zu bytes after the %d tokens its header declares; the file is "
              "corrupt, regenerate the shard",
              path, len - want, (int)ntok);
        out->n = (size_t)ntok;
        out->tokens = xmalloc(out->n * sizeof(int));
        const unsigned char *p = buf + HEADER_BYTES;
        for (size_t i = 0; i < out->n; i++) {
            int tok = (int)p[2 * i] | ((int)p[2 * i + 1] << 8);
            CHECK(tok < GPT2_VOCAB,
                  "token shard %s has token %d at index %zu, outside the GPT-2 vocabulary [0, %d); "
                  "the shard is corrupt or was made with another tokenizer, regenerate it",
                  path, tok, i, GPT2_VOCAB);
            out->tokens[i] = tok;
        }
        out->vocab_size = GPT2_VOCAB;
        out->eot = GPT2_EOT;
    } else {
        // Raw bytes.
        out->n = len;
        out->tokens = xmalloc(len * sizeof(int));
        for (size_t i = 0; i < len; i++) out->tokens[i] = (int)buf[i];
        out->vocab_size = 256;
        out->eot = -1;
    }
    free(buf);
}

void data_split(const TokenData *all, double val_frac, TokenData *train, TokenData *val) {
    CHECK(all && train && val, "data_split needs the data and two output structs (got NULL)");
    CHECK(val_frac >= 0.0 && val_frac <= 0.5,
          "the validation fraction %g is outside [0, 0.5]; pass a value such as 0.1", val_frac);
    size_t n_val = (size_t)((double)all->n * val_frac);  // floor for non-negative values
    if (n_val > all->n) n_val = all->n;
    size_t n_train = all->n - n_val;
    train->tokens = all->tokens;
    train->n = n_train;
    train->vocab_size = all->vocab_size;
    train->eot = all->eot;
    val->tokens = all->tokens ? all->tokens + n_train : NULL;
    val->n = n_val;
    val->vocab_size = all->vocab_size;
    val->eot = all->eot;
}

void data_free(TokenData *d) {
    if (!d) return;
    free(d->tokens);
    memset(d, 0, sizeof *d);
}

void tokenizer_bytes(Tokenizer *t) {
    CHECK(t, "tokenizer_bytes needs an output struct (got NULL)");
    t->n = 256;
    t->eot = -1;
    t->piece = xmalloc(256 * sizeof(char *));
    t->piece_len = xmalloc(256 * sizeof(int));
    for (int i = 0; i < 256; i++) {
        t->piece[i] = xmalloc(2);
        t->piece[i][0] = (char)(unsigned char)i;
        t->piece[i][1] = '\0';
        t->piece_len[i] = 1;
    }
}

void tokenizer_load(const char *path, Tokenizer *t) {
    CHECK(path && t, "tokenizer_load needs a file path and an output struct (got NULL)");
    FILE *f = fopen(path, "rb");
    int err = errno;
    CHECK(f, "cannot open tokenizer file %s: %s; check the path (llm.c writes gpt2_tokenizer.bin)", path,
          strerror(err));
    unsigned char h[HEADER_BYTES];
    memset(h, 0, sizeof h);
    size_t got = fread(h, 1, sizeof h, f);
    int32_t magic = get_le32(h);
    CHECK(magic == TOKENIZER_MAGIC,
          "%s is not an llm.c tokenizer file (magic %d, expected %d); pass the gpt2_tokenizer.bin "
          "written by llm.c",
          path, (int)magic, TOKENIZER_MAGIC);
    CHECK(got == sizeof h,
          "tokenizer file %s is truncated: it has %zu bytes, less than the %d-byte header; "
          "regenerate it with llm.c",
          path, got, HEADER_BYTES);
    int32_t version = get_le32(h + 4), n = get_le32(h + 8);
    CHECK(version == 1 || version == 2,
          "tokenizer file %s has version %d, but only versions 1 and 2 are supported; regenerate it with llm.c",
          path, (int)version);
    CHECK(n > 0 && n <= TOKENIZER_MAX_PIECES,
          "tokenizer file %s declares %d pieces, outside [1, %d]; the file is corrupt, regenerate it", path,
          (int)n, TOKENIZER_MAX_PIECES);
    int eot = -1;
    if (version == 2) {
        eot = (int)get_le32(h + 12);
        CHECK(eot >= -1 && eot < n,
              "tokenizer file %s names end-of-text id %d, outside [0, %d); the file is corrupt, regenerate it",
              path, eot, (int)n);
    }
    t->n = (int)n;
    t->eot = eot;
    t->piece = xcalloc((size_t)n, sizeof(char *));
    t->piece_len = xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) {
        unsigned char len;
        got = fread(&len, 1, 1, f);
        CHECK(got == 1,
              "tokenizer file %s is truncated: it ends before the length of piece %d of %d; "
              "regenerate it with llm.c",
              path, i, (int)n);
        t->piece[i] = xmalloc((size_t)len + 1);
        got = fread(t->piece[i], 1, len, f);
        CHECK(got == len,
              "tokenizer file %s is truncated: piece %d of %d should have %d bytes but only %zu remain; "
              "regenerate it with llm.c",
              path, i, (int)n, (int)len, got);
        t->piece[i][len] = '\0';
        t->piece_len[i] = (int)len;
    }
    err = errno;
    int bad = ferror(f);
    fclose(f);
    CHECK(!bad, "error while reading tokenizer file %s: %s", path, strerror(err));
}

int tokenizer_encode(const Tokenizer *t, const char *text, int *out, int cap) {
    CHECK(t && t->n > 0 && t->piece && t->piece_len, "tokenizer_encode needs a loaded tokenizer");
    CHECK(text, "tokenizer_encode needs a prompt text (got NULL)");
    CHECK(cap >= 0 && (out || cap == 0), "tokenizer_encode needs an output array (cap %d)", cap);
    size_t len = strlen(text), pos = 0;
    int count = 0;
    while (pos < len && count < cap) {
        const unsigned char c = (unsigned char)text[pos];
        size_t rest = len - pos;
        int best = -1, best_len = 0;
        for (int i = 0; i < t->n; i++) {
            int pl = t->piece_len[i];
            if (pl <= best_len || (size_t)pl > rest) continue;
            if ((unsigned char)t->piece[i][0] != c) continue;
            if (memcmp(t->piece[i], text + pos, (size_t)pl) == 0) { best = i; best_len = pl; }
        }
        CHECK(best >= 0,
              "the prompt has byte 0x%02x at offset %zu that no tokenizer piece matches; remove it from "
              "the prompt or use a tokenizer that covers all bytes",
              (unsigned)c, pos);
        out[count++] = best;
        pos += (size_t)best_len;
    }
    return count;
}

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    if (t->piece)
        for (int i = 0; i < t->n; i++) free(t->piece[i]);
    free(t->piece);
    free(t->piece_len);
    memset(t, 0, sizeof *t);
}

void data_write_shard(const char *path, const int *tokens, size_t n) {
    CHECK(path, "data_write_shard needs an output file path (got NULL)");
    CHECK(tokens || n == 0, "data_write_shard for %s needs a token array (got NULL)", path);
    CHECK(n <= (size_t)INT32_MAX, "cannot write %zu tokens to shard %s: the llm.c header holds at most %d",
          n, path, (int)INT32_MAX);
    for (size_t i = 0; i < n; i++)
        CHECK(tokens[i] >= 0 && tokens[i] <= 65535,
              "cannot write token %d at index %zu to shard %s: shard tokens are uint16, so every token "
              "must be in [0, 65535]",
              tokens[i], i, path);

    AtomicFile af;
    af_open(&af, path, "token shard", "wb");
    unsigned char h[HEADER_BYTES];
    memset(h, 0, sizeof h);
    put_le32(h, SHARD_MAGIC);
    put_le32(h + 4, SHARD_VERSION);
    put_le32(h + 8, (int32_t)n);
    af_write(&af, h, sizeof h);

    enum { CHUNK = 4096 };
    unsigned char buf[2 * CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? n - i : CHUNK;
        for (size_t j = 0; j < m; j++) {
            unsigned v = (unsigned)tokens[i + j];
            buf[2 * j] = (unsigned char)(v & 0xff);
            buf[2 * j + 1] = (unsigned char)(v >> 8);
        }
        af_write(&af, buf, 2 * m);
    }
    af_commit(&af);
}
