// nn/layers.c: the GPT-2 layers as forward/backward pairs (nn/layers.h): token embedding, LayerNorm, the
// linear layer, GELU, dropout; and --detect-anomaly's scan for NaN and Inf. Shapes follow the legend
// in model.h. Every backward ACCUMULATES (+=) into its outputs (the parameter gradients of LayerNorm
// and the linear layer: unless acc = 0, nn/layers.h).
#include "nn/layers.h"

#include "nn/bf16.h"
#include "nn/kernels.h"

#include <float.h>
#include <string.h>
#include <tgmath.h>   // sqrt, tanh follow the type of `real` (sqrtf in the float build)

// ----------------------------------------------------------------------------------------------
// encoder: out (N,C) = scale * wte[inp[n]]; wte is (Vp,C). The input positional hook is applied after.
// scale is 1 except for an input scheme that asks for another (posenc_embed_scale): a plain copy then.

void encoder_forward(real *out, const int *inp, const real *wte, real scale, int N, int C) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        real *o = out + (size_t)n * C;
        const real *w = wte + (size_t)inp[n] * C;
        if (scale == 1) memcpy(o, w, sizeof(real) * C);
        else for (int c = 0; c < C; c++) o[c] = scale * w[c];
    }
}

// dwte[inp[n]] += scale * dout[n]; serial so that repeated tokens never race
void encoder_backward(real *dwte, const real *dout, const int *inp, real scale, int N, int C) {
    for (int n = 0; n < N; n++) {
        real *row = dwte + (size_t)inp[n] * C;
        const real *d = dout + (size_t)n * C;
        if (scale == 1) for (int c = 0; c < C; c++) row[c] += d[c];
        else for (int c = 0; c < C; c++) row[c] += scale * d[c];
    }
}

// ----------------------------------------------------------------------------------------------
// layernorm: out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N,) kept for backward

void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *weight,
                       const real *bias, int N, int C) {
    const real eps = (real)1e-5;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        real m = 0;
        #pragma omp simd reduction(+:m)
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        real v = 0;
        #pragma omp simd reduction(+:v)
        for (int c = 0; c < C; c++) { real d = x[c] - m; v += d * d; }
        v /= C;
        real s = 1 / sqrt(v + eps);
        real *o = out + (size_t)n * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[n] = m; rstd[n] = s;
    }
}

// dinp (N,C) +=, dweight (C) and dbias (C) += (acc) or =; dout (N,C)
void layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                        const real *weight, const real *mean, const real *rstd, int N, int C, int acc) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *d = dout + (size_t)n * C, *x = inp + (size_t)n * C;
        real m = mean[n], s = rstd[n];
        // dnorm = dout * weight; dinp += s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
        real dnorm_mean = 0, dnorm_norm_mean = 0;
        #pragma omp simd reduction(+:dnorm_mean, dnorm_norm_mean)
        for (int c = 0; c < C; c++) {
            real norm = (x[c] - m) * s, dnorm = weight[c] * d[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C; dnorm_norm_mean /= C;
        real *di = dinp + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            real norm = (x[c] - m) * s, dnorm = weight[c] * d[c];
            di[c] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
        }
    }
    // parameter gradients, summed over the rows in order: threads take blocks of 64 channels, and
    // each row of a block is read as one contiguous run (not one channel at a time, 4*C bytes apart)
    enum { CB = 64 };
    #pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += CB) {
        int nc = C - c0 < CB ? C - c0 : CB;
        real dw[CB] = { 0 }, db[CB] = { 0 };
        for (int n = 0; n < N; n++) {
            const real *d = dout + (size_t)n * C + c0, *x = inp + (size_t)n * C + c0;
            real m = mean[n], s = rstd[n];
            #pragma omp simd
            for (int c = 0; c < nc; c++) { dw[c] += d[c] * (x[c] - m) * s; db[c] += d[c]; }
        }
        for (int c = 0; c < nc; c++) {
            dweight[c0 + c] = acc ? dweight[c0 + c] + dw[c] : dw[c];
            dbias[c0 + c] = acc ? dbias[c0 + c] + db[c] : db[c];
        }
    }
}

// ----------------------------------------------------------------------------------------------
// matmul: out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC); bias may be NULL.
// All three products go through gemm (nn/kernels.c). The forward's B is weight^T, which gemm_bt reads
// in place through its strides: gemm copies every operand into its panels anyway, and transposes
// this one on the way (no separate transposed copy of the weight, 154 MB for GPT-2's LM head).

// A few rows (decoding one token at a time): packing weight^T would read and write every weight once
// per call, several times the product's own work. Instead each output is one multiply-add chain
// over k in order, starting from 0, through madd: the very operations gemm does for that element
// (nn/kernels.h), so the result has the same bits (tests/test_kernels.c checks). Threads take blocks
// of 16 output channels; a block's 16 chains run side by side, each reading its row of weight in
// place.
enum { FEW_ROWS = 4, OB_ROWS = 16 };

// out (N,OC) += bias (OC), every row
static void bias_forward(real *out, const real *bias, int N, int OC) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) out[(size_t)n * OC + o] += bias[o];
}

#ifndef USE_OPENBLAS
static void matmul_few_rows(real *out, const real *inp, const real *weight, int N, int C, int OC) {
    #pragma omp parallel for schedule(static)
    for (int o0 = 0; o0 < OC; o0 += OB_ROWS) {
        int no = OC - o0 < OB_ROWS ? OC - o0 : OB_ROWS;
        const real *w = weight + (size_t)o0 * C;
        for (int n = 0; n < N; n++) {
            const real *x = inp + (size_t)n * C;
            real acc[OB_ROWS] = { 0 };
            if (no == OB_ROWS)
                for (int k = 0; k < C; k++)
                    for (int j = 0; j < OB_ROWS; j++) acc[j] = madd(x[k], w[(size_t)j * C + k], acc[j]);
            else
                for (int k = 0; k < C; k++)
                    for (int j = 0; j < no; j++) acc[j] = madd(x[k], w[(size_t)j * C + k], acc[j]);
            for (int j = 0; j < no; j++) out[(size_t)n * OC + o0 + j] = acc[j];
        }
    }
}
#endif

void matmul_forward(real *out, const real *inp, const real *weight, const real *bias, int N, int C, int OC) {
#ifndef USE_OPENBLAS   // (with make BLAS=openblas every product is OpenBLAS's, whose sums are its own)
    if (N <= FEW_ROWS && C > 0) {
        matmul_few_rows(out, inp, weight, N, C, OC);
        if (bias) bias_forward(out, bias, N, OC);
        return;
    }
#endif
    gemm_bt(N, OC, C, inp, C, 1, weight, 1, C, out, OC, 0);       // B (C,OC): B(k,o) = weight[o*C + k]
    if (bias) bias_forward(out, bias, N, OC);
}

void matmul_forward_wt(real *out, const real *inp, const real *wt, const real *bias, int N, int C, int OC) {
    #pragma omp parallel
    {
        int nt = 1, t = thread_id();
#ifdef _OPENMP
        nt = omp_get_num_threads();
#endif
        int per = ((OC + nt - 1) / nt + 127) / 128 * 128;          // columns per thread, in blocks of 128
        int j0 = t * per, j1 = j0 + per < OC ? j0 + per : OC;
        if (j0 < j1) gemm_rows(N, j1 - j0, C, inp, C, wt + j0, OC, out + j0, OC);
    }
    if (bias) bias_forward(out, bias, N, OC);
}

// dbias[o] += (acc) or = sum_n dout[n,o], n in order; threads take blocks of 64 columns, and each
// row of a block is read as one contiguous run (not one column at a time, 4*OC bytes apart)
static void bias_backward(real *dbias, const real *dout, int N, int OC, int acc) {
    enum { OB = 64 };
    #pragma omp parallel for schedule(static)
    for (int o0 = 0; o0 < OC; o0 += OB) {
        int no = OC - o0 < OB ? OC - o0 : OB;
        real db[OB] = { 0 };
        for (int n = 0; n < N; n++) {
            const real *d = dout + (size_t)n * OC + o0;
            #pragma omp simd
            for (int o = 0; o < no; o++) db[o] += d[o];
        }
        for (int o = 0; o < no; o++) dbias[o0 + o] = acc ? dbias[o0 + o] + db[o] : db[o];
    }
}

// dinp (N,C) += (dinp_acc) or = dout @ weight; dweight (OC,C) += (acc) or = dout^T @ inp; dbias (OC)
// += or = sum_n dout.
// gemm gives each output tile (a block of rows by a chunk of columns) to one thread and sums over k
// in a fixed order, so no two threads write the same gradient and the result is bit-reproducible;
// with acc = 0 it does not read dweight, whose sums start from 0 (the bits of += onto zeros).
void matmul_backward(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC, int acc, int dinp_acc) {
    gemm(N, C, OC, dout, OC, 1, weight, C, dinp, C, dinp_acc);         // A = dout (N,OC), B = weight (OC,C)
    gemm(OC, C, N, dout, 1, OC, inp, C, dweight, C, acc);        // A = dout^T (OC,N), B = inp (N,C)
    if (dbias) bias_backward(dbias, dout, N, OC, acc);
}

// --precision bf16 (nn/bf16.h): the same three products with bf16 operands; weight^T is read through
// gemm_bf16's strides (it copies its operands into bf16 anyway), so nothing is packed here.
void matmul_forward_bf16(real *out, const real *inp, const real *weight, const real *bias, int N, int C, int OC) {
    gemm_bf16(N, OC, C, inp, C, 1, weight, 1, C, out, OC, 0);       // B (C,OC): B(k,o) = weight[o*C + k]
    if (bias) bias_forward(out, bias, N, OC);
}

void matmul_backward_bf16(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                          const real *weight, int N, int C, int OC, int acc, int dinp_acc) {
    gemm_bf16(N, C, OC, dout, OC, 1, weight, C, 1, dinp, C, dinp_acc);    // dout (N,OC) @ weight (OC,C)
    gemm_bf16(OC, C, N, dout, 1, OC, inp, C, 1, dweight, C, acc);   // dout^T (OC,N) @ inp (N,C)
    if (dbias) bias_backward(dbias, dout, N, OC, acc);
}

// ----------------------------------------------------------------------------------------------
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))

#define GELU_SCALE 0.7978845608028654   // sqrt(2/pi)

// tanh(u) = 1 - 2/(exp(2u) + 1): in the float build through exp_vec (absolute error ~2e-7, which is
// what GELU's 0.5 x (1 + tanh) needs); the double build keeps libm's tanh for exact gradient checks.
static inline real tanh_fast(real u) {
    if (sizeof(real) != sizeof(float)) return tanh(u);
    return (real)(1.0f - 2.0f / (exp_vec(2.0f * (float)u) + 1.0f));
}

// out (n,) = GELU(inp (n,)), the tanh approximation GPT-2 uses (nn/layers.h)
void gelu_forward(real *out, const real *inp, int n) {
    #pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) {
        real x = inp[i];
        out[i] = (real)0.5 * x * (1 + tanh_fast((real)GELU_SCALE * (x + (real)0.044715 * x * x * x)));
    }
}

// dinp (n,) = GELU'(inp) * dout, each (n,): the derivative of the same tanh approximation (dinp is
// overwritten: GELU's input feeds nothing else, so nothing else adds to its gradient)
void gelu_backward(real *dinp, const real *inp, const real *dout, int n) {
    #pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) {
        real x = inp[i];
        real u = (real)GELU_SCALE * (x + (real)0.044715 * x * x * x);
        real th = tanh_fast(u), sech2 = 1 - th * th;
        real grad = (real)0.5 * (1 + th) + (real)0.5 * x * sech2 * (real)GELU_SCALE * (1 + (real)3 * (real)0.044715 * x * x);
        dinp[i] = grad * dout[i];
    }
}

// ----------------------------------------------------------------------------------------------
// dropout: element (n, c) kept when drop_keep(row key of n, c), then scaled by 1/(1-p)

// y (N,C) = or += x * keep / (1 - p)
static void dropout_mask(real *y, const real *x, uint64_t key, double p, int N, int C, uint64_t row0, int accumulate) {
    uint32_t thr = drop_threshold(p);
    real scale = (real)(1 / (1 - p));
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        uint32_t rk = drop_row_key(key, row0 + (uint64_t)n);
        real *yn = y + (size_t)n * C;
        const real *xn = x + (size_t)n * C;
        #pragma omp simd
        for (int c = 0; c < C; c++) {
            real v = drop_keep(rk, (uint32_t)c, thr) ? xn[c] * scale : 0;
            yn[c] = accumulate ? yn[c] + v : v;
        }
    }
}

void dropout_forward(real *out, const real *inp, uint64_t key, double p, int N, int C, uint64_t row0) {
    dropout_mask(out, inp, key, p, N, C, row0, 0);
}
void dropout_backward(real *dinp, const real *dout, uint64_t key, double p, int N, int C, uint64_t row0) {
    dropout_mask(dinp, dout, key, p, N, C, row0, 1);
}

// ----------------------------------------------------------------------------------------------
// the scan for NaN and Inf (--detect-anomaly): one pass, no value changed

// The common case, all finite, is one vectorised pass: the largest |x|, where a NaN or Inf counts as
// Inf (a NaN fails a <= max as an Inf does). Only when that is Inf, a second pass counts the bad
// values and finds the first. Threads only from 1M values: a scan is memory-bound and quick, and
// below that starting the threads costs more than it saves.
FiniteScan finite_scan(const real *x, size_t n) {
    const real big = (real)(sizeof(real) == sizeof(float) ? FLT_MAX : DBL_MAX);
    FiniteScan s = { n, 0, 0, 0, 0 };
    real mx = 0;
    size_t chunk = 4096, chunks = (n + chunk - 1) / chunk;
    #pragma omp parallel for schedule(static) reduction(max:mx) if (n >= ((size_t)1 << 20))
    for (size_t k = 0; k < chunks; k++) {
        const real *y = x + k * chunk;
        int len = (int)(n - k * chunk < chunk ? n - k * chunk : chunk);
        real m = 0;
        #pragma omp simd reduction(max:m)
        for (int i = 0; i < len; i++) {
            real a = fabs(y[i]);
            a = a <= big ? a : (real)INFINITY;
            m = a > m ? a : m;
        }
        mx = m > mx ? m : mx;
    }
    if (mx <= big) { s.maxabs = mx; return s; }
    for (size_t i = n; i-- > 0;) {
        real a = fabs(x[i]);
        if (a <= big) { if (a > s.maxabs) s.maxabs = a; }
        else { s.bad++; s.first = i; }
    }
    s.first_value = x[s.first];
    return s;
}
