// eval/perplexity.h: perplexity against window length, "train short, test long" (Press et al. 2021,
// the ALiBi paper's experiment): a model trained at context T is scored on text windows of W
// tokens, W shorter and longer than T, in two modes.
//
//   nonoverlap: consecutive windows of W tokens at positions 0..W-1; every token is scored. A
//               token at position t of its window predicts with t tokens of context.
//   sliding:    windows of W tokens advancing by a stride S; the first window scores all its
//               tokens, each later one only its last S, so every token is scored once, with at
//               least W - S tokens of context except in the first window. When S does not divide
//               the rest, the last window ends at the last token and scores fewer than S.
//
// Fairness: every window size and mode scores exactly the same tokens, the predictions of
// tokens[1..N] from tokens[0..N-1] (N a multiple of the largest window). A window size that
// does not divide N ends, in nonoverlap mode, with one shorter window.
//
// Memory: windows run as the rows of one batch, B = max(1, batch_tokens / W) rows at a time, and
// attention keeps one log-sum-exp per row, so no (W, W) matrix is ever stored.
// Positions: the model's tables are extended to the largest window evaluated (gpt_reserve_positions:
// a model loaded from a checkpoint has tables for its context only).
// A learned input table has no row past the context: windows W > context get no number
// (PplResult.note says why); every other scheme runs at any length, which is the experiment.
#ifndef PERPLEXITY_H
#define PERPLEXITY_H

#include <stdio.h>

#include "eval/ppl_defaults.h"
#include "model.h"

#define PPL_MAX_WINDOWS 32
#define PPL_BATCH_TOKENS 4096        // default bound on B*W of one forward pass

enum { PPL_NONOVERLAP = 0, PPL_SLIDING = 1 };

typedef struct {
    int window;        // W tokens
    int mode;          // PPL_NONOVERLAP or PPL_SLIDING
    int stride;        // S: tokens each window after the first scores (W in nonoverlap mode)
    size_t tokens;     // tokens scored (0 when the model cannot take the window)
    size_t rows;       // windows run
    double loss;       // mean cross-entropy over the scored tokens, nats; NAN when not evaluated
    double seconds;    // time taken
    char note[96];     // why there is no number ("learned table has 64 rows"), else ""
    double *pos_loss;  // (W,) nonoverlap only: mean loss at each position of the window; else NULL
} PplResult;

// "0.5,1,2" -> multiples (each a finite number > 0). Returns their count; 0 and a sentence in msg
// (without the flag name) when the list is malformed or has more than cap entries.
int ppl_parse_multiples(const char *list, double *out, int cap, char *msg, size_t msgcap);

// Windows W_i = round(mult_i * context). Returns 0 and a sentence in msg when a window would be
// under one token or two multiples give the same window.
int ppl_windows(const double *mult, int n, int context, int *out, char *msg, size_t msgcap);

// The sliding stride for window W and fraction f in (0, 1]: floor(f W), at least 1.
int ppl_stride(int W, double frac);

// The number of tokens scored, N: the first `requested` predictions (0 = as many as the text holds,
// capped at PPL_DEFAULT_TOKENS), rounded down to a multiple of max_window. text_tokens tokens give
// text_tokens - 1 predictions. Returns 0 when fewer than max_window predictions remain, or when an
// explicit request exceeds what the text holds.
size_t ppl_token_count(size_t text_tokens, size_t requested, int max_window);

// 1 when the model can take window W (not beyond a learned input table); else 0 and the reason in note.
int ppl_window_ok(const GPT *m, int W, char *note, size_t cap);

// Scores one window size and mode over tokens[0..N] (N + 1 tokens: inputs 0..N-1, targets 1..N)
// and fills r. stride: S for sliding (ignored in nonoverlap mode). batch_tokens: bound on B*W
// (0 = PPL_BATCH_TOKENS). token_loss (N,) may be NULL: receives the loss of each prediction j
// (of tokens[j+1]). progress may be NULL: a line there every ~10 s of a long evaluation.
// The model must be able to take W (ppl_window_ok); the tables are extended as needed, and a
// window that runs the model at its own context (dynamic scaling) gives the model its own back.
void ppl_evaluate(GPT *m, const int *tokens, size_t N, int W, int mode, int stride, int batch_tokens,
                  PplResult *r, double *token_loss, FILE *progress);

// Every window of W[0..nw) in both modes: out receives 2*nw results, (W[i], nonoverlap) at 2i and
// (W[i], sliding) at 2i+1; windows the model cannot take are marked, not run. stride_frac: the
// sliding stride as a fraction of W. progress (may be NULL): one line per result.
void ppl_run(GPT *m, const int *tokens, size_t N, const int *W, int nw, double stride_frac,
             int batch_tokens, PplResult *out, FILE *progress);
void ppl_result_free(PplResult *r);

// "window,mode,tokens,loss,ppl,note", one row per result (loss and ppl empty without a number).
// Written to PATH.tmp and renamed.
void ppl_write_csv(const char *path, const PplResult *r, int n);
// "window,position,loss", W rows per nonoverlap result that has a number. PATH.tmp, renamed.
void ppl_write_positions(const char *path, const PplResult *r, int n);
// The table: W, W/T, nonoverlap ppl, sliding ppl (results as ppl_run lays them out).
void ppl_print_table(FILE *f, const PplResult *r, int nw, int context, size_t N, double stride_frac);

#endif
