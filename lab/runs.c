// lab/runs.c: the helpers of lab/runs.h that ./compare's command line, its runner and its report
// share: which schemes take the RoPE extensions, window lists divided for the runs at K x T, the value
// of a flag among words or in --eval-flags, the last line of a run's train.log with a prefix, a run's
// label, and the commands being built.
#include <stdarg.h>
#include <string.h>

#include "lab/runs.h"
#include "posenc.h"

// 1 when a scheme's flags put a RoPE-family scheme (one that takes the context-extension settings,
// posenc_takes_extension) in some layer: those runs are also evaluated with the --rope-extensions methods
int uses_rope(const Scheme *s) {
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s->flags);
    for (char *w = strtok(tmp, " \t,="); w; w = strtok(NULL, " \t,="))
        if (posenc_takes_extension(w)) return 1;
    return 0;
}

int divide_multiples(const char *list, int k, char *out, size_t cap) {
    char buf[256], *end;
    snprintf(buf, sizeof buf, "%s", list);
    out[0] = 0;
    for (char *m = strtok(buf, ","); m; m = strtok(NULL, ",")) {
        double x = strtod(m, &end);
        if (!(x > 0) || *end) return -1;
        size_t u = strlen(out);
        int w = snprintf(out + u, cap - u, "%s%.17g", u ? "," : "", x / k);
        if (w <= 0 || (size_t)w >= cap - u) return 0;
    }
    return 1;
}

const char *last_value(char *const *w, int n, const char *flag) {
    const char *v = NULL;
    for (int k = 0; k + 1 < n; k++) if (!strcmp(w[k], flag)) v = w[k + 1];
    return v;
}

const char *eval_flag(const Cfg *c, const char *flag, char *buf, size_t cap) {
    char ev[512] = "", *words[64];
    int nw = 0;
    if (c->eval_flags) snprintf(ev, sizeof ev, "%s", c->eval_flags);
    for (char *w = strtok(ev, " \t"); w && nw < 64; w = strtok(NULL, " \t")) words[nw++] = w;
    const char *v = last_value(words, nw, flag);
    if (!v) return NULL;
    snprintf(buf, cap, "%s", v);
    return buf;
}

void last_line(const char *dir, const char *prefix, char *out, size_t cap) {
    char p[4200], line[1024];
    snprintf(p, sizeof p, "%s/train.log", dir);
    out[0] = 0;
    FILE *f = fopen(p, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, prefix, strlen(prefix))) { line[strcspn(line, "\n")] = 0; snprintf(out, cap, "%s", line); }
    fclose(f);
}

int have_gnuplot(void) { return system("command -v gnuplot > /dev/null 2>&1") == 0; }

const char *run_label(const Cfg *c, const Run *r, char *buf, size_t cap) {
    if (!r->twin) return c->schemes[r->scheme].label;
    snprintf(buf, cap, "%s-twin", posenc_scheme(PE_NOPE)->name);
    return buf;
}

void arg(Argv *a, const char *fmt, ...) {
    CHECK(a->n < CMD_MAX_ARGS - 1, "internal: too many arguments");
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(a->buf + a->used, sizeof a->buf - a->used, fmt, ap);
    va_end(ap);
    CHECK(k >= 0 && a->used + k + 1 < sizeof a->buf, "internal: arguments too long");
    a->v[a->n++] = a->buf + a->used;
    a->v[a->n] = NULL;
    a->used += k + 1;
}

void arg_words(Argv *a, const char *s) {
    char *tmp = strdup(s), *save = NULL;
    CHECK(tmp, "out of memory");
    for (char *w = strtok_r(tmp, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) arg(a, "%s", w);
    free(tmp);
}
