// tools/bench/attn_bits.c: hashes of the fused attention's out, lse and dqkv for configurations of head size,
// documents and padding, schemes, dropout and the bidirectional mask, to compare two builds bit for bit (build it
// in each with make bench-tools, run both at the same thread count, diff the outputs).
// usage: build/bench/attn_bits [SCHEME]: the configurations marked "biased" below run SCHEME (a score-bias scheme such as
// ALiBi's; default nope), the others nope (results/bench/attn-overheads-zen5-dec05.txt ran it with alibi)
#include "tools/bench/attn_setup.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static unsigned long long h64(const void *p, size_t n) {
    const unsigned char *c = p;
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= c[i]; h *= 1099511628211ull; }
    return h;
}
// docs: documents of 37 tokens, the last 4 tokens of each row padding (document -1)
static int biased_scheme = PE_NOPE;
static void run(int T, int B, int NH, int C, int biased, int docs, int bidir, double drop) {
    AttnSetup h;
    attn_setup(&h, B, T, C, NH, biased ? biased_scheme : PE_NOPE);
    const char *sname = posenc_scheme(biased ? biased_scheme : PE_NOPE)->name;
    size_t N = h.N;
    for (size_t i = 0; docs && i < N; i++) h.doc[i] = i % T > (size_t)T - 5 ? -1 : (int)((i % T) / 37);
    h.ap.bidirectional = bidir; h.ap.dropout = drop; h.ap.drop_key = 12345;
    attention_forward(h.out, h.lse, h.qkv, &h.ap, h.scratch, B, T, C, NH);
    attention_backward(h.dqkv, h.scratch, h.dout, h.qkv, h.out, h.lse, &h.ap, B, T, C, NH);
    printf("T %d B %d NH %d C %d scheme %s docs %d bidir %d drop %.1f: out %016llx lse %016llx dqkv %016llx\n", T, B, NH, C,
           sname, docs, bidir, drop, h64(h.out, sizeof(real) * N * C), h64(h.lse, sizeof(real) * B * NH * T),
           h64(h.dqkv, sizeof(real) * N * 3 * C));
    attn_setup_free(&h);
}
int main(int argc, char **argv) {   // run(T, B, NH, C, biased, documents and padding, bidirectional, dropout)
    if (argc > 1 && (biased_scheme = posenc_find(argv[1])) < 0) { fprintf(stderr, "attn_bits: unknown scheme '%s'\n", argv[1]); return 2; }
    run(256, 4, 6, 384, 0, 0, 0, 0);
    run(300, 2, 6, 384, 1, 1, 0, 0);
    run(1100, 1, 4, 256, 0, 1, 0, 0.1);
    run(200, 2, 3, 288, 0, 0, 1, 0);   // hs 96
    run(130, 2, 2, 256, 1, 0, 0, 0);   // hs 128
    run(77, 3, 5, 80, 0, 1, 0, 0);     // hs 16
    run(90, 2, 3, 60, 0, 1, 0, 0);     // hs 20
    run(130, 2, 4, 160, 1, 0, 0, 0);  // hs 40
    run(70, 2, 3, 108, 0, 0, 1, 0);    // hs 36
    run(100, 2, 2, 48, 0, 1, 0, 0.1);  // hs 24
    run(200, 1, 2, 200, 0, 0, 0, 0);   // hs 100
    return 0;
}
