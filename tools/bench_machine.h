// tools/bench_machine.h: what ./bench measures about the machine itself (tools/bench_machine.c): the
// CPU and its instruction sets, the clock, the FMA loop's peak, and two latencies a step's speed
// depends on (a cache line between two cores, dependent loads from buffers of growing size).
#ifndef BENCH_MACHINE_H
#define BENCH_MACHINE_H

#include <stddef.h>

double bench_now(void);      // seconds, monotonic
int bench_threads(void);     // OpenMP's threads (1 without OpenMP)

// What the CPU is and can do, from cpuid (x86) and /proc/cpuinfo, next to what this binary was built
// for (-march): a binary built for AVX2 runs AVX2 code on an AVX-512 machine, and its peak is AVX2's.
typedef struct {
    char model[128], vendor[32];
    int family, model_no, stepping;              // /proc/cpuinfo's cpu family, model, stepping (-1: unknown)
    int avx2, avx512f, avx512_bf16, amx_bf16;   // the CPU has it and the OS saves its registers
} CpuInfo;
CpuInfo cpu_info(void);
const char *built_for(void);   // the vector width -march gave this binary, in words

// The FMA loop's vectors (floats) and independent chains per thread (tools/bench_machine.c says why)
#if defined(__AVX512F__)
enum { FMA_LANES = 16, FMA_CHAINS = 24 };
#elif defined(__AVX__)
enum { FMA_LANES = 8, FMA_CHAINS = 14 };
#else
enum { FMA_LANES = 4, FMA_CHAINS = 14 };
#endif
double clock_ghz(void);                 // the core clock from a chain of adds on every thread; 0: unknown
double fma_peak_gflops(int *warmups);   // the FMA loop's peak, all threads (warmups: runs until it settled)
// The FMA loop on every thread at once, each timing its own: rate[t] GFLOP/s of thread t (the median
// of 3), for up to max (at most FMA_THREADS_MAX) threads; returns how many it filled. Unequal rates:
// cores that run at different speeds (one shared with another process or a busy neighbour, or an
// efficiency core).
enum { FMA_THREADS_MAX = 64 };
int fma_thread_gflops(double *rate, int max);
// The same loop on the calling thread alone, the others idle (the median of 3). The FMA loop of all
// threads well under threads x this shows threads that share a core's FMA units (more threads than
// cores, SMT siblings, or a host that put two virtual CPUs on one core): the peak is then fewer cores'.
double fma_one_thread_gflops(void);
double median3(double a, double b, double c);   // the middle one of three

// A cache line passed back and forth between two threads, each spinning until it is its turn: the
// round trip in ns, the best of three runs of up to 0.2 s (0 with fewer than 2 threads). About 0.05-0.2
// us between cores that share an L3, 0.5 us and more between chips or CCDs.
double core_round_trip_ns(void);
// One thread's dependent loads through a random cycle of cache lines in a buffer of `bytes`: ns per
// load, the latency of the level the buffer lives in (L2, L3 or DRAM, with TLB misses beyond).
double load_latency_ns(size_t bytes);

#endif
