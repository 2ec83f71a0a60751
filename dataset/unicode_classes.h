// dataset/unicode_classes.h: the character classes of GPT-2's pre-tokenisation pattern, as a
// table of code point ranges generated from the Unicode Character Database
// (dataset/unicode_classes.c, written by tools/gen_unicode_classes.mjs; `make unicode-classes`).
#ifndef UNICODE_CLASSES_H
#define UNICODE_CLASSES_H

#include <stdint.h>

typedef enum {
    CH_OTHER = 0,   // anything else: punctuation, symbols, marks, controls, unassigned, invalid UTF-8
    CH_LETTER,      // \p{L}: General_Category Lu, Ll, Lt, Lm, Lo
    CH_NUMBER,      // \p{N}: General_Category Nd, Nl, No
    CH_SPACE,       // \s: the White_Space property (what the Rust regex crate, and so tiktoken, uses)
} CharClass;

typedef struct {
    uint32_t lo, hi;   // code points lo..hi, both included
    CharClass cls;
} UnicodeRange;

extern const UnicodeRange UNICODE_CLASS_RANGES[];   // sorted by lo, disjoint
extern const int UNICODE_CLASS_RANGE_COUNT;
extern const char UNICODE_CLASSES_VERSION[];        // the Unicode version of the table, "16.0.0"

#endif
