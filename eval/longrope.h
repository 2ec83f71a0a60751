// eval/longrope.h: LongRoPE's factor search (Ding et al. 2024, section 3.2), forward only. A model
// trained with RoPE at L0 is to run at s L0 (s = --rope-factor). Two lists of d_rot/2 factors f_i
// (theta_i becomes theta_i / f_i; posenc.h, --rope-scaling longrope) are searched, each by an
// evolutionary search scored by perplexity: the long list at windows of round(s L0) tokens, the
// short list at windows of L0 tokens (the window decides which list the tables use).
//
// The search (per list): a population of P lists starts from posenc's seeds (no change, position
// interpolation, NTK-aware, YaRN's ramp) and mutants of them; each generation keeps the best P/2
// (elitism: the best never gets worse) and makes P - P/2 children, each a uniform crossover of two
// kept parents, then a mutation (each factor with probability 0.3 times exp(0.2 z), z ~ N(0,1)),
// then the paper's constraint: factors non-decreasing in i (low frequencies interpolated at least
// as much as high ones), each in [1, 2s]. Every random draw comes from one generator seeded by
// --seed, and every candidate is scored on the same tokens, so a run is reproducible bit for bit
// (given the thread count). The paper's other search dimension, the first n^ positions kept
// un-interpolated, is not searched.
#ifndef LONGROPE_H
#define LONGROPE_H

#include <stdio.h>

#include "model.h"

#define LONGROPE_DEFAULT_POPULATION 8
#define LONGROPE_DEFAULT_GENERATIONS 4
#define LONGROPE_DEFAULT_TOKENS 8192     // tokens each candidate is scored on, unless --ppl-tokens

typedef struct {
    int population;     // P >= 4: lists alive per generation
    int generations;    // G >= 0: generations after the first population
    uint64_t seed;
    int batch_tokens;   // bound on B*W of one forward pass (0: PPL_BATCH_TOKENS)
} LongropeSearch;

typedef struct {
    int pairs;                                   // factors per list, d_rot/2
    double short_f[PE_MAX_FACTORS], long_f[PE_MAX_FACTORS];
    double short_loss, long_loss;                // the best lists' mean loss at their windows (nats)
    double short_start, long_start;              // the best loss of the first population's seeds
    int short_window, long_window;
} LongropeResult;

// Scores candidates on tokens[0..N] (N predictions, N a multiple of the long window) with m, whose
// positional config the search changes (it is left running longrope with the best lists).
// progress (may be NULL): a line per generation. Exits with a message when the model cannot be
// searched (no RoPE layer, s <= 1, a learned table that cannot take the long window).
void longrope_search(GPT *m, const int *tokens, size_t N, const LongropeSearch *ls, LongropeResult *r, FILE *progress);

// The windows the search scores: 0 and a sentence in msg when m cannot be searched.
int longrope_windows(const GPT *m, int *short_window, int *long_window, char *msg, size_t cap);

// Writes the lists as PREFIX.short and PREFIX.long: one factor per line, %.17g, the files that
// --longrope-short and --longrope-long read (each written to a temporary name, then renamed).
void longrope_write(const char *prefix, const LongropeResult *r);

#endif
