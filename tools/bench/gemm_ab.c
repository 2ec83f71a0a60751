// tools/bench/gemm_ab.c: times gemm_own on one shape, best of REPS calls (the A/B of
// results/bench/split-ab-zen5.txt: one binary per build, run in turn). Built by make bench-tools.
// usage: build/bench/gemm_ab M N K N|Bt|T [REPS]: Bt reads B transposed (the forward), T reads A transposed (dW)
#include "nn/kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  if(argc<5||argc>6||(strcmp(argv[4],"N")&&strcmp(argv[4],"Bt")&&strcmp(argv[4],"T"))||atoi(argv[1])<1||atoi(argv[2])<1||atoi(argv[3])<1){
    fprintf(stderr,"usage: %s M N K N|Bt|T [REPS]\n",argv[0]);return 2;}
  int M=atoi(argv[1]),N=atoi(argv[2]),K=atoi(argv[3]);const char*mode=argv[4];int reps=argc>5?atoi(argv[5]):10;
  float*a=malloc(sizeof(float)*M*K),*b=malloc(sizeof(float)*K*N),*c=malloc(sizeof(float)*M*N);
  for(long i=0;i<(long)M*K;i++)a[i]=(i%7)*0.1f;
  for(long i=0;i<(long)K*N;i++)b[i]=(i%5)*0.1f;
  double best=1e9;
  for(int r=0;r<reps;r++){double t0=now();
    if(!strcmp(mode,"N")) gemm_own(M,N,K,a,K,1,b,N,1,c,N,0);
    else if(!strcmp(mode,"Bt")) gemm_own(M,N,K,a,K,1,b,1,K,c,N,0);
    else gemm_own(M,N,K,a,1,M,b,N,1,c,N,0);
    double t=now()-t0;if(t<best)best=t;}
  printf("%dx%dx%d%s %.1f GF/s (%.2f ms)\n",M,N,K,mode,2.0*M*N*K/best/1e9,best*1e3);
  free(a);free(b);free(c);
  return 0;
}
