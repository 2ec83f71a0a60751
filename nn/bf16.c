// nn/bf16.c: the bf16 matrix products (see nn/bf16.h): path choice, packing, the VDPBF16PS kernel and
// its emulation, the portable path.
#include "nn/bf16.h"

#include "nn/kernels.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif
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

#ifdef BF16_X86
// XCR0: which register states the OS saves (needs OSXSAVE, cpuid 1 ecx bit 27)
static int xcr0(unsigned long long *v) {
    unsigned a, b, c, d, lo, hi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    *v = (unsigned long long)hi << 32 | lo;
    return 1;
}
#endif

int bf16_cpu_has_avx512bf16(void) {
#ifdef BF16_X86
    unsigned a, b, c, d;
    unsigned long long x;
    if (!xcr0(&x) || (x & 0xe6) != 0xe6) return 0;   // the OS saves neither ymm nor the zmm/mask state
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b >> 16 & 1)) return 0;   // AVX512F
    unsigned max7 = a;
    if (max7 < 1 || !__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (int)(a >> 5 & 1);                       // AVX512_BF16
#else
    return 0;
#endif
}

int bf16_cpu_has_amx(void) {
#ifdef BF16_X86
    unsigned a, b, c, d;
    unsigned long long x;
    if (!xcr0(&x) || (x & 0x60000) != 0x60000) return 0;   // XTILECFG (17) and XTILEDATA (18)
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (d >> 22 & 1) && (d >> 24 & 1);                 // AMX-BF16, AMX-TILE
#else
    return 0;
#endif
}

// Linux keeps AMX's 8 KiB tile state out of a process until it asks (Documentation/arch/x86/
// xstate.rst): arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) grants it to the whole process.
// Without the grant the first tile instruction kills the process, so the amx path runs only after a
// yes. Asked once; the answer is kept.
int bf16_amx_usable(const char **why) {
    static int asked, ok;
    static char reason[160];
    if (!asked) {
        asked = 1;
        if (sizeof(real) != sizeof(float)) snprintf(reason, sizeof reason, "the double build has no amx path");
        else if (!bf16_cpu_has_amx()) snprintf(reason, sizeof reason, "this CPU (or its OS) has no AMX-BF16 tiles");
        else {
#if defined(BF16_X86) && defined(__linux__)
            enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
            if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0) {
                ok = 1;
                snprintf(reason, sizeof reason, "the CPU has AMX-BF16 and Linux granted the tile state");
            } else
                snprintf(reason, sizeof reason, "Linux refused AMX's tile state (arch_prctl ARCH_REQ_XCOMP_PERM: %s)", strerror(errno));
#else
            snprintf(reason, sizeof reason, "AMX's tile state is asked for only on Linux");
#endif
        }
    }
    if (why) *why = reason;
    return ok;
}

int bf16_path_runs(Bf16Path p) {
    switch (p) {
    case BF16_PORTABLE: return 1;
    case BF16_AVX512_EMULATED: case BF16_AMX_EMULATED: return sizeof(real) == sizeof(float);
    case BF16_AVX512: return sizeof(real) == sizeof(float) && bf16_cpu_has_avx512bf16();
    case BF16_AMX: return bf16_amx_usable(NULL);
    default: return 0;
    }
}

static Bf16Path g_path = BF16_PORTABLE;
static int g_path_chosen;
static char g_reason[256];

static const char *const path_names[BF16_N_PATHS] = {
    [BF16_PORTABLE] = "portable", [BF16_AVX512] = "avx512bf16", [BF16_AVX512_EMULATED] = "avx512bf16-emulated",
    [BF16_AMX] = "amx", [BF16_AMX_EMULATED] = "amx-emulated",
};

const char *bf16_path_name(Bf16Path p) { return p >= 0 && p < BF16_N_PATHS ? path_names[p] : "?"; }

// The fastest path this CPU runs: amx, then avx512bf16, then portable; the reason says what was
// passed over and why.
static void choose_path(void) {
    if (g_path_chosen) return;
    const char *env = getenv("PEGPT_BF16_PATH");
    if (env && *env) {
        int found = -1;
        for (int p = 0; p < BF16_N_PATHS; p++)
            if (!strcmp(env, path_names[p])) found = p;
        CHECK(found >= 0, "PEGPT_BF16_PATH=%s: give amx, avx512bf16, portable, avx512bf16-emulated or amx-emulated (or unset "
              "it to choose from the CPU)", env);
        if (found == BF16_AMX && !bf16_path_runs(BF16_AMX)) {
            const char *why;
            bf16_amx_usable(&why);
            CHECK(0, "PEGPT_BF16_PATH=amx: %s; unset it, or give another path", why);
        }
        CHECK(found != BF16_AVX512 || bf16_cpu_has_avx512bf16(), "PEGPT_BF16_PATH=avx512bf16: this CPU (or its OS) has no "
              "AVX512_BF16; unset it, or give portable or avx512bf16-emulated");
        CHECK(bf16_path_runs((Bf16Path)found), "PEGPT_BF16_PATH=%s: the double build has only the portable path", env);
        g_path = (Bf16Path)found;
        snprintf(g_reason, sizeof g_reason, "forced by PEGPT_BF16_PATH");
    } else if (sizeof(real) != sizeof(float)) {
        g_path = BF16_PORTABLE;
        snprintf(g_reason, sizeof g_reason, "the double build");
    } else {
        const char *why_not_amx;
        int amx = bf16_amx_usable(&why_not_amx);
        if (amx) {
            g_path = BF16_AMX;
            snprintf(g_reason, sizeof g_reason, "%s", why_not_amx);
        } else if (bf16_cpu_has_avx512bf16()) {
            g_path = BF16_AVX512;
            snprintf(g_reason, sizeof g_reason, "the CPU has AVX512_BF16; no amx: %s", why_not_amx);
        } else {
            g_path = BF16_PORTABLE;
            snprintf(g_reason, sizeof g_reason, "no AMX-BF16 or AVX512_BF16 on this CPU: operands rounded to bf16, then the "
                     "fp32 kernel (no speed-up)");
        }
    }
    g_path_chosen = 1;
}

Bf16Path bf16_path(void) { choose_path(); return g_path; }
const char *bf16_path_reason(void) { choose_path(); return g_reason; }

Bf16Path bf16_set_path(Bf16Path p) {
    choose_path();
    CHECK(bf16_path_runs(p), "bf16_set_path: this CPU (or build) cannot run the %s path", bf16_path_name(p));
    Bf16Path old = g_path;
    g_path = p;
    return old;
}

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

static inline uint32_t pair(float lo, float hi) { return (uint32_t)bf16_bits(lo) | (uint32_t)bf16_bits(hi) << 16; }

// rows [i0, i0+m) of A into m rows of Kq words (Kq >= ceil(K/2): the words past K are 0), then
// rows m..mp-1 of zeros (the amx path's padding to a whole tile). Read along A's contiguous
// direction: a row at a time when A is row-major, else (A transposed, as dout^T in the weight
// gradient) 16 rows side by side, so each read of 16 neighbours is one run of memory, not 16 cache
// misses.
static void pack_a(uint32_t *ap, int m, int mp, int K, int Kq, const real *a, size_t a_rs, size_t a_cs, int i0) {
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

// columns [j0, j0+n) of B into panels of 32 columns and Kq rows of words, zero past n and past K.
// Read along B's contiguous direction: 32 columns of a row pair at a time when B is row-major, else
// a column at a time.
static void pack_b(uint32_t *bp, int n, int K, int Kq, const real *b, size_t b_rs, size_t b_cs, int j0) {
    int np = (n + 31) / 32, kq = (K + 1) / 2;
    #pragma omp parallel for schedule(static)
    for (int p = 0; p < np; p++) {
        uint32_t *panel = bp + (size_t)p * Kq * 32;
        int nj = n - p * 32 < 32 ? n - p * 32 : 32;
        if (nj < 32) for (int q = 0; q < kq; q++) memset(panel + (size_t)q * 32 + nj, 0, sizeof(uint32_t) * (32 - nj));
        if (Kq > kq) memset(panel + (size_t)kq * 32, 0, sizeof(uint32_t) * 32 * (Kq - kq));
        const real *col0 = b + (size_t)(j0 + p * 32) * b_cs;
        if (b_cs == 1 || b_cs <= b_rs) {
            for (int q = 0; q < kq; q++) {
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
                if (K & 1) panel[(size_t)(kq - 1) * 32 + jj] = pair((float)col[(size_t)(K - 1) * b_rs], 0);
            }
        }
    }
}

#ifdef BF16_X86
// The same packing, 16 values per instruction, for the paths that run on AVX-512 anyway (avx512bf16
// and amx): the same bits as pack_a and pack_b above (the rounding written in vector form; the
// emulated paths keep the scalar packing, so test_bf16's comparison of paths checks one against
// the other). Blocks of 16 x 16 words that are read along one direction and written along the
// other are turned in registers (tr16); what is left at the edges goes one word at a time.
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

// pack_a's contract, vectorised: A row-major converts runs of 16 values; A transposed (a_rs = 1)
// converts 16 rows side by side and turns each 16 x 16 block of words
static AVX512_ATTR void pack_a_avx512(uint32_t *ap, int m, int mp, int K, int Kq, const real *a, size_t a_rs,
                                      size_t a_cs, int i0) {
    int kq = (K + 1) / 2, kfull = a_cs == 1 ? K / 32 * 16 : (a_rs == 1 ? K / 32 * 16 : 0);
    const real *a0 = a + (size_t)i0 * a_rs;
    #pragma omp parallel for schedule(static)
    for (int r0 = 0; r0 < m; r0 += 16) {
        int nr = m - r0 < 16 ? m - r0 : 16, q0 = 0;
        if (a_cs == 1) {
            for (int i = r0; i < r0 + nr; i++)
                for (q0 = 0; q0 < kfull; q0 += 16) _mm512_storeu_si512(ap + (size_t)i * Kq + q0, run16(a0 + (size_t)i * a_rs + 2 * q0));
        } else if (a_rs == 1 && nr == 16) {
            for (q0 = 0; q0 < kfull; q0 += 16) {
                __m512i v[16];
                for (int q = 0; q < 16; q++) {
                    const real *lo = a0 + (size_t)r0 + (size_t)(2 * (q0 + q)) * a_cs;
                    v[q] = pairs16(lo, lo + a_cs);
                }
                tr16(v);
                for (int i = 0; i < 16; i++) _mm512_storeu_si512(ap + (size_t)(r0 + i) * Kq + q0, v[i]);
            }
        } else q0 = 0;
        for (int i = r0; i < r0 + nr; i++) {
            for (int q = q0; q < kq; q++) ap[(size_t)i * Kq + q] = a_word(a0, a_rs, a_cs, i, q, K);
            if (Kq > kq) memset(ap + (size_t)i * Kq + kq, 0, sizeof(uint32_t) * (Kq - kq));
        }
    }
    if (mp > m) memset(ap + (size_t)m * Kq, 0, sizeof(uint32_t) * (size_t)(mp - m) * Kq);
}

// pack_b's contract, vectorised: B row-major pairs two rows, 16 columns at a time; B transposed
// (b_rs = 1, a weight in the forward) converts runs along k of 16 columns and turns the blocks
static AVX512_ATTR void pack_b_avx512(uint32_t *bp, int n, int K, int Kq, const real *b, size_t b_rs, size_t b_cs, int j0) {
    int np = (n + 31) / 32, kq = (K + 1) / 2, kpairs = K / 2;
    #pragma omp parallel for schedule(static)
    for (int p = 0; p < np; p++) {
        uint32_t *panel = bp + (size_t)p * Kq * 32;
        int nj = n - p * 32 < 32 ? n - p * 32 : 32, jv = 0, qv = 0;
        const real *col0 = b + (size_t)(j0 + p * 32) * b_cs;
        if (b_cs == 1) {                           // whole groups of 16 columns, every full pair of rows
            jv = nj / 16 * 16; qv = kpairs;
            for (int q = 0; q < kpairs; q++)
                for (int jj = 0; jj < jv; jj += 16) {
                    const real *lo = col0 + (size_t)(2 * q) * b_rs + jj;
                    _mm512_storeu_si512(panel + (size_t)q * 32 + jj, pairs16(lo, lo + b_rs));
                }
        } else if (b_rs == 1) {                    // whole groups of 16 columns, 16 words along k at a time
            jv = nj / 16 * 16; qv = K / 32 * 16;
            for (int jj = 0; jj < jv; jj += 16)
                for (int q0 = 0; q0 < qv; q0 += 16) {
                    __m512i v[16];
                    for (int c = 0; c < 16; c++) v[c] = run16(col0 + (size_t)(jj + c) * b_cs + 2 * q0);
                    tr16(v);
                    for (int q = 0; q < 16; q++) _mm512_storeu_si512(panel + (size_t)(q0 + q) * 32 + jj, v[q]);
                }
        }
        // the rest one word at a time: rows q >= qv of the vectorised columns, then the other columns
        for (int jj = 0; jj < 32; jj++)
            for (int q = jj < jv ? qv : 0; q < Kq; q++)
                panel[(size_t)q * 32 + jj] = jj < nj && q < kq ? a_word(col0, b_cs, b_rs, jj, q, K) : 0;
    }
}
#endif

// The packed paths: B a chunk of N_CHUNK columns at a time, A a chunk of M_CHUNK rows at a time
// (packed once when A is one chunk, as the LM head's input is: 25 chunks of B at gpt2-124m).
// The amx paths pad k to whole tiles (16 words) and A's rows to whole 32-row blocks.
static void gemm_packed(Bf16Path path, int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b,
                        size_t b_rs, size_t b_cs, real *c, size_t ldc, int accumulate) {
    int tiles = path == BF16_AMX || path == BF16_AMX_EMULATED;
    int Kq = (K + 1) / 2, mch = M < M_CHUNK ? M : M_CHUNK, nch = N < N_CHUNK ? N : N_CHUNK;
    if (tiles) { Kq = (Kq + 15) / 16 * 16; mch = (mch + 31) / 32 * 32; }
    Scratch sa = scratch_take(0, sizeof(uint32_t) * (size_t)mch * Kq);
    Scratch sb = scratch_take(1, sizeof(uint32_t) * (size_t)((nch + 31) / 32 * 32) * Kq);
    uint32_t *ap = sa.p, *bp = sb.p;
    int a_once = M <= M_CHUNK;                         // A in one chunk: packed once, not once per chunk of B
    int vec = path == BF16_AVX512 || path == BF16_AMX;  // packed with AVX-512 (the emulated paths: in scalar code)
    for (int j0 = 0; j0 < N; j0 += N_CHUNK) {
        int n = N - j0 < N_CHUNK ? N - j0 : N_CHUNK;
        double t0 = now_seconds();
#ifdef BF16_X86
        if (vec) pack_b_avx512(bp, n, K, Kq, b, b_rs, b_cs, j0);
        else
#endif
            pack_b(bp, n, K, Kq, b, b_rs, b_cs, j0);
        pack_time(t0);
        for (int i0 = 0; i0 < M; i0 += M_CHUNK) {
            int m = M - i0 < M_CHUNK ? M - i0 : M_CHUNK;
            t0 = now_seconds();
            if (!a_once || j0 == 0) {
                int mp = tiles ? (m + 31) / 32 * 32 : m;
#ifdef BF16_X86
                if (vec) pack_a_avx512(ap, m, mp, K, Kq, a, a_rs, a_cs, i0);
                else
#endif
                    pack_a(ap, m, mp, K, Kq, a, a_rs, a_cs, i0);
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
