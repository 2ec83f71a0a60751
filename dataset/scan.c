// dataset/scan.c: the SCAN language of dataset/scan.h (Lake and Baroni 2018). A command's number
// gives its parts by division (C -> two S numbers, S -> a V number and a repetition), so nothing
// is stored but the table of commands by length, built once.

#include "dataset/scan.h"

#include <string.h>

#include "util/common.h"

enum {
    N_VERBS = 4,                 // walk, look, run, jump
    N_X = 5,                     // the verbs and turn
    N_V = N_VERBS + 3 * N_X * 2, // 34 verb phrases
    N_S = 3 * N_V,               // 102 phrases
    N_PAIRS = N_S * N_S,         // "s1 and s2" (or after) for every ordered pair
    X_TURN = 4,                  // x index of turn
};

// The words and tokens of the command vocabulary, by role.
static const char *const VERB_WORDS[N_X] = {"walk", "look", "run", "jump", "turn"};
static const int VERB_TOKENS[N_X] = {SCAN_WALK, SCAN_LOOK, SCAN_RUN, SCAN_JUMP, SCAN_TURN};
static const int VERB_ACTIONS[N_VERBS] = {SCAN_A_WALK, SCAN_A_LOOK, SCAN_A_RUN, SCAN_A_JUMP};
static const char *const DIR_WORDS[2] = {"left", "right"};
static const int DIR_TOKENS[2] = {SCAN_LEFT, SCAN_RIGHT};
static const int TURN_ACTIONS[2] = {SCAN_A_TURN_LEFT, SCAN_A_TURN_RIGHT};
static const char *const FORM_WORDS[3] = {NULL, "opposite", "around"};   // form 0 is "X D"
static const int FORM_TOKENS[3] = {0, SCAN_OPPOSITE, SCAN_AROUND};
static const char *const REP_WORDS[3] = {NULL, "twice", "thrice"};
static const int REP_TOKENS[3] = {0, SCAN_TWICE, SCAN_THRICE};

int scan_count(void) { return SCAN_COMMANDS; }
int scan_max_command_tokens(void) { return SCAN_MAX_COMMAND_TOKENS; }
int scan_max_actions(void) { return SCAN_MAX_ACTIONS; }

// A verb phrase v in 0..N_V-1 split into its parts: a bare verb (form -1, x = v) or form f of
// X = x and D = d.
typedef struct { int form, x, d; } Verb;
static Verb verb_parts(int v) {
    if (v < N_VERBS) return (Verb){-1, v, 0};
    int j = v - N_VERBS;
    return (Verb){j / (2 * N_X), j / 2 % N_X, j % 2};
}

// The command's parts: phrases s[0..n_s-1] in the order written, and the conjunction
// (0 none, SCAN_AND, SCAN_AFTER).
typedef struct { int n_s, s[2], conj; } Command;
static Command command_parts(int i) {
    CHECK(i >= 0 && i < SCAN_COMMANDS, "scan: command %d out of range (0..%d)", i, SCAN_COMMANDS - 1);
    if (i < N_S) return (Command){1, {i, 0}, 0};
    int j = i - N_S;
    return (Command){2, {j % N_PAIRS / N_S, j % N_S}, j < N_PAIRS ? SCAN_AND : SCAN_AFTER};
}

// Actions of verb phrase v: 1 (U), 1 or 2 ("X D"), 2 or 3 (opposite), 4 or 8 (around).
static int verb_actions(int v) {
    Verb p = verb_parts(v);
    int act = p.x != X_TURN;   // a verb's own action; turn has none
    switch (p.form) {
    case -1: return 1;
    case 0: return 1 + act;
    case 1: return 2 + act;
    default: return 4 * (1 + act);
    }
}

static int phrase_actions(int s) { return (s % 3 + 1) * verb_actions(s / 3); }

int scan_actions(int i) {
    Command c = command_parts(i);
    return phrase_actions(c.s[0]) + (c.n_s == 2 ? phrase_actions(c.s[1]) : 0);
}

// Appends one token; the caller's cap was checked against the whole command.
static void put(int *out, int *n, int tok) { out[(*n)++] = tok; }

static void phrase_tokens(int s, int *out, int *n) {
    Verb p = verb_parts(s / 3);
    put(out, n, VERB_TOKENS[p.x]);
    if (p.form > 0) put(out, n, FORM_TOKENS[p.form]);
    if (p.form >= 0) put(out, n, DIR_TOKENS[p.d]);
    if (s % 3) put(out, n, REP_TOKENS[s % 3]);
}

static int phrase_token_count(int s) {
    Verb p = verb_parts(s / 3);
    return 1 + (p.form > 0) + (p.form >= 0) + (s % 3 != 0);
}

int scan_command_tokens(int i, int *out, int cap) {
    Command c = command_parts(i);
    int need = phrase_token_count(c.s[0]) + (c.n_s == 2 ? 1 + phrase_token_count(c.s[1]) : 0);
    CHECK(need <= cap, "scan_command_tokens: command %d has %d tokens, room for %d", i, need, cap);
    int n = 0;
    phrase_tokens(c.s[0], out, &n);
    if (c.n_s == 2) {
        put(out, &n, c.conj);
        phrase_tokens(c.s[1], out, &n);
    }
    return n;
}

static void phrase_action_tokens(int s, int *out, int *n) {
    Verb p = verb_parts(s / 3);
    for (int rep = 0; rep <= s % 3; rep++) {
        int turns = p.form == -1 ? 0 : p.form == 1 ? 2 : 1;   // turns before each action
        int times = p.form == 2 ? 4 : 1;                       // around: four times
        for (int t = 0; t < times; t++) {
            for (int k = 0; k < turns; k++) put(out, n, TURN_ACTIONS[p.d]);
            if (p.x != X_TURN) put(out, n, VERB_ACTIONS[p.x]);
        }
    }
}

int scan_action_tokens(int i, int *out, int cap) {
    int need = scan_actions(i);
    CHECK(need <= cap, "scan_action_tokens: command %d has %d actions, room for %d", i, need, cap);
    Command c = command_parts(i);
    int n = 0;
    // "s1 after s2" is s2's actions first
    int first = c.conj == SCAN_AFTER ? c.s[1] : c.s[0];
    phrase_action_tokens(first, out, &n);
    if (c.n_s == 2) phrase_action_tokens(c.conj == SCAN_AFTER ? c.s[0] : c.s[1], out, &n);
    return n;
}

// ---------------------------------------------------------------------------------------------
// commands by length

// by_length[start[n] .. start[n+1]-1]: the commands with n actions, in increasing number.
// Built on first use and kept for the life of the process; `omp critical` makes the first use
// safe from parallel evaluation threads.
static const int *length_table(const int **start_out) {
    static int *by_length = NULL;
    static int start[SCAN_MAX_ACTIONS + 2];
    #pragma omp critical(scan_length_table)
    {
        if (!by_length) {
            int *t = xmalloc(sizeof(int) * SCAN_COMMANDS);
            int count[SCAN_MAX_ACTIONS + 2] = {0};
            for (int i = 0; i < SCAN_COMMANDS; i++) count[scan_actions(i)]++;
            start[0] = 0;
            for (int n = 0; n <= SCAN_MAX_ACTIONS; n++) start[n + 1] = start[n] + count[n];
            int fill[SCAN_MAX_ACTIONS + 1];
            memcpy(fill, start, sizeof fill);
            for (int i = 0; i < SCAN_COMMANDS; i++) t[fill[scan_actions(i)]++] = i;
            by_length = t;
        }
    }
    *start_out = start;
    return by_length;
}

int scan_count_of_length(int n) {
    if (n < 1 || n > SCAN_MAX_ACTIONS) return 0;
    const int *start;
    length_table(&start);
    return start[n + 1] - start[n];
}

int scan_of_length(int n, int k) {
    int count = scan_count_of_length(n);
    CHECK(k >= 0 && k < count, "scan_of_length: index %d of length %d out of range (%d commands)", k, n, count);
    const int *start;
    const int *t = length_table(&start);
    return t[start[n] + k];
}

// ---------------------------------------------------------------------------------------------
// words

// Appends " word" (no space before the first) to buf at *len, as snprintf would.
static void put_word(char *buf, size_t cap, int *len, const char *word) {
    size_t at = (size_t)*len < cap ? (size_t)*len : cap;
    *len += snprintf(buf + at, cap - at, "%s%s", *len ? " " : "", word);
}

static void phrase_text(int s, char *buf, size_t cap, int *len) {
    Verb p = verb_parts(s / 3);
    put_word(buf, cap, len, VERB_WORDS[p.x]);
    if (p.form > 0) put_word(buf, cap, len, FORM_WORDS[p.form]);
    if (p.form >= 0) put_word(buf, cap, len, DIR_WORDS[p.d]);
    if (s % 3) put_word(buf, cap, len, REP_WORDS[s % 3]);
}

int scan_command_text(int i, char *buf, size_t cap) {
    Command c = command_parts(i);
    int len = 0;
    if (cap) buf[0] = '\0';
    phrase_text(c.s[0], buf, cap, &len);
    if (c.n_s == 2) {
        put_word(buf, cap, &len, c.conj == SCAN_AND ? "and" : "after");
        phrase_text(c.s[1], buf, cap, &len);
    }
    return len;
}

// Index of word w in list[0..n-1] (NULL entries skipped), or -1.
static int word_index(const char *w, const char *const *list, int n) {
    for (int k = 0; k < n; k++)
        if (list[k] && strcmp(w, list[k]) == 0) return k;
    return -1;
}

// The phrase number of words w[0..n-1] ("jump around right twice"), or -1.
static int parse_phrase(char **w, int n) {
    int rep = n > 1 ? word_index(w[n - 1], REP_WORDS, 3) : -1;
    if (rep > 0) n--;
    else rep = 0;
    int x = n >= 1 ? word_index(w[0], VERB_WORDS, N_X) : -1;
    if (x < 0) return -1;
    int form = n == 2 ? 0 : n == 3 ? word_index(w[1], FORM_WORDS, 3) : -1;
    if (n == 1) return x == X_TURN ? -1 : 3 * x + rep;   // "turn" never stands alone
    int d = word_index(w[n - 1], DIR_WORDS, 2);
    if (form < 0 || d < 0) return -1;
    return 3 * (N_VERBS + 2 * N_X * form + 2 * x + d) + rep;
}

int scan_parse(const char *words) {
    char text[256];
    if (!words || strlen(words) >= sizeof text) return -1;
    strcpy(text, words);
    char *w[16];   // the words, cut out of text in place
    int n = 0;
    for (char *p = text; *p;) {
        while (*p == ' ') *p++ = '\0';
        if (!*p) break;
        if (n == 16) return -1;
        w[n++] = p;
        while (*p && *p != ' ') p++;
    }
    int at = -1, conj = 0;   // where "and" / "after" stands
    for (int k = 0; k < n; k++)
        if (strcmp(w[k], "and") == 0 || strcmp(w[k], "after") == 0) {
            if (at >= 0) return -1;
            at = k;
            conj = w[k][1] == 'n' ? SCAN_AND : SCAN_AFTER;
        }
    if (at < 0) return parse_phrase(w, n);
    int s1 = parse_phrase(w, at), s2 = parse_phrase(w + at + 1, n - at - 1);
    if (s1 < 0 || s2 < 0) return -1;
    return N_S + (conj == SCAN_AFTER ? N_PAIRS : 0) + N_S * s1 + s2;
}
