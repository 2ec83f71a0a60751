// util/cpu.c: cpuid, XGETBV and /proc/cpuinfo, each read once (util/cpu.h).
#include "util/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPU_X86 1
#endif

static CpuFeatures read_features(void) {
    CpuFeatures f = { 0 };
#ifdef CPU_X86
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        f.fma = c >> 12 & 1;
        if (c >> 27 & 1) {                          // OSXSAVE: XCR0 says which register states the OS saves
            unsigned lo, hi;
            __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            unsigned long long x = (unsigned long long)hi << 32 | lo;
            f.os_avx = (x & 6) == 6;
            f.os_avx512 = (x & 0xe6) == 0xe6;
            f.os_amx = (x & 0x60000) == 0x60000;
        }
    }
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        unsigned max7 = a;
        f.leaf7 = 1;
        f.avx2 = b >> 5 & 1;
        f.avx512f = b >> 16 & 1;
        f.avx512dq = b >> 17 & 1;
        f.avx512bw = b >> 30 & 1;
        f.amx_bf16 = d >> 22 & 1;
        f.amx_tile = d >> 24 & 1;
        if (max7 >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = a >> 5 & 1;
    }
#endif
    return f;
}

// Read before main (a constructor), so that threads asking at once find it read: the kernels ask
// from inside parallel loops.
static CpuFeatures g_features;
static void read_features_at_start(void) __attribute__((constructor));
static void read_features_at_start(void) { g_features = read_features(); }

const CpuFeatures *cpu_features(void) { return &g_features; }

// a /proc/cpuinfo line's value: after the colon and its blanks, up to the newline
static void value_of(const char *line, char *out, size_t cap) {
    const char *v = strchr(line, ':') + 1;
    while (*v == ' ' || *v == '\t') v++;
    snprintf(out, cap, "%.*s", (int)strcspn(v, "\n"), v);
}

static CpuIdentity read_identity(void) {
    static char name[256], vendor[64];
    CpuIdentity id = { NULL, NULL, -1, -1, -1 };
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {    // the first processor's lines (they end at a blank line)
        if (line[0] == '\n') break;
        if (!strchr(line, ':')) continue;
        if (!strncmp(line, "model name", 10) && !id.name) { value_of(line, name, sizeof name); id.name = name; }
        else if (!strncmp(line, "vendor_id", 9)) { value_of(line, vendor, sizeof vendor); id.vendor = vendor; }
        else if (!strncmp(line, "cpu family", 10)) id.family = atoi(strchr(line, ':') + 1);
        else if (!strncmp(line, "model\t", 6)) id.model = atoi(strchr(line, ':') + 1);
        else if (!strncmp(line, "stepping", 8)) id.stepping = atoi(strchr(line, ':') + 1);
    }
    if (f) fclose(f);
    return id;
}

const CpuIdentity *cpu_identity(void) {
    static CpuIdentity id;
    static int done;
    if (!done) { id = read_identity(); done = 1; }
    return &id;
}

const char *cpu_name(void) { return cpu_identity()->name; }

void cpu_caches(size_t *l1d, size_t *l2) {
    *l1d = 32 << 10; *l2 = 512 << 10;
#if defined(__x86_64__)
    unsigned a, b, c, d, max_ext = 0;
    __cpuid(0x80000000, max_ext, b, c, d);
    int found = 0;
    for (int leaf = 0; leaf < 2 && !found; leaf++) {
        unsigned l = leaf ? 0x8000001D : 4;
        if (leaf && max_ext < 0x8000001D) break;
        for (unsigned i = 0; i < 8; i++) {
            if (!__get_cpuid_count(l, i, &a, &b, &c, &d) || (a & 31) == 0) break;
            size_t size = (size_t)((b >> 22) + 1) * (((b >> 12) & 1023) + 1) * ((b & 4095) + 1) * (c + 1);
            int type = a & 31, level = (a >> 5) & 7;
            if (level == 1 && type == 1) { *l1d = size; found = 1; }
            if (level == 2 && (type == 3 || type == 2)) *l2 = size;
        }
    }
    if (!found && max_ext >= 0x80000006) {
        __cpuid(0x80000005, a, b, c, d);
        if (c >> 24) *l1d = (size_t)(c >> 24) << 10;
        __cpuid(0x80000006, a, b, c, d);
        if (c >> 16) *l2 = (size_t)(c >> 16) << 10;
    }
#endif
}
