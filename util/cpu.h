// util/cpu.h: what the CPU is and may run, read once: its name, cpuid's feature bits with the register
// states the OS saves (XGETBV), and the cache sizes. nn/kernels.c (gemm's micro-kernel and blocking),
// nn/bf16_cpu.c (the bf16 path) and tools/bench_machine.c (./bench's machine lines) ask here.
#ifndef UTIL_CPU_H
#define UTIL_CPU_H

#include <stddef.h>

typedef struct {
    int os_avx;        // XCR0: the OS saves the xmm and ymm state (bits 1, 2)
    int os_avx512;     // ... and the opmask and zmm state (bits 5-7)
    int os_amx;        // ... and the tile config and data (XTILECFG 17, XTILEDATA 18)
    // cpuid's bits alone (leaf 1 ecx, leaf 7 sub-leaf 0 ebx/edx, sub-leaf 1 eax): the CPU has it
    int fma, avx2, avx512f, avx512dq, avx512bw, avx512_bf16, amx_bf16, amx_tile;
    int leaf7;         // cpuid leaf 7 answered (the bits above from it are 0 otherwise)
} CpuFeatures;

// The features, read on the first call (all 0 off x86).
const CpuFeatures *cpu_features(void);
// What the CPU is: /proc/cpuinfo's first processor (its lines up to the first blank one), read on
// the first call. name: its "model name" (NULL when it has none); vendor: its vendor_id (NULL when
// none); family, model, stepping: -1 when unknown.
typedef struct { const char *name, *vendor; int family, model, stepping; } CpuIdentity;
const CpuIdentity *cpu_identity(void);
// cpu_identity()->name: the CPU's name, NULL when unknown.
const char *cpu_name(void);
// The L1 data and L2 cache sizes in bytes: cpuid's deterministic cache parameters (leaf 4 on Intel,
// 0x8000001D on AMD), else AMD's older leaves 0x80000005/6 (virtual machines often hide the former),
// else 32 KiB and 512 KiB.
void cpu_caches(size_t *l1d, size_t *l2);

#endif
