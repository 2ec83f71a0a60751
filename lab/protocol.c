// lab/protocol.c: ./compare --protocol FILE, an experiment fixed before its data. The file holds
// ./compare's own flags, one per line, and ends with a line "-- FLAGS" (every run's ./train flags):
//
//     # what the experiment is, why these settings (comments: lines starting with #)
//     --task copy,reverse
//     --schemes nope,t5
//     --scheme rotary=--pe rope --rope-fraction 0.25      (the rest of the line is the value)
//     --seeds 101,102,103
//     --claims nope>t5,nope>rotary
//     -- --dim 64 --steps 1000 --select-every 100         (split at spaces)
//
// A run of it may add only where and how it runs (--out, --jobs, --threads, --train, --launch,
// --quiet, --save-every, --report-only, --dry-run) on the command line: the tasks, schemes, seeds, claims, tests and
// training are the file's, so that a verdict in summary.md is one the file named before the run.
// summary.md opens with the file's path and its FNV-1a 64 hash (of its bytes), which tells whether
// the file a report came from is the one committed (the commit order shows it preceded the run).
#include <errno.h>
#include <string.h>

#include "lab/protocol.h"

#include <stdlib.h>

static void *grow(void *p, size_t bytes) {
    void *q = realloc(p, bytes);
    CHECK(q, "out of memory reading --protocol");
    return q;
}

// The flags a command line may give next to --protocol.
enum { PROTOCOL_MAX_BYTES = 1 << 20 };

static const char *const RUN_FLAGS[] = { "--out", "--jobs", "--threads", "--train", "--launch", "--quiet",
                                         "--save-every", "--report-only", "--dry-run", "--protocol", NULL };

static int is_run_flag(const char *s) {
    for (const char *const *f = RUN_FLAGS; *f; f++) if (!strcmp(s, *f)) return 1;
    return 0;
}

uint64_t protocol_hash(const char *text, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)text[i]; h *= 1099511628211ull; }
    return h;
}

// The file's text (NUL-terminated; *n its bytes).
static char *read_text(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK(f, "--protocol %s cannot be read: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *text = xmalloc(cap);
    for (size_t k; (k = fread(text + len, 1, cap - len - 1, f)) > 0;) {
        len += k;
        CHECK(len <= PROTOCOL_MAX_BYTES, "--protocol %s is over %d bytes: not a protocol (text, one flag per line)", path,
              PROTOCOL_MAX_BYTES);
        if (len + 1 == cap) { cap *= 2; text = grow(text, cap); }
    }
    CHECK(!ferror(f), "--protocol %s: read error: %s", path, strerror(errno));
    fclose(f);
    text[len] = 0;
    CHECK(strlen(text) == len, "--protocol %s holds a NUL byte: it is not a protocol (text, one flag per line)", path);
    *n = len;
    return text;
}

static void push(char ***v, int *n, int *cap, char *s) {
    if (*n + 1 >= *cap) { *cap = *cap ? 2 * *cap : 64; *v = grow(*v, sizeof(char *) * (size_t)*cap); }
    (*v)[(*n)++] = s;
    (*v)[*n] = NULL;
}

// Appends the file's flags to (v, n): each line "--FLAG VALUE" as two words, "-- ..." as "--" and
// its words; a line of another form is refused with its number.
static void file_words(const char *path, char *text, char ***v, int *n, int *cap, int *extra) {
    int line_no = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        line_no++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r')) line[--len] = 0;
        while (*line == ' ' || *line == '\t') line++;
        if (!*line || *line == '#') continue;
        CHECK(!*extra, "--protocol %s line %d: nothing may follow the line of ./train flags (-- ...)", path, line_no);
        CHECK(!strncmp(line, "--", 2), "--protocol %s line %d: '%s' is not a flag; each line is '--FLAG VALUE', "
              "'--SWITCH', '# comment' or the last, '-- TRAIN FLAGS'", path, line_no, line);
        char *sp = strpbrk(line, " \t");
        if (sp) *sp++ = 0;
        if (!strcmp(line, "--")) {
            *extra = 1;
            push(v, n, cap, line);
            for (char *w = sp ? strtok(sp, " \t") : NULL; w; w = strtok(NULL, " \t")) push(v, n, cap, w);
            continue;
        }
        CHECK(!is_run_flag(line), "--protocol %s line %d: %s says where or how a grid runs, not what it tests; give it "
              "on the command line", path, line_no, line);
        CHECK(strcmp(line, "--help"), "--protocol %s line %d: --help is not part of an experiment", path, line_no);
        push(v, n, cap, line);
        if (sp) { while (*sp == ' ' || *sp == '\t') sp++; push(v, n, cap, sp); }
    }
}

// The file's text and the argument list made from it, reachable until exit, so not a leak to
// LeakSanitizer (volatile: the stores are kept though nothing reads them).
static char *volatile kept_text;
static char **volatile kept_argv;

int protocol_expand(int argc, char **argv, int *out_argc, char ***out_argv, Protocol *p) {
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "--protocol")) {
            CHECK(i + 1 < argc, "--protocol needs a file (see ./compare --help)");
            CHECK(!path, "--protocol is given twice");
            path = argv[++i];
        }
    }
    if (!path) return 0;
    char **v = NULL;
    int n = 0, cap = 0, extra = 0;
    push(&v, &n, &cap, argv[0]);
    for (int i = 1; i < argc; i++) {                 // the command line: where and how it runs only
        CHECK(strcmp(argv[i], "--"), "--protocol %s: the ./train flags are the protocol's (its line '-- ...'); "
              "drop the -- and what follows from the command line", path);
        CHECK(is_run_flag(argv[i]), "%s: with --protocol %s the experiment is the file's; the command line gives only "
              "--out, --jobs, --threads, --train, --launch, --quiet, --save-every, --report-only and --dry-run (edit the protocol for "
              "another experiment, and commit it before the run)", argv[i], path);
        if (!strcmp(argv[i], "--protocol")) { i++; continue; }
        push(&v, &n, &cap, argv[i]);
        if (strcmp(argv[i], "--quiet") && strcmp(argv[i], "--report-only") && strcmp(argv[i], "--dry-run") && i + 1 < argc) push(&v, &n, &cap, argv[++i]);
    }
    size_t len;
    char *text = read_text(path, &len);
    p->hash = protocol_hash(text, len);
    p->path = path;
    file_words(path, text, &v, &n, &cap, &extra);     // (the words point into text, kept for the run)
    kept_text = text;
    kept_argv = v;
    *out_argc = n;
    *out_argv = v;
    return 1;
}
