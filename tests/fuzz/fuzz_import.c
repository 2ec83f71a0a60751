// tests/fuzz/fuzz_import.c: --load's model files (model_load, formats/modelfile.c): told apart by their
// first bytes, then a checkpoint (ckpt_load, also fuzz_checkpoint), an llm.c model (also fuzz_llmc)
// or a safetensors export (import_safetensors: st_read, the config metadata through st_json_lines
// and the checkpoint's config parser, every tensor against the config). An accepted file builds a
// model whose tensors all fit in the file.
#include "formats/modelfile.h"
#include "tests/fuzz/fuzz.h"

void fuzz_one(const uint8_t *data, size_t size) {
    GPT m;
    memset(&m, 0, sizeof m);
    char *kv = NULL;
    model_load(fuzz_file(data, size), &m, 0, &kv, NULL, NULL);
    const GPTConfig *c = &m.cfg;
    FUZZ_ASSERT(m.weights.params && m.weights.num_params > 0);
    // every format stores each parameter but the padding rows in at least 2 bytes (bfloat16)
    FUZZ_ASSERT(size >= 2 * (m.weights.num_params - (size_t)(c->padded_vocab - c->vocab_size) * c->n_embd));
    free(kv);
    gpt_free(&m);
}
