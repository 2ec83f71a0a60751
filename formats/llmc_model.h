// formats/llmc_model.h: llm.c's GPT-2 model files (karpathy/llm.c: train_gpt2.py's write_model,
// train_gpt2.c's gpt2_build_from_checkpoint), read by --load and written by --export-llmc.
//
// Layout, all little-endian: a header of 256 int32, then the parameters, and nothing after them.
//   h[0] = 20240326 (magic), h[1] = version: 3 = every parameter float32, 5 = every parameter
//   bfloat16 (the same layout at 2 bytes a value); h[2] = maxT (the learned position table's rows:
//   the context), h[3] = V, h[4] = L, h[5] = NH, h[6] = C, h[7] = Vp >= V (the vocabulary padded;
//   llm.c pads to a multiple of 128); h[8..255] = 0 (llm.c writes zeros and reads nothing there).
//   Parameters, weights (out, in): wte (Vp,C) wpe (maxT,C) ln1w (L,C) ln1b (L,C) qkvw (L,3C,C)
//   qkvb (L,3C) attprojw (L,C,C) attprojb (L,C) ln2w (L,C) ln2b (L,C) fcw (L,4C,C) fcb (L,4C)
//   fcprojw (L,C,4C) fcprojb (L,C) lnfw (C) lnfb (C).
// That is this project's model with a learned input table and every layer nope (plain GPT-2): the
// same LayerNorm (eps 1e-5), GELU (tanh form), biases on every linear layer, wte tied as the output
// head, attention scaled by 1/sqrt(hs). Our layout (model.h) is llm.c's with wpe moved behind lnfb.
//
// Padding rows: llm.c never reads rows V..Vp-1 of wte and writes them as zeros. The reader keeps
// the V real rows (the model pads to its own multiple of 64 with zeros) and requires those rows to
// be zero, byte for byte; the writer pads to a multiple of 128 as llm.c does. So an llm.c file
// loaded and written again (--export-llmc) is the same file, byte for byte (a version 5 file comes
// back as version 3 with the same values: bfloat16 widens to float32 exactly).
#ifndef LLMC_MODEL_H
#define LLMC_MODEL_H

#include "formats/checkpoint.h"   // CkptAdjust, the readers' hook

enum { LLMC_MODEL_MAGIC = 20240326, LLMC_HEADER_INTS = 256 };

// Reads the file, builds *m from its header (learned input, nope layers; tables for max_pos
// positions, 0 = the context) and loads the parameters, as ckpt_load does (adjust: the same
// hook, called after every size check, before anything is allocated). Checks the magic, the
// version, every header field, the file's exact size (before allocating) and the zero padding
// rows; exits with a message naming the file on any problem.
void llmc_load(const char *path, GPT *m, int max_pos, CkptAdjust adjust, void *ctx);
// NULL when llm.c can run the model (learned input table, every layer nope), else a sentence
// saying why not, written into msg.
const char *llmc_unsupported(const GPT *m, char *msg, size_t cap);
// Writes the model as an llm.c version 3 (float32) file through PATH.tmp and rename
// (util/atomicfile.h); exits with llmc_unsupported's sentence for a model llm.c cannot run.
void llmc_export(const char *path, const GPT *m);

#endif
