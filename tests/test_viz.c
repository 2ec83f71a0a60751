// tests/test_viz.c: attention pictures, in the double build.
//   - attention_probs, for every layer scheme, on a batch with packing (two documents in one row)
//     and padding (doc -1 before and after a sequence): each row sums to 1 over the keys it may
//     attend, is exactly 0 at every other key (future, other document, padding), equals a plain
//     softmax computed here from m->state.a.qkv and the scheme's bias hook called one key at a time, and
//     reproduces the attention output the forward stored (sum_j p(i,j) v_j);
//   - attention_stats (GptPass.attn_stats), for every layer scheme on the same batch, in
//     training and forward-only mode: its sums equal those computed from attention_probs;
//   - viz_attention and viz_positions write their data and scripts for every kind of scheme (with
//     gnuplot hidden from PATH: no rendering here; tests/test_cli.sh renders through ./train), and
//     the data hold the right numbers: attn_layer*.dat the attention_probs of each head (rows sum
//     to 1, 0 above the diagonal); pos_input.dat the learned table or the sinusoidal formula;
//     pos_bias_layer*.dat the bias hook key by key, and for alibi, t5 and kerple their formulas
//     (Raffel et al. 2020); pos_rope_layer*.dat cos(p theta_k) (times xpos's zeta_k^(p/gamma),
//     theta_k = 0 for the frequencies p-rope drops) and the all-ones score;
//   - the NoPE paper's attention distance (eval/attndist.h): the JSD and the paper's J' (KL(m||.), with
//     its floor for a 0 against a non-0) against hand-computed values, both layer distances of hand-made
//     rows (3 heads: the paper's minimum over the pairs g < h only, NAN with one head), a model
//     against itself 0 for four schemes (the paper's above 0: its pairs are of different heads),
//     against a model with layer 0's heads swapped 0 in both (each head finds its twin), against
//     another scheme's model above 0 and below ln 2.
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "eval/attndist.h"
#include "eval/viz.h"
#include "tests/testutil.h"

enum { V = 19, T = 37, B = 2, NL = 2, NH = 2, C = 16 };
#define TOL 1e-12

static Rng rng;

static void build(GPT *m, const char *pe_layers, const char *input_pe) {
    GPTConfig cfg = { .vocab_size = V, .n_layer = NL, .n_head = NH, .n_embd = C, .max_seq_len = 48 };
    posenc_defaults(&cfg.pe, NL);
    char msg[256];
    CHECK(posenc_schedule(&cfg.pe, NL, NULL, pe_layers, input_pe, msg, sizeof msg), "%s", msg);
    cfg.pe.t5_num_buckets = 8; cfg.pe.t5_max_distance = 20; cfg.pe.p_rope_fraction = 0.5; cfg.pe.xpos_scale_base = 16;
    gpt_build(m, &cfg, 7, 0);
    // random parameters of some size, so that heads and biases differ and rows are not uniform
    for (size_t i = 0; i < m->weights.num_params; i++) m->weights.params[i] += (real)(0.3 * (2 * rng_uniform(&rng) - 1));
}

// attn_layer_distance on hand-made rows: T = 2 (row 0 is (1) in every head, distance 0; row 1 below),
// 3 heads each. A (NoPE): (.5,.5), (.9,.1), (.2,.8); B: (.6,.4), (.3,.7), (.5,.5). Worked out with
// /usr/bin/python3 from the formulas (the row mean halves every row-1 value):
//   textbook: h0 -> B's head 2 (equal: 0), h1 -> head 0 (.010503), h2 -> head 1 (.003351); D = .0116649
//   paper: the pairs (g, h) with g < h are (0,1) .035547, (0,2) .046436, (1,2) .003387: D' = .0033866.
//   All 9 pairs would give 0 (B's head 2 = A's head 0, g > h), g <= h .002539 (B's 0 vs A's 0).
static void test_layer_distance(void) {
    const double a1[3][2] = { { 0.5, 0.5 }, { 0.9, 0.1 }, { 0.2, 0.8 } }, b1[3][2] = { { 0.6, 0.4 }, { 0.3, 0.7 }, { 0.5, 0.5 } };
    real pa[3 * 4], pb[3 * 4];                      // (3, T, T), row i at i * T: row 0 = (1, 0), row 1
    for (int h = 0; h < 3; h++) {
        pa[h * 4 + 0] = 1; pa[h * 4 + 1] = 0; pa[h * 4 + 2] = (real)a1[h][0]; pa[h * 4 + 3] = (real)a1[h][1];
        pb[h * 4 + 0] = 1; pb[h * 4 + 1] = 0; pb[h * 4 + 2] = (real)b1[h][0]; pb[h * 4 + 3] = (real)b1[h][1];
    }
    double jsd, paper;
    attn_layer_distance(pa, 3, pb, 3, 2, &jsd, &paper);
    EXPECT_NEAR(jsd, 0.011664934373453941, 1e-15, 0, "textbook D of the hand-made layer");
    EXPECT_NEAR(paper, 0.0033865653480247438, 1e-15, 0, "paper's D' of the hand-made layer: only pairs g < h");
    attn_layer_distance(pa, 1, pb, 3, 2, &jsd, &paper);
    EXPECT(isnan(paper), "paper's D' with one head of A: no pair g < h, NAN (got %g)", paper);
}

static void test_distance(void) {
    real p[3] = { 0.5, 0.5, 0 }, q[3] = { 1, 0, 0 }, r[3] = { 0, 0, 1 }, u[3] = { 0.2, 0.3, 0.5 };
    // JSD((1/2, 1/2), (1, 0)): m = (3/4, 1/4); (1/2)[(1/2)ln(2/3) + (1/2)ln 2] + (1/2)ln(4/3)
    EXPECT_NEAR(attn_jsd(p, q, 3), 0.5 * (0.5 * log(2.0 / 3) + 0.5 * log(2.0)) + 0.5 * log(4.0 / 3), 1e-15, 0, "JSD((.5,.5),(1,0))");
    EXPECT_NEAR(attn_jsd(q, p, 3), attn_jsd(p, q, 3), 1e-15, 0, "JSD is symmetric");
    EXPECT_NEAR(attn_jsd(q, r, 3), log(2.0), 1e-15, 0, "JSD of disjoint rows is ln 2");
    EXPECT(attn_jsd(u, u, 3) == 0, "JSD of equal rows is 0");
    // the paper's J' = KL(m||p)/2 + KL(m||q)/2: (.2, .8) and (.6, .4), m = (.4, .6):
    // [.4 ln 2 + .6 ln .75]/2 + [.4 ln(2/3) + .6 ln 1.5]/2 = 0.0928713 (the textbook JSD is 0.0863046)
    real a2[2] = { 0.2, 0.8 }, b2[2] = { 0.6, 0.4 };
    EXPECT_NEAR(attn_jsd_paper(a2, b2, 2), 0.5 * (0.4 * log(2.0) + 0.6 * log(0.75)) + 0.5 * (0.4 * log(2.0 / 3) + 0.6 * log(1.5)),
                1e-15, 0, "paper's J'((.2,.8),(.6,.4))");
    EXPECT_NEAR(attn_jsd_paper(a2, b2, 2), 0.092871325187271314, 1e-15, 0, "paper's J' (python3's value)");
    EXPECT_NEAR(attn_jsd(a2, b2, 2), 0.086304621735534187, 1e-15, 0, "textbook JSD((.2,.8),(.6,.4)) (python3's value)");
    EXPECT_NEAR(attn_jsd_paper(b2, a2, 2), attn_jsd_paper(a2, b2, 2), 1e-15, 0, "J' is symmetric");
    EXPECT(attn_jsd_paper(u, u, 3) == 0, "J' of equal rows is 0");
    // a zero against a non-zero: KL(m||q) takes q's 0 at FLT_MIN: .25 ln(.25 / 1.17549435e-38)
    EXPECT_NEAR(attn_jsd_paper(p, q, 3), 0.5 * (0.75 * log(1.5) + 0.25 * log(0.5)) + 0.5 * (0.75 * log(0.75) + 0.25 * log(0.25 / 1.17549435e-38)),
                1e-12, 0, "J'((.5,.5),(1,0)) with the floor");
    test_layer_distance();
    int tokens[T];
    for (int t = 0; t < T; t++) tokens[t] = (int)(rng_u64(&rng) % V);
    double d[NL], dp[NL];
    const char *schemes[] = { "nope,nope", "rope,rope", "alibi,alibi", "t5,t5" };
    for (int k = 0; k < 4; k++) {
        GPT a;
        build(&a, schemes[k], "none");
        attention_distance(&a, &a, tokens, T, d, dp);
        for (int l = 0; l < NL; l++) EXPECT(d[l] == 0, "%s against itself: layer %d distance %g", schemes[k], l, d[l]);
        // the paper's: head 0 of B against head 1 of A (g < h), different heads, so above 0
        for (int l = 0; l < NL; l++) EXPECT(dp[l] > 0 && isfinite(dp[l]), "%s against itself: layer %d paper's %g", schemes[k], l, dp[l]);
        gpt_free(&a);
    }
    // layer 0's two heads swapped in a copy: the q, k and v rows of head 0 and 1, and the columns of
    // the attention projection (so the model computes the same function); every head finds its twin
    GPT a, b;
    build(&a, "nope,nope", "none");
    build(&b, "nope,nope", "none");
    memcpy(b.weights.params, a.weights.params, sizeof(real) * a.weights.num_params);
    ParamTensors *bp = &b.weights.p;
    int hs = C / NH;
    for (int part = 0; part < 3; part++)
        for (int i = 0; i < hs; i++) {
            size_t r0 = (size_t)part * C + i, r1 = r0 + hs;      // rows of head 0 and head 1
            for (int j = 0; j < C; j++) {
                real t = bp->qkvw[r0 * C + j]; bp->qkvw[r0 * C + j] = bp->qkvw[r1 * C + j]; bp->qkvw[r1 * C + j] = t;
            }
            real t = bp->qkvb[r0]; bp->qkvb[r0] = bp->qkvb[r1]; bp->qkvb[r1] = t;
        }
    for (int o = 0; o < C; o++)
        for (int i = 0; i < hs; i++) {
            real t = bp->attprojw[(size_t)o * C + i]; bp->attprojw[(size_t)o * C + i] = bp->attprojw[(size_t)o * C + i + hs];
            bp->attprojw[(size_t)o * C + i + hs] = t;
        }
    double self[NL];
    attention_distance(&a, &a, tokens, T, d, self);
    attention_distance(&a, &b, tokens, T, d, dp);
    for (int l = 0; l < NL; l++) EXPECT(fabs(d[l]) < 1e-12, "heads swapped: layer %d distance %g, expected 0", l, d[l]);
    // layer 0 swapped: B's head 0 is A's head 1, the one pair g < h of 2 heads: 0; layer 1 as against itself
    EXPECT(fabs(dp[0]) < 1e-12, "heads swapped: layer 0 paper's distance %g, expected 0", dp[0]);
    EXPECT(fabs(dp[1] - self[1]) < 1e-12, "heads swapped: layer 1 paper's distance %g, expected %g", dp[1], self[1]);
    gpt_free(&b);
    build(&b, "alibi,alibi", "none");                        // another scheme, other weights
    attention_distance(&a, &b, tokens, T, d, dp);
    for (int l = 0; l < NL; l++)
        EXPECT(d[l] > 1e-4 && d[l] < log(2.0), "nope against alibi: layer %d distance %g, expected in (0, ln 2)", l, d[l]);
    gpt_free(&a); gpt_free(&b);
}

// Row 0: document A (15 tokens, positions 0..14, doc 0) then B (22 tokens, positions 0..21, doc 1).
// Row 1: 5 pad tokens, 27 tokens of doc 0 at positions 0..26, 5 pad tokens (pad: doc -1, position 0).
static void fill_batch(Batch *b) {
    for (int t = 0; t < T; t++) {
        b->tokens[t] = (int)(rng_u64(&rng) % V); b->targets[t] = (int)(rng_u64(&rng) % V);
        b->pos[t] = t < 15 ? t : t - 15; b->doc[t] = t >= 15;
        int u = T + t, valid = t >= 5 && t < 32;
        b->tokens[u] = (int)(rng_u64(&rng) % V); b->targets[u] = (int)(rng_u64(&rng) % V);
        b->pos[u] = valid ? t - 5 : 0; b->doc[u] = valid ? 0 : -1; b->weights[u] = (float)valid;
    }
}

static void test_probs(const char *label, GPT *m) {
    Batch b; batch_alloc(&b, B, T);
    fill_batch(&b);
    gpt_forward(m, &b, NULL);
    int hs = C / NH;
    real *P = xmalloc(sizeof(real) * T * T);
    double ref[T], worst_ref = 0, worst_sum = 0, worst_out = 0;
    int masked_nonzero = 0, masked_seen = 0, pad_seen = 0;
    for (int l = 0; l < NL; l++) {
        const PosScheme *s = posenc_scheme(m->cfg.pe.layer[l]);
        const real *qkv = m->state.a.qkv + (size_t)l * B * T * 3 * C, *atty = m->state.a.atty + (size_t)l * B * T * C;
        for (int r = 0; r < B; r++)
            for (int h = 0; h < NH; h++) {
                attention_probs(m, l, r, h, P);
                const int *pos = b.pos + r * T, *doc = b.doc + r * T;
                for (int i = 0; i < T; i++) {
                    const real *q = qkv + ((size_t)r * T + i) * 3 * C + h * hs;
                    // the reference: plain scores, the bias hook one key at a time, a plain softmax
                    double mx = -INFINITY, sum = 0, psum = 0;
                    for (int j = 0; j < T; j++) {
                        ref[j] = NAN;
                        if (j > i || doc[j] != doc[i]) continue;
                        const real *k = qkv + ((size_t)r * T + j) * 3 * C + C + h * hs;
                        double dot = 0;
                        for (int c = 0; c < hs; c++) dot += (double)q[c] * k[c];
                        real bias = 0;
                        if (s->bias_forward) s->bias_forward(&m->pt, m->weights.p.pe_layer[l], NULL, h, pos[i], pos + j, 1, &bias);
                        ref[j] = dot / sqrt((double)hs) + bias;
                        if (ref[j] > mx) mx = ref[j];
                    }
                    for (int j = 0; j < T; j++) if (!isnan(ref[j])) sum += exp(ref[j] - mx);
                    for (int j = 0; j < T; j++) {
                        const real *p_ij = P + (size_t)i * T + j;
                        if (isnan(ref[j])) {
                            masked_seen++;
                            if (doc[j] < 0 && doc[i] >= 0) pad_seen++;
                            if (*p_ij != 0) masked_nonzero++;
                            continue;
                        }
                        worst_ref = err_max(worst_ref, fabs(*p_ij - exp(ref[j] - mx) / sum));
                        psum += *p_ij;
                    }
                    worst_sum = err_max(worst_sum, fabs(psum - 1));
                    // the output the forward stored is sum_j p(i,j) v_j
                    for (int c = 0; c < hs; c++) {
                        double o = 0;
                        for (int j = 0; j < T; j++) o += P[(size_t)i * T + j] * qkv[((size_t)r * T + j) * 3 * C + 2 * C + h * hs + c];
                        worst_out = err_max(worst_out, fabs(o - atty[((size_t)r * T + i) * C + h * hs + c]));
                    }
                }
            }
    }
    EXPECT(masked_seen > 0 && pad_seen > 0, "%s: the batch must have masked keys (%d) and padding (%d)", label, masked_seen, pad_seen);
    EXPECT(masked_nonzero == 0, "%s: %d masked keys (future, other document, padding) got a non-zero probability", label, masked_nonzero);
    EXPECT(worst_sum < TOL, "%s: a row's probabilities over its allowed keys sum to 1 +- %.3g", label, worst_sum);
    EXPECT(worst_ref < TOL, "%s: attention_probs differs from a plain softmax by %.3g", label, worst_ref);
    EXPECT(worst_out < TOL, "%s: sum_j p v_j differs from the forward's attention output by %.3g", label, worst_out);
    free(P);
    batch_free(&b);
}

// The sums attention_stats accumulates during a forward (GptPass.attn_stats), in training and
// in forward-only mode, against the same sums computed here from attention_probs: per layer and
// head, over every query row of a real document but the document's first (padding skipped), the
// first key's mass (the first key of the query's document), -sum p ln p and sum p (i - j).
static void test_stats(const char *label, GPT *m) {
    Batch b; batch_alloc(&b, B, T);
    fill_batch(&b);
    size_t n = (size_t)NL * NH * ATT_NSTAT;
    double *acc = xcalloc(n, sizeof(double)), *acc_fo = xcalloc(n, sizeof(double)), *ref = xcalloc(n, sizeof(double));
    const GptPass stats = { .attn_stats = acc };
    gpt_forward(m, &b, &stats);
    real *P = xmalloc(sizeof(real) * T * T);
    for (int l = 0; l < NL; l++)
        for (int r = 0; r < B; r++)
            for (int h = 0; h < NH; h++) {
                attention_probs(m, l, r, h, P);
                const int *doc = b.doc + r * T;
                double *st = ref + ((size_t)l * NH + h) * ATT_NSTAT;
                for (int i = 0; i < T; i++) {
                    int first = 0;
                    while (doc[first] != doc[i]) first++;
                    if (doc[i] < 0 || i == first) continue;
                    st[ATT_STAT_ROWS] += 1;
                    st[ATT_STAT_SINK] += P[(size_t)i * T + first];
                    for (int j = 0; j < T; j++) {
                        double p = P[(size_t)i * T + j];
                        if (p > 0) { st[ATT_STAT_ENTROPY] -= p * log(p); st[ATT_STAT_DIST] += p * (i - j); }
                    }
                }
            }
    // one layer's activations, as ./train --attention-stats runs
    const GptPass stats_fo = { .forward_only = 1, .attn_stats = acc_fo };
    gpt_forward(m, &b, &stats_fo);
    double worst = 0, worst_fo = 0;
    for (size_t k = 0; k < n; k++) {
        worst = err_max(worst, fabs(acc[k] - ref[k]));
        worst_fo = err_max(worst_fo, fabs(acc_fo[k] - acc[k]));
    }
    // rows: row 0 has documents of 15 and 22 tokens, row 1 one of 27 between padding
    EXPECT(ref[ATT_STAT_ROWS] == 14 + 21 + 26, "%s: %g rows summed per head, expected 61", label, ref[ATT_STAT_ROWS]);
    EXPECT(worst < 1e-10, "%s: attention_stats differs from the sums over attention_probs by %.3g", label, worst);
    EXPECT(worst_fo == 0, "%s: forward-only attention_stats differs from training mode's by %.3g", label, worst_fo);
    free(P); free(acc); free(acc_fo); free(ref);
    batch_free(&b);
}

// Block `block` of DIR/NAME (gnuplot data: '#' comments, blocks separated by two blank lines) into
// out (rows, cols); 1 when that block has exactly rows lines of cols numbers ("NaN" reads as NaN).
static int read_block(const char *dir, const char *name, int block, int rows, int cols, double *out) {
    char path[512], line[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int k = 0, blank = 0, r = 0, ok = 1, seen = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n') { blank++; continue; }
        if (blank >= 2 && seen) k++;
        blank = 0; seen = 1;
        if (line[0] == '#' || k != block) continue;
        char *s = line, *end;
        int c = 0;
        for (double x = strtod(s, &end); end != s; x = strtod(s, &end)) {
            if (r < rows && c < cols) out[(size_t)r * cols + c] = x;
            c++; s = end;
        }
        ok &= c == cols;
        r++;
    }
    fclose(f);
    return ok && r == rows;
}

// the largest |got - want| relative to max(1, |want|); infinite where exactly one is NaN
static double dat_diff(const double *got, const double *want, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = isnan(got[i]) || isnan(want[i]) ? (isnan(got[i]) && isnan(want[i]) ? d : INFINITY)
                                            : fmax(d, fabs(got[i] - want[i]) / fmax(1, fabs(want[i])));
    return d;
}

// the files hold 6 significant digits
#define DAT_TOL 1e-5
enum { VT = 12, VP = 20 };          // tokens drawn by viz_attention, positions by viz_positions

// attn_layer*.dat: per head the attention_probs of a forward over the same tokens; rows sum to 1;
// exactly 0 above the diagonal
static void check_attention_dat(GPT *m, const int *tokens, const char *dir, const char *label) {
    Batch b; batch_alloc(&b, 1, VT);
    memcpy(b.tokens, tokens, sizeof(int) * VT);
    int *targets = b.targets; b.targets = NULL;
    gpt_forward(m, &b, NULL);
    b.targets = targets;
    real P[VT * VT];
    double got[VT * VT], want[VT * VT];
    for (int l = 0; l < NL; l++) {
        char name[64];
        snprintf(name, sizeof name, "attn_layer%d.dat", l);
        for (int h = 0; h < NH; h++) {
            attention_probs(m, l, 0, h, P);
            for (int i = 0; i < VT * VT; i++) want[i] = P[i];
            if (!read_block(dir, name, h, VT, VT, got)) {
                EXPECT(0, "%s: %s head %d: not %d x %d numbers", label, name, h, VT, VT);
                continue;
            }
            double worst_sum = 0;
            int above = 0;
            for (int i = 0; i < VT; i++) {
                double sum = 0;
                for (int j = 0; j < VT; j++) { sum += got[i * VT + j]; above += j > i && got[i * VT + j] != 0; }
                worst_sum = err_max(worst_sum, fabs(sum - 1));
            }
            double d = dat_diff(got, want, VT * VT);
            EXPECT(d < DAT_TOL, "%s: %s head %d differs from attention_probs by %.3g", label, name, h, d);
            EXPECT(worst_sum < DAT_TOL * VT, "%s: %s head %d: a row sums to 1 +- %.3g", label, name, h, worst_sum);
            EXPECT(above == 0, "%s: %s head %d: %d entries above the diagonal are not 0", label, name, h, above);
        }
    }
    batch_free(&b);
    m->state.batch = NULL;
}

// pos_input.dat: the learned table's rows 0..VP-1, or PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos
static void check_input_dat(GPT *m, const char *dir, const char *input_pe) {
    double got[VP * C], want[VP * C];
    for (int p = 0; p < VP; p++)
        for (int c = 0; c < C; c++) {
            double ang = p / pow(10000.0, (double)(c - c % 2) / C);
            want[p * C + c] = strcmp(input_pe, "learned") == 0 ? m->weights.p.pe_input[(size_t)p * C + c] : c % 2 ? cos(ang) : sin(ang);
        }
    int ok = read_block(dir, "pos_input.dat", 0, VP, C, got);
    double d = ok ? dat_diff(got, want, VP * C) : INFINITY;
    EXPECT(d < DAT_TOL, "%s input: pos_input.dat differs from the table by %.3g", input_pe, d);
}

// the T5 decoder bucket of distance n (Raffel et al. 2020)
static int t5_bucket_ref(int n, int nb, int md) {
    int exact = nb / 2;
    if (n < exact) return n;
    int b = exact + (int)floor(log((double)n / exact) / log((double)md / exact) * (nb - exact));
    return b < nb - 1 ? b : nb - 1;
}

// pos_bias_layer{l}.dat: per head b(i, j) = the bias hook called one key at a time, NaN above the
// diagonal; for alibi -m_h (i - j) with m_h = 2^(-8(h+1)/NH) (NH a power of two), for t5
// table[bucket(i - j), h], for kerple -r1_h log(1 + r2_h (i - j))
static void check_bias_dat(GPT *m, int l, const char *dir) {
    const PosScheme *s = posenc_scheme(m->cfg.pe.layer[l]);
    const real *w = m->weights.p.pe_layer[l];
    const PosConfig *pc = &m->cfg.pe;
    char name[64];
    snprintf(name, sizeof name, "pos_bias_layer%d.dat", l);
    double got[VP * VP], hook[VP * VP], formula[VP * VP];
    int pos[VP], has_formula = 1;
    for (int t = 0; t < VP; t++) pos[t] = t;
    for (int h = 0; h < NH; h++) {
        for (int i = 0; i < VP; i++)
            for (int j = 0; j < VP; j++) {
                real b = 0;
                if (j <= i) s->bias_forward(&m->pt, w, NULL, h, i, pos + j, 1, &b);
                hook[i * VP + j] = j <= i ? b : NAN;
                int n = i - j;
                double f = NAN;
                if (strcmp(s->name, "alibi") == 0) f = -pow(2.0, -8.0 * (h + 1) / NH) * n;
                else if (strcmp(s->name, "t5") == 0)
                    f = n >= 0 ? w[t5_bucket_ref(n, pc->t5_num_buckets, pc->t5_max_distance) * NH + h] : 0;
                else if (strcmp(s->name, "kerple") == 0) f = -w[h] * log(1 + w[NH + h] * n);
                else has_formula = 0;
                formula[i * VP + j] = j <= i ? f : NAN;
            }
        int ok = read_block(dir, name, h, VP, VP, got);
        double d = ok ? dat_diff(got, hook, VP * VP) : INFINITY;
        EXPECT(d < DAT_TOL, "%s: %s head %d differs from the bias hook by %.3g", s->name, name, h, d);
        if (has_formula) {
            d = ok ? dat_diff(got, formula, VP * VP) : INFINITY;
            EXPECT(d < DAT_TOL, "%s: %s head %d differs from the scheme's formula by %.3g", s->name, name, h, d);
        }
    }
}

// pos_rope_layer{l}.dat, block 0: <R(p) e_c, R(0) e_c> = cos(p theta_k) s_k(p) for both channels
// of pair k (split pairing: (k, k + d/2)), 1 past d_rot; block 1: distance d and the all-ones score
// (sum_k 2 cos(d theta_k) s_k(d) + hs - d_rot) / hs. theta_k = base^(-2k/d_rot), 0 for the pairs
// p-rope drops (k >= floor(fraction d_rot/2)); s_k(p) = zeta_k^(p/gamma), zeta_k =
// (2k + 0.4 d_rot)/(1.4 d_rot) for xpos, 1 otherwise.
static void check_rope_dat(GPT *m, int l, const char *dir) {
    const PosScheme *s = posenc_scheme(m->cfg.pe.layer[l]);
    const PosConfig *pc = &m->cfg.pe;
    int hs = C / NH, d_rot = (int)(hs * pc->rope_fraction), half = d_rot / 2;
    int xpos = strcmp(s->name, "xpos") == 0;
    int kept = strcmp(s->name, "p-rope") == 0 ? (int)floor(pc->p_rope_fraction * half + 1e-9) : half;
    double kern[VP * C], score[VP * 2], got_k[VP * C], got_s[VP * 2];
    for (int p = 0; p < VP; p++) {
        double sum = hs - d_rot;
        for (int c = 0; c < hs; c++) kern[p * hs + c] = 1;
        for (int k = 0; k < half; k++) {
            double theta = k < kept ? pow(pc->rope_base, -2.0 * k / d_rot) : 0;
            double sc = xpos ? pow((2.0 * k + 0.4 * d_rot) / (1.4 * d_rot), p / pc->xpos_scale_base) : 1;
            kern[p * hs + k] = kern[p * hs + k + half] = cos(p * theta) * sc;
            sum += 2 * cos(p * theta) * sc;
        }
        score[2 * p] = p; score[2 * p + 1] = sum / hs;
    }
    char name[64];
    snprintf(name, sizeof name, "pos_rope_layer%d.dat", l);
    int ok = read_block(dir, name, 0, VP, hs, got_k);
    double d = ok ? dat_diff(got_k, kern, (size_t)VP * hs) : INFINITY;
    EXPECT(d < DAT_TOL, "%s: %s kernel differs from cos(p theta_k)%s by %.3g", s->name, name, xpos ? " zeta^(p/gamma)" : "", d);
    ok = read_block(dir, name, 1, VP, 2, got_s);
    d = ok ? dat_diff(got_s, score, VP * 2) : INFINITY;
    EXPECT(d < DAT_TOL, "%s: %s all-ones score differs by %.3g", s->name, name, d);
}

static int nonempty(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

// pictures of a model with this schedule: the .dat and .gp files of every layer that has a signal
static void test_pictures(const char *pe_layers, const char *input_pe, const char *const *expect_files,
                          const char *const *absent_files) {
    GPT m;
    build(&m, pe_layers, input_pe);
    char dir[] = "/tmp/test_viz.XXXXXX";
    CHECK(mkdtemp(dir), "cannot create a temporary folder");
    int tokens[VT];
    for (int t = 0; t < VT; t++) tokens[t] = (int)(rng_u64(&rng) % V);
    viz_attention(&m, tokens, VT, dir);
    EXPECT(m.state.batch == NULL, "viz_attention must not leave m->state.batch pointing at its freed batch");
    viz_positions(&m, VP, dir);
    check_attention_dat(&m, tokens, dir, pe_layers);
    if (input_pe && strcmp(input_pe, "none") != 0) check_input_dat(&m, dir, input_pe);
    for (int l = 0; l < NL; l++) {      // the layers drawn (a t5 layer sharing layer 0's table is not)
        const PosScheme *s = posenc_scheme(m.cfg.pe.layer[l]);
        char name[64];
        snprintf(name, sizeof name, "pos_bias_layer%d.dat", l);
        if ((s->hooks & PE_HOOK_BIAS) && nonempty(dir, name)) check_bias_dat(&m, l, dir);
        snprintf(name, sizeof name, "pos_rope_layer%d.dat", l);
        if ((s->hooks & PE_HOOK_QK) && nonempty(dir, name)) check_rope_dat(&m, l, dir);
    }
    for (int l = 0; l < NL; l++) {
        char name[64];
        snprintf(name, sizeof name, "attn_layer%d.dat", l);
        EXPECT(nonempty(dir, name), "%s: %s/%s missing", pe_layers, dir, name);
        snprintf(name, sizeof name, "attn_layer%d.gp", l);
        EXPECT(nonempty(dir, name), "%s: %s/%s missing", pe_layers, dir, name);
    }
    for (int k = 0; expect_files[k]; k++) EXPECT(nonempty(dir, expect_files[k]), "%s: %s/%s missing", pe_layers, dir, expect_files[k]);
    for (int k = 0; absent_files[k]; k++) EXPECT(!nonempty(dir, absent_files[k]), "%s: %s/%s should not exist", pe_layers, dir, absent_files[k]);
    DIR *d = opendir(dir);                  // remove the folder (PATH has no rm now)
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.') remove(path);
    }
    if (d) closedir(d);
    EXPECT(rmdir(dir) == 0, "could not remove %s", dir);
    gpt_free(&m);
}

int main(void) {
    rng_seed(&rng, 11);
    char layers[64];
    for (int s = 0; s < posenc_count(); s++) {
        const PosScheme *sc = posenc_scheme(s);
        if (sc->hooks & PE_HOOK_INPUT) continue;
        GPT m;
        snprintf(layers, sizeof layers, "%s,%s", sc->name, sc->name);
        build(&m, layers, "none");
        test_probs(sc->name, &m);
        test_stats(sc->name, &m);
        gpt_free(&m);
    }
    { GPT m; build(&m, "rope,alibi", "learned"); test_probs("rope,alibi + learned input", &m);
      test_stats("rope,alibi + learned input", &m); gpt_free(&m); }
    test_distance();

    // no gnuplot on PATH: the data and scripts are still written (rendering is tests/test_cli.sh's)
    CHECK(setenv("PATH", "/nonexistent", 1) == 0, "setenv");
    test_pictures("rope,alibi", "learned",
                  (const char *const[]){ "pos_input.dat", "pos_input.gp", "pos_rope_layer0.dat", "pos_rope_layer0.gp",
                                         "pos_bias_layer1.dat", "pos_bias_layer1.gp", NULL },
                  (const char *const[]){ "pos_bias_layer0.dat", "pos_rope_layer1.dat", NULL });
    test_pictures("t5,t5", "sinusoidal",   // t5 shares one table: layer 1 is the same picture
                  (const char *const[]){ "pos_input.dat", "pos_bias_layer0.dat", NULL },
                  (const char *const[]){ "pos_bias_layer1.dat", NULL });
    test_pictures("kerple,fire", "none",
                  (const char *const[]){ "pos_bias_layer0.dat", "pos_bias_layer1.dat", NULL },
                  (const char *const[]){ "pos_input.dat", NULL });
    test_pictures("xpos,p-rope", "none",
                  (const char *const[]){ "pos_rope_layer0.dat", "pos_rope_layer1.dat", NULL },
                  (const char *const[]){ "pos_input.dat", NULL });
    test_pictures("nope,nope", "none", (const char *const[]){ NULL },
                  (const char *const[]){ "pos_input.dat", "pos_bias_layer0.dat", "pos_rope_layer0.dat", NULL });
    return test_summary("test_viz");
}
