// tests/fuzz/fuzz_checkpoint.c: checkpoint files (ckpt_load, formats/checkpoint.c). An accepted file
// builds a model whose parameter count is the one stored; its training lines are key=value.
#include <string.h>

#include "formats/checkpoint.h"
#include "tests/fuzz/fuzz.h"

void fuzz_one(const uint8_t *data, size_t size) {
    GPT m;
    memset(&m, 0, sizeof m);
    TrainState st;
    char *kv = NULL;
    ckpt_load(fuzz_file(data, size), &m, 0, &kv, &st, NULL, NULL);
    FUZZ_ASSERT(m.weights.num_params > 0 && m.weights.params);
    FUZZ_ASSERT(!st.has_opt || (m.weights.adam_m && m.weights.adam_v));
    FUZZ_ASSERT(kv);
    for (char *line = kv; *line;) {
        char *nl = strchr(line, '\n');
        FUZZ_ASSERT(nl && strncmp(line, "train.", 6) == 0 && memchr(line, '=', (size_t)(nl - line)));
        line = nl + 1;
    }
    free(kv);
    gpt_free(&m);
}
