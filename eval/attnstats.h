// eval/attnstats.h: attention statistics over many windows of text (./train --attention-stats): per
// layer and head, the mean attention mass on the first key (the sink; with --bos the boundary
// token), the mean row entropy, the mean attended distance, and per layer the fraction of heads
// whose mean first-key mass is >= a threshold ("collapsed", the usual
// convention; docs/lab.md, "Attention sinks and head collapse").
//
// Windows: the first N windows of W tokens of the text, consecutive and disjoint, each at
// positions 0..W-1 (one document). With bos a window is [BOS] + W-1 tokens of text (the first N
// windows of W-1 tokens each). Rows averaged: every query row of every window except row 0, which
// attends only to itself (attention_stats, nn/attention.h): N (W-1) rows per head.
//   sink     = mean over rows of p(i, 0)
//   entropy  = mean over rows of -sum_j p(i,j) ln p(i,j), nats
//   distance = mean over rows of sum_j p(i,j) (i - j), tokens
// Memory: the statistics are summed inside the forward, layer by layer, from the tiled kernel's
// scores and log-sum-exps (attention_stats), in forward-only mode: no (W, W) matrix, no per-layer
// activations (gpt_set_forward_only); windows run B = max(1, PPL_BATCH_TOKENS / W) at a time.
#ifndef ATTNSTATS_H
#define ATTNSTATS_H

#include <stdio.h>

#include "model.h"

#define ASTATS_DEFAULT_WINDOWS 16         // windows per length
#define ASTATS_DEFAULT_THRESHOLD 0.5      // a head is collapsed when its mean first-key mass is >= this

typedef struct {
    int window;        // W tokens (with bos: the BOS and W-1 of text)
    int windows;       // N windows run (0 when the model cannot take W)
    int L, NH;
    double *sum;       // (L, NH, ATT_NSTAT) the sums over every window (nn/attention.h); NULL when not run
    double seconds;
    char note[96];     // why there is no number ("learned table has 64 rows"), else ""
} AStatsResult;

// The text tokens N windows of W take: N W, or N (W-1) with bos.
size_t astats_tokens_needed(int W, int nwin, int bos);

// Runs the first nwin windows of W over tokens (at least astats_tokens_needed of them) and fills r.
// bos: the boundary token that opens each window, or -1 for none. The model must be able to take W
// (ppl_window_ok); its tables are extended as needed, and its context is its own again after.
void astats_evaluate(GPT *m, const int *tokens, int W, int nwin, int bos, AStatsResult *r);
void astats_result_free(AStatsResult *r);

// The mean of statistic k (ATT_STAT_SINK, ..._ENTROPY, ..._DIST) of layer l, head h
double astats_mean(const AStatsResult *r, int l, int h, int k);
// The fraction of layer l's heads whose mean first-key mass is >= threshold
double astats_collapsed(const AStatsResult *r, int l, double threshold);

// CSV, one row per (window, layer, head): window,layer,head,windows,rows,sink_mass,entropy,distance,
// collapsed,layer_collapsed_frac,note (collapsed 0/1 for the head; layer_collapsed_frac the layer's
// fraction, repeated on each of its heads; the numbers empty and note set for a window not run).
// Through an atomic file: PATH.tmp, renamed.
void astats_write_csv(const char *path, const AStatsResult *r, int n, double threshold);
// The table: per window, each layer's collapsed fraction and mean first-key mass.
void astats_print_table(FILE *f, const AStatsResult *r, int n, int context, double threshold);

#endif
