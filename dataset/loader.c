// dataset/loader.c: batches from a token set, in order or shuffled (see loader.h).
#include "dataset/loader.h"

int loader_starts_document(const int *row, int t, int eot) {
    if (eot >= 0) return row[t] == eot;
    return row[t] == '\n' && row[t - 1] == '\n';
}

int loader_bos_token(const TokenSet *d) {
    if (d->eot >= 0) return d->eot;
    return d->kind == DATA_BYTES && d->vocab_size == 256 ? LOADER_BYTE_BOS : -1;
}

// ---- the shuffled order ------------------------------------------------------------------------

// splitmix64's finaliser: a 64-bit hash whose output bits each depend on every input bit.
static uint64_t mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// A pseudo-random permutation of [0, n), evaluated at i: a 4-round Feistel network on the smallest
// even number of bits 2h with 4^h >= n (a bijection of [0, 4^h) for any round function), applied
// again while the result is >= n ("cycle walking": the walk stays inside i's cycle, so it is a
// bijection of [0, n); as 4^h < 4n it takes fewer than 4 steps on average). Shuffling this way
// needs no table of n entries.
static uint64_t permute(uint64_t i, uint64_t n, uint64_t key) {
    if (n <= 1) return 0;
    int h = 1;
    while (h < 31 && (1ull << (2 * h)) < n) h++;
    uint64_t mask = (1ull << h) - 1;
    do {
        uint64_t left = i >> h, right = i & mask;
        for (uint64_t round = 0; round < 4; round++) {
            uint64_t f = mix(right ^ key ^ (round * 0x9E3779B97F4A7C15ull)) & mask;
            uint64_t t = left ^ f;
            left = right;
            right = t;
        }
        i = left << h | right;
    } while (i >= n);
    return i;
}

// The key of epoch e's file order, and of file f's window order in epoch e.
static uint64_t epoch_key(const Loader *l, uint64_t epoch) { return mix(l->seed ^ mix(epoch + 1)); }
static uint64_t file_key(const Loader *l, uint64_t epoch, int f) { return mix(epoch_key(l, epoch) + 1 + (uint64_t)f); }

// File f's tokens inside the set's range, as set indices [*start, *start + m); returns its windows
// of T + 1 tokens at multiples of T.
static uint64_t file_windows(const TokenSet *d, int f, int T, uint64_t *start) {
    const TokenFile *tf = &d->files[f];
    uint64_t lo = tf->first > d->begin ? tf->first : d->begin;
    uint64_t hi = tf->first + tf->n < d->begin + d->n ? tf->first + tf->n : d->begin + d->n;
    *start = lo - d->begin;
    uint64_t m = hi > lo ? hi - lo : 0;
    return m > (uint64_t)T ? (m - 1) / (uint64_t)T : 0;
}

// The next window of the shuffled stream: the set index of its first token; the position moves on.
// The caller makes sure the epoch holds a window (loader_rows > 0).
static uint64_t next_window(Loader *l, int T) {
    const TokenSet *d = l->d;
    StreamPos *p = &l->pos;
    for (;;) {
        if (p->shard >= (uint64_t)d->n_files) { p->epoch++; p->shard = 0; p->offset = 0; }
        int f = (int)permute(p->shard, (uint64_t)d->n_files, epoch_key(l, p->epoch));
        uint64_t start, w = file_windows(d, f, T, &start);
        if (p->offset < w) {
            uint64_t j = permute(p->offset++, w, file_key(l, p->epoch, f));
            return start + j * (uint64_t)T;
        }
        p->shard++;
        p->offset = 0;
    }
}

// ---- batches ------------------------------------------------------------------------------------

uint64_t loader_rows(const Loader *l, int T) {
    if (!l->shuffle) return l->d->n > (uint64_t)T ? (l->d->n - 1) / (uint64_t)T : 0;
    uint64_t rows = 0, start;
    for (int f = 0; f < l->d->n_files; f++) rows += file_windows(l->d, f, T, &start);
    return rows;
}

void loader_check_pos(const Loader *l, int T, const char *what) {
    const StreamPos *p = &l->pos;
    if (!l->shuffle) {
        // an offset past the end is where an old run on other data left off: the next batch wraps
        CHECK(p->shard == 0, "%s: the data position (epoch %llu, shard %llu, offset %llu) is not one of a stream in "
              "order (its shard must be 0); the checkpoint is damaged", what, (unsigned long long)p->epoch,
              (unsigned long long)p->shard, (unsigned long long)p->offset);
        return;
    }
    uint64_t windows = 0, start;
    if (p->shard < (uint64_t)l->d->n_files)
        windows = file_windows(l->d, (int)permute(p->shard, (uint64_t)l->d->n_files, epoch_key(l, p->epoch)), T, &start);
    CHECK(p->shard <= (uint64_t)l->d->n_files && p->offset <= windows, "%s: the data position (epoch %llu, shard %llu, "
          "window %llu) lies outside the shuffled stream of these %d files (%llu windows in that shard); resume with the "
          "data and --seq the run was trained with", what, (unsigned long long)p->epoch, (unsigned long long)p->shard,
          (unsigned long long)p->offset, l->d->n_files, (unsigned long long)windows);
}

// Row r of b from the window that starts at set index `at`: T inputs, T targets, documents.
static void fill_row(const Loader *l, Batch *b, int r, uint64_t at) {
    int T = b->T;
    int *tok = b->tokens + (size_t)r * T, *tgt = b->targets + (size_t)r * T;
    if (l->bos) {                                  // [BOS, w_0 .. w_{T-2}] -> [w_0 .. w_{T-1}]
        int bos = loader_bos_token(l->d);
        CHECK(bos >= 0, "internal: --bos on data without a boundary token (loader_bos_token)");
        data_read(l->d, at, (size_t)T, tgt);
        tok[0] = bos;
        memcpy(tok + 1, tgt, sizeof(int) * (size_t)(T - 1));
        // a window that starts at a boundary token (a document's start in shard data): BOS followed by
        // BOS is no pair of the text, so that one prediction is not trained
        if (tgt[0] == bos) b->weights[(size_t)r * T] = 0;
    } else {
        data_read(l->d, at, (size_t)T, tok);
        memcpy(tgt, tok + 1, sizeof(int) * (size_t)(T - 1));
        data_read(l->d, at + (uint64_t)T, 1, tgt + T - 1);
    }
    if (!l->pack) return;
    int doc = 0, p = 0;
    for (int t = 0; t < T; t++) {
        if (t > 0 && loader_starts_document(tok, t, l->d->eot)) { doc++; p = 0; }
        b->pos[(size_t)r * T + t] = p++;
        b->doc[(size_t)r * T + t] = doc;
    }
}

void loader_next_slice(Loader *l, Batch *b, int rank, int nranks) {
    CHECK(nranks >= 1 && rank >= 0 && rank < nranks, "internal: rank %d of %d", rank, nranks);
    uint64_t rows = (uint64_t)nranks * (uint64_t)b->B, T = (uint64_t)b->T;
    batch_default_positions(b);
    if (l->shuffle) {
        CHECK(loader_rows(l, b->T) > 0, "internal: no window of %d + 1 tokens to shuffle", b->T);
        for (uint64_t i = 0; i < rows; i++) {
            uint64_t at = next_window(l, b->T);
            if (i / (uint64_t)b->B == (uint64_t)rank) fill_row(l, b, (int)(i % (uint64_t)b->B), at);
        }
        return;
    }
    uint64_t need = rows * T + 1;
    CHECK(l->d->n >= need, "internal: %llu tokens cannot fill a batch of %llu x %d", (unsigned long long)l->d->n,
          (unsigned long long)rows, b->T);
    if (l->pos.offset + need > l->d->n) { l->pos.offset = 0; l->pos.epoch++; }
    for (int r = 0; r < b->B; r++) fill_row(l, b, r, l->pos.offset + ((uint64_t)rank * b->B + (uint64_t)r) * T);
    l->pos.offset += rows * T;
}

void loader_next(Loader *l, Batch *b) { loader_next_slice(l, b, 0, 1); }
