// lab/report.h: ./compare's report, and what its files share. lab/report.c writes it in stages
// (report()) and holds the paired tests that both kinds of table give; lab/report_read.c reads the
// runs' files (results, train.log, distances, attention statistics) and writes results.csv and
// runs.csv; lab/report_plots.c writes the gnuplot scripts and their .dat files; lab/report_tasks.c the
// task tables (accuracy, test pools, paired tests, MRR, claims); lab/report_distance.c the attention
// distance's; lab/report_text.c the tables of text (perplexity by window, the test at K times the
// context, the extended and fine-tuned models against it, heads collapsed); lab/report_claims.c the claims on text.
#ifndef REPORT_H
#define REPORT_H

#include "lab/runs.h"
#include "lab/stats.h"

// Reads every finished run's results and writes OUT/results.csv, OUT/summary.md and the plots,
// then prints the summary. runs: the n runs of the grid, then (--attention-distance) NoPE's twins.
void report(const Cfg *c, const Run *runs, int n);

// ----------------------------------------------------------------------------------------------
// what the report's files share

#define MAX_LEN 4096     // the most lengths (or windows) of one task in a table or plot
#define RESAMPLES 10000  // bootstrap resamples of an interval (./ladder's MRR)
// a run is degenerate at a length where one answer makes up >= DEGENERATE_SHARE of at least
// DEGENERATE_MIN instances: its answer does not depend on the input
#define DEGENERATE_SHARE 0.95
#define DEGENERATE_MIN 10
#define DIST_MAX_LAYERS 64     // the most layers of an attention distance (distance.csv)

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
                           // (with --select-every: val_acc is the best check's, target NAN)
    int best_step;         // --select-every: the step of the best validation check, whose weights were tested; -1 none
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
    RunFacts *twin_facts;// (n_tasks, n_seeds) --attention-distance: NoPE's twins' fit (runs[twin_index]); else NULL
    double *dist;        // --attention-distance: (2, n_tasks, n_schemes + 1, n_seeds) distance_values; else NULL
    Bucket *buf;         // (rs.n,) scratch for the bootstraps
    FILE *md;            // summary.md
    int plots, made;     // gnuplot is installed; plots made
    double *rr;          // (n_tasks, n_seeds, n_schemes) reciprocal rank among the fitted runs; NAN: not ranked
    int floor_on;        // run_counts also leaves out the runs whose val_acc is below c->floor (the sensitivity tables)
    int other_unit;      // the pooled claims take the unit --claims-unit does not name (the unit's sensitivity table)
} Report;

typedef struct { Interval iv; double p; } Test;     // a paired test: mean, 95% t-interval, sign-flip p

// --attention-distance, one task: x[scheme][split][layer][k] the JSD to NoPE of the k-th pair of runs
// where both fitted (split 0: at the training lengths, 1: longer), nx[scheme] such pairs, and the
// layers; scheme n_schemes is NoPE's twin.
typedef struct { double x[MAX_ITEMS + 1][2][DIST_MAX_LAYERS][MAX_ITEMS]; int nx[MAX_ITEMS + 1], layers; } Distances;

// --attention-stats: one (run, window, layer) of an attention.csv: the windows averaged, the layer's
// fraction of heads collapsed (NAN and the note for a window the model could not take)
typedef struct { int run, window, layer, windows; double frac; char note[96]; } LayerRow;
typedef struct { LayerRow *r; int n, cap; } LayerRows;

// lab/report.c: the bootstraps' seeds, and the paired tests with their Holm families and verdicts
// A seed for each bootstrap, from the names it concerns (adding a scheme or task changes no other interval)
uint64_t stream_seed(const char *task, const char *scheme, int what);
void sort_ints(int *x, int n);                 // ascending, in place
// The paired test of the differences d (n pairs): mean, 95% t-interval, exact sign-flip p
Test paired_test(const double *d, int n, uint64_t seed);
// +1 when a - b is above 0 (the 95% interval above 0 and p < 0.05), -1 when below, 0 when the
// pairs cannot tell
int direction(const Test *x);
// The family's tests' p (NAN where a test has no pair) adjusted by Holm into holm[] (m)
void holm_of_tests(const Test *x, int m, double *holm);
// After "none" in a family's line: when n seeds are too few for any of m tests to pass Holm, says so
void family_seeds_note(FILE *md, int n, int m, const char *unit);   // unit: "seed" or "task"
// The verdict cell of a test that cannot tell, with n pairs of `unit`s
void not_distinguishable(FILE *md, int n, const char *unit);

// lab/report_read.c: the runs' files
void read_results(Report *rp);                 // every finished run's rows into rp->rs (row0, nrow)
void run_facts(Report *rp);                    // tasks: each run's fit, accuracies, degenerate lengths
void write_results_csv(const Report *rp);      // OUT/results.csv: a row per run and bucket
void write_runs_csv(const Report *rp);         // OUT/runs.csv: a row per finished task run
// fitted, or without a criterion: the runs that enter the comparisons
int run_counts(const Report *rp, int run);
const char *counted_runs(const Report *rp);   // "fitted runs", "runs" (every run counts), ...
int twin_counts(const Report *rp, int t, int sd);   // the same for NoPE's twin of task t and seed sd
// The buckets of the counted runs of scheme sc on task t, one SeedBuckets per run: ood 0 or 1 when
// length < 0, else every bucket of that length (rp->buf holds them). Returns the runs.
int fitted_buckets(const Report *rp, int t, int sc, int ood, int length, SeedBuckets *seeds);
int task_train_max(const Run *r);              // the longest training length of a task run (train.log)
int text_context(const Run *r);                // the context of a text run's model (train.log)
// jsd[def][split][layer] of one distance.csv (def 0 the textbook JSD, 1 the paper's; NAN: none);
// returns the layers read, 0 when the file is missing
int read_distance(const char *path, double jsd[2][2][DIST_MAX_LAYERS]);
void read_attention(const char *path, int run, LayerRows *ls);   // one run's attention.csv, appended to ls

// lab/report_plots.c: each plot's .gp script (and .dat), drawn when plots (gnuplot is installed), and
// its picture line in summary.md
void plot_loss(const Cfg *c, const Run *runs, int task, FILE *md, int plots, int *made);
void plot_ppl(const Cfg *c, const Rows *rs, int context, FILE *md, int plots, int *made);
void plot_accuracy(Report *rp, int t, int train_max);
void plot_distance(Report *rp, int t, const Distances *ds);
void plot_collapse(Report *rp, int t, const LayerRows *ls, const int *windows, int nw, int layers, int context);

// lab/report_tasks.c: summary.md's sections of tasks
void task_section(Report *rp, int t);
// The paired test of every two schemes over tasks t0..t1-1 (one task, or pooled over all), Holm over the table
void pair_table(const Report *rp, int t0, int t1);
void mrr_table(const Report *rp);              // the mean reciprocal rank of each scheme (add_ranks' ranks)
void claims_section(const Report *rp);         // the --claims verdicts (rp->floor_on, rp->other_unit: sensitivity tables)
void paper_table(const Report *rp);            // --paper: the measured accuracy beyond training beside the paper's
void floor_table(const Report *rp);            // --floor: the runs that learned their task, per task and scheme

// lab/report_distance.c: --attention-distance's sections
void distance_values(Report *rp);             // every pair's distance into rp->dist (both definitions)
void distance_section(Report *rp, int t);     // a task's tables (by layer, paired with the twin, the T5 claim), plot
void distance_pooled(const Report *rp);       // the paired tables and the claim over every task

// lab/report_text.c: summary.md's section of text
void text_section(Report *rp, int t);
// The context T of the grid's models (--double-length's T, else the first finished run's); 0 when unknown
int grid_context(const Report *rp);
// The perplexity of a run (variant: 0 its own positions, e > 0 the variant e of lab/variants.h) at window w
// tokens (mode 0: non-overlapping, 1: sliding), NAN when none; *note (when not NULL) gets the row's
// note (why there is no number).
double ppl_value(const Report *rp, int run, int variant, int mode, int w, const char **note);
// A table cell "| mean [lo, hi]" of a mean over k of the grid's n_seeds seeds, with "(k of n seeds)"
// when k < n_seeds and the interval only when k > 1.
void seeds_cell(FILE *md, Interval iv, int k, int n_seeds, int digits);

// lab/report_claims.c: --claims on text, each claim's paired t-test at its window, Holm over them
void text_claims_section(const Report *rp, int t);

#endif
