// tests/fuzz/fuzz_task.c: the task instances a --task command line asks for. The input is ./train
// flags, one per line (parse_args); with --task, the task settings are made as train_tasks.c's setup_task
// makes them (task_find, the length/alphabet/retrieval flags, task_check), then instances are
// generated at the shortest and longest test lengths of every class, by number from the pool, as an
// evaluation set (pools up to 4096) and as a packed training batch. Every instance fits
// task_max_tokens, has a prompt inside it, and tokens inside the task's vocabulary.
#include <string.h>

#include "dataset/tasks.h"
#include "eval/eval.h"
#include "tests/fuzz/fuzz.h"
#include "train_options.h"

enum { MAX_ARGS = 64, MAX_TOKENS = 1 << 14 };

static void check_instance(const TaskConfig *tc, int n, const int *tok, int len, int prompt_len) {
    FUZZ_ASSERT(len >= 0 && len <= task_max_tokens(tc, n));
    if (!len) return;
    FUZZ_ASSERT(prompt_len >= 1 && prompt_len < len);
    for (int i = 0; i < len; i++) FUZZ_ASSERT(tok[i] >= 0 && tok[i] < task_vocab(tc));
}

void fuzz_one(const uint8_t *data, size_t size) {
    char *argv[MAX_ARGS + 1];
    int argc = fuzz_argv(data, size, "train", argv, MAX_ARGS + 1);
    if (fuzz_asks_help(argv, argc)) return;
    Args a;
    parse_args(&a, argc, argv);
    const Options *o = &a.o;
    if (!o->task) return;

    // setup_task (train_tasks.c)
    char msg[512];
    int id = task_find(o->task);
    CHECK(id >= 0, "--task %s is not a task", o->task);
    TaskConfig tc;
    task_defaults(&tc, id);
    if (o->train_min) tc.train_min = o->train_min;
    if (o->train_max) tc.train_max = o->train_max;
    if (o->test_max) tc.test_max = o->test_max;
    else if (o->train_max) tc.test_max = task_scaled_test_max(id, tc.train_max);
    if (o->distractors >= 0) tc.distractors = o->distractors;
    if (o->depths) tc.n_depths = o->depths;
    if (o->alphabet) tc.alphabet = o->alphabet;
    CHECK(task_check(&tc, msg, sizeof msg), "%s", msg);
    FUZZ_ASSERT(task_vocab(&tc) >= 256);
    if (task_max_tokens(&tc, tc.test_max) > MAX_TOKENS) return;   // valid, but slow to fuzz

    static int lengths[EVAL_MAX_LENGTHS], tok[MAX_TOKENS];
    double depths[TASK_MAX_DEPTHS];
    int nl = task_test_lengths(&tc, lengths, EVAL_MAX_LENGTHS), nd = task_test_depths(&tc, depths, TASK_MAX_DEPTHS);
    FUZZ_ASSERT(nl >= 1 && nd >= 1 && nd <= TASK_MAX_DEPTHS);
    for (int k = 1; k < nl; k++) FUZZ_ASSERT(lengths[k] > lengths[k - 1]);
    FUZZ_ASSERT(lengths[nl - 1] <= tc.test_max);
    Rng rng;
    rng_seed(&rng, (uint64_t)o->seed);
    const int some[] = { lengths[0], lengths[nl - 1], tc.train_min, tc.train_max };
    for (int k = 0; k < 4; k++) {
        int n = some[k], plen, len;
        for (int split = TASK_TRAIN; split <= TASK_VAL; split++) {
            if (split == TASK_TRAIN && n > tc.train_max) continue;
            len = task_instance(&tc, n, depths[nd - 1], split, &rng, tok, MAX_TOKENS, &plen);
            check_instance(&tc, n, tok, len, plen);
        }
        long long pool = task_pool_size(&tc, n);
        FUZZ_ASSERT(pool >= -1 && pool <= TASK_POOL_MAX);
        for (long long i = 0; i < pool; i += pool / 2 > 1 ? pool / 2 : 1) {
            len = task_pool_instance(&tc, n, i, tok, MAX_TOKENS, &plen);
            FUZZ_ASSERT(len > 0);
            check_instance(&tc, n, tok, len, plen);
        }
        if (pool > 4096) continue;   // an evaluation set classifies every instance of its pool: slow
        TaskSet s;
        int got = task_eval_set(&tc, n, depths[0], TASK_TEST, 3, (uint64_t)o->seed, &s);
        FUZZ_ASSERT(got >= 0 && got <= 3 && got == s.count);
        for (int i = 0; i < got; i++) check_instance(&tc, n, s.tokens + (size_t)i * s.stride, s.len[i], s.prompt_len[i]);
        task_set_free(&s);
    }

    Batch b;
    batch_alloc(&b, 2, task_max_tokens(&tc, tc.train_max) + 1);
    task_fill_batch(&tc, &rng, &b);
    for (int i = 0; i < b.B * b.T; i++)
        FUZZ_ASSERT(b.tokens[i] >= 0 && b.tokens[i] < task_vocab(&tc) && b.targets[i] >= 0 && b.targets[i] < task_vocab(&tc));
    batch_free(&b);
}
