// tests/test_stream.c: token sets of several files and the loader that streams them
// (dataset/data.h, dataset/loader.h):
//   - a folder (name order; hidden files and sub-folders skipped) and a glob (sorted) open the same
//     set; an empty glob or folder, a glob matching a folder, a named pipe, files of two kinds, and
//     one bad shard among good ones are errors that name the file(s);
//   - llm.c Llama-3 shards (uint32, magic 20240801 version 7) read back their tokens; their
//     version, truncation and tokens past the vocabulary are refused;
//   - a read across file boundaries, and the --val-frac split of a set, are the files' concatenation;
//   - a file changed after the vocabulary check is refused when read;
//   - in order, a set of shards gives the batches of one file holding their concatenation, bit for
//     bit, rows across file boundaries included, with --pack documents continuing (or opening at an
//     end-of-text token) across the boundary;
//   - shuffled, an epoch reads every window of every file exactly once and no window spans two files,
//     the next epoch in another order; the same seed repeats the stream, another seed changes it; a
//     loader restarted from a stored position continues the same stream;
//   - --bos: rows [BOS, window's first T-1 tokens] -> its first T, packed or not, in order and
//     shuffled, the stream moving as without it; the boundary token of shards, bytes, other sets;
//   - a rank's slice of a global batch is the matching rows of one loader reading the whole batch;
//   - memory: streaming a 20 GB set (sparse files, so nothing is written) grows the peak RSS no more
//     than streaming a 200 MB one: nothing is allocated by the size of the data.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/common.h"
#include "dataset/data.h"
#include "dataset/loader.h"
#include "tests/testutil.h"

// ---------------------------------------------------------------------------------------------
// files

static char dir[64];   // the test's folder under /tmp

static const char *at(const char *name) {
    static char paths[8][256];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

// An llm.c shard written from its definition: 256 int32 header (magic, version, ntok), then the
// tokens little-endian in `width` bytes each (2: GPT-2, magic 20240520 v1; 4: Llama-3, 20240801 v7).
static void write_shard(const char *path, int width, const int64_t *tok, size_t n, int32_t version, int32_t ntok) {
    size_t len = 1024 + (size_t)width * n;
    unsigned char *b = xcalloc(len, 1);
    int32_t h[3] = { width == 2 ? 20240520 : 20240801, version, ntok };
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++) b[4 * k + i] = (unsigned char)((uint32_t)h[k] >> (8 * i));
    for (size_t j = 0; j < n; j++)
        for (int i = 0; i < width; i++) b[1024 + (size_t)width * j + i] = (unsigned char)((uint64_t)tok[j] >> (8 * i));
    write_file(path, b, len);
    free(b);
}
static void shard16(const char *path, const int64_t *tok, size_t n) { write_shard(path, 2, tok, n, 1, (int32_t)n); }
static void shard32(const char *path, const int64_t *tok, size_t n) { write_shard(path, 4, tok, n, 7, (int32_t)n); }

static int *read_all(const TokenSet *d) {
    int *t = xmalloc(sizeof(int) * (d->n ? d->n : 1));
    data_read(d, 0, d->n, t);
    return t;
}

static void child_open(const void *spec) {
    alarm(10);                                   // a reader that blocks (on a named pipe) fails, killed
    TokenSet d;
    data_open((const char *)spec, &d);
    data_check_vocab(&d, d.vocab_size);
}

// ---------------------------------------------------------------------------------------------
// sets

static void test_folder_and_glob(void) {
    int64_t a[5] = { 1, 2, 3, 4, 5 }, b[3] = { 50256, 7, 8 }, c[4] = { 9, 10, 11, 12 };
    mkdir(at("set"), 0777);
    shard16(at("set/b.bin"), b, 3);      // written out of order: the set is in name order
    shard16(at("set/a.bin"), a, 5);
    shard16(at("set/c.bin"), c, 4);
    write_file(at("set/.hidden"), "bytes", 5);   // skipped, or the kinds would mix
    mkdir(at("set/sub"), 0777);                  // skipped
    TokenSet f, g;
    data_open(at("set"), &f);
    data_open(at("set/*.bin"), &g);
    int *tf = read_all(&f), *tg = read_all(&g);
    static const int want[12] = { 1, 2, 3, 4, 5, 50256, 7, 8, 9, 10, 11, 12 };
    EXPECT(f.n_files == 3 && f.n == 12 && f.kind == DATA_GPT2 && !memcmp(tf, want, sizeof want),
           "a folder: its files in name order, hidden files and sub-folders skipped (%d files, %llu tokens)",
           f.n_files, (unsigned long long)f.n);
    EXPECT(g.n_files == 3 && g.n == 12 && !memcmp(tg, want, sizeof want) && !strcmp(g.files[1].path, at("set/b.bin")),
           "a glob: the matches sorted by name");
    int part[4];
    data_read(&f, 3, 4, part);                   // tokens 3..6: the end of a.bin, the start of b.bin
    EXPECT(part[0] == 4 && part[1] == 5 && part[2] == 50256 && part[3] == 7, "a read across two files");
    TokenSet tr, va;
    data_split(&f, 0.5, &tr, &va);               // the last 6 tokens: b.bin's last 2 and all of c.bin
    int v[6];
    data_read(&va, 0, 6, v);
    EXPECT(tr.n == 6 && va.n == 6 && v[0] == 7 && v[1] == 8 && v[2] == 9 && v[5] == 12,
           "--val-frac holds out the last tokens of the files' sequence, across files");
    uint64_t off;
    EXPECT(data_file_of(&va, 1, &off) == &f.files[1] && off == 2, "data_file_of names the file and the index in it");
    free(tf); free(tg);
    data_close(&f); data_close(&g);

    mkdir(at("empty"), 0777);
    EXPECT(dies_with(child_open, at("empty"), at("empty"), "holds no files"), "an empty folder");
    EXPECT(dies_with(child_open, at("set/*.txt"), "set/*.txt", "matches no file"), "a glob matching nothing");
    EXPECT(dies_with(child_open, at("s*"), "matches the folder", at("set")), "a glob matching a folder");
    CHECK(mkfifo(at("pipe"), 0644) == 0, "mkfifo: %s", strerror(errno));
    EXPECT(dies_with(child_open, at("pipe"), at("pipe"), "not a regular file"), "a named pipe is refused, not opened (which would block)");
}

static void test_kinds(void) {
    int64_t big[6] = { 0, 65535, 65536, 128000, 128255, 100000 }, small[3] = { 1, 2, 3 };
    shard32(at("l3.bin"), big, 6);
    TokenSet d;
    data_open(at("l3.bin"), &d);
    int *t = read_all(&d), ok = d.n == 6;
    for (int i = 0; ok && i < 6; i++) ok = t[i] == big[i];
    EXPECT(ok && d.kind == DATA_LLAMA3 && d.vocab_size == 128256 && d.eot == 128000,
           "a Llama-3 shard: uint32 tokens past 65535 read back; vocabulary 128256, documents open at 128000");
    free(t);
    data_close(&d);

    mkdir(at("mixed"), 0777);
    shard16(at("mixed/a.bin"), small, 3);
    shard32(at("mixed/b.bin"), small, 3);
    EXPECT(dies_with(child_open, at("mixed"), at("mixed/a.bin"), at("mixed/b.bin")), "uint16 and uint32 shards in one set name both files");
    write_file(at("mixed/b.bin"), "plain text", 10);
    EXPECT(dies_with(child_open, at("mixed/*"), "bytes", "one kind"), "a shard and a byte file in one set");

    mkdir(at("bad"), 0777);
    for (int i = 0; i < 4; i++) shard32(at(i == 0 ? "bad/0.bin" : i == 1 ? "bad/1.bin" : i == 2 ? "bad/2.bin" : "bad/3.bin"), big, 6);
    write_shard(at("bad/2.bin"), 4, big, 5, 7, 6);            // says 6 tokens, holds 5
    EXPECT(dies_with(child_open, at("bad/*.bin"), at("bad/2.bin"), "truncated"), "a truncated shard among good ones is named");
    write_shard(at("bad/2.bin"), 4, big, 6, 1, 6);            // the Llama-3 magic with GPT-2's version
    EXPECT(dies_with(child_open, at("bad/*.bin"), at("bad/2.bin"), "version 1"), "a Llama-3 shard of the wrong version");
    big[4] = 128256;                                          // one past the vocabulary
    shard32(at("bad/2.bin"), big, 6);
    EXPECT(dies_with(child_open, at("bad"), at("bad/2.bin"), "token id 128256 at index 4"),
           "a token past the vocabulary: the file and its index there");
}

typedef struct { const char *path; int vocab; } ChangedArgs;
// The set is checked, then its second file is rewritten with a token past the vocabulary.
static void child_changed(const void *arg) {
    const ChangedArgs *a = arg;
    TokenSet d;
    data_open(a->path, &d);
    data_check_vocab(&d, a->vocab);
    int64_t bad[4] = { 1, 2, 999, 4 };
    shard16(d.files[1].path, bad, 4);
    int t[8];
    data_read(&d, 0, 8, t);
}

static void test_changed_file(void) {
    int64_t ok[4] = { 1, 2, 3, 4 };
    mkdir(at("changed"), 0777);
    shard16(at("changed/a.bin"), ok, 4);
    shard16(at("changed/b.bin"), ok, 4);
    ChangedArgs a = { at("changed"), 100 };
    EXPECT(dies_with(child_changed, &a, at("changed/b.bin"), "token id 999 at index 2"),
           "a file changed after the check: the read refuses the token past the model's vocabulary");
}

// ---------------------------------------------------------------------------------------------
// the loader

static int same_batch(const Batch *x, const Batch *y) {
    size_t n = (size_t)x->B * x->T;
    return x->B == y->B && x->T == y->T && !memcmp(x->tokens, y->tokens, n * sizeof(int)) &&
           !memcmp(x->targets, y->targets, n * sizeof(int)) && !memcmp(x->pos, y->pos, n * sizeof(int)) &&
           !memcmp(x->doc, y->doc, n * sizeof(int)) && !memcmp(x->weights, y->weights, n * sizeof(float));
}

// Three small shards (17, 5 and 23 tokens) with end-of-text tokens here and there, and one shard of
// their concatenation.
enum { NTOK = 45 };
static int64_t concat[NTOK];
static void write_small_shards(void) {
    for (int i = 0; i < NTOK; i++) concat[i] = i % 7 == 3 ? 50256 : 100 + i;
    concat[17] = 50256;          // the second shard opens with a document
    concat[21] = 500;            // and the third continues its last one (no eot at 22)
    mkdir(at("three"), 0777);
    shard16(at("three/0.bin"), concat, 17);
    shard16(at("three/1.bin"), concat + 17, 5);
    shard16(at("three/2.bin"), concat + 22, 23);
    shard16(at("one.bin"), concat, NTOK);
}

static void test_in_order(void) {
    TokenSet three, one;
    data_open(at("three"), &three);
    data_open(at("one.bin"), &one);
    Batch a, b;
    batch_alloc(&a, 2, 6);
    batch_alloc(&b, 2, 6);
    for (int pack = 0; pack < 2; pack++) {
        Loader l3 = { .d = &three, .pack = pack }, l1 = { .d = &one, .pack = pack };
        int same = 1, spans = 0;
        for (int k = 0; k < 9; k++) {            // 45 tokens, 13 per batch: wraps twice
            uint64_t start = l3.pos.offset + 13 > three.n ? 0 : l3.pos.offset;
            spans |= start <= 17 && start + 12 >= 17;
            loader_next(&l3, &a);
            loader_next(&l1, &b);
            same &= same_batch(&a, &b) && l3.pos.offset == l1.pos.offset && l3.pos.epoch == l1.pos.epoch;
            // row r is tokens [start + r*T, start + r*T + T], targets shifted by one
            for (int r = 0; r < 2; r++)
                for (int t = 0; t < 6; t++)
                    same &= a.tokens[r * 6 + t] == concat[start + (uint64_t)(r * 6 + t)] &&
                            a.targets[r * 6 + t] == concat[start + (uint64_t)(r * 6 + t) + 1];
        }
        EXPECT(same && spans && l3.pos.epoch == 2, "pack %d: three shards in order give the batches of one file of "
               "their concatenation, rows across the boundaries included (epoch %llu)", pack, (unsigned long long)l3.pos.epoch);
    }
    // --pack across the boundaries: a row over tokens 14..20 (shard 0's last 3, shard 1 from its
    // eot at 17) opens a document at the eot; a row over 19..25 continues shard 1's last document
    // into shard 2 (no new document at the file boundary 22) until the eot at 24
    Batch r;
    batch_alloc(&r, 1, 6);
    Loader l = { .d = &three, .pack = 1, .pos = { 0, 0, 14 } };
    loader_next(&l, &r);
    EXPECT(r.tokens[3] == 50256 && r.doc[2] == 0 && r.doc[3] == 1 && r.pos[3] == 0 && r.pos[5] == 2,
           "a row spanning two shards: the document opens at the second shard's end-of-text token");
    l.pos.offset = 19;
    loader_next(&l, &r);
    EXPECT(concat[22] != 50256 && concat[24] == 50256 && r.doc[2] == 0 && r.doc[3] == 0 && r.pos[4] == 4 && r.doc[5] == 1 &&
           r.pos[5] == 0, "a document that continues into the next shard keeps its id and positions");
    batch_free(&r);
    batch_free(&a); batch_free(&b);
    data_close(&three); data_close(&one);
}

// --bos: each row is [BOS, w_0 .. w_{T-2}] with targets [w_0 .. w_{T-1}] of the window the loader
// without bos reads, in order and shuffled, packed or not; the stream moves as without bos. The
// boundary token: the shards' end of text, byte 2 in bytes, none in a set of another vocabulary.
static void test_bos(void) {
    TokenSet three;
    data_open(at("three"), &three);
    Batch a, b;
    batch_alloc(&a, 2, 6);
    batch_alloc(&b, 2, 6);
    int ok = 1, at_eot = 0;
    for (int mode = 0; mode < 4; mode++) {
        int pack = mode & 1, shuffle = mode >> 1;
        Loader lb = { .d = &three, .pack = pack, .shuffle = shuffle, .seed = 5, .bos = 1 };
        Loader ln = { .d = &three, .pack = pack, .shuffle = shuffle, .seed = 5 };
        for (int k = 0; k < 6; k++) {
            loader_next(&lb, &a);
            loader_next(&ln, &b);
            ok &= lb.pos.offset == ln.pos.offset && lb.pos.epoch == ln.pos.epoch && lb.pos.shard == ln.pos.shard;
            for (int r = 0; r < 2; r++) {
                const int *ta = a.tokens + r * 6, *ga = a.targets + r * 6, *tb = b.tokens + r * 6;
                ok &= ta[0] == 50256 && ga[0] == tb[0] && a.doc[r * 6] == 0 && a.pos[r * 6] == 0;
                for (int t = 1; t < 6; t++) ok &= ta[t] == tb[t - 1] && ga[t] == tb[t] && a.weights[r * 6 + t] == 1;
                // BOS before a window that starts with the end of text itself: that prediction has weight 0
                ok &= a.weights[r * 6] == (tb[0] == 50256 ? 0.0f : 1.0f);
                at_eot += tb[0] == 50256;
            }
        }
        EXPECT(ok, "--bos (pack %d, shuffle %d): rows are BOS then the window's first T-1 tokens, targets its first T", pack, shuffle);
    }
    EXPECT(at_eot > 0, "--bos: some window starts with the end of text (its BOS prediction weighs 0)");
    int bytes[8] = { 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h' };
    TokenSet tb, other;
    data_from_memory(bytes, 8, 256, -1, "bytes", &tb);
    data_from_memory(bytes, 8, 300, -1, "other", &other);
    Loader l = { .d = &tb, .bos = 1 };
    Batch r;
    batch_alloc(&r, 1, 4);
    loader_next(&l, &r);
    EXPECT(loader_bos_token(&three) == 50256 && loader_bos_token(&tb) == LOADER_BYTE_BOS && loader_bos_token(&other) == -1,
           "the boundary token: end of text, byte 2 in bytes, none otherwise");
    EXPECT(r.tokens[0] == LOADER_BYTE_BOS && r.tokens[1] == 'a' && r.tokens[3] == 'c' && r.targets[0] == 'a' && r.targets[3] == 'd',
           "--bos on bytes: [2, a, b, c] -> [a, b, c, d]");
    batch_free(&r); batch_free(&a); batch_free(&b);
    data_close(&tb); data_close(&other); data_close(&three);
}

// Shuffled: windows of T + 1 tokens at multiples of T inside each file.
static void test_shuffled(void) {
    TokenSet d;
    data_open(at("three"), &d);
    enum { T = 4, B = 3 };
    Loader l = { .d = &d, .shuffle = 1, .seed = 42 };
    // files of 17, 5, 23 tokens hold (17-1)/4 + (5-1)/4 + (23-1)/4 = 4 + 1 + 5 = 10 windows
    uint64_t rows = loader_rows(&l, T);
    EXPECT(rows == 10, "10 windows of 5 tokens in files of 17, 5 and 23 tokens (got %llu)", (unsigned long long)rows);
    Batch b;
    batch_alloc(&b, B, T);
    // the window starts of each file: 0,4,8,12 | 17 | 22,26,30,34,38
    static const int starts[10] = { 0, 4, 8, 12, 17, 22, 26, 30, 34, 38 };
    int seen[2][10] = { { 0 } }, inside = 1, order[2][10];
    for (int i = 0; i < 20; i += B) {            // 7 batches = 21 rows: two epochs and a row
        loader_next(&l, &b);
        for (int r = 0; r < B && i + r < 20; r++) {
            int w = -1;
            for (int k = 0; k < 10; k++)
                if (b.tokens[r * T] == concat[starts[k]] && b.tokens[r * T + 1] == concat[starts[k] + 1]) w = k;
            inside &= w >= 0 && b.targets[r * T + T - 1] == concat[starts[w] + T];
            if (w >= 0) { seen[(i + r) / 10][w]++; order[(i + r) / 10][(i + r) % 10] = w; }
        }
    }
    int once = 1;
    for (int e = 0; e < 2; e++) for (int k = 0; k < 10; k++) once &= seen[e][k] == 1;
    EXPECT(inside, "every shuffled row is a window of T + 1 tokens at a multiple of T inside one file");
    EXPECT(once, "each epoch reads every window exactly once");
    EXPECT(memcmp(order[0], order[1], sizeof order[0]) != 0, "the second epoch reads the windows in another order");
    // the same seed repeats the stream; another seed changes it; a loader restarted at a stored
    // position (mid-epoch, between shards) continues the same stream
    Loader x = { .d = &d, .shuffle = 1, .seed = 42 }, y = x, z = { .d = &d, .shuffle = 1, .seed = 43 };
    Batch bx, by, bz;
    batch_alloc(&bx, B, T); batch_alloc(&by, B, T); batch_alloc(&bz, B, T);
    int same = 1, differs = 0;
    for (int k = 0; k < 8; k++) {
        loader_next(&x, &bx); loader_next(&y, &by); loader_next(&z, &bz);
        same &= same_batch(&bx, &by);
        differs |= !same_batch(&bx, &bz);
        if (k == 2) {                            // a new loader from x's position alone
            StreamPos saved = x.pos;
            y = (Loader){ .d = &d, .shuffle = 1, .seed = 42, .pos = saved };
            loader_check_pos(&y, T, "test");
        }
    }
    EXPECT(same, "the same seed, and a loader restarted from the stored position, give the same batches");
    EXPECT(differs, "another seed gives another order");
    batch_free(&bx); batch_free(&by); batch_free(&bz);
    batch_free(&b);
    data_close(&d);
}

static void child_bad_pos(const void *arg) {
    Loader l = *(const Loader *)arg;
    loader_check_pos(&l, 4, "checkpoint x.ckpt");
}

static void test_positions(void) {
    TokenSet d;
    data_open(at("three"), &d);
    Loader l = { .d = &d, .shuffle = 1, .seed = 42, .pos = { 0, 5, 0 } };     // 3 files: shard 5 is outside
    EXPECT(dies_with(child_bad_pos, &l, "x.ckpt", "outside the shuffled stream"), "a shuffled position past the files");
    l.pos = (StreamPos){ 0, 1, 9 };                                           // more windows than any file has
    EXPECT(dies_with(child_bad_pos, &l, "x.ckpt", "window 9"), "a shuffled position past a file's windows");
    l = (Loader){ .d = &d, .pos = { 0, 1, 3 } };
    EXPECT(dies_with(child_bad_pos, &l, "x.ckpt", "shard 1"), "an in-order position with a shard");
    data_close(&d);
}

// Rank r of 2 gets rows r*B .. r*B + B - 1 of the global batch of 2B rows, and both ranks end where
// one loader reading 2B rows ends.
static void test_slices(void) {
    TokenSet d;
    data_open(at("three"), &d);
    enum { T = 4, B = 2 };
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        Loader whole = { .d = &d, .shuffle = shuffle, .seed = 7 }, r0 = whole, r1 = whole;
        Batch g, s0, s1;
        batch_alloc(&g, 2 * B, T); batch_alloc(&s0, B, T); batch_alloc(&s1, B, T);
        int same = 1;
        for (int k = 0; k < 6; k++) {
            loader_next(&whole, &g);
            loader_next_slice(&r0, &s0, 0, 2);
            loader_next_slice(&r1, &s1, 1, 2);
            size_t half = (size_t)B * T;
            same &= !memcmp(s0.tokens, g.tokens, half * sizeof(int)) && !memcmp(s1.tokens, g.tokens + half, half * sizeof(int)) &&
                    !memcmp(s1.targets, g.targets + half, half * sizeof(int)) &&
                    !memcmp(&r0.pos, &whole.pos, sizeof(StreamPos)) && !memcmp(&r1.pos, &whole.pos, sizeof(StreamPos));
        }
        EXPECT(same, "shuffle %d: the two ranks' slices are the halves of the global batch; all end at its position", shuffle);
        batch_free(&g); batch_free(&s0); batch_free(&s1);
    }
    data_close(&d);
}

// ---------------------------------------------------------------------------------------------
// memory

static double peak_rss_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atof(line + 6);
    if (f) fclose(f);
    return kb / 1024;
}

// n sparse byte files of `bytes` each (nothing written: they read as zeros) streamed for 300
// batches of 8 x 256, in order and shuffled; returns how far the peak RSS rose above the peak
// before, in MB.
static double stream_sparse(const char *name, int n, off_t bytes) {
    mkdir(at(name), 0777);
    for (int i = 0; i < n; i++) {
        char file[256];
        snprintf(file, sizeof file, "%s/%s/%02d", dir, name, i);
        int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        CHECK(fd >= 0 && ftruncate(fd, bytes) == 0 && close(fd) == 0, "cannot make the sparse file %s", file);
    }
    double before = peak_rss_mb();
    TokenSet d;
    data_open(at(name), &d);
    data_check_vocab(&d, 256);
    Batch b;
    batch_alloc(&b, 8, 256);
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        Loader l = { .d = &d, .shuffle = shuffle, .seed = 1 };
        for (int k = 0; k < 300; k++) loader_next(&l, &b);
    }
    batch_free(&b);
    data_close(&d);
    double grew = peak_rss_mb() - before;
    for (int i = 0; i < n; i++) {
        char file[256];
        snprintf(file, sizeof file, "%s/%s/%02d", dir, name, i);
        unlink(file);
    }
    rmdir(at(name));
    return grew;
}

// AddressSanitizer keeps freed memory in a quarantine (up to 256 MB), so under make asan the peak
// RSS grows with the number of reads, not with the data: the check means nothing there.
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static void test_memory(void) {
#ifdef UNDER_ASAN
    printf("test_stream: the peak-RSS check is skipped under AddressSanitizer (its quarantine holds freed memory)\n");
    return;
#endif
    double small = stream_sparse("sparse-200m", 10, (off_t)20 << 20), large = stream_sparse("sparse-20g", 10, (off_t)2 << 30);
    printf("test_stream: peak RSS grew %.2f MB streaming 200 MB, %.2f MB streaming 20 GB\n", small, large);
    EXPECT(small >= 0 && large >= 0 && large < 1.0, "streaming 20 GB after 200 MB must not raise the peak RSS "
           "(it rose %.2f MB for 200 MB, then %.2f MB more for 20 GB)", small, large);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_stream_XXXXXX");
    CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    test_folder_and_glob();
    test_kinds();
    test_changed_file();
    write_small_shards();
    test_in_order();
    test_bos();
    test_shuffled();
    test_positions();
    test_slices();
    test_memory();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cannot remove %s", dir);
    return test_summary("test_stream");
}
