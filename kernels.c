// kernels.c: blocked, vectorised matrix products (see kernels.h).
#include "kernels.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

// One vector of 64 bytes: 16 floats or 8 doubles. aligned(sizeof(real)) allows unaligned access.
#define VL ((int)(64 / sizeof(real)))
typedef real vec __attribute__((vector_size(64), aligned(sizeof(real))));

enum { MR = 6 };                 // rows of the register tile
#define NR (2 * VL)              // columns of the register tile: two vectors
enum { KC = 256, MC = 72 };      // a K block; rows of A per thread block (a multiple of MR)

// C tile (MR, NR) (+)= A (MR, kc) @ B (kc, NR), everything in registers for the whole k loop
static inline void tile_full(int kc, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
                             real *c, size_t ldc, int accumulate) {
    vec c0[MR], c1[MR];
    for (int r = 0; r < MR; r++) {
        if (accumulate) { c0[r] = *(const vec *)(c + r * ldc); c1[r] = *(const vec *)(c + r * ldc + VL); }
        else { c0[r] = (vec){ 0 }; c1[r] = (vec){ 0 }; }
    }
    for (int k = 0; k < kc; k++) {
        vec b0 = *(const vec *)(b + k * ldb), b1 = *(const vec *)(b + k * ldb + VL);
        const real *ak = a + k * a_cs;
        for (int r = 0; r < MR; r++) {
            real ar = ak[r * a_rs];
            c0[r] += ar * b0;
            c1[r] += ar * b1;
        }
    }
    for (int r = 0; r < MR; r++) { *(vec *)(c + r * ldc) = c0[r]; *(vec *)(c + r * ldc + VL) = c1[r]; }
}

// any tile smaller than (MR, NR): the same sums, one element at a time
static void tile_edge(int mr, int nr, int kc, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
                      real *c, size_t ldc, int accumulate) {
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            real s = accumulate ? c[r * ldc + j] : 0;
            for (int k = 0; k < kc; k++) s += a[r * a_rs + k * a_cs] * b[k * ldb + j];
            c[r * ldc + j] = s;
        }
}

void gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
          real *c, size_t ldc, int accumulate) {
    int nblocks = (M + MC - 1) / MC;
    if (K == 0) {                                      // an empty sum
        if (!accumulate) for (int i = 0; i < M; i++) memset(c + (size_t)i * ldc, 0, sizeof(real) * N);
        return;
    }
    // K blocks in order (each pass accumulates into C); threads split row blocks of C
    for (int pc = 0; pc < K; pc += KC) {
        int kc = K - pc < KC ? K - pc : KC, acc = accumulate || pc > 0;
        #pragma omp parallel for schedule(static)
        for (int ib = 0; ib < nblocks; ib++) {
            int i0 = ib * MC, mc = M - i0 < MC ? M - i0 : MC;
            for (int j = 0; j < N; j += NR) {          // one B panel (kc, NR) serves every row tile
                int nr = N - j < NR ? N - j : NR;
                const real *bp = b + (size_t)pc * ldb + j;
                for (int i = i0; i < i0 + mc; i += MR) {
                    int mr = i0 + mc - i < MR ? i0 + mc - i : MR;
                    const real *ap = a + (size_t)i * a_rs + (size_t)pc * a_cs;
                    real *cp = c + (size_t)i * ldc + j;
                    if (mr == MR && nr == NR) tile_full(kc, ap, a_rs, a_cs, bp, ldb, cp, ldc, acc);
                    else tile_edge(mr, nr, kc, ap, a_rs, a_cs, bp, ldb, cp, ldc, acc);
                }
            }
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
