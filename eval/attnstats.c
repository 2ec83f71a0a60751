// eval/attnstats.c: attention statistics over many windows of text (see eval/attnstats.h).
#include "eval/attnstats.h"

#include "util/atomicfile.h"
#include "eval/eval.h"
#include "eval/perplexity.h"

#include <math.h>
#include <string.h>

size_t astats_tokens_needed(int W, int nwin, int bos) { return (size_t)nwin * (size_t)(bos >= 0 ? W - 1 : W); }

void astats_evaluate(GPT *m, const int *tokens, int W, int nwin, int bos, AStatsResult *r) {
    CHECK(W >= 2 && nwin >= 1, "internal: astats_evaluate(W %d, %d windows)", W, nwin);
    char note[96];
    CHECK(ppl_window_ok(m, W, note, sizeof note), "internal: window %d: %s", W, note);
    int L = m->cfg.n_layer, NH = m->cfg.n_head, text = bos >= 0 ? W - 1 : W;   // text tokens per window
    gpt_reserve_positions(m, W);
    int context = m->cfg.max_seq_len;                 // restored at the end
    int ctx = posenc_window_context(&m->cfg.pe, W);   // tables that follow the window (dynamic NTK)
    if (ctx && ctx != m->cfg.max_seq_len) gpt_set_context(m, ctx);
    int Bmax = PPL_BATCH_TOKENS / W > 1 ? PPL_BATCH_TOKENS / W : 1;
    if (Bmax > nwin) Bmax = nwin;
    memset(r, 0, sizeof *r);
    r->window = W; r->windows = nwin; r->L = L; r->NH = NH;
    r->sum = xcalloc((size_t)L * NH * ATT_NSTAT, sizeof(double));
    double t0 = now_seconds();
    Batch b;
    batch_alloc(&b, Bmax, W);
    int *targets = b.targets;
    b.targets = NULL;                                  // logits only: no loss is needed
    // one layer's activations, and each layer's sums added into r->sum as the forward runs
    GptPass pass = { .forward_only = 1, .attn_stats = r->sum };
    for (int k0 = 0; k0 < nwin; k0 += Bmax) {
        b.B = nwin - k0 < Bmax ? nwin - k0 : Bmax;
        for (int rr = 0; rr < b.B; rr++) {
            const int *src = tokens + (size_t)(k0 + rr) * text;
            int *row = b.tokens + (size_t)rr * W;
            if (bos >= 0) { row[0] = bos; memcpy(row + 1, src, sizeof(int) * (size_t)text); }
            else memcpy(row, src, sizeof(int) * (size_t)text);
        }
        gpt_forward(m, &b, &pass);
        eval_stop_on_anomaly(m, "the attention statistics");
    }
    b.targets = targets; b.B = Bmax;
    batch_free(&b);
    if (m->cfg.max_seq_len != context) gpt_set_context(m, context);
    double rows = r->sum[ATT_STAT_ROWS];
    CHECK(rows == (double)nwin * (W - 1), "internal: %g attention rows summed for %d windows of %d", rows, nwin, W);
    r->seconds = now_seconds() - t0;
}

void astats_result_free(AStatsResult *r) {
    free(r->sum);
    r->sum = NULL;
}

double astats_mean(const AStatsResult *r, int l, int h, int k) {
    const double *s = r->sum + ((size_t)l * r->NH + h) * ATT_NSTAT;
    return s[k] / s[ATT_STAT_ROWS];
}

double astats_collapsed(const AStatsResult *r, int l, double threshold) {
    int n = 0;
    for (int h = 0; h < r->NH; h++) n += astats_mean(r, l, h, ATT_STAT_SINK) >= threshold;
    return (double)n / r->NH;
}

void astats_write_csv(const char *path, const AStatsResult *r, int n, double threshold) {
    AtomicFile af;
    FILE *f = af_open(&af, path, "attention statistics CSV", "w");
    fprintf(f, "window,layer,head,windows,rows,sink_mass,entropy,distance,collapsed,layer_collapsed_frac,note\n");
    for (int i = 0; i < n; i++)
        for (int l = 0; l < r[i].L; l++)
            for (int h = 0; h < r[i].NH; h++) {
                fprintf(f, "%d,%d,%d,%d,", r[i].window, l, h, r[i].windows);
                if (!r[i].sum) { fprintf(f, "0,,,,,,%s\n", r[i].note); continue; }
                double sink = astats_mean(&r[i], l, h, ATT_STAT_SINK);
                fprintf(f, "%.0f,%.17g,%.17g,%.17g,%d,%.17g,\n", r[i].sum[((size_t)l * r[i].NH + h) * ATT_NSTAT + ATT_STAT_ROWS],
                        sink, astats_mean(&r[i], l, h, ATT_STAT_ENTROPY), astats_mean(&r[i], l, h, ATT_STAT_DIST),
                        sink >= threshold, astats_collapsed(&r[i], l, threshold));
            }
    af_commit(&af);
}

void astats_print_table(FILE *f, const AStatsResult *r, int n, int context, double threshold) {
    fprintf(f, "attention: fraction of heads collapsed (mean first-key mass >= %g) and mean first-key mass, by layer "
               "(model context T = %d):\n", threshold, context);
    for (int i = 0; i < n; i++) {
        fprintf(f, "  W %6d (%gT):", r[i].window, (double)r[i].window / context);
        if (!r[i].sum) { fprintf(f, " no number (%s)\n", r[i].note); continue; }
        for (int l = 0; l < r[i].L; l++) {
            double mass = 0;
            for (int h = 0; h < r[i].NH; h++) mass += astats_mean(&r[i], l, h, ATT_STAT_SINK);
            fprintf(f, "  L%d %.2f (%.2f)", l, astats_collapsed(&r[i], l, threshold), mass / r[i].NH);
        }
        fprintf(f, "\n");
    }
    fflush(f);
}
