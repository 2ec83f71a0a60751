// tests/fuzz/fuzz.c: the driver every harness links (see fuzz.h): the longjmp back from a CHECK,
// the record of what an input allocated and opened (the functions track.h routes here), the
// memfd files and argument vectors harnesses build, and either libFuzzer's entry point or, with
// -DFUZZ_STANDALONE, a main() that runs files. Compiled without track.h: it calls the real ones.
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/common.h"
#include "tests/fuzz/fuzz.h"

// ---- what the input holds ----------------------------------------------------------------------

// The live allocations of the current input: an open-addressing set of pointers (linear probing,
// TOMB marks a removed entry). A tokenizer file can hold ~1e5 pieces, each allocated: a list would
// make every free a linear search.
#define TOMB ((void *)1)
static void **live;
static size_t live_cap, live_used;   // used: entries and tombstones

static size_t slot_of(const void *p) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull); }

static void live_rehash(size_t cap) {
    void **old = live;
    size_t old_cap = live_cap;
    live = calloc(cap, sizeof *live);
    if (!live) abort();
    live_cap = cap;
    live_used = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] && old[i] != TOMB) {
            size_t k = slot_of(old[i]) & (cap - 1);
            while (live[k]) k = (k + 1) & (cap - 1);
            live[k] = old[i];
            live_used++;
        }
    free(old);
}

static void live_add(void *p) {
    if (!p) return;
    if (2 * (live_used + 1) > live_cap) live_rehash(live_cap ? 2 * live_cap : 1024);
    size_t k = slot_of(p) & (live_cap - 1);
    while (live[k] && live[k] != TOMB) k = (k + 1) & (live_cap - 1);
    if (!live[k]) live_used++;
    live[k] = p;
}

// 1 when p was live (and removes it)
static int live_remove(void *p) {
    if (!p || !live_cap) return 0;
    for (size_t k = slot_of(p) & (live_cap - 1); live[k]; k = (k + 1) & (live_cap - 1))
        if (live[k] == p) { live[k] = TOMB; return 1; }
    return 0;
}

// Open files, in fixed slots (f NULL: free). A memstream writes its buffer's address and size to
// the caller's variables; those may be in a frame that a longjmp has left, so the stream writes
// into its slot, and fclose copies them out (the code here reads a memstream's buffer only after
// fclose).
typedef struct { FILE *f; char **buf_out; size_t *size_out; char *buf; size_t size; } OpenFile;
enum { MAX_FILES = 64 };
static OpenFile files[MAX_FILES];

static OpenFile *free_slot(void) {
    for (int i = 0; i < MAX_FILES; i++) if (!files[i].f) return &files[i];
    abort();   // no reader keeps this many files open
}

// The memfds of fuzz_file and the argument buffers of fuzz_argv: released after every input.
static int fds[MAX_FILES], n_fds;
static char *arg_buf;

void *fuzz_malloc(size_t n) { void *p = malloc(n); live_add(p); return p; }
void *fuzz_calloc(size_t n, size_t size) { void *p = calloc(n, size); live_add(p); return p; }
void *fuzz_aligned_alloc(size_t align, size_t n) { void *p = aligned_alloc(align, n); live_add(p); return p; }
char *fuzz_strdup(const char *s) { char *p = strdup(s); live_add(p); return p; }
void *fuzz_realloc(void *p, size_t n) {
    int was_live = live_remove(p);
    void *q = realloc(p, n);
    live_add(q || !n || !was_live ? q : p);   // a failed realloc leaves p as it was
    return q;
}
// A pointer that is not live was allocated by an earlier input that returned (a cache), or by libc.
void fuzz_free(void *p) { live_remove(p); free(p); }

FILE *fuzz_fopen(const char *path, const char *mode) {
    OpenFile *slot = free_slot();
    *slot = (OpenFile){ .f = fopen(path, mode) };
    return slot->f;
}
FILE *fuzz_open_memstream(char **buf, size_t *size) {
    OpenFile *slot = free_slot();
    *slot = (OpenFile){ .buf_out = buf, .size_out = size };
    slot->f = open_memstream(&slot->buf, &slot->size);
    return slot->f;
}
int fuzz_fclose(FILE *f) {
    for (int i = 0; f && i < MAX_FILES; i++)
        if (files[i].f == f) {
            OpenFile *slot = &files[i];
            int r = fclose(f);
            if (slot->buf_out) { *slot->buf_out = slot->buf; *slot->size_out = slot->size; live_add(slot->buf); }
            *slot = (OpenFile){ 0 };
            return r;
        }
    return fclose(f);
}

// After a refused input: everything it left allocated or open.
static void release_input(void) {
    for (size_t k = 0; k < live_cap; k++)
        if (live[k] && live[k] != TOMB) free(live[k]);
    for (int i = 0; i < MAX_FILES; i++)
        if (files[i].f) {
            fclose(files[i].f);
            free(files[i].buf);
        }
}

// After every input: the set starts empty (what a returning input kept is its own business:
// LeakSanitizer reports it if nothing points to it), the memfds and argument buffers go.
static void end_input(void) {
    if (live_cap) memset(live, 0, live_cap * sizeof *live);
    live_used = 0;
    memset(files, 0, sizeof files);
    for (int i = 0; i < n_fds; i++) close(fds[i]);
    n_fds = 0;
    free(arg_buf);
    arg_buf = NULL;
}

const char *fuzz_file(const uint8_t *data, size_t size) {
    static char path[MAX_FILES][32];
    if (n_fds == MAX_FILES) abort();
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) { perror("memfd_create"); abort(); }
    for (size_t done = 0; done < size;) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) { perror("write to memfd"); abort(); }
        done += (size_t)w;
    }
    fds[n_fds] = fd;
    snprintf(path[n_fds], sizeof path[n_fds], "/proc/self/fd/%d", fd);
    return path[n_fds++];
}

int fuzz_asks_help(char **argv, int argc) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

int fuzz_argv(const uint8_t *data, size_t size, const char *prog, char **argv, int cap) {
    free(arg_buf);
    arg_buf = malloc(size + 1);
    if (!arg_buf) abort();
    memcpy(arg_buf, data, size);
    arg_buf[size] = 0;
    int argc = 0;
    argv[argc++] = (char *)prog;
    char *s = arg_buf, *end = arg_buf + size;
    while (s < end && argc < cap - 1) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        if (nl) *nl = 0;
        argv[argc++] = s;
        s = nl ? nl + 1 : end;
    }
    argv[argc] = NULL;
    return argc;
}

_Noreturn void fuzz_assert_fail(const char *what, const char *file, int line) {
    fprintf(stderr, "%s:%d: fuzz harness check failed: %s\n", file, line, what);
    abort();
}

// ---- one input -----------------------------------------------------------------------------------

static jmp_buf refused;
static void on_check_fail(void) { longjmp(refused, 1); }

// 1 when the harness's reader accepted the input, 0 when a CHECK refused it.
static int run_input(const uint8_t *data, size_t size) {
    check_fail_hook = on_check_fail;
    if (setjmp(refused) != 0) {
        release_input();
        end_input();
        check_fail_hook = NULL;
        return 0;
    }
    fuzz_one(data, size);
    end_input();
    check_fail_hook = NULL;
    return 1;
}

#ifndef FUZZ_STANDALONE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run_input(data, size);
    return 0;
}

#else

// ---- standalone: run files -------------------------------------------------------------------
//
// ./fuzz_NAME FILE|DIR...  runs every file (a folder: its files in name order). NAME.hex holds
// the input as hex digits (whitespace free; '#' starts a comment to the end of the line); any
// other file is the input as it is. A first line "# expect: refused" or "# expect: accepted"
// (in a .txt file it is taken off the input) is checked. Exits 1 when an expectation failed.

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
    size_t cap = 4096, n = 0;
    uint8_t *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    if (!b) abort();
    fclose(f);
    *size = n;
    return b;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int hex_digit(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

// Decodes a .hex file in place; returns the byte count, or -1 on a stray character.
static long decode_hex(uint8_t *b, size_t n) {
    size_t out = 0;
    int high = -1;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == '#') { while (i < n && b[i] != '\n') i++; continue; }
        if (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') continue;
        int d = hex_digit(b[i]);
        if (d < 0) return -1;
        if (high < 0) high = d;
        else { b[out++] = (uint8_t)(high << 4 | d); high = -1; }
    }
    return high < 0 ? (long)out : -1;
}

// The file being run, while it runs: an input that makes the program exit (a parser's --help, a
// stray exit()) is a finding under libFuzzer, and must fail here too rather than end the run with 0.
static const char *running;
static void exit_during_input(void) {
    if (!running) return;
    fprintf(stderr, "\n%s: FAILED: the input made the program exit (libFuzzer reports this as a finding)\n", running);
    fflush(stderr);
    _exit(1);
}

// Runs one file; returns 0 when its expectation (if any) held.
static int run_file(const char *path) {
    size_t n;
    uint8_t *b = read_file(path, &n), *input = b;
    int expect = -1;   // 1 accepted, 0 refused, -1 not said
    static const char key[] = "# expect: ";
    if (n >= sizeof key - 1 && memcmp(b, key, sizeof key - 1) == 0) {
        const char *v = (const char *)b + sizeof key - 1;
        size_t left = n - (sizeof key - 1);
        expect = left >= 8 && memcmp(v, "accepted", 8) == 0 ? 1 : left >= 7 && memcmp(v, "refused", 7) == 0 ? 0 : -2;
        if (expect == -2) { fprintf(stderr, "%s: the expect line must say accepted or refused\n", path); return 1; }
        if (ends_with(path, ".txt")) {
            uint8_t *nl = memchr(b, '\n', n);
            input = nl ? nl + 1 : b + n;
            n -= (size_t)(input - b);
        }
    }
    if (ends_with(path, ".hex")) {
        long m = decode_hex(b, n);
        if (m < 0) { fprintf(stderr, "%s: not hex (an odd digit count or a stray character)\n", path); return 1; }
        n = (size_t)m;
    }
    fprintf(stderr, "  %s (%zu bytes): ", path, n);
    fflush(stderr);
    running = path;
    int accepted = run_input(input, n);
    running = NULL;
    if (accepted) fprintf(stderr, "accepted\n");
    free(b);
    if (expect >= 0 && expect != accepted) {
        fprintf(stderr, "%s: FAILED: expected the input to be %s\n", path, expect ? "accepted" : "refused");
        return 1;
    }
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv) {
    int failed = 0, ran = 0;
    atexit(exit_during_input);
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) { fprintf(stderr, "%s: no such file or folder\n", argv[i]); return 1; }
        if (!S_ISDIR(sb.st_mode)) { failed += run_file(argv[i]); ran++; continue; }
        struct dirent **ents;
        int n = scandir(argv[i], &ents, NULL, by_name);
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], ents[k]->d_name);
            if (ents[k]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) { failed += run_file(path); ran++; }
            free(ents[k]);
        }
        free(ents);
    }
    free(live);
    fprintf(stderr, "%s: %d inputs, %d failed\n", argv[0], ran, failed);
    return failed || !ran;
}

#endif
