// eval/perplexity.c: perplexity against window length (see eval/perplexity.h for the protocol).
#include "eval/perplexity.h"

#include "util/atomicfile.h"
#include "eval/eval.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

int ppl_parse_multiples(const char *list, double *out, int cap, char *msg, size_t msgcap) {
    int n = 0;
    const char *s = list;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char item[64];
        if (len == 0 || len >= sizeof item) {
            snprintf(msg, msgcap, "'%s' is not a comma-separated list of numbers (e.g. " PPL_DEFAULT_WINDOWS ")", list);
            return 0;
        }
        memcpy(item, s, len);
        item[len] = 0;
        char *end;
        errno = 0;
        double x = strtod(item, &end);
        if (*end || errno || !isfinite(x)) {
            snprintf(msg, msgcap, "'%s' in '%s' is not a number", item, list);
            return 0;
        }
        if (x <= 0) {
            snprintf(msg, msgcap, "'%s' in '%s': a window must be a positive multiple of the context", item, list);
            return 0;
        }
        if (n == cap) {
            snprintf(msg, msgcap, "'%s' names more than %d windows", list, cap);
            return 0;
        }
        out[n++] = x;
        if (!comma) break;
        s = comma + 1;
    }
    return n;
}

int ppl_windows(const double *mult, int n, int context, int *out, char *msg, size_t msgcap) {
    for (int i = 0; i < n; i++) {
        double w = mult[i] * context;
        if (w < 1) {
            snprintf(msg, msgcap, "%g x the context %d is %g tokens; a window needs at least 1 token", mult[i], context, w);
            return 0;
        }
        if (w > 1e8) {
            snprintf(msg, msgcap, "%g x the context %d is %.0f tokens, more than this program evaluates (1e8)", mult[i], context, w);
            return 0;
        }
        out[i] = (int)lround(w);
        for (int k = 0; k < i; k++)
            if (out[k] == out[i]) {
                snprintf(msg, msgcap, "%g and %g both give a window of %d tokens (context %d)", mult[k], mult[i], out[i], context);
                return 0;
            }
    }
    return 1;
}

int ppl_stride(int W, double frac) {
    int s = (int)floor(frac * W + 1e-9);
    return s < 1 ? 1 : s > W ? W : s;
}

size_t ppl_token_count(size_t text_tokens, size_t requested, int max_window) {
    size_t avail = text_tokens > 0 ? text_tokens - 1 : 0;    // predictions the text holds
    size_t n;
    if (requested) {
        if (requested > avail) return 0;
        n = requested;
    } else {
        n = avail < PPL_DEFAULT_TOKENS ? avail : PPL_DEFAULT_TOKENS;
    }
    return max_window > 0 ? n / (size_t)max_window * (size_t)max_window : 0;
}

int ppl_window_ok(const GPT *m, int W, char *note, size_t cap) {
    const PosScheme *fixed = posenc_fixed_table(&m->cfg.pe);
    if (fixed && W > m->weights.table_rows) {
        snprintf(note, cap, "%s table has %d rows", fixed->name, m->weights.table_rows);
        return 0;
    }
    if (note && cap) note[0] = 0;
    return 1;
}

// One window: tokens[start .. start+len) are its inputs at positions 0..len-1; the predictions at
// positions from..len-1 are scored (prediction j = start + t, of tokens[j+1]).
typedef struct { size_t start; int len, from; } Window;

// The windows of a mode over N predictions; out may be NULL (count only).
static size_t make_windows(size_t N, int W, int mode, int S, Window *out) {
    size_t n = 0;
    if (mode == PPL_NONOVERLAP) {
        for (size_t s = 0; s < N; s += (size_t)W, n++)
            if (out) out[n] = (Window){ s, N - s < (size_t)W ? (int)(N - s) : W, 0 };
        return n;
    }
    // sliding: the first window scores all of it; each later one ends S further on (the last at N)
    // and scores the predictions after the previous window's end
    size_t end = (size_t)W < N ? (size_t)W : N;
    if (out) out[n] = (Window){ 0, (int)end, 0 };
    n++;
    while (end < N) {
        size_t e = end + (size_t)S < N ? end + (size_t)S : N;
        if (out) out[n] = (Window){ e - (size_t)W, W, (int)(end - (e - (size_t)W)) };
        n++;
        end = e;
    }
    return n;
}

void ppl_evaluate(GPT *m, const int *tokens, size_t N, int W, int mode, int stride, int batch_tokens,
                  PplResult *r, double *token_loss, FILE *progress) {
    CHECK(W >= 1 && N >= 1, "internal: ppl_evaluate(W %d, N %zu)", W, N);
    char note[96];
    CHECK(ppl_window_ok(m, W, note, sizeof note), "internal: window %d: %s", W, note);
    int S = mode == PPL_SLIDING ? stride : W;
    CHECK(S >= 1 && S <= W, "internal: stride %d for window %d", S, W);
    gpt_reserve_positions(m, W);
    // tables that follow the window's length (dynamic NTK scaling: the base grows with W past L0),
    // for this window only: the model's context is restored at the end
    int context = m->cfg.max_seq_len, ctx = posenc_window_context(&m->cfg.pe, W);
    if (ctx && ctx != m->cfg.max_seq_len) gpt_set_context(m, ctx);
    if (batch_tokens <= 0) batch_tokens = PPL_BATCH_TOKENS;
    int Bmax = batch_tokens / W > 1 ? batch_tokens / W : 1;
    const GptPass pass = { .forward_only = 1 };   // one layer's activations: a long window takes ~L times less memory

    size_t nw = make_windows(N, W, mode, S, NULL);
    Window *win = xmalloc(sizeof(Window) * nw);
    make_windows(N, W, mode, S, win);
    Batch b;
    batch_alloc(&b, Bmax, W);
    double *pos_sum = xcalloc((size_t)W, sizeof(double));
    size_t *pos_cnt = xcalloc((size_t)W, sizeof(size_t));
    double sum = 0, t0 = now_seconds(), last = t0;
    size_t scored = 0;
    for (size_t i = 0; i < nw;) {
        // a group of up to Bmax consecutive windows of one length (only the last nonoverlap
        // window may be shorter)
        int len = win[i].len, rows = 0;
        while (i + rows < nw && rows < Bmax && win[i + rows].len == len) rows++;
        b.B = rows; b.T = len;
        for (int rr = 0; rr < rows; rr++) {
            const Window *w = &win[i + rr];
            for (int t = 0; t < len; t++) {
                size_t k = (size_t)rr * len + t;
                b.tokens[k] = tokens[w->start + t];
                b.targets[k] = tokens[w->start + t + 1];
                b.weights[k] = t >= w->from ? 1.0f : 0.0f;
                b.pos[k] = t;
                b.doc[k] = 0;
            }
        }
        gpt_forward(m, &b, &pass);
        eval_stop_on_anomaly(m, "the perplexity evaluation");
        for (int rr = 0; rr < rows; rr++) {
            const Window *w = &win[i + rr];
            for (int t = w->from; t < len; t++) {
                double l = (double)m->state.a.losses[(size_t)rr * len + t];
                sum += l; scored++;
                if (mode == PPL_NONOVERLAP) { pos_sum[t] += l; pos_cnt[t]++; }
                if (token_loss) token_loss[w->start + t] = l;
            }
        }
        i += rows;
        double tn = now_seconds();
        if (progress && tn - last > 10 && i < nw) {
            fprintf(progress, "ppl: window %d %s: %zu/%zu windows (%.0f%%), %.0f s\n", W,
                    mode == PPL_SLIDING ? "sliding" : "nonoverlap", i, nw, 100.0 * i / nw, tn - t0);
            fflush(progress);
            last = tn;
        }
    }
    CHECK(scored == N, "internal: %zu of %zu predictions scored (window %d, stride %d)", scored, N, W, S);

    memset(r, 0, sizeof *r);
    r->window = W; r->mode = mode; r->stride = S; r->tokens = scored; r->rows = nw;
    r->loss = sum / (double)scored;
    r->seconds = now_seconds() - t0;
    if (mode == PPL_NONOVERLAP) {
        r->pos_loss = xmalloc(sizeof(double) * W);
        for (int t = 0; t < W; t++) r->pos_loss[t] = pos_cnt[t] ? pos_sum[t] / (double)pos_cnt[t] : NAN;
    }
    // the batch's arrays were allocated for Bmax x W; restore the shape before freeing
    b.B = Bmax; b.T = W;
    batch_free(&b);
    free(win); free(pos_sum); free(pos_cnt);
    if (m->cfg.max_seq_len != context) gpt_set_context(m, context);
}

void ppl_run(GPT *m, const int *tokens, size_t N, const int *W, int nw, double stride_frac,
             int batch_tokens, PplResult *out, FILE *progress) {
    int wmax = 0;
    for (int i = 0; i < nw; i++) if (W[i] > wmax && ppl_window_ok(m, W[i], NULL, 0)) wmax = W[i];
    if (wmax) gpt_reserve_positions(m, wmax);   // once, for the longest window the model can take
    for (int i = 0; i < nw; i++)
        for (int mode = 0; mode < 2; mode++) {
            PplResult *r = &out[2 * i + mode];
            int S = mode == PPL_SLIDING ? ppl_stride(W[i], stride_frac) : W[i];
            char note[96];
            if (!ppl_window_ok(m, W[i], note, sizeof note)) {
                memset(r, 0, sizeof *r);
                r->window = W[i]; r->mode = mode; r->stride = S; r->loss = NAN;
                snprintf(r->note, sizeof r->note, "%s", note);
                if (progress && mode == PPL_NONOVERLAP)
                    fprintf(progress, "ppl: window %d: no number, %s\n", W[i], note);
                continue;
            }
            ppl_evaluate(m, tokens, N, W[i], mode, S, batch_tokens, r, NULL, progress);
            if (progress) {
                char how[32] = "nonoverlap";
                if (mode == PPL_SLIDING) snprintf(how, sizeof how, "sliding S=%d", S);
                fprintf(progress, "ppl: window %5d %-16s %zu tokens in %zu windows, loss %.4f, ppl %.4f (%.1f s)\n",
                        W[i], how, r->tokens, r->rows, r->loss, exp(r->loss), r->seconds);
                fflush(progress);
            }
        }
}

void ppl_result_free(PplResult *r) {
    free(r->pos_loss);
    r->pos_loss = NULL;
}

void ppl_write_csv(const char *path, const PplResult *r, int n) {
    AtomicFile af;
    FILE *f = af_open(&af, path, "perplexity CSV", "w");
    fprintf(f, "window,mode,tokens,loss,ppl,note\n");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%d,%s,%zu,", r[i].window, r[i].mode == PPL_SLIDING ? "sliding" : "nonoverlap", r[i].tokens);
        if (isnan(r[i].loss)) fprintf(f, ",");
        else fprintf(f, "%.17g,%.17g", r[i].loss, exp(r[i].loss));
        fprintf(f, ",%s\n", r[i].note);
    }
    af_commit(&af);
}

void ppl_write_positions(const char *path, const PplResult *r, int n) {
    AtomicFile af;
    FILE *f = af_open(&af, path, "per-position loss CSV", "w");
    fprintf(f, "window,position,loss\n");
    for (int i = 0; i < n; i++) {
        if (r[i].mode != PPL_NONOVERLAP || !r[i].pos_loss) continue;
        for (int t = 0; t < r[i].window; t++) fprintf(f, "%d,%d,%.17g\n", r[i].window, t, r[i].pos_loss[t]);
    }
    af_commit(&af);
}

void ppl_print_table(FILE *f, const PplResult *r, int nw, int context, size_t N, double stride_frac) {
    fprintf(f, "perplexity, the same %zu tokens scored at every window (model context T = %d; "
               "sliding stride %g W):\n", N, context, stride_frac);
    fprintf(f, "  %8s %7s %12s %12s\n", "W", "W/T", "nonoverlap", "sliding");
    for (int i = 0; i < nw; i++) {
        const PplResult *a = &r[2 * i], *b = &r[2 * i + 1];
        char sa[32], sb[32];
        if (isnan(a->loss)) snprintf(sa, sizeof sa, "-"); else snprintf(sa, sizeof sa, "%.4f", exp(a->loss));
        if (isnan(b->loss)) snprintf(sb, sizeof sb, "-"); else snprintf(sb, sizeof sb, "%.4f", exp(b->loss));
        fprintf(f, "  %8d %7g %12s %12s", a->window, (double)a->window / context, sa, sb);
        if (a->note[0]) fprintf(f, "   (%s)", a->note);
        fprintf(f, "\n");
    }
    fflush(f);
}
