// lab/report_read.c: what ./compare's report reads from the finished runs' files: each run's rows
// (eval.csv of tasks, ppl*.csv of text), its fit line and facts (train.log), its attention distances
// (distance.csv) and statistics (attention.csv); and the CSVs it writes back from them, results.csv
// (every row) and runs.csv (every task run's facts).
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "lab/report.h"
#include "lab/variants.h"
#include "util/atomicfile.h"

// the header lines of the CSVs that ./train writes and the report reads: eval.csv (--eval-out),
// distance.csv (--attention-distance), attention.csv (--attention-stats)
#define EVAL_COLUMNS "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share"
#define DIST_COLUMNS "layer,split,instances,jsd,jsd_paper"
#define DIST_COLUMNS_OLD "layer,split,instances,jsd"      // before the paper's definition: read, its column empty
#define ATTN_COLUMNS "window,layer,head,windows,rows,sink_mass,entropy,distance,collapsed,layer_collapsed_frac,note"

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

// The train-max of a task as ./train reports it ("trained on lengths a-b" in train.log).
int task_train_max(const Run *r) {
    char line[1024];
    last_line(r->dir, "accuracy on", line, sizeof line);
    const char *s = strstr(line, "lengths ");
    int a, b;
    return s && sscanf(s, "lengths %d-%d", &a, &b) == 2 ? b : 0;
}

int text_context(const Run *r) {
    char line[1024];
    last_line(r->dir, "model:", line, sizeof line);
    const char *s = strstr(line, "context ");
    int ctx;
    return s && sscanf(s, "context %d", &ctx) == 1 ? ctx : 0;
}

// Every finished run's eval.csv (tasks) or ppl*.csv (text: one per variant, lab/variants.h).
void read_results(Report *rp) {
    const Cfg *c = rp->c;
    char path[4200];
    int text = c->data != NULL;
    rp->row0 = xcalloc(rp->n, sizeof(int));
    rp->nrow = xcalloc(rp->n, sizeof(int));
    for (int i = 0; i < rp->n; i++) {
        const Run *r = &rp->runs[i];
        rp->row0[i] = rp->rs.n;
        if (!run_has_results(r)) continue;
        if (!text) { snprintf(path, sizeof path, "%s/eval.csv", r->dir); read_eval(path, i, &rp->rs); }
        else for (int v = 0; v < n_variants(c); v++) {
            if (!variant_applies(c, r->scheme, v)) continue;
            variant_file(c, r, v, "ppl", path, sizeof path);
            read_ppl(path, i, v, &rp->rs);
        }
        rp->nrow[i] = rp->rs.n - rp->row0[i];
    }
}

// A run's fit line: "fit: fitted at step S: validation accuracy V >= A" or "fit: not fitted in S
// steps: validation accuracy V < A" (./train --fit-target A --max-steps N); none: no criterion.
static void read_fit(const Run *r, RunFacts *f) {
    char line[1024];
    f->fit = FIT_NONE; f->fit_step = -1; f->val_acc = f->target = NAN; f->best_step = -1;
    // --select-every: "select: best validation accuracy V at step S of N (checked every K steps)..."
    last_line(r->dir, "select: best", line, sizeof line);
    int n;
    if (*line && sscanf(line, "select: best validation accuracy %lf at step %d of %d", &f->val_acc, &f->best_step, &n) != 3)
        CHECK(0, "%s/train.log: cannot read its line '%s' (expected 'select: best validation accuracy V at step S of N')",
              r->dir, line);
    last_line(r->dir, "fit:", line, sizeof line);
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
// (with rp->floor_on, also at or above the --floor in-distribution validation accuracy)
int run_counts(const Report *rp, int run) {
    if (!run_has_results(&rp->runs[run]) || rp->facts[run].fit == FIT_NO) return 0;
    return !rp->floor_on || rp->facts[run].val_acc >= rp->c->floor;
}

// What the means are over, for the report's sentences: the fitted runs under a fit criterion;
// every run when each was tested at its best validation check (--select-every); with the floor,
// the runs at or above it.
const char *counted_runs(const Report *rp) {
    if (rp->floor_on) return "runs at or above the floor";
    int finished = 0;
    for (int i = 0; i < rp->n; i++) {
        if (!run_has_results(&rp->runs[i])) continue;
        finished++;
        if (rp->facts[i].fit != FIT_NONE || rp->facts[i].best_step < 0) return "fitted runs";
    }
    return finished ? "runs" : "fitted runs";
}

int twin_counts(const Report *rp, int t, int sd) {
    int k = t * rp->c->n_seeds + sd;
    if (!rp->twin_facts || !run_has_results(&rp->runs[twin_index(rp->c, t, sd)]) || rp->twin_facts[k].fit == FIT_NO) return 0;
    return !rp->floor_on || rp->twin_facts[k].val_acc >= rp->c->floor;
}

// Each task run's fit, accuracies and degenerate lengths.
void run_facts(Report *rp) {
    rp->facts = xcalloc(rp->n, sizeof(RunFacts));
    int *deg = xcalloc(rp->rs.n + 1, sizeof(int));
    for (int i = 0; i < rp->n; i++) {
        RunFacts *f = &rp->facts[i];
        f->acc[0] = f->acc[1] = NAN;
        f->fit = FIT_NONE; f->fit_step = -1; f->val_acc = f->target = NAN;   // a run without results has no fit
        f->best_step = -1;
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
    int nt = n_twin_runs(rp->c);                 // NoPE's twins (--attention-distance): their fit only
    rp->twin_facts = nt ? xcalloc(nt, sizeof(RunFacts)) : NULL;
    for (int k = 0; k < nt; k++) {
        const Run *r = &rp->runs[n_grid_runs(rp->c) + k];
        rp->twin_facts[k].fit = FIT_NONE; rp->twin_facts[k].val_acc = NAN;
        if (run_has_results(r)) read_fit(r, &rp->twin_facts[k]);
    }
}

// results.csv: one row per run and bucket (task length, or text window and mode).
void write_results_csv(const Report *rp) {
    const Cfg *c = rp->c;
    char path[4200];
    int text = c->data != NULL;
    snprintf(path, sizeof path, "%s/results.csv", c->out);
    AtomicFile af;
    FILE *f = af_open(&af, path, "results file", "w");
    if (text) fprintf(f, "data,scheme,seed,window,mode,tokens,loss,ppl,note\n");
    else fprintf(f, "task,scheme,seed,length,depth,split,n,correct,accuracy,pool,distinct,top_share\n");
    for (int i = 0; i < rp->rs.n; i++) {
        const Row *r = &rp->rs.r[i];
        const Run *u = &rp->runs[r->run];
        char label[256];
        row_label(c, u->scheme, r->variant, label, sizeof label);
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
    af_commit(&af);
}

// runs.csv: one row per finished task run: its fit, accuracies (fractions) and degenerate lengths.
void write_runs_csv(const Report *rp) {
    const Cfg *c = rp->c;
    char path[4200];
    snprintf(path, sizeof path, "%s/runs.csv", c->out);
    AtomicFile af;
    FILE *f = af_open(&af, path, "results file", "w");
    fprintf(f, "task,scheme,seed,fitted,fit_step,val_accuracy,id_accuracy,ood_accuracy,degenerate_lengths,best_step\n");
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
        fprintf(f, ",%s,", x->degenerate);
        if (x->best_step >= 0) fprintf(f, "%d", x->best_step);
        fprintf(f, "\n");
    }
    af_commit(&af);
}

// The buckets of the counted (fitted) runs of scheme sc on task t, one SeedBuckets per run: ood 0
// (in distribution) or 1 (longer) when length < 0, else every bucket of that length. Returns the runs.
int fitted_buckets(const Report *rp, int t, int sc, int ood, int length, SeedBuckets *seeds) {
    const Cfg *c = rp->c;
    int k = 0, used = 0;
    for (int sd = 0; sd < c->n_seeds; sd++) {
        int ri = run_index(c, t, sc, sd);
        if (!run_counts(rp, ri)) continue;
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

// jsd[def][split][layer] of one distance.csv (def 0: the textbook JSD, 1: the paper's; NAN where a
// cell is empty, or the file has no jsd_paper column); returns the layers read, 0 when the file is missing
int read_distance(const char *path, double jsd[2][2][DIST_MAX_LAYERS]) {
    if (access(path, F_OK) != 0) return 0;
    char line[512], *fl[8];
    for (int d = 0; d < 2; d++) for (int sp = 0; sp < 2; sp++) for (int l = 0; l < DIST_MAX_LAYERS; l++) jsd[d][sp][l] = NAN;
    FILE *f = open_result(path, NULL, line, sizeof line);
    int cols = !strcmp(line, DIST_COLUMNS) ? 5 : !strcmp(line, DIST_COLUMNS_OLD) ? 4 : 0;
    CHECK(cols, "'%s' has the columns '%s', expected '" DIST_COLUMNS "' (or '" DIST_COLUMNS_OLD "')", path, line);
    int layers = 0;
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 8);
        CHECK(k == cols, "'%s': a row has %d fields, expected %d (its header's)", path, k, cols);
        int l = atoi(fl[0]), sp = !strcmp(fl[1], "longer");
        CHECK(l >= 0 && l < DIST_MAX_LAYERS && (sp || !strcmp(fl[1], "in")), "'%s': bad row (layer %s, split %s)", path, fl[0], fl[1]);
        jsd[0][sp][l] = atof(fl[3]);
        if (cols == 5 && *fl[4]) jsd[1][sp][l] = atof(fl[4]);
        if (l + 1 > layers) layers = l + 1;
    }
    fclose(f);
    return layers;
}

// The layer rows of one run's attention.csv (the layer's fraction, read from its head-0 row; NAN
// and the note for a window the model could not take) into ls
void read_attention(const char *path, int run, LayerRows *ls) {
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
