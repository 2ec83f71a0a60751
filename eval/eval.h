// eval/eval.h: exact-match accuracy of greedy decoding on a synthetic task, by length (and, for
// retrieval, by the key's depth), split into in-distribution and longer-than-training buckets.
//
// How it is computed: an instance is correct when greedy decoding from its prompt reproduces the
// whole target (answer and end marker). Greedy decoding emits the target exactly when, with the
// target fed back in ("teacher forcing"), the most likely next token at every target position is
// the target's next token: the two are the same test, and the second runs many instances in one
// batched forward pass. greedy_decode (the KV-cache path) exists to check that equivalence and to
// show the model's actual outputs (tests/test_eval.c compares both on every scheme).
//
// The instances of a bucket are distinct (task_eval_set): every test instance of the length when
// there are at most per_length, else per_length of them without replacement. Besides accuracy, a
// bucket records how concentrated the model's answers are (top_share): a model whose answer does
// not depend on the input gives the same answer to (nearly) every instance.
#ifndef EVAL_H
#define EVAL_H

#include "dataset/tasks.h"
#include "model.h"

// The most test lengths a task is evaluated at (each length a bucket, times the retrieval depths);
// train.c refuses a --test-max with more, except for retrieval, whose test lengths double.
#define EVAL_MAX_LENGTHS 4096

typedef struct {
    int length;        // the task length n of the bucket
    double depth;      // retrieval: the key's relative depth; other tasks: -1
    int ood;           // 1 when length > train_max (longer than training)
    int n;             // instances evaluated (0 when the length has no test instance)
    int correct;       // exact matches
    int skipped;       // instances the model cannot take (longer than a learned position table)
    long long pool;    // test instances of the length (and depth); -1 when not enumerable
    double top_share;  // fraction of the n instances whose greedy answer is the most common one; NAN when n = 0
} TaskScore;

// A top_share at or above this, over at least TOP_SHARE_MIN_N instances, flags a degenerate run:
// its answers do not depend on the input.
#define TOP_SHARE_FLAG 0.95
#define TOP_SHARE_MIN_N 10

// Evaluates up to per_length distinct test instances at every test length (x depth) of c, chosen
// by a stream seeded by seed (the same instances for every model given the same seed). Fills out
// (at most cap buckets; a bucket for every length and depth, empty ones included) and returns the
// number of buckets. progress: print one line per length to stderr.
int task_evaluate(GPT *m, const TaskConfig *c, int per_length, uint64_t seed, TaskScore *out, int cap, int progress);

// Exact match of every instance of a set (as task_exact_match, into ok, (s->count,)); returns the
// number correct.
int task_set_exact_match(GPT *m, const TaskSet *s, int *ok);

// The share of the most common of `count` answers (answers[i], len[i] tokens each; equal when their
// tokens are); NAN when count is 0.
double task_top_share(const int *const *answers, const int *len, int count);

// Exact match of each instance (tokens inst[i], len[i] of them, the first plen[i] the prompt):
// ok[i] = 1 when greedy decoding reproduces the target, 0 when not, -1 when the instance is longer
// than the model's positions (a learned table) and cannot be run.
void task_exact_match(GPT *m, int *const *inst, const int *len, const int *plen, int count, int *ok);

// Greedy decoding of one prompt (np tokens at positions 0..np-1, one document) through the KV
// cache: appends tokens until `stop` is emitted (it is included) or max_new tokens; returns their
// number. Positions past the model's limit (gpt_position_limit) end the decoding early.
int greedy_decode(GPT *m, const int *prompt, int np, int max_new, int stop, int *out);
// With anomaly detection on (gpt_set_detect_anomaly, ./train --detect-anomaly): after an
// evaluation's forward, stops the program at the first NaN or Inf it met, naming the evaluation,
// the layer, the pass and the tensor. One branch when none was found.
static inline void eval_stop_on_anomaly(const GPT *m, const char *what) {
    CHECK(!m->state.anomaly.found, "anomaly in %s: %s (--detect-anomaly)", what, m->state.anomaly.msg);
}

// Index of the largest of logits[0..V-1] (the first one on ties): the greedy choice.
int argmax_token(const real *logits, int V);

// The next token from logits (V,): greedy at temperature 0 (argmax_token), else drawn from
// softmax(logits / temp) over the top_k most likely (all when 0) with rng.
int sample_token(const real *logits, int V, double temp, int top_k, Rng *rng);
// Generation (./train --sample): count tokens appended to ctx[0..n) (ctx has room for n + count;
// n >= 1), each from the logits of the text so far through the KV cache: ctx[0..n) as one chunk at
// positions 0.., then one token per step at the next position. When the cache (the model's context
// T) is full, the last T/2 tokens are encoded again from position 0 and generation goes on from
// them. emit (may be NULL) gets each token and the logits (V,) it was drawn from. Returns n + count.
int sample_tokens(GPT *m, int *ctx, int n, int count, double temp, int top_k, Rng *rng,
                  void (*emit)(void *arg, int token, const real *logits), void *arg);

// Writes the scores as CSV through PATH.tmp and a rename. Columns:
//   task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share
// split is "id" or "ood"; depth is empty for tasks without one; pool is empty when not enumerable;
// distinct = n + skipped (the instances asked, each once); top_share (%.4f) is empty when n = 0.
void task_scores_write(const char *path, const char *task, const char *scheme, long long seed,
                       const TaskScore *s, int n);
// Mean accuracy over the in-distribution (ood = 0) or longer (ood = 1) buckets, every bucket
// weighted by its instances; an instance the model cannot run (skipped) counts as wrong. NAN
// when there is none. The CSV's accuracy column is correct / (n + skipped) for the same reason.
double task_accuracy(const TaskScore *s, int n, int ood);

#endif
