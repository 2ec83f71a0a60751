// kernels.h: the matrix products of the model, blocked for the caches and vectorised.
//
// gemm: C (M,N) = or += A (M,K) @ B (K,N), where A(i,k) = a[i*a_rs + k*a_cs] (any strides, so a
// transposed A costs nothing) and B, C are row-major with leading dimensions ldb, ldc.
// Vectorised with GCC vector extensions (64-byte vectors: AVX-512 with -march on a machine that
// has it, two AVX2 registers or plain SSE/C otherwise), 6 x (2 vectors) register tiles.
// OpenMP threads split the rows of C; the sum over k always runs in the same order, so results
// are bit-reproducible for a given thread count (and independent of it).
#ifndef KERNELS_H
#define KERNELS_H

#include "common.h"

void gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
          real *c, size_t ldc, int accumulate);
// Our kernel, whatever the backend (with make BLAS=openblas, gemm calls OpenBLAS instead).
void gemm_own(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate);
const char *gemm_backend(void);   // "ours (...)" or "openblas"

// The same product on the calling thread only, without copying B: for small operands already in
// cache (attention's tiles, model.c), called from inside a parallel region. Any M, N, K.
void gemm_tile(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
               real *c, size_t ldc, int accumulate);

// The reference every kernel test compares with: the definition, one dot product per element.
void gemm_ref(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate);

#endif
