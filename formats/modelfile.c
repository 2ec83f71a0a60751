// formats/modelfile.c: --load's format dispatch (formats/modelfile.h): the first bytes of a model
// file name its reader.
#include "formats/modelfile.h"

#include <errno.h>
#include <string.h>

#include "formats/checkpoint.h"
#include "formats/llmc_model.h"

typedef enum { MODEL_FILE_CHECKPOINT, MODEL_FILE_LLMC, MODEL_FILE_SAFETENSORS, MODEL_FILE_UNKNOWN } ModelFileKind;

// What a model file is, from its first bytes: this program's magic, llm.c's model magic (int32
// 20240326), or the '{' that opens a safetensors header after its 8-byte length.
static ModelFileKind model_file_kind(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f, "cannot open checkpoint '%s': %s", path, strerror(errno));
    unsigned char b[9];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    uint32_t word = n >= 4 ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
    if (n >= 8 && memcmp(b, CKPT_MAGIC, 8) == 0) return MODEL_FILE_CHECKPOINT;
    if (n >= 4 && word == LLMC_MODEL_MAGIC) return MODEL_FILE_LLMC;
    if (n == 9 && b[8] == '{') return MODEL_FILE_SAFETENSORS;
    return MODEL_FILE_UNKNOWN;
}

void model_load(const char *path, GPT *m, int max_pos, char **train_kv, CkptAdjust adjust, void *ctx) {
    if (train_kv) *train_kv = NULL;
    switch (model_file_kind(path)) {
    case MODEL_FILE_CHECKPOINT: ckpt_load(path, m, max_pos, train_kv, NULL, adjust, ctx); break;
    case MODEL_FILE_LLMC: llmc_load(path, m, max_pos, adjust, ctx); break;
    case MODEL_FILE_SAFETENSORS: import_safetensors(path, m, max_pos, adjust, ctx); break;
    default:
        CHECK(0, "'%s' is not a checkpoint of this program (magic GPTPECK1, written by --save), an llm.c GPT-2 model "
              "(magic %d) or a safetensors file written by --export; pass one of those", path, LLMC_MODEL_MAGIC);
    }
}
