// tests/test_positions.c: positions are data (shared/DESIGN.md), for every scheme in posenc's table
// and both input schemes, in the double build (so "equal" means equal to ~1e-12):
//   - KV cache: token-by-token and chunked decoding give the logits of one full forward pass;
//   - packing: each document's logits, loss and gradient are the same packed or alone;
//   - left padding: valid tokens of a left-padded row get the logits of the unpadded sequence.
#include <string.h>

#include "../model.h"
#include "testutil.h"

enum { V = 19, T = 12 };
#define TOL 1e-10

static Rng rng;

static void build(GPT *m, const char *pe_layers, const char *input_pe) {
    GPTConfig cfg = { .vocab_size = V, .n_layer = 2, .n_head = 2, .n_embd = 8, .max_seq_len = 16 };
    posenc_defaults(&cfg.pe, 2);
    char msg[256];
    CHECK(posenc_schedule(&cfg.pe, 2, NULL, pe_layers, input_pe, msg, sizeof msg), "%s", msg);
    cfg.pe.t5_num_buckets = 8; cfg.pe.t5_max_distance = 12; cfg.pe.p_rope_fraction = 0.5; cfg.pe.xpos_scale_base = 8;
    gpt_build(m, &cfg, 99, 0);
    for (size_t i = 0; i < m->num_params; i++) m->params[i] += (real)(0.05 * (2 * rng_uniform(&rng) - 1));
}

// the largest difference; infinite if either side holds a NaN or an infinity
static double max_diff(const real *a, const real *b, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = isfinite(a[i]) && isfinite(b[i]) ? fmax(d, fabs(a[i] - b[i])) : INFINITY;
    return d;
}

// logits (T, V) of one full forward pass over tokens at positions 0..T-1
static void full_logits(GPT *m, const int *tokens, int n, real *out) {
    Batch b; batch_alloc(&b, 1, n);
    memcpy(b.tokens, tokens, sizeof(int) * n);
    int *targets = b.targets; b.targets = NULL;
    gpt_forward(m, &b);
    b.targets = targets;
    for (int t = 0; t < n; t++) memcpy(out + t * V, m->a.logits + (size_t)t * m->cfg.padded_vocab, sizeof(real) * V);
    batch_free(&b);
}

static void test_cache(const char *label, GPT *m, const int *tokens) {
    real full[T * V], got[T * V];
    full_logits(m, tokens, T, full);
    static const int chunkings[3][T + 1] = { { 1,1,1,1,1,1,1,1,1,1,1,1, 0 }, { 5, 4, 3, 0 }, { 12, 0 } };
    static const char *names[3] = { "token by token", "chunks 5+4+3", "one chunk" };
    for (int k = 0; k < 3; k++) {
        KVCache kc; kv_cache_init(&kc, m, 16);
        int done = 0;
        for (int c = 0; chunkings[k][c]; c++) {
            int n = chunkings[k][c], pos[T];
            for (int t = 0; t < n; t++) pos[t] = done + t;        // positions P .. P+n-1
            gpt_forward_cached(m, &kc, tokens + done, pos, n);
            for (int t = 0; t < n; t++) memcpy(got + (done + t) * V, m->a.logits + (size_t)t * m->cfg.padded_vocab, sizeof(real) * V);
            done += n;
        }
        double d = max_diff(got, full, T * V);
        EXPECT(d < TOL, "%s: cached decoding (%s) differs from the full pass by %.3g", label, names[k], d);
        kv_cache_free(&kc);
    }
}

// per-token losses (n) of one forward pass over tokens at positions 0..n-1 with their targets
static void alone_losses(GPT *m, const int *tokens, const int *targets, int n, real *out) {
    Batch b; batch_alloc(&b, 1, n);
    memcpy(b.tokens, tokens, sizeof(int) * n);
    memcpy(b.targets, targets, sizeof(int) * n);
    gpt_forward(m, &b);
    memcpy(out, m->a.losses, sizeof(real) * n);
    batch_free(&b);
}

// Packing: row = document A (5 tokens) then B (7 tokens), positions restarting at B, doc ids 0, 1.
static void test_packing(const char *label, GPT *m, const int *tokens, const int *targets) {
    int nA = 5, nB = T - nA;
    Batch packed; batch_alloc(&packed, 1, T);
    memcpy(packed.tokens, tokens, sizeof(int) * T);
    memcpy(packed.targets, targets, sizeof(int) * T);
    for (int t = nA; t < T; t++) { packed.pos[t] = t - nA; packed.doc[t] = 1; }
    gpt_forward(m, &packed);
    real plog[T * V], ploss[T];
    for (int t = 0; t < T; t++) {
        memcpy(plog + t * V, m->a.logits + (size_t)t * m->cfg.padded_vocab, sizeof(real) * V);
        ploss[t] = m->a.losses[t];
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
    size_t P = m->num_params;
    real *g_packed = xmalloc(sizeof(real) * P);
    for (int t = 0; t < T; t++) packed.weights[t] = t >= nA;
    gpt_forward(m, &packed);
    double lp = m->loss;
    gpt_zero_grad(m); gpt_backward(m, 1.0 / m->weight_sum);
    memcpy(g_packed, m->grads, sizeof(real) * P);
    Batch b; batch_alloc(&b, 1, nB);
    memcpy(b.tokens, tokens + nA, sizeof(int) * nB);
    memcpy(b.targets, targets + nA, sizeof(int) * nB);
    double la = gpt_forward(m, &b);
    gpt_zero_grad(m); gpt_backward(m, 1.0 / m->weight_sum);
    EXPECT(fabs(lp - la) < TOL, "%s: document B's loss packed %.12g vs alone %.12g", label, lp, la);
    double gd = max_diff(g_packed, m->grads, (int)P), gmax = 0;
    for (size_t i = 0; i < P; i++) gmax = fmax(gmax, fabs(m->grads[i]));
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
    gpt_forward(m, &b);
    b.targets = targets;
    double d = 0;
    for (int t = pad; t < T; t++)
        d = fmax(d, max_diff(m->a.logits + (size_t)t * m->cfg.padded_vocab, alone + (t - pad) * V, V));
    EXPECT(d < TOL, "%s: left-padded logits differ from the unpadded sequence by %.3g", label, d);
    batch_free(&b);
}

static void run_all(const char *label, const char *pe_layers, const char *input_pe) {
    GPT m;
    build(&m, pe_layers, input_pe);
    int tokens[T], targets[T];
    for (int t = 0; t < T; t++) { tokens[t] = (int)(rng_u64(&rng) % V); targets[t] = (int)(rng_u64(&rng) % V); }
    test_cache(label, &m, tokens);
    test_packing(label, &m, tokens, targets);
    test_left_padding(label, &m, tokens);
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
