// lab/runs.h: what every part of ./compare shares, below them all: the settings (Cfg), the schemes
// and the runs with their states, and the helpers that read a run's settings and its train.log.
#ifndef RUNS_H
#define RUNS_H

#include <sys/types.h>

#include "util/common.h"
#include "posenc.h"

#define MAX_ITEMS 64

// A scheme: its label and ./train flags. --double-length adds a copy trained at twice the context:
// post (flags after those of --, which they override: --seq 2T --batch B/2), eval_post (after
// --eval-flags: the perplexity windows as multiples of 2T, so both evaluate the same lengths) and
// long_of (the scheme it doubles; -1 for every other scheme).
typedef struct { char label[64]; char flags[512]; char post[128]; char eval_post[256]; int long_of; } Scheme;

typedef struct {
    const char *out, *data, *val_data, *train_bin, *eval_flags;
    char *tasks[MAX_ITEMS]; int n_tasks;
    Scheme schemes[MAX_ITEMS]; int n_schemes;
    long long seeds[MAX_ITEMS]; int n_seeds;
    char *extensions[MAX_ITEMS]; int n_ext;      // text: RoPE context-extension methods at evaluation
    double ext_factor;
    int jobs, threads, per_length, quiet;
    int save_every;                               // --save-every K: every training run checkpoints each K steps and
                                                  // continues from its checkpoint when the grid runs again (0: off)
    int report_only;                              // report the finished runs, train nothing
    int attention_stats;                          // text: also ./train --attention-stats per run (attention.csv)
    int attention_distance;                       // tasks: the NoPE paper's attention distance to nope (distance.csv)
    const char *fit_target;                       // --fit-target A as given (NULL: none), for every run
    int claims[MAX_ITEMS][2], n_claims;           // --claims: the schemes (a, b) of each claim "a > b"
    char **extra; int n_extra;                    // flags after --, given to every training run
    const char *task_flags[MAX_ITEMS];            // --task-flags 'TASK=FLAGS': FLAGS of task t's runs, after
                                                  // extra (so they override it); NULL: none
    const char *launch;                           // --launch 'WORDS': put before each training command
                                                  // (e.g. 'mpirun -np 2': a run on several ranks)
    int context;                                  // text with --double-length: T, the --seq after -- (else 0)
    const char *protocol;                         // --protocol FILE (lab/protocol.h), NULL: none
    uint64_t protocol_hash;                       // its FNV-1a 64 hash
    int unit_task;                                // --claims-unit task: pooled claims over tasks as units
    double floor;                                 // --floor A: the sensitivity tables' in-distribution floor; NAN: none
    double paper[MAX_ITEMS][MAX_ITEMS];           // --paper: the paper's mean OOD accuracy (%) [task][scheme]; NAN: none
} Cfg;

typedef enum {
    RUN_TODO,          // to train
    RUN_RUNNING,
    RUN_DONE,          // trained now
    RUN_FAILED,
    RUN_FOUND_DONE,    // trained by an earlier command (its `done` file holds the same settings)
    RUN_ELSEWHERE,     // under mpirun: another rank trains it (rank 0 reads it back for the report)
} RunState;

typedef struct {
    int task, scheme, seed;
    int twin;          // --attention-distance: NoPE's twin of (task, seed), scheme the nope one (see twin_index)
    char dir[4096];
    pid_t pid;
    double t0;
    RunState state;
} Run;

// 1 when the run has results to report (trained now or before).
static inline int run_has_results(const Run *r) { return r->state == RUN_DONE || r->state == RUN_FOUND_DONE; }

// The scheme labelled with NoPE's name (the attention distance's reference), or -1.
static inline int nope_scheme(const Cfg *c) {
    for (int k = 0; k < c->n_schemes; k++) if (!strcmp(c->schemes[k].label, posenc_scheme(PE_NOPE)->name)) return k;
    return -1;
}

// The scheme labelled with T5's name (the attention distance's claim), or -1.
static inline int t5_scheme(const Cfg *c) {
    for (int k = 0; k < c->n_schemes; k++) if (!strcmp(c->schemes[k].label, posenc_scheme(PE_T5)->name)) return k;
    return -1;
}

// runs[] is ordered task, then seed, then scheme.
static inline int run_index(const Cfg *c, int task, int scheme, int seed) {
    return (task * c->n_seeds + seed) * c->n_schemes + scheme;
}

// --attention-distance: NoPE's twin of every task and seed, a run outside the grid (runs/TASK/
// nope-twin/seedN) trained with the nope scheme's flags and every run's, the same --seed (so the
// same initial weights) and --data-seed twin_data_seed(seed) (another stream of instances): the
// distance of NoPE to its twin is the baseline that shares initial weights, as NoPE and every
// scheme of the seed do. The twins follow the grid's runs in runs[].
#define TWIN_DATA_SEED_OFFSET 1000003LL      // a prime, far from the small seeds grids use
static inline long long twin_data_seed(long long seed) { return seed + TWIN_DATA_SEED_OFFSET; }
static inline int n_grid_runs(const Cfg *c) { return c->n_tasks * c->n_schemes * c->n_seeds; }
static inline int n_twin_runs(const Cfg *c) { return c->attention_distance ? c->n_tasks * c->n_seeds : 0; }
static inline int twin_index(const Cfg *c, int task, int seed) { return n_grid_runs(c) + task * c->n_seeds + seed; }

// lab/runs.c
// 1 when a scheme's flags put a RoPE-family scheme in some layer: those runs are also evaluated
// with the --rope-extensions methods.
int uses_rope(const Scheme *s);
// 1 when a scheme's runs are evaluated with the --rope-extensions methods: RoPE runs trained at T
// (not the --double-length copies).
static inline int takes_extensions(const Scheme *s) { return uses_rope(s) && s->long_of < 0; }

// A list of positive multiples of the context (e.g. "0.5,1,2"), halved into out: the same window
// lengths for a model trained at twice the context. Returns 1, 0 when out is too short, -1 when the
// list is not such a list.
int halve_multiples(const char *list, char *out, size_t cap);
// The value of the last `flag` among n words (NULL when absent).
const char *last_value(char *const *w, int n, const char *flag);
// The value of the last `flag` in --eval-flags (copied into buf), or NULL.
const char *eval_flag(const Cfg *c, const char *flag, char *buf, size_t cap);
// The last line of a run's train.log that starts with prefix ("" into out when none).
void last_line(const char *dir, const char *prefix, char *out, size_t cap);
// 1 when gnuplot is installed (the reports draw their plots with it).
int have_gnuplot(void);
// A run's label: its scheme's, or "NOPE-twin" (NoPE's name) for a twin.
const char *run_label(const Cfg *c, const Run *r, char *buf, size_t cap);

#endif
