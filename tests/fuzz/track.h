// tests/fuzz/track.h: force-included (-include) into every source of the fuzz builds except
// tests/fuzz/fuzz.c. It routes allocations and file opens through fuzz.c, which records what an
// input has live: when a CHECK refuses the input and longjmps back to the harness, fuzz.c frees
// and closes all of it, so the fuzzing process neither grows nor runs out of file descriptors,
// and LeakSanitizer stays on to catch a reader's real leaks (on the paths that return).
#ifndef FUZZ_TRACK_H
#define FUZZ_TRACK_H

// the sources that ask for GNU extensions (lab/compare_options.c's sched_getaffinity) ask before their first
// system header, and this file comes before them all: ask for them here too
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

// every header that declares a routed function, before the macros rename them
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *fuzz_malloc(size_t n);
void *fuzz_calloc(size_t n, size_t size);
void *fuzz_realloc(void *p, size_t n);
void *fuzz_aligned_alloc(size_t align, size_t n);
char *fuzz_strdup(const char *s);
void fuzz_free(void *p);
FILE *fuzz_fopen(const char *path, const char *mode);
FILE *fuzz_open_memstream(char **buf, size_t *size);
int fuzz_fclose(FILE *f);

#define malloc(n) fuzz_malloc(n)
#define calloc(n, size) fuzz_calloc(n, size)
#define realloc(p, n) fuzz_realloc(p, n)
#define aligned_alloc(align, n) fuzz_aligned_alloc(align, n)
#define strdup(s) fuzz_strdup(s)
#define free(p) fuzz_free(p)
#define fopen(path, mode) fuzz_fopen(path, mode)
#define open_memstream(buf, size) fuzz_open_memstream(buf, size)
#define fclose(f) fuzz_fclose(f)

#endif
