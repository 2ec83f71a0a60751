// mpi/dist_grad.c: the gradients' reductions across ranks and the update (mpi/dist_grad.h). Built
// twice, as mpi/dist.c is: with -DUSE_MPI, and without, where they are gpt_grad_norm and gpt_adamw.
#include "mpi/dist_grad.h"

#include <math.h>
#include <string.h>

#ifdef USE_MPI
#include <mpi.h>

#define REAL_MPI (sizeof(real) == sizeof(float) ? MPI_FLOAT : MPI_DOUBLE)

// Rank r's slice [lo, hi) of n elements cut in `size` runs, the first n % size one longer
static void slice_of(size_t n, int size, int r, size_t *lo, size_t *hi) {
    size_t per = n / (size_t)size, extra = n % (size_t)size;
    *lo = (size_t)r * per + ((size_t)r < extra ? (size_t)r : extra);
    *hi = *lo + per + ((size_t)r < extra ? 1 : 0);
}

// grad_ready: block `layer`'s tensors (or, for -1, the tensors outside the blocks) are final
static void start_reductions(void *ctx, int layer) {
    DistGrad *d = ctx;
    GPT *m = d->m;
    MPI_Request *req = d->req;
    for (int k = 0; k < m->weights.n_tensors; k++) {
        const TensorInfo *ti = &m->weights.tensors[k];
        if (ti->layer != layer) continue;
        real *g = m->weights.grads + ti->offset;
        int n = ti->rows * ti->cols;
        if (d->zero) {
            const int *counts = d->counts + (size_t)k * d->size;
            MPI_Ireduce_scatter(g, d->gshard + d->soff[k], counts, REAL_MPI, MPI_SUM, MPI_COMM_WORLD, &req[d->nreq]);
        } else {
            MPI_Iallreduce(MPI_IN_PLACE, g, n, REAL_MPI, MPI_SUM, MPI_COMM_WORLD, &req[d->nreq]);
        }
        d->nreq++;
    }
    // push the reductions started so far along while the backward computes (Open MPI advances
    // non-blocking collectives only inside MPI calls)
    int flag;
    MPI_Testall(d->nreq, req, &flag, MPI_STATUSES_IGNORE);
}

void dist_grad_init(DistGrad *d, GPT *m, int zero) {
    memset(d, 0, sizeof *d);
    d->m = m; d->rank = dist_rank(); d->size = dist_size(); d->zero = zero && dist_size() > 1;
    int nt = m->weights.n_tensors;
    d->req = xcalloc((size_t)nt, sizeof(MPI_Request));
    for (int k = 0; k < nt; k++)
        CHECK((size_t)m->weights.tensors[k].rows * m->weights.tensors[k].cols <= (size_t)INT32_MAX,
              "tensor %s has %zu elements, more than one MPI message of floats can count (2^31 - 1)",
              m->weights.tensors[k].name, (size_t)m->weights.tensors[k].rows * m->weights.tensors[k].cols);
    if (!d->zero) return;
    d->lo = xcalloc((size_t)nt, sizeof(size_t)); d->hi = xcalloc((size_t)nt, sizeof(size_t));
    d->soff = xcalloc((size_t)nt, sizeof(size_t));
    d->counts = xcalloc((size_t)nt * dist_size(), sizeof(int)); d->displs = xcalloc((size_t)nt * dist_size(), sizeof(int));
    for (int k = 0; k < nt; k++) {
        const TensorInfo *ti = &m->weights.tensors[k];
        size_t n = (size_t)ti->rows * ti->cols;
        for (int r = 0; r < dist_size(); r++) {
            size_t lo, hi;
            slice_of(n, dist_size(), r, &lo, &hi);
            d->counts[(size_t)k * dist_size() + r] = (int)(hi - lo);
            d->displs[(size_t)k * dist_size() + r] = (int)lo;
            if (r == dist_rank()) { d->lo[k] = lo; d->hi[k] = hi; }
        }
        d->soff[k] = d->shard_n;
        d->shard_n += d->hi[k] - d->lo[k];
    }
    d->gshard = xcalloc_big(d->shard_n + 1, sizeof(real));
    d->mshard = xcalloc_big(d->shard_n + 1, sizeof(real));
    d->vshard = xcalloc_big(d->shard_n + 1, sizeof(real));
}

void dist_grad_free(DistGrad *d) {
    free(d->req); free(d->lo); free(d->hi); free(d->soff); free(d->counts); free(d->displs);
    free(d->gshard); free(d->mshard); free(d->vshard);
    memset(d, 0, sizeof *d);
}

void dist_grad_arm(DistGrad *d) {
    if (d->size == 1) return;
    d->nreq = 0;
    d->armed = 1;
    d->m->state.grad_ready = start_reductions;
    d->m->state.grad_ready_ctx = d;
}

void dist_grad_wait(DistGrad *d) {
    if (d->size == 1) return;
    CHECK(d->armed && d->nreq == d->m->weights.n_tensors, "internal: the backward started %d of %d gradient reductions "
          "(was dist_grad_arm called before the step's last backward?)", d->nreq, d->m->weights.n_tensors);
    double t0 = now_seconds();
    MPI_Waitall(d->nreq, d->req, MPI_STATUSES_IGNORE);
    d->wait_s += now_seconds() - t0;
    gpt_grads_written(d->m);      // now the sums over the ranks (the armed backward gathered no norm)
    d->armed = 0;
    d->m->state.grad_ready = NULL;
    d->m->state.grad_ready_ctx = NULL;
}

void dist_grad_none(DistGrad *d) {
    if (d->zero) memset(d->gshard, 0, sizeof(real) * d->shard_n);
}

double dist_grad_norm(DistGrad *d) {
    if (!d->zero) return gpt_grad_norm(d->m);
    // the squared sum of this rank's slices (in a fixed order, as gpt_grad_norm), then over ranks
    double ss = sum_squares_ordered(d->gshard, d->shard_n);
    double t0 = now_seconds();
    double all = dist_sum(ss);
    d->wait_s += now_seconds() - t0;
    return sqrt(all);
}

void dist_adamw(DistGrad *d, const AdamWConfig *o, int t, double grad_scale) {
    GPT *m = d->m;
    if (!d->zero) { gpt_adamw(m, o, t, grad_scale); return; }
    MPI_Request *req = d->req;
    for (int k = 0; k < m->weights.n_tensors; k++) {
        const TensorInfo *ti = &m->weights.tensors[k];
        size_t n = d->hi[k] - d->lo[k];
        if (n) gpt_adamw_span(m, o, t, grad_scale, ti->offset + d->lo[k], n, d->gshard + d->soff[k],
                              d->mshard + d->soff[k], d->vshard + d->soff[k], ti->decay);
        // this tensor's new slices to every rank while the next tensor is updated
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m->weights.params + ti->offset,
                        d->counts + (size_t)k * d->size, d->displs + (size_t)k * d->size, REAL_MPI, MPI_COMM_WORLD,
                        &req[k]);
    }
    d->moments_live = 1;
    double t0 = now_seconds();
    MPI_Waitall(m->weights.n_tensors, req, MPI_STATUSES_IGNORE);
    d->wait_s += now_seconds() - t0;
    gpt_project_parameters(m);
}

// rank 0's full buffer `full` (num_params,) from every rank's slices `shard`, or the reverse
static void gather_slices(DistGrad *d, real *full, const real *shard) {
    GPT *m = d->m;
    for (int k = 0; k < m->weights.n_tensors; k++) {
        const TensorInfo *ti = &m->weights.tensors[k];
        MPI_Gatherv(shard + d->soff[k], (int)(d->hi[k] - d->lo[k]), REAL_MPI, d->rank == 0 ? full + ti->offset : NULL,
                    d->counts + (size_t)k * d->size, d->displs + (size_t)k * d->size, REAL_MPI, 0, MPI_COMM_WORLD);
    }
}

void dist_moments_gather(DistGrad *d) {
    if (!d->zero) return;
    GPT *m = d->m;
    if (!d->moments_live) return;             // no update yet: the checkpoint has no moments to store
    if (d->rank == 0) {
        m->weights.adam_m = xmalloc_big(sizeof(real) * m->weights.num_params);
        m->weights.adam_v = xmalloc_big(sizeof(real) * m->weights.num_params);
    }
    gather_slices(d, m->weights.adam_m, d->mshard);
    gather_slices(d, m->weights.adam_v, d->vshard);
}

void dist_moments_release(DistGrad *d) {
    if (!d->zero) return;
    free(d->m->weights.adam_m); free(d->m->weights.adam_v);
    d->m->weights.adam_m = d->m->weights.adam_v = NULL;
}

void dist_moments_shard(DistGrad *d) {
    if (!d->zero || !d->m->weights.adam_m) return;
    GPT *m = d->m;
    for (int k = 0; k < m->weights.n_tensors; k++) {
        size_t n = d->hi[k] - d->lo[k], at = m->weights.tensors[k].offset + d->lo[k];
        memcpy(d->mshard + d->soff[k], m->weights.adam_m + at, n * sizeof(real));
        memcpy(d->vshard + d->soff[k], m->weights.adam_v + at, n * sizeof(real));
    }
    d->moments_live = 1;
    dist_moments_release(d);
}

#else  // one process

void dist_grad_init(DistGrad *d, GPT *m, int zero) {
    memset(d, 0, sizeof *d);
    d->m = m; d->size = 1; (void)zero;   // one rank: nothing to shard
}
void dist_grad_free(DistGrad *d) { memset(d, 0, sizeof *d); }
void dist_grad_arm(DistGrad *d) { (void)d; }
void dist_grad_wait(DistGrad *d) { (void)d; }
void dist_grad_none(DistGrad *d) { (void)d; }   // the gradient buffer itself is zeroed
double dist_grad_norm(DistGrad *d) { return gpt_grad_norm(d->m); }
void dist_adamw(DistGrad *d, const AdamWConfig *o, int t, double grad_scale) { gpt_adamw(d->m, o, t, grad_scale); }
void dist_moments_gather(DistGrad *d) { (void)d; }
void dist_moments_release(DistGrad *d) { (void)d; }
void dist_moments_shard(DistGrad *d) { (void)d; }


#endif
