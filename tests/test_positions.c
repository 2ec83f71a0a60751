// tests/test_positions.c: positions are data (docs/positions.md), for every scheme in posenc's table
// and both input schemes, in the double build (so "equal" means equal to ~1e-12):
//   - KV cache: token-by-token and chunked decoding give the logits of one full forward pass, at
//     T = 12 and at T = 100 (several query blocks and key tiles of the attention: 16 and 32 in the
//     double build), in chunks that cross them;
//   - packing: each document's logits, loss and gradient are the same packed or alone;
//   - padding: valid tokens of a left-padded row get the logits of the unpadded sequence, and a
//     row padded on both sides the gradient of the sequence alone, whatever the padding's ids and
//     targets (bit for bit).
#include <string.h>

#include "model.h"
#include "tests/testutil.h"

enum { V = 19, T = 12, T_LONG = 100 };
#define TOL 1e-10

static Rng rng;

static void build(GPT *m, const char *pe_layers, const char *input_pe, int max_seq_len) {
    GPTConfig cfg = { .vocab_size = V, .n_layer = 2, .n_head = 2, .n_embd = 8, .max_seq_len = max_seq_len };
    posenc_defaults(&cfg.pe, 2);
    char msg[256];
    CHECK(posenc_schedule(&cfg.pe, 2, NULL, pe_layers, input_pe, msg, sizeof msg), "%s", msg);
    cfg.pe.t5_num_buckets = 8; cfg.pe.t5_max_distance = 12; cfg.pe.p_rope_fraction = 0.5; cfg.pe.xpos_scale_base = 8;
    gpt_build(m, &cfg, 99, 0);
    for (size_t i = 0; i < m->weights.num_params; i++) m->weights.params[i] += (real)(0.05 * (2 * rng_uniform(&rng) - 1));
}

// the largest difference; infinite if either side holds a NaN or an infinity
static double max_diff(const real *a, const real *b, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = err_max(d, fabs(a[i] - b[i]));
    return d;
}

// logits (T, V) of one full forward pass over tokens at positions 0..T-1
static void full_logits(GPT *m, const int *tokens, int n, real *out) {
    Batch b; batch_alloc(&b, 1, n);
    memcpy(b.tokens, tokens, sizeof(int) * n);
    int *targets = b.targets; b.targets = NULL;
    gpt_forward(m, &b, NULL);
    b.targets = targets;
    for (int t = 0; t < n; t++) memcpy(out + t * V, m->state.a.logits + (size_t)t * m->cfg.padded_vocab, sizeof(real) * V);
    batch_free(&b);
}

// Decodes tokens (len) through the KV cache in the chunks of each zero-ended list of `chunkings`
// (0 for one token at a time) and compares every step's logits with one full forward pass.
static void test_cache(const char *label, GPT *m, const int *tokens, int len, const int (*chunkings)[4], int n_chunkings) {
    real *full = xmalloc(sizeof(real) * len * V), *got = xmalloc(sizeof(real) * len * V);
    int *pos = xmalloc(sizeof(int) * len);
    full_logits(m, tokens, len, full);
    for (int k = 0; k < n_chunkings; k++) {
        KVCache kc; kv_cache_init(&kc, m, len);
        int done = 0;
        char name[64] = "";
        for (int c = 0; done < len; c++) {
            int n = chunkings[k][0] ? chunkings[k][c] : 1;
            CHECK(n > 0 && done + n <= len, "test_cache: chunking %d does not cover %d tokens", k, len);
            for (int t = 0; t < n; t++) pos[t] = done + t;        // positions P .. P+n-1
            gpt_forward_cached(m, &kc, tokens + done, pos, n);
            for (int t = 0; t < n; t++) memcpy(got + (done + t) * V, m->state.a.logits + (size_t)t * m->cfg.padded_vocab, sizeof(real) * V);
            done += n;
            if (chunkings[k][0]) snprintf(name + strlen(name), sizeof name - strlen(name), "%s%d", c ? "+" : "chunks ", n);
        }
        double d = max_diff(got, full, len * V);
        EXPECT(d < TOL, "%s: cached decoding of %d tokens (%s) differs from the full pass by %.3g", label, len,
               chunkings[k][0] ? name : "token by token", d);
        kv_cache_free(&kc);
    }
    free(full); free(got); free(pos);
}

// per-token losses (n) of one forward pass over tokens at positions 0..n-1 with their targets
static void alone_losses(GPT *m, const int *tokens, const int *targets, int n, real *out) {
    Batch b; batch_alloc(&b, 1, n);
    memcpy(b.tokens, tokens, sizeof(int) * n);
    memcpy(b.targets, targets, sizeof(int) * n);
    gpt_forward(m, &b, NULL);
    memcpy(out, m->state.a.losses, sizeof(real) * n);
    batch_free(&b);
}

// Packing: row = document A (5 tokens) then B (7 tokens), positions restarting at B, doc ids 0, 1.
static void test_packing(const char *label, GPT *m, const int *tokens, const int *targets) {
    int nA = 5, nB = T - nA;
    Batch packed; batch_alloc(&packed, 1, T);
    memcpy(packed.tokens, tokens, sizeof(int) * T);
    memcpy(packed.targets, targets, sizeof(int) * T);
    for (int t = nA; t < T; t++) { packed.pos[t] = t - nA; packed.doc[t] = 1; }
    gpt_forward(m, &packed, NULL);
    real plog[T * V], ploss[T];
    for (int t = 0; t < T; t++) {
        memcpy(plog + t * V, m->state.a.logits + (size_t)t * m->cfg.padded_vocab, sizeof(real) * V);
        ploss[t] = m->state.a.losses[t];
    }
    real alone[T * V];
    full_logits(m, tokens, nA, alone);
    full_logits(m, tokens + nA, nB, alone + nA * V);
    double d = max_diff(plog, alone, T * V);
    EXPECT(d < TOL, "%s: packed logits differ from each document alone by %.3g", label, d);
    real aloss[T];
    alone_losses(m, tokens, targets, nA, aloss);
    alone_losses(m, tokens + nA, targets + nA, nB, aloss + nA);
    d = max_diff(ploss, aloss, T);
    EXPECT(d < TOL, "%s: packed per-token losses differ from each document alone by %.3g", label, d);
    // gradients: the loss of document B only (weights 1 on B), packed vs alone
    size_t P = m->weights.num_params;
    real *g_packed = xmalloc(sizeof(real) * P);
    for (int t = 0; t < T; t++) packed.weights[t] = t >= nA;
    gpt_forward(m, &packed, NULL);
    double lp = m->state.loss;
    gpt_zero_grad(m); gpt_backward(m, 1.0 / m->state.weight_sum, NULL);
    memcpy(g_packed, m->weights.grads, sizeof(real) * P);
    Batch b; batch_alloc(&b, 1, nB);
    memcpy(b.tokens, tokens + nA, sizeof(int) * nB);
    memcpy(b.targets, targets + nA, sizeof(int) * nB);
    double la = gpt_forward(m, &b, NULL);
    gpt_zero_grad(m); gpt_backward(m, 1.0 / m->state.weight_sum, NULL);
    EXPECT(fabs(lp - la) < TOL, "%s: document B's loss packed %.12g vs alone %.12g", label, lp, la);
    double gd = max_diff(g_packed, m->weights.grads, (int)P), gmax = 0;
    for (size_t i = 0; i < P; i++) gmax = fmax(gmax, fabs(m->weights.grads[i]));
    EXPECT(gd < TOL * (1 + gmax) && gmax > 0, "%s: document B's gradient packed vs alone differs by %.3g", label, gd);
    free(g_packed); batch_free(&b); batch_free(&packed);
}

// Left padding: 4 pad tokens (doc -1, weight 0, position 0) then the sequence at positions 0..
static void test_left_padding(const char *label, GPT *m, const int *tokens) {
    int pad = 4, n = T - pad;
    real alone[T * V];
    full_logits(m, tokens, n, alone);
    Batch b; batch_alloc(&b, 1, T);
    for (int t = 0; t < T; t++) {
        int valid = t >= pad;
        b.tokens[t] = valid ? tokens[t - pad] : 3;          // any id: padding is never attended
        b.pos[t] = valid ? t - pad : 0;
        b.doc[t] = valid ? 0 : -1;
        b.weights[t] = valid;
    }
    int *targets = b.targets; b.targets = NULL;
    gpt_forward(m, &b, NULL);
    b.targets = targets;
    double d = 0;
    for (int t = pad; t < T; t++)
        d = err_max(d, max_diff(m->state.a.logits + (size_t)t * m->cfg.padded_vocab, alone + (t - pad) * V, V));
    EXPECT(d < TOL, "%s: left-padded logits differ from the unpadded sequence by %.3g", label, d);
    batch_free(&b);
}

// Padding's gradient: the sequence (n = T - 6 tokens, weights 1) between 4 pad slots on the left and
// 2 on the right (doc -1, weight 0, position 0) gives the gradient of the sequence alone; with other
// pad ids and pad targets, the same gradient bit for bit.
static void test_padding_gradient(const char *label, GPT *m, const int *tokens, const int *targets) {
    int left = 4, right = 2, n = T - left - right;
    size_t P = m->weights.num_params;
    Batch alone; batch_alloc(&alone, 1, n);
    memcpy(alone.tokens, tokens, sizeof(int) * n);
    memcpy(alone.targets, targets, sizeof(int) * n);
    double la = gpt_forward(m, &alone, NULL);
    gpt_zero_grad(m); gpt_backward(m, 1.0 / m->state.weight_sum, NULL);
    real *g_alone = xmalloc(sizeof(real) * P), *g_pad = xmalloc(sizeof(real) * P);
    memcpy(g_alone, m->weights.grads, sizeof(real) * P);
    double lp[2];
    for (int k = 0; k < 2; k++) {
        Batch b; batch_alloc(&b, 1, T);
        for (int t = 0; t < T; t++) {
            int valid = t >= left && t < left + n;
            b.tokens[t] = valid ? tokens[t - left] : (k ? 7 + t % 5 : 3);      // pad ids and targets differ
            b.targets[t] = valid ? targets[t - left] : (k ? 11 : 0);
            b.pos[t] = valid ? t - left : 0;
            b.doc[t] = valid ? 0 : -1;
            b.weights[t] = valid;
        }
        lp[k] = gpt_forward(m, &b, NULL);
        gpt_zero_grad(m); gpt_backward(m, 1.0 / m->state.weight_sum, NULL);
        if (k == 0) {
            memcpy(g_pad, m->weights.grads, sizeof(real) * P);
            double gd = max_diff(g_pad, g_alone, (int)P), gmax = 0;
            for (size_t i = 0; i < P; i++) gmax = fmax(gmax, fabs(g_alone[i]));
            EXPECT(fabs(lp[0] - la) < TOL && gd < TOL * (1 + gmax) && gmax > 0,
                   "%s: padded row: loss %.12g vs alone %.12g, gradient differs by %.3g", label, lp[0], la, gd);
        } else {
            EXPECT(lp[1] == lp[0] && memcmp(g_pad, m->weights.grads, sizeof(real) * P) == 0,
                   "%s: other padding ids and targets changed the loss or the gradient", label);
        }
        batch_free(&b);
    }
    free(g_alone); free(g_pad); batch_free(&alone);
}

static void run_all(const char *label, const char *pe_layers, const char *input_pe) {
    GPT m;
    build(&m, pe_layers, input_pe, 16);
    int tokens[T], targets[T];
    for (int t = 0; t < T; t++) { tokens[t] = (int)(rng_u64(&rng) % V); targets[t] = (int)(rng_u64(&rng) % V); }
    static const int short_chunks[3][4] = { { 0 }, { 5, 4, 3, 0 }, { 12, 0 } };
    test_cache(label, &m, tokens, T, short_chunks, 3);
    test_packing(label, &m, tokens, targets);
    test_left_padding(label, &m, tokens);
    test_padding_gradient(label, &m, tokens, targets);
    gpt_free(&m);
    // a longer sequence: chunks across the attention's query blocks (ATT_QB) and key tiles (ATT_KB)
    build(&m, pe_layers, input_pe, T_LONG);
    int long_tokens[T_LONG];
    for (int t = 0; t < T_LONG; t++) long_tokens[t] = (int)(rng_u64(&rng) % V);
    static const int long_chunks[3][4] = { { 33, 40, 27, 0 }, { 1, 70, 29, 0 }, { 0 } };
    test_cache(label, &m, long_tokens, T_LONG, long_chunks, 3);
    gpt_free(&m);
}

int main(void) {
    rng_seed(&rng, 3);
    char layers[64], label[96];
    for (int s = 0; s < posenc_count(); s++) {
        const PosScheme *sc = posenc_scheme(s);
        if (sc->hooks & PE_HOOK_INPUT) {
            snprintf(label, sizeof label, "input %s", sc->name);
            run_all(label, "nope,nope", sc->name);
        } else {
            snprintf(layers, sizeof layers, "%s,%s", sc->name, sc->name);
            run_all(sc->name, layers, "none");
        }
    }
    run_all("mixed rope,t5 + learned input", "rope,t5", "learned");
    return test_summary("test_positions");
}
