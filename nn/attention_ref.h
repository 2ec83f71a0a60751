// nn/attention_ref.h: the plain attention, forward and backward, written from the definition with
// the whole (T, T) matrix of probabilities: O(T^2) memory and slow, the one to read first. The
// tests use it as the oracle of the tiled kernel (nn/attention.h), which must compute the same:
//   score(i,j) = q_i . k_j / sqrt(hs) + bias_h(pos_i, pos_j)   (the scheme's hook 3, if it has one)
//   p(i,j)     = exp(score(i,j) - lse_i) over the keys i may attend (attn_limit, key_visible), else 0
//   out_i      = sum_j f(i,j) p(i,j) v_j    (f: attention dropout's 1/(1-P) or 0, else 1)
// Shapes as in nn/attention.h: B batch, T time, C channels, NH heads, hs = C/NH; qkv (B,T,3C) holds
// per token q at [0,C), k at [C,2C), v at [2C,3C), q and k already through hook 2 (qk_hook).
// Training never calls these: it runs the tiled kernel.
#ifndef ATTENTION_REF_H
#define ATTENTION_REF_H

#include "nn/attention.h"

// out (B,T,C), lse (B,NH,T); qkv (B,T,3C)
void attention_ref_forward(real *out, real *lse, const real *qkv, const AttnPos *ap, int B, int T, int C, int NH);
// dqkv (B,T,3C) overwritten; ap->pe_dparams (ap->pe_nparams) += the learned bias's gradient, when
// the scheme has one and pe_dparams is given; dout (B,T,C); qkv (B,T,3C) as the forward's
void attention_ref_backward(real *dqkv, const real *dout, const real *qkv, const AttnPos *ap, int B, int T, int C, int NH);

#endif
