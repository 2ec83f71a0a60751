// lab/report_text.c: summary.md's section of text (--data): perplexity against window length,
// non-overlapping then sliding windows, the geometric mean over seeds with its 95% t-interval; with
// --long-length (--double-length) the ALiBi paper's test at K times the context, and with --finetune
// the extended and fine-tuned models against those trained at K times the context; with
// --attention-stats the fraction of heads collapsed onto the first key, by layer.
#include <math.h>
#include <string.h>

#include "lab/report.h"
#include "lab/variants.h"

// An interval of mean log perplexities (mean losses) carried back to perplexity: the geometric mean
static Interval exp_interval(Interval iv) { iv.mean = exp(iv.mean); iv.lo = exp(iv.lo); iv.hi = exp(iv.hi); return iv; }

// The perplexity of a run (variant: 0 plain, else lab/variants.h's) at window w (mode 0:
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
static void cell_or_na(FILE *md, Interval iv, int k, const Cfg *c, const char *label, const char *note, char *notes,
                       size_t cap) {
    if (k) { seeds_cell(md, iv, k, c->n_seeds, 2); return; }
    fprintf(md, " n/a |");
    char line[512];
    snprintf(line, sizeof line, "n/a for %s: %s. ", label, *note ? note : "no number");
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
        for (int v = 0; v < n_variants(c); v++) {
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
                cell_or_na(md, iv, k, c, label, note, notes, sizeof notes);
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
                cell_or_na(md, iv, n, c, c->schemes[sc].label, note, notes, sizeof notes);
            }
            fprintf(md, "\n");
        }
        fprintf(md, "\n%s%s", notes, *notes ? "\n\n" : "");
    }
    plot_collapse(rp, t, &ls, windows, nw, layers, context);
    free(ls.r);
}

// One row of the ratio tables: X, scheme x trained at T (as variant vx, lab/variants.h), against
// Y, scheme y trained at W.
typedef struct { int x, vx, y; } RatioPair;

// The ratio tables at the window W, non-overlapping then sliding: per pair the perplexity of X and
// of Y at W and the paired ratio X / Y by seed, tested on the log ratios (the difference of mean
// losses per token): t-interval and sign-flip p, shown back as ratios, Holm over the table. x_is:
// what X is, in "(below 1: X ..., is better)".
static void ratio_tables(const Report *rp, int t, int T, int W, const RatioPair *pairs, int m, const char *x_is) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    fprintf(md, "Perplexity at %d tokens, geometric mean over the seeds with its 95%% t-interval (on the log, as above); "
                "X / Y by seed (below 1: %s is better), their geometric mean with the 95%% t-interval of the "
                "log ratios (the difference of mean losses per token) and the exact sign-flip p (two-sided) of the log "
                "ratios; a difference counts when the interval excludes 1 and p < 0.05 (with 5 seeds or fewer no p can be "
                "below 0.05). Holm p: p adjusted for the table's comparisons as one family (a verdict whose Holm p is below 0.05 "
                "holds with the chance of any false verdict in the table at most 5%%).\n\n", W, x_is);
    typedef struct { int n, kx, ky; Interval ix, iy; char by[512], lx[160]; } Pair;   // a row; its test is tests[i]
    Pair *rows = xmalloc(sizeof(Pair) * (m > 0 ? m : 1));
    Test *tests = xmalloc(sizeof(Test) * (m > 0 ? m : 1));
    double *holm = xmalloc(sizeof(double) * (m > 0 ? m : 1));
    for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < m; i++) {
            const RatioPair *q = &pairs[i];
            Pair *r = &rows[i];
            double vx[MAX_ITEMS], vy[MAX_ITEMS], d[MAX_ITEMS];
            r->kx = r->ky = r->n = 0; r->by[0] = 0;
            variant_label(c, q->x, q->vx, r->lx, sizeof r->lx);
            for (int sd = 0; sd < c->n_seeds; sd++) {
                double a = ppl_value(rp, run_index(c, t, q->x, sd), q->vx, mode, W, NULL);
                double b = ppl_value(rp, run_index(c, t, q->y, sd), 0, mode, W, NULL);
                if (!isnan(a)) vx[r->kx++] = log(a);
                if (!isnan(b)) vy[r->ky++] = log(b);
                if (isnan(a) || isnan(b)) continue;
                d[r->n++] = log(a) - log(b);
                size_t u = strlen(r->by);
                snprintf(r->by + u, sizeof r->by - u, "%s%lld: %.3f", u ? ", " : "", c->seeds[sd], a / b);
            }
            r->ix = exp_interval(mean_t_interval(vx, r->kx));
            r->iy = exp_interval(mean_t_interval(vy, r->ky));
            tests[i] = paired_test(d, r->n, stream_seed(r->lx, c->schemes[q->y].label, 40 + mode));
        }
        holm_of_tests(tests, m, holm);                  // the table's m comparisons are one family
        fprintf(md, "%s\n\n| X at %d | Y at %d | X | Y | X / Y by seed | seeds | X / Y | 95%% interval | p | Holm p | verdict |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|\n", mode ? "Sliding window:" : "Non-overlapping windows:", T, W);
        for (int i = 0; i < m; i++) {
            const Pair *r = &rows[i];
            const Test *x_y = &tests[i];
            const char *ly = c->schemes[pairs[i].y].label;
            fprintf(md, "| %s | %s |", r->lx, ly);
            if (r->kx) seeds_cell(md, r->ix, r->kx, c->n_seeds, 3); else fprintf(md, " n/a |");
            if (r->ky) seeds_cell(md, r->iy, r->ky, c->n_seeds, 3); else fprintf(md, " n/a |");
            fprintf(md, " %s | %d |", r->by, r->n);
            if (r->n) fprintf(md, " %.3f |", exp(x_y->iv.mean)); else fprintf(md, " |");
            if (r->n >= 2) fprintf(md, " [%.3f, %.3f] |", exp(x_y->iv.lo), exp(x_y->iv.hi)); else fprintf(md, " |");
            if (r->n) fprintf(md, " %.4g | %.4g |", x_y->p, holm[i]); else fprintf(md, " | |");
            int dir = direction(x_y);
            if (dir < 0) fprintf(md, " %s at %d better |\n", r->lx, T);
            else if (dir > 0) fprintf(md, " %s better |\n", ly);
            else if (!r->n) fprintf(md, " no seed with both perplexities |\n");
            else not_distinguishable(md, r->n, "seed");
        }
        // which verdicts hold for the table as one family
        int held = 0, most = 0;
        fprintf(md, "\nWith the chance of any false verdict among these %d comparisons at most 5%% (Holm p < 0.05 and the "
                    "interval on one side of 1): ", m);
        for (int i = 0; i < m; i++) {
            const Pair *r = &rows[i];
            const char *ly = c->schemes[pairs[i].y].label;
            int dir = direction(&tests[i]);
            most = r->n > most ? r->n : most;
            if (!dir || !(holm[i] < 0.05)) continue;
            if (dir < 0) fprintf(md, "%s%s at %d better than %s", held++ ? ", " : "", r->lx, T, ly);
            else fprintf(md, "%s%s better than %s at %d", held++ ? ", " : "", ly, r->lx, T);
        }
        if (!held) {
            fprintf(md, "none");
            family_seeds_note(md, most, m, "seed");
        }
        fprintf(md, ".\n\n");
    }
    free(rows); free(tests); free(holm);
}

// "twice" or "K times", "half the rows" or "1/K of the rows", "half the length" or "1/K of the length"
static void times_words(int K, char *times, char *rows, char *length, size_t cap) {
    if (K == 2) { snprintf(times, cap, "twice"); snprintf(rows, cap, "half the rows"); snprintf(length, cap, "half the length"); return; }
    snprintf(times, cap, "%d times", K);
    snprintf(rows, cap, "1/%d of the rows", K);
    snprintf(length, cap, "1/%d of the length", K);
}

// --long-length (--double-length: K = 2): the ALiBi paper's test at the window KT. Every listed
// scheme X trained at T against every one, Y, trained at KT (ratio_tables).
static void long_length_section(const Report *rp, int t, int T) {
    const Cfg *c = rp->c;
    int K = c->long_factor, W = K * T, m = 0;
    char times[32], rows[32], length[32], x_is[96];
    times_words(K, times, rows, length, sizeof times);
    fprintf(rp->md, "### Trained at %d tokens and tested at %d, against trained at %d\n\nThe ALiBi paper's test (Press et al., "
                    "section 4): a model trained at T = %d is scored at %s its length, W = %d, next to the same and the other "
                    "schemes trained at W (with %s per step, so the same tokens per step; the label @%d). ",
            T, W, W, T, times, W, rows, W);
    RatioPair *pairs = xmalloc(sizeof(RatioPair) * (size_t)(c->n_schemes * c->n_schemes + 1));
    for (int y = 0; y < c->n_schemes; y++)
        for (int xl = 0; xl < c->n_schemes && c->schemes[y].long_of >= 0; xl++)   // X: the schemes trained at T, in the order listed
            if (c->schemes[xl].long_of >= 0) pairs[m++] = (RatioPair){ c->schemes[xl].long_of, 0, y };
    snprintf(x_is, sizeof x_is, "X, trained at %s,", length);
    ratio_tables(rp, t, T, W, pairs, m, x_is);
    free(pairs);
}

// --finetune with --long-length: every extension variant (LABEL+M and LABEL+M+ft) of every RoPE
// scheme trained at T against every scheme trained at KT, at the window KT (ratio_tables).
static void extension_section(const Report *rp, int t, int T) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int K = c->long_factor, W = K * T, m = 0, S = (int)c->ext_factor;
    fprintf(md, "### Extended to %d tokens, with and without a fine-tune, against trained at %d\n\nEach RoPE model trained at "
                "T = %d is run with each context-extension method M at factor S = %d (LABEL+M), and fine-tuned under M for %d "
                "steps at S x T = %d tokens with 1/%d of the rows (LABEL+M+ft, the same tokens per step). Both are scored at "
                "W = %d next to the schemes trained at W (the label @%d). ", W, W, T, S, c->finetune, S * T, S, W, W);
    if (K != S)
        fprintf(md, "The extensions are made for S x T = %d tokens (--rope-factor %d), and the comparison is at K x T = %d "
                    "(--long-factor %d), %s the length they were made for. ", S * T, S, W, K, K < S ? "within" : "past");
    RatioPair *pairs = xmalloc(sizeof(RatioPair) * (size_t)(c->n_schemes * c->n_schemes * n_variants(c) + 1));
    for (int y = 0; y < c->n_schemes; y++)
        for (int x = 0; x < c->n_schemes && c->schemes[y].long_of >= 0; x++)
            for (int v = 1; v < n_variants(c) && takes_extensions(&c->schemes[x]); v++) pairs[m++] = (RatioPair){ x, v, y };
    ratio_tables(rp, t, T, W, pairs, m, "X, trained at T and extended,");
    free(pairs);
}

int grid_context(const Report *rp) {
    int context = 0;
    for (int i = 0; i < rp->n && !context; i++) if (run_has_results(&rp->runs[i])) context = text_context(&rp->runs[i]);
    return rp->c->context ? rp->c->context : context;
}

// Text's section: perplexity against window length, non-overlapping then sliding, and the plot; with
// --long-length the test at KT (and with --finetune the extensions against it), with --attention-stats the collapse tables.
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
            long_schemes(c) ? " (schemes labelled @N: at N tokens)" : "", c->n_seeds, c->n_seeds > 1 ? "s" : "",
            c->n_seeds > 1 ? ", the exponential of the mean loss per token, with the 95% t-interval of that mean loss "
                             "carried through the exponential: perplexity is a ratio scale, and a mean over its raw "
                             "values lets one bad seed make the interval reach below 1" : "", sf, 1 - sf);
    if (c->finetune)
        fprintf(rp->md, "A row LABEL+M is the model trained at T = %d run under the context-extension method M at factor S = "
                        "%g. A row LABEL+M+ft is that model fine-tuned under M for %d steps at S x T = %d tokens (--finetune), "
                        "scored at the same windows.\n\n", c->context, c->ext_factor, c->finetune, (int)c->ext_factor * c->context);
    int windows[64], nw = 0;
    for (int i = 0; i < rp->rs.n; i++) {
        int seen = 0;
        for (int k = 0; k < nw; k++) seen |= windows[k] == rp->rs.r[i].length;
        if (!seen && nw < 64) windows[nw++] = rp->rs.r[i].length;
    }
    sort_ints(windows, nw);
    for (int mode = 0; mode < 2; mode++) ppl_table(rp, t, windows, nw, mode);
    plot_ppl(c, &rp->rs, context, rp->md, rp->plots, &rp->made);
    if (long_schemes(c)) long_length_section(rp, t, c->context);
    if (long_schemes(c) && c->finetune) extension_section(rp, t, c->context);
    if (c->attention_stats) attention_section(rp, t, context);
}
