// dataset/tasks.c: the synthetic length-generalisation tasks of dataset/tasks.h: the task table
// (names, tags, default lengths and each task's operations), the configuration and its checks,
// the train/validation/test classes, task_instance and the test lengths and depths.
// dataset/tasks_impl.h says which file holds what; the generators are in tasks_gen.c and
// tasks_math.c, the pools, evaluation sets and batches in tasks_sets.c.
//
// Everything is drawn from the caller's Rng with integer arithmetic (rng_u64 % range), so a given
// Rng state gives the same instances on every machine. The only floating point is the retrieval
// key's offset round(depth * F), one IEEE multiply and add, the same everywhere.

#include "dataset/tasks.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/pcfg.h"
#include "dataset/tasks_impl.h"

enum {
    MAX_INSTANCE_TOKENS = 100000,  // longest instance any length may produce (bounds --test-max)
    INSTANCE_TRIES = 1000,         // draws per task_instance call before a split counts as empty
    MIN_FILLER = 8                 // filler tokens a haystack holds at least (and >= one per key)
};

// The tasks. The help line ends with an example instance (without its final '\n'); the tests
// check that every example is a correct instance of its task. Default lengths follow the NoPE
// paper's code (McGill-NLP/length-generalization; docs/reproduce-nope.md, The tasks): the
// copy/reverse family trains on 2..20 (its stored runs validate at 2..20) and tests to 40;
// addition 1..8 digits, tests to 16; the others train to 8 and test to 16, from the data
// builders' default shortest length (4; parity 3), which the stored runs do not confirm.
static const TaskInfo TASKS[T_COUNT] = {
    {"copy", "copy:", 2, 20, 40, "n random symbols, copied, e.g. copy:kqzd=kqzd"},
    {"copy-2x", "cp2x:", 2, 20, 40, "n random symbols, copied twice, e.g. cp2x:kqz=kqz|kqz"},
    {"copy-repeat", "rep:", 2, 20, 40, "one symbol n times, copied (counting), e.g. rep:gggg=gggg"},
    {"copy-repeat-2x", "rep2x:", 2, 20, 40, "one symbol n times, written 2n times, e.g. rep2x:ggg=gggggg"},
    {"copy-repeat-change", "repl:", 2, 20, 40, "replace X by Y (both in the prompt) in X n times, e.g. repl:g>q:ggg=qqq"},
    {"copy-successor", "chg:", 2, 20, 40, "one symbol n times, the next symbol (last -> first) n times, e.g. chg:ggg=hhh"},
    {"reverse", "rev:", 2, 20, 40, "n random symbols, reversed, e.g. rev:kqzd=dzqk"},
    {"reverse-2x", "rev2x:", 2, 20, 40, "n random symbols, reversed twice, e.g. rev2x:kqz=zqk|zqk"},
    {"reverse-copy", "rvcp:", 2, 20, 40, "n random symbols, reversed then copied, e.g. rvcp:kqz=zqk|kqz"},
    {"addition", "add:", 1, 8, 16, "two numbers (digit counts uniform), the longer of n digits, and their sum, e.g. add:57+968=1025"},
    {"polynomial", "poly:", 4, 8, 16, "at x, n terms c*x^d (c -3..3, d 0..3, x -2..2), the value mod 10, "
     "e.g. poly:+1:-2x2+-1x0=7"},
    {"sort", "sort:", 4, 8, 16, "n of 50 symbols (repeats allowed), sorted, e.g. sort:kqzdk=dkkqz"},
    {"sort-multi", "sortm:", 4, 8, 16, "n integers 10-9999, sorted, e.g. sortm:523,17,9001,17=17,17,523,9001"},
    {"sum", "sum:", 4, 8, 16, "n digits 1-9, their sum mod 10, e.g. sum:1234=0"},
    {"parity", "par:", 3, 8, 16, "n bits, e(ven) or o(dd) number of 1s, e.g. par:1101=o"},
    {"lego", "lego:", 4, 8, 16, "a chain of n variables, each -1/+1 or +/- the one before, one of its second "
     "half asked, e.g. lego:q:-1,t:-q,c:+t,f:-c,r:+f?f=-1"},
    // the NoPE paper's SCAN split: commands of up to 25 actions train, 26..48 test (dataset/scan.h)
    {"scan", "scan:", 1, 25, 48, "a SCAN command and its n actions (jump around right and walk twice), "
     "e.g. scan:ja>+w2=>J>J>J>JWW"},
    // PCFG SET's productivity split: 1..8 function words train, 9..35 test (dataset/pcfg.h)
    {"pcfg", "pcfg:", 1, 8, 35, "a PCFG SET expression of n function words and its value (append "
     "swap_first_last A1 B1 C1 , repeat D1 E1; symbol s is <26+s>), "
     "e.g. pcfg:Aw<26><46><66>,d<86><106>=<66><46><26><86><106><86><106>"},
    // 64, not 32: a haystack must hold its 4 keys of 9 tokens (3 distractors) and some filler, so
    // the shortest is 44; 64-128 also makes the test list 64, 128, 256, 512.
    {"retrieval", "find:", 64, 128, 512,
     "n-token haystack of corpus text with keys #L:DDDDD, give the asked key's digits, "
     "e.g. find:the cat #q:40213 sat on #b:77310 the mat?q=40213"},
};

// The operations of each task (dataset/tasks_impl.h), in the order of TASKS. SORT_ITEMS: the NoPE
// paper's sort draws from 50 items (scripts/dataset_builders/make_sort_dataset.py, unique_tokens[:50]),
// so that a training list repeats an item 27% of the time; the other symbol tasks take the default.
enum { SORT_ITEMS = 50 };
const TaskOps TASK_OPS[T_COUNT] = {
    // gen              body_max     pool_size     pool_instance  min, symbols, uniform, max_n, vocab, alphabet, length_weight
    {gen_symbols,        max_copy,    size_symbols, pool_symbols,  1, 1, 1, 0, 0, 0, NULL},  // copy
    {gen_symbols,        max_doubled, size_symbols, pool_symbols,  1, 1, 1, 0, 0, 0, NULL},  // copy-2x
    {task_gen_from_pool, max_repeat,  size_repeat,  pool_repeat,   1, 1, 1, 0, 0, 0, NULL},  // copy-repeat
    {task_gen_from_pool, max_repeat,  size_repeat,  pool_repeat,   1, 1, 1, 0, 0, 0, NULL},  // copy-repeat-2x
    {gen_replace,        max_replace, size_replace, pool_replace,  1, 1, 1, 0, 0, 0, NULL},  // copy-repeat-change
    {task_gen_from_pool, max_repeat,  size_repeat,  pool_repeat,   1, 1, 1, 0, 0, 0, NULL},  // copy-successor
    {gen_symbols,        max_copy,    size_symbols, pool_symbols,  1, 1, 1, 0, 0, 0, NULL},  // reverse
    {gen_symbols,        max_doubled, size_symbols, pool_symbols,  1, 1, 1, 0, 0, 0, NULL},  // reverse-2x
    {gen_symbols,        max_doubled, size_symbols, pool_symbols,  1, 1, 1, 0, 0, 0, NULL},  // reverse-copy
    {gen_add,            max_add,     size_add,     pool_add,      1, 0, 0, 0, 0, 0, weight_add},  // addition
    {gen_poly,           max_poly,    size_poly,    pool_poly,     1, 0, 1, 0, 0, 0, NULL},  // polynomial
    {gen_symbols,        max_copy,    size_symbols, pool_symbols,  1, 1, 1, 0, 0, SORT_ITEMS, NULL},  // sort
    {gen_sortm,          max_sortm,   size_sortm,   pool_sortm,    1, 0, 1, 0, 0, 0, NULL},  // sort-multi
    {gen_digits,         max_digits,  size_digits,  pool_digits,   1, 0, 1, 0, 0, 0, NULL},  // sum
    {gen_digits,         max_digits,  size_digits,  pool_digits,   1, 0, 1, 0, 0, 0, NULL},  // parity
    {gen_lego,           max_lego,    NULL,         NULL,          2, 0, 1, 26, 0, 0, NULL},  // lego: a query needs 2
    {task_gen_from_pool, max_scan,    size_scan,    pool_scan,     1, 0, 1, 48, 0, 0, weight_scan},  // scan: SCAN's training set
    {gen_pcfg,           max_pcfg,    NULL,         NULL,          1, 0, 1, PCFG_MAX_FUNCTIONS, 256 + PCFG_SYMBOLS, 0, NULL},  // pcfg
    {gen_find,           max_find,    NULL,         NULL,          1, 0, 1, 0, 0, 0, NULL},  // retrieval: task_min_length
};


const TaskInfo *task_info(int id) { return id >= 0 && id < T_COUNT ? &TASKS[id] : NULL; }

int task_find(const char *name) {
    for (int i = 0; name && i < T_COUNT; i++)
        if (strcmp(name, TASKS[i].name) == 0) return i;
    return -1;
}

void task_help(FILE *f) {
    fprintf(f, "tasks (--task NAME): each instance is PROMPT=TARGET and a newline; n is the task's length\n");
    fprintf(f, "  %-18s %-7s %-8s %s\n", "name", "train n", "test max", "what (example)");
    for (int i = 0; i < T_COUNT; i++) {
        char train[32];
        snprintf(train, sizeof train, "%d-%d", TASKS[i].train_min, TASKS[i].train_max);
        fprintf(f, "  %-18s %-7s %-8d %s\n", TASKS[i].name, train, TASKS[i].test_max, TASKS[i].help);
    }
    fprintf(f, "  '|' stands between the two halves of a doubled target (the paper's [NEXT]); past --train-max\n"
               "  every instance is a test instance\n");
    fprintf(f, "  symbols: an alphabet of --alphabet N symbols (default %d, sort 50): a-z, then tokens <26>, <27>, ...\n"
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
    c->alphabet = !task_has_symbols(task) ? 0 : TASK_OPS[task].alphabet ? TASK_OPS[task].alphabet : TASK_DEFAULT_ALPHABET;
}

int task_scaled_test_max(int task, int train_max) {
    CHECK(task >= 0 && task < T_COUNT, "task_scaled_test_max: unknown task id %d (there are %d tasks)", task, T_COUNT);
    const TaskInfo *t = &TASKS[task];
    long n = ((long)train_max * t->test_max + t->train_max / 2) / t->train_max;   // rounded to the nearest
    int cap = TASK_OPS[task].max_n;
    if (cap && n > cap) n = cap > train_max ? cap : train_max;
    return n > INT_MAX ? INT_MAX : (int)n;
}

int task_has_symbols(int task) { return task >= 0 && task < T_COUNT && TASK_OPS[task].symbols; }

int task_vocab(const TaskConfig *c) {
    if (!TASK_OPS[c->task].symbols && TASK_OPS[c->task].vocab) return TASK_OPS[c->task].vocab;
    return 256 + (c->alphabet > 26 ? c->alphabet - 26 : 0);
}

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

int task_min_length(const TaskConfig *c) {
    if (c->task != T_FIND) return TASK_OPS[c->task].min_n;
    return KEY_TOKENS * n_keys(c) + min_filler(n_keys(c));
}

// Tokens of the tag, the body before '=', '=', the longest answer and the end marker.
int task_max_tokens(const TaskConfig *c, int n) {
    CHECK(c && c->task >= 0 && c->task < T_COUNT, "task_max_tokens: unknown task id %d", c ? c->task : -1);
    CHECK(n >= 0 && n <= MAX_INSTANCE_TOKENS, "task_max_tokens: length %d outside [0, %d]", n,
          MAX_INSTANCE_TOKENS);
    return (int)strlen(TASKS[c->task].tag) + TASK_OPS[c->task].body_max(c, n) + 2;
}

// The names of the symbol tasks, for a message.
static void symbol_task_names(char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < T_COUNT && k < cap; i++)
        if (TASK_OPS[i].symbols) k += (size_t)snprintf(buf + k, cap - k, "%s%s", k ? ", " : "", TASKS[i].name);
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
        char names[512];
        symbol_task_names(names, sizeof names);
        snprintf(msg, cap, "--alphabet applies to the symbol tasks (%s), not %s", names, name);
        return 0;
    }
    if (c->task != T_FIND && c->train_min < task_min_length(c)) {
        snprintf(msg, cap, "--train-min %d is below the shortest %s instance (length %d); raise --train-min",
                 c->train_min, name, task_min_length(c));
        return 0;
    }
    if (TASK_OPS[c->task].max_n && c->test_max > TASK_OPS[c->task].max_n) {
        snprintf(msg, cap, "--test-max %d: %s builds lengths up to %d%s; lower --test-max", c->test_max, name,
                 TASK_OPS[c->task].max_n, c->task == T_LEGO ? " (its variables are the letters a..z)" :
                 c->task == T_SCAN ? " (SCAN's longest command has 48 actions)" : "");
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
        int need = task_min_length(c);
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
// classes and instances

// The content hash of an instance: FNV-1a 64 of its tokens (a byte token is its byte; a symbol
// beyond the bytes is xored in whole), finalised by MurmurHash3's fmix64. It depends on the
// content only, never on the seed. Without the finaliser the low bits of FNV-1a see only the low
// bits of each token (the multiply carries upwards only), and e.g. every reverse instance would be
// a training one.
uint64_t task_content_hash(const int *tok, int len) {
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < len; i++) { h ^= (uint64_t)tok[i]; h *= 1099511628211ull; }
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

// Past train_max there is no training or validation instance (no length there is ever trained),
// so every instance is a test one; at the other lengths hash 0 mod TASK_SPLIT_MOD is test, 1
// validation, else training.
int task_class_of(const TaskConfig *c, int n, const int *tok, int len) {
    if (n > c->train_max) return TASK_TEST;
    uint64_t r = task_content_hash(tok, len) % TASK_SPLIT_MOD;
    return r == 0 ? TASK_TEST : r == 1 ? TASK_VAL : TASK_TRAIN;
}

long long task_small_power(long long base, int n) {
    long long p = 1;
    for (int i = 0; i < n; i++) {
        p *= base;
        if (p > TASK_POOL_MAX) return -1;
    }
    return p;
}

void task_gen_from_pool(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)depth;
    long long pool = TASK_OPS[c->task].pool_size(c, n);
    CHECK(pool > 0, "task %s: length %d has no numbered list to draw from", TASKS[c->task].name, n);
    TASK_OPS[c->task].pool_instance(c, n, (long long)(rng_u64(r) % (uint64_t)pool), o, prompt_len);
}

// One instance of length n into out (room for task_max_tokens(c, n)); returns its length.
static int generate(const TaskConfig *c, int n, double depth, Rng *r, int *out, int *prompt_len) {
    Out o = {out, 0};
    put_str(&o, TASKS[c->task].tag);
    TASK_OPS[c->task].gen(c, n, depth, r, &o, prompt_len);
    put(&o, '\n');
    return o.n;
}

int task_instance(const TaskConfig *c, int n, double depth, int split, Rng *rng, int *out, int cap, int *prompt_len) {
    char msg[256];
    CHECK(task_check(c, msg, sizeof msg), "%s", msg);
    CHECK(split == TASK_TRAIN || split == TASK_TEST || split == TASK_VAL, "task_instance: split %d is not TASK_TRAIN, "
          "TASK_TEST or TASK_VAL", split);
    const char *name = TASKS[c->task].name;
    CHECK(n >= task_min_length(c) && n <= MAX_INSTANCE_TOKENS, "task %s: length %d outside [%d, %d]", name, n,
          task_min_length(c), MAX_INSTANCE_TOKENS);
    CHECK(!TASK_OPS[c->task].max_n || n <= TASK_OPS[c->task].max_n, "task %s: length %d outside [%d, %d]", name, n,
          task_min_length(c), TASK_OPS[c->task].max_n);
    CHECK(depth <= 1.0, "task %s: depth %g must be in [0, 1] (or < 0 for a random depth)", name,
          depth);
    int need = task_max_tokens(c, n);
    CHECK(need <= MAX_INSTANCE_TOKENS, "task %s: a length-%d instance takes up to %d tokens, more than %d", name, n,
          need, MAX_INSTANCE_TOKENS);
    CHECK(cap >= need, "task %s: an output of %d tokens cannot hold a length-%d instance (up to %d; see task_max_tokens)",
          name, cap, n, need);
    *prompt_len = 0;
    if (n > c->train_max && split != TASK_TEST) return 0;  // untrained lengths: test instances only
    // a length the task has no instance of (SCAN: no command has 23 actions)
    if (TASK_OPS[c->task].gen == task_gen_from_pool && TASK_OPS[c->task].pool_size(c, n) == 0) return 0;
    for (int t = 0; t < INSTANCE_TRIES; t++) {
        int p = 0, len = generate(c, n, depth, rng, out, &p);
        if (task_class_of(c, n, out, len) == split) {
            *prompt_len = p;
            return len;
        }
    }
    return 0;
}

int task_test_lengths(const TaskConfig *c, int *lengths, int cap) {
    int k = 0;
    if (c->task == T_FIND) {
        for (long n = c->train_min; n >= 1 && n <= c->test_max && k < cap; n *= 2) lengths[k++] = (int)n;
    } else {
        for (int n = task_min_length(c); n <= c->test_max && k < cap; n++) lengths[k++] = n;
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
