// eval/viz.h: attention pictures for the length-generalisation lab: heat maps of every head's attention
// on one input, and of the positional signal itself, as gnuplot data + scripts + PNG.
//
// Every picture NAME is three files in DIR: NAME.dat (the numbers; heat maps in gnuplot's matrix
// format, one block per head, blocks separated by two blank lines, selected with `index h`),
// NAME.gp (the script; re-render with `cd DIR && gnuplot NAME.gp`) and NAME.png. Without gnuplot on
// PATH the .dat and .gp files are still written and a line says how to install it.
// DIR must exist (train_modes.c creates it).
#ifndef VIZ_H
#define VIZ_H

#include "model.h"

// One forward over tokens (T,) at positions 0..T-1, one document; for each layer l,
// DIR/attn_layer{l}.{dat,gp,png}: a grid of the heads' (T,T) attention probabilities (query i on
// y, key j on x; 0 where masked), token labels on the axes when T <= 64 (bytes of a byte model,
// else token ids). Leaves m->state.batch NULL (the batch it used is freed).
void viz_attention(GPT *m, const int *tokens, int T, const char *dir);

// The positional signal for positions 0..T-1, per scheme the model uses:
//   input table (learned, sinusoidal)     DIR/pos_input.*             positions x channels
//   bias hook (alibi, t5, kerple, fire)   DIR/pos_bias_layer{l}.*     per head b(i, j), j <= i
//   q/k hook (rope, xpos, p-rope)         DIR/pos_rope_layer{l}.*     kernel <R(p) e_c, R(0) e_c>
//                                         per channel c, and the score of all-ones q and k vs distance
// A layer whose scheme and parameters equal an earlier layer's is not drawn again (a line says
// which picture it shares); a nope layer (and input none) prints that it has no positional signal.
void viz_positions(GPT *m, int T, const char *dir);

#endif
