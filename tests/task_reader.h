// tests/task_reader.h: the task tests' own reading of an instance (tests/test_tasks.c,
// tests/test_tasks_sets.c): parsed back and its answer recomputed independently of the generators
// of dataset/tasks.c (big-number addition, sorting, retrieval keys read from the haystack), and the
// class rule of the content hash written out again.
#ifndef TASK_READER_H
#define TASK_READER_H

#include <stdint.h>

#include "dataset/tasks.h"

// The task ids, in the order of dataset/tasks.c's table.
enum {
    COPY, COPY2X, REP, REP2X, REPL, SUCC, REV, REV2X, REVCP, ADD, POLY, SORT, SORTM, SUM, PAR, LEGO, SCAN, PCFG,
    RETRIEVAL, N_TASKS
};
enum { BUF = 4096 };
extern const char *const NAMES[N_TASKS];   // the task ids' names, in order

uint64_t fnv1a(const char *s, int n);
// The class rule of tasks.h: FNV-1a 64, MurmurHash3's fmix64, then 0 mod TASK_SPLIT_MOD is test,
// 1 validation, the rest training.
int class_of_string(const char *s, int n);
int is_test_string(const char *s, int n);
// The class of an instance of length n under config c: every instance past c->train_max is a
// test one; at the other lengths class_of_string.
int class_at(const TaskConfig *c, int n, const char *s, int len);

// Defaults with the 26 letters as the alphabet, so every instance is a byte string check_instance reads.
void letters_defaults(TaskConfig *c, int task);
// tokens -> bytes (every token must be a byte)
void to_bytes(const int *tok, int n, char *s);

// Tokens of a text where "<k>" is the token 256 + k - 26 (task_token_text's form) and any other
// character its byte; returns the count (at most cap), -1 on a malformed "<...>".
int pcfg_text_tokens(const char *text, int *out, int cap);
// The class rule of tasks.h over tokens (a token past the bytes xored in whole).
int class_of_tokens(const int *tok, int n);

// What an instance says about itself, read back by check_instance.
typedef struct {
    int n;              // the length: symbols, digits of the longer operand, bits, terms, items,
                        // variables, haystack tokens
    int prompt_len;     // tokens up to and including the separating '='
    int target_len;     // tokens after it, the final '\n' included
    // retrieval
    int keys;           // keys in the haystack
    int asked_at;       // haystack index of the asked key's '#'
    int filler;         // filler tokens in the haystack
    int filler_before;  // filler tokens before the asked key
    int longer;         // addition: 0 when A is the longer operand (or equal), 1 when B is
    int shorter_len;    // addition: digits of the shorter operand
    int asked;          // lego: the chain index of the asked variable
} Parsed;

// Checks that s (len bytes, NUL-terminated) is a correct instance of task `task`; the answer is
// recomputed from the prompt (SCAN: by this file's own reading of the command). PCFG's symbols are
// tokens past the bytes: its instances are checked as tokens (tests/test_tasks.c), and here refused. Returns NULL when it is, else a description of what is wrong (a
// static buffer for a wrong target: valid until the next call).
const char *check_instance(int task, const char *s, int len, Parsed *pr);

#endif
