// eval.c: exact-match accuracy of greedy decoding on a synthetic task (see eval.h).
#include <math.h>
#include <string.h>

#include "eval.h"

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
    int n = 0, next = argmax_token(m->a.logits + (size_t)(np - 1) * Vp, V);
    for (;;) {
        out[n++] = next;
        if (next == stop || n == max_new || kc.len == cap) break;
        int p = kc.len;                                           // the next position
        gpt_forward_cached(m, &kc, &next, &p, 1);
        next = argmax_token(m->a.logits, V);
    }
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
        gpt_forward(m, &b);
        for (int j = first, row = 0; j < i; j++) {
            if (len[j] > limit) continue;
            ok[j] = 1;
            for (int t = plen[j] - 1; t < len[j] - 1 && ok[j]; t++)   // every target token, end marker included
                ok[j] = argmax_token(m->a.logits + ((size_t)row * W + t) * Vp, V) == inst[j][t + 1];
            row++;
        }
        b.B = rows;
    }
    batch_free(&b);
}

int task_evaluate(GPT *m, const TaskConfig *c, int per_length, uint64_t seed, TaskScore *out, int cap, int progress) {
    int lengths[EVAL_MAX_LENGTHS]; double depths[TASK_MAX_DEPTHS];
    int nl = task_test_lengths(c, lengths, EVAL_MAX_LENGTHS), nd = task_test_depths(c, depths, TASK_MAX_DEPTHS);
    int **inst = xmalloc(sizeof(int *) * (size_t)per_length);
    int *len = xmalloc(sizeof(int) * (size_t)per_length), *plen = xmalloc(sizeof(int) * (size_t)per_length);
    int *ok = xmalloc(sizeof(int) * (size_t)per_length);
    int nb = 0;
    for (int li = 0; li < nl; li++) {
        int n = lengths[li], maxtok = task_max_tokens(c, n);
        for (int di = 0; di < nd; di++) {
            // each bucket has its own stream: its instances do not depend on the other buckets
            Rng rng;
            rng_seed(&rng, seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(n * TASK_MAX_DEPTHS + di + 1)));
            int count = 0;
            for (int i = 0; i < per_length; i++) {
                inst[count] = xmalloc(sizeof(int) * (size_t)maxtok);
                len[count] = task_instance(c, n, depths[di], TASK_TEST, &rng, inst[count], maxtok, &plen[count]);
                if (len[count] > 0) count++; else { free(inst[count]); break; }   // no test instance of this length
            }
            if (count == 0) continue;
            CHECK(nb < cap, "internal: more than %d evaluation buckets", cap);
            TaskScore *s = &out[nb++];
            memset(s, 0, sizeof *s);
            s->length = n; s->depth = depths[di]; s->ood = n > c->train_max;
            task_exact_match(m, inst, len, plen, count, ok);
            for (int i = 0; i < count; i++) {
                if (ok[i] < 0) { s->skipped++; continue; }
                s->n++;
                s->correct += ok[i];
            }
            for (int i = 0; i < count; i++) free(inst[i]);
            if (progress) {
                fprintf(stderr, "\reval: length %d/%d", n, lengths[nl - 1]);
                fflush(stderr);
            }
        }
    }
    if (progress) fprintf(stderr, "\n");
    free(inst); free(len); free(plen); free(ok);
    return nb;
}

double task_accuracy(const TaskScore *s, int n, int ood) {
    long long num = 0, den = 0;
    for (int i = 0; i < n; i++) if (s[i].ood == ood) { num += s[i].correct; den += s[i].n + s[i].skipped; }
    return den ? (double)num / den : NAN;
}

void task_scores_write(const char *path, const char *task, const char *scheme, long long seed,
                       const TaskScore *s, int n) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f, "cannot write '%s'; check that its folder exists and is writable", tmp);
    fprintf(f, "task,scheme,seed,length,depth,split,n,correct,accuracy,skipped\n");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s,%s,%lld,%d,", task, scheme, seed, s[i].length);
        if (s[i].depth >= 0) fprintf(f, "%.4g", s[i].depth);
        fprintf(f, ",%s,%d,%d,", s[i].ood ? "ood" : "id", s[i].n, s[i].correct);
        if (s[i].n + s[i].skipped) fprintf(f, "%.6f", (double)s[i].correct / (s[i].n + s[i].skipped));
        fprintf(f, ",%d\n", s[i].skipped);
    }
    CHECK(fclose(f) == 0 && rename(tmp, path) == 0, "cannot write '%s' (disk full?)", path);
}
