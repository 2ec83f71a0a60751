// tests/test_eval.c: the task evaluation and the fairness of comparisons.
//   - the batched exact match (teacher forcing, eval/eval.c) agrees with real greedy decoding through
//     the KV cache on every instance, for every scheme, on a briefly trained model (so that some
//     answers are right and some wrong);
//   - task_evaluate's buckets (every length, distinct instances, all of a small pool), the
//     in/out-of-distribution means and the CSV agree;
//   - top_share: the share of the most common answer (1 for a model that ignores its input);
//   - a learned position table: instances past it are skipped, never run off the table;
//   - generation (sample_tokens): each token's logits are those of a full forward over the window
//     README describes (the cache restarted from the last half of the text when full);
//   - fairness: with the same seed, every tensor two schemes share starts from the same values
//     (the task's batches cannot depend on the scheme: task_fill_batch sees only the seed's stream).
#include <string.h>
#include <unistd.h>

#include "dataset/tasks.h"
#include "eval/eval.h"
#include "model.h"
#include "tests/testutil.h"

static GPTConfig config(const char *pe, int context, int vocab) {
    GPTConfig c = { .vocab_size = vocab, .n_layer = 2, .n_head = 2, .n_embd = 32, .max_seq_len = context };
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
        gpt_forward(m, &b, NULL);
        gpt_backward(m, 1.0 / w, NULL);
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
    tc.train_min = 1; tc.train_max = 6; tc.test_max = 12; tc.alphabet = 26;   // bytes: a vocabulary of 256
    enum { CAP = 200 };
    int *inst[CAP], len[CAP], plen[CAP], ok[CAP];
    int n = make_instances(&tc, 12, inst, len, plen, CAP);
    EXPECT(n > 100, "test instances: %d", n);
    int right = 0, wrong = 0;
    for (size_t s = 0; s < sizeof schemes / sizeof *schemes; s++) {
        GPTConfig c = config(schemes[s], 64, 256);
        GPT m;
        gpt_build(&m, &c, 5, 64);
        train(&m, &tc, 90, 7);
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
    tc.train_min = 1; tc.train_max = 4; tc.test_max = 8; tc.alphabet = 26;
    GPTConfig c = config("alibi", 64, 256);
    GPT m;
    gpt_build(&m, &c, 3, 64);
    train(&m, &tc, 30, 1);
    TaskScore s[64];
    int nb = task_evaluate(&m, &tc, 10, 42, s, 64, 0);
    EXPECT(nb == 8, "buckets: %d (lengths 1..8, each one, even without test instances)", nb);
    long long num[2] = { 0, 0 }, den[2] = { 0, 0 };
    for (int i = 0; i < nb; i++) {
        // length 1 has 26 instances, so a few test ones: all of them; 26^5 is past the enumeration
        long long want_pool = -1;
        if (s[i].length <= 4) {
            TaskSet all;
            task_eval_set(&tc, s[i].length, -1.0, TASK_TEST, 1 << 20, 0, &all);
            want_pool = all.pool;
            task_set_free(&all);
        }
        int want_n = want_pool >= 0 && want_pool < 10 ? (int)want_pool : 10;
        EXPECT(s[i].length == i + 1 && s[i].pool == want_pool && s[i].n == want_n && s[i].skipped == 0 && s[i].correct >= 0 &&
               s[i].correct <= s[i].n, "bucket %d: length %d n %d (want %d) pool %lld (want %lld) correct %d", i, s[i].length,
               s[i].n, want_n, s[i].pool, want_pool, s[i].correct);
        EXPECT(s[i].n ? s[i].top_share >= 1.0 / s[i].n && s[i].top_share <= 1 : isnan(s[i].top_share),
               "bucket %d: top_share %g of %d", i, s[i].top_share, s[i].n);
        EXPECT(s[i].ood == (s[i].length > 4) && s[i].depth == -1, "bucket %d: ood %d depth %g", i, s[i].ood, s[i].depth);
        num[s[i].ood] += s[i].correct; den[s[i].ood] += s[i].n;
    }
    EXPECT(s[0].n < 10, "length 1 holds all %d test instances of 26", s[0].n);
    EXPECT_NEAR(task_accuracy(s, nb, 0), (double)num[0] / den[0], 0, 1e-12, "in-distribution mean");
    EXPECT_NEAR(task_accuracy(s, nb, 1), (double)num[1] / den[1], 0, 1e-12, "out-of-distribution mean");
    // the same seed gives the same instances and so the same numbers
    TaskScore s2[64];
    EXPECT(task_evaluate(&m, &tc, 10, 42, s2, 64, 0) == nb && memcmp(s, s2, sizeof(TaskScore) * nb) == 0, "evaluation is deterministic");
    char path[] = "/tmp/test_eval_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    s[2].n = 0; s[2].correct = 0;                              // an empty bucket: empty accuracy and top_share
    task_scores_write(path, "reverse", "alibi", 42, s, nb);
    FILE *f = fopen(path, "r");
    char line[256];
    EXPECT(f && fgets(line, sizeof line, f) &&
           strcmp(line, "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share\n") == 0, "CSV header");
    int rows = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *col[16] = { 0 }, *p = line;                          // the 13 columns, empty ones included
        int k = 0;
        line[strcspn(line, "\n")] = 0;
        for (col[k++] = p; (p = strchr(p, ',')) && k < 16; ) { *p++ = 0; col[k++] = p; }
        const TaskScore *r = &s[rows];
        char want_pool[32] = "", want_share[32] = "", want_acc[32] = "";
        if (r->pool >= 0) snprintf(want_pool, sizeof want_pool, "%lld", r->pool);
        if (r->n) snprintf(want_share, sizeof want_share, "%.4f", r->top_share);
        if (r->n) snprintf(want_acc, sizeof want_acc, "%.6f", (double)r->correct / r->n);
        EXPECT(k == 13 && !strcmp(col[0], "reverse") && !strcmp(col[1], "alibi") && !strcmp(col[2], "42") &&
               atoi(col[3]) == r->length && !*col[4] && !strcmp(col[5], r->ood ? "ood" : "id") && atoi(col[6]) == r->n &&
               atoi(col[7]) == r->correct && !strcmp(col[8], want_acc) && atoi(col[9]) == r->skipped &&
               !strcmp(col[10], want_pool) && atoi(col[11]) == r->n + r->skipped && !strcmp(col[12], want_share),
               "CSV row %d: %d columns, length %s n %s pool '%s' (want '%s') distinct %s top_share '%s' (want '%s')", rows, k,
               col[3], k > 6 ? col[6] : "", k > 10 ? col[10] : "", want_pool, k > 11 ? col[11] : "", k > 12 ? col[12] : "", want_share);
        rows++;
    }
    EXPECT(rows == nb, "CSV rows %d, buckets %d", rows, nb);
    if (f) fclose(f);
    remove(path);
    gpt_free(&m);
}

// task_top_share: answers compared as token sequences; a model whose weights are all zero gives
// every instance the same answer (token 0, repeated), so every bucket's share is 1.
static void test_top_share(void) {
    int a[] = { 5, 6, '\n' }, b[] = { 5, 6, '\n' }, c2[] = { 5, 6 }, d[] = { 7, '\n' };
    const int *ans[] = { a, b, c2, d, a };
    int len[] = { 3, 3, 2, 2, 3 };
    EXPECT_NEAR(task_top_share(ans, len, 5), 0.6, 0, 1e-12, "three of five equal");
    EXPECT_NEAR(task_top_share(ans + 2, len + 2, 2), 0.5, 0, 1e-12, "a prefix is another answer");
    EXPECT_NEAR(task_top_share(ans, len, 2), 1.0, 0, 1e-12, "two equal answers");
    EXPECT(isnan(task_top_share(ans, len, 0)), "no answer: NAN");

    TaskConfig tc;
    task_defaults(&tc, task_find("copy"));
    tc.train_min = 1; tc.train_max = 3; tc.test_max = 6;
    GPTConfig c = config("nope", 32, task_vocab(&tc));
    GPT m;
    gpt_build(&m, &c, 1, 0);
    memset(m.weights.params, 0, sizeof(real) * m.weights.num_params);
    TaskScore s[16];
    int nb = task_evaluate(&m, &tc, 20, 3, s, 16, 0);
    int bad = 0;
    for (int i = 0; i < nb; i++) bad += s[i].n != 20 || s[i].correct != 0 || s[i].top_share != 1.0;
    EXPECT(nb == 6 && bad == 0, "a constant model: %d of %d buckets without top_share 1 (first: n %d, share %g)", bad, nb,
           s[0].n, s[0].top_share);
    gpt_free(&m);
    // a partly trained model answers by its input
    task_defaults(&tc, task_find("copy-repeat"));
    tc.train_min = 1; tc.train_max = 6; tc.test_max = 6; tc.alphabet = 26;
    c = config("nope", 64, 256);
    gpt_build(&m, &c, 5, 64);
    train(&m, &tc, 60, 7);
    nb = task_evaluate(&m, &tc, 20, 3, s, 16, 0);
    double lowest = 1;
    for (int i = 0; i < nb; i++) if (s[i].n >= 2 && s[i].top_share < lowest) lowest = s[i].top_share;
    EXPECT(lowest < 0.5, "a partly trained copy-repeat model varies its answers with the input: lowest top_share %g", lowest);
    gpt_free(&m);
}

static void test_learned_table(void) {
    TaskConfig tc;
    task_defaults(&tc, task_find("copy-repeat"));             // 640 symbols: >= 4 test instances at every length
    tc.train_min = 1; tc.train_max = 4; tc.test_max = 12;     // rep: + n + = + n + newline = 2n + 6 tokens
    GPTConfig c = config("learned", 16, task_vocab(&tc));
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

// Decoding with the transposed weights (gpt_decode_begin) gives the tokens and the logits, bit for
// bit, of decoding without them; C = 40 leaves partial vectors in every product (120, 40, 160 columns).
static void test_decode_weights(void) {
    GPTConfig c = { .vocab_size = 300, .n_layer = 2, .n_head = 2, .n_embd = 40, .max_seq_len = 64 };
    char msg[256];
    posenc_defaults(&c.pe, c.n_layer);
    EXPECT(posenc_schedule(&c.pe, c.n_layer, "alibi", NULL, NULL, msg, sizeof msg) && gpt_config_check(&c, msg, sizeof msg), "%s", msg);
    GPT m;
    gpt_build(&m, &c, 7, 64);
    int prompt[6] = { 'r', 'e', 'p', ':', 'a', '=' }, out[2][40];
    int Vp = m.cfg.padded_vocab;
    real *logits[2];
    for (int run = 0; run < 2; run++) {
        if (run) gpt_decode_begin(&m);
        int got = greedy_decode(&m, prompt, 6, 40, -1, out[run]);
        EXPECT(got == 40, "decoding ran %d of 40 tokens", got);
        logits[run] = xmalloc(sizeof(real) * Vp);
        memcpy(logits[run], m.state.a.logits, sizeof(real) * Vp);
        EXPECT(!run || m.state.decode_n == 2 * 4 + 1, "%d transposed weights made (2 layers x 4, and the LM head's)",
               m.state.decode_n);
        if (run) gpt_decode_end(&m);
    }
    EXPECT(memcmp(out[0], out[1], sizeof out[0]) == 0 && memcmp(logits[0], logits[1], sizeof(real) * Vp) == 0,
           "decoding with the transposed weights must give the same tokens and logits, bit for bit");
    EXPECT(m.state.decode_n == 0 && !m.state.decode_on, "gpt_decode_end frees the copies");
    free(logits[0]); free(logits[1]);
    gpt_free(&m);
}

static void test_fair_init(void) {
    static const char *schemes[] = { "learned", "sinusoidal", "rope", "alibi", "t5", "fire" };
    GPTConfig c0 = config("nope", 32, 256);
    GPT ref;
    gpt_build(&ref, &c0, 1234, 0);
    for (size_t s = 0; s < sizeof schemes / sizeof *schemes; s++) {
        GPTConfig c = config(schemes[s], 32, 256);
        GPT m;
        gpt_build(&m, &c, 1234, 0);
        int shared = 0, same = 0;
        for (int i = 0; i < ref.weights.n_tensors; i++) {
            const TensorInfo *a = &ref.weights.tensors[i], *b = gpt_find_tensor(&m, a->name);
            if (!b) continue;
            shared++;
            same += a->rows == b->rows && a->cols == b->cols &&
                    memcmp(ref.weights.params + a->offset, m.weights.params + b->offset, sizeof(real) * (size_t)a->rows * a->cols) == 0;
        }
        EXPECT(shared == ref.weights.n_tensors && same == shared, "%s: %d of %d shared tensors start equal to nope's", schemes[s], same, shared);
        gpt_free(&m);
    }
    gpt_free(&ref);
}

// Generation (sample_tokens) against full forward passes: for every token, the logits it was drawn
// from equal those of one forward over the window the text should be in (README: when the context T
// is full, the last T/2 tokens again from position 0), and at temperature 0 it is their argmax.
// 3 x T tokens from a 5-token prompt cross several restarts of the cache.
typedef struct { GPT *ref; const int *ctx; int n, T, V, step; double worst; int bad_argmax, start; } SampleCheck;

static void check_sampled(void *arg, int token, const real *logits) {
    SampleCheck *c = arg;
    int n = c->n + c->step;                        // the text before this token: ctx[0..n)
    if (n - c->start > c->T) c->start = n - c->T / 2;   // a full context: the last T/2 tokens, from 0
    int w = n - c->start;
    Batch b; batch_alloc(&b, 1, w);
    memcpy(b.tokens, c->ctx + c->start, sizeof(int) * w);
    int *targets = b.targets; b.targets = NULL;
    gpt_forward(c->ref, &b, NULL);
    b.targets = targets;
    const real *want = c->ref->state.a.logits + (size_t)(w - 1) * c->ref->cfg.padded_vocab;
    for (int v = 0; v < c->V; v++) c->worst = err_max(c->worst, fabs(want[v] - logits[v]));
    c->bad_argmax += token != argmax_token(logits, c->V);
    batch_free(&b);
    c->step++;
}

// top-k 3 at temperature 1: each drawn token among the 3 largest of the logits it was drawn from (fewer than
// 3 logits above it; ties admitted), and not always the largest, or top-k 3 would pass as greedy
typedef struct { int V, drawn, outside, below_top; } TopkCheck;

static void check_topk(void *arg, int token, const real *logits) {
    TopkCheck *c = arg;
    c->drawn++;
    if (token < 0 || token >= c->V) { c->outside++; return; }
    int above = 0;
    for (int v = 0; v < c->V; v++) above += logits[v] > logits[token];
    c->outside += above >= 3;
    c->below_top += above > 0;
}

static void test_sampling(void) {
    enum { T = 16, V = 23, PROMPT = 5, COUNT = 3 * T };
    const char *schemes[] = { "rope", "alibi", "nope", "t5" };
    for (int k = 0; k < 4; k++) {
        GPTConfig cfg = config(schemes[k], T, V);
        GPT m, ref;
        gpt_build(&m, &cfg, 5, 0);
        gpt_build(&ref, &cfg, 5, 0);
        // weights far from the small initial ones, so that the logits depend on the context
        Rng w; rng_seed(&w, 17 + k);
        for (size_t i = 0; i < m.weights.num_params; i++) m.weights.params[i] += (real)(0.5 * (2 * rng_uniform(&w) - 1));
        memcpy(ref.weights.params, m.weights.params, sizeof(real) * m.weights.num_params);   // the same, for the full passes
        int ctx[PROMPT + COUNT];
        for (int i = 0; i < PROMPT; i++) ctx[i] = (7 * i + 3) % V;
        Rng rng; rng_seed(&rng, 1);
        SampleCheck c = { .ref = &ref, .ctx = ctx, .n = PROMPT, .T = T, .V = V };
        int n = sample_tokens(&m, ctx, PROMPT, COUNT, 0.0, 0, &rng, check_sampled, &c);
        EXPECT(n == PROMPT + COUNT && c.step == COUNT && c.start > PROMPT + T / 2,
               "%s: %d tokens, %d emitted, the window restarted up to %d", schemes[k], n, c.step, c.start);
        EXPECT(c.worst < 1e-4 && c.bad_argmax == 0, "%s: sampled logits differ from the full pass over the window "
               "by %.3g; %d tokens not the argmax at temperature 0", schemes[k], c.worst, c.bad_argmax);
        // temperature 1 with top-k 3: the same seed draws the same tokens; each among the 3 most likely
        int a[PROMPT + COUNT], b2[PROMPT + COUNT];
        memcpy(a, ctx, sizeof(int) * PROMPT); memcpy(b2, ctx, sizeof(int) * PROMPT);
        TopkCheck tk = { .V = V };
        rng_seed(&rng, 9); sample_tokens(&m, a, PROMPT, COUNT, 1.0, 3, &rng, check_topk, &tk);
        rng_seed(&rng, 9); sample_tokens(&m, b2, PROMPT, COUNT, 1.0, 3, &rng, NULL, NULL);
        EXPECT(!memcmp(a, b2, sizeof a), "%s: sampling with the same seed drew other tokens", schemes[k]);
        EXPECT(tk.drawn == COUNT && tk.outside == 0, "%s: top-k 3 drew %d of %d tokens outside the 3 most likely",
               schemes[k], tk.outside, tk.drawn);
        EXPECT(tk.below_top > 0, "%s: top-k 3 at temperature 1 drew the most likely token all %d times", schemes[k], tk.drawn);
        gpt_free(&m); gpt_free(&ref);
    }
}

int main(void) {
    test_sampling();
    test_equivalence();
    test_buckets_and_csv();
    test_top_share();
    test_learned_table();
    test_fair_init();
    test_decode_weights();
    return test_summary("test_eval");
}
