// nn/bf16_cpu.c: which bf16 path a product takes (nn/bf16.h): what the CPU and the OS allow (util/cpu.h:
// cpuid, XCR0; Linux's permission for AMX's tile state), PEGPT_BF16_PATH, and the avx512bf16 peak. The
// products themselves are in nn/bf16.c.
#include "nn/bf16.h"

#include "nn/kernels.h"
#include "util/cpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#define BF16_X86 1
#endif

// ----------------------------------------------------------------------------------------------
// Which path

// (util/cpu.h: cpuid's bits and the register states the OS saves, read once)
int bf16_cpu_has_avx512bf16(void) {
    const CpuFeatures *f = cpu_features();
    return f->os_avx512 && f->avx512f && f->avx512_bf16;      // AVX512F, AVX512_BF16, the zmm/mask state saved
}

int bf16_cpu_has_convert(void) {
    const CpuFeatures *f = cpu_features();
    return bf16_cpu_has_avx512bf16() && f->avx512dq && f->avx512bw;
}

int bf16_cpu_has_amx(void) {
    const CpuFeatures *f = cpu_features();
    return f->os_amx && f->amx_bf16 && f->amx_tile;          // XTILECFG and XTILEDATA saved
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
