// nn/bf16.c: the bf16 matrix products (see nn/bf16.h): packing, the VDPBF16PS kernel and its
// emulation, the AMX tiles and their emulation, the portable path, the amx peak. Which path runs is
// chosen in nn/bf16_cpu.c.
#include "nn/bf16.h"

#include "nn/kernels.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#define BF16_X86 1
#endif

// ----------------------------------------------------------------------------------------------
// Scratch for the operand copies, kept from call to call. The copies are up to a chunk of each
// operand (K x 2048 and 1024 x K values), and memory fresh from the system costs a page fault and a
// zeroed page per 4 KiB at every product: on gpt2-124m that was 4% of a bf16 step. Two slots (A's
// copy and B's), grown to the largest product so far, never shrunk; a call from inside a parallel
// region (none today) gets its own memory.
typedef struct { void *p; int owned; } Scratch;

static Scratch scratch_take(int slot, size_t bytes) {
    static void *buf[2];
    static size_t cap[2];
#ifdef _OPENMP
    if (omp_in_parallel()) return (Scratch){ xmalloc(bytes), 1 };
#endif
    if (bytes > cap[slot]) {
        free(buf[slot]);
        buf[slot] = xmalloc(bytes);
        cap[slot] = bytes;
    }
    return (Scratch){ buf[slot], 0 };
}
static void scratch_give(Scratch s) { if (s.owned) free(s.p); }

// Seconds spent packing or rounding operands (bf16_pack_seconds), counted on calls from outside a
// parallel region: the part of a product that a faster bf16 instruction does not shorten.
static double g_pack_seconds;

static void pack_time(double t0) {
#ifdef _OPENMP
    if (omp_in_parallel()) return;
#endif
    g_pack_seconds += now_seconds() - t0;
}
double bf16_pack_seconds(void) { return g_pack_seconds; }

// whether the avx512bf16 paths take the fused route when they can (gemm_fused below); off only in tests
static int g_fused = 1;
int bf16_set_fused(int on) {
    int old = g_fused;
    g_fused = on != 0;
    return old;
}

// ----------------------------------------------------------------------------------------------
// The packed kernels (float build only)

enum { BF_MR = 8, BF_MB = 64, BF_KQ = 256 };   // rows of a register tile; rows of a work item; k pairs per block
enum { M_CHUNK = 1024, N_CHUNK = 2048 };         // rows of A, columns of B packed at a time

// Panels of B (BF_KQ x 32 words, 32 KiB) a work item of the packed product runs against in turn:
// as many as fill half of L2 (from cpuid, as gemm_own's blocking), at least one
static int bf16_group_panels(void) {
    static int n;
    if (!n) {
        size_t l2 = gemm_blocking().l2, panel = sizeof(uint32_t) * BF_KQ * 32;
        n = l2 / 2 / panel > 0 ? (int)(l2 / 2 / panel) : 1;
    }
    return n;
}

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
#include "nn/bf16_tile.inc"
#undef NAME
#undef TILE_ATTR
#undef DP

#ifdef BF16_X86
#define NAME avx512
#define TILE_ATTR __attribute__((target("avx512f,avx512bf16")))
#define DP(acc, a, b) ((v16f)_mm512_dpbf16_ps((__m512)(acc), (__m512bh)(a), (__m512bh)(b)))
#include "nn/bf16_tile.inc"
#undef NAME
#undef TILE_ATTR
#undef DP
#endif

// ---- AMX tiles

// The tile configuration (palette 1): all 8 tiles 16 rows of 64 bytes (bf16_amx.inc says what each
// holds). Its 64-byte layout is the architecture's: palette, start row, 14 reserved bytes, then
// bytes per row of tiles 0..15, then rows of tiles 0..15; unused tiles 0.
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} AmxConfig;
_Static_assert(sizeof(AmxConfig) == 64, "the tile configuration is 64 bytes");
static const _Alignas(64) AmxConfig amx_config = {
    .palette = 1,
    .colsb = { 64, 64, 64, 64, 64, 64, 64, 64 },
    .rows = { 16, 16, 16, 16, 16, 16, 16, 16 },
};

// The emulated tile unit: a thread's 8 tile registers and its configuration, with the faults the
// hardware raises (#UD, #GP) as stops: an instruction before a configuration, a configuration
// outside palette 1's limits, a TDPBF16PS whose shapes disagree or whose tiles coincide. Loads
// and stores move rows x colsb bytes at the given stride, as the hardware does, and a load zeroes
// the rest of the register.
static _Thread_local struct {
    int configured;
    uint16_t colsb[8];
    uint8_t rows[8];
    _Alignas(64) uint8_t t[8][16][64];
} emu;

static void emu_config(const AmxConfig *cfg) {
    CHECK(cfg->palette == 1 && cfg->start_row == 0, "amx-emulated: ldtilecfg: palette %d, start row %d: give palette 1 from row 0",
          cfg->palette, cfg->start_row);
    for (int i = 0; i < 14; i++) CHECK(cfg->reserved[i] == 0, "amx-emulated: ldtilecfg: reserved byte %d is not 0", i + 2);
    for (int i = 0; i < 16; i++) {
        int used = cfg->rows[i] || cfg->colsb[i];
        CHECK(i < 8 || !used, "amx-emulated: ldtilecfg: tile %d does not exist in palette 1", i);
        CHECK(!used || (cfg->rows[i] && cfg->rows[i] <= 16 && cfg->colsb[i] && cfg->colsb[i] <= 64 && cfg->colsb[i] % 4 == 0),
              "amx-emulated: ldtilecfg: tile %d is %d rows of %d bytes (at most 16 rows of 64 bytes, a multiple of 4 bytes, or "
              "both 0)", i, cfg->rows[i], cfg->colsb[i]);
        if (i < 8) { emu.rows[i] = cfg->rows[i]; emu.colsb[i] = cfg->colsb[i]; }
    }
    memset(emu.t, 0, sizeof emu.t);
    emu.configured = 1;
}
static void emu_use(int t) {
    CHECK(emu.configured, "amx-emulated: a tile instruction before ldtilecfg");
    CHECK(emu.rows[t], "amx-emulated: tile %d is not configured", t);
}
static void emu_load(int t, const void *base, long stride) {
    emu_use(t);
    memset(emu.t[t], 0, sizeof emu.t[t]);
    for (int r = 0; r < emu.rows[t]; r++) memcpy(emu.t[t][r], (const uint8_t *)base + r * stride, emu.colsb[t]);
}
static void emu_store(int t, void *base, long stride) {
    emu_use(t);
    for (int r = 0; r < emu.rows[t]; r++) memcpy((uint8_t *)base + r * stride, emu.t[t][r], emu.colsb[t]);
}
static void emu_zero(int t) { emu_use(t); memset(emu.t[t], 0, sizeof emu.t[t]); }
// bf16 half h of a 32-bit word as a float, a denormal as 0 (TDPBF16PS treats input denormals as 0)
static float emu_half(const uint8_t *word, int h) {
    uint16_t v;
    memcpy(&v, word + 2 * h, 2);
    return (v & 0x7f80) == 0 ? 0.0f * bf16_float(v) : bf16_float(v);
}
// TDPBF16PS's definition (Intel's intrinsics guide): for each row m of C, word k of A's row, column n:
// C(m,n) += A(m,k).lo B(k,n).lo, then += A(m,k).hi B(k,n).hi, in fp32 with round to nearest even,
// denormal results flushed to 0.
static void emu_dp(int c, int a, int b) {
    emu_use(c); emu_use(a); emu_use(b);
    CHECK(c != a && c != b && a != b, "amx-emulated: TDPBF16PS tmm%d, tmm%d, tmm%d: the tiles must differ", c, a, b);
    CHECK(emu.rows[c] == emu.rows[a] && emu.colsb[c] == emu.colsb[b] && emu.colsb[a] == 4 * emu.rows[b],
          "amx-emulated: TDPBF16PS tmm%d (%dx%d bytes), tmm%d (%dx%d), tmm%d (%dx%d): the shapes disagree", c, emu.rows[c],
          emu.colsb[c], a, emu.rows[a], emu.colsb[a], b, emu.rows[b], emu.colsb[b]);
    for (int m = 0; m < emu.rows[c]; m++)
        for (int n = 0; n < emu.colsb[c] / 4; n++) {
            float acc;
            memcpy(&acc, emu.t[c][m] + 4 * n, 4);
            for (int k = 0; k < emu.colsb[a] / 4; k++) {
                acc += emu_half(emu.t[a][m] + 4 * k, 0) * emu_half(emu.t[b][k] + 4 * n, 0);   // exact products:
                acc += emu_half(emu.t[a][m] + 4 * k, 1) * emu_half(emu.t[b][k] + 4 * n, 1);   // fused or not, one sum
                if (fabsf(acc) < FLT_MIN) acc = 0.0f * acc;
            }
            memcpy(emu.t[c][m] + 4 * n, &acc, 4);
        }
}
static void emu_release(void) { emu.configured = 0; memset(emu.t, 0, sizeof emu.t); }

void bf16_amx_emulator_misuse(int which) {
    AmxConfig bad = amx_config;
    emu_release();
    if (which == 0) emu_zero(0);                   // before any ldtilecfg
    else if (which == 1) {                         // A's tile 8 rows against C's 16
        bad.rows[4] = 8;
        emu_config(&bad);
        emu_dp(0, 4, 6);
    } else {                                       // palette 0 (no tiles)
        bad.palette = 0;
        emu_config(&bad);
    }
}

#define NAME amx_emulated
#define T_CONFIG(cfg) emu_config(cfg)
#define T_RELEASE() emu_release()
#define T_LOAD(t, base, stride) emu_load(t, base, stride)
#define T_STORE(t, base, stride) emu_store(t, base, stride)
#define T_ZERO(t) emu_zero(t)
#define T_DP(c, a, b) emu_dp(c, a, b)
#include "nn/bf16_amx.inc"                // (which undefines NAME and T_*)

#ifdef BF16_X86
// The instructions themselves, as inline assembly (AT&T operand order: sources first). Each load
// and store tells the compiler it touches memory, so C's stores before a tile load (the edge
// copy) are not moved past it.
#define NAME amx
#define T_CONFIG(cfg) __asm__ volatile("ldtilecfg %0" ::"m"(*(const AmxConfig *)(cfg)))
#define T_RELEASE() __asm__ volatile("tilerelease" ::: "memory")
#define T_LOAD(t, base, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"((long)(stride)) : "memory")
#define T_STORE(t, base, stride) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"((long)(stride)) : "memory")
#define T_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define T_DP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#include "nn/bf16_amx.inc"                // (which undefines NAME and T_*)
#endif

enum { PACK_SCALAR, PACK_AVX512, PACK_CVT };   // the packers (pack_kind, below)

static inline uint32_t pair(float lo, float hi) { return (uint32_t)bf16_bits(lo) | (uint32_t)bf16_bits(hi) << 16; }

// rows [i0, i0+m) of A into m rows of Kq words (Kq >= ceil(K/2): the words past K are 0), then
// rows m..mp-1 of zeros (the amx path's padding to a whole tile). Read along A's contiguous
// direction: a row at a time when A is row-major, else (A transposed, as dout^T in the weight
// gradient) 16 rows side by side, so each read of 16 neighbours is one run of memory, not 16 cache
// misses.
static void pack_a_scalar(uint32_t *ap, int m, int mp, int K, int Kq, const real *a, size_t a_rs, size_t a_cs, int i0) {
    enum { RB = 16 };
    int kq = (K + 1) / 2;
    #pragma omp parallel for schedule(static)
    for (int r0 = 0; r0 < m; r0 += RB) {
        int nr = m - r0 < RB ? m - r0 : RB;
        if (a_cs == 1 || a_cs <= a_rs) {
            for (int i = r0; i < r0 + nr; i++) {
                const real *row = a + (size_t)(i0 + i) * a_rs;
                uint32_t *out = ap + (size_t)i * Kq;
                for (int q = 0; q < K / 2; q++) out[q] = pair((float)row[(size_t)(2 * q) * a_cs], (float)row[(size_t)(2 * q + 1) * a_cs]);
                if (K & 1) out[kq - 1] = pair((float)row[(size_t)(K - 1) * a_cs], 0);
            }
        } else {
            for (int q = 0; q < kq; q++) {
                const real *lo = a + (size_t)(2 * q) * a_cs + (size_t)(i0 + r0) * a_rs, *hi = lo + a_cs;
                int has_hi = 2 * q + 1 < K;
                for (int i = 0; i < nr; i++)
                    ap[(size_t)(r0 + i) * Kq + q] = pair((float)lo[(size_t)i * a_rs], has_hi ? (float)hi[(size_t)i * a_rs] : 0);
            }
        }
        if (Kq > kq)
            for (int i = r0; i < r0 + nr; i++) memset(ap + (size_t)i * Kq + kq, 0, sizeof(uint32_t) * (Kq - kq));
    }
    if (mp > m) memset(ap + (size_t)m * Kq, 0, sizeof(uint32_t) * (size_t)(mp - m) * Kq);
}

// Panel p (columns j0 + 32p .. +32) of B, words [qlo, qhi) of k: row q of the panel at
// panel + (q - qlo) * 32, zero past n and past K. Read along B's contiguous direction: 32 columns of
// a row pair at a time when B is row-major, else a column at a time.
static void pack_b_panel_scalar(uint32_t *panel, int p, int qlo, int qhi, int n, int K, const real *b, size_t b_rs,
                                size_t b_cs, int j0) {
    int kq = (K + 1) / 2, nj = n - p * 32 < 32 ? n - p * 32 : 32, qk = qhi < kq ? qhi : kq;
    for (int q = qlo; q < qhi; q++)
        if (q >= kq) memset(panel + (size_t)(q - qlo) * 32, 0, sizeof(uint32_t) * 32);
        else if (nj < 32) memset(panel + (size_t)(q - qlo) * 32 + nj, 0, sizeof(uint32_t) * (32 - nj));
    const real *col0 = b + (size_t)(j0 + p * 32) * b_cs;
    if (b_cs == 1 || b_cs <= b_rs) {
        for (int q = qlo; q < qk; q++) {
            const real *lo = col0 + (size_t)(2 * q) * b_rs, *hi = lo + b_rs;
            int has_hi = 2 * q + 1 < K;
            for (int jj = 0; jj < nj; jj++)
                panel[(size_t)(q - qlo) * 32 + jj] = pair((float)lo[(size_t)jj * b_cs], has_hi ? (float)hi[(size_t)jj * b_cs] : 0);
        }
    } else {
        for (int jj = 0; jj < nj; jj++) {
            const real *col = col0 + (size_t)jj * b_cs;
            for (int q = qlo; q < qk; q++)
                panel[(size_t)(q - qlo) * 32 + jj] = pair((float)col[(size_t)(2 * q) * b_rs], 2 * q + 1 < K ? (float)col[(size_t)(2 * q + 1) * b_rs] : 0);
        }
    }
}

#ifdef BF16_X86
// The same packing, 16 words per vector, for the paths that run on AVX-512 anyway (avx512bf16 and
// amx): the same bits as pack_a_scalar and pack_b_panel_scalar above, the rounding written with integer
// vector arithmetic (round16) or, where the CPU has it, VCVTNE2PS2BF16 (below); the packers themselves
// are nn/bf16_pack.inc, included once for each. The emulated paths keep the scalar packing, and
// test_bf16 checks every packer against it word for word. Blocks of 16 x 16 words that are read along
// one direction and written along the other are turned in registers (tr16); what is left at the edges
// goes one word at a time.
#define AVX512_ATTR __attribute__((target("avx512f,avx512bw")))

// the bf16 bits of 16 floats, one per 32-bit lane (bf16_bits: to nearest, ties to even; a NaN stays one)
static inline AVX512_ATTR __m512i round16(const real *x) {
    __m512i u = _mm512_castps_si512(_mm512_loadu_ps(x)), one = _mm512_set1_epi32(1);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                                   _mm512_and_si512(_mm512_srli_epi32(u, 16), one)), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
}
// 16 words from 16 (lo, hi) pairs of two runs of floats
static inline AVX512_ATTR __m512i pairs16(const real *lo, const real *hi) {
    return _mm512_or_si512(round16(lo), _mm512_slli_epi32(round16(hi), 16));
}
// 16 words from 32 consecutive floats (x[0], x[1]), (x[2], x[3]), ...
static inline AVX512_ATTR __m512i run16(const real *x) {
    __m256i lo = _mm512_cvtepi32_epi16(round16(x)), hi = _mm512_cvtepi32_epi16(round16(x + 16));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// r[i][j] <-> r[j][i], 16 x 16 words
static inline AVX512_ATTR void tr16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) { t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]); t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]); }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]); r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]); r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 16; i += 8)
        for (int m = 0; m < 4; m++) {
            t[i + m] = _mm512_shuffle_i32x4(r[i + m], r[i + 4 + m], 0x88);
            t[i + 4 + m] = _mm512_shuffle_i32x4(r[i + m], r[i + 4 + m], 0xdd);
        }
    for (int m = 0; m < 8; m++) { r[m] = _mm512_shuffle_i32x4(t[m], t[8 + m], 0x88); r[8 + m] = _mm512_shuffle_i32x4(t[m], t[8 + m], 0xdd); }
}

// word q of packed row i of A (rows from i0): A(i0+i, 2q) and A(i0+i, 2q+1), 0 past K
static inline uint32_t a_word(const real *a, size_t a_rs, size_t a_cs, int i, int q, int K) {
    const real *x = a + (size_t)i * a_rs + (size_t)(2 * q) * a_cs;
    return pair((float)x[0], 2 * q + 1 < K ? (float)x[a_cs] : 0);
}

// VCVTNE2PS2BF16 rounds 32 floats to bf16 in one instruction, to nearest even, a NaN to the same quiet
// NaN as bf16_bits; but it reads a subnormal float as 0, where bf16_bits keeps its rounded bits. So a
// run of 32 with a subnormal among them (fpclass) goes the integer way: the same bits either way.
#define CVT_ATTR __attribute__((target("avx512f,avx512bw,avx512dq,avx512bf16")))
static inline CVT_ATTR int has_subnormal(__m512 x, __m512 y) {
    return (_mm512_fpclass_ps_mask(x, 0x20) | _mm512_fpclass_ps_mask(y, 0x20)) != 0;
}
// run16's words: bf16 lane 2j is x[2j], lane 2j + 1 is x[2j + 1], as the instruction lays them out
static inline CVT_ATTR __m512i run16_cvt(const real *x) {
    __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
    if (__builtin_expect(has_subnormal(lo, hi), 0)) return run16(x);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}
// pairs16's words: the two runs rounded side by side (lo in lanes 0-15, hi in 16-31), then interleaved
static inline CVT_ATTR __m512i pairs16_cvt(const real *lo, const real *hi) {
    __m512 x = _mm512_loadu_ps(lo), y = _mm512_loadu_ps(hi);
    if (__builtin_expect(has_subnormal(x, y), 0)) return pairs16(lo, hi);
    const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5,
                                           20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(order, (__m512i)_mm512_cvtne2ps_pbh(y, x));
}

#define PK_A pack_a_avx512
#define PK_B pack_b_panel_avx512
#define PK_ATTR AVX512_ATTR
#define PK_RUN16 run16
#define PK_PAIRS16 pairs16
#include "nn/bf16_pack.inc"
#define PK_A pack_a_cvt
#define PK_B pack_b_panel_cvt
#define PK_ATTR CVT_ATTR
#define PK_RUN16 run16_cvt
#define PK_PAIRS16 pairs16_cvt
#include "nn/bf16_pack.inc"

#endif

// The packers a path uses (pack_kind): the AVX-512 ones on the paths that run on AVX-512 anyway
// (avx512bf16 and amx), rounding with VCVTNE2PS2BF16 where the CPU has it (with AVX512DQ's fpclass)
// unless a test turned that off; the scalar ones on the emulated paths, whose agreement with the
// others test_bf16 checks.
static int g_pack_cvt = -1;                    // -1: the CPU's answer, not asked yet; 0: off; 1: on
static int pack_cvt_on(void) {
    if (g_pack_cvt < 0) g_pack_cvt = bf16_cpu_has_convert();
    return g_pack_cvt;
}
int bf16_set_pack_convert(int on) {
    int old = pack_cvt_on();
    g_pack_cvt = on && bf16_cpu_has_convert();
    return old;
}
static int pack_kind(Bf16Path path) {
    if (path != BF16_AVX512 && path != BF16_AMX) return PACK_SCALAR;
    return pack_cvt_on() ? PACK_CVT : PACK_AVX512;
}
static void pack_a(int vec, uint32_t *ap, int m, int mp, int K, int Kq, const real *a, size_t a_rs, size_t a_cs, int i0) {
#ifdef BF16_X86
    if (vec) {                                   // blocks of 16 rows over the threads, as pack_a_scalar's
        const real *a0 = a + (size_t)i0 * a_rs;
        #pragma omp parallel for schedule(static)
        for (int r0 = 0; r0 < m; r0 += 16) {
            int nr = m - r0 < 16 ? m - r0 : 16;
            if (vec == PACK_CVT) pack_a_cvt(ap, r0, nr, K, Kq, a0, a_rs, a_cs);
            else pack_a_avx512(ap, r0, nr, K, Kq, a0, a_rs, a_cs);
        }
        if (mp > m) memset(ap + (size_t)m * Kq, 0, sizeof(uint32_t) * (size_t)(mp - m) * Kq);
        return;
    }
#endif
    (void)vec;
    pack_a_scalar(ap, m, mp, K, Kq, a, a_rs, a_cs, i0);
}
static void pack_b_panel(int vec, uint32_t *panel, int p, int qlo, int qhi, int n, int K, const real *b, size_t b_rs,
                         size_t b_cs, int j0) {
#ifdef BF16_X86
    if (vec == PACK_CVT) { pack_b_panel_cvt(panel, p, qlo, qhi, n, K, b, b_rs, b_cs, j0); return; }
    if (vec) { pack_b_panel_avx512(panel, p, qlo, qhi, n, K, b, b_rs, b_cs, j0); return; }
#endif
    (void)vec;
    pack_b_panel_scalar(panel, p, qlo, qhi, n, K, b, b_rs, b_cs, j0);
}
// columns [j0, j0+n) of B into panels of 32 columns and Kq rows of words (all of k), zero past n
// and past K
static void pack_b(int vec, uint32_t *bp, int n, int K, int Kq, const real *b, size_t b_rs, size_t b_cs, int j0) {
    int np = (n + 31) / 32;
    #pragma omp parallel for schedule(static)
    for (int p = 0; p < np; p++) pack_b_panel(vec, bp + (size_t)p * Kq * 32, p, 0, Kq, n, K, b, b_rs, b_cs, j0);
}

void bf16_pack_for_test(int how, int b_side, int rows, int K, const real *x, size_t rs, size_t cs, uint32_t *out) {
    CHECK(how == PACK_SCALAR || (how == PACK_AVX512 && bf16_path_runs(BF16_AVX512)) ||
          (how == PACK_CVT && bf16_cpu_has_convert()), "bf16_pack_for_test: packer %d cannot run on this CPU", how);
    int Kq = (K + 1) / 2;
    if (b_side) pack_b(how, out, rows, K, Kq, x, cs, rs, 0);   // B (K, rows): B(k, j) = x[j * rs + k * cs]
    else pack_a(how, out, rows, rows, K, Kq, x, rs, cs, 0);
}

// The fused route (avx512bf16 and its emulation, when A is one chunk, as in every product of
// gpt2-124m's B4 T64 forward and dX at 256 rows): no pass packs B ahead of the product. Each thread
// packs the panels of B its own items run against, one group (half of L2) and one block of k at a
// time, into a buffer of its own, just before it runs them: the packed words are written to the
// thread's L2 and read from there, where a chunk packed ahead (K x 2048 columns, megabytes; all of
// W at the LM head's dX, 77 MB) went out to memory and came back, half of it packed by the other
// core. A thread's items (group, row block) run group by group, the group's k blocks in order
// inside, so its tiles of C stay in cache from one k block to the next (a k loop around all items
// passed the LM head's 51 MB of C through memory once per block). The groups are made a multiple
// of the thread count, so each thread owns whole groups and packs no panel twice (unless there are
// fewer panels than threads, or the region gets fewer threads than it asked for: then two threads
// may pack the same group, which costs time, not bits). Every element's sum runs over the same k
// blocks in the same order, from the same start, as on the chunked route (the groups and chunks
// only decide which thread computes it): the same bits (test_bf16 checks). A is
// packed ahead as before, and every thread reads all of it: at 2048 rows (small's products) that
// doubled A's traffic and ran 0.8-0.9x on its products of 384 columns, so a larger A keeps the
// chunked path.
typedef void (*ItemFn)(int i0, int i1, int nq, const uint32_t *ap, size_t lda, const uint32_t *panel, float *c,
                       size_t ldc, int ncols, int accumulate);

// one buffer of at least `words` words per thread (a group of panels for one block of k: half of
// L2), kept from call to call as scratch_take's are
static uint32_t **thread_buffers(int nt, size_t words) {
    static uint32_t **bufs;
    static int nbuf;
    static size_t cap;
    if (nt > nbuf || words > cap) {
        for (int t = 0; t < nbuf; t++) free(bufs[t]);
        free(bufs);
        nbuf = nt > nbuf ? nt : nbuf;
        cap = words > cap ? words : cap;
        bufs = xmalloc(sizeof(uint32_t *) * (size_t)nbuf);
        for (int t = 0; t < nbuf; t++) bufs[t] = xmalloc(sizeof(uint32_t) * cap);
    }
    return bufs;
}

static void packed_fused(ItemFn item, int vec, int M, int N, int K, int Kq, const uint32_t *ap, const real *b, size_t b_rs,
                         size_t b_cs, float *c, size_t ldc, int accumulate) {
    int np = (N + 31) / 32, nrb = (M + BF_MB - 1) / BF_MB, gp = bf16_group_panels(), ng = (np + gp - 1) / gp;
    int nt = max_threads();
    while (ng < np && ng % nt != 0) ng++;        // whole groups per thread (as many as there are panels)
    uint32_t **bufs = thread_buffers(nt, (size_t)((np + ng - 1) / ng) * BF_KQ * 32);
    double pack_s = 0;
    int team = 1;
    #pragma omp parallel reduction(+ : pack_s)
    {
        int t = thread_id(), nth = 1;
#ifdef _OPENMP
        nth = omp_get_num_threads();
#endif
        if (t == 0) team = nth;
        uint32_t *buf = bufs[t];
        long items = (long)ng * nrb, lo = items * t / nth, hi = items * (t + 1) / nth;   // this thread's (g, ib), g-major
        for (long it = lo; it < hi;) {
            int g = (int)(it / nrb), ib0 = (int)(it % nrb), ib1 = hi - it < nrb - ib0 ? ib0 + (int)(hi - it) : nrb;
            int p0 = (int)((long)np * g / ng), p1 = (int)((long)np * (g + 1) / ng);
            for (int q0 = 0; q0 < Kq; q0 += BF_KQ) {     // the group's k blocks in order: its tiles of C stay in cache
                int nq = Kq - q0 < BF_KQ ? Kq - q0 : BF_KQ, acc = accumulate || q0 > 0;
                double t0 = now_seconds();
                for (int p = p0; p < p1; p++) {
                    pack_b_panel(vec, buf + (size_t)(p - p0) * nq * 32, p, q0, q0 + nq, N, K, b, b_rs, b_cs, 0);
                }
                pack_s += now_seconds() - t0;
                for (int ib = ib0; ib < ib1; ib++) {
                    int i1 = (ib + 1) * BF_MB < M ? (ib + 1) * BF_MB : M;
                    for (int p = p0; p < p1; p++)
                        item(ib * BF_MB, i1, nq, ap + q0, (size_t)Kq, buf + (size_t)(p - p0) * nq * 32, c + (size_t)p * 32,
                             ldc, N - p * 32 < 32 ? N - p * 32 : 32, acc);
                }
            }
            it += ib1 - ib0;
        }
    }
    g_pack_seconds += pack_s / team;            // the threads pack side by side: their mean
}

static void gemm_fused(Bf16Path path, int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b,
                       size_t b_rs, size_t b_cs, real *c, size_t ldc, int accumulate) {
    int Kq = (K + 1) / 2;
    Scratch sa = scratch_take(0, sizeof(uint32_t) * (size_t)M * Kq);
    uint32_t *ap = sa.p;
    double t0 = now_seconds();
    pack_a(pack_kind(path), ap, M, M, K, Kq, a, a_rs, a_cs, 0);   // (the avx512bf16 path or its emulation)
    pack_time(t0);
#ifdef BF16_X86
    if (path == BF16_AVX512)
        packed_fused(item_avx512, pack_kind(path), M, N, K, Kq, ap, b, b_rs, b_cs, (float *)c, ldc, accumulate);
    else
#endif
        packed_fused(item_emulated, PACK_SCALAR, M, N, K, Kq, ap, b, b_rs, b_cs, (float *)c, ldc, accumulate);
    scratch_give(sa);
}

// The packed paths: the fused route above where it applies; else B a chunk of N_CHUNK columns at a
// time, A a chunk of M_CHUNK rows at a time (packed once when A is one chunk). The amx paths pad k
// to whole tiles (16 words) and A's rows to whole 32-row blocks.
static void gemm_packed(Bf16Path path, int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b,
                        size_t b_rs, size_t b_cs, real *c, size_t ldc, int accumulate) {
    int in_par = 0;
#ifdef _OPENMP
    in_par = omp_in_parallel();
#endif
    if (!in_par && g_fused && M <= M_CHUNK && (path == BF16_AVX512 || path == BF16_AVX512_EMULATED)) {
        gemm_fused(path, M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, accumulate);
        return;
    }
    int tiles = path == BF16_AMX || path == BF16_AMX_EMULATED;
    int Kq = (K + 1) / 2, mch = M < M_CHUNK ? M : M_CHUNK, nch = N < N_CHUNK ? N : N_CHUNK;
    if (tiles) { Kq = (Kq + 15) / 16 * 16; mch = (mch + 31) / 32 * 32; }
    Scratch sa = scratch_take(0, sizeof(uint32_t) * (size_t)mch * Kq);
    Scratch sb = scratch_take(1, sizeof(uint32_t) * (size_t)((nch + 31) / 32 * 32) * Kq);
    uint32_t *ap = sa.p, *bp = sb.p;
    int a_once = M <= M_CHUNK;                         // A in one chunk: packed once, not once per chunk of B
    int vec = pack_kind(path);                     // packed with AVX-512 (the emulated paths: in scalar code)
    for (int j0 = 0; j0 < N; j0 += N_CHUNK) {
        int n = N - j0 < N_CHUNK ? N - j0 : N_CHUNK;
        double t0 = now_seconds();
        pack_b(vec, bp, n, K, Kq, b, b_rs, b_cs, j0);
        pack_time(t0);
        for (int i0 = 0; i0 < M; i0 += M_CHUNK) {
            int m = M - i0 < M_CHUNK ? M - i0 : M_CHUNK;
            t0 = now_seconds();
            if (!a_once || j0 == 0) {
                int mp = tiles ? (m + 31) / 32 * 32 : m;
                pack_a(vec, ap, m, mp, K, Kq, a, a_rs, a_cs, i0);
            }
            pack_time(t0);
            float *cp = (float *)c + (size_t)i0 * ldc + j0;
            switch (path) {
#ifdef BF16_X86
            case BF16_AVX512: packed_avx512(m, n, Kq, ap, bp, cp, ldc, accumulate); break;
            case BF16_AMX: packed_amx(m, n, Kq, ap, bp, cp, ldc, accumulate); break;
#endif
            case BF16_AMX_EMULATED: packed_amx_emulated(m, n, Kq, ap, bp, cp, ldc, accumulate); break;
            default: packed_emulated(m, n, Kq, ap, bp, cp, ldc, accumulate); break;
            }
        }
    }
    scratch_give(sa);
    scratch_give(sb);
}

// ----------------------------------------------------------------------------------------------
// The portable path: rounded copies, then the fp32 product, in the same chunks.

// dst[j] = bf16(src[j * stride]), j < n: a contiguous source (stride 1) as its own loop, which the
// compiler vectorizes
static void round_run(real *dst, const real *src, size_t stride, int n) {
    if (stride == 1) {
        #pragma omp simd
        for (int j = 0; j < n; j++) dst[j] = (real)bf16_round((float)src[j]);
    } else
        for (int j = 0; j < n; j++) dst[j] = (real)bf16_round((float)src[(size_t)j * stride]);
}

static void gemm_portable(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs,
                          size_t b_cs, real *c, size_t ldc, int accumulate) {
    int mch = M < M_CHUNK ? M : M_CHUNK, nch = N < N_CHUNK ? N : N_CHUNK;
    Scratch sa = scratch_take(0, sizeof(real) * (size_t)mch * K), sb = scratch_take(1, sizeof(real) * (size_t)K * nch);
    real *ar = sa.p, *br = sb.p;
    int a_once = M <= M_CHUNK;                              // A in one chunk: rounded once
    for (int j0 = 0; j0 < N; j0 += N_CHUNK) {
        int n = N - j0 < N_CHUNK ? N - j0 : N_CHUNK;
        double t0 = now_seconds();
        if (b_cs == 1 || b_cs <= b_rs) {                    // B row-major: a row of the chunk at a time
            #pragma omp parallel for schedule(static)
            for (int k = 0; k < K; k++) round_run(br + (size_t)k * n, b + (size_t)k * b_rs + (size_t)j0 * b_cs, b_cs, n);
        } else {                                            // B transposed (a weight in the forward):
            enum { TB = 16 };                               // 16 x 16 blocks, each column read in runs
            #pragma omp parallel for schedule(static)
            for (int j1 = 0; j1 < n; j1 += TB)
                for (int k1 = 0; k1 < K; k1 += TB) {
                    int jn = n - j1 < TB ? n - j1 : TB, kn = K - k1 < TB ? K - k1 : TB;
                    for (int j = j1; j < j1 + jn; j++) {
                        const real *col = b + (size_t)(j0 + j) * b_cs + (size_t)k1 * b_rs;
                        for (int k = 0; k < kn; k++) br[(size_t)(k1 + k) * n + j] = (real)bf16_round((float)col[(size_t)k * b_rs]);
                    }
                }
        }
        pack_time(t0);
        for (int i0 = 0; i0 < M; i0 += M_CHUNK) {
            int m = M - i0 < M_CHUNK ? M - i0 : M_CHUNK, round_a = !a_once || j0 == 0;
            t0 = now_seconds();
            if (a_cs == 1 || a_cs <= a_rs) {                // A row-major: a rounded copy by rows
                if (round_a) {
                    #pragma omp parallel for schedule(static)
                    for (int i = 0; i < m; i++) round_run(ar + (size_t)i * K, a + (size_t)(i0 + i) * a_rs, a_cs, K);
                }
                pack_time(t0);
                gemm(m, n, K, ar, (size_t)K, 1, br, (size_t)n, c + (size_t)i0 * ldc + j0, ldc, accumulate);
            } else {                                        // A transposed: a transposed copy, read in order
                if (round_a) {
                    #pragma omp parallel for schedule(static)
                    for (int k = 0; k < K; k++) round_run(ar + (size_t)k * m, a + (size_t)i0 * a_rs + (size_t)k * a_cs, a_rs, m);
                }
                pack_time(t0);
                gemm(m, n, K, ar, 1, (size_t)m, br, (size_t)n, c + (size_t)i0 * ldc + j0, ldc, accumulate);
            }
        }
    }
    scratch_give(sa);
    scratch_give(sb);
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

// The amx peak: TDPBF16PS on 4 independent C tiles from the same A and B tiles (zeros: the rate does
// not depend on the values), 16 x 16 x 32 products per instruction.
#ifdef BF16_X86
static __attribute__((noinline)) void amx_loop(long iters) {
    static const _Alignas(64) uint8_t zeros[1024];
    __asm__ volatile("ldtilecfg %0" ::"m"(amx_config));
    __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::);
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm4\n\ttileloadd (%0,%1,1), %%tmm5\n\t"
                     "tileloadd (%0,%1,1), %%tmm6\n\ttileloadd (%0,%1,1), %%tmm7" ::"r"(zeros), "r"(64L) : "memory");
    for (long it = 0; it < iters; it++)
        __asm__ volatile("tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\ttdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
                         "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\ttdpbf16ps %%tmm7, %%tmm5, %%tmm3" ::);
    __asm__ volatile("tilerelease" ::: "memory");
}
#endif

double bf16_amx_peak_gflops(double seconds) {
#ifdef BF16_X86
    if (!bf16_amx_usable(NULL)) return 0;
    double best = 0;
    for (long iters = 1L << 12;; iters *= 2) {
        double t0 = now_seconds();
        #pragma omp parallel
        amx_loop(iters);
        double dt = now_seconds() - t0;
        double gf = (double)iters * 4 * (16.0 * 16 * 32 * 2) * max_threads() / dt / 1e9;
        if (gf > best) best = gf;
        if (dt > seconds) break;
    }
    return best;
#else
    (void)seconds;
    return 0;
#endif
}
