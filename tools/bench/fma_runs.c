// tools/bench/fma_runs.c: how far the FMA loop's speed moves from run to run on this machine, for runs as
// short as the bench's peak takes (~7 ms each, best of 5) and as long as a training step of small (~450 ms):
// three sets of 60 short and 8 long runs, each set's minimum, median and maximum, and the best of its first 7
// short runs (what the bench's peak reads). Built by make bench-tools; it includes tools/bench_machine.c
// for its static fma_loop_gflops.
// usage: build/bench/fma_runs [SETS [LONG]]: SETS sets (default 3), the long runs LONG short runs long
// (default 60)
#include "tools/bench_machine.c"
static int by_value(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    const long iters = 4000000 * 12 / FMA_CHAINS * 16 / FMA_LANES;   // fma_peak_gflops's runs
    int sets = argc > 1 ? atoi(argv[1]) : 3, longer = argc > 2 ? atoi(argv[2]) : 60;
    if (argc > 3 || sets < 1 || longer < 1) { fprintf(stderr, "usage: %s [SETS [LONG]] (positive counts)\n", argv[0]); return 2; }
    double s[60], l[8];
    for (int w = 0; w < 5; w++) fma_loop_gflops(iters);
    for (int set = 0; set < sets; set++) {
        for (int i = 0; i < 60; i++) s[i] = fma_loop_gflops(iters);
        for (int i = 0; i < 8; i++) l[i] = fma_loop_gflops(iters * longer);
        double best7 = 0;
        for (int i = 0; i < 7; i++) best7 = fmax(best7, s[i]);
        qsort(s, 60, sizeof(double), by_value);
        qsort(l, 8, sizeof(double), by_value);
        double flop = (double)bench_threads() * iters * FMA_CHAINS * FMA_LANES * 2 / 1e9;
        printf("short (%.1f ms) runs: min %.1f median %.1f max %.1f; best of the first 7: %.1f | long (%.0f ms) runs: "
               "min %.1f median %.1f max %.1f GFLOP/s\n", 1e3 * flop / s[30], s[0], s[30], s[59], best7, longer * 1e3 * flop / l[4],
               l[0], l[4], l[7]);
    }
    return 0;
}
