// tests/test_ppl.c: perplexity against window length (eval/perplexity.c), double build.
//   (a) per-token losses equal a direct gpt_forward of each window, one window at a time, in both
//       modes, on a model whose tables were extended after it was built (and they equal a model
//       built with long tables from the start); the batch size (B*W bound) changes nothing;
//   (b) sliding with stride 1.0 gives the nonoverlap losses;
//   (c) every window size and mode scores the same N tokens; how N is chosen;
//   (d) the per-position means average to the overall mean;
//   (e) a learned-table model gets no number beyond its context (CSV: empty loss, a note);
//   (f) forward-only mode (GptPass.forward_only, which ppl uses): losses and logits bit-identical to
//       the normal forward; backward and attention_probs refuse to run after it; back in training
//       mode, the gradients of a model that never switched;
// plus the window-list parser and the CSV files.
#include <string.h>
#include <unistd.h>

#include "eval/perplexity.h"
#include "tests/testutil.h"

enum { V = 32, CTX = 8, NTOK = 64 };

static GPTConfig config(const char *pe, const char *input_pe) {
    GPTConfig c = { .vocab_size = V, .n_layer = 2, .n_head = 2, .n_embd = 16, .max_seq_len = CTX };
    posenc_defaults(&c.pe, c.n_layer);
    char msg[256];
    CHECK(posenc_schedule(&c.pe, c.n_layer, pe, NULL, input_pe, msg, sizeof msg), "%s", msg);
    CHECK(gpt_config_check(&c, msg, sizeof msg), "%s", msg);
    return c;
}

// a text of n tokens with some structure (so losses vary with context)
static int *text(size_t n, uint64_t seed) {
    int *t = xmalloc(sizeof(int) * n);
    Rng r; rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) t[i] = i % 5 == 4 ? t[i - 2] : (int)(rng_u64(&r) % V);
    return t;
}

// losses at positions 0..len-1 of one window tokens[start..start+len), run alone (B = 1)
static void direct(GPT *m, const int *tok, size_t start, int len, double *out) {
    Batch b; batch_alloc(&b, 1, len);
    for (int t = 0; t < len; t++) { b.tokens[t] = tok[start + t]; b.targets[t] = tok[start + t + 1]; }
    gpt_forward(m, &b, NULL);
    for (int t = 0; t < len; t++) out[t] = m->state.a.losses[t];
    batch_free(&b);
}

// The expected loss of every prediction j < N, from the definition of the two modes, each window
// run on its own.
static void expected(GPT *m, const int *tok, size_t N, int W, int mode, int S, double *out) {
    double *l = xmalloc(sizeof(double) * W);
    if (mode == PPL_NONOVERLAP) {
        for (size_t s = 0; s < N; s += W) {
            int len = N - s < (size_t)W ? (int)(N - s) : W;
            direct(m, tok, s, len, l);
            for (int t = 0; t < len; t++) out[s + t] = l[t];
        }
    } else {
        size_t prev = 0;        // predictions [0, prev) are scored
        for (size_t e = W;; e += S) {
            if (e > N) e = N;
            direct(m, tok, e - W, W, l);
            for (size_t j = prev; j < e; j++) out[j] = l[j - (e - W)];
            prev = e;
            if (e == N) break;
        }
    }
    free(l);
}

static void test_token_losses(const char *pe) {
    GPTConfig c = config(pe, "none");
    GPT m; gpt_build(&m, &c, 7, 0);          // tables for the context only: ppl extends them
    GPT ref; gpt_build(&ref, &c, 7, 4 * CTX); // the same weights, long tables from the start
    int *tok = text(NTOK + 1, 3);
    int Ws[] = { 4, 8, 12, 16, 32 };
    double fr[] = { 0.5, 0.3, 1.0 };
    double *got = xmalloc(sizeof(double) * NTOK), *want = xmalloc(sizeof(double) * NTOK);
    double *small = xmalloc(sizeof(double) * NTOK);
    for (int wi = 0; wi < 5; wi++)
        for (int mode = 0; mode < 2; mode++)
            for (int fi = 0; fi < (mode == PPL_SLIDING ? 3 : 1); fi++) {
                int W = Ws[wi], S = ppl_stride(W, fr[fi]);
                PplResult r, r2;
                for (int j = 0; j < NTOK; j++) got[j] = small[j] = NAN;
                ppl_evaluate(&m, tok, NTOK, W, mode, S, 0, &r, got, NULL);
                ppl_evaluate(&m, tok, NTOK, W, mode, S, W, &r2, small, NULL);   // one window per forward
                expected(&ref, tok, NTOK, W, mode, mode == PPL_SLIDING ? S : W, want);
                double maxd = 0, maxb = 0, sum = 0;
                for (int j = 0; j < NTOK; j++) {
                    double d = fabs(got[j] - want[j]), db = fabs(got[j] - small[j]);
                    maxd = err_max(maxd, d);               // NaN counts as a failure, and stays one
                    maxb = err_max(maxb, db);
                    sum += want[j];
                }
                EXPECT(maxd < 1e-10, "%s W %d %s S %d: per-token losses differ from a direct forward by %g",
                       pe, W, mode ? "sliding" : "nonoverlap", S, maxd);
                EXPECT(maxb < 1e-10, "%s W %d mode %d: B*W bound changes losses by %g", pe, W, mode, maxb);
                EXPECT(r.tokens == NTOK && r2.tokens == NTOK, "%s W %d: %zu tokens scored, not %d", pe, W, r.tokens, NTOK);
                EXPECT_NEAR(r.loss, sum / NTOK, 1e-10, 0, "mean loss = mean of the per-token losses");
                EXPECT(m.pt.max_pos >= W, "tables extended to the window");
                ppl_result_free(&r); ppl_result_free(&r2);
            }
    free(got); free(want); free(small); free(tok);
    gpt_free(&m); gpt_free(&ref);
}

static void test_stride_one_and_positions(void) {
    GPTConfig c = config("alibi", "none");
    GPT m; gpt_build(&m, &c, 11, 0);
    int *tok = text(NTOK + 1, 5);
    int Ws[] = { 4, 8, 16, 32 };      // each divides N
    for (int i = 0; i < 4; i++) {
        PplResult a, b;
        double *la = xmalloc(sizeof(double) * NTOK), *lb = xmalloc(sizeof(double) * NTOK);
        ppl_evaluate(&m, tok, NTOK, Ws[i], PPL_NONOVERLAP, Ws[i], 0, &a, la, NULL);
        ppl_evaluate(&m, tok, NTOK, Ws[i], PPL_SLIDING, ppl_stride(Ws[i], 1.0), 0, &b, lb, NULL);
        EXPECT(b.stride == Ws[i], "stride 1.0 is W");
        EXPECT(a.loss == b.loss, "W %d: stride 1.0 sliding %.17g != nonoverlap %.17g", Ws[i], b.loss, a.loss);
        EXPECT(memcmp(la, lb, sizeof(double) * NTOK) == 0, "W %d: stride 1.0 per-token losses", Ws[i]);
        // (d) the position means, averaged over positions, give the overall mean (every window full)
        double s = 0;
        for (int t = 0; t < Ws[i]; t++) s += a.pos_loss[t];
        EXPECT_NEAR(s / Ws[i], a.loss, 1e-12, 0, "mean over positions of the per-position loss");
        EXPECT(b.pos_loss == NULL, "sliding mode has no per-position means");
        // the per-position mean at t is the mean over windows of the loss at t
        double p0 = 0;
        for (int k = 0; k < NTOK / Ws[i]; k++) p0 += la[k * Ws[i] + Ws[i] - 1];
        EXPECT_NEAR(a.pos_loss[Ws[i] - 1], p0 / (NTOK / Ws[i]), 1e-12, 0, "per-position mean at the last position");
        ppl_result_free(&a); ppl_result_free(&b);
        free(la); free(lb);
    }
    free(tok); gpt_free(&m);
}

static void test_counts(void) {
    // (c) how N is chosen: predictions = text - 1, capped at 65536 by default, a multiple of Wmax
    EXPECT(ppl_token_count(100, 0, 32) == 96, "100 tokens, Wmax 32 -> 96");
    EXPECT(ppl_token_count(97, 0, 32) == 96, "97 tokens hold 96 predictions");
    EXPECT(ppl_token_count(96, 0, 32) == 64, "96 tokens hold 95 predictions -> 64");
    EXPECT(ppl_token_count(100, 50, 32) == 32, "--ppl-tokens 50 -> 32");
    EXPECT(ppl_token_count(100, 99, 32) == 96, "--ppl-tokens 99 -> 96");
    EXPECT(ppl_token_count(100, 100, 32) == 0, "--ppl-tokens beyond the text -> refused");
    EXPECT(ppl_token_count(100, 20, 32) == 0, "--ppl-tokens below one window -> refused");
    EXPECT(ppl_token_count(30, 0, 32) == 0, "text shorter than the largest window -> refused");
    EXPECT(ppl_token_count(1000000, 0, 96) == 65472, "default cap 65536, rounded to a multiple of 96");
    EXPECT(ppl_token_count(1000000, 0, 512) == 65536, "default 65536");
    // every window and mode of a run scores the same N
    GPTConfig c = config("rope", "none");
    GPT m; gpt_build(&m, &c, 2, 0);
    int *tok = text(NTOK + 1, 9);
    int W[] = { 4, 8, 12, 16, 32, 64 };
    PplResult r[12];
    ppl_run(&m, tok, NTOK, W, 6, 0.5, 24, r, NULL);
    for (int i = 0; i < 12; i++) {
        EXPECT(r[i].tokens == NTOK, "window %d mode %d scored %zu tokens, not %d", r[i].window, r[i].mode, r[i].tokens, NTOK);
        EXPECT(isfinite(r[i].loss) && r[i].note[0] == 0, "window %d has a number", r[i].window);
        EXPECT(r[i].window == W[i / 2] && r[i].mode == i % 2, "result layout");
    }
    EXPECT(r[1].stride == 2 && r[5].stride == 6, "stride 0.5 W");
    EXPECT(r[4].rows == 6 && r[5].rows == 1 + 9, "W 12 nonoverlap: 5 full + 1 short window; sliding: 1 + ceil(52/6)");
    for (int i = 0; i < 12; i++) ppl_result_free(&r[i]);
    free(tok); gpt_free(&m);
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF) n += ch == '\n';
    fclose(f);
    return n;
}

static void test_learned(void) {
    GPTConfig c = config("learned", NULL);
    GPT m; gpt_build(&m, &c, 4, 0);
    int *tok = text(NTOK + 1, 1);
    int W[] = { 4, 8, 16, 32 };
    PplResult r[8];
    ppl_run(&m, tok, NTOK, W, 4, 0.5, 0, r, NULL);
    for (int i = 0; i < 8; i++) {
        int beyond = r[i].window > CTX;
        EXPECT(beyond ? isnan(r[i].loss) && r[i].tokens == 0 && strcmp(r[i].note, "learned table has 8 rows") == 0
                      : isfinite(r[i].loss) && r[i].tokens == NTOK && r[i].note[0] == 0,
               "learned table, window %d mode %d: loss %g, %zu tokens, note '%s'", r[i].window, r[i].mode,
               r[i].loss, r[i].tokens, r[i].note);
    }
    char dir[] = "/tmp/test_pplXXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp");
    char p1[256], p2[256];
    snprintf(p1, sizeof p1, "%s/ppl.csv", dir);
    snprintf(p2, sizeof p2, "%s/pos.csv", dir);
    ppl_write_csv(p1, r, 8);
    ppl_write_positions(p2, r, 8);
    EXPECT(count_lines(p1) == 9, "ppl CSV: header + 8 rows");
    EXPECT(count_lines(p2) == 1 + 4 + 8, "positions CSV: header + W rows for each window with a number");
    FILE *f = fopen(p1, "r");
    char line[256]; int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strcmp(line, "window,mode,tokens,loss,ppl,note\n") == 0) found |= 1;
        if (strcmp(line, "16,nonoverlap,0,,,learned table has 8 rows\n") == 0) found |= 2;
        if (strcmp(line, "32,sliding,0,,,learned table has 8 rows\n") == 0) found |= 4;
        if (strncmp(line, "8,sliding,64,", 13) == 0 && line[strlen(line) - 2] == ',') found |= 8;
    }
    if (f) fclose(f);
    EXPECT(found == 15, "ppl CSV rows (found mask %d)", found);
    char tmp[300]; snprintf(tmp, sizeof tmp, "%s.tmp", p1);
    EXPECT(access(tmp, F_OK) != 0, "no .tmp left behind");
    unlink(p1); unlink(p2); rmdir(dir);
    for (int i = 0; i < 8; i++) ppl_result_free(&r[i]);
    free(tok); gpt_free(&m);
}

static void test_parse(void) {
    double mult[PPL_MAX_WINDOWS];
    int W[PPL_MAX_WINDOWS];
    char msg[256];
    int n = ppl_parse_multiples(PPL_DEFAULT_WINDOWS, mult, PPL_MAX_WINDOWS, msg, sizeof msg);
    EXPECT(n == 5 && ppl_windows(mult, n, 64, W, msg, sizeof msg) && W[0] == 32 && W[4] == 512, "default list at T 64");
    const char *bad[] = { "", "1,,2", "a", "1,x", "0", "-1", "1,nan", "2,inf", "1,", ",1" };
    for (int i = 0; i < 10; i++)
        EXPECT(ppl_parse_multiples(bad[i], mult, PPL_MAX_WINDOWS, msg, sizeof msg) == 0, "'%s' refused", bad[i]);
    n = ppl_parse_multiples("0.01", mult, PPL_MAX_WINDOWS, msg, sizeof msg);
    EXPECT(n == 1 && !ppl_windows(mult, n, 64, W, msg, sizeof msg) && strstr(msg, "at least 1 token"), "0.01 x 64 < 1 token: %s", msg);
    n = ppl_parse_multiples("1,1.001", mult, PPL_MAX_WINDOWS, msg, sizeof msg);
    EXPECT(n == 2 && !ppl_windows(mult, n, 64, W, msg, sizeof msg) && strstr(msg, "both give"), "duplicate window: %s", msg);
    EXPECT(ppl_stride(64, 0.5) == 32 && ppl_stride(10, 0.3) == 3 && ppl_stride(100, 0.29) == 29 &&
           ppl_stride(3, 0.1) == 1 && ppl_stride(7, 1.0) == 7, "strides");
}

// (f)
static GPT *fo_model;
static void fo_backward(const void *arg) { (void)arg; gpt_backward(fo_model, 1.0, NULL); }
static void fo_probs(const void *arg) { real p[CTX * CTX]; attention_probs(fo_model, 0, 0, 0, p); (void)arg; }
static void test_forward_only(const char *pe) {
    GPTConfig c = config(pe, "none");
    c.n_layer = 3;
    posenc_defaults(&c.pe, c.n_layer);
    char msg[256];
    CHECK(posenc_schedule(&c.pe, c.n_layer, pe, NULL, "none", msg, sizeof msg), "%s", msg);
    GPT m; gpt_build(&m, &c, 3, 0);
    int *tok = text(2 * CTX + 1, 5);
    Batch b; batch_alloc(&b, 2, CTX);
    for (int i = 0; i < 2 * CTX; i++) { b.tokens[i] = tok[i]; b.targets[i] = tok[i + 1]; b.pos[i] = i % CTX; }
    size_t nl = (size_t)2 * CTX * c.padded_vocab;
    double full = gpt_forward(&m, &b, NULL);
    real *logits = xmalloc(sizeof(real) * nl), *losses = xmalloc(sizeof(real) * 2 * CTX);
    memcpy(logits, m.state.a.logits, sizeof(real) * nl);
    memcpy(losses, m.state.a.losses, sizeof(real) * 2 * CTX);
    const GptPass forward_only = { .forward_only = 1 };
    double fo = gpt_forward(&m, &b, &forward_only);
    EXPECT(fo == full && memcmp(logits, m.state.a.logits, sizeof(real) * nl) == 0 &&
           memcmp(losses, m.state.a.losses, sizeof(real) * 2 * CTX) == 0,
           "%s: the forward-only pass must give the normal forward's logits and losses bit for bit", pe);
    EXPECT(m.state.ga.dqkv == NULL, "%s: a forward-only model keeps no gradient buffers", pe);
    fo_model = &m;
    EXPECT(dies_with(fo_backward, NULL, "forward-only", NULL), "%s: gpt_backward after a forward-only pass must refuse", pe);
    EXPECT(dies_with(fo_probs, NULL, "forward-only", NULL), "%s: attention_probs after a forward-only pass must refuse", pe);
    EXPECT(gpt_forward(&m, &b, NULL) == full, "%s: back in training mode, the same loss", pe);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    // the gradients of a twin (same seed) that never left training mode, bit for bit, and not zero
    GPT twin; gpt_build(&twin, &c, 3, 0);
    gpt_forward(&twin, &b, NULL);
    gpt_zero_grad(&twin);
    gpt_backward(&twin, 1.0 / twin.state.weight_sum, NULL);
    size_t nonzero = 0;
    for (size_t i = 0; i < m.weights.num_params; i++) nonzero += m.weights.grads[i] != 0;
    EXPECT(memcmp(m.weights.grads, twin.weights.grads, sizeof(real) * m.weights.num_params) == 0 && nonzero > m.weights.num_params / 2,
           "%s: back in training mode, backward gives the gradients of a model never switched (%zu of %zu nonzero)",
           pe, nonzero, m.weights.num_params);
    free(logits); free(losses); free(tok);
    batch_free(&b);
    gpt_free(&m); gpt_free(&twin);
}

int main(void) {
    test_parse();
    test_forward_only("nope");
    test_forward_only("rope");
    test_forward_only("t5");
    test_token_losses("nope");
    test_token_losses("alibi");
    test_token_losses("rope");
    test_token_losses("fire");
    test_stride_one_and_positions();
    test_counts();
    test_learned();
    return test_summary("test_ppl");
}
