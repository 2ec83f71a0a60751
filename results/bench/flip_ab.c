// results/bench/flip_ab.c: a product of few rows against a large weight computed the other way round,
// C^T = B^T A^T, against gemm_own as it runs it (one process, the two in turn, 64 MB written between calls so
// that the weight comes from memory, as in a step). The forward (out = x W^T, W (N x K)): the flipped call
// reads W in place as its A and packs x^T (the small operand) as its B. dX (dinp = dout W, W (K x N)): W^T is
// read in place (a transposed A of M <= 512 columns) and dout^T packed. Every element is the same chain of
// multiply-adds over k (a b = b a exactly), so the flipped product has the same bits once transposed ("same
// bits" checks it). Without "tr" the flipped C stays transposed (a bound: the layout is wrong); with "tr" it is
// transposed into place after, by transpose_block on one thread.
// cc -O3 -march=native -fopenmp -I. results/bench/flip_ab.c build/float/nn/kernels.o build/float/util/*.o -lm
// usage: flip_ab M N K Bt|N PAIRS [tr]
#include "nn/kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){
  int M=atoi(argv[1]),N=atoi(argv[2]),K=atoi(argv[3]); int fwd=!strcmp(argv[4],"Bt"); int pairs=atoi(argv[5]); int tr=argc>6;
  float*x=malloc(sizeof(float)*M*K),*w=malloc(sizeof(float)*K*N),*c=malloc(sizeof(float)*M*N),*ct=malloc(sizeof(float)*M*N);
  float *flush = malloc(64<<20);
  for(long i=0;i<(long)M*K;i++)x[i]=(i%7)*0.1f-0.3f;
  for(long i=0;i<(long)K*N;i++)w[i]=(i%5)*0.1f-0.2f;
  double *t[2]; t[0]=malloc(8*pairs); t[1]=malloc(8*pairs); double *r=malloc(8*pairs); int n[2]={0,0};
  for(int s=-4;s<2*pairs;s++){int e=(s&1)^((s/2)&1);
    memset(flush, s, 64<<20);   // weights cold, as in a step
    double t0=now();
    if (!e) { if (fwd) gemm_own(M,N,K,x,K,1,w,1,K,c,N,0); else gemm_own(M,N,K,x,K,1,w,N,1,c,N,0); }
    else {
      if (fwd) gemm_own(N,M,K,w,K,1,x,1,K,ct,M,0);        // out^T = W x^T
      else gemm_own(N,M,K,w,1,N,x,1,K,ct,M,0);             // dinp^T = W^T dout^T
      if (tr) transpose_block(c, N, ct, M, N, M);          // c[j*N + i] = ct[i*M + j]... dst[col*ldd+row]=src[row*lds+col]
    }
    double dt=now()-t0; if(s>=0) t[e][n[e]++]=dt;
  }
  if (tr) { float *c2=malloc(sizeof(float)*M*N); if (fwd) gemm_own(M,N,K,x,K,1,w,1,K,c2,N,0); else gemm_own(M,N,K,x,K,1,w,N,1,c2,N,0);
    printf("  same bits: %s\n", memcmp(c, c2, sizeof(float)*M*N) ? "NO" : "yes"); }
  for(int i=0;i<pairs;i++) r[i]=t[0][i]/t[1][i];
  qsort(t[0],pairs,8,cmp);qsort(t[1],pairs,8,cmp);qsort(r,pairs,8,cmp);
  printf("%dx%dx%d%s%s: now %.1f -> flipped %.1f GF/s (medians), x%.3f (quartiles %.3f-%.3f)\n",M,N,K,argv[4],tr?" +transpose":"",2.0*M*N*K/t[0][pairs/2]/1e9,2.0*M*N*K/t[1][pairs/2]/1e9,r[pairs/2],r[pairs/4],r[3*pairs/4]);
}
