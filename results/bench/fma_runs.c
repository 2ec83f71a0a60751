// results/bench/fma_runs.c: how far the FMA loop's speed moves from run to run on this machine, for runs as
// short as the bench's peak takes (~7 ms each, best of 5) and as long as a training step of small (~450 ms):
// three sets of 60 short and 8 long runs, each set's minimum, median and maximum, and the best of its first 7
// short runs (what the bench's peak reads).
// cc -O3 -march=native -fopenmp -I. -Itools results/bench/fma_runs.c build/float/nn/*.o build/float/util/*.o -lm
#include "tools/bench_machine.c"
static int by_value(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(void) {
    const long iters = 4000000 * 12 / FMA_CHAINS * 16 / FMA_LANES;   // fma_peak_gflops's runs
    double s[60], l[8];
    for (int w = 0; w < 5; w++) fma_loop_gflops(iters);
    for (int set = 0; set < 3; set++) {
        for (int i = 0; i < 60; i++) s[i] = fma_loop_gflops(iters);
        for (int i = 0; i < 8; i++) l[i] = fma_loop_gflops(iters * 60);
        double best7 = 0;
        for (int i = 0; i < 7; i++) best7 = fmax(best7, s[i]);
        qsort(s, 60, sizeof(double), by_value);
        qsort(l, 8, sizeof(double), by_value);
        double flop = (double)bench_threads() * iters * FMA_CHAINS * FMA_LANES * 2 / 1e9;
        printf("short (%.1f ms) runs: min %.1f median %.1f max %.1f; best of the first 7: %.1f | long (%.0f ms) runs: "
               "min %.1f median %.1f max %.1f GFLOP/s\n", 1e3 * flop / s[30], s[0], s[30], s[59], best7, 60e3 * flop / l[4],
               l[0], l[4], l[7]);
    }
    return 0;
}
