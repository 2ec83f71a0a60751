// formats/modelfile.h: --load's one entry point: opens a model file of any format this program
// reads, tells which by its first bytes (not its name) and calls that format's reader.
#ifndef MODELFILE_H
#define MODELFILE_H

#include "formats/checkpoint.h"   // CkptAdjust

// A checkpoint (ckpt_load, weights only), an llm.c GPT-2 model (formats/llmc_model.h: version 3 or 5),
// or a safetensors file written by export_safetensors (the model from its "config" metadata, each
// parameter from its tensor: export then import is the identity, bit for bit). max_pos, train_kv
// and adjust as for ckpt_load; *train_kv is NULL for the files that hold no training lines. Every
// size is checked before the model is built; exits with a message naming the file on any problem.
void model_load(const char *path, GPT *m, int max_pos, char **train_kv, CkptAdjust adjust, void *ctx);

#endif
