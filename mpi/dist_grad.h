// mpi/dist_grad.h: data-parallel training's gradients across processes, on MPI (make MPI=1 builds
// mpi/dist_grad.c with mpicc and -DUSE_MPI; without it there is one rank (mpi/dist.h) and the
// gradient functions call gpt_grad_norm and gpt_adamw directly, so a build without MPI computes
// exactly what it did before this file existed).
//
// The model never sees MPI. gpt_backward calls m->state.grad_ready(ctx, layer) as each block's
// parameter gradients become final (model.h); dist_grad_arm points it here, and the reductions of that block's
// tensors start while the backward goes on with the blocks below (non-blocking collectives, one per
// tensor, pushed along with MPI_Testall at every later block: Open MPI progresses them only inside
// MPI calls). dist_grad_wait waits for the rest.
//
// Two ways to finish a step:
//   zero = 0: every tensor's gradient is summed on every rank (MPI_Iallreduce); every rank then
//             computes the same norm and applies the same AdamW to its full copy.
//   zero = 1 (ZeRO stage 1): rank r owns slice r of every tensor (tensor k's n_k elements cut in
//             `size` nearly equal runs). Gradients are reduce-scattered (MPI_Ireduce_scatter: r
//             receives the sum of its slices only), the norm is a sum of the ranks' squared sums,
//             each rank updates its slices with its own AdamW moments (1/size of them), then the
//             new parameters are all-gathered (MPI_Iallgatherv, one per tensor).
// Either way no result depends on message timing: each collective's algorithm is fixed by the
// communicator's size and the message's length, and the sums are in the order it fixes.
#ifndef DIST_GRAD_H
#define DIST_GRAD_H

#include "mpi/dist.h"
#include "model.h"

typedef struct {
    GPT *m;
    int rank, size, zero;
    int armed;                 // the next backward's grad_ready calls start reductions
    void *req;                 // (n_tensors,) MPI_Request, in the order they were started
    int nreq;
    // zero = 1: this rank's slice of every tensor, and the moments and gradient sums of the slices
    size_t *lo, *hi;           // (n_tensors,) [lo, hi) within the tensor
    size_t *soff;              // (n_tensors,) where the tensor's slice starts in the shard buffers
    int *counts, *displs;      // (n_tensors, size) every rank's slice of every tensor (MPI's counts)
    size_t shard_n;            // elements this rank owns: the sum of hi - lo
    real *gshard, *mshard, *vshard;   // (shard_n,) the reduced gradient and AdamW moments of the slices
    int moments_live;          // mshard, vshard hold moments (0 before the first update)
    double wait_s;             // seconds spent waiting for communication (since dist_grad_init)
} DistGrad;

void dist_grad_init(DistGrad *d, GPT *m, int zero);
void dist_grad_free(DistGrad *d);
// The next gpt_backward (the step's last micro-batch: earlier ones only accumulate) starts each
// block's reductions as it finishes the block.
void dist_grad_arm(DistGrad *d);
// Waits for every reduction the armed backward started (a no-op with one rank) and disarms.
void dist_grad_wait(DistGrad *d);
// In place of arm/backward/wait, for a step without a weighted token on any rank: the summed
// gradient is zero, and so are ZeRO-1's slices (else they would hold the last step's gradient).
void dist_grad_none(DistGrad *d);
// The global gradient norm (gpt_grad_norm of the summed gradient).
double dist_grad_norm(DistGrad *d);
// AdamW on the summed gradient times grad_scale (gpt_adamw), the scheme projections after it; with
// zero = 1 each rank updates its slices and the parameters are all-gathered.
void dist_adamw(DistGrad *d, const AdamWConfig *o, int t, double grad_scale);
// zero = 1: the full moments on rank 0 in m->weights.adam_m and adam_v (allocated here) for a
// checkpoint; dist_moments_release frees them again. Every rank must call both. No-ops for zero = 0.
void dist_moments_gather(DistGrad *d);
void dist_moments_release(DistGrad *d);
// zero = 1, after a checkpoint's moments were loaded into m->weights.adam_m and adam_v: keep this
// rank's slices, free the rest.
void dist_moments_shard(DistGrad *d);

#endif
