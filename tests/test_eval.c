// tests/test_eval.c: the task evaluation and the fairness of comparisons.
//   - the batched exact match (teacher forcing, eval.c) agrees with real greedy decoding through
//     the KV cache on every instance, for every scheme, on a briefly trained model (so that some
//     answers are right and some wrong);
//   - task_evaluate's buckets, the in/out-of-distribution means and the CSV agree;
//   - a learned position table: instances past it are skipped, never run off the table;
//   - fairness: with the same seed, every tensor two schemes share starts from the same values
//     (the task's batches cannot depend on the scheme: task_fill_batch sees only the seed's stream).
#include <string.h>
#include <unistd.h>

#include "dataset/tasks.h"
#include "eval.h"
#include "model.h"
#include "tests/testutil.h"

static GPTConfig config(const char *pe, int context) {
    GPTConfig c = { .vocab_size = 256, .n_layer = 2, .n_head = 2, .n_embd = 32, .max_seq_len = context };
    char msg[256];
    posenc_defaults(&c.pe, c.n_layer);
    if (!posenc_schedule(&c.pe, c.n_layer, pe, NULL, NULL, msg, sizeof msg)) { fprintf(stderr, "%s\n", msg); exit(1); }
    if (!gpt_config_check(&c, msg, sizeof msg)) { fprintf(stderr, "%s\n", msg); exit(1); }
    return c;
}

static void train(GPT *m, const TaskConfig *tc, int steps, uint64_t seed) {
    Batch b;
    batch_alloc(&b, 8, 64);
    Rng rng;
    rng_seed(&rng, seed);
    AdamWConfig o = { 3e-3, 0.9, 0.95, 1e-8, 0.0 };
    for (int s = 0; s < steps; s++) {
        task_fill_batch(tc, &rng, &b);
        double w = 0;
        for (int i = 0; i < b.B * b.T; i++) w += b.weights[i];
        gpt_zero_grad(m);
        gpt_forward(m, &b);
        gpt_backward(m, 1.0 / w);
        gpt_adamw(m, &o, s + 1, gpt_clip_scale(gpt_grad_norm(m), 1.0));
    }
    batch_free(&b);
}

// instances of lengths 1..test_max, `per` each, from the test split
static int make_instances(const TaskConfig *tc, int per, int **inst, int *len, int *plen, int cap) {
    Rng rng;
    rng_seed(&rng, 99);
    int n = 0;
    for (int L = 1; L <= tc->test_max; L++)
        for (int i = 0; i < per && n < cap; i++) {
            inst[n] = malloc(sizeof(int) * task_max_tokens(tc, L));
            len[n] = task_instance(tc, L, -1, TASK_TEST, &rng, inst[n], task_max_tokens(tc, L), &plen[n]);
            if (len[n]) n++; else free(inst[n]);
        }
    return n;
}

// the greedy answer of instance i through the KV cache: 1 when it equals the target exactly
static int greedy_ok(GPT *m, const int *inst, int len, int plen) {
    int out[256];
    int got = greedy_decode(m, inst, plen, len - plen, '\n', out);
    if (got != len - plen) return 0;
    for (int t = 0; t < got; t++) if (out[t] != inst[plen + t]) return 0;
    return 1;
}

static void test_equivalence(void) {
    static const char *schemes[] = { "nope", "learned", "sinusoidal", "rope", "alibi", "t5", "kerple", "fire", "xpos", "p-rope" };
    TaskConfig tc;
    task_defaults(&tc, task_find("copy-repeat"));
    tc.train_min = 1; tc.train_max = 6; tc.test_max = 12;
    enum { CAP = 200 };
    int *inst[CAP], len[CAP], plen[CAP], ok[CAP];
    int n = make_instances(&tc, 12, inst, len, plen, CAP);
    EXPECT(n > 100, "test instances: %d", n);
    int right = 0, wrong = 0;
    for (size_t s = 0; s < sizeof schemes / sizeof *schemes; s++) {
        GPTConfig c = config(schemes[s], 64);
        GPT m;
        gpt_build(&m, &c, 5, 64);
        train(&m, &tc, 60, 7);
        task_exact_match(&m, inst, len, plen, n, ok);
        int mismatch = 0;
        for (int i = 0; i < n; i++) {
            int g = greedy_ok(&m, inst[i], len[i], plen[i]);
            mismatch += g != ok[i];
            right += ok[i] == 1; wrong += ok[i] == 0;
        }
        EXPECT(mismatch == 0, "%s: batched exact match and KV-cache greedy decoding disagree on %d of %d instances",
               schemes[s], mismatch, n);
        gpt_free(&m);
    }
    // the comparison above means something only if the models get some answers right and some wrong
    EXPECT(right > 50 && wrong > 50, "right %d, wrong %d: the models should be partly trained", right, wrong);
    for (int i = 0; i < n; i++) free(inst[i]);
}

static void test_buckets_and_csv(void) {
    TaskConfig tc;
    task_defaults(&tc, task_find("reverse"));
    tc.train_min = 1; tc.train_max = 4; tc.test_max = 8;
    GPTConfig c = config("alibi", 64);
    GPT m;
    gpt_build(&m, &c, 3, 64);
    train(&m, &tc, 30, 1);
    TaskScore s[64];
    int nb = task_evaluate(&m, &tc, 10, 42, s, 64, 0);
    EXPECT(nb >= 6 && nb <= 8, "buckets: %d (lengths 1..8, a length without test instances has none)", nb);
    long long num[2] = { 0, 0 }, den[2] = { 0, 0 };
    for (int i = 0; i < nb; i++) {
        EXPECT(s[i].n == 10 && s[i].skipped == 0 && s[i].correct >= 0 && s[i].correct <= 10, "bucket %d: n %d correct %d", i, s[i].n, s[i].correct);
        EXPECT(s[i].ood == (s[i].length > 4) && s[i].depth == -1, "bucket %d: ood %d depth %g", i, s[i].ood, s[i].depth);
        num[s[i].ood] += s[i].correct; den[s[i].ood] += s[i].n;
    }
    EXPECT_NEAR(task_accuracy(s, nb, 0), (double)num[0] / den[0], 0, 1e-12, "in-distribution mean");
    EXPECT_NEAR(task_accuracy(s, nb, 1), (double)num[1] / den[1], 0, 1e-12, "out-of-distribution mean");
    // the same seed gives the same instances and so the same numbers
    TaskScore s2[64];
    EXPECT(task_evaluate(&m, &tc, 10, 42, s2, 64, 0) == nb && memcmp(s, s2, sizeof(TaskScore) * nb) == 0, "evaluation is deterministic");
    char path[] = "/tmp/test_eval_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    task_scores_write(path, "reverse", "alibi", 42, s, nb);
    FILE *f = fopen(path, "r");
    char line[256];
    EXPECT(f && fgets(line, sizeof line, f) && strcmp(line, "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped\n") == 0, "CSV header");
    int rows = 0;
    while (f && fgets(line, sizeof line, f)) {
        int length, n, correct, skipped; char split[8]; double acc;
        int k = sscanf(line, "reverse,alibi,42,%d,,%3[a-z],%d,%d,%lf,%d", &length, split, &n, &correct, &acc, &skipped);
        EXPECT(k == 6 && length == s[rows].length && !strcmp(split, s[rows].ood ? "ood" : "id") && n == s[rows].n
               && correct == s[rows].correct && fabs(acc - (double)correct / n) < 1e-6, "CSV row %d: %s", rows, line);
        rows++;
    }
    EXPECT(rows == nb, "CSV rows %d, buckets %d", rows, nb);
    if (f) fclose(f);
    remove(path);
    gpt_free(&m);
}

static void test_learned_table(void) {
    TaskConfig tc;
    task_defaults(&tc, task_find("copy-repeat"));
    tc.train_min = 1; tc.train_max = 4; tc.test_max = 12;     // rep: + n + = + n + newline = 2n + 6 tokens
    GPTConfig c = config("learned", 16);
    GPT m;
    gpt_build(&m, &c, 3, 64);
    gpt_reserve_positions(&m, 64);
    EXPECT(gpt_position_limit(&m) == 16, "a learned table's limit is its context: %d", gpt_position_limit(&m));
    TaskScore s[64];
    int nb = task_evaluate(&m, &tc, 4, 1, s, 64, 0);
    for (int i = 0; i < nb; i++) {
        int tokens = 2 * s[i].length + 6;
        EXPECT(tokens > 16 ? s[i].skipped == 4 && s[i].n == 0 : s[i].skipped == 0 && s[i].n == 4,
               "length %d (%d tokens): n %d skipped %d", s[i].length, tokens, s[i].n, s[i].skipped);
    }
    double ood = task_accuracy(s, nb, 1);
    long long c_ood = 0, all_ood = 0;
    for (int i = 0; i < nb; i++) if (s[i].ood) { c_ood += s[i].correct; all_ood += s[i].n + s[i].skipped; }
    EXPECT(all_ood > 0 && fabs(ood - (double)c_ood / all_ood) < 1e-12, "skipped instances count as wrong: %g", ood);
    int prompt[12] = { 'r', 'e', 'p', ':', 'a', 'a', 'a', 'a', 'a', 'a', 'a', '=' }, out[64];
    int got = greedy_decode(&m, prompt, 12, 40, -1, out);
    EXPECT(got == 16 - 12 + 1, "greedy decoding stops at the table's end: %d tokens", got);
    gpt_free(&m);
}

static void test_fair_init(void) {
    static const char *schemes[] = { "learned", "sinusoidal", "rope", "alibi", "t5", "fire" };
    GPTConfig c0 = config("nope", 32);
    GPT ref;
    gpt_build(&ref, &c0, 1234, 0);
    for (size_t s = 0; s < sizeof schemes / sizeof *schemes; s++) {
        GPTConfig c = config(schemes[s], 32);
        GPT m;
        gpt_build(&m, &c, 1234, 0);
        int shared = 0, same = 0;
        for (int i = 0; i < ref.n_tensors; i++) {
            const TensorInfo *a = &ref.tensors[i], *b = gpt_find_tensor(&m, a->name);
            if (!b) continue;
            shared++;
            same += a->rows == b->rows && a->cols == b->cols &&
                    memcmp(ref.params + a->offset, m.params + b->offset, sizeof(real) * (size_t)a->rows * a->cols) == 0;
        }
        EXPECT(shared == ref.n_tensors && same == shared, "%s: %d of %d shared tensors start equal to nope's", schemes[s], same, shared);
        gpt_free(&m);
    }
    gpt_free(&ref);
}

int main(void) {
    test_equivalence();
    test_buckets_and_csv();
    test_learned_table();
    test_fair_init();
    return test_summary("test_eval");
}
