// dataset/tasks.h: synthetic length-generalisation tasks and retrieval-with-distractors haystacks,
// generated deterministically from a seed, in the NoPE paper's protocol (shared/REFERENCE.md).
//
// Every instance is a short byte string (vocabulary 256, so any byte-level model reads it):
//
//     PROMPT '=' TARGET '\n'        e.g.  "copy:kqzd=kqzd\n"   "add:57+968=1025\n"
//
// The prompt starts with the task's tag ("copy:", "rev:", ...), which also anchors position for
// NoPE (the paper's instruction prefix); the target is the answer followed by the end marker
// '\n', so an exact match also requires the model to stop. The loss counts target tokens only:
// the token at index t carries weight 1 when token t+1 belongs to the target.
//
// Length: each task has a length n (its "size": the number of symbols to copy, digits of the
// longer operand, bits, ...). Training draws n uniformly from [train_min, train_max]; tests use
// every n in [1, test_max] (retrieval: a list of haystack sizes). An n <= train_max is
// in-distribution; longer is out-of-distribution.
//
// Train and test are disjoint: an instance whose content hash (FNV-1a 64 of its bytes, then the
// MurmurHash3 fmix64 finaliser; mixed with nothing else, so it does not depend on the seed) is
// 0 mod TASK_TEST_MOD is a test instance, any other a training one. (The finaliser matters: the
// low 3 bits of a bare FNV-1a depend only on the low 3 bits of each byte, which leaves some tasks,
// e.g. reverse, with no test instance at all.) Training samples reject test instances and test
// sets reject training ones, at every length (lengths beyond training are test-only anyway, by
// the same rule).
#ifndef TASKS_H
#define TASKS_H

#include "common.h"
#include "dataset/batch.h"

#define TASK_TEST_MOD 8          // 1 in 8 instances (by content hash) is reserved for testing
#define TASK_MAX_DEPTHS 8

typedef struct {
    const char *name;            // e.g. "copy"
    const char *tag;             // prompt prefix, e.g. "copy:"
    int train_min, train_max;    // default training lengths (the paper's split)
    int test_max;                // default longest test length (2 x train_max; retrieval 4 x)
    const char *help;            // one line, with an example instance
} TaskInfo;

// The tasks, in order: copy, copy-2x, copy-repeat, copy-repeat-2x, copy-change, reverse,
// reverse-2x, addition, sort, sum, parity, retrieval. NULL past the end.
const TaskInfo *task_info(int id);
int task_find(const char *name);          // -1 when unknown
void task_help(FILE *f);                  // the table of tasks for --help

typedef struct {
    int task;                    // index into the task table
    int train_min, train_max;    // training lengths
    int test_max;                // longest test length
    // retrieval only
    int distractors;             // decoy keys with other labels in each haystack (default 3)
    int n_depths;                // depths tested (default 5: 0, .25, .5, .75, 1)
} TaskConfig;

// Defaults of task `task` (its TaskInfo lengths, 3 distractors, 5 depths).
void task_defaults(TaskConfig *c, int task);
// Checks the ranges (1 <= train_min <= train_max <= test_max, lengths the task can build);
// returns 0 with a message naming the flag otherwise.
int task_check(const TaskConfig *c, char *msg, size_t cap);

enum { TASK_TRAIN = 0, TASK_TEST = 1 };

// Upper bound on the tokens of one instance of length n (prompt + target + end marker).
int task_max_tokens(const TaskConfig *c, int n);

// One instance of length n from split (TASK_TRAIN or TASK_TEST), drawn with rng. depth is the
// retrieval key's relative depth in [0, 1] (ignored by other tasks; < 0 draws it at random).
// Writes the tokens to out (at most cap) and returns their number; *prompt_len receives the
// number of prompt tokens (up to and including '='). Returns 0 when the split has no instance of
// this length (a length whose every instance hashes to the other split).
int task_instance(const TaskConfig *c, int n, double depth, int split, Rng *rng, int *out, int cap, int *prompt_len);

// The test lengths, in increasing order: 1..test_max for most tasks; for retrieval a doubling
// list of haystack sizes from train_min up to test_max. Returns the count (at most cap).
int task_test_lengths(const TaskConfig *c, int *lengths, int cap);
// The depths tested (retrieval: n_depths evenly spaced in [0, 1]; other tasks: one entry, -1).
int task_test_depths(const TaskConfig *c, double *depths, int cap);

// Fills a training batch: each row packs whole training instances one after another, each its
// own document (doc ids 0, 1, ... in the row) with positions restarting at 0, loss weight on
// target tokens only; the rest of the row is padding (doc -1, weight 0, token and target '\n').
// b->T must hold the longest training instance (task_max_tokens at train_max; a CHECK asks for a
// larger --seq otherwise), so a row holds at least one. A length with no training instance is
// redrawn. The instance that does not fit in a row is not dropped: rng is rewound to before it,
// so it opens the next row (or the next call), and the instance stream keeps uniform lengths.
void task_fill_batch(const TaskConfig *c, Rng *rng, Batch *b);

#endif
