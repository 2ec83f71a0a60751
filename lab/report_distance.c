// lab/report_distance.c: summary.md's attention distance to NoPE (./compare --attention-distance):
// per task the table by layer, then for each definition (the textbook JSD and the NoPE paper's code's,
// eval/attndist.h) each scheme's distance to NoPE paired by seed with the distance of NoPE to its twin
// (the same initial weights, another data stream: lab/runs.h), and the claim "NoPE's attention is
// nearest to T5's" as paired tests of t5 against every other scheme with Holm's adjustment; the same
// tables pooled over the tasks; the plot by layer.
//
// A pair's distance, in the paired tables: the mean over the layers of its distance.csv rows at the
// training lengths ("in"): every scheme's model takes those positions, so every pair of a seed is
// measured on the same instances.
#include <math.h>
#include <string.h>

#include "lab/report.h"

static const char *const DEF_NAME[2] = { "the textbook JSD", "the paper's code (0.5 (KL(m||p) + KL(m||q)), pairs i < j)" };

// The distance.csv of NoPE's model of (t, sd) against scheme sc's (sc == n_schemes: the twin's; sc ==
// nope: NoPE of seed sd + 1), and the two runs; returns the layers read into jsd (0: none).
static int pair_file(const Report *rp, int t, int sc, int sd, int *a, int *b, double jsd[2][2][DIST_MAX_LAYERS]) {
    const Cfg *c = rp->c;
    int ns = nope_scheme(c);
    *a = run_index(c, t, ns, sd);
    *b = sc == c->n_schemes ? twin_index(c, t, sd) : run_index(c, t, sc, sc == ns ? sd + 1 : sd);
    const Run *home = &rp->runs[sc == c->n_schemes ? *b : run_index(c, t, sc, sd)];
    if (!run_has_results(&rp->runs[*a]) || !run_has_results(&rp->runs[*b])) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/distance.csv", home->dir);
    return read_distance(path, jsd);
}

static int pair_counts(const Report *rp, int t, int sc, int sd, int a, int b) {
    return run_counts(rp, a) && (sc == rp->c->n_schemes ? twin_counts(rp, t, sd) : run_counts(rp, b));
}

static double *dist_at(const Report *rp, int def, int t, int sc, int sd) {
    const Cfg *c = rp->c;
    return &rp->dist[(((size_t)def * c->n_tasks + t) * (c->n_schemes + 1) + sc) * c->n_seeds + sd];
}

void distance_values(Report *rp) {
    const Cfg *c = rp->c;
    size_t n = (size_t)2 * c->n_tasks * (c->n_schemes + 1) * c->n_seeds;
    rp->dist = xmalloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) rp->dist[i] = NAN;
    int ns = nope_scheme(c);
    for (int t = 0; t < c->n_tasks; t++)
        for (int sc = 0; sc <= c->n_schemes; sc++)
            for (int sd = 0; sd < c->n_seeds && sc != ns; sd++) {
                double jsd[2][2][DIST_MAX_LAYERS];
                int a, b, L = pair_file(rp, t, sc, sd, &a, &b, jsd);
                if (!L || !pair_counts(rp, t, sc, sd, a, b)) continue;
                for (int def = 0; def < 2; def++) {
                    double s = 0;                     // NAN when a layer has none (the mean is NAN too)
                    for (int l = 0; l < L; l++) s += jsd[def][0][l];
                    *dist_at(rp, def, t, sc, sd) = s / L;
                }
            }
}

// The units of a test over tasks t0..t1-1: d[k] the mean over a unit's cells of dist(a) - dist(b)
// (b < 0: dist(a) alone), the cells where both exist. The unit is the seed (its mean over the tasks,
// as pair_table's: a seed's runs share their initial weights across tasks), or with --claims-unit
// task and several tasks the task (its mean over the seeds). unit_of[k]: the seed or task. Returns
// the units.
static int unit_values(const Report *rp, int def, int t0, int t1, int a, int b, double *d, int *unit_of) {
    const Cfg *c = rp->c;
    int by_task = c->unit_task && t1 - t0 > 1, nu = by_task ? t1 - t0 : c->n_seeds, ni = by_task ? c->n_seeds : t1 - t0, k = 0;
    for (int u = 0; u < nu; u++) {
        double sum = 0;
        int n = 0;
        for (int i = 0; i < ni; i++) {
            int t = by_task ? t0 + u : t0 + i, sd = by_task ? i : u;
            double x = *dist_at(rp, def, t, a, sd), y = b < 0 ? 0 : *dist_at(rp, def, t, b, sd);
            if (isnan(x) || isnan(y)) continue;
            sum += x - y;
            n++;
        }
        if (!n) continue;
        unit_of[k] = by_task ? t0 + u : u;
        d[k++] = sum / n;
    }
    return k;
}

static const char *unit_name(const Report *rp, int t0, int t1) { return rp->c->unit_task && t1 - t0 > 1 ? "task" : "seed"; }

// "| u: +0.0123, u: ... | N | mean | [lo, hi] | p |" of the units' values d and their test
static void test_cells(const Report *rp, int t0, int t1, const double *d, const int *unit_of, const Test *x) {
    const Cfg *c = rp->c;
    int by_task = unit_name(rp, t0, t1)[0] == 't';
    for (int j = 0; j < x->iv.n; j++) {
        if (by_task) fprintf(rp->md, "%s%s: %+.4f", j ? ", " : " ", c->tasks[unit_of[j]], d[j]);
        else fprintf(rp->md, "%s%lld: %+.4f", j ? ", " : " ", c->seeds[unit_of[j]], d[j]);
    }
    fprintf(rp->md, " | %d |", x->iv.n);
    if (x->iv.n) fprintf(rp->md, " %+.4f |", x->iv.mean); else fprintf(rp->md, " |");
    if (x->iv.n >= 2) fprintf(rp->md, " [%+.4f, %+.4f] |", x->iv.lo, x->iv.hi); else fprintf(rp->md, " |");
    if (x->iv.n) fprintf(rp->md, " %.4g |", x->p); else fprintf(rp->md, " |");
}

// Each scheme's distance to NoPE (mean over the units, 95% t-interval) and its paired difference from
// the distance of NoPE to its twin: how much farther from NoPE than NoPE's own twin, by seed.
static void twin_table(const Report *rp, int def, int t0, int t1) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int ns = nope_scheme(c), tw = c->n_schemes, cap = c->n_seeds > c->n_tasks ? c->n_seeds : c->n_tasks;
    const char *unit = unit_name(rp, t0, t1);
    double *d = xmalloc(sizeof(double) * cap);
    int *unit_of = xmalloc(sizeof(int) * cap);
    char twin[96];
    snprintf(twin, sizeof twin, "%s-twin", posenc_scheme(PE_NOPE)->name);
    fprintf(md, "Distance to NoPE by %s, %s (nats; the mean over the layers at the training lengths), against NoPE's "
                "twin: the same initial weights as NoPE, another stream of training instances (--data-seed SEED + %lld). "
                "Paired difference: d(scheme, NoPE) - d(twin, NoPE) per %s where all three runs count, its 95%% "
                "t-interval and exact sign-flip p (two-sided); above 0: farther from NoPE than NoPE's own twin.\n\n"
                "| scheme | distance to NoPE [95%% interval] (%ss) | minus the twin's, by %s | %ss | mean | 95%% interval | p | verdict |\n"
                "|---|---|---|---|---|---|---|---|\n", unit, DEF_NAME[def], TWIN_DATA_SEED_OFFSET, unit, unit, unit, unit);
    for (int i = 0; i <= c->n_schemes; i++) {
        int row = i ? i - 1 : tw;                         // the twin's row first
        if (row == ns) continue;
        int k = unit_values(rp, def, t0, t1, row, -1, d, unit_of);
        Interval iv = mean_t_interval(d, k);
        fprintf(md, "| %s |", row == tw ? twin : c->schemes[row].label);
        if (!k) fprintf(md, " n/a (0) |");
        else if (k > 1) fprintf(md, " %.4f [%.4f, %.4f] (%d) |", iv.mean, iv.lo, iv.hi, k);
        else fprintf(md, " %.4f (1) |", iv.mean);
        if (row == tw) { fprintf(md, " (the baseline) | | | | | |\n"); continue; }
        k = unit_values(rp, def, t0, t1, row, tw, d, unit_of);
        char name[160];
        snprintf(name, sizeof name, "dist%d-%s-twin", def, c->schemes[row].label);
        Test x = paired_test(d, k, stream_seed(t1 - t0 > 1 ? "" : c->tasks[t0], name, 4));
        test_cells(rp, t0, t1, d, unit_of, &x);
        int dir = direction(&x);
        if (dir) fprintf(md, " %s than the twin |\n", dir > 0 ? "farther" : "nearer");
        else not_distinguishable(md, k, unit);
    }
    fprintf(md, "\n");
    free(d); free(unit_of);
}

// The line under the claim's table: supported when t5 is nearer to NoPE than every other scheme
// with Holm p < 0.05, contradicted when some scheme is nearer with Holm p < 0.05, else not shown.
static void claim_verdict(const Report *rp, const int *other, int m, const Test *x, const double *holm, int def,
                          const char *unit) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int near = 0, far = 0, n = 0;
    for (int i = 0; i < m; i++) {
        int dir = holm[i] < 0.05 ? direction(&x[i]) : 0;
        near += dir < 0; far += dir > 0;
        n = x[i].iv.n > n ? x[i].iv.n : n;
    }
    fprintf(md, "Verdict (%s): NoPE's attention is nearest to %s's: ", DEF_NAME[def], posenc_scheme(PE_T5)->name);
    if (far) {
        fprintf(md, "contradicted: nearer to NoPE than %s (Holm p < 0.05, the interval above 0):", posenc_scheme(PE_T5)->name);
        for (int i = 0, j = 0; i < m; i++)
            if (holm[i] < 0.05 && direction(&x[i]) > 0) fprintf(md, "%s %s", j++ ? "," : "", c->schemes[other[i]].label);
    } else if (near == m && m > 0)
        fprintf(md, "supported: %s is nearer than each of the %d other scheme%s (Holm p < 0.05, the interval below 0)",
                posenc_scheme(PE_T5)->name, m, m > 1 ? "s" : "");
    else {
        fprintf(md, "not shown: %s is nearer with Holm p < 0.05 than %d of the %d other scheme%s", posenc_scheme(PE_T5)->name,
                near, m, m > 1 ? "s" : "");
        if (!near) family_seeds_note(md, n, m, unit);
    }
    fprintf(md, ".\n\n");
}

// The claim "NoPE's attention is nearest to T5's": for every other scheme X, the paired differences
// d(t5, NoPE) - d(X, NoPE) by unit, tested, Holm over the X (the family), and a verdict line.
static void nearest_claim(const Report *rp, int def, int t0, int t1) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int t5 = t5_scheme(c), ns = nope_scheme(c), other[MAX_ITEMS], m = 0;
    for (int sc = 0; sc < c->n_schemes; sc++) if (sc != t5 && sc != ns) other[m++] = sc;
    if (t5 < 0 || !m) return;
    int cap = c->n_seeds > c->n_tasks ? c->n_seeds : c->n_tasks;
    const char *unit = unit_name(rp, t0, t1);
    double *d = xmalloc(sizeof(double) * (size_t)m * cap), holm[MAX_ITEMS];
    int *unit_of = xmalloc(sizeof(int) * (size_t)m * cap);
    Test x[MAX_ITEMS];
    for (int i = 0; i < m; i++) {
        int k = unit_values(rp, def, t0, t1, t5, other[i], d + (size_t)i * cap, unit_of + (size_t)i * cap);
        char name[160];
        snprintf(name, sizeof name, "dist%d-%s-%s", def, c->schemes[t5].label, c->schemes[other[i]].label);
        x[i] = paired_test(d + (size_t)i * cap, k, stream_seed(t1 - t0 > 1 ? "" : c->tasks[t0], name, 4));
    }
    holm_of_tests(x, m, holm);
    fprintf(md, "The claim that NoPE's attention is nearest to %s's, by %s (%s): d(%s, NoPE) - d(X, NoPE) per %s for "
                "every other scheme X, its 95%% t-interval, exact sign-flip p and Holm's p over these %d comparisons (the "
                "family); below 0: %s nearer to NoPE than X.\n\n| %s - X | by %s | %ss | mean | 95%% interval | p | Holm p "
                "| verdict |\n|---|---|---|---|---|---|---|---|\n", posenc_scheme(PE_T5)->name, DEF_NAME[def], unit,
            c->schemes[t5].label, unit, m, c->schemes[t5].label, c->schemes[t5].label, unit, unit);
    for (int i = 0; i < m; i++) {
        fprintf(md, "| %s - %s |", c->schemes[t5].label, c->schemes[other[i]].label);
        test_cells(rp, t0, t1, d + (size_t)i * cap, unit_of + (size_t)i * cap, &x[i]);
        fprintf(md, x[i].iv.n ? " %.4g |" : " |", holm[i]);
        int dir = direction(&x[i]);
        if (dir) fprintf(md, " %s nearer |\n", c->schemes[dir < 0 ? t5 : other[i]].label);
        else not_distinguishable(md, x[i].iv.n, unit);
    }
    fprintf(md, "\n");
    claim_verdict(rp, other, m, x, holm, def, unit);
    free(d); free(unit_of);
}

// The table by layer (the textbook JSD): each scheme's distance.csv (NoPE's model of the seed against
// this run's), mean over the seeds where both runs count with the 95% t-interval; the nope row NoPE
// against NoPE of another seed (disjoint pairs of seeds), the twin's row NoPE against its twin.
static void layer_table(Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    static Distances ds;                         // (4 MB)
    double (*x)[2][DIST_MAX_LAYERS][MAX_ITEMS] = ds.x;       // x[sc][split][layer][pair]
    int *nx = ds.nx, ns = nope_scheme(c), layers = 0, missing = 0, unfitted = 0, tw = n_twin_runs(c) ? c->n_schemes : -1;
    memset(ds.nx, 0, sizeof ds.nx);
    for (int sc = 0; sc <= c->n_schemes; sc++)
        for (int sd = 0; sd < c->n_seeds && (sc < c->n_schemes || tw >= 0); sd++) {
            // the baseline of another start in disjoint pairs of seeds (1-2, 3-4, ...): with the cyclic
            // pairs that ./compare measures (each NoPE run against the next seed's) every run would
            // count twice, and the t-interval would take 6 overlapping pairs for 6 independent values
            if (sc == ns && (sd % 2 || sd + 1 >= c->n_seeds)) continue;
            double jsd[2][2][DIST_MAX_LAYERS];
            int a, b, L = pair_file(rp, t, sc, sd, &a, &b, jsd);
            if (!L) { missing++; continue; }
            if (!pair_counts(rp, t, sc, sd, a, b)) { unfitted++; continue; }
            if (L > layers) layers = L;
            for (int sp = 0; sp < 2; sp++) for (int l = 0; l < L; l++) x[sc][sp][l][nx[sc]] = jsd[0][sp][l];
            nx[sc]++;
        }
    ds.layers = layers;
    if (!layers) return;
    fprintf(md, "### Attention distance to NoPE\n\nThe NoPE paper's measure (Kazemnejad et al. 2023, section 5.2; "
                "docs/lab.md, \"The NoPE paper's attention distance\"), on each run's tested weights: for each of NoPE's heads, "
                "the Jensen-Shannon divergence (nats; 0 = the same attention, ln 2 = 0.693 = disjoint) to the nearest head of "
                "the other model in the same layer, averaged over the query rows of 5 test instances per test length and over "
                "NoPE's heads. Each scheme's run is compared with NoPE's run of the same seed, from the same initial weights. "
                "Two baselines: NoPE against its twin (the same initial weights, another stream of training instances), the "
                "one the schemes are paired with below; and the nope row, NoPE against NoPE of another seed (another start), "
                "in disjoint pairs of seeds (the first with the second, the third with the fourth, ...). Mean over the pairs "
                "where both runs count [95%% t-interval], at the training lengths (in) by layer, and over all layers at the "
                "training lengths and beyond them.\n\n| scheme | pairs |");
    for (int l = 0; l < layers; l++) fprintf(md, " layer %d (in) |", l);
    fprintf(md, " all layers (in) | all layers (longer) |\n|---|---|");
    for (int l = 0; l < layers + 2; l++) fprintf(md, "---|");
    fprintf(md, "\n");
    for (int sc = 0; sc <= c->n_schemes; sc++) {
        if (sc == c->n_schemes && tw < 0) break;
        char label[96];
        if (sc == tw) snprintf(label, sizeof label, "%s-twin (vs %s, same start)", posenc_scheme(PE_NOPE)->name, posenc_scheme(PE_NOPE)->name);
        else snprintf(label, sizeof label, "%s%s", c->schemes[sc].label, sc == ns ? " (vs nope, another seed)" : "");
        fprintf(md, "| %s | %d |", label, nx[sc]);
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
    fprintf(md, "\n");
    if (unfitted || missing) fprintf(md, "Left out: %d pairs with a run not fitted, %d without a distance (a run not "
                                         "finished).\n\n", unfitted, missing);
    plot_distance(rp, t, &ds);
}

void distance_section(Report *rp, int t) {
    layer_table(rp, t);
    if (!n_twin_runs(rp->c)) return;
    for (int def = 0; def < 2; def++) {
        twin_table(rp, def, t, t + 1);
        nearest_claim(rp, def, t, t + 1);
    }
}

void distance_pooled(const Report *rp) {
    const Cfg *c = rp->c;
    if (c->n_tasks < 2) return;
    fprintf(rp->md, "## Attention distance over all tasks\n\nThe tables of each task's attention distance, pooled: the "
                    "unit is the %s (%s).\n\n", unit_name(rp, 0, c->n_tasks), c->unit_task ? "each task's mean over its seeds, "
                    "--claims-unit task" : "each seed's mean over the tasks where its runs count: a seed's runs share their "
                    "initial weights on every task, so its tasks are not independent units");
    for (int def = 0; def < 2; def++) {
        twin_table(rp, def, 0, c->n_tasks);
        nearest_claim(rp, def, 0, c->n_tasks);
    }
}
