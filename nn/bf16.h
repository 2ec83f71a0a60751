// nn/bf16.h: --precision bf16, the matrix products of the linear layers with bf16 operands.
//
// bf16 is the top half of an IEEE float: 8 exponent bits like fp32, 7 stored mantissa bits. An
// operand is rounded to bf16 (to nearest, ties to even); the product of two bf16 numbers is exact in
// fp32 (8 x 8 significant bits), and products are accumulated in fp32. Everything else stays fp32:
// master weights, gradients, layernorm, softmax, attention, the loss and AdamW.
//
// gemm_bf16 computes C (M,N) = or += bf16(A) (M,K) @ bf16(B) (K,N) with A(i,k) = a[i*a_rs + k*a_cs]
// and B(k,j) = b[k*b_rs + j*b_cs] (any strides: a transposed weight costs nothing extra, since the
// operands are copied anyway), C row-major with leading dimension ldc. The path that computes it is
// chosen once, at the first call, from what the CPU and the kernel allow (cpuid, XCR0, and for AMX
// Linux's permission), unless PEGPT_BF16_PATH forces one:
//   amx         Intel's tile unit (AMX-BF16: Sapphire Rapids, Emerald Rapids, Granite Rapids):
//               TDPBF16PS multiplies a 16 x 32 tile of A by a 32 x 16 tile of B into 16 x 16 fp32
//               sums, pairs of k first; 2 x 2 such C tiles (32 x 32) per block of C. Needs AMX-TILE,
//               AMX-BF16, the OS's tile state in XCR0, and Linux's permission to use it (asked once
//               with arch_prctl(ARCH_REQ_XCOMP_PERM); a refusal falls back to the next path).
//   avx512bf16  VDPBF16PS (AMD Zen 4/5, Intel Cooper Lake, Sapphire Rapids and later): 32 bf16
//               products per instruction, summed in pairs into 16 fp32 lanes; operands packed
//               as bf16 pairs along k. Needs AVX512F + AVX512_BF16 and the OS's zmm state.
//   portable    any CPU: the operands rounded to bf16 (kept as floats) and then the fp32 gemm
//               (nn/kernels.c): the same numbers as bf16 operands, no speed-up.
//   avx512bf16-emulated, amx-emulated
//               for the tests: a fast path's code (packing, tiles, edges, threads) with its bf16
//               instructions replaced by plain arithmetic with the same pairing (for AMX, also its
//               tile registers and configuration, checked as the hardware checks them), so the code
//               of both fast paths runs on any CPU (slowly).
// The paths sum in different orders (pairs of k first, or k in order), so they agree to fp32
// accumulation error, not bit for bit; each path is deterministic and independent of the thread
// count.
#ifndef BF16_H
#define BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/common.h"

typedef enum { BF16_PORTABLE, BF16_AVX512, BF16_AVX512_EMULATED, BF16_AMX, BF16_AMX_EMULATED, BF16_N_PATHS } Bf16Path;

// The float nearest to x with a bf16 mantissa (ties to even), as its 16 bits or as a float.
// NaN stays NaN (quiet), infinities stay infinite, and a finite x beyond the largest bf16 rounds to
// infinity (as the hardware's conversion does).
static inline uint16_t bf16_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, nan = (u >> 16) | 0x40u;   // a NaN stays a NaN
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);   // (a select, not a branch: loops vectorize)
}
static inline float bf16_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline float bf16_round(float x) { return bf16_float(bf16_bits(x)); }

// The path gemm_bf16 uses (chosen at the first call; PEGPT_BF16_PATH=amx|avx512bf16|portable|
// avx512bf16-emulated|amx-emulated forces one, and a forced path the CPU cannot run stops the
// program with a message), and why.
Bf16Path bf16_path(void);
const char *bf16_path_name(Bf16Path p);
const char *bf16_path_reason(void);
// 1 when the CPU and the OS can run the avx512bf16 path.
int bf16_cpu_has_avx512bf16(void);
// 1 when the packers may round with VCVTNE2PS2BF16: AVX512_BF16 as above, with AVX512BW and AVX512DQ.
int bf16_cpu_has_convert(void);
// 1 when the CPU has AMX-TILE and AMX-BF16 and the OS enables the tile state in XCR0 (Linux's
// permission is asked only when the amx path is chosen).
int bf16_cpu_has_amx(void);
// 1 when the amx path can run: the CPU has it and Linux granted the tile state (asked here, once;
// the answer, with the kernel's reason for a refusal, is in why when given).
int bf16_amx_usable(const char **why);
// 1 when this CPU (and build) can run path p.
int bf16_path_runs(Bf16Path p);
// For tests: the path the next gemm_bf16 calls use (any path bf16_path_runs); returns the old one.
Bf16Path bf16_set_path(Bf16Path p);

void gemm_bf16(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs, size_t b_cs,
               real *c, size_t ldc, int accumulate);

// Seconds spent so far packing (or, on the portable path, rounding) the operands of gemm_bf16,
// outside the bf16 instructions: the part of each product that a faster path does not shorten.
// (Where the threads pack inside the product, the fused route below, their mean time counts.)
double bf16_pack_seconds(void);

// For tests: whether the avx512bf16 paths (and their emulation) may pack B inside the product, each
// thread the panels it runs against into its own buffer (the fused route, on by default; taken when A
// is at most 1024 rows) rather than all of B in a pass ahead of it. Every element's sum runs over the
// same k blocks in the same order: the same bits either way. Returns the old setting.
int bf16_set_fused(int on);

// For tests: whether the vectorised packers (the avx512bf16 and amx paths) round to bf16 with
// VCVTNE2PS2BF16 (on by default where bf16_cpu_has_convert) or with integer arithmetic. The same bits
// either way: the instruction reads a subnormal float as 0, so a run of 32 floats that holds one is
// rounded the integer way. Returns the old setting; on a CPU without the instruction it stays off.
int bf16_set_pack_convert(int on);

// For tests: one operand packed alone, as the products pack it, by the scalar packer (how 0), the
// AVX-512 one with integer rounding (1: a CPU with AVX512_BF16) or with VCVTNE2PS2BF16 (2:
// bf16_cpu_has_convert). `rows` rows of K numbers, row r's k-th at x[r * rs + k * cs]: as A (b_side 0:
// rows of ceil(K/2) words, each a pair along k, into out) or as B^T (b_side 1: panels of 32 columns,
// ceil(rows/32) * ceil(K/2) * 32 words).
void bf16_pack_for_test(int how, int b_side, int rows, int K, const real *x, size_t rs, size_t cs, uint32_t *out);

// For tests: misuse the emulated tile unit the way the hardware faults (0: a tile instruction before
// a configuration; 1: TDPBF16PS on tiles whose shapes disagree; 2: a configuration with palette 0);
// each stops the program.
void bf16_amx_emulator_misuse(int which);

// A VDPBF16PS loop on every thread (the avx512bf16 peak, GFLOP/s counting 2 per product); 0 when
// the CPU has no AVX512_BF16.
double bf16_peak_gflops(double seconds);
// A TDPBF16PS loop on every thread (the amx peak); 0 when the amx path cannot run.
double bf16_amx_peak_gflops(double seconds);

#endif
