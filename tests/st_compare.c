// tests/st_compare.c: compare two safetensors files tensor by tensor.
//
//   st_compare GOT.safetensors REF.safetensors [--rtol R] [--atol A] [--skip PREFIX]...
//
// For every tensor of REF (except those whose name starts with a --skip prefix) GOT must hold a
// tensor of the same name, dtype and shape. I32 tensors must be equal. F32 tensors pass when
//   max_i |got_i - ref_i| <= atol + rtol * max_i |ref_i|
// i.e. the tolerance scales with the size of the whole tensor, not of each element, so entries of
// a gradient that are near zero are not held to an impossible relative accuracy. A non-finite
// value passes only where the reference holds the same non-finite value. Tensors only in GOT are
// listed and ignored. Exit status 0 only when every compared tensor passes (2 on a usage error).
#include "util/common.h"
#include "formats/safetensors.h"

#include <math.h>
#include <string.h>

static void usage(FILE *fp) {
    fprintf(fp,
            "usage: st_compare GOT.safetensors REF.safetensors [--rtol R] [--atol A] [--skip PREFIX]...\n"
            "  Checks that every tensor of REF is in GOT with the same dtype and shape; I32 must be equal,\n"
            "  F32 must satisfy max|got-ref| <= atol + rtol*max|ref| per tensor.\n"
            "  --rtol R        relative tolerance, scaled by the tensor's max |ref| (default 1e-4)\n"
            "  --atol A        absolute tolerance (default 1e-6)\n"
            "  --skip PREFIX   do not compare REF tensors whose name starts with PREFIX (repeatable)\n");
}

static double parse_tol(const char *flag, const char *s) {
    char *end;
    double v = strtod(s, &end);
    CHECK(*s && *end == '\0' && isfinite(v) && v >= 0,
          "st_compare: %s needs a non-negative number, got '%s'", flag, s);
    return v;
}

static int same_shape(const StTensor *a, const StTensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

static void shape_str(const StTensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ",%lld" : "%lld", (long long)t->shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

// Returns 1 when the F32 tensors agree; reports the max error and max |ref|.
static int compare_f32(const float *got, const float *ref, size_t n, double rtol, double atol,
                       double *max_err, double *max_ref, size_t *worst) {
    double err = 0, mref = 0;
    int nonfinite_mismatch = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        if (!isfinite(r) || !isfinite(g)) {
            // equal infinities, or NaN against NaN, are agreement; anything else is not
            int agree = (isnan(r) && isnan(g)) || (isinf(r) && isinf(g) && (r > 0) == (g > 0));
            if (!agree && !nonfinite_mismatch) { nonfinite_mismatch = 1; *worst = i; }
            continue;
        }
        if (fabs(r) > mref) mref = fabs(r);
        double e = fabs(g - r);
        if (e > err) { err = e; if (!nonfinite_mismatch) *worst = i; }
    }
    *max_err = nonfinite_mismatch ? INFINITY : err;
    *max_ref = mref;
    return !nonfinite_mismatch && err <= atol + rtol * mref;
}

int main(int argc, char **argv) {
    double rtol = 1e-4, atol = 1e-6;
    const char *paths[2] = {NULL, NULL};
    int npaths = 0;
    const char **skips = xcalloc((size_t)argc, sizeof *skips);
    int nskip = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage(stdout); return 0; }
        if (strcmp(a, "--rtol") == 0 || strcmp(a, "--atol") == 0 || strcmp(a, "--skip") == 0) {
            if (i + 1 >= argc) { fprintf(stderr, "st_compare: %s needs a value\n", a); usage(stderr); return 2; }
            const char *v = argv[++i];
            if (strcmp(a, "--rtol") == 0) rtol = parse_tol(a, v);
            else if (strcmp(a, "--atol") == 0) atol = parse_tol(a, v);
            else skips[nskip++] = v;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "st_compare: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            if (npaths == 2) { fprintf(stderr, "st_compare: too many file arguments (%s)\n", a); usage(stderr); return 2; }
            paths[npaths++] = a;
        }
    }
    if (npaths != 2) { usage(stderr); return 2; }

    StFile got, ref;
    st_read(paths[0], &got);
    st_read(paths[1], &ref);
    printf("st_compare: GOT %s, REF %s, rtol %g, atol %g\n", paths[0], paths[1], rtol, atol);

    int passed = 0, failed = 0, skipped = 0;
    for (int k = 0; k < ref.n; k++) {
        const StTensor *r = &ref.t[k];
        int skip = 0;
        for (int s = 0; s < nskip; s++)
            if (strncmp(r->name, skips[s], strlen(skips[s])) == 0) skip = 1;
        if (skip) { skipped++; continue; }
        const StTensor *g = st_find(&got, r->name);
        char rs[96], gs[96];
        shape_str(r, rs, sizeof rs);
        if (!g) {
            printf("  %-48s FAIL missing from GOT\n", r->name);
            failed++;
            continue;
        }
        shape_str(g, gs, sizeof gs);
        if (g->dtype != r->dtype) {
            printf("  %-48s FAIL dtype %s in GOT, %s in REF\n", r->name,
                   g->dtype == ST_F32 ? "F32" : "I32", r->dtype == ST_F32 ? "F32" : "I32");
            failed++;
            continue;
        }
        if (!same_shape(g, r)) {
            printf("  %-48s FAIL shape %s in GOT, %s in REF\n", r->name, gs, rs);
            failed++;
            continue;
        }
        if (r->dtype == ST_I32) {
            const int32_t *gi = g->data, *ri = r->data;
            size_t ndiff = 0, first = 0;
            for (size_t i = 0; i < r->numel; i++)
                if (gi[i] != ri[i]) { if (!ndiff) first = i; ndiff++; }
            if (ndiff) {
                printf("  %-48s FAIL I32 %s, %zu of %zu differ (first at flat index %zu: got %d, ref %d)\n",
                       r->name, rs, ndiff, r->numel, first, gi[first], ri[first]);
                failed++;
            } else {
                printf("  %-48s ok   I32 %s equal\n", r->name, rs);
                passed++;
            }
            continue;
        }
        double max_err, max_ref;
        size_t worst;
        int ok = compare_f32(g->data, r->data, r->numel, rtol, atol, &max_err, &max_ref, &worst);
        printf("  %-48s %s F32 %s max_abs_err %.3e max_abs_ref %.3e tol %.3e", r->name, ok ? "ok  " : "FAIL",
               rs, max_err, max_ref, atol + rtol * max_ref);
        if (!ok && r->numel)
            printf(" (worst at flat index %zu: got %.9g, ref %.9g)", worst, ((const float *)g->data)[worst],
                   ((const float *)r->data)[worst]);
        printf("\n");
        if (ok) passed++;
        else failed++;
    }
    for (int k = 0; k < got.n; k++)
        if (!st_find(&ref, got.t[k].name)) printf("  %-48s (only in GOT, not compared)\n", got.t[k].name);
    if (skipped) printf("st_compare: %d REF tensors skipped by --skip\n", skipped);
    printf("st_compare: %d passed, %d failed\n", passed, failed);
    st_file_free(&got);
    st_file_free(&ref);
    free(skips);
    return failed ? 1 : 0;
}
