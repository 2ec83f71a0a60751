// formats/safetensors.c: the safetensors reader and writer declared in formats/safetensors.h.
//
// File layout (all integers little-endian):
//   [8 bytes: header length N][N bytes: JSON header, space-padded][data section]
// The header is one JSON object; each key names a tensor
//   "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
// with offsets relative to the start of the data section, plus an optional "__metadata__" object
// of string -> string. The writer pads the header so the data section starts 8-byte aligned.
//
// The reader parses only the subset of JSON that safetensors headers use: objects, strings (all
// escapes, \uXXXX included), arrays of non-negative integers for shape and data_offsets. Inside
// __metadata__ it accepts any JSON value and keeps the object's raw text.
#include "formats/safetensors.h"
#include "util/atomicfile.h"
#include "util/common.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static size_t dtype_size(int dtype) { (void)dtype; return 4; }   // F32 and I32 are both 4 bytes
static const char *dtype_name(int dtype) { return dtype == ST_F32 ? "F32" : "I32"; }

// The format is little-endian; this file copies bytes as they are, so it needs a little-endian host.
static int host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

// numel of a shape, or 0 with *overflow set when the product does not fit in size_t.
static size_t shape_numel(int ndim, const int64_t *shape, int *overflow) {
    size_t n = 1;
    *overflow = 0;
    for (int d = 0; d < ndim; d++) {
        uint64_t s = (uint64_t)shape[d];
        if (s != 0 && n > SIZE_MAX / s) { *overflow = 1; return 0; }
        n *= (size_t)s;
    }
    return n;
}

// ---------------------------------------------------------------------------------------------
// A growable byte buffer for building the header.

typedef struct { char *p; size_t len, cap; } Buf;

static void buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    CHECK(p, "out of memory growing a safetensors header to %zu bytes", cap);
    b->p = p;
    b->cap = cap;
}
static void buf_put(Buf *b, const char *s, size_t n) {
    buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}
static void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }
static void buf_printf(Buf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && (size_t)n < sizeof tmp, "internal error: safetensors header number too long");
    buf_put(b, tmp, (size_t)n);
}
static void buf_put_json_string(Buf *b, const char *s) {
    size_t need = st_json_escape(NULL, 0, s);
    buf_put(b, "\"", 1);
    buf_reserve(b, need);
    st_json_escape(b->p + b->len, need + 1, s);
    b->len += need;
    buf_put(b, "\"", 1);
}

// ---------------------------------------------------------------------------------------------
// JSON escaping

size_t st_json_escape(char *buf, size_t cap, const char *s) {
    size_t n = 0;   // bytes the escaped text needs, excluding the terminating NUL
#define ST_EMIT(c)                                      \
    do {                                                \
        if (buf && n + 1 < cap) buf[n] = (char)(c);     \
        n++;                                            \
    } while (0)
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') { ST_EMIT('\\'); ST_EMIT(c); }
        else if (c == '\n') { ST_EMIT('\\'); ST_EMIT('n'); }
        else if (c == '\r') { ST_EMIT('\\'); ST_EMIT('r'); }
        else if (c == '\t') { ST_EMIT('\\'); ST_EMIT('t'); }
        else if (c == '\b') { ST_EMIT('\\'); ST_EMIT('b'); }
        else if (c == '\f') { ST_EMIT('\\'); ST_EMIT('f'); }
        else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            ST_EMIT('\\'); ST_EMIT('u'); ST_EMIT('0'); ST_EMIT('0');
            ST_EMIT(hex[c >> 4]); ST_EMIT(hex[c & 15]);
        } else {
            ST_EMIT(c);   // UTF-8 bytes pass through unchanged
        }
    }
#undef ST_EMIT
    if (buf && cap > 0) buf[n < cap ? n : cap - 1] = '\0';
    return n;
}

// ---------------------------------------------------------------------------------------------
// JSON parsing (the header subset). Every error exits through CHECK naming the file.

typedef struct {
    const char *path;   // the file, for messages
    const char *s;      // header text (not NUL-terminated)
    size_t n, i;        // length and cursor
    const char *part;   // what the text is, for messages (NULL: the header)
} Parser;

__attribute__((format(printf, 2, 3))) static _Noreturn void parse_fail(const Parser *p, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    CHECK(0, "safetensors file %s has a malformed %s at byte %zu of the JSON: %s; "
             "the file is corrupt or was not written as safetensors, rewrite it",
          p->path, p->part ? p->part : "header", p->i, msg);
    exit(1);   // not reached; keeps _Noreturn honest for every compiler
}

static void skip_ws(Parser *p) {
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') p->i++;
        else break;
    }
}

static int peek(Parser *p) {
    skip_ws(p);
    return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

static void expect_char(Parser *p, char c) {
    if (peek(p) != (unsigned char)c) parse_fail(p, "expected '%c'", c);
    p->i++;
}

static unsigned parse_hex4(Parser *p) {
    if (p->n - p->i < 4) parse_fail(p, "truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else parse_fail(p, "bad hex digit in \\u escape");
    }
    return v;
}

static void put_utf8(Buf *b, unsigned cp) {
    char u[4];
    size_t k;
    if (cp < 0x80) { u[0] = (char)cp; k = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 63)); k = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 63));
        u[2] = (char)(0x80 | (cp & 63)); k = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 63));
        u[2] = (char)(0x80 | ((cp >> 6) & 63)); u[3] = (char)(0x80 | (cp & 63)); k = 4;
    }
    buf_put(b, u, k);
}

// Parses a JSON string at the cursor. Returns a malloc'd NUL-terminated copy (decoded), or NULL
// when out is 0 (the string is only validated and skipped).
static char *parse_string(Parser *p, int want) {
    expect_char(p, '"');
    Buf b = {0};
    if (want) buf_put(&b, "", 0);      // a terminated buffer even for an empty string
    for (;;) {
        if (p->i >= p->n) parse_fail(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->i++];
        if (c == '"') break;
        if (c < 0x20) parse_fail(p, "control character inside a string");
        if (c != '\\') { if (want) buf_put(&b, (const char *)&c, 1); continue; }
        if (p->i >= p->n) parse_fail(p, "unterminated escape");
        char e = p->s[p->i++];
        char out;
        switch (e) {
        case '"': out = '"'; break;
        case '\\': out = '\\'; break;
        case '/': out = '/'; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case 'n': out = '\n'; break;
        case 'r': out = '\r'; break;
        case 't': out = '\t'; break;
        case 'u': {
            unsigned cp = parse_hex4(p);
            if (cp >= 0xD800 && cp <= 0xDBFF) {   // high surrogate: a low one must follow
                if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
                    parse_fail(p, "unpaired UTF-16 surrogate in \\u escape");
                p->i += 2;
                unsigned lo = parse_hex4(p);
                if (lo < 0xDC00 || lo > 0xDFFF) parse_fail(p, "unpaired UTF-16 surrogate in \\u escape");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                parse_fail(p, "unpaired UTF-16 surrogate in \\u escape");
            }
            if (cp == 0) parse_fail(p, "\\u0000 inside a string is not supported");
            if (want) put_utf8(&b, cp);
            continue;
        }
        default: parse_fail(p, "unknown escape '\\%c'", e);
        }
        if (want) buf_put(&b, &out, 1);
    }
    return want ? b.p : NULL;
}

// A non-negative JSON integer (no sign, fraction or exponent), as used by shape and data_offsets.
static uint64_t parse_uint(Parser *p, const char *what) {
    skip_ws(p);
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
        parse_fail(p, "%s must be a non-negative integer", what);
    if (p->s[p->i] == '0' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9')
        parse_fail(p, "%s has a leading zero", what);
    uint64_t v = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned d = (unsigned)(p->s[p->i] - '0');
        if (v > (UINT64_MAX - d) / 10) parse_fail(p, "%s is too large", what);
        v = v * 10 + d;
        p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
        parse_fail(p, "%s must be an integer", what);
    return v;
}

// [a, b, ...] of non-negative integers, at most maxn of them. Returns the count.
static int parse_uint_array(Parser *p, uint64_t *out, int maxn, const char *what) {
    expect_char(p, '[');
    int n = 0;
    if (peek(p) == ']') { p->i++; return 0; }
    for (;;) {
        uint64_t v = parse_uint(p, what);
        if (n >= maxn) parse_fail(p, "%s has more than %d entries", what, maxn);
        out[n++] = v;
        int c = peek(p);
        if (c == ',') { p->i++; continue; }
        if (c == ']') { p->i++; return n; }
        parse_fail(p, "expected ',' or ']' in %s", what);
    }
}

static void skip_value(Parser *p, int depth);

static void skip_number(Parser *p) {
    if (p->i < p->n && p->s[p->i] == '-') p->i++;
    size_t digits = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    if (p->i == digits) parse_fail(p, "bad number");
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        size_t f = p->i;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        if (p->i == f) parse_fail(p, "bad number");
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        size_t e = p->i;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        if (p->i == e) parse_fail(p, "bad number");
    }
}

static void skip_literal(Parser *p, const char *lit) {
    size_t k = strlen(lit);
    if (p->n - p->i < k || memcmp(p->s + p->i, lit, k) != 0) parse_fail(p, "unexpected character");
    p->i += k;
}

// Validates and skips any JSON value (used inside __metadata__).
static void skip_value(Parser *p, int depth) {
    if (depth > 64) parse_fail(p, "JSON nested too deeply");
    int c = peek(p);
    if (c == '"') { parse_string(p, 0); return; }
    if (c == '{') {
        p->i++;
        if (peek(p) == '}') { p->i++; return; }
        for (;;) {
            parse_string(p, 0);
            expect_char(p, ':');
            skip_value(p, depth + 1);
            c = peek(p);
            if (c == ',') { p->i++; continue; }
            if (c == '}') { p->i++; return; }
            parse_fail(p, "expected ',' or '}' in an object");
        }
    }
    if (c == '[') {
        p->i++;
        if (peek(p) == ']') { p->i++; return; }
        for (;;) {
            skip_value(p, depth + 1);
            c = peek(p);
            if (c == ',') { p->i++; continue; }
            if (c == ']') { p->i++; return; }
            parse_fail(p, "expected ',' or ']' in an array");
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) { skip_number(p); return; }
    if (c == 't') { skip_literal(p, "true"); return; }
    if (c == 'f') { skip_literal(p, "false"); return; }
    if (c == 'n') { skip_literal(p, "null"); return; }
    parse_fail(p, c < 0 ? "unexpected end of header" : "unexpected character");
}

// ---------------------------------------------------------------------------------------------
// Writer

void st_writer_init(StWriter *w) {
    w->t = NULL;
    w->n = w->cap = 0;
    w->metadata_json = NULL;
}

static void add_tensor(StWriter *w, const char *name, int dtype, const void *data, int ndim,
                       const int64_t *shape) {
    CHECK(name && name[0], "st_add: a tensor needs a non-empty name");
    CHECK(strcmp(name, "__metadata__") != 0, "st_add: \"__metadata__\" is reserved and cannot name a tensor");
    CHECK(ndim >= 0 && ndim <= ST_MAX_DIMS, "st_add: tensor %s has ndim %d; formats/safetensors.h supports 0..%d",
          name, ndim, ST_MAX_DIMS);
    for (int d = 0; d < ndim; d++)
        CHECK(shape[d] >= 0, "st_add: tensor %s has negative size %lld in dimension %d",
              name, (long long)shape[d], d);
    for (int k = 0; k < w->n; k++)
        CHECK(strcmp(w->t[k].name, name) != 0, "st_add: tensor %s was added twice; names must be unique", name);
    int overflow;
    size_t numel = shape_numel(ndim, shape, &overflow);
    CHECK(!overflow && numel <= SIZE_MAX / 4, "st_add: tensor %s is too large", name);
    CHECK(numel == 0 || data, "st_add: tensor %s has no data pointer", name);
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        StTensor *t = realloc(w->t, (size_t)cap * sizeof *t);
        CHECK(t, "out of memory adding tensor %s", name);
        w->t = t;
        w->cap = cap;
    }
    StTensor *t = &w->t[w->n++];
    memset(t, 0, sizeof *t);
    t->name = xstrdup(name);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    t->numel = numel;
    t->data = xmalloc(numel * dtype_size(dtype));
    if (numel) memcpy(t->data, data, numel * dtype_size(dtype));
}

void st_add_f32(StWriter *w, const char *name, const float *data, int ndim, const int64_t *shape) {
    add_tensor(w, name, ST_F32, data, ndim, shape);
}

void st_add_i32(StWriter *w, const char *name, const int32_t *data, int ndim, const int64_t *shape) {
    add_tensor(w, name, ST_I32, data, ndim, shape);
}

// The safetensors spec (and the reference Rust/Python library) requires __metadata__ to be an
// object of string -> string; anything else makes the file unreadable there, so reject it here.
static void check_metadata_object(const char *json) {
    Parser p = {"(the metadata passed to st_set_metadata)", json, strlen(json), 0, NULL};
    expect_char(&p, '{');
    if (peek(&p) == '}') p.i++;
    else {
        for (;;) {
            parse_string(&p, 0);
            expect_char(&p, ':');
            if (peek(&p) != '"') parse_fail(&p, "metadata values must be JSON strings (safetensors requires string -> string)");
            parse_string(&p, 0);
            int c = peek(&p);
            if (c == ',') { p.i++; continue; }
            if (c == '}') { p.i++; break; }
            parse_fail(&p, "expected ',' or '}' in the metadata object");
        }
    }
    if (peek(&p) != -1) parse_fail(&p, "text after the metadata object");
}

void st_set_metadata(StWriter *w, const char *json_object) {
    free(w->metadata_json);
    w->metadata_json = NULL;
    if (!json_object) return;
    check_metadata_object(json_object);
    w->metadata_json = xstrdup(json_object);
}

// Builds the JSON header, space-padded so that 8 + length is a multiple of 8.
static void build_header(const StWriter *w, Buf *h) {
    buf_puts(h, "{");
    int first = 1;
    if (w->metadata_json) {
        buf_puts(h, "\"__metadata__\":");
        buf_puts(h, w->metadata_json);
        first = 0;
    }
    uint64_t off = 0;
    for (int k = 0; k < w->n; k++) {
        const StTensor *t = &w->t[k];
        if (!first) buf_puts(h, ",");
        first = 0;
        buf_put_json_string(h, t->name);
        buf_puts(h, ":{\"dtype\":\"");
        buf_puts(h, dtype_name(t->dtype));
        buf_puts(h, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) buf_printf(h, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        uint64_t bytes = (uint64_t)t->numel * dtype_size(t->dtype);
        buf_printf(h, "],\"data_offsets\":[%llu,", (unsigned long long)off);
        buf_printf(h, "%llu]}", (unsigned long long)(off + bytes));
        off += bytes;
    }
    buf_puts(h, "}");
    while (h->len % 8) buf_puts(h, " ");
}

void st_write(StWriter *w, const char *path) {
    CHECK(host_is_little_endian(), "st_write %s: safetensors is little-endian and this host is not", path);
    Buf h = {0};
    build_header(w, &h);

    AtomicFile af;
    af_open(&af, path, "safetensors file", "wb");
    unsigned char len8[8];
    uint64_t hl = h.len;
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)(hl >> (8 * k));
    af_write(&af, len8, 8);
    af_write(&af, h.p, h.len);
    for (int k = 0; k < w->n; k++) af_write(&af, w->t[k].data, w->t[k].numel * dtype_size(w->t[k].dtype));
    af_commit(&af);
    free(h.p);
}

void st_writer_free(StWriter *w) {
    for (int k = 0; k < w->n; k++) { free(w->t[k].name); free(w->t[k].data); }
    free(w->t);
    free(w->metadata_json);
    st_writer_init(w);
}

// ---------------------------------------------------------------------------------------------
// Reader

typedef struct { uint64_t begin, end; int index; } Span;

static int span_cmp(const void *a, const void *b) {
    const Span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static unsigned char *read_whole_file(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    CHECK(fp, "cannot open safetensors file %s: %s", path, strerror(errno));
    CHECK(fseek(fp, 0, SEEK_END) == 0, "cannot seek in safetensors file %s: %s", path, strerror(errno));
    long sz = ftell(fp);
    CHECK(sz >= 0, "cannot get the size of safetensors file %s: %s", path, strerror(errno));
    CHECK(fseek(fp, 0, SEEK_SET) == 0, "cannot seek in safetensors file %s: %s", path, strerror(errno));
    unsigned char *b = xmalloc((size_t)sz);
    size_t got = fread(b, 1, (size_t)sz, fp);
    int rerr = ferror(fp);
    fclose(fp);
    CHECK(got == (size_t)sz && !rerr, "cannot read safetensors file %s (%zu of %ld bytes read)", path, got, sz);
    *size = (size_t)sz;
    return b;
}

// Parses one tensor entry {"dtype":..,"shape":[..],"data_offsets":[b,e]} into t and span.
static void parse_tensor_entry(Parser *p, StTensor *t, Span *span) {
    int have_dtype = 0, have_shape = 0, have_off = 0;
    uint64_t shape[ST_MAX_DIMS + 1], off[3];
    expect_char(p, '{');
    if (peek(p) != '}') {
        for (;;) {
            char *key = parse_string(p, 1);
            expect_char(p, ':');
            if (strcmp(key, "dtype") == 0) {
                if (have_dtype) parse_fail(p, "tensor %s has two dtype fields", t->name);
                char *dt = parse_string(p, 1);
                int known = 1;
                if (strcmp(dt, "F32") == 0) t->dtype = ST_F32;
                else if (strcmp(dt, "I32") == 0) t->dtype = ST_I32;
                else known = 0;
                char shown[48];
                snprintf(shown, sizeof shown, "%s", dt);
                free(dt);
                CHECK(known, "safetensors file %s: tensor %s has dtype \"%s\"; only F32 and I32 are "
                             "supported, convert the tensor before loading it", p->path, t->name, shown);
                have_dtype = 1;
            } else if (strcmp(key, "shape") == 0) {
                if (have_shape) parse_fail(p, "tensor %s has two shape fields", t->name);
                int nd = parse_uint_array(p, shape, ST_MAX_DIMS + 1, "shape");
                CHECK(nd <= ST_MAX_DIMS, "safetensors file %s: tensor %s has %d dimensions; at most %d "
                                         "are supported", p->path, t->name, nd, ST_MAX_DIMS);
                for (int d = 0; d < nd; d++) {
                    CHECK(shape[d] <= (uint64_t)INT64_MAX, "safetensors file %s: tensor %s has an "
                          "impossible size in dimension %d", p->path, t->name, d);
                    t->shape[d] = (int64_t)shape[d];
                }
                t->ndim = nd;
                have_shape = 1;
            } else if (strcmp(key, "data_offsets") == 0) {
                if (have_off) parse_fail(p, "tensor %s has two data_offsets fields", t->name);
                int k = parse_uint_array(p, off, 3, "data_offsets");
                if (k != 2) parse_fail(p, "data_offsets of tensor %s must be [begin, end]", t->name);
                have_off = 1;
            } else {
                parse_fail(p, "tensor %s has an unknown field \"%s\"", t->name, key);
            }
            free(key);
            int c = peek(p);
            if (c == ',') { p->i++; continue; }
            if (c == '}') { p->i++; break; }
            parse_fail(p, "expected ',' or '}' in the entry of tensor %s", t->name);
        }
    } else {
        p->i++;
    }
    if (!have_dtype || !have_shape || !have_off)
        parse_fail(p, "tensor %s lacks its %s field", t->name,
                   !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    span->begin = off[0];
    span->end = off[1];
}

// The 8-byte little-endian header length, checked against the file's size.
static uint64_t header_length(const char *path, const unsigned char *file, size_t size) {
    CHECK(size >= 8, "safetensors file %s is %zu bytes, too short to hold the 8-byte header length; "
                     "the file is truncated", path, size);
    uint64_t hlen = 0;
    for (int k = 0; k < 8; k++) hlen |= (uint64_t)file[k] << (8 * k);
    CHECK(hlen <= size - 8, "safetensors file %s declares a %llu-byte header but only %zu bytes follow "
                            "the length field; the file is truncated or not safetensors",
          path, (unsigned long long)hlen, size - 8);
    CHECK(hlen >= 2, "safetensors file %s has a %llu-byte header, too short for a JSON object",
          path, (unsigned long long)hlen);
    return hlen;
}

// The header's top-level object: each tensor entry into f->t (name, dtype, shape; no data yet) and
// its data offsets into *spans, the __metadata__ object's text into f->metadata_json.
static void parse_header(Parser *p, StFile *f, Span **spans) {
    int cap = 16, n = 0;
    StTensor *ts = xcalloc((size_t)cap, sizeof *ts);
    Span *sp = xcalloc((size_t)cap, sizeof *sp);
    expect_char(p, '{');
    if (peek(p) == '}') p->i++;
    else {
        for (;;) {
            char *key = parse_string(p, 1);
            expect_char(p, ':');
            if (strcmp(key, "__metadata__") == 0) {
                if (f->metadata_json) parse_fail(p, "two __metadata__ entries");
                if (peek(p) != '{') parse_fail(p, "__metadata__ must be an object");
                size_t start = p->i;
                skip_value(p, 0);
                size_t len = p->i - start;
                f->metadata_json = xmalloc(len + 1);
                memcpy(f->metadata_json, p->s + start, len);
                f->metadata_json[len] = '\0';
                free(key);
            } else {
                for (int k = 0; k < n; k++)
                    if (strcmp(ts[k].name, key) == 0) parse_fail(p, "tensor %s appears twice", key);
                if (n == cap) {
                    cap *= 2;
                    ts = realloc(ts, (size_t)cap * sizeof *ts);
                    sp = realloc(sp, (size_t)cap * sizeof *sp);
                    CHECK(ts && sp, "out of memory reading the header of %s", p->path);
                }
                memset(&ts[n], 0, sizeof ts[n]);
                ts[n].name = key;
                parse_tensor_entry(p, &ts[n], &sp[n]);
                sp[n].index = n;
                n++;
            }
            int c = peek(p);
            if (c == ',') { p->i++; continue; }
            if (c == '}') { p->i++; break; }
            parse_fail(p, "expected ',' or '}' after an entry of the top-level object");
        }
    }
    if (peek(p) != -1) parse_fail(p, "text after the top-level object");
    f->t = ts;
    f->n = n;
    *spans = sp;
}

// Every tensor's bytes lie inside the data section, as many as its dtype and shape need, and no
// two tensors share bytes (empty tensors occupy nothing).
static void check_spans(const char *path, StTensor *ts, const Span *spans, int n, uint64_t data_size) {
    for (int k = 0; k < n; k++) {
        StTensor *t = &ts[k];
        const Span *s = &spans[k];
        int overflow;
        t->numel = shape_numel(t->ndim, t->shape, &overflow);
        CHECK(!overflow && t->numel <= SIZE_MAX / 4, "safetensors file %s: tensor %s is too large to load",
              path, t->name);
        CHECK(s->begin <= s->end && s->end <= data_size,
              "safetensors file %s: tensor %s has data_offsets [%llu, %llu] outside the %llu-byte data "
              "section; the file is truncated or corrupt", path, t->name, (unsigned long long)s->begin,
              (unsigned long long)s->end, (unsigned long long)data_size);
        uint64_t want = (uint64_t)t->numel * dtype_size(t->dtype);
        CHECK(s->end - s->begin == want,
              "safetensors file %s: tensor %s spans %llu bytes but its dtype %s and shape need %llu",
              path, t->name, (unsigned long long)(s->end - s->begin), dtype_name(t->dtype),
              (unsigned long long)want);
    }
    Span *sorted = xmalloc((size_t)(n ? n : 1) * sizeof *sorted);
    int m = 0;
    for (int k = 0; k < n; k++) if (spans[k].end > spans[k].begin) sorted[m++] = spans[k];
    qsort(sorted, (size_t)m, sizeof *sorted, span_cmp);
    for (int k = 1; k < m; k++)
        CHECK(sorted[k].begin >= sorted[k - 1].end,
              "safetensors file %s: tensors %s and %s overlap in the data section; the file is corrupt",
              path, ts[sorted[k - 1].index].name, ts[sorted[k].index].name);
    free(sorted);
}

void st_read(const char *path, StFile *f) {
    CHECK(host_is_little_endian(), "st_read %s: safetensors is little-endian and this host is not", path);
    f->t = NULL;
    f->n = 0;
    f->metadata_json = NULL;

    size_t size;
    unsigned char *file = read_whole_file(path, &size);
    uint64_t hlen = header_length(path, file, size);
    const unsigned char *data = file + 8 + hlen;
    uint64_t data_size = size - 8 - hlen;

    Parser p = {path, (const char *)file + 8, (size_t)hlen, 0, NULL};
    Span *spans;
    parse_header(&p, f, &spans);
    check_spans(path, f->t, spans, f->n, data_size);

    // Each tensor gets its own allocation, so data is aligned whatever the offsets are.
    for (int k = 0; k < f->n; k++) {
        size_t bytes = f->t[k].numel * dtype_size(f->t[k].dtype);
        f->t[k].data = xmalloc(bytes);
        if (bytes) memcpy(f->t[k].data, data + spans[k].begin, bytes);
    }
    free(spans);
    free(file);
}

char *st_metadata_string(const StFile *f, const char *key, const char *path) {
    if (!f->metadata_json) return NULL;
    Parser p = { path, f->metadata_json, strlen(f->metadata_json), 0, "__metadata__" };
    char *value = NULL;
    expect_char(&p, '{');
    if (peek(&p) == '}') return NULL;
    for (;;) {
        char *k = parse_string(&p, 1);
        expect_char(&p, ':');
        int match = strcmp(k, key) == 0;
        free(k);
        if (match && (value || peek(&p) != '"')) parse_fail(&p, "entry \"%s\" is %s", key, value ? "there twice" : "not a string");
        if (match) value = parse_string(&p, 1); else skip_value(&p, 0);
        int c = peek(&p);
        if (c == ',') { p.i++; continue; }
        if (c == '}') return value;
        parse_fail(&p, "expected ',' or '}' in the metadata object");
    }
}

// A string (decoded) or a number (as written) at the cursor, appended to out; in an array
// (item = 1) a string may not hold the ',' that joins the items.
static void put_scalar(Parser *p, Buf *out, int item) {
    int c = peek(p);
    if (c == '"') {
        char *s = parse_string(p, 1);
        int bad = strchr(s, '\n') || (item && strchr(s, ','));
        if (!bad) buf_puts(out, s);
        free(s);
        if (bad) parse_fail(p, "a value holds a newline%s, which a key=value line cannot", item ? " or a ','" : "");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        size_t start = p->i;
        skip_number(p);
        buf_put(out, p->s + start, p->i - start);
    } else {
        parse_fail(p, "expected a string, a number or an array of them");
    }
}

char *st_json_lines(const char *json, const char *path, const char *part) {
    Parser p = { path, json, strlen(json), 0, part };
    Buf out = { 0 };
    buf_put(&out, "", 0);
    expect_char(&p, '{');
    if (peek(&p) == '}') p.i++;
    else {
        for (;;) {
            char *key = parse_string(&p, 1);
            int bad = !*key || strpbrk(key, "=\n") != NULL;
            if (!bad) { buf_puts(&out, key); buf_puts(&out, "="); }
            free(key);
            if (bad) parse_fail(&p, "a member's name is empty or holds '=' or a newline");
            expect_char(&p, ':');
            if (peek(&p) != '[') put_scalar(&p, &out, 0);
            else if (p.i++, peek(&p) == ']') p.i++;
            else {
                for (int first = 1;; first = 0) {
                    if (!first) buf_puts(&out, ",");
                    put_scalar(&p, &out, 1);
                    int c = peek(&p);
                    if (c == ',') { p.i++; continue; }
                    if (c == ']') { p.i++; break; }
                    parse_fail(&p, "expected ',' or ']' in an array");
                }
            }
            buf_puts(&out, "\n");
            int c = peek(&p);
            if (c == ',') { p.i++; continue; }
            if (c == '}') { p.i++; break; }
            parse_fail(&p, "expected ',' or '}' in an object");
        }
    }
    if (peek(&p) != -1) parse_fail(&p, "text after the object");
    return out.p;
}

const StTensor *st_find(const StFile *f, const char *name) {
    for (int k = 0; k < f->n; k++)
        if (strcmp(f->t[k].name, name) == 0) return &f->t[k];
    return NULL;
}

void st_file_free(StFile *f) {
    for (int k = 0; k < f->n; k++) { free(f->t[k].name); free(f->t[k].data); }
    free(f->t);
    free(f->metadata_json);
    f->t = NULL;
    f->n = 0;
    f->metadata_json = NULL;
}
