// lab/report_text.c: summary.md's section of text (--data): perplexity against window length,
// non-overlapping then sliding windows, the geometric mean over seeds with its 95% t-interval; with
// --double-length the ALiBi paper's test at twice the context; with --attention-stats the fraction
// of heads collapsed onto the first key, by layer.
#include <math.h>
#include <string.h>

#include "lab/report.h"

// An interval of mean log perplexities (mean losses) carried back to perplexity: the geometric mean
static Interval exp_interval(Interval iv) { iv.mean = exp(iv.mean); iv.lo = exp(iv.lo); iv.hi = exp(iv.hi); return iv; }

// The perplexity of a run (variant: 0 plain, e the e-th RoPE extension) at window w (mode 0:
// non-overlapping, 1: sliding), NAN when none; *note gets the row's note (why there is no number).
double ppl_value(const Report *rp, int run, int variant, int mode, int w, const char **note) {
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
void seeds_cell(FILE *md, Interval iv, int k, int n_seeds, int digits) {
    if (k > 1) fprintf(md, " %.*f [%.*f, %.*f]", digits, iv.mean, digits, iv.lo, digits, iv.hi);
    else fprintf(md, " %.*f", digits, iv.mean);
    if (k < n_seeds) fprintf(md, " (%d of %d seeds)", k, n_seeds);
    fprintf(md, " |");
}

// One perplexity table of text (mode 0: non-overlapping windows, 1: sliding): a row per scheme
// (and RoPE extension), a column per window, the mean over seeds with its 95% t-interval (lab/stats.h;
// the mean alone with one seed); "n/a" cells explained below.
// One table cell: the mean over the k seeds that have a number [interval], or "n/a" with the reason
// (note) added once to the notes printed under the table (notes: cap bytes).
static void cell_or_na(FILE *md, Interval iv, int k, const Cfg *c, int sc, const char *note, char *notes,
                       size_t cap) {
    if (k) { seeds_cell(md, iv, k, c->n_seeds, 2); return; }
    fprintf(md, " n/a |");
    char line[256];
    snprintf(line, sizeof line, "n/a for %s: %s. ", c->schemes[sc].label, *note ? note : "no number");
    if (!strstr(notes, line) && strlen(notes) + strlen(line) < cap) strcat(notes, line);
}

static void ppl_table(const Report *rp, int t, const int *windows, int nw, int mode) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    char notes[1024] = "", label[256];
    fprintf(md, "%s\n\n| scheme |", mode ? "Sliding window:" : "Non-overlapping windows:");
    for (int w = 0; w < nw; w++) fprintf(md, " %d |", windows[w]);
    fprintf(md, "\n|---|");
    for (int w = 0; w < nw; w++) fprintf(md, "---|");
    fprintf(md, "\n");
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < row_variants(c); v++) {
            if (!row_label(c, sc, v, label, sizeof label)) continue;
            fprintf(md, "| %s |", label);
            for (int w = 0; w < nw; w++) {
                double x[MAX_ITEMS]; const char *note = "";
                int k = 0;
                for (int sd = 0; sd < c->n_seeds; sd++) {
                    double y = ppl_value(rp, run_index(c, t, sc, sd), v, mode, windows[w], &note);
                    if (!isnan(y)) x[k++] = log(y);          // the mean loss per token
                }
                Interval iv = exp_interval(mean_t_interval(x, k));   // geometric mean, interval from the log
                cell_or_na(md, iv, k, c, sc, note, notes, sizeof notes);
            }
            fprintf(md, "\n");
        }
    fprintf(md, "\n%s%s", notes, *notes ? "\n\n" : "");
}

// ---- attention statistics (--attention-stats): each run's attention.csv (./train, eval/attnstats.h) ----

// Per window length, a table of the fraction of heads collapsed (mean first-key mass >= ./train's
// --collapse-threshold, 0.5) by layer: a row per scheme, the mean over its seeds with the 95%
// t-interval (lab/stats.h; the mean alone with one seed); then the plot by layer (plot_collapse).
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
                "averaged over %d windows of the validation text per length (./train --attention-stats; docs/lab.md, "
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
                cell_or_na(md, iv, n, c, sc, note, notes, sizeof notes);
            }
            fprintf(md, "\n");
        }
        fprintf(md, "\n%s%s", notes, *notes ? "\n\n" : "");
    }
    plot_collapse(rp, t, &ls, windows, nw, layers, context);
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
            family_seeds_note(md, most, m, "seed");
        }
        fprintf(md, ".\n\n");
    }
    free(rows); free(tests); free(holm);
}

int grid_context(const Report *rp) {
    int context = 0;
    for (int i = 0; i < rp->n && !context; i++) if (run_has_results(&rp->runs[i])) context = text_context(&rp->runs[i]);
    return rp->c->context ? rp->c->context : context;
}

// Text's section: perplexity against window length, non-overlapping then sliding, and the plot; with
// --double-length the test at 2T, with --attention-stats the collapse tables.
void text_section(Report *rp, int t) {
    const Cfg *c = rp->c;
    int context = grid_context(rp);
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
