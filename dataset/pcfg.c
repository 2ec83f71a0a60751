// dataset/pcfg.c: PCFG SET (dataset/pcfg.h; Hupkes et al. 2020): the ten functions on strings of
// tokens, the draw of an expression with k function words, and an evaluator that parses the prefix
// form. The draw computes its value as it builds the tree; the evaluator parses the tokens; they
// share only the functions, so a test that compares them checks the draw's structure.

#include "dataset/pcfg.h"

#include <string.h>

enum {
    N_UNARY = 6,
    N_BINARY = 4,
    MAX_TRIES = 1000000,   // draws pcfg_draw makes before giving up
};

static const int UNARY[N_UNARY] = {PCFG_COPY, PCFG_REVERSE, PCFG_SHIFT, PCFG_ECHO, PCFG_SWAP_FIRST_LAST, PCFG_REPEAT};
static const int BINARY[N_BINARY] = {PCFG_APPEND, PCFG_PREPEND, PCFG_REMOVE_FIRST, PCFG_REMOVE_SECOND};
static const char *const UNARY_WORDS[N_UNARY] = {"copy", "reverse", "shift", "echo", "swap_first_last", "repeat"};
static const char *const BINARY_WORDS[N_BINARY] = {"append", "prepend", "remove_first", "remove_second"};

static int in_list(int tok, const int *list, int n) {
    for (int i = 0; i < n; i++)
        if (tok == list[i]) return 1;
    return 0;
}
static int is_unary(int tok) { return in_list(tok, UNARY, N_UNARY); }
static int is_binary(int tok) { return in_list(tok, BINARY, N_BINARY); }
static int is_symbol(int tok) { return tok >= PCFG_SYMBOL_TOKEN0 && tok < PCFG_SYMBOL_TOKEN0 + PCFG_SYMBOLS; }

// ---------------------------------------------------------------------------------------------
// the functions, in place on a string s of n symbols (s has room for the result)

static void reverse(int *s, int n) {
    for (int i = 0, j = n - 1; i < j; i++, j--) {
        int t = s[i];
        s[i] = s[j];
        s[j] = t;
    }
}

// The length of unary f's value on n symbols (n >= 1).
static int unary_len(int f, int n) {
    switch (f) {
    case PCFG_ECHO: return n + 1;
    case PCFG_REPEAT: return 2 * n;
    case PCFG_SWAP_FIRST_LAST: return n == 1 ? 2 : n;   // [last] + middle + [first]
    default: return n;
    }
}

static void apply_unary(int f, int *s, int n) {
    switch (f) {
    case PCFG_REVERSE: reverse(s, n); break;
    case PCFG_SHIFT: {
        int first = s[0];
        memmove(s, s + 1, sizeof(int) * (size_t)(n - 1));
        s[n - 1] = first;
        break;
    }
    case PCFG_ECHO: s[n] = s[n - 1]; break;
    case PCFG_SWAP_FIRST_LAST: {
        int first = s[0];
        s[0] = s[n - 1];
        s[n == 1 ? 1 : n - 1] = first;
        break;
    }
    case PCFG_REPEAT: memcpy(s + n, s, sizeof(int) * (size_t)n); break;
    default: break;   // copy
    }
}

// Binary f on x = s[0..nx-1] and y = s[nx..nx+ny-1], contiguous: the value's length, and the value
// written at s.
static int binary_len(int f, int nx, int ny) {
    return f == PCFG_REMOVE_FIRST ? ny : f == PCFG_REMOVE_SECOND ? nx : nx + ny;
}

static void apply_binary(int f, int *s, int nx, int ny) {
    if (f == PCFG_PREPEND) {   // y x: rotate by three reversals
        reverse(s, nx);
        reverse(s + nx, ny);
        reverse(s, nx + ny);
    } else if (f == PCFG_REMOVE_FIRST) {
        memmove(s, s + nx, sizeof(int) * (size_t)ny);
    }   // append: x y as they stand; remove_second: x
}

// ---------------------------------------------------------------------------------------------
// the draw

int pcfg_max_in_tokens(int k) {
    CHECK(k >= 1 && k <= PCFG_MAX_FUNCTIONS, "pcfg: %d function words, expected 1..%d", k, PCFG_MAX_FUNCTIONS);
    return 7 * k + 5 < PCFG_MAX_IN ? 7 * k + 5 : PCFG_MAX_IN;
}

int pcfg_max_out_tokens(int k) {
    CHECK(k >= 1 && k <= PCFG_MAX_FUNCTIONS, "pcfg: %d function words, expected 1..%d", k, PCFG_MAX_FUNCTIONS);
    return k < 4 ? PCFG_MAX_LEAF << k : PCFG_MAX_STRING;   // 5 * 2^k passes 64 from k = 4
}

// One draw in progress: the input so far, and the values of the subtrees being built, stacked.
// Each stacked value belongs to a different subtree of at least 2 input tokens and holds at most
// PCFG_MAX_STRING symbols, so fewer than PCFG_MAX_IN of them fit in work.
typedef struct {
    Rng *r;
    int in[PCFG_MAX_IN];
    int n_in;
    int work[PCFG_MAX_IN * PCFG_MAX_STRING];
} Draw;

// Uniform in [0, k), k >= 1.
static int draw(Rng *r, int k) { return (int)(rng_u64(r) % (uint64_t)k); }

// Appends a token to the input; 0 when the input would pass PCFG_MAX_IN.
static int put_in(Draw *d, int tok) {
    if (d->n_in == PCFG_MAX_IN) return 0;
    d->in[d->n_in++] = tok;
    return 1;
}

// Builds a subtree of `funcs` function words: its tokens go to d->in and its value to
// d->work[top..]. Returns the value's length, or -1 when the input or a string passes its bound
// (the draw is then rejected: nothing of it is kept, so stopping early changes no probability).
static int grow(Draw *d, int funcs, int top) {
    if (funcs == 0) {   // a string argument
        int n = PCFG_MIN_LEAF + draw(d->r, PCFG_MAX_LEAF - PCFG_MIN_LEAF + 1);
        for (int i = 0; i < n; i++) {
            d->work[top + i] = PCFG_SYMBOL_TOKEN0 + draw(d->r, PCFG_SYMBOLS);
            if (!put_in(d, d->work[top + i])) return -1;
        }
        return n;
    }
    if (draw(d->r, 5) < 3) {   // unary, 3 times in 5
        int f = UNARY[draw(d->r, N_UNARY)];
        if (!put_in(d, f)) return -1;
        int n = grow(d, funcs - 1, top);
        if (n < 0 || unary_len(f, n) > PCFG_MAX_STRING) return -1;
        apply_unary(f, d->work + top, n);
        return unary_len(f, n);
    }
    int f = BINARY[draw(d->r, N_BINARY)];
    if (!put_in(d, f)) return -1;
    int first = draw(d->r, funcs);   // function words of the first argument: 0 .. funcs-1
    int nx = grow(d, first, top);
    if (nx < 0 || !put_in(d, PCFG_COMMA)) return -1;
    int ny = grow(d, funcs - 1 - first, top + nx);
    if (ny < 0 || binary_len(f, nx, ny) > PCFG_MAX_STRING) return -1;
    apply_binary(f, d->work + top, nx, ny);
    return binary_len(f, nx, ny);
}

int pcfg_draw(int k, Rng *r, int *in, int in_cap, int *n_in, int *out, int out_cap, int *n_out) {
    int max_in = pcfg_max_in_tokens(k), max_out = pcfg_max_out_tokens(k);
    CHECK(in_cap >= max_in && out_cap >= max_out, "pcfg_draw: %d function words need room for %d input and %d "
          "output tokens, got %d and %d", k, max_in, max_out, in_cap, out_cap);
    Draw d;   // 18 KiB
    d.r = r;
    for (int tries = 1; tries <= MAX_TRIES; tries++) {
        d.n_in = 0;
        int n = grow(&d, k, 0);
        if (n < 0) continue;
        memcpy(in, d.in, sizeof(int) * (size_t)d.n_in);
        memcpy(out, d.work, sizeof(int) * (size_t)n);
        *n_in = d.n_in;
        *n_out = n;
        return tries;
    }
    CHECK(0, "pcfg_draw: no draw of %d function words within the bounds in %d tries", k, MAX_TRIES);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// the evaluator

// The parse: the tokens, where it stands, and the values stacked in a buffer that grows.
typedef struct {
    const int *in;
    int n_in, at;
    int cap;         // longest string allowed
    int *buf;        // (size,) the values of the subtrees being evaluated, stacked
    size_t size;
} Eval;

// Makes room for buf[0..need-1].
static void reserve(Eval *e, size_t need) {
    if (need <= e->size) return;
    size_t size = e->size ? e->size : 256;
    while (size < need) size *= 2;
    int *b = xmalloc(sizeof(int) * size);
    if (e->size) memcpy(b, e->buf, sizeof(int) * e->size);
    free(e->buf);
    e->buf = b;
    e->size = size;
}

// Evaluates the expression at e->at, its value to e->buf[top..]; returns its length or a failure.
static int eval_node(Eval *e, size_t top) {
    if (e->at == e->n_in) return PCFG_MALFORMED;
    int tok = e->in[e->at];
    if (is_symbol(tok)) {   // a string: the longest run of symbols
        int n = 0;
        while (e->at < e->n_in && is_symbol(e->in[e->at])) {
            if (n == e->cap) return PCFG_TOO_LONG;
            reserve(e, top + (size_t)n + 1);
            e->buf[top + (size_t)n++] = e->in[e->at++];
        }
        return n;
    }
    e->at++;
    if (is_unary(tok)) {
        int n = eval_node(e, top);
        if (n < 0) return n;
        if (unary_len(tok, n) > e->cap) return PCFG_TOO_LONG;
        reserve(e, top + (size_t)unary_len(tok, n));
        apply_unary(tok, e->buf + top, n);
        return unary_len(tok, n);
    }
    if (!is_binary(tok)) return PCFG_MALFORMED;
    int nx = eval_node(e, top);
    if (nx < 0) return nx;
    if (e->at == e->n_in || e->in[e->at] != PCFG_COMMA) return PCFG_MALFORMED;
    e->at++;
    int ny = eval_node(e, top + (size_t)nx);
    if (ny < 0) return ny;
    if (binary_len(tok, nx, ny) > e->cap) return PCFG_TOO_LONG;
    apply_binary(tok, e->buf + top, nx, ny);
    return binary_len(tok, nx, ny);
}

int pcfg_eval(const int *in, int n_in, int *out, int cap) {
    if (n_in == 0 || is_symbol(in[0])) return PCFG_MALFORMED;   // a string alone is no expression
    Eval e = {in, n_in, 0, cap, NULL, 0};
    int n = eval_node(&e, 0);
    if (n >= 0 && e.at != n_in) n = PCFG_MALFORMED;   // tokens left over
    if (n >= 0) memcpy(out, e.buf, sizeof(int) * (size_t)n);
    free(e.buf);
    return n;
}

// ---------------------------------------------------------------------------------------------
// words

int pcfg_functions(const int *tokens, int n) {
    int f = 0;
    for (int i = 0; i < n; i++) f += is_unary(tokens[i]) || is_binary(tokens[i]);
    return f;
}

int pcfg_token_text(int tok, char *buf, size_t cap) {
    if (is_symbol(tok)) {
        int s = tok - PCFG_SYMBOL_TOKEN0;
        return snprintf(buf, cap, "%c%d", 'A' + s / PCFG_NUMBERS, s % PCFG_NUMBERS + 1);
    }
    for (int i = 0; i < N_UNARY; i++)
        if (tok == UNARY[i]) return snprintf(buf, cap, "%s", UNARY_WORDS[i]);
    for (int i = 0; i < N_BINARY; i++)
        if (tok == BINARY[i]) return snprintf(buf, cap, "%s", BINARY_WORDS[i]);
    if (tok == PCFG_COMMA) return snprintf(buf, cap, ",");
    return -1;
}

// The token of one word, or -1.
static int word_token(const char *w, size_t len) {
    for (int i = 0; i < N_UNARY; i++)
        if (strlen(UNARY_WORDS[i]) == len && !memcmp(w, UNARY_WORDS[i], len)) return UNARY[i];
    for (int i = 0; i < N_BINARY; i++)
        if (strlen(BINARY_WORDS[i]) == len && !memcmp(w, BINARY_WORDS[i], len)) return BINARY[i];
    if (len == 1 && w[0] == ',') return PCFG_COMMA;
    // a symbol: a capital letter and a number 1..20 without a leading zero
    if (len < 2 || len > 3 || w[0] < 'A' || w[0] > 'Z' || w[1] < '1' || w[1] > '9') return -1;
    int num = w[1] - '0';
    if (len == 3) {
        if (w[2] < '0' || w[2] > '9') return -1;
        num = 10 * num + (w[2] - '0');
    }
    if (num > PCFG_NUMBERS) return -1;
    return PCFG_SYMBOL_TOKEN0 + (w[0] - 'A') * PCFG_NUMBERS + num - 1;
}

int pcfg_parse_words(const char *text, int *out, int cap) {
    int n = 0;
    for (const char *p = text; *p;) {
        if (*p == ' ') { p++; continue; }
        size_t len = strcspn(p, " ");
        int tok = word_token(p, len);
        if (tok < 0 || n == cap) return -1;
        out[n++] = tok;
        p += len;
    }
    return n;
}
