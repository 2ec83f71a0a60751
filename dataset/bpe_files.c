// dataset/bpe_files.c: GPT-2's BPE files (dataset/bpe.h): reading encoder.json and vocab.bpe into a
// vocabulary (bpe_load), and writing a vocabulary as encoder.json, vocab.bpe and the llm.c tokenizer
// file. Every reader checks what it reads and exits through CHECK with a sentence naming the file and
// the problem; every writer goes through util/atomicfile.h (PATH.tmp, fsync, rename).
#include "dataset/bpe.h"

#include <errno.h>
#include <string.h>

#include "util/atomicfile.h"
#include "util/common.h"
// ---- reading GPT-2's files --------------------------------------------------------------------

// A character of GPT-2's byte alphabet -> its byte, or -1 for any other code point.
static int byte_of_char(uint32_t c) {
    if ((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)) return (int)c;
    if (c >= 0x100 && c <= 0x143) return bpe_byte_of_id(188 + (int)(c - 0x100));
    return -1;
}

// Decodes one UTF-8 character at s[*i] (i < n), advancing *i; -1 when the bytes are not UTF-8.
int64_t bpe_utf8_char(const unsigned char *s, size_t n, size_t *i) {
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
        int64_t c = bpe_utf8_char(s, n, &i);
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
                  path, id, bpe_token_text(ej->keys.arena + ej->keys.off[prev], ej->keys.len[prev], other, sizeof other), BPE_EOT_TEXT);
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
              id, prev == -2 ? BPE_EOT_TEXT : bpe_token_text(ej->keys.arena + ej->keys.off[prev], ej->keys.len[prev], other,
              sizeof other), key);
        key_of_id[id] = e;
        bpe_grow(&ej->id, &ej->id_cap, e + 1, sizeof *ej->id);
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
                  "belong together", path, line, bpe_token_text(part[k], (size_t)plen[k], t1, sizeof t1), enc->path);
            CHECK(id[k] >= 0, "merges file %s: line %zu merges '%s' before any earlier line makes it; merges must come "
                  "in rank order", path, line, bpe_token_text(part[k], (size_t)plen[k], t1, sizeof t1));
        }
        CHECK(plen[0] + plen[1] <= BPE_MAX_TOKEN_BYTES, "merges file %s: line %zu makes a token of %ld bytes; at most %d "
              "fit the llm.c tokenizer file", path, line, plen[0] + plen[1], BPE_MAX_TOKEN_BYTES);
        unsigned char joined[2 * BPE_MAX_TOKEN_BYTES];
        memcpy(joined, part[0], (size_t)plen[0]);
        memcpy(joined + plen[0], part[1], (size_t)plen[1]);
        int added;
        int t = bytes_map_add(tokens, joined, (size_t)(plen[0] + plen[1]), &added);
        CHECK(added, "merges file %s: line %zu makes '%s', which an earlier line (or a byte) already made as id %d",
              path, line, bpe_token_text(joined, (size_t)(plen[0] + plen[1]), t1, sizeof t1), t);
        bpe_grow(&merge, &cap, 2 * (int64_t)(m + 1), sizeof *merge);
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
                  bpe_token_text(s, len, t1, sizeof t1));
            CHECK(enc.id[e] == t, "encoder file %s gives byte 0x%02x ('%s') id %d, but GPT-2's byte order "
                  "(bytes_to_unicode) gives it %d", encoder_path, s[0], bpe_token_text(s, len, t1, sizeof t1), enc.id[e], t);
        } else {
            CHECK(e >= 0, "encoder file %s lacks '%s', which merge %d of %s makes; the two files do not belong together",
                  encoder_path, bpe_token_text(s, len, t1, sizeof t1), t - 256, merges_path);
            CHECK(enc.id[e] == t, "encoder file %s gives '%s' id %d, but it is merge %d of %s, so its id (rank) is %d; "
                  "the two files do not belong together", encoder_path, bpe_token_text(s, len, t1, sizeof t1), enc.id[e],
                  t - 256, merges_path, t);
        }
    }
    for (int e = 0; e < enc.keys.n; e++) {
        size_t len;
        const unsigned char *s = bytes_map_key(&enc.keys, e, &len);
        CHECK(bytes_map_find(&built, s, len) >= 0, "encoder file %s has '%s' (id %d), which neither a byte nor a merge of "
              "%s makes; the two files do not belong together", encoder_path, bpe_token_text(s, len, t1, sizeof t1),
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

