// lab/report_tasks.c: summary.md's sections of tasks: per task the scheme table (fitted runs, means
// with 95% t-intervals over the seeds), the test pools, the degenerate runs, the paired test of every
// two schemes with Holm's adjustment, the retrieval depth tables (and the attention distance to NoPE,
// lab/report_distance.c); then the paired tests pooled over tasks, the mean reciprocal rank with its
// ties, and the --claims verdicts (and again with the other unit, a sensitivity table).
#include <math.h>
#include <string.h>

#include "lab/report.h"

static void fmt_interval(const Interval *iv, double scale, char *out, size_t cap) {
    if (isnan(iv->mean)) snprintf(out, cap, "no run counted");
    else if (isnan(iv->lo)) snprintf(out, cap, "%.1f (one run: no interval)", scale * iv->mean);
    else snprintf(out, cap, "%.1f [%.1f, %.1f]", scale * iv->mean, scale * iv->lo, scale * iv->hi);
}

// The fit criterion of a task's runs, as a sentence.
static void fit_sentence(const Report *rp, int t, FILE *md) {
    double target = NAN;
    for (int i = 0; i < rp->n; i++) if (rp->runs[i].task == t && !isnan(rp->facts[i].target)) target = rp->facts[i].target;
    int selected = 0;
    for (int i = 0; i < rp->n; i++) selected |= rp->runs[i].task == t && rp->facts[i].best_step >= 0;
    if (selected) fprintf(md, "Every run trained its whole step budget and is tested with the weights of its best "
                              "in-distribution validation check (./train --select-every; val: that check's exact match); "
                              "every run counts in every mean and test (none is left out for its fit). ");
    else if (isnan(target)) fprintf(md, "No fit criterion (no run has a fit line): every run counts as fitted. ");
    else fprintf(md, "A run is fitted when its in-distribution validation accuracy reached %.4g within its step budget "
                     "(its train.log); a run not fitted is shown but left out of every mean, interval and comparison. ", target);
}

// The table of a task: per scheme the fitted runs, the in-distribution and longer accuracy (mean
// over the fitted runs, 95% t-interval over their seeds) and every run's number.
static void scheme_table(const Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    fprintf(md, "| scheme | fitted | in-distribution | longer than training | per seed: longer (in-distribution when not fitted) |\n"
                "|---|---|---|---|---|\n");
    SeedBuckets seeds[MAX_ITEMS];
    for (int sc = 0; sc < c->n_schemes; sc++) {
        int runs = 0, fitted = 0, criterion = 0, selected = 0;
        for (int sd = 0; sd < c->n_seeds; sd++) {
            int ri = run_index(c, t, sc, sd);
            if (!run_has_results(&rp->runs[ri])) continue;
            runs++; fitted += run_counts(rp, ri); criterion |= rp->facts[ri].fit != FIT_NONE;
            selected |= rp->facts[ri].best_step >= 0;
        }
        char cell[2][96];
        for (int o = 0; o < 2; o++) {
            Interval iv = seed_accuracy_interval(seeds, fitted_buckets(rp, t, sc, o, -1, seeds));
            fmt_interval(&iv, 100, cell[o], sizeof cell[o]);
        }
        fprintf(md, "| %s | %d of %d%s | %s | %s | ", c->schemes[sc].label, fitted, runs,
                criterion ? "" : selected ? " (every run counts)" : " (no fit criterion)", cell[0], cell[1]);
        for (int sd = 0, first = 1; sd < c->n_seeds; sd++) {
            int ri = run_index(c, t, sc, sd);
            const RunFacts *f = &rp->facts[ri];
            fprintf(md, "%s%lld: ", first ? "" : ", ", c->seeds[sd]);
            first = 0;
            if (!run_has_results(&rp->runs[ri])) fprintf(md, "not run");
            else if (f->fit == FIT_NO) fprintf(md, "%.1f (not fitted; in-distribution %.1f)", f->acc[1], f->acc[0]);
            else if (f->best_step >= 0) fprintf(md, "%.1f (val %.1f)", f->acc[1], 100 * f->val_acc);
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
//
// With --claims-unit task and several tasks the unit is the task instead: d[k] is a task's mean
// difference over the seeds where both runs counted, unit_of[k] the task (d holds n_tasks). The
// claim is then one across tasks (does A beat B on a task drawn like these?), and a task's seeds
// are averaged inside it.
static int paired_by_task(const Report *rp, int t0, int t1, int a, int b, double *d, int *unit_of) {
    const Cfg *c = rp->c;
    int k = 0;
    for (int t = t0; t < t1; t++) {
        double sum = 0;
        int n = 0;
        for (int sd = 0; sd < c->n_seeds; sd++) {
            int ra = run_index(c, t, a, sd), rb = run_index(c, t, b, sd);
            if (!run_counts(rp, ra) || !run_counts(rp, rb) || isnan(rp->facts[ra].acc[1]) || isnan(rp->facts[rb].acc[1])) continue;
            sum += rp->facts[ra].acc[1] - rp->facts[rb].acc[1];
            n++;
        }
        if (!n) continue;
        if (unit_of) unit_of[k] = t;
        d[k++] = sum / n;
    }
    return k;
}

// 1 when a pooled test over t0..t1-1 takes the task as its unit: --claims-unit task, or seed in the
// sensitivity table of the other unit (rp->other_unit)
static int task_units(const Report *rp, int t0, int t1) { return (rp->c->unit_task != rp->other_unit) && t1 - t0 > 1; }

static int paired(const Report *rp, int t0, int t1, int a, int b, double *d, int *seed_of) {
    const Cfg *c = rp->c;
    if (task_units(rp, t0, t1)) return paired_by_task(rp, t0, t1, a, b, d, seed_of);
    int k = 0;
    for (int sd = 0; sd < c->n_seeds; sd++) {
        double sum = 0;
        int n = 0;
        for (int t = t0; t < t1; t++) {
            int ra = run_index(c, t, a, sd), rb = run_index(c, t, b, sd);
            if (!run_counts(rp, ra) || !run_counts(rp, rb) || isnan(rp->facts[ra].acc[1]) || isnan(rp->facts[rb].acc[1])) continue;
            sum += rp->facts[ra].acc[1] - rp->facts[rb].acc[1];
            n++;
        }
        if (!n) continue;
        if (seed_of) seed_of[k] = sd;
        d[k++] = sum / n;
    }
    return k;
}

// "| N | mean | [lo, hi] | p | Holm p |" of a test and its family's adjusted p
static void test_cells(FILE *md, const Test *x, double holm) {
    fprintf(md, " %d |", x->iv.n);
    if (x->iv.n) fprintf(md, " %+.1f |", x->iv.mean); else fprintf(md, " |");
    if (x->iv.n >= 2) fprintf(md, " [%+.1f, %+.1f] |", x->iv.lo, x->iv.hi); else fprintf(md, " |");
    if (x->iv.n) fprintf(md, " %.4g | %.4g |", x->p, holm); else fprintf(md, " | |");
}

// For every two schemes, the paired test of their accuracy beyond training, per task (t0 = t,
// t1 = t + 1) or pooled over every task (each seed's mean over its tasks: see paired), with the
// differences by seed, and Holm's adjustment over the table's pairs (its family).
void pair_table(const Report *rp, int t0, int t1) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int pooled = t1 - t0 > 1, np = c->n_schemes * (c->n_schemes - 1) / 2, tu = task_units(rp, t0, t1);
    int cap = c->n_seeds > c->n_tasks ? c->n_seeds : c->n_tasks;     // units per pair, at most
    fprintf(md, "Paired differences of accuracy beyond the training lengths (percentage points, a - b) over the %s "
                "where both runs %s%s: mean, 95%% t-interval, exact sign-flip p (two-sided); a difference counts "
                "when the interval excludes 0 and p < 0.05. Holm p: p adjusted for the %d comparisons of this table "
                "(a verdict whose Holm p is below 0.05 holds with the chance of any false verdict in the table at most "
                "5%%).\n\n| a - b | %s | %s | mean | 95%% interval | p | Holm p | verdict |\n|---|---|---|---|---|---|---|---|\n",
            tu ? "tasks" : "seeds", rp->floor_on ? "reach the floor" : "fitted",
            tu ? " (each task: the mean of its seeds' differences)" :
            pooled ? " on a task (each seed: the mean of its differences over those tasks)" : "", np,
            tu ? "task means" : pooled ? "seed means" : "by seed", tu ? "tasks" : "seeds");
    double *d = xmalloc(sizeof(double) * (size_t)np * cap);
    int *seed_of = xmalloc(sizeof(int) * (size_t)np * cap), *k = xmalloc(sizeof(int) * np);
    Test *x = xmalloc(sizeof(Test) * np);
    double *holm = xmalloc(sizeof(double) * np);
    for (int a = 0, i = 0; a < c->n_schemes; a++)
        for (int b = a + 1; b < c->n_schemes; b++, i++) {
            k[i] = paired(rp, t0, t1, a, b, d + (size_t)i * cap, seed_of + (size_t)i * cap);
            char name[160];
            snprintf(name, sizeof name, "%s-%s", c->schemes[a].label, c->schemes[b].label);
            x[i] = paired_test(d + (size_t)i * cap, k[i], stream_seed(pooled ? "" : c->tasks[t0], name, 2));
        }
    holm_of_tests(x, np, holm);
    for (int a = 0, i = 0; a < c->n_schemes; a++)
        for (int b = a + 1; b < c->n_schemes; b++, i++) {
            fprintf(md, "| %s - %s |", c->schemes[a].label, c->schemes[b].label);
            for (int j = 0; j < k[i]; j++) {
                int u = seed_of[(size_t)i * cap + j];
                if (tu) fprintf(md, "%s%s: %+.1f", j ? ", " : " ", c->tasks[u], d[(size_t)i * cap + j]);
                else fprintf(md, "%s%lld: %+.1f", j ? ", " : " ", c->seeds[u], d[(size_t)i * cap + j]);
            }
            fprintf(md, " |");
            test_cells(md, &x[i], holm[i]);
            int dir = direction(&x[i]);
            if (dir) fprintf(md, " %s > %s |\n", c->schemes[dir > 0 ? a : b].label, c->schemes[dir > 0 ? b : a].label);
            else not_distinguishable(md, k[i], tu ? "task" : "seed");
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
            acc[sc] = run_counts(rp, ri) ? rp->facts[ri].acc[1] : NAN;
            ranked += !isnan(acc[sc]);
        }
        if (ranked < 2) continue;
        for (int sc = 0; sc < c->n_schemes; sc++)       // ties: the expected rank of a random break
            if (!isnan(acc[sc])) rp->rr[((size_t)t * c->n_seeds + sd) * c->n_schemes + sc] = expected_reciprocal_rank(acc, c->n_schemes, sc);
    }
}

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
                        r->depth == depths[d] && run_counts(rp, r->run))
                        { num += r->correct; den += r->n; }
                }
                if (den) fprintf(md, " %.1f |", 100.0 * num / den); else fprintf(md, " |");
            }
            fprintf(md, "\n");
        }
        fprintf(md, "\n");
    }
}

// A task's section: the scheme table, the test pools, the degenerate runs, the paired tests, its
// ranks for the MRR, the retrieval depth tables and the plot against length.
void task_section(Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int train_max = 0;
    for (int i = 0; i < rp->n && !train_max; i++) if (rp->runs[i].task == t && run_has_results(&rp->runs[i])) train_max = task_train_max(&rp->runs[i]);
    fprintf(md, "## %s\n\nExact-match accuracy of the greedy answer (%%) on unseen test instances, %d seed%s; "
                "in-distribution: lengths <= %d, longer: the rest up to the longest test length, every instance "
                "weighted equally. ", c->tasks[t], c->n_seeds, c->n_seeds > 1 ? "s" : "", train_max);
    fit_sentence(rp, t, md);
    fprintf(md, "Mean over the %s with its 95%% t-interval over their seeds (mean +- t(0.975, n-1) sd / sqrt(n) of "
                "the runs' accuracies; with few seeds it is wide, and may reach past 0 or 100).\n\n", counted_runs(rp));
    if (c->task_flags[t]) fprintf(md, "This task's runs also take `%s` (--task-flags): they follow the grid's training "
                                      "flags and override them.\n\n", c->task_flags[t]);
    scheme_table(rp, t);
    pool_table(rp, t);
    degenerate_list(rp, t);
    if (c->n_schemes > 1) pair_table(rp, t, t + 1);
    add_ranks(rp, t);
    depth_tables(rp, t, md);
    plot_accuracy(rp, t, train_max);
    if (c->attention_distance) distance_section(rp, t);
}

// The rankings (task x seed configurations with at least two ranked runs) that hold a tie, those
// where every ranked run ties, and of those the ones with every scheme ranked (the paper's five at
// one accuracy: a five-way tie). The expected ranks of a random break are equal exactly for tied
// runs (disjoint spans of ranks have distinct means of 1/r), so rr tells them.
static void count_ties(const Report *rp, int *tied, int *all_tied, int *full) {
    const Cfg *c = rp->c;
    *tied = *all_tied = *full = 0;
    for (int t = 0; t < c->n_tasks; t++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            const double *rr = rp->rr + ((size_t)t * c->n_seeds + sd) * c->n_schemes;
            int ranked = 0, pairs = 0, equal = 0;
            for (int a = 0; a < c->n_schemes; a++) {
                if (isnan(rr[a])) continue;
                ranked++;
                for (int b = a + 1; b < c->n_schemes; b++) if (!isnan(rr[b])) { pairs++; equal += rr[a] == rr[b]; }
            }
            if (ranked < 2) continue;
            *tied += equal > 0;
            *all_tied += equal == pairs;
            *full += equal == pairs && ranked == c->n_schemes;
        }
}

// The mean reciprocal rank of each scheme over the fitted runs of every task and seed, with its
// t-interval over the claims' unit, the ties among the rankings, and the runs it leaves out.
void mrr_table(const Report *rp) {
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
                else if (!run_counts(rp, ri)) not_fitted++;
                else if (isnan(rr[sc])) alone++;
            }
            configs += ranked > 0;
        }
    int by_task = task_units(rp, 0, c->n_tasks);
    fprintf(rp->md, "## Mean reciprocal rank\n\nThe NoPE paper's aggregate, over the %s: for every task and seed those "
                    "runs are ranked by accuracy on lengths longer than training (1 = best; the paper breaks ties "
                    "arbitrarily, so m runs tied at ranks r..r+m-1 each get the mean of 1/r..1/(r+m-1), the expected value of "
                    "a random break); "
                    "a scheme's MRR is its mean 1/rank over the %d task x seed configurations with at least two fitted runs, "
                    "with a 95%% t-interval over the %ss (each %s's mean 1/rank over its %ss). Left out: %d "
                    "run%s not fitted, %d fitted run%s with no other fitted run to rank against, %d run%s not finished.\n\n",
            counted_runs(rp), configs, by_task ? "task" : "seed", by_task ? "task" : "seed", by_task ? "seed" : "task",
            not_fitted, not_fitted == 1 ? "" : "s", alone, alone == 1 ? "" : "s", missing, missing == 1 ? "" : "s");
    if (!configs) return;
    int tied, all_tied, full;
    count_ties(rp, &tied, &all_tied, &full);
    fprintf(rp->md, "Ties: %d of the %d rankings hold a tie; in %d every ranked run has the same accuracy, %d of them with "
                    "all %d schemes ranked (a %d-way tie). Runs that all tie get the same 1/rank: such a ranking tells the "
                    "schemes nothing.\n\n", tied, configs, all_tied, full, c->n_schemes, c->n_schemes);
    Interval *m = xcalloc(c->n_schemes, sizeof(Interval));
    mrr_t_intervals(rp->rr, c->n_tasks, c->n_seeds, c->n_schemes, by_task, m);
    fprintf(rp->md, "| scheme | MRR | 95%% interval | configurations ranked in |\n|---|---|---|---|\n");
    for (int sc = 0; sc < c->n_schemes; sc++) {
        if (!m[sc].n) { fprintf(rp->md, "| %s | | | 0 |\n", c->schemes[sc].label); continue; }
        if (isnan(m[sc].lo)) fprintf(rp->md, "| %s | %.3f | (one %s) | %d |\n", c->schemes[sc].label, m[sc].mean, by_task ? "task" : "seed", m[sc].n);
        else fprintf(rp->md, "| %s | %.3f | [%.3f, %.3f] | %d |\n", c->schemes[sc].label, m[sc].mean, m[sc].lo, m[sc].hi, m[sc].n);
    }
    fprintf(rp->md, "\n");
    free(m);
}

// The claims section's title and what its table holds (tu: the pooled rows take tasks as units).
static void claims_header(const Report *rp, int tu) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    if (rp->other_unit)
        fprintf(md, "## Claims with the other unit (sensitivity)\n\nThe pooled claims again with the %s as the unit, not "
                    "the %s that --claims-unit names: a check that no verdict rests on the choice of unit. The verdicts "
                    "above, with the %s as the unit, are the reported ones. ", tu ? "task" : "seed", tu ? "seed" : "task",
                tu ? "seed" : "task");
    else if (rp->floor_on)
        fprintf(md, "## Claims without the runs below the floor (sensitivity)\n\nThe claims again, leaving out every run whose "
                    "in-distribution validation accuracy is below %.4g (and its partner in each pair): a check that no verdict "
                    "rests on runs that did not learn the task. The verdicts above, with every run, are the reported ones.\n\n",
                c->floor);
    else
        fprintf(md, "## Claims\n\nEach claim A>B says that A's accuracy beyond the training lengths exceeds B's. ");
    fprintf(md, "Over the %s%s: the mean difference A - B (percentage points), its 95%% t-interval and the exact sign-flip p "
                "(two-sided). Supported: the interval lies above 0 and p < 0.05; contradicted: it lies below 0 and p < "
                "0.05; otherwise not distinguishable with the %s at hand. Holm p adjusts p for the family it belongs "
                "to: the %d claims' %s together%s.%s\n\n"
                "| claim | over | units | mean A - B | 95%% interval | p | Holm p | verdict |\n|---|---|---|---|---|---|---|---|\n",
            tu ? "tasks" : "seeds where both runs counted",
            tu ? " (pooled: each task's mean difference over its seeds is one unit, so the claim is one across tasks; "
                 "the seeds of a task are not independent replications of the claim across tasks)" :
            c->n_tasks > 1 ? " (pooled over tasks: each seed's mean difference over its tasks, so the seed stays the unit)" : "",
            tu ? "tasks" : "seeds", c->n_claims, c->n_tasks > 1 ? "pooled rows" : "rows",
            c->n_tasks > 1 && !rp->other_unit ? ", and each claim's rows by task together" : "",
            rp->other_unit ? " The rows by task are those above." : " Per task, the unit is the seed.");
}

// --claims: each claim "a > b" tested on the differences a - b pooled over every task, then per task
// (the sensitivity table of the other unit: pooled only, its rows by task being the main table's).
void claims_section(const Report *rp) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int nt = c->n_tasks > 1 && !rp->other_unit ? c->n_tasks + 1 : 1;   // rows per claim: pooled, then each task
    int tu = task_units(rp, 0, c->n_tasks);
    claims_header(rp, tu);
    double *d = xmalloc(sizeof(double) * (c->n_seeds > c->n_tasks ? c->n_seeds : c->n_tasks));
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
            else not_distinguishable(md, y->iv.n, tu && pooled ? "task" : "seed");
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
        family_seeds_note(md, n, c->n_claims, tu ? "task" : "seed");
    }
    fprintf(md, ".\n\n");
    free(d); free(x); free(finished); free(holm); free(fam); free(adj);
}

// --paper: per task (row) and scheme, the measured accuracy beyond training (mean over the runs that
// count, 95% t-interval over their seeds) beside the paper's mean; the paper's models, budget and symbols
// differ (docs/reproduce-nope.md says how), so the table shows where the orders agree, not a test.
void paper_table(const Report *rp) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int any = 0;
    for (int t = 0; t < c->n_tasks; t++) for (int sc = 0; sc < c->n_schemes; sc++) any |= !isnan(c->paper[t][sc]);
    if (!any) return;
    fprintf(md, "## Beside the paper\n\nAccuracy beyond the training lengths (%%): measured here (mean over the runs "
                "that count [95%% t-interval over their seeds]) and the paper's published mean (--paper; its 3 seeds, its model "
                "and budget) where it reports one. Same order: of the pairs of schemes that the paper separates (means "
                "apart), those whose measured means are apart the same way.\n\n| task |");
    for (int sc = 0; sc < c->n_schemes; sc++) fprintf(md, " %s | paper |", c->schemes[sc].label);
    fprintf(md, " same order |\n|---|");
    for (int sc = 0; sc < c->n_schemes; sc++) fprintf(md, "---|---|");
    fprintf(md, "---|\n");
    SeedBuckets seeds[MAX_ITEMS];
    for (int t = 0; t < c->n_tasks; t++) {
        fprintf(md, "| %s |", c->tasks[t]);
        double mean[MAX_ITEMS];
        for (int sc = 0; sc < c->n_schemes; sc++) {
            Interval iv = seed_accuracy_interval(seeds, fitted_buckets(rp, t, sc, 1, -1, seeds));
            char cell[96];
            fmt_interval(&iv, 100, cell, sizeof cell);
            mean[sc] = iv.mean;
            fprintf(md, " %s |", cell);
            if (isnan(c->paper[t][sc])) fprintf(md, " |"); else fprintf(md, " %.1f |", c->paper[t][sc]);
        }
        int pairs = 0, same = 0;
        for (int a = 0; a < c->n_schemes; a++)
            for (int b = a + 1; b < c->n_schemes; b++) {
                double p = c->paper[t][a] - c->paper[t][b], m = mean[a] - mean[b];
                if (isnan(p) || isnan(m) || p == 0) continue;
                pairs++;
                same += (p > 0 && m > 0) || (p < 0 && m < 0);
            }
        if (pairs) fprintf(md, " %d of %d |\n", same, pairs); else fprintf(md, " |\n");
    }
    fprintf(md, "\n");
}

// --floor: the runs that learned their task, per task and scheme: those whose in-distribution
// validation accuracy (the best check's) reached the floor, and those whose held-out test accuracy
// at the training lengths did, of the finished runs. It stands at the top of summary.md, so that
// no score is read without the fit beside it.
typedef struct { int val, test, n; } FloorCount;

static void floor_cell(FILE *md, FloorCount f, int share) {
    if (share && f.n) fprintf(md, " %d of %d (%.0f%%), test %d (%.0f%%) |", f.val, f.n, 100.0 * f.val / f.n, f.test, 100.0 * f.test / f.n);
    else fprintf(md, " %d of %d, test %d |", f.val, f.n, f.test);
}

void floor_table(const Report *rp) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    if (isnan(c->floor)) return;
    fprintf(md, "## Runs that learned their task\n\nOf the finished runs with a validation accuracy: those whose "
                "in-distribution validation accuracy (the best check's) reached the floor, %.4g, then (test) those whose "
                "held-out test accuracy at the training lengths did. Every run counts in the claims. The sensitivity "
                "table of the claims leaves out the runs below the floor by validation.\n\n| task |", c->floor);
    for (int sc = 0; sc < c->n_schemes; sc++) fprintf(md, " %s |", c->schemes[sc].label);
    fprintf(md, " all |\n|---|");
    for (int sc = 0; sc <= c->n_schemes; sc++) fprintf(md, "---|");
    fprintf(md, "\n");
    FloorCount all[MAX_ITEMS + 1] = {{0}};
    int unchecked = 0, last = c->n_tasks > 1 ? c->n_tasks : 0;     // the row with the shares: all tasks, or the one task
    for (int t = 0; t < c->n_tasks; t++) {
        FloorCount f[MAX_ITEMS + 1] = {{0}};
        for (int i = 0; i < rp->n; i++) {
            const Run *r = &rp->runs[i];
            if (r->twin || r->task != t || !run_has_results(r)) continue;
            if (isnan(rp->facts[i].val_acc)) { unchecked++; continue; }
            int v = rp->facts[i].val_acc >= c->floor, te = rp->facts[i].acc[0] >= 100 * c->floor;
            FloorCount *cell[2] = { &f[r->scheme], &f[c->n_schemes] };     // the scheme's and the task's
            for (int j = 0; j < 2; j++) { cell[j]->val += v; cell[j]->test += te; cell[j]->n++; }
        }
        fprintf(md, "| %s |", c->tasks[t]);
        for (int sc = 0; sc <= c->n_schemes; sc++) {
            floor_cell(md, f[sc], t == last);
            all[sc].val += f[sc].val; all[sc].test += f[sc].test; all[sc].n += f[sc].n;
        }
        fprintf(md, "\n");
    }
    if (last) {
        fprintf(md, "| **all tasks** |");
        for (int sc = 0; sc <= c->n_schemes; sc++) floor_cell(md, all[sc], 1);
        fprintf(md, "\n");
    }
    if (unchecked) fprintf(md, "\nLeft out: %d finished run%s with no validation accuracy (no fit line, no --select-every).\n",
                           unchecked, unchecked == 1 ? "" : "s");
    fprintf(md, "\n");
}
