// tests/test_tasks_sets.c: the synthetic tasks (dataset/tasks.h), their instances in bulk: the
// train/validation/test split by content hash (empty classes, the fraction, no string in two
// classes), the test lengths and depths, the packed training batches, the numbered pools and the
// evaluation sets drawn from them, and the default alphabet. Instances are read back by
// tests/task_reader.h; tests/test_tasks.c checks them one by one.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/common.h"
#include "dataset/tasks.h"
#include "tests/task_reader.h"
#include "tests/testutil.h"

// A length whose instances all hash to other classes gives 0 for this one: parity n=1 has exactly
// two instances, so whether each class is empty is known here.
static void test_empty_split(void) {
    TaskConfig c;
    letters_defaults(&c, PAR);
    const char *all[2] = {"par:0=e\n", "par:1=o\n"};
    int has[3] = {0, 0, 0};
    for (int i = 0; i < 2; i++) has[class_of_string(all[i], 8)] = 1;
    int tok[64];
    Rng r;
    rng_seed(&r, 3);
    for (int split = 0; split < 3; split++) {
        int p, len = task_instance(&c, 1, -1.0, split, &r, tok, 64, &p);
        EXPECT((len > 0) == has[split], "parity n=1 split %d: got %d tokens, the split has %s", split, len,
               has[split] ? "an instance" : "none");
    }
}

// The hash rule reserves about 1 in TASK_SPLIT_MOD of every task's instances: all 676 copy and
// reverse instances of two letters, all 729 sum instances of three digits.
static void test_split_fraction(void) {
    const char *fmt[3] = {"copy:%c%c=%c%c\n", "rev:%c%c=%c%c\n", "sum:%c%c%c=%c\n"};
    for (int f = 0; f < 3; f++) {
        int test = 0, all = 0;
        for (int a = 0; a < 26; a++)
            for (int b = 0; b < 26; b++)
                for (int d = 0; d < (f == 2 ? 27 : 1); d++) {
                    char s[32];
                    int len;
                    if (f == 0) len = snprintf(s, sizeof s, fmt[0], 'a' + a, 'a' + b, 'a' + a, 'a' + b);
                    else if (f == 1) len = snprintf(s, sizeof s, fmt[1], 'a' + a, 'a' + b, 'a' + b, 'a' + a);
                    else {
                        if (a >= 9 || b >= 9 || d >= 9) continue;
                        len = snprintf(s, sizeof s, fmt[2], '1' + a, '1' + b, '1' + d, '0' + (a + b + d + 3) % 10);
                    }
                    test += is_test_string(s, len);
                    all++;
                }
        double frac = (double)test / all;
        EXPECT(frac > 0.08 && frac < 0.17, "%.4s: %d of %d instances are test (%.3f)", fmt[f], test, all, frac);
    }
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

// 2000 train, 2000 test and 2000 validation instances at a small length: no string is in two
// classes; every instance of the tiny copy-repeat space lands in exactly one.
static void test_disjoint(void) {
    enum { M = 2000, S = 3 * M };
    int tasks[] = {COPY, SORT, PAR, REP, REPL, POLY, SORTM, SUM, LEGO, ADD};
    int lens[] = {3, 4, 8, 4, 3, 4, 4, 5, 4, 3};
    for (int ti = 0; ti < (int)(sizeof tasks / sizeof *tasks); ti++) {
        TaskConfig c;
        letters_defaults(&c, tasks[ti]);
        char **str = xmalloc(S * sizeof(char *));
        int *split_of = xmalloc(S * sizeof(int));
        Rng r;
        rng_seed(&r, 100 + (uint64_t)ti);
        int tok[256], k = 0, wrong = 0;
        for (int split = 0; split < 3; split++)
            for (int i = 0; i < M; i++) {
                int p, len = task_instance(&c, lens[ti], -1.0, split, &r, tok, 256, &p);
                CHECK(len > 0, "test_disjoint: no instance of %s at %d", NAMES[tasks[ti]], lens[ti]);
                str[k] = xmalloc((size_t)len + 1);
                to_bytes(tok, len, str[k]);
                if (class_of_string(str[k], len) != split) wrong++;
                split_of[k++] = split;
            }
        EXPECT(wrong == 0, "%s: %d instances in the wrong split by the hash rule", NAMES[tasks[ti]], wrong);
        // sort the strings, remembering their split through a side array
        char **sorted = xmalloc(S * sizeof(char *));
        memcpy(sorted, str, S * sizeof(char *));
        qsort(sorted, S, sizeof(char *), cmp_str);
        int shared = 0, distinct = 1;
        for (int i = 1; i < S; i++) {
            if (strcmp(sorted[i], sorted[i - 1]) == 0) {
                // find the splits of the two equal strings
                int sa = -1, sb = -1;
                for (int j = 0; j < S; j++) {
                    if (str[j] == sorted[i]) sa = split_of[j];
                    if (str[j] == sorted[i - 1]) sb = split_of[j];
                }
                if (sa != sb) shared++;
            } else {
                distinct++;
            }
        }
        EXPECT(shared == 0, "%s n=%d: %d strings appear in two classes", NAMES[tasks[ti]], lens[ti], shared);
        EXPECT(distinct > 20, "%s n=%d: only %d distinct instances", NAMES[tasks[ti]], lens[ti], distinct);
        for (int i = 0; i < S; i++) free(str[i]);
        free(str); free(sorted); free(split_of);
    }
}

static void test_lengths(void) {
    TaskConfig c;
    int l[128];
    letters_defaults(&c, 0);
    int k = task_test_lengths(&c, l, 128);
    int ok = k == 40;
    for (int i = 0; ok && i < k; i++) ok = l[i] == i + 1;
    EXPECT(ok, "copy test lengths: 1..40 (got %d)", k);
    EXPECT(task_test_lengths(&c, l, 10) == 10 && l[9] == 10, "test lengths stop at cap");
    double d[8];
    EXPECT(task_test_depths(&c, d, 8) == 1 && d[0] == -1.0, "copy test depths: one entry, -1");
    letters_defaults(&c, RETRIEVAL);
    k = task_test_lengths(&c, l, 128);
    EXPECT(k == 4 && l[0] == 64 && l[1] == 128 && l[2] == 256 && l[3] == 512, "retrieval test lengths 64..512 (got %d)", k);
    c.train_min = 44;
    k = task_test_lengths(&c, l, 128);
    EXPECT(k == 4 && l[0] == 44 && l[3] == 352, "retrieval from 44: 44, 88, 176, 352 (got %d, last %d)", k, l[k - 1]);
    c.n_depths = 1;
    EXPECT(task_test_depths(&c, d, 8) == 1 && d[0] == 0.5, "one depth: the middle");
    letters_defaults(&c, LEGO);
    k = task_test_lengths(&c, l, 128);
    EXPECT(k == 15 && l[0] == 2 && l[14] == 16, "lego test lengths: 2..16, a chain of one has no second half (got %d)", k);
}

// Packed batches: each row is whole training instances (docs 0, 1, ... with positions from 0),
// then padding; weights exactly on the tokens that predict a target token; targets the next token.
// Returns the number of instances; appends their lengths n to ns (when not NULL).
static int check_batch(int task, const Batch *b, int *ns, int *first_len, int *pad_len) {
    int count = 0, bad = 0;
    char s[BUF + 1];
    for (int row = 0; row < b->B; row++) {
        const int *tok = b->tokens + (size_t)row * b->T, *tg = b->targets + (size_t)row * b->T;
        const int *pos = b->pos + (size_t)row * b->T, *doc = b->doc + (size_t)row * b->T;
        const float *w = b->weights + (size_t)row * b->T;
        int t = 0, d = 0;
        double wsum = 0, target_sum = 0;
        while (t < b->T && doc[t] >= 0) {
            int len = 0;
            while (t + len < b->T && doc[t + len] == d) len++;
            if (len == 0) {  // doc ids must count 0, 1, 2, ... then -1
                bad++;
                fprintf(stderr, "  row %d token %d: doc %d, expected %d or -1\n", row, t, doc[t], d);
                break;
            }
            for (int i = 0; i < len; i++) s[i] = (char)tok[t + i];
            s[len] = '\0';
            Parsed pr;
            const char *why = check_instance(task, s, len, &pr);
            if (why || class_of_string(s, len) != TASK_TRAIN) {
                if (bad++ < 3) fprintf(stderr, "  row %d doc %d: %s: %.60s\n", row, d, why ? why : "not a training instance", s);
            } else {
                for (int i = 0; i < len; i++) {
                    int want_w = i + 1 >= pr.prompt_len && i + 1 < len;
                    int want_tg = i + 1 < len ? tok[t + i + 1] : '\n';
                    if (pos[t + i] != i || tg[t + i] != want_tg || w[t + i] != (float)want_w) {
                        if (bad++ < 3) fprintf(stderr, "  row %d doc %d token %d: pos %d target %d weight %g\n", row, d, i,
                                               pos[t + i], tg[t + i], w[t + i]);
                        break;
                    }
                    wsum += w[t + i];
                }
                target_sum += pr.target_len;  // the target tokens, '\n' included
                if (ns) ns[count] = pr.n;
            }
            if (d == 0 && first_len) first_len[row] = len;
            count++;
            t += len;
            d++;
        }
        if (d == 0) { bad++; fprintf(stderr, "  row %d has no instance\n", row); }
        if (pad_len) pad_len[row] = b->T - t;
        for (; t < b->T; t++)
            if (doc[t] != -1 || w[t] != 0.0f || pos[t] != 0 || tok[t] != '\n' || tg[t] != '\n') {
                if (bad++ < 3) fprintf(stderr, "  row %d token %d: bad padding (doc %d)\n", row, t, doc[t]);
                break;
            }
        if (wsum != target_sum) {
            bad++;
            fprintf(stderr, "  row %d: weights sum to %g, targets have %g tokens\n", row, wsum, target_sum);
        }
    }
    EXPECT(bad == 0, "%s: %d problems in a packed batch", NAMES[task], bad);
    return count;
}

static void test_fill_batch(void) {
    for (int task = 0; task < N_TASKS; task++) {
        if (task == PCFG) continue;              // tokens past the bytes: tests/test_tasks.c reads them
        TaskConfig c;
        letters_defaults(&c, task);
        int T = task_max_tokens(&c, c.train_max) + 5;
        if (T < 64) T = 64;
        Batch b;
        batch_alloc(&b, 6, T);
        Rng r;
        rng_seed(&r, 31);
        int first_len[6], pad_len[6];
        int total = 0;
        for (int k = 0; k < 3; k++) {
            task_fill_batch(&c, &r, &b);
            total += check_batch(task, &b, NULL, first_len, pad_len);
            // a row ends only when the next instance (which opens the next row) does not fit
            for (int row = 0; row + 1 < 6; row++)
                EXPECT(pad_len[row] < first_len[row + 1], "%s row %d: %d tokens of padding, yet the next instance (%d) "
                       "was not packed there", NAMES[task], row, pad_len[row], first_len[row + 1]);
        }
        EXPECT(total >= 18, "%s: %d instances in 3 batches of 6 rows", NAMES[task], total);
        batch_free(&b);
    }

    // nothing is dropped: one batch of 4 rows equals four batches of 1 row from the same seed
    TaskConfig c;
    letters_defaults(&c, REV);
    Batch b4, b1;
    batch_alloc(&b4, 4, 50);
    batch_alloc(&b1, 1, 50);
    Rng r4, r1;
    rng_seed(&r4, 77);
    rng_seed(&r1, 77);
    task_fill_batch(&c, &r4, &b4);
    int same = 1;
    for (int row = 0; row < 4; row++) {
        task_fill_batch(&c, &r1, &b1);
        same &= memcmp(b1.tokens, b4.tokens + row * 50, 50 * sizeof(int)) == 0 &&
                memcmp(b1.doc, b4.doc + row * 50, 50 * sizeof(int)) == 0;
    }
    EXPECT(same, "four 1-row batches differ from one 4-row batch: an instance was dropped at a row end");
    EXPECT(r1.s == r4.s, "the Rng ends in the same state either way");
    batch_free(&b4);
    batch_free(&b1);

    // training lengths are uniform over [train_min, train_max]
    letters_defaults(&c, 0);
    Batch b;
    batch_alloc(&b, 16, 64);
    Rng r;
    rng_seed(&r, 5);
    int hist[21] = {0}, ns[16 * 64], n_all = 0;
    for (int k = 0; k < 100; k++) {
        task_fill_batch(&c, &r, &b);
        int m = check_batch(0, &b, ns, NULL, NULL);
        for (int i = 0; i < m; i++) {
            if (ns[i] >= 1 && ns[i] <= 20) hist[ns[i]]++;
            n_all++;
        }
    }
    int lo = n_all, hi = 0;
    for (int n = 2; n <= 20; n++) {
        if (hist[n] < lo) lo = hist[n];
        if (hist[n] > hi) hi = hist[n];
    }
    EXPECT(hist[1] == 0, "copy trains from length 2, yet drew %d instances of length 1", hist[1]);
    double mean = n_all / 19.0;
    EXPECT(lo > 0.75 * mean && hi < 1.25 * mean, "copy training lengths not uniform: counts %d..%d, mean %.1f", lo, hi, mean);
    batch_free(&b);
}

// Pool sizes counted by hand, and the numbering covers the pool exactly: instance i of every i is
// a correct instance of length n, no two are equal, and every instance the generator draws is one
// of them.
static uint64_t tok_hash(const int *t, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) { h ^= (uint64_t)t[i]; h *= 1099511628211ull; }
    return h;
}
static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void test_pools(void) {
    struct { int task, alphabet, n; long long want; } sizes[] = {
        {PAR, 0, 3, 8}, {PAR, 0, 20, 1 << 20}, {PAR, 0, 21, -1}, {ADD, 0, 1, 100}, {ADD, 0, 2, 9900}, {ADD, 0, 3, 990000},
        {ADD, 0, 4, -1}, {SUM, 0, 2, 81}, {COPY, 5, 3, 125}, {SORT, 26, 2, 676}, {REP, 640, 40, 640}, {SUCC, 7, 9, 7},
        {COPY, 640, 2, 409600}, {COPY, 640, 3, -1}, {RETRIEVAL, 0, 64, -1},
        {REPL, 26, 5, 650}, {REPL, 640, 30, 408960}, {REPL, 1024, 2, 1047552}, {REPL, 1025, 2, -1},  // N (N - 1)
        {POLY, 0, 1, 140}, {POLY, 0, 3, 109760}, {POLY, 0, 4, -1},   // 5 x 28^n: x, then (coefficient, degree)
        {SORTM, 0, 1, 9990}, {SORTM, 0, 2, -1}, {LEGO, 0, 4, -1}, {COPY2X, 3, 4, 81}, {REVCP, 3, 4, 81},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        TaskConfig c;
        task_defaults(&c, sizes[i].task);
        if (sizes[i].alphabet) c.alphabet = sizes[i].alphabet;
        long long got = task_pool_size(&c, sizes[i].n);
        EXPECT(got == sizes[i].want, "%s n=%d alphabet %d: pool %lld, want %lld", NAMES[sizes[i].task], sizes[i].n,
               sizes[i].alphabet, got, sizes[i].want);
    }
    // coverage on small pools, byte alphabets so check_instance reads them
    struct { int task, n; } cover[] = {
        {COPY, 2}, {COPY2X, 2}, {REP, 5}, {REP2X, 3}, {REPL, 4}, {SUCC, 4}, {REV, 3}, {REV2X, 2}, {REVCP, 2}, {ADD, 1},
        {ADD, 2}, {SORT, 3}, {SUM, 4}, {PAR, 6}, {POLY, 1}, {POLY, 2}, {SORTM, 1},
    };
    for (size_t ci = 0; ci < sizeof cover / sizeof *cover; ci++) {
        int task = cover[ci].task, n = cover[ci].n, tok[BUF], p;
        char s[BUF + 1];
        TaskConfig c;
        letters_defaults(&c, task);
        long long P = task_pool_size(&c, n);
        uint64_t *h = xmalloc(sizeof(uint64_t) * (size_t)P);
        int bad = 0;
        for (long long i = 0; i < P; i++) {
            int len = task_pool_instance(&c, n, i, tok, BUF, &p);
            to_bytes(tok, len, s);
            Parsed pr;
            const char *why = check_instance(task, s, len, &pr);
            if (why || pr.n != n || pr.prompt_len != p) {
                if (bad++ < 3) fprintf(stderr, "  %s n=%d instance %lld: %s: %s", NAMES[task], n, i, why ? why : "wrong length", s);
            }
            h[i] = tok_hash(tok, len);
        }
        qsort(h, (size_t)P, sizeof *h, cmp_u64);
        int dup = 0;
        for (long long i = 1; i < P; i++) dup += h[i] == h[i - 1];
        Rng r;
        rng_seed(&r, 40 + ci);
        int missing = 0;
        for (int k = 0; k < 300; k++) {
            int len = task_instance(&c, n, -1.0, k % 3, &r, tok, BUF, &p);
            if (!len) continue;
            uint64_t x = tok_hash(tok, len);
            missing += bsearch(&x, h, (size_t)P, sizeof *h, cmp_u64) == NULL;
        }
        EXPECT(bad == 0 && dup == 0 && missing == 0, "%s n=%d: %d bad, %d repeated, %d drawn instances not numbered (pool %lld)",
               NAMES[task], n, bad, dup, missing, P);
        free(h);
    }
}

// A set's instances: all distinct, all of the class, at length n.
static int set_problems(const TaskConfig *c, int n, int split, const TaskSet *s) {
    int bad = 0;
    uint64_t *h = xmalloc(sizeof(uint64_t) * (size_t)(s->count + 1));
    for (int i = 0; i < s->count; i++) {
        const int *t = s->tokens + (size_t)i * s->stride;
        char str[BUF + 1];
        to_bytes(t, s->len[i], str);
        Parsed pr;
        if (check_instance(c->task, str, s->len[i], &pr) || pr.n != n || pr.prompt_len != s->prompt_len[i] ||
            class_at(c, n, str, s->len[i]) != split) bad++;
        h[i] = tok_hash(t, s->len[i]);
    }
    qsort(h, (size_t)s->count, sizeof *h, cmp_u64);
    for (int i = 1; i < s->count; i++) bad += h[i] == h[i - 1];
    free(h);
    return bad;
}

// Enumeration: a small pool gives each instance of the class exactly once; fewer asked gives that
// many, distinct, of the class; no pool: distinct draws of the class. The same seed, the same set.
static void test_eval_sets(void) {
    TaskConfig c;
    letters_defaults(&c, 0);                                   // copy, n = 2: 676 instances
    int want[3] = {0, 0, 0}, tok[BUF], p;
    for (long long i = 0; i < 676; i++) {
        int len = task_pool_instance(&c, 2, i, tok, BUF, &p);
        char s[64];
        to_bytes(tok, len, s);
        want[class_of_string(s, len)]++;
    }
    EXPECT(want[0] + want[1] + want[2] == 676 && want[1] > 40 && want[2] > 40, "copy n=2 classes %d %d %d", want[0], want[1], want[2]);
    for (int split = 0; split < 3; split++) {
        TaskSet s;
        int got = task_eval_set(&c, 2, -1.0, split, 100000, 5, &s);
        EXPECT(got == want[split] && s.pool == want[split] && set_problems(&c, 2, split, &s) == 0,
               "copy n=2 class %d: %d instances (pool %lld), want every one of %d, once", split, got, s.pool, want[split]);
        task_set_free(&s);
    }
    TaskSet a, b;
    task_eval_set(&c, 2, -1.0, TASK_TEST, 30, 5, &a);
    task_eval_set(&c, 2, -1.0, TASK_TEST, 30, 5, &b);
    EXPECT(a.count == 30 && a.pool == want[TASK_TEST] && set_problems(&c, 2, TASK_TEST, &a) == 0,
           "30 of the copy n=2 test pool: %d, pool %lld", a.count, a.pool);
    EXPECT(a.count == b.count && memcmp(a.tokens, b.tokens, sizeof(int) * (size_t)a.count * a.stride) == 0, "same seed, same set");
    task_set_free(&b);
    task_eval_set(&c, 2, -1.0, TASK_TEST, 30, 6, &b);
    EXPECT(memcmp(a.tokens, b.tokens, sizeof(int) * (size_t)a.count * a.stride) != 0, "seeds 5 and 6 choose the same 30");
    task_set_free(&a); task_set_free(&b);
    // no pool (26^5 > TASK_POOL_MAX): sampled, distinct, of the class
    EXPECT(task_pool_size(&c, 5) < 0, "copy n=5 is not enumerated");
    TaskSet s;
    int got = task_eval_set(&c, 5, -1.0, TASK_VAL, 500, 9, &s);
    EXPECT(got == 500 && s.pool == -1 && set_problems(&c, 5, TASK_VAL, &s) == 0, "copy n=5: %d distinct validation instances", got);
    task_set_free(&s);
    // sum n=7 (9^7 > TASK_POOL_MAX): sampled; 2000 distinct of about 600,000 test instances
    letters_defaults(&c, SUM);
    got = task_eval_set(&c, 7, -1.0, TASK_TEST, 2000, 3, &s);
    EXPECT(got == 2000 && set_problems(&c, 7, TASK_TEST, &s) == 0, "sum n=7: %d distinct test instances", got);
    task_set_free(&s);
    // parity n=1: a class without an instance gives an empty set, not an error
    letters_defaults(&c, PAR);
    int total = 0;
    for (int split = 0; split < 3; split++) {
        total += task_eval_set(&c, 1, -1.0, split, 50, 1, &s);
        EXPECT(s.count == s.pool, "parity n=1 class %d: %d instances, pool %lld", split, s.count, s.pool);
        task_set_free(&s);
    }
    EXPECT(total == 2, "parity n=1: %d instances over the classes, want 2", total);
}

// The share of addition instances (prompt "A+B=") in which both operands have n digits.
static double add_both_long(const int *tok, const int *len, int count, int stride, int n) {
    int both = 0;
    for (int j = 0; j < count; j++) {
        char str[BUF];
        to_bytes(tok + (size_t)j * stride, len[j], str);
        const char *a = strchr(str, ':'), *plus = strchr(str, '+'), *eq = strchr(str, '=');
        a = a ? a + 1 : str;
        both += plus && eq && plus - a == n && eq - plus - 1 == n;
    }
    return count ? (double)both / count : -1.0;
}

// Addition's evaluation sets are drawn as training draws, at lengths whose pool is enumerated (n = 3)
// and at sampled ones (n = 5): the generator's pair of digit counts is uniform over the 2n - 1 pairs
// whose longer is n, so both operands have n digits in about 1/(2n - 1) of its draws, where a
// uniform choice from the enumerated pool gave 81% at n = 3 (the test at n <= 3 was another
// distribution than training's). The generator before the paper's grid (the shorter count uniform
// in 1..n) gave 1/n: 0.33 at n = 3, 0.20 at n = 5, outside these bounds.
static void test_add_eval_distribution(void) {
    TaskConfig c;
    letters_defaults(&c, ADD);
    int stride = task_max_tokens(&c, 3), p;
    enum { DRAWS = 3000 };
    int *tok = malloc(sizeof(int) * (size_t)DRAWS * stride), *len = malloc(sizeof(int) * DRAWS);
    Rng r;
    rng_seed(&r, 21);
    for (int j = 0; j < DRAWS; j++) len[j] = task_instance(&c, 3, -1.0, TASK_TRAIN, &r, tok + (size_t)j * stride, stride, &p);
    double train = add_both_long(tok, len, DRAWS, stride, 3);
    free(tok); free(len);
    EXPECT(train > 0.16 && train < 0.24, "addition n=3 training draws: %.3f with both operands of 3 digits, want about 1/5", train);
    TaskSet s;
    long long pool = task_pool_size(&c, 3);
    int got = task_eval_set(&c, 3, -1.0, TASK_TEST, 1000, 4, &s);
    double test3 = add_both_long(s.tokens, s.len, s.count, s.stride, 3);
    EXPECT(pool > 0 && got == 1000 && s.pool > 1000 && s.pool < pool && set_problems(&c, 3, TASK_TEST, &s) == 0,
           "addition n=3: %d distinct test instances, pool %lld of %lld", got, s.pool, pool);
    EXPECT(test3 > 0.15 && test3 < 0.25, "addition n=3 test set: %.3f with both operands of 3 digits, training %.3f", test3, train);
    task_set_free(&s);
    EXPECT(task_pool_size(&c, 5) < 0, "addition n=5 is not enumerated");
    got = task_eval_set(&c, 5, -1.0, TASK_TEST, 1000, 4, &s);
    double test5 = add_both_long(s.tokens, s.len, s.count, s.stride, 5);
    EXPECT(got == 1000 && test5 > 0.08 && test5 < 0.145, "addition n=5 test set: %d, %.3f with both of 5 digits, want about 1/9", got, test5);
    task_set_free(&s);
    // every test instance of a small pool is still taken when fewer than asked: n = 1's whole class
    got = task_eval_set(&c, 1, -1.0, TASK_TEST, 1000, 4, &s);
    EXPECT(got == s.pool && set_problems(&c, 1, TASK_TEST, &s) == 0, "addition n=1: %d of a test pool of %lld", got, s.pool);
    task_set_free(&s);
}

// The instances of a packed training batch as byte strings (each document's tokens), appended to
// out (cap strings of BUF bytes); returns the new count. Every token must be a byte.
static int batch_strings(const Batch *b, char (*out)[BUF], int k, int cap) {
    for (int row = 0; row < b->B; row++)
        for (int t = 0; t < b->T && k < cap;) {
            const int *doc = b->doc + (size_t)row * b->T;
            if (doc[t] < 0) break;
            int e = t;
            while (e < b->T && doc[e] == doc[t]) e++;
            to_bytes(b->tokens + (size_t)row * b->T + t, e - t, out[k++]);
            t = e;
        }
    return k;
}

// Addition trains on the NoPE paper's grid of digit counts: both operands' counts independent and
// uniform over 1..8 (its builder loops over every (a, b) bin with the same number of instances), so
// equal counts are 8 of the 64 bins (12.5%) and the longer has n digits with probability
// (2n - 1)/64. The generator before it (the longer's count uniform, the shorter's uniform in 1..n)
// gave equal counts in H(8)/8 = 34% of the instances and every longer count 1/8: it fails both.
static void test_add_training_counts(void) {
    enum { M = 24000 };
    TaskConfig c;
    task_defaults(&c, ADD);
    Batch b;
    batch_alloc(&b, 16, 64);
    Rng r;
    rng_seed(&r, 41);
    char (*str)[BUF] = xmalloc(sizeof(*str) * M);
    int k = 0;
    while (k < M) { task_fill_batch(&c, &r, &b); k = batch_strings(&b, str, k, M); }
    int count_a[9] = {0}, count_b[9] = {0}, longer[9] = {0}, equal = 0, bad = 0;
    for (int i = 0; i < k; i++) {
        const char *a = strchr(str[i], ':'), *plus = strchr(str[i], '+'), *eq = strchr(str[i], '=');
        int la = a && plus ? (int)(plus - a - 1) : 0, lb = plus && eq ? (int)(eq - plus - 1) : 0;
        Parsed pr;
        if (la < 1 || la > 8 || lb < 1 || lb > 8 || check_instance(ADD, str[i], (int)strlen(str[i]), &pr)) { bad++; continue; }
        count_a[la]++; count_b[lb]++; longer[la > lb ? la : lb]++; equal += la == lb;
    }
    EXPECT(bad == 0, "addition: %d training instances wrong or with digit counts outside 1..8", bad);
    double share = (double)equal / k;
    EXPECT(share > 0.110 && share < 0.140, "addition: equal digit counts in %.3f of %d training instances, want 8/64 = 0.125",
           share, k);
    for (int n = 1; n <= 8; n++) {
        double pa = (double)count_a[n] / k, pb = (double)count_b[n] / k, pl = (double)longer[n] / k, want = (2 * n - 1) / 64.0;
        EXPECT(pa > 0.105 && pa < 0.145 && pb > 0.105 && pb < 0.145, "addition: operands of %d digits in %.3f (A) and "
               "%.3f (B) of training instances, want 1/8 each", n, pa, pb);
        EXPECT(pl > want - 0.015 && pl < want + 0.015, "addition: the longer operand has %d digits in %.3f of training "
               "instances, want (2n - 1)/64 = %.3f", n, pl, want);
    }
    free(str);
    batch_free(&b);
}

// Sort draws from the NoPE paper's 50 items (its builder's unique_tokens[:50]), with replacement:
// a list of n repeats an item with probability 1 - prod_{k<n} (1 - k/50), 27% on average over the
// training lengths 4..8. The alphabet of 640 the other symbol tasks share gave 2.5%.
static void test_sort_items(void) {
    enum { M = 12000 };
    TaskConfig c;
    task_defaults(&c, SORT);
    EXPECT(c.alphabet == 50 && task_vocab(&c) == 256 + 50 - 26, "sort: alphabet %d, vocabulary %d, want the paper's 50 items",
           c.alphabet, task_vocab(&c));
    double want = 0;
    for (int n = c.train_min; n <= c.train_max; n++) {
        double distinct = 1;
        for (int j = 1; j < n; j++) distinct *= 1 - j / 50.0;
        want += (1 - distinct) / (c.train_max - c.train_min + 1);
    }
    int T = 2 * task_max_tokens(&c, c.train_max);
    Batch b;
    batch_alloc(&b, 16, T);
    Rng r;
    rng_seed(&r, 43);
    int k = 0, repeats = 0, outside = 0;
    while (k < M) {
        task_fill_batch(&c, &r, &b);
        for (int row = 0; row < b.B; row++)
            for (int t = 0; t < b.T && k < M;) {
                const int *doc = b.doc + (size_t)row * T, *tok = b.tokens + (size_t)row * T;
                if (doc[t] < 0) break;
                int e = t, seen[50] = {0}, rep = 0;
                while (e < T && doc[e] == doc[t]) e++;
                for (int i = t + 5; i < e && tok[i] != '='; i++) {       // the list, after "sort:"
                    int s = tok[i] >= 256 ? 26 + tok[i] - 256 : tok[i] - 'a';
                    if (s < 0 || s >= 50) { outside++; continue; }
                    rep |= seen[s]++ > 0;
                }
                repeats += rep;
                k++;
                t = e;
            }
    }
    double share = (double)repeats / k;
    EXPECT(outside == 0, "sort: %d list items outside the 50", outside);
    EXPECT(share > want - 0.02 && share < want + 0.02, "sort: %.3f of %d training lists repeat an item, want %.3f", share,
           k, want);
    batch_free(&b);
}

// Past train-max every instance is a test instance: copy-repeat with 26 symbols has all 26 at
// n = 30 in its test set and none in training or validation; parity at n = 12 all 4096.
static void test_untrained_lengths(void) {
    TaskConfig c;
    letters_defaults(&c, REP);
    TaskSet s;
    int got = task_eval_set(&c, 30, -1.0, TASK_TEST, 1000, 1, &s);
    EXPECT(got == 26 && s.pool == 26 && set_problems(&c, 30, TASK_TEST, &s) == 0, "copy-repeat n=30: %d test instances "
           "(pool %lld), want all 26", got, s.pool);
    task_set_free(&s);
    for (int split = TASK_TRAIN; split <= TASK_VAL; split += TASK_VAL - TASK_TRAIN) {
        got = task_eval_set(&c, 30, -1.0, split, 1000, 1, &s);
        EXPECT(got == 0 && s.pool == 0, "copy-repeat n=30 class %d: %d instances, want none", split, got);
        task_set_free(&s);
    }
    letters_defaults(&c, PAR);
    got = task_eval_set(&c, 12, -1.0, TASK_TEST, 5000, 1, &s);
    EXPECT(got == 4096 && s.pool == 4096, "parity n=12: %d test instances, want all 2^12", got);
    task_set_free(&s);
    // in-distribution lengths keep the 1-in-8 rule: parity n=8 has far fewer than 256 test instances
    got = task_eval_set(&c, 8, -1.0, TASK_TEST, 5000, 1, &s);
    EXPECT(got > 10 && got < 60 && set_problems(&c, 8, TASK_TEST, &s) == 0, "parity n=8: %d test instances of 256", got);
    task_set_free(&s);
}

// The distinct test instances at length n of a config (50 asked): the count, and whether that is
// all of them (an enumerated pool held whole).
static int test_count(const TaskConfig *c, int n, int *all) {
    TaskSet s;
    double depths[TASK_MAX_DEPTHS];
    task_test_depths(c, depths, TASK_MAX_DEPTHS);
    int k = task_eval_set(c, n, depths[0], TASK_TEST, 50, 1, &s);
    *all = s.pool >= 0 && s.count == s.pool;
    task_set_free(&s);
    return k;
}

// The smallest test set over every default test length of every symbol task that takes the
// default alphabet, with N symbols.
static int min_symbol_tests(int alphabet, int *worst_task, int *worst_n) {
    int worst = -1, all;
    for (int task = 0; task < N_TASKS; task++) {
        if (!task_has_symbols(task)) continue;
        TaskConfig c;
        task_defaults(&c, task);
        if (c.alphabet != TASK_DEFAULT_ALPHABET) continue;         // sort: the paper's 50 items
        c.alphabet = alphabet;
        for (int n = 1; n <= c.test_max; n++) {
            int k = test_count(&c, n, &all);
            if (worst < 0 || k < worst) { worst = k; *worst_task = task; *worst_n = n; }
        }
    }
    return worst;
}

// The default alphabet gives >= 50 distinct test instances at every test length of every symbol
// task that takes it, and is the smallest multiple of 128 that does.
static void test_default_alphabet(void) {
    int t = 0, n = 0;
    int k = min_symbol_tests(TASK_DEFAULT_ALPHABET, &t, &n);
    EXPECT(k >= 50, "alphabet %d: %s n=%d has %d test instances, fewer than 50", TASK_DEFAULT_ALPHABET, NAMES[t], n, k);
    k = min_symbol_tests(TASK_DEFAULT_ALPHABET - 128, &t, &n);
    EXPECT(k < 50, "alphabet %d would do (%d test instances at least): lower TASK_DEFAULT_ALPHABET", TASK_DEFAULT_ALPHABET - 128, k);
}

// Every task with its defaults: >= 50 distinct test instances at every test length, or every one
// that exists. These have fewer than 50 in all (counted by hand: their lengths are in distribution,
// where 1 in 8 is test): addition n = 1 (100 pairs), polynomial n = 1 (140), sort n = 1 (its 50
// items), sum n = 1, 2 (9, 81), parity n = 1..8 (2..256).
static void test_every_task_sets(void) {
    for (int task = 0; task < N_TASKS; task++) {
        TaskConfig c;
        task_defaults(&c, task);
        int lengths[128], nl = task_test_lengths(&c, lengths, 128), short_lengths = 0;
        for (int li = 0; li < nl; li++) {
            int n = lengths[li], all, k = test_count(&c, n, &all);
            int few = (task == ADD && n == 1) || (task == POLY && n == 1) || (task == SUM && n <= 2) || (task == PAR && n <= 8) ||
                      (task == SORT && n == 1);
            // SCAN: a fixed language. In distribution about 1 in 8 of a length's commands is a test one,
            // so the lengths with a few hundred commands or fewer may have fewer than 50 (all of them);
            // 23, 29, 31, 34, 35, 37-39, 41-47 have no command; past 25 every command is a test one (>= 64)
            int scan_few = task == SCAN && ((n <= 25 && task_pool_size(&c, n) < 600) || task_pool_size(&c, n) == 0);
            if (task == SCAN) few = scan_few && k < 50;
            EXPECT(k >= 50 || (all && few), "%s n=%d: %d test instances%s", NAMES[task], n, k, all ? " (all there are)" : "");
            EXPECT(!few || k < 50, "%s n=%d: %d test instances, listed as fewer than 50", NAMES[task], n, k);
            short_lengths += k < 50;
        }
        EXPECT(nl > 0 && short_lengths < nl, "%s: %d of %d test lengths short of 50", NAMES[task], short_lengths, nl);
    }
}

int main(void) {
    test_empty_split();
    test_split_fraction();
    test_disjoint();
    test_lengths();
    test_fill_batch();
    test_pools();
    test_eval_sets();
    test_add_eval_distribution();
    test_add_training_counts();
    test_sort_items();
    test_untrained_lengths();
    test_default_alphabet();
    test_every_task_sets();
    return test_summary("test_tasks_sets");
}
