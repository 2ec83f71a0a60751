#!/usr/bin/env bash
# tests/test_clang.sh: the library builds with clang and OpenMP (README: "gcc (or clang) with OpenMP")
# for CPUs below the code's widest paths. The AVX-512 and AVX2 kernels are compiled with target
# attributes inside a build for any x86-64; clang gives OpenMP's outlined functions no target
# attributes, so a parallel loop that calls an AVX-512 helper from inside such a function stops the
# build ("AVX vector return ... without 'avx512f' enabled changes the ABI"), as nn/bf16.c's packers
# did before 2026-12-05 under -march=x86-64 and -march=haswell: gcc accepts it, so only this test
# sees it. Every C file with target-specific code is compiled (-c, no link) for a baseline x86-64,
# an AVX2 machine and this one; and a few lines with that mistake must fail to compile, so the check
# can fail (gcc compiles them).
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
if ! have clang "the clang builds" "apt-get install clang"; then
    :
elif ! echo '#include <omp.h>' | clang -fopenmp -E -x c - > /dev/null 2>&1; then
    skip "the clang builds: clang has no OpenMP header" "apt-get install libomp-dev"
else
    for arch in x86-64 haswell native; do
        for f in $(grep -l '__attribute__((target(' *.c */*.c); do   # (an .inc goes in with its .c)
            clang -std=gnu11 -O2 -march=$arch -fopenmp -ffp-contract=fast -I. -c -o "$tmp/x.o" "$f" 2> "$tmp/err"
            check $? "clang -march=$arch -fopenmp -c $f" || sed 's/^/    /' "$tmp/err" | head -20
        done
    done
    cat > "$tmp/wrong.c" <<'C'
#include <immintrin.h>
static inline __attribute__((target("avx512f"))) __m512i load16(const float *x) { return _mm512_castps_si512(_mm512_loadu_ps(x)); }
__attribute__((target("avx512f"))) void copy(int *o, const float *x, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i += 16) _mm512_storeu_si512(o + i, load16(x + i));
}
C
    ! clang -std=gnu11 -O2 -march=x86-64 -fopenmp -c -o "$tmp/x.o" "$tmp/wrong.c" 2> "$tmp/wrong.err" &&
      grep -q "changes the ABI" "$tmp/wrong.err"
    check $? "clang must refuse an AVX-512 helper called inside OpenMP's outlined function (-march=x86-64), for the ABI: $(head -c 300 "$tmp/wrong.err")"
fi
finish
