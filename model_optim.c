// model_optim.c: the optimiser: the gradient's global norm (gathered by the backward, or a pass of
// its own) and the clipping scale, AdamW over the whole parameter buffer or one slice of it
// (mpi/dist.c's --zero 1), and the schemes' parameter constraints applied after an update.
#include "model.h"

#include "nn/kernels.h"

#include <string.h>
#include <tgmath.h>   // sqrt follows the type of `real` (sqrtf in the float build)
#ifdef _OPENMP
#include <omp.h>
#endif

// One pass over the buffers per step: AdamW with the clipping scale applied inside the update (the
// gradient buffer is read, never scaled in place). The norm the scale needs was gathered by the
// backward, tensor by tensor right after its last write (gpt_norm_*, below), while the tensor was
// still in cache; when it was not (MPI, a gradient written otherwise), gpt_grad_norm makes a pass of
// its own. In a pass every thread takes one contiguous span of the parameter buffer (one parallel
// region); AdamW walks the runs of consecutive tensors that share a weight-decay setting inside it,
// so the inner loop is a plain vectorised loop with no per-element tensor lookup.

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

// sum x[i]^2 over n values in doubles, in a fixed order: SQ_LANES running sums (lane j takes every
// SQ_LANES-th value from j), then the lanes in order and the tail. So many independent sums keep
// the adds from waiting on one another (one sum would wait an add's latency per vector: a third of
// the speed memory allows).
enum { SQ_LANES = 64 };
static double sum_squares_run(const real *x, size_t n) {
    double lane[SQ_LANES] = { 0 }, ss = 0;
    size_t i = 0;
    for (; i + SQ_LANES <= n; i += SQ_LANES) {
        #pragma omp simd
        for (int j = 0; j < SQ_LANES; j++) lane[j] += (double)x[i + j] * x[i + j];
    }
    for (int j = 0; j < SQ_LANES; j++) ss += lane[j];
    for (; i < n; i++) ss += (double)x[i] * x[i];
    return ss;
}

double sum_squares_ordered(const real *x, size_t n) {
    int nt = max_threads();
    double *part = xcalloc((size_t)nt, sizeof(double)), ss = 0;
    #pragma omp parallel
    {
        size_t lo, hi;
        thread_span(n, &lo, &hi);
        part[thread_id()] = sum_squares_run(x + lo, hi - lo);
    }
    for (int t = 0; t < nt; t++) ss += part[t];   // in thread order: the same bits for the same threads
    free(part);
    return ss;
}

// ----------------------------------------------------------------------------------------------
// the gradient's norm, gathered by the backward (model.h's GradNorm)

void gpt_grads_written(GPT *m) { m->state.norm.valid = 0; }

void gpt_norm_begin(GPT *m, int gather) {
    GradNorm *g = &m->state.norm;
    g->valid = 0; g->part = 0; g->count = 0;
    g->running = gather && !m->state.grad_ready;   // grad_ready: MPI sums the gradients after the backward
}

enum { NORM_SERIAL = 1 << 15 };   // below this many elements one thread sums (a parallel region costs more)

void gpt_norm_gather(GPT *m, const real *x, size_t n) {
    GradNorm *g = &m->state.norm;
    if (!g->running || !x) return;
    double t0 = now_seconds();
    // added in the backward's order of tensors: a fixed order
    g->part += n >= NORM_SERIAL ? sum_squares_ordered(x, n) : sum_squares_run(x, n);
    g->count += n;
    m->state.prof[PROF_OPTIMIZER] += now_seconds() - t0;
}

void gpt_norm_gather_layer(GPT *m, int layer, int pick_pe) {
    const GPTWeights *w = &m->weights;
    for (int k = 0; k < w->n_tensors; k++) {
        const TensorInfo *ti = &w->tensors[k];
        if (ti->layer == layer && (!pick_pe || ti->scheme >= 0))
            gpt_norm_gather(m, w->grads + ti->offset, (size_t)ti->rows * ti->cols);
    }
}

void gpt_norm_end(GPT *m) {
    GradNorm *g = &m->state.norm;
    if (!g->running) return;
    CHECK(g->count == m->weights.num_params, "internal: the backward gathered the squares of %zu gradients of %zu "
          "(a tensor gathered twice, or never)", g->count, m->weights.num_params);
    g->running = 0;
    g->ss = g->part;
    g->valid = 1;
}

double gpt_grad_norm(GPT *m) {
    if (m->state.norm.valid) return sqrt(m->state.norm.ss);
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
    if (m->state.grads_zero) {      // gpt_zero_grad and no backward since: the buffer is not yet 0
        memset(w->grads, 0, sizeof(real) * w->num_params);
        m->state.grads_zero = 0;
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
