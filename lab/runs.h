// lab/runs.h: what every part of ./compare shares, below them all: the settings (Cfg), the schemes
// and the runs with their states, and the helpers that read a run's settings and its train.log.
#ifndef RUNS_H
#define RUNS_H

#include <sys/types.h>

#include "util/common.h"
#include "posenc.h"
#include "lab/claims_text.h"

#define MAX_ITEMS 64

// A scheme: its label and ./train flags. --long-length (and --double-length, its factor 2) adds a
// copy trained at K times the context: post (flags after those of --, which they override: --seq KT
// --batch B/K, and --steps N with --long-steps), eval_post (after --eval-flags: the perplexity
// windows as multiples of KT, so both evaluate the same lengths) and long_of (the scheme it
// lengthens; -1 for every other scheme).
typedef struct { char label[64]; char flags[512]; char post[128]; char eval_post[256]; int long_of; int no_ext; } Scheme;

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
    int dry_run;                                  // list the runs and their commands, train and write nothing
    int attention_stats;                          // text: also ./train --attention-stats per run (attention.csv)
    int attention_distance;                       // tasks: the NoPE paper's attention distance to nope (distance.csv)
    const char *fit_target;                       // --fit-target A as given (NULL: none), for every run
    int claims[MAX_ITEMS][2], n_claims;           // --claims: the schemes (a, b) of each claim "a > b"
    TextClaim text_claims[MAX_ITEMS];             // --claims on text (--data): each claim, its rows resolved
    int n_text_claims;
    char **extra; int n_extra;                    // flags after --, given to every training run
    const char *task_flags[MAX_ITEMS];            // --task-flags 'TASK=FLAGS': FLAGS of task t's runs, after
                                                  // extra (so they override it); NULL: none
    const char *launch;                           // --launch 'WORDS': put before each training command
                                                  // (e.g. 'mpirun -np 2': a run on several ranks)
    int context;                                  // text with --long-length or --finetune: T, the --seq after -- (else 0)
    int batch;                                    // ... and B, the --batch after -- (else 0)
    int long_factor;                              // --long-factor K: the long runs train at K x T (2 with --double-length)
    int long_steps;                               // --long-steps N: the long runs' steps (0: the grid's)
    int finetune;                                 // --finetune STEPS: each extension fine-tuned at S x T (0: none)
    const char *finetune_flags;                   // --finetune-flags 'FLAGS': ./train flags for the fine-tunes only
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
// 1 when a scheme's runs are evaluated with the --rope-extensions methods (and fine-tuned under them
// with --finetune): RoPE runs trained at T (not the --long-length copies), those --extend lists when given.
static inline int takes_extensions(const Scheme *s) { return uses_rope(s) && s->long_of < 0 && !s->no_ext; }

// A list of positive multiples of the context (e.g. "0.5,1,2"), each divided by k into out: the same
// window lengths for a model of k times the context. Returns 1, 0 when out is too short, -1 when the
// list is not such a list.
int divide_multiples(const char *list, int k, char *out, size_t cap);
// The schemes trained at K times the context (--long-length, --double-length).
static inline int long_schemes(const Cfg *c) {
    int n = 0;
    for (int k = 0; k < c->n_schemes; k++) n += c->schemes[k].long_of >= 0;
    return n;
}
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

// A command being built: its words (v, NULL-terminated, in buf), and where it runs: sub, the folder
// of the run it works in ("" the run's own, e.g. "ft-M" a fine-tune's: its train.log takes the
// output) and marker, the file there that marks it finished (its run's settings; "": none, it runs
// whenever its run does).
#define CMD_MAX_ARGS 256
typedef struct { char *v[CMD_MAX_ARGS]; int n; char buf[8192]; size_t used; char sub[80]; char marker[16]; } Argv;
void arg(Argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arg_words(Argv *a, const char *s);      // words split at spaces (a scheme's flags), each an argument

#endif
