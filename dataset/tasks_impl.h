// dataset/tasks_impl.h: what the files of the task generator share (not part of the API of
// dataset/tasks.h): the token writer, the per-task operations table, the class of an instance.
//
// Files by job: tasks.c (the table, configuration, classes, task_instance, test lengths),
// tasks_sets.c (numbered pools, evaluation sets, packed batches), tasks_gen.c (the symbol tasks
// and retrieval), tasks_math.c (addition, polynomial, multi-digit sort, sum, parity, LEGO).
//
// A new task is one TaskOps row in tasks.c (and its TaskInfo row) plus its generator:
// - a task whose instances of a length form a finite precomputed list (numbered 0..P-1) sets
//   pool_size and pool_instance, and gen = task_gen_from_pool (a uniform number, then the
//   instance);
// - a sampler without a pool sets gen only (pool_size NULL: never enumerated, evaluation sets
//   are distinct draws).
#ifndef TASKS_IMPL_H
#define TASKS_IMPL_H

#include "dataset/tasks.h"

// Appends tokens to out; the caller has checked that the instance fits (task_max_tokens).
typedef struct {
    int *p;   // (cap,) tokens written so far
    int n;
} Out;

static inline void put(Out *o, int tok) { o->p[o->n++] = tok; }
static inline void put_str(Out *o, const char *s) {
    while (*s) put(o, (unsigned char)*s++);
}
// Writes '=' and records the prompt length (tokens up to and including '=').
static inline void put_eq(Out *o, int *prompt_len) {
    put(o, '=');
    *prompt_len = o->n;
}
// Uniform in [0, k), k >= 1.
static inline int draw(Rng *r, int k) { return (int)(rng_u64(r) % (uint64_t)k); }
// Symbol k of the alphabet as a token: a-z, then the ids past the bytes.
static inline int symbol_token(int k) { return k < 26 ? 'a' + k : 256 + (k - 26); }

#define TASK_NEXT '|'   // between the two halves of a doubled target (the paper's [NEXT])

enum {
    KEY_TOKENS = 9,    // a retrieval key "#L:DDDDD "
    KEY_DIGITS = 5,
    MAX_KEYS = 26      // one distinct label letter per key
};

// The task ids, in the order of the table in tasks.c.
enum {
    T_COPY, T_COPY2X, T_REP, T_REP2X, T_REPL, T_SUCC, T_REV, T_REV2X, T_REVCP, T_ADD, T_POLY, T_SORT, T_SORTM,
    T_SUM, T_PAR, T_LEGO, T_SCAN, T_PCFG, T_FIND, T_COUNT
};

// The operations of one task. Every function writes after the tag (already in o) and before the
// end marker '\n' (written by the caller): the body, '=' (through put_eq), the answer.
typedef struct {
    // One instance of length n drawn with r. depth: retrieval's key depth (others ignore it).
    void (*gen)(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
    // The most tokens of the body and answer at length n (tag, '=' and '\n' not counted).
    int (*body_max)(const TaskConfig *c, int n);
    // The number of instances of length n, -1 when more than TASK_POOL_MAX; NULL: never enumerated.
    long long (*pool_size)(const TaskConfig *c, int n);
    // Instance number i (0 <= i < pool_size) of length n; each instance has exactly one number.
    void (*pool_instance)(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
    int min_n;       // the shortest length the task builds (retrieval: see task_min_length)
    int symbols;     // 1: draws from the alphabet (--alphabet applies)
    int uniform;     // 1: gen draws every instance of a length's pool with the same probability
    int max_n;       // the longest length it builds; 0: no bound of its own
    int vocab;       // the model's vocabulary when the task has no alphabet; 0: 256 (bytes)
    int alphabet;    // a symbol task's default alphabet; 0: TASK_DEFAULT_ALPHABET
    // Training draws length n with probability proportional to length_weight(c, n); NULL: uniformly.
    // SCAN weighs a length by its pool (a fixed language: every training instance equally likely);
    // addition by its 2n - 1 pairs of digit counts (both counts uniform, as the paper's grid).
    long long (*length_weight)(const TaskConfig *c, int n);
} TaskOps;

extern const TaskOps TASK_OPS[];  // (task count,) in the order of the task table

// A uniform number in [0, pool_size) and that instance: gen for a task that is a list.
void task_gen_from_pool(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
// base^n when at most TASK_POOL_MAX, else -1.
long long task_small_power(long long base, int n);
// The shortest length of the configured task (retrieval: its keys and least filler).
int task_min_length(const TaskConfig *c);

// The content hash of an instance's tokens (see tasks.h) and its class at length n: past
// c->train_max every instance is a test instance; otherwise the hash decides.
uint64_t task_content_hash(const int *tok, int len);
int task_class_of(const TaskConfig *c, int n, const int *tok, int len);

// The generators, defined in tasks_gen.c and tasks_math.c, named in tasks.c's table.
void gen_symbols(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
void pool_symbols(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_symbols(const TaskConfig *c, int n);
int max_copy(const TaskConfig *c, int n);
int max_doubled(const TaskConfig *c, int n);
void pool_repeat(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_repeat(const TaskConfig *c, int n);
int max_repeat(const TaskConfig *c, int n);
void gen_replace(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
void pool_replace(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_replace(const TaskConfig *c, int n);
int max_replace(const TaskConfig *c, int n);
void gen_find(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
int max_find(const TaskConfig *c, int n);

void gen_add(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
void pool_add(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_add(const TaskConfig *c, int n);
int max_add(const TaskConfig *c, int n);
long long weight_add(const TaskConfig *c, int n);
void gen_poly(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
void pool_poly(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_poly(const TaskConfig *c, int n);
int max_poly(const TaskConfig *c, int n);
void gen_sortm(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
void pool_sortm(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_sortm(const TaskConfig *c, int n);
int max_sortm(const TaskConfig *c, int n);
void gen_digits(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
void pool_digits(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_digits(const TaskConfig *c, int n);
int max_digits(const TaskConfig *c, int n);
void gen_lego(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
int max_lego(const TaskConfig *c, int n);

// tasks_lang.c: SCAN's commands (dataset/scan.h) and PCFG SET's expressions (dataset/pcfg.h)
void pool_scan(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len);
long long size_scan(const TaskConfig *c, int n);
long long weight_scan(const TaskConfig *c, int n);
int max_scan(const TaskConfig *c, int n);
void gen_pcfg(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len);
int max_pcfg(const TaskConfig *c, int n);

#endif
