// tests/test_tasks.c: the synthetic tasks (dataset/tasks.h). Every instance is parsed back and its
// target recomputed here, independently of the generators (big-number addition, sorting, retrieval
// keys read from the haystack); then the train/test split, determinism, the retrieval depths, the
// packed training batches, and the rejection of bad flags. Fatal misuse exits through CHECK, so
// those cases run in a forked child whose message is checked.

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/common.h"
#include "dataset/tasks.h"
#include "tests/testutil.h"

enum { N_TASKS = 12, BUF = 4096 };
static const char *const NAMES[N_TASKS] = {"copy", "copy-2x", "copy-repeat", "copy-repeat-2x", "copy-change",
                                           "reverse", "reverse-2x", "addition", "sort", "sum", "parity", "retrieval"};
enum { RETRIEVAL = 11 };

// ---------------------------------------------------------------------------------------------
// helpers

static uint64_t fnv1a(const char *s, int n) {
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}
// The class rule of tasks.h: FNV-1a 64, MurmurHash3's fmix64, then 0 mod TASK_SPLIT_MOD is test,
// 1 validation, the rest training.
static int class_of_string(const char *s, int n) {
    uint64_t h = fnv1a(s, n);
    h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h % TASK_SPLIT_MOD == 0 ? TASK_TEST : h % TASK_SPLIT_MOD == 1 ? TASK_VAL : TASK_TRAIN;
}
static int is_test_string(const char *s, int n) { return class_of_string(s, n) == TASK_TEST; }

// Defaults with the 26 letters as the alphabet, so every instance is a byte string check_instance reads.
static void letters_defaults(TaskConfig *c, int task) {
    task_defaults(c, task);
    if (task_has_symbols(task)) c->alphabet = 26;
}

// tokens -> bytes (every token must be a byte)
static void to_bytes(const int *tok, int n, char *s) {
    for (int i = 0; i < n; i++) s[i] = (char)tok[i];
    s[n] = '\0';
}

static int all_in(const char *s, int n, char lo, char hi) {
    for (int i = 0; i < n; i++)
        if (s[i] < lo || s[i] > hi) return 0;
    return 1;
}

// Big-number sum of two decimal strings (most significant digit first) into out.
static void big_add(const char *a, int la, const char *b, int lb, char *out) {
    char rev[BUF];
    int k = 0, carry = 0;
    for (int i = 0; i < la || i < lb || carry; i++) {
        int d = carry + (i < la ? a[la - 1 - i] - '0' : 0) + (i < lb ? b[lb - 1 - i] - '0' : 0);
        rev[k++] = (char)('0' + d % 10);
        carry = d / 10;
    }
    while (k > 1 && rev[k - 1] == '0') k--;
    for (int i = 0; i < k; i++) out[i] = rev[k - 1 - i];
    out[k] = '\0';
}

static int cmp_char(const void *x, const void *y) { return *(const char *)x - *(const char *)y; }

// What an instance says about itself, read back by check_instance.
typedef struct {
    int n;              // the length: symbols, digits of the longer operand, bits, haystack tokens
    int prompt_len;     // tokens up to and including the separating '='
    int target_len;     // tokens after it, the final '\n' included
    // retrieval
    int keys;           // keys in the haystack
    int asked_at;       // haystack index of the asked key's '#'
    int filler;         // filler tokens in the haystack
    int filler_before;  // filler tokens before the asked key
    int longer;         // addition: 0 when A is the longer operand (or equal), 1 when B is
    int shorter_len;    // addition: digits of the shorter operand
} Parsed;

// Checks that s (len bytes, NUL-terminated) is a correct instance of task `task`; the answer is
// recomputed from the prompt. Returns NULL when it is, else a description of what is wrong.
static const char *check_instance(int task, const char *s, int len, Parsed *pr) {
    static char why[256];
    memset(pr, 0, sizeof *pr);
    const char *tag = task_info(task)->tag;
    int tl = (int)strlen(tag);
    if (len < tl + 3 || strncmp(s, tag, (size_t)tl) != 0) return "does not start with the tag";
    if (s[len - 1] != '\n') return "does not end with a newline";
    if (memchr(s, '\n', (size_t)len - 1)) return "has a newline before its end";
    int eq = -1, n_eq = 0;
    for (int i = 0; i < len; i++)
        if (s[i] == '=') { eq = i; n_eq++; }
    if (eq < 0) return "has no '='";
    if (task != RETRIEVAL && n_eq != 1) return "has more than one '='";
    if (task != RETRIEVAL) {  // the first '=' is the separator
        eq = (int)(strchr(s, '=') - s);
    }
    pr->prompt_len = eq + 1;
    pr->target_len = len - eq - 1;
    const char *body = s + tl, *target = s + eq + 1;
    int bl = eq - tl, gl = len - eq - 2;  // body and target lengths (target without '\n')
    char want[BUF];
    int wl = 0;
    if (bl < 1) return "empty body";
    switch (task) {
    case 0: case 1: case 5: case 6: case 8:  // random letters
        if (!all_in(body, bl, 'a', 'z')) return "body is not lowercase letters";
        pr->n = bl;
        if (task == 0 || task == 1) { memcpy(want, body, (size_t)bl); wl = bl; }
        if (task == 1) { memcpy(want + bl, body, (size_t)bl); wl = 2 * bl; }
        if (task == 5 || task == 6) {
            for (int i = 0; i < bl; i++) want[i] = body[bl - 1 - i];
            wl = bl;
        }
        if (task == 6) { memcpy(want + bl, body, (size_t)bl); wl = 2 * bl; }
        if (task == 8) {
            memcpy(want, body, (size_t)bl);
            qsort(want, (size_t)bl, 1, cmp_char);
            wl = bl;
        }
        break;
    case 2: case 3: case 4: {  // one letter repeated
        if (!all_in(body, bl, 'a', 'z')) return "body is not lowercase letters";
        for (int i = 1; i < bl; i++)
            if (body[i] != body[0]) return "body is not one letter repeated";
        pr->n = bl;
        char y = task == 4 ? (body[0] == 'z' ? 'a' : (char)(body[0] + 1)) : body[0];
        wl = task == 3 ? 2 * bl : bl;
        memset(want, y, (size_t)wl);
        break;
    }
    case 7: {  // addition
        const char *plus = memchr(body, '+', (size_t)bl);
        if (!plus) return "addition without '+'";
        int la = (int)(plus - body), lb = bl - la - 1;
        const char *a = body, *b = plus + 1;
        if (la < 1 || lb < 1 || !all_in(a, la, '0', '9') || !all_in(b, lb, '0', '9')) return "operands are not numbers";
        if ((la > 1 && a[0] == '0') || (lb > 1 && b[0] == '0')) return "operand with a leading zero";
        pr->n = la > lb ? la : lb;
        pr->longer = lb > la;
        pr->shorter_len = la < lb ? la : lb;
        big_add(a, la, b, lb, want);
        wl = (int)strlen(want);
        if (la <= 18 && lb <= 18) {  // a second, machine-integer opinion
            char ca[32], cb[32], cs[32];
            memcpy(ca, a, (size_t)la); ca[la] = '\0';
            memcpy(cb, b, (size_t)lb); cb[lb] = '\0';
            snprintf(cs, sizeof cs, "%llu", strtoull(ca, NULL, 10) + strtoull(cb, NULL, 10));
            if (strcmp(cs, want) != 0) return "big-number addition disagrees with integers (test bug)";
        }
        break;
    }
    case 9: case 10: {  // sum, parity
        int acc = 0;
        if (!all_in(body, bl, task == 9 ? '1' : '0', task == 9 ? '9' : '1')) return "body has a wrong digit";
        for (int i = 0; i < bl; i++) acc += body[i] - '0';
        pr->n = bl;
        want[0] = task == 9 ? (char)('0' + acc % 10) : (acc % 2 ? 'o' : 'e');
        wl = 1;
        break;
    }
    case RETRIEVAL: {
        if (bl < 3 || body[bl - 2] != '?' || body[bl - 1] < 'a' || body[bl - 1] > 'z') return "no question ?L";
        char asked = body[bl - 1];
        const char *h = body;
        int hl = bl - 2;
        char labels[32];
        int found = 0;
        for (int i = 0; i < hl;) {
            if (h[i] == '#') {
                if (i + 9 > hl || h[i + 1] < 'a' || h[i + 1] > 'z' || h[i + 2] != ':' || !all_in(h + i + 3, 5, '0', '9') ||
                    h[i + 8] != ' ')
                    return "malformed key";
                if (pr->keys >= 26) return "more than 26 keys";
                if (i >= 9 && h[i - 9] == '#') return "two keys without filler between them";
                for (int k = 0; k < pr->keys; k++)
                    if (labels[k] == h[i + 1]) return "two keys share a label";
                labels[pr->keys++] = h[i + 1];
                if (h[i + 1] == asked) {
                    found++;
                    pr->asked_at = i;
                    pr->filler_before = pr->filler;
                    memcpy(want, h + i + 3, 5);
                    wl = 5;
                }
                i += 9;
            } else {
                unsigned char ch = (unsigned char)h[i];
                if (ch < 32 || ch > 126 || ch == '=' || ch == '?') return "filler has a separator or non-printable byte";
                pr->filler++;
                i++;
            }
        }
        if (found != 1) return "the asked label is not exactly one key";
        pr->n = hl;
        break;
    }
    default: return "unknown task";
    }
    if (gl != wl || memcmp(target, want, (size_t)wl) != 0) {
        snprintf(why, sizeof why, "target '%.*s' is not the answer '%.*s'", gl < 100 ? gl : 100, target,
                 wl < 100 ? wl : 100, want);
        return why;
    }
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// tests

static void test_table(void) {
    for (int i = 0; i < N_TASKS; i++) {
        const TaskInfo *t = task_info(i);
        EXPECT(t && strcmp(t->name, NAMES[i]) == 0, "task %d is %s, expected %s", i, t ? t->name : "NULL", NAMES[i]);
        if (!t) continue;
        EXPECT(task_find(NAMES[i]) == i, "task_find(%s) = %d", NAMES[i], task_find(NAMES[i]));
        for (int j = 0; j < i; j++) {
            const char *a = t->tag, *b = task_info(j)->tag;
            EXPECT(strncmp(a, b, strlen(a) < strlen(b) ? strlen(a) : strlen(b)) != 0, "tags %s and %s: one prefixes the other", a, b);
        }
        // the help line's example is a correct instance
        const char *eg = strstr(t->help, "e.g. ");
        EXPECT(eg != NULL, "%s: help has no example", t->name);
        if (eg) {
            char s[256];
            snprintf(s, sizeof s, "%s\n", eg + 5);
            Parsed pr;
            const char *why = check_instance(i, s, (int)strlen(s), &pr);
            EXPECT(why == NULL, "%s: help example '%s' %s", t->name, eg + 5, why ? why : "");
        }
        TaskConfig c;
        task_defaults(&c, i);
        char msg[256];
        EXPECT(task_check(&c, msg, sizeof msg), "%s: defaults rejected: %s", t->name, msg);
        int want_min = i == RETRIEVAL ? 64 : 1, want_max = i == RETRIEVAL ? 128 : (i == 7 || i == 8) ? 8 : 20;
        EXPECT(c.task == i && c.train_min == want_min && c.train_max == want_max &&
               c.test_max == (i == RETRIEVAL ? 512 : 2 * want_max) && c.distractors == 3 && c.n_depths == 5,
               "%s: defaults %d-%d test %d distractors %d depths %d", t->name, c.train_min, c.train_max, c.test_max,
               c.distractors, c.n_depths);
        int symbols = i <= 6 || i == 8;
        EXPECT(task_has_symbols(i) == symbols && c.alphabet == (symbols ? TASK_DEFAULT_ALPHABET : 0),
               "%s: alphabet %d (symbols %d)", t->name, c.alphabet, task_has_symbols(i));
    }
    EXPECT(task_info(N_TASKS) == NULL && task_info(-1) == NULL, "task_info past the end is NULL");
    EXPECT(task_find("nope") == -1 && task_find("") == -1 && task_find(NULL) == -1, "task_find of an unknown name is -1");

    // task_help lists every task
    FILE *f = tmpfile();
    CHECK(f, "tmpfile failed");
    task_help(f);
    long size = ftell(f);
    rewind(f);
    char *text = xcalloc((size_t)size + 1, 1);
    EXPECT(fread(text, 1, (size_t)size, f) == (size_t)size, "task_help: read back");
    fclose(f);
    for (int i = 0; i < N_TASKS; i++) EXPECT(strstr(text, NAMES[i]) != NULL, "task_help does not list %s", NAMES[i]);
    EXPECT(strstr(text, "copy:kqzd=kqzd") != NULL && strstr(text, "1-20") != NULL, "task_help shows examples and lengths");
    free(text);
}

// Every task at many lengths, both splits: the instance parses back, its answer is right, its
// length is the n asked for, it hashes to its split, and it fits task_max_tokens.
static void test_instances(void) {
    int tok[BUF];
    char s[BUF + 1];
    Rng r;
    rng_seed(&r, 11);
    for (int task = 0; task < N_TASKS; task++) {
        TaskConfig c;
        letters_defaults(&c, task);
        int lengths[64], nl = 0;
        if (task == RETRIEVAL) {
            int ls[] = {44, 45, 64, 100, 128, 300, 512};
            for (int i = 0; i < 7; i++) lengths[nl++] = ls[i];
        } else {
            for (int n = 1; n <= c.test_max; n++) lengths[nl++] = n;
        }
        int bad = 0, empty = 0, count = 0;
        for (int li = 0; li < nl; li++) {
            int n = lengths[li];
            for (int split = 0; split < 3; split++) {  // TASK_TRAIN, TASK_TEST, TASK_VAL
                for (int rep = 0; rep < 6; rep++) {
                    int p = -1, len = task_instance(&c, n, -1.0, split, &r, tok, BUF, &p);
                    if (len == 0) {  // allowed only where the split may really be empty (tiny spaces)
                        empty++;
                        EXPECT(task == 2 || task == 3 || task == 4 || task == 9 || task == 10 || n == 1,
                               "%s n=%d split %d: no instance", NAMES[task], n, split);
                        break;
                    }
                    count++;
                    to_bytes(tok, len, s);
                    Parsed pr;
                    const char *why = check_instance(task, s, len, &pr);
                    if (why || pr.n != n || pr.prompt_len != p || class_of_string(s, len) != split ||
                        len > task_max_tokens(&c, n) || (task != 7 && len != task_max_tokens(&c, n)) ||
                        (task == RETRIEVAL && pr.keys != 1 + c.distractors)) {
                        if (bad++ < 5)
                            fprintf(stderr, "  %s n=%d split %d: %s (n read %d, prompt %d/%d, len %d, max %d): %.80s\n",
                                    NAMES[task], n, split, why ? why : "ok", pr.n, pr.prompt_len, p, len,
                                    task_max_tokens(&c, n), s);
                    }
                }
            }
        }
        EXPECT(bad == 0, "%s: %d bad instances out of %d", NAMES[task], bad, count);
        EXPECT(empty < nl / 2 + 1, "%s: %d empty (length, split) pairs", NAMES[task], empty);
    }

    // addition: either operand may be the longer one, the other of every length 1..n
    TaskConfig c;
    letters_defaults(&c, 7);
    int seen_longer[2] = {0}, seen_short[6] = {0};
    for (int i = 0; i < 400; i++) {
        int p, len = task_instance(&c, 5, -1.0, TASK_TRAIN, &r, tok, BUF, &p);
        to_bytes(tok, len, s);
        Parsed pr;
        if (check_instance(7, s, len, &pr)) continue;
        seen_longer[pr.longer] = 1;
        seen_short[pr.shorter_len] = 1;
    }
    EXPECT(seen_longer[0] && seen_longer[1], "addition: the longer operand is sometimes A, sometimes B");
    EXPECT(seen_short[1] && seen_short[2] && seen_short[3] && seen_short[4] && seen_short[5],
           "addition: the shorter operand takes every length 1..5");
    // a large n (digit arrays, no integer overflow): 200 digits
    int p, len = task_instance(&c, 200, -1.0, TASK_TEST, &r, tok, BUF, &p);
    to_bytes(tok, len, s);
    Parsed pr;
    const char *why = check_instance(7, s, len, &pr);
    EXPECT(len > 0 && why == NULL && pr.n == 200, "addition at n=200: %s", why ? why : "ok");
}

// A length whose instances all hash to other classes gives 0 for this one: parity n=1 has exactly
// two instances, so whether each class is empty is known here.
static void test_empty_split(void) {
    TaskConfig c;
    letters_defaults(&c, 10);
    const char *all[2] = {"par:0=e\n", "par:1=o\n"};
    int has[3] = {0, 0, 0};
    for (int i = 0; i < 2; i++) has[class_of_string(all[i], 8)] = 1;
    int tok[64];
    Rng r;
    rng_seed(&r, 3);
    for (int split = 0; split < 3; split++) {
        int p, len = task_instance(&c, 1, -1.0, split, &r, tok, 64, &p);
        EXPECT((len > 0) == has[split], "parity n=1 split %d: got %d tokens, the split has %s", split, len,
               has[split] ? "an instance" : "none");
    }
}

// The hash rule reserves about 1 in TASK_SPLIT_MOD of every task's instances: all 676 copy and
// reverse instances of two letters, all 729 sum instances of three digits.
static void test_split_fraction(void) {
    const char *fmt[3] = {"copy:%c%c=%c%c\n", "rev:%c%c=%c%c\n", "sum:%c%c%c=%c\n"};
    for (int f = 0; f < 3; f++) {
        int test = 0, all = 0;
        for (int a = 0; a < 26; a++)
            for (int b = 0; b < 26; b++)
                for (int d = 0; d < (f == 2 ? 27 : 1); d++) {
                    char s[32];
                    int len;
                    if (f == 0) len = snprintf(s, sizeof s, fmt[0], 'a' + a, 'a' + b, 'a' + a, 'a' + b);
                    else if (f == 1) len = snprintf(s, sizeof s, fmt[1], 'a' + a, 'a' + b, 'a' + b, 'a' + a);
                    else {
                        if (a >= 9 || b >= 9 || d >= 9) continue;
                        len = snprintf(s, sizeof s, fmt[2], '1' + a, '1' + b, '1' + d, '0' + (a + b + d + 3) % 10);
                    }
                    test += is_test_string(s, len);
                    all++;
                }
        double frac = (double)test / all;
        EXPECT(frac > 0.08 && frac < 0.17, "%.4s: %d of %d instances are test (%.3f)", fmt[f], test, all, frac);
    }
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

// 2000 train, 2000 test and 2000 validation instances at a small length: no string is in two
// classes; every instance of the tiny copy-repeat space lands in exactly one.
static void test_disjoint(void) {
    enum { M = 2000, S = 3 * M };
    int tasks[] = {0, 8, 10, 2};
    int lens[] = {3, 4, 12, 4};
    for (int ti = 0; ti < 4; ti++) {
        TaskConfig c;
        letters_defaults(&c, tasks[ti]);
        char **str = xmalloc(S * sizeof(char *));
        int *split_of = xmalloc(S * sizeof(int));
        Rng r;
        rng_seed(&r, 100 + (uint64_t)ti);
        int tok[256], k = 0, wrong = 0;
        for (int split = 0; split < 3; split++)
            for (int i = 0; i < M; i++) {
                int p, len = task_instance(&c, lens[ti], -1.0, split, &r, tok, 256, &p);
                CHECK(len > 0, "test_disjoint: no instance of %s at %d", NAMES[tasks[ti]], lens[ti]);
                str[k] = xmalloc((size_t)len + 1);
                to_bytes(tok, len, str[k]);
                if (class_of_string(str[k], len) != split) wrong++;
                split_of[k++] = split;
            }
        EXPECT(wrong == 0, "%s: %d instances in the wrong split by the hash rule", NAMES[tasks[ti]], wrong);
        // sort the strings, remembering their split through a side array
        char **sorted = xmalloc(S * sizeof(char *));
        memcpy(sorted, str, S * sizeof(char *));
        qsort(sorted, S, sizeof(char *), cmp_str);
        int shared = 0, distinct = 1;
        for (int i = 1; i < S; i++) {
            if (strcmp(sorted[i], sorted[i - 1]) == 0) {
                // find the splits of the two equal strings
                int sa = -1, sb = -1;
                for (int j = 0; j < S; j++) {
                    if (str[j] == sorted[i]) sa = split_of[j];
                    if (str[j] == sorted[i - 1]) sb = split_of[j];
                }
                if (sa != sb) shared++;
            } else {
                distinct++;
            }
        }
        EXPECT(shared == 0, "%s n=%d: %d strings appear in two classes", NAMES[tasks[ti]], lens[ti], shared);
        EXPECT(distinct > 20, "%s n=%d: only %d distinct instances", NAMES[tasks[ti]], lens[ti], distinct);
        for (int i = 0; i < S; i++) free(str[i]);
        free(str); free(sorted); free(split_of);
    }
}

// Same seed, same instances; different seeds, different ones. A pinned hash of the first instances
// of every task but retrieval (whose filler is the corpus, owned elsewhere) catches any change to
// the generators or the Rng: the instances must be the same on every machine.
static uint64_t stream_hash(int task, uint64_t seed, int count) {
    TaskConfig c;
    letters_defaults(&c, task);
    Rng r;
    rng_seed(&r, seed);
    int tok[BUF];
    char s[BUF + 1];
    uint64_t h = 0;
    for (int i = 0; i < count; i++) {
        int n = 1 + i % c.test_max, split = i % 3 == 0 ? TASK_TEST : TASK_TRAIN;
        if (task == RETRIEVAL) n = 44 + 7 * i;
        int p, len = task_instance(&c, n, task == RETRIEVAL ? (i % 5) * 0.25 : -1.0, split, &r, tok, BUF, &p);
        to_bytes(tok, len, s);
        h = h * 31 + fnv1a(s, len) + (uint64_t)p;
    }
    return h;
}

static void test_determinism(void) {
    uint64_t all = 0;
    for (int task = 0; task < N_TASKS; task++) {
        uint64_t a = stream_hash(task, 5, 30), b = stream_hash(task, 5, 30), d = stream_hash(task, 6, 30);
        EXPECT(a == b, "%s: the same seed gives different instances", NAMES[task]);
        EXPECT(a != d, "%s: seeds 5 and 6 give the same instances", NAMES[task]);
        if (task != RETRIEVAL) all = all * 1000003 + stream_hash(task, 1, 40);
    }
    const uint64_t pinned = 0x1c398523e384c62cull;
    EXPECT(all == pinned, "the instance stream changed: hash 0x%016llx, pinned 0x%016llx (update the pin only "
           "for an intended change of the generators)", (unsigned long long)all, (unsigned long long)pinned);
}

// Retrieval: the asked key sits at round(depth * F) filler tokens in (depth 0: the very start,
// depth 1: the very end), labels are distinct, distractors count right, random depths spread.
static void test_retrieval(void) {
    TaskConfig c;
    letters_defaults(&c, RETRIEVAL);
    double depths[TASK_MAX_DEPTHS];
    int nd = task_test_depths(&c, depths, TASK_MAX_DEPTHS);
    EXPECT(nd == 5 && depths[0] == 0.0 && depths[1] == 0.25 && depths[2] == 0.5 && depths[3] == 0.75 && depths[4] == 1.0,
           "retrieval depths: %d of them", nd);
    int tok[BUF];
    char s[BUF + 1];
    Rng r;
    rng_seed(&r, 21);
    for (int n = 44; n <= 512; n = n * 2 + 3) {
        int F = n - 9 * (1 + c.distractors);
        for (int di = 0; di < nd; di++)
            for (int split = 0; split < 2; split++) {
                int p, len = task_instance(&c, n, depths[di], split, &r, tok, BUF, &p);
                to_bytes(tok, len, s);
                Parsed pr;
                const char *why = check_instance(RETRIEVAL, s, len, &pr);
                int want = (int)(depths[di] * F + 0.5);
                EXPECT(len > 0 && why == NULL && pr.n == n && pr.filler == F && pr.filler_before == want,
                       "retrieval n=%d depth %.2f: %s, filler %d/%d, before %d (want %d)", n, depths[di],
                       why ? why : "ok", pr.filler, F, pr.filler_before, want);
                if (depths[di] == 0.0) EXPECT(pr.asked_at == 0, "depth 0: the asked key is at %d, not 0", pr.asked_at);
                if (depths[di] == 1.0) EXPECT(pr.asked_at == n - 9, "depth 1: the asked key is at %d, not %d", pr.asked_at, n - 9);
            }
    }
    // random depths cover the haystack
    int lo = 1 << 30, hi = -1, n = 128, F = n - 36;
    for (int i = 0; i < 300; i++) {
        int p, len = task_instance(&c, n, -1.0, TASK_TRAIN, &r, tok, BUF, &p);
        to_bytes(tok, len, s);
        Parsed pr;
        if (check_instance(RETRIEVAL, s, len, &pr)) continue;
        if (pr.filler_before < lo) lo = pr.filler_before;
        if (pr.filler_before > hi) hi = pr.filler_before;
    }
    EXPECT(lo <= 5 && hi >= F - 5, "random depths span %d..%d of %d filler tokens", lo, hi, F);
    // no distractors, and the most (25, one per other letter) at the shortest haystack
    int dist[] = {0, 25};
    for (int i = 0; i < 2; i++) {
        c.distractors = dist[i];
        c.train_min = 9 * (1 + dist[i]) + (1 + dist[i] > 8 ? 1 + dist[i] : 8);
        c.train_max = c.test_max = c.train_min;
        char msg[256];
        EXPECT(task_check(&c, msg, sizeof msg), "distractors %d, train-min %d rejected: %s", dist[i], c.train_min, msg);
        for (int k = 0; k < 20; k++) {
            int p, len = task_instance(&c, c.train_min, -1.0, k % 2, &r, tok, BUF, &p);
            to_bytes(tok, len, s);
            Parsed pr;
            const char *why = check_instance(RETRIEVAL, s, len, &pr);
            EXPECT(len > 0 && why == NULL && pr.keys == 1 + dist[i] && pr.n == c.train_min,
                   "distractors %d: %s, %d keys", dist[i], why ? why : "ok", pr.keys);
        }
    }
}

static void test_lengths(void) {
    TaskConfig c;
    int l[128];
    letters_defaults(&c, 0);
    int k = task_test_lengths(&c, l, 128);
    int ok = k == 40;
    for (int i = 0; ok && i < k; i++) ok = l[i] == i + 1;
    EXPECT(ok, "copy test lengths: 1..40 (got %d)", k);
    EXPECT(task_test_lengths(&c, l, 10) == 10 && l[9] == 10, "test lengths stop at cap");
    double d[8];
    EXPECT(task_test_depths(&c, d, 8) == 1 && d[0] == -1.0, "copy test depths: one entry, -1");
    letters_defaults(&c, RETRIEVAL);
    k = task_test_lengths(&c, l, 128);
    EXPECT(k == 4 && l[0] == 64 && l[1] == 128 && l[2] == 256 && l[3] == 512, "retrieval test lengths 64..512 (got %d)", k);
    c.train_min = 44;
    k = task_test_lengths(&c, l, 128);
    EXPECT(k == 4 && l[0] == 44 && l[3] == 352, "retrieval from 44: 44, 88, 176, 352 (got %d, last %d)", k, l[k - 1]);
    c.n_depths = 1;
    EXPECT(task_test_depths(&c, d, 8) == 1 && d[0] == 0.5, "one depth: the middle");
}

// Packed batches: each row is whole training instances (docs 0, 1, ... with positions from 0),
// then padding; weights exactly on the tokens that predict a target token; targets the next token.
// Returns the number of instances; appends their lengths n to ns (when not NULL).
static int check_batch(int task, const Batch *b, int *ns, int *first_len, int *pad_len) {
    int count = 0, bad = 0;
    char s[BUF + 1];
    for (int row = 0; row < b->B; row++) {
        const int *tok = b->tokens + (size_t)row * b->T, *tg = b->targets + (size_t)row * b->T;
        const int *pos = b->pos + (size_t)row * b->T, *doc = b->doc + (size_t)row * b->T;
        const float *w = b->weights + (size_t)row * b->T;
        int t = 0, d = 0;
        double wsum = 0, target_sum = 0;
        while (t < b->T && doc[t] >= 0) {
            int len = 0;
            while (t + len < b->T && doc[t + len] == d) len++;
            if (len == 0) {  // doc ids must count 0, 1, 2, ... then -1
                bad++;
                fprintf(stderr, "  row %d token %d: doc %d, expected %d or -1\n", row, t, doc[t], d);
                break;
            }
            for (int i = 0; i < len; i++) s[i] = (char)tok[t + i];
            s[len] = '\0';
            Parsed pr;
            const char *why = check_instance(task, s, len, &pr);
            if (why || class_of_string(s, len) != TASK_TRAIN) {
                if (bad++ < 3) fprintf(stderr, "  row %d doc %d: %s: %.60s\n", row, d, why ? why : "not a training instance", s);
            } else {
                for (int i = 0; i < len; i++) {
                    int want_w = i + 1 >= pr.prompt_len && i + 1 < len;
                    int want_tg = i + 1 < len ? tok[t + i + 1] : '\n';
                    if (pos[t + i] != i || tg[t + i] != want_tg || w[t + i] != (float)want_w) {
                        if (bad++ < 3) fprintf(stderr, "  row %d doc %d token %d: pos %d target %d weight %g\n", row, d, i,
                                               pos[t + i], tg[t + i], w[t + i]);
                        break;
                    }
                    wsum += w[t + i];
                }
                target_sum += pr.target_len;  // the target tokens, '\n' included
                if (ns) ns[count] = pr.n;
            }
            if (d == 0 && first_len) first_len[row] = len;
            count++;
            t += len;
            d++;
        }
        if (d == 0) { bad++; fprintf(stderr, "  row %d has no instance\n", row); }
        if (pad_len) pad_len[row] = b->T - t;
        for (; t < b->T; t++)
            if (doc[t] != -1 || w[t] != 0.0f || pos[t] != 0 || tok[t] != '\n' || tg[t] != '\n') {
                if (bad++ < 3) fprintf(stderr, "  row %d token %d: bad padding (doc %d)\n", row, t, doc[t]);
                break;
            }
        if (wsum != target_sum) {
            bad++;
            fprintf(stderr, "  row %d: weights sum to %g, targets have %g tokens\n", row, wsum, target_sum);
        }
    }
    EXPECT(bad == 0, "%s: %d problems in a packed batch", NAMES[task], bad);
    return count;
}

static void test_fill_batch(void) {
    for (int task = 0; task < N_TASKS; task++) {
        TaskConfig c;
        letters_defaults(&c, task);
        int T = task_max_tokens(&c, c.train_max) + 5;
        if (T < 64) T = 64;
        Batch b;
        batch_alloc(&b, 6, T);
        Rng r;
        rng_seed(&r, 31);
        int first_len[6], pad_len[6];
        int total = 0;
        for (int k = 0; k < 3; k++) {
            task_fill_batch(&c, &r, &b);
            total += check_batch(task, &b, NULL, first_len, pad_len);
            // a row ends only when the next instance (which opens the next row) does not fit
            for (int row = 0; row + 1 < 6; row++)
                EXPECT(pad_len[row] < first_len[row + 1], "%s row %d: %d tokens of padding, yet the next instance (%d) "
                       "was not packed there", NAMES[task], row, pad_len[row], first_len[row + 1]);
        }
        EXPECT(total >= 18, "%s: %d instances in 3 batches of 6 rows", NAMES[task], total);
        batch_free(&b);
    }

    // nothing is dropped: one batch of 4 rows equals four batches of 1 row from the same seed
    TaskConfig c;
    letters_defaults(&c, 5);
    Batch b4, b1;
    batch_alloc(&b4, 4, 50);
    batch_alloc(&b1, 1, 50);
    Rng r4, r1;
    rng_seed(&r4, 77);
    rng_seed(&r1, 77);
    task_fill_batch(&c, &r4, &b4);
    int same = 1;
    for (int row = 0; row < 4; row++) {
        task_fill_batch(&c, &r1, &b1);
        same &= memcmp(b1.tokens, b4.tokens + row * 50, 50 * sizeof(int)) == 0 &&
                memcmp(b1.doc, b4.doc + row * 50, 50 * sizeof(int)) == 0;
    }
    EXPECT(same, "four 1-row batches differ from one 4-row batch: an instance was dropped at a row end");
    EXPECT(r1.s == r4.s, "the Rng ends in the same state either way");
    batch_free(&b4);
    batch_free(&b1);

    // training lengths are uniform over [train_min, train_max]
    letters_defaults(&c, 0);
    Batch b;
    batch_alloc(&b, 16, 64);
    Rng r;
    rng_seed(&r, 5);
    int hist[21] = {0}, ns[16 * 64], n_all = 0;
    for (int k = 0; k < 100; k++) {
        task_fill_batch(&c, &r, &b);
        int m = check_batch(0, &b, ns, NULL, NULL);
        for (int i = 0; i < m; i++) {
            if (ns[i] >= 1 && ns[i] <= 20) hist[ns[i]]++;
            n_all++;
        }
    }
    int lo = n_all, hi = 0;
    for (int n = 1; n <= 20; n++) {
        if (hist[n] < lo) lo = hist[n];
        if (hist[n] > hi) hi = hist[n];
    }
    double mean = n_all / 20.0;
    EXPECT(lo > 0.75 * mean && hi < 1.25 * mean, "copy training lengths not uniform: counts %d..%d, mean %.1f", lo, hi, mean);
    batch_free(&b);
}

static void test_check(void) {
    // the last number is the alphabet (0: none, as a task without symbols has)
    struct { int task, train_min, train_max, test_max, distractors, n_depths, alphabet; const char *flag; } bad[] = {
        {0, 0, 20, 40, 3, 5, 26, "--train-min 0 must be >= 1"},
        {0, 5, 4, 40, 3, 5, 26, "--train-max 4 must be >= --train-min 5"},
        {0, 1, 20, 19, 3, 5, 26, "--test-max 19 must be >= --train-max 20"},
        {0, 1, 20, 100001, 3, 5, 26, "--test-max 100001"},
        {1, 1, 20, 40000, 3, 5, 26, "--test-max 40000"},  // 120008 tokens of copy-2x
        {RETRIEVAL, 32, 128, 512, 3, 5, 0, "--train-min 32"},
        {RETRIEVAL, 43, 128, 512, 3, 5, 0, "--distractors 3"},
        {RETRIEVAL, 300, 300, 512, 26, 5, 0, "--distractors 26"},
        {RETRIEVAL, 64, 128, 512, -1, 5, 0, "--distractors -1"},
        {RETRIEVAL, 64, 128, 512, 3, 0, 0, "--depths 0"},
        {RETRIEVAL, 64, 128, 512, 3, TASK_MAX_DEPTHS + 1, 0, "--depths"},
        {N_TASKS, 1, 20, 40, 3, 5, 0, "unknown task"},
        {0, 1, 20, 40, 3, 5, 1, "--alphabet 1 must be in [2, "},
        {0, 1, 20, 40, 3, 5, TASK_MAX_ALPHABET + 1, "--alphabet"},
        {8, 1, 8, 16, 3, 5, 0, "--alphabet 0"},
        {7, 1, 8, 16, 3, 5, 26, "--alphabet applies to the symbol tasks"},
        {RETRIEVAL, 64, 128, 512, 3, 5, 30, "not retrieval"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TaskConfig c = {bad[i].task, bad[i].train_min, bad[i].train_max, bad[i].test_max, bad[i].distractors, bad[i].n_depths,
                        bad[i].alphabet};
        char msg[256] = "";
        int ok = task_check(&c, msg, sizeof msg);
        EXPECT(!ok && strstr(msg, bad[i].flag), "case %zu: accepted or wrong message (want '%s'): %s", i, bad[i].flag, msg);
    }
    // edges that are fine: equal ranges, the shortest haystack, distractors ignored outside retrieval
    TaskConfig ok_cases[] = {
        {0, 7, 7, 7, 3, 5, 2}, {RETRIEVAL, 44, 44, 44, 3, 5, 0}, {2, 1, 20, 40, -5, 0, TASK_MAX_ALPHABET}, {0, 1, 20, 49996, 3, 5, 26},
    };
    for (size_t i = 0; i < sizeof ok_cases / sizeof ok_cases[0]; i++) {
        char msg[256] = "";
        EXPECT(task_check(&ok_cases[i], msg, sizeof msg), "ok case %zu rejected: %s", i, msg);
    }
}

static void child_small_seq(const void *arg) {
    (void)arg;
    TaskConfig c;
    letters_defaults(&c, 0);
    Batch b;
    batch_alloc(&b, 2, 40);  // copy at 20 needs 47 tokens
    Rng r;
    rng_seed(&r, 1);
    task_fill_batch(&c, &r, &b);
}
static void child_small_cap(const void *arg) {
    (void)arg;
    TaskConfig c;
    letters_defaults(&c, 0);
    int tok[16], p;
    Rng r;
    rng_seed(&r, 1);
    task_instance(&c, 10, -1.0, TASK_TRAIN, &r, tok, 16, &p);
}
static void child_bad_length(const void *arg) {
    TaskConfig c;
    letters_defaults(&c, *(const int *)arg);
    int tok[256], p;
    Rng r;
    rng_seed(&r, 1);
    task_instance(&c, *(const int *)arg == RETRIEVAL ? 43 : 0, -1.0, TASK_TRAIN, &r, tok, 256, &p);
}
static void child_bad_depth(const void *arg) {
    (void)arg;
    TaskConfig c;
    letters_defaults(&c, RETRIEVAL);
    int tok[256], p;
    Rng r;
    rng_seed(&r, 1);
    task_instance(&c, 64, 1.5, TASK_TRAIN, &r, tok, 256, &p);
}

static void test_errors(void) {
    EXPECT(dies_with(child_small_seq, NULL, "--seq", "47"), "a row shorter than the longest instance asks for --seq");
    EXPECT(dies_with(child_small_cap, NULL, "task_max_tokens", NULL), "too small an output buffer is refused");
    int copy = 0, ret = RETRIEVAL;
    EXPECT(dies_with(child_bad_length, &copy, "length 0", NULL), "length 0 is refused");
    EXPECT(dies_with(child_bad_length, &ret, "length 43", NULL), "a haystack too small for its keys is refused");
    EXPECT(dies_with(child_bad_depth, NULL, "depth", NULL), "depth 1.5 is refused");
}

// ---------------------------------------------------------------------------------------------
// alphabet, numbered pools, evaluation sets

// Symbols past 'z' are tokens 256.., the vocabulary grows with them, copy-change wraps to the first
// symbol, sort orders by symbol index, and task_token_text prints them as <k>.
static void test_alphabet(void) {
    TaskConfig c;
    task_defaults(&c, 0);
    EXPECT(task_vocab(&c) == 256 + TASK_DEFAULT_ALPHABET - 26, "copy: vocabulary %d", task_vocab(&c));
    c.alphabet = 10;
    EXPECT(task_vocab(&c) == 256, "alphabet 10: vocabulary %d", task_vocab(&c));
    task_defaults(&c, 7);
    EXPECT(task_vocab(&c) == 256, "addition: vocabulary %d", task_vocab(&c));

    int tok[BUF], p;
    // copy-change with 30 symbols: instance i has symbol i, the target symbol (i + 1) mod 30
    task_defaults(&c, 4);
    c.alphabet = 30;
    int sym[30] = {0};
    for (int i = 0; i < 30; i++) {
        int len = task_pool_instance(&c, 3, i, tok, BUF, &p);
        int x = tok[4], y = (i + 1) % 30, want_x = i < 26 ? 'a' + i : 256 + i - 26, want_y = y < 26 ? 'a' + y : 256 + y - 26;
        EXPECT(len == 12 && p == 8 && x == want_x && tok[5] == x && tok[6] == x && tok[8] == want_y && tok[10] == want_y &&
               tok[11] == '\n', "copy-change symbol %d: got %d -> %d", i, x, tok[8]);
    }
    // every draw (of any class) is a symbol of the alphabet; all 30 show up
    Rng r;
    rng_seed(&r, 8);
    for (int k = 0; k < 600; k++) {
        if (!task_instance(&c, 2, -1.0, k % 3, &r, tok, BUF, &p)) continue;
        int x = tok[4], idx = x >= 256 ? x - 256 + 26 : x - 'a';
        if (idx >= 0 && idx < 30) sym[idx] = 1;
        else EXPECT(0, "copy-change drew token %d, not a symbol of 30", x);
    }
    int all = 1;
    for (int i = 0; i < 30; i++) all &= sym[i];
    EXPECT(all, "600 draws of 30 symbols miss some");
    // sort: symbol order, letters before the symbols past 'z'
    task_defaults(&c, 8);
    c.alphabet = 40;
    int sorted_ok = 1, big = 0;
    for (int k = 0; k < 200; k++) {
        int len = task_instance(&c, 8, -1.0, TASK_TEST, &r, tok, BUF, &p);
        for (int t = p; t + 2 < len; t++) sorted_ok &= tok[t] <= tok[t + 1];
        for (int t = 5; t < p - 1; t++) big += tok[t] >= 256;
        int cnt[40] = {0};  // the target is a permutation of the body
        for (int t = 5; t < p - 1; t++) cnt[tok[t] >= 256 ? tok[t] - 230 : tok[t] - 'a']++;
        for (int t = p; t < len - 1; t++) cnt[tok[t] >= 256 ? tok[t] - 230 : tok[t] - 'a']--;
        for (int i = 0; i < 40; i++) sorted_ok &= cnt[i] == 0;
    }
    EXPECT(sorted_ok && big > 0, "sort with 40 symbols: targets sorted by symbol index (%d symbols past z)", big);

    // token text
    struct { int tok; const char *want; } txt[] = { {'a', "a"}, {'=', "="}, {'\n', "\\n"}, {1, "\\x01"}, {256, "<26>"}, {747, "<517>"} };
    for (size_t i = 0; i < sizeof txt / sizeof *txt; i++) {
        char buf[32];
        int n = task_token_text(txt[i].tok, buf, sizeof buf);
        EXPECT(strcmp(buf, txt[i].want) == 0 && n == (int)strlen(buf), "token %d reads '%s', want '%s'", txt[i].tok, buf, txt[i].want);
    }
    FILE *f = tmpfile();
    int line[] = {'r', 'e', 'p', ':', 256, 256, '=', 256, 256, '\n'};
    task_print_tokens(f, line, 10);
    rewind(f);
    char got[64] = {0};
    EXPECT(fread(got, 1, sizeof got - 1, f) > 0 && strcmp(got, "rep:<26><26>=<26><26>\\n") == 0, "task_print_tokens: %s", got);
    fclose(f);
}

// Pool sizes counted by hand, and the numbering covers the pool exactly: instance i of every i is
// a correct instance of length n, no two are equal, and every instance the generator draws is one
// of them.
static uint64_t tok_hash(const int *t, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) { h ^= (uint64_t)t[i]; h *= 1099511628211ull; }
    return h;
}
static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void test_pools(void) {
    struct { int task, alphabet, n; long long want; } sizes[] = {
        {10, 0, 3, 8}, {10, 0, 20, 1 << 20}, {10, 0, 21, -1}, {7, 0, 1, 100}, {7, 0, 2, 9900}, {7, 0, 3, 990000},
        {7, 0, 4, -1}, {9, 0, 2, 81}, {0, 5, 3, 125}, {8, 26, 2, 676}, {2, 640, 40, 640}, {4, 7, 9, 7},
        {0, 640, 2, 409600}, {0, 640, 3, -1}, {RETRIEVAL, 0, 64, -1},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        TaskConfig c;
        task_defaults(&c, sizes[i].task);
        if (sizes[i].alphabet) c.alphabet = sizes[i].alphabet;
        long long got = task_pool_size(&c, sizes[i].n);
        EXPECT(got == sizes[i].want, "%s n=%d alphabet %d: pool %lld, want %lld", NAMES[sizes[i].task], sizes[i].n,
               sizes[i].alphabet, got, sizes[i].want);
    }
    // coverage on small pools, byte alphabets so check_instance reads them
    struct { int task, n; } cover[] = { {0, 2}, {1, 2}, {2, 5}, {3, 3}, {4, 4}, {5, 3}, {6, 2}, {7, 1}, {7, 2}, {8, 3}, {9, 4}, {10, 6} };
    for (size_t ci = 0; ci < sizeof cover / sizeof *cover; ci++) {
        int task = cover[ci].task, n = cover[ci].n, tok[BUF], p;
        char s[BUF + 1];
        TaskConfig c;
        letters_defaults(&c, task);
        long long P = task_pool_size(&c, n);
        uint64_t *h = xmalloc(sizeof(uint64_t) * (size_t)P);
        int bad = 0;
        for (long long i = 0; i < P; i++) {
            int len = task_pool_instance(&c, n, i, tok, BUF, &p);
            to_bytes(tok, len, s);
            Parsed pr;
            const char *why = check_instance(task, s, len, &pr);
            if (why || pr.n != n || pr.prompt_len != p) {
                if (bad++ < 3) fprintf(stderr, "  %s n=%d instance %lld: %s: %s", NAMES[task], n, i, why ? why : "wrong length", s);
            }
            h[i] = tok_hash(tok, len);
        }
        qsort(h, (size_t)P, sizeof *h, cmp_u64);
        int dup = 0;
        for (long long i = 1; i < P; i++) dup += h[i] == h[i - 1];
        Rng r;
        rng_seed(&r, 40 + ci);
        int missing = 0;
        for (int k = 0; k < 300; k++) {
            int len = task_instance(&c, n, -1.0, k % 3, &r, tok, BUF, &p);
            if (!len) continue;
            uint64_t x = tok_hash(tok, len);
            missing += bsearch(&x, h, (size_t)P, sizeof *h, cmp_u64) == NULL;
        }
        EXPECT(bad == 0 && dup == 0 && missing == 0, "%s n=%d: %d bad, %d repeated, %d drawn instances not numbered (pool %lld)",
               NAMES[task], n, bad, dup, missing, P);
        free(h);
    }
}

// A set's instances: all distinct, all of the class, at length n.
static int set_problems(const TaskConfig *c, int n, int split, const TaskSet *s) {
    int bad = 0;
    uint64_t *h = xmalloc(sizeof(uint64_t) * (size_t)(s->count + 1));
    for (int i = 0; i < s->count; i++) {
        const int *t = s->tokens + (size_t)i * s->stride;
        char str[BUF + 1];
        to_bytes(t, s->len[i], str);
        Parsed pr;
        if (check_instance(c->task, str, s->len[i], &pr) || pr.n != n || pr.prompt_len != s->prompt_len[i] ||
            class_of_string(str, s->len[i]) != split) bad++;
        h[i] = tok_hash(t, s->len[i]);
    }
    qsort(h, (size_t)s->count, sizeof *h, cmp_u64);
    for (int i = 1; i < s->count; i++) bad += h[i] == h[i - 1];
    free(h);
    return bad;
}

// Enumeration: a small pool gives each instance of the class exactly once; fewer asked gives that
// many, distinct, of the class; no pool: distinct draws of the class. The same seed, the same set.
static void test_eval_sets(void) {
    TaskConfig c;
    letters_defaults(&c, 0);                                   // copy, n = 2: 676 instances
    int want[3] = {0, 0, 0}, tok[BUF], p;
    for (long long i = 0; i < 676; i++) {
        int len = task_pool_instance(&c, 2, i, tok, BUF, &p);
        char s[64];
        to_bytes(tok, len, s);
        want[class_of_string(s, len)]++;
    }
    EXPECT(want[0] + want[1] + want[2] == 676 && want[1] > 40 && want[2] > 40, "copy n=2 classes %d %d %d", want[0], want[1], want[2]);
    for (int split = 0; split < 3; split++) {
        TaskSet s;
        int got = task_eval_set(&c, 2, -1.0, split, 100000, 5, &s);
        EXPECT(got == want[split] && s.pool == want[split] && set_problems(&c, 2, split, &s) == 0,
               "copy n=2 class %d: %d instances (pool %lld), want every one of %d, once", split, got, s.pool, want[split]);
        task_set_free(&s);
    }
    TaskSet a, b;
    task_eval_set(&c, 2, -1.0, TASK_TEST, 30, 5, &a);
    task_eval_set(&c, 2, -1.0, TASK_TEST, 30, 5, &b);
    EXPECT(a.count == 30 && a.pool == want[TASK_TEST] && set_problems(&c, 2, TASK_TEST, &a) == 0,
           "30 of the copy n=2 test pool: %d, pool %lld", a.count, a.pool);
    EXPECT(a.count == b.count && memcmp(a.tokens, b.tokens, sizeof(int) * (size_t)a.count * a.stride) == 0, "same seed, same set");
    task_set_free(&b);
    task_eval_set(&c, 2, -1.0, TASK_TEST, 30, 6, &b);
    EXPECT(memcmp(a.tokens, b.tokens, sizeof(int) * (size_t)a.count * a.stride) != 0, "seeds 5 and 6 choose the same 30");
    task_set_free(&a); task_set_free(&b);
    // no pool (26^5 > TASK_POOL_MAX): sampled, distinct, of the class
    EXPECT(task_pool_size(&c, 5) < 0, "copy n=5 is not enumerated");
    TaskSet s;
    int got = task_eval_set(&c, 5, -1.0, TASK_VAL, 500, 9, &s);
    EXPECT(got == 500 && s.pool == -1 && set_problems(&c, 5, TASK_VAL, &s) == 0, "copy n=5: %d distinct validation instances", got);
    task_set_free(&s);
    // sum n=7 (9^7 > TASK_POOL_MAX): sampled; 2000 distinct of about 600,000 test instances
    letters_defaults(&c, 9);
    got = task_eval_set(&c, 7, -1.0, TASK_TEST, 2000, 3, &s);
    EXPECT(got == 2000 && set_problems(&c, 7, TASK_TEST, &s) == 0, "sum n=7: %d distinct test instances", got);
    task_set_free(&s);
    // parity n=1: a class without an instance gives an empty set, not an error
    letters_defaults(&c, 10);
    int total = 0;
    for (int split = 0; split < 3; split++) {
        total += task_eval_set(&c, 1, -1.0, split, 50, 1, &s);
        EXPECT(s.count == s.pool, "parity n=1 class %d: %d instances, pool %lld", split, s.count, s.pool);
        task_set_free(&s);
    }
    EXPECT(total == 2, "parity n=1: %d instances over the classes, want 2", total);
}

// The share of addition instances (prompt "A+B=") in which both operands have n digits.
static double add_both_long(const int *tok, const int *len, int count, int stride, int n) {
    int both = 0;
    for (int j = 0; j < count; j++) {
        char str[BUF];
        to_bytes(tok + (size_t)j * stride, len[j], str);
        const char *a = strchr(str, ':'), *plus = strchr(str, '+'), *eq = strchr(str, '=');
        a = a ? a + 1 : str;
        both += plus && eq && plus - a == n && eq - plus - 1 == n;
    }
    return count ? (double)both / count : -1.0;
}

// Addition's evaluation sets are drawn as training draws, at lengths whose pool is enumerated (n = 3)
// and at sampled ones (n = 5): the generator makes the shorter operand's digit count uniform in
// 1..n, so both operands have n digits in about 1/n of its draws, where a uniform choice from the
// enumerated pool gave 81% at n = 3 (the test at n <= 3 was another distribution than training's).
static void test_add_eval_distribution(void) {
    TaskConfig c;
    letters_defaults(&c, 7);
    int stride = task_max_tokens(&c, 3), p;
    enum { DRAWS = 3000 };
    int *tok = malloc(sizeof(int) * (size_t)DRAWS * stride), *len = malloc(sizeof(int) * DRAWS);
    Rng r;
    rng_seed(&r, 21);
    for (int j = 0; j < DRAWS; j++) len[j] = task_instance(&c, 3, -1.0, TASK_TRAIN, &r, tok + (size_t)j * stride, stride, &p);
    double train = add_both_long(tok, len, DRAWS, stride, 3);
    free(tok); free(len);
    EXPECT(train > 0.29 && train < 0.38, "addition n=3 training draws: %.3f with both operands of 3 digits, want about 1/3", train);
    TaskSet s;
    long long pool = task_pool_size(&c, 3);
    int got = task_eval_set(&c, 3, -1.0, TASK_TEST, 1000, 4, &s);
    double test3 = add_both_long(s.tokens, s.len, s.count, s.stride, 3);
    EXPECT(pool > 0 && got == 1000 && s.pool > 1000 && s.pool < pool && set_problems(&c, 3, TASK_TEST, &s) == 0,
           "addition n=3: %d distinct test instances, pool %lld of %lld", got, s.pool, pool);
    EXPECT(test3 > 0.28 && test3 < 0.40, "addition n=3 test set: %.3f with both operands of 3 digits, training %.3f", test3, train);
    task_set_free(&s);
    EXPECT(task_pool_size(&c, 5) < 0, "addition n=5 is not enumerated");
    got = task_eval_set(&c, 5, -1.0, TASK_TEST, 1000, 4, &s);
    double test5 = add_both_long(s.tokens, s.len, s.count, s.stride, 5);
    EXPECT(got == 1000 && test5 > 0.15 && test5 < 0.25, "addition n=5 test set: %d, %.3f with both of 5 digits, want about 1/5", got, test5);
    task_set_free(&s);
    // every test instance of a small pool is still taken when fewer than asked: n = 1's whole class
    got = task_eval_set(&c, 1, -1.0, TASK_TEST, 1000, 4, &s);
    EXPECT(got == s.pool && set_problems(&c, 1, TASK_TEST, &s) == 0, "addition n=1: %d of a test pool of %lld", got, s.pool);
    task_set_free(&s);
}

// The smallest test pool over every default test length of every symbol task with N symbols
// (sampling 50 where the pool is not enumerated).
static long long min_test_pool(int alphabet, int *worst_task, int *worst_n) {
    long long worst = -1;
    for (int task = 0; task < N_TASKS; task++) {
        if (!task_has_symbols(task)) continue;
        TaskConfig c;
        task_defaults(&c, task);
        c.alphabet = alphabet;
        for (int n = 1; n <= c.test_max; n++) {
            TaskSet s;
            task_eval_set(&c, n, -1.0, TASK_TEST, 50, 1, &s);
            long long k = s.pool >= 0 ? s.pool : s.count;
            if (worst < 0 || k < worst) { worst = k; *worst_task = task; *worst_n = n; }
            task_set_free(&s);
        }
    }
    return worst;
}

// The default alphabet gives >= 50 distinct test instances at every test length of every symbol
// task, and is the smallest multiple of 128 that does.
static void test_default_alphabet(void) {
    int t = 0, n = 0;
    long long k = min_test_pool(TASK_DEFAULT_ALPHABET, &t, &n);
    EXPECT(k >= 50, "alphabet %d: %s n=%d has %lld test instances, fewer than 50", TASK_DEFAULT_ALPHABET, NAMES[t], n, k);
    k = min_test_pool(TASK_DEFAULT_ALPHABET - 128, &t, &n);
    EXPECT(k < 50, "alphabet %d would do (%lld test instances at least): lower TASK_DEFAULT_ALPHABET", TASK_DEFAULT_ALPHABET - 128, k);
}

int main(void) {
    test_table();
    test_instances();
    test_empty_split();
    test_split_fraction();
    test_disjoint();
    test_determinism();
    test_retrieval();
    test_lengths();
    test_fill_batch();
    test_check();
    test_errors();
    test_alphabet();
    test_pools();
    test_eval_sets();
    test_add_eval_distribution();
    test_default_alphabet();
    return test_summary("test_tasks");
}
