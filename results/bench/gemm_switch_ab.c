// results/bench/gemm_switch_ab.c: gemm_own on one shape, a change under test switched call by call (A B B A) in
// one process, so that the machine's drift falls on both alike: medians of each and of the pairs' ratios. The
// library is built with a temporary global 'int gemm_exp' that switches the change (a measurement build only; the
// committed code has no such switch); EXP=v sets the value of the B calls (default 1; the A calls run with 0).
// cc -O3 -march=native -ffp-contract=fast -fopenmp -I. results/bench/gemm_switch_ab.c build/float/nn/kernels.o
//    build/float/util/*.o -lm
// usage: gemm_switch_ab M N K N|Bt|T [PAIRS]: Bt reads B transposed (the forward), T reads A transposed (dW)
// COLD=n: the calls go round n copies of A, B and C (n = 12 at GPT-2's shapes: over 100 MB, so that each
// call meets its operands in memory, as a step meets each layer's weights; default 1, the same operands)
#include "nn/kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
extern int gemm_exp;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){
  if(argc<5){fprintf(stderr,"usage: gemm_switch_ab M N K N|Bt|T [PAIRS]\n");return 2;}
  int M=atoi(argv[1]),N=atoi(argv[2]),K=atoi(argv[3]);const char*mode=argv[4];int pairs=argc>5?atoi(argv[5]):20;
  int nc=getenv("COLD")?atoi(getenv("COLD")):1; float*a0=malloc(sizeof(float)*M*K*nc),*b0=malloc(sizeof(float)*K*N*nc),*c0=malloc(sizeof(float)*M*N*nc),*a=a0,*b=b0,*c=c0;
  for(long i=0;i<(long)M*K*nc;i++)a[i]=(i%7)*0.1f-0.3f;
  for(long i=0;i<(long)K*N*nc;i++)b[i]=(i%5)*0.1f-0.2f;
  double *t[2]; t[0]=malloc(8*pairs); t[1]=malloc(8*pairs); double *r=malloc(8*pairs); int n[2]={0,0};
  for(int s=-4;s<2*pairs;s++){int e=(s&1)^((s/2)&1); gemm_exp=e*(getenv("EXP")?atoi(getenv("EXP")):1); int q=(s+8)%nc; a=a0+(long)q*M*K; b=b0+(long)q*K*N; c=c0+(long)q*M*N; double t0=now();
    if(!strcmp(mode,"N")) gemm_own(M,N,K,a,K,1,b,N,1,c,N,0);
    else if(!strcmp(mode,"Bt")) gemm_own(M,N,K,a,K,1,b,1,K,c,N,0);
    else gemm_own(M,N,K,a,1,M,b,N,1,c,N,0);
    double dt=now()-t0; if(s>=0) t[e][n[e]++]=dt;
  }
  for(int i=0;i<pairs;i++) r[i]=t[0][i]/t[1][i];
  qsort(t[0],pairs,8,cmp);qsort(t[1],pairs,8,cmp);qsort(r,pairs,8,cmp);
  printf("%dx%dx%d%s: %.1f -> %.1f GF/s (medians), x%.3f (quartiles %.3f-%.3f)\n",M,N,K,mode,2.0*M*N*K/t[0][pairs/2]/1e9,2.0*M*N*K/t[1][pairs/2]/1e9,r[pairs/2],r[pairs/4],r[3*pairs/4]);
}
