// nn/kernels.c: blocked, vectorised matrix products (see nn/kernels.h).
#include "nn/kernels.h"
#include "util/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef USE_OPENBLAS
#include <cblas.h>
#endif

// One vector: the machine's widest, as -march tells the compiler: 64 bytes with AVX-512 (16 floats),
// 32 with AVX/AVX2, 16 otherwise (SSE, NEON). aligned(sizeof(real)) allows unaligned access.
// gemm_tile's register tile is 6 x 2 vectors of C, plus two vectors of B: 6 x 2 + 2 = 14 of the 16
// registers of AVX2 or SSE; AVX-512 has 32, and it uses 8 x 2 + 2 there. gemm_own's micro-kernels
// (nn/gemm_micro.inc) have their own tiles, below.
#if defined(__AVX512F__)
#define VBYTES 64
#elif defined(__AVX__)
#define VBYTES 32
#else
#define VBYTES 16
#endif
#define VL ((int)(VBYTES / sizeof(real)))
typedef real vec __attribute__((vector_size(VBYTES), aligned(sizeof(real))));

enum { MR_MAX = VBYTES == 64 ? 8 : 6 };           // rows of gemm_tile's register tile (AVX-512: 8)
#define NR (2 * VL)              // columns of the register tile: two vectors

// C tile (mr <= MR_MAX rows, NR columns) (+)= A (mr, kc) @ B (kc, NR), all in registers for the
// whole k loop. Called with a constant mr for the full tiles (inlined, so the row loops unroll) and
// with fewer rows for those left over at the bottom of C.
static inline __attribute__((always_inline)) void tile_rows(int mr, int kc, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
                             real *c, size_t ldc, int accumulate) {
    vec c0[MR_MAX], c1[MR_MAX];
    for (int r = 0; r < mr; r++) {
        if (accumulate) { c0[r] = *(const vec *)(c + r * ldc); c1[r] = *(const vec *)(c + r * ldc + VL); }
        else { c0[r] = (vec){ 0 }; c1[r] = (vec){ 0 }; }
    }
    for (int k = 0; k < kc; k++) {
        vec b0 = *(const vec *)(b + k * ldb), b1 = *(const vec *)(b + k * ldb + VL);
        const real *ak = a + k * a_cs;
        for (int r = 0; r < mr; r++) {
            real ar = ak[r * a_rs];
            c0[r] += ar * b0;
            c1[r] += ar * b1;
        }
    }
    for (int r = 0; r < mr; r++) { *(vec *)(c + r * ldc) = c0[r]; *(vec *)(c + r * ldc + VL) = c1[r]; }
}

// C tile (mr <= MR_MAX rows, nr <= VL columns: one vector) (+)= A (mr, kc) @ B (kc, nr): the columns
// left of a product narrower than NR, or past its last NR (a head of 16, or the last 16 of a head of
// 48, with AVX-512). A partial vector is read into a zeroed one and only its nr columns are written
// back: the padding lanes meet zeros and are dropped. Each element is the same fused multiply-add
// chain over k in order as in tile_rows (madd's).
static inline __attribute__((always_inline)) void tile_rows1(int mr, int nr, int kc, const real *a, size_t a_rs, size_t a_cs,
                                                             const real *b, size_t ldb, real *c, size_t ldc, int accumulate) {
    vec c0[MR_MAX];
    for (int r = 0; r < mr; r++) {
        c0[r] = (vec){ 0 };
        if (accumulate) memcpy(&c0[r], c + r * ldc, sizeof(real) * nr);
    }
    for (int k = 0; k < kc; k++) {
        vec b0 = { 0 };
        memcpy(&b0, b + k * ldb, sizeof(real) * nr);
        const real *ak = a + k * a_cs;
        for (int r = 0; r < mr; r++) c0[r] += ak[r * a_rs] * b0;
    }
    for (int r = 0; r < mr; r++) memcpy(c + r * ldc, &c0[r], sizeof(real) * nr);
}

// the columns of a tile narrower than NR: a full vector, then what is left (fewer than VL)
static void tile_edge(int mr, int nr, int kc, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
                      real *c, size_t ldc, int accumulate) {
    for (int j = 0; j < nr; j += VL) {
        int w = nr - j < VL ? nr - j : VL;
        if (w == VL && mr == MR_MAX) tile_rows1(MR_MAX, VL, kc, a, a_rs, a_cs, b + j, ldb, c + j, ldc, accumulate);
        else if (w == VL) tile_rows1(mr, VL, kc, a, a_rs, a_cs, b + j, ldb, c + j, ldc, accumulate);
        else tile_rows1(mr, w, kc, a, a_rs, a_cs, b + j, ldb, c + j, ldc, accumulate);
    }
}

#ifdef USE_OPENBLAS
// make BLAS=openblas: the same contract through OpenBLAS (A plain or transposed through its strides)
static int blas_gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs,
                     size_t b_cs, real *c, size_t ldc, int accumulate) {
    // row-major A needs lda >= K (NoTrans) or, transposed, lda >= M; anything else: our kernel
    // (and B the same, with its own sizes)
    int plain = a_cs == 1 && a_rs >= (size_t)(K > 1 ? K : 1), trans = a_rs == 1 && a_cs >= (size_t)(M > 1 ? M : 1);
    int bplain = b_cs == 1 && b_rs >= (size_t)(N > 1 ? N : 1), btrans = b_rs == 1 && b_cs >= (size_t)(K > 1 ? K : 1);
    if ((!plain && !trans) || (!bplain && !btrans)) return 0;
    enum CBLAS_TRANSPOSE ta = plain ? CblasNoTrans : CblasTrans, tb = bplain ? CblasNoTrans : CblasTrans;
    int lda = (int)(plain ? a_rs : a_cs), ldb = (int)(bplain ? b_rs : b_cs);
    if (sizeof(real) == sizeof(float))
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, (const float *)a, lda, (const float *)b, ldb,
                    accumulate ? 1.0f : 0.0f, (float *)c, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, (const double *)a, lda, (const double *)b, ldb,
                    accumulate ? 1.0 : 0.0, (double *)c, (int)ldc);
    return 1;
}
#endif

// ---- gemm's micro-kernels, one per instruction set -------------------------------------------
// The generic one is built for what -march gives the whole build (VL above); in the float build of a
// target with FMA, an AVX2 and an AVX-512 one are built too, with target attributes, and the
// widest the CPU runs is chosen at the first call (PEGPT_GEMM_PATH=avx512|avx2|generic forces one).
// All compute every element of C as the same chain of fused multiply-adds over k in order, so they
// give the same bits: the choice changes the speed, never the numbers (tests/test_kernels.c).

// 1 in the float build (REAL is the token float), 0 in the double build of the gradient checks
#define REAL_IS_float 1
#define REAL_IS_(x) REAL_IS_##x
#define REAL_IS(x) REAL_IS_(x)
#if defined(__x86_64__) && defined(__FMA__) && REAL_IS(REAL) == 1
#define GEMM_DISPATCH 1
#else
#define GEMM_DISPATCH 0
#endif

enum { MR_GENERIC = VBYTES == 64 ? 12 : 6 };   // AVX-512 has 32 registers: 12 x 2 accumulators + 3

#define MK_NAME micro_generic
#define MK_ATTR
#define MK_VEC vec
#define MK_VL VL
#define MK_MR MR_GENERIC
#include "nn/gemm_micro.inc"
// Each path's kernel again with MR_SHORT rows, for the last panel of C when it has that many rows or
// fewer: a panel of 12 rows computed whole for the 4 left over (256 = 21 x 12 + 4, GPT-2's B4 T64)
// did 3 times the work
enum { MR_SHORT = 4 };
#define MK_NAME micro_generic4
#define MK_ATTR
#define MK_VEC vec
#define MK_VL VL
#define MK_MR MR_SHORT
#include "nn/gemm_micro.inc"

#if GEMM_DISPATCH
typedef float v16f_ __attribute__((vector_size(64), aligned(4)));
typedef float v8f_ __attribute__((vector_size(32), aligned(4)));
#define MK_NAME micro_avx512
#define MK_ATTR __attribute__((target("avx512f,fma")))
#define MK_VEC v16f_
#define MK_VL 16
#define MK_MR 12
#include "nn/gemm_micro.inc"
#define MK_NAME micro_avx512_4
#define MK_ATTR __attribute__((target("avx512f,fma")))
#define MK_VEC v16f_
#define MK_VL 16
#define MK_MR MR_SHORT
#include "nn/gemm_micro.inc"
#define MK_NAME micro_avx2
#define MK_ATTR __attribute__((target("avx2,fma")))
#define MK_VEC v8f_
#define MK_VL 8
#define MK_MR 6
#include "nn/gemm_micro.inc"
#define MK_NAME micro_avx2_4
#define MK_ATTR __attribute__((target("avx2,fma")))
#define MK_VEC v8f_
#define MK_VL 8
#define MK_MR MR_SHORT
#include "nn/gemm_micro.inc"
#endif

typedef void (*MicroKernel)(int kc, const real *ap, size_t a_rs, size_t a_cs, const real *bp, real *c, size_t ldc,
                            int accumulate, int mr, int nr);
// a path's register tile is mr x nr; a panel of C with at most MR_SHORT rows (the last, when mr
// does not divide M) runs short_kernel instead
typedef struct { const char *name; MicroKernel kernel; int mr, nr; MicroKernel short_kernel; } GemmPath;

static const GemmPath PATH_GENERIC = { "generic", micro_generic, MR_GENERIC, NR, micro_generic4 };
#if GEMM_DISPATCH
static const GemmPath PATH_AVX512 = { "avx512", (MicroKernel)micro_avx512, 12, 32, (MicroKernel)micro_avx512_4 };
static const GemmPath PATH_AVX2 = { "avx2", (MicroKernel)micro_avx2, 6, 16, (MicroKernel)micro_avx2_4 };
#endif

static GemmPath g_path;
static GemmBlocking g_block;

// 1 if this CPU (and build) runs the named path ("generic", "avx2", "avx512"), into *out
static int path_by_name(const char *name, GemmPath *out) {
    if (!strcmp(name, "generic")) { *out = PATH_GENERIC; return 1; }
#if GEMM_DISPATCH
    const CpuFeatures *f = cpu_features();       // the CPU has it and the OS saves its registers
    if (!strcmp(name, "avx512") && f->avx512f && f->os_avx512) { *out = PATH_AVX512; return 1; }
    if (!strcmp(name, "avx2") && f->avx2 && f->fma && f->os_avx) { *out = PATH_AVX2; return 1; }
#endif
    return 0;
}

// PEGPT_GEMM_L1 / PEGPT_GEMM_L2 (KiB): the cache sizes the blocking is computed from, for tuning
// (docs/speed.md); unset: what cpuid says
static size_t cache_override(const char *name, size_t bytes) {
    const char *e = getenv(name);
    if (!e || !*e) return bytes;
    char *end;
    long kib = strtol(e, &end, 10);
    CHECK(*end == 0 && kib >= 1 && kib <= 65536, "%s=%s: give the cache size in KiB, 1 to 65536 (unset: cpuid's)", name, e);
    return (size_t)kib << 10;
}

// the path (forced by PEGPT_GEMM_PATH, else the widest this CPU runs), then the blocking for it
static void choose_path(const char *force) {
    if (force && *force) {
        CHECK(!strcmp(force, "generic") || !strcmp(force, "avx2") || !strcmp(force, "avx512"),
              "PEGPT_GEMM_PATH=%s: give avx512, avx2 or generic", force);
        CHECK(path_by_name(force, &g_path), "PEGPT_GEMM_PATH=%s: this CPU (or this build) cannot run that path: %s", force,
              GEMM_DISPATCH ? "the CPU lacks the instructions" : "the AVX2 and AVX-512 kernels need a float build for an "
              "x86-64 with FMA (e.g. -march=haswell)");
    } else if (!path_by_name("avx512", &g_path) && !(VL < 8 && path_by_name("avx2", &g_path)))
        g_path = PATH_GENERIC;
    size_t l1, l2;
    cpu_caches(&l1, &l2);
    GemmBlocking bl = { .l1d = l1, .l2 = l2 };
    l1 = cache_override("PEGPT_GEMM_L1", l1);
    l2 = cache_override("PEGPT_GEMM_L2", l2);
    // kc: the A panel (mr x kc) and one B row block stay in L1 while the B panel streams from L2:
    // A's panel may take a quarter of L1; 128..512 in steps of 8
    bl.kc = (int)(l1 / 4 / (sizeof(real) * g_path.mr)) / 8 * 8;
    bl.kc = bl.kc < 128 ? 128 : bl.kc > 512 ? 512 : bl.kc;
    // the B chunk (kc x nc) takes half of L2, the A block (mc x kc) a quarter; with a transposed A
    // that is packed (gemm_own: C wide), once per chunk of B that meets it, the chunk may take three
    // quarters (fewer chunks, A packed fewer times: GPT-2's dW products with 768 columns ran 5-9%
    // faster in one chunk than in two on a Zen 5, results/bench/dw-chunk-ab-zen5.txt)
    bl.nc = (int)(l2 / 2 / (sizeof(real) * bl.kc)) / g_path.nr * g_path.nr;
    bl.nc = bl.nc < 2 * g_path.nr ? 2 * g_path.nr : bl.nc;
    bl.nc_t = (int)(l2 / 4 * 3 / (sizeof(real) * bl.kc)) / g_path.nr * g_path.nr;
    bl.nc_t = bl.nc_t < bl.nc ? bl.nc : bl.nc_t;
    bl.mc = (int)(l2 / 4 / (sizeof(real) * bl.kc)) / g_path.mr * g_path.mr;
    bl.mc = bl.mc < 4 * g_path.mr ? 4 * g_path.mr : bl.mc;
    g_block = bl;
}

static void ensure_path(void) {
    #pragma omp critical(gemm_path)
    if (!g_path.kernel) choose_path(getenv("PEGPT_GEMM_PATH"));
}

int gemm_set_path(const char *name) {
    GemmPath p;
    if (name && !path_by_name(name, &p)) return 0;
    #pragma omp critical(gemm_path)
    choose_path(name ? name : getenv("PEGPT_GEMM_PATH"));
    return 1;
}

const char *gemm_backend(void) {
#ifdef USE_OPENBLAS
    return "openblas";
#else
    ensure_path();
    static char name[96];
    snprintf(name, sizeof name, "ours (%s: %d x %d register tile of %s)", g_path.name, g_path.mr, g_path.nr,
             sizeof(real) == sizeof(float) ? "floats" : "doubles");
    return name;
#endif
}

GemmBlocking gemm_blocking(void) {
    ensure_path();
    return g_block;
}

void gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
          real *c, size_t ldc, int accumulate) {
#ifdef USE_OPENBLAS
    if (M > 0 && N > 0 && K > 0 && blas_gemm(M, N, K, a, a_rs, a_cs, b, ldb, 1, c, ldc, accumulate)) return;
#endif
    gemm_own(M, N, K, a, a_rs, a_cs, b, ldb, 1, c, ldc, accumulate);
}

void gemm_bt(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs, size_t b_cs,
             real *c, size_t ldc, int accumulate) {
#ifdef USE_OPENBLAS
    if (M > 0 && N > 0 && K > 0 && blas_gemm(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, accumulate)) return;
#endif
    gemm_own(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, accumulate);
}

// dst[0..w) = src[0..n), zeros past n: a row of a packed panel. The widths of the micro-kernels' panels
// (32, 16, 12, 6) get copies of a constant size, which the compiler turns into a few vector moves
// (a call to memcpy per 128 bytes cost more than the copy: ~5% of a step)
static inline void copy_panel_row(real *dst, const real *src, int n, int w) {
    if (n == w) {
        switch (w) {
        case 32: memcpy(dst, src, sizeof(real) * 32); return;
        case 16: memcpy(dst, src, sizeof(real) * 16); return;
        case 12: memcpy(dst, src, sizeof(real) * 12); return;
        case 6: memcpy(dst, src, sizeof(real) * 6); return;
        default: break;
        }
    }
    memcpy(dst, src, sizeof(real) * n);
    for (int x = n; x < w; x++) dst[x] = 0;
}

// A block (rows i0..i0+mc, k0..k0+kc) into panels of mr rows, k-major, zero past row M
static void pack_a(real *ap, int mr, int i0, int mc, int M, int k0, int kc, const real *a, size_t a_rs, size_t a_cs) {
    int rows = M - i0 < mc ? M - i0 : mc;
    if (a_rs == 1) {                                   // A transposed: each k's rows lie together, read once
        for (int k = 0; k < kc; k++) {
            const real *src = a + (size_t)i0 + (size_t)(k0 + k) * a_cs;
            for (int i = 0; i < mc; i += mr) {
                real *p = ap + (size_t)i * kc + (size_t)k * mr;
                int n = rows - i < mr ? (rows - i > 0 ? rows - i : 0) : mr;
                copy_panel_row(p, src + i, n, mr);
            }
        }
        return;
    }
    for (int i = 0; i < mc; i += mr) {
        real *p = ap + (size_t)i * kc;
        int n = rows - i < mr ? (rows - i > 0 ? rows - i : 0) : mr;
        for (int r = 0; r < n; r++) {
            const real *src = a + (size_t)(i0 + i + r) * a_rs + (size_t)k0 * a_cs;
            for (int k = 0; k < kc; k++) p[(size_t)k * mr + r] = src[(size_t)k * a_cs];
        }
        for (int r = n; r < mr; r++)
            for (int k = 0; k < kc; k++) p[(size_t)k * mr + r] = 0;
    }
}

#if GEMM_DISPATCH
// p[k * ldp + x] = src[x * stride + k] for 8 columns x and k < kc: 8 x 8 blocks transposed in AVX
// registers (the forward's weight, whose rows are B's columns; attention's blocks through
// transpose_block); the last kc % 8 one at a time
static __attribute__((target("avx2"))) void transpose_8cols(float *p, size_t ldp, const float *src, size_t stride, int kc) {
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
        __m256 r[8], t[8];
        for (int x = 0; x < 8; x++) r[x] = _mm256_loadu_ps(src + (size_t)x * stride + k);
        for (int x = 0; x < 8; x += 2) { t[x] = _mm256_unpacklo_ps(r[x], r[x + 1]); t[x + 1] = _mm256_unpackhi_ps(r[x], r[x + 1]); }
        for (int x = 0; x < 8; x += 4) {
            r[x] = _mm256_shuffle_ps(t[x], t[x + 2], 0x44); r[x + 1] = _mm256_shuffle_ps(t[x], t[x + 2], 0xEE);
            r[x + 2] = _mm256_shuffle_ps(t[x + 1], t[x + 3], 0x44); r[x + 3] = _mm256_shuffle_ps(t[x + 1], t[x + 3], 0xEE);
        }
        // r[0..3]: columns 0-3 of k, k+1, k+2, k+3 in the low halves, of k+4..k+7 in the high ones
        for (int q = 0; q < 4; q++) {
            _mm256_storeu_ps(p + (size_t)(k + q) * ldp, _mm256_permute2f128_ps(r[q], r[q + 4], 0x20));
            _mm256_storeu_ps(p + (size_t)(k + q + 4) * ldp, _mm256_permute2f128_ps(r[q], r[q + 4], 0x31));
        }
    }
    for (; k < kc; k++)
        for (int x = 0; x < 8; x++) p[(size_t)k * ldp + x] = src[(size_t)x * stride + k];
}
#endif

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols (nn/kernels.h): in the float build for
// x86-64 with FMA, on a CPU with AVX2, 8 rows at a time through transpose_8cols; the rest (and every
// other build) one number at a time
void transpose_block(real *dst, size_t ldd, const real *src, size_t lds, int rows, int cols) {
    int r = 0;
#if GEMM_DISPATCH
    if (cpu_features()->avx2 && cpu_features()->os_avx)
        for (; r + 8 <= rows; r += 8) transpose_8cols(dst + r, ldd, src + (size_t)r * lds, lds, cols);
#endif
    for (; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
}

// B chunk (k0..k0+kc, columns j0..j0+nc) into panels of nr columns, each kc x nr row-major, zero past
// column N. B(k, j) = b[k b_rs + j b_cs]: row-major B (b_cs = 1) copies rows; a transposed one
// (b_rs = 1, the forward's weight) is read along k, 16 at a time, and written across.
static void pack_b(real *bp, int nr, int j0, int nc, int N, int k0, int kc, const real *b, size_t b_rs, size_t b_cs) {
    for (int j = 0; j < nc; j += nr) {
        real *p = bp + (size_t)j * kc;
        int cols = N - (j0 + j) < nr ? N - (j0 + j) : nr;
        if (b_cs == 1) {
            for (int k = 0; k < kc; k++) copy_panel_row(p + (size_t)k * nr, b + (size_t)(k0 + k) * b_rs + j0 + j, cols, nr);
        } else {
            for (int x = cols; x < nr; x++)
                for (int k = 0; k < kc; k++) p[(size_t)k * nr + x] = 0;
            int x0 = 0;
#if GEMM_DISPATCH
            if (b_rs == 1 && g_path.kernel != micro_generic) {    // 8 x 8 blocks through AVX registers
                for (; x0 + 8 <= cols; x0 += 8) transpose_8cols(p + x0, nr, b + (size_t)(j0 + j + x0) * b_cs + k0, b_cs, kc);
            }
#endif
            for (int kb = 0; kb < kc; kb += 16) {
                int kn = kc - kb < 16 ? kc - kb : 16;
                for (int x = x0; x < cols; x++) {
                    const real *src = b + (size_t)(j0 + j + x) * b_cs + (size_t)(k0 + kb) * b_rs;
                    for (int k = 0; k < kn; k++) p[(size_t)(kb + k) * nr + x] = src[(size_t)k * b_rs];
                }
            }
        }
    }
}

enum { IN_PLACE_PANELS = 16 };   // a transposed A is read in place when C is at most this many panels wide

// Splits n into the fewest blocks of at most cap (a multiple of unit), all of nearly equal size,
// each a multiple of unit: their common size
static int even_block(int n, int cap, int unit) {
    int blocks = (n + cap - 1) / cap, size = (n + blocks - 1) / blocks;
    return (size + unit - 1) / unit * unit;
}

// per-thread packing buffers, kept between calls (a call per linear layer: no allocation each time).
// Each thread's buffer hangs on a global list, so it stays reachable for as long as the process
// runs (a pointer held only in a thread's own storage reads as a leak to LeakSanitizer once the
// OpenMP threads sit idle at exit); a node is made once per thread and never freed.
typedef struct PackBuf { real *buf; size_t cap; struct PackBuf *next; } PackBuf;
static PackBuf *pack_bufs;
static _Thread_local PackBuf *tl_pack;
static real *thread_buffer(size_t n) {
    if (!tl_pack) {
        tl_pack = calloc(1, sizeof *tl_pack);
        CHECK(tl_pack, "out of memory for the gemm buffers");
        #pragma omp critical(pegpt_pack_bufs)
        { tl_pack->next = pack_bufs; pack_bufs = tl_pack; }
    }
    PackBuf *pb = tl_pack;
    if (n > pb->cap) {
        free(pb->buf);
        size_t bytes = (sizeof(real) * n + 63) / 64 * 64;
        pb->buf = aligned_alloc(64, bytes);
        CHECK(pb->buf, "out of memory for the gemm buffers (%zu bytes)", bytes);
        pb->cap = n;
    }
    return pb->buf;
}

// One item's tiles for one K block: C (mi x nj, at c) = or += A @ the packed B chunk bp, A panel
// outer (it stays in L1), B panel inner (the chunk stays in L2). A is read at a (a_rs, a_cs) but for
// the packed panels (all of them, or those from row `tail` on) at ap.
static inline void item_tiles(const GemmPath *p, int mi, int nj, int kb, const real *a, int pack_all_a, int tail,
                              const real *ap, size_t a_rs, size_t a_cs, const real *bp, real *c, size_t ldc, int acc) {
    int mr = p->mr, nr = p->nr;
    for (int i = 0; i < mi; i += mr) {
        int packed = pack_all_a || i >= tail;
        const real *ai = packed ? ap + (size_t)i * kb : a + (size_t)i * a_rs;
        size_t ars = packed ? 1 : a_rs, acs = packed ? (size_t)mr : a_cs;
        for (int j = 0; j < nj; j += nr) {
            real *cp = c + (size_t)i * ldc + j;
            // the next panel's rows of C start on their way from memory now, a row panel ahead (for
            // dW of the LM head, 50304 x 768, C is 154 MB and every tile is cold)
            if (i + mr < mi)
                for (int r = 0; r < mr && i + mr + r < mi; r++)
                    for (int x = 0; x < nr && j + x < nj; x += 64 / (int)sizeof(real))
                        __builtin_prefetch(cp + (size_t)(mr + r) * ldc + x, 1);
            int rows = mi - i < mr ? mi - i : mr;
            MicroKernel k = rows <= MR_SHORT ? p->short_kernel : p->kernel;
            k(kb, ai, ars, acs, bp + (size_t)j * kb, cp, ldc, acc, rows, nj - j < nr ? nj - j : nr);
        }
    }
}

// The threads' speeds, learned from the products so far: each product gives thread t a share of its
// work in proportion to g_speed[t], so that cores that run at different speeds (one shared with
// another process, a virtual machine's core beside other tenants, an efficiency core beside a
// performance one) finish together instead of the faster waiting for the slower. The split never
// changes a result's bits: every tile of C is one thread's whole sum over k in order, whichever
// thread that is. Relative speeds with mean 1, learned for a team of g_speed_nt threads (until then,
// and for other teams, equal shares). Only a product run by a team of two or more writes them, after
// its threads have joined; one called from inside a parallel region (a team of one) only reads.
enum { SPEED_MAX_T = 64 };
static double g_speed[SPEED_MAX_T];
static int g_speed_nt;

// thread t's share of the work, [*w0, *w1) of [0, 1), for a team of nth. Thread t's *w1 has the
// bits of thread t + 1's *w0 (the same sum in the same order, the same division): gemm_thread cuts
// a block where two shares meet, and both threads must cut it at the same panel.
static void speed_share(int t, int nth, double *w0, double *w1) {
    if (nth != g_speed_nt || nth > SPEED_MAX_T) { *w0 = (double)t / nth; *w1 = (double)(t + 1) / nth; return; }
    double sum = 0, before = 0;
    for (int q = 0; q < nth; q++) { sum += g_speed[q]; if (q < t) before += g_speed[q]; }
    *w0 = before / sum;
    *w1 = t == nth - 1 ? 1 : (before + g_speed[t]) / sum;
}

void gemm_thread_speeds(int nth, const double *speeds) {
    CHECK(nth >= 1 && nth <= SPEED_MAX_T, "gemm_thread_speeds: %d threads (1 to %d)", nth, (int)SPEED_MAX_T);
    for (int t = 0; t < nth; t++) {
        CHECK(speeds[t] > 0, "gemm_thread_speeds: speed %g of thread %d (give positive speeds)", speeds[t], t);
        g_speed[t] = speeds[t];
    }
    g_speed_nt = nth;
}

// After a product: thread t did work[t] multiply-adds in sec[t] seconds. A moving average of each
// thread's speed relative to the team's mean, kept within 1/3 .. 3. Products too short to time
// (under 0.2 ms for the slowest thread), or where a thread did no work, teach nothing.
static void speed_learn(int nth, const double *work, const double *sec) {
    if (nth < 2 || nth > SPEED_MAX_T) return;
    double v[SPEED_MAX_T], mean = 0, slowest = 0;
    for (int t = 0; t < nth; t++) {
        if (work[t] <= 0 || sec[t] <= 0) return;
        v[t] = work[t] / sec[t];
        mean += v[t] / nth;
        if (sec[t] > slowest) slowest = sec[t];
    }
    if (slowest < 2e-4) return;
    if (g_speed_nt != nth) { for (int t = 0; t < nth; t++) g_speed[t] = 1; g_speed_nt = nth; }
    for (int t = 0; t < nth; t++) {
        double r = v[t] / mean;
        g_speed[t] = 0.8 * g_speed[t] + 0.2 * (r < 1.0 / 3 ? 1.0 / 3 : r > 3 ? 3 : r);
    }
}

// One gemm_own call's operands and blocking, as every thread reads them.
typedef struct {
    const GemmPath *p;
    int M, N, K;
    const real *a; size_t a_rs, a_cs;
    const real *b; size_t b_rs, b_cs;
    real *c; size_t ldc;
    int accumulate, pack_all_a, slabs, by_rows;
    int kc, mc, nc, panels, cpanels, nrb, ncb;   // K block; the largest row block and chunk; counts
} GemmCall;

// The panels [p0, p1) of a block or chunk, cut to the fraction [f0, f1) of it (the whole for 0, 1):
// *q0, *q1. Two threads that meet inside a block compute the same cut from the same fraction.
static void panel_cut(int p0, int p1, double f0, double f1, int *q0, int *q1) {
    f0 = f0 < 0 ? 0 : f0; f1 = f1 > 1 ? 1 : f1;
    *q0 = p0 + (int)(f0 * (p1 - p0) + 0.5);
    *q1 = p0 + (int)(f1 * (p1 - p0) + 0.5);
}

// Thread t of nth: its share of the call's items, returning the multiply-adds it did. The share is
// the fraction [w0, w1) of the work (speed_share), cut at whole panels: a thread's range of items
// (or of row blocks, with slabs) may start or end inside one, whose panels (its rows; its columns
// when items run block by block) the two threads then divide; each tile of C is still one thread's
// whole sum over K in order. (Whole items alone could not follow the speeds: GPT-2's products of
// 4 to 16 items split 2:2 or 7:7 at speeds 1.05:0.95, and the faster thread waited 10% of a product.)
static double gemm_thread(const GemmCall *g, int t, int nth) {
    const GemmPath *p = g->p;
    int mr = p->mr, nr = p->nr, M = g->M, N = g->N, K = g->K, kc = g->kc, nrb = g->nrb, ncb = g->ncb, items = nrb * ncb;
    double done = 0, w0, w1;
    speed_share(t, nth, &w0, &w1);
    // the share in units: row blocks with slabs (every chunk of each), else items
    double units = g->slabs ? nrb : items, x0 = units * w0, x1 = units * w1;
    int u0 = (int)x0, u1 = (int)ceil(x1), per, lo, hi;
    if (u1 > units) u1 = (int)units;
    if (g->slabs) { per = u1 - u0 > 0 ? u1 - u0 : 1; lo = 0; hi = (u1 - u0) * ncb; }
    else { per = g->by_rows ? ncb : nrb; lo = u0; hi = u1; }
    real *ap = thread_buffer((size_t)g->mc * kc + (size_t)kc * g->nc), *bp = ap + (size_t)g->mc * kc;
    // the thread's items in groups that share an operand (a column chunk when items run chunk by
    // chunk, a row block when they run block by block), K blocks in order within each group: a
    // group's tiles of C stay in cache across its K blocks (GPT-2's LM head: 256 x 512 of C
    // instead of all 256 x 50304 per block), and every operand is packed as often as before.
    for (int g0 = lo, g1; g0 < hi; g0 = g1) {
        for (g1 = g0 + 1; g1 < hi && g1 / per == g0 / per; g1++) {}
        for (int k0 = 0; k0 < K; k0 += kc) {
            int kb = K - k0 < kc ? K - k0 : kc, acc = g->accumulate || k0 > 0;
            int have_a0 = -1, have_a1 = -1, have_b0 = -1, have_b1 = -1;   // the panels packed last
            for (int it = g0; it < g1; it++) {
                int ib = g->by_rows ? it / ncb : it % nrb, jb = g->by_rows ? it % ncb : it / nrb, unit = it;
                if (g->slabs) { ib = u0 + it % per; jb = it / per; unit = ib; }
                int pi0, pi1, pj0, pj1;
                int rows0 = (int)((long)g->panels * ib / nrb), rows1 = (int)((long)g->panels * (ib + 1) / nrb);
                int cols0 = (int)((long)g->cpanels * jb / ncb), cols1 = (int)((long)g->cpanels * (jb + 1) / ncb);
                double f0 = x0 - unit, f1 = x1 - unit;       // the part of this unit that is the thread's
                if (g->by_rows) { pi0 = rows0; pi1 = rows1; panel_cut(cols0, cols1, f0, f1, &pj0, &pj1); }
                else { pj0 = cols0; pj1 = cols1; panel_cut(rows0, rows1, f0, f1, &pi0, &pi1); }
                if (pi0 >= pi1 || pj0 >= pj1) continue;
                int i0 = pi0 * mr, i1 = pi1 * mr, j0 = pj0 * nr, j1 = pj1 * nr;
                int mi = (i1 < M ? i1 : M) - i0, nj = (j1 < N ? j1 : N) - j0, tail = mi / mr * mr;
                if (have_a0 != pi0 || have_a1 != pi1) {   // tail: the rows of full panels
                    if (g->pack_all_a) pack_a(ap, mr, i0, (mi + mr - 1) / mr * mr, M, k0, kb, g->a, g->a_rs, g->a_cs);
                    else if (tail < mi) pack_a(ap + (size_t)tail * kb, mr, i0 + tail, mr, M, k0, kb, g->a, g->a_rs, g->a_cs);
                    have_a0 = pi0; have_a1 = pi1;
                }
                if (have_b0 != pj0 || have_b1 != pj1) {
                    pack_b(bp, nr, j0, (nj + nr - 1) / nr * nr, N, k0, kb, g->b, g->b_rs, g->b_cs);
                    have_b0 = pj0; have_b1 = pj1;
                }
                const real *ab = g->pack_all_a ? ap : g->a + (size_t)i0 * g->a_rs + (size_t)k0 * g->a_cs;
                item_tiles(p, mi, nj, kb, ab, g->pack_all_a, tail, ap, g->a_rs, g->a_cs, bp, g->c + (size_t)i0 * g->ldc + j0,
                           g->ldc, acc);
                done += (double)mi * nj * kb;
            }
        }
    }
    return done;
}

// c (M,N) = (or += with accumulate) a (M,K) @ b (K,N): a and b read through their strides (a
// transposed operand costs no copy), c row-major with leading dimension ldc. The blocked, threaded
// kernel of every linear layer (nn/kernels.h).
//
// Blocking (after BLIS): K in blocks of kc; C in work items of (a block of mc rows) x (a chunk of nc
// columns). For each K block, a thread packs its item's A block into panels of mr rows (a wide
// transposed A only; else A is read in place) and its B chunk into panels of nr columns (kept
// while the next item shares it), then runs the micro-kernel
// over the item's tiles, A panel outer (it stays in L1), B panel inner (the chunk stays in L2).
// Each thread owns the same items for every K block (a static split in proportion to the threads'
// learned speeds, above, cut at whole panels: gemm_thread; no barrier between blocks) and
// K blocks run in order, so every element's sum has a fixed order, independent of the blocking, the
// path and the thread count. Items run column chunk by column chunk, or row block by row block,
// whichever repacks less: a chunk is packed once per thread that meets it, a block once per item.
void gemm_own(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs, size_t b_cs,
              real *c, size_t ldc, int accumulate) {
    if (M <= 0 || N <= 0) return;
    if (K == 0) {                                      // an empty sum
        if (!accumulate) for (int i = 0; i < M; i++) memset(c + (size_t)i * ldc, 0, sizeof(real) * N);
        return;
    }
    ensure_path();
    const GemmPath p = g_path;
    const GemmBlocking bl = g_block;
    int mr = p.mr, nr = p.nr;
    // A is read in place, but for its last, partial panel, when a panel's mr rows at one k lie in
    // reach: row-major (a_cs = 1), or transposed (a_rs = 1, the mr values contiguous) when C is at
    // most IN_PLACE_PANELS panels wide. A wider transposed A is packed into k-major panels, once
    // per chunk of B (larger chunks, nc_t, so fewer times), where many B panels reuse each one. On a
    // Zen 5, in place ran 16-47% faster with 4 panels (N = 128: the LM head's dW at C = 128), -1% to
    // +13% with 12-16, and within 5% either way with 20-24 (results/bench/dw-inplace-ab-zen5.txt).
    int pack_all_a = a_cs != 1 && !(a_rs == 1 && N <= IN_PLACE_PANELS * nr), ncap = pack_all_a ? bl.nc_t : bl.nc;
    int kc = even_block(K, bl.kc, 8), ncb = (N + ncap - 1) / ncap;
    // row blocks: as many as fit the cap (the threads' shares are cut at panels, gemm_thread, so no
    // count of items needs to divide among them)
    int panels = (M + mr - 1) / mr, cpanels = (N + nr - 1) / nr, nrb = (M + bl.mc - 1) / bl.mc, nt = max_threads();
    // slabs: each thread its own rows of C (and of A, read in place), every chunk, when A's and C's
    // rows outweigh B (each thread then packs all of B): the row-major activations stay with the
    // thread that wrote them, as the elementwise layers split rows (where two cores share no cache,
    // as on the virtual machines of docs/speed.md, "The matrix products", a line that crosses from
    // one to the other costs about what memory does)
    int slabs = a_cs == 1 && nt > 1 && panels >= 2 * nt && (double)M * (K + N) > (double)N * K;
    // A read in place and B in one chunk (small's dW products: 384 columns): every thread would pack
    // all of B for its rows; in as many chunks as threads, each packs only its own columns (A, read
    // in place, costs no packing), when each chunk keeps at least 6 panels: 1.01-1.09x on those
    // products at 2 threads, and 0.94x with 2 panels a thread, whose A panels then serve too few B
    // panels (results/bench/dw-split-ab-zen5-dec05.txt)
    if (!pack_all_a && !slabs && ncb == 1 && cpanels >= 6 * nt) ncb = nt;
    // blocks and chunks of whole panels, as even as they can be (their panel counts differ by at most
    // one), so that equal numbers of items are equal work: block ib is the row panels
    // [ib panels / nrb, (ib + 1) panels / nrb), chunk jb likewise of the column panels. (Blocks of
    // one rounded-up size left the last one short: 2048 rows in 10 blocks gave one thread 9% less.)
    int mc = (panels + nrb - 1) / nrb * mr, nc = (cpanels + ncb - 1) / ncb * nr;
    // repacking: by chunks, A is packed once per item (ncb times) and B about once; by row blocks,
    // B nrb times and A once
    int by_rows = !slabs && (double)nrb * N + M < (double)ncb * M + N, team = 1;
    // each thread's time counts from before the threads start: one that starts late (its core busy
    // with another process) is that much slower
    double work[SPEED_MAX_T] = { 0 }, sec[SPEED_MAX_T] = { 0 }, t0 = now_seconds();
    GemmCall g = { &p, M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, accumulate, pack_all_a, slabs, by_rows,
                   kc, mc, nc, panels, cpanels, nrb, ncb };
    #pragma omp parallel
    {
        int t = thread_id(), nth = team_size();
        double done = gemm_thread(&g, t, nth);
        if (t < SPEED_MAX_T) { work[t] = done; sec[t] = now_seconds() - t0; }
        if (t == 0) team = nth;
    }
    speed_learn(team, work, sec);
}

// Attention's products: small operands already in cache, one thread (the caller's), no copy of B.
// Tiles of MR_MAX rows: with AVX-512, 8 x 2 accumulators and 2 rows of B fill 18 of its 32 registers.
void gemm_tile(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
               real *c, size_t ldc, int accumulate) {
    if (K == 0) {
        if (!accumulate) for (int i = 0; i < M; i++) memset(c + (size_t)i * ldc, 0, sizeof(real) * N);
        return;
    }
    for (int j = 0; j < N; j += NR) {
        int nr = N - j < NR ? N - j : NR;
        for (int i = 0; i < M; i += MR_MAX) {
            int mr = M - i < MR_MAX ? M - i : MR_MAX;
            const real *ap = a + (size_t)i * a_rs;
            real *cp = c + (size_t)i * ldc + j;
            if (mr == MR_MAX && nr == NR) tile_rows(MR_MAX, K, ap, a_rs, a_cs, b + j, ldb, cp, ldc, accumulate);
            else if (nr == NR) tile_rows(mr, K, ap, a_rs, a_cs, b + j, ldb, cp, ldc, accumulate);
            else tile_edge(mr, nr, K, ap, a_rs, a_cs, b + j, ldb, cp, ldc, accumulate);
        }
    }
}

// One row at a time against a row-major B (decoding's transposed weights): 8 vectors of C in
// registers per pass over k, so 8 independent multiply-add chains hide the FMA's latency (a tile of
// one row and 2 vectors would wait on it); columns left over as gemm_tile's narrow ones.
void gemm_rows(int M, int N, int K, const real *a, size_t a_rs, const real *b, size_t ldb, real *c, size_t ldc) {
    enum { WV = 8 };
    for (int i = 0; i < M; i++) {
        const real *ai = a + (size_t)i * a_rs;
        real *ci = c + (size_t)i * ldc;
        int j = 0;
        for (; j + WV * VL <= N; j += WV * VL) {
            vec acc[WV];
            for (int v = 0; v < WV; v++) acc[v] = (vec){ 0 };
            for (int k = 0; k < K; k++) {
                const real *bk = b + (size_t)k * ldb + j;
                real x = ai[k];
                #pragma GCC unroll 8
                for (int v = 0; v < WV; v++) acc[v] += x * *(const vec *)(bk + v * VL);
            }
            for (int v = 0; v < WV; v++) *(vec *)(ci + j + v * VL) = acc[v];
        }
        if (j < N) gemm_tile(1, N - j, K, ai, 1, 1, b + j, ldb, ci + j, ldc, 0);
    }
}

void gemm_ref(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = accumulate ? c[(size_t)i * ldc + j] : 0;
            for (int k = 0; k < K; k++) s += (double)a[(size_t)i * a_rs + (size_t)k * a_cs] * b[(size_t)k * ldb + j];
            c[(size_t)i * ldc + j] = (real)s;
        }
}
