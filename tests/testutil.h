// tests/testutil.h: the tiny harness every test program uses. EXPECT counts instead of exiting,
// so one run reports every failure; test_summary() prints "NAME: N passed, M failed" and returns
// the exit status (non-zero on any failure), so `make test` stops on a failing program.
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <math.h>
#include <stdio.h>

static int tu_pass = 0, tu_fail = 0;

#define EXPECT(cond, ...)                                                   \
    do {                                                                    \
        if (cond) { tu_pass++; }                                            \
        else {                                                              \
            tu_fail++;                                                      \
            fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

// |a - b| <= atol + rtol * |b|
#define EXPECT_NEAR(a, b, atol, rtol, what)                                 \
    do {                                                                    \
        double tu_a = (double)(a), tu_b = (double)(b);                      \
        EXPECT(fabs(tu_a - tu_b) <= (atol) + (rtol) * fabs(tu_b),           \
               "%s: got %.9g, expected %.9g", (what), tu_a, tu_b);          \
    } while (0)

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, tu_pass, tu_fail);
    return tu_fail ? 1 : 0;
}

#endif
