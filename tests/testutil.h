// tests/testutil.h: the tiny harness every test program uses. EXPECT counts instead of exiting,
// so one run reports every failure; test_summary() prints "NAME: N passed, M failed" and returns
// the exit status (non-zero on any failure), so `make test` stops on a failing program.
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

// err_max(m, d): the running maximum of errors m with d folded in, where a NaN or infinite d makes
// it INFINITY, and INFINITY stays. fmax(m, NaN) returns m, so a max built on plain fmax lets a NaN
// (a kernel that wrote NaN, an entry never written) pass every `< tol` check.
static inline double err_max(double m, double d) { return isfinite(d) ? fmax(m, d) : INFINITY; }

// dies_with(fn, arg, needle1, needle2): runs fn(arg) in a child with stderr captured; returns 1
// when the child exited with status 1 (the CHECK macro's exit) and its message contains "error:"
// and every non-NULL needle. Prints the message on a mismatch. For the error paths of readers.
typedef void (*ChildFn)(const void *arg);
static inline int dies_with(ChildFn fn, const void *arg, const char *needle1, const char *needle2) {
    char log[] = "/tmp/test_stderr_XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0) { perror("mkstemp"); exit(2); }
    close(fd);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        FILE *f = freopen(log, "w", stderr);
        if (!f) _exit(99);
        fn(arg);
        _exit(0);  // the function returned instead of failing
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) { perror("waitpid"); exit(2); }
    char msg[4096] = {0};
    FILE *f = fopen(log, "r");
    size_t got = f ? fread(msg, 1, sizeof msg - 1, f) : 0;
    msg[got] = '\0';
    if (f) fclose(f);
    remove(log);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 1 && strstr(msg, "error:") &&
             (!needle1 || strstr(msg, needle1)) && (!needle2 || strstr(msg, needle2));
    if (!ok) fprintf(stderr, "  child status %d, message: %s\n", status, msg);
    return ok;
}

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, tu_pass, tu_fail);
    return tu_fail ? 1 : 0;
}

#endif
