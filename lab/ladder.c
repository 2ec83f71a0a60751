// lab/ladder.c: ./ladder, the report of a size ladder (make reproduce-scale; docs/scale.md): how
// each pre-registered claim of a grid moves with model size.
//
//   ./ladder --out runs/scale protocols/scale-s1.txt protocols/scale-s2.txt ...
//
// Each PROTOCOL is one size: a ./compare protocol (lab/protocol.c) whose runs are in
// OUT/NAME (NAME: its file name without .txt), as `./compare --protocol PROTOCOL --out OUT/NAME`
// wrote them. The sizes must share tasks, schemes, seeds and claims (they differ in the model
// flags after --). Reads each size's runs.csv and the parameter count from its runs' train.log,
// and writes to OUT:
//   ladder.csv   size, parameters, task, scheme: the mean OOD and in-distribution accuracy (%)
//                over the seeds, with the OOD mean's 95% t-interval
//   mrr.csv      size, parameters, scheme: the MRR with its bootstrap interval (the seeds resampled)
//   claims.csv   each claim at each size (mean difference, interval, sign-flip p, Holm p, verdict)
//                and its trend over the sizes
//   summary.md   the tables, the trend tests and, per claim, whether it is stable or flips, and where
//   scale_TASK.png/.svg, scale_mrr.png/.svg (gnuplot): against parameters on a log axis
//
// The unit of a claim at one size is a (task, seed) pair: the difference A - B of their OOD accuracies
// (percentage points); the exact sign-flip test over the pairs, Holm over the claims. The trend of a
// claim: per pair, the least-squares slope of that difference against log10(parameters) over the
// sizes where it has both runs (at least two; its task's parameter counts), the mean slope (points per decade)
// with its t-interval and the sign-flip test of the slopes, Holm over the claims.
#include <math.h>
#include <string.h>

#include "lab/compare.h"
#include "lab/ladder.h"
#include "lab/report.h"
#include "util/atomicfile.h"
#include "util/flags.h"

// The OOD and in-distribution accuracy (fractions) of run (task, scheme, seed) of a size; NAN when
// it has not finished.
static double *cell(double *x, const Size *z, int t, int sc, int sd) {
    return &x[((size_t)t * z->c.n_schemes + sc) * z->c.n_seeds + sd];
}

// The size's runs.csv: its finished runs' accuracies.
static void read_runs(Size *z) {
    const Cfg *c = &z->c;
    size_t n = (size_t)c->n_tasks * c->n_schemes * c->n_seeds;
    z->ood = xmalloc(sizeof(double) * n);
    z->id = xmalloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) z->ood[i] = z->id[i] = NAN;
    char path[4200], line[4096];
    snprintf(path, sizeof path, "%s/runs.csv", z->dir);
    FILE *f = fopen(path, "r");
    if (!f) { printf("ladder: %s: no runs.csv yet (run its ./compare first); its runs are left out\n", z->dir); return; }
    CHECK(fgets(line, sizeof line, f) && !strncmp(line, "task,scheme,seed,fitted,fit_step,val_accuracy,id_accuracy,ood_accuracy,", 71),
          "%s: not a runs.csv of ./compare (its header differs)", path);
    while (fgets(line, sizeof line, f)) {
        char *field[8];
        int k = 0;
        for (char *p = line; k < 8; k++) { field[k] = p; p += strcspn(p, ","); if (*p) *p++ = 0; }
        int t = -1, sc = -1, sd = -1;
        for (int i = 0; i < c->n_tasks; i++) if (!strcmp(c->tasks[i], field[0])) t = i;
        for (int i = 0; i < c->n_schemes; i++) if (!strcmp(c->schemes[i].label, field[1])) sc = i;
        for (int i = 0; i < c->n_seeds; i++) if (c->seeds[i] == atoll(field[2])) sd = i;
        CHECK(t >= 0 && sc >= 0 && sd >= 0, "%s: a run (%s, %s, seed %s) that its protocol does not have", path, field[0], field[1], field[2]);
        *cell(z->ood, z, t, sc, sd) = *field[7] ? atof(field[7]) : NAN;
        *cell(z->id, z, t, sc, sd) = *field[6] ? atof(field[6]) : NAN;
        z->finished++;
    }
    fclose(f);
}

// The parameter counts of the size's model, per task (its vocabulary differs by task): the NoPE
// run's (no positional parameters; the first scheme's without one) of any seed, from its
// train.log ("| N parameters"); the size's count is the first task's that has one.
static void read_params(Size *z) {
    const Cfg *c = &z->c;
    int ns = nope_scheme(c) >= 0 ? nope_scheme(c) : 0;
    for (int t = 0; t < c->n_tasks; t++)
        for (int sd = 0; sd < c->n_seeds && !(z->task_params[t] > 0); sd++) {
            char path[4400], line[1024];
            snprintf(path, sizeof path, "%s/runs/%s/%s/seed%lld/train.log", z->dir, c->tasks[t], c->schemes[ns].label, c->seeds[sd]);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            while (fgets(line, sizeof line, f)) {
                char *bar = strstr(line, "| ");
                if (!strncmp(line, "model: ", 7) && bar && strstr(bar, " parameters")) { z->task_params[t] = atof(bar + 2); break; }
            }
            fclose(f);
        }
    for (int t = 0; t < c->n_tasks && !(z->params > 0); t++) z->params = z->task_params[t];
}

// The sizes must be one grid at several sizes: the same tasks, schemes (labels), seeds and claims.
static void check_same(const Size *a, const Size *b) {
    const Cfg *x = &a->c, *y = &b->c;
    int same = x->n_tasks == y->n_tasks && x->n_schemes == y->n_schemes && x->n_seeds == y->n_seeds && x->n_claims == y->n_claims;
    for (int i = 0; same && i < x->n_tasks; i++) same = !strcmp(x->tasks[i], y->tasks[i]);
    for (int i = 0; same && i < x->n_schemes; i++) same = !strcmp(x->schemes[i].label, y->schemes[i].label);
    for (int i = 0; same && i < x->n_seeds; i++) same = x->seeds[i] == y->seeds[i];
    for (int i = 0; same && i < x->n_claims; i++) same = x->claims[i][0] == y->claims[i][0] && x->claims[i][1] == y->claims[i][1];
    CHECK(same, "%s and %s are not one grid at two sizes: their tasks, schemes, seeds and claims must be the same "
          "(only the model flags after -- differ)", a->protocol, b->protocol);
}

void ladder_load(Ladder *L, const char *out, char **protocols, int n) {
    CHECK(n >= 2 && n <= LADDER_MAX_SIZES, "give 2 to %d protocols, one per size (./ladder --help)", LADDER_MAX_SIZES);
    memset(L, 0, sizeof *L);
    L->out = out;
    L->n = n;
    for (int i = 0; i < n; i++) {
        Size *z = &L->z[i];
        z->protocol = protocols[i];
        const char *base = strrchr(protocols[i], '/');
        base = base ? base + 1 : protocols[i];
        snprintf(z->name, sizeof z->name, "%.*s", (int)(strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".txt") ?
                 strlen(base) - 4 : strlen(base)), base);
        snprintf(z->dir, sizeof z->dir, "%s/%s", out, z->name);
        // compare_parse keeps pointers into its argv: one that lives as long as the ladder
        char **argv = z->argv = xcalloc(8, sizeof(char *));
        argv[0] = "compare"; argv[1] = "--protocol"; argv[2] = protocols[i]; argv[3] = "--out"; argv[4] = z->dir;
        argv[5] = "--report-only";
        compare_parse(&z->c, 6, argv);
        CHECK(!z->c.data, "%s: a ladder compares task grids (--task), not text", protocols[i]);
        if (i) check_same(&L->z[0], z);
        read_runs(z);
        read_params(z);
        CHECK(z->params > 0 || !z->finished, "%s: no run's train.log gives the model's parameter count", z->dir);
        for (int j = 0; j < i; j++)
            CHECK(!(z->params > 0) || !(L->z[j].params > 0) || L->z[j].params < z->params, "the sizes must be given from "
                  "the smallest model to the largest: %s (%g parameters) after %s (%g)", z->name, z->params, L->z[j].name, L->z[j].params);
    }
}

// The differences A - B (points) of claim k at size z over its (task, seed) units with both runs;
// returns their count.
static int claim_units(const Size *z, int k, double *d) {
    const Cfg *c = &z->c;
    int a = c->claims[k][0], b = c->claims[k][1], n = 0;
    for (int t = 0; t < c->n_tasks; t++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            double x = *cell(z->ood, z, t, a, sd), y = *cell(z->ood, z, t, b, sd);
            if (!isnan(x) && !isnan(y)) d[n++] = 100 * (x - y);
        }
    return n;
}

// The same with the seed as the unit: per seed, the mean of A - B over the tasks with both runs
// (a seed's runs share their initial weights across tasks); returns the seeds with one.
static int claim_seed_units(const Size *z, int k, double *d) {
    const Cfg *c = &z->c;
    int a = c->claims[k][0], b = c->claims[k][1], n = 0;
    for (int sd = 0; sd < c->n_seeds; sd++) {
        double sum = 0;
        int m = 0;
        for (int t = 0; t < c->n_tasks; t++) {
            double x = *cell(z->ood, z, t, a, sd), y = *cell(z->ood, z, t, b, sd);
            if (!isnan(x) && !isnan(y)) { sum += 100 * (x - y); m++; }
        }
        if (m) d[n++] = sum / m;
    }
    return n;
}

// Claim k at every size over the units units() gives, Holm over the claims at each size.
static void test_claims(Ladder *L, ClaimTest (*at)[MAX_ITEMS], int (*units)(const Size *, int, double *), double *d) {
    const Cfg *c = &L->z[0].c;
    double p[MAX_ITEMS], adj[MAX_ITEMS];
    for (int s = 0; s < L->n; s++) {
        for (int k = 0; k < c->n_claims; k++) {
            ClaimTest *x = &at[s][k];
            int n = units(&L->z[s], k, d);
            x->iv = mean_t_interval(d, n);
            x->p = n ? sign_flip_p(d, n, 1000 + k) : NAN;
            p[k] = x->p;
        }
        holm_adjust(p, c->n_claims, adj);
        for (int k = 0; k < c->n_claims; k++) at[s][k].holm = adj[k];
    }
}

void ladder_claims(Ladder *L) {
    const Cfg *c = &L->z[0].c;
    int units = c->n_tasks * c->n_seeds;
    double *d = xmalloc(sizeof(double) * units), *sl = xmalloc(sizeof(double) * units), p[MAX_ITEMS];
    test_claims(L, L->at, claim_units, d);
    test_claims(L, L->by_seed, claim_seed_units, d);
    // the trend: per unit, the slope of the difference against log10(parameters) over every size
    for (int k = 0; k < c->n_claims; k++) {
        int a = c->claims[k][0], b = c->claims[k][1], n = 0;
        for (int t = 0; t < c->n_tasks; t++)
            for (int sd = 0; sd < c->n_seeds; sd++) {
                double sx = 0, sy = 0, sxx = 0, sxy = 0;
                int m = 0;
                for (int s = 0; s < L->n; s++) {
                    const Size *z = &L->z[s];
                    double x = *cell(z->ood, z, t, a, sd), y = *cell(z->ood, z, t, b, sd);
                    if (isnan(x) || isnan(y) || !(z->task_params[t] > 0)) continue;
                    double v = 100 * (x - y), lx = log10(z->task_params[t]);
                    sx += lx; sy += v; sxx += lx * lx; sxy += lx * v; m++;
                }
                if (m < 2) continue;
                sl[n++] = (sxy - sx * sy / m) / (sxx - sx * sx / m);
            }
        TrendTest *r = &L->trend[k];
        r->iv = mean_t_interval(sl, n);
        r->p = n ? sign_flip_p(sl, n, 2000 + k) : NAN;
        p[k] = r->p;
    }
    double adj[MAX_ITEMS];
    holm_adjust(p, c->n_claims, adj);
    for (int k = 0; k < c->n_claims; k++) L->trend[k].holm = adj[k];
    free(d); free(sl);
}

void ladder_mrr(Ladder *L) {
    const Cfg *c = &L->z[0].c;
    int ns = c->n_schemes;
    double *rr = xmalloc(sizeof(double) * (size_t)c->n_tasks * c->n_seeds * ns), v[MAX_ITEMS];
    for (int s = 0; s < L->n; s++) {
        const Size *z = &L->z[s];
        for (int t = 0; t < c->n_tasks; t++)
            for (int sd = 0; sd < c->n_seeds; sd++) {
                int have = 0;
                for (int sc = 0; sc < ns; sc++) { v[sc] = *cell(z->ood, z, t, sc, sd); have += !isnan(v[sc]); }
                for (int sc = 0; sc < ns; sc++)   // a configuration with fewer than two runs ranks nothing
                    rr[((size_t)t * c->n_seeds + sd) * ns + sc] = have >= 2 ? expected_reciprocal_rank(v, ns, sc) : NAN;
            }
        bootstrap_mrr(rr, c->n_tasks, c->n_seeds, ns, RESAMPLES, 3000 + s, L->mrr[s]);
    }
    free(rr);
}

// The mean of the OOD (ood = 1) or in-distribution accuracy (%) of (task, scheme) at size z over
// its finished seeds, with the t-interval.
Interval ladder_accuracy(const Size *z, int t, int sc, int ood) {
    double x[MAX_ITEMS];
    int n = 0;
    for (int sd = 0; sd < z->c.n_seeds; sd++) {
        double v = *cell(ood ? z->ood : z->id, z, t, sc, sd);
        if (!isnan(v)) x[n++] = 100 * v;
    }
    return mean_t_interval(x, n);
}

const char *ladder_verdict(double mean, double holm) {
    if (!(holm < 0.05)) return "not distinguishable";
    return mean > 0 ? "supported" : "contradicted";
}

void ladder_free(Ladder *L) {
    for (int s = 0; s < L->n; s++) { free(L->z[s].ood); free(L->z[s].id); free(L->z[s].argv); }
}

// The command line (util/flags.h): --out, and the protocols as positional words.
typedef struct { const char *out; char *protocols[LADDER_MAX_SIZES + 1]; int n; } Args;

FLAGS_TABLE_BEGIN
static const FlagRow FLAGS[] = {
    { "out", FLAG_STRING, offsetof(Args, out), 0, 0, 0, "DIR", NULL, "the folder with one folder of runs per size" },
};
FLAGS_TABLE_END
enum { N_FLAGS = (int)(sizeof FLAGS / sizeof FLAGS[0]) };

static void usage(void *ctx) {
    (void)ctx;
    printf("usage: ./ladder --out DIR PROTOCOL PROTOCOL...\n"
           "The report of one task grid at several model sizes: each PROTOCOL is a ./compare protocol (one size,\n"
           "smallest first) whose runs are in DIR/NAME (NAME: the file name without .txt). Writes DIR/ladder.csv,\n"
           "mrr.csv, claims.csv, summary.md and plots against parameters (docs/scale.md).\n");
    flags_help(stdout, FLAGS, N_FLAGS, NULL, 22, NULL);
}

static void protocol_word(void *ctx, char *w) {
    Args *a = ctx;
    CHECK(a->n < LADDER_MAX_SIZES, "at most %d sizes", LADDER_MAX_SIZES);
    a->protocols[a->n++] = w;
}

static void fail_hook(void *ctx, FlagError e, const char *s, const FlagRow *r, const char *v, int argc, char **argv,
                      int i) {
    (void)ctx; (void)r; (void)v; (void)argc; (void)argv; (void)i;
    CHECK(e != FLAG_NO_VALUE, "--out needs a folder");
    CHECK(0, "unknown flag %s (./ladder --help)", s);
}

int main(int argc, char **argv) {
    Args a = { 0 };
    FlagParser fp = { .rows = FLAGS, .n = N_FLAGS, .base = &a, .ctx = &a, .first = 1, .positional = 1, .empty_ok = 1,
                      .help = usage, .word = protocol_word, .fail = fail_hook };
    flags_parse(&fp, argc, argv);
    const char *out = a.out;
    char **protocols = a.protocols;
    int n = a.n;
    CHECK(out, "give --out DIR, the folder with one folder of runs per size (./ladder --help)");
    static Ladder L;
    ladder_load(&L, out, protocols, n);
    ladder_claims(&L);
    ladder_mrr(&L);
    ladder_write(&L);
    ladder_free(&L);
    return 0;
}
