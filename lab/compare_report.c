// lab/compare_report.c: ./compare's report. Reads every finished run (eval.csv or ppl*.csv, and the
// fit line of train.log) and writes results.csv, runs.csv (tasks), summary.md and the gnuplot
// scripts and plots, then prints the summary. For tasks, summary.md gives per task the fitted
// runs, means over them with 95% bootstrap intervals, the test pools, the degenerate runs and the
// paired test of every two schemes; then the paired tests pooled over tasks, the MRR with its
// interval and the --claims verdicts. The statistics are lab/stats.c's.
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "lab/compare.h"
#include "lab/stats.h"

#define MAX_LEN 4096     // the most lengths (or windows) of one task in a table or plot
#define RESAMPLES 10000  // bootstrap resamples of a table's interval
#define PLOT_RESAMPLES 2000   // ... of each point of a plot's band
#define EVAL_COLUMNS "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share"
// a run is degenerate at a length where one answer makes up >= DEGENERATE_SHARE of at least
// DEGENERATE_MIN instances: its answer does not depend on the input
#define DEGENERATE_SHARE 0.95
#define DEGENERATE_MIN 10

typedef struct {           // one (run, bucket) row of an eval.csv or a ppl.csv
    int run;
    int length;            // task length, or window (tokens)
    double depth;          // retrieval depth or -1
    int ood, n, correct;   // task; n counts the skipped instances too (they count as wrong)
    int evaluated;         // task: instances scored (n without the skipped)
    int pool, distinct;    // task: test instances of the length (-1: too many to enumerate), distinct ones scored
    double top_share;      // task: share of the scored instances given the most common answer; NAN when none
    int sliding;           // text: 0 nonoverlap, 1 sliding
    int variant;           // text: 0 the run's own positions, e > 0 RoPE extension e-1
    double value;          // accuracy (task) or perplexity (text); NAN when none
    double loss;           // text: mean loss
    int tokens;            // text
    char note[128];
} Row;

typedef struct { Row *r; int n, cap; } Rows;

static void push(Rows *rs, const Row *r) {
    if (rs->n == rs->cap) { rs->cap = rs->cap ? 2 * rs->cap : 1024; rs->r = realloc(rs->r, sizeof(Row) * rs->cap); CHECK(rs->r, "out of memory"); }
    rs->r[rs->n++] = *r;
}

// splits a CSV line in place (no quoting is used by these files); returns the field count
static int fields(char *line, char **f, int cap) {
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    f[n++] = line;
    for (char *s = line; *s && n < cap; s++) if (*s == ',') { *s = 0; f[n++] = s + 1; }
    return n;
}

// Opens a finished run's CSV past its header line, which must be `columns` (NULL: not checked).
static FILE *open_result(const char *path, const char *columns, char *line, int cap) {
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot read '%s' (the run's done marker exists; remove it to redo the run)", path);
    CHECK(fgets(line, cap, f), "'%s' is empty; remove the run's folder to redo it", path);
    line[strcspn(line, "\r\n")] = 0;
    CHECK(!columns || !strcmp(line, columns), "'%s' has the columns '%s', expected '%s' (written by an older ./train? "
          "delete the run's folder to redo it)", path, line, columns);
    return f;
}

static void read_eval(const char *path, int run, Rows *rs) {
    char line[1024], *fl[16];
    FILE *f = open_result(path, EVAL_COLUMNS, line, sizeof line);
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 16);
        CHECK(k == 13, "'%s': a row has %d fields, expected 13 (" EVAL_COLUMNS ")", path, k);
        // an instance the model cannot run (past a learned position table) counts as wrong
        Row r = { .run = run, .length = atoi(fl[3]), .depth = *fl[4] ? atof(fl[4]) : -1, .ood = !strcmp(fl[5], "ood"),
                  .evaluated = atoi(fl[6]), .n = atoi(fl[6]) + atoi(fl[9]), .correct = atoi(fl[7]),
                  .pool = *fl[10] ? atoi(fl[10]) : -1, .distinct = atoi(fl[11]), .top_share = *fl[12] ? atof(fl[12]) : NAN };
        r.value = r.n ? (double)r.correct / r.n : NAN;
        push(rs, &r);
    }
    fclose(f);
}

static void read_ppl(const char *path, int run, int variant, Rows *rs) {
    char line[1024], *fl[16];
    FILE *f = open_result(path, NULL, line, sizeof line);
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 16);
        CHECK(k >= 5, "'%s': a row has %d fields, expected window,mode,tokens,loss,ppl,note", path, k);
        Row r = { .run = run, .length = atoi(fl[0]), .depth = -1, .sliding = !strcmp(fl[1], "sliding"), .variant = variant,
                  .tokens = atoi(fl[2]), .loss = *fl[3] ? atof(fl[3]) : NAN, .value = *fl[4] ? atof(fl[4]) : NAN };
        if (k > 5) snprintf(r.note, sizeof r.note, "%s", fl[5]);
        push(rs, &r);
    }
    fclose(f);
}

static void sort_ints(int *x, int n) {
    for (int i = 1; i < n; i++) for (int k = i; k > 0 && x[k] < x[k - 1]; k--) { int t = x[k]; x[k] = x[k - 1]; x[k - 1] = t; }
}

// Sorted distinct values of x as ranges, "4, 6, 21-40" (sep ", ") or "4 6 21-40" (sep " ").
static void fmt_ranges(int *x, int n, const char *sep, char *out, size_t cap) {
    sort_ints(x, n);
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n; ) {
        int j = i;
        while (j + 1 < n && x[j + 1] <= x[j] + 1) j++;           // duplicates and consecutive values
        int k = snprintf(out + used, cap - used, x[j] > x[i] ? "%s%d-%d" : "%s%d", used ? sep : "", x[i], x[j]);
        if (k < 0 || used + k >= cap) return;
        used += k;
        i = j + 1;
    }
}

static int have_gnuplot(void) { return system("command -v gnuplot > /dev/null 2>&1") == 0; }

static void gnuplot(const char *out, const char *name, int *made) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp'", out, name);
    if (system(cmd) == 0) { printf("  %s/%s.png (and .svg)\n", out, name); (*made)++; }
    else printf("  gnuplot failed on %s/%s.gp\n", out, name);
}

// Opens OUT/NAME.gp with the lines shared by every script: the PNG terminal (gp_again_svg draws
// the same plot again as SVG), the title and the axis labels.
static FILE *gp_open(const char *out, const char *name, const char *title, const char *xl, const char *yl) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.gp", out, name);
    FILE *g = fopen(path, "w");
    CHECK(g, "cannot write '%s'", path);
    fprintf(g, "set terminal pngcairo size 1000,560 noenhanced\nset output '%s.png'\n", name);
    fprintf(g, "set title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n", title, xl, yl);
    return g;
}
static void gp_again_svg(FILE *g, const char *name) {
    fprintf(g, "set terminal svg size 1000,560 noenhanced\nset output '%s.svg'\nreplot\n", name);
}

static const char *COLORS[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };

// the loss curves of every run (one colour per scheme, one line per seed; a scheme trained at twice the
// length in its scheme's colour, dashed)
static void plot_loss(const Cfg *c, const Run *runs, int task, FILE *md, int plots, int *made) {
    char name[256];
    snprintf(name, sizeof name, "loss_%s", c->tasks[task]);
    char title[256];
    snprintf(title, sizeof title, "%s: training loss (every scheme and seed)", c->tasks[task]);
    FILE *g = gp_open(c->out, name, title, "step", "loss (nats per target token)");
    fprintf(g, "set datafile separator ','\nset logscale y\nset format y '%%g'\nplot ");
    int first = 1;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            const Run *r = &runs[run_index(c, task, sc, sd)];
            if (!run_has_results(r)) continue;
            int base = c->schemes[sc].long_of >= 0 ? c->schemes[sc].long_of : sc;   // @2T: its scheme's colour, dashed
            fprintf(g, "%s'%s/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '%s' dt %d title '%s'", first ? "" : ", \\\n     ",
                    r->dir + strlen(c->out) + 1, COLORS[base % 10], base == sc ? 1 : 2, sd == 0 ? c->schemes[sc].label : "");
            first = 0;
        }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (plots && !first) gnuplot(c->out, name, made);
    fprintf(md, "![loss](%s.png)\n\n", name);
}


// An interval of mean log perplexities (mean losses) carried back to perplexity: the geometric mean
static Interval exp_interval(Interval iv) { iv.mean = exp(iv.mean); iv.lo = exp(iv.lo); iv.hi = exp(iv.hi); return iv; }

// text: perplexity against window length, one line per scheme (and RoPE extension), geometric mean over seeds
static void plot_ppl(const Cfg *c, const Rows *rs, int context, FILE *md, int plots, int *made) {
    int n_var = 1 + c->n_ext;
    const char *name = "ppl_by_length";
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.dat", c->out, name);
    FILE *d = fopen(path, "w");
    CHECK(d, "cannot write '%s'", path);
    int windows[MAX_LEN], nw = 0;
    for (int i = 0; i < rs->n; i++) {
        int seen = 0;
        for (int k = 0; k < nw; k++) seen |= windows[k] == rs->r[i].length;
        if (!seen && !rs->r[i].sliding && nw < MAX_LEN) windows[nw++] = rs->r[i].length;
    }
    sort_ints(windows, nw);
    double ymin = INFINITY;              // the best perplexity, for the y range
    fprintf(d, "# window");
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++) fprintf(d, " %s%s%s", c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
    fprintf(d, "\n");
    for (int w = 0; w < nw; w++) {
        fprintf(d, "%d", windows[w]);
        for (int sc = 0; sc < c->n_schemes; sc++)
            for (int v = 0; v < n_var; v++) {
                double sum = 0; int k = 0;
                for (int i = 0; i < rs->n; i++) {
                    const Row *r = &rs->r[i];
                    if (r->run % c->n_schemes == sc && r->length == windows[w] && !r->sliding && r->variant == v && !isnan(r->value))
                        { sum += log(r->value); k++; }
                }
                if (!k) { fprintf(d, " NaN"); continue; }
                double g = exp(sum / k);                     // the geometric mean over seeds, as the tables
                fprintf(d, " %.6g", g);
                if (g < ymin) ymin = g;
            }
        fprintf(d, "\n");
    }
    fclose(d);
    char title[256];
    snprintf(title, sizeof title, "perplexity against evaluation window (trained at %d tokens; non-overlapping windows; y cut at 4x the best)", context);
    FILE *g = gp_open(c->out, name, title, "window (tokens)", "perplexity");
    // y from the best perplexity to 4 times it (a scheme that explodes leaves the top)
    fprintf(g, "set logscale x 2\nset logscale y\nset yrange [%g:%g]\nset ytics %.3g, 1.25\nset format y '%%.3g'\n"
               "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb 'gray'\n", 0.95 * ymin, 4 * ymin, ymin, context, context);
    fprintf(g, "plot ");
    int col = 2;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++, col++) {
            if (v && !takes_extensions(&c->schemes[sc])) continue;
            // a scheme trained at twice the length (--double-length) in its base scheme's colour, open squares
            int base = c->schemes[sc].long_of >= 0 ? c->schemes[sc].long_of : sc;
            fprintf(g, "%s'%s.dat' using 1:%d with linespoints lw 2 pt %d ps %s lc rgb '%s' dt %d title '%s%s%s'",
                    col == 2 ? "" : ", \\\n     ", name, col, base == sc ? 7 : 4, base == sc ? "0.5" : "1", COLORS[base % 10],
                    v + 1, c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
        }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (plots) gnuplot(c->out, name, made);
    fprintf(md, "![perplexity](%s.png)\n\n", name);
}


// The train-max of a task as ./train reports it ("trained on lengths a-b" in train.log).
static int task_train_max(const Run *r) {
    char line[1024];
    last_line(r->dir, "accuracy on", line, sizeof line);
    const char *s = strstr(line, "lengths ");
    int a, b;
    return s && sscanf(s, "lengths %d-%d", &a, &b) == 2 ? b : 0;
}

static int text_context(const Run *r) {
    char line[1024];
    last_line(r->dir, "model:", line, sizeof line);
    const char *s = strstr(line, "context ");
    int ctx;
    return s && sscanf(s, "context %d", &ctx) == 1 ? ctx : 0;
}

// ----------------------------------------------------------------------------------------------
// the report's stages: read_results (+ run_facts) -> results.csv, runs.csv -> summary.md (per task:
// the scheme table, test pools, degenerate runs, paired tests, depth tables and plots, or text's
// perplexity tables and plot; the loss plot), the pooled tests, the MRR, the claims -> print_summary

typedef enum {
    FIT_NONE,    // no fit line in train.log: no criterion, counted as fitted
    FIT_YES,
    FIT_NO,
} Fit;

// What the report knows of one task run besides its rows.
typedef struct {
    Fit fit;
    int fit_step;          // the step it fitted at; -1 unless FIT_YES
    double val_acc, target;// validation accuracy and the target, from the fit line; NAN without one
    double acc[2];         // accuracy (%) in distribution and longer than training; NAN without instances
    char degenerate[512];  // the lengths where it is degenerate, as ranges ("21-40 45"); "" when none
} RunFacts;

// What the summary's stages share.
typedef struct {
    const Cfg *c;
    const Run *runs;
    int n;               // runs
    Rows rs;             // every row of every finished run, run by run
    int *row0, *nrow;    // (n,) each run's first row in rs and its row count
    RunFacts *facts;     // (n,) tasks
    Bucket *buf;         // (rs.n,) scratch for the bootstraps
    FILE *md;            // summary.md
    int plots, made;     // gnuplot is installed; plots made
    double *rr;          // (n_tasks, n_seeds, n_schemes) reciprocal rank among the fitted runs; NAN: not ranked
} Report;

// A seed for each bootstrap, from the names it concerns: adding a scheme or task leaves every
// other interval as it was.
static uint64_t stream_seed(const char *task, const char *scheme, int what) {
    char key[256];
    snprintf(key, sizeof key, "%s/%s/%d", task, scheme, what);
    uint64_t h = 1469598103934665603ull;            // FNV-1a
    for (const char *s = key; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

// Every finished run's eval.csv (tasks) or ppl*.csv (text: its own positions, then each RoPE extension).
static void read_results(Report *rp) {
    const Cfg *c = rp->c;
    char path[4200];
    int text = c->data != NULL, n_var = text ? 1 + c->n_ext : 1;
    rp->row0 = xcalloc(rp->n, sizeof(int));
    rp->nrow = xcalloc(rp->n, sizeof(int));
    for (int i = 0; i < rp->n; i++) {
        const Run *r = &rp->runs[i];
        rp->row0[i] = rp->rs.n;
        if (!run_has_results(r)) continue;
        if (!text) { snprintf(path, sizeof path, "%s/eval.csv", r->dir); read_eval(path, i, &rp->rs); }
        else for (int v = 0; v < n_var; v++) {
            if (v && !takes_extensions(&c->schemes[r->scheme])) continue;
            snprintf(path, sizeof path, "%s/ppl%s%s.csv", r->dir, v ? "_" : "", v ? c->extensions[v - 1] : "");
            read_ppl(path, i, v, &rp->rs);
        }
        rp->nrow[i] = rp->rs.n - rp->row0[i];
    }
}

// A run's fit line: "fit: fitted at step S: validation accuracy V >= A" or "fit: not fitted in S
// steps: validation accuracy V < A" (./train --fit-target A --max-steps N); none: no criterion.
static void read_fit(const Run *r, RunFacts *f) {
    char line[1024];
    last_line(r->dir, "fit:", line, sizeof line);
    f->fit = FIT_NONE; f->fit_step = -1; f->val_acc = f->target = NAN;
    if (!*line) return;
    int step;
    if (sscanf(line, "fit: fitted at step %d: validation accuracy %lf >= %lf", &step, &f->val_acc, &f->target) == 3)
        { f->fit = FIT_YES; f->fit_step = step; }
    else if (sscanf(line, "fit: not fitted in %d steps: validation accuracy %lf < %lf", &step, &f->val_acc, &f->target) == 3)
        f->fit = FIT_NO;
    else CHECK(0, "%s/train.log: cannot read its line '%s' (expected 'fit: fitted at step S: validation accuracy V >= A' "
                  "or 'fit: not fitted in S steps: validation accuracy V < A')", r->dir, line);
}

// fitted, or without a criterion: the runs that enter the comparisons
static int counts(const Report *rp, int run) { return run_has_results(&rp->runs[run]) && rp->facts[run].fit != FIT_NO; }

// Retrieval: the accuracy of each scheme by haystack length (rows) and key depth (columns),
// pooled over the fitted runs' seeds (a run not fitted is left out, as from every mean):
// "retrieval difficulty and distractors controlled".
static void depth_tables(const Report *rp, int task, FILE *md) {
    const Cfg *c = rp->c;
    const Rows *rs = &rp->rs;
    double depths[16]; int nd = 0, lengths[MAX_LEN], nl = 0;
    for (int i = 0; i < rs->n; i++) {
        const Row *r = &rs->r[i];
        if ((r->run / c->n_schemes) / c->n_seeds != task || r->depth < 0) continue;
        int seen = 0;
        for (int k = 0; k < nd; k++) seen |= depths[k] == r->depth;
        if (!seen && nd < 16) depths[nd++] = r->depth;
        seen = 0;
        for (int k = 0; k < nl; k++) seen |= lengths[k] == r->length;
        if (!seen && nl < MAX_LEN) lengths[nl++] = r->length;
    }
    if (!nd) return;
    sort_ints(lengths, nl);
    for (int i = 1; i < nd; i++) for (int k = i; k > 0 && depths[k] < depths[k - 1]; k--) { double t = depths[k]; depths[k] = depths[k - 1]; depths[k - 1] = t; }
    fprintf(md, "Accuracy (%%) by haystack length (tokens) and depth of the asked key (0 = start), the fitted runs' seeds "
                "pooled:\n\n");
    for (int sc = 0; sc < c->n_schemes; sc++) {
        fprintf(md, "| %s | ", c->schemes[sc].label);
        for (int d = 0; d < nd; d++) fprintf(md, "depth %.2f | ", depths[d]);
        fprintf(md, "\n|---|");
        for (int d = 0; d < nd; d++) fprintf(md, "---|");
        fprintf(md, "\n");
        for (int li = 0; li < nl; li++) {
            fprintf(md, "| %d |", lengths[li]);
            for (int d = 0; d < nd; d++) {
                long long num = 0, den = 0;
                for (int i = 0; i < rs->n; i++) {
                    const Row *r = &rs->r[i];
                    if ((r->run / c->n_schemes) / c->n_seeds == task && r->run % c->n_schemes == sc && r->length == lengths[li] &&
                        r->depth == depths[d] && counts(rp, r->run))
                        { num += r->correct; den += r->n; }
                }
                if (den) fprintf(md, " %.1f |", 100.0 * num / den); else fprintf(md, " |");
            }
            fprintf(md, "\n");
        }
        fprintf(md, "\n");
    }
}

// Each task run's fit, accuracies and degenerate lengths.
static void run_facts(Report *rp) {
    rp->facts = xcalloc(rp->n, sizeof(RunFacts));
    int *deg = xcalloc(rp->rs.n + 1, sizeof(int));
    for (int i = 0; i < rp->n; i++) {
        RunFacts *f = &rp->facts[i];
        f->acc[0] = f->acc[1] = NAN;
        f->fit = FIT_NONE; f->fit_step = -1; f->val_acc = f->target = NAN;   // a run without results has no fit
        if (!run_has_results(&rp->runs[i])) continue;
        read_fit(&rp->runs[i], f);
        long long num[2] = { 0 }, den[2] = { 0 };
        int nd = 0;
        for (int k = rp->row0[i]; k < rp->row0[i] + rp->nrow[i]; k++) {
            const Row *r = &rp->rs.r[k];
            num[r->ood] += r->correct; den[r->ood] += r->n;
            if (r->evaluated >= DEGENERATE_MIN && r->top_share >= DEGENERATE_SHARE) deg[nd++] = r->length;
        }
        for (int o = 0; o < 2; o++) if (den[o]) f->acc[o] = 100.0 * num[o] / den[o];
        fmt_ranges(deg, nd, " ", f->degenerate, sizeof f->degenerate);
    }
    free(deg);
}

// results.csv: one row per run and bucket (task length, or text window and mode).
static void write_results_csv(const Report *rp) {
    const Cfg *c = rp->c;
    char path[4200];
    int text = c->data != NULL;
    snprintf(path, sizeof path, "%s/results.csv", c->out);
    FILE *f = fopen(path, "w");
    CHECK(f, "cannot write '%s'", path);
    if (text) fprintf(f, "data,scheme,seed,window,mode,tokens,loss,ppl,note\n");
    else fprintf(f, "task,scheme,seed,length,depth,split,n,correct,accuracy,pool,distinct,top_share\n");
    for (int i = 0; i < rp->rs.n; i++) {
        const Row *r = &rp->rs.r[i];
        const Run *u = &rp->runs[r->run];
        char label[160];
        snprintf(label, sizeof label, "%s%s%s", c->schemes[u->scheme].label, r->variant ? "+" : "", r->variant ? c->extensions[r->variant - 1] : "");
        if (text) {
            fprintf(f, "%s,%s,%lld,%d,%s,%d,", c->data, label, c->seeds[u->seed], r->length, r->sliding ? "sliding" : "nonoverlap", r->tokens);
            if (!isnan(r->loss)) fprintf(f, "%.6f", r->loss);
            fprintf(f, ",");
            if (!isnan(r->value)) fprintf(f, "%.6f", r->value);
            fprintf(f, ",%s\n", r->note);
        } else {
            fprintf(f, "%s,%s,%lld,%d,", c->tasks[u->task], label, c->seeds[u->seed], r->length);
            if (r->depth >= 0) fprintf(f, "%.4g", r->depth);
            fprintf(f, ",%s,%d,%d,", r->ood ? "ood" : "id", r->n, r->correct);
            if (r->n) fprintf(f, "%.6f", r->value);
            fprintf(f, ",");
            if (r->pool >= 0) fprintf(f, "%d", r->pool);
            fprintf(f, ",%d,", r->distinct);
            if (!isnan(r->top_share)) fprintf(f, "%.4f", r->top_share);
            fprintf(f, "\n");
        }
    }
    fclose(f);
}

// runs.csv: one row per finished task run: its fit, accuracies (fractions) and degenerate lengths.
static void write_runs_csv(const Report *rp) {
    const Cfg *c = rp->c;
    char path[4200];
    snprintf(path, sizeof path, "%s/runs.csv", c->out);
    FILE *f = fopen(path, "w");
    CHECK(f, "cannot write '%s'", path);
    fprintf(f, "task,scheme,seed,fitted,fit_step,val_accuracy,id_accuracy,ood_accuracy,degenerate_lengths\n");
    for (int i = 0; i < rp->n; i++) {
        const Run *u = &rp->runs[i];
        const RunFacts *x = &rp->facts[i];
        if (!run_has_results(u)) continue;
        fprintf(f, "%s,%s,%lld,%s,", c->tasks[u->task], c->schemes[u->scheme].label, c->seeds[u->seed],
                x->fit == FIT_NONE ? "" : x->fit == FIT_YES ? "1" : "0");
        if (x->fit_step >= 0) fprintf(f, "%d", x->fit_step);
        fprintf(f, ",");
        if (!isnan(x->val_acc)) fprintf(f, "%.4f", x->val_acc);
        for (int o = 0; o < 2; o++) { fprintf(f, ","); if (!isnan(x->acc[o])) fprintf(f, "%.6f", x->acc[o] / 100); }
        fprintf(f, ",%s\n", x->degenerate);
    }
    fclose(f);
}

// The buckets of the counted (fitted) runs of scheme sc on task t, one SeedBuckets per run: ood 0
// (in distribution) or 1 (longer) when length < 0, else every bucket of that length. Returns the runs.
static int fitted_buckets(const Report *rp, int t, int sc, int ood, int length, SeedBuckets *seeds) {
    const Cfg *c = rp->c;
    int k = 0, used = 0;
    for (int sd = 0; sd < c->n_seeds; sd++) {
        int ri = run_index(c, t, sc, sd);
        if (!counts(rp, ri)) continue;
        seeds[k] = (SeedBuckets){ rp->buf + used, 0 };
        for (int i = rp->row0[ri]; i < rp->row0[ri] + rp->nrow[ri]; i++) {
            const Row *r = &rp->rs.r[i];
            if (length < 0 ? r->ood == ood : r->length == length) rp->buf[used++] = (Bucket){ r->n, r->correct };
        }
        seeds[k].nb = (int)(rp->buf + used - seeds[k].b);
        k++;
    }
    return k;
}

static void fmt_interval(const Interval *iv, double scale, char *out, size_t cap) {
    if (isnan(iv->mean)) snprintf(out, cap, "no fitted run");
    else snprintf(out, cap, "%.1f [%.1f, %.1f]", scale * iv->mean, scale * iv->lo, scale * iv->hi);
}

// The fit criterion of a task's runs, as a sentence.
static void fit_sentence(const Report *rp, int t, FILE *md) {
    double target = NAN;
    for (int i = 0; i < rp->n; i++) if (rp->runs[i].task == t && !isnan(rp->facts[i].target)) target = rp->facts[i].target;
    if (isnan(target)) fprintf(md, "No fit criterion (no run has a fit line): every run counts as fitted. ");
    else fprintf(md, "A run is fitted when its in-distribution validation accuracy reached %.4g within its step budget "
                     "(its train.log); a run not fitted is shown but left out of every mean, interval and comparison. ", target);
}

// The table of a task: per scheme the fitted runs, the in-distribution and longer accuracy (mean
// over the fitted runs, 95% bootstrap interval over seeds and instances) and every run's number.
static void scheme_table(const Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    fprintf(md, "| scheme | fitted | in-distribution | longer than training | per seed: longer (in-distribution when not fitted) |\n"
                "|---|---|---|---|---|\n");
    SeedBuckets seeds[MAX_ITEMS];
    for (int sc = 0; sc < c->n_schemes; sc++) {
        int runs = 0, fitted = 0, criterion = 0;
        for (int sd = 0; sd < c->n_seeds; sd++) {
            int ri = run_index(c, t, sc, sd);
            if (!run_has_results(&rp->runs[ri])) continue;
            runs++; fitted += counts(rp, ri); criterion |= rp->facts[ri].fit != FIT_NONE;
        }
        char cell[2][96];
        for (int o = 0; o < 2; o++) {
            int k = fitted_buckets(rp, t, sc, o, -1, seeds);
            Interval iv = bootstrap_accuracy(seeds, k, RESAMPLES, stream_seed(c->tasks[t], c->schemes[sc].label, o));
            fmt_interval(&iv, 100, cell[o], sizeof cell[o]);
        }
        fprintf(md, "| %s | %d of %d%s | %s | %s | ", c->schemes[sc].label, fitted, runs, criterion ? "" : " (no fit criterion)", cell[0], cell[1]);
        for (int sd = 0, first = 1; sd < c->n_seeds; sd++) {
            int ri = run_index(c, t, sc, sd);
            const RunFacts *f = &rp->facts[ri];
            fprintf(md, "%s%lld: ", first ? "" : ", ", c->seeds[sd]);
            first = 0;
            if (!run_has_results(&rp->runs[ri])) fprintf(md, "not run");
            else if (f->fit == FIT_NO) fprintf(md, "%.1f (not fitted; in-distribution %.1f)", f->acc[1], f->acc[0]);
            else fprintf(md, "%.1f", f->acc[1]);
        }
        fprintf(md, " |\n");
    }
    fprintf(md, "\n");
}

// The test instances of each length, from the first run of the task (every run has the same
// settings): the pool (every test instance of the length) and the distinct ones scored, the depths
// of a length added up, consecutive lengths alike merged into one row.
typedef struct { int first, last, pool, distinct, n; } LengthGroup;

static void pool_table(const Report *rp, int t) {
    int ri = -1;
    for (int i = 0; i < rp->n && ri < 0; i++) if (rp->runs[i].task == t && run_has_results(&rp->runs[i])) ri = i;
    if (ri < 0) return;
    LengthGroup *g = xcalloc(rp->nrow[ri] + 1, sizeof *g);
    int m = 0;
    for (int i = rp->row0[ri]; i < rp->row0[ri] + rp->nrow[ri]; i++) {
        const Row *r = &rp->rs.r[i];
        LengthGroup *p = m ? &g[m - 1] : NULL;
        if (p && p->last == r->length) {
            p->pool = p->pool < 0 || r->pool < 0 ? -1 : p->pool + r->pool;
            p->distinct += r->distinct; p->n += r->evaluated;
        } else g[m++] = (LengthGroup){ r->length, r->length, r->pool, r->distinct, r->evaluated };
    }
    int k = 0;
    for (int i = 0; i < m; i++) {
        LengthGroup *p = k ? &g[k - 1] : NULL;
        if (p && g[i].first == p->last + 1 && g[i].pool == p->pool && g[i].distinct == p->distinct && !g[i].n == !p->n) p->last = g[i].last;
        else g[k++] = g[i];
    }
    fprintf(rp->md, "Test instances by length (pool: every test instance of the length; scored: the distinct instances "
                    "each run is scored on):\n\n| lengths | pool | scored | |\n|---|---|---|---|\n");
    for (int i = 0; i < k; i++) {
        char lengths[32], pool[32];
        snprintf(lengths, sizeof lengths, g[i].last > g[i].first ? "%d-%d" : "%d", g[i].first, g[i].last);
        if (g[i].pool < 0) snprintf(pool, sizeof pool, "too many to enumerate"); else snprintf(pool, sizeof pool, "%d", g[i].pool);
        fprintf(rp->md, "| %s | %s | %d | %s |\n", lengths, pool, g[i].distinct, !g[i].n ? "no test instance"
                : g[i].pool < 0 || g[i].distinct < g[i].pool ? "sampled without replacement" : "every test instance");
    }
    fprintf(rp->md, "\n");
    free(g);
}
// The runs of a task whose answers do not depend on the input at some length.
static void degenerate_list(const Report *rp, int t) {
    const Cfg *c = rp->c;
    int any = 0;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            const char *d = rp->facts[run_index(c, t, sc, sd)].degenerate;
            if (!*d) continue;
            if (!any++) fprintf(rp->md, "Degenerate runs (one answer on >= %.0f%% of the instances of a length with >= %d "
                                        "instances: the answer does not depend on the input):\n\n", 100 * DEGENERATE_SHARE, DEGENERATE_MIN);
            fprintf(rp->md, "- %s seed %lld: the same answer on >= %.0f%% of instances at lengths ", c->schemes[sc].label,
                    c->seeds[sd], 100 * DEGENERATE_SHARE);
            for (; *d; d++) { if (*d == ' ') fputc(',', rp->md); fputc(*d, rp->md); }
            fprintf(rp->md, "\n");
        }
    if (!any) fprintf(rp->md, "No degenerate run (none gives one answer on >= %.0f%% of the instances of a length with >= %d "
                              "instances).\n", 100 * DEGENERATE_SHARE, DEGENERATE_MIN);
    fprintf(rp->md, "\n");
}

// The paired differences a - b of accuracy beyond training (points), one per seed: over tasks
// t0..t1-1, the mean of that seed's differences on the tasks where both runs fitted (a seed with no
// such task is left out). The seed is the unit even when tasks are pooled: runs of one seed start
// from the same weights on every task with the same vocabulary and draw their data from the same
// seed, so a seed's differences on several tasks are not independent of each other, and a test that
// counted each (task, seed) pair as one unit would claim more than the seeds show. seed_of[k] (when
// not NULL) gets the seed index of d[k]; d and seed_of hold n_seeds. Returns the count.
static int paired(const Report *rp, int t0, int t1, int a, int b, double *d, int *seed_of) {
    const Cfg *c = rp->c;
    int k = 0;
    for (int sd = 0; sd < c->n_seeds; sd++) {
        double sum = 0;
        int n = 0;
        for (int t = t0; t < t1; t++) {
            int ra = run_index(c, t, a, sd), rb = run_index(c, t, b, sd);
            if (!counts(rp, ra) || !counts(rp, rb) || isnan(rp->facts[ra].acc[1]) || isnan(rp->facts[rb].acc[1])) continue;
            sum += rp->facts[ra].acc[1] - rp->facts[rb].acc[1];
            n++;
        }
        if (!n) continue;
        if (seed_of) seed_of[k] = sd;
        d[k++] = sum / n;
    }
    return k;
}

typedef struct { Interval iv; double p; } Test;     // a paired test: mean, 95% t-interval, sign-flip p

static Test paired_test(const double *d, int n, uint64_t seed) { return (Test){ mean_t_interval(d, n), sign_flip_p(d, n, seed) }; }

// +1 when a - b is above 0 (the 95% interval above 0 and p < 0.05), -1 when below, 0 when the
// pairs cannot tell (the interval covers 0, or p >= 0.05, or fewer than 2 pairs)
static int direction(const Test *x) {
    if (x->iv.n < 2 || !(x->p < 0.05)) return 0;
    return x->iv.lo > 0 ? 1 : x->iv.hi < 0 ? -1 : 0;
}

// "| N | mean | [lo, hi] | p | Holm p |" of a test and its family's adjusted p
static void test_cells(FILE *md, const Test *x, double holm) {
    fprintf(md, " %d |", x->iv.n);
    if (x->iv.n) fprintf(md, " %+.1f |", x->iv.mean); else fprintf(md, " |");
    if (x->iv.n >= 2) fprintf(md, " [%+.1f, %+.1f] |", x->iv.lo, x->iv.hi); else fprintf(md, " |");
    if (x->iv.n) fprintf(md, " %.4g | %.4g |", x->p, holm); else fprintf(md, " | |");
}

// The family's tests' p (NAN where a test has no pair) adjusted by Holm into holm[]
static void holm_of_tests(const Test *x, int m, double *holm) {
    double *p = xmalloc(sizeof(double) * (m > 0 ? m : 1));
    for (int i = 0; i < m; i++) p[i] = x[i].iv.n ? x[i].p : NAN;
    holm_adjust(p, m, holm);
    free(p);
}

// After "none" in a family's line: when n seeds are too few for any of m tests to pass Holm (the
// smallest two-sided sign-flip p, 2 / 2^n, is not below 0.05 / m), say so and how many could.
static void family_seeds_note(FILE *md, int n, int m) {
    int need = 1;
    if (n < 1) return;                                  // no test had a pair: nothing to count
    while (2.0 / ldexp(1.0, need) >= 0.05 / m) need++;
    if (n < need)
        fprintf(md, ". The smallest p the sign-flip test can give with %d seeds is %.4g, and Holm asks below %.4g of the "
                    "smallest of %d p; %d seeds or more could pass it", n, 2.0 / ldexp(1.0, n), 0.05 / m, m, need);
}

static void not_distinguishable(FILE *md, int n, const char *unit) {
    if (n) fprintf(md, " not distinguishable with %d %s%s |\n", n, unit, n > 1 ? "s" : "");
    else fprintf(md, " no %s where both runs fitted |\n", unit);
}

// For every two schemes, the paired test of their accuracy beyond training, per task (t0 = t,
// t1 = t + 1) or pooled over every task (each seed's mean over its tasks: see paired), with the
// differences by seed, and Holm's adjustment over the table's pairs (its family).
static void pair_table(const Report *rp, int t0, int t1) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int pooled = t1 - t0 > 1, np = c->n_schemes * (c->n_schemes - 1) / 2;
    fprintf(md, "Paired differences of accuracy beyond the training lengths (percentage points, a - b) over the seeds "
                "where both runs fitted%s: mean, 95%% t-interval, exact sign-flip p (two-sided); a difference counts "
                "when the interval excludes 0 and p < 0.05. Holm p: p adjusted for the %d comparisons of this table "
                "(a verdict whose Holm p is below 0.05 holds with the chance of any false verdict in the table at most "
                "5%%).\n\n| a - b | %s | seeds | mean | 95%% interval | p | Holm p | verdict |\n|---|---|---|---|---|---|---|---|\n",
            pooled ? " on a task (each seed: the mean of its differences over those tasks)" : "", np,
            pooled ? "seed means" : "by seed");
    double *d = xmalloc(sizeof(double) * (size_t)np * c->n_seeds);
    int *seed_of = xmalloc(sizeof(int) * (size_t)np * c->n_seeds), *k = xmalloc(sizeof(int) * np);
    Test *x = xmalloc(sizeof(Test) * np);
    double *holm = xmalloc(sizeof(double) * np);
    for (int a = 0, i = 0; a < c->n_schemes; a++)
        for (int b = a + 1; b < c->n_schemes; b++, i++) {
            k[i] = paired(rp, t0, t1, a, b, d + (size_t)i * c->n_seeds, seed_of + (size_t)i * c->n_seeds);
            char name[160];
            snprintf(name, sizeof name, "%s-%s", c->schemes[a].label, c->schemes[b].label);
            x[i] = paired_test(d + (size_t)i * c->n_seeds, k[i], stream_seed(pooled ? "" : c->tasks[t0], name, 2));
        }
    holm_of_tests(x, np, holm);
    for (int a = 0, i = 0; a < c->n_schemes; a++)
        for (int b = a + 1; b < c->n_schemes; b++, i++) {
            fprintf(md, "| %s - %s |", c->schemes[a].label, c->schemes[b].label);
            for (int j = 0; j < k[i]; j++)
                fprintf(md, "%s%lld: %+.1f", j ? ", " : " ", c->seeds[seed_of[(size_t)i * c->n_seeds + j]], d[(size_t)i * c->n_seeds + j]);
            fprintf(md, " |");
            test_cells(md, &x[i], holm[i]);
            int dir = direction(&x[i]);
            if (dir) fprintf(md, " %s > %s |\n", c->schemes[dir > 0 ? a : b].label, c->schemes[dir > 0 ? b : a].label);
            else not_distinguishable(md, k[i], "seed");
        }
    fprintf(md, "\n");
    free(d); free(seed_of); free(k); free(x); free(holm);
}

// The NoPE paper's ranking among the fitted runs: per (task, seed) with at least two fitted runs,
// rank them by accuracy on longer lengths (1 = best; ties share the better rank) into rp->rr.
static void add_ranks(Report *rp, int t) {
    const Cfg *c = rp->c;
    for (int sd = 0; sd < c->n_seeds; sd++) {
        double acc[MAX_ITEMS];
        int ranked = 0;
        for (int sc = 0; sc < c->n_schemes; sc++) {
            int ri = run_index(c, t, sc, sd);
            acc[sc] = counts(rp, ri) ? rp->facts[ri].acc[1] : NAN;
            ranked += !isnan(acc[sc]);
        }
        if (ranked < 2) continue;
        for (int sc = 0; sc < c->n_schemes; sc++) {
            if (isnan(acc[sc])) continue;
            int rank = 1;
            for (int k = 0; k < c->n_schemes; k++) rank += acc[k] > acc[sc];      // NAN compares false
            rp->rr[((size_t)t * c->n_seeds + sd) * c->n_schemes + sc] = 1.0 / rank;
        }
    }
}

// Accuracy against length: per scheme the mean over the fitted runs and its 95% bootstrap
// interval (seeds, then instances) at each length, drawn as a band under the mean's line.
static void plot_accuracy(Report *rp, int t, int train_max) {
    const Cfg *c = rp->c;
    char name[256], path[4200];
    snprintf(name, sizeof name, "accuracy_%s", c->tasks[t]);
    snprintf(path, sizeof path, "%s/%s.dat", c->out, name);
    FILE *d = fopen(path, "w");
    CHECK(d, "cannot write '%s'", path);
    int lengths[MAX_LEN], nl = 0;
    for (int i = 0; i < rp->rs.n; i++) {
        const Row *r = &rp->rs.r[i];
        if (rp->runs[r->run].task != t) continue;
        int seen = 0;
        for (int k = 0; k < nl; k++) seen |= lengths[k] == r->length;
        if (!seen && nl < MAX_LEN) lengths[nl++] = r->length;
    }
    sort_ints(lengths, nl);
    fprintf(d, "# length, then per scheme: mean, lo, hi (fraction; mean over the fitted runs, 95%% bootstrap interval)\n# length");
    for (int sc = 0; sc < c->n_schemes; sc++) fprintf(d, " %s %s_lo %s_hi", c->schemes[sc].label, c->schemes[sc].label, c->schemes[sc].label);
    fprintf(d, "\n");
    SeedBuckets seeds[MAX_ITEMS];
    for (int li = 0; li < nl; li++) {
        fprintf(d, "%d", lengths[li]);
        for (int sc = 0; sc < c->n_schemes; sc++) {
            int k = fitted_buckets(rp, t, sc, 0, lengths[li], seeds);
            Interval iv = bootstrap_accuracy(seeds, k, PLOT_RESAMPLES, stream_seed(c->tasks[t], c->schemes[sc].label, 100 + lengths[li]));
            if (isnan(iv.mean)) fprintf(d, " NaN NaN NaN"); else fprintf(d, " %.6g %.6g %.6g", iv.mean, iv.lo, iv.hi);
        }
        fprintf(d, "\n");
    }
    fclose(d);
    char title[256];
    snprintf(title, sizeof title, "%s: accuracy against length (trained on <= %d; fitted runs: mean and 95%% bootstrap band)",
             c->tasks[t], train_max);
    FILE *g = gp_open(c->out, name, title, "length", "accuracy");
    fprintf(g, "set yrange [-0.02:1.02]\nset arrow from %g, graph 0 to %g, graph 1 nohead dt 2 lc rgb 'gray'\nplot ", train_max + 0.5, train_max + 0.5);
    for (int sc = 0; sc < c->n_schemes; sc++) {
        int col = 2 + 3 * sc;
        fprintf(g, "%s'%s.dat' using 1:%d:%d with filledcurves fs transparent solid 0.15 noborder lc rgb '%s' notitle, \\\n"
                   "     '%s.dat' using 1:%d with linespoints lw 2 pt 7 ps 0.5 lc rgb '%s' title '%s'",
                sc ? ", \\\n     " : "", name, col + 1, col + 2, COLORS[sc % 10], name, col, COLORS[sc % 10], c->schemes[sc].label);
    }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (rp->plots) gnuplot(c->out, name, &rp->made);
    fprintf(rp->md, "![accuracy](%s.png)\n\n", name);
}

// --attention-distance: each scheme's distance.csv (layer,split,instances,jsd: nope's model of the
// seed against this run's; in nope's own folder, against nope of the next seed) as a table by layer,
// mean over the seeds where both runs fitted with the 95% t-interval (nope's baseline: disjoint pairs
// of seeds), and a plot by layer.
#define DIST_COLUMNS "layer,split,instances,jsd"
#define DIST_MAX_LAYERS 64

// jsd[split][layer] of one distance.csv; returns the layers read, 0 when the file is missing
static int read_distance(const char *path, double jsd[2][DIST_MAX_LAYERS]) {
    if (access(path, F_OK) != 0) return 0;
    char line[512], *fl[8];
    for (int sp = 0; sp < 2; sp++) for (int l = 0; l < DIST_MAX_LAYERS; l++) jsd[sp][l] = NAN;
    FILE *f = open_result(path, DIST_COLUMNS, line, sizeof line);
    int layers = 0;
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 8);
        CHECK(k == 4, "'%s': a row has %d fields, expected 4 (" DIST_COLUMNS ")", path, k);
        int l = atoi(fl[0]), sp = !strcmp(fl[1], "longer");
        CHECK(l >= 0 && l < DIST_MAX_LAYERS && (sp || !strcmp(fl[1], "in")), "'%s': bad row (layer %s, split %s)", path, fl[0], fl[1]);
        jsd[sp][l] = atof(fl[3]);
        if (l + 1 > layers) layers = l + 1;
    }
    fclose(f);
    return layers;
}

static void distance_section(Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int ns = nope_scheme(c), layers = 0;
    // x[sc][split][layer][seed]
    static double x[MAX_ITEMS][2][DIST_MAX_LAYERS][MAX_ITEMS];
    int nx[MAX_ITEMS] = { 0 }, missing = 0, unfitted = 0;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            // the baseline in disjoint pairs of seeds (1-2, 3-4, ...): with the cyclic pairs that
            // ./compare measures (each NoPE run against the next seed's) every run would count twice,
            // and the t-interval would take 6 overlapping pairs for 6 independent values
            if (sc == ns && (sd % 2 || sd + 1 >= c->n_seeds)) continue;
            int a = run_index(c, t, ns, sd), b = run_index(c, t, sc, sc == ns ? sd + 1 : sd);
            char path[4200];
            snprintf(path, sizeof path, "%s/distance.csv", rp->runs[run_index(c, t, sc, sd)].dir);
            double jsd[2][DIST_MAX_LAYERS];
            int L = run_has_results(&rp->runs[a]) && run_has_results(&rp->runs[b]) ? read_distance(path, jsd) : 0;
            if (!L) { missing++; continue; }
            if (!counts(rp, a) || !counts(rp, b)) { unfitted++; continue; }
            if (L > layers) layers = L;
            for (int sp = 0; sp < 2; sp++) for (int l = 0; l < L; l++) x[sc][sp][l][nx[sc]] = jsd[sp][l];
            nx[sc]++;
        }
    if (!layers) return;
    fprintf(md, "### Attention distance to NoPE\n\nThe NoPE paper's measure (Kazemnejad et al. 2023, section 5.2; "
                "README, \"The NoPE paper's attention distance\"): for each of NoPE's heads, the Jensen-Shannon "
                "divergence (nats; 0 = the same attention, ln 2 = 0.693 = disjoint) to the nearest head of the other "
                "model in the same layer, averaged over the query rows of 5 test instances per test length and over "
                "NoPE's heads. Each scheme's run is compared with NoPE's run of the same seed; the nope row is the "
                "baseline, NoPE against NoPE of another seed, in disjoint pairs of seeds (the first with the second, "
                "the third with the fourth, ...). A scheme's run shares its seed's initial weights with NoPE's run "
                "where the baseline's two runs do not, so the baseline is the distance of NoPE models from different "
                "starts, and a scheme inside its interval is at most that far from NoPE. Mean over the pairs where "
                "both runs fitted [95%% t-interval], at the training lengths (in) by layer, and over all layers at "
                "the training lengths and beyond them.\n\n| scheme | pairs |");
    for (int l = 0; l < layers; l++) fprintf(md, " layer %d (in) |", l);
    fprintf(md, " all layers (in) | all layers (longer) |\n|---|---|");
    for (int l = 0; l < layers + 2; l++) fprintf(md, "---|");
    fprintf(md, "\n");
    char name[256], path[4200];
    snprintf(name, sizeof name, "distance_%s", c->tasks[t]);
    snprintf(path, sizeof path, "%s/%s.dat", c->out, name);
    FILE *d = fopen(path, "w");
    CHECK(d, "cannot write '%s'", path);
    fprintf(d, "# layer, then per scheme: mean, lo, hi of the JSD to NoPE at the training lengths (nope: NoPE of "
               "another seed); 95%% t-interval over the seeds where both runs fitted\n# layer");
    for (int sc = 0; sc < c->n_schemes; sc++) fprintf(d, " %s %s_lo %s_hi", c->schemes[sc].label, c->schemes[sc].label, c->schemes[sc].label);
    fprintf(d, "\n");
    for (int sc = 0; sc < c->n_schemes; sc++) {
        fprintf(md, "| %s%s | %d |", c->schemes[sc].label, sc == ns ? " (vs nope, another seed)" : "", nx[sc]);
        for (int l = 0; l < layers + 2; l++) {
            double v[MAX_ITEMS];
            int sp = l == layers + 1;
            for (int k = 0; k < nx[sc]; k++) {
                if (l < layers) { v[k] = x[sc][0][l][k]; continue; }
                double s = 0;                       // the mean over layers of this pair
                for (int j = 0; j < layers; j++) s += x[sc][sp][j][k];
                v[k] = s / layers;
            }
            Interval iv = mean_t_interval(v, nx[sc]);
            if (!nx[sc] || isnan(iv.mean)) fprintf(md, " n/a |");
            else if (nx[sc] > 1) fprintf(md, " %.4f [%.4f, %.4f] |", iv.mean, iv.lo, iv.hi);
            else fprintf(md, " %.4f |", iv.mean);
        }
        fprintf(md, "\n");
    }
    for (int l = 0; l < layers; l++) {
        fprintf(d, "%d", l);
        for (int sc = 0; sc < c->n_schemes; sc++) {
            Interval iv = mean_t_interval(x[sc][0][l], nx[sc]);
            if (!nx[sc] || isnan(iv.mean)) fprintf(d, " NaN NaN NaN");
            else fprintf(d, " %.6g %.6g %.6g", iv.mean, nx[sc] > 1 ? iv.lo : iv.mean, nx[sc] > 1 ? iv.hi : iv.mean);
        }
        fprintf(d, "\n");
    }
    fclose(d);
    fprintf(md, "\n");
    if (unfitted || missing) fprintf(md, "Left out: %d pairs with a run not fitted, %d without a distance (a run not "
                                         "finished).\n\n", unfitted, missing);
    char title[256];
    snprintf(title, sizeof title, "%s: attention distance to NoPE by layer (JSD to the nearest head; mean, 95%% t-interval)", c->tasks[t]);
    FILE *g = gp_open(c->out, name, title, "layer", "JSD (nats)");
    fprintf(g, "set xtics 1\nset offsets 0.3, 0.3, 0, 0\nplot ");
    for (int sc = 0; sc < c->n_schemes; sc++)
        fprintf(g, "%s'%s.dat' using ($1 + %g):%d:%d:%d with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '%s' title '%s%s'", sc ? ", \\\n     " : "",
                name, 0.04 * (sc - (c->n_schemes - 1) / 2.0), 2 + 3 * sc, 3 + 3 * sc, 4 + 3 * sc, COLORS[sc % 10],
                c->schemes[sc].label, sc == ns ? " (another seed)" : "");
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (rp->plots) gnuplot(c->out, name, &rp->made);
    fprintf(md, "![attention distance](%s.png)\n\n", name);
}

// A task's section: the scheme table, the test pools, the degenerate runs, the paired tests, its
// ranks for the MRR, the retrieval depth tables and the plot against length.
static void task_section(Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int train_max = 0;
    for (int i = 0; i < rp->n && !train_max; i++) if (rp->runs[i].task == t && run_has_results(&rp->runs[i])) train_max = task_train_max(&rp->runs[i]);
    fprintf(md, "## %s\n\nExact-match accuracy of the greedy answer (%%) on unseen test instances, %d seed%s; "
                "in-distribution: lengths <= %d, longer: the rest up to the longest test length, every instance "
                "weighted equally. ", c->tasks[t], c->n_seeds, c->n_seeds > 1 ? "s" : "", train_max);
    fit_sentence(rp, t, md);
    fprintf(md, "Mean over the fitted runs with its 95%% bootstrap interval (%d resamples of the seeds, then of the "
                "instances within each seed).\n\n", RESAMPLES);
    scheme_table(rp, t);
    pool_table(rp, t);
    degenerate_list(rp, t);
    if (c->n_schemes > 1) pair_table(rp, t, t + 1);
    add_ranks(rp, t);
    depth_tables(rp, t, md);
    plot_accuracy(rp, t, train_max);
    if (c->attention_distance) distance_section(rp, t);
}

// The perplexity of a run (variant: 0 plain, e the e-th RoPE extension) at window w (mode 0:
// non-overlapping, 1: sliding), NAN when none; *note gets the row's note (why there is no number).
static double ppl_value(const Report *rp, int run, int variant, int mode, int w, const char **note) {
    double x = NAN;
    for (int i = 0; i < rp->rs.n; i++) {
        const Row *r = &rp->rs.r[i];
        if (r->run == run && r->variant == variant && r->sliding == mode && r->length == w) {
            x = r->value;
            if (note && r->note[0]) *note = r->note;
        }
    }
    return x;
}

// A table cell of a mean over seeds: the mean, its interval when there are two or more, and how
// many seeds it holds when fewer than the grid's (an unfinished grid, a window a run could not take).
static void seeds_cell(FILE *md, Interval iv, int k, int n_seeds, int digits) {
    if (k > 1) fprintf(md, " %.*f [%.*f, %.*f]", digits, iv.mean, digits, iv.lo, digits, iv.hi);
    else fprintf(md, " %.*f", digits, iv.mean);
    if (k < n_seeds) fprintf(md, " (%d of %d seeds)", k, n_seeds);
    fprintf(md, " |");
}

// One perplexity table of text (mode 0: non-overlapping windows, 1: sliding): a row per scheme
// (and RoPE extension), a column per window, the mean over seeds with its 95% t-interval (lab/stats.h;
// the mean alone with one seed); "n/a" cells explained below.
static void ppl_table(const Report *rp, int t, const int *windows, int nw, int mode) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int n_var = 1 + c->n_ext;
    char notes[1024] = "";
    fprintf(md, "%s\n\n| scheme |", mode ? "Sliding window:" : "Non-overlapping windows:");
    for (int w = 0; w < nw; w++) fprintf(md, " %d |", windows[w]);
    fprintf(md, "\n|---|");
    for (int w = 0; w < nw; w++) fprintf(md, "---|");
    fprintf(md, "\n");
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++) {
            if (v && !takes_extensions(&c->schemes[sc])) continue;
            fprintf(md, "| %s%s%s |", c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
            for (int w = 0; w < nw; w++) {
                double x[MAX_ITEMS]; const char *note = "";
                int k = 0;
                for (int sd = 0; sd < c->n_seeds; sd++) {
                    double y = ppl_value(rp, run_index(c, t, sc, sd), v, mode, windows[w], &note);
                    if (!isnan(y)) x[k++] = log(y);          // the mean loss per token
                }
                Interval iv = exp_interval(mean_t_interval(x, k));   // geometric mean, interval from the log
                if (!k) {
                    fprintf(md, " n/a |");
                    char line[256];
                    snprintf(line, sizeof line, "n/a for %s: %s. ", c->schemes[sc].label, *note ? note : "no number");
                    if (!strstr(notes, line) && strlen(notes) + strlen(line) < sizeof notes) strcat(notes, line);
                } else seeds_cell(md, iv, k, c->n_seeds, 2);
            }
            fprintf(md, "\n");
        }
    fprintf(md, "\n%s%s", notes, *notes ? "\n\n" : "");
}

// ---- attention statistics (--attention-stats): each run's attention.csv (./train, eval/attnstats.h) ----

#define ATTN_COLUMNS "window,layer,head,windows,rows,sink_mass,entropy,distance,collapsed,layer_collapsed_frac,note"

typedef struct { int run, window, layer, windows; double frac; char note[96]; } LayerRow;   // one (run, window, layer)
typedef struct { LayerRow *r; int n, cap; } LayerRows;

// The layer rows of one run's attention.csv (the layer's fraction, read from its head-0 row; NAN
// and the note for a window the model could not take) into ls
static void read_attention(const char *path, int run, LayerRows *ls) {
    char line[1024], *fl[16];
    FILE *f = open_result(path, ATTN_COLUMNS, line, sizeof line);
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 16);
        CHECK(k == 11, "'%s': a row has %d fields, expected 11 (" ATTN_COLUMNS ")", path, k);
        if (atoi(fl[2]) != 0) continue;
        if (ls->n == ls->cap) {
            ls->cap = ls->cap ? 2 * ls->cap : 256;
            ls->r = realloc(ls->r, sizeof(LayerRow) * ls->cap);
            CHECK(ls->r, "out of memory");
        }
        LayerRow *r = &ls->r[ls->n++];
        *r = (LayerRow){ .run = run, .window = atoi(fl[0]), .layer = atoi(fl[1]), .windows = atoi(fl[3]), .frac = *fl[9] ? atof(fl[9]) : NAN };
        snprintf(r->note, sizeof r->note, "%s", fl[10]);
    }
    fclose(f);
}

// Per window length, a table of the fraction of heads collapsed (mean first-key mass >= ./train's
// --collapse-threshold, 0.5) by layer: a row per scheme, the mean over its seeds with the 95%
// t-interval (lab/stats.h; the mean alone with one seed).
static void attention_section(Report *rp, int t, int context) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    LayerRows ls = { 0 };
    char path[4200];
    for (int i = 0; i < rp->n; i++)
        if (rp->runs[i].task == t && run_has_results(&rp->runs[i])) {
            snprintf(path, sizeof path, "%s/attention.csv", rp->runs[i].dir);
            read_attention(path, i, &ls);
        }
    int windows[64], nw = 0, layers = 0, per_length = 0;
    for (int i = 0; i < ls.n; i++) {
        if (ls.r[i].windows > per_length) per_length = ls.r[i].windows;
        int seen = 0;
        for (int k = 0; k < nw; k++) seen |= windows[k] == ls.r[i].window;
        if (!seen && nw < 64) windows[nw++] = ls.r[i].window;
        if (ls.r[i].layer + 1 > layers) layers = ls.r[i].layer + 1;
    }
    sort_ints(windows, nw);
    fprintf(md, "### Attention: heads collapsed onto the first key\n\nThe fraction of each layer's heads whose mean "
                "attention mass on the first key of the window (the sink; the boundary token with --bos) is >= 0.5, "
                "averaged over %d windows of the validation text per length (./train --attention-stats; README, "
                "\"Attention sinks and head collapse\"): mean over seeds [95%% t-interval]%s.\n\n",
            per_length, c->n_seeds > 1 ? "" : " (one seed: no interval)");
    for (int w = 0; w < nw; w++) {
        fprintf(md, "Windows of %d tokens (%gT):\n\n| scheme |", windows[w], context ? (double)windows[w] / context : NAN);
        for (int l = 0; l < layers; l++) fprintf(md, " layer %d |", l);
        fprintf(md, "\n|---|");
        for (int l = 0; l < layers; l++) fprintf(md, "---|");
        fprintf(md, "\n");
        char notes[512] = "";
        for (int sc = 0; sc < c->n_schemes; sc++) {
            fprintf(md, "| %s |", c->schemes[sc].label);
            for (int l = 0; l < layers; l++) {
                double x[MAX_ITEMS];
                int n = 0;
                const char *note = "";
                for (int sd = 0; sd < c->n_seeds; sd++)
                    for (int i = 0; i < ls.n; i++) {
                        const LayerRow *r = &ls.r[i];
                        if (r->run != run_index(c, t, sc, sd) || r->window != windows[w] || r->layer != l) continue;
                        if (isnan(r->frac)) note = r->note; else x[n++] = r->frac;
                    }
                Interval iv = mean_t_interval(x, n);
                if (!n) {
                    fprintf(md, " n/a |");
                    char line[160];
                    snprintf(line, sizeof line, "n/a for %s: %s. ", c->schemes[sc].label, *note ? note : "no number");
                    if (!strstr(notes, line) && strlen(notes) + strlen(line) < sizeof notes) strcat(notes, line);
                } else seeds_cell(md, iv, n, c->n_seeds, 2);
            }
            fprintf(md, "\n");
        }
        fprintf(md, "\n%s%s", notes, *notes ? "\n\n" : "");
    }
    // the plot by depth: each scheme's fraction by layer at the training length (1x; else the
    // longest window with a number), mean and t-interval over the seeds
    int wplot = 0;
    for (int i = 0; i < ls.n; i++) if (!isnan(ls.r[i].frac) && ls.r[i].window > wplot) wplot = ls.r[i].window;
    for (int w = 0; w < nw; w++) if (windows[w] == context) wplot = context;
    if (wplot && layers) {
        char name[256];
        snprintf(name, sizeof name, "attention_collapse");
        snprintf(path, sizeof path, "%s/%s.dat", c->out, name);
        FILE *d = fopen(path, "w");
        CHECK(d, "cannot write '%s'", path);
        fprintf(d, "# layer, then per scheme: mean, lo, hi of the fraction of heads collapsed onto the first key, windows "
                   "of %d tokens; 95%% t-interval over the seeds (lo = hi = mean with one seed)\n# layer", wplot);
        for (int sc = 0; sc < c->n_schemes; sc++) fprintf(d, " %s %s_lo %s_hi", c->schemes[sc].label, c->schemes[sc].label, c->schemes[sc].label);
        fprintf(d, "\n");
        for (int l = 0; l < layers; l++) {
            fprintf(d, "%d", l);
            for (int sc = 0; sc < c->n_schemes; sc++) {
                double x[MAX_ITEMS];
                int n = 0;
                for (int sd = 0; sd < c->n_seeds; sd++)
                    for (int i = 0; i < ls.n; i++) {
                        const LayerRow *r = &ls.r[i];
                        if (r->run == run_index(c, t, sc, sd) && r->window == wplot && r->layer == l && !isnan(r->frac)) x[n++] = r->frac;
                    }
                Interval iv = mean_t_interval(x, n);
                if (!n) fprintf(d, " NaN NaN NaN");
                else fprintf(d, " %.6g %.6g %.6g", iv.mean, n > 1 ? iv.lo : iv.mean, n > 1 ? iv.hi : iv.mean);
            }
            fprintf(d, "\n");
        }
        fclose(d);
        char title[256];
        snprintf(title, sizeof title, "heads collapsed onto the first key, by layer (windows of %d tokens; mean, 95%% t-interval)", wplot);
        FILE *g = gp_open(c->out, name, title, "layer", "fraction of heads collapsed");
        fprintf(g, "set xtics 1\nset yrange [-0.05:1.05]\nset offsets 0.3, 0.3, 0, 0\nplot ");
        for (int sc = 0; sc < c->n_schemes; sc++)
            fprintf(g, "%s'%s.dat' using ($1 + %g):%d:%d:%d with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '%s' title '%s'",
                    sc ? ", \\\n     " : "", name, 0.05 * (sc - (c->n_schemes - 1) / 2.0), 2 + 3 * sc, 3 + 3 * sc, 4 + 3 * sc,
                    COLORS[sc % 10], c->schemes[sc].label);
        fprintf(g, "\n");
        gp_again_svg(g, name);
        fclose(g);
        if (rp->plots) gnuplot(c->out, name, &rp->made);
        fprintf(md, "![heads collapsed by layer](%s.png)\n\n", name);
    }
    free(ls.r);
}

// --double-length: the ALiBi paper's test at the window 2T. For every scheme X trained at T and every
// Y trained at 2T (both listed), the perplexity of each at 2T and the paired ratio X / Y by seed
// (below 1: X, trained at half the length, is better), tested on the log ratios (the difference of
// mean losses per token): t-interval and sign-flip p, shown back as ratios.
static void double_length_section(const Report *rp, int t, int T) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int W = 2 * T;
    fprintf(md, "### Trained at %d tokens and tested at %d, against trained at %d\n\nThe ALiBi paper's test (Press et al., "
                "section 4): a model trained at T = %d is scored at twice its length, W = %d, next to the same and the other "
                "schemes trained at W (with half the rows per step, so the same tokens per step; the label @%d). Perplexity at "
                "%d tokens, geometric mean over the seeds with its 95%% t-interval (on the log, as above); X / Y by seed "
                "(below 1: X, trained at half the length, is better), their geometric mean with the 95%% t-interval of the "
                "log ratios (the difference of mean losses per token) and the exact sign-flip p (two-sided) of the log "
                "ratios; a difference counts when the interval excludes 1 and p < 0.05 (with 5 seeds or fewer no p can be "
                "below 0.05). Holm p: p adjusted for the table's comparisons as one family (a verdict whose Holm p is below 0.05 "
                "holds with the chance of any false verdict in the table at most 5%%).\n\n",
            T, W, W, T, W, W, W);
    typedef struct { int x, y, n, kx, ky; Interval ix, iy; char by[512]; } Pair;   // a row; its test is tests[i]
    int m = 0;
    for (int y = 0; y < c->n_schemes; y++)
        for (int xl = 0; xl < c->n_schemes; xl++) m += c->schemes[y].long_of >= 0 && c->schemes[xl].long_of >= 0;
    Pair *rows = xmalloc(sizeof(Pair) * (m > 0 ? m : 1));
    Test *tests = xmalloc(sizeof(Test) * (m > 0 ? m : 1));
    double *holm = xmalloc(sizeof(double) * (m > 0 ? m : 1));
    for (int mode = 0; mode < 2; mode++) {
        int i = 0;
        for (int y = 0; y < c->n_schemes; y++) {
            if (c->schemes[y].long_of < 0) continue;
            for (int xl = 0; xl < c->n_schemes; xl++) {
                int x = c->schemes[xl].long_of;         // the schemes trained at T, in the order listed
                if (x < 0) continue;
                Pair *r = &rows[i];
                double vx[MAX_ITEMS], vy[MAX_ITEMS], d[MAX_ITEMS];
                r->x = x; r->y = y; r->kx = r->ky = r->n = 0; r->by[0] = 0;
                for (int sd = 0; sd < c->n_seeds; sd++) {
                    double a = ppl_value(rp, run_index(c, t, x, sd), 0, mode, W, NULL);
                    double b = ppl_value(rp, run_index(c, t, y, sd), 0, mode, W, NULL);
                    if (!isnan(a)) vx[r->kx++] = log(a);
                    if (!isnan(b)) vy[r->ky++] = log(b);
                    if (isnan(a) || isnan(b)) continue;
                    d[r->n++] = log(a) - log(b);
                    size_t u = strlen(r->by);
                    snprintf(r->by + u, sizeof r->by - u, "%s%lld: %.3f", u ? ", " : "", c->seeds[sd], a / b);
                }
                r->ix = exp_interval(mean_t_interval(vx, r->kx));
                r->iy = exp_interval(mean_t_interval(vy, r->ky));
                tests[i++] = paired_test(d, r->n, stream_seed(c->schemes[x].label, c->schemes[y].label, 40 + mode));
            }
        }
        holm_of_tests(tests, m, holm);                  // the table's m comparisons are one family
        fprintf(md, "%s\n\n| X at %d | Y at %d | X | Y | X / Y by seed | seeds | X / Y | 95%% interval | p | Holm p | verdict |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|\n", mode ? "Sliding window:" : "Non-overlapping windows:", T, W);
        for (i = 0; i < m; i++) {
            const Pair *r = &rows[i];
            const Test *x_y = &tests[i];
            fprintf(md, "| %s | %s |", c->schemes[r->x].label, c->schemes[r->y].label);
            if (r->kx) seeds_cell(md, r->ix, r->kx, c->n_seeds, 3); else fprintf(md, " n/a |");
            if (r->ky) seeds_cell(md, r->iy, r->ky, c->n_seeds, 3); else fprintf(md, " n/a |");
            fprintf(md, " %s | %d |", r->by, r->n);
            if (r->n) fprintf(md, " %.3f |", exp(x_y->iv.mean)); else fprintf(md, " |");
            if (r->n >= 2) fprintf(md, " [%.3f, %.3f] |", exp(x_y->iv.lo), exp(x_y->iv.hi)); else fprintf(md, " |");
            if (r->n) fprintf(md, " %.4g | %.4g |", x_y->p, holm[i]); else fprintf(md, " | |");
            int dir = direction(x_y);
            if (dir < 0) fprintf(md, " %s at %d better |\n", c->schemes[r->x].label, T);
            else if (dir > 0) fprintf(md, " %s better |\n", c->schemes[r->y].label);
            else if (!r->n) fprintf(md, " no seed with both perplexities |\n");
            else not_distinguishable(md, r->n, "seed");
        }
        // which verdicts hold for the table as one family
        int held = 0, most = 0;
        fprintf(md, "\nWith the chance of any false verdict among these %d comparisons at most 5%% (Holm p < 0.05 and the "
                    "interval on one side of 1): ", m);
        for (i = 0; i < m; i++) {
            const Pair *r = &rows[i];
            int dir = direction(&tests[i]);
            most = r->n > most ? r->n : most;
            if (!dir || !(holm[i] < 0.05)) continue;
            if (dir < 0) fprintf(md, "%s%s at %d better than %s", held++ ? ", " : "", c->schemes[r->x].label, T, c->schemes[r->y].label);
            else fprintf(md, "%s%s better than %s at %d", held++ ? ", " : "", c->schemes[r->y].label, c->schemes[r->x].label, T);
        }
        if (!held) {
            fprintf(md, "none");
            family_seeds_note(md, most, m);
        }
        fprintf(md, ".\n\n");
    }
    free(rows); free(tests); free(holm);
}

// Text's section: perplexity against window length, non-overlapping then sliding, and the plot; with
// --double-length the test at 2T, with --attention-stats the collapse tables.
static void text_section(Report *rp, int t) {
    const Cfg *c = rp->c;
    int context = 0;
    for (int i = 0; i < rp->n && !context; i++) if (run_has_results(&rp->runs[i])) context = text_context(&rp->runs[i]);
    if (c->context) context = c->context;
    char sb[64];
    const char *stride = eval_flag(c, "--ppl-stride", sb, sizeof sb);
    double sf = stride ? atof(stride) : 0.5;               // ./train's default: half a window
    fprintf(rp->md, "## Perplexity against context length on %s\n\nTrained at %d tokens%s; perplexity (geometric mean over %d "
                    "seed%s%s) on windows of each length, first non-overlapping windows, then a sliding window "
                    "(stride %g of the window: each token scored once, past the first window with at least %g of a "
                    "window of context; the first window's tokens with what precedes them).\n\n", c->data, context,
            c->context ? " (schemes labelled @N: at N tokens)" : "", c->n_seeds, c->n_seeds > 1 ? "s" : "",
            c->n_seeds > 1 ? ", the exponential of the mean loss per token, with the 95% t-interval of that mean loss "
                             "carried through the exponential: perplexity is a ratio scale, and a mean over its raw "
                             "values lets one bad seed make the interval reach below 1" : "", sf, 1 - sf);
    int windows[64], nw = 0;
    for (int i = 0; i < rp->rs.n; i++) {
        int seen = 0;
        for (int k = 0; k < nw; k++) seen |= windows[k] == rp->rs.r[i].length;
        if (!seen && nw < 64) windows[nw++] = rp->rs.r[i].length;
    }
    sort_ints(windows, nw);
    for (int mode = 0; mode < 2; mode++) ppl_table(rp, t, windows, nw, mode);
    plot_ppl(c, &rp->rs, context, rp->md, rp->plots, &rp->made);
    if (c->context) double_length_section(rp, t, c->context);
    if (c->attention_stats) attention_section(rp, t, context);
}

// The mean reciprocal rank of each scheme over the fitted runs of every task and seed, with its
// bootstrap interval, and the runs it leaves out.
static void mrr_table(const Report *rp) {
    const Cfg *c = rp->c;
    int configs = 0, not_fitted = 0, alone = 0, missing = 0;
    for (int t = 0; t < c->n_tasks; t++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            const double *rr = rp->rr + ((size_t)t * c->n_seeds + sd) * c->n_schemes;
            int ranked = 0;
            for (int sc = 0; sc < c->n_schemes; sc++) {
                int ri = run_index(c, t, sc, sd);
                ranked += !isnan(rr[sc]);
                if (!run_has_results(&rp->runs[ri])) missing++;
                else if (!counts(rp, ri)) not_fitted++;
                else if (isnan(rr[sc])) alone++;
            }
            configs += ranked > 0;
        }
    fprintf(rp->md, "## Mean reciprocal rank\n\nThe NoPE paper's aggregate, over the fitted runs: for every task and seed the "
                    "fitted runs are ranked by accuracy on lengths longer than training (1 = best, ties share the better rank); "
                    "a scheme's MRR is its mean 1/rank over the %d task x seed configurations with at least two fitted runs, "
                    "with a 95%% bootstrap interval (%d resamples of the seeds, each bringing all its tasks). Left out: %d "
                    "run%s not fitted, %d fitted run%s with no other fitted run to rank against, %d run%s not finished.\n\n",
            configs, RESAMPLES, not_fitted, not_fitted == 1 ? "" : "s", alone, alone == 1 ? "" : "s", missing, missing == 1 ? "" : "s");
    if (!configs) return;
    Interval *m = xcalloc(c->n_schemes, sizeof(Interval));
    bootstrap_mrr(rp->rr, c->n_tasks, c->n_seeds, c->n_schemes, RESAMPLES, stream_seed("", "mrr", 3), m);
    fprintf(rp->md, "| scheme | MRR | 95%% interval | configurations ranked in |\n|---|---|---|---|\n");
    for (int sc = 0; sc < c->n_schemes; sc++) {
        if (!m[sc].n) { fprintf(rp->md, "| %s | | | 0 |\n", c->schemes[sc].label); continue; }
        fprintf(rp->md, "| %s | %.3f | [%.3f, %.3f] | %d |\n", c->schemes[sc].label, m[sc].mean, m[sc].lo, m[sc].hi, m[sc].n);
    }
    fprintf(rp->md, "\n");
    free(m);
}

// --claims: each claim "a > b" tested on the differences a - b pooled over every task, then per task.
static void claims_section(const Report *rp) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int nt = c->n_tasks > 1 ? c->n_tasks + 1 : 1;            // rows per claim: pooled, then each task
    fprintf(md, "## Claims\n\nEach claim A>B says that A's accuracy beyond the training lengths exceeds B's. Over the seeds "
                "where both runs fitted%s: the mean difference A - B (percentage points), its 95%% t-interval and the exact sign-flip p "
                "(two-sided). Supported: the interval lies above 0 and p < 0.05; contradicted: it lies below 0 and p < "
                "0.05; otherwise not distinguishable with the seeds at hand. Holm p adjusts p for the family it belongs "
                "to: the %d claims' %s together%s.\n\n"
                "| claim | over | seeds | mean A - B | 95%% interval | p | Holm p | verdict |\n|---|---|---|---|---|---|---|---|\n",
            c->n_tasks > 1 ? " (pooled over tasks: each seed's mean difference over its tasks, so the seed stays the unit)" : "",
            c->n_claims, c->n_tasks > 1 ? "pooled rows" : "rows", c->n_tasks > 1 ? ", and each claim's rows by task together" : "");
    double *d = xmalloc(sizeof(double) * c->n_seeds);
    Test *x = xmalloc(sizeof(Test) * (size_t)c->n_claims * nt);
    int *finished = xmalloc(sizeof(int) * (size_t)c->n_claims * nt);
    for (int k = 0; k < c->n_claims; k++) {
        int a = c->claims[k][0], b = c->claims[k][1];
        char name[160];
        snprintf(name, sizeof name, "%s-%s", c->schemes[a].label, c->schemes[b].label);     // pair_table's stream
        for (int r = 0; r < nt; r++) {
            int t = c->n_tasks > 1 ? r - 1 : 0, pooled = c->n_tasks > 1 && r == 0;
            int f = pooled;
            for (int i = 0; !pooled && i < rp->n; i++) f += rp->runs[i].task == t && run_has_results(&rp->runs[i]);
            finished[k * nt + r] = f;
            int n = pooled ? paired(rp, 0, c->n_tasks, a, b, d, NULL) : paired(rp, t, t + 1, a, b, d, NULL);
            x[k * nt + r] = paired_test(d, f ? n : 0, stream_seed(pooled ? "" : c->tasks[t], name, 2));
        }
    }
    // Holm's families: the claims' first rows (pooled, or the one task's) across claims; each claim's task rows
    double *holm = xmalloc(sizeof(double) * (size_t)c->n_claims * nt);
    Test *fam = xmalloc(sizeof(Test) * (c->n_claims > nt ? c->n_claims : nt));
    double *adj = xmalloc(sizeof(double) * (c->n_claims > nt ? c->n_claims : nt));
    for (int k = 0; k < c->n_claims; k++) fam[k] = x[k * nt];
    holm_of_tests(fam, c->n_claims, adj);
    for (int k = 0; k < c->n_claims; k++) holm[k * nt] = adj[k];
    for (int k = 0; k < c->n_claims && nt > 1; k++) {
        holm_of_tests(x + k * nt + 1, nt - 1, adj);
        for (int r = 1; r < nt; r++) holm[k * nt + r] = adj[r - 1];
    }
    for (int k = 0; k < c->n_claims; k++) {
        int a = c->claims[k][0], b = c->claims[k][1];
        char claim[160];
        snprintf(claim, sizeof claim, "%s>%s", c->schemes[a].label, c->schemes[b].label);
        for (int r = 0; r < nt; r++) {
            int t = c->n_tasks > 1 ? r - 1 : 0, pooled = c->n_tasks > 1 && r == 0;
            if (!finished[k * nt + r]) { fprintf(md, "| %s | %s | | | | | | no run finished |\n", r ? "" : claim, c->tasks[t]); continue; }
            const Test *y = &x[k * nt + r];
            fprintf(md, "| %s | %s |", r ? "" : claim, pooled ? "all tasks" : c->tasks[t]);
            test_cells(md, y, holm[k * nt + r]);
            int dir = direction(y);
            if (dir) fprintf(md, " %s |\n", dir > 0 ? "supported" : "contradicted");
            else not_distinguishable(md, y->iv.n, "seed");
        }
    }
    // which verdicts hold for the family of claims as a whole
    int held = 0;
    fprintf(md, "\nWith the chance of any false verdict among the %d claims at most 5%% (Holm p < 0.05 and the interval "
                "on one side of 0): ", c->n_claims);
    for (int k = 0; k < c->n_claims; k++) {
        int dir = direction(&x[k * nt]);
        if (!dir || !(holm[k * nt] < 0.05)) continue;
        fprintf(md, "%s%s>%s %s", held++ ? ", " : "", c->schemes[c->claims[k][0]].label, c->schemes[c->claims[k][1]].label,
                dir > 0 ? "supported" : "contradicted");
    }
    if (!held) {
        int n = 0;
        for (int k = 0; k < c->n_claims; k++) n = x[k * nt].iv.n > n ? x[k * nt].iv.n : n;
        fprintf(md, "none");
        family_seeds_note(md, n, c->n_claims);
    }
    fprintf(md, ".\n\n");
    free(d); free(x); free(finished); free(holm); free(fam); free(adj);
}

// summary.md printed without its picture lines, and where the files are.
static void print_summary(const Cfg *c, int made) {
    char path[4200];
    printf("\n");
    snprintf(path, sizeof path, "%s/summary.md", c->out);
    FILE *s = fopen(path, "r");
    char line[4096];
    while (s && fgets(line, sizeof line, s)) if (strncmp(line, "![", 2)) fputs(line, stdout);
    if (s) fclose(s);
    printf("results: %s/results.csv, %s/summary.md%s\n", c->out, c->out, made ? ", plots listed above" : "");
}

void report(const Cfg *c, const Run *runs, int n) {
    Report rp = { .c = c, .runs = runs, .n = n };
    read_results(&rp);
    write_results_csv(&rp);
    if (!c->data) {
        run_facts(&rp);
        write_runs_csv(&rp);
        rp.buf = xmalloc(sizeof(Bucket) * (rp.rs.n + 1));
        size_t n_rr = (size_t)c->n_tasks * c->n_seeds * c->n_schemes;
        rp.rr = xmalloc(sizeof(double) * n_rr);
        for (size_t i = 0; i < n_rr; i++) rp.rr[i] = NAN;
    }

    char path[4200];
    snprintf(path, sizeof path, "%s/summary.md", c->out);
    rp.md = fopen(path, "w");
    CHECK(rp.md, "cannot write '%s'", path);
    rp.plots = have_gnuplot();
    if (!rp.plots) printf("gnuplot not found: apt-get install gnuplot-nox, then run this command again for the plots "
                          "(results.csv and summary.md are written; the .gp scripts are in %s)\n", c->out);
    else printf("plots:\n");
    for (int t = 0; t < c->n_tasks; t++) {
        int finished = 0;
        for (int i = 0; i < n; i++) finished += runs[i].task == t && run_has_results(&runs[i]);
        if (!finished) {       // an interrupted grid: say so instead of tables of empty cells
            fprintf(rp.md, "## %s\n\nNo run of this task has finished (%d to train); run the command again to train them.\n\n",
                    c->tasks[t], c->n_schemes * c->n_seeds);
            continue;
        }
        if (c->data) text_section(&rp, t); else task_section(&rp, t);
        plot_loss(c, runs, t, rp.md, rp.plots, &rp.made);
    }
    if (!c->data) {
        if (c->n_tasks > 1 && c->n_schemes > 1) { fprintf(rp.md, "## Paired comparisons over all tasks\n\n"); pair_table(&rp, 0, c->n_tasks); }
        mrr_table(&rp);
        if (c->n_claims) claims_section(&rp);
    }
    fclose(rp.md);
    free(rp.rr); free(rp.buf); free(rp.facts); free(rp.row0); free(rp.nrow);
    free(rp.rs.r);
    print_summary(c, rp.made);
}
