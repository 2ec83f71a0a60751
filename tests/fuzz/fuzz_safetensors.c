// tests/fuzz/fuzz_safetensors.c: safetensors files (st_read, formats/safetensors.c). Every tensor of an
// accepted file is found by its name and holds as many elements as its shape says.
#include <string.h>

#include "formats/safetensors.h"
#include "tests/fuzz/fuzz.h"

void fuzz_one(const uint8_t *data, size_t size) {
    StFile f;
    st_read(fuzz_file(data, size), &f);
    for (int k = 0; k < f.n; k++) {
        const StTensor *t = &f.t[k];
        FUZZ_ASSERT(st_find(&f, t->name) == t);
        FUZZ_ASSERT(t->dtype == ST_F32 || t->dtype == ST_I32);
        FUZZ_ASSERT(t->ndim >= 0 && t->ndim <= ST_MAX_DIMS);
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->shape[d];
        FUZZ_ASSERT(numel == t->numel && (t->data || !numel));
        if (numel) {   // the data is readable to its end (ASan checks the bound)
            volatile unsigned char last = ((unsigned char *)t->data)[4 * numel - 1];
            (void)last;
        }
    }
    st_file_free(&f);
}
