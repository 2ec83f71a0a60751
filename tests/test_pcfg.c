// tests/test_pcfg.c: PCFG SET (dataset/pcfg.h): the evaluator on the paper's and its datasets'
// worked examples and on one hand-worked example per function, its refusals, the words of the
// tokens, and thousands of draws: their function-word counts, bounds, string lengths and
// probabilities, their values against the evaluator, and their determinism.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/common.h"
#include "dataset/pcfg.h"
#include "tests/testutil.h"

enum { CAP = 256 };

// The value of the expression in words, written back in words ("" with the failure's code in *rc).
static void eval_words(const char *expr, int cap, char *result, int *rc) {
    int in[CAP], out[CAP];
    int n = pcfg_parse_words(expr, in, CAP);
    *rc = n < 0 ? -100 : pcfg_eval(in, n, out, cap);
    result[0] = '\0';
    for (int i = 0; i < *rc; i++) {
        char w[32];
        pcfg_token_text(out[i], w, sizeof w);
        if (i) strcat(result, " ");
        strcat(result, w);
    }
}

static void test_examples(void) {
    static const struct { const char *expr, *value; } EX[] = {
        // Hupkes et al. 2020's example, and its dataset page's with numbered symbols
        {"append swap_first_last A1 B1 C1 , repeat D1 E1", "C1 B1 A1 D1 E1 D1 E1"},
        {"repeat A1 B1 C1", "A1 B1 C1 A1 B1 C1"},
        {"echo remove_first D1 K1 , E1 F1", "E1 F1 F1"},
        // the released data (am-i-compositional's README) and the NoPE paper's code
        {"reverse copy O14 O4 C12 J14 W3", "W3 J14 C12 O4 O14"},
        {"echo append copy Q10 E4 S15 P7 , shift remove_second K15 D8 M9 W5 , H12 Q5 G10 J6 J10",
         "Q10 E4 S15 P7 D8 M9 W5 K15 K15"},
        // one per function, by hand
        {"copy A1 B1", "A1 B1"},
        {"reverse A1 B1 C1", "C1 B1 A1"},
        {"shift A1 B1 C1", "B1 C1 A1"},
        {"echo A1 B1", "A1 B1 B1"},
        {"swap_first_last A1 B1 C1 D1", "D1 B1 C1 A1"},
        {"swap_first_last A1 B1", "B1 A1"},
        {"repeat A1 B1", "A1 B1 A1 B1"},
        {"append A1 B1 , C1", "A1 B1 C1"},
        {"prepend A1 B1 , C1", "C1 A1 B1"},
        {"remove_first A1 B1 , C1 D1", "C1 D1"},
        {"remove_second A1 B1 , C1 D1", "A1 B1"},
        // an expression as a first argument; PCFG SET's swap_first_last of one symbol makes two
        {"prepend remove_second A1 , B1 , Z20 Y19", "Z20 Y19 A1"},
        {"append shift repeat A1 B1 , reverse C2 D3 E4", "B1 A1 B1 A1 E4 D3 C2"},
        {"swap_first_last A1", "A1 A1"},
    };
    for (size_t e = 0; e < sizeof EX / sizeof EX[0]; e++) {
        char got[1024];
        int rc;
        eval_words(EX[e].expr, CAP, got, &rc);
        EXPECT(rc >= 0 && strcmp(got, EX[e].value) == 0, "'%s' -> '%s' (%d), expected '%s'", EX[e].expr, got, rc, EX[e].value);
    }
    int in[CAP];
    int n = pcfg_parse_words(EX[4].expr, in, CAP);
    EXPECT(pcfg_functions(in, n) == 5, "the NoPE example has %d function words, expected 5", pcfg_functions(in, n));

    static const char *const BAD[] = {"", "A1 B1", "reverse", "append A1 B1 C1", "append A1 , ", "copy A1 , B1",
                                      "copy , A1", "remove_first A1 , B1 , C1", ", A1", "append , A1 , B1"};
    for (size_t b = 0; b < sizeof BAD / sizeof BAD[0]; b++) {
        char got[64];
        int rc;
        eval_words(BAD[b], CAP, got, &rc);
        EXPECT(rc == PCFG_MALFORMED, "'%s' evaluated to %d, expected malformed", BAD[b], rc);
    }
    int odd[3] = {PCFG_COPY, PCFG_SYMBOL_TOKEN0, '='};
    int out[4];
    EXPECT(pcfg_eval(odd, 3, out, 4) == PCFG_MALFORMED, "a token outside PCFG SET is malformed");
    odd[2] = PCFG_SYMBOL_TOKEN0 + PCFG_SYMBOLS;
    EXPECT(pcfg_eval(odd, 3, out, 4) == PCFG_MALFORMED, "a symbol past the alphabet is malformed");
}

// The cap bounds every string on the way, not just the value: each expression at the largest cap
// it fails and the smallest it passes.
static void test_eval_cap(void) {
    static const struct { const char *expr; int cap, rc; const char *value; } CASES[] = {
        {"repeat repeat A1 B1 C1", 11, PCFG_TOO_LONG, ""},
        {"repeat repeat A1 B1 C1", 12, 12, "A1 B1 C1 A1 B1 C1 A1 B1 C1 A1 B1 C1"},
        {"remove_first repeat repeat A1 B1 C1 , D1", 11, PCFG_TOO_LONG, ""},
        {"remove_first repeat repeat A1 B1 C1 , D1", 12, 1, "D1"},
        {"append A1 B1 C1 , D1 E1", 4, PCFG_TOO_LONG, ""},
        {"append A1 B1 C1 , D1 E1", 5, 5, "A1 B1 C1 D1 E1"},
        {"copy A1 B1 C1", 2, PCFG_TOO_LONG, ""},
        {"copy A1 B1 C1", 3, 3, "A1 B1 C1"},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        char got[1024];
        int rc;
        eval_words(CASES[c].expr, CASES[c].cap, got, &rc);
        EXPECT(rc == CASES[c].rc && strcmp(got, CASES[c].value) == 0, "'%s' with cap %d: %d '%s', expected %d '%s'",
               CASES[c].expr, CASES[c].cap, rc, got, CASES[c].rc, CASES[c].value);
    }
}

static void test_words(void) {
    int toks[PCFG_SYMBOLS + 16], bad = 0;
    for (int s = 0; s < PCFG_SYMBOLS; s++) {   // every symbol's name parses back to it
        char w[8];
        int len = pcfg_token_text(PCFG_SYMBOL_TOKEN0 + s, w, sizeof w);
        bad += len < 2 || len > 3 || pcfg_parse_words(w, toks, 1) != 1 || toks[0] != PCFG_SYMBOL_TOKEN0 + s;
    }
    EXPECT(bad == 0, "%d symbols do not read back", bad);
    EXPECT(pcfg_parse_words("A1 A20 B1 Z20", toks, 4) == 4 && toks[0] == 256 && toks[1] == 256 + 19 &&
           toks[2] == 256 + 20 && toks[3] == 256 + 519, "A1 A20 B1 Z20 are symbols 0, 19, 20, 519");
    const char *words = "copy reverse shift echo swap_first_last repeat append prepend remove_first remove_second ,";
    const char *want = "crsewdAPFS,";
    int n = pcfg_parse_words(words, toks, 16);
    EXPECT(n == 11, "%d function words and separator, expected 11", n);
    for (int i = 0; i < n && i < 11; i++) {
        char w[32];
        pcfg_token_text(toks[i], w, sizeof w);
        EXPECT(toks[i] == want[i] && strstr(words, w), "word %d is token %d ('%s'), expected '%c'", i, toks[i], w, want[i]);
    }
    EXPECT(pcfg_functions(toks, n) == 10, "10 function words, counted %d", pcfg_functions(toks, n));
    static const char *const BAD[] = {"A0", "A21", "a1", "A01", "Q", "Q100", "repeats", "1A", "="};
    for (size_t b = 0; b < sizeof BAD / sizeof BAD[0]; b++)
        EXPECT(pcfg_parse_words(BAD[b], toks, 4) == -1, "'%s' read as a token", BAD[b]);
    EXPECT(pcfg_parse_words("A1 B1 C1", toks, 2) == -1, "three words into room for two");
    char w[8];
    EXPECT(pcfg_token_text('=', w, sizeof w) == -1 && pcfg_token_text(256 + 520, w, sizeof w) == -1,
           "tokens outside PCFG SET have no word");
}

// Runs of symbols in the input (the string arguments) and their lengths' range.
static void leaf_range(const int *in, int n, int *lo, int *hi) {
    for (int i = 0; i < n;) {
        if (in[i] < PCFG_SYMBOL_TOKEN0) { i++; continue; }
        int run = 0;
        while (i < n && in[i] >= PCFG_SYMBOL_TOKEN0) run++, i++;
        if (run < *lo) *lo = run;
        if (run > *hi) *hi = run;
    }
}

// Draws at every k: exact function-word counts, the bounds, 2-5 symbol strings, the value the
// evaluator computes with every string within PCFG_MAX_STRING, and the bounds attained at k = 1.
static void test_draws(void) {
    Rng r;
    rng_seed(&r, 29);
    int in[PCFG_MAX_IN], out[PCFG_MAX_STRING], check[PCFG_MAX_STRING];
    int total = 0, bad_k = 0, bad_in = 0, bad_out = 0, bad_value = 0, lo = 99, hi = 0;
    int max_in1 = 0, max_out1 = 0;
    long unary = 0, words = 0, seen[128] = {0};
    for (int k = 1; k <= PCFG_MAX_FUNCTIONS; k++) {
        int draws = k <= 30 ? 200 : 10;   // rejection makes the longest slow
        for (int d = 0; d < draws; d++, total++) {
            int ni = -1, no = -1;
            int tries = pcfg_draw(k, &r, in, pcfg_max_in_tokens(k), &ni, out, pcfg_max_out_tokens(k), &no);
            bad_k += tries < 1 || pcfg_functions(in, ni) != k;
            bad_in += ni < 1 || ni > pcfg_max_in_tokens(k) || ni > PCFG_MAX_IN;
            bad_out += no < 1 || no > pcfg_max_out_tokens(k) || no > PCFG_MAX_STRING;
            int nc = pcfg_eval(in, ni, check, PCFG_MAX_STRING);
            bad_value += nc != no || memcmp(check, out, sizeof(int) * (size_t)(no > 0 ? no : 0)) != 0;
            leaf_range(in, ni, &lo, &hi);
            if (k == 1) {
                if (ni > max_in1) max_in1 = ni;
                if (no > max_out1) max_out1 = no;
            }
            for (int i = 0; i < ni; i++)
                if (in[i] < PCFG_SYMBOL_TOKEN0 && in[i] != PCFG_COMMA) {
                    seen[in[i]]++;
                    if (k <= 10) unary += in[i] >= 'a', words++;   // unary words are lower case
                }
        }
    }
    EXPECT(total > 6000, "%d draws", total);
    EXPECT(bad_k == 0, "%d draws without their k function words", bad_k);
    EXPECT(bad_in == 0 && bad_out == 0, "%d inputs, %d outputs past the bounds", bad_in, bad_out);
    EXPECT(bad_value == 0, "%d draws whose value differs from the evaluator's", bad_value);
    EXPECT(lo == 2 && hi == 5, "string arguments of %d..%d symbols, expected 2..5", lo, hi);
    // k = 1: "append A B C D E , F G H I J" has 12 tokens; "repeat A B C D E" 10 symbols
    EXPECT(max_in1 == 12 && pcfg_max_in_tokens(1) == 12, "k = 1: longest input %d (bound %d), expected 12", max_in1,
           pcfg_max_in_tokens(1));
    EXPECT(max_out1 == 10 && pcfg_max_out_tokens(1) == 10, "k = 1: longest value %d (bound %d), expected 10", max_out1,
           pcfg_max_out_tokens(1));
    EXPECT(pcfg_max_in_tokens(2) == 19 && pcfg_max_in_tokens(10) == 71 && pcfg_max_out_tokens(3) == 40 &&
           pcfg_max_out_tokens(4) == 64, "bounds at k = 2, 10, 3, 4");
    // up to k = 10 the bounds reject few draws, so the unary share is near the 3/5 drawn
    // (about 11,000 function words: one standard deviation is 0.005)
    double share = (double)unary / (double)words;
    EXPECT(share > 0.57 && share < 0.63, "unary share %.3f of %ld function words, expected 0.60", share, words);
    const char *all = "crsewdAPFS";
    for (const char *f = all; *f; f++) EXPECT(seen[(int)*f] > 0, "function '%c' never drawn", *f);
}

// A binary function splits the function words below it uniformly: at k = 2 a binary root's first
// argument is a string (its second an expression) half the time.
static void test_split(void) {
    Rng r;
    rng_seed(&r, 2);
    int in[PCFG_MAX_IN], out[PCFG_MAX_STRING], ni, no, binary = 0, first_string = 0;
    for (int d = 0; d < 2000; d++) {
        pcfg_draw(2, &r, in, PCFG_MAX_IN, &ni, out, PCFG_MAX_STRING, &no);
        if (in[0] >= 'a') continue;   // a unary root
        binary++;
        first_string += in[1] >= PCFG_SYMBOL_TOKEN0;
    }
    // about 800 binary roots (2 in 5): one standard deviation of the share is 0.018
    double share = (double)first_string / (double)binary;
    EXPECT(binary > 600 && share > 0.42 && share < 0.58, "%d binary roots, first argument a string in %.3f, expected 0.5",
           binary, share);
}

// The same seed gives the same draws; another seed, others.
static void test_determinism(void) {
    Rng a, b, c;
    rng_seed(&a, 7);
    rng_seed(&b, 7);
    rng_seed(&c, 8);
    int same = 1, differ = 0;
    for (int d = 0; d < 200; d++) {
        int k = 1 + d % 20;
        int ia[PCFG_MAX_IN], ib[PCFG_MAX_IN], ic[PCFG_MAX_IN], oa[PCFG_MAX_STRING], ob[PCFG_MAX_STRING], oc[PCFG_MAX_STRING];
        int nia, nib, nic, noa, nob, noc;
        int ta = pcfg_draw(k, &a, ia, PCFG_MAX_IN, &nia, oa, PCFG_MAX_STRING, &noa);
        int tb = pcfg_draw(k, &b, ib, PCFG_MAX_IN, &nib, ob, PCFG_MAX_STRING, &nob);
        pcfg_draw(k, &c, ic, PCFG_MAX_IN, &nic, oc, PCFG_MAX_STRING, &noc);
        same &= ta == tb && nia == nib && noa == nob && !memcmp(ia, ib, sizeof(int) * (size_t)nia) &&
                !memcmp(oa, ob, sizeof(int) * (size_t)noa);
        differ += nia != nic || memcmp(ia, ic, sizeof(int) * (size_t)nia) != 0;
    }
    EXPECT(same, "two generators with the same seed drew differently");
    EXPECT(differ > 190, "only %d of 200 draws differ between seeds 7 and 8", differ);
}

static void child_k0(const void *arg) { (void)arg; pcfg_max_in_tokens(0); }
static void child_k41(const void *arg) { (void)arg; pcfg_max_out_tokens(PCFG_MAX_FUNCTIONS + 1); }
static void child_room(const void *arg) {
    int in[PCFG_MAX_IN], out[PCFG_MAX_STRING], ni, no, which = *(const int *)arg;
    Rng r;
    rng_seed(&r, 1);
    pcfg_draw(3, &r, in, which ? 26 : 25, &ni, out, which ? 39 : 40, &no);
}

static void test_refusals(void) {
    int in_short = 0, out_short = 1;
    EXPECT(dies_with(child_k0, NULL, "0 function words", NULL), "k = 0 is refused");
    EXPECT(dies_with(child_k41, NULL, "41 function words", NULL), "k past PCFG_MAX_FUNCTIONS is refused");
    EXPECT(dies_with(child_room, &in_short, "room for 26 input", NULL), "an input buffer one short is refused");
    EXPECT(dies_with(child_room, &out_short, "and 40 output", NULL), "an output buffer one short is refused");
}

int main(void) {
    test_examples();
    test_eval_cap();
    test_words();
    test_draws();
    test_split();
    test_determinism();
    test_refusals();
    return test_summary("test_pcfg");
}
