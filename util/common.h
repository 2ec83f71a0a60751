// util/common.h: the number type, the error macro and checked allocation shared by every file.
#ifndef COMMON_H
#define COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

// `real` is the type of parameters, activations and gradients. The normal build uses float;
// the gradient-check build compiles with -DREAL=double so finite differences are exact to ~1e-6.
#ifndef REAL
#define REAL float
#endif
typedef REAL real;

// check_fail_hook (util/common.c): NULL in the programs. The fuzz harnesses (tests/fuzz/) set it to a
// function that longjmps back to the harness, so that a refused input does not end the fuzzing
// process; it runs after the message, and exit(1) follows if it returns.
extern void (*check_fail_hook)(void);
_Noreturn static inline void check_fail(void) {
    if (check_fail_hook) check_fail_hook();
    exit(1);
}

// CHECK(cond, fmt, ...): if cond is false, print "file:line: error: <sentence>" to stderr and
// exit(1). The sentence should name the flag or file at fault and say what to do about it.
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: error: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            check_fail();                                                   \
        }                                                                   \
    } while (0)

// Allocation that never returns NULL: on failure it reports the size and the call site.
#define xmalloc(n) xmalloc_at((n), __FILE__, __LINE__)
#define xcalloc(n, size) xcalloc_at((n), (size), __FILE__, __LINE__)
static inline void *xmalloc_at(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "%s:%d: error: out of memory allocating %zu bytes\n", file, line, n); check_fail(); }
    return p;
}
static inline void *xcalloc_at(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) { fprintf(stderr, "%s:%d: error: out of memory allocating %zu x %zu bytes\n", file, line, n, size); check_fail(); }
    return p;
}

// Large buffers (parameters, gradients, optimiser state, activations): from 4 MiB up, 2 MiB-aligned
// and, on Linux, marked for transparent huge pages (madvise; this machine's THP setting is
// "madvise", so nothing gets them unasked). One TLB entry then covers 2 MiB instead of 4 KiB, which
// the strided reads of attention (keys 3C apart) and of the gemms need: measured +4% on a
// gpt2-124m T=1024 step, +12% on attention alone at T=4096. Released with free().
// xmalloc_big leaves the memory as it is (untouched pages cost nothing); xcalloc_big zeroes it.
#define xmalloc_big(n) xmalloc_big_at((n), __FILE__, __LINE__)
#define xcalloc_big(n, size) xcalloc_big_at((n), (size), __FILE__, __LINE__)
static inline void *xmalloc_big_at(size_t bytes, const char *file, int line) {
    size_t align = (size_t)2 << 20;
    if (bytes < 2 * align) return xmalloc_at(bytes, file, line);
    size_t rounded = (bytes + align - 1) / align * align;
    void *p = aligned_alloc(align, rounded);
    if (!p) { fprintf(stderr, "%s:%d: error: out of memory allocating %zu bytes\n", file, line, rounded); check_fail(); }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);      // a hint: if the kernel refuses, nothing changes
#endif
    return p;
}
static inline void *xcalloc_big_at(size_t n, size_t size, const char *file, int line) {
    if (size && n > SIZE_MAX / size) { fprintf(stderr, "%s:%d: error: out of memory allocating %zu x %zu bytes\n", file, line, n, size); check_fail(); }
    void *p = xmalloc_big_at(n * size, file, line);
    memset(p, 0, n * size);
    return p;
}

// A small deterministic RNG (splitmix64 seeding an xorshift64*). Explicit state, no globals,
// so a checkpoint can store it and a resumed run draws the same numbers.
typedef struct { uint64_t s; } Rng;
static inline void rng_seed(Rng *r, uint64_t seed) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    r->s = (z ^ (z >> 31)) | 1ull;
}
static inline uint64_t rng_u64(Rng *r) {
    r->s ^= r->s >> 12; r->s ^= r->s << 25; r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}
// uniform in [0, 1) with 53 random bits
static inline double rng_uniform(Rng *r) { return (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

// Wall-clock seconds (monotonic), and a duration as "42s", "3m07s" or "2h05m" for progress lines.
static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static inline void fmt_duration(double s, char *buf, size_t cap) {
    if (s < 60) snprintf(buf, cap, "%.0fs", s);
    else if (s < 3600) snprintf(buf, cap, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, cap, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

#endif
