// eval/attndist.h: the NoPE paper's attention distance (Kazemnejad et al. 2023, section 5.2): how
// close model A's attention is to model B's on the same inputs, layer by layer, in two definitions.
//
// For one input of T tokens and layer l, every head h of A has attention rows p_h(i, .) (i = 0..T-1,
// a distribution over the keys 0..i) and every head g of B rows q_g(i, .).
//
// The textbook Jensen-Shannon divergence (jsd): each of A's heads matched with B's nearest head,
//     d(h, g) = 1/T sum_i JSD(p_h(i, .), q_g(i, .)),   JSD(p, q) = KL(p || m)/2 + KL(q || m)/2, m = (p + q)/2
//     D_l     = 1/NH_A sum_h min_g d(h, g)
// (natural log: 0 for equal rows, at most ln 2 = 0.693 for rows on disjoint keys).
//
// The paper's code (jsd_paper; McGill-NLP/length-generalization, its attention KL analyzer): over the
// pairs of a head g of B and a head h of A with g < h only (itertools.combinations: 66 of the 144
// pairs of 12 heads), the mean over the rows of its "JSD", which puts m first in both KLs,
//     d'(g, h) = 1/T sum_i J'(q_g(i, .), p_h(i, .)),  J'(p, q) = KL(m || p)/2 + KL(m || q)/2
//     D'_l     = min_{g < h} d'(g, h)
// (not bounded by ln 2: a key that one row gives almost nothing and the other much costs m ln(m/p)).
// With A NoPE's model and B another scheme's (in the paper, B's heads are the "source" and NoPE's the
// "target"), a small D_l or D'_l says NoPE's attention in layer l resembles B's.
#ifndef ATTNDIST_H
#define ATTNDIST_H

#include "model.h"

// JSD(p, q) in nats of two distributions over n entries (zeros allowed; 0 log 0 = 0).
double attn_jsd(const real *p, const real *q, int n);
// The paper's J'(p, q) = KL(m||p)/2 + KL(m||q)/2, m = (p + q)/2, in nats. An entry that is 0 in one
// row and not in the other (a softmax that underflowed) would make KL(m||.) infinite; it is taken
// at ATTN_P_FLOOR instead, so that entry costs m ln(m / 1.2e-38), at most 87.4 m.
double attn_jsd_paper(const real *p, const real *q, int n);
#define ATTN_P_FLOOR 1.17549435e-38          // FLT_MIN: the smallest normal float

// One layer's D_l and D'_l from its heads' rows: pa (HA, T, T) of A and pb (HB, T, T) of B, row i of
// a head holding keys 0..i (the rest ignored). *paper is NAN when no pair g < h exists (HA < 2).
void attn_layer_distance(const real *pa, int HA, const real *pb, int HB, int T, double *jsd, double *paper);

// D_l and D'_l (above) for one input: tokens (T,), one document, positions 0..T-1, through both models
// (each must take T positions and hold every token id; the same number of layers). jsd, paper: (L,).
void attention_distance(GPT *a, GPT *b, const int *tokens, int T, double *jsd, double *paper);

#endif
