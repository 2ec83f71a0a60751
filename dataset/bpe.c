// dataset/bpe.c: GPT-2's byte-level BPE (see dataset/bpe.h for the vocabulary layout and the
// encoding rules): hash tables, the vocabulary built from merges, GPT-2's encoder.json and vocab.bpe
// (readers and writers), the llm.c tokenizer writer, pre-tokenisation and encoding.
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
static void grow(void *p, int64_t *cap, int64_t need, size_t size) {
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
        grow(&m->off, &c1, m->n, sizeof *m->off);
        grow(&m->len, &c2, m->n, sizeof *m->len);
        grow(&m->hash, &c3, m->n, sizeof *m->hash);
        m->entry_cap = (int)c1;
    }
    int64_t acap = (int64_t)m->arena_cap;
    grow(&m->arena, &acap, (int64_t)(m->arena_len + len), 1);
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
        grow(&l->id, &c, (int64_t)l->n + 1, sizeof *l->id);
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
static const char *token_text(const unsigned char *b, size_t n, char *buf, size_t cap) {
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
              "tokenizer file holds at most %d", what, m, token_text(sl, nl, t1, sizeof t1), token_text(sr, nr, t2, sizeof t2),
              nl + nr, BPE_MAX_TOKEN_BYTES);
        memcpy(buf, sl, nl);
        memcpy(buf + nl, sr, nr);
        int added;
        int e = bytes_map_add(&b->tokens, buf, nl + nr, &added);
        CHECK(added, "%s: merge %d makes '%s', which is already token %d; a vocabulary holds each byte string once",
              what, m, token_text(buf, nl + nr, t1, sizeof t1), e);
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

// ---- reading GPT-2's files --------------------------------------------------------------------

// A character of GPT-2's byte alphabet -> its byte, or -1 for any other code point.
static int byte_of_char(uint32_t c) {
    if ((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)) return (int)c;
    if (c >= 0x100 && c <= 0x143) return bpe_byte_of_id(188 + (int)(c - 0x100));
    return -1;
}

// Decodes one UTF-8 character at s[*i] (i < n), advancing *i; -1 when the bytes are not UTF-8.
static int64_t utf8_char(const unsigned char *s, size_t n, size_t *i) {
    unsigned c = s[*i];
    int k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!k || *i + (size_t)k > n) return -1;
    uint32_t cp = k == 1 ? c : c & (0x7F >> k);
    for (int j = 1; j < k; j++) {
        unsigned d = s[*i + (size_t)j];
        unsigned lo = 0x80, hi = 0xBF;
        if (j == 1) {          // no overlong forms, no surrogates, nothing past U+10FFFF
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        }
        if (d < lo || d > hi) return -1;
        cp = cp << 6 | (d & 0x3F);
    }
    *i += (size_t)k;
    return cp;
}

// Text in GPT-2's byte alphabet (a key of encoder.json, a part of a merge line) -> its bytes in
// out (at most cap); the length, or -1 with *bad the offending code point (-2: not UTF-8).
static long alphabet_to_bytes(const unsigned char *s, size_t n, unsigned char *out, size_t cap, int64_t *bad) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int64_t c = utf8_char(s, n, &i);
        int byte = c < 0 ? -1 : byte_of_char((uint32_t)c);
        if (byte < 0) { *bad = c < 0 ? -2 : c; return -1; }
        if (o == cap) { *bad = -3; return -1; }
        out[o++] = (unsigned char)byte;
    }
    return (long)o;
}

// encoder.json as read: every key's bytes (entry e of `keys`), its id, and the end of text's id.
typedef struct {
    BytesMap keys;
    int *id;                   // (keys.n,)
    int64_t id_cap;
    int eot;                   // the id of "<|endoftext|>", -1 when absent
    const char *path;
} EncoderJson;

typedef struct {
    const unsigned char *s;
    size_t n, i;
    const char *path;
} Json;

static void json_ws(Json *j) {
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r')) j->i++;
}

static void json_expect(Json *j, char c, const char *where) {
    json_ws(j);
    CHECK(j->i < j->n && j->s[j->i] == (unsigned char)c, "encoder file %s is not GPT-2's encoder.json: expected '%c' %s "
          "at byte %zu, found %s; the file is damaged or of another kind", j->path, c, where, j->i,
          j->i < j->n ? "another character" : "the end of the file");
    j->i++;
}

static unsigned json_hex4(Json *j) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++, j->i++) {
        int c = j->i < j->n ? j->s[j->i] : -1;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        CHECK(d >= 0, "encoder file %s: a \\u escape at byte %zu needs four hex digits", j->path, j->i);
        v = v << 4 | (unsigned)d;
    }
    return v;
}

static size_t put_utf8(unsigned char *o, uint32_t c) {
    if (c < 0x80) { o[0] = (unsigned char)c; return 1; }
    if (c < 0x800) { o[0] = (unsigned char)(0xC0 | c >> 6); o[1] = (unsigned char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | c >> 12); o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | c >> 18); o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

// A JSON string at j->i (after json_ws), unescaped into out as UTF-8 (at most cap bytes); its length.
static size_t json_string(Json *j, unsigned char *out, size_t cap) {
    json_expect(j, '"', "to start a key");
    size_t start = j->i - 1, o = 0;
    for (;;) {
        CHECK(j->i < j->n, "encoder file %s: the string that starts at byte %zu is not closed", j->path, start);
        CHECK(o + 4 <= cap, "encoder file %s: the key at byte %zu is longer than any token (%d bytes) can be written",
              j->path, start, BPE_MAX_TOKEN_BYTES);
        unsigned c = j->s[j->i++];
        if (c == '"') return o;
        CHECK(c >= 0x20, "encoder file %s: a raw control character (0x%02x) inside the string at byte %zu; JSON "
              "writes it as an escape", j->path, c, start);
        if (c != '\\') { out[o++] = (unsigned char)c; continue; }
        CHECK(j->i < j->n, "encoder file %s: the string that starts at byte %zu ends in a backslash", j->path, start);
        c = j->s[j->i++];
        const char *simple = strchr("\"\\/bfnrt", (int)c);
        if (simple && c) { out[o++] = (unsigned char)"\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]; continue; }
        CHECK(c == 'u', "encoder file %s: unknown escape '\\%c' in the string at byte %zu", j->path, c, start);
        uint32_t cp = json_hex4(j);
        if (cp >= 0xD800 && cp <= 0xDBFF) {          // a surrogate pair
            CHECK(j->i + 1 < j->n && j->s[j->i] == '\\' && j->s[j->i + 1] == 'u',
                  "encoder file %s: a lone high surrogate \\u%04X in the string at byte %zu", j->path, cp, start);
            j->i += 2;
            uint32_t lo = json_hex4(j);
            CHECK(lo >= 0xDC00 && lo <= 0xDFFF, "encoder file %s: \\u%04X is not followed by a low surrogate in the "
                  "string at byte %zu", j->path, cp, start);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else {
            CHECK(cp < 0xDC00 || cp > 0xDFFF, "encoder file %s: a lone low surrogate \\u%04X in the string at byte %zu",
                  j->path, cp, start);
        }
        o += put_utf8(out + o, cp);
    }
}

// A JSON integer (no fraction, no exponent) in [0, 65535].
static int json_id(Json *j, const char *key) {
    json_ws(j);
    size_t start = j->i;
    int neg = j->i < j->n && j->s[j->i] == '-';
    if (neg) j->i++;
    int64_t v = 0;
    size_t digits = 0;
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9' && digits < 12) { v = 10 * v + (j->s[j->i++] - '0'); digits++; }
    CHECK(digits > 0, "encoder file %s: the value of key '%s' at byte %zu is not a number; encoder.json maps each "
          "token to its integer id", j->path, key, start);
    CHECK(j->i >= j->n || !strchr(".eE0123456789", j->s[j->i]), "encoder file %s: the id of key '%s' at byte %zu is not "
          "an integer of at most 11 digits", j->path, key, start);
    CHECK(!neg, "encoder file %s: key '%s' has the negative id -%lld; ids start at 0", j->path, key, (long long)v);
    CHECK(v < BPE_MAX_VOCAB, "encoder file %s: key '%s' has id %lld, which does not fit the uint16 token shards "
          "(ids must be below %d)", j->path, key, (long long)v, BPE_MAX_VOCAB);
    return (int)v;
}

// Reads encoder.json: a JSON object of key -> id. Duplicate keys and duplicate ids are refused.
static void read_encoder_json(EncoderJson *ej, const char *path) {
    size_t n;
    unsigned char *text = bpe_read_file(path, "encoder file", &n);
    memset(ej, 0, sizeof *ej);
    bytes_map_init(&ej->keys);
    ej->eot = -1;
    ej->path = path;
    int *key_of_id = xmalloc(BPE_MAX_VOCAB * sizeof *key_of_id);   // entry with that id, -1 none, -2 the end of text
    for (int i = 0; i < BPE_MAX_VOCAB; i++) key_of_id[i] = -1;
    Json j = { text, n, 0, path };
    json_expect(&j, '{', "at the start");
    json_ws(&j);
    int first = 1;
    while (!(j.i < j.n && j.s[j.i] == '}')) {
        if (!first) json_expect(&j, ',', "between entries");
        first = 0;
        unsigned char key[4 * BPE_MAX_TOKEN_BYTES + 8], bytes[BPE_MAX_TOKEN_BYTES + 1];
        size_t start = (json_ws(&j), j.i);
        size_t klen = json_string(&j, key, sizeof key - 1);
        key[klen] = 0;
        json_expect(&j, ':', "after a key");
        int id = json_id(&j, (const char *)key);
        json_ws(&j);
        char other[200];
        int prev = key_of_id[id];
        if (klen == strlen(BPE_EOT_TEXT) && memcmp(key, BPE_EOT_TEXT, klen) == 0) {
            CHECK(ej->eot < 0, "encoder file %s: the key \"%s\" appears twice (again at byte %zu)", path, BPE_EOT_TEXT, start);
            CHECK(prev == -1, "encoder file %s: id %d is given twice, to '%s' and to \"%s\"; each token needs its own id",
                  path, id, token_text(ej->keys.arena + ej->keys.off[prev], ej->keys.len[prev], other, sizeof other), BPE_EOT_TEXT);
            ej->eot = id;
            key_of_id[id] = -2;
            continue;
        }
        int64_t bad = 0;
        long blen = alphabet_to_bytes(key, klen, bytes, sizeof bytes - 1, &bad);
        CHECK(blen >= 0 || bad != -2, "encoder file %s: the key at byte %zu is not valid UTF-8", path, start);
        CHECK(blen >= 0 || bad != -3, "encoder file %s: the key at byte %zu is longer than %d bytes", path, start,
              BPE_MAX_TOKEN_BYTES);
        CHECK(blen >= 0, "encoder file %s: the key '%s' at byte %zu has the character U+%04llX, which is not one of "
              "GPT-2's 256 byte characters (bytes_to_unicode)", path, key, start, (unsigned long long)bad);
        CHECK(blen > 0, "encoder file %s: an empty key at byte %zu; every token has at least one byte", path, start);
        int added;
        int e = bytes_map_add(&ej->keys, bytes, (size_t)blen, &added);
        CHECK(added, "encoder file %s: the key '%s' appears twice (again at byte %zu)", path, key, start);
        CHECK(prev == -1, "encoder file %s: id %d is given twice, to '%s' and to '%s'; each token needs its own id", path,
              id, prev == -2 ? BPE_EOT_TEXT : token_text(ej->keys.arena + ej->keys.off[prev], ej->keys.len[prev], other,
              sizeof other), key);
        key_of_id[id] = e;
        grow(&ej->id, &ej->id_cap, e + 1, sizeof *ej->id);
        ej->id[e] = id;
    }
    j.i++;
    json_ws(&j);
    CHECK(j.i == j.n, "encoder file %s: more text after the closing '}' at byte %zu; the file holds one JSON object",
          path, j.i);
    free(key_of_id);
    free(text);
}

// Reads vocab.bpe into merge ids: each line "LEFT RIGHT" names two tokens made before it (bytes or
// earlier lines), in GPT-2's byte alphabet. *tokens collects the vocabulary the lines build, in id
// order; `enc` answers whether a part missing from it is in encoder.json at all (for the message).
static uint16_t *read_merges(const char *path, const EncoderJson *enc, BytesMap *tokens, int *n_merges) {
    size_t n;
    unsigned char *text = bpe_read_file(path, "merges file", &n);
    bytes_map_init(tokens);
    for (int i = 0; i < 256; i++) {
        unsigned char c = (unsigned char)bpe_byte_of_id(i);
        bytes_map_add(tokens, &c, 1, NULL);
    }
    uint16_t *merge = NULL;
    int64_t cap = 0;
    int m = 0;
    size_t i = 0, line = 1;
    if (n >= 8 && memcmp(text, "#version", 8) == 0) {           // GPT-2's first line, "#version: 0.2"
        while (i < n && text[i] != '\n') i++;
        i++;
        line++;
    }
    char t1[200];
    for (; i < n; line++) {
        unsigned char *end = memchr(text + i, '\n', n - i);
        size_t e = end ? (size_t)(end - text) : n;
        unsigned char *sp = memchr(text + i, ' ', e - i);
        CHECK(e > i, "merges file %s: line %zu is empty; vocab.bpe has one merge \"LEFT RIGHT\" per line", path, line);
        CHECK(sp && sp > text + i && sp + 1 < text + e && !memchr(sp + 1, ' ', (size_t)(text + e - sp - 1)),
              "merges file %s: line %zu is not two tokens separated by one space (\"LEFT RIGHT\")", path, line);
        CHECK(m < BPE_MAX_VOCAB - 257, "merges file %s has more than %d merges; ids would not fit uint16 shards", path,
              BPE_MAX_VOCAB - 257);
        unsigned char part[2][BPE_MAX_TOKEN_BYTES + 1];
        long plen[2];
        int id[2];
        const unsigned char *ps[2] = { text + i, sp + 1 };
        size_t pn[2] = { (size_t)(sp - (text + i)), (size_t)(text + e - sp - 1) };
        for (int k = 0; k < 2; k++) {
            int64_t bad = 0;
            plen[k] = alphabet_to_bytes(ps[k], pn[k], part[k], BPE_MAX_TOKEN_BYTES, &bad);
            CHECK(plen[k] >= 0, "merges file %s: line %zu: %s", path, line, bad == -2 ? "not valid UTF-8"
                  : bad == -3 ? "a part is longer than any token can be" : "a character that is not one of GPT-2's 256 byte "
                  "characters (bytes_to_unicode)");
            id[k] = bytes_map_find(tokens, part[k], (size_t)plen[k]);
            CHECK(id[k] >= 0 || bytes_map_find(&enc->keys, part[k], (size_t)plen[k]) >= 0,
                  "merges file %s: line %zu merges '%s', which is not in the encoder file %s; the two files do not "
                  "belong together", path, line, token_text(part[k], (size_t)plen[k], t1, sizeof t1), enc->path);
            CHECK(id[k] >= 0, "merges file %s: line %zu merges '%s' before any earlier line makes it; merges must come "
                  "in rank order", path, line, token_text(part[k], (size_t)plen[k], t1, sizeof t1));
        }
        CHECK(plen[0] + plen[1] <= BPE_MAX_TOKEN_BYTES, "merges file %s: line %zu makes a token of %ld bytes; at most %d "
              "fit the llm.c tokenizer file", path, line, plen[0] + plen[1], BPE_MAX_TOKEN_BYTES);
        unsigned char joined[2 * BPE_MAX_TOKEN_BYTES];
        memcpy(joined, part[0], (size_t)plen[0]);
        memcpy(joined + plen[0], part[1], (size_t)plen[1]);
        int added;
        int t = bytes_map_add(tokens, joined, (size_t)(plen[0] + plen[1]), &added);
        CHECK(added, "merges file %s: line %zu makes '%s', which an earlier line (or a byte) already made as id %d",
              path, line, token_text(joined, (size_t)(plen[0] + plen[1]), t1, sizeof t1), t);
        grow(&merge, &cap, 2 * (int64_t)(m + 1), sizeof *merge);
        merge[2 * m] = (uint16_t)id[0];
        merge[2 * m + 1] = (uint16_t)id[1];
        m++;
        i = e + 1;
    }
    free(text);
    *n_merges = m;
    return merge;
}

void bpe_load(Bpe *b, const char *encoder_path, const char *merges_path) {
    CHECK(encoder_path && merges_path && b, "bpe_load needs the two file paths and an output (got NULL)");
    EncoderJson enc;
    read_encoder_json(&enc, encoder_path);
    BytesMap built;
    int n_merges;
    uint16_t *merge = read_merges(merges_path, &enc, &built, &n_merges);
    // every token the merges build is in encoder.json at the id of its rank
    char t1[200];
    for (int t = 0; t < built.n; t++) {
        size_t len;
        const unsigned char *s = bytes_map_key(&built, t, &len);
        int e = bytes_map_find(&enc.keys, s, len);
        if (t < 256) {
            CHECK(e >= 0, "encoder file %s lacks byte 0x%02x ('%s'); it must list all 256 bytes", encoder_path, s[0],
                  token_text(s, len, t1, sizeof t1));
            CHECK(enc.id[e] == t, "encoder file %s gives byte 0x%02x ('%s') id %d, but GPT-2's byte order "
                  "(bytes_to_unicode) gives it %d", encoder_path, s[0], token_text(s, len, t1, sizeof t1), enc.id[e], t);
        } else {
            CHECK(e >= 0, "encoder file %s lacks '%s', which merge %d of %s makes; the two files do not belong together",
                  encoder_path, token_text(s, len, t1, sizeof t1), t - 256, merges_path);
            CHECK(enc.id[e] == t, "encoder file %s gives '%s' id %d, but it is merge %d of %s, so its id (rank) is %d; "
                  "the two files do not belong together", encoder_path, token_text(s, len, t1, sizeof t1), enc.id[e],
                  t - 256, merges_path, t);
        }
    }
    for (int e = 0; e < enc.keys.n; e++) {
        size_t len;
        const unsigned char *s = bytes_map_key(&enc.keys, e, &len);
        CHECK(bytes_map_find(&built, s, len) >= 0, "encoder file %s has '%s' (id %d), which neither a byte nor a merge of "
              "%s makes; the two files do not belong together", encoder_path, token_text(s, len, t1, sizeof t1),
              enc.id[e], merges_path);
    }
    CHECK(enc.eot >= 0, "encoder file %s has no \"%s\" entry (the end of text, id %d after the merges)", encoder_path,
          BPE_EOT_TEXT, built.n);
    CHECK(enc.eot == built.n, "encoder file %s gives \"%s\" id %d, but it must come right after the last merge, id %d",
          encoder_path, BPE_EOT_TEXT, enc.eot, built.n);
    bytes_map_free(&built);
    bytes_map_free(&enc.keys);
    free(enc.id);
    bpe_from_merges(b, merge, n_merges, merges_path);
    free(merge);
}

// ---- writing the files ------------------------------------------------------------------------------

void bpe_write_encoder_json(const Bpe *b, const char *path) {
    AtomicFile af;
    FILE *f = af_open(&af, path, "encoder file", "wb");
    fputc('{', f);
    for (int t = 0; t < b->eot; t++) {
        size_t n;
        const unsigned char *s = bpe_token(b, t, &n);
        fputs(t ? ", \"" : "\"", f);
        for (size_t i = 0; i < n; i++) {        // Python's json.dumps: \" and \\, \u00xx beyond ASCII
            int c = bpe_char_of_byte(s[i]);
            if (c == '"' || c == '\\') { fputc('\\', f); fputc(c, f); }
            else if (c < 0x80) fputc(c, f);
            else fprintf(f, "\\u%04x", (unsigned)c);
        }
        fprintf(f, "\": %d", t);
    }
    fprintf(f, "%s\"%s\": %d}", b->eot ? ", " : "", BPE_EOT_TEXT, b->eot);
    af_commit(&af);
}

void bpe_write_merges(const Bpe *b, const char *path) {
    AtomicFile af;
    FILE *f = af_open(&af, path, "merges file", "wb");
    fputs("#version: 0.2\n", f);
    for (int m = 0; m < b->n_merges; m++)
        for (int k = 0; k < 2; k++) {
            size_t n;
            const unsigned char *s = bpe_token(b, b->merge[2 * m + k], &n);
            for (size_t i = 0; i < n; i++) {
                unsigned char u[4];
                fwrite(u, 1, put_utf8(u, (uint32_t)bpe_char_of_byte(s[i])), f);
            }
            fputc(k ? '\n' : ' ', f);
        }
    af_commit(&af);
}

void bpe_write_llmc_tokenizer(const Bpe *b, const char *path) {
    AtomicFile af;
    af_open(&af, path, "tokenizer file", "wb");
    unsigned char h[1024] = { 0 };
    int32_t head[4] = { 20240328, 2, b->n_tokens, b->eot };
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++) h[4 * k + j] = (unsigned char)((uint32_t)head[k] >> (8 * j));
    af_write(&af, h, sizeof h);
    for (int t = 0; t < b->n_tokens; t++) {
        size_t n = strlen(BPE_EOT_TEXT);
        const unsigned char *s = t == b->eot ? (const unsigned char *)BPE_EOT_TEXT : bpe_token(b, t, &n);
        unsigned char len = (unsigned char)n;   // n <= BPE_MAX_TOKEN_BYTES (bpe_from_merges)
        af_write(&af, &len, 1);
        af_write(&af, s, n);
    }
    af_commit(&af);
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
    int64_t cp = utf8_char(s, n, &j);
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
