// tools/bench/machine_latency.c: two facts about the machine that a step's speed depends on.
// (1) A cache line passed back and forth between two threads (one per core): the round trip.
// (2) A chain of dependent loads through a random cycle of cache lines in buffers of 256 KiB to
//     256 MiB: the latency of the level each size lives in (L2, L3, DRAM).
// Built by make bench-tools. usage: build/bench/machine_latency [MAX_KIB [ROUND_TRIPS]]: buffers up to
// MAX_KIB (default 262144), ROUND_TRIPS of the line (default 200000)
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
_Alignas(64) static _Atomic long flag;
int main(int argc, char **argv) {
    long max_kb = argc > 1 ? atol(argv[1]) : 262144, trips = argc > 2 ? atol(argv[2]) : 200000;
    if (argc > 3 || max_kb < 256 || trips < 1) { fprintf(stderr, "usage: %s [MAX_KIB (>= 256) [ROUND_TRIPS]]\n", argv[0]); return 2; }
    for (int rep = 0; rep < 3; rep++) {
        long n = trips;
        atomic_store(&flag, 0);
        double t0 = now();
        #pragma omp parallel num_threads(2)
        {
            int me = omp_get_thread_num();
            for (long i = 0; i < n; i++) {
                long want = 2 * i + me;
                while (atomic_load_explicit(&flag, memory_order_acquire) != want) {}
                atomic_store_explicit(&flag, want + 1, memory_order_release);
            }
        }
        printf("core to core: a cache line's round trip %.0f ns\n", (now() - t0) / n * 1e9);
    }
    for (size_t kb = 256; kb <= (size_t)max_kb; kb *= 2) {
        size_t n = kb * 1024 / 64, *perm = malloc(n * sizeof(size_t));
        size_t *a = aligned_alloc(64, n * 64);
        for (size_t i = 0; i < n; i++) perm[i] = i;
        srand(1);
        for (size_t i = n - 1; i > 0; i--) { size_t j = (size_t)rand() % (i + 1), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
        for (size_t i = 0; i < n; i++) a[perm[i] * 8] = perm[(i + 1) % n] * 8;
        size_t p = 0;
        long steps = 4000000;
        for (size_t i = 0; i < n; i++) p = a[p];
        double t0 = now();
        for (long i = 0; i < steps; i++) p = a[p];
        printf("dependent loads in %6zu KiB: %6.1f ns%s\n", kb, (now() - t0) / steps * 1e9, p == 1 ? " " : "");
        free(a); free(perm);
    }
    return 0;
}
