// tools/bench_machine.c: the machine's side of ./bench (tools/bench_machine.h).
#include "tools/bench_machine.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "nn/bf16.h"
#include "util/common.h"
#include "util/cpu.h"

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int bench_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}


CpuInfo cpu_info(void) {
    CpuInfo ci = { .model = "unknown", .vendor = "unknown", .family = -1, .model_no = -1, .stepping = -1 };
    const CpuIdentity *id = cpu_identity();
    if (id->name) snprintf(ci.model, sizeof ci.model, "%s", id->name);
    if (id->vendor) snprintf(ci.vendor, sizeof ci.vendor, "%s", id->vendor);
    ci.family = id->family; ci.model_no = id->model; ci.stepping = id->stepping;
    const CpuFeatures *f = cpu_features();
    if (f->leaf7) {                                   // the CPU has it and the OS saves its registers
        ci.avx2 = f->os_avx && f->avx2;
        ci.avx512f = f->os_avx512 && f->avx512f;
        ci.amx_bf16 = bf16_cpu_has_amx();               // the same tests that choose gemm_bf16's path
        ci.avx512_bf16 = bf16_cpu_has_avx512bf16();
    }
    return ci;
}

const char *built_for(void) {
#if defined(__AVX512F__)
    return "AVX-512 (16-float vectors)";
#elif defined(__AVX2__)
    return "AVX2 (8-float vectors)";
#elif defined(__AVX__)
    return "AVX (8-float vectors)";
#else
    return "SSE (4-float vectors)";
#endif
}

// The machine's widest float vector, as for gemm (nn/kernels.c): 16 floats with AVX-512, 8 with AVX,
// 4 otherwise. (A 64-byte vector on an AVX2 machine is not two registers' worth of speed: GCC's
// lowering of such code ran gemm at 1.7 GFLOP/s there, 60x below the 32-byte version.)
// FMA_CHAINS independent accumulators per thread: a core with P FMA pipes of latency L cycles needs
// P x L chains in flight to stay busy; current x86 cores have P = 2 (some 3-4 on narrower vectors)
// and L = 4-5, so 24 chains (of AVX-512's 32 registers) cover them all, and 14 use every one of
// AVX2's and SSE's 16 registers that the two operands leave.
typedef float fvec __attribute__((vector_size(FMA_LANES * sizeof(float))));

// rounds of the FMA loop per timed run: about the same work whatever the chains and lanes
static const long FMA_ITERS = 4000000L * 12 / FMA_CHAINS * 16 / FMA_LANES;

// One thread's FMA_CHAINS independent chains of a*x+y for `iters` rounds; returns a value that
// depends on them all (the caller keeps it alive)
static float fma_chains(long iters) {
    fvec acc[FMA_CHAINS], x = { 0 }, y = { 0 };
    for (int i = 0; i < FMA_LANES; i++) { x[i] = 0.999999f; y[i] = 1e-6f * i; }
    for (int k = 0; k < FMA_CHAINS; k++) acc[k] = x * (float)k;
    for (long it = 0; it < iters; it++) {
        #pragma GCC unroll 32           // all chains in registers (a loop keeps them in memory)
        for (int k = 0; k < FMA_CHAINS; k++) acc[k] = acc[k] * x + y;
    }
    float sink = 0;
    for (int k = 0; k < FMA_CHAINS; k++) sink += acc[k][0];
    return sink;
}

// GFLOP/s of all threads running FMA_CHAINS independent chains of a*x+y for `iters` rounds.
static double fma_loop_gflops(long iters) {
    double t0 = bench_now();
    float sink = 0;
    #pragma omp parallel reduction(+:sink)
    sink += fma_chains(iters);
    double dt = bench_now() - t0;
    if (sink == 12345.0f) printf(" ");        // keep the loop alive
    return (double)bench_threads() * iters * FMA_CHAINS * FMA_LANES * 2 / dt / 1e9;
}

int fma_thread_gflops(double *rate, int max) {
    const long iters = FMA_ITERS;
    double r[3][FMA_THREADS_MAX] = { { 0 } };
    int n = 1;
    if (max > FMA_THREADS_MAX) max = FMA_THREADS_MAX;
    for (int rep = 0; rep < 3; rep++) {
        float sink = 0;
        #pragma omp parallel reduction(+:sink)
        {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
            #pragma omp single
            n = omp_get_num_threads();
            // (single's barrier: the threads start together)
#endif
            double t0 = bench_now();
            sink += fma_chains(iters);
            if (t < max) r[rep][t] = (double)iters * FMA_CHAINS * FMA_LANES * 2 / (bench_now() - t0) / 1e9;
        }
        if (sink == 12345.0f) printf(" ");
    }
    n = n < max ? n : max;
    for (int t = 0; t < n; t++) rate[t] = median3(r[0][t], r[1][t], r[2][t]);
    return n;
}

double fma_one_thread_gflops(void) {
    const long iters = FMA_ITERS;
    double r[3];
    float sink = fma_chains(iters / 4);           // a warm-up
    for (int rep = 0; rep < 3; rep++) {
        double t0 = bench_now();
        sink += fma_chains(iters);
        r[rep] = (double)iters * FMA_CHAINS * FMA_LANES * 2 / (bench_now() - t0) / 1e9;
    }
    if (sink == 12345.0f) printf(" ");
    return median3(r[0], r[1], r[2]);
}

double median3(double a, double b, double c) { return fmax(fmin(a, b), fmin(fmax(a, b), c)); }

// The core clock in GHz, from a chain of dependent register-to-register adds (one cycle each on every
// x86 core; not adds of a constant, which Intel's Golden Cove and later cores fold away at rename),
// run on every thread at once as the FMA loop is; 0 where it cannot be read.
double clock_ghz(void) {
#if defined(__x86_64__)
    const long iters = 5000000;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = bench_now();
        #pragma omp parallel
        {
            unsigned long x = 0, one = 1;
            for (long i = 0; i < iters; i++)
                __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                                 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                                 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                                 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0" : "+r"(x) : "r"(one));
            if (x == 1) printf(" ");
        }
        double ghz = 16.0 * iters / (bench_now() - t0) / 1e9;
        if (ghz > best) best = ghz;
    }
    return best;
#else
    return 0;
#endif
}

// The FMA loop's peak: repeated until two measurements in a row agree within 3% (thread start-up
// and the clock's ramp are over), then the best of five more. Each measurement is ~0.1 s.
double fma_peak_gflops(int *warmups) {
    const long iters = FMA_ITERS;
    double prev = fma_loop_gflops(iters), cur = 0;
    int n = 1;
    for (; n < 20; n++, prev = cur) {
        cur = fma_loop_gflops(iters);
        if (fabs(cur - prev) <= 0.03 * fmax(cur, prev)) break;
    }
    double best = fmax(prev, cur);
    for (int r = 0; r < 5; r++) best = fmax(best, fma_loop_gflops(iters));
    if (warmups) *warmups = n + 1;
    return best;
}


// ---- two latencies ------------------------------------------------------------------------------

// thread `me` (0 or 1) of the ping-pong: waits for its turn (flag == 2 i + me), then passes it on;
// thread 0 ends the run (stop) after `budget` seconds, checking the time while it waits too, so that
// two threads sharing one core (each turn then waits for a time slice) cannot hold the bench for
// long. Returns the rounds run.
static _Alignas(64) _Atomic long pp_flag;
static _Alignas(64) _Atomic int pp_stop;
static long ping_pong(int me, long rounds, double budget) {
    double t0 = bench_now();
    long i = 0;
    for (; i < rounds && !atomic_load_explicit(&pp_stop, memory_order_relaxed); i++) {
        long want = 2 * i + me;
        for (long spin = 1; atomic_load_explicit(&pp_flag, memory_order_acquire) != want; spin++) {
            if (atomic_load_explicit(&pp_stop, memory_order_relaxed)) return i;
            if (me == 0 && (spin & 4095) == 0 && bench_now() - t0 > budget) atomic_store(&pp_stop, 1);
        }
        atomic_store_explicit(&pp_flag, want + 1, memory_order_release);
        if (me == 0 && (i & 63) == 63 && bench_now() - t0 > budget) atomic_store(&pp_stop, 1);
    }
    return i;
}

double core_round_trip_ns(void) {
    if (bench_threads() < 2) return 0;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        long done = 0;
        atomic_store(&pp_flag, 0);
        atomic_store(&pp_stop, 0);
        double t0 = bench_now();
        #pragma omp parallel num_threads(2)
        {
#ifdef _OPENMP
            long n = ping_pong(omp_get_thread_num(), 200000, 0.2);
            if (omp_get_thread_num() == 0) done = n;
#endif
        }
        double ns = done > 0 ? (bench_now() - t0) / done * 1e9 : 0;
        if (ns > 0 && (best == 0 || ns < best)) best = ns;
    }
    return best;
}

double load_latency_ns(size_t bytes) {
    size_t n = bytes / 64;
    if (n < 2) return 0;
    size_t *line = xmalloc(n * 64), *order = xmalloc(n * sizeof(size_t));
    uint64_t r = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {           // a random cycle through every line (xorshift)
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        size_t j = (size_t)(r % (i + 1)), t = order[i];
        order[i] = order[j]; order[j] = t;
    }
    for (size_t i = 0; i < n; i++) line[order[i] * 8] = order[(i + 1) % n] * 8;
    size_t p = 0;
    for (size_t i = 0; i < n; i++) p = line[p];    // once around: the buffer in whatever level holds it
    const long loads = 2000000;
    double t0 = bench_now();
    for (long i = 0; i < loads; i++) p = line[p];
    double ns = (bench_now() - t0) / loads * 1e9;
    if (p == 1) printf(" ");                       // keep the chain alive
    free(line);
    free(order);
    return ns;
}
