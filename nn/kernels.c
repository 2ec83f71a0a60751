// nn/kernels.c: blocked, vectorised matrix products (see nn/kernels.h).
#include "nn/kernels.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef USE_OPENBLAS
#include <cblas.h>
#endif

// One vector: the machine's widest, as -march tells the compiler: 64 bytes with AVX-512 (16 floats),
// 32 with AVX/AVX2, 16 otherwise (SSE, NEON). aligned(sizeof(real)) allows unaligned access.
// A register tile is MR x 2 vectors of C, plus two vectors of B: 6 x 2 + 2 = 14 of the 16
// registers of AVX2 or SSE; AVX-512 has 32, and gemm_tile uses 8 x 2 + 2 there.
#if defined(__AVX512F__)
#define VBYTES 64
#elif defined(__AVX__)
#define VBYTES 32
#else
#define VBYTES 16
#endif
#define VL ((int)(VBYTES / sizeof(real)))
typedef real vec __attribute__((vector_size(VBYTES), aligned(sizeof(real))));

enum { MR = 6 };                                  // rows of gemm's register tile
enum { MR_MAX = VBYTES == 64 ? 8 : 6 };           // rows of gemm_tile's (AVX-512: 8), the most tile_rows takes
#define NR (2 * VL)              // columns of the register tile: two vectors
enum { KC = 384, MC = 72 };      // a K block; rows of A per work item (a multiple of MR)
enum { NC_TILES = 8 };           // most column tiles (NR wide) per work item

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

// any tile narrower than NR columns: the same sums, one element at a time (madd: the tiles' FMA)
static void tile_edge(int mr, int nr, int kc, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
                      real *c, size_t ldc, int accumulate) {
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            real s = accumulate ? c[r * ldc + j] : 0;
            for (int k = 0; k < kc; k++) s = madd(a[r * a_rs + k * a_cs], b[k * ldb + j], s);
            c[r * ldc + j] = s;
        }
}

#ifdef USE_OPENBLAS
// make BLAS=openblas: the same contract through OpenBLAS (A plain or transposed through its strides)
static int blas_gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
                     real *c, size_t ldc, int accumulate) {
    // row-major A needs lda >= K (NoTrans) or, transposed, lda >= M; anything else: our kernel
    int plain = a_cs == 1 && a_rs >= (size_t)(K > 1 ? K : 1), trans = a_rs == 1 && a_cs >= (size_t)(M > 1 ? M : 1);
    if (!plain && !trans) return 0;
    enum CBLAS_TRANSPOSE ta = plain ? CblasNoTrans : CblasTrans;
    int lda = (int)(plain ? a_rs : a_cs);
    if (sizeof(real) == sizeof(float))
        cblas_sgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, 1.0f, (const float *)a, lda, (const float *)b, (int)ldb,
                    accumulate ? 1.0f : 0.0f, (float *)c, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, 1.0, (const double *)a, lda, (const double *)b, (int)ldb,
                    accumulate ? 1.0 : 0.0, (double *)c, (int)ldc);
    return 1;
}
#endif

const char *gemm_backend(void) {
#ifdef USE_OPENBLAS
    return "openblas";
#else
    return sizeof(real) == sizeof(float) ? (VL == 16 ? "ours (16-float vectors)" : VL == 8 ? "ours (8-float vectors)" : "ours (4-float vectors)")
                                         : (VL == 8 ? "ours (8-double vectors)" : VL == 4 ? "ours (4-double vectors)" : "ours (2-double vectors)");
#endif
}

void gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
          real *c, size_t ldc, int accumulate) {
#ifdef USE_OPENBLAS
    if (M > 0 && N > 0 && K > 0 && blas_gemm(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate)) return;
#endif
    gemm_own(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
}

// c (M,N) = (or += with accumulate) a (M,K) @ b (K,N): a read through its strides (row a_rs,
// column a_cs: a transposed operand costs no copy), b and c row-major with leading dimensions
// ldb and ldc. The blocked, threaded kernel of every linear layer (nn/kernels.h).
void gemm_own(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate) {
    if (K == 0) {                                      // an empty sum
        if (!accumulate) for (int i = 0; i < M; i++) memset(c + (size_t)i * ldc, 0, sizeof(real) * N);
        return;
    }
    // Work items: (column chunk of ncw columns) x (row block of MC rows), column chunk outermost.
    // One thread owns each C tile for a whole K block and K blocks run in order, so every sum has
    // a fixed order (the same for any blocking and thread count). Each thread copies the B chunk
    // (kc, ncw) it works on into a contiguous buffer, panel by panel, once for all the row blocks
    // that use it: rows of B lie ldb apart, and with ldb a multiple of 1024 floats they would all
    // fall into a few cache sets.
    // The chunks are of equal width where possible (N = 384 as 256 + 128 gave one thread 2/3 of the
    // work under the static schedule): tiles per chunk, from NC_TILES down to half that, leaving the
    // fewest empty columns.
    int nt = (N + NR - 1) / NR, tpc = NC_TILES;
    for (int t = NC_TILES, waste = nt; t >= (NC_TILES + 1) / 2; t--) {
        int w = (nt + t - 1) / t * t - nt;
        if (w < waste) { waste = w; tpc = t; }
    }
    if (tpc > nt) tpc = nt;
    int ncw = tpc * NR, nrb = (M + MC - 1) / MC, ncb = (N + ncw - 1) / ncw, nthr = 1;
#ifdef _OPENMP
    nthr = omp_get_max_threads();
#endif
    // per thread one chunk of kcap x ncw (no larger than the problem: tiny products stay cheap)
    size_t kcap = K < KC ? (size_t)K : KC, ccap = (size_t)ncw;
    size_t bytes = (sizeof(real) * nthr * kcap * ccap + 63) / 64 * 64;   // aligned_alloc wants a multiple
    real *bufs = aligned_alloc(64, bytes);
    CHECK(bufs, "out of memory for the gemm buffers (%zu bytes)", bytes);
    for (int pc = 0; pc < K; pc += KC) {
        int kc = K - pc < KC ? K - pc : KC, acc = accumulate || pc > 0;
        #pragma omp parallel
        {
            int tid = 0;
#ifdef _OPENMP
            tid = omp_get_thread_num();
#endif
            real *chunk = bufs + (size_t)tid * kcap * ccap;
            int have = -1;                              // the column chunk held in `chunk`
            #pragma omp for collapse(2) schedule(static)
            for (int jb = 0; jb < ncb; jb++)
                for (int ib = 0; ib < nrb; ib++) {
                    int j0 = jb * ncw, j1 = j0 + ncw < N ? j0 + ncw : N;
                    if (have != jb) {                   // panels (kc, NR) of full width, back to back
                        for (int j = j0; j + NR <= j1; j += NR)
                            for (int k = 0; k < kc; k++)
                                memcpy(chunk + (size_t)(j - j0) * kc + (size_t)k * NR, b + (size_t)(pc + k) * ldb + j, sizeof(real) * NR);
                        have = jb;
                    }
                    int i0 = ib * MC, mc = M - i0 < MC ? M - i0 : MC;
                    for (int j = j0; j < j1; j += NR) {
                        int nr = j1 - j < NR ? j1 - j : NR;
                        for (int i = i0; i < i0 + mc; i += MR) {
                            int mr = i0 + mc - i < MR ? i0 + mc - i : MR;
                            const real *ap = a + (size_t)i * a_rs + (size_t)pc * a_cs;
                            real *cp = c + (size_t)i * ldc + j;
                            const real *panel = chunk + (size_t)(j - j0) * kc;
                            // the next tile's rows of C start on their way from memory now (for
                            // dW of the LM head, 50304 x 768, C is 154 MB and every tile is cold)
                            int ni = i + MR < i0 + mc ? i + MR : i0, nj = i + MR < i0 + mc ? j : j + NR;
                            if (nj < j1)
                                for (int r = 0; r < MR && ni + r < i0 + mc; r++)
                                    for (int off = 0; off < NR && nj + off < j1; off += (int)(64 / sizeof(real)))   // cache lines
                                        __builtin_prefetch(c + (size_t)(ni + r) * ldc + nj + off, 1);
                            if (mr == MR && nr == NR) tile_rows(MR, kc, ap, a_rs, a_cs, panel, NR, cp, ldc, acc);
                            else if (nr == NR) tile_rows(mr, kc, ap, a_rs, a_cs, panel, NR, cp, ldc, acc);
                            else tile_edge(mr, nr, kc, ap, a_rs, a_cs, b + (size_t)pc * ldb + j, ldb, cp, ldc, acc);
                        }
                    }
                }
        }
    }
    free(bufs);
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

void gemm_ref(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = accumulate ? c[(size_t)i * ldc + j] : 0;
            for (int k = 0; k < K; k++) s += (double)a[(size_t)i * a_rs + (size_t)k * a_cs] * b[(size_t)k * ldb + j];
            c[(size_t)i * ldc + j] = (real)s;
        }
}
