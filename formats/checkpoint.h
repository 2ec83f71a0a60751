// formats/checkpoint.h: checkpoints (save/resume), safetensors export and import, and the one-step
// dump. formats/modelfile.h tells a model file's format by its first bytes and calls the reader.
//
// Checkpoint file (all integers little-endian):
//   bytes 0..7   magic "GPTPECK1"
//   uint32       version (1)
//   uint32       flags: bit 0 = optimiser state and training position follow the parameters
//   uint32       config length K, then K bytes of "key=value\n" lines: the model config
//                (vocab_size, n_layer, n_head, n_embd, max_seq_len, input_pe, layer_pe and every
//                scheme setting of posenc's table, rope_* ... longrope_* ...)
//                and the training settings as train.<flag>=<value> (used by --resume)
//   uint64       number of parameters P
//   float32[P]   parameters, in the model's layout (model.h)
//   if flags & 1: float32[P] AdamW m, float32[P] AdamW v, int64 step (steps done),
//                uint64 sampling RNG state, uint64 data position (text: the stream's offset,
//                see StreamPos in dataset/loader.h; a --task run: the state of its instance
//                stream's RNG); the rest of a text stream's position is in the config lines:
//                data.epoch, data.shard, and the training data's size data.tokens, data.files
//                (checkpoints written before these lines existed load with all four 0)
// The size must match exactly; a file is written to PATH.tmp and renamed, so a crash never
// leaves a half-written checkpoint under the real name.
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include "model.h"

#define CKPT_MAGIC "GPTPECK1"   // a checkpoint's first 8 bytes

typedef struct {
    int has_opt;         // optimiser state present
    int64_t step;        // optimiser steps done
    uint64_t rng;        // the sampling RNG's state (--sample)
    uint64_t data_pos;   // where the training data stands: text, the stream's offset
                         // (StreamPos.offset); a --task run, its instance stream's RNG state
    uint64_t data_epoch, data_shard;   // text: the rest of the stream's position (StreamPos)
    uint64_t data_tokens, data_files;  // text: the training data's size, to refuse resuming on
                                       // other data; 0 when not stored (an older checkpoint)
    uint64_t select_step;                // --select-every: the step of the best check so far; 0 = none
    double select_acc;                   // its in-distribution validation accuracy
} TrainState;

// train_kv: extra "train.key=value\n" lines (may be NULL). st: NULL for weights only.
void ckpt_save(const char *path, const GPT *m, const char *train_kv, const TrainState *st);
// Reads the file, builds *m from its config (tables for max_pos positions, 0 = context) and loads
// the parameters (and, when present and st is non-NULL, the optimiser state). *train_kv receives
// the train.* lines (caller frees; may be NULL). adjust (may be NULL) may change the config before
// the model is built: a new context, context-extension settings; the parameter count must stay.
// Exits with a message naming the file on any problem. CkptAdjust is every model-file reader's hook
// (formats/llmc_model.h, formats/modelfile.h take it too).
typedef void (*CkptAdjust)(GPTConfig *cfg, void *ctx);
void ckpt_load(const char *path, GPT *m, int max_pos, char **train_kv, TrainState *st, CkptAdjust adjust, void *ctx);

// The export contract (docs/formats.md): every parameter as F32 under HF GPT-2 names, Conv1D weights
// transposed to (in, out), wte cut to the real vocabulary; metadata format=pt and config JSON.
// When the input scheme is learned and every layer nope, also writes config.json beside it.
void export_safetensors(const char *path, const GPT *m);
// One forward/backward on batch b (no optimiser step): tokens, targets, logits (B,T,V), loss and
// grad.NAME for every exported NAME.
void dump_step(const char *path, GPT *m, const Batch *b);
// The "config" JSON object of the export metadata.
void model_config_json(const GPT *m, char *buf, size_t cap);
// Reads a safetensors file written by export_safetensors: the model from its "config" metadata
// (the checkpoint's config lines), each parameter from its tensor; export then import is the
// identity, bit for bit. max_pos and adjust as for ckpt_load. Every tensor is checked against the
// config before the model is built; exits with a message naming the file on any problem.
void import_safetensors(const char *path, GPT *m, int max_pos, CkptAdjust adjust, void *ctx);

#endif
