// dataset/bpe.c: GPT-2's byte-level BPE (see dataset/bpe.h for the vocabulary layout and the
// encoding rules): hash tables, the vocabulary built from merges, pre-tokenisation and encoding.
// The files (GPT-2's encoder.json and vocab.bpe, the llm.c tokenizer) are read and written in
// dataset/bpe_files.c.
//
// Every reader checks what it reads and exits through CHECK with a sentence naming the file and
// the problem; every writer goes through util/atomicfile.h (PATH.tmp, fsync, rename).
#include "dataset/bpe.h"

#include <errno.h>
#include <sys/stat.h>

#include "util/atomicfile.h"
#include "util/common.h"

// ---- growing arrays and hashes ------------------------------------------------------------------

// Grows *p (elements of `size` bytes, *cap of them) to hold at least `need`.
void bpe_grow(void *p, int64_t *cap, int64_t need, size_t size) {
    if (need <= *cap) return;
    int64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    CHECK((uint64_t)c <= SIZE_MAX / size, "out of memory: an array of %lld elements of %zu bytes", (long long)c, size);
    void *q = realloc(*(void **)p, (size_t)c * size);
    CHECK(q, "out of memory growing an array to %lld elements of %zu bytes", (long long)c, size);
    *(void **)p = q;
    *cap = c;
}

// A 64-bit hash of n bytes (8 at a time, multiply-xorshift mixing). Results never depend on it:
// nothing iterates a table in slot order.
static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

void bytes_map_init(BytesMap *m) {
    memset(m, 0, sizeof *m);
    m->slot_cap = 64;
    m->slot = xcalloc(m->slot_cap, sizeof *m->slot);
}

void bytes_map_free(BytesMap *m) {
    free(m->arena); free(m->off); free(m->len); free(m->hash); free(m->slot);
    memset(m, 0, sizeof *m);
}

int bytes_map_find(const BytesMap *m, const unsigned char *key, size_t len) {
    uint64_t h = hash_bytes(key, len);
    size_t mask = m->slot_cap - 1;
    for (size_t k = (size_t)h & mask;; k = (k + 1) & mask) {
        int32_t s = m->slot[k];
        if (!s) return -1;
        int e = s - 1;
        if (m->hash[e] == h && m->len[e] == len && memcmp(m->arena + m->off[e], key, len) == 0) return e;
    }
}

// Doubles the slot table and places every entry again by its stored hash.
static void bytes_map_rehash(BytesMap *m) {
    free(m->slot);
    m->slot_cap *= 2;
    m->slot = xcalloc(m->slot_cap, sizeof *m->slot);
    size_t mask = m->slot_cap - 1;
    for (int e = 0; e < m->n; e++) {
        size_t k = (size_t)m->hash[e] & mask;
        while (m->slot[k]) k = (k + 1) & mask;
        m->slot[k] = e + 1;
    }
}

int bytes_map_add(BytesMap *m, const unsigned char *key, size_t len, int *added) {
    int e = bytes_map_find(m, key, len);
    if (added) *added = e < 0;
    if (e >= 0) return e;
    CHECK(m->n < INT32_MAX - 1 && len <= UINT32_MAX, "out of memory: a table of more than 2^31 byte strings");
    if (2 * ((size_t)m->n + 1) > m->slot_cap) bytes_map_rehash(m);
    e = m->n++;
    if (m->n > m->entry_cap) {
        int64_t c1 = m->entry_cap, c2 = m->entry_cap, c3 = m->entry_cap;
        bpe_grow(&m->off, &c1, m->n, sizeof *m->off);
        bpe_grow(&m->len, &c2, m->n, sizeof *m->len);
        bpe_grow(&m->hash, &c3, m->n, sizeof *m->hash);
        m->entry_cap = (int)c1;
    }
    int64_t acap = (int64_t)m->arena_cap;
    bpe_grow(&m->arena, &acap, (int64_t)(m->arena_len + len), 1);
    m->arena_cap = (size_t)acap;
    memcpy(m->arena + m->arena_len, key, len);
    m->off[e] = m->arena_len;
    m->len[e] = (uint32_t)len;
    m->hash[e] = hash_bytes(key, len);
    m->arena_len += len;
    size_t mask = m->slot_cap - 1, k = (size_t)m->hash[e] & mask;
    while (m->slot[k]) k = (k + 1) & mask;
    m->slot[k] = e + 1;
    return e;
}

static size_t pair_home(uint32_t key, size_t cap) { return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

void pair_map_init(PairMap *m, size_t expected) {
    m->cap = 64;
    while (m->cap < 2 * expected) m->cap *= 2;
    m->n = 0;
    m->key = xmalloc(m->cap * sizeof *m->key);
    m->val = xmalloc(m->cap * sizeof *m->val);
    memset(m->key, 0xFF, m->cap * sizeof *m->key);   // PAIR_MAP_EMPTY
}

void pair_map_free(PairMap *m) {
    free(m->key); free(m->val);
    memset(m, 0, sizeof *m);
}

int32_t pair_map_get(const PairMap *m, uint32_t left, uint32_t right) {
    uint32_t key = left << 16 | right;
    for (size_t k = pair_home(key, m->cap);; k = (k + 1) & (m->cap - 1)) {
        if (m->key[k] == key) return m->val[k];
        if (m->key[k] == PAIR_MAP_EMPTY) return -1;
    }
}

int32_t *pair_map_slot(PairMap *m, uint32_t left, uint32_t right, int *added) {
    uint32_t key = left << 16 | right;
    if (2 * (m->n + 1) > m->cap) {                   // double and re-place
        PairMap big;
        pair_map_init(&big, m->cap);
        for (size_t k = 0; k < m->cap; k++)
            if (m->key[k] != PAIR_MAP_EMPTY) {
                size_t j = pair_home(m->key[k], big.cap);
                while (big.key[j] != PAIR_MAP_EMPTY) j = (j + 1) & (big.cap - 1);
                big.key[j] = m->key[k];
                big.val[j] = m->val[k];
            }
        big.n = m->n;
        pair_map_free(m);
        *m = big;
    }
    size_t k = pair_home(key, m->cap);
    while (m->key[k] != key && m->key[k] != PAIR_MAP_EMPTY) k = (k + 1) & (m->cap - 1);
    if (added) *added = m->key[k] == PAIR_MAP_EMPTY;
    if (m->key[k] == PAIR_MAP_EMPTY) { m->key[k] = key; m->val[k] = -1; m->n++; }
    return &m->val[k];
}

void id_list_push(IdList *l, int id) {
    if (l->n == l->cap) {
        int64_t c = (int64_t)l->cap;
        bpe_grow(&l->id, &c, (int64_t)l->n + 1, sizeof *l->id);
        l->cap = (size_t)c;
    }
    l->id[l->n++] = id;
}

void id_list_free(IdList *l) {
    free(l->id);
    memset(l, 0, sizeof *l);
}

unsigned char *bpe_read_file(const char *path, const char *what, size_t *len) {
    FILE *f = fopen(path, "rb");
    int err = errno;
    CHECK(f, "cannot open the %s %s: %s; check the path and its permissions", what, path, strerror(err));
    struct stat st;
    CHECK(fstat(fileno(f), &st) == 0 && !S_ISDIR(st.st_mode), "the %s %s is a folder, not a file; name the files in it",
          what, path);
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = xmalloc(cap + 1);
    for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            CHECK(cap <= SIZE_MAX / 4, "the %s %s is too large to read into memory", what, path);
            cap *= 2;
            unsigned char *q = realloc(buf, cap + 1);
            CHECK(q, "out of memory reading the %s %s (%zu bytes so far)", what, path, n);
            buf = q;
        }
    }
    err = errno;
    int bad = ferror(f);
    fclose(f);
    CHECK(!bad, "error while reading the %s %s: %s", what, path, strerror(err));
    buf[n] = 0;
    *len = n;
    return buf;
}

// ---- the vocabulary -------------------------------------------------------------------------------

// token t's bytes as encoder.json writes them (each byte as its bytes_to_unicode character, UTF-8),
// cut with "..." past 120 bytes, for messages
const char *bpe_token_text(const unsigned char *b, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        if (o > 120) { memcpy(buf + o, "...", 3); o += 3; break; }
        int c = bpe_char_of_byte(b[i]);
        if (c < 0x80) buf[o++] = (char)c;
        else { buf[o++] = (char)(0xC0 | c >> 6); buf[o++] = (char)(0x80 | (c & 0x3F)); }
    }
    buf[o] = 0;
    return buf;
}

// Adds token t's pairs: every split of its bytes into two tokens (a, b) gets (a, b) -> t. Only
// tokens' pairs can meet during a merge (every part is a token), so this table answers tiktoken's
// question "is the concatenation a token, and of which rank" for all of them.
static void add_pairs_of(Bpe *b, int t) {
    size_t n;
    const unsigned char *s = bpe_token(b, t, &n);
    for (size_t k = 1; k < n; k++) {
        int left = bytes_map_find(&b->tokens, s, k), right = bytes_map_find(&b->tokens, s + k, n - k);
        if (left >= 0 && right >= 0) *pair_map_slot(&b->pairs, (uint32_t)left, (uint32_t)right, NULL) = t;
    }
}

void bpe_from_merges(Bpe *b, const uint16_t *merge, int n_merges, const char *what) {
    CHECK(n_merges >= 0 && n_merges <= BPE_MAX_VOCAB - 257, "%s has %d merges; a vocabulary of at most %d tokens "
          "(ids in uint16 shards) holds at most %d", what, n_merges, BPE_MAX_VOCAB, BPE_MAX_VOCAB - 257);
    memset(b, 0, sizeof *b);
    b->n_merges = n_merges;
    b->n_tokens = 257 + n_merges;
    b->eot = b->n_tokens - 1;
    b->merge = xmalloc(2 * (size_t)(n_merges ? n_merges : 1) * sizeof *b->merge);
    if (n_merges) memcpy(b->merge, merge, 2 * (size_t)n_merges * sizeof *b->merge);
    bytes_map_init(&b->tokens);
    for (int i = 0; i < 256; i++) {
        unsigned char c = (unsigned char)bpe_byte_of_id(i);
        bytes_map_add(&b->tokens, &c, 1, NULL);
    }
    unsigned char buf[2 * BPE_MAX_TOKEN_BYTES];
    char t1[200], t2[200];
    for (int m = 0; m < n_merges; m++) {
        int l = merge[2 * m], r = merge[2 * m + 1], t = 256 + m;
        CHECK(l < t && r < t, "%s: merge %d joins ids %d and %d, but only ids below %d exist before it", what, m, l, r, t);
        size_t nl, nr;
        const unsigned char *sl = bpe_token(b, l, &nl), *sr = bpe_token(b, r, &nr);
        CHECK(nl + nr <= BPE_MAX_TOKEN_BYTES, "%s: merge %d ('%s' + '%s') makes a token of %zu bytes; the llm.c "
              "tokenizer file holds at most %d", what, m, bpe_token_text(sl, nl, t1, sizeof t1), bpe_token_text(sr, nr, t2, sizeof t2),
              nl + nr, BPE_MAX_TOKEN_BYTES);
        memcpy(buf, sl, nl);
        memcpy(buf + nl, sr, nr);
        int added;
        int e = bytes_map_add(&b->tokens, buf, nl + nr, &added);
        CHECK(added, "%s: merge %d makes '%s', which is already token %d; a vocabulary holds each byte string once",
              what, m, bpe_token_text(buf, nl + nr, t1, sizeof t1), e);
    }
    pair_map_init(&b->pairs, (size_t)b->n_tokens * 2);
    for (int t = 256; t < b->eot; t++) add_pairs_of(b, t);
}

void bpe_free(Bpe *b) {
    free(b->merge);
    bytes_map_free(&b->tokens);
    pair_map_free(&b->pairs);
    memset(b, 0, sizeof *b);
}

// ---- pre-tokenisation ---------------------------------------------------------------------------

// ASCII by table: letters, digits, and the White_Space characters \t \n \v \f \r and space
static const unsigned char ASCII_CLASS[128] = {
    ['\t'] = CH_SPACE, ['\n'] = CH_SPACE, ['\v'] = CH_SPACE, ['\f'] = CH_SPACE, ['\r'] = CH_SPACE, [' '] = CH_SPACE,
    ['0'] = CH_NUMBER, ['1'] = CH_NUMBER, ['2'] = CH_NUMBER, ['3'] = CH_NUMBER, ['4'] = CH_NUMBER,
    ['5'] = CH_NUMBER, ['6'] = CH_NUMBER, ['7'] = CH_NUMBER, ['8'] = CH_NUMBER, ['9'] = CH_NUMBER,
    ['A'] = CH_LETTER, ['B'] = CH_LETTER, ['C'] = CH_LETTER, ['D'] = CH_LETTER, ['E'] = CH_LETTER, ['F'] = CH_LETTER,
    ['G'] = CH_LETTER, ['H'] = CH_LETTER, ['I'] = CH_LETTER, ['J'] = CH_LETTER, ['K'] = CH_LETTER, ['L'] = CH_LETTER,
    ['M'] = CH_LETTER, ['N'] = CH_LETTER, ['O'] = CH_LETTER, ['P'] = CH_LETTER, ['Q'] = CH_LETTER, ['R'] = CH_LETTER,
    ['S'] = CH_LETTER, ['T'] = CH_LETTER, ['U'] = CH_LETTER, ['V'] = CH_LETTER, ['W'] = CH_LETTER, ['X'] = CH_LETTER,
    ['Y'] = CH_LETTER, ['Z'] = CH_LETTER,
    ['a'] = CH_LETTER, ['b'] = CH_LETTER, ['c'] = CH_LETTER, ['d'] = CH_LETTER, ['e'] = CH_LETTER, ['f'] = CH_LETTER,
    ['g'] = CH_LETTER, ['h'] = CH_LETTER, ['i'] = CH_LETTER, ['j'] = CH_LETTER, ['k'] = CH_LETTER, ['l'] = CH_LETTER,
    ['m'] = CH_LETTER, ['n'] = CH_LETTER, ['o'] = CH_LETTER, ['p'] = CH_LETTER, ['q'] = CH_LETTER, ['r'] = CH_LETTER,
    ['s'] = CH_LETTER, ['t'] = CH_LETTER, ['u'] = CH_LETTER, ['v'] = CH_LETTER, ['w'] = CH_LETTER, ['x'] = CH_LETTER,
    ['y'] = CH_LETTER, ['z'] = CH_LETTER,
};

CharClass unicode_class(uint32_t cp) {
    if (cp < 128) return (CharClass)ASCII_CLASS[cp];
    int lo = 0, hi = UNICODE_CLASS_RANGE_COUNT - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < UNICODE_CLASS_RANGES[mid].lo) hi = mid - 1;
        else if (cp > UNICODE_CLASS_RANGES[mid].hi) lo = mid + 1;
        else return UNICODE_CLASS_RANGES[mid].cls;
    }
    return CH_OTHER;
}

// The class of the character at s[i] (i < n) and its length in bytes; a byte that does not start
// valid UTF-8 is one character of class CH_OTHER (see bpe.h).
static inline CharClass char_at(const unsigned char *s, size_t n, size_t i, size_t *len) {
    if (s[i] < 0x80) { *len = 1; return (CharClass)ASCII_CLASS[s[i]]; }
    size_t j = i;
    int64_t cp = bpe_utf8_char(s, n, &j);
    if (cp < 0) { *len = 1; return CH_OTHER; }
    *len = j - i;
    return unicode_class((uint32_t)cp);
}

// The end of the run of class c that continues at s[j]
static size_t run_end(const unsigned char *s, size_t n, size_t j, CharClass c) {
    size_t len;
    while (j < n && char_at(s, n, j, &len) == c) j += len;
    return j;
}

// The pattern's alternatives in order; the first that matches at i makes the piece.
size_t bpe_piece_end(const unsigned char *s, size_t n, size_t i) {
    // 's 't 're 've 'm 'll 'd (lower case, the ASCII apostrophe only)
    if (s[i] == '\'' && i + 1 < n) {
        unsigned char a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': one optional space (U+0020), then a run of one class
    size_t len;
    CharClass c = char_at(s, n, i, &len);
    if (s[i] == ' ' && i + 1 < n) {
        size_t len1;
        CharClass c1 = char_at(s, n, i + 1, &len1);
        if (c1 != CH_SPACE) return run_end(s, n, i + 1 + len1, c1);
    }
    if (c != CH_SPACE) return run_end(s, n, i + len, c);
    // '\s+(?!\S)', then '\s+': a run of white space, all of it at the end of the text; before anything
    // else, all but its last character (which then starts the next piece: ' ' joins the word after
    // it), unless the run is that one character
    size_t last = i, j = i + len;
    while (j < n && char_at(s, n, j, &len) == CH_SPACE) { last = j; j += len; }
    return j == n || last == i ? j : last;
}

// ---- encoding -----------------------------------------------------------------------------------

void bpe_encoder_init(BpeEncoder *e, const Bpe *b) {
    memset(e, 0, sizeof *e);
    e->bpe = b;
}

void bpe_encoder_free(BpeEncoder *e) {
    free(e->part); free(e->next); free(e->prev); free(e->rank); free(e->heap);
    memset(e, 0, sizeof *e);
}

static void reserve(BpeEncoder *e, size_t n) {
    if (n <= e->cap) return;
    size_t c = e->cap ? e->cap : 64;
    while (c < n) c *= 2;
    CHECK(n < INT32_MAX, "a piece of %zu bytes (one run of letters, digits, symbols or spaces) is longer than the "
          "encoder handles (2^31 bytes)", n);
    free(e->part); free(e->next); free(e->prev); free(e->rank); free(e->heap);
    e->part = xmalloc(c * sizeof *e->part);
    e->next = xmalloc(c * sizeof *e->next);
    e->prev = xmalloc(c * sizeof *e->prev);
    e->rank = xmalloc(c * sizeof *e->rank);
    // The heap holds stale entries until they reach the top: n - 1 pairs queued at the start, and
    // each merge pops one entry and queues at most two, a net gain of one, over at most n - 1
    // merges. So it holds at most 2n - 2 entries, more than n when most adjacent pairs are tokens
    // (a run of digits in GPT-2's vocabulary).
    e->heap = xmalloc(2 * c * sizeof *e->heap);
    e->cap = c;
}

// A binary min-heap of uint64 keys in h[0..*n), room for cap
static void heap_push(uint64_t *h, size_t *n, size_t cap, uint64_t key) {
    CHECK(*n < cap, "bpe: the merge heap is full (%zu entries): a bug in the bound above reserve's allocation", cap);
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > key) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = key;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

// The part at i and its right neighbour: the token they make (its id is the merge's rank), queued.
static void queue_pair(BpeEncoder *e, size_t n, int32_t i, size_t *heap_n) {
    int32_t j = e->next[i];
    e->rank[i] = (size_t)j < n ? pair_map_get(&e->bpe->pairs, (uint32_t)e->part[i], (uint32_t)e->part[j]) : -1;
    if (e->rank[i] >= 0) heap_push(e->heap, heap_n, 2 * e->cap, (uint64_t)e->rank[i] << 32 | (uint32_t)i);
}

// tiktoken's merge loop for a piece of n >= 2 bytes, with the parts as a linked list over their
// start bytes and the candidate merges in a heap ordered by (rank, start): the smallest rank,
// leftmost on a tie, in O(n log n) (tiktoken rescans all pairs after each merge, O(n^2)). A heap
// entry is stale when its part has been absorbed or its rank changed; rank[i] is always current.
static void merge_piece(BpeEncoder *e, const unsigned char *p, size_t n, IdList *out) {
    reserve(e, n);
    for (size_t i = 0; i < n; i++) {
        e->part[i] = bpe_id_of_byte(p[i]);
        e->next[i] = (int32_t)i + 1;
        e->prev[i] = (int32_t)i - 1;
    }
    size_t heap_n = 0;
    for (size_t i = 0; i + 1 < n; i++) queue_pair(e, n, (int32_t)i, &heap_n);
    while (heap_n) {
        uint64_t top = heap_pop(e->heap, &heap_n);
        int32_t i = (int32_t)(uint32_t)top, rank = (int32_t)(top >> 32);
        if (e->part[i] < 0 || e->rank[i] != rank) continue;      // stale
        int32_t j = e->next[i];                                    // absorb the right neighbour
        e->part[i] = rank;
        e->part[j] = -1;
        e->next[i] = e->next[j];
        if ((size_t)e->next[j] < n) e->prev[e->next[j]] = i;
        queue_pair(e, n, i, &heap_n);
        if (e->prev[i] >= 0) queue_pair(e, n, e->prev[i], &heap_n);
    }
    for (size_t i = 0; i < n; i = (size_t)e->next[i]) id_list_push(out, e->part[i]);
}

void bpe_encode_piece(BpeEncoder *e, const unsigned char *piece, size_t n, IdList *out) {
    if (n == 1) { id_list_push(out, bpe_id_of_byte(piece[0])); return; }
    int t = bytes_map_find(&e->bpe->tokens, piece, n);
    if (t >= 0) id_list_push(out, t);
    else merge_piece(e, piece, n, out);
}

void bpe_encode(BpeEncoder *e, const unsigned char *text, size_t n, IdList *out) {
    for (size_t i = 0; i < n;) {
        size_t j = bpe_piece_end(text, n, i);
        bpe_encode_piece(e, text + i, j - i, out);
        i = j;
    }
}
