// tests/fuzz/fuzz_llmc.c: llm.c GPT-2 model files (llmc_load, formats/llmc_model.c). An accepted file
// builds plain GPT-2 positions (a learned input table, every layer nope) whose wte padding rows are
// zero and whose parameters all came from the file (the size was checked before building).
#include "formats/llmc_model.h"
#include "tests/fuzz/fuzz.h"

void fuzz_one(const uint8_t *data, size_t size) {
    GPT m;
    memset(&m, 0, sizeof m);
    llmc_load(fuzz_file(data, size), &m, 0, NULL, NULL);
    const GPTConfig *c = &m.cfg;
    FUZZ_ASSERT(m.weights.params && posenc_is_gpt2(&c->pe) && m.weights.p.pe_input);
    // the file held at least every parameter but our padding rows, at 2 or 4 bytes each
    FUZZ_ASSERT(size >= 4 * LLMC_HEADER_INTS + 2 * (m.weights.num_params - (size_t)(c->padded_vocab - c->vocab_size) * c->n_embd));
    for (size_t i = (size_t)c->vocab_size * c->n_embd; i < (size_t)c->padded_vocab * c->n_embd; i++) FUZZ_ASSERT(m.weights.p.wte[i] == 0);
    gpt_free(&m);
}
