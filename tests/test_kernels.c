// tests/test_kernels.c: the blocked, vectorised gemm and the attention tiles' gemm_tile (nn/kernels.c)
// against their plain reference, on shapes that are not multiples of the register tiles (6 or 8 x 2
// vectors), of the column chunks or of the K block (384), with
// every operand layout the model uses (A plain, A transposed through its strides), overwriting and
// accumulating; and the matmul layer's three products against the definition. Float build, so
// the tolerance is relative to the size of the sums. And the fused attention's schedule: the same
// bits whatever the grouping of its query blocks and the thread count; transpose_block, exactly.
#include <string.h>
#include <omp.h>

#include "nn/attention.h"
#include "nn/kernels.h"
#include "model.h"
#include "tests/testutil.h"
#include "tests/matmul_check.h"

static Rng rng;
static void fill(real *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = (real)(2 * rng_uniform(&rng) - 1); }

// A (M,K) stored plainly (row stride K + 2) or transposed (k*(M + 1) + i); B with ldb = N + 5 and
// C with ldc = N + 3, so that no stride equals a size. Our kernel (gemm_own), gemm (OpenBLAS in a
// BLAS=openblas build) and gemm_tile against the reference.
static void check_gemm(int M, int N, int K, int transposed_a, int accumulate) {
    size_t a_rs = transposed_a ? 1 : (size_t)K + 2, a_cs = transposed_a ? (size_t)M + 1 : 1;
    size_t na = transposed_a ? (size_t)(K + 1) * (M + 1) : (size_t)(M + 1) * (K + 2), nb = (size_t)(K + 1) * (N + 5);
    size_t nc = (size_t)(M + 1) * (N + 3);
    real *a = xmalloc(sizeof(real) * na), *b = xmalloc(sizeof(real) * nb);
    real *c = xmalloc(sizeof(real) * nc), *c2 = xmalloc(sizeof(real) * nc), *c3 = xmalloc(sizeof(real) * nc);
    real *r = xmalloc(sizeof(real) * nc);
    fill(a, na); fill(b, nb); fill(c, nc);
    memcpy(r, c, sizeof(real) * nc);
    memcpy(c2, c, sizeof(real) * nc);
    memcpy(c3, c, sizeof(real) * nc);
    gemm_own(M, N, K, a, a_rs, a_cs, b, N + 5, 1, c, N + 3, accumulate);
    gemm(M, N, K, a, a_rs, a_cs, b, N + 5, c2, N + 3, accumulate);
    gemm_tile(M, N, K, a, a_rs, a_cs, b, N + 5, c3, N + 3, accumulate);
    gemm_ref(M, N, K, a, a_rs, a_cs, b, N + 5, r, N + 3, accumulate);
    double err = 0, err2 = 0, err3 = 0;
    for (size_t i = 0; i < nc; i++) {
        err = err_max(err, fabs(c[i] - r[i]));
        err2 = err_max(err2, fabs(c2[i] - r[i]));
        err3 = err_max(err3, fabs(c3[i] - r[i]));
    }
    double tol = 1e-5 * sqrt((double)K + 1);
    EXPECT(err <= tol && err2 <= tol && err3 <= tol,
           "gemm %dx%dx%d (A %s, %s): max error %.3g (ours), %.3g (gemm), %.3g (gemm_tile)", M, N, K,
           transposed_a ? "transposed" : "plain", accumulate ? "accumulate" : "overwrite", err, err2, err3);
    free(a); free(b); free(c); free(c2); free(c3); free(r);
}

// gemm_tile against one fused multiply-add chain per element over k in order (madd), bit for bit,
// on widths of attention's products (head dimensions 16, 48, 40, 8, 5 and 70: a whole vector, a
// vector and a part, parts alone): the narrow columns are vectorised and must still be that chain.
static void check_tile_chain(int M, int N, int K, int accumulate) {
    size_t lda = (size_t)K + 1, ldb = (size_t)N + 3, ldc = (size_t)N + 2;
    real *a = xmalloc(sizeof(real) * M * lda), *b = xmalloc(sizeof(real) * K * ldb);
    real *c = xmalloc(sizeof(real) * M * ldc), *r = xmalloc(sizeof(real) * M * ldc);
    fill(a, (size_t)M * lda); fill(b, (size_t)K * ldb); fill(c, (size_t)M * ldc);
    memcpy(r, c, sizeof(real) * M * ldc);
    gemm_tile(M, N, K, a, lda, 1, b, ldb, c, ldc, accumulate);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            real s = accumulate ? r[i * ldc + j] : 0;
            for (int k = 0; k < K; k++) s = madd(a[i * lda + k], b[k * ldb + j], s);
            r[i * ldc + j] = s;
        }
    EXPECT(memcmp(c, r, sizeof(real) * M * ldc) == 0, "gemm_tile %dx%dx%d (%s): not the bits of one multiply-add chain "
           "per element", M, N, K, accumulate ? "accumulate" : "overwrite");
    free(a); free(b); free(c); free(r);
}

// gemm_own against one fused multiply-add chain per element over k in order (madd), bit for bit, on
// every micro-kernel path this CPU runs, with plain and transposed A: M leaves 1-11 rows after the
// whole panels of 12 (the AVX-512 kernel) and of 6 (AVX2), so the last panel runs the 4-row kernel
// (at most 4 rows left) or the full one computed whole for fewer rows (5 and more)
static void check_own_chain(int M, int N, int K, int transposed_a) {
    size_t a_rs = transposed_a ? 1 : (size_t)K, a_cs = transposed_a ? (size_t)M : 1;
    real *a = xmalloc(sizeof(real) * M * K), *b = xmalloc(sizeof(real) * K * N);
    real *c = xmalloc(sizeof(real) * M * N), *r = xmalloc(sizeof(real) * M * N);
    fill(a, (size_t)M * K); fill(b, (size_t)K * N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            real s = 0;
            for (int k = 0; k < K; k++) s = madd(a[i * a_rs + k * a_cs], b[(size_t)k * N + j], s);
            r[(size_t)i * N + j] = s;
        }
    static const char *paths[] = { "generic", "avx2", "avx512" };
    for (int pi = 0; pi < 3; pi++) {
        if (!gemm_set_path(paths[pi])) continue;
        gemm_own(M, N, K, a, a_rs, a_cs, b, N, 1, c, N, 0);
        EXPECT(memcmp(c, r, sizeof(real) * M * N) == 0, "gemm_own %dx%dx%d (A %s) on the %s path: not the bits of one "
               "multiply-add chain per element", M, N, K, transposed_a ? "transposed" : "plain", paths[pi]);
    }
    gemm_set_path(NULL);
    free(a); free(b); free(c); free(r);
}

// The same product with 1, 2 and 3 threads: bit-identical (each sum runs in a fixed order). The
// second shape's rows outweigh B, so that with 2 and 3 threads gemm_own splits it in row slabs; the
// third runs its items row block by row block (a thread's share then cuts a chunk's columns); the
// fourth and fifth read A transposed and pack it (dW's layout), the fifth in several column chunks
// with a last, partial panel of rows; the sixth reads a transposed A in place and the seventh a
// plain A, not in slabs, each with B in one chunk, which 2 threads split into one chunk each (with
// the Zen 5's blocking: chunks of 512 columns, panels of 32; a CPU with other caches or vectors
// may keep one chunk, and the bits are checked either way). Then threads of unequal speeds
// (gemm_thread_speeds), whose shares start and end inside blocks and chunks, overwriting and
// accumulating, and random shapes at random speeds: every element once, with one thread's bits.
static void check_thread_independence(void) {
    const int shapes[7][4] = { { 77, 300, 530, 0 }, { 300, 100, 60, 0 }, { 40, 3000, 50, 0 }, { 600, 700, 40, 1 },
                               { 601, 1600, 40, 1 }, { 390, 384, 300, 1 }, { 30, 400, 700, 0 } };
    const double skew[][3] = { { 1, 3 }, { 3, 1 }, { 1.05, 0.95 }, { 0.45, 0.55 }, { 1, 2, 3 }, { 0.9, 1.3, 0.8 } };
    int saved = omp_get_max_threads();
    for (int s = 0; s < 7; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], tr = shapes[s][3];
        size_t a_rs = tr ? 1 : (size_t)K, a_cs = tr ? (size_t)M : 1;
        real *a = xmalloc(sizeof(real) * M * K), *b = xmalloc(sizeof(real) * K * N), *c[3], *c0 = xmalloc(sizeof(real) * M * N);
        fill(a, (size_t)M * K); fill(b, (size_t)K * N); fill(c0, (size_t)M * N);
        for (int t = 0; t < 3; t++) {
            c[t] = xmalloc(sizeof(real) * M * N);
            omp_set_num_threads(t + 1);
            gemm_own(M, N, K, a, a_rs, a_cs, b, N, 1, c[t], N, 0);
        }
        omp_set_num_threads(saved);
        EXPECT(memcmp(c[0], c[1], sizeof(real) * M * N) == 0 && memcmp(c[0], c[2], sizeof(real) * M * N) == 0,
               "gemm %dx%dx%d must give the same bits with 1, 2 and 3 threads", M, N, K);
        for (int acc = 0; acc < 2; acc++) {
            real *ref = xmalloc(sizeof(real) * M * N);
            memcpy(ref, c0, sizeof(real) * M * N);
            omp_set_num_threads(1);
            gemm_own(M, N, K, a, a_rs, a_cs, b, N, 1, ref, N, acc);
            for (size_t k = 0; k < sizeof skew / sizeof skew[0]; k++) {
                int nth = skew[k][2] > 0 ? 3 : 2;
                omp_set_num_threads(nth);
                gemm_thread_speeds(nth, skew[k]);
                memcpy(c[1], c0, sizeof(real) * M * N);
                gemm_own(M, N, K, a, a_rs, a_cs, b, N, 1, c[1], N, acc);
                EXPECT(memcmp(ref, c[1], sizeof(real) * M * N) == 0, "gemm %dx%dx%d%s (%s) at speeds %g, %g, %g (%d "
                       "threads): not the bits of one thread", M, N, K, tr ? " with A transposed" : "",
                       acc ? "accumulating" : "overwriting", skew[k][0], skew[k][1], skew[k][2], nth);
            }
            omp_set_num_threads(saved);
            free(ref);
        }
        free(a); free(b); free(c0); free(c[0]); free(c[1]); free(c[2]);
    }
    // random shapes, layouts and speeds (2 to 4 threads, 1/3 to 3 apart): every panel of C once
    for (int r = 0; r < 40; r++) {
        int M = 1 + (int)(rng_uniform(&rng) * 400), N = 1 + (int)(rng_uniform(&rng) * 700), K = 1 + (int)(rng_uniform(&rng) * 300);
        int tr = rng_uniform(&rng) < 0.5, bt = rng_uniform(&rng) < 0.5, acc = rng_uniform(&rng) < 0.5;
        int nth = 2 + (int)(rng_uniform(&rng) * 3);
        double sp[4];
        for (int t = 0; t < nth; t++) sp[t] = exp(2.2 * rng_uniform(&rng) - 1.1);
        size_t a_rs = tr ? 1 : (size_t)K, a_cs = tr ? (size_t)M : 1, b_rs = bt ? 1 : (size_t)N, b_cs = bt ? (size_t)K : 1;
        real *a = xmalloc(sizeof(real) * M * K), *b = xmalloc(sizeof(real) * K * N);
        real *c1 = xmalloc(sizeof(real) * M * N), *c2 = xmalloc(sizeof(real) * M * N);
        fill(a, (size_t)M * K); fill(b, (size_t)K * N); fill(c1, (size_t)M * N);
        memcpy(c2, c1, sizeof(real) * M * N);
        omp_set_num_threads(1);
        gemm_own(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c1, N, acc);
        omp_set_num_threads(nth);
        gemm_thread_speeds(nth, sp);
        gemm_own(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c2, N, acc);
        omp_set_num_threads(saved);
        EXPECT(memcmp(c1, c2, sizeof(real) * M * N) == 0, "gemm %dx%dx%d (A %s, B %s, %s) on %d threads at speeds %.3g, %.3g, "
               "%.3g, %.3g: not the bits of one thread", M, N, K, tr ? "transposed" : "plain", bt ? "transposed" : "plain",
               acc ? "accumulating" : "overwriting", nth, sp[0], sp[1], nth > 2 ? sp[2] : 0, nth > 3 ? sp[3] : 0);
        free(a); free(b); free(c1); free(c2);
    }
    gemm_thread_speeds(2, (const double[]){ 1, 1 });   // the tests after this one start from even shares
}

// B transposed (B(k,j) = bt[j*(K+3) + k], the forward's weight read in place) and every micro-kernel
// path this CPU runs (gemm_set_path), under two blockings, give the bits of the generic path's plain product: every element
// is the same chain of multiply-adds over k in order, whatever the path, the layout or the blocking.
static void check_paths_and_layouts(int M, int N, int K, int transposed_a, int accumulate) {
    size_t a_rs = transposed_a ? 1 : (size_t)K, a_cs = transposed_a ? (size_t)M : 1, ldbt = (size_t)K + 3;
    real *a = xmalloc(sizeof(real) * M * K), *b = xmalloc(sizeof(real) * K * N), *bt = xmalloc(sizeof(real) * N * ldbt);
    real *c0 = xmalloc(sizeof(real) * M * N), *ref = xmalloc(sizeof(real) * M * N), *c = xmalloc(sizeof(real) * M * N);
    fill(a, (size_t)M * K); fill(b, (size_t)K * N); fill(c0, (size_t)M * N);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) bt[(size_t)j * ldbt + k] = b[(size_t)k * N + j];
    memcpy(ref, c0, sizeof(real) * M * N);
    EXPECT(gemm_set_path("generic"), "the generic gemm path must always run");
    gemm_own(M, N, K, a, a_rs, a_cs, b, N, 1, ref, N, accumulate);
    static const char *paths[] = { "generic", "avx2", "avx512" };
    for (int pi = 0; pi < 6; pi++) {
        // each path twice: blocked from cpuid's caches, then from tiny ones (PEGPT_GEMM_L1/L2: kc 128
        // and chunks of two panels, so more K blocks and items than the shapes have otherwise)
        if (pi % 2) { setenv("PEGPT_GEMM_L1", "8", 1); setenv("PEGPT_GEMM_L2", "64", 1); }
        int runs = gemm_set_path(paths[pi / 2]);
        unsetenv("PEGPT_GEMM_L1"); unsetenv("PEGPT_GEMM_L2");
        if (!runs) continue;
        if (pi % 2) EXPECT(gemm_blocking().kc == 128, "PEGPT_GEMM_L1=8 must give kc 128, not %d", gemm_blocking().kc);
        // with A transposed and packed (C wider than 16 panels: N = 1100 below), chunks of three
        // quarters of L2 instead of half; narrower, A is read in place (N = 37, 100, 31, 70, 33)
        if (pi % 2) EXPECT(gemm_blocking().nc_t > gemm_blocking().nc && gemm_blocking().nc_t >= 70 && gemm_blocking().nc < 70,
                           "PEGPT_GEMM_L2=64 must give chunks of fewer than 70 columns, more with A transposed: nc %d, nc_t %d",
                           gemm_blocking().nc, gemm_blocking().nc_t);
        for (int lay = 0; lay < 2; lay++) {
            memcpy(c, c0, sizeof(real) * M * N);
            if (lay) gemm_own(M, N, K, a, a_rs, a_cs, bt, 1, ldbt, c, N, accumulate);
            else gemm_own(M, N, K, a, a_rs, a_cs, b, N, 1, c, N, accumulate);
            EXPECT(memcmp(c, ref, sizeof(real) * M * N) == 0, "gemm %dx%dx%d (A %s, B %s, %s) on the %s path: not the "
                   "generic path's bits", M, N, K, transposed_a ? "transposed" : "plain", lay ? "transposed" : "plain",
                   accumulate ? "accumulate" : "overwrite", paths[pi / 2]);
        }
    }
    gemm_set_path(NULL);
    free(a); free(b); free(bt); free(c0); free(ref); free(c);
}

// The one-row product from the weight's transposed copy (decoding) gives matmul_forward's bits
static void check_matmul_wt(int C, int OC) {
    real *inp = xmalloc(sizeof(real) * C), *w = xmalloc(sizeof(real) * OC * C), *wt = xmalloc(sizeof(real) * OC * C);
    real *bias = xmalloc(sizeof(real) * OC), *out = xmalloc(sizeof(real) * OC), *ref = xmalloc(sizeof(real) * OC);
    fill(inp, C); fill(w, (size_t)OC * C); fill(bias, OC);
    for (int o = 0; o < OC; o++)
        for (int k = 0; k < C; k++) wt[(size_t)k * OC + o] = w[(size_t)o * C + k];
    for (int hb = 0; hb < 2; hb++) {
        matmul_forward(ref, inp, w, hb ? bias : NULL, 1, C, OC);
        matmul_forward_wt(out, inp, wt, hb ? bias : NULL, 1, C, OC);
        EXPECT(memcmp(out, ref, sizeof(real) * OC) == 0, "matmul_forward_wt 1x%dx%d (%s bias): not matmul_forward's bits",
               OC, C, hb ? "with" : "no");
    }
    free(inp); free(w); free(wt); free(bias); free(out); free(ref);
}

static void check_matmul_layer(int N, int C, int OC) {
    real *inp = xmalloc(sizeof(real) * N * C), *w = xmalloc(sizeof(real) * OC * C), *bias = xmalloc(sizeof(real) * OC);
    real *out = xmalloc(sizeof(real) * N * OC), *dout = xmalloc(sizeof(real) * N * OC);
    real *dinp = xcalloc((size_t)N * C, sizeof(real)), *dw = xcalloc((size_t)OC * C, sizeof(real)), *db = xcalloc(OC, sizeof(real));
    fill(inp, (size_t)N * C); fill(w, (size_t)OC * C); fill(bias, OC); fill(dout, (size_t)N * OC);
    matmul_forward(out, inp, w, bias, N, C, OC);
    matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC, 1, 1);
    double ef = 0, ei = 0, ew = 0, eb = 0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = bias[o];
            for (int k = 0; k < C; k++) s += (double)inp[n * C + k] * w[o * C + k];
            ef = err_max(ef, fabs(s - out[n * OC + o]));
        }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int o = 0; o < OC; o++) s += (double)dout[n * OC + o] * w[o * C + k];
            ei = err_max(ei, fabs(s - dinp[n * C + k]));
        }
    for (int o = 0; o < OC; o++) {
        double sb = 0;
        for (int n = 0; n < N; n++) sb += dout[n * OC + o];
        eb = err_max(eb, fabs(sb - db[o]));
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += (double)dout[n * OC + o] * inp[n * C + k];
            ew = err_max(ew, fabs(s - dw[o * C + k]));
        }
    }
    double tol = 2e-5 * sqrt((double)(N + C + OC));
    EXPECT(ef < tol && ei < tol && ew < tol && eb < tol, "matmul %dx%d->%d: errors forward %.3g dinp %.3g dweight %.3g dbias %.3g",
           N, C, OC, ef, ei, ew, eb);
    check_matmul_overwrite(matmul_backward, "matmul_backward", dinp, dw, db, dout, inp, w, N, C, OC);
    free(inp); free(w); free(bias); free(out); free(dout); free(dinp); free(dw); free(db);
}

// One to four rows (decoding) take matmul_forward's in-place path: each output must have the bits
// the packed gemm path gives the same row inside a larger call, for K split into several blocks and
// output blocks with an edge, with 1 and 2 threads.
static void check_matmul_few_rows(int C, int OC) {
    enum { NB = 9 };
    real *inp = xmalloc(sizeof(real) * NB * C), *w = xmalloc(sizeof(real) * OC * C), *bias = xmalloc(sizeof(real) * OC);
    real *big[2] = { xmalloc(sizeof(real) * NB * OC), xmalloc(sizeof(real) * NB * OC) }, *few = xmalloc(sizeof(real) * 4 * OC);
    fill(inp, (size_t)NB * C); fill(w, (size_t)OC * C); fill(bias, OC);
    matmul_forward(big[0], inp, w, NULL, NB, C, OC);
    matmul_forward(big[1], inp, w, bias, NB, C, OC);
    int saved = omp_get_max_threads(), same = 1;
    for (int t = 1; t <= 2; t++) {
        omp_set_num_threads(t);
        for (int n = 1; n <= 4; n++)
            for (int r0 = 0; r0 + n <= NB; r0 += 4)
                for (int hb = 0; hb < 2; hb++) {
                    matmul_forward(few, inp + (size_t)r0 * C, w, hb ? bias : NULL, n, C, OC);
                    same &= memcmp(few, big[hb] + (size_t)r0 * OC, sizeof(real) * (size_t)n * OC) == 0;
                }
    }
    omp_set_num_threads(saved);
    EXPECT(same, "matmul_forward with 1-4 rows (%d -> %d) must give the bits of the packed path", C, OC);
    free(inp); free(w); free(bias); free(big[0]); free(big[1]); free(few);
}

// GELU in the float build goes through a vectorised exp: it must match the libm formula
static void check_gelu(void) {
    enum { n = 4001 };
    real *x = xmalloc(sizeof(real) * n), *y = xmalloc(sizeof(real) * n), *d = xcalloc(n, sizeof(real)), *one = xmalloc(sizeof(real) * n);
    for (int i = 0; i < n; i++) { x[i] = (real)(-40.0 + 80.0 * i / (n - 1)); one[i] = 1; }
    gelu_forward(y, x, n);
    gelu_backward(d, x, one, n);
    double ef = 0, eb = 0;
    for (int i = 0; i < n; i++) {
        double u = 0.7978845608028654 * (x[i] + 0.044715 * x[i] * x[i] * x[i]), th = tanh(u);
        double f = 0.5 * x[i] * (1 + th);
        double g = 0.5 * (1 + th) + 0.5 * x[i] * (1 - th * th) * 0.7978845608028654 * (1 + 3 * 0.044715 * x[i] * x[i]);
        ef = err_max(ef, fabs(y[i] - f) / (1 + fabs(f)));
        eb = err_max(eb, fabs(d[i] - g) / (1 + fabs(g)));
    }
    EXPECT(ef < 2e-6 && eb < 2e-6, "gelu on [-40, 40]: forward error %.3g, backward error %.3g", ef, eb);
    real nan_in = NAN, nan_out;
    gelu_forward(&nan_out, &nan_in, 1);
    EXPECT(isnan(nan_out), "gelu(NaN) must stay NaN, not turn into a number");
    free(x); free(y); free(d); free(one);
}

// transpose_block (attention's blocks of q, dout and out) against its definition, exactly: row
// counts below, at and past the 8 rows the AVX2 path takes at a time, columns not a multiple of 8,
// strides larger than the sizes
static void check_transpose_block(int rows, int cols) {
    size_t lds = (size_t)cols + 3, ldd = (size_t)rows + 5;
    real *src = xmalloc(sizeof(real) * rows * lds), *dst = xmalloc(sizeof(real) * cols * ldd);
    fill(src, (size_t)rows * lds);
    for (size_t i = 0; i < (size_t)cols * ldd; i++) dst[i] = -7;
    transpose_block(dst, ldd, src, lds, rows, cols);
    int bad = 0;
    for (int c = 0; c < cols; c++)
        for (size_t r = 0; r < ldd; r++)
            bad += dst[c * ldd + r] != (r < (size_t)rows ? src[r * lds + c] : -7);   // and nothing past the rows
    EXPECT(bad == 0, "transpose_block %d x %d: %d numbers wrong", rows, cols, bad);
    free(src); free(dst);
}

// The fused attention (nn/attention.c) at T = 1100: with blocks of 32 queries in groups of up to 16,
// the second group shares 8 full key tiles (one span) and the third 16 (two spans), against each
// block run alone (attention_set_group(1)) and at 1, 2 and 3 threads (3 on fewer cores: the pairs'
// ranges are taken over by the threads that finish first). out, lse and dqkv bit for bit; a learned
// bias's gradient (summed in one copy per thread, in the order of the pair's (block, tile) visits)
// bit for bit between the runs at one thread. Row 1 holds two documents and padding (tiles that a
// block skips); a scheme with a score bias, learned biases (whose backward keeps the static split
// and runs each block alone), dropout, bidirectional. dqkv is overwritten: NaN before the backward
// leaves no trace.
static void check_attention_bits(const char *scheme, double dropout, int bidirectional) {
    enum { B = 2, T = 1100, C = 96, NH = 3 };
    size_t N = (size_t)B * T, nq = N * 3 * C, no = N * C;
    int *pos = xmalloc(sizeof(int) * N), *doc = xmalloc(sizeof(int) * N);
    for (int t = 0; t < T; t++) {
        pos[t] = t; doc[t] = 0;
        pos[T + t] = t < 700 ? t : t - 700; doc[T + t] = t < 700 ? 1 : t < 1070 ? 2 : -1;
    }
    PosConfig pc; posenc_defaults(&pc, 1);
    int s = posenc_find(scheme);
    pc.input = PE_NOPE; pc.layer[0] = s;
    PosDims d = { 1, NH, C, C / NH, T };
    PosTables tb; posenc_tables_build(&tb, &pc, &d, T);
    const PosScheme *sc = posenc_scheme(s);
    real *p = NULL, *dp = NULL;
    size_t np = 0;
    if (sc->param_shape) {
        int rows, cols;
        sc->param_shape(&pc, &d, &rows, &cols);
        np = (size_t)rows * cols;
        p = xmalloc(np * sizeof(real)); dp = xcalloc(np, sizeof(real));
        fill(p, np);
    }
    AttnPos ap = { .pos = pos, .doc = doc, .scheme = sc, .tables = &tb, .pe_params = p, .pe_dparams = dp, .pe_nparams = np,
                   .bidirectional = bidirectional, .dropout = dropout, .drop_key = 0xBEEF };
    real *qkv = xmalloc(sizeof(real) * nq), *dout = xmalloc(sizeof(real) * no);
    real *scratch = xmalloc(sizeof(real) * 4 * ATT_SCRATCH(C / NH));
    fill(qkv, nq); fill(dout, no);
    real *ref = NULL, *dp_ref = np ? xmalloc(np * sizeof(real)) : NULL;
    int saved = omp_get_max_threads();
    size_t nall = no + (size_t)B * NH * T + nq;                   // out, lse, dqkv
    static const int runs[][2] = { { 1, 1 }, { ATT_G, 1 }, { ATT_G, 2 }, { ATT_G, 3 }, { 5, 2 } };   // group, threads
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        real *all = xcalloc(nall, sizeof(real)), *out = all, *lse = all + no, *dqkv = lse + (size_t)B * NH * T;
        attention_set_group(runs[r][0]);
        omp_set_num_threads(runs[r][1]);
        if (np) memset(dp, 0, np * sizeof(real));
        attention_forward(out, lse, qkv, &ap, scratch, B, T, C, NH);
        if (r > 0) for (size_t i = 0; i < nq; i++) dqkv[i] = NAN;     // overwritten, not added to
        attention_backward(dqkv, scratch, dout, qkv, out, lse, &ap, B, T, C, NH);
        if (np && r == 0) memcpy(dp_ref, dp, np * sizeof(real));
        else if (np && runs[r][1] == 1)
            EXPECT(memcmp(dp, dp_ref, np * sizeof(real)) == 0, "attention %s, groups of %d blocks: the learned bias's "
                   "gradient differs from blocks alone", scheme, runs[r][0]);
        if (!ref) ref = all;
        else {
            size_t k = 0;
            while (k < nall && memcmp(&all[k], &ref[k], sizeof(real)) == 0) k++;
            EXPECT(k == nall, "attention %s (dropout %g%s), groups of %d blocks at %d threads: element %zu of (out, lse, dqkv) "
                   "differs from blocks alone at 1 thread", scheme, dropout, bidirectional ? ", bidirectional" : "",
                   runs[r][0], runs[r][1], k);
            free(all);
        }
    }
    attention_set_group(ATT_G);
    omp_set_num_threads(saved);
    free(ref); free(qkv); free(dout); free(scratch); free(pos); free(doc); free(p); free(dp); free(dp_ref);
    posenc_tables_free(&tb);
}

int main(void) {
    check_gelu();
    rng_seed(&rng, 11);
    static const int shapes[][3] = { { 1, 1, 1 }, { 6, 32, 5 }, { 7, 33, 13 }, { 13, 37, 257 }, { 72, 64, 256 },
                                     { 73, 65, 300 }, { 150, 100, 513 }, { 5, 200, 3 }, { 300, 31, 40 },
                                     { 100, 600, 600 }, { 256, 1100, 40 }, { 1, 700, 9 },
                                     { 33, 384, 385 }, { 20, 1152, 769 }, { 64, 32, 64 }, { 9, 64, 17 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 2; t++)
            for (int acc = 0; acc < 2; acc++) check_gemm(shapes[s][0], shapes[s][1], shapes[s][2], t, acc);
    check_gemm(4, 5, 0, 0, 0);     // an empty sum zeroes C
    check_gemm(4, 5, 0, 0, 1);     // ... and leaves it as it is when accumulating
    check_thread_independence();
    static const int wts[][2] = { { 40, 120 }, { 64, 192 }, { 256, 870 }, { 7, 5 }, { 33, 1000 }, { 768, 2304 } };
    for (size_t s = 0; s < sizeof wts / sizeof wts[0]; s++) check_matmul_wt(wts[s][0], wts[s][1]);
    static const int tl[][3] = { { 32, 16, 64 }, { 64, 48, 32 }, { 9, 40, 17 }, { 7, 8, 5 }, { 32, 5, 64 }, { 13, 70, 33 } };
    for (size_t s = 0; s < sizeof tl / sizeof tl[0]; s++)
        for (int acc = 0; acc < 2; acc++) check_tile_chain(tl[s][0], tl[s][1], tl[s][2], acc);
    static const int pl[][3] = { { 1, 1, 1 }, { 13, 37, 257 }, { 150, 100, 513 }, { 300, 31, 40 }, { 37, 1100, 600 },
                                 { 600, 70, 1030 }, { 25, 33, 9 } };
    for (size_t s = 0; s < sizeof pl / sizeof pl[0]; s++)
        for (int t = 0; t < 2; t++) check_paths_and_layouts(pl[s][0], pl[s][1], pl[s][2], t, (int)(s & 1));
    for (int m = 1; m <= 28; m++)          // every remainder after panels of 12 and of 6, and M below one panel
        for (int t = 0; t < 2; t++) check_own_chain(m == 28 ? 256 : m, m % 2 ? 40 : 70, 33, t);
    static const int layers[][3] = { { 7, 13, 9 }, { 64, 96, 600 }, { 130, 70, 33 }, { 3, 520, 1030 } };
    for (size_t s = 0; s < sizeof layers / sizeof layers[0]; s++) check_matmul_layer(layers[s][0], layers[s][1], layers[s][2]);
#ifndef USE_OPENBLAS   // (OpenBLAS picks other kernels, and sums, for other row counts)
    check_matmul_few_rows(13, 9);
    check_matmul_few_rows(600, 1030);
    check_matmul_few_rows(128, 870);
#endif
    static const int tr[][2] = { { 32, 64 }, { 1, 5 }, { 7, 9 }, { 8, 8 }, { 13, 17 }, { 31, 96 }, { 32, 16 }, { 17, 130 }, { 9, 5 } };
    for (size_t s = 0; s < sizeof tr / sizeof tr[0]; s++) check_transpose_block(tr[s][0], tr[s][1]);
    check_attention_bits("nope", 0, 0);
    check_attention_bits("alibi", 0.1, 0);
    check_attention_bits("t5", 0, 0);
    check_attention_bits("fire", 0, 0);
    check_attention_bits("nope", 0, 1);
    return test_summary("test_kernels");
}
