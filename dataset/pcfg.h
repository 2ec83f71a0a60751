// dataset/pcfg.h: PCFG SET, the string-edit language of Hupkes et al. 2020 ("Compositionality
// decomposed: how do neural networks generalise?", JAIR 67), drawn with an exact number of function
// words for its productivity split, and evaluated. This module provides the language only; the
// task layer builds the instances and chooses the split.
//
// An expression is a function word and its arguments in prefix order; an argument is a string of
// symbols or another expression; a binary function's two arguments are separated by ",":
//
//     append swap_first_last A1 B1 C1 , repeat D1 E1   ->   C1 B1 A1 D1 E1 D1 E1
//
// Unary: copy (x), reverse, shift (the first symbol moved to the end), echo (the last symbol
// repeated), swap_first_last, repeat (x x). Binary: append (x y), prepend (y x), remove_first (y),
// remove_second (x). The definitions are those of PCFG SET's generator (MathijsMul/pcfg-set,
// tasks/default.py), swap_first_last included: it is [last] + middle + [first], which makes a
// one-symbol string two (no draw here has one: every string has at least two symbols).
//
// Symbols: PCFG SET's 520, the letters A-Z with the numbers 1-20 (A1 .. Z20; the released data
// use all 520). Symbol s is letter s / 20 and number s % 20 + 1, written as the token
// PCFG_SYMBOL_TOKEN0 + s, past the bytes: the model's vocabulary is 256 + PCFG_SYMBOLS.
//
// Tokens: one byte a function word, never '=', '\n' or '|' (the task's separator, end and NEXT
// markers):
//
//     unary    copy c   reverse r   shift s   echo e   swap_first_last w   repeat d
//     binary   append A   prepend P   remove_first F   remove_second S   separator ,
//
// so the example is "A w A1 B1 C1 , d D1 E1" (symbols shown by name).
//
// The draw (pcfg_draw) of k function words builds the tree from the root: a subtree that is to
// hold f >= 1 function words is a unary function with probability 3/5 (the share of unary function
// words in the released base corpus, measured: 0.60 in its dev and test files), else a binary
// one, the function uniform in its class (as PCFG SET's generator draws them); a unary's argument
// holds the other f - 1, a binary splits them uniformly between its two arguments (the first gets
// 0..f-1); an argument that holds none is a string of 2-5 symbols, length and symbols uniform (the
// generator's defaults; the released data hold exactly these lengths). The draw is rejected, and
// drawn again, when
//   - its input is longer than PCFG_MAX_IN tokens: the longest input in the released data (71 in
//     the dev, test and productivity-test files each), whose lengths and depths were matched to
//     English sentences (naturalize.py of MathijsMul/pcfg-set); or
//   - any string it computes, the output or one on the way, is longer than PCFG_MAX_STRING. PCFG
//     SET bounds only its inputs (repeat can double a string at every step; the productivity test
//     holds outputs up to 736); this bound keeps an instance in a small model's context. All the
//     strings of 98.5% of the productivity test's instances, and of 99.75% of the base test's,
//     are within it (measured on i-machine-think/am-i-compositional, data/pcfgset/).
// So a draw is one of PCFG SET's shapes conditioned on these bounds, as the released data are; it
// does not reproduce their tree-shape probabilities (the naturalised grammar's), nor their rule
// that no string argument occurs twice in the whole corpus. Hupkes et al.'s productivity test trains
// on 1-8 function words and tests on 9 and more (their released test: 9-35).
#ifndef PCFG_H
#define PCFG_H

#include <stddef.h>

#include "util/common.h"

enum {
    PCFG_LETTERS = 26,
    PCFG_NUMBERS = 20,
    PCFG_SYMBOLS = PCFG_LETTERS * PCFG_NUMBERS,   // 520
    PCFG_SYMBOL_TOKEN0 = 256,                     // symbol s is the token 256 + s
    PCFG_MIN_LEAF = 2,                            // symbols of a string argument
    PCFG_MAX_LEAF = 5,
    PCFG_MAX_IN = 71,                             // input tokens of a draw, at most
    PCFG_MAX_STRING = 64,                         // symbols of any string a draw computes, at most
    PCFG_MAX_FUNCTIONS = 40,                      // function words of a draw: 1..PCFG_MAX_FUNCTIONS
};

// function words and the separator
#define PCFG_COPY 'c'
#define PCFG_REVERSE 'r'
#define PCFG_SHIFT 's'
#define PCFG_ECHO 'e'
#define PCFG_SWAP_FIRST_LAST 'w'
#define PCFG_REPEAT 'd'
#define PCFG_APPEND 'A'
#define PCFG_PREPEND 'P'
#define PCFG_REMOVE_FIRST 'F'
#define PCFG_REMOVE_SECOND 'S'
#define PCFG_COMMA ','

// pcfg_eval's failures
enum { PCFG_MALFORMED = -1, PCFG_TOO_LONG = -2 };

// True upper bounds on a draw of k function words (1 <= k <= PCFG_MAX_FUNCTIONS; CHECK otherwise):
// input tokens min(PCFG_MAX_IN, 7k + 5) (k words, at most k commas and k + 1 strings of 5) and
// output tokens min(PCFG_MAX_STRING, 5 * 2^k) (a string of 5 doubled k times).
int pcfg_max_in_tokens(int k);
int pcfg_max_out_tokens(int k);

// A random expression with exactly k function words (1 <= k <= PCFG_MAX_FUNCTIONS): its input
// tokens in[0..*n_in-1] and its value out[0..*n_out-1], drawn from the caller's r with integer
// arithmetic only (the same r state gives the same draw everywhere). in_cap and out_cap must be
// at least the bounds above (CHECK). Returns how many draws it took (1 + the rejected ones); a
// CHECK ends the run if a million are rejected (measured over 2,000 draws per k: nearly every draw
// is accepted up to k = 15, 1 in 137 at k = 35, 1 in 3,100 at k = 40).
int pcfg_draw(int k, Rng *r, int *in, int in_cap, int *n_in, int *out, int out_cap, int *n_out);

// Evaluates the expression in[0..n_in-1] (any well-formed one, its strings of one or more
// symbols; a string alone is not an expression): writes its value to out and returns its length;
// PCFG_MALFORMED when the tokens are not one expression, PCFG_TOO_LONG when the value or a string
// on the way is longer than cap.
int pcfg_eval(const int *in, int n_in, int *out, int cap);

// The number of function words among tokens[0..n-1].
int pcfg_functions(const int *tokens, int n);

// The word of a token ("append", ",", "Q10"), NUL-terminated; returns the length snprintf would,
// or -1 (and writes nothing) for a token that is not PCFG SET's.
int pcfg_token_text(int tok, char *buf, size_t cap);
// Tokens of a text in PCFG SET's words, separated by single spaces ("repeat A1 B1 , C1"); returns
// how many, or -1 for an unknown word or more than cap of them.
int pcfg_parse_words(const char *text, int *out, int cap);

#endif
