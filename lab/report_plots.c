// lab/report_plots.c: the report's plots: for each, a gnuplot script (NAME.gp) and, where it plots
// means, their .dat file, drawn as NAME.png and NAME.svg when gnuplot is installed; summary.md gets
// the picture's line. Loss curves, accuracy against length (tasks), perplexity against window (text),
// the attention distance to NoPE by layer and the heads collapsed by layer.
#include <math.h>
#include <string.h>

#include "lab/report.h"
#include "lab/variants.h"


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
void plot_loss(const Cfg *c, const Run *runs, int task, FILE *md, int plots, int *made) {
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

// text: perplexity against window length, one line per scheme (and RoPE extension), geometric mean over seeds
void plot_ppl(const Cfg *c, const Rows *rs, int context, FILE *md, int plots, int *made) {
    int n_var = n_variants(c);
    char vl[160];
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
        for (int v = 0; v < n_var; v++) fprintf(d, " %s", variant_label(c, sc, v, vl, sizeof vl));
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
    snprintf(title, sizeof title, "perplexity by window, trained at %d tokens (non-overlapping; y cut at 4x the best)", context);
    FILE *g = gp_open(c->out, name, title, "window (tokens)", "perplexity");
    // y from the best perplexity to 4 times it (a scheme that explodes leaves the top)
    fprintf(g, "set logscale x 2\nset logscale y\nset yrange [%g:%g]\nset ytics %.3g, 1.25\nset format y '%%.3g'\n"
               "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb 'gray'\n", 0.95 * ymin, 4 * ymin, ymin, context, context);
    fprintf(g, "plot ");
    int col = 2;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++, col++) {
            if (!variant_applies(c, sc, v)) continue;
            // a scheme trained at K times the length (--long-length) in its base scheme's colour, open squares;
            // a method's fine-tune with its dashes, filled triangles
            int base = c->schemes[sc].long_of >= 0 ? c->schemes[sc].long_of : sc, ft = variant_finetuned(c, v);
            fprintf(g, "%s'%s.dat' using 1:%d with linespoints lw 2 pt %d ps %s lc rgb '%s' dt %d title '%s'",
                    col == 2 ? "" : ", \\\n     ", name, col, ft ? 9 : base == sc ? 7 : 4, base == sc ? "0.5" : "1",
                    COLORS[base % 10], variant_method(c, v) + 2, variant_label(c, sc, v, vl, sizeof vl));
        }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (plots) gnuplot(c->out, name, made);
    fprintf(md, "![perplexity](%s.png)\n\n", name);
}

// Accuracy against length: per scheme the mean over the fitted runs and its 95% t-interval over
// their seeds at each length (as the tables'), drawn as a band under the mean's line.
void plot_accuracy(Report *rp, int t, int train_max) {
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
    fprintf(d, "# length, then per scheme: mean, lo, hi (fraction; mean over the %s, 95%% t-interval over their seeds, "
               "lo = hi = the mean with one run)\n# length", counted_runs(rp));
    for (int sc = 0; sc < c->n_schemes; sc++) fprintf(d, " %s %s_lo %s_hi", c->schemes[sc].label, c->schemes[sc].label, c->schemes[sc].label);
    fprintf(d, "\n");
    SeedBuckets seeds[MAX_ITEMS];
    for (int li = 0; li < nl; li++) {
        fprintf(d, "%d", lengths[li]);
        for (int sc = 0; sc < c->n_schemes; sc++) {
            Interval iv = seed_accuracy_interval(seeds, fitted_buckets(rp, t, sc, 0, lengths[li], seeds));
            if (isnan(iv.lo)) iv.lo = iv.hi = iv.mean;
            if (isnan(iv.mean)) fprintf(d, " NaN NaN NaN"); else fprintf(d, " %.6g %.6g %.6g", iv.mean, iv.lo, iv.hi);
        }
        fprintf(d, "\n");
    }
    fclose(d);
    char title[256];
    snprintf(title, sizeof title, "%s: accuracy against length (trained on <= %d; %s: mean and 95%% t-band over seeds)",
             c->tasks[t], train_max, counted_runs(rp));
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

// --attention-distance: the JSD to NoPE by layer at the training lengths, each scheme's (and NoPE's
// twin's) mean with its 95% t-interval over the pairs (lo = hi = the mean with one pair), into
// distance_TASK.dat, and its plot.
void plot_distance(Report *rp, int t, const Distances *ds) {
    const Cfg *c = rp->c;
    int ns = nope_scheme(c), layers = ds->layers;
    const int *nx = ds->nx;
    char name[256], path[4200];
    snprintf(name, sizeof name, "distance_%s", c->tasks[t]);
    snprintf(path, sizeof path, "%s/%s.dat", c->out, name);
    FILE *d = fopen(path, "w");
    CHECK(d, "cannot write '%s'", path);
    // the rows: every scheme, then NoPE's twin when there are twins
    int rows = c->n_schemes + (n_twin_runs(c) > 0);
    char twin[96], label[MAX_ITEMS + 1][96];
    snprintf(twin, sizeof twin, "%s-twin", posenc_scheme(PE_NOPE)->name);
    for (int sc = 0; sc < rows; sc++) snprintf(label[sc], sizeof label[sc], "%s", sc < c->n_schemes ? c->schemes[sc].label : twin);
    fprintf(d, "# layer, then per scheme: mean, lo, hi of the JSD to NoPE at the training lengths (nope: NoPE of "
               "another seed; %s: NoPE's twin, the same start); 95%% t-interval over the seeds where both runs fitted\n# layer", twin);
    for (int sc = 0; sc < rows; sc++) fprintf(d, " %s %s_lo %s_hi", label[sc], label[sc], label[sc]);
    fprintf(d, "\n");
    for (int l = 0; l < layers; l++) {
        fprintf(d, "%d", l);
        for (int sc = 0; sc < rows; sc++) {
            Interval iv = mean_t_interval(ds->x[sc][0][l], nx[sc]);
            if (!nx[sc] || isnan(iv.mean)) fprintf(d, " NaN NaN NaN");
            else fprintf(d, " %.6g %.6g %.6g", iv.mean, nx[sc] > 1 ? iv.lo : iv.mean, nx[sc] > 1 ? iv.hi : iv.mean);
        }
        fprintf(d, "\n");
    }
    fclose(d);
    char title[256];
    snprintf(title, sizeof title, "%s: attention distance to NoPE by layer (JSD to the nearest head; mean, 95%% t-interval)", c->tasks[t]);
    FILE *g = gp_open(c->out, name, title, "layer", "JSD (nats)");
    fprintf(g, "set xtics 1\nset offsets 0.3, 0.3, 0, 0\nplot ");
    for (int sc = 0; sc < rows; sc++)
        fprintf(g, "%s'%s.dat' using ($1 + %g):%d:%d:%d with yerrorlines lw 2 pt 7 ps 0.6 lc rgb '%s' title '%s%s'", sc ? ", \\\n     " : "",
                name, 0.04 * (sc - (rows - 1) / 2.0), 2 + 3 * sc, 3 + 3 * sc, 4 + 3 * sc, COLORS[sc % 10],
                label[sc], sc == ns ? " (another seed)" : sc == c->n_schemes ? " (same start)" : "");
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (rp->plots) gnuplot(c->out, name, &rp->made);
    fprintf(rp->md, "![attention distance](%s.png)\n\n", name);
}

// --attention-stats, the plot by depth: each scheme's fraction of heads collapsed by layer at the
// training length (1x; else the longest window with a number), mean and t-interval over the seeds,
// into attention_collapse.dat. ls: the task's layer rows; windows: their nw window lengths.
void plot_collapse(Report *rp, int t, const LayerRows *ls, const int *windows, int nw, int layers, int context) {
    const Cfg *c = rp->c;
    int wplot = 0;
    for (int i = 0; i < ls->n; i++) if (!isnan(ls->r[i].frac) && ls->r[i].window > wplot) wplot = ls->r[i].window;
    for (int w = 0; w < nw; w++) if (windows[w] == context) wplot = context;
    if (!wplot || !layers) return;
    char name[256], path[4200];
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
                for (int i = 0; i < ls->n; i++) {
                    const LayerRow *r = &ls->r[i];
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
    fprintf(rp->md, "![heads collapsed by layer](%s.png)\n\n", name);
}
