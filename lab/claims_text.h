// lab/claims_text.h: the syntax of a pre-registered claim on a text grid (./compare --data ...
// --claims; docs/lab.md, "Claims on text"). A claim compares two rows of the perplexity table at one
// window length:
//
//     A<B@W            A's perplexity is below B's at the window W x T (T: the grid's context)
//     A>B@W            A's perplexity is above B's
//     A<B*1.02@1       A's perplexity is below 1.02 x B's at T: A is no worse than B within 2%
//     A>B*1.05@4       A's perplexity is above 1.05 x B's at 4T
//     A<B@4:sliding    the same on the sliding windows (:nonoverlap, the default, on the others)
//
// A and B are row labels (a scheme, LABEL+EXTENSION, LABEL@2T); the last '@' starts the window, the
// last '*' before it the margin. Pure: lab/report_claims.c tests the claims, lab/compare_options.c
// checks their rows and windows against the grid.
#ifndef CLAIMS_TEXT_H
#define CLAIMS_TEXT_H

#include <stddef.h>

#define CLAIM_TEXT_MAX 128     // the longest claim, as written (bytes with the NUL)
#define CLAIM_LABEL_MAX 96     // the longest row label

typedef struct {
    char text[CLAIM_TEXT_MAX];    // the claim as written
    char a[CLAIM_LABEL_MAX], b[CLAIM_LABEL_MAX];
    int less;                     // 1: A < B x margin (A's perplexity lower); 0: A > B x margin
    double margin;                // m > 0; 1 without '*m'
    double window;                // W, as a multiple of the context
    int sliding;                  // 0: non-overlapping windows, 1: the sliding window
    int sa, va, sb, vb;           // A's and B's scheme and variant (lab/variants.h, row_label), set by the caller
} TextClaim;

// Reads one claim s into *x (its rows unresolved: sa .. vb are -1). Returns 1, or 0 with a sentence
// in msg (cap bytes) that says what is wrong and how to write it.
int text_claim_parse(const char *s, TextClaim *x, char *msg, size_t cap);

#endif
