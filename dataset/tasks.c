// dataset/tasks.c: the synthetic length-generalisation tasks of dataset/tasks.h: one generator per
// task, the train/test split by content hash, the test lengths and depths, and packed training
// batches.
//
// Everything is drawn from the caller's Rng with integer arithmetic (rng_u64 % range), so a given
// Rng state gives the same instances on every machine. The only floating point is the retrieval
// key's offset round(depth * F), one IEEE multiply and add, the same everywhere.

#include "dataset/tasks.h"

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
    MIN_FILLER = 8                 // filler tokens a haystack holds at least (and >= one per key)
};

// The tasks. The help line ends with an example instance (without its final '\n'); the tests
// check that every example is a correct instance of its task.
static const TaskInfo TASKS[T_COUNT] = {
    {"copy", "copy:", 1, 20, 40, "n random letters, copied, e.g. copy:kqzd=kqzd"},
    {"copy-2x", "cp2x:", 1, 20, 40, "n random letters, copied twice, e.g. cp2x:kqz=kqzkqz"},
    {"copy-repeat", "rep:", 1, 20, 40, "one letter n times, copied (counting), e.g. rep:gggg=gggg"},
    {"copy-repeat-2x", "rep2x:", 1, 20, 40, "one letter n times, written 2n times, e.g. rep2x:ggg=gggggg"},
    {"copy-change", "chg:", 1, 20, 40, "one letter n times, the next letter (z -> a) n times, e.g. chg:ggg=hhh"},
    {"reverse", "rev:", 1, 20, 40, "n random letters, reversed, e.g. rev:kqzd=dzqk"},
    {"reverse-2x", "rev2x:", 1, 20, 40, "n random letters, reversed then copied, e.g. rev2x:kqz=zqkkqz"},
    {"addition", "add:", 1, 8, 16, "two numbers, the longer of n digits, and their sum, e.g. add:57+968=1025"},
    {"sort", "sort:", 1, 8, 16, "n random letters, sorted, e.g. sort:kqzdk=dkkqz"},
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
static int letter(Rng *r) { return 'a' + draw(r, 26); }

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

// n random letters, then '=' and the target built from them.
static void gen_symbols(const TaskConfig *c, int n, Rng *r, Out *o, int *prompt_len) {
    int b0 = o->n;  // first body token
    for (int i = 0; i < n; i++) put(o, letter(r));
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
    case T_SORT: {  // counting sort: byte order of letters
        int count[26] = {0};
        for (int i = 0; i < n; i++) count[s[i] - 'a']++;
        for (int l = 0; l < 26; l++) for (int k = 0; k < count[l]; k++) put(o, 'a' + l);
        break;
    }
    default: CHECK(0, "gen_symbols: task %d is not a symbol task", c->task);
    }
}

// One letter x repeated n times; the target repeats x (or, for copy-change, the next letter).
static void gen_repeat(const TaskConfig *c, int n, Rng *r, Out *o, int *prompt_len) {
    int x = letter(r);
    for (int i = 0; i < n; i++) put(o, x);
    put_eq(o, prompt_len);
    int y = c->task == T_CHG ? 'a' + (x - 'a' + 1) % 26 : x;
    int m = c->task == T_REP2X ? 2 * n : n;
    for (int i = 0; i < m; i++) put(o, y);
}

// Appends a random number of `len` decimal digits, most significant first, no leading zero
// (a one-digit number may be 0).
static void put_number(Out *o, int len, Rng *r) {
    put(o, len == 1 ? '0' + draw(r, 10) : '1' + draw(r, 9));
    for (int i = 1; i < len; i++) put(o, '0' + draw(r, 10));
}

// A + B = S. One operand (chosen at random) has exactly n digits, the other 1..n. The sum is
// computed digit by digit from the written digits (no integer type limits n), written least
// significant first and then reversed in place.
static void gen_add(int n, Rng *r, Out *o, int *prompt_len) {
    int longer_first = draw(r, 2), other = 1 + draw(r, n);
    int la = longer_first ? n : other, lb = longer_first ? other : n;
    int a0 = o->n;
    put_number(o, la, r);
    put(o, '+');
    int b0 = o->n;
    put_number(o, lb, r);
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

// sum: n digits 1..9 and their sum mod 10; parity: n bits and 'e'/'o' for an even/odd count of 1s.
static void gen_sum_parity(const TaskConfig *c, int n, Rng *r, Out *o, int *prompt_len) {
    int acc = 0;
    for (int i = 0; i < n; i++) {
        int d = c->task == T_SUM ? 1 + draw(r, 9) : draw(r, 2);
        put(o, '0' + d);
        acc += d;
    }
    put_eq(o, prompt_len);
    put(o, c->task == T_SUM ? '0' + acc % 10 : (acc % 2 ? 'o' : 'e'));
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
    case T_REP: case T_REP2X: case T_CHG: gen_repeat(c, n, r, &o, prompt_len); break;
    case T_ADD: gen_add(n, r, &o, prompt_len); break;
    case T_SUM: case T_PAR: gen_sum_parity(c, n, r, &o, prompt_len); break;
    case T_FIND: gen_find(c, n, depth, r, &o, prompt_len); break;
    default: CHECK(0, "generate: unknown task id %d", c->task);
    }
    put(&o, '\n');
    return o.n;
}

// The split of an instance: FNV-1a 64 of its bytes (prompt, target and end marker), finalised by
// MurmurHash3's fmix64; 0 mod TASK_TEST_MOD is test. It depends on the content only, never on the
// seed. Without the finaliser the low bits of FNV-1a see only the low bits of each byte (the
// multiply carries upwards only), and e.g. every reverse instance would be a training one.
static int split_of(const int *tok, int len) {
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < len; i++) { h ^= (uint64_t)(unsigned char)tok[i]; h *= 1099511628211ull; }
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h % TASK_TEST_MOD == 0 ? TASK_TEST : TASK_TRAIN;
}

int task_instance(const TaskConfig *c, int n, double depth, int split, Rng *rng, int *out, int cap, int *prompt_len) {
    char msg[256];
    CHECK(task_check(c, msg, sizeof msg), "%s", msg);
    CHECK(split == TASK_TRAIN || split == TASK_TEST, "task_instance: split %d is neither TASK_TRAIN nor TASK_TEST", split);
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
// instance (all its draws hash to test) is redrawn, a bounded number of times.
static int draw_training_instance(const TaskConfig *c, Rng *rng, int *inst, int cap, int *prompt_len) {
    for (int k = 0; k < LENGTH_TRIES; k++) {
        int n = c->train_min + draw(rng, c->train_max - c->train_min + 1);
        int len = task_instance(c, n, -1.0, TASK_TRAIN, rng, inst, cap, prompt_len);
        if (len > 0) return len;
    }
    CHECK(0, "task %s: found no training instance at lengths %d..%d in %d tries (every instance hashes to the "
          "test split); widen --train-min/--train-max", TASKS[c->task].name, c->train_min, c->train_max, LENGTH_TRIES);
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
