// dataset/tasks_gen.c: the generators of the symbol tasks (the copy and reverse family, the
// repeat tasks, sort) and of retrieval, behind dataset/tasks_impl.h's operations table.
//
// Symbol body s (n symbols) and target, by task ('|' is TASK_NEXT, the paper's [NEXT]):
//   copy s | copy-2x s|s | reverse r | reverse-2x r|r | reverse-copy r|s | sort sorted(s)
// with r = s reversed. The repeat tasks: symbol x n times, then x n times (copy-repeat), 2n times
// (copy-repeat-2x, no marker, as the paper's), or the next symbol (x + 1) mod N n times
// (copy-successor); copy-repeat-change names both symbols: "X>Y:" X n times '=' Y n times.

#include <stdlib.h>
#include <string.h>

#include "dataset/data.h"
#include "dataset/tasks_impl.h"

static int cmp_int(const void *x, const void *y) {
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

int max_copy(const TaskConfig *c, int n) { (void)c; return 2 * n; }
int max_doubled(const TaskConfig *c, int n) { (void)c; return 3 * n + 1; }   // n + 2n + '|'

// Appends s[0..n-1] backwards (step -1) or forwards.
static void put_run(Out *o, const int *s, int n, int backwards) {
    for (int i = 0; i < n; i++) put(o, s[backwards ? n - 1 - i : i]);
}

// The body o->p[b0 .. b0+n-1] (n symbols) is written: '=' and the target built from it.
static void finish_symbols(const TaskConfig *c, int n, Out *o, int b0, int *prompt_len) {
    const int *s = o->p + b0;  // (n,) the symbols
    put_eq(o, prompt_len);
    switch (c->task) {
    case T_COPY: put_run(o, s, n, 0); break;
    case T_COPY2X: put_run(o, s, n, 0); put(o, TASK_NEXT); put_run(o, s, n, 0); break;
    case T_REV: put_run(o, s, n, 1); break;
    case T_REV2X: put_run(o, s, n, 1); put(o, TASK_NEXT); put_run(o, s, n, 1); break;
    case T_REVCP: put_run(o, s, n, 1); put(o, TASK_NEXT); put_run(o, s, n, 0); break;
    case T_SORT: {  // token order is symbol order
        int t0 = o->n;
        put_run(o, s, n, 0);
        qsort(o->p + t0, (size_t)n, sizeof(int), cmp_int);
        break;
    }
    default: CHECK(0, "finish_symbols: task %d is not a symbol task", c->task);
    }
}

// n random symbols, then '=' and the target built from them.
void gen_symbols(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)depth;
    int b0 = o->n;  // first body token
    for (int i = 0; i < n; i++) put(o, symbol_token(draw(r, c->alphabet)));
    finish_symbols(c, n, o, b0, prompt_len);
}

long long size_symbols(const TaskConfig *c, int n) { return task_small_power(c->alphabet, n); }

// Instance i: i read as n base-N digits, the highest first.
void pool_symbols(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    int b0 = o->n;
    for (int k = 0; k < n; k++) put(o, 0);
    for (int k = n - 1; k >= 0; k--, i /= c->alphabet) o->p[b0 + k] = symbol_token((int)(i % c->alphabet));
    finish_symbols(c, n, o, b0, prompt_len);
}

int max_repeat(const TaskConfig *c, int n) { return c->task == T_REP2X ? 3 * n : 2 * n; }
long long size_repeat(const TaskConfig *c, int n) { (void)n; return c->alphabet; }

// Instance i is symbol i repeated n times; the target repeats it (or the next symbol).
void pool_repeat(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    int x = (int)i;
    for (int k = 0; k < n; k++) put(o, symbol_token(x));
    put_eq(o, prompt_len);
    int y = c->task == T_SUCC ? (x + 1) % c->alphabet : x;
    int m = c->task == T_REP2X ? 2 * n : n;
    for (int k = 0; k < m; k++) put(o, symbol_token(y));
}

int max_replace(const TaskConfig *c, int n) { (void)c; return 2 * n + 4; }   // "X>Y:" body, n answer
long long size_replace(const TaskConfig *c, int n) {
    (void)n;
    long long p = (long long)c->alphabet * (c->alphabet - 1);
    return p <= TASK_POOL_MAX ? p : -1;
}

static void put_replace(int n, int x, int y, Out *o, int *prompt_len) {
    put(o, symbol_token(x)); put(o, '>'); put(o, symbol_token(y)); put(o, ':');
    for (int k = 0; k < n; k++) put(o, symbol_token(x));
    put_eq(o, prompt_len);
    for (int k = 0; k < n; k++) put(o, symbol_token(y));
}

// Instance i is the ordered pair (X, Y), X != Y: X = i / (N-1), Y the (i mod (N-1))-th other symbol.
void pool_replace(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    int x = (int)(i / (c->alphabet - 1)), y = (int)(i % (c->alphabet - 1));
    put_replace(n, x, y >= x ? y + 1 : y, o, prompt_len);
}

// X uniform, Y uniform over the other N-1 symbols: every ordered pair with probability 1/(N(N-1)).
void gen_replace(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)depth;
    int x = draw(r, c->alphabet), y = draw(r, c->alphabet - 1);
    put_replace(n, x, y >= x ? y + 1 : y, o, prompt_len);
}

// ---------------------------------------------------------------------------------------------
// retrieval

int max_find(const TaskConfig *c, int n) { (void)c; return n + 2 + KEY_DIGITS; }  // haystack "?L", DDDDD

// The embedded corpus with '\n', '=', '?', '#' and every non-printable byte made a space, so the
// filler never contains the instance's separators or a key marker. Built on first use and kept
// for the life of the process (the corpus is deterministic); `omp critical` makes the first use
// safe from parallel evaluation threads.
static const char *filler_text(size_t *len) {
    static char *text = NULL;
    static size_t text_len = 0;
    #pragma omp critical(tasks_filler_text)
    {
        if (!text) {
            size_t n = 0;
            char *t = data_default_corpus_text(&n);
            CHECK(n > 0, "the embedded corpus is empty; retrieval needs it for its filler");
            for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)t[i];
                if (ch == '\n' || ch == '=' || ch == '?' || ch == '#' || ch < 32 || ch > 126) t[i] = ' ';
            }
            text_len = n;
            text = t;
        }
    }
    *len = text_len;
    return text;
}

// Retrieval. The haystack is F = n - 9K filler tokens (a slice of the cleaned corpus from a random
// offset, wrapping at its end) with K = 1 + distractors keys "#L:DDDDD " inserted at K distinct
// insertion points 0..F (point p = before filler token p). Key 0 is the asked one; its point is
// round(depth * F) (depth < 0: uniform). Then "?L=" and its digits.
void gen_find(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    int K = 1 + c->distractors, F = n - KEY_TOKENS * K;
    // labels: a partial Fisher-Yates shuffle of the alphabet; label[0] is asked
    char label[26];
    for (int i = 0; i < 26; i++) label[i] = (char)('a' + i);
    for (int k = 0; k < K; k++) {
        int j = k + draw(r, 26 - k);
        char t = label[k]; label[k] = label[j]; label[j] = t;
    }
    // insertion points, distinct: point[0] at the depth, the others uniform over the free points
    int point[MAX_KEYS], used[MAX_KEYS];  // used: the points taken so far, ascending
    point[0] = depth < 0 ? draw(r, F + 1) : (int)(depth * F + 0.5);
    used[0] = point[0];
    for (int k = 1; k < K; k++) {
        int x = draw(r, F + 1 - k);  // the x-th free point: step over the taken ones at or below it
        for (int u = 0; u < k && used[u] <= x; u++) x++;
        point[k] = x;
        int u = k;  // insert x into the sorted list
        while (u > 0 && used[u - 1] > x) { used[u] = used[u - 1]; u--; }
        used[u] = x;
    }
    char digits[MAX_KEYS][KEY_DIGITS];
    for (int k = 0; k < K; k++)
        for (int d = 0; d < KEY_DIGITS; d++) digits[k][d] = (char)('0' + draw(r, 10));
    size_t text_len = 0;
    const char *text = filler_text(&text_len);
    size_t start = (size_t)(rng_u64(r) % text_len);
    // write: at each insertion point the key there (if any), then the filler token
    for (int p = 0; p <= F; p++) {
        for (int k = 0; k < K; k++) {
            if (point[k] != p) continue;
            put(o, '#'); put(o, label[k]); put(o, ':');
            for (int d = 0; d < KEY_DIGITS; d++) put(o, digits[k][d]);
            put(o, ' ');
        }
        if (p < F) put(o, (unsigned char)text[(start + (size_t)p) % text_len]);
    }
    put(o, '?'); put(o, label[0]);
    put_eq(o, prompt_len);
    for (int d = 0; d < KEY_DIGITS; d++) put(o, digits[0][d]);
}

