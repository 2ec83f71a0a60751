// dataset/tasks.c: the synthetic length-generalisation tasks of dataset/tasks.h: one generator per
// task, the train/validation/test classes by content hash, the numbered pools and evaluation sets,
// the test lengths and depths, and packed training batches.
//
// Everything is drawn from the caller's Rng with integer arithmetic (rng_u64 % range), so a given
// Rng state gives the same instances on every machine. The only floating point is the retrieval
// key's offset round(depth * F), one IEEE multiply and add, the same everywhere.

#include "dataset/tasks.h"

#include <stdlib.h>
#include <string.h>

#include "dataset/data.h"

enum {
    T_COPY, T_COPY2X, T_REP, T_REP2X, T_CHG, T_REV, T_REV2X, T_ADD, T_SORT, T_SUM, T_PAR, T_FIND,
    T_COUNT
};

enum {
    MAX_INSTANCE_TOKENS = 100000,  // longest instance any length may produce (bounds --test-max)
    INSTANCE_TRIES = 1000,         // draws per task_instance call before a split counts as empty
    LENGTH_TRIES = 1000,           // lengths task_fill_batch draws before giving up
    KEY_TOKENS = 9,                // a retrieval key "#L:DDDDD "
    KEY_DIGITS = 5,
    MAX_KEYS = 26,                 // one distinct label letter per key
    MIN_FILLER = 8,                // filler tokens a haystack holds at least (and >= one per key)
    SET_DRAWS_PER_INSTANCE = 20    // task_eval_set without a pool: draws per instance asked, at most
};

// The tasks. The help line ends with an example instance (without its final '\n'); the tests
// check that every example is a correct instance of its task.
static const TaskInfo TASKS[T_COUNT] = {
    {"copy", "copy:", 1, 20, 40, "n random symbols, copied, e.g. copy:kqzd=kqzd"},
    {"copy-2x", "cp2x:", 1, 20, 40, "n random symbols, copied twice, e.g. cp2x:kqz=kqzkqz"},
    {"copy-repeat", "rep:", 1, 20, 40, "one symbol n times, copied (counting), e.g. rep:gggg=gggg"},
    {"copy-repeat-2x", "rep2x:", 1, 20, 40, "one symbol n times, written 2n times, e.g. rep2x:ggg=gggggg"},
    {"copy-change", "chg:", 1, 20, 40, "one symbol n times, the next symbol (last -> first) n times, e.g. chg:ggg=hhh"},
    {"reverse", "rev:", 1, 20, 40, "n random symbols, reversed, e.g. rev:kqzd=dzqk"},
    {"reverse-2x", "rev2x:", 1, 20, 40, "n random symbols, reversed then copied, e.g. rev2x:kqz=zqkkqz"},
    {"addition", "add:", 1, 8, 16, "two numbers, the longer of n digits, and their sum, e.g. add:57+968=1025"},
    {"sort", "sort:", 1, 8, 16, "n random symbols, sorted, e.g. sort:kqzdk=dkkqz"},
    {"sum", "sum:", 1, 20, 40, "n digits 1-9, their sum mod 10, e.g. sum:1234=0"},
    {"parity", "par:", 1, 20, 40, "n bits, e(ven) or o(dd) number of 1s, e.g. par:1101=o"},
    // 64, not 32: a haystack must hold its 4 keys of 9 tokens (3 distractors) and some filler, so
    // the shortest is 44; 64-128 also makes the test list 64, 128, 256, 512.
    {"retrieval", "find:", 64, 128, 512,
     "n-token haystack of corpus text with keys #L:DDDDD, give the asked key's digits, "
     "e.g. find:the cat #q:40213 sat on #b:77310 the mat?q=40213"},
};

const TaskInfo *task_info(int id) { return id >= 0 && id < T_COUNT ? &TASKS[id] : NULL; }

int task_find(const char *name) {
    for (int i = 0; name && i < T_COUNT; i++)
        if (strcmp(name, TASKS[i].name) == 0) return i;
    return -1;
}

void task_help(FILE *f) {
    fprintf(f, "tasks (--task NAME): each instance is PROMPT=TARGET and a newline; n is the task's length\n");
    fprintf(f, "  %-15s %-7s %-8s %s\n", "name", "train n", "test max", "what (example)");
    for (int i = 0; i < T_COUNT; i++) {
        char train[32];
        snprintf(train, sizeof train, "%d-%d", TASKS[i].train_min, TASKS[i].train_max);
        fprintf(f, "  %-15s %-7s %-8d %s\n", TASKS[i].name, train, TASKS[i].test_max, TASKS[i].help);
    }
    fprintf(f, "  symbols: an alphabet of --alphabet N symbols (default %d): a-z, then tokens <26>, <27>, ...\n"
               "  (ids 256, 257, ...) beyond the bytes; the model's vocabulary is 256 + N - 26\n", TASK_DEFAULT_ALPHABET);
    fprintf(f, "  retrieval: n = haystack tokens, --distractors decoy keys (default 3), tested at\n"
               "  n = train-min, 2 x train-min, ... <= test-max and at evenly spaced key depths\n");
}

void task_defaults(TaskConfig *c, int task) {
    CHECK(task >= 0 && task < T_COUNT, "task_defaults: unknown task id %d (there are %d tasks)", task, T_COUNT);
    memset(c, 0, sizeof *c);
    c->task = task;
    c->train_min = TASKS[task].train_min;
    c->train_max = TASKS[task].train_max;
    c->test_max = TASKS[task].test_max;
    c->distractors = 3;
    c->n_depths = 5;
    c->alphabet = task_has_symbols(task) ? TASK_DEFAULT_ALPHABET : 0;
}

int task_has_symbols(int task) {
    switch (task) {
    case T_COPY: case T_COPY2X: case T_REP: case T_REP2X: case T_CHG: case T_REV: case T_REV2X: case T_SORT: return 1;
    default: return 0;
    }
}

int task_vocab(const TaskConfig *c) { return 256 + (c->alphabet > 26 ? c->alphabet - 26 : 0); }

// Symbol k of the alphabet as a token: a-z, then the ids past the bytes.
static int symbol_token(int k) { return k < 26 ? 'a' + k : 256 + (k - 26); }

int task_token_text(int tok, char *buf, size_t cap) {
    if (tok >= 256) return snprintf(buf, cap, "<%d>", tok - 256 + 26);
    if (tok == '\n') return snprintf(buf, cap, "\\n");
    if (tok >= 32 && tok < 127) return snprintf(buf, cap, "%c", tok);
    return snprintf(buf, cap, "\\x%02X", tok & 0xFF);
}

void task_print_tokens(FILE *f, const int *tokens, int n) {
    char t[32];
    for (int i = 0; i < n; i++) {
        task_token_text(tokens[i], t, sizeof t);
        fputs(t, f);
    }
}

// Keys in a retrieval haystack (the asked one and the distractors).
static int n_keys(const TaskConfig *c) { return 1 + c->distractors; }

// Filler tokens a retrieval haystack of K keys needs at least.
static int min_filler(int keys) { return keys > MIN_FILLER ? keys : MIN_FILLER; }

// The shortest length n the task can build.
static int min_length(const TaskConfig *c) {
    if (c->task != T_FIND) return 1;
    return KEY_TOKENS * n_keys(c) + min_filler(n_keys(c));
}

// Tokens of the tag, the body before '=', and the longest target (end marker included).
int task_max_tokens(const TaskConfig *c, int n) {
    CHECK(c && c->task >= 0 && c->task < T_COUNT, "task_max_tokens: unknown task id %d", c ? c->task : -1);
    CHECK(n >= 0 && n <= MAX_INSTANCE_TOKENS, "task_max_tokens: length %d outside [0, %d]", n,
          MAX_INSTANCE_TOKENS);
    int tag = (int)strlen(TASKS[c->task].tag), body = n, target = n;  // '=' and '\n' added below
    switch (c->task) {
    case T_COPY2X: case T_REP2X: case T_REV2X: target = 2 * n; break;
    case T_ADD: body = 2 * n + 1; target = n + 1; break;     // A '+' B = sum (one carry digit)
    case T_SUM: case T_PAR: target = 1; break;
    case T_FIND: body = n + 2; target = KEY_DIGITS; break;  // haystack "?L" = DDDDD
    default: break;
    }
    return tag + body + 1 + target + 1;
}

int task_check(const TaskConfig *c, char *msg, size_t cap) {
    if (!c || c->task < 0 || c->task >= T_COUNT) {
        snprintf(msg, cap, "unknown task id %d; --task takes one of the names in --help", c ? c->task : -1);
        return 0;
    }
    const char *name = TASKS[c->task].name;
    if (c->train_min < 1) {
        snprintf(msg, cap, "--train-min %d must be >= 1", c->train_min);
        return 0;
    }
    if (c->train_max < c->train_min) {
        snprintf(msg, cap, "--train-max %d must be >= --train-min %d", c->train_max, c->train_min);
        return 0;
    }
    if (c->test_max < c->train_max) {
        snprintf(msg, cap, "--test-max %d must be >= --train-max %d", c->test_max, c->train_max);
        return 0;
    }
    if (c->test_max > MAX_INSTANCE_TOKENS) {  // before task_max_tokens, which would overflow
        snprintf(msg, cap, "--test-max %d must be <= %d", c->test_max, MAX_INSTANCE_TOKENS);
        return 0;
    }
    if (task_has_symbols(c->task) && (c->alphabet < 2 || c->alphabet > TASK_MAX_ALPHABET)) {
        snprintf(msg, cap, "--alphabet %d must be in [2, %d]", c->alphabet, TASK_MAX_ALPHABET);
        return 0;
    }
    if (!task_has_symbols(c->task) && c->alphabet) {
        snprintf(msg, cap, "--alphabet applies to the symbol tasks (copy, copy-2x, copy-repeat, copy-repeat-2x, "
                 "copy-change, reverse, reverse-2x, sort), not %s", name);
        return 0;
    }
    if (c->task == T_FIND) {
        if (c->distractors < 0 || c->distractors > MAX_KEYS - 1) {
            snprintf(msg, cap, "--distractors %d must be in [0, %d] (every key needs its own label letter)",
                     c->distractors, MAX_KEYS - 1);
            return 0;
        }
        if (c->n_depths < 1 || c->n_depths > TASK_MAX_DEPTHS) {
            snprintf(msg, cap, "--depths %d must be in [1, %d]", c->n_depths, TASK_MAX_DEPTHS);
            return 0;
        }
        int need = min_length(c);
        if (c->train_min < need) {
            snprintf(msg, cap,
                     "--train-min %d is too small for retrieval with --distractors %d: a haystack holds %d keys "
                     "of %d tokens and at least %d filler tokens, so --train-min must be >= %d",
                     c->train_min, c->distractors, n_keys(c), KEY_TOKENS, min_filler(n_keys(c)), need);
            return 0;
        }
    }
    int tok = task_max_tokens(c, c->test_max);
    if (tok > MAX_INSTANCE_TOKENS) {
        snprintf(msg, cap, "--test-max %d gives %s instances of up to %d tokens, more than the %d allowed; lower --test-max",
                 c->test_max, name, tok, MAX_INSTANCE_TOKENS);
        return 0;
    }
    return 1;
}

// ---------------------------------------------------------------------------------------------
// generators

// Appends tokens to out; the caller has checked that the instance fits.
typedef struct {
    int *p;   // (cap,) tokens written so far
    int n;
} Out;

static void put(Out *o, int tok) { o->p[o->n++] = tok; }
static void put_str(Out *o, const char *s) {
    while (*s) put(o, (unsigned char)*s++);
}
// Writes '=' and records the prompt length (tokens up to and including '=').
static void put_eq(Out *o, int *prompt_len) {
    put(o, '=');
    *prompt_len = o->n;
}
// Uniform in [0, k), k >= 1.
static int draw(Rng *r, int k) { return (int)(rng_u64(r) % (uint64_t)k); }

// The embedded corpus with '\n', '=', '?', '#' and every non-printable byte made a space, so the
// filler never contains the instance's separators or a key marker. Built on first use and kept
// for the life of the process (the corpus is deterministic); `omp critical` makes the first use
// safe from parallel evaluation threads.
static const char *filler_text(size_t *len) {
    static char *text = NULL;
    static size_t text_len = 0;
    #pragma omp critical(tasks_filler_text)
    {
        if (!text) {
            size_t n = 0;
            char *t = data_default_corpus_text(&n);
            CHECK(n > 0, "the embedded corpus is empty; retrieval needs it for its filler");
            for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)t[i];
                if (ch == '\n' || ch == '=' || ch == '?' || ch == '#' || ch < 32 || ch > 126) t[i] = ' ';
            }
            text_len = n;
            text = t;
        }
    }
    *len = text_len;
    return text;
}

static int cmp_int(const void *x, const void *y) {
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

// The body o->p[b0 .. b0+n-1] (n symbols) is written: '=' and the target built from it.
static void finish_symbols(const TaskConfig *c, int n, Out *o, int b0, int *prompt_len) {
    const int *s = o->p + b0;  // (n,) the symbols
    put_eq(o, prompt_len);
    switch (c->task) {
    case T_COPY: for (int i = 0; i < n; i++) put(o, s[i]); break;
    case T_COPY2X: for (int k = 0; k < 2; k++) for (int i = 0; i < n; i++) put(o, s[i]); break;
    case T_REV: for (int i = n - 1; i >= 0; i--) put(o, s[i]); break;
    case T_REV2X:
        for (int i = n - 1; i >= 0; i--) put(o, s[i]);
        for (int i = 0; i < n; i++) put(o, s[i]);
        break;
    case T_SORT: {  // token order is symbol order
        int t0 = o->n;
        for (int i = 0; i < n; i++) put(o, s[i]);
        qsort(o->p + t0, (size_t)n, sizeof(int), cmp_int);
        break;
    }
    default: CHECK(0, "finish_symbols: task %d is not a symbol task", c->task);
    }
}

// n random symbols, then '=' and the target built from them.
static void gen_symbols(const TaskConfig *c, int n, Rng *r, Out *o, int *prompt_len) {
    int b0 = o->n;  // first body token
    for (int i = 0; i < n; i++) put(o, symbol_token(draw(r, c->alphabet)));
    finish_symbols(c, n, o, b0, prompt_len);
}

// Symbol x repeated n times; the target repeats x (or, for copy-change, the next symbol).
static void put_repeat(const TaskConfig *c, int n, int x, Out *o, int *prompt_len) {
    for (int i = 0; i < n; i++) put(o, symbol_token(x));
    put_eq(o, prompt_len);
    int y = c->task == T_CHG ? (x + 1) % c->alphabet : x;
    int m = c->task == T_REP2X ? 2 * n : n;
    for (int i = 0; i < m; i++) put(o, symbol_token(y));
}

// Appends a random number of `len` decimal digits, most significant first, no leading zero
// (a one-digit number may be 0).
static void put_number(Out *o, int len, Rng *r) {
    put(o, len == 1 ? '0' + draw(r, 10) : '1' + draw(r, 9));
    for (int i = 1; i < len; i++) put(o, '0' + draw(r, 10));
}

// After "A+B" (A's la digits at a0, B's lb at b0, the longer of n digits): '=' and the sum,
// computed digit by digit from the written digits (no integer type limits n), written least
// significant first and then reversed in place.
static void finish_add(int n, Out *o, int a0, int la, int b0, int lb, int *prompt_len) {
    put_eq(o, prompt_len);
    int s0 = o->n, carry = 0;
    for (int i = 0; i < n; i++) {  // digit i from the right
        int da = i < la ? o->p[a0 + la - 1 - i] - '0' : 0;
        int db = i < lb ? o->p[b0 + lb - 1 - i] - '0' : 0;
        int d = da + db + carry;
        put(o, '0' + d % 10);
        carry = d / 10;
    }
    if (carry) put(o, '1');
    while (o->n - s0 > 1 && o->p[o->n - 1] == '0') o->n--;  // "0+0=0": drop leading zeros of the sum
    for (int i = s0, j = o->n - 1; i < j; i++, j--) {
        int t = o->p[i]; o->p[i] = o->p[j]; o->p[j] = t;
    }
}

// A + B = S. One operand (chosen at random) has exactly n digits, the other 1..n.
static void gen_add(int n, Rng *r, Out *o, int *prompt_len) {
    int longer_first = draw(r, 2), other = 1 + draw(r, n);
    int la = longer_first ? n : other, lb = longer_first ? other : n;
    int a0 = o->n;
    put_number(o, la, r);
    put(o, '+');
    int b0 = o->n;
    put_number(o, lb, r);
    finish_add(n, o, a0, la, b0, lb, prompt_len);
}

// The body of n digits (sum: 1..9; parity: 0/1) is written: '=' and the sum mod 10, or 'e'/'o'
// for an even/odd count of 1s.
static void finish_sum_parity(const TaskConfig *c, int n, Out *o, int b0, int *prompt_len) {
    int acc = 0;
    for (int i = 0; i < n; i++) acc += o->p[b0 + i] - '0';
    put_eq(o, prompt_len);
    put(o, c->task == T_SUM ? '0' + acc % 10 : (acc % 2 ? 'o' : 'e'));
}

static void gen_sum_parity(const TaskConfig *c, int n, Rng *r, Out *o, int *prompt_len) {
    int b0 = o->n;
    for (int i = 0; i < n; i++) put(o, '0' + (c->task == T_SUM ? 1 + draw(r, 9) : draw(r, 2)));
    finish_sum_parity(c, n, o, b0, prompt_len);
}

// Retrieval. The haystack is F = n - 9K filler tokens (a slice of the cleaned corpus from a random
// offset, wrapping at its end) with K = 1 + distractors keys "#L:DDDDD " inserted at K distinct
// insertion points 0..F (point p = before filler token p). Key 0 is the asked one; its point is
// round(depth * F) (depth < 0: uniform). Then "?L=" and its digits.
static void gen_find(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    int K = n_keys(c), F = n - KEY_TOKENS * K;
    // labels: a partial Fisher-Yates shuffle of the alphabet; label[0] is asked
    char label[26];
    for (int i = 0; i < 26; i++) label[i] = (char)('a' + i);
    for (int k = 0; k < K; k++) {
        int j = k + draw(r, 26 - k);
        char t = label[k]; label[k] = label[j]; label[j] = t;
    }
    // insertion points, distinct: point[0] at the depth, the others uniform over the free points
    int point[MAX_KEYS], used[MAX_KEYS];  // used: the points taken so far, ascending
    point[0] = depth < 0 ? draw(r, F + 1) : (int)(depth * F + 0.5);
    used[0] = point[0];
    for (int k = 1; k < K; k++) {
        int x = draw(r, F + 1 - k);  // the x-th free point: step over the taken ones at or below it
        for (int u = 0; u < k && used[u] <= x; u++) x++;
        point[k] = x;
        int u = k;  // insert x into the sorted list
        while (u > 0 && used[u - 1] > x) { used[u] = used[u - 1]; u--; }
        used[u] = x;
    }
    char digits[MAX_KEYS][KEY_DIGITS];
    for (int k = 0; k < K; k++)
        for (int d = 0; d < KEY_DIGITS; d++) digits[k][d] = (char)('0' + draw(r, 10));
    size_t text_len = 0;
    const char *text = filler_text(&text_len);
    size_t start = (size_t)(rng_u64(r) % text_len);
    // write: at each insertion point the key there (if any), then the filler token
    for (int p = 0; p <= F; p++) {
        for (int k = 0; k < K; k++) {
            if (point[k] != p) continue;
            put(o, '#'); put(o, label[k]); put(o, ':');
            for (int d = 0; d < KEY_DIGITS; d++) put(o, digits[k][d]);
            put(o, ' ');
        }
        if (p < F) put(o, (unsigned char)text[(start + (size_t)p) % text_len]);
    }
    put(o, '?'); put(o, label[0]);
    put_eq(o, prompt_len);
    for (int d = 0; d < KEY_DIGITS; d++) put(o, digits[0][d]);
}

// One instance of length n into out (room for task_max_tokens(c, n)); returns its length.
static int generate(const TaskConfig *c, int n, double depth, Rng *r, int *out, int *prompt_len) {
    Out o = {out, 0};
    put_str(&o, TASKS[c->task].tag);
    switch (c->task) {
    case T_COPY: case T_COPY2X: case T_REV: case T_REV2X: case T_SORT: gen_symbols(c, n, r, &o, prompt_len); break;
    case T_REP: case T_REP2X: case T_CHG: put_repeat(c, n, draw(r, c->alphabet), &o, prompt_len); break;
    case T_ADD: gen_add(n, r, &o, prompt_len); break;
    case T_SUM: case T_PAR: gen_sum_parity(c, n, r, &o, prompt_len); break;
    case T_FIND: gen_find(c, n, depth, r, &o, prompt_len); break;
    default: CHECK(0, "generate: unknown task id %d", c->task);
    }
    put(&o, '\n');
    return o.n;
}

// The content hash of an instance: FNV-1a 64 of its tokens (a byte token is its byte; a symbol
// beyond the bytes is xored in whole), finalised by MurmurHash3's fmix64. It depends on the
// content only, never on the seed. Without the finaliser the low bits of FNV-1a see only the low
// bits of each token (the multiply carries upwards only), and e.g. every reverse instance would be
// a training one.
static uint64_t content_hash(const int *tok, int len) {
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < len; i++) { h ^= (uint64_t)tok[i]; h *= 1099511628211ull; }
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

// The class of an instance: hash 0 mod TASK_SPLIT_MOD is test, 1 validation, else training.
static int split_of(const int *tok, int len) {
    uint64_t r = content_hash(tok, len) % TASK_SPLIT_MOD;
    return r == 0 ? TASK_TEST : r == 1 ? TASK_VAL : TASK_TRAIN;
}

int task_instance(const TaskConfig *c, int n, double depth, int split, Rng *rng, int *out, int cap, int *prompt_len) {
    char msg[256];
    CHECK(task_check(c, msg, sizeof msg), "%s", msg);
    CHECK(split == TASK_TRAIN || split == TASK_TEST || split == TASK_VAL, "task_instance: split %d is not TASK_TRAIN, "
          "TASK_TEST or TASK_VAL", split);
    const char *name = TASKS[c->task].name;
    CHECK(n >= min_length(c) && n <= MAX_INSTANCE_TOKENS, "task %s: length %d outside [%d, %d]", name, n,
          min_length(c), MAX_INSTANCE_TOKENS);
    CHECK(depth <= 1.0, "task %s: depth %g must be in [0, 1] (or < 0 for a random depth)", name,
          depth);
    int need = task_max_tokens(c, n);
    CHECK(need <= MAX_INSTANCE_TOKENS, "task %s: a length-%d instance takes up to %d tokens, more than %d", name, n,
          need, MAX_INSTANCE_TOKENS);
    CHECK(cap >= need, "task %s: an output of %d tokens cannot hold a length-%d instance (up to %d; see task_max_tokens)",
          name, cap, n, need);
    for (int t = 0; t < INSTANCE_TRIES; t++) {
        int p = 0, len = generate(c, n, depth, rng, out, &p);
        if (split_of(out, len) == split) {
            *prompt_len = p;
            return len;
        }
    }
    *prompt_len = 0;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// numbered pools and evaluation sets

// base^n when at most TASK_POOL_MAX, else -1.
static long long small_power(long long base, int n) {
    long long p = 1;
    for (int i = 0; i < n; i++) {
        p *= base;
        if (p > TASK_POOL_MAX) return -1;
    }
    return p;
}

long long task_pool_size(const TaskConfig *c, int n) {
    CHECK(n >= 1, "task_pool_size: length %d must be >= 1", n);
    switch (c->task) {
    case T_COPY: case T_COPY2X: case T_REV: case T_REV2X: case T_SORT: return small_power(c->alphabet, n);
    case T_REP: case T_REP2X: case T_CHG: return c->alphabet;
    case T_SUM: return small_power(9, n);
    case T_PAR: return small_power(2, n);
    case T_ADD: {  // pairs in [0, 10^n)^2 less those in [0, 10^(n-1))^2 (none for n = 1)
        long long hi = small_power(10, n), lo = n > 1 ? small_power(10, n - 1) : 0;
        if (hi < 0 || hi > TASK_POOL_MAX / hi) return -1;
        long long p = hi * hi - lo * lo;
        return p <= TASK_POOL_MAX ? p : -1;
    }
    default: return -1;
    }
}

// Appends v in decimal, no leading zero; returns its digits.
static int put_decimal(Out *o, long long v) {
    char d[24];
    int k = snprintf(d, sizeof d, "%lld", v);
    put_str(o, d);
    return k;
}

// Addition's pair number i: the pairs (A, B) in [0, M)^2 (M = 10^n) without both below m = 10^(n-1)
// (m = 0 for n = 1), in row-major order: rows A < m hold the B in [m, M), the other rows every B.
static void add_pair(int n, long long i, long long *a, long long *b) {
    long long M = small_power(10, n), m = n > 1 ? small_power(10, n - 1) : 0;
    if (i < m * (M - m)) { *a = i / (M - m); *b = m + i % (M - m); }
    else { i -= m * (M - m); *a = m + i / M; *b = i % M; }
}

int task_pool_instance(const TaskConfig *c, int n, long long i, int *out, int cap, int *prompt_len) {
    const char *name = TASKS[c->task].name;
    long long pool = task_pool_size(c, n);
    CHECK(pool >= 0, "task %s: length %d has too many instances to number (more than %d)", name, n, TASK_POOL_MAX);
    CHECK(i >= 0 && i < pool, "task %s: instance %lld outside [0, %lld)", name, i, pool);
    CHECK(cap >= task_max_tokens(c, n), "task %s: an output of %d tokens cannot hold a length-%d instance (up to %d)",
          name, cap, n, task_max_tokens(c, n));
    Out o = {out, 0};
    put_str(&o, TASKS[c->task].tag);
    int b0 = o.n;
    switch (c->task) {
    case T_COPY: case T_COPY2X: case T_REV: case T_REV2X: case T_SORT:  // n base-N digits, first the highest
        for (int k = 0; k < n; k++) put(&o, 0);
        for (int k = n - 1; k >= 0; k--, i /= c->alphabet) out[b0 + k] = symbol_token((int)(i % c->alphabet));
        finish_symbols(c, n, &o, b0, prompt_len);
        break;
    case T_REP: case T_REP2X: case T_CHG: put_repeat(c, n, (int)i, &o, prompt_len); break;
    case T_SUM: case T_PAR: {
        int base = c->task == T_SUM ? 9 : 2, lo = c->task == T_SUM ? 1 : 0;
        for (int k = 0; k < n; k++) put(&o, 0);
        for (int k = n - 1; k >= 0; k--, i /= base) out[b0 + k] = '0' + lo + (int)(i % base);
        finish_sum_parity(c, n, &o, b0, prompt_len);
        break;
    }
    case T_ADD: {
        long long a, b;
        add_pair(n, i, &a, &b);
        int la = put_decimal(&o, a);
        put(&o, '+');
        int b1 = o.n, lb = put_decimal(&o, b);
        finish_add(n, &o, b0, la, b1, lb, prompt_len);
        break;
    }
    default: CHECK(0, "task %s has no numbered pool", name);
    }
    put(&o, '\n');
    return o.n;
}

void task_set_free(TaskSet *s) {
    free(s->tokens); free(s->len); free(s->prompt_len);
    memset(s, 0, sizeof *s);
}

// Room for `count` instances of `stride` tokens.
static void set_alloc(TaskSet *s, int count, int stride) {
    s->stride = stride;
    s->tokens = xmalloc(sizeof(int) * (size_t)(count > 0 ? count : 1) * (size_t)stride);
    s->len = xmalloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
    s->prompt_len = xmalloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
}

static int cmp_ll(const void *x, const void *y) {
    long long a = *(const long long *)x, b = *(const long long *)y;
    return (a > b) - (a < b);
}

static void set_by_sampling(const TaskConfig *c, int n, double depth, int split, int count, Rng *rng, TaskSet *s);

// 1 when the generator draws every instance of a length's pool with the same probability, so that
// a uniform choice from the enumerated pool is a draw from the training distribution. Addition's
// is not: the shorter operand's digit count is uniform in 1..n, where the pool is dominated by
// pairs of two n-digit numbers (81% of it at n = 3, a third of the generator's draws).
static int generator_uniform(const TaskConfig *c) { return c->task != T_ADD; }

// Enumerates the pool: the numbers of the class's instances, then all of them or `count` chosen by
// a partial Fisher-Yates shuffle (kept in increasing order). Where the generator is not uniform
// over the pool, `count` of more are drawn as set_by_sampling draws them (the generator's
// distribution, repeats rejected); the pool's size is still reported.
static void set_from_pool(const TaskConfig *c, int n, long long pool, int split, int count, Rng *rng, TaskSet *s) {
    int stride = task_max_tokens(c, n), p;
    int *tmp = xmalloc(sizeof(int) * (size_t)stride);
    long long *idx = xmalloc(sizeof(long long) * (size_t)pool), k = 0;   // (pool,) at most
    for (long long i = 0; i < pool; i++) {
        int len = task_pool_instance(c, n, i, tmp, stride, &p);
        if (split_of(tmp, len) == split) idx[k++] = i;
    }
    if (k > count && !generator_uniform(c)) {
        free(idx); free(tmp);
        set_by_sampling(c, n, -1.0, split, count, rng, s);
        s->pool = k;
        return;
    }
    s->pool = k;
    if (k > count) {
        for (long long j = 0; j < count; j++) {
            long long r = j + (long long)(rng_u64(rng) % (uint64_t)(k - j)), t = idx[j];
            idx[j] = idx[r]; idx[r] = t;
        }
        k = count;
        qsort(idx, (size_t)k, sizeof *idx, cmp_ll);
    }
    set_alloc(s, (int)k, stride);
    for (long long j = 0; j < k; j++)
        s->len[j] = task_pool_instance(c, n, idx[j], s->tokens + (size_t)j * stride, stride, &s->prompt_len[j]);
    s->count = (int)k;
    free(idx); free(tmp);
}

// Draws instances of the class, keeping each distinct one (a table of content hashes, confirmed
// by comparing tokens), until `count` or count x SET_DRAWS_PER_INSTANCE draws.
static void set_by_sampling(const TaskConfig *c, int n, double depth, int split, int count, Rng *rng, TaskSet *s) {
    int stride = task_max_tokens(c, n);
    set_alloc(s, count, stride);
    s->pool = -1;
    size_t size = 16;
    while (size < 2 * (size_t)count) size *= 2;
    int *table = xmalloc(sizeof(int) * size);                 // (size,) slot of an instance, -1 empty
    for (size_t i = 0; i < size; i++) table[i] = -1;
    long long draws = (long long)count * SET_DRAWS_PER_INSTANCE;
    for (long long t = 0; t < draws && s->count < count; t++) {
        int *slot = s->tokens + (size_t)s->count * stride, p;
        int len = task_instance(c, n, depth, split, rng, slot, stride, &p);
        if (len == 0) break;                                  // the class has no instance of this length
        size_t h = (size_t)content_hash(slot, len) & (size - 1);
        int seen = 0;
        for (; table[h] >= 0; h = (h + 1) & (size - 1)) {
            int j = table[h];
            if (s->len[j] == len && !memcmp(s->tokens + (size_t)j * stride, slot, sizeof(int) * (size_t)len)) { seen = 1; break; }
        }
        if (seen) continue;
        table[h] = s->count;
        s->len[s->count] = len;
        s->prompt_len[s->count++] = p;
    }
    free(table);
}

int task_eval_set(const TaskConfig *c, int n, double depth, int split, int count, uint64_t seed, TaskSet *s) {
    char msg[256];
    CHECK(task_check(c, msg, sizeof msg), "%s", msg);
    CHECK(count >= 0, "task_eval_set: count %d must be >= 0", count);
    CHECK(split == TASK_TRAIN || split == TASK_TEST || split == TASK_VAL, "task_eval_set: unknown class %d", split);
    memset(s, 0, sizeof *s);
    Rng rng;
    rng_seed(&rng, seed);
    long long pool = c->task == T_FIND ? -1 : task_pool_size(c, n);
    if (pool >= 0) set_from_pool(c, n, pool, split, count, &rng, s);
    else set_by_sampling(c, n, depth, split, count, &rng, s);
    return s->count;
}

int task_test_lengths(const TaskConfig *c, int *lengths, int cap) {
    int k = 0;
    if (c->task == T_FIND) {
        for (long n = c->train_min; n >= 1 && n <= c->test_max && k < cap; n *= 2) lengths[k++] = (int)n;
    } else {
        for (int n = 1; n <= c->test_max && k < cap; n++) lengths[k++] = n;
    }
    return k;
}

int task_test_depths(const TaskConfig *c, double *depths, int cap) {
    if (cap < 1) return 0;
    if (c->task != T_FIND) {
        depths[0] = -1.0;
        return 1;
    }
    if (c->n_depths <= 1) {  // one depth: the middle
        depths[0] = 0.5;
        return 1;
    }
    int k = 0;
    for (int i = 0; i < c->n_depths && k < cap; i++) depths[k++] = (double)i / (c->n_depths - 1);
    return k;
}

// ---------------------------------------------------------------------------------------------
// training batches

// A training instance at a uniform length in [train_min, train_max]; a length with no training
// instance (all its draws hash to test or validation) is redrawn, a bounded number of times.
static int draw_training_instance(const TaskConfig *c, Rng *rng, int *inst, int cap, int *prompt_len) {
    for (int k = 0; k < LENGTH_TRIES; k++) {
        int n = c->train_min + draw(rng, c->train_max - c->train_min + 1);
        int len = task_instance(c, n, -1.0, TASK_TRAIN, rng, inst, cap, prompt_len);
        if (len > 0) return len;
    }
    CHECK(0, "task %s: found no training instance at lengths %d..%d in %d tries (every instance hashes to the "
          "test or validation class); widen --train-min/--train-max", TASKS[c->task].name, c->train_min, c->train_max, LENGTH_TRIES);
    return 0;
}

// Rows are filled left to right with whole instances. An instance that does not fit in what is
// left of a row is not dropped: the Rng is rewound to before its draw, so it is drawn again, the
// same, as the first instance of the next row (or of the next call). The stream of instances is
// therefore i.i.d. with uniform lengths, and none is skipped for being long.
void task_fill_batch(const TaskConfig *c, Rng *rng, Batch *b) {
    char msg[256];
    CHECK(task_check(c, msg, sizeof msg), "%s", msg);
    int need = task_max_tokens(c, c->train_max);
    CHECK(need <= b->T, "task %s: a training instance of length %d (--train-max) takes up to %d tokens, more than "
          "the %d of a batch row; raise --seq to at least %d or lower --train-max", TASKS[c->task].name,
          c->train_max, need, b->T, need);
    int *inst = xmalloc((size_t)need * sizeof(int));  // (need,) one instance
    for (int row = 0; row < b->B; row++) {
        size_t base = (size_t)row * b->T;
        int t = 0, doc = 0;
        for (;;) {
            Rng before = *rng;
            int p = 0, len = draw_training_instance(c, rng, inst, need, &p);
            if (t + len > b->T) {  // full: this instance opens the next row
                CHECK(t > 0, "task_fill_batch: an instance of %d tokens does not fit an empty row of %d", len, b->T);
                *rng = before;
                break;
            }
            for (int i = 0; i < len; i++) {
                size_t k = base + (size_t)(t + i);
                b->tokens[k] = inst[i];
                b->targets[k] = i + 1 < len ? inst[i + 1] : '\n';
                b->weights[k] = (i + 1 >= p && i + 1 < len) ? 1.0f : 0.0f;  // predicts a target token
                b->pos[k] = i;
                b->doc[k] = doc;
            }
            t += len;
            doc++;
        }
        for (; t < b->T; t++) {  // padding
            size_t k = base + (size_t)t;
            b->tokens[k] = '\n'; b->targets[k] = '\n';
            b->weights[k] = 0.0f; b->pos[k] = 0; b->doc[k] = -1;
        }
    }
    free(inst);
}

void task_fill_slice(const TaskConfig *c, Rng *rng, Batch *b, Batch *global, int rank, int nranks) {
    if (nranks == 1) { task_fill_batch(c, rng, b); return; }
    CHECK(global->B == nranks * b->B && global->T == b->T && rank >= 0 && rank < nranks,
          "internal: task_fill_slice: a global batch of %d x %d for rank %d of %d with %d x %d rows", global->B, global->T,
          rank, nranks, b->B, b->T);
    task_fill_batch(c, rng, global);
    size_t at = (size_t)rank * b->B * b->T, n = (size_t)b->B * b->T;
    memcpy(b->tokens, global->tokens + at, n * sizeof(int));
    memcpy(b->targets, global->targets + at, n * sizeof(int));
    memcpy(b->weights, global->weights + at, n * sizeof(float));
    memcpy(b->pos, global->pos + at, n * sizeof(int));
    memcpy(b->doc, global->doc + at, n * sizeof(int));
}
