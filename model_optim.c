// model_optim.c: the optimiser: the gradient's global norm and the clipping scale, AdamW over the
// whole parameter buffer or one slice of it (dist/dist.c's --zero 1), and the schemes' parameter
// constraints applied after an update.
#include "model.h"

#include "nn/kernels.h"

#include <tgmath.h>   // sqrt follows the type of `real` (sqrtf in the float build)
#ifdef _OPENMP
#include <omp.h>
#endif

// Two passes over the buffers per step: the gradient's global norm, then AdamW with the clipping
// scale applied inside the update (the gradient buffer is read, never scaled in place). In each pass
// every thread takes one contiguous span of the parameter buffer (one parallel region), and inside
// it walks the runs of consecutive tensors that share a weight-decay setting, so the inner loop is
// a plain vectorised loop with no per-element tensor lookup.

// This thread's span [*lo, *hi) of n elements: contiguous, split in multiples of 16 (a cache line
// of floats), the same for every pass of a given thread count.
static void thread_span(size_t n, size_t *lo, size_t *hi) {
#ifdef _OPENMP
    size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
#else
    size_t nt = 1, t = 0;
#endif
    size_t per = (n + nt - 1) / nt;
    per = (per + 15) / 16 * 16;
    *lo = t * per < n ? t * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

double sum_squares_ordered(const real *x, size_t n) {
    int nt = max_threads();
    double *part = xcalloc((size_t)nt, sizeof(double)), ss = 0;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(n, &lo, &hi);
        double acc = 0;
        #pragma omp simd reduction(+:acc)
        for (size_t i = lo; i < hi; i++) acc += (double)x[i] * x[i];
        part[thread_id()] = acc;
    }
    for (int t = 0; t < nt; t++) ss += part[t];   // in thread order: the same bits for the same threads
    free(part);
    return ss;
}

double gpt_grad_norm(GPT *m) {
    double t0 = now_seconds();
    double ss = sum_squares_ordered(m->weights.grads, m->weights.num_params);
    m->state.prof[PROF_OPTIMIZER] += now_seconds() - t0;
    return sqrt(ss);
}

double gpt_clip_scale(double norm, double max_norm) {
    return max_norm > 0 && norm > max_norm ? max_norm / norm : 1;
}

// AdamW on n elements of one run of tensors (weight decay wd), on the gradient times gs
static void adamw_span(real *restrict w, real *restrict mm, real *restrict vv, const real *restrict grad, size_t n,
                       const AdamWConfig *o, real ibc1, real ibc2, real wd, real gs) {
    real lr = (real)o->lr, b1 = (real)o->beta1, b2 = (real)o->beta2, eps = (real)o->eps;
    #pragma omp simd
    for (size_t i = 0; i < n; i++) {
        real g = grad[i] * gs;
        real mi = b1 * mm[i] + (1 - b1) * g;
        real vi = b2 * vv[i] + (1 - b2) * g * g;
        mm[i] = mi; vv[i] = vi;
        w[i] -= lr * ((mi * ibc1) / (sqrt(vi * ibc2) + eps) + wd * w[i]);
    }
}

void gpt_adamw(GPT *m, const AdamWConfig *o, int t, double grad_scale) {
    GPTWeights *w = &m->weights;
    double t0 = now_seconds();
    if (!w->adam_m) {
        w->adam_m = xcalloc_big(w->num_params, sizeof(real));
        w->adam_v = xcalloc_big(w->num_params, sizeof(real));
    }
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    real ibc1 = (real)(1 / bc1), ibc2 = (real)(1 / bc2), gs = (real)grad_scale;
    // runs of consecutive tensors with the same decay setting: run r is [begin[r], begin[r+1])
    size_t *begin = xmalloc(sizeof(size_t) * (size_t)(w->n_tensors + 1));
    int *decay = xmalloc(sizeof(int) * (size_t)(w->n_tensors + 1)), runs = 0;
    for (int k = 0; k < w->n_tensors; k++) {
        const TensorInfo *ti = &w->tensors[k];
        CHECK(ti->offset == (k ? w->tensors[k - 1].offset + (size_t)w->tensors[k - 1].rows * w->tensors[k - 1].cols : 0),
              "internal: the tensors do not tile the parameter buffer");
        if (runs == 0 || decay[runs - 1] != ti->decay) { begin[runs] = ti->offset; decay[runs++] = ti->decay; }
    }
    begin[runs] = w->num_params;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(w->num_params, &lo, &hi);
        for (int r = 0; r < runs; r++) {
            size_t a = begin[r] > lo ? begin[r] : lo, b = begin[r + 1] < hi ? begin[r + 1] : hi;
            if (a < b) adamw_span(w->params + a, w->adam_m + a, w->adam_v + a, w->grads + a, b - a, o, ibc1, ibc2,
                                  decay[r] ? (real)o->weight_decay : 0, gs);
        }
    }
    free(begin); free(decay);
    gpt_project_parameters(m);
    gpt_watch_parameters(m, "optimiser step", m->state.detect_anomaly);
    m->state.prof[PROF_OPTIMIZER] += now_seconds() - t0;
}

void gpt_project_parameters(GPT *m) {
    GPTWeights *w = &m->weights;
    // a scheme may constrain its parameters (KERPLE keeps r1, r2 >= 0.01 as the paper's code does)
    for (int k = 0; k < w->n_tensors; k++) {
        const TensorInfo *ti = &w->tensors[k];
        const PosScheme *sc = ti->scheme >= 0 ? posenc_scheme(ti->scheme) : NULL;
        if (sc && sc->project) { PosDims d = gpt_pos_dims(&m->cfg); sc->project(&m->cfg.pe, &d, w->params + ti->offset); }
    }
}

void gpt_adamw_span(GPT *m, const AdamWConfig *o, int t, double grad_scale, size_t offset, size_t n,
                    const real *grad, real *mm, real *vv, int decay) {
    double t0 = now_seconds();
    CHECK(offset + n <= m->weights.num_params, "internal: gpt_adamw_span [%zu, %zu) past the %zu parameters",
          offset, offset + n, m->weights.num_params);
    // the factors exactly as gpt_adamw computes them, so a slice gets the bits the whole would
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    real ibc1 = (real)(1 / bc1), ibc2 = (real)(1 / bc2), gs = (real)grad_scale;
    real wd = decay ? (real)o->weight_decay : 0;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(n, &lo, &hi);
        if (lo < hi)
            adamw_span(m->weights.params + offset + lo, mm + lo, vv + lo, grad + lo, hi - lo, o, ibc1, ibc2, wd, gs);
    }
    m->state.prof[PROF_OPTIMIZER] += now_seconds() - t0;
}
