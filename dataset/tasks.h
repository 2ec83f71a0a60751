// dataset/tasks.h: synthetic length-generalisation tasks and retrieval-with-distractors haystacks,
// generated deterministically from a seed, in the NoPE paper's protocol (Kazemnejad et al. 2023;
// docs/lab.md, and docs/reproduce-nope.md's The tasks for each of the paper's configurations).
//
// Every instance is a short string of tokens: bytes, plus the symbols of a large alphabet:
//
//     PROMPT '=' TARGET '\n'        e.g.  "copy:kqzd=kqzd\n"   "add:57+968=1025\n"
//
// '=' is the only separator (the paper's [SEP]); a doubled target has '|' between its halves (the
// paper's [NEXT]: "cp2x:kqz=kqz|kqz").
//
// Symbols: the symbol tasks (task_has_symbols: the copy and reverse family, the repeat tasks, sort)
// draw from an alphabet of N symbols (--alphabet; default TASK_DEFAULT_ALPHABET, sort the NoPE
// paper's 50 items). Symbol k < 26
// is the byte 'a' + k; symbol k >= 26 is the token id 256 + (k - 26), beyond the bytes, so the
// model's vocabulary is task_vocab: 256 + max(0, N - 26). Token order is symbol order. A large
// alphabet is what makes a test set possible: copy-repeat has exactly N instances per length (the
// paper draws from T5's 32k-token vocabulary).
//
// The prompt starts with the task's tag ("copy:", "rev:", ...), which also anchors position for
// NoPE (the paper's instruction prefix); the target is the answer followed by the end marker
// '\n', so an exact match also requires the model to stop. The loss counts target tokens only:
// the token at index t carries weight 1 when token t+1 belongs to the target.
//
// Length: each task has a length n (its "size": the number of symbols to copy, digits of the
// longer operand, bits, terms, items, variables, ...). Training draws n uniformly from
// [train_min, train_max] (SCAN weighs a length by its commands, addition by its 2n - 1 pairs of
// digit counts, so that both counts are uniform); tests use every n from the task's shortest (1;
// lego 2) to test_max (retrieval: a list of haystack sizes). An n <= train_max is in-distribution; longer is
// out-of-distribution.
//
// Train, validation and test are disjoint. Past train_max every instance is a test instance (no
// length there is ever trained or validated, so a finite pool, e.g. copy-repeat's N per length,
// gives all of it to the test). At the other lengths an instance's content hash h (FNV-1a 64 of
// its tokens, then the MurmurHash3 fmix64 finaliser; mixed with nothing else, so it does not
// depend on the seed) gives its class: h % TASK_SPLIT_MOD == 0 is a test instance, == 1 a
// validation instance (the in-distribution fit check of --fit-target), any other a training one.
// (The finaliser matters: the low 3 bits of a bare FNV-1a depend only on the low 3 bits of each
// byte, which leaves some tasks, e.g. reverse, with no test instance at all.) Every draw rejects
// the other classes.
//
// Pools: the instances of one length are numbered 0..P-1 (task_pool_instance) when there are at
// most TASK_POOL_MAX of them and the task numbers them (lego and retrieval never do); evaluation
// sets (task_eval_set) then enumerate a class exactly, and otherwise sample distinct instances,
// so no score counts the same instance twice.
#ifndef TASKS_H
#define TASKS_H

#include "util/common.h"
#include "dataset/batch.h"

#define TASK_SPLIT_MOD 8         // 1 in 8 instances (by content hash) is test, 1 in 8 validation
#define TASK_MAX_DEPTHS 8
#define TASK_DEFAULT_ALPHABET 640  // smallest multiple of 128 giving >= 50 test instances at every
                                   // default test length of every symbol task but sort, which has
                                   // its own (tests/test_tasks_sets.c)
#define TASK_MAX_ALPHABET 100000
#define TASK_POOL_MAX (1 << 20)   // the most instances of a length that are enumerated

typedef struct {
    const char *name;            // e.g. "copy"
    const char *tag;             // prompt prefix, e.g. "copy:"
    int train_min, train_max;    // default training lengths (the paper's split)
    int test_max;                // default longest test length (2 x train_max for most; scan 48 of 25, pcfg 35 of 8, retrieval 4 x)
    const char *help;            // one line, with an example instance
} TaskInfo;

// The tasks, in order: copy, copy-2x, copy-repeat, copy-repeat-2x, copy-repeat-change,
// copy-successor, reverse, reverse-2x, reverse-copy, addition, polynomial, sort, sort-multi, sum,
// parity, lego, retrieval. NULL past the end.
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
    // symbol tasks only (0 for the others)
    int alphabet;                // symbols N (default TASK_DEFAULT_ALPHABET; sort 50)
} TaskConfig;

// Defaults of task `task` (its TaskInfo lengths, 3 distractors, 5 depths, the task's default
// alphabet for a symbol task: TASK_DEFAULT_ALPHABET, sort 50).
void task_defaults(TaskConfig *c, int task);
// The longest test length for training lengths up to train_max (--train-max without --test-max):
// train_max scaled by the task's own ratio of its default test_max to train_max, rounded to the
// nearest (scan 6 -> 12, pcfg 6 -> 26, copy 6 -> 12), and at most the longest length the task
// builds (but not below train_max).
int task_scaled_test_max(int task, int train_max);
// Checks the ranges (1 <= train_min <= train_max <= test_max, lengths the task can build: lego
// from 2 to 26 variables, retrieval at least its keys and filler; an alphabet of 2..TASK_MAX_ALPHABET symbols for a symbol task and none for the others); returns 0
// with a message naming the flag otherwise.
int task_check(const TaskConfig *c, char *msg, size_t cap);
// 1 when the task draws from an alphabet of symbols (--alphabet applies).
int task_has_symbols(int task);
// The vocabulary a model of this task needs: 256 bytes + the symbols beyond 'z'.
int task_vocab(const TaskConfig *c);
// A token as readable text into buf (NUL-terminated, at most cap bytes; cap >= 16): a printable
// byte as itself, '\n' as the two characters \n, another byte as \xHH, a symbol k >= 26 as <k>.
// Returns the characters written.
int task_token_text(int tok, char *buf, size_t cap);
// Prints tokens[0..n-1] through task_token_text.
void task_print_tokens(FILE *f, const int *tokens, int n);

// The classes (the content hash in distribution; past train_max, TASK_TEST only). Draws of a class
// reject the other two.
enum { TASK_TRAIN = 0, TASK_TEST = 1, TASK_VAL = 2 };

// Upper bound on the tokens of one instance of length n (prompt + target + end marker).
int task_max_tokens(const TaskConfig *c, int n);

// One instance of length n from split (TASK_TRAIN, TASK_TEST or TASK_VAL), drawn with rng. depth is the
// retrieval key's relative depth in [0, 1] (ignored by other tasks; < 0 draws it at random).
// Writes the tokens to out (at most cap) and returns their number; *prompt_len receives the
// number of prompt tokens (up to and including '='). Returns 0 when the split has no instance of
// this length (a length whose every instance hashes to the other split; TASK_TRAIN and TASK_VAL
// past train_max).
int task_instance(const TaskConfig *c, int n, double depth, int split, Rng *rng, int *out, int cap, int *prompt_len);

// The number of instances (of every class) of length n when at most TASK_POOL_MAX, else -1
// (too many to enumerate; lego and retrieval are never enumerated).
long long task_pool_size(const TaskConfig *c, int n);
// Instance number i (0 <= i < task_pool_size) of length n into out (at most cap tokens; room for
// task_max_tokens(c, n)); returns its length, *prompt_len as task_instance. Every instance of the
// length has exactly one number: symbol tasks read i as n base-N digits (copy-repeat,
// copy-repeat-2x, copy-successor: i is the symbol; copy-repeat-change: X = i / (N-1), Y the
// (i mod (N-1))-th other symbol), sum as base-9 digits, parity as bits, addition as the pair
// (A, B) of numbers without leading zeros whose longer has n digits, polynomial as x (i mod 5)
// then n base-28 (coefficient, degree) digits, sort-multi as n base-9990 digits.
int task_pool_instance(const TaskConfig *c, int n, long long i, int *out, int cap, int *prompt_len);

// The instances of one class at one length (and depth) for an evaluation, each at most once.
typedef struct {
    int count;                   // instances held
    int stride;                  // tokens per slot: task_max_tokens at the length
    int *tokens;                 // (count, stride) the instances, one per slot
    int *len, *prompt_len;       // (count,) tokens and prompt tokens of each
    long long pool;              // instances of the class at this length; -1 when not enumerable
} TaskSet;

// The instances of class `split` at length n for an evaluation, drawn with a stream seeded by
// seed. An enumerable pool (task_pool_size >= 0): every instance of the class, or `count` of them
// chosen without replacement when there are more (uniformly where the generator is uniform over
// the pool; addition's as the generator draws them). Otherwise: draws of the generator, rejecting
// repeats (equal tokens), until `count` distinct instances or a bounded number of draws. Returns
// the number held (s->count; it may be < count, 0 for a class with no instance of this length).
// Free with task_set_free.
int task_eval_set(const TaskConfig *c, int n, double depth, int split, int count, uint64_t seed, TaskSet *s);
void task_set_free(TaskSet *s);

// The test lengths, in increasing order: the task's shortest (1; lego 2) .. test_max; for retrieval a doubling
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
// so it opens the next row (or the next call), and the instance stream keeps its lengths' distribution.
void task_fill_batch(const TaskConfig *c, Rng *rng, Batch *b);
// Rank `rank` of `nranks`'s rows of a global batch of nranks x b->B rows: rows rank*B .. rank*B+B-1 of
// what task_fill_batch would fill into `global` (nranks x b->B rows, the caller's scratch; unused
// when nranks is 1), so every rank draws the same stream and the ranks together train on the rows
// one process with the global batch would.
void task_fill_slice(const TaskConfig *c, Rng *rng, Batch *b, Batch *global, int rank, int nranks);

#endif
