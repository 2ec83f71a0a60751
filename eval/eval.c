// eval/eval.c: exact-match accuracy of greedy decoding on a synthetic task (see eval/eval.h).
#include <math.h>
#include <string.h>

#include "eval/eval.h"
#include "util/atomicfile.h"

int argmax_token(const real *logits, int V) {
    int best = 0;
    for (int v = 1; v < V; v++) if (logits[v] > logits[best]) best = v;
    return best;
}

int greedy_decode(GPT *m, const int *prompt, int np, int max_new, int stop, int *out) {
    int limit = gpt_position_limit(m), Vp = m->cfg.padded_vocab, V = m->cfg.vocab_size;
    if (np >= limit) return 0;
    int cap = np + max_new < limit ? np + max_new : limit;
    int *pos = xmalloc(sizeof(int) * (size_t)np);
    for (int t = 0; t < np; t++) pos[t] = t;
    KVCache kc;
    kv_cache_init(&kc, m, cap);
    gpt_forward_cached(m, &kc, prompt, pos, np);                  // the prompt as one chunk
    eval_stop_on_anomaly(m, "greedy decoding");
    int n = 0, next = argmax_token(m->state.a.logits + (size_t)(np - 1) * Vp, V);
    for (;;) {
        out[n++] = next;
        if (next == stop || n == max_new || kc.len == cap) break;
        int p = kc.len;                                           // the next position
        gpt_forward_cached(m, &kc, &next, &p, 1);
        eval_stop_on_anomaly(m, "greedy decoding");
        next = argmax_token(m->state.a.logits, V);
    }
    kv_cache_free(&kc);
    free(pos);
    return n;
}

// Picks the next token from logits (V,): greedy at temperature 0, else softmax(logits/temp) over
// the top_k most likely (all when 0). An explicit RNG keeps sampling reproducible.
int sample_token(const real *logits, int V, double temp, int top_k, Rng *rng) {
    int best = argmax_token(logits, V);
    if (temp == 0) return best;
    double *p = xmalloc(sizeof(double) * V);
    double kth = -INFINITY;
    if (top_k > 0 && top_k < V) {        // the k-th largest logit is the admission threshold
        double *s = xmalloc(sizeof(double) * V);
        for (int v = 0; v < V; v++) s[v] = logits[v];
        for (int i = 0; i < top_k; i++) {
            int arg = i;
            for (int v = i + 1; v < V; v++) if (s[v] > s[arg]) arg = v;
            double t = s[i]; s[i] = s[arg]; s[arg] = t;
        }
        kth = s[top_k - 1];
        free(s);
    }
    double sum = 0;
    for (int v = 0; v < V; v++) { p[v] = logits[v] >= kth ? exp((logits[v] - logits[best]) / temp) : 0; sum += p[v]; }
    double u = rng_uniform(rng) * sum, acc = 0;
    int pick = best;
    for (int v = 0; v < V; v++) { acc += p[v]; if (p[v] > 0 && u < acc) { pick = v; break; } }
    free(p);
    return pick;
}

int sample_tokens(GPT *m, int *ctx, int n, int count, double temp, int top_k, Rng *rng,
                  void (*emit)(void *arg, int token, const real *logits), void *arg) {
    CHECK(n >= 1, "sample_tokens: needs at least one token to start from");
    int T = m->cfg.max_seq_len, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab;
    int *pos = xmalloc(sizeof(int) * (size_t)T);
    KVCache kc;
    kv_cache_init(&kc, m, T);
    gpt_decode_begin(m);
    int fed = 0;                                 // tokens of ctx whose keys are in the cache
    for (int i = 0; i < count; i++) {
        if (kc.len + (n - fed) > T) {            // full: start again from the last T/2 tokens
            int keep = T / 2 > 0 ? T / 2 : 1;
            kc.len = 0;
            fed = n > keep ? n - keep : 0;
        }
        int chunk = n - fed, P = kc.len;
        for (int t = 0; t < chunk; t++) pos[t] = P + t;          // positions P .. P+chunk-1
        gpt_forward_cached(m, &kc, ctx + fed, pos, chunk);
        eval_stop_on_anomaly(m, "sampling");
        fed = n;
        const real *logits = m->state.a.logits + (size_t)(chunk - 1) * Vp;
        int next = sample_token(logits, V, temp, top_k, rng);
        ctx[n++] = next;
        if (emit) emit(arg, next, logits);
    }
    gpt_decode_end(m);
    kv_cache_free(&kc);
    free(pos);
    return n;
}

// `count` instances, one per batch row (instances of one length have nearly the same
// size), in forwards of at most ROW_TOKENS tokens; padding has doc -1 and is never attended.
enum { ROW_TOKENS = 8192 };

void task_exact_match(GPT *m, int *const *inst, const int *len, const int *plen, int count, int *ok) {
    int limit = gpt_position_limit(m), V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab;
    int W = 1;
    for (int i = 0; i < count; i++) if (len[i] <= limit && len[i] > W) W = len[i];
    int rows = ROW_TOKENS / W > 0 ? ROW_TOKENS / W : 1;
    Batch b;
    batch_alloc(&b, rows, W);
    free(b.targets); b.targets = NULL;                            // logits only
    int i = 0;
    while (i < count) {
        int r = 0, first = i;
        batch_default_positions(&b);
        for (; r < rows && i < count; i++) {
            if (len[i] > limit) { ok[i] = -1; continue; }         // beyond a learned table
            for (int t = 0; t < W; t++) {
                size_t k = (size_t)r * W + t;
                b.tokens[k] = t < len[i] ? inst[i][t] : '\n';
                b.doc[k] = t < len[i] ? 0 : -1;
                b.pos[k] = t < len[i] ? t : 0;
                b.weights[k] = 0;
            }
            r++;
        }
        if (r == 0) continue;
        b.B = r;
        gpt_forward(m, &b, NULL);
        eval_stop_on_anomaly(m, "the task evaluation");
        for (int j = first, row = 0; j < i; j++) {
            if (len[j] > limit) continue;
            ok[j] = 1;
            for (int t = plen[j] - 1; t < len[j] - 1 && ok[j]; t++)   // every target token, end marker included
                ok[j] = argmax_token(m->state.a.logits + ((size_t)row * W + t) * Vp, V) == inst[j][t + 1];
            row++;
        }
        b.B = rows;
    }
    batch_free(&b);
}

int task_set_exact_match(GPT *m, const TaskSet *s, int *ok) {
    int **inst = xmalloc(sizeof(int *) * (size_t)(s->count > 0 ? s->count : 1));
    for (int i = 0; i < s->count; i++) inst[i] = s->tokens + (size_t)i * s->stride;
    task_exact_match(m, inst, s->len, s->prompt_len, s->count, ok);
    int correct = 0;
    for (int i = 0; i < s->count; i++) correct += ok[i] == 1;
    free(inst);
    return correct;
}

// An answer with its hash, for sorting equal answers together.
typedef struct {
    uint64_t h;
    const int *tok;
    int len;
} Answer;

static int cmp_answer(const void *x, const void *y) {
    const Answer *a = x, *b = y;
    if (a->h != b->h) return a->h < b->h ? -1 : 1;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return memcmp(a->tok, b->tok, sizeof(int) * (size_t)a->len);
}

double task_top_share(const int *const *answers, const int *len, int count) {
    if (count == 0) return NAN;
    Answer *a = xmalloc(sizeof(Answer) * (size_t)count);
    for (int i = 0; i < count; i++) {
        uint64_t h = 14695981039346656037ull;   // FNV-1a 64 of the tokens
        for (int t = 0; t < len[i]; t++) { h ^= (uint64_t)answers[i][t]; h *= 1099511628211ull; }
        a[i] = (Answer){ h, answers[i], len[i] };
    }
    qsort(a, (size_t)count, sizeof *a, cmp_answer);
    int best = 1;
    for (int i = 0, run = 1; i + 1 < count; i++) {          // runs of equal answers
        run = cmp_answer(&a[i], &a[i + 1]) == 0 ? run + 1 : 1;
        if (run > best) best = run;
    }
    free(a);
    return (double)best / count;
}

// The greedy answers of a set's instances that ran (ok[i] >= 0): a correct one's answer is its
// target; a wrong one is decoded (KV cache) for at most the target's tokens + 1. Returns the share
// of the most common.
static double answer_top_share(GPT *m, const TaskSet *s, const int *ok) {
    int **ans = xmalloc(sizeof(int *) * (size_t)(s->count > 0 ? s->count : 1));
    int *alen = xmalloc(sizeof(int) * (size_t)(s->count > 0 ? s->count : 1)), k = 0;
    int *buf = xmalloc(sizeof(int) * (size_t)(s->count > 0 ? s->count : 1) * (size_t)(s->stride + 1));
    for (int i = 0; i < s->count; i++) {
        if (ok[i] < 0) continue;
        const int *inst = s->tokens + (size_t)i * s->stride;
        int target = s->len[i] - s->prompt_len[i];
        ans[k] = buf + (size_t)k * (s->stride + 1);
        if (ok[i]) { memcpy(ans[k], inst + s->prompt_len[i], sizeof(int) * (size_t)target); alen[k] = target; }
        else alen[k] = greedy_decode(m, inst, s->prompt_len[i], target + 1, '\n', ans[k]);
        k++;
    }
    double share = task_top_share((const int *const *)ans, alen, k);
    free(ans); free(alen); free(buf);
    return share;
}

int task_evaluate(GPT *m, const TaskConfig *c, int per_length, uint64_t seed, TaskScore *out, int cap, int progress) {
    int lengths[EVAL_MAX_LENGTHS]; double depths[TASK_MAX_DEPTHS];
    int nl = task_test_lengths(c, lengths, EVAL_MAX_LENGTHS), nd = task_test_depths(c, depths, TASK_MAX_DEPTHS);
    int *ok = xmalloc(sizeof(int) * (size_t)(per_length > 0 ? per_length : 1));
    int nb = 0;
    gpt_decode_begin(m);                          // the wrong answers are decoded (answer_top_share)
    for (int li = 0; li < nl; li++) {
        int n = lengths[li];
        for (int di = 0; di < nd; di++) {
            // each bucket has its own stream: its instances do not depend on the other buckets
            TaskSet set;
            task_eval_set(c, n, depths[di], TASK_TEST, per_length,
                          seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(n * TASK_MAX_DEPTHS + di + 1)), &set);
            CHECK(nb < cap, "internal: more than %d evaluation buckets", cap);
            TaskScore *s = &out[nb++];
            memset(s, 0, sizeof *s);
            s->length = n; s->depth = depths[di]; s->ood = n > c->train_max; s->pool = set.pool;
            task_set_exact_match(m, &set, ok);
            for (int i = 0; i < set.count; i++) {
                if (ok[i] < 0) { s->skipped++; continue; }
                s->n++;
                s->correct += ok[i];
            }
            s->top_share = answer_top_share(m, &set, ok);
            task_set_free(&set);
            if (progress) {
                fprintf(stderr, "\reval: length %d/%d", n, lengths[nl - 1]);
                fflush(stderr);
            }
        }
    }
    gpt_decode_end(m);
    if (progress) fprintf(stderr, "\n");
    free(ok);
    return nb;
}

double task_accuracy(const TaskScore *s, int n, int ood) {
    long long num = 0, den = 0;
    for (int i = 0; i < n; i++) if (s[i].ood == ood) { num += s[i].correct; den += s[i].n + s[i].skipped; }
    return den ? (double)num / den : NAN;
}

void task_scores_write(const char *path, const char *task, const char *scheme, long long seed,
                       const TaskScore *s, int n) {
    AtomicFile af;
    FILE *f = af_open(&af, path, "accuracy CSV", "w");
    fprintf(f, "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share\n");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s,%s,%lld,%d,", task, scheme, seed, s[i].length);
        if (s[i].depth >= 0) fprintf(f, "%.4g", s[i].depth);
        fprintf(f, ",%s,%d,%d,", s[i].ood ? "ood" : "id", s[i].n, s[i].correct);
        if (s[i].n + s[i].skipped) fprintf(f, "%.6f", (double)s[i].correct / (s[i].n + s[i].skipped));
        fprintf(f, ",%d,", s[i].skipped);
        if (s[i].pool >= 0) fprintf(f, "%lld", s[i].pool);
        fprintf(f, ",%d,", s[i].n + s[i].skipped);
        if (s[i].n) fprintf(f, "%.4f", s[i].top_share);
        fprintf(f, "\n");
    }
    af_commit(&af);
}
