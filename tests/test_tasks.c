// tests/test_tasks.c: the synthetic tasks (dataset/tasks.h), their instances one by one: the task
// table and its defaults; every task's instances at many lengths parsed back and their targets
// recomputed (tests/task_reader.h, independently of the generators); determinism, the retrieval
// depths, the symbols past 'z', and the rejection of bad flags. Fatal misuse exits through CHECK,
// so those cases run in a forked child whose message is checked. tests/test_tasks_sets.c has the
// splits, packed batches, pools and evaluation sets.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/common.h"
#include "dataset/pcfg.h"
#include "dataset/tasks.h"
#include "tests/task_reader.h"
#include "tests/testutil.h"

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
        if (eg && i == PCFG) {
            int tok[256], k = pcfg_text_tokens(eg + 5 + 5, tok, 256), p = 0;   // after "pcfg:"
            while (p < k && tok[p] != '=') p++;
            int val[256], nv = p < k ? pcfg_eval(tok, p, val, 256) : -1;
            EXPECT(!strncmp(eg + 5, "pcfg:", 5) && nv == k - p - 1 && !memcmp(val, tok + p + 1, sizeof(int) * (size_t)(nv > 0 ? nv : 0)),
                   "pcfg: help example '%s' is not an expression and its value", eg + 5);
        } else if (eg) {
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
        // the paper's lengths (its code, McGill-NLP/length-generalization): the copy/reverse family
        // validates at 2..20 and tests to 40; addition 1..8 digits; the others train to 8 from the
        // data builders' default shortest length (4, parity 3) and test to 16
        // SCAN: commands of up to 25 actions train, 26..48 test; PCFG SET's productivity split:
        // 1..8 function words train, 9..35 test
        int want_min = i == RETRIEVAL ? 64 : i <= REVCP ? 2 : i == ADD || i == SCAN || i == PCFG ? 1 : i == PAR ? 3 : 4;
        int want_max = i == RETRIEVAL ? 128 : i <= REVCP ? 20 : i == SCAN ? 25 : 8;
        int want_test = i == RETRIEVAL ? 512 : i == SCAN ? 48 : i == PCFG ? 35 : 2 * want_max;
        EXPECT(c.task == i && c.train_min == want_min && c.train_max == want_max &&
               c.test_max == want_test && c.distractors == 3 && c.n_depths == 5,
               "%s: defaults %d-%d test %d distractors %d depths %d", t->name, c.train_min, c.train_max, c.test_max,
               c.distractors, c.n_depths);
        int symbols = i <= REVCP || i == SORT;
        // sort: the paper's 50 items (its builder's unique_tokens[:50]); the other symbol tasks the default
        EXPECT(task_has_symbols(i) == symbols && c.alphabet == (i == SORT ? 50 : symbols ? TASK_DEFAULT_ALPHABET : 0),
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
    EXPECT(strstr(text, "copy:kqzd=kqzd") != NULL && strstr(text, "2-20") != NULL, "task_help shows examples and lengths");
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
        if (task == PCFG) continue;              // tokens past the bytes: test_pcfg_instances
        TaskConfig c;
        letters_defaults(&c, task);
        int lengths[64], nl = 0;
        if (task == RETRIEVAL) {
            int ls[] = {44, 45, 64, 100, 128, 300, 512};
            for (int i = 0; i < 7; i++) lengths[nl++] = ls[i];
        } else {
            for (int n = task == LEGO ? 2 : 1; n <= c.test_max; n++) lengths[nl++] = n;
        }
        int bad = 0, empty = 0, count = 0;
        for (int li = 0; li < nl; li++) {
            int n = lengths[li];
            for (int split = 0; split < 3; split++) {  // TASK_TRAIN, TASK_TEST, TASK_VAL
                for (int rep = 0; rep < 6; rep++) {
                    int p = -1, len = task_instance(&c, n, -1.0, split, &r, tok, BUF, &p);
                    if (n > c.train_max) {  // past training: test instances only (SCAN: where a command has n actions)
                        int none = task == SCAN && task_pool_size(&c, n) == 0;
                        EXPECT((len > 0) == (split == TASK_TEST && !none), "%s n=%d > train-max %d, split %d: %d tokens",
                               NAMES[task], n, c.train_max, split, len);
                        if (len == 0) break;
                    }
                    if (len == 0) {  // allowed only where the split may really be empty (tiny spaces)
                        empty++;
                        EXPECT(task == REP || task == REP2X || task == SUCC || task == SUM || task == PAR || n == 1 ||
                               (task == SCAN && (n <= 2 || n == 21 || task_pool_size(&c, n) == 0)),
                               "%s n=%d split %d: no instance", NAMES[task], n, split);
                        break;
                    }
                    count++;
                    to_bytes(tok, len, s);
                    Parsed pr;
                    const char *why = check_instance(task, s, len, &pr);
                    if (why || pr.n != n || pr.prompt_len != p || class_at(&c, n, s, len) != split ||
                        len > task_max_tokens(&c, n) || (task != ADD && task != SORTM && task != SCAN && len != task_max_tokens(&c, n)) ||
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
        EXPECT(empty < nl / 2 + 1 + (task == SCAN ? nl / 2 : 0), "%s: %d empty (length, split) pairs", NAMES[task], empty);
        if (task == RETRIEVAL) continue;
        EXPECT(count > 0, "%s: no instance", NAMES[task]);
    }

    // addition: either operand may be the longer one, the other of every length 1..n
    TaskConfig c;
    letters_defaults(&c, ADD);
    int seen_longer[2] = {0}, seen_short[6] = {0};
    for (int i = 0; i < 400; i++) {
        int p, len = task_instance(&c, 5, -1.0, TASK_TRAIN, &r, tok, BUF, &p);
        to_bytes(tok, len, s);
        Parsed pr;
        if (check_instance(ADD, s, len, &pr)) continue;
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
    const char *why = check_instance(ADD, s, len, &pr);
    EXPECT(len > 0 && why == NULL && pr.n == 200, "addition at n=200: %s", why ? why : "ok");
}

// Hand-worked instances: the pool instance of a number worked out by hand (tasks.h's numbering)
// is the string written here, and the reader (tests/task_reader.c) accepts or refuses strings
// whose answers were worked out by hand.
static void test_forms(void) {
    struct { int task, n; long long i; const char *want; } pool[] = {
        // k = 10, q = 16, z = 25: 10 x 26^2 + 16 x 26 + 25 = 7201
        {COPY, 3, 7201, "copy:kqz=kqz\n"},
        {COPY2X, 3, 7201, "cp2x:kqz=kqz|kqz\n"},
        {REV, 3, 7201, "rev:kqz=zqk\n"},
        {REV2X, 3, 7201, "rev2x:kqz=zqk|zqk\n"},
        {REVCP, 3, 7201, "rvcp:kqz=zqk|kqz\n"},
        {SORT, 3, 7201, "sort:kqz=kqz\n"},
        {SORT, 3, 25 * 676 + 10 * 26 + 16, "sort:zkq=kqz\n"},
        {REP2X, 2, 6, "rep2x:gg=gggg\n"},
        {SUCC, 2, 25, "chg:zz=aa\n"},
        // (X, Y) = (g, q): 6 x 25 + (16 - 1) = 165; (q, g): 16 x 25 + 6 = 406
        {REPL, 3, 165, "repl:g>q:ggg=qqq\n"},
        {REPL, 3, 406, "repl:q>g:qqq=ggg\n"},
        {REPL, 2, 0, "repl:a>b:aa=bb\n"},
        {REPL, 2, 649, "repl:z>y:zz=yy\n"},
        // the paper's example: x = 1 (x index 3), -2x^2 (t = 2 x 7 + 1 = 15), -1x^0 (t = 2):
        // (15 x 28 + 2) x 5 + 3 = 2113; -2 - 1 = -3, mod 10 = 7
        {POLY, 2, 2113, "poly:+1:-2x2+-1x0=7\n"},
        // x = -2 (index 0), 3x^2 (t = 20), -1x^1 (t = 9): 569 x 5 = 2845; 12 + 2 = 14 -> 4
        {POLY, 2, 2845, "poly:-2:+3x2+-1x1=4\n"},
        {POLY, 1, 27, "poly:+0:+2x0=2\n"},     // 0^0 = 1, as Python's
        {POLY, 1, 105, "poly:-2:-3x3=4\n"},    // -3 x -8 = 24
        {POLY, 1, 39, "poly:+2:-3x1=4\n"},     // -6 mod 10 = 4 (non-negative)
        {SORTM, 1, 0, "sortm:10=10\n"},
        {SORTM, 1, 9989, "sortm:9999=9999\n"},
        {SUM, 4, 102, "sum:1234=0\n"},          // base-9 digits 0 1 2 3: 81 + 18 + 3
        {PAR, 4, 13, "par:1101=o\n"},
        {ADD, 2, 0, "add:0+10=10\n"},           // row A = 0 holds B in 10..99
    };
    int tok[BUF], p;
    char s[BUF + 1];
    for (size_t k = 0; k < sizeof pool / sizeof *pool; k++) {
        TaskConfig c;
        letters_defaults(&c, pool[k].task);
        int len = task_pool_instance(&c, pool[k].n, pool[k].i, tok, BUF, &p);
        to_bytes(tok, len, s);
        EXPECT(strcmp(s, pool[k].want) == 0 && p == (int)(strchr(pool[k].want, '=') - pool[k].want) + 1,
               "%s instance %lld: '%s', want '%s'", NAMES[pool[k].task], pool[k].i, s, pool[k].want);
    }
    // the reader: right answers pass, wrong ones (worked by hand) fail
    struct { int task; const char *s; int ok; } read[] = {
        {LEGO, "lego:q:-1,t:-q,c:+t,f:-c,r:+f?f=-1\n", 1},   // q -1, t +1, c +1, f -1
        {LEGO, "lego:q:-1,t:-q,c:+t,f:-c,r:+f?r=-1\n", 1},
        {LEGO, "lego:q:-1,t:-q,c:+t,f:-c,r:+f?f=+1\n", 0},
        {LEGO, "lego:q:-1,t:-q,c:+t,f:-c,r:+f?t=+1\n", 0},   // t is in the first half
        {LEGO, "lego:q:-1,t:-q,c:+q,f:-c,r:+f?f=-1\n", 0},   // c names q, not the one before
        {LEGO, "lego:a:+1,b:+a?b=+1\n", 1},
        {LEGO, "lego:a:+1,b:-a,c:-b?c=+1\n", 1},              // ceil(3/2) = 1: b and c may be asked
        {POLY, "poly:+1:-2x2+-1x0=7\n", 1},
        {POLY, "poly:+1:-2x2+-1x0=3\n", 0},
        {POLY, "poly:-1:+3x3+-3x2+-2x1=6\n", 1},            // -3 - 3 + 2 = -4 -> 6
        {SORTM, "sortm:523,17,9001,17=17,17,523,9001\n", 1},
        {SORTM, "sortm:523,17=523,17\n", 0},
        {SORTM, "sortm:5,17=5,17\n", 0},                      // 5 is below 10
        {REPL, "repl:g>q:ggg=ggg\n", 0},
        {REPL, "repl:g>g:ggg=ggg\n", 0},                       // X != Y
        {COPY2X, "cp2x:kqz=kqzkqz\n", 0},                      // no '|'
        {REV2X, "rev2x:kqz=zqk|kqz\n", 0},                     // that is reverse-copy
    };
    for (size_t k = 0; k < sizeof read / sizeof *read; k++) {
        Parsed pr;
        const char *why = check_instance(read[k].task, read[k].s, (int)strlen(read[k].s), &pr);
        EXPECT((why == NULL) == read[k].ok, "%s '%s': %s", NAMES[read[k].task], read[k].s, why ? why : "accepted");
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
        int n = 2 + i % (c.test_max - 1), split = i % 3 == 0 || n > c.train_max ? TASK_TEST : TASK_TRAIN;
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
        if (task == PCFG) continue;              // tokens past the bytes: test_pcfg_instances
        uint64_t a = stream_hash(task, 5, 30), b = stream_hash(task, 5, 30), d = stream_hash(task, 6, 30);
        EXPECT(a == b, "%s: the same seed gives different instances", NAMES[task]);
        EXPECT(a != d, "%s: seeds 5 and 6 give the same instances", NAMES[task]);
        if (task != RETRIEVAL) all = all * 1000003 + stream_hash(task, 1, 40);
    }
    const uint64_t pinned = 0xb9f24acc99e1b9f1ull;   // addition's digit counts on the paper's grid
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
            for (int k = 0; k < 2; k++) {
                int split = n > c.train_max ? TASK_TEST : k;   // past training: test instances only
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
        {SORT, 1, 8, 16, 3, 5, 0, "--alphabet 0"},
        {ADD, 1, 8, 16, 3, 5, 26, "--alphabet applies to the symbol tasks (copy, "},
        {LEGO, 1, 8, 16, 3, 5, 0, "--train-min 1 is below the shortest lego instance (length 2)"},
        {LEGO, 4, 8, 27, 3, 5, 0, "--test-max 27: lego builds lengths up to 26"},
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
        {LEGO, 2, 26, 26, 3, 5, 0}, {REPL, 1, 20, 40, 3, 5, 2},
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

// Symbols past 'z' are tokens 256.., the vocabulary grows with them, copy-successor wraps to the first
// symbol, sort orders by symbol index, and task_token_text prints them as <k>.
static void test_alphabet(void) {
    TaskConfig c;
    task_defaults(&c, 0);
    EXPECT(task_vocab(&c) == 256 + TASK_DEFAULT_ALPHABET - 26, "copy: vocabulary %d", task_vocab(&c));
    c.alphabet = 10;
    EXPECT(task_vocab(&c) == 256, "alphabet 10: vocabulary %d", task_vocab(&c));
    task_defaults(&c, ADD);
    EXPECT(task_vocab(&c) == 256, "addition: vocabulary %d", task_vocab(&c));

    int tok[BUF], p;
    // copy-successor with 30 symbols: instance i has symbol i, the target symbol (i + 1) mod 30
    task_defaults(&c, SUCC);
    c.alphabet = 30;
    int sym[30] = {0};
    for (int i = 0; i < 30; i++) {
        int len = task_pool_instance(&c, 3, i, tok, BUF, &p);
        int x = tok[4], y = (i + 1) % 30, want_x = i < 26 ? 'a' + i : 256 + i - 26, want_y = y < 26 ? 'a' + y : 256 + y - 26;
        EXPECT(len == 12 && p == 8 && x == want_x && tok[5] == x && tok[6] == x && tok[8] == want_y && tok[10] == want_y &&
               tok[11] == '\n', "copy-successor symbol %d: got %d -> %d", i, x, tok[8]);
    }
    // every draw (of any class) is a symbol of the alphabet; all 30 show up
    Rng r;
    rng_seed(&r, 8);
    for (int k = 0; k < 600; k++) {
        if (!task_instance(&c, 2, -1.0, k % 3, &r, tok, BUF, &p)) continue;
        int x = tok[4], idx = x >= 256 ? x - 256 + 26 : x - 'a';
        if (idx >= 0 && idx < 30) sym[idx] = 1;
        else EXPECT(0, "copy-successor drew token %d, not a symbol of 30", x);
    }
    int all = 1;
    for (int i = 0; i < 30; i++) all &= sym[i];
    EXPECT(all, "600 draws of 30 symbols miss some");
    // sort: symbol order, letters before the symbols past 'z'
    task_defaults(&c, SORT);
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

// PCFG, as tokens (its symbols are past the bytes): at every length and class, the tag, an
// expression of exactly n function words, '=', its value by pcfg_eval (tested on the paper's
// examples in tests/test_pcfg.c), '\n'; the class rule; within task_max_tokens and the vocabulary;
// the same seed, the same instances.
static int class_at_tokens(const TaskConfig *c, int n, const int *tok, int len) {
    return n > c->train_max ? TASK_TEST : class_of_tokens(tok, len);
}

static void test_pcfg_instances(void) {
    TaskConfig c;
    task_defaults(&c, PCFG);
    EXPECT(task_vocab(&c) == 256 + 520, "pcfg: vocabulary %d, expected 256 + 520 symbols", task_vocab(&c));
    int tok[BUF], val[BUF], bad = 0, count = 0;
    uint64_t h[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        Rng r;
        rng_seed(&r, 17);
        for (int n = 1; n <= c.test_max; n++)
            for (int split = 0; split < 3; split++) {
                int p = -1, len = task_instance(&c, n, -1.0, split, &r, tok, BUF, &p);
                if (n > c.train_max && split != TASK_TEST) { bad += len != 0; continue; }
                if (!len) { bad++; continue; }
                count += pass == 0;
                for (int i = 0; i < len; i++) h[pass] = h[pass] * 1000003 + (uint64_t)tok[i];
                int ok = len >= 8 && !memcmp((int[]){'p', 'c', 'f', 'g', ':'}, tok, 5 * sizeof(int)) && tok[p - 1] == '=' &&
                         tok[len - 1] == '\n' && len <= task_max_tokens(&c, n) && class_at_tokens(&c, n, tok, len) == split;
                int nv = pcfg_eval(tok + 5, p - 6, val, BUF);
                ok = ok && pcfg_functions(tok + 5, p - 6) == n && nv == len - p - 1 &&
                     !memcmp(val, tok + p, sizeof(int) * (size_t)nv);
                for (int i = 0; i < len; i++) ok = ok && tok[i] >= 0 && tok[i] < task_vocab(&c);
                if (!ok && bad++ < 3) fprintf(stderr, "  pcfg n=%d split %d: a bad instance (%d tokens, prompt %d)\n", n, split, len, p);
            }
    }
    EXPECT(bad == 0 && count == 8 * 3 + 27, "pcfg: %d bad instances of %d (expected one at each of 8 training lengths x 3 classes and 27 test lengths)", bad, count);
    EXPECT(h[0] == h[1], "pcfg: the same seed gives different instances");
}

int main(void) {
    test_pcfg_instances();
    test_table();
    test_instances();
    test_forms();
    test_determinism();
    test_retrieval();
    test_check();
    test_errors();
    test_alphabet();
    return test_summary("test_tasks");
}
