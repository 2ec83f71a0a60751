// eval/longrope.c: LongRoPE's evolutionary factor search (see eval/longrope.h for the method).
#include "eval/longrope.h"

#include <math.h>
#include <string.h>

#include "util/atomicfile.h"
#include "eval/perplexity.h"

// Mutation: each factor with this probability is multiplied by exp(MUT_SIGMA z), z ~ N(0, 1)
#define MUT_PROB 0.3
#define MUT_SIGMA 0.2

int longrope_windows(const GPT *m, int *short_window, int *long_window, char *msg, size_t cap) {
    LongropeTarget t;
    if (!posenc_longrope_target(&m->cfg.pe, m->cfg.n_embd / m->cfg.n_head, &t, msg, cap)) return 0;
    char note[96];
    if (!ppl_window_ok(m, t.long_window, note, sizeof note)) {
        snprintf(msg, cap, "the long window of %d tokens is beyond the model's positions (%s)", t.long_window, note);
        return 0;
    }
    *short_window = t.short_window;
    *long_window = t.long_window;
    return 1;
}

static double normal_draw(Rng *r) {       // Box-Muller; u1 in (0, 1]
    double u1 = 1 - rng_uniform(r), u2 = rng_uniform(r);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

// The paper's constraint on a list f (n,): non-decreasing in i, each factor in [1, hi]
static void constrain(double *f, int n, double hi) {
    for (int i = 0; i < n; i++) {
        if (i > 0 && f[i] < f[i - 1]) f[i] = f[i - 1];
        f[i] = fmin(fmax(f[i], 1), hi);
    }
}

static void mutate(double *f, int n, double hi, Rng *r) {
    for (int i = 0; i < n; i++)
        if (rng_uniform(r) < MUT_PROB) f[i] *= exp(MUT_SIGMA * normal_draw(r));
    constrain(f, n, hi);
}

// One search's state: P lists (P, n) and their losses; which: 0 short, 1 long
typedef struct {
    GPT *m;
    const int *tokens;
    size_t N;
    int n, P, window, which, batch_tokens, done, total;
    double hi, *lists, *loss, t0;
    const double *other;       // the other list, held fixed while this one is searched
} Search;

// Mean loss of list k at the search's window; NaN or Inf count as +Inf (never kept)
static double score(Search *S, int k) {
    const double *f = S->lists + (size_t)k * S->n;
    posenc_longrope_use(&S->m->cfg.pe, S->which ? S->other : f, S->which ? f : S->other, S->n);
    gpt_set_context(S->m, S->window);           // the tables for this list (and the window's choice of it)
    PplResult r;
    ppl_evaluate(S->m, S->tokens, S->N, S->window, PPL_NONOVERLAP, S->window, S->batch_tokens, &r, NULL, NULL);
    ppl_result_free(&r);
    S->done++;
    return isfinite(r.loss) ? r.loss : INFINITY;
}

// Sorts the population by loss, best first; ties keep their order (insertion sort)
static void rank(Search *S) {
    double *tmp = xmalloc(sizeof(double) * S->n);
    for (int a = 1; a < S->P; a++) {
        double la = S->loss[a];
        memcpy(tmp, S->lists + (size_t)a * S->n, sizeof(double) * S->n);
        int b = a - 1;
        for (; b >= 0 && S->loss[b] > la; b--) {
            S->loss[b + 1] = S->loss[b];
            memcpy(S->lists + (size_t)(b + 1) * S->n, S->lists + (size_t)b * S->n, sizeof(double) * S->n);
        }
        S->loss[b + 1] = la;
        memcpy(S->lists + (size_t)(b + 1) * S->n, tmp, sizeof(double) * S->n);
    }
    free(tmp);
}

static void report(const Search *S, int gen, int G, double start, FILE *progress) {
    if (!progress) return;
    double el = now_seconds() - S->t0, left = S->done ? el / S->done * (S->total - S->done) : 0;
    fprintf(progress, "longrope search, %s list at windows of %d: generation %d/%d, best ppl %.4f (seeds' best %.4f), "
            "%.1f s, about %.1f s left\n", S->which ? "long" : "short", S->window, gen, G, exp(S->loss[0]), exp(start), el, left);
    fflush(progress);
}

// Searches one list; the best goes to best (n,), its loss to *loss, the seeds' best to *start.
static void search_list(Search *S, const PosConfig *base, const LongropeTarget *t, const LongropeSearch *ls, Rng *rng,
                        double *best, double *loss, double *start, FILE *progress) {
    int n = S->n, P = S->P, keep = P / 2, G = ls->generations;
    S->lists = xmalloc(sizeof(double) * (size_t)P * n);
    S->loss = xmalloc(sizeof(double) * P);
    S->total = P + G * (P - keep);
    S->done = 0;
    S->t0 = now_seconds();
    int seeds = posenc_longrope_seeds(base, t, S->lists, P);
    for (int k = seeds; k < P; k++) {            // the rest: mutants of the seeds in turn
        memcpy(S->lists + (size_t)k * n, S->lists + (size_t)(k % seeds) * n, sizeof(double) * n);
        mutate(S->lists + (size_t)k * n, n, S->hi, rng);
    }
    for (int k = 0; k < P; k++) S->loss[k] = score(S, k);
    *start = S->loss[0];
    for (int k = 1; k < seeds; k++) if (S->loss[k] < *start) *start = S->loss[k];
    rank(S);
    report(S, 0, G, *start, progress);
    for (int g = 1; g <= G; g++) {
        for (int k = keep; k < P; k++) {        // children of two kept parents replace the rest
            const double *a = S->lists + (size_t)(rng_u64(rng) % (uint64_t)keep) * n;
            const double *b = S->lists + (size_t)(rng_u64(rng) % (uint64_t)keep) * n;
            double *c = S->lists + (size_t)k * n;
            for (int i = 0; i < n; i++) c[i] = rng_uniform(rng) < 0.5 ? a[i] : b[i];
            mutate(c, n, S->hi, rng);
            S->loss[k] = score(S, k);
        }
        rank(S);
        report(S, g, G, *start, progress);
    }
    memcpy(best, S->lists, sizeof(double) * n);
    *loss = S->loss[0];
    free(S->lists); free(S->loss);
}

void longrope_search(GPT *m, const int *tokens, size_t N, const LongropeSearch *ls, LongropeResult *r, FILE *progress) {
    char msg[512];
    CHECK(ls->population >= 4 && ls->generations >= 0, "internal: longrope search population %d, generations %d",
          ls->population, ls->generations);
    LongropeTarget t;
    CHECK(posenc_longrope_target(&m->cfg.pe, m->cfg.n_embd / m->cfg.n_head, &t, msg, sizeof msg), "--longrope-search: %s", msg);
    int sw, lw;
    CHECK(longrope_windows(m, &sw, &lw, msg, sizeof msg), "--longrope-search: %s", msg);
    CHECK(N >= (size_t)lw && N % (size_t)lw == 0, "internal: longrope search on %zu tokens, window %d", N, lw);
    PosConfig base = m->cfg.pe;
    memset(r, 0, sizeof *r);
    r->pairs = t.pairs;
    r->short_window = sw;
    r->long_window = lw;
    Rng rng;
    rng_seed(&rng, ls->seed);
    double ones[PE_MAX_FACTORS];
    for (int i = 0; i < t.pairs; i++) ones[i] = 1;
    Search S = { .m = m, .tokens = tokens, .N = N, .n = t.pairs, .P = ls->population, .batch_tokens = ls->batch_tokens,
                 .hi = 2 * t.s };
    // the long list first (the short one held at no change), then the short list with the best long one
    S.which = 1; S.window = lw; S.other = ones;
    search_list(&S, &base, &t, ls, &rng, r->long_f, &r->long_loss, &r->long_start, progress);
    S.which = 0; S.window = sw; S.other = r->long_f;
    search_list(&S, &base, &t, ls, &rng, r->short_f, &r->short_loss, &r->short_start, progress);
    posenc_longrope_use(&m->cfg.pe, r->short_f, r->long_f, t.pairs);
    gpt_set_context(m, lw);
}

void longrope_write(const char *prefix, const LongropeResult *r) {
    char path[2][4200];
    AtomicFile af[2];
    const double *lists[2] = { r->short_f, r->long_f };
    for (int k = 0; k < 2; k++) {             // both opened before either is committed
        snprintf(path[k], sizeof path[k], "%s.%s", prefix, k ? "long" : "short");
        FILE *f = af_open(&af[k], path[k], "longrope factor list", "w");
        for (int i = 0; i < r->pairs; i++) fprintf(f, "%.17g\n", lists[k][i]);
    }
    for (int k = 0; k < 2; k++) af_commit(&af[k]);
}
