// mpi/dist.h: the processes of an MPI job: rank, size, sums, broadcast, barriers and checks (make
// MPI=1 builds mpi/dist.c with mpicc and -DUSE_MPI; without it every function below is the
// one-process case: rank 0 of 1). ./train trains data parallel on it (the gradients' reductions are
// mpi/dist_grad.h's); ./compare shares its runs out among the ranks.
#ifndef DIST_H
#define DIST_H

#include <stddef.h>

// MPI_Init (thread level FUNNELED: only the main thread calls MPI), once, first thing in main.
// With more than one rank: stdout of ranks > 0 goes to /dev/null (rank 0 alone prints), and a
// failed CHECK on any rank prints its message, names the rank and calls MPI_Abort, so every rank
// exits non-zero instead of waiting for a dead one.
void dist_init(int *argc, char ***argv);
void dist_finalize(void);
int dist_rank(void);
int dist_size(void);
int dist_node_size(void);                   // the ranks on this machine (they share its memory); 1 without MPI
int dist_mpi(void);                         // 1 in a build with MPI (make MPI=1)
double dist_sum(double x);                  // the sum over ranks (every rank gets the same bits)
int dist_any(int x);                        // 1 when x is nonzero on some rank
void dist_bcast(void *buf, size_t bytes);   // rank 0's bytes to every rank
void dist_barrier(void);
// A barrier that sleeps while it waits (50 ms at a time) instead of spinning a core, for a rank
// that is done while the others still work (./compare under mpirun).
void dist_idle_barrier(void);
// Exits (CHECK) when the `bytes` at buf differ between ranks, naming `what` and the ranks: a
// 64-bit FNV-1a hash per rank, gathered and compared.
void dist_check_same(const void *buf, size_t bytes, const char *what);

#endif
