// mpi/dist.c: the processes of an MPI job (mpi/dist.h): rank, size, sums, checks. Built twice: with
// -DUSE_MPI (make MPI=1, mpicc) and without, where every function is the one-process case. The
// gradients' reductions are in mpi/dist_grad.c.
#include "mpi/dist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/common.h"

#ifdef USE_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_size = 1, g_node_size = 1;

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }
int dist_node_size(void) { return g_node_size; }

#ifdef USE_MPI

// FNV-1a over 64-bit words (then the tail bytes): one pass over the parameters, fast enough to
// run after every step with --verify-ranks
static uint64_t hash_bytes(const void *buf, size_t bytes) {
    const unsigned char *p = buf;
    uint64_t h = 0xcbf29ce484222325ull, w;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) { memcpy(&w, p + i, 8); h ^= w; h *= 0x100000001b3ull; }
    for (; i < bytes; i++) { h ^= p[i]; h *= 0x100000001b3ull; }
    return h;
}

int dist_mpi(void) { return 1; }

static void abort_all(void) {
    fprintf(stderr, "rank %d of %d stopped on the error above; MPI_Abort ends every rank\n", g_rank, g_size);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void dist_init(int *argc, char ***argv) {
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    CHECK(provided >= MPI_THREAD_FUNNELED, "this MPI library cannot give the thread level FUNNELED (only the main "
          "thread calls MPI, OpenMP threads compute): rebuild Open MPI with thread support");
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm node;                                     // the ranks that share this machine's memory
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &g_node_size);
    MPI_Comm_free(&node);
    if (g_size > 1) {
        check_fail_hook = abort_all;
        if (g_rank > 0) CHECK(freopen("/dev/null", "w", stdout), "rank %d: cannot send its output to /dev/null", g_rank);
    }
}

void dist_finalize(void) { fflush(stdout); MPI_Finalize(); }

double dist_sum(double x) {
    if (g_size == 1) return x;
    double y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

int dist_any(int x) {
    if (g_size == 1) return x != 0;
    int v = x != 0, y;
    MPI_Allreduce(&v, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return y;
}

void dist_bcast(void *buf, size_t bytes) {
    if (g_size > 1) MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void dist_barrier(void) { if (g_size > 1) MPI_Barrier(MPI_COMM_WORLD); }

void dist_idle_barrier(void) {
    if (g_size == 1) return;
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    for (int done = 0;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) break;
        struct timespec ts = { 0, 50 * 1000 * 1000 };   // 50 ms: no core is spun while others work
        nanosleep(&ts, NULL);
    }
}

void dist_check_same(const void *buf, size_t bytes, const char *what) {
    if (g_size == 1) return;
    uint64_t h = hash_bytes(buf, bytes), *all = xmalloc(sizeof(uint64_t) * (size_t)g_size);
    MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 1; r < g_size; r++)
        CHECK(all[r] == all[0], "%s differ between rank 0 (hash %016llx) and rank %d (%016llx): the ranks no longer "
              "train the same model", what, (unsigned long long)all[0], r, (unsigned long long)all[r]);
    free(all);
}

#else  // one process

int dist_mpi(void) { return 0; }
void dist_init(int *argc, char ***argv) { (void)argc; (void)argv; }
void dist_finalize(void) {}
double dist_sum(double x) { return x; }
int dist_any(int x) { return x != 0; }
void dist_bcast(void *buf, size_t bytes) { (void)buf; (void)bytes; }
void dist_barrier(void) {}
void dist_idle_barrier(void) {}
void dist_check_same(const void *buf, size_t bytes, const char *what) { (void)buf; (void)bytes; (void)what; }

#endif
