// tests/test_posenc.c: published facts of each scheme (papers and public code, cited at each test), checked against posenc.c's tables and
// hooks. The expected numbers come from the papers and public code, not from this project.
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model.h"
#include "tests/testutil.h"

static Rng rng;
static double uni(void) { return 2 * rng_uniform(&rng) - 1; }

static PosTables tables_for(const char *input, const char *layer, int C, int NH, int max_pos,
                            int interleaved, double fraction) {
    PosConfig c; posenc_defaults(&c, 1);
    c.input = strcmp(input, "none") ? posenc_find(input) : PE_NOPE;
    c.layer[0] = posenc_find(layer);
    c.rope_interleaved = interleaved; c.rope_fraction = fraction;
    PosDims d = { 1, NH, C, C / NH, max_pos };
    PosTables t; posenc_tables_build(&t, &c, &d, max_pos);
    return t;
}

// Sinusoid, d = 6, positions 0..3 (Vaswani et al.; sin/cos of pos/10000^(2i/d), 4 decimals)
static void test_sinusoid_table(void) {
    static const double want[4][6] = {
        { 0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000 },
        { 0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0000 },
        { 0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0000 },
        { 0.1411, -0.9900, 0.1388, 0.9903, 0.0065, 1.0000 },
    };
    PosTables t = tables_for("sinusoidal", "nope", 6, 1, 4, 0, 1);
    // through the input hook, as the model uses it: x = 0 + PE[pos]
    real x[24] = { 0 };
    int pos[4] = { 0, 1, 2, 3 };
    posenc_scheme(posenc_find("sinusoidal"))->input_forward(&t, NULL, x, pos, 4);
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 6; i++) EXPECT_NEAR(x[p * 6 + i], want[p][i], 5e-5, 0, "sinusoid d=6 entry");
    posenc_tables_free(&t);
}

// Shift property: PE(pos+k) = M_k PE(pos), M_k block-diagonal 2x2 rotations, one per frequency.
static void test_sinusoid_shift(void) {
    int C = 16, P = 200;
    PosTables t = tables_for("sinusoidal", "nope", C, 1, P, 0, 1);
    int ks[3] = { 1, 10, 37 }, bad = 0;
    for (int ki = 0; ki < 3; ki++) {
        int k = ks[ki];
        for (int pos = 0; pos + k < P; pos += 13)
            for (int i = 0; i < C / 2; i++) {
                double w = k / pow(10000.0, 2.0 * i / C);     // M_k's angle for pair i
                double s = t.sinusoid[pos * C + 2 * i], c = t.sinusoid[pos * C + 2 * i + 1];
                double s2 = cos(w) * s + sin(w) * c, c2 = -sin(w) * s + cos(w) * c;
                if (fabs(s2 - t.sinusoid[(pos + k) * C + 2 * i]) > 1e-9 || fabs(c2 - t.sinusoid[(pos + k) * C + 2 * i + 1]) > 1e-9) bad++;
            }
    }
    EXPECT(bad == 0, "sinusoid shift matrix M_k fails at %d entries", bad);
    posenc_tables_free(&t);
}

// The factor on the token embeddings before hook 1 (Vaswani et al. 2017, 3.4: x sqrt(d_model)):
// sinusoidal's default sqrt(C), 8 at C = 64; 1 with --sinusoidal-scale none, for every other input
// (learned, none) and for a stored config that predates the setting (posenc_stored_defaults).
static void test_embed_scale(void) {
    char msg[256];
    PosConfig c;
    posenc_defaults(&c, 2);
    EXPECT(posenc_embed_scale(&c, 64) == 1, "learned input: embeddings unscaled");
    EXPECT(posenc_schedule(&c, 2, "sinusoidal", NULL, NULL, msg, sizeof msg), "%s", msg);
    EXPECT(posenc_embed_scale(&c, 64) == 8 && posenc_embed_scale(&c, 6) == sqrt(6.0),
           "sinusoidal: sqrt(C) by default (%g at C = 64)", posenc_embed_scale(&c, 64));
    EXPECT(posenc_set(&c, "sinusoidal_scale", "none", msg, sizeof msg) == 1 && posenc_embed_scale(&c, 64) == 1,
           "sinusoidal_scale none: unscaled");
    EXPECT(posenc_set(&c, "sinusoidal_scale", "sqrt", msg, sizeof msg) == 1, "%s", msg);
    EXPECT(posenc_schedule(&c, 2, "rope", NULL, NULL, msg, sizeof msg) && posenc_embed_scale(&c, 64) == 1,
           "no input scheme (rope layers): unscaled, whatever sinusoidal_scale says");
    EXPECT(posenc_set(&c, "sinusoidal_scale", "sqrt(C)", msg, sizeof msg) == -1 && strstr(msg, "--sinusoidal-scale must be"),
           "a bad value is refused naming the flag: %s", msg);
    PosConfig old;
    posenc_stored_defaults(&old, 2);
    EXPECT(posenc_schedule(&old, 2, "sinusoidal", NULL, NULL, msg, sizeof msg) && posenc_embed_scale(&old, 64) == 1,
           "a stored config without the line: unscaled (the form before the setting existed)");
}

// The NoPE paper's APE (--sinusoidal-scale paper; its code, McGill-NLP/length-generalization,
// src/models/custom_t5_decoder_only.py): FixedAbsolutePositionalEmbedding's table is
// torch.cat((sin, cos), dim=-1), the same d = 6 values as above in halves [s s s c c c]; the token
// embeddings are added unscaled and start N(0, 1); the tied LM head reads the final state x d^-0.5.
// The other forms keep GPT-2's embeddings (std 0.02 here) and an unscaled head.
static void test_sinusoid_paper(void) {
    static const double want[4][6] = {
        { 0.0000, 0.0000, 0.0000, 1.0000, 1.0000, 1.0000 },
        { 0.8415, 0.0464, 0.0022, 0.5403, 0.9989, 1.0000 },
        { 0.9093, 0.0927, 0.0043, -0.4161, 0.9957, 1.0000 },
        { 0.1411, 0.1388, 0.0065, -0.9900, 0.9903, 1.0000 },
    };
    char msg[256];
    PosConfig c;
    posenc_defaults(&c, 1);
    EXPECT(posenc_schedule(&c, 1, "sinusoidal", NULL, NULL, msg, sizeof msg), "%s", msg);
    EXPECT(posenc_set(&c, "sinusoidal_scale", "paper", msg, sizeof msg) == 1 && c.sinusoidal_scale == PE_SIN_PAPER, "%s", msg);
    PosDims d = { 1, 1, 6, 6, 4 };
    PosTables t;
    posenc_tables_build(&t, &c, &d, 4);
    real x[24] = { 0 };
    int pos[4] = { 0, 1, 2, 3 };
    posenc_scheme(c.input)->input_forward(&t, NULL, x, pos, 4);
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 6; i++) EXPECT_NEAR(x[p * 6 + i], want[p][i], 5e-5, 0, "paper sinusoid d=6 entry (halves)");
    posenc_tables_free(&t);
    EXPECT(posenc_embed_scale(&c, 64) == 1 && posenc_token_init_std(&c, 64, 0.02) == 1 && posenc_head_scale(&c, 64) == 0.125,
           "paper: embeddings unscaled (%g), N(0, 1) (std %g), head input x 64^-0.5 (%g)", posenc_embed_scale(&c, 64),
           posenc_token_init_std(&c, 64, 0.02), posenc_head_scale(&c, 64));
    const char *others[] = { "sqrt", "none" };
    for (int k = 0; k < 2; k++) {
        EXPECT(posenc_set(&c, "sinusoidal_scale", others[k], msg, sizeof msg) == 1, "%s", msg);
        EXPECT(posenc_token_init_std(&c, 64, 0.02) == 0.02 && posenc_head_scale(&c, 64) == 1,
               "sinusoidal_scale %s: the model's own init std and an unscaled head", others[k]);
    }
    EXPECT(posenc_set(&c, "sinusoidal_scale", "paper", msg, sizeof msg) == 1 &&
           posenc_schedule(&c, 1, "rope", NULL, NULL, msg, sizeof msg) && posenc_head_scale(&c, 64) == 1 &&
           posenc_token_init_std(&c, 64, 0.02) == 0.02, "no sinusoidal input: the paper form changes nothing");
    // a model: wte's initial values have std 1 with the paper's APE, 0.02 with the default form, and
    // come from the same stream (the same draws, scaled)
    double sd[2] = { 0, 0 }, ratio = 0;
    real *first = NULL;
    for (int k = 0; k < 2; k++) {
        GPTConfig cfg = { .vocab_size = 300, .n_layer = 1, .n_head = 2, .n_embd = 16, .max_seq_len = 8 };
        posenc_defaults(&cfg.pe, 1);
        EXPECT(posenc_schedule(&cfg.pe, 1, "sinusoidal", NULL, NULL, msg, sizeof msg), "%s", msg);
        cfg.pe.sinusoidal_scale = k ? PE_SIN_PAPER : PE_SIN_SQRT;
        GPT m;
        gpt_build(&m, &cfg, 5, 0);
        size_t n = (size_t)cfg.vocab_size * cfg.n_embd;
        for (size_t i = 0; i < n; i++) sd[k] += (double)m.weights.p.wte[i] * m.weights.p.wte[i];
        sd[k] = sqrt(sd[k] / n);
        if (!k) { first = xmalloc(sizeof(real) * n); memcpy(first, m.weights.p.wte, sizeof(real) * n); }
        else for (size_t i = 0; i < n; i++) ratio = fmax(ratio, fabs(m.weights.p.wte[i] - 50 * first[i]));
        gpt_free(&m);
    }
    free(first);
    EXPECT(fabs(sd[0] - 0.02) < 0.001 && fabs(sd[1] - 1) < 0.05 && ratio < 1e-4,
           "wte's initial std: %.4f (sqrt form, want 0.02), %.4f (paper, want 1), the same draws x 50 (off by %.2g)",
           sd[0], sd[1], ratio);
}

static double dot(const real *a, const real *b, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }

// RoPE: <R(m)q, R(n)k> depends only on n - m, for both pairings and partial rotation.
static void test_rope_relative(int interleaved, double fraction) {
    int hs = 16;
    PosTables t = tables_for("none", "rope", hs, 1, 2000, interleaved, fraction);
    const PosScheme *s = posenc_scheme(posenc_find("rope"));
    real q[16], k[16];
    for (int i = 0; i < hs; i++) { q[i] = (real)uni(); k[i] = (real)uni(); }
    int ms[4] = { 3, 10, 101, 1500 };
    double ref = 0;
    for (int i = 0; i < 4; i++) {
        real qr[16], kr[16];
        memcpy(qr, q, sizeof q); memcpy(kr, k, sizeof k);
        s->qk_forward(&t, qr, ms[i], 0); s->qk_forward(&t, kr, ms[i] + 2, 1);
        double d = dot(qr, kr, hs);
        if (i == 0) ref = d;
        EXPECT_NEAR(d, ref, 1e-10, 0, "rope: score at offset 2 must not depend on the absolute position");
        // rotation keeps norms, and backward (the transpose) undoes forward
        EXPECT_NEAR(dot(qr, qr, hs), dot(q, q, hs), 1e-10, 0, "rope rotation keeps the norm");
        s->qk_backward(&t, qr, ms[i], 0);
        double back = 0;
        for (int c = 0; c < hs; c++) back = err_max(back, fabs(qr[c] - q[c]));
        EXPECT(back < 1e-12, "rope backward must be the inverse rotation (error %.3g)", back);
    }
    // partial RoPE: channels d_rot .. hs-1 pass unchanged
    int rot = posenc_rope_width(&t.cfg, hs);
    real x[16];
    memcpy(x, q, sizeof q);
    s->qk_forward(&t, x, 77, 0);
    int same = 1;
    for (int i = rot; i < hs; i++) same &= x[i] == q[i];
    EXPECT(same, "partial rope must leave channels >= d_rot = %d unchanged", rot);
    posenc_tables_free(&t);
}

// Split-half and interleaved pairings are equal up to a permutation of the rotated channels:
// interleaved channel 2i <-> split channel i, 2i+1 <-> i + d/2.
static void test_rope_pairings(double fraction) {
    int hs = 16;
    PosTables ts = tables_for("none", "rope", hs, 1, 64, 0, fraction), ti = tables_for("none", "rope", hs, 1, 64, 1, fraction);
    const PosScheme *s = posenc_scheme(posenc_find("rope"));
    int rot = ts.rope.rot, perm[16];
    for (int i = 0; i < hs; i++) perm[i] = i;
    for (int i = 0; i < rot / 2; i++) { perm[2 * i] = i; perm[2 * i + 1] = i + rot / 2; }
    real x[16], xs[16];
    for (int i = 0; i < hs; i++) x[i] = (real)uni();
    for (int i = 0; i < hs; i++) xs[perm[i]] = x[i];
    s->qk_forward(&ti, x, 29, 0);
    s->qk_forward(&ts, xs, 29, 0);
    double err = 0;
    for (int i = 0; i < hs; i++) err = err_max(err, fabs(xs[perm[i]] - x[i]));
    EXPECT(err < 1e-12, "split and interleaved rope differ by more than a permutation (%.3g)", err);
    posenc_tables_free(&ts); posenc_tables_free(&ti);
}

// Partial RoPE computes its frequencies over d_rot, not head_size: with hs = 16 and fraction 0.5,
// pair i of the 8 rotated channels turns by theta_i = base^(-2i/8) per position.
static void test_rope_partial_freqs(int interleaved) {
    int hs = 16;
    PosTables t = tables_for("none", "rope", hs, 1, 8, interleaved, 0.5);
    EXPECT(t.rope.rot == 8, "d_rot = int(16 * 0.5) = 8 (got %d)", t.rope.rot);
    const PosScheme *s = posenc_scheme(posenc_find("rope"));
    for (int i = 0; i < 4; i++) {
        real x[16] = { 0 };
        int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + 4;
        x[a] = 1;                                // unit vector in the first member of pair i
        s->qk_forward(&t, x, 1, 0);
        double angle = atan2(x[b], x[a]);        // the rotation of pair i at position 1
        EXPECT_NEAR(angle, pow(10000.0, -2.0 * i / 8), 1e-12, 0, "partial rope: theta_i over d_rot");
    }
    posenc_tables_free(&t);
}

// Scores are not monotone in distance: q = k = (1, 0) in one pair gives cos(n - m).
static void test_rope_not_monotone(void) {
    PosConfig c; posenc_defaults(&c, 1);
    c.layer[0] = posenc_find("rope");
    PosDims d = { 1, 1, 2, 2, 16 };
    PosTables t; posenc_tables_build(&t, &c, &d, 16);
    const PosScheme *s = posenc_scheme(posenc_find("rope"));
    double score[8];
    for (int dist = 0; dist < 8; dist++) {
        real q[2] = { 1, 0 }, k[2] = { 1, 0 };
        s->qk_forward(&t, q, 0, 0); s->qk_forward(&t, k, dist, 1);
        score[dist] = dot(q, k, 2);
        EXPECT_NEAR(score[dist], cos(dist), 1e-12, 0, "rope score for q = k = (1,0) is cos(n - m)");
    }
    EXPECT(score[6] > score[3], "rope scores rise again between distance 3 and 6");
    posenc_tables_free(&t);
}

// ALiBi slopes, log2 of each, for 4, 6, 8 and 12 heads (Press et al. 2021 and its public code: the non-power-of-two rule)
static void test_alibi_slopes(void) {
    static const double want4[] = { -2, -4, -6, -8 }, want6[] = { -2, -4, -6, -8, -1, -3 },
        want8[] = { -1, -2, -3, -4, -5, -6, -7, -8 },
        want12[] = { -1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5 };
    const double *want[4] = { want4, want6, want8, want12 };
    int n[4] = { 4, 6, 8, 12 };
    for (int c = 0; c < 4; c++) {
        double s[12];
        posenc_alibi_slopes(n[c], s);
        for (int h = 0; h < n[c]; h++) EXPECT_NEAR(log2(s[h]), want[c][h], 1e-12, 0, "alibi slope (log2)");
    }
    // and through the score hook: score(i, j) += -m_h (i - j)
    PosTables t = tables_for("none", "alibi", 8, 4, 16, 0, 1);
    real out[3] = { 0, 0, 0 };
    int kpos[3] = { 2, 5, 9 };
    posenc_scheme(posenc_find("alibi"))->bias_forward(&t, NULL, NULL, 1, 9, kpos, 3, out);
    EXPECT_NEAR(out[0], -pow(2, -4) * 7, 1e-12, 0, "alibi bias head 1, distance 7");
    EXPECT_NEAR(out[2], 0, 1e-12, 0, "alibi bias at distance 0");
    posenc_tables_free(&t);
}

// NoPE without a mask is permutation-equivariant: Attn(PX) = P Attn(X). With rope, or with the
// causal mask, it is not (so the check can fail).
static double equivariance_error(const char *scheme, int bidirectional) {
    int T = 5, C = 8, NH = 2;
    int perm[5] = { 2, 0, 4, 1, 3 }, pos[5] = { 0, 1, 2, 3, 4 }, doc[5] = { 0 };
    PosTables t = tables_for("none", scheme, C, NH, 8, 0, 1);
    AttnPos ap = { .pos = pos, .doc = doc, .scheme = posenc_scheme(posenc_find(scheme)), .tables = &t, .bidirectional = bidirectional };
    real qkv[5 * 24], pqkv[5 * 24], out[40], pout[40], lse[2 * 5];
    real *scratch = xmalloc(sizeof(real) * 64 * ATT_SCRATCH(C / NH));   // up to 64 threads
    for (int i = 0; i < 5 * 24; i++) qkv[i] = (real)uni();
    for (int i = 0; i < T; i++) memcpy(pqkv + i * 24, qkv + perm[i] * 24, sizeof(real) * 24);
    qk_hook(qkv, &ap, T, C, NH, QK_FORWARD);
    qk_hook(pqkv, &ap, T, C, NH, QK_FORWARD);
    attention_forward(out, lse, qkv, &ap, scratch, 1, T, C, NH);
    attention_forward(pout, lse, pqkv, &ap, scratch, 1, T, C, NH);
    double err = 0;
    for (int i = 0; i < T; i++)
        for (int c = 0; c < C; c++) err = err_max(err, fabs(pout[i * C + c] - out[perm[i] * C + c]));
    posenc_tables_free(&t);
    free(scratch);
    return err;
}

static void test_nope_equivariance(void) {
    EXPECT(equivariance_error("nope", 1) < 1e-12, "nope without a mask must be permutation-equivariant");
    double rope = equivariance_error("rope", 1), causal = equivariance_error("nope", 0);   // infinite on a NaN
    EXPECT(isfinite(rope) && rope > 1e-6, "rope without a mask must not be permutation-equivariant (%.3g)", rope);
    EXPECT(isfinite(causal) && causal > 1e-6, "the causal mask must break permutation equivariance (%.3g)", causal);
}

// A learned table refuses a position at or past its size: a clear error, never a wrap.
static void test_learned_range(void) {
    int fds[2];
    EXPECT(pipe(fds) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        PosTables t = tables_for("learned", "nope", 4, 1, 8, 0, 1);
        real table[32] = { 0 }, x[4] = { 0 };
        int pos = 8;
        posenc_scheme(posenc_find("learned"))->input_forward(&t, table, x, &pos, 1);
        _exit(0);
    }
    close(fds[1]);
    char buf[1024] = { 0 };
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)n;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1, "learned table at position 8 of 8 must exit 1");
    EXPECT(strstr(buf, "position 8") && strstr(buf, "learned"), "the message must name the position and the table: %s", buf);
}

// RoPE context extension against the worked examples computed with HF transformers' modeling_rope_utils formulas
static void test_rope_scaling(void) {
    PosConfig c; posenc_defaults(&c, 1);
    double f[64], factor;
    c.rope_base = 1e4; c.rope_factor = 4; c.rope_original_context = 1024;
    // dynamic NTK: d = 64, L = 4096 -> base' = 141214 (6 s.f.), read back from theta_1 = base'^(-2/64)
    c.rope_scaling = ROPE_SCALING_DYNAMIC;
    posenc_rope_freqs(&c, 64, 4096, f, &factor);
    EXPECT_NEAR(pow(f[1], -32.0), 141214, 0.5, 0, "dynamic: base' for L = 4096");
    posenc_rope_freqs(&c, 64, 1024, f, &factor);
    EXPECT_NEAR(f[1], pow(1e4, -2.0 / 64), 1e-15, 0, "dynamic: no change up to L0");
    // linear: theta / s
    c.rope_scaling = ROPE_SCALING_LINEAR;
    posenc_rope_freqs(&c, 64, 4096, f, &factor);
    EXPECT_NEAR(f[3], pow(1e4, -6.0 / 64) / 4, 1e-15, 0, "linear: theta / s");
    // yarn: low 5, high 18, factor 1.138629, theta'[0,5,10,18,31]
    c.rope_scaling = ROPE_SCALING_YARN;
    posenc_rope_freqs(&c, 64, 4096, f, &factor);
    EXPECT_NEAR(factor, 1.138629, 5e-7, 0, "yarn attention factor");
    static const int yi[5] = { 0, 5, 10, 18, 31 };
    static const double yv[5] = { 1, 0.237137371, 0.0400127481, 0.00140585331, 3.33380358e-05 };
    for (int k = 0; k < 5; k++) EXPECT_NEAR(f[yi[k]], yv[k], 0, 1e-8, "yarn inv_freq");
    // llama3 (Llama 3.1): d = 128, base 5e5, s = 8, L0 = 8192 -> theta'[0,20,40,63]
    c.rope_scaling = ROPE_SCALING_LLAMA3; c.rope_base = 5e5; c.rope_factor = 8; c.rope_original_context = 8192;
    posenc_rope_freqs(&c, 128, 8192, f, &factor);
    static const int li[4] = { 0, 20, 40, 63 };
    static const double lv[4] = { 1, 0.0165604, 3.4281e-05, 3.06893e-07 };
    for (int k = 0; k < 4; k++) EXPECT_NEAR(f[li[k]], lv[k], 0, 5e-6, "llama3 inv_freq");
    EXPECT(factor == 1, "llama3 has no attention factor");
}

// LongRoPE: the attention factor's worked examples (HF's longrope rope_type formula), and inv_freq against a
// hand computation: d = 8, base 1e4 gives base^(-2i/d) = 1, 0.1, 0.01, 0.001, each divided by the
// short factors at a context <= L0 and by the long ones past it; s = 4, L0 = 16 gives
// a = sqrt(1 + ln 4 / ln 16) = sqrt(1.5). The tables carry a on cos and sin.
static void test_longrope(void) {
    EXPECT_NEAR(posenc_longrope_attention(32, 4096, 0), 1.190238, 5e-7, 0, "longrope a, L0 4096, s 32");
    EXPECT_NEAR(posenc_longrope_attention(8, 64, 0), 1.224745, 5e-7, 0, "longrope a, L0 64, s 8");
    EXPECT(posenc_longrope_attention(1, 64, 0) == 1, "longrope a = 1 when s = 1");
    EXPECT(posenc_longrope_attention(8, 64, 1.5) == 1.5, "longrope a given explicitly");
    PosConfig c; posenc_defaults(&c, 1);
    char msg[512];
    c.layer[0] = posenc_find("rope");
    EXPECT(posenc_set(&c, "rope_scaling", "longrope", msg, sizeof msg) == 1, "rope_scaling longrope: %s", msg);
    EXPECT(posenc_set(&c, "longrope_short", "1, 1,1.5\n2", msg, sizeof msg) == 1, "short list: %s", msg);
    EXPECT(posenc_set(&c, "longrope_long", "2,3,4,5", msg, sizeof msg) == 1, "long list: %s", msg);
    c.rope_factor = 4; c.rope_original_context = 16;
    static const double shrt[4] = { 1, 0.1, 0.01 / 1.5, 0.0005 }, lng[4] = { 0.5, 0.1 / 3, 0.0025, 0.0002 };
    double f[4], a;
    posenc_rope_freqs(&c, 8, 16, f, &a);
    for (int i = 0; i < 4; i++) EXPECT_NEAR(f[i], shrt[i], 0, 1e-14, "longrope short inv_freq at context L0");
    EXPECT_NEAR(a, sqrt(1.5), 1e-15, 0, "longrope a with s 4, L0 16");
    posenc_rope_freqs(&c, 8, 17, f, &a);
    for (int i = 0; i < 4; i++) EXPECT_NEAR(f[i], lng[i], 0, 1e-14, "longrope long inv_freq past L0");
    EXPECT(posenc_window_context(&c, 8) == 16 && posenc_window_context(&c, 40) == 40, "longrope windows pick their list");
    for (int ctx = 16; ctx <= 32; ctx += 16) {       // the tables: a cos(p theta_i), a sin(p theta_i)
        PosDims d = { 1, 2, 16, 8, ctx };
        PosTables t; posenc_tables_build(&t, &c, &d, 40);
        const double *want = ctx > 16 ? lng : shrt;
        for (int p = 0; p < 40; p += 13)
            for (int i = 0; i < 4; i++) {
                EXPECT_NEAR(t.rope.cos[p * 4 + i], sqrt(1.5) * cos(p * want[i]), 1e-6, 0, ctx > 16 ? "longrope cos, long list" : "longrope cos, short list");
                EXPECT_NEAR(t.rope.sin[p * 4 + i], sqrt(1.5) * sin(p * want[i]), 1e-6, 0, ctx > 16 ? "longrope sin, long list" : "longrope sin, short list");
            }
        posenc_tables_free(&t);
    }
    // lists against the rotated width (d_rot/2 = 4 with head size 8), and without longrope
    PosDims d8 = { 1, 2, 16, 8, 16 };
    EXPECT(posenc_validate(&c, &d8, msg, sizeof msg), "4 factors for d_rot 8: %s", msg);
    c.rope_fraction = 0.5;
    EXPECT(!posenc_validate(&c, &d8, msg, sizeof msg) && strstr(msg, "--longrope-short") && strstr(msg, "2 factors"),
           "4 factors for d_rot 4 refused: %s", msg);
    c.rope_fraction = 1;
    c.longrope_long.n = 0;
    EXPECT(!posenc_validate(&c, &d8, msg, sizeof msg) && strstr(msg, "--longrope-long"), "a missing long list refused: %s", msg);
    c.rope_scaling = ROPE_SCALING_YARN;
    EXPECT(!posenc_validate(&c, &d8, msg, sizeof msg) && strstr(msg, "--longrope-short acts only"), "a list without longrope refused: %s", msg);
    // bad lists name the flag
    static const char *bad[] = { "1,abc", "1,0", "1,-2", "1,,2", "1,", "2 x", "nan", "1e400" };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        EXPECT(posenc_set(&c, "longrope_short", bad[k], msg, sizeof msg) == -1 && strstr(msg, "--longrope-short must be a list"),
               "list '%s' refused: %s", bad[k], msg);
    char many[PE_VALUE_CAP + 8] = "";
    for (int i = 0; i <= PE_MAX_FACTORS; i++) strcat(many, "1,");
    many[strlen(many) - 1] = 0;
    EXPECT(posenc_set(&c, "longrope_short", many, msg, sizeof msg) == -1 && strstr(msg, "more than"), "%d factors refused", PE_MAX_FACTORS + 1);
    // a flag's value: a list, or a file of numbers; anything else refused naming the flag
    char buf[PE_VALUE_CAP], path[] = "/tmp/test_posenc_XXXXXX";
    const char *v = posenc_flag_value("longrope_long", "1,2", buf, sizeof buf, msg, sizeof msg);
    EXPECT(v && strcmp(v, "1,2") == 0, "a comma list is the value");
    v = posenc_flag_value("longrope_long", "/nonexistent/factors", buf, sizeof buf, msg, sizeof msg);
    EXPECT(!v && strstr(msg, "--longrope-long") && strstr(msg, "readable file"), "an unreadable file refused: %s", msg);
    int fd = mkstemp(path);
    EXPECT(fd >= 0 && write(fd, "1.25\n 2\t3,\n4e0\n", 15) == 15, "temporary factor file");
    close(fd);
    v = posenc_flag_value("longrope_long", path, buf, sizeof buf, msg, sizeof msg);
    EXPECT(v && strcmp(v, "1.25,2,3,4") == 0, "a factor file's numbers: %s", v ? v : msg);
    FILE *fw = fopen(path, "w");
    fputs("1 2 three\n", fw);
    fclose(fw);
    v = posenc_flag_value("longrope_long", path, buf, sizeof buf, msg, sizeof msg);
    EXPECT(!v && strstr(msg, "--longrope-long") && strstr(msg, path) && strstr(msg, "'three'"), "a bad factor file refused: %s", msg);
    remove(path);
}

// T5 decoder buckets: the first distance of each bucket from 16 on, and 113+ in bucket 31
static void test_t5_buckets(void) {
    static const int first[16] = { 16, 19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113 };
    for (int n = 0; n < 16; n++) EXPECT(posenc_t5_bucket(n, 32, 128) == n, "t5: distance %d is its own bucket", n);
    for (int b = 0; b < 16; b++) {
        EXPECT(posenc_t5_bucket(first[b], 32, 128) == 16 + b, "t5: distance %d opens bucket %d", first[b], 16 + b);
        EXPECT(posenc_t5_bucket(first[b] - 1, 32, 128) == 15 + b, "t5: distance %d is still bucket %d", first[b] - 1, 15 + b);
    }
    EXPECT(posenc_t5_bucket(5000, 32, 128) == 31, "t5: far distances share bucket 31");
}

// p-rope: the dropped (lowest) frequencies leave their channels unchanged; the kept ones rotate
static void test_prope(void) {
    PosTables t = tables_for("none", "p-rope", 16, 1, 64, 0, 1.0);   // 8 pairs, keeps floor(0.25*8) = 2
    const PosScheme *s = posenc_scheme(posenc_find("p-rope"));
    real x[16], y[16];
    for (int i = 0; i < 16; i++) x[i] = y[i] = (real)uni();
    s->qk_forward(&t, y, 37, 0);
    int kept_moved = y[0] != x[0] && y[1] != x[1], dropped_still = 1;
    for (int i = 2; i < 8; i++) dropped_still &= y[i] == x[i] && y[i + 8] == x[i + 8];
    EXPECT(kept_moved && dropped_still, "p-rope must rotate pairs 0,1 and leave pairs 2..7 unchanged");
    posenc_tables_free(&t);
}

// xpos: the score of q at m and k at n depends only on n - m (the scales are zeta^(m/g) and
// zeta^(-n/g))
static void test_xpos(void) {
    PosTables t = tables_for("none", "xpos", 16, 1, 400, 0, 1.0);
    const PosScheme *s = posenc_scheme(posenc_find("xpos"));
    real q[16], k[16];
    for (int i = 0; i < 16; i++) { q[i] = (real)uni(); k[i] = (real)uni(); }
    double ref = 0;
    int ms[3] = { 0, 57, 300 };
    for (int i = 0; i < 3; i++) {
        real qr[16], kr[16];
        memcpy(qr, q, sizeof q); memcpy(kr, k, sizeof k);
        s->qk_forward(&t, qr, ms[i] + 5, 0); s->qk_forward(&t, kr, ms[i], 1);
        double d = dot(qr, kr, 16);
        if (i == 0) ref = d;
        EXPECT_NEAR(d, ref, 1e-9, 1e-9, "xpos: score at offset 5 must not depend on the absolute position");
    }
    posenc_tables_free(&t);
}

// xpos decays with distance: for q = k = the unit vector of pair 0 (theta_0 = 1), the score of a
// query at m and a key at n = m - d is cos(d) * zeta_0^(d/gamma), zeta_0 = 0.4/1.4
static void test_xpos_decay(void) {
    PosConfig c; posenc_defaults(&c, 1);
    c.layer[0] = posenc_find("xpos"); c.xpos_scale_base = 16;
    PosDims d = { 1, 1, 8, 8, 64 };
    PosTables t; posenc_tables_build(&t, &c, &d, 64);
    const PosScheme *s = posenc_scheme(c.layer[0]);
    for (int dist = 0; dist < 12; dist += 5) {
        real q[8] = { 1 }, k[8] = { 1 };
        s->qk_forward(&t, q, 30, 0); s->qk_forward(&t, k, 30 - dist, 1);
        EXPECT_NEAR(dot(q, k, 8), cos(dist) * pow(0.4 / 1.4, dist / 16.0), 1e-12, 0, "xpos score cos(d) zeta_0^(d/gamma)");
    }
    posenc_tables_free(&t);
}

// KERPLE: bias -r1 log(1 + r2 d), decreasing in d; r1, r2 are projected back to >= 0.01
static void test_kerple(void) {
    PosTables t = tables_for("none", "kerple", 4, 2, 16, 0, 1.0);
    const PosScheme *s = posenc_scheme(posenc_find("kerple"));
    real p[4] = { 1.0, 0.5, 1.0, 2.0 };        // r1 = (1, 0.5), r2 = (1, 2) for heads 0, 1
    int kpos[4] = { 9, 7, 4, 0 };
    real out[4] = { 0 };
    s->bias_forward(&t, p, NULL, 1, 9, kpos, 4, out);
    EXPECT_NEAR(out[1], -0.5 * log(1 + 2 * 2.0), 1e-12, 0, "kerple bias, head 1, distance 2");
    EXPECT(out[0] == 0 && out[0] > out[1] && out[1] > out[2] && out[2] > out[3], "kerple bias decreases with distance");
    real below[4] = { 0.001, -2, 0.3, 0.01 };
    s->project(&t.cfg, &t.d, below);
    EXPECT(below[0] == (real)0.01 && below[1] == (real)0.01 && below[2] == (real)0.3, "kerple parameters are kept >= 0.01");
    posenc_tables_free(&t);
}

// FIRE: with w1 = 1, b1 = 0, w2 = 1/W and b2 = 0 the MLP is the identity on u >= 0, so the bias is
// u = psi(i - j) / psi(max(L, i)) itself: in [0, 1], 0 at distance 0, and normalised by L for i < L
static void test_fire(void) {
    int NH = 1, W = 32;
    PosTables t = tables_for("none", "fire", 4, NH, 64, 0, 1.0);
    const PosScheme *s = posenc_scheme(posenc_find("fire"));
    real p[2 * 32 + 32 + 1 + 2];
    for (int w = 0; w < W; w++) { p[w] = 1; p[W + w] = 0; p[2 * W + w] = (real)1.0 / W; }
    p[3 * W] = 0; p[3 * W + 1] = (real)0.1; p[3 * W + 2] = (real)log(16.0);     // b2, c, lambda = log L
    int kpos[3] = { 8, 4, 0 };
    real out[3] = { 0 };
    s->bias_forward(&t, p, NULL, 0, 8, kpos, 3, out);           // query at 8 < L = 16
    EXPECT_NEAR(out[0], 0, 1e-12, 0, "fire bias at distance 0");
    EXPECT_NEAR(out[1], log(1.4) / (log(2.6) + 1e-6), 1e-9, 0, "fire: u = psi(4)/psi(L) for a query before L");
    int kfar[1] = { 0 };
    real far[1] = { 0 };
    s->bias_forward(&t, p, NULL, 0, 40, kfar, 1, far);          // query at 40 > L: normalised by psi(40)
    EXPECT_NEAR(far[0], log(5.0) / (log(5.0) + 1e-6), 1e-9, 0, "fire: u = psi(i)/psi(i) at the first key past L");
    posenc_tables_free(&t);
}

// The bias cache (PosScheme.bias_prepare): for every scheme that keeps one, the bias with the cache
// equals the bias without it bit for bit, and the gradient through the cache (dcache, then
// bias_finish) equals the direct gradient. FIRE's L is near 40 of 150 positions, so queries before
// and past L are both covered; some keys sit at larger positions than the query (other documents).
static void test_bias_cache(void) {
    enum { NH = 3, D = 150 };                 // D spans several of FIRE's 64-key chunks
    int kpos[D], seen = 0;
    real dout[D];
    for (int j = 0; j < D; j++) { kpos[j] = j % 5 == 3 ? (j * 7) % D : j; dout[j] = (real)uni(); }
    for (int id = 0; id < posenc_count(); id++) {
        const PosScheme *s = posenc_scheme(id);
        if (!s->bias_prepare) continue;
        seen++;
        PosConfig c; posenc_defaults(&c, 1);
        c.input = PE_NOPE; c.layer[0] = id;
        PosDims d = { 1, NH, 4 * NH, 4, 40 };
        PosTables t; posenc_tables_build(&t, &c, &d, D);
        int rows, cols;
        s->param_shape(&c, &d, &rows, &cols);
        size_t np = (size_t)rows * cols, nc = s->bias_cache_size(&t, D);
        real *p = xmalloc(np * sizeof(real)), *dp_direct = xcalloc(np, sizeof(real)), *dp_cached = xcalloc(np, sizeof(real));
        Rng r; rng_seed(&r, 11);
        if (s->init) s->init(&c, &d, p, &r);
        for (size_t k = 0; k < np; k++) p[k] += (real)(0.05 * uni());
        if (s->project) s->project(&c, &d, p);
        real *cache = xmalloc(nc * sizeof(real)), *dcache = xcalloc(nc, sizeof(real));
        s->bias_prepare(&t, p, D, cache);
        int differ = 0;
        for (int h = 0; h < NH; h++)
            for (int q = 0; q < D; q++) {
                real a[D], b[D];
                for (int j = 0; j <= q; j++) a[j] = b[j] = (real)(0.1 * j);
                s->bias_forward(&t, p, NULL, h, q, kpos, q + 1, a);
                s->bias_forward(&t, p, cache, h, q, kpos, q + 1, b);
                differ += memcmp(a, b, sizeof(real) * (q + 1)) != 0;
                s->bias_backward(&t, p, NULL, dp_direct, NULL, h, q, kpos, q + 1, dout);
                s->bias_backward(&t, p, cache, dp_cached, dcache, h, q, kpos, q + 1, dout);
            }
        s->bias_finish(&t, p, cache, dcache, dp_cached);
        EXPECT(differ == 0, "%s: the bias with its cache differs from the bias without it in %d rows", s->name, differ);
        double worst = 0, scale = 0;
        for (size_t k = 0; k < np; k++) { worst = err_max(worst, fabs(dp_direct[k] - dp_cached[k])); scale = fmax(scale, fabs(dp_direct[k])); }
        EXPECT(worst <= 1e-12 * scale && scale > 0, "%s: the gradient through the bias cache differs by %.3g (scale %.3g)",
               s->name, worst, scale);
        free(p); free(dp_direct); free(dp_cached); free(cache); free(dcache);
        posenc_tables_free(&t);
    }
    EXPECT(seen > 0, "no scheme keeps a bias cache (fire should)");
}

// Precision: at positions near 1e6 the tables keep distinct angles because they are computed in
// double. Computing pos*theta in float instead errs by ~pos*6e-8 rad (0.06 rad at 1e6): the limit
// the README documents.
static void test_precision(void) {
    PosConfig c; posenc_defaults(&c, 1);
    c.layer[0] = posenc_find("rope");
    PosDims d = { 1, 1, 4, 4, 16 };
    int P = 1000003;
    PosTables t; posenc_tables_build(&t, &c, &d, P);
    double theta1 = pow(10000.0, -2.0 / 4), worst_double = 0, worst_float = 0;
    int distinct = 1;
    for (int p = P - 3; p < P; p++) {
        double a = (double)p * theta1;
        worst_double = err_max(worst_double, fabs(t.rope.cos[(size_t)p * 2 + 1] - cos(a)));
        float af = (float)p * (float)theta1;
        worst_float = fmax(worst_float, fabs((double)cosf(af) - cos(a)));
        distinct &= t.rope.cos[(size_t)p * 2 + 1] != t.rope.cos[(size_t)(p - 1) * 2 + 1];
    }
    EXPECT(worst_double < 1e-9, "rope tables at ~1e6 must match the double angle (error %.3g)", worst_double);
    EXPECT(distinct, "rope tables at ~1e6 must give neighbouring positions distinct angles");
    EXPECT(worst_float > 1e-4, "a float angle at ~1e6 should visibly err (%.3g), or the documented limit is wrong", worst_float);
    posenc_tables_free(&t);
}

// The schedule: names, presets of --pe, and refusals
static void test_schedule(void) {
    PosConfig c; posenc_defaults(&c, 4);
    char msg[256];
    EXPECT(posenc_schedule(&c, 4, "rope", NULL, NULL, msg, sizeof msg) && c.input == PE_NOPE && c.layer[3] == posenc_find("rope"), "--pe rope");
    EXPECT(posenc_schedule(&c, 4, "sinusoidal", NULL, NULL, msg, sizeof msg) && c.input == posenc_find("sinusoidal") && c.layer[0] == PE_NOPE, "--pe sinusoidal");
    EXPECT(posenc_schedule(&c, 4, NULL, "rope,rope,rope,nope", "learned", msg, sizeof msg) && c.layer[3] == PE_NOPE && c.input == posenc_find("learned"), "--pe-layers with --input-pe");
    EXPECT(!posenc_schedule(&c, 4, NULL, "rope,rope,nope", NULL, msg, sizeof msg) && strstr(msg, "3 layers"), "too few names: %s", msg);
    EXPECT(!posenc_schedule(&c, 4, "bogus", NULL, NULL, msg, sizeof msg) && strstr(msg, "bogus"), "unknown scheme: %s", msg);
    EXPECT(!posenc_schedule(&c, 4, NULL, "rope,learned,rope,rope", NULL, msg, sizeof msg), "learned is not a layer scheme");
    EXPECT(!posenc_schedule(&c, 4, "rope", "rope,rope,rope,rope", NULL, msg, sizeof msg), "--pe and --pe-layers are exclusive");
    posenc_schedule(&c, 4, "rope", NULL, NULL, msg, sizeof msg);
    c.rope_fraction = 0.3;   // int(16 * 0.3) = 4 is even: fine; int(10 * 0.3) = 3 is odd: refused
    PosDims d16 = { 4, 2, 32, 16, 64 }, d10 = { 4, 2, 20, 10, 64 };
    EXPECT(posenc_validate(&c, &d16, msg, sizeof msg), "rope fraction 0.3 of 16 = 4 channels is valid");
    EXPECT(!posenc_validate(&c, &d10, msg, sizeof msg) && strstr(msg, "even"), "odd rotated width refused: %s", msg);
    // the SmolLM3 preset: RoPE in layer i unless (i+1) % 4 == 0
    PosConfig p; posenc_defaults(&p, 8);
    EXPECT(posenc_schedule(&p, 8, NULL, "smollm3", NULL, msg, sizeof msg), "smollm3 preset: %s", msg);
    char list[256];
    posenc_layer_list(&p, list, sizeof list);
    EXPECT(strcmp(list, "rope,rope,rope,nope,rope,rope,rope,nope") == 0, "smollm3 on 8 layers: %s", list);
}

// key=value lines of c (a checkpoint's), in a malloc'd string
static char *kv_text(const PosConfig *c) {
    char *buf = NULL; size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    posenc_write_kv(c, f);
    fclose(f);
    return buf;
}

// Every row of the settings table: a value other than its default survives write_kv -> posenc_set,
// a value out of its range is refused naming the flag, and the flag is known, named by its row (its key
// with '-' for '_') and in --help.
static void test_settings(void) {
    char *help = NULL; size_t help_size = 0;
    FILE *hf = open_memstream(&help, &help_size);
    flags_help(hf, posenc_setting(0), posenc_setting_count(), NULL, 27, NULL);   // as ./train --help lists them
    fclose(hf);
    for (int i = 0; i < posenc_setting_count(); i++) {
        const FlagRow *s = posenc_setting(i);
        char flag[64], value[64], bad[64], msg[256], json[4096], meta[4096];
        size_t k = 0;
        for (; s->key[k]; k++) flag[k] = s->key[k] == '_' ? '-' : s->key[k];
        flag[k] = 0;
        EXPECT(!strcmp(flag, s->name), "setting %s's flag is --%s (got --%s)", s->key, flag, s->name);
        int n_names = 0;
        if (s->type == FLAG_CHOICE) while (s->choices[n_names]) n_names++;
        if (s->type == FLAG_DOUBLE) {
            snprintf(value, sizeof value, "%.17g", s->min + 0.3 * (s->max - s->min));
            snprintf(bad, sizeof bad, "%.17g", s->max * 2 + 1);
        } else if (s->type == FLAG_INT) {
            snprintf(value, sizeof value, "%d", (int)s->min + 1);
            snprintf(bad, sizeof bad, "%d", (int)s->min - 1);
        } else if (s->type == FLAG_LIST) {
            snprintf(value, sizeof value, "%.17g,2,0.3", s->min + 0.3);
            snprintf(bad, sizeof bad, "1,%.17g", s->min);
        } else {
            snprintf(value, sizeof value, "%s", s->choices[(int)s->def == n_names - 1 ? 0 : n_names - 1]);   // not the default
            snprintf(bad, sizeof bad, "bogus");
        }
        size_t size = s->type == FLAG_DOUBLE ? sizeof(double) : s->type == FLAG_LIST ? sizeof(PosFactors) : sizeof(int);
        PosConfig c, back, def;
        posenc_defaults(&c, 3);
        posenc_defaults(&back, 3);
        posenc_defaults(&def, 3);
        EXPECT(posenc_set(&c, s->key, value, msg, sizeof msg) == 1, "%s=%s accepted: %s", s->key, value, msg);
        EXPECT(memcmp((char *)&c + s->off, (char *)&def + s->off, size),
               "%s=%s differs from the default", s->key, value);
        posenc_resolve(&c, 64);      // as a model's config is (gpt_config_check) before a checkpoint is written
        char *text = kv_text(&c), *line = text, *eol;
        for (; (eol = strchr(line, '\n')); line = eol + 1) {
            *eol = 0;
            char *eq = strchr(line, '=');
            *eq = 0;
            EXPECT(posenc_set(&back, line, eq + 1, msg, sizeof msg) == 1, "line %s=%s reads back: %s", line, eq + 1, msg);
        }
        free(text);
        char *t1 = kv_text(&c), *t2 = kv_text(&back);
        EXPECT(strcmp(t1, t2) == 0 && !memcmp((char *)&c + s->off, (char *)&back + s->off, size),
               "%s=%s: write_kv -> posenc_set gives the same config", s->key, value);
        free(t1); free(t2);
        char want[128];
        snprintf(want, sizeof want, "--%s ", flag);
        EXPECT(posenc_set(&c, s->key, bad, msg, sizeof msg) == -1 && strstr(msg, want), "%s=%s refused: %s", s->key, bad, msg);
        EXPECT(posenc_is_flag(flag) == ((s->tag & PE_EVAL) ? 2 : 1), "--%s is a scheme flag", flag);
        EXPECT(strstr(help, want) != NULL, "--help lists %s", want);
        posenc_json(&c, json, sizeof json);
        posenc_metadata(&c, meta, sizeof meta);
        snprintf(want, sizeof want, "\"%s\":", s->key);
        EXPECT(strstr(json, want) && !strstr(meta, want) == !(s->tag & PE_METADATA), "%s in the JSON (and in the metadata iff marked)", s->key);
    }
    free(help);
}

int main(void) {
    rng_seed(&rng, 7);
    EXPECT(!strcmp(posenc_scheme(PE_NOPE)->name, "nope") && !strcmp(posenc_scheme(PE_T5)->name, "t5"),
           "the ids the lab names: PE_NOPE is nope's row, PE_T5 t5's (got %s, %s)", posenc_scheme(PE_NOPE)->name,
           posenc_scheme(PE_T5)->name);
    test_sinusoid_table();
    test_sinusoid_shift();
    test_embed_scale();
    test_sinusoid_paper();
    for (int il = 0; il < 2; il++) { test_rope_relative(il, 1.0); test_rope_relative(il, 0.5); }
    test_rope_pairings(1.0);
    test_rope_pairings(0.25);
    test_rope_not_monotone();
    test_rope_partial_freqs(0);
    test_rope_partial_freqs(1);
    test_alibi_slopes();
    test_nope_equivariance();
    test_learned_range();
    test_rope_scaling();
    test_longrope();
    test_t5_buckets();
    test_prope();
    test_xpos();
    test_xpos_decay();
    test_kerple();
    test_fire();
    test_bias_cache();
    test_precision();
    test_schedule();
    test_settings();
    return test_summary("test_posenc");
}
