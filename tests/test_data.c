// tests/test_data.c: readers, writers, split, tokenizers and the embedded corpus (dataset/); sets
// of several files, globs, folders and the loader are in tests/test_stream.c.
// Error paths exit through CHECK, so they run in a forked child whose stderr goes to a temp file;
// the parent checks the exit status (1) and that the message names the file.

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/common.h"
#include "dataset/data.h"
#include "tests/testutil.h"

// ---------------------------------------------------------------------------------------------
// helpers

static char *make_temp(const char *tag) {
    char *path = xmalloc(128);
    snprintf(path, 128, "/tmp/test_data_%s_XXXXXX", tag);
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp for %s failed: %s", path, strerror(errno));
    close(fd);
    return path;
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f, "cannot write %s", path);
    CHECK(fwrite(p, 1, n, f) == n, "short write to %s", path);
    CHECK(fclose(f) == 0, "close of %s failed", path);
}

static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK(f, "cannot read %s", path);
    size_t cap = 1 << 16;
    unsigned char *buf = xmalloc(cap);
    *n = 0;
    size_t got;
    while ((got = fread(buf + *n, 1, cap - *n, f)) > 0) {
        *n += got;
        if (*n == cap) {
            cap *= 2;
            unsigned char *q = xmalloc(cap);
            memcpy(q, buf, *n);
            free(buf);
            buf = q;
        }
    }
    fclose(f);
    return buf;
}

static void le32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
}

// A raw llm.c shard: header (magic, version, ntok_header) + the given uint16 tokens.
static void write_raw_shard(const char *path, int32_t version, int32_t ntok_header, const uint16_t *tok,
                            size_t n) {
    size_t len = 1024 + 2 * n;
    unsigned char *b = xcalloc(len, 1);
    le32(b, 20240520);
    le32(b + 4, version);
    le32(b + 8, ntok_header);
    for (size_t i = 0; i < n; i++) {
        b[1024 + 2 * i] = (unsigned char)(tok[i] & 0xff);
        b[1024 + 2 * i + 1] = (unsigned char)(tok[i] >> 8);
    }
    write_bytes(path, b, len);
    free(b);
}

// An llm.c tokenizer file; cut > 0 truncates the file to that many bytes.
static void write_tokenizer(const char *path, int version, int n, int eot, const char *const *pieces,
                            const int *lens, size_t cut) {
    size_t cap = 1024;
    for (int i = 0; i < n; i++) cap += 1 + (size_t)lens[i];
    unsigned char *b = xcalloc(cap, 1);
    le32(b, 20240328);
    le32(b + 4, version);
    le32(b + 8, n);
    if (version == 2) le32(b + 12, eot);
    size_t at = 1024;
    for (int i = 0; i < n; i++) {
        b[at++] = (unsigned char)lens[i];
        memcpy(b + at, pieces[i], (size_t)lens[i]);
        at += (size_t)lens[i];
    }
    write_bytes(path, b, cut ? cut : at);
    free(b);
}

// Opens a set and checks its tokens against the set's own vocabulary, as ./train does for a new model.
static void child_load(const void *arg) {
    TokenSet d;
    data_open((const char *)arg, &d);
    data_check_vocab(&d, d.vocab_size);
}

// Every token of a set (caller frees).
static int *read_all(const TokenSet *d) {
    int *t = xmalloc(sizeof(int) * (d->n ? d->n : 1));
    data_read(d, 0, d->n, t);
    return t;
}
static void child_tokenizer_load(const void *arg) {
    Tokenizer t;
    tokenizer_load((const char *)arg, &t);
}
typedef struct { const char *path; const int *tok; size_t n; } ShardArgs;
static void child_write_shard(const void *arg) {
    const ShardArgs *a = arg;
    data_write_shard(a->path, a->tok, a->n);
}
// the same under an 8 KiB file-size limit (ulimit -f): writes past it fail with EFBIG, as a full
// disk fails them with ENOSPC
static void child_write_shard_limited(const void *arg) {
    struct rlimit rl = { 8192, 8192 };
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit: %s", strerror(errno));
    child_write_shard(arg);
}
static void child_encode(const void *arg) {
    const Tokenizer *t = arg;
    int out[16];
    tokenizer_encode(t, "ab\x01", out, 16);
}

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}

// ---------------------------------------------------------------------------------------------
// tests

static void test_byte_file(void) {
    static const unsigned char text[] = "Hello, world!\n\x00\x01\xfe\xff tail";
    size_t n = sizeof text - 1;
    char *path = make_temp("bytes");
    write_bytes(path, text, n);
    TokenSet d;
    data_open(path, &d);
    EXPECT(d.n == n, "byte file: n %llu, expected %zu", (unsigned long long)d.n, n);
    EXPECT(d.vocab_size == 256 && d.kind == DATA_BYTES, "byte file: vocab %d", d.vocab_size);
    EXPECT(d.eot == -1, "byte file: eot %d", d.eot);
    int *tok = read_all(&d), same = d.n == n;
    for (size_t i = 0; same && i < n; i++) same = tok[i] == (int)text[i];
    EXPECT(same, "byte file: tokens differ from the bytes written");
    free(tok);
    data_close(&d);
    EXPECT(d.files == NULL && d.n == 0, "data_close clears the struct");

    // A one-byte file and a file of 1000 bytes that starts like a shard but is short of the header
    // are handled: the first is bytes, the second a truncated-shard error (tested below).
    write_bytes(path, "x", 1);
    data_open(path, &d);
    tok = read_all(&d);
    EXPECT(d.n == 1 && tok[0] == 'x' && d.vocab_size == 256, "one-byte file loads as bytes");
    free(tok);
    data_close(&d);
    remove(path);
    free(path);
}

static void test_shard_round_trip(void) {
    enum { N = 3000 };
    int tok[N];
    for (int i = 0; i < N; i++) tok[i] = (i * 7919) % 50257;
    tok[0] = 0;
    tok[1] = 50256;
    tok[2] = 255;
    tok[3] = 256;
    char *path = make_temp("shard");
    data_write_shard(path, tok, N);
    size_t len = 0;
    unsigned char *raw = read_bytes(path, &len);
    EXPECT(len == 1024 + 2 * (size_t)N, "shard file size %zu, expected %d", len, 1024 + 2 * N);
    EXPECT(raw[0] == 0x88 && raw[1] == 0xd8 && raw[2] == 0x34 && raw[3] == 0x01,  // 20240520 LE
           "shard magic bytes %02x %02x %02x %02x", raw[0], raw[1], raw[2], raw[3]);
    EXPECT(raw[4] == 1 && raw[5] == 0 && raw[8] == (N & 0xff) && raw[9] == (N >> 8), "shard version/ntok");
    EXPECT(raw[1024 + 2] == (50256 & 0xff) && raw[1024 + 3] == (50256 >> 8), "token 50256 stored little-endian");
    free(raw);
    TokenSet d;
    data_open(path, &d);
    EXPECT(d.n == N && d.kind == DATA_GPT2, "shard: n %llu", (unsigned long long)d.n);
    EXPECT(d.vocab_size == 50257 && d.eot == 50256, "shard: vocab %d eot %d", d.vocab_size, d.eot);
    int *got = read_all(&d), same = d.n == N;
    for (size_t i = 0; same && i < N; i++) same = got[i] == tok[i];
    EXPECT(same, "shard: tokens round trip");
    free(got);
    data_close(&d);

    // no temporary file is left next to the shard
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    EXPECT(access(tmp, F_OK) != 0, "temporary file %s was left behind", tmp);

    // a disk that fills up while a new shard is written: the message says so, the old shard stays
    // byte for byte, the temporary goes
    size_t old_len = 0, now_len = 0;
    unsigned char *old = read_bytes(path, &old_len);
    static int big[20000];
    ShardArgs sb = { path, big, 20000 };
    EXPECT(dies_with(child_write_shard_limited, &sb, "File too large", "the previous file is intact"),
           "a shard write past the file-size limit is an error that says the old shard is intact");
    unsigned char *now = read_bytes(path, &now_len);
    EXPECT(now_len == old_len && memcmp(old, now, old_len) == 0, "the old shard is unchanged after the failed write");
    EXPECT(access(tmp, F_OK) != 0, "the failed write left %s behind", tmp);
    free(old); free(now);

    // a temporary left by a killed writer is reused: the next write succeeds and removes it
    write_bytes(tmp, "stale", 5);

    // overwriting an existing shard replaces it
    data_write_shard(path, tok, 5);
    data_open(path, &d);
    got = read_all(&d);
    EXPECT(d.n == 5 && got[1] == 50256, "rewritten shard has 5 tokens (got %llu)", (unsigned long long)d.n);
    EXPECT(access(tmp, F_OK) != 0, "the stale temporary %s is gone after the write that reused it", tmp);
    free(got);
    data_close(&d);
    remove(path);
    free(path);
}

static void test_split(void) {
    enum { N = 1000 };
    int tok[N];
    for (int i = 0; i < N; i++) tok[i] = i % 256;
    TokenSet all, tr, va;
    data_from_memory(tok, N, 256, -1, "split test", &all);
    data_split(&all, 0.1, &tr, &va);
    int first[2];
    data_read(&va, 0, 2, first);
    EXPECT(tr.n == 900 && va.n == 100, "split 0.1: train %llu val %llu", (unsigned long long)tr.n, (unsigned long long)va.n);
    EXPECT(tr.begin == 0 && va.begin == 900 && va.files == all.files && first[0] == tok[900] && first[1] == tok[901],
           "split: parts are ranges of the set's tokens");
    EXPECT(tr.vocab_size == 256 && va.vocab_size == 256 && tr.eot == -1 && va.eot == -1, "split copies vocab/eot");
    data_split(&all, 0.0, &tr, &va);
    EXPECT(tr.n == N && va.n == 0 && tr.begin == 0, "split 0: train %llu val %llu", (unsigned long long)tr.n, (unsigned long long)va.n);
    data_split(&all, 0.5, &tr, &va);
    EXPECT(tr.n == 500 && va.n == 500 && va.begin == 500, "split 0.5: train %llu val %llu", (unsigned long long)tr.n, (unsigned long long)va.n);
    data_close(&all);
    TokenSet small;
    data_from_memory(tok, 7, 256, -1, "split test", &small);
    data_split(&small, 0.3, &tr, &va);  // floor(2.1) = 2
    EXPECT(tr.n == 5 && va.n == 2 && va.begin == 5, "split 7 x 0.3: train %llu val %llu", (unsigned long long)tr.n, (unsigned long long)va.n);
    data_close(&small);
}

static void test_corpus(void) {
    size_t n1 = 0, n2 = 0;
    char *a = data_default_corpus_text(&n1);
    char *b = data_default_corpus_text(&n2);
    EXPECT(n1 == n2 && memcmp(a, b, n1) == 0, "corpus: two calls give the same text");
    EXPECT(n1 >= 200000 && n1 <= 400000, "corpus size %zu outside 200-400 KB", n1);
    EXPECT(strlen(a) == n1, "corpus: NUL-terminated at its length, no NUL inside");
    int ascii = 1;
    for (size_t i = 0; i < n1; i++) {
        unsigned char c = (unsigned char)a[i];
        if (!(c == '\n' || (c >= 32 && c < 127))) { ascii = 0; break; }
    }
    EXPECT(ascii, "corpus: printable ASCII and newlines only");
    EXPECT(strstr(a, "\n\n") != NULL && strstr(a, " make ") != NULL && strstr(a, "\" asked ") != NULL,
           "corpus: has paragraphs, sums and dialogue");
    // Pinned so that a change to the generator, or a machine that generates different bytes, is
    // noticed. If you change corpus.c on purpose, update this value.
    uint64_t h = fnv1a(a, n1);
    EXPECT(h == 0xc1964205d62ba752ull, "corpus hash 0x%016llx, size %zu: the generated text changed", (unsigned long long)h, n1);

    TokenSet d;
    data_default_corpus(&d);
    EXPECT(d.n == n1 && d.vocab_size == 256 && d.eot == -1, "corpus tokens: n %llu vocab %d eot %d",
           (unsigned long long)d.n, d.vocab_size, d.eot);
    int *tok = read_all(&d), same = d.n == n1;
    for (size_t i = 0; same && i < n1; i++) same = tok[i] == (unsigned char)a[i];
    EXPECT(same, "corpus tokens equal the text bytes");
    free(tok);
    data_close(&d);
    free(a);
    free(b);
}

static void test_tokenizer_bytes(void) {
    Tokenizer t;
    tokenizer_bytes(&t);
    EXPECT(t.n == 256 && t.eot == -1, "byte tokenizer: n %d eot %d", t.n, t.eot);
    int ok = 1;
    for (int i = 0; i < 256; i++)
        ok = ok && t.piece_len[i] == 1 && (unsigned char)t.piece[i][0] == i && t.piece[i][1] == '\0';
    EXPECT(ok, "byte tokenizer: piece i is byte i");
    const char *text = "Hi there\n\x7f\xc3\xa9";
    int out[64];
    int k = tokenizer_encode(&t, text, out, 64);
    EXPECT(k == (int)strlen(text), "byte encode length %d", k);
    ok = k == (int)strlen(text);
    for (int i = 0; ok && i < k; i++) ok = out[i] == (unsigned char)text[i];
    EXPECT(ok, "byte encode is the identity");
    k = tokenizer_encode(&t, text, out, 3);
    EXPECT(k == 3 && out[0] == 'H' && out[2] == ' ', "encode stops at cap (got %d)", k);
    EXPECT(tokenizer_encode(&t, "", out, 64) == 0, "empty prompt encodes to nothing");
    tokenizer_free(&t);
    EXPECT(t.piece == NULL && t.n == 0, "tokenizer_free clears the struct");
}

static void test_tokenizer_file(void) {
    // pieces: all 256 bytes, then "th", "the", "he", " the", "then", "<|eot|>" (a piece with a NUL too)
    enum { NP = 256 + 7 };
    const char *pieces[NP];
    int lens[NP];
    char bytes[256][1];
    for (int i = 0; i < 256; i++) { bytes[i][0] = (char)i; pieces[i] = bytes[i]; lens[i] = 1; }
    const char *extra[] = {"th", "the", "he", " the", "then", "<|eot|>", "a\0b"};
    const int extra_len[] = {2, 3, 2, 4, 4, 7, 3};
    for (int i = 0; i < 7; i++) { pieces[256 + i] = extra[i]; lens[256 + i] = extra_len[i]; }
    char *path = make_temp("tok");
    write_tokenizer(path, 2, NP, 256 + 5, pieces, lens, 0);
    Tokenizer t;
    tokenizer_load(path, &t);
    EXPECT(t.n == NP && t.eot == 256 + 5, "tokenizer file: n %d eot %d", t.n, t.eot);
    EXPECT(t.piece_len[259] == 4 && strcmp(t.piece[259], " the") == 0, "piece 259 is \" the\"");
    EXPECT(t.piece_len[262] == 3 && memcmp(t.piece[262], "a\0b", 4) == 0, "a piece may contain NUL");
    EXPECT(t.piece_len['A'] == 1 && t.piece['A'][0] == 'A' && t.piece['A'][1] == '\0', "byte pieces loaded");

    // greedy longest match: "then the other" -> then | " the" | " " ... wait: " other" has no long piece
    int out[64];
    int k = tokenizer_encode(&t, "then the other", out, 64);
    // then(260) " the"(259) " "(32) o t h e r -> "o" "the"(257) "r"
    int want[] = {260, 259, ' ', 'o', 257, 'r'};
    int ok = k == 6;
    for (int i = 0; ok && i < k; i++) ok = out[i] == want[i];
    EXPECT(ok, "greedy longest match of \"then the other\" (got %d ids)", k);
    k = tokenizer_encode(&t, "he<|eot|>", out, 64);
    EXPECT(k == 2 && out[0] == 258 && out[1] == 261, "greedy match \"he<|eot|>\" (got %d ids)", k);
    tokenizer_free(&t);

    // version 1 has no eot field
    write_tokenizer(path, 1, NP, 0, pieces, lens, 0);
    tokenizer_load(path, &t);
    EXPECT(t.n == NP && t.eot == -1, "version-1 tokenizer: n %d eot %d", t.n, t.eot);
    tokenizer_free(&t);

    // a tokenizer without byte pieces cannot encode a byte it lacks: error
    const char *few[] = {"a", "b", "ab"};
    const int few_len[] = {1, 1, 2};
    write_tokenizer(path, 2, 3, 2, few, few_len, 0);
    tokenizer_load(path, &t);
    k = tokenizer_encode(&t, "abba", out, 64);
    EXPECT(k == 3 && out[0] == 2 && out[1] == 1 && out[2] == 0, "few-piece encode \"abba\" (got %d)", k);
    EXPECT(dies_with(child_encode, &t, "0x01", "prompt"), "unencodable prompt byte is an error");
    tokenizer_free(&t);

    // truncated in the middle of a piece, and before a piece's length byte
    write_tokenizer(path, 2, NP, 261, pieces, lens, 1024 + 2 * 256 + 3 + 2);
    EXPECT(dies_with(child_tokenizer_load, path, path, "truncated"), "tokenizer cut mid-piece");
    write_tokenizer(path, 2, NP, 261, pieces, lens, 1024 + 2 * 100);
    EXPECT(dies_with(child_tokenizer_load, path, path, "truncated"), "tokenizer cut before a length byte");
    write_tokenizer(path, 2, NP, 261, pieces, lens, 500);
    EXPECT(dies_with(child_tokenizer_load, path, path, "truncated"), "tokenizer cut inside the header");
    // wrong magic (a byte file) and wrong version
    write_bytes(path, "not a tokenizer at all", 22);
    EXPECT(dies_with(child_tokenizer_load, path, path, "magic"), "non-tokenizer file");
    write_tokenizer(path, 3, NP, 261, pieces, lens, 0);
    EXPECT(dies_with(child_tokenizer_load, path, path, "version 3"), "tokenizer version 3");
    remove(path);
    free(path);
}

static void test_errors(void) {
    char *path = make_temp("err");
    uint16_t tok[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

    write_bytes(path, "", 0);
    EXPECT(dies_with(child_load, path, path, "empty"), "empty file");

    write_raw_shard(path, 1, 10, tok, 5);  // header says 10 tokens, file holds 5
    EXPECT(dies_with(child_load, path, path, "truncated"), "truncated shard");

    unsigned char head[100] = {0x88, 0xd8, 0x34, 0x01};  // shard magic, but shorter than the header
    write_bytes(path, head, sizeof head);
    EXPECT(dies_with(child_load, path, path, "truncated"), "shard shorter than its header");

    write_raw_shard(path, 2, 10, tok, 10);
    EXPECT(dies_with(child_load, path, path, "version 2"), "shard with bad version");

    tok[7] = 60000;
    write_raw_shard(path, 1, 10, tok, 10);
    EXPECT(dies_with(child_load, path, path, "60000"), "shard token 60000 names the value");
    EXPECT(dies_with(child_load, path, "index 7", NULL), "shard token 60000 names the index");

    char missing[160];
    snprintf(missing, sizeof missing, "%s_does_not_exist", path);
    EXPECT(dies_with(child_load, missing, missing, strerror(ENOENT)), "missing file names it and strerror");
    EXPECT(dies_with(child_tokenizer_load, missing, missing, strerror(ENOENT)), "missing tokenizer file");
    char folder[] = "/tmp/test_data_folder_XXXXXX";
    EXPECT(mkdtemp(folder) != NULL, "mkdtemp: %s", strerror(errno));
    EXPECT(dies_with(child_load, folder, folder, "holds no files"), "an empty folder is an error");
    rmdir(folder);

    int bad[3] = {1, 70000, 2};
    ShardArgs sa = {path, bad, 3};
    EXPECT(dies_with(child_write_shard, &sa, path, "70000"), "writing token 70000 is an error");
    int neg[2] = {5, -1};
    ShardArgs sn = {path, neg, 2};
    EXPECT(dies_with(child_write_shard, &sn, path, "-1"), "writing token -1 is an error");
    ShardArgs sd = {"/tmp/test_data_no_such_dir/x.bin", neg, 1};
    EXPECT(dies_with(child_write_shard, &sd, "/tmp/test_data_no_such_dir/x.bin", NULL),
           "writing into a missing directory is an error");
    remove(path);
    free(path);
}

int main(void) {
    test_byte_file();
    test_shard_round_trip();
    test_split();
    test_corpus();
    test_tokenizer_bytes();
    test_tokenizer_file();
    test_errors();
    return test_summary("test_data");
}
