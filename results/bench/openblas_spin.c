// results/bench/openblas_spin.c: our gemm (256x768x768, B read transposed) right after 4 calls of OpenBLAS sgemm, ITERS times, with
// and without a pause of PAUSE seconds between them (openblas-spin-zen5.txt).
// cc -O3 -march=native -fopenmp -I. results/bench/openblas_spin.c build/float/nn/kernels.o build/float/util/*.o -lopenblas -lm
// usage: openblas_spin ITERS PAUSE
#include "nn/kernels.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  int M=256,N=768,K=768, iters=atoi(argv[1]); double pause=atof(argv[2]);
  float*a=malloc(4L*M*K),*b=malloc(4L*K*N),*c=malloc(4L*M*N);
  for(long i=0;i<(long)M*K;i++)a[i]=(i%7)*0.1f;for(long i=0;i<(long)K*N;i++)b[i]=(i%5)*0.1f;
  openblas_set_num_threads(2);
  int slow=0,n=0; double best=1e9, worst=0;
  for(int it=0;it<iters;it++){
    for(int r=0;r<4;r++) cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasTrans,M,N,K,1,a,K,b,K,0,c,N);
    if(pause>0) nanosleep(&(struct timespec){.tv_sec=(time_t)pause,.tv_nsec=(long)((pause-(time_t)pause)*1e9)},NULL);
    for(int r=0;r<4;r++){double t0=now(); gemm_own(M,N,K,a,K,1,b,1,K,c,N,0); double t=now()-t0; n++;
      if(t<best)best=t; if(t>worst)worst=t; if(t>3*best && t>2e-3) slow++;}
  }
  printf("pause %.2f s: %d of %d runs of ours took over 3x the best (best %.2f ms, worst %.2f ms)\n",pause,slow,n,best*1e3,worst*1e3);
}
