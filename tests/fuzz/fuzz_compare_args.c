// tests/fuzz/fuzz_compare_args.c: ./compare's command line (compare_parse, lab/compare_options.c), one argument
// per line of the input: lists (--task, --schemes, --seeds, --claims on tasks and on text, --rope-extensions, --double-length,
// --long-length), numbers (--fit-target, --rope-factor, --jobs, --long-factor, --finetune, ...), scheme labels. An
// accepted line has consistent sets.
#include <math.h>
#include <string.h>

#include "lab/compare.h"
#include "lab/variants.h"
#include "tests/fuzz/fuzz.h"

enum { MAX_ARGS = 64 };

// 1 when compare_parse would meet --help or -h as a flag and print its usage (exit 0, not a parse
// to fuzz). It walks argv as the parser does: a flag's value is a value even when it reads "-h"
// or "--" (--out -- --seeds 3 -h asks for help), and a bare word or a missing value is refused
// before any later -h is reached.
static int compare_asks_help(char **argv, int argc) {
    static const char *const switches[] = { "--quiet", "--report-only", "--attention-stats", "--attention-distance" };
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) return 1;
        if (!strcmp(s, "--")) return 0;   // the rest goes to ./train
        int sw = 0;
        for (size_t k = 0; k < sizeof switches / sizeof *switches; k++) sw |= !strcmp(s, switches[k]);
        if (sw) continue;
        if (strncmp(s, "--", 2) || i + 1 >= argc) return 0;
        i++;   // the flag's value
    }
    return 0;
}

void fuzz_one(const uint8_t *data, size_t size) {
    char *argv[MAX_ARGS + 1];
    int argc = fuzz_argv(data, size, "compare", argv, MAX_ARGS + 1);
    if (compare_asks_help(argv, argc)) return;
    static Cfg c;   // about 120 KB
    compare_parse(&c, argc, argv);
    FUZZ_ASSERT(c.out && c.n_tasks >= 1 && c.n_tasks <= MAX_ITEMS);
    FUZZ_ASSERT(c.n_schemes >= 1 && c.n_schemes <= MAX_ITEMS && c.n_seeds >= 1 && c.n_seeds <= MAX_ITEMS);
    FUZZ_ASSERT(c.jobs >= 1 && c.threads >= 1 && c.per_length >= 1 && c.ext_factor >= 1);
    for (int i = 0; i < c.n_schemes; i++) {
        FUZZ_ASSERT(c.schemes[i].label[0] && !strpbrk(c.schemes[i].label, ",/ \t"));
        for (int j = 0; j < i; j++) FUZZ_ASSERT(strcmp(c.schemes[i].label, c.schemes[j].label));
        (void)uses_rope(&c.schemes[i]);
        // a --double-length copy doubles an earlier scheme, trained at 2T with the context known
        FUZZ_ASSERT(c.schemes[i].long_of >= -1 && c.schemes[i].long_of < i);
        FUZZ_ASSERT(c.schemes[i].long_of < 0 || (c.context >= 1 && c.data && c.schemes[c.schemes[i].long_of].long_of < 0));
    }
    for (int k = 0; k < c.n_seeds; k++) FUZZ_ASSERT(c.seeds[k] >= 0);
    // the runs at K x T and the fine-tunes at S x T take B/K and B/S rows
    FUZZ_ASSERT(c.long_factor >= 2 && (!long_schemes(&c) || c.batch % c.long_factor == 0));
    FUZZ_ASSERT(!c.finetune || (c.n_ext && c.context >= 1 && c.ext_factor >= 2 && c.batch % (int)c.ext_factor == 0));
    for (int k = 0; k < c.n_claims; k++)
        for (int j = 0; j < 2; j++) FUZZ_ASSERT(c.claims[k][j] >= 0 && c.claims[k][j] < c.n_schemes);
    // a claim on text names two rows of the perplexity table, by their labels, at a positive window
    FUZZ_ASSERT(!c.n_text_claims || (c.data && !c.n_claims));
    for (int k = 0; k < c.n_text_claims; k++) {
        const TextClaim *x = &c.text_claims[k];
        char la[256], lb[256];
        FUZZ_ASSERT(row_label(&c, x->sa, x->va, la, sizeof la) && !strcmp(la, x->a));
        FUZZ_ASSERT(row_label(&c, x->sb, x->vb, lb, sizeof lb) && !strcmp(lb, x->b));
        FUZZ_ASSERT(x->window > 0 && x->margin > 0 && isfinite(x->window) && isfinite(x->margin));
        FUZZ_ASSERT(x->sa != x->sb || x->va != x->vb || x->margin != 1);
    }
}
