// lab/runs.c: the helpers of lab/runs.h that ./compare's command line, its runner and its report
// share: which schemes take the RoPE extensions, the labels of text's rows, window lists halved for
// the runs at 2T, the value of a flag among words or in --eval-flags, the last line of a run's
// train.log with a prefix, a run's label.
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

int row_label(const Cfg *c, int sc, int v, char *buf, size_t cap) {
    if (sc < 0 || sc >= c->n_schemes || v < 0 || v >= row_variants(c) || (v && !takes_extensions(&c->schemes[sc]))) return 0;
    snprintf(buf, cap, "%s%s%s", c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
    return 1;
}

int find_row(const Cfg *c, const char *label, int *sc, int *v) {
    char buf[256];
    for (int i = 0; i < c->n_schemes; i++)
        for (int k = 0; k < row_variants(c); k++)
            if (row_label(c, i, k, buf, sizeof buf) && !strcmp(buf, label)) { *sc = i; *v = k; return 1; }
    return 0;
}

int halve_multiples(const char *list, char *out, size_t cap) {
    char buf[256], *end;
    snprintf(buf, sizeof buf, "%s", list);
    out[0] = 0;
    for (char *m = strtok(buf, ","); m; m = strtok(NULL, ",")) {
        double x = strtod(m, &end);
        if (!(x > 0) || *end) return -1;
        size_t u = strlen(out);
        int w = snprintf(out + u, cap - u, "%s%.17g", u ? "," : "", x / 2);
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
