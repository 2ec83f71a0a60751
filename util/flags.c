// util/flags.c: one flag table type for every program: lookup, strict values, the parse loop and
// --help (util/flags.h).
#include "util/flags.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const FlagRow *flag_find(const FlagRow *rows, int n, const char *name) {
    for (int i = 0; i < n; i++) if (strcmp(rows[i].name, name) == 0) return &rows[i];
    return NULL;
}

// Strict numbers: the whole value must be one, in range; never clamped.
static FlagError integer_of(const FlagRow *r, const char *v, long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno) return FLAG_NOT_INTEGER;
    if (x < r->min || (double)x > r->max) return FLAG_OUT_OF_RANGE;
    *out = x;
    return FLAG_OK;
}

FlagError flag_value(const FlagRow *r, void *base, const char *v, int empty_ok) {
    void *p = (char *)base + r->off;
    if (r->type == FLAG_STRING) {
        if (!*v && !empty_ok) return FLAG_EMPTY;
        *(const char **)p = v;
    } else if (r->type == FLAG_DOUBLE) {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (!*v || *end || errno || !isfinite(x)) return FLAG_NOT_NUMBER;
        if ((r->lo_open ? x <= r->min : x < r->min) || x > r->max) return FLAG_OUT_OF_RANGE;
        *(double *)p = x;
    } else if (r->type == FLAG_CHOICE) {
        int k = 0;
        while (r->choices[k] && strcmp(r->choices[k], v)) k++;
        if (!r->choices[k]) return FLAG_NOT_CHOICE;
        *(int *)p = k;
    } else if (r->type == FLAG_INT || r->type == FLAG_SWITCH || r->type == FLAG_LONG || r->type == FLAG_LLONG) {
        long long x;
        FlagError e = integer_of(r, v, &x);
        if (e != FLAG_OK) return e;
        if (r->type == FLAG_LONG) *(long *)p = (long)x;
        else if (r->type == FLAG_LLONG) *(long long *)p = x;
        else *(int *)p = (int)x;
    }
    return FLAG_OK;            // FLAG_CALL and FLAG_LIST: their owners read the value
}

// The row of a --word (NULL when it has none), or the other() hook's taking of it (*taken = 1).
static const FlagRow *row_of(FlagParser *p, int argc, char **argv, int *i, int *taken) {
    const char *s = argv[*i];
    const FlagRow *r = flag_find(p->rows, p->n, s + 2);
    *taken = 0;
    if (!r && p->other) *taken = p->other(p->ctx, argc, argv, i);
    if (!r && !*taken) p->fail(p->ctx, FLAG_UNKNOWN, s, NULL, NULL, argc, argv, *i);
    return r;
}

// One flag and its value at argv[*i]; *i moves past what it read.
static void one_flag(FlagParser *p, int argc, char **argv, int *i, unsigned char *seen) {
    const char *s = argv[*i];
    int taken;
    const FlagRow *r = row_of(p, argc, argv, i, &taken);
    if (taken) return;
    int k = (int)(r - p->rows);
    if (p->only && !(r->tag & p->only)) p->fail(p->ctx, FLAG_OTHER_COMMAND, s, r, NULL, argc, argv, *i);
    if (p->once && seen[k]) p->fail(p->ctx, FLAG_TWICE, s, r, NULL, argc, argv, *i);
    seen[k] = 1;
    if (p->given) p->given[k] = 1;
    if (r->type == FLAG_SWITCH) { *(int *)((char *)p->base + r->off) = 1; return; }
    if (*i + 1 >= argc) p->fail(p->ctx, FLAG_NO_VALUE, s, r, NULL, argc, argv, *i);
    char *v = argv[++*i];
    if (r->type == FLAG_CALL) { r->call(p->ctx, v); return; }
    FlagError e = flag_value(r, p->base, v, p->empty_ok);
    if (e != FLAG_OK) p->fail(p->ctx, e, s, r, v, argc, argv, *i - 1);
}

void flags_parse(FlagParser *p, int argc, char **argv) {
    unsigned char *seen = calloc(p->n > 0 ? (size_t)p->n : 1, 1);
    int done = 0;                          // after "--": the rest are positional words
    p->rest = 0;
    for (int i = p->first; i < argc; i++) {
        char *s = argv[i];
        if (done) { p->word(p->ctx, s); continue; }
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) { p->help(p->ctx); exit(0); }
        if (p->dashes_end && !strcmp(s, "--")) {
            if (p->word) { done = 1; continue; }
            p->rest = i + 1;
            break;
        }
        if (strncmp(s, "--", 2) != 0) {
            if (p->positional) { p->word(p->ctx, s); continue; }
            p->fail(p->ctx, FLAG_NOT_FLAG, s, NULL, NULL, argc, argv, i);
        }
        one_flag(p, argc, argv, &i, seen);
    }
    free(seen);
}

void flags_help(FILE *f, const FlagRow *rows, int n, const char *group, int width, FlagDescribe describe) {
    for (int i = 0; i < n; i++) {
        const FlagRow *r = &rows[i];
        if (group && (!r->group || strcmp(r->group, group))) continue;
        char buf[512], left[96];
        const char *help = r->help ? r->help : describe ? describe(r, buf, sizeof buf) : NULL;
        if (!help) continue;
        int value = r->arg && *r->arg;
        snprintf(left, sizeof left, "--%s%s%s", r->name, value ? " " : "", value ? r->arg : "");
        fprintf(f, "  %-*s ", width, left);
        for (const char *h = help; *h; h++) {       // each further line of the help indented under the first
            fputc(*h, f);
            if (*h == '\n') fprintf(f, "%*s", width + 3, "");
        }
        fprintf(f, "%s\n", r->required ? " (required)" : "");
    }
}
