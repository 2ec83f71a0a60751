// compare_report.c: ./compare's report: reads the results of every finished run (eval.csv or
// ppl*.csv), writes results.csv, summary.md (tables of mean +- std per scheme, MRR across tasks)
// and the gnuplot scripts and plots, then prints the summary.
#include <math.h>
#include <string.h>

#include "compare.h"

#define MAX_LEN 4096     // the most lengths (or windows) of one task in a table or plot

typedef struct {           // one (run, bucket) row of an eval.csv or a ppl.csv
    int run;
    int length;            // task length, or window (tokens)
    double depth;          // retrieval depth or -1
    int ood, n, correct;   // task
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

// Opens a finished run's CSV past its header line.
static FILE *open_result(const char *path, char *line, int cap) {
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot read '%s' (the run's done marker exists; remove it to redo the run)", path);
    CHECK(fgets(line, cap, f), "'%s' is empty; remove the run's folder to redo it", path);
    return f;
}

static void read_eval(const char *path, int run, Rows *rs) {
    char line[1024], *fl[16];
    FILE *f = open_result(path, line, sizeof line);
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 16);
        CHECK(k >= 10, "'%s': a row has %d fields, expected 10 (task,scheme,seed,length,depth,split,n,correct,accuracy,skipped)", path, k);
        // an instance the model cannot run (past a learned position table) counts as wrong
        Row r = { .run = run, .length = atoi(fl[3]), .depth = *fl[4] ? atof(fl[4]) : -1, .ood = !strcmp(fl[5], "ood"),
                  .n = atoi(fl[6]) + atoi(fl[9]), .correct = atoi(fl[7]) };
        r.value = r.n ? (double)r.correct / r.n : NAN;
        push(rs, &r);
    }
    fclose(f);
}

static void read_ppl(const char *path, int run, int variant, Rows *rs) {
    char line[1024], *fl[16];
    FILE *f = open_result(path, line, sizeof line);
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

static void mean_std(const double *x, int n, double *mean, double *sd) {
    double s = 0, q = 0; int k = 0;
    for (int i = 0; i < n; i++) if (!isnan(x[i])) { s += x[i]; k++; }
    *mean = k ? s / k : NAN;
    for (int i = 0; i < n; i++) if (!isnan(x[i])) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = k > 1 ? sqrt(q / (k - 1)) : 0;
}

static int have_gnuplot(void) { return system("command -v gnuplot > /dev/null 2>&1") == 0; }

static void gnuplot(const char *out, const char *name, int *made) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp'", out, name);
    if (system(cmd) == 0) { printf("  %s/%s.png (and .svg)\n", out, name); (*made)++; }
    else printf("  gnuplot failed on %s/%s.gp\n", out, name);
}

// The terminal lines shared by every script: the PNG first, then the same plot again as SVG.
static void gp_begin(FILE *g, const char *name, const char *title, const char *xl, const char *yl) {
    fprintf(g, "set terminal pngcairo size 1000,560 noenhanced\nset output '%s.png'\n", name);
    fprintf(g, "set title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n", title, xl, yl);
}
static void gp_again_svg(FILE *g, const char *name) {
    fprintf(g, "set terminal svg size 1000,560 noenhanced\nset output '%s.svg'\nreplot\n", name);
}

static const char *COLORS[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };

// the loss curves of every run (one colour per scheme, one line per seed)
static void plot_loss(const Cfg *c, const Run *runs, int task, FILE *md, int plots, int *made) {
    char name[256], path[4200];
    snprintf(name, sizeof name, "loss_%s", c->tasks[task]);
    snprintf(path, sizeof path, "%s/%s.gp", c->out, name);
    FILE *g = fopen(path, "w");
    CHECK(g, "cannot write '%s'", path);
    char title[256];
    snprintf(title, sizeof title, "%s: training loss (every scheme and seed)", c->tasks[task]);
    gp_begin(g, name, title, "step", "loss (nats per target token)");
    fprintf(g, "set datafile separator ','\nset logscale y\nset format y '%%g'\nplot ");
    int first = 1;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            const Run *r = &runs[run_index(c, task, sc, sd)];
            if (!run_has_results(r)) continue;
            fprintf(g, "%s'%s/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '%s' title '%s'", first ? "" : ", \\\n     ",
                    r->dir + strlen(c->out) + 1, COLORS[sc % 10], sd == 0 ? c->schemes[sc].label : "");
            first = 0;
        }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (plots && !first) gnuplot(c->out, name, made);
    fprintf(md, "![loss](%s.png)\n\n", name);
}

// accuracy (task) or perplexity (text) against length: one column per scheme (mean over seeds)
static void plot_by_length(const Cfg *c, const Rows *rs, int task, int train_max, int context, FILE *md, int plots, int *made) {
    int text = c->data != NULL;
    int n_var = text ? 1 + c->n_ext : 1;
    char name[256], path[4200];
    snprintf(name, sizeof name, text ? "ppl_by_length" : "accuracy_%s", c->tasks[task]);
    snprintf(path, sizeof path, "%s/%s.dat", c->out, name);
    FILE *d = fopen(path, "w");
    CHECK(d, "cannot write '%s'", path);
    // rows: every length present; columns: scheme (x variant) means over seeds (depths pooled)
    int lengths[MAX_LEN], nl = 0;
    for (int i = 0; i < rs->n; i++) {
        const Row *r = &rs->r[i];
        if ((r->run / c->n_schemes) / c->n_seeds != task || (text && r->sliding)) continue;
        int seen = 0;
        for (int k = 0; k < nl; k++) seen |= lengths[k] == r->length;
        if (!seen && nl < MAX_LEN) lengths[nl++] = r->length;
    }
    sort_ints(lengths, nl);
    double ymin = INFINITY;              // text: the best perplexity, for the y range
    fprintf(d, "# %s", text ? "window" : "length");
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++) fprintf(d, " %s%s%s", c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
    fprintf(d, "\n");
    for (int li = 0; li < nl; li++) {
        fprintf(d, "%d", lengths[li]);
        for (int sc = 0; sc < c->n_schemes; sc++)
            for (int v = 0; v < n_var; v++) {
                double sum = 0; long long num = 0, den = 0; int k = 0;
                for (int i = 0; i < rs->n; i++) {
                    const Row *r = &rs->r[i];
                    if ((r->run / c->n_schemes) / c->n_seeds != task || r->run % c->n_schemes != sc || r->length != lengths[li]) continue;
                    if (text) { if (!r->sliding && r->variant == v && !isnan(r->value)) { sum += r->value; k++; } }
                    else { num += r->correct; den += r->n; }
                }
                double val = text ? (k ? sum / k : NAN) : (den ? (double)num / den : NAN);
                if (isnan(val)) fprintf(d, " NaN"); else fprintf(d, " %.6g", val);
                if (!isnan(val) && val < ymin) ymin = val;
            }
        fprintf(d, "\n");
    }
    fclose(d);
    snprintf(path, sizeof path, "%s/%s.gp", c->out, name);
    FILE *g = fopen(path, "w");
    CHECK(g, "cannot write '%s'", path);
    char title[256];
    if (text) snprintf(title, sizeof title, "perplexity against evaluation window (trained at %d tokens; non-overlapping windows; y cut at 4x the best)", context);
    else snprintf(title, sizeof title, "%s: exact-match accuracy against length (trained on lengths <= %d; mean over seeds)", c->tasks[task], train_max);
    gp_begin(g, name, title, text ? "window (tokens)" : "length", text ? "perplexity" : "accuracy");
    // text: y from the best perplexity to 4 times it (a scheme that explodes leaves the top)
    if (text) fprintf(g, "set logscale x 2\nset logscale y\nset yrange [%g:%g]\nset ytics %.3g, 1.25\nset format y '%%.3g'\n"
                         "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb 'gray'\n", 0.95 * ymin, 4 * ymin, ymin, context, context);
    else fprintf(g, "set yrange [-0.02:1.02]\nset arrow from %g, graph 0 to %g, graph 1 nohead dt 2 lc rgb 'gray'\n", train_max + 0.5, train_max + 0.5);
    fprintf(g, "plot ");
    int col = 2;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++, col++) {
            if (v && !uses_rope(&c->schemes[sc])) continue;
            fprintf(g, "%s'%s.dat' using 1:%d with linespoints lw 2 pt 7 ps 0.5 lc rgb '%s' dt %d title '%s%s%s'",
                    col == 2 ? "" : ", \\\n     ", name, col, COLORS[sc % 10], v + 1, c->schemes[sc].label, v ? "+" : "",
                    v ? c->extensions[v - 1] : "");
        }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (plots) gnuplot(c->out, name, made);
    fprintf(md, "![%s](%s.png)\n\n", text ? "perplexity" : "accuracy", name);
}

// Retrieval: the accuracy of each scheme by haystack length (rows) and key depth (columns),
// pooled over seeds: "retrieval difficulty and distractors controlled".
static void depth_tables(const Cfg *c, const Rows *rs, int task, FILE *md) {
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
    fprintf(md, "Accuracy (%%) by haystack length (tokens) and depth of the asked key (0 = start), all seeds pooled:\n\n");
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
                    if ((r->run / c->n_schemes) / c->n_seeds == task && r->run % c->n_schemes == sc && r->length == lengths[li] && r->depth == depths[d])
                        { num += r->correct; den += r->n; }
                }
                if (den) fprintf(md, " %.1f |", 100.0 * num / den); else fprintf(md, " |");
            }
            fprintf(md, "\n");
        }
        fprintf(md, "\n");
    }
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
// the report's stages: read_results -> write_results_csv -> summary.md (per task: a task's
// accuracy table, depth tables and plots, or text's perplexity tables and plot; the loss plot),
// the MRR table -> print_summary

// What the summary's stages share.
typedef struct {
    const Cfg *c;
    const Run *runs;
    int n;               // runs
    Rows rs;             // every row of every finished run
    FILE *md;            // summary.md
    int plots, made;     // gnuplot is installed; plots made
    double *mrr;         // (n_schemes,) sum of 1/rank over the complete (task, seed) pairs
    int mrr_n;           // those pairs
} Report;

// Every finished run's eval.csv (tasks) or ppl*.csv (text: its own positions, then each RoPE extension).
static void read_results(const Cfg *c, const Run *runs, int n, Rows *rs) {
    char path[4200];
    int text = c->data != NULL, n_var = text ? 1 + c->n_ext : 1;
    for (int i = 0; i < n; i++) {
        const Run *r = &runs[i];
        if (!run_has_results(r)) continue;
        if (!text) { snprintf(path, sizeof path, "%s/eval.csv", r->dir); read_eval(path, i, rs); continue; }
        for (int v = 0; v < n_var; v++) {
            if (v && !uses_rope(&c->schemes[r->scheme])) continue;
            snprintf(path, sizeof path, "%s/ppl%s%s.csv", r->dir, v ? "_" : "", v ? c->extensions[v - 1] : "");
            read_ppl(path, i, v, rs);
        }
    }
}

// results.csv: one row per run and bucket (task length, or text window and mode).
static void write_results_csv(const Cfg *c, const Run *runs, const Rows *rs) {
    char path[4200];
    int text = c->data != NULL;
    snprintf(path, sizeof path, "%s/results.csv", c->out);
    FILE *f = fopen(path, "w");
    CHECK(f, "cannot write '%s'", path);
    if (text) fprintf(f, "data,scheme,seed,window,mode,tokens,loss,ppl,note\n");
    else fprintf(f, "task,scheme,seed,length,depth,split,n,correct,accuracy\n");
    for (int i = 0; i < rs->n; i++) {
        const Row *r = &rs->r[i];
        const Run *u = &runs[r->run];
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
            fprintf(f, "\n");
        }
    }
    fclose(f);
}

// acc[scheme][seed][o]: the accuracy (%) of each run of task t in-distribution (o = 0), on longer
// lengths (1) and on all (2), every instance weighted equally; NAN for a run without results.
static void task_accuracies(const Report *rp, int t, double acc[MAX_ITEMS][MAX_ITEMS][3]) {
    const Cfg *c = rp->c;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            int ri = run_index(c, t, sc, sd);
            for (int o = 0; o < 3; o++) {
                long long num = 0, den = 0;
                for (int i = 0; i < rp->rs.n; i++)
                    if (rp->rs.r[i].run == ri && (o == 2 || rp->rs.r[i].ood == o)) { num += rp->rs.r[i].correct; den += rp->rs.r[i].n; }
                acc[sc][sd][o] = den ? 100.0 * num / den : NAN;
            }
        }
}

// The NoPE paper's ranking: per (task, seed), rank the schemes by accuracy on longer lengths
// (1 = best; ties share the better rank) and add 1/rank; a seed with a missing run is left out.
static void add_ranks(Report *rp, double acc[MAX_ITEMS][MAX_ITEMS][3]) {
    const Cfg *c = rp->c;
    for (int sd = 0; sd < c->n_seeds; sd++) {
        int complete = 1;
        for (int sc = 0; sc < c->n_schemes; sc++) complete &= !isnan(acc[sc][sd][1]);
        if (!complete) continue;
        for (int sc = 0; sc < c->n_schemes; sc++) {
            int rank = 1;
            for (int k = 0; k < c->n_schemes; k++) rank += acc[k][sd][1] > acc[sc][sd][1];
            rp->mrr[sc] += 1.0 / rank;
        }
        rp->mrr_n++;
    }
}

// A task's section: the accuracy table (mean +- std over seeds), its ranks for the MRR, the
// retrieval depth tables and the plot against length.
static void task_section(Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int train_max = 0;
    for (int i = 0; i < rp->n && !train_max; i++) if (rp->runs[i].task == t && run_has_results(&rp->runs[i])) train_max = task_train_max(&rp->runs[i]);
    fprintf(md, "## %s\n\nExact-match accuracy of the greedy answer (%%), mean +- std over %d seed%s; "
                "in-distribution: lengths <= %d, longer: the rest up to the longest test length, all: every "
                "test length with equal weight.\n\n"
                "| scheme | in-distribution | longer than training | all lengths | per seed (longer) |\n|---|---|---|---|---|\n",
            c->tasks[t], c->n_seeds, c->n_seeds > 1 ? "s" : "", train_max);
    double acc[MAX_ITEMS][MAX_ITEMS][3];       // [scheme][seed][in-distribution, longer, all]
    task_accuracies(rp, t, acc);
    for (int sc = 0; sc < c->n_schemes; sc++) {
        double x[3][MAX_ITEMS], m[3], s[3];
        for (int o = 0; o < 3; o++) { for (int sd = 0; sd < c->n_seeds; sd++) x[o][sd] = acc[sc][sd][o]; mean_std(x[o], c->n_seeds, &m[o], &s[o]); }
        fprintf(md, "| %s | %.1f +- %.1f | %.1f +- %.1f | %.1f +- %.1f | ", c->schemes[sc].label, m[0], s[0], m[1], s[1], m[2], s[2]);
        for (int sd = 0; sd < c->n_seeds; sd++) fprintf(md, "%s%.1f", sd ? " " : "", acc[sc][sd][1]);
        fprintf(md, " |\n");
    }
    add_ranks(rp, acc);
    fprintf(md, "\n");
    depth_tables(c, &rp->rs, t, md);
    plot_by_length(c, &rp->rs, t, train_max, 0, md, rp->plots, &rp->made);
}

// One perplexity table of text (mode 0: non-overlapping windows, 1: sliding): a row per scheme
// (and RoPE extension), a column per window, mean +- std over seeds; "n/a" cells explained below.
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
            if (v && !uses_rope(&c->schemes[sc])) continue;
            fprintf(md, "| %s%s%s |", c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
            for (int w = 0; w < nw; w++) {
                double x[MAX_ITEMS], m, s; const char *note = "";
                for (int sd = 0; sd < c->n_seeds; sd++) {
                    x[sd] = NAN;
                    for (int i = 0; i < rp->rs.n; i++) {
                        const Row *r = &rp->rs.r[i];
                        if (r->run == run_index(c, t, sc, sd) && r->variant == v && r->sliding == mode && r->length == windows[w]) {
                            x[sd] = r->value;
                            if (r->note[0]) note = r->note;
                        }
                    }
                }
                mean_std(x, c->n_seeds, &m, &s);
                if (isnan(m)) {
                    fprintf(md, " n/a |");
                    char line[256];
                    snprintf(line, sizeof line, "n/a for %s: %s. ", c->schemes[sc].label, *note ? note : "no number");
                    if (!strstr(notes, line) && strlen(notes) + strlen(line) < sizeof notes) strcat(notes, line);
                }
                else if (c->n_seeds > 1) fprintf(md, " %.2f +- %.2f |", m, s);
                else fprintf(md, " %.2f |", m);
            }
            fprintf(md, "\n");
        }
    fprintf(md, "\n%s%s", notes, *notes ? "\n\n" : "");
}

// Text's section: perplexity against window length, non-overlapping then sliding, and the plot.
static void text_section(Report *rp, int t) {
    const Cfg *c = rp->c;
    int context = 0;
    for (int i = 0; i < rp->n && !context; i++) if (run_has_results(&rp->runs[i])) context = text_context(&rp->runs[i]);
    fprintf(rp->md, "## Perplexity against context length on %s\n\nTrained at %d tokens; perplexity (mean +- std over %d seed%s) "
                    "on windows of each length, first non-overlapping windows, then a sliding window "
                    "(each token scored once, with at least half a window of context).\n\n", c->data, context, c->n_seeds,
            c->n_seeds > 1 ? "s" : "");
    int windows[64], nw = 0;
    for (int i = 0; i < rp->rs.n; i++) {
        int seen = 0;
        for (int k = 0; k < nw; k++) seen |= windows[k] == rp->rs.r[i].length;
        if (!seen && nw < 64) windows[nw++] = rp->rs.r[i].length;
    }
    sort_ints(windows, nw);
    for (int mode = 0; mode < 2; mode++) ppl_table(rp, t, windows, nw, mode);
    plot_by_length(c, &rp->rs, t, 0, context, rp->md, rp->plots, &rp->made);
}

// The mean reciprocal rank of each scheme across every task and seed.
static void mrr_table(const Report *rp) {
    const Cfg *c = rp->c;
    fprintf(rp->md, "## Mean reciprocal rank\n\nThe NoPE paper's aggregate: for every task and seed the schemes are ranked by "
                    "accuracy on lengths longer than training (1 = best, ties share the better rank); the table averages "
                    "1/rank over %d task x seed configurations.\n\n| scheme | MRR |\n|---|---|\n", rp->mrr_n);
    for (int sc = 0; sc < c->n_schemes; sc++) fprintf(rp->md, "| %s | %.3f |\n", c->schemes[sc].label, rp->mrr[sc] / rp->mrr_n);
    fprintf(rp->md, "\n");
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
    read_results(c, runs, n, &rp.rs);
    write_results_csv(c, runs, &rp.rs);

    char path[4200];
    snprintf(path, sizeof path, "%s/summary.md", c->out);
    rp.md = fopen(path, "w");
    CHECK(rp.md, "cannot write '%s'", path);
    rp.plots = have_gnuplot();
    if (!rp.plots) printf("gnuplot not found: apt-get install gnuplot-nox, then run this command again for the plots "
                          "(results.csv and summary.md are written; the .gp scripts are in %s)\n", c->out);
    else printf("plots:\n");
    rp.mrr = xcalloc(c->n_schemes, sizeof(double));
    for (int t = 0; t < c->n_tasks; t++) {
        if (c->data) text_section(&rp, t); else task_section(&rp, t);
        plot_loss(c, runs, t, rp.md, rp.plots, &rp.made);
    }
    if (!c->data && rp.mrr_n) mrr_table(&rp);
    fclose(rp.md);
    free(rp.mrr);
    free(rp.rs.r);
    print_summary(c, rp.made);
}
