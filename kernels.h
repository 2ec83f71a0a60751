// kernels.h: what the layers and attention share to compute: the matrix products (blocked for the
// caches, vectorised), an exp the compiler vectorises, and the OpenMP thread helpers.
//
// gemm: C (M,N) = or += A (M,K) @ B (K,N), where A(i,k) = a[i*a_rs + k*a_cs] (any strides, so a
// transposed A costs nothing) and B, C are row-major with leading dimensions ldb, ldc.
// Vectorised with GCC vector extensions at the widest vector -march allows: 64 bytes with AVX-512,
// 32 with AVX/AVX2, 16 otherwise (SSE, NEON); register tiles of 6 rows x 2 vectors (gemm_tile's:
// 8 rows with AVX-512). OpenMP threads split C into work items, each a block of up to 72 rows of
// one column chunk (8 x 2 vectors wide at most), one thread per item; every sum over k runs in the
// same order whatever the blocking, so results are bit-reproducible and independent of the thread
// count.
#ifndef KERNELS_H
#define KERNELS_H

#include "common.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
          real *c, size_t ldc, int accumulate);
// Our kernel, whatever the backend (with make BLAS=openblas, gemm calls OpenBLAS instead).
void gemm_own(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate);
const char *gemm_backend(void);   // "ours (...)" or "openblas"

// The same product on the calling thread only, without copying B: for small operands already in
// cache (attention's tiles, attention.c), called from inside a parallel region. Any M, N, K.
void gemm_tile(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
               real *c, size_t ldc, int accumulate);

// The reference every kernel test compares with: the definition, one dot product per element.
void gemm_ref(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate);

// exp for floats in a form the compiler vectorises (libm's expf/tanhf are scalar calls without
// -ffast-math): 2^n * p(r), x = n ln2 + r, |r| <= ln2/2, p the degree-6 Taylor polynomial
// (relative error ~2.3e-7 against libm). n is rounded with the 1.5 * 2^23 trick and 2^n is built
// from its bits, so no float-to-int conversion (which keeps GCC from vectorising) is needed.
// x is clamped to [-87, 88] (no inf, no denormals) and below -87 the result is exactly 0 (so the
// -inf of a masked attention score gives a probability of exactly 0); a NaN stays NaN.
// GELU (layers.c) and attention's softmax (attention.c) use it.
static inline float exp_vec(float x) {
    float xc = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float t = xc * 1.44269504088896341f + 12582912.0f;      // 1.5 * 2^23: round to an integer
    float n = t - 12582912.0f;
    float r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;   // ln2 split in two for exactness
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    uint32_t bits, scale;
    memcpy(&bits, &t, 4);                                  // the low bits of t hold n + 2^22 + 2^23
    scale = (bits - 0x4B400000u + 127u) << 23;
    float f;
    memcpy(&f, &scale, 4);
    return x < -87.0f ? 0.0f : p * f;
}
// exp_vec in the float build; the double build (gradient checks) keeps libm's exp
static inline real exp_fast(real x) { return sizeof(real) == sizeof(float) ? (real)exp_vec((float)x) : exp(x); }

// OpenMP's thread count and this thread's number (1 and 0 without OpenMP)
static inline int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
static inline int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

#endif
