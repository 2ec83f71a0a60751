// bf16.c: the bf16 matrix products (see bf16.h): path choice, packing, the VDPBF16PS kernel and
// its emulation, the portable path.
#include "bf16.h"

#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define BF16_X86 1
#endif

// ----------------------------------------------------------------------------------------------
// Which path

int bf16_cpu_has_avx512bf16(void) {
#ifdef BF16_X86
    unsigned a, b, c, d, xcr0, xcr0_hi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;   // no OSXSAVE: no AVX state
    __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0 & 0xe6) != 0xe6) return 0;            // the OS saves neither ymm nor the zmm/mask state
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b >> 16 & 1)) return 0;   // AVX512F
    unsigned max7 = a;
    if (max7 < 1 || !__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (int)(a >> 5 & 1);                       // AVX512_BF16
#else
    return 0;
#endif
}

static Bf16Path g_path = BF16_PORTABLE;
static int g_path_chosen;
static char g_reason[160];

const char *bf16_path_name(Bf16Path p) {
    return p == BF16_AVX512 ? "avx512bf16" : p == BF16_EMULATED ? "emulated" : "portable";
}

static void choose_path(void) {
    if (g_path_chosen) return;
    int has = bf16_cpu_has_avx512bf16();
    const char *env = getenv("PEGPT_BF16_PATH");
    if (env && *env) {
        if (!strcmp(env, "avx512bf16")) {
            CHECK(has, "PEGPT_BF16_PATH=avx512bf16: this CPU (or its OS) has no AVX512_BF16; unset it, or give portable or emulated");
            CHECK(sizeof(real) == sizeof(float), "PEGPT_BF16_PATH=avx512bf16: the double build has only the portable path");
            g_path = BF16_AVX512;
        } else if (!strcmp(env, "emulated")) {
            CHECK(sizeof(real) == sizeof(float), "PEGPT_BF16_PATH=emulated: the double build has only the portable path");
            g_path = BF16_EMULATED;
        } else if (!strcmp(env, "portable")) g_path = BF16_PORTABLE;
        else CHECK(0, "PEGPT_BF16_PATH=%s: give avx512bf16, portable or emulated (or unset it to choose from the CPU)", env);
        snprintf(g_reason, sizeof g_reason, "forced by PEGPT_BF16_PATH");
    } else if (has && sizeof(real) == sizeof(float)) {
        g_path = BF16_AVX512;
        snprintf(g_reason, sizeof g_reason, "the CPU has AVX512_BF16");
    } else {
        g_path = BF16_PORTABLE;
        snprintf(g_reason, sizeof g_reason, sizeof(real) != sizeof(float) ? "the double build" :
                 "no AVX512_BF16 on this CPU: operands rounded to bf16, then the fp32 kernel (no speed-up)");
    }
    g_path_chosen = 1;
}

Bf16Path bf16_path(void) { choose_path(); return g_path; }
const char *bf16_path_reason(void) { choose_path(); return g_reason; }

Bf16Path bf16_set_path(Bf16Path p) {
    choose_path();
    CHECK(p != BF16_AVX512 || bf16_cpu_has_avx512bf16(), "bf16_set_path: this CPU has no AVX512_BF16");
    CHECK(p == BF16_PORTABLE || sizeof(real) == sizeof(float), "bf16_set_path: the double build has only the portable path");
    Bf16Path old = g_path;
    g_path = p;
    return old;
}

// ----------------------------------------------------------------------------------------------
// The packed kernels (float build only)

enum { BF_MR = 8, BF_MB = 64, BF_KQ = 256 };   // rows of a register tile; rows of a work item; k pairs per block
enum { M_CHUNK = 1024, N_CHUNK = 2048 };         // rows of A, columns of B packed at a time

typedef float v16f __attribute__((vector_size(64), aligned(4)));
typedef uint32_t v16u __attribute__((vector_size(64), aligned(4)));

// VDPBF16PS's sum in plain vector arithmetic: the high halves' product first, then the low halves'
// (Intel's pseudocode order). Each product is exact in fp32, so a fused or a separate multiply-add
// gives the same sum. (A macro: a function passing 64-byte vectors by value draws an ABI warning
// on a build without AVX-512.)
#define HI16 ((v16u){ 0 } + 0xffff0000u)
#define DP_EMULATED(acc, a, b) ((acc) + (v16f)((a) & HI16) * (v16f)((b) & HI16) + (v16f)((a) << 16) * (v16f)((b) << 16))

#define NAME emulated
#define TILE_ATTR
#define DP(acc, a, b) DP_EMULATED(acc, a, b)
#include "bf16_tile.inc"
#undef NAME
#undef TILE_ATTR
#undef DP

#ifdef BF16_X86
#define NAME avx512
#define TILE_ATTR __attribute__((target("avx512f,avx512bf16")))
#define DP(acc, a, b) ((v16f)_mm512_dpbf16_ps((__m512)(acc), (__m512bh)(a), (__m512bh)(b)))
#include "bf16_tile.inc"
#undef NAME
#undef TILE_ATTR
#undef DP
#endif

static inline uint32_t pair(float lo, float hi) { return (uint32_t)bf16_bits(lo) | (uint32_t)bf16_bits(hi) << 16; }

// rows [i0, i0+m) of A into m rows of Kq words. Read along A's contiguous direction: a row at a time
// when A is row-major, else (A transposed, as dout^T in the weight gradient) 16 rows side by side,
// so each read of 16 neighbours is one run of memory, not 16 cache misses.
static void pack_a(uint32_t *ap, int m, int K, int Kq, const real *a, size_t a_rs, size_t a_cs, int i0) {
    enum { RB = 16 };
    #pragma omp parallel for schedule(static)
    for (int r0 = 0; r0 < m; r0 += RB) {
        int nr = m - r0 < RB ? m - r0 : RB;
        if (a_cs == 1 || a_cs <= a_rs) {
            for (int i = r0; i < r0 + nr; i++) {
                const real *row = a + (size_t)(i0 + i) * a_rs;
                uint32_t *out = ap + (size_t)i * Kq;
                for (int q = 0; q < K / 2; q++) out[q] = pair((float)row[(size_t)(2 * q) * a_cs], (float)row[(size_t)(2 * q + 1) * a_cs]);
                if (K & 1) out[Kq - 1] = pair((float)row[(size_t)(K - 1) * a_cs], 0);
            }
        } else {
            for (int q = 0; q < Kq; q++) {
                const real *lo = a + (size_t)(2 * q) * a_cs + (size_t)(i0 + r0) * a_rs, *hi = lo + a_cs;
                int has_hi = 2 * q + 1 < K;
                for (int i = 0; i < nr; i++)
                    ap[(size_t)(r0 + i) * Kq + q] = pair((float)lo[(size_t)i * a_rs], has_hi ? (float)hi[(size_t)i * a_rs] : 0);
            }
        }
    }
}

// columns [j0, j0+n) of B into panels of 32 columns, zero past n. Read along B's contiguous
// direction: 32 columns of a row pair at a time when B is row-major, else a column at a time.
static void pack_b(uint32_t *bp, int n, int K, int Kq, const real *b, size_t b_rs, size_t b_cs, int j0) {
    int np = (n + 31) / 32;
    #pragma omp parallel for schedule(static)
    for (int p = 0; p < np; p++) {
        uint32_t *panel = bp + (size_t)p * Kq * 32;
        int nj = n - p * 32 < 32 ? n - p * 32 : 32;
        if (nj < 32) for (int q = 0; q < Kq; q++) memset(panel + (size_t)q * 32 + nj, 0, sizeof(uint32_t) * (32 - nj));
        const real *col0 = b + (size_t)(j0 + p * 32) * b_cs;
        if (b_cs == 1 || b_cs <= b_rs) {
            for (int q = 0; q < Kq; q++) {
                const real *lo = col0 + (size_t)(2 * q) * b_rs, *hi = lo + b_rs;
                int has_hi = 2 * q + 1 < K;
                for (int jj = 0; jj < nj; jj++)
                    panel[(size_t)q * 32 + jj] = pair((float)lo[(size_t)jj * b_cs], has_hi ? (float)hi[(size_t)jj * b_cs] : 0);
            }
        } else {
            for (int jj = 0; jj < nj; jj++) {
                const real *col = col0 + (size_t)jj * b_cs;
                for (int q = 0; q < K / 2; q++)
                    panel[(size_t)q * 32 + jj] = pair((float)col[(size_t)(2 * q) * b_rs], (float)col[(size_t)(2 * q + 1) * b_rs]);
                if (K & 1) panel[(size_t)(Kq - 1) * 32 + jj] = pair((float)col[(size_t)(K - 1) * b_rs], 0);
            }
        }
    }
}

static void gemm_packed(Bf16Path path, int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b,
                        size_t b_rs, size_t b_cs, real *c, size_t ldc, int accumulate) {
    int Kq = (K + 1) / 2, mch = M < M_CHUNK ? M : M_CHUNK, nch = N < N_CHUNK ? N : N_CHUNK;
    uint32_t *ap = xmalloc(sizeof(uint32_t) * (size_t)mch * Kq);
    uint32_t *bp = xmalloc(sizeof(uint32_t) * (size_t)((nch + 31) / 32 * 32) * Kq);
    for (int j0 = 0; j0 < N; j0 += N_CHUNK) {
        int n = N - j0 < N_CHUNK ? N - j0 : N_CHUNK;
        pack_b(bp, n, K, Kq, b, b_rs, b_cs, j0);
        for (int i0 = 0; i0 < M; i0 += M_CHUNK) {
            int m = M - i0 < M_CHUNK ? M - i0 : M_CHUNK;
            pack_a(ap, m, K, Kq, a, a_rs, a_cs, i0);
            float *cp = (float *)c + (size_t)i0 * ldc + j0;
#ifdef BF16_X86
            if (path == BF16_AVX512) { packed_avx512(m, n, Kq, ap, bp, cp, ldc, accumulate); continue; }
#endif
            packed_emulated(m, n, Kq, ap, bp, cp, ldc, accumulate);
        }
    }
    free(ap);
    free(bp);
}

// ----------------------------------------------------------------------------------------------
// The portable path: rounded copies, then the fp32 product, in the same chunks.

static void gemm_portable(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs,
                          size_t b_cs, real *c, size_t ldc, int accumulate) {
    int mch = M < M_CHUNK ? M : M_CHUNK, nch = N < N_CHUNK ? N : N_CHUNK;
    real *ar = xmalloc(sizeof(real) * (size_t)mch * K), *br = xmalloc(sizeof(real) * (size_t)K * nch);
    for (int j0 = 0; j0 < N; j0 += N_CHUNK) {
        int n = N - j0 < N_CHUNK ? N - j0 : N_CHUNK;
        #pragma omp parallel for schedule(static)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < n; j++) br[(size_t)k * n + j] = (real)bf16_round((float)b[(size_t)k * b_rs + (size_t)(j0 + j) * b_cs]);
        for (int i0 = 0; i0 < M; i0 += M_CHUNK) {
            int m = M - i0 < M_CHUNK ? M - i0 : M_CHUNK;
            if (a_cs == 1 || a_cs <= a_rs) {                // A row-major: a rounded copy by rows
                #pragma omp parallel for schedule(static)
                for (int i = 0; i < m; i++)
                    for (int k = 0; k < K; k++) ar[(size_t)i * K + k] = (real)bf16_round((float)a[(size_t)(i0 + i) * a_rs + (size_t)k * a_cs]);
                gemm(m, n, K, ar, (size_t)K, 1, br, (size_t)n, c + (size_t)i0 * ldc + j0, ldc, accumulate);
            } else {                                        // A transposed: a transposed copy, read in order
                #pragma omp parallel for schedule(static)
                for (int k = 0; k < K; k++)
                    for (int i = 0; i < m; i++) ar[(size_t)k * m + i] = (real)bf16_round((float)a[(size_t)(i0 + i) * a_rs + (size_t)k * a_cs]);
                gemm(m, n, K, ar, 1, (size_t)m, br, (size_t)n, c + (size_t)i0 * ldc + j0, ldc, accumulate);
            }
        }
    }
    free(ar);
    free(br);
}

void gemm_bf16(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs, size_t b_cs,
               real *c, size_t ldc, int accumulate) {
    if (M <= 0 || N <= 0) return;
    if (K == 0) {                                      // an empty sum
        if (!accumulate) for (int i = 0; i < M; i++) memset(c + (size_t)i * ldc, 0, sizeof(real) * N);
        return;
    }
    Bf16Path p = bf16_path();
    if (p == BF16_PORTABLE || sizeof(real) != sizeof(float)) gemm_portable(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, accumulate);
    else gemm_packed(p, M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, accumulate);
}

// ----------------------------------------------------------------------------------------------
// The avx512bf16 peak: 16 independent accumulators per thread (enough to cover VDPBF16PS's latency
// on two ports), 32 products per instruction.

enum { DP_CHAINS = 16 };

#ifdef BF16_X86
static __attribute__((target("avx512f,avx512bf16"), noinline)) double dp_loop(long iters, float seed) {
    __m512 acc[DP_CHAINS];
    for (int i = 0; i < DP_CHAINS; i++) acc[i] = _mm512_set1_ps(0);
    __m512bh x = (__m512bh)_mm512_set1_ps(seed), y = (__m512bh)_mm512_set1_ps(1e-20f);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < DP_CHAINS; i++) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    float out[16];
    __m512 s = acc[0];
    for (int i = 1; i < DP_CHAINS; i++) s = _mm512_add_ps(s, acc[i]);
    _mm512_storeu_ps(out, s);
    return out[0];
}
#endif

double bf16_peak_gflops(double seconds) {
#ifdef BF16_X86
    if (!bf16_cpu_has_avx512bf16()) return 0;
    double best = 0, sink = 0;
    for (long iters = 1L << 16;; iters *= 2) {
        double t0 = now_seconds();
        #pragma omp parallel reduction(+:sink)
        sink += dp_loop(iters, 1.0f + (float)thread_id());
        double dt = now_seconds() - t0;
        double gf = (double)iters * DP_CHAINS * 32 * 2 * max_threads() / dt / 1e9;
        if (gf > best) best = gf;
        if (dt > seconds) break;
    }
    if (sink == 12345.678) printf(" ");        // keep the loop's result alive
    return best;
#else
    (void)seconds;
    return 0;
#endif
}
