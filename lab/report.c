// lab/report.c: ./compare's report. Reads every finished run (eval.csv or ppl*.csv, and the
// fit line of train.log) and writes results.csv, runs.csv (tasks), summary.md and the gnuplot
// scripts and plots, then prints the summary. For tasks, summary.md gives per task the fitted
// runs, means over them with 95% t-intervals over their seeds, the test pools, the degenerate runs
// and the paired test of every two schemes; then the paired tests pooled over tasks, the MRR with
// its interval and ties, the --claims verdicts and their sensitivity tables; for text, after its
// tables, the claims on text. The statistics are lab/stats.c's. The stages are here, with the
// paired tests that the tables of tasks and of text share; the reading, the plots and the sections
// are in lab/report_read.c, report_plots.c, report_tasks.c, report_distance.c, report_text.c and
// report_claims.c (lab/report.h).
#include <math.h>
#include <string.h>

#include "lab/report.h"
#include "util/atomicfile.h"

// A seed for each bootstrap, from the names it concerns: adding a scheme or task leaves every
// other interval as it was.
uint64_t stream_seed(const char *task, const char *scheme, int what) {
    char key[256];
    snprintf(key, sizeof key, "%s/%s/%d", task, scheme, what);
    uint64_t h = 1469598103934665603ull;            // FNV-1a
    for (const char *s = key; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void sort_ints(int *x, int n) {
    for (int i = 1; i < n; i++) for (int k = i; k > 0 && x[k] < x[k - 1]; k--) { int t = x[k]; x[k] = x[k - 1]; x[k - 1] = t; }
}

Test paired_test(const double *d, int n, uint64_t seed) { return (Test){ mean_t_interval(d, n), sign_flip_p(d, n, seed) }; }

// +1 when a - b is above 0 (the 95% interval above 0 and p < 0.05), -1 when below, 0 when the
// pairs cannot tell (the interval covers 0, or p >= 0.05, or fewer than 2 pairs)
int direction(const Test *x) {
    if (x->iv.n < 2 || !(x->p < 0.05)) return 0;
    return x->iv.lo > 0 ? 1 : x->iv.hi < 0 ? -1 : 0;
}

// The family's tests' p (NAN where a test has no pair) adjusted by Holm into holm[]
void holm_of_tests(const Test *x, int m, double *holm) {
    double *p = xmalloc(sizeof(double) * (m > 0 ? m : 1));
    for (int i = 0; i < m; i++) p[i] = x[i].iv.n ? x[i].p : NAN;
    holm_adjust(p, m, holm);
    free(p);
}

// After "none" in a family's line: when n seeds are too few for any of m tests to pass Holm (the
// smallest two-sided sign-flip p, 2 / 2^n, is not below 0.05 / m), say so and how many could.
void family_seeds_note(FILE *md, int n, int m, const char *unit) {
    int need = 1;
    if (n < 1) return;                                  // no test had a pair: nothing to count
    while (2.0 / ldexp(1.0, need) >= 0.05 / m) need++;
    if (n < need)
        fprintf(md, ". The smallest p the sign-flip test can give with %d %ss is %.4g, and Holm asks below %.4g of the "
                    "smallest of %d p; %d %ss or more could pass it", n, unit, 2.0 / ldexp(1.0, n), 0.05 / m, m, need, unit);
}

void not_distinguishable(FILE *md, int n, const char *unit) {
    if (n) fprintf(md, " not distinguishable with %d %s%s |\n", n, unit, n > 1 ? "s" : "");
    else fprintf(md, " no %s where both runs count |\n", unit);
}

// ----------------------------------------------------------------------------------------------
// the report's stages: read_results (+ run_facts) -> results.csv, runs.csv -> summary.md (per task:
// the scheme table, test pools, degenerate runs, paired tests, depth tables and plots, or text's
// perplexity tables and plot; the loss plot), the pooled tests, the MRR, the claims -> print_summary

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
        if (c->attention_distance) distance_values(&rp);
    }

    char path[4200];
    snprintf(path, sizeof path, "%s/summary.md", c->out);
    AtomicFile md;                        // whole or not at all: a report cut short keeps the last one
    rp.md = af_open(&md, path, "report", "w");
    if (c->protocol)
        fprintf(rp.md, "Protocol: %s (FNV-1a 64 of its bytes: %016llx). Its tasks, schemes, seeds, training and claims are "
                       "this report's; a verdict below is one of its claims.\n\n", c->protocol, (unsigned long long)c->protocol_hash);
    rp.plots = have_gnuplot();
    if (!rp.plots) printf("gnuplot not found: apt-get install gnuplot-nox, then run this command again for the plots "
                          "(results.csv and summary.md are written; the .gp scripts are in %s)\n", c->out);
    else printf("plots:\n");
    if (!c->data) floor_table(&rp);
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
        if (c->data && c->n_text_claims) text_claims_section(&rp, t);
    }
    if (!c->data) {
        if (c->n_tasks > 1 && c->n_schemes > 1) { fprintf(rp.md, "## Paired comparisons over all tasks\n\n"); pair_table(&rp, 0, c->n_tasks); }
        if (c->attention_distance && n_twin_runs(c)) distance_pooled(&rp);
        mrr_table(&rp);
        paper_table(&rp);
        if (c->n_claims) claims_section(&rp);
        if (c->n_claims && c->n_tasks > 1) {              // the sensitivity table of the unit: the other one
            rp.other_unit = 1;
            claims_section(&rp);
            rp.other_unit = 0;
        }
        if (c->n_claims && !isnan(c->floor)) {            // the sensitivity table: the runs below the floor left out
            rp.floor_on = 1;
            claims_section(&rp);
            rp.floor_on = 0;
        }
    }
    af_commit(&md);
    free(rp.rr); free(rp.buf); free(rp.facts); free(rp.twin_facts); free(rp.dist); free(rp.row0); free(rp.nrow);
    free(rp.rs.r);
    print_summary(c, rp.made);
}
