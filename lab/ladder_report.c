// lab/ladder_report.c: ./ladder's files (lab/ladder.h): ladder.csv, mrr.csv, claims.csv, summary.md
// and the plots against parameters, every file written whole or not at all.
#include <math.h>
#include <string.h>

#include "lab/ladder.h"
#include "lab/report.h"
#include "util/atomicfile.h"

static const char *COLOURS[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f" };

static FILE *open_out(AtomicFile *af, const Ladder *L, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", L->out, name);
    return af_open(af, path, "ladder file", "w");
}

static void num(FILE *f, double x, const char *fmt) { if (!isnan(x)) fprintf(f, fmt, x); }

static void write_csvs(const Ladder *L) {
    const Cfg *c = &L->z[0].c;
    AtomicFile af;
    FILE *f = open_out(&af, L, "ladder.csv");
    fprintf(f, "size,parameters,task,scheme,seeds,ood_mean,ood_lo,ood_hi,id_mean\n");
    for (int s = 0; s < L->n; s++)
        for (int t = 0; t < c->n_tasks; t++)
            for (int sc = 0; sc < c->n_schemes; sc++) {
                const Size *z = &L->z[s];
                Interval o = ladder_accuracy(z, t, sc, 1), i = ladder_accuracy(z, t, sc, 0);
                fprintf(f, "%s,%.0f,%s,%s,%d,", z->name, z->task_params[t], c->tasks[t], c->schemes[sc].label, o.n);
                num(f, o.mean, "%.4f"); fprintf(f, ","); num(f, o.lo, "%.4f"); fprintf(f, ","); num(f, o.hi, "%.4f");
                fprintf(f, ","); num(f, i.mean, "%.4f"); fprintf(f, "\n");
            }
    af_commit(&af);
    f = open_out(&af, L, "mrr.csv");
    fprintf(f, "size,parameters,scheme,configurations,mrr,lo,hi\n");
    for (int s = 0; s < L->n; s++)
        for (int sc = 0; sc < c->n_schemes; sc++) {
            const Interval *m = &L->mrr[s][sc];
            fprintf(f, "%s,%.0f,%s,%d,", L->z[s].name, L->z[s].params, c->schemes[sc].label, m->n);
            num(f, m->mean, "%.4f"); fprintf(f, ","); num(f, m->lo, "%.4f"); fprintf(f, ","); num(f, m->hi, "%.4f"); fprintf(f, "\n");
        }
    af_commit(&af);
    f = open_out(&af, L, "claims.csv");
    fprintf(f, "claim,size,parameters,units,mean,lo,hi,p,holm_p,verdict\n");
    for (int k = 0; k < c->n_claims; k++) {
        char claim[160];
        snprintf(claim, sizeof claim, "%s>%s", c->schemes[c->claims[k][0]].label, c->schemes[c->claims[k][1]].label);
        for (int s = 0; s <= L->n; s++) {      // s == n: the trend (points per decade of parameters)
            const Interval *iv = s < L->n ? &L->at[s][k].iv : &L->trend[k].iv;
            double p = s < L->n ? L->at[s][k].p : L->trend[k].p, h = s < L->n ? L->at[s][k].holm : L->trend[k].holm;
            if (s < L->n) fprintf(f, "%s,%s,%.0f,%d,", claim, L->z[s].name, L->z[s].params, iv->n);
            else fprintf(f, "%s,trend,,%d,", claim, iv->n);
            num(f, iv->mean, "%.4f"); fprintf(f, ","); num(f, iv->lo, "%.4f"); fprintf(f, ","); num(f, iv->hi, "%.4f");
            fprintf(f, ","); num(f, p, "%.6g"); fprintf(f, ","); num(f, h, "%.6g");
            fprintf(f, ",%s\n", iv->n ? (s < L->n ? ladder_verdict(iv->mean, h) : !(h < 0.05) ? "no trend shown" :
                                          iv->mean > 0 ? "grows with size" : "shrinks with size") : "");
        }
    }
    af_commit(&af);
}

// One plot against parameters (log x): per scheme a line with error bars from NAME.dat, whose
// columns are parameters, then mean, lo, hi per scheme.
static void plot(const Ladder *L, const char *name, const char *title, const char *ylabel, FILE *md, int plots) {
    const Cfg *c = &L->z[0].c;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.gp", L->out, name);
    FILE *g = fopen(path, "w");
    CHECK(g, "cannot write '%s'", path);
    for (int term = 0; term < 2; term++) {
        fprintf(g, term ? "set terminal svg size 900,520 noenhanced\nset output '%s.svg'\n"
                        : "set terminal pngcairo size 900,520 noenhanced\nset output '%s.png'\n", name);
        fprintf(g, "set title '%s'\nset xlabel 'parameters'\nset ylabel '%s'\nset logscale x\nset grid\nset key outside right\n"
                   "set offsets graph 0.05, graph 0.05, 0, 0\nplot ", title, ylabel);
        for (int sc = 0; sc < c->n_schemes; sc++)
            fprintf(g, "%s'%s.dat' using 1:%d:%d:%d with yerrorlines lw 1.5 lc rgb '%s' title '%s'", sc ? ", \\\n     " : "",
                    name, 2 + 3 * sc, 3 + 3 * sc, 4 + 3 * sc, COLOURS[sc % 8], c->schemes[sc].label);
        fprintf(g, "\n");
    }
    fclose(g);
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp'", L->out, name);
    if (plots && system(cmd) != 0) printf("  gnuplot failed on %s/%s.gp\n", L->out, name);
    fprintf(md, "![%s](%s.png)\n\n", name, name);
}

static void write_dat(const Ladder *L, const char *name, int task) {
    const Cfg *c = &L->z[0].c;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.dat", L->out, name);
    FILE *d = fopen(path, "w");
    CHECK(d, "cannot write '%s'", path);
    for (int s = 0; s < L->n; s++) {
        double params = task >= 0 ? L->z[s].task_params[task] : L->z[s].params;
        if (!(params > 0)) continue;
        fprintf(d, "%.0f", params);
        for (int sc = 0; sc < c->n_schemes; sc++) {
            Interval v = task >= 0 ? ladder_accuracy(&L->z[s], task, sc, 1) : L->mrr[s][sc];
            double lo = isnan(v.lo) ? v.mean : v.lo, hi = isnan(v.hi) ? v.mean : v.hi;   // one seed: no bar
            if (isnan(v.mean)) fprintf(d, " NaN NaN NaN"); else fprintf(d, " %.4f %.4f %.4f", v.mean, lo, hi);
        }
        fprintf(d, "\n");
    }
    fclose(d);
}

static void cell_iv(FILE *md, Interval v) {
    if (isnan(v.mean)) fprintf(md, " |");
    else if (isnan(v.lo)) fprintf(md, " %.1f |", v.mean);
    else fprintf(md, " %.1f [%.1f, %.1f] |", v.mean, v.lo, v.hi);
}

// task >= 0: its parameter counts (its vocabulary); -1: the sizes' own
static void sizes_header(const Ladder *L, FILE *md, const char *first, int task) {
    fprintf(md, "| %s |", first);
    for (int s = 0; s < L->n; s++)
        fprintf(md, " %s (%.2gM) |", L->z[s].name, (task >= 0 ? L->z[s].task_params[task] : L->z[s].params) / 1e6);
    fprintf(md, "\n|---|");
    for (int s = 0; s < L->n; s++) fprintf(md, "---|");
    fprintf(md, "\n");
}

// Per claim, over the sizes where it has units: the same verdict at every one ("stable"), or each
// run of sizes with one verdict in turn ("changes"), so that a claim that comes and goes says so. A
// change may be one of power, not of the claim: the intervals tell.
static void stability(const Ladder *L, FILE *md, int k) {
    int first[LADDER_MAX_SIZES], last[LADDER_MAX_SIZES], runs = 0, tested = 0;   // the runs of one verdict
    const char *verdict[LADDER_MAX_SIZES];
    for (int s = 0; s < L->n; s++) {
        if (!L->at[s][k].iv.n) continue;
        const char *v = ladder_verdict(L->at[s][k].iv.mean, L->at[s][k].holm);
        if (!runs || strcmp(v, verdict[runs - 1])) { verdict[runs] = v; first[runs++] = s; }
        last[runs - 1] = s;
        tested++;
    }
    if (!runs) { fprintf(md, "no size has units yet"); return; }
    if (runs == 1) {
        fprintf(md, "stable: %s at %s", verdict[0], tested == L->n ? "every size" : "every size with runs");
        return;
    }
    fprintf(md, "changes: ");
    for (int r = 0; r < runs; r++) {
        const Size *a = &L->z[first[r]], *b = &L->z[last[r]];
        fprintf(md, "%s%s at %s", r ? "; " : "", verdict[r], a->name);
        if (a == b) fprintf(md, " (%.2gM parameters)", a->params / 1e6);
        else fprintf(md, " to %s (%.2gM to %.2gM parameters)", b->name, a->params / 1e6, b->params / 1e6);
    }
}

// The claims (rows) at each size (columns): mean A - B, p, Holm p, units and the verdict.
static void claims_table(const Ladder *L, FILE *md, const ClaimTest (*at)[MAX_ITEMS]) {
    const Cfg *c = &L->z[0].c;
    sizes_header(L, md, "claim", -1);
    for (int k = 0; k < c->n_claims; k++) {
        fprintf(md, "| %s > %s |", c->schemes[c->claims[k][0]].label, c->schemes[c->claims[k][1]].label);
        for (int s = 0; s < L->n; s++) {
            const ClaimTest *x = &at[s][k];
            if (!x->iv.n) { fprintf(md, " |"); continue; }
            fprintf(md, " %+.1f (p %.3g, Holm %.3g, n %d): %s |", x->iv.mean, x->p, x->holm, x->iv.n, ladder_verdict(x->iv.mean, x->holm));
        }
        fprintf(md, "\n");
    }
}

static void write_summary(const Ladder *L) {
    const Cfg *c = &L->z[0].c;
    AtomicFile af;
    FILE *md = open_out(&af, L, "summary.md");
    int plots = have_gnuplot(), expected = c->n_tasks * c->n_schemes * c->n_seeds;
    fprintf(md, "# The ladder: %d sizes of one grid\n\n| size | protocol (FNV-1a 64) | model flags | parameters | runs finished |\n"
                "|---|---|---|---|---|\n", L->n);
    for (int s = 0; s < L->n; s++) {
        const Size *z = &L->z[s];
        fprintf(md, "| %s | %s (%016llx) | `", z->name, z->protocol, (unsigned long long)z->c.protocol_hash);
        for (int i = 0; i < z->c.n_extra; i++) fprintf(md, "%s%s", i ? " " : "", z->c.extra[i]);
        fprintf(md, "` | %.0f | %d of %d |\n", z->params, z->finished, expected);
    }
    fprintf(md, "\nParameters: the NoPE run's (the other schemes add their positional parameters). OOD accuracy: exact "
                "match (%%) beyond the training lengths at the run's best in-distribution validation check, the mean "
                "over the finished seeds with its 95%% t-interval (with 3 seeds the interval is the mean +- 4.30 standard "
                "errors, so it can reach below 0 or above 100: it is not clipped); the in-distribution accuracy (mean) in "
                "the table under it.\n\n");
    for (int t = 0; t < c->n_tasks; t++) {
        fprintf(md, "## %s\n\n", c->tasks[t]);
        sizes_header(L, md, "scheme (OOD %)", t);
        for (int sc = 0; sc < c->n_schemes; sc++) {
            fprintf(md, "| %s |", c->schemes[sc].label);
            for (int s = 0; s < L->n; s++) cell_iv(md, ladder_accuracy(&L->z[s], t, sc, 1));
            fprintf(md, "\n");
        }
        fprintf(md, "\n");
        sizes_header(L, md, "scheme (in-distribution %)", t);
        for (int sc = 0; sc < c->n_schemes; sc++) {
            fprintf(md, "| %s |", c->schemes[sc].label);
            for (int s = 0; s < L->n; s++) { Interval v = ladder_accuracy(&L->z[s], t, sc, 0); v.lo = v.hi = NAN; cell_iv(md, v); }
            fprintf(md, "\n");
        }
        fprintf(md, "\n");
        char name[300], title[400];
        snprintf(name, sizeof name, "scale_%s", c->tasks[t]);
        snprintf(title, sizeof title, "%s: OOD accuracy against model size (mean over seeds, 95%% t-interval)", c->tasks[t]);
        write_dat(L, name, t);
        plot(L, name, title, "OOD exact match (%)", md, plots);
    }
    fprintf(md, "## MRR\n\nThe mean reciprocal rank of each scheme's OOD accuracy in every (task, seed) configuration "
                "(ties: the expected reciprocal rank of a random break), with its %d-resample bootstrap interval over "
                "the seeds.\n\n", RESAMPLES);
    sizes_header(L, md, "scheme", -1);
    for (int sc = 0; sc < c->n_schemes; sc++) {
        fprintf(md, "| %s |", c->schemes[sc].label);
        for (int s = 0; s < L->n; s++) {
            const Interval *m = &L->mrr[s][sc];
            if (isnan(m->mean)) fprintf(md, " |"); else fprintf(md, " %.3f [%.3f, %.3f] |", m->mean, m->lo, m->hi);
        }
        fprintf(md, "\n");
    }
    fprintf(md, "\n");
    write_dat(L, "scale_mrr", -1);
    plot(L, "scale_mrr", "MRR against model size (bootstrap 95% interval)", "MRR", md, plots);
    fprintf(md, "## The claims at each size\n\nUnit: a (task, seed) pair, the difference A - B of its two runs' OOD "
                "accuracy (points); the mean, the exact sign-flip p, Holm over the %d claims at each size; supported or "
                "contradicted at Holm p < 0.05.\n\n", c->n_claims);
    claims_table(L, md, L->at);
    fprintf(md, "\n## The claims at each size, with the seed as the unit (sensitivity)\n\nUnit: a seed, the mean "
                "of A - B over its tasks (a seed's runs share their initial weights across tasks, so its tasks are not "
                "independent units). The rest as above. The verdicts above are the reported ones.\n\n");
    claims_table(L, md, L->by_seed);
    fprintf(md, "\n## The trend of each claim with size\n\nPer (task, seed) pair with both runs at two sizes or more: the "
                "least-squares slope of A - B (points) against log10(parameters); the mean slope (points per tenfold "
                "parameters) with its 95%% t-interval, the exact sign-flip p of the slopes, Holm over the %d claims.\n\n"
                "| claim | units | slope | 95%% interval | p | Holm p | trend | across sizes |\n|---|---|---|---|---|---|---|---|\n",
            c->n_claims);
    for (int k = 0; k < c->n_claims; k++) {
        const TrendTest *r = &L->trend[k];
        fprintf(md, "| %s > %s | %d |", c->schemes[c->claims[k][0]].label, c->schemes[c->claims[k][1]].label, r->iv.n);
        if (r->iv.n < 2) fprintf(md, " | | | | too few units |");
        else fprintf(md, " %+.2f | [%+.2f, %+.2f] | %.3g | %.3g | %s |", r->iv.mean, r->iv.lo, r->iv.hi, r->p, r->holm,
                     !(r->holm < 0.05) ? "no trend shown" : r->iv.mean > 0 ? "grows with size" : "shrinks with size");
        fprintf(md, " ");
        stability(L, md, k);
        fprintf(md, " |\n");
    }
    af_commit(&af);
}

void ladder_write(const Ladder *L) {
    write_csvs(L);
    write_summary(L);
    printf("ladder: %s/summary.md, ladder.csv, mrr.csv, claims.csv and the plots\n", L->out);
}
