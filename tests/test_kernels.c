// tests/test_kernels.c: the blocked, vectorised gemm (kernels.c) against its plain reference, on
// shapes that are not multiples of the register tile (6 x 2 vectors) or of the K block (256), with
// every operand layout the model uses (A plain, A transposed through its strides), overwriting and
// accumulating; and the matmul layer's three products against the definition. Float build, so
// the tolerance is relative to the size of the sums.
#include <string.h>

#include "../kernels.h"
#include "../model.h"
#include "testutil.h"

static Rng rng;
static void fill(real *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = (real)(2 * rng_uniform(&rng) - 1); }

static void check_gemm(int M, int N, int K, int transposed_a, int accumulate) {
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * (N + 3);
    real *a = xmalloc(sizeof(real) * na), *b = xmalloc(sizeof(real) * nb);
    real *c = xmalloc(sizeof(real) * nc), *r = xmalloc(sizeof(real) * nc);
    fill(a, na); fill(b, nb); fill(c, nc);
    memcpy(r, c, sizeof(real) * nc);
    // A (M,K) stored plainly (i*K + k) or transposed (k*M + i); C with a leading dimension N + 3
    size_t a_rs = transposed_a ? 1 : (size_t)K, a_cs = transposed_a ? (size_t)M : 1;
    gemm(M, N, K, a, a_rs, a_cs, b, N, c, N + 3, accumulate);
    gemm_ref(M, N, K, a, a_rs, a_cs, b, N, r, N + 3, accumulate);
    double err = 0;
    for (size_t i = 0; i < nc; i++) err = fmax(err, fabs(c[i] - r[i]));
    EXPECT(err <= 1e-5 * sqrt((double)K + 1), "gemm %dx%dx%d (A %s, %s): max error %.3g", M, N, K,
           transposed_a ? "transposed" : "plain", accumulate ? "accumulate" : "overwrite", err);
    free(a); free(b); free(c); free(r);
}

static void check_matmul_layer(int N, int C, int OC) {
    real *inp = xmalloc(sizeof(real) * N * C), *w = xmalloc(sizeof(real) * OC * C), *bias = xmalloc(sizeof(real) * OC);
    real *out = xmalloc(sizeof(real) * N * OC), *dout = xmalloc(sizeof(real) * N * OC);
    real *dinp = xcalloc((size_t)N * C, sizeof(real)), *dw = xcalloc((size_t)OC * C, sizeof(real)), *db = xcalloc(OC, sizeof(real));
    fill(inp, (size_t)N * C); fill(w, (size_t)OC * C); fill(bias, OC); fill(dout, (size_t)N * OC);
    matmul_forward(out, inp, w, bias, N, C, OC);
    matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC);
    double ef = 0, ei = 0, ew = 0, eb = 0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = bias[o];
            for (int k = 0; k < C; k++) s += (double)inp[n * C + k] * w[o * C + k];
            ef = fmax(ef, fabs(s - out[n * OC + o]));
        }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int o = 0; o < OC; o++) s += (double)dout[n * OC + o] * w[o * C + k];
            ei = fmax(ei, fabs(s - dinp[n * C + k]));
        }
    for (int o = 0; o < OC; o++) {
        double sb = 0;
        for (int n = 0; n < N; n++) sb += dout[n * OC + o];
        eb = fmax(eb, fabs(sb - db[o]));
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += (double)dout[n * OC + o] * inp[n * C + k];
            ew = fmax(ew, fabs(s - dw[o * C + k]));
        }
    }
    double tol = 2e-5 * sqrt((double)(N + C + OC));
    EXPECT(ef < tol && ei < tol && ew < tol && eb < tol, "matmul %dx%d->%d: errors forward %.3g dinp %.3g dweight %.3g dbias %.3g",
           N, C, OC, ef, ei, ew, eb);
    free(inp); free(w); free(bias); free(out); free(dout); free(dinp); free(dw); free(db);
}

// GELU in the float build goes through a vectorised exp: it must match the libm formula
static void check_gelu(void) {
    enum { n = 4001 };
    real *x = xmalloc(sizeof(real) * n), *y = xmalloc(sizeof(real) * n), *d = xcalloc(n, sizeof(real)), *one = xmalloc(sizeof(real) * n);
    for (int i = 0; i < n; i++) { x[i] = (real)(-12.0 + 24.0 * i / (n - 1)); one[i] = 1; }
    gelu_forward(y, x, n);
    gelu_backward(d, x, one, n);
    double ef = 0, eb = 0;
    for (int i = 0; i < n; i++) {
        double u = 0.7978845608028654 * (x[i] + 0.044715 * x[i] * x[i] * x[i]), th = tanh(u);
        double f = 0.5 * x[i] * (1 + th);
        double g = 0.5 * (1 + th) + 0.5 * x[i] * (1 - th * th) * 0.7978845608028654 * (1 + 3 * 0.044715 * x[i] * x[i]);
        ef = isfinite(y[i]) ? fmax(ef, fabs(y[i] - f) / (1 + fabs(f))) : INFINITY;
        eb = isfinite(d[i]) ? fmax(eb, fabs(d[i] - g) / (1 + fabs(g))) : INFINITY;
    }
    EXPECT(ef < 2e-6 && eb < 2e-6, "gelu on [-12, 12]: forward error %.3g, backward error %.3g", ef, eb);
    free(x); free(y); free(d); free(one);
}

int main(void) {
    check_gelu();
    rng_seed(&rng, 11);
    static const int shapes[][3] = { { 1, 1, 1 }, { 6, 32, 5 }, { 7, 33, 13 }, { 13, 37, 257 }, { 72, 64, 256 },
                                     { 73, 65, 300 }, { 150, 100, 513 }, { 5, 200, 3 }, { 300, 31, 40 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 2; t++)
            for (int acc = 0; acc < 2; acc++) check_gemm(shapes[s][0], shapes[s][1], shapes[s][2], t, acc);
    check_gemm(4, 5, 0, 0, 0);     // an empty sum zeroes C
    static const int layers[][3] = { { 7, 13, 9 }, { 64, 96, 600 }, { 130, 70, 33 }, { 3, 520, 1030 } };
    for (size_t s = 0; s < sizeof layers / sizeof layers[0]; s++) check_matmul_layer(layers[s][0], layers[s][1], layers[s][2]);
    return test_summary("test_kernels");
}
