// lab/ladder.h: ./ladder, the report of one task grid at several model sizes (lab/ladder.c reads
// and tests, lab/ladder_report.c writes the files; docs/scale.md).
#ifndef LADDER_H
#define LADDER_H

#include "lab/runs.h"
#include "lab/stats.h"

#define LADDER_MAX_SIZES 16

typedef struct {
    const char *protocol;        // its ./compare protocol
    char name[256];              // the protocol's file name without .txt
    char dir[4096];              // OUT/NAME: its runs
    Cfg c;                       // the protocol, as ./compare reads it
    double params;               // the model's parameter count: its NoPE run's on the first task with one (0: none yet)
    double task_params[MAX_ITEMS];   // per task: its NoPE run's count (the vocabulary differs by task); 0: none yet
    double *ood, *id;            // (task, scheme, seed): accuracy (fraction), NAN while not finished
    int finished;                // runs in its runs.csv
    char **argv;                 // the command line compare_parse read (its strings outlive the ladder)
} Size;

typedef struct { Interval iv; double p, holm; } ClaimTest;     // iv: mean A - B (points) over the units
typedef struct { Interval iv; double p, holm; } TrendTest;     // iv: mean slope (points per decade)

typedef struct {
    const char *out;
    Size z[LADDER_MAX_SIZES];
    int n;
    ClaimTest at[LADDER_MAX_SIZES][MAX_ITEMS];   // [size][claim]
    ClaimTest by_seed[LADDER_MAX_SIZES][MAX_ITEMS];  // [size][claim], the seed as the unit (sensitivity)
    TrendTest trend[MAX_ITEMS];                  // [claim]
    Interval mrr[LADDER_MAX_SIZES][MAX_ITEMS];   // [size][scheme]
} Ladder;

// lab/ladder.c
void ladder_load(Ladder *L, const char *out, char **protocols, int n);
void ladder_claims(Ladder *L);
void ladder_mrr(Ladder *L);
void ladder_free(Ladder *L);
// The mean OOD (ood = 1) or in-distribution accuracy (%) of (task t, scheme sc) at size z over its
// finished seeds, with the 95% t-interval.
Interval ladder_accuracy(const Size *z, int t, int sc, int ood);
// "supported" (Holm p < 0.05, mean > 0), "contradicted" (Holm p < 0.05, mean < 0), else "not distinguishable".
const char *ladder_verdict(double mean, double holm);

// lab/ladder_report.c: OUT/ladder.csv, mrr.csv, claims.csv, summary.md and the plots.
void ladder_write(const Ladder *L);

#endif
