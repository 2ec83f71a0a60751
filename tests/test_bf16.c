// tests/test_bf16.c: --precision bf16 (nn/bf16.h). The rounding against IEEE round-to-nearest-even
// worked by hand on bit patterns; every path this CPU can run (portable, both emulated paths, and
// avx512bf16 and amx where the CPU and OS have them; skipped with a message where not) against a double
// reference on the same bf16-rounded operands, on shapes that are not multiples of the tiles, the
// chunks or the k blocks, with plain and transposed operands, overwriting and accumulating; the
// paths against each other; thread independence; the matmul layer's bf16 products; and a model's
// loss in bf16 against fp32. Float build.
#include <float.h>
#include <omp.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/bf16.h"
#include "model.h"
#include "tests/testutil.h"
#include "tests/matmul_check.h"

static Rng rng;
static void fill(real *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = (real)(2 * rng_uniform(&rng) - 1); }

static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void check_rounding(void) {
    static const struct { uint32_t in; uint16_t out; const char *what; } cases[] = {
        { 0x3f800000u, 0x3f80, "1.0 is exact" },
        { 0x3f808000u, 0x3f80, "1 + 2^-8, half way between 1 and 1 + 2^-7: ties to even (down)" },
        { 0x3f818000u, 0x3f82, "1 + 3 2^-8, half way: ties to even (up)" },
        { 0x3f808001u, 0x3f81, "just above half way: up" },
        { 0x3f807fffu, 0x3f80, "just below half way: down" },
        { 0xc0200000u, 0xc020, "-2.5 is exact" },
        { 0xbf818000u, 0xbf82, "negative ties to even, by magnitude" },
        { 0x7f7fffffu, 0x7f80, "FLT_MAX rounds to infinity" },
        { 0x7f800000u, 0x7f80, "infinity stays" },
        { 0xff800000u, 0xff80, "-infinity stays" },
        { 0x00008000u, 0x0000, "a denormal half way: ties to even (zero)" },
        { 0x00018000u, 0x0002, "a denormal half way: ties to even (up)" },
        { 0x80000000u, 0x8000, "-0 stays -0" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t got = bf16_bits(from_bits(cases[i].in));
        EXPECT(got == cases[i].out, "bf16_bits(0x%08x) = 0x%04x, want 0x%04x: %s", cases[i].in, got, cases[i].out, cases[i].what);
    }
    uint16_t n = bf16_bits(from_bits(0x7fc00001u)), n2 = bf16_bits(from_bits(0x7f800001u));   // a NaN whose payload
    EXPECT(isnan(bf16_float(n)) && isnan(bf16_float(n2)), "a NaN must stay a NaN (got 0x%04x, 0x%04x)", n, n2);   // is all low bits
    EXPECT(bf16_round(1.00390625f) == 1.0f && bf16_round(3.0f) == 3.0f, "bf16_round");
}

// the reference: double sums of the bf16-rounded operands, and the sum of |products| for the tolerance
static void reference(int M, int N, int K, const real *a, size_t a_rs, size_t a_cs, const real *b, size_t b_rs,
                      size_t b_cs, const real *c0, size_t ldc, int accumulate, int rounded, double *r, double *mag) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = accumulate ? c0[(size_t)i * ldc + j] : 0, m = fabs(s);
            for (int k = 0; k < K; k++) {
                float x = (float)a[(size_t)i * a_rs + (size_t)k * a_cs], y = (float)b[(size_t)k * b_rs + (size_t)j * b_cs];
                double p = rounded ? (double)bf16_round(x) * bf16_round(y) : (double)x * y;
                s += p;
                m += fabs(p);
            }
            r[(size_t)i * N + j] = s;
            mag[(size_t)i * N + j] = m;
        }
}

static Bf16Path paths[BF16_N_PATHS];
static int n_paths;

// Every path on one shape: A plain (row stride K + 2) or transposed; B plain (row stride N + 5) or
// transposed (column stride K + 3); C with ldc = N + 3. Each path within fp32 accumulation error of
// the reference on rounded operands, and (K >= 16) visibly away from the unrounded product: the
// operands were rounded.
static void check_gemm(int M, int N, int K, int ta, int tb, int accumulate) {
    size_t a_rs = ta ? 1 : (size_t)K + 2, a_cs = ta ? (size_t)M + 1 : 1;
    size_t b_rs = tb ? 1 : (size_t)N + 5, b_cs = tb ? (size_t)K + 3 : 1, ldc = (size_t)N + 3;
    size_t na = ta ? (size_t)(K + 1) * (M + 1) : (size_t)(M + 1) * (K + 2);
    size_t nb = tb ? (size_t)(N + 1) * (K + 3) : (size_t)(K + 1) * (N + 5), nc = (size_t)(M + 1) * ldc;
    real *a = xmalloc(sizeof(real) * na), *b = xmalloc(sizeof(real) * nb), *c0 = xmalloc(sizeof(real) * nc);
    real *c[BF16_N_PATHS];
    double *r = xmalloc(sizeof(double) * M * N), *mag = xmalloc(sizeof(double) * M * N);
    double *u = xmalloc(sizeof(double) * M * N), *umag = xmalloc(sizeof(double) * M * N);
    fill(a, na); fill(b, nb); fill(c0, nc);
    reference(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c0, ldc, accumulate, 1, r, mag);
    reference(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c0, ldc, accumulate, 0, u, umag);
    for (int p = 0; p < n_paths; p++) {
        c[p] = xmalloc(sizeof(real) * nc);
        memcpy(c[p], c0, sizeof(real) * nc);
        Bf16Path old = bf16_set_path(paths[p]);
        gemm_bf16(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c[p], ldc, accumulate);
        bf16_set_path(old);
        double worst = 0, away = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double got = c[p][(size_t)i * ldc + j], e = fabs(got - r[(size_t)i * N + j]);
                double tol = 1e-6 * (K + 2) * (mag[(size_t)i * N + j] + 1e-30);
                if (!(e <= tol)) worst = err_max(worst, e / tol);
                away = fmax(away, fabs(got - u[(size_t)i * N + j]));
            }
        EXPECT(worst == 0, "gemm_bf16 (%s) %dx%dx%d (A %s, B %s, %s): error %.3g times the tolerance", bf16_path_name(paths[p]),
               M, N, K, ta ? "transposed" : "plain", tb ? "transposed" : "plain", accumulate ? "accumulate" : "overwrite", worst);
        if (K >= 16)
            EXPECT(away > 1e-4, "gemm_bf16 (%s) %dx%dx%d: within %.3g of the fp32 product: were the operands rounded?",
                   bf16_path_name(paths[p]), M, N, K, away);
        // the rows and columns gemm_bf16 must not touch
        int untouched = 1;
        for (size_t i = 0; i < nc; i++)
            if ((i / ldc >= (size_t)M || i % ldc >= (size_t)N) && c[p][i] != c0[i]) untouched = 0;
        EXPECT(untouched, "gemm_bf16 (%s) %dx%dx%d wrote outside C", bf16_path_name(paths[p]), M, N, K);
    }
    // the paths against each other: both within accumulation error of the same sums
    for (int p = 1; p < n_paths; p++) {
        double worst = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double e = fabs((double)c[p][(size_t)i * ldc + j] - c[0][(size_t)i * ldc + j]);
                double tol = 2e-6 * (K + 2) * (mag[(size_t)i * N + j] + 1e-30);
                if (!(e <= tol)) worst = err_max(worst, e / tol);
            }
        EXPECT(worst == 0, "gemm_bf16 %dx%dx%d: %s and %s differ by %.3g times the tolerance", M, N, K,
               bf16_path_name(paths[0]), bf16_path_name(paths[p]), worst);
    }
    for (int p = 0; p < n_paths; p++) free(c[p]);
    free(a); free(b); free(c0); free(r); free(mag); free(u); free(umag);
}

// A NaN stays a NaN (not an infinity, even one whose payload is all in the low 16 bits) through the rounding of every path's packing (the vectorised packers included:
// 20 x 40 x 70 has whole 16 x 16 blocks and edges in every layout): A(17, 45) NaN makes row 17 of C
// NaN, B(33, 5) NaN column 5, and nothing else.
static void check_nan(int ta, int tb) {
    enum { M = 20, N = 40, K = 70 };
    size_t a_rs = ta ? 1 : K, a_cs = ta ? M : 1, b_rs = tb ? 1 : N, b_cs = tb ? K : 1;
    real *a = xmalloc(sizeof(real) * M * K), *b = xmalloc(sizeof(real) * K * N), *c = xmalloc(sizeof(real) * M * N);
    fill(a, (size_t)M * K); fill(b, (size_t)K * N);
    uint32_t low_nan = 0x7f800001u;           // a NaN whose payload lies in the bits rounding drops
    memcpy(&a[17 * a_rs + 45 * a_cs], &low_nan, sizeof(float));
    b[33 * b_rs + 5 * b_cs] = NAN;
    for (int p = 0; p < n_paths; p++) {
        Bf16Path old = bf16_set_path(paths[p]);
        gemm_bf16(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, N, 0);
        bf16_set_path(old);
        int right = 1;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) right &= !!isnan(c[i * N + j]) == (i == 17 || j == 5);
        EXPECT(right, "gemm_bf16 (%s, A %s, B %s): NaNs of the operands not exactly in row 17 and column 5 of C",
               bf16_path_name(paths[p]), ta ? "transposed" : "plain", tb ? "transposed" : "plain");
    }
    free(a); free(b); free(c);
}

// The packers: the vectorised ones (integer rounding; VCVTNE2PS2BF16 where the CPU has it) give the
// scalar one's words, bit for bit, for A and B, row-major and transposed, with operands that hold what
// the instruction treats apart: subnormals (it reads them as 0, so the packer rounds a run that holds
// one the integer way; the products' VDPBF16PS and TDPBF16PS then read subnormal bf16 as 0 anyway, so
// only the packed words show the difference), NaNs, infinities, ties, numbers that round past the
// largest bf16. 45 x 100 and 70 x 37: whole 16 x 16 blocks, 32-column panels, edges and odd K.
static void check_packers(void) {
    static const uint32_t odd[] = { 0x00400000u, 0x80012345u, 0x007fffffu, 0x00000001u, 0x7fc00001u, 0x7f800001u,
                                    0xff800000u, 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x80000000u, 0x00018000u };
    static const int sizes[][2] = { { 45, 100 }, { 70, 37 } };
    int hows = bf16_cpu_has_convert() ? 3 : bf16_path_runs(BF16_AVX512) ? 2 : 1;
    if (hows < 3) printf("test_bf16: this CPU has no %s: those packers are not checked\n",
                         hows == 1 ? "AVX512_BF16 (nor VCVTNE2PS2BF16)" : "VCVTNE2PS2BF16");
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (int t = 0; t < 4; t++) {
            int rows = sizes[z][0], K = sizes[z][1], b_side = t & 1, tr = t >> 1, Kq = (K + 1) / 2;
            size_t rs = tr ? 1 : (size_t)K, cs = tr ? (size_t)rows : 1, words = (size_t)(rows + 31) / 32 * 32 * Kq;
            real *x = xmalloc(sizeof(real) * rows * K);
            fill(x, (size_t)rows * K);
            for (int k = 0; k < K; k++) x[3 * rs + k * cs] = from_bits(0x00400000u + (uint32_t)k * 977u);   // a subnormal row
            for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) x[(5 + i) * rs + (7 * i % K) * cs] = from_bits(odd[i]);
            uint32_t *w[3];
            for (int h = 0; h < hows; h++) {
                w[h] = xmalloc(sizeof(uint32_t) * words);
                memset(w[h], 0xa5, sizeof(uint32_t) * words);
                bf16_pack_for_test(h, b_side, rows, K, x, rs, cs, w[h]);
            }
            size_t used = b_side ? words : (size_t)rows * Kq;
            EXPECT((w[0][b_side ? 3 : 3 * (size_t)Kq] & 0xffffu) == bf16_bits(x[3 * rs]) && bf16_bits(x[3 * rs]) != 0,
                   "packer check: a subnormal must pack to its nonzero bf16 bits");
            for (int h = 1; h < hows; h++)
                EXPECT(memcmp(w[0], w[h], sizeof(uint32_t) * used) == 0, "the %s packer (%s, %s) differs from the scalar one",
                       h == 1 ? "AVX-512 integer-rounding" : "VCVTNE2PS2BF16", b_side ? "B" : "A", tr ? "transposed" : "row-major");
            for (int h = 0; h < hows; h++) free(w[h]);
            free(x);
        }
}

// The emulated tile unit refuses what the hardware refuses, so the amx path's configuration and tile
// shapes are checked by the emulation too: run in a child process, each misuse must stop it.
static void check_amx_emulator(void) {
    static const char *const cases[] = { "a tile instruction before ldtilecfg", "TDPBF16PS on shapes that disagree",
                                         "a configuration with palette 0" };
    for (int i = 0; i < 3; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            freopen("/dev/null", "w", stderr);
            bf16_amx_emulator_misuse(i);
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        EXPECT(WIFEXITED(status) && WEXITSTATUS(status) != 0, "amx-emulated: %s must stop the program", cases[i]);
    }
}

// each path gives the same bits with 1, 2 and 3 threads
static void check_threads(void) {
    int M = 77, N = 300, K = 530;
    real *a = xmalloc(sizeof(real) * M * K), *b = xmalloc(sizeof(real) * K * N), *c[3];   // c[t]: t + 1 threads
    fill(a, (size_t)M * K); fill(b, (size_t)K * N);
    int saved = omp_get_max_threads();
    for (int p = 0; p < n_paths; p++) {
        Bf16Path old = bf16_set_path(paths[p]);
        for (int t = 0; t < 3; t++) {
            c[t] = xmalloc(sizeof(real) * M * N);
            omp_set_num_threads(t + 1);
            gemm_bf16(M, N, K, a, K, 1, b, N, 1, c[t], N, 0);
        }
        bf16_set_path(old);
        EXPECT(memcmp(c[0], c[1], sizeof(real) * M * N) == 0 && memcmp(c[0], c[2], sizeof(real) * M * N) == 0,
               "gemm_bf16 (%s) must give the same bits with 1, 2 and 3 threads", bf16_path_name(paths[p]));
        for (int t = 0; t < 3; t++) free(c[t]);
    }
    omp_set_num_threads(saved);
    free(a); free(b);
}

// The fused route (B packed by each thread inside the product) gives the chunked route's bits: the
// same items and order of sums. Shapes with an edge panel, an odd K, several k blocks and several
// groups of panels (np > 16 at 1 MiB of L2), B plain and transposed, A plain and transposed,
// overwriting and accumulating, on the avx512bf16 paths (emulated and, where the CPU has it, native).
static void check_fused(void) {
    static const int shapes[][3] = { { 70, 600, 1031 }, { 256, 45, 530 }, { 9, 1100, 64 } };
    for (int p = 0; p < n_paths; p++) {
        if (paths[p] != BF16_AVX512 && paths[p] != BF16_AVX512_EMULATED) continue;
        Bf16Path old = bf16_set_path(paths[p]);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 8; t++) {
                int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ta = t & 1, tb = t >> 1 & 1, acc = t >> 2;
                size_t a_rs = ta ? 1 : (size_t)K, a_cs = ta ? (size_t)M : 1, b_rs = tb ? 1 : (size_t)N, b_cs = tb ? (size_t)K : 1;
                real *a = xmalloc(sizeof(real) * M * K), *b = xmalloc(sizeof(real) * K * N);
                real *c0 = xmalloc(sizeof(real) * M * N), *c1 = xmalloc(sizeof(real) * M * N);
                fill(a, (size_t)M * K); fill(b, (size_t)K * N); fill(c0, (size_t)M * N);
                memcpy(c1, c0, sizeof(real) * M * N);
                int was = bf16_set_fused(0);
                gemm_bf16(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c0, N, acc);
                bf16_set_fused(1);
                gemm_bf16(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c1, N, acc);
                bf16_set_fused(was);
                EXPECT(memcmp(c0, c1, sizeof(real) * M * N) == 0, "gemm_bf16 (%s) %dx%dx%d (A %s, B %s, %s): the fused route "
                       "must give the chunked route's bits", bf16_path_name(paths[p]), M, N, K, ta ? "transposed" : "plain",
                       tb ? "transposed" : "plain", acc ? "accumulate" : "overwrite");
                free(a); free(b); free(c0); free(c1);
            }
        bf16_set_path(old);
    }
}

// the layer's three products against their definitions on rounded operands; the bias in fp32
static void check_matmul_layer(int N, int C, int OC) {
    real *inp = xmalloc(sizeof(real) * N * C), *w = xmalloc(sizeof(real) * OC * C), *bias = xmalloc(sizeof(real) * OC);
    real *out = xmalloc(sizeof(real) * N * OC), *dout = xmalloc(sizeof(real) * N * OC);
    real *dinp = xcalloc((size_t)N * C, sizeof(real)), *dw = xcalloc((size_t)OC * C, sizeof(real)), *db = xcalloc(OC, sizeof(real));
    fill(inp, (size_t)N * C); fill(w, (size_t)OC * C); fill(bias, OC); fill(dout, (size_t)N * OC);
    matmul_forward_bf16(out, inp, w, bias, N, C, OC);
    matmul_backward_bf16(dinp, dw, db, dout, inp, w, N, C, OC, 1, 1);
    double e_out = 0, e_dinp = 0, e_dw = 0, e_db = 0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = 0, m = 0;
            for (int k = 0; k < C; k++) { double p = (double)bf16_round(inp[n * C + k]) * bf16_round(w[o * C + k]); s += p; m += fabs(p); }
            e_out = err_max(e_out, fabs(out[n * OC + o] - (s + bias[o])) / (1e-6 * (C + 2) * (m + fabs(bias[o]))));
        }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < C; k++) {
            double s = 0, m = 0;
            for (int o = 0; o < OC; o++) { double p = (double)bf16_round(dout[n * OC + o]) * bf16_round(w[o * C + k]); s += p; m += fabs(p); }
            e_dinp = err_max(e_dinp, fabs(dinp[n * C + k] - s) / (1e-6 * (OC + 2) * m));
        }
    for (int o = 0; o < OC; o++) {
        for (int k = 0; k < C; k++) {
            double s = 0, m = 0;
            for (int n = 0; n < N; n++) { double p = (double)bf16_round(dout[n * OC + o]) * bf16_round(inp[n * C + k]); s += p; m += fabs(p); }
            e_dw = err_max(e_dw, fabs(dw[o * C + k] - s) / (1e-6 * (N + 2) * m));
        }
        double s = 0, m = 0;
        for (int n = 0; n < N; n++) { s += dout[n * OC + o]; m += fabs(dout[n * OC + o]); }   // fp32, not rounded
        e_db = err_max(e_db, fabs(db[o] - s) / (1e-6 * (N + 2) * m));
    }
    EXPECT(e_out <= 1 && e_dinp <= 1 && e_dw <= 1 && e_db <= 1, "matmul bf16 %dx%dx%d: errors %.3g (out) %.3g (dinp) %.3g "
           "(dweight) %.3g (dbias) times the tolerance", N, C, OC, e_out, e_dinp, e_dw, e_db);
    check_matmul_overwrite(matmul_backward_bf16, "matmul_backward_bf16", dinp, dw, db, dout, inp, w, N, C, OC);
    free(inp); free(w); free(bias); free(out); free(dout); free(dinp); free(dw); free(db);
}

// A small model with positional scheme `scheme` (every scheme in the table): its loss and gradients
// in bf16 against fp32, close (bf16 keeps ~3 significant digits per operand) but not equal, on every
// path; then 30 AdamW steps in bf16 on the default path on one batch, which must fit it (the loss at
// least halves), as 30 steps do in fp32.
static void check_model(const char *scheme) {
    GPTConfig cfg = { .vocab_size = 256, .n_layer = 2, .n_head = 4, .n_embd = 64, .max_seq_len = 32 };
    posenc_defaults(&cfg.pe, cfg.n_layer);
    char msg[256];
    CHECK(posenc_schedule(&cfg.pe, cfg.n_layer, scheme, NULL, NULL, msg, sizeof msg), "%s", msg);
    GPT m;
    gpt_build(&m, &cfg, 5, 0);
    Batch b;
    batch_alloc(&b, 2, 32);
    for (int i = 0; i < b.B * b.T; i++) { b.tokens[i] = (int)(rng_u64(&rng) % 256); b.targets[i] = (int)(rng_u64(&rng) % 256); }
    double l32 = gpt_forward(&m, &b, NULL);
    gpt_zero_grad(&m);
    gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
    real *g32 = xmalloc(sizeof(real) * m.weights.num_params);
    memcpy(g32, m.weights.grads, sizeof(real) * m.weights.num_params);
    gpt_set_bf16(&m, 1);
    for (int p = 0; p < n_paths; p++) {
        Bf16Path old = bf16_set_path(paths[p]);
        double l16 = gpt_forward(&m, &b, NULL);
        gpt_zero_grad(&m);
        gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
        bf16_set_path(old);
        double dot = 0, n32 = 0, n16 = 0;
        const real *g16 = m.weights.grads;
        for (size_t i = 0; i < m.weights.num_params; i++) { dot += (double)g32[i] * g16[i]; n32 += (double)g32[i] * g32[i]; n16 += (double)g16[i] * g16[i]; }
        double cosine = dot / sqrt(n32 * n16);
        EXPECT(l16 != l32 && fabs(l16 - l32) < 0.01 * l32, "%s: bf16 (%s) loss %.6f against fp32 %.6f: not within 1%% (or "
               "identical: bf16 not used)", scheme, bf16_path_name(paths[p]), l16, l32);
        EXPECT(cosine > 0.999, "%s: bf16 (%s) gradient's cosine with fp32's: %.6f", scheme, bf16_path_name(paths[p]), cosine);
    }
    AdamWConfig o = { .lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0 };
    double first = 0, last = 0;
    for (int t = 1; t <= 30; t++) {
        last = gpt_forward(&m, &b, NULL);
        if (t == 1) first = last;
        gpt_zero_grad(&m);
        gpt_backward(&m, 1.0 / m.state.weight_sum, NULL);
        gpt_adamw(&m, &o, t, 1.0);
    }
    EXPECT(isfinite(last) && last < 0.5 * first, "%s: 30 bf16 steps (%s) on one batch: loss %.4f -> %.4f, not halved", scheme,
           bf16_path_name(bf16_path()), first, last);
    batch_free(&b);
    free(g32);
    gpt_free(&m);
}

int main(void) {
    check_rounding();
    rng_seed(&rng, 17);
    paths[n_paths++] = BF16_PORTABLE;
    paths[n_paths++] = BF16_AVX512_EMULATED;
    paths[n_paths++] = BF16_AMX_EMULATED;
    if (bf16_path_runs(BF16_AVX512)) paths[n_paths++] = BF16_AVX512;
    else printf("test_bf16: this CPU has no AVX512_BF16: the avx512bf16 path is skipped (its code runs as avx512bf16-emulated)\n");
    const char *why;
    if (bf16_amx_usable(&why)) paths[n_paths++] = BF16_AMX;
    else printf("test_bf16: the amx path is skipped (%s; its code runs as amx-emulated)\n", why);
    check_amx_emulator();
    printf("test_bf16: default path %s (%s)\n", bf16_path_name(bf16_path()), bf16_path_reason());
    static const int shapes[][3] = { { 1, 1, 1 }, { 1, 1, 2 }, { 8, 32, 2 }, { 9, 33, 3 }, { 7, 31, 16 }, { 13, 37, 257 },
                                     { 64, 64, 64 }, { 65, 70, 513 }, { 5, 200, 3 }, { 130, 45, 40 }, { 1, 700, 9 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int acc = 0; acc < 2; acc++) check_gemm(shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1, acc);
    check_gemm(1030, 20, 33, 0, 0, 1);    // past one chunk of A rows (1024)
    check_gemm(3, 2100, 17, 1, 1, 0);     // past one chunk of B columns (2048): A packed once, used twice
    check_gemm(3, 2100, 17, 0, 0, 1);
    check_gemm(1030, 2100, 5, 0, 1, 1);   // past both: every chunk of A for every chunk of B
    check_gemm(130, 600, 530, 1, 0, 1);   // several groups of panels (19 panels), row blocks and k blocks
    double packed0 = bf16_pack_seconds();
    check_gemm(40, 50, 60, 0, 1, 0);
    EXPECT(bf16_pack_seconds() > packed0, "bf16_pack_seconds did not count the packing of a product (%.9f s before and after)",
           packed0);
    check_gemm(9, 40, 1100, 0, 1, 1);     // several k blocks (256 pairs)
    for (int t = 0; t < 4; t++) check_nan(t & 1, t >> 1);
    check_packers();
    check_gemm(4, 5, 0, 0, 0, 0);         // an empty sum zeroes C
    check_gemm(4, 5, 0, 0, 0, 1);         // ... and leaves it when accumulating
    check_threads();
    check_fused();
    static const int layers[][3] = { { 7, 13, 9 }, { 64, 96, 100 }, { 3, 130, 70 } };
    for (size_t s = 0; s < sizeof layers / sizeof layers[0]; s++) check_matmul_layer(layers[s][0], layers[s][1], layers[s][2]);
    for (int s = 0; s < posenc_count(); s++) check_model(posenc_scheme(s)->name);
    return test_summary("test_bf16");
}
