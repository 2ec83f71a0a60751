// nn/layers.h: the GPT-2 layers (and dropout) as forward/backward pairs, outputs first, then inputs, then sizes,
// and the scan for values that are not finite that --detect-anomaly runs over every tensor.
// N tokens of C channels (model.h's legend); weights are stored (out, in). Backward functions
// ACCUMULATE (+=) into their gradient outputs, except: the parameter gradients of LayerNorm and the
// linear layer are overwritten (=) when acc = 0 (the first write of a step: gpt_zero_grad leaves
// the buffer as it is, model.h), the linear layer's dinp when dinp_acc = 0, and GELU's dinp always
// (the model's scratch: nothing else adds to it). The model strings them together (model.c); the
// gradient checks test each alone.
#ifndef LAYERS_H
#define LAYERS_H

#include "util/common.h"

// token embedding: out (N,C) = scale * wte[inp[n]], wte (Vp,C), inp (N,); dwte += scale * dout (N,C)
// row by row. scale: posenc_embed_scale (1 but for a sinusoidal input with its sqrt(C))
void encoder_forward(real *out, const int *inp, const real *wte, real scale, int N, int C);
void encoder_backward(real *dwte, const real *dout, const int *inp, real scale, int N, int C);
// LayerNorm: out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N,) kept for the backward;
// weight, bias (C). Backward: dinp (N,C) +=, dweight (C) and dbias (C) += (acc = 1) or = (acc = 0);
// dout (N,C).
void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *weight,
                       const real *bias, int N, int C);
void layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                        const real *weight, const real *mean, const real *rstd, int N, int C, int acc);
// linear: out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC), bias may be NULL.
// Backward: dinp (N,C) += (dinp_acc = 1) or = (0: the model's scratch, which then needs no zeroing),
// dweight (OC,C) and dbias (OC) += (acc = 1) or = (acc = 0) (dbias may be NULL); dout (N,OC).
void matmul_forward(real *out, const real *inp, const real *weight, const real *bias, int N, int C, int OC);
// The same product from the weight's transposed copy wt (C,OC), wt[k*OC + o] = weight[o*C + k]: the
// rows of wt are read in vector lanes (gemm_rows), threads split the columns. Every element is the
// same multiply-add chain over k as matmul_forward's, so the bits are its (decoding, model.c).
void matmul_forward_wt(real *out, const real *inp, const real *wt, const real *bias, int N, int C, int OC);
void matmul_backward(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC, int acc, int dinp_acc);
// The same with --precision bf16: the three products through gemm_bf16 (nn/bf16.h), operands rounded
// to bf16 and sums in fp32; the bias, its gradient and every output stay fp32.
void matmul_forward_bf16(real *out, const real *inp, const real *weight, const real *bias, int N, int C, int OC);
void matmul_backward_bf16(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                          const real *weight, int N, int C, int OC, int acc, int dinp_acc);
// GELU (tanh approximation), elementwise on n numbers: out = gelu(inp); dinp = gelu'(inp) dout.
void gelu_forward(real *out, const real *inp, int n);
void gelu_backward(real *dinp, const real *inp, const real *dout, int n);
// Inverted dropout with rate p (0 <= p < 1): out (N,C) = inp * keep(n,c) / (1 - p), keep(n,c) 0 with
// probability p, a hash of (key, row0 + n, c) (nn/kernels.h's drop_keep: the same key, the same mask;
// out may be inp). row0: the index of row 0 among all rows of the step's global batch (under MPI,
// rank r's rows start at r x its rows), so every rank draws the masks one process would draw for
// those rows. Backward: dinp (N,C) += dout * keep / (1 - p), with the forward's key and row0.
void dropout_forward(real *out, const real *inp, uint64_t key, double p, int N, int C, uint64_t row0);
void dropout_backward(real *dinp, const real *dout, uint64_t key, double p, int N, int C, uint64_t row0);

// What a scan for NaN and Inf found (gpt_set_detect_anomaly): of n values, `bad` are not finite, the
// first of them at flat index `first` (value first_value); maxabs is the largest finite |x|.
typedef struct { size_t n, bad, first; real first_value, maxabs; } FiniteScan;
FiniteScan finite_scan(const real *x, size_t n);

#endif
