// dataset/tasks_math.c: the generators of the arithmetic and reasoning tasks (addition,
// polynomial evaluation, multi-digit sort, sum, parity, LEGO), behind dataset/tasks_impl.h's
// operations table. Forms (the NoPE paper's instances in bytes; docs/reproduce-nope.md):
//   addition   "A+B=S"                      A, B without leading zeros, the longer of n digits, the
//                                           pair of digit counts uniform
//   polynomial "X:T+T+...=V"                X the point, each term T = signed coefficient, 'x',
//                                           degree ("-2x2"), V the value mod 10 (0..9)
//   sort-multi "a,b,...=sorted"             n integers 10..9999 in decimal
//   sum        "ddd=s"                      digits 1..9, s their sum mod 10
//   parity     "bbb=e" / "=o"               bits, an even / odd number of 1s
//   lego       "v:+1,w:-v,...?q=-1"         a chain over distinct letters, one variable asked

#include <stdlib.h>
#include <string.h>

#include "dataset/tasks_impl.h"

enum {
    POLY_COEFFS = 7,    // coefficients -3..3
    POLY_DEGREES = 4,   // degrees 0..3
    POLY_XS = 5,        // x in -2..2
    POLY_POOL_TERMS = 8,
    SORTM_LO = 10, SORTM_VALUES = 9990,  // integers 10..9999
    LEGO_LETTERS = 26
};

// ---------------------------------------------------------------------------------------------
// addition

// Appends a random number of `len` decimal digits, most significant first, no leading zero
// (a one-digit number may be 0).
static void put_number(Out *o, int len, Rng *r) {
    put(o, len == 1 ? '0' + draw(r, 10) : '1' + draw(r, 9));
    for (int i = 1; i < len; i++) put(o, '0' + draw(r, 10));
}

// After "A+B" (A's la digits at a0, B's lb at b0, the longer of n digits): '=' and the sum,
// computed digit by digit from the written digits (no integer type limits n), written least
// significant first and then reversed in place.
static void finish_add(int n, Out *o, int a0, int la, int b0, int lb, int *prompt_len) {
    put_eq(o, prompt_len);
    int s0 = o->n, carry = 0;
    for (int i = 0; i < n; i++) {  // digit i from the right
        int da = i < la ? o->p[a0 + la - 1 - i] - '0' : 0;
        int db = i < lb ? o->p[b0 + lb - 1 - i] - '0' : 0;
        int d = da + db + carry;
        put(o, '0' + d % 10);
        carry = d / 10;
    }
    if (carry) put(o, '1');
    while (o->n - s0 > 1 && o->p[o->n - 1] == '0') o->n--;  // "0+0=0": drop leading zeros of the sum
    for (int i = s0, j = o->n - 1; i < j; i++, j--) {
        int t = o->p[i]; o->p[i] = o->p[j]; o->p[j] = t;
    }
}

// A + B = S, the pair of digit counts (la, lb) uniform over the 2n - 1 pairs whose longer is n:
// (n, 1..n), then (1..n-1, n). With lengths weighted by 2n - 1 (weight_add) the two counts are
// independent and uniform, as the NoPE paper's builder draws them: it loops over every (a, b) bin of
// the grid of counts with the same number of instances (scripts/dataset_builders/
// make_addition_dataset.py), and its length is the longer count. Within a count, each number is
// uniform (no leading zero but for a one-digit number).
void gen_add(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)c; (void)depth;
    int x = draw(r, 2 * n - 1);
    int la = x < n ? n : x - n + 1, lb = x < n ? x + 1 : n;
    int a0 = o->n;
    put_number(o, la, r);
    put(o, '+');
    int b0 = o->n;
    put_number(o, lb, r);
    finish_add(n, o, a0, la, b0, lb, prompt_len);
}

int max_add(const TaskConfig *c, int n) { (void)c; return 2 * n + 1 + n + 1; }  // A '+' B, one carry digit

long long weight_add(const TaskConfig *c, int n) { (void)c; return 2LL * n - 1; }   // pairs of counts, longer n

long long size_add(const TaskConfig *c, int n) {  // pairs in [0, 10^n)^2 less those in [0, 10^(n-1))^2
    (void)c;
    long long hi = task_small_power(10, n), lo = n > 1 ? task_small_power(10, n - 1) : 0;
    if (hi < 0 || hi > TASK_POOL_MAX / hi) return -1;
    long long p = hi * hi - lo * lo;
    return p <= TASK_POOL_MAX ? p : -1;
}

// Appends v in decimal, no leading zero; returns its digits.
static int put_decimal(Out *o, long long v) {
    char d[24];
    int k = snprintf(d, sizeof d, "%lld", v);
    put_str(o, d);
    return k;
}

// Addition's pair number i: the pairs (A, B) in [0, M)^2 (M = 10^n) without both below m = 10^(n-1)
// (m = 0 for n = 1), in row-major order: rows A < m hold the B in [m, M), the other rows every B.
static void add_pair(int n, long long i, long long *a, long long *b) {
    long long M = task_small_power(10, n), m = n > 1 ? task_small_power(10, n - 1) : 0;
    if (i < m * (M - m)) { *a = i / (M - m); *b = m + i % (M - m); }
    else { i -= m * (M - m); *a = m + i / M; *b = i % M; }
}

void pool_add(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    (void)c;
    long long a, b;
    add_pair(n, i, &a, &b);
    int a0 = o->n, la = put_decimal(o, a);
    put(o, '+');
    int b1 = o->n, lb = put_decimal(o, b);
    finish_add(n, o, a0, la, b1, lb, prompt_len);
}

// ---------------------------------------------------------------------------------------------
// polynomial evaluation

// A signed digit: "+d" or "-d" (0 as "+0").
static void put_signed(Out *o, int v) {
    put(o, v < 0 ? '-' : '+');
    put(o, '0' + (v < 0 ? -v : v));
}

// x, then n terms from coef[] and deg[]; '=' and sum coef x^deg mod 10 in 0..9 (x^0 = 1, also at x = 0).
static void put_poly(int n, int x, const int *coef, const int *deg, Out *o, int *prompt_len) {
    put_signed(o, x);
    put(o, ':');
    int value = 0;
    for (int k = 0; k < n; k++) {
        if (k) put(o, '+');
        put_signed(o, coef[k]);
        put(o, 'x');
        put(o, '0' + deg[k]);
        int p = 1;
        for (int d = 0; d < deg[k]; d++) p *= x;
        value = (value + coef[k] * p) % 10;   // |value| < 10 before each step: no overflow
    }
    put_eq(o, prompt_len);
    put(o, '0' + (value % 10 + 10) % 10);
}

int max_poly(const TaskConfig *c, int n) { (void)c; return 3 + 5 * n - 1 + 1; }  // "+X:", terms of 4 and '+', V

long long size_poly(const TaskConfig *c, int n) {
    (void)c;
    long long terms = task_small_power(POLY_COEFFS * POLY_DEGREES, n);
    return terms >= 0 && terms <= TASK_POOL_MAX / POLY_XS ? terms * POLY_XS : -1;
}

// Instance i: x = i mod 5 - 2, then the terms as base-28 digits of i / 5, the first term highest;
// term digit t is coefficient t mod 7 - 3, degree t / 7.
void pool_poly(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    (void)c;
    int coef[POLY_POOL_TERMS], deg[POLY_POOL_TERMS];   // a pool of 5 x 28^n <= TASK_POOL_MAX has n <= 3
    CHECK(n <= POLY_POOL_TERMS, "polynomial: %d terms is more than a numbered pool holds", n);
    int x = (int)(i % POLY_XS) - 2;
    i /= POLY_XS;
    for (int k = n - 1; k >= 0; k--, i /= POLY_COEFFS * POLY_DEGREES) {
        int t = (int)(i % (POLY_COEFFS * POLY_DEGREES));
        coef[k] = t % POLY_COEFFS - 3;
        deg[k] = t / POLY_COEFFS;
    }
    put_poly(n, x, coef, deg, o, prompt_len);
}

// As the paper's builder: coefficients uniform in -3..3, degrees in 0..3, x in -2..2.
void gen_poly(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)c; (void)depth;
    int *coef = xmalloc(sizeof(int) * 2 * (size_t)n), *deg = coef + n;   // (n,) each
    for (int k = 0; k < n; k++) coef[k] = draw(r, POLY_COEFFS) - 3;
    for (int k = 0; k < n; k++) deg[k] = draw(r, POLY_DEGREES);
    int x = draw(r, POLY_XS) - 2;
    put_poly(n, x, coef, deg, o, prompt_len);
    free(coef);
}

// ---------------------------------------------------------------------------------------------
// multi-digit sort

static int cmp_int(const void *x, const void *y) {
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

static void put_list(Out *o, const int *v, int n) {
    char d[8];
    for (int k = 0; k < n; k++) {
        if (k) put(o, ',');
        snprintf(d, sizeof d, "%d", v[k]);
        put_str(o, d);
    }
}

// The n integers v (overwritten: sorted), '=' and them in increasing order.
static void put_sortm(int n, int *v, Out *o, int *prompt_len) {
    put_list(o, v, n);
    put_eq(o, prompt_len);
    qsort(v, (size_t)n, sizeof(int), cmp_int);
    put_list(o, v, n);
}

int max_sortm(const TaskConfig *c, int n) { (void)c; return 2 * (5 * n - 1); }  // 4 digits and ',' each
long long size_sortm(const TaskConfig *c, int n) { (void)c; return task_small_power(SORTM_VALUES, n); }

// Instance i: n base-9990 digits, the first highest, digit t standing for 10 + t.
void pool_sortm(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    (void)c;
    int *v = xmalloc(sizeof(int) * (size_t)n);   // (n,)
    for (int k = n - 1; k >= 0; k--, i /= SORTM_VALUES) v[k] = SORTM_LO + (int)(i % SORTM_VALUES);
    put_sortm(n, v, o, prompt_len);
    free(v);
}

void gen_sortm(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)c; (void)depth;
    int *v = xmalloc(sizeof(int) * (size_t)n);   // (n,)
    for (int k = 0; k < n; k++) v[k] = SORTM_LO + draw(r, SORTM_VALUES);
    put_sortm(n, v, o, prompt_len);
    free(v);
}

// ---------------------------------------------------------------------------------------------
// sum and parity

// The body of n digits (sum: 1..9; parity: 0/1) is written: '=' and the sum mod 10, or 'e'/'o'
// for an even/odd count of 1s.
static void finish_digits(const TaskConfig *c, int n, Out *o, int b0, int *prompt_len) {
    int acc = 0;
    for (int i = 0; i < n; i++) acc += o->p[b0 + i] - '0';
    put_eq(o, prompt_len);
    put(o, c->task == T_SUM ? '0' + acc % 10 : (acc % 2 ? 'o' : 'e'));
}

int max_digits(const TaskConfig *c, int n) { (void)c; return n + 1; }
long long size_digits(const TaskConfig *c, int n) { return task_small_power(c->task == T_SUM ? 9 : 2, n); }

// Instance i: n base-9 digits (sum, digit t standing for 1 + t) or bits (parity), the first highest.
void pool_digits(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    int base = c->task == T_SUM ? 9 : 2, lo = c->task == T_SUM ? 1 : 0, b0 = o->n;
    for (int k = 0; k < n; k++) put(o, 0);
    for (int k = n - 1; k >= 0; k--, i /= base) o->p[b0 + k] = '0' + lo + (int)(i % base);
    finish_digits(c, n, o, b0, prompt_len);
}

void gen_digits(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)depth;
    int b0 = o->n;
    for (int i = 0; i < n; i++) put(o, '0' + (c->task == T_SUM ? 1 + draw(r, 9) : draw(r, 2)));
    finish_digits(c, n, o, b0, prompt_len);
}

// ---------------------------------------------------------------------------------------------
// LEGO

int max_lego(const TaskConfig *c, int n) { (void)c; return 5 * n - 1 + 2 + 2; }  // clauses of 4 and ',', "?q", "+1"

// As the paper's builder (after Zhang et al.'s LEGO): the variables are the first n letters of a
// random permutation of a..z; the first is -1 or +1, each next is "+" (equal) or "-" (negated)
// the one before, each value uniform; the clauses in chain order (the builder's default, without
// --permute_clauses); the asked variable uniform over the second half of the chain, indices
// ceil(n/2)..n-1. "q:-1" is q = -1, "t:-q" is t = -q.
void gen_lego(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)c; (void)depth;
    char var[LEGO_LETTERS];
    int value[LEGO_LETTERS];   // (n,) +1 or -1
    for (int i = 0; i < LEGO_LETTERS; i++) var[i] = (char)('a' + i);
    for (int i = 0; i < n; i++) {   // a partial Fisher-Yates shuffle: the chain's letters
        int j = i + draw(r, LEGO_LETTERS - i);
        char t = var[i]; var[i] = var[j]; var[j] = t;
    }
    for (int i = 0; i < n; i++) value[i] = draw(r, 2) ? 1 : -1;
    int q = (n + 1) / 2 + draw(r, n - (n + 1) / 2);
    for (int i = 0; i < n; i++) {
        if (i) put(o, ',');
        put(o, var[i]);
        put(o, ':');
        if (i == 0) { put(o, value[0] > 0 ? '+' : '-'); put(o, '1'); }
        else { put(o, value[i] == value[i - 1] ? '+' : '-'); put(o, var[i - 1]); }
    }
    put(o, '?');
    put(o, var[q]);
    put_eq(o, prompt_len);
    put(o, value[q] > 0 ? '+' : '-');
    put(o, '1');
}
