// tools/bench.c: how fast a training step is, and how close to the machine's limit.
//   (tools/bench_machine.c: the machine itself, its CPU, clock, FMA loop and latencies)
//
//   ./bench                  the whole benchmark: the machine's peak, every named config, the cost
//                            of each positional scheme, and attention as T doubles; a table on
//                            stdout and the same numbers in bench.csv
//   ./bench --config NAME    one config; ends with
//                            RESULT config=NAME tokens_per_s=X gflops=Y peak_fraction=Z peak_rss_mb=W
//                            (--steps N: N timed steps after the warm-up, their median; more steps,
//                            less noise when two builds are compared)
//   ./bench --schemes        only the cost of each positional scheme (no CSV)
//   ./bench --config NAME --precision bf16
//                            the same with --precision bf16's products (nn/bf16.h); its RESULT line ends
//                            with path=amx|avx512bf16|portable (the path that ran), and its fraction is
//                            of the TDPBF16PS loop's peak on the amx path, of the VDPBF16PS loop's on
//                            the avx512bf16 path (of the fp32 peak on the portable path, which
//                            computes in fp32)
//   ./bench --bf16           only the bf16 section of the full run (below), no CSV; with
//                            PEGPT_BF16_PATH=avx512bf16-emulated its ceiling column is the avx512bf16
//                            path's on any CPU (the packing is that path's code, the instruction's time
//                            is left out)
//   ./bench --bf16-loss      ./train's default run (1000 steps on the embedded corpus) in fp32 and in
//                            bf16: the validation losses, which must agree within 2%
//
// Every config is a training step except small-eval-t32768: one forward pass (no backward, no
// optimiser) of `small` with nope positions, a model trained at context 256, over one window of
// 32768 tokens: the time and peak memory of scoring a long window. Its FLOPs are the forward's:
//   tokens x (2 x (12 L C^2 + V C) + 2 L T C)
//
// FLOP count of a training step (forward + backward, the usual 6 x parameters x tokens rule):
//   tokens x (6 x (12 L C^2 + V C) + 6 L T C)
// 12 L C^2 are the four linear layers of each block, V C the LM head (tied to wte, which is a lookup
// at the input and costs nothing there), and 6 L T C causal attention: per token q.k and p.v over
// T/2 keys on average (2 T C) forward, twice that backward. Our backward recomputes the scores
// (another T C), which is not counted: the number is the work any implementation must do.
// The peak is the best of an FMA loop and OpenBLAS sgemm on the training shapes (when the bench is
// built with OpenBLAS), measured in the same run with the same threads.
// The full run also measures small and gpt2-124m in bf16 against fp32 (3 pairs of neighbouring
// runs each, the median ratio), the bf16 peaks where the CPU has AVX512_BF16 or AMX, and the bf16 loss check.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef BENCH_OPENBLAS
#include <cblas.h>
#endif

#include "nn/bf16.h"
#include "nn/kernels.h"
#include "model.h"
#include "tools/bench_machine.h"
#include "util/flags.h"

static int g_bf16;   // --precision bf16: every model the bench builds computes its linear layers in bf16

// The products of a training step as matmul_forward / matmul_backward call them, the three of every
// linear layer of `small` (B=8 T=256: 2048 rows) and `gpt2-124m` (B=4 T=64: 256 rows): forward
// out = inp @ W^T (W read in place through B's strides: Bt), backward dinp = dout @ W and
// dW = dout^T @ inp (A read transposed: T): all three overwrite C, as a step of one micro-batch
// calls them (a later micro-batch's dW adds to C).
typedef struct { int M, N, K, trans_a, trans_b, acc; char what[40]; } Shape;
enum { N_SHAPES = 30 };
static Shape SHAPES[N_SHAPES];
static void make_shapes(void) {
    static const struct { const char *model; int rows, C, V; } models[] = { { "small", 2048, 384, 256 }, { "gpt2", 256, 768, 50304 } };
    int n = 0;
    for (int m = 0; m < 2; m++) {
        int R = models[m].rows, C = models[m].C;
        const struct { const char *name; int in, out; } layers[] = {
            { "qkv", C, 3 * C }, { "attn proj", C, C }, { "fc", C, 4 * C }, { "fc proj", 4 * C, C }, { "LM head", C, models[m].V } };
        for (int l = 0; l < 5; l++) {
            Shape fwd = { R, layers[l].out, layers[l].in, 0, 1, 0, "" }, dx = { R, layers[l].in, layers[l].out, 0, 0, 0, "" };
            Shape dw = { layers[l].out, layers[l].in, R, 1, 0, 0, "" };
            snprintf(fwd.what, sizeof fwd.what, "%s: %s", models[m].model, layers[l].name);
            snprintf(dx.what, sizeof dx.what, "%s: %s dX", models[m].model, layers[l].name);
            snprintf(dw.what, sizeof dw.what, "%s: %s dW", models[m].model, layers[l].name);
            SHAPES[n++] = fwd; SHAPES[n++] = dx; SHAPES[n++] = dw;
        }
    }
}

// GFLOP/s of C (M,N) = A (M,K) @ B (K,N) (C += for the backward's products): ours in gf[0] and,
// when built with OpenBLAS, sgemm in gf[1]. Two rounds; in each, every side runs 4 times in a row
// and keeps its best after the first. The first run of a block pays for the other library's idle
// threads still spinning (alternating call by call cost OpenBLAS up to half its speed on the
// small shapes); the second round gives a stall of the shared machine a second chance to miss.
// After OpenBLAS's runs the bench sleeps OPENBLAS_IDLE_S: its worker threads spin (yielding) for
// 2^28 cycles after a call before they sleep, 75 ms at 3.6 GHz, longer than a block of our runs,
// and on 2 cores they sometimes kept ours off a core for a whole time slice: such runs took 8 ms
// whatever the shape (37.9 GFLOP/s at 256x768x768, 113.7 at 256x2304x768; docs/speed.md).
#define OPENBLAS_IDLE_S 0.3
static void gemm_gflops(const Shape *s, double gf[2]) {
    float *a = xmalloc(sizeof(float) * s->M * s->K), *b = xmalloc(sizeof(float) * s->K * s->N);
    float *c = xcalloc((size_t)s->M * s->N, sizeof(float));
    int lda = s->trans_a ? s->M : s->K, ldb = s->trans_b ? s->K : s->N, acc = s->acc, sides = 1;
#ifdef BENCH_OPENBLAS
    sides = 2;
#endif
    for (size_t i = 0; i < (size_t)s->M * s->K; i++) a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < (size_t)s->K * s->N; i++) b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    double best[2] = { 1e30, 1e30 };
    for (int round = 0; round < 2; round++)
        for (int side = 0; side < sides; side++)
            for (int r = 0; r < 4; r++) {
                double t0 = bench_now();
                if (side == 1) {
#ifdef BENCH_OPENBLAS
                    cblas_sgemm(CblasRowMajor, s->trans_a ? CblasTrans : CblasNoTrans, s->trans_b ? CblasTrans : CblasNoTrans,
                                s->M, s->N, s->K, 1.0f, a, lda, b, ldb, acc ? 1.0f : 0.0f, c, s->N);
#endif
                } else {
                    gemm_own(s->M, s->N, s->K, a, s->trans_a ? 1 : (size_t)s->K, s->trans_a ? (size_t)s->M : 1, b, s->trans_b ? 1 : (size_t)s->N,
                             s->trans_b ? (size_t)s->K : 1, c, s->N, acc);
                }
                double dt = bench_now() - t0;
                if (r > 0 && dt < best[side]) best[side] = dt;
                if (side == 1 && r == 3) nanosleep(&(struct timespec){ .tv_nsec = OPENBLAS_IDLE_S * 1e9 }, NULL);
            }
    (void)lda; (void)ldb;
    for (int side = 0; side < 2; side++) gf[side] = side < sides ? 2.0 * s->M * s->N * s->K / best[side] / 1e9 : 0;
    free(a); free(b); free(c);
}

// ---- training steps -----------------------------------------------------------------------------

typedef struct {
    const char *name;
    int L, C, NH, V, B, T, steps;
    int eval_context;   // 0: training steps; else forward passes only, nope positions, a model of this
                        // context (the window T may lie far past it), and no warm-up pass
} Config;

static const Config CONFIGS[] = {
    { "gpt2-124m", 12, 768, 12, 50257, 4, 64, 3, 0 },
    { "gpt2-124m-t1024", 12, 768, 12, 50257, 1, 1024, 2, 0 },
    { "gpt2-124m-t4096", 12, 768, 12, 50257, 1, 4096, 1, 0 },   // the memory target: < 8 GB
    { "small", 6, 384, 6, 256, 8, 256, 4, 0 },
    { "tiny", 4, 128, 4, 256, 16, 64, 10, 0 },         // ./train's default model (4 layers, C = 128, vocab 256)
    { "tiny-gpt2", 4, 128, 4, 50257, 4, 64, 10, 0 },   // the same with GPT-2's vocabulary (README's make kjv-gpt2 run)
    { "small-eval-t32768", 6, 384, 6, 256, 1, 32768, 1, 256 },   // a long window: forward only
};
enum { N_CONFIGS = (int)(sizeof(CONFIGS) / sizeof(CONFIGS[0])) };

typedef struct {
    double ms, tokens_per_s, gflops, share[PROF_N + 1], rss_mb;
    double pack;   // --precision bf16: the share of the step spent packing or rounding the products' operands
} StepResult;

// FLOPs of a step's matrix products (part 0: the four linear layers per block and the LM head) or of
// its causal attention (part 1); forward only (2 per multiply-add) for an evaluation config, else
// forward and backward (6)
static double part_flops(const Config *c, int part) {
    double tokens = (double)c->B * c->T, L = c->L, C = c->C, passes = c->eval_context ? 2 : 6;
    return part ? tokens * passes * L * c->T * C : tokens * passes * (12 * L * C * C + (double)c->V * C);
}

static double flops_per_step(const Config *c) { return part_flops(c, 0) + part_flops(c, 1); }

// GFLOP/s of a step's products (part 0) or attention (part 1) on their own: their FLOPs over their
// share of the step's time; 0 when the share is 0
static double part_gflops(const Config *c, const StepResult *r, int part) {
    double sec = r->share[part] * r->ms / 1e3;
    return sec > 0 ? part_flops(c, part) / sec / 1e9 : 0;
}

static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

// Builds the config with positional scheme `pe` (a layer scheme in every layer, or an input
// scheme; NULL: the default positions), runs one warm-up step and c->steps timed steps (forward, backward, clip, AdamW); an
// evaluation config (eval_context) runs c->steps timed forward passes and nothing else.
static StepResult run_steps(const Config *c, const char *pe, int steps) {
    int eval = c->eval_context > 0;
    GPTConfig cfg = { .vocab_size = c->V, .n_layer = c->L, .n_head = c->NH, .n_embd = c->C,
                      .max_seq_len = eval ? c->eval_context : c->T };
    posenc_defaults(&cfg.pe, c->L);
    char msg[256];
    CHECK(posenc_schedule(&cfg.pe, c->L, pe, NULL, NULL, msg, sizeof msg), "%s", msg);
    GPT m;
    gpt_build(&m, &cfg, 1, c->T);             // position tables for the whole window
    gpt_set_bf16(&m, g_bf16);
    Batch b;
    batch_alloc(&b, c->B, c->T);
    Rng r; rng_seed(&r, 7);
    for (int i = 0; i < c->B * c->T; i++) { b.tokens[i] = (int)(rng_u64(&r) % c->V); b.targets[i] = (int)(rng_u64(&r) % c->V); }
    AdamWConfig o = { 1e-4, 0.9, 0.95, 1e-8, 0.1 };
    double *ms = xmalloc(sizeof(double) * steps), prof0[PROF_N], pack0 = 0, total = 0, wsum = 0;
    for (int i = 0; i < c->B * c->T; i++) wsum += b.weights[i];
    // evaluation keeps one layer's activations, as ppl does; training's forward writes dlogits, as ./train's steps
    GptPass pass = { .forward_only = eval, .loss_grad_scale = eval ? 0 : 1.0 / wsum };
    for (int s = eval ? 0 : -1; s < steps; s++) {
        if (s == 0) { memcpy(prof0, m.state.prof, sizeof prof0); pack0 = bf16_pack_seconds(); }
        double t0 = bench_now();
        gpt_forward(&m, &b, &pass);
        if (!eval) {
            gpt_zero_grad(&m);
            gpt_backward(&m, 1.0 / wsum, &pass);
            gpt_adamw(&m, &o, s + 2, gpt_clip_scale(gpt_grad_norm(&m), 1.0));
        }
        double dt = bench_now() - t0;
        if (s >= 0) { ms[s] = dt * 1e3; total += dt; }
    }
    StepResult res = { 0 };
    qsort(ms, steps, sizeof(double), cmp_double);
    res.ms = steps % 2 ? ms[steps / 2] : 0.5 * (ms[steps / 2 - 1] + ms[steps / 2]);
    res.tokens_per_s = c->B * c->T / (res.ms / 1e3);
    res.gflops = flops_per_step(c) / (res.ms / 1e3) / 1e9;
    double rest = total;
    for (int k = 0; k < PROF_N; k++) { res.share[k] = (m.state.prof[k] - prof0[k]) / total; rest -= m.state.prof[k] - prof0[k]; }
    res.share[PROF_N] = rest / total;
    res.pack = (bf16_pack_seconds() - pack0) / total;   // (a part of the matmul share)
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    res.rss_mb = ru.ru_maxrss / 1024.0;           // ru_maxrss is in KiB: this is MiB
    free(ms); batch_free(&b); gpt_free(&m);
    return res;
}

// Runs a config in a child process (this program with --config), so that its peak resident
// memory is its own; a fresh exec, because an OpenMP runtime does not survive a bare fork.
static StepResult run_isolated(const Config *c, double peak, int bf16) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/proc/%d/exe --config %s --peak %.6f --threads %d%s", (int)getpid(), c->name, peak, bench_threads(),
             bf16 ? " --precision bf16" : "");
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    CHECK(f, "bench: cannot run '%s'", cmd);
    StepResult r = { 0 };
    char line[1024];
    int got = 0;
    while (fgets(line, sizeof line, f)) {
        got += sscanf(line, "SHARES ms=%lf tokens_per_s=%lf gflops=%lf matmul=%lf attention=%lf optimizer=%lf rest=%lf rss_mb=%lf pack=%lf",
                      &r.ms, &r.tokens_per_s, &r.gflops, &r.share[0], &r.share[1], &r.share[2], &r.share[3], &r.rss_mb, &r.pack) == 9;
    }
    CHECK(pclose(f) == 0 && got == 1, "bench: config %s failed (%s)", c->name, cmd);
    return r;
}

static const Config *find_config(const char *name) {
    for (int i = 0; i < N_CONFIGS; i++) if (strcmp(CONFIGS[i].name, name) == 0) return &CONFIGS[i];
    return NULL;
}

// ---- the cost of each positional scheme ----------------------------------------------------------

// Rounds over every scheme on `small`, each run 2 timed steps, each round starting at another scheme;
// a scheme's time is its median over the rounds. In a single pass the first scheme measured (nope)
// came out 5-15% slower than every other (the process's first big allocations, the machine's
// drift); rotated rounds spread that over all schemes instead of loading it onto the baseline.
// csv: NULL or the CSV.
static void scheme_overheads(FILE *csv) {
    enum { ROUNDS = 3 };
    int ns = posenc_count();
    printf("\npositional schemes on `small` (ms/step, median of %d rounds over all schemes; ratio to nope, same run):\n", ROUNDS);
    const Config *small = find_config("small");
    StepResult *sr = xcalloc((size_t)ns * ROUNDS, sizeof(StepResult));
    run_steps(small, posenc_scheme(PE_NOPE)->name, 1);   // a throwaway run: page faults, thread start-up
    for (int round = 0; round < ROUNDS; round++)          // each round starts at another scheme
        for (int k = 0; k < ns; k++) {
            int s = (k + round * ns / ROUNDS) % ns;
            sr[(size_t)s * ROUNDS + round] = run_steps(small, posenc_scheme(s)->name, 2);
        }
    double base = 0;
    for (int s = 0; s < ns; s++) {
        double ms[ROUNDS], att[ROUNDS];
        for (int k = 0; k < ROUNDS; k++) { ms[k] = sr[(size_t)s * ROUNDS + k].ms; att[k] = sr[(size_t)s * ROUNDS + k].share[1]; }
        qsort(ms, ROUNDS, sizeof(double), cmp_double);
        qsort(att, ROUNDS, sizeof(double), cmp_double);
        double med = ms[ROUNDS / 2];
        if (s == PE_NOPE) base = med;
        const char *name = posenc_scheme(s)->name;
        printf("  %-11s %9.1f ms  %6.3f  (attention %4.1f%% of the step; rounds", name, med, med / base, 100 * att[ROUNDS / 2]);
        for (int k = 0; k < ROUNDS; k++) printf(" %.0f", sr[(size_t)s * ROUNDS + k].ms);
        printf(")\n");
        if (csv) fprintf(csv, "scheme,%s,%.2f,%.1f,%.2f,,,,%.4f,,,%.4f\n", name, med, small->B * small->T / (med / 1e3),
                flops_per_step(small) / (med / 1e3) / 1e9, att[ROUNDS / 2], med / base);
    }
    free(sr);
}

// ---- attention alone as T doubles ---------------------------------------------------------------

static void attention_scaling(FILE *csv) {
    int NH = 6, C = 384, B = 1;
    printf("\nattention alone (B=1, 6 heads, C=384, nope), forward + backward, as T doubles:\n");
    printf("  %6s %10s %14s %22s\n", "T", "ms", "memory MB", "a (T,T) matrix would be");
    for (int T = 256; T <= 8192; T *= 2) {
        size_t N = (size_t)B * T;
        real *qkv = xmalloc(sizeof(real) * N * 3 * C), *out = xmalloc(sizeof(real) * N * C), *dout = xmalloc(sizeof(real) * N * C);
        real *dqkv = xcalloc(N * 3 * C, sizeof(real)), *lse = xmalloc(sizeof(real) * B * NH * T);
        real *scratch = xmalloc(sizeof(real) * bench_threads() * ATT_SCRATCH(C / NH));
        int *pos = xmalloc(sizeof(int) * N), *doc = xcalloc(N, sizeof(int));
        for (size_t i = 0; i < N * 3 * C; i++) qkv[i] = (real)(((i * 2654435761u) % 1000) / 1000.0 - 0.5);
        for (size_t i = 0; i < N * C; i++) dout[i] = (real)(((i * 40503u) % 1000) / 1000.0 - 0.5);
        for (size_t i = 0; i < N; i++) pos[i] = (int)i;
        PosConfig pc; posenc_defaults(&pc, 1); pc.input = PE_NOPE;
        PosDims d = { 1, NH, C, C / NH, T };
        PosTables t; posenc_tables_build(&t, &pc, &d, T);
        AttnPos ap = { .pos = pos, .doc = doc, .scheme = posenc_scheme(PE_NOPE), .tables = &t };
        double t0 = bench_now();
        attention_forward(out, lse, qkv, &ap, scratch, B, T, C, NH);
        attention_backward(dqkv, scratch, dout, qkv, out, lse, &ap, B, T, C, NH);
        double ms = (bench_now() - t0) * 1e3;
        // what attention keeps between forward and backward, plus its per-thread scratch
        double mb = (sizeof(real) * (double)B * NH * T + sizeof(real) * bench_threads() * (double)ATT_SCRATCH(C / NH)) / 1e6;
        double full = sizeof(real) * (double)B * NH * T * T / 1e6;
        printf("  %6d %10.1f %14.3f %19.1f MB\n", T, ms, mb, full);
        fprintf(csv, "attention,T=%d,%.3f,,,,%.4f,,,,,%.1f\n", T, ms, mb, full);
        posenc_tables_free(&t);
        free(qkv); free(out); free(dout); free(dqkv); free(lse); free(scratch); free(pos); free(doc);
    }
}

// ---- main ---------------------------------------------------------------------------------------


// Prints what the machine is: CPU, threads, what the binary was built for and what the CPU has,
// the gemm behind the model and OpenBLAS's kernel, into *info too; returns the measured clock (0: unknown).
static double print_machine(FILE *csv, CpuInfo *info) {
    CpuInfo ci = cpu_info();
    *info = ci;
    printf("CPU: %s (%s, family %d, model %d, stepping %d), %d threads\n", ci.model, ci.vendor, ci.family, ci.model_no,
           ci.stepping, bench_threads());
    printf("built for %s; the CPU has:%s%s%s%s%s\n", built_for(), ci.avx2 ? " AVX2" : "", ci.avx512f ? " AVX-512" : "",
           ci.avx512_bf16 ? " AVX512_BF16" : "", ci.amx_bf16 ? " AMX-BF16" : "",
           ci.avx2 || ci.avx512f ? "" : " none of AVX2, AVX-512, AVX512_BF16, AMX");
    printf("gemm of the model: %s\n", gemm_backend());
#ifdef BENCH_OPENBLAS
    const char *forced = getenv("OPENBLAS_CORETYPE");
    const char *core = openblas_get_corename();
    printf("OpenBLAS kernel: %s (%s)\n", core, forced ? "forced by OPENBLAS_CORETYPE" : "its own choice for this CPU");
    // an OpenBLAS older than the CPU falls back to its SSE3 kernel (Debian 12's 0.3.21 on Emerald Rapids)
    if (!forced && strcasecmp(core, "prescott") == 0 && (ci.avx512f || ci.avx2))
        printf("  (this OpenBLAS does not know the CPU and runs SSE3 code; OPENBLAS_CORETYPE=%s selects its %s kernel)\n",
               ci.avx512f ? "SkylakeX" : "Haswell", ci.avx512f ? "AVX-512" : "AVX2");
#endif
    double ghz = clock_ghz();
    if (ghz > 0) printf("clock measured with all threads busy: %.2f GHz\n", ghz);
    // what a step pays when data moves between cores and when it falls out of a cache (the
    // products' speed in a step against alone: docs/speed.md, "The matrix products")
    double rt = core_round_trip_ns(), lat[4];
    const int mib[4] = { 1, 4, 16, 64 };
    for (int k = 0; k < 4; k++) lat[k] = load_latency_ns((size_t)mib[k] << 20);
    if (rt > 0) printf("a cache line between two cores: %.0f ns round trip\n", rt);
    printf("dependent loads: %.1f ns in 1 MiB, %.1f in 4 MiB, %.1f in 16 MiB, %.1f in 64 MiB\n", lat[0], lat[1], lat[2], lat[3]);
    if (csv) {
        fprintf(csv, "latency,core_round_trip,,,,,,,,,,%.1f ns\n", rt);
        for (int k = 0; k < 4; k++) fprintf(csv, "latency,load_%dMiB,,,,,,,,,,%.2f ns\n", mib[k], lat[k]);
    }
    if (csv) fprintf(csv, "machine,\"%s (%s, family %d, model %d, stepping %d)\",,,,,,,,,,%s\n", ci.model, ci.vendor,
                     ci.family, ci.model_no, ci.stepping, built_for());
    return ghz;
}

// The peak every fraction is taken against: the best of the FMA loop, our gemm and OpenBLAS sgemm on
// the training shapes, each the best of repeated runs after a warm-up, on the same threads.
typedef struct { double fma, ours, blas, best; } Peak;

static Peak measure_peak(FILE *csv, int verbose) {
    Peak pk = { 0 };
    CpuInfo ci;
    double ghz = verbose ? print_machine(csv, &ci) : 0;
    int warmups = 0;
    pk.fma = fma_peak_gflops(&warmups);
    if (verbose) {
        printf("FMA loop (%d chains of %d-float vectors per thread): %.1f GFLOP/s, best of 5 after %d warm-up runs\n",
               FMA_CHAINS, FMA_LANES, pk.fma, warmups);
        double rate[FMA_THREADS_MAX], lo = 0, hi = 0;
        int nr = fma_thread_gflops(rate, FMA_THREADS_MAX);
        printf("  each thread's own:");
        for (int t = 0; t < nr; t++) {
            printf(" %.1f", rate[t]);
            lo = t == 0 || rate[t] < lo ? rate[t] : lo;
            hi = rate[t] > hi ? rate[t] : hi;
        }
        printf(" GFLOP/s (the slowest %.2f of the fastest%s)\n", hi > 0 ? lo / hi : 0,
               hi > 0 && lo < 0.9 * hi ? ": the cores run at different speeds, and every even split waits for the slowest" : "");
        if (csv) fprintf(csv, "peak,fma_thread_min_over_max,,,%.4f,,,,,,,\n", hi > 0 ? lo / hi : 0);
        if (nr > 1) {
            // alone, a thread may also run at a higher clock (fewer busy cores): under 0.6 is sharing
            double one = fma_one_thread_gflops(), f = one > 0 ? pk.fma / (nr * one) : 0;
            printf("  one thread alone: %.1f GFLOP/s (the loop on all %d threads gave %.2f of %d x that%s)\n", one, nr, f, nr,
                   f > 0 && f < 0.6 ? ": the threads share FMA units (more threads than cores, SMT siblings, or virtual "
                   "CPUs placed on one core), and the peak is that of fewer cores than threads" : "");
            if (csv) fprintf(csv, "peak,fma_one_thread,,,%.2f,,,,,,,\n", one);
        }
        if (ghz > 0) {
            // two FMA units of the build's width per core: Intel's server cores (AVX-512) and AMD Zen 2-5
            // at 256 bits; Zen 4 runs a 512-bit FMA in two halves (half of this), Zen 5 has two full ones.
            // Zen 1 and Zen+ (AMD family 23, models below 0x30) split a 256-bit FMA over their two
            // 128-bit units: one of this width per cycle.
            int units = !strcmp(ci.vendor, "AuthenticAMD") && ci.family == 23 && ci.model_no < 0x30 && FMA_LANES >= 8 ? 1 : 2;
            double theory = bench_threads() * ghz * units * FMA_LANES * 2;
            printf("theoretical at that clock with %d FMA unit%s of this width per core: %.1f GFLOP/s "
                   "(the loop reached %.0f%%: %.1f flops per cycle per thread)\n", units, units > 1 ? "s" : "",
                   theory, 100 * pk.fma / theory, pk.fma / bench_threads() / ghz);
            if (pk.fma > 1.05 * theory)   // seen on Zen 5 virtual machines: 144-195% (docs/speed.md)
                printf("  (over 100%%: the clock read above is not the one the loop ran at; it rose after the reading, or the "
                       "add chain ran slow on a shared core: read the FMA loop, not that clock, as this machine's peak)\n");
            if (csv) fprintf(csv, "peak,theoretical,,,%.2f,,,,,,,%.3f GHz\n", theory, ghz);
        }
    }
    if (csv) fprintf(csv, "peak,fma,,,%.2f,,,,,,,\n", pk.fma);
    make_shapes();
    if (verbose) {
        GemmBlocking bl = gemm_blocking();
        printf("\nmatrix products of the training steps, the three of every linear layer, GFLOP/s (best of 6 runs\n"
               "each; Bt: B read transposed, as the forward reads W; T: A transposed, as dW = dout^T inp; all\n"
               "overwrite C, as one micro-batch's step does; %%FMA: of the FMA loop above); gemm %s, blocks kc %d, mc %d, nc %d\n"
               "(%d with a packed transposed A) from caches of %zu KiB (L1d) and %zu KiB (L2):\n"
               "  %-24s %18s %9s %6s %9s %7s\n", gemm_backend(), bl.kc, bl.mc, bl.nc, bl.nc_t, bl.l1d >> 10, bl.l2 >> 10,
               "shape", "M x N x K", "ours", "%FMA", "OpenBLAS", "ratio");
    }
    for (int i = 0; i < N_SHAPES; i++) {
        const Shape *s = &SHAPES[i];
        double gf[2];
        gemm_gflops(s, gf);
        pk.ours = fmax(pk.ours, gf[0]);
        pk.blas = fmax(pk.blas, gf[1]);
        char dims[48];
        snprintf(dims, sizeof dims, "%dx%dx%d%s", s->M, s->N, s->K, s->trans_a ? "T" : s->trans_b ? "Bt" : "");
        if (verbose) {
            printf("  %-24s %18s %9.1f %5.1f%%", s->what, dims, gf[0], 100 * gf[0] / pk.fma);
            if (gf[1] > 0) printf(" %9.1f %7.2f\n", gf[1], gf[0] / gf[1]);
            else printf(" %9s\n", "-");
        }
        if (csv) fprintf(csv, "gemm,%s,,,%.2f,%.2f,,,,,,%s %.4f of the FMA loop\n", dims, gf[0], gf[1], s->what, gf[0] / pk.fma);
    }
    pk.best = fmax(pk.fma, fmax(pk.ours, pk.blas));
    if (verbose) {
        printf("best product: ours %.1f GFLOP/s", pk.ours);
        if (pk.blas > 0) printf(", OpenBLAS %.1f", pk.blas);
        else printf(" (build with libopenblas-dev installed to compare with OpenBLAS)");
        printf("\npeak = the best of the FMA loop and the products: %.1f GFLOP/s\n", pk.best);
    }
    if (csv) fprintf(csv, "peak,ours,,,%.2f,,,,,,,\npeak,openblas,,,%.2f,,,,,,,\n", pk.ours, pk.blas);
    return pk;
}

// A fraction of the peak above 1 means the peak was not the machine's ceiling (it was measured while
// the machine was slower than during the step): the numbers are wrong, so none is printed.
static void check_fraction(const char *name, double gflops, double peak) {
    CHECK(gflops <= peak, "bench: %s ran at %.1f GFLOP/s, above the measured peak of %.1f: the peak was measured "
          "while the machine was slower (another load, a clock change), so no fraction of it is printed; run the "
          "bench again on a quiet machine", name, gflops, peak);
}

// Every config in its own process, then the FMA loop again, then the table: fractions are taken
// against the best peak of the whole run, and a fraction above 1 stops the bench (check_fraction).
// With --rounds N every config runs N times, round by round (each round all configs in order, so a
// config's runs lie minutes apart), and the table gives each config's median round (by GFLOP/s) and
// the range of its rounds' fractions.
enum { ROUNDS_MAX = 9 };
static int g_rounds = 1;   // --rounds
static double run_configs(FILE *csv, const Peak *pk) {
    printf("\ntraining steps, each config in its own process");
    if (g_rounds > 1) printf(", %d rounds", g_rounds);
    printf(":");
    StepResult res[N_CONFIGS][ROUNDS_MAX];
    double local[N_CONFIGS][ROUNDS_MAX];    // the FMA loop just before and just after each run: the better
    for (int rd = 0; rd < g_rounds; rd++)
        for (int i = 0; i < N_CONFIGS; i++) {
            printf(" %s", CONFIGS[i].name);
            fflush(stdout);
            double before = fma_peak_gflops(NULL);
            res[i][rd] = run_isolated(&CONFIGS[i], pk->best, 0);
            local[i][rd] = fmax(before, fma_peak_gflops(NULL));
        }
    // the FMA loop again: a peak measured while the machine was slow would inflate every fraction
    double fma_end = fma_peak_gflops(NULL), peak = fmax(pk->best, fma_end);
    printf("\nFMA loop after the configs: %.1f GFLOP/s (%+.1f%% from the start)%s; peak %.1f GFLOP/s\n", fma_end,
           100 * (fma_end / pk->fma - 1), fabs(fma_end / pk->fma - 1) > 0.1 ? ": the machine changed speed during the run" : "",
           peak);
    fprintf(csv, "peak,fma_after_configs,,,%.2f,,,,,,,\npeak,best,,,%.2f,,,,,,,\n", fma_end, peak);
    for (int i = 0; i < N_CONFIGS; i++)
        for (int rd = 0; rd < g_rounds; rd++) {
            check_fraction(CONFIGS[i].name, res[i][rd].gflops, peak);
            check_fraction(CONFIGS[i].name, res[i][rd].gflops, local[i][rd]);
        }
    printf("\ntraining steps (forward, backward, AdamW; learned positions; median of timed steps; the last row\n"
           "is one forward pass only, see below; %%peak of %.1f GFLOP/s; %%local of the better of the FMA loop\n"
           "just before and just after the config, the local column; mm%%pk and att%%pk: the products' and attention's\n"
           "own GFLOP/s in the step, their FLOPs over their share of its time, as %% of the peak%s):\n", peak,
           g_rounds > 1 ? "; each config's median round, and the range of %peak over its rounds" : "");
    printf("  %-16s %9s %9s %8s %7s %7s %7s %8s %7s %7s %7s %7s %6s %6s%s\n", "config", "ms/step", "tokens/s", "GFLOP/s",
           "%peak", "local", "%local", "RSS MiB", "matmul", "attn", "optim", "rest", "mm%pk", "att%pk",
           g_rounds > 1 ? "   rounds' %peak" : "");
    for (int i = 0; i < N_CONFIGS; i++) {
        const Config *c = &CONFIGS[i];
        int order[ROUNDS_MAX];                       // the rounds by GFLOP/s, slowest first
        for (int rd = 0; rd < g_rounds; rd++) {
            int at = rd;
            while (at > 0 && res[i][order[at - 1]].gflops > res[i][rd].gflops) { order[at] = order[at - 1]; at--; }
            order[at] = rd;
        }
        int med = order[(g_rounds - 1) / 2];
        StepResult r = res[i][med];
        double lo = res[i][order[0]].gflops / peak, hi = res[i][order[g_rounds - 1]].gflops / peak;
        double mm = part_gflops(c, &r, 0), att = part_gflops(c, &r, 1);
        printf("  %-16s %9.1f %9.0f %8.1f %6.1f%% %7.1f %6.1f%% %8.0f %6.1f%% %6.1f%% %6.1f%% %6.1f%% %5.1f%% %5.1f%%", c->name,
               r.ms, r.tokens_per_s, r.gflops, 100 * r.gflops / peak, local[i][med], 100 * r.gflops / local[i][med], r.rss_mb,
               100 * r.share[0], 100 * r.share[1], 100 * r.share[2], 100 * r.share[3], 100 * mm / peak, 100 * att / peak);
        if (g_rounds > 1) printf("   %5.1f-%.1f%%", 100 * lo, 100 * hi);
        printf("\n");
        fprintf(csv, "config,%s,%.2f,%.1f,%.2f,%.4f,%.1f,%.4f,%.4f,%.4f,%.4f,local_peak=%.2f local_fraction=%.4f", c->name,
                r.ms, r.tokens_per_s, r.gflops, r.gflops / peak, r.rss_mb, r.share[0], r.share[1], r.share[2], r.share[3],
                local[i][med], r.gflops / local[i][med]);
        fprintf(csv, " matmul_gflops=%.2f attention_gflops=%.2f", mm, att);
        if (g_rounds > 1) fprintf(csv, " rounds=%d fraction_min=%.4f fraction_max=%.4f", g_rounds, lo, hi);
        fprintf(csv, "\n");
    }
    printf("  (small-eval-t32768: one forward pass of `small` with nope positions, trained context 256, over one\n"
           "   window of 32768 tokens: ms/step is that pass, GFLOP/s counts forward FLOPs, no backward or AdamW)\n");
    fflush(stdout);
    return peak;
}

// ---- bf16 against fp32 --------------------------------------------------------------------------

// The peak a bf16 step's fraction is of: the TDPBF16PS loop on the amx path, the VDPBF16PS loop on
// the avx512bf16 path, the fp32 peak on the others (the portable path's products run in fp32; the
// emulated paths are the tests').
static double bf16_reference_peak(double fp32_peak, double *dp_peak, double *amx_peak) {
    *dp_peak = bf16_peak_gflops(1.0);
    *amx_peak = bf16_amx_peak_gflops(1.0);
    Bf16Path p = bf16_path();
    return p == BF16_AMX ? *amx_peak : p == BF16_AVX512 ? *dp_peak : fp32_peak;
}

// small and gpt2-124m with --precision bf16 against fp32, each run in its own process, as 3 pairs
// (fp32, then bf16) one after the other: the medians of each precision's tokens/s and of the 3
// pairs' ratios, with the ratios' range. A ratio of neighbours in time, not of runs minutes apart:
// on a shared machine one config's speed drifts by 10-30% over minutes, and a pair sees the same
// drift.
static void bf16_section(FILE *csv, double peak) {
    enum { PAIRS = 3 };
    _Static_assert(PAIRS == 3, "the medians below are of 3");
    double bpeak, apeak, ref = bf16_reference_peak(peak, &bpeak, &apeak);
    printf("\n--precision bf16: path %s (%s)\n", bf16_path_name(bf16_path()), bf16_path_reason());
    if (bpeak > 0) printf("VDPBF16PS loop: %.1f GFLOP/s, %.2f x the fp32 peak\n", bpeak, bpeak / peak);
    if (apeak > 0) printf("TDPBF16PS loop: %.1f GFLOP/s, %.2f x the fp32 peak\n", apeak, apeak / peak);
    if (bpeak == 0 && apeak == 0)
        printf("no AVX512_BF16 or AMX on this CPU: no bf16 peak (the portable path's fraction is of the fp32 peak)\n");
    if (csv) fprintf(csv, "peak,bf16,,,%.2f,,,,,,,%s\n", bpeak, bf16_path_name(bf16_path()));
    if (csv && apeak > 0) fprintf(csv, "peak,amx,,,%.2f,,,,,,,%s\n", apeak, bf16_path_name(bf16_path()));
    static const char *names[] = { "small", "gpt2-124m" };
    printf("  %d pairs of runs (fp32, then bf16) per config; medians, and the pairs' ratios' range. pack: the share of\n"
           "  the bf16 step spent packing (rounding) operands; ceiling: bf16/fp32 if the bf16 products' instructions took\n"
           "  no time (the bf16 step less its products, plus their packing), the most a faster path could give\n", PAIRS);
    printf("  %-12s %14s %14s %10s %15s %8s %8s %9s %9s\n", "config", "fp32 tokens/s", "bf16 tokens/s", "bf16/fp32", "ratio range",
           "%peak", "pack", "ceiling", "RSS MiB");
    for (int k = 0; k < 2; k++) {
        const Config *c = find_config(names[k]);
        StepResult f[PAIRS], h[PAIRS];
        double ratio[PAIRS], ceiling[PAIRS];
        for (int p = 0; p < PAIRS; p++) {
            f[p] = run_isolated(c, peak, 0);
            h[p] = run_isolated(c, ref, 1);
            check_fraction(names[k], h[p].gflops, ref);
            ratio[p] = h[p].tokens_per_s / f[p].tokens_per_s;
            ceiling[p] = ratio[p] / (1 - h[p].share[0] + h[p].pack);
        }
        double ceil_med = median3(ceiling[0], ceiling[1], ceiling[2]);
        double tf = median3(f[0].tokens_per_s, f[1].tokens_per_s, f[2].tokens_per_s);
        double th = median3(h[0].tokens_per_s, h[1].tokens_per_s, h[2].tokens_per_s);
        double mr = median3(ratio[0], ratio[1], ratio[2]), lo = ratio[0], hi = ratio[0];
        for (int p = 1; p < PAIRS; p++) { lo = fmin(lo, ratio[p]); hi = fmax(hi, ratio[p]); }
        int mid = 0;                                   // the bf16 run with the median tokens/s, for the rest
        for (int p = 0; p < PAIRS; p++) if (h[p].tokens_per_s == th) mid = p;
        const StepResult *r = &h[mid];
        printf("  %-12s %14.1f %14.1f %9.2fx %7.2f-%.2fx %7.1f%% %7.1f%% %8.2fx %9.0f\n", names[k], tf, th, mr, lo, hi,
               100 * r->gflops / ref, 100 * r->pack, ceil_med, r->rss_mb);
        if (csv) fprintf(csv, "bf16,%s,%.2f,%.1f,%.2f,%.4f,%.1f,%.4f,%.4f,%.4f,%.4f,%s %.4f fp32 %.1f range %.4f-%.4f pack %.4f ceiling %.4f\n",
                names[k], r->ms, th, r->gflops, r->gflops / ref, r->rss_mb, r->share[0], r->share[1], r->share[2], r->share[3],
                bf16_path_name(bf16_path()), mr, tf, lo, hi, r->pack, ceil_med);
    }
    fflush(stdout);
}

// ./train's default run in fp32 and in bf16 (the same seed): the validation loss after 1000 steps.
// Returns 0 when they agree within 2%.
static int bf16_loss_check(FILE *csv) {
    double val[2] = { 0, 0 };
    printf("\n./train's default run (the embedded corpus, 1000 steps, %d threads) in fp32 and in bf16:\n", bench_threads());
    for (int k = 0; k < 2; k++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "./train --steps 1000 --log-every 100 --threads %d --precision %s", bench_threads(), k ? "bf16" : "fp32");
        fflush(stdout);
        FILE *f = popen(cmd, "r");
        CHECK(f, "bench: cannot run '%s'", cmd);
        char line[1024];
        int step = 0;
        while (fgets(line, sizeof line, f)) {
            int st, total;
            char *v = strstr(line, "| val ");
            if (sscanf(line, "step %d/%d", &st, &total) == 2 && v && st == 1000) { val[k] = strtod(v + 6, NULL); step = st; }
        }
        CHECK(pclose(f) == 0 && step == 1000, "bench: '%s' failed or printed no validation loss at step 1000 (is ./train built?)", cmd);
        printf("  %s: validation loss %.4f at step 1000\n", k ? "bf16" : "fp32", val[k]);
    }
    double rel = fabs(val[1] - val[0]) / val[0];
    int ok = rel <= 0.02;
    printf("  bf16 against fp32: %+.2f%% (%s: the limit is 2%%; bf16 path %s)\n", 100 * (val[1] - val[0]) / val[0],
           ok ? "within" : "NOT within", bf16_path_name(bf16_path()));
    if (csv) fprintf(csv, "bf16_loss,default,,,,,,,,,,fp32 %.4f bf16 %.4f\n", val[0], val[1]);
    return !ok;
}

// The command line (util/flags.h)
typedef struct {
    const char *config;                              // --config NAME
    int schemes, loss, bf16, shapes, precision;      // the switches; --precision: 1 = bf16
    double peak;
    int steps, rounds, threads;                      // 0: not given
} BenchArgs;

_Static_assert(ROUNDS_MAX == 9, "--rounds' help says 1-9");
static const char *const PRECISIONS[] = { "fp32", "bf16", NULL };
#define B(f) offsetof(BenchArgs, f)
FLAGS_TABLE_BEGIN
static const FlagRow FLAGS[] = {
    { "rounds", FLAG_INT, B(rounds), 1, ROUNDS_MAX, 0, "N", NULL,
      "the whole bench, its table of training steps run N times round by round (1-9; default 1):\neach config's "
      "median round and the range of its rounds' fractions of the peak" },
    { "config", FLAG_STRING, B(config), 0, 0, 0, "NAME", NULL, "only one config's training steps (the configs below)" },
    { "precision", FLAG_CHOICE, B(precision), 0, 0, 0, "fp32|bf16", NULL, "--config's linear layers (fp32)",
      .choices = PRECISIONS },
    { "peak", FLAG_DOUBLE, B(peak), 0, INFINITY, 0, "GFLOPS", NULL,
      "--config's and --bf16's peak, given instead of measured (a fraction of it is then not checked)", .lo_open = 1 },
    { "steps", FLAG_INT, B(steps), 1, 100000, 0, "N", NULL,
      "--config's timed steps (the step time is their median; default: the config's own, 1-10)" },
    { "shapes", FLAG_SWITCH, B(shapes), 0, 1, 0, NULL, NULL,
      "only the machine's peak and the table of matrix products per shape (no CSV)" },
    { "schemes", FLAG_SWITCH, B(schemes), 0, 1, 0, NULL, NULL, "only the table of positional schemes (no CSV)" },
    { "bf16", FLAG_SWITCH, B(bf16), 0, 1, 0, NULL, NULL,
      "only the bf16 section (the fp32 peak, the bf16 peaks, small and gpt2-124m in pairs of fp32\n"
      "and bf16 runs; no CSV)" },
    { "bf16-loss", FLAG_SWITCH, B(loss), 0, 1, 0, NULL, NULL,
      "./train's default run in fp32 and bf16, validation losses within 2%" },
    { "threads", FLAG_INT, B(threads), 1, 1024, 0, "N", NULL,
      "the threads of every part (default: OpenMP's, every core)" },
};
FLAGS_TABLE_END
#undef B
enum { N_FLAGS = (int)(sizeof FLAGS / sizeof FLAGS[0]) };

// The usage, on stderr
static void usage(void *ctx) {
    (void)ctx;
    fprintf(stderr, "usage: ./bench [--rounds N | --config NAME [--precision fp32|bf16] [--peak GFLOPS] [--steps N] | --shapes | --schemes | --bf16 | --bf16-loss] [--threads N]\n");
    flags_help(stderr, FLAGS, N_FLAGS, NULL, 22, NULL);
    fprintf(stderr, "configs (small-eval-t32768: one forward pass over a 32768-token window):");
    for (int k = 0; k < N_CONFIGS; k++) fprintf(stderr, " %s", CONFIGS[k].name);
    fprintf(stderr, "\n");
}

// A bad command line: the usage (a word that is no flag, or a flag without its value), or what the flag takes
static void fail_hook(void *ctx, FlagError e, const char *s, const FlagRow *r, const char *v, int argc, char **argv,
                      int i) {
    (void)ctx; (void)s; (void)argc; (void)argv; (void)i;
    if (e == FLAG_UNKNOWN || e == FLAG_NOT_FLAG || e == FLAG_NO_VALUE) { usage(NULL); exit(1); }
    CHECK(strcmp(r->name, "precision"), "--precision %s: give fp32 or bf16", v);
    CHECK(strcmp(r->name, "peak"), "--peak must be a positive number of GFLOP/s");
    CHECK(strcmp(r->name, "steps"), "--steps must be an integer in [1, 100000] (timed steps of --config)");
    CHECK(strcmp(r->name, "rounds"), "--rounds must be an integer in [1, %d] (rounds of the step table)", ROUNDS_MAX);
    CHECK(0, "--threads must be an integer in [1, 1024]");
}

// ./bench --config NAME: one config's steps (steps: the timed ones, 0 for the config's own), its
// fraction of the peak (given_peak > 0: that one, unchecked; else measured), and the RESULT line
static void run_one(const char *only, int steps, double given_peak) {
    const Config *c = find_config(only);
    if (!c) {
        char known[512] = "";
        for (int k = 0; k < N_CONFIGS; k++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "", CONFIGS[k].name);
        CHECK(0, "--config %s: unknown config (known: %s)", only, known);
    }
    // first, so the RSS is the step's; the default positions (GPT-2's learned table), nope to evaluate
    StepResult r = run_steps(c, c->eval_context ? posenc_scheme(PE_NOPE)->name : NULL, steps ? steps : c->steps);
    double bpeak = 0, apeak = 0, peak = given_peak > 0 ? given_peak : measure_peak(NULL, 0).best;
    if (g_bf16) {
        printf("bf16 path: %s (%s)\n", bf16_path_name(bf16_path()), bf16_path_reason());
        if (given_peak == 0) peak = bf16_reference_peak(peak, &bpeak, &apeak);
    }
    // a child of the full bench gets the peak (the parent checks fractions against its final one)
    if (given_peak == 0) check_fraction(c->name, r.gflops, peak);
    printf("%s: L=%d C=%d NH=%d V=%d B=%d T=%d | %.1f ms/step | %.0f tokens/s | %.1f GFLOP/s | %.1f%% of peak %.1f\n",
           c->name, c->L, c->C, c->NH, c->V, c->B, c->T, r.ms, r.tokens_per_s, r.gflops, 100 * r.gflops / peak, peak);
    double mm = part_gflops(c, &r, 0), att = part_gflops(c, &r, 1);
    printf("inside the step: the matrix products %.1f GFLOP/s (%.1f%% of the peak), attention %.1f GFLOP/s (%.1f%%)\n", mm,
           100 * mm / peak, att, 100 * att / peak);
    if (g_bf16)
        printf("the products' operand packing (or rounding): %.1f%% of the step, %.1f ms (part of the products' %.1f%%)\n",
               100 * r.pack, r.pack * r.ms, 100 * r.share[0]);
    printf("SHARES ms=%.4f tokens_per_s=%.2f gflops=%.4f matmul=%.5f attention=%.5f optimizer=%.5f rest=%.5f rss_mb=%.2f pack=%.5f\n",
           r.ms, r.tokens_per_s, r.gflops, r.share[0], r.share[1], r.share[2], r.share[3], r.rss_mb, r.pack);
    printf("RESULT config=%s tokens_per_s=%.1f gflops=%.2f peak_fraction=%.4f peak_rss_mb=%.1f",
           c->name, r.tokens_per_s, r.gflops, r.gflops / peak, r.rss_mb);
    if (g_bf16) printf(" path=%s", bf16_path_name(bf16_path()));
    printf("\n");
}

// Flags that the chosen part would not use are refused, not ignored: modes counts --schemes,
// --bf16-loss, --bf16 and --shapes given.
static void check_combination(const char *only, int modes, int steps, double given_peak, int bf16_only) {
    CHECK(modes <= 1 && !(modes && only), "--config, --shapes, --schemes, --bf16 and --bf16-loss each run one part "
          "of the bench: give one of them (or none, for the whole bench)");
    CHECK(!steps || only, "--steps applies to --config NAME (the timed steps of that config; the full bench keeps its own)");
    CHECK(!g_bf16 || only, "--precision applies to --config NAME (the full bench runs both precisions)");
    CHECK(g_rounds == 1 || (!only && !modes),
          "--rounds applies to the whole bench (its table of training steps), not to --config, --shapes, --schemes, --bf16 or --bf16-loss");
    CHECK(given_peak <= 0 || only || bf16_only, "--peak applies to --config NAME and --bf16 (the fractions they give); "
          "the whole bench and --shapes measure the peak themselves");
}

int main(int argc, char **argv) {
    BenchArgs ba = { 0 };
    FlagParser fp = { .rows = FLAGS, .n = N_FLAGS, .base = &ba, .first = 1, .empty_ok = 1, .help = usage,
                      .fail = fail_hook };
    flags_parse(&fp, argc, argv);
    const char *only = ba.config;
    double given_peak = ba.peak;
    int schemes_only = ba.schemes, loss_only = ba.loss, bf16_only = ba.bf16, shapes_only = ba.shapes, steps = ba.steps;
    g_bf16 = ba.precision;
    if (ba.rounds) g_rounds = ba.rounds;
#ifdef _OPENMP
    if (ba.threads) omp_set_num_threads(ba.threads);
#endif
    check_combination(only, schemes_only + loss_only + bf16_only + shapes_only, steps, given_peak, bf16_only);
#ifdef BENCH_OPENBLAS
    openblas_set_num_threads(bench_threads());          // the sgemm reference gets the same threads as we do
#endif
    if (schemes_only) {
        scheme_overheads(NULL);
        return 0;
    }
    if (loss_only) return bf16_loss_check(NULL);
    if (shapes_only) {
        measure_peak(NULL, 1);
        return 0;
    }
    if (bf16_only) {
        double peak = given_peak > 0 ? given_peak : measure_peak(NULL, 0).best;
        printf("fp32 peak: %.1f GFLOP/s\n", peak);
        bf16_section(NULL, peak);
        return 0;
    }
    if (only) {
        run_one(only, steps, given_peak);
        return 0;
    }

    FILE *csv = fopen("bench.csv", "w");
    CHECK(csv, "cannot write bench.csv");
    fprintf(csv, "kind,name,ms_per_step,tokens_per_s,gflops,peak_fraction_or_blas_gflops,peak_rss_mb,matmul_share,attention_share,optimizer_share,rest_share,extra\n");
    Peak pk = measure_peak(csv, 1);
    double peak = run_configs(csv, &pk);
    bf16_section(csv, peak);
    scheme_overheads(csv);
    attention_scaling(csv);
    int bad = bf16_loss_check(csv);
    fclose(csv);
    printf("\nwrote bench.csv\n");
    CHECK(!bad, "bench: bf16's validation loss is not within 2%% of fp32's (above)");
    return 0;
}
