// eval/attndist.h: the NoPE paper's attention distance (Kazemnejad et al. 2023, section 5.2): how
// close model A's attention is to model B's on the same inputs, layer by layer.
//
// For one input of T tokens and layer l, every head h of A has attention rows p_h(i, .) (i = 0..T-1,
// a distribution over the keys i may see) and every head g of B rows q_g(i, .). Their distance is
// the mean over the rows of the Jensen-Shannon divergence,
//     d(h, g) = 1/T sum_i JSD(p_h(i, .), q_g(i, .)),   JSD(p, q) = KL(p || m)/2 + KL(q || m)/2, m = (p + q)/2
// (natural log: 0 for equal rows, at most ln 2 = 0.693 for rows on disjoint keys). Each of A's heads
// is matched with B's nearest head, and the layer's distance is the mean over A's heads:
//     D_l = 1/NH_A sum_h min_g d(h, g).
// With A a NoPE model and B a model of another scheme (or NoPE of another seed: the baseline), a
// small D_l says A's heads in layer l attend as some head of B does.
#ifndef ATTNDIST_H
#define ATTNDIST_H

#include "model.h"

// JSD(p, q) in nats of two distributions over n entries (zeros allowed; 0 log 0 = 0).
double attn_jsd(const real *p, const real *q, int n);

// D_l (above) for one input: tokens (T,), one document, positions 0..T-1, through both models
// (each must take T positions and hold every token id; the same number of layers). out: (L,).
void attention_distance(GPT *a, GPT *b, const int *tokens, int T, double *out);

#endif
