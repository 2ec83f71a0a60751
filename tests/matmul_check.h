// tests/matmul_check.h: a check test_kernels (fp32) and test_bf16 (bf16) both make of a linear
// layer's backward (nn/layers.h): what it overwrites must have the bits it would add onto zeros.
#ifndef MATMUL_CHECK_H
#define MATMUL_CHECK_H

#include "nn/layers.h"
#include "tests/testutil.h"
#include "util/common.h"

typedef void (*MatmulBackwardFn)(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                                 const real *weight, int N, int C, int OC, int acc, int dinp_acc);

// dinp, dw, db: what fn gave with acc = dinp_acc = 1 onto zeros. Then acc = 0 (dweight and dbias NaN
// before) and dinp_acc = 0 (dinp NaN before) must give those bits: nothing overwritten is read.
static inline void check_matmul_overwrite(MatmulBackwardFn fn, const char *name, const real *dinp, const real *dw,
                                          const real *db, const real *dout, const real *inp, const real *w, int N,
                                          int C, int OC) {
    real *dw0 = xmalloc(sizeof(real) * OC * C), *db0 = xmalloc(sizeof(real) * OC), *dinp0 = xmalloc(sizeof(real) * N * C);
    for (size_t k = 0; k < (size_t)OC * C; k++) dw0[k] = NAN;
    for (int k = 0; k < OC; k++) db0[k] = NAN;
    for (size_t k = 0; k < (size_t)N * C; k++) dinp0[k] = NAN;
    fn(dinp0, dw0, db0, dout, inp, w, N, C, OC, 0, 0);
    EXPECT(!memcmp(dw0, dw, sizeof(real) * OC * C) && !memcmp(db0, db, sizeof(real) * OC),
           "%s %dx%d->%d with acc = 0: dweight, dbias not the bits of acc = 1 onto zeros", name, N, C, OC);
    EXPECT(!memcmp(dinp0, dinp, sizeof(real) * N * C), "%s %dx%d->%d with dinp_acc = 0: dinp not the bits of "
           "dinp_acc = 1 onto zeros", name, N, C, OC);
    free(dw0); free(db0); free(dinp0);
}

#endif
