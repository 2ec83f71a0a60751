// nn/kernels.h: what the layers and attention share to compute: the matrix products (blocked for the
// caches, vectorised), an exp the compiler vectorises, dropout's masks, and the OpenMP thread helpers.
//
// gemm: C (M,N) = or += A (M,K) @ B (K,N), where A(i,k) = a[i*a_rs + k*a_cs] (any strides, so a
// transposed A costs nothing) and B, C are row-major with leading dimensions ldb, ldc (gemm_bt: B
// through strides too). Blocked after BLIS: K in blocks of kc, C in items of mc rows x nc columns,
// sized from the L1 and L2 caches cpuid reports; per item the B chunk is copied into panels of nr
// columns (transposed on the way when B is) and a transposed A into panels of mr rows; the
// micro-kernel keeps an mr x nr tile of C in registers for a whole K block. The micro-kernel is
// chosen at run time from the CPU: AVX-512 (12 x 32), AVX2 with FMA (6 x 16), or the generic one
// for what -march gives the build (PEGPT_GEMM_PATH=avx512|avx2|generic forces one). OpenMP threads
// split the items statically, in proportion to their learned speeds; every element of C is one chain
// of multiply-adds over k in order, whatever the path, the blocking, the thread count or the split,
// so results are bit-reproducible and the same on every path.
#ifndef KERNELS_H
#define KERNELS_H

#include "util/common.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void gemm(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
          real *c, size_t ldc, int accumulate);
// The same with B read through strides too, B(k,j) = b[k*b_rs + j*b_cs]: the forward's weight^T
// (b_rs = 1, b_cs = C) is read in place, since gemm copies its operands into panels anyway.
void gemm_bt(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs, size_t b_cs,
             real *c, size_t ldc, int accumulate);
// Our kernel, whatever the backend (with make BLAS=openblas, gemm calls OpenBLAS instead).
void gemm_own(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs, size_t b_cs,
              real *c, size_t ldc, int accumulate);
const char *gemm_backend(void);   // "ours (path: tile)" or "openblas"
// gemm_own splits each product's work over the threads in proportion to their speeds, learned from
// the products so far (a core shared with another process gets less); the split never changes the
// bits. For tests: set the relative speeds of a team of nth threads (they are learned again after).
void gemm_thread_speeds(int nth, const double *speeds);

// How gemm_own blocks its products (chosen with the path, from the caches cpuid reports): K in
// blocks of kc, C in items of mc rows x nc columns; the L1 data and L2 cache sizes it used.
typedef struct { int kc, mc, nc, nc_t; size_t l1d, l2; } GemmBlocking;   // nc_t: columns of a chunk when a transposed A is packed
GemmBlocking gemm_blocking(void);
// Forces gemm_own's micro-kernel path ("generic", "avx2", "avx512"; NULL: back to PEGPT_GEMM_PATH
// or the CPU's widest), for tests; 0 (and no change) if this CPU or build cannot run it.
int gemm_set_path(const char *name);

// The same product on the calling thread only, without copying B: for small operands already in
// cache (attention's tiles, nn/attention.c), called from inside a parallel region. Any M, N, K.
void gemm_tile(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
               real *c, size_t ldc, int accumulate);

// dst (cols, ldd) = src (rows, lds) transposed: dst[c * ldd + r] = src[r * lds + c] for r < rows,
// c < cols; copies only, so any path gives the same numbers (attention's blocks of q, dout and out)
void transpose_block(real *dst, size_t ldd, const real *src, size_t lds, int rows, int cols);

// C (M,N) = A (M,K) @ B (K,N), B row-major: rows of A one at a time with 8 vectors of C in registers,
// for one or a few rows (decoding against transposed weights, nn/layers.c matmul_forward_wt); the
// calling thread only, overwriting C; each element the same multiply-add chain as gemm_tile's.
void gemm_rows(int M, int N, int K, const real *a, size_t a_rs, const real *b, size_t ldb, real *c, size_t ldc);

// a * b + c as gemm's register tiles compute it: one fused multiply-add where the target has FMA
// (the compiler contracts the tiles' vector a * b + c there, -ffp-contract=fast), else a product and
// a sum. matmul_forward's few-rows path uses it, so every element of a product is the same chain of
// operations whichever path computes it.
static inline real madd(real a, real b, real c) {
#if defined(__FMA__) || defined(__aarch64__)
    return _Generic(a, float: __builtin_fmaf, default: __builtin_fma)(a, b, c);
#else
    return a * b + c;
#endif
}

// The reference every kernel test compares with: the definition, one dot product per element.
void gemm_ref(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t ldb,
              real *c, size_t ldc, int accumulate);

// exp for floats in a form the compiler vectorises (libm's expf/tanhf are scalar calls without
// -ffast-math): 2^n * p(r), x = n ln2 + r, |r| <= ln2/2, p the degree-6 Taylor polynomial
// (relative error ~2.3e-7 against libm). n is rounded with the 1.5 * 2^23 trick and 2^n is built
// from its bits, so no float-to-int conversion (which keeps GCC from vectorising) is needed.
// x is clamped to [-87, 88] (no inf, no denormals) and below -87 the result is exactly 0 (so the
// -inf of a masked attention score gives a probability of exactly 0); a NaN stays NaN.
// GELU (nn/layers.c) and attention's softmax (nn/attention.c) use it.
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

// Dropout masks, counter-based: whether element (row, col) of a site is kept is a hash of the
// site's key, the row and the column, so nothing is stored (a backward regenerates its forward's
// mask), the thread count and order change nothing, and the same key gives the same mask on any
// run (a resumed run, the perturbed forwards of a finite-difference check). A row's key is 64-bit
// mixing of (site key, row); the column step is 32-bit so that a row of elements vectorises
// (murmur3's finaliser: 32-bit multiplies, which AVX2 has).
static inline uint64_t mix64(uint64_t z) {                 // splitmix64's finaliser
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint32_t mix32(uint32_t h) {                 // murmur3's fmix32
    h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u;
    return h ^ (h >> 16);
}
// the 32-bit key of row `row` of the site with key `site`
static inline uint32_t drop_row_key(uint64_t site, uint64_t row) { return (uint32_t)mix64(site + (row + 1) * 0x9E3779B97F4A7C15ull); }
// the threshold that drops a fraction p (0 <= p < 1) of the elements: threshold / 2^32 = p to 2^-32
static inline uint32_t drop_threshold(double p) { return (uint32_t)(p * 4294967296.0); }
// 1: element `col` of the row with key row_key is kept
static inline int drop_keep(uint32_t row_key, uint32_t col, uint32_t threshold) {
    return mix32(row_key ^ (col * 0x9E3779B9u)) >= threshold;
}

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
// the number of threads in the current team (1 outside a parallel region and without OpenMP)
static inline int team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

#endif
