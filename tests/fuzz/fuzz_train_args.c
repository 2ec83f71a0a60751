// tests/fuzz/fuzz_train_args.c: ./train's command line (parse_args, train_options.c), one argument
// per line of the input, and the parsers train.c runs on the values: the scheme schedule and
// settings (posenc_schedule, posenc_set), the model config check, the perplexity windows
// (ppl_parse_multiples, ppl_windows). The training settings of an accepted command line survive
// the trip through a checkpoint's train.* lines (train_kv, then apply_stored as --resume does).
#include <math.h>
#include <string.h>

#include "model.h"
#include "eval/perplexity.h"
#include "posenc.h"
#include "tests/fuzz/fuzz.h"
#include "train_options.h"

enum { MAX_ARGS = 64 };

void fuzz_one(const uint8_t *data, size_t size) {
    char *argv[MAX_ARGS + 1];
    int argc = fuzz_argv(data, size, "train", argv, MAX_ARGS + 1);
    if (fuzz_asks_help(argv, argc)) return;
    Args a;
    parse_args(&a, argc, argv);
    const Options *o = &a.o;
    char msg[512];

    // the model from the flags, as train.c builds a new one
    GPTConfig cfg = { .vocab_size = 256, .n_layer = o->layers, .n_head = o->heads, .n_embd = o->dim,
                      .max_seq_len = o->context ? o->context : o->seq };
    posenc_defaults(&cfg.pe, cfg.n_layer);
    CHECK(posenc_schedule(&cfg.pe, cfg.n_layer, o->pe, o->pe_layers, o->input_pe, msg, sizeof msg), "%s", msg);
    for (int i = 0; i < a.n_pe; i++) CHECK(posenc_set(&cfg.pe, a.pe_key[i], a.pe_val[i], msg, sizeof msg) > 0, "%s", msg);
    CHECK(gpt_config_check(&cfg, msg, sizeof msg), "%s", msg);

    // --ppl-windows against the model's context
    double mult[PPL_MAX_WINDOWS];
    int windows[PPL_MAX_WINDOWS];
    int nw = ppl_parse_multiples(o->ppl_windows, mult, PPL_MAX_WINDOWS, msg, sizeof msg);
    FUZZ_ASSERT(nw >= 0 && nw <= PPL_MAX_WINDOWS);
    CHECK(nw > 0, "--ppl-windows %s", msg);
    CHECK(ppl_windows(mult, nw, cfg.max_seq_len, windows, msg, sizeof msg), "--ppl-windows: %s", msg);
    for (int i = 0; i < nw; i++) FUZZ_ASSERT(windows[i] >= 1);

    // the stored training settings (train.NAME=VALUE lines) read back into the defaults give the
    // same values; train.c resolves the warm-up before it saves them
    if (flag_set(&a, "warmup-frac")) a.o.warmup = (int)ceil(o->warmup_frac * o->steps);
    if (o->warmup < 0) a.o.warmup = o->steps / 10;
    char *kv = train_kv(o), *lines = strdup(kv);
    char *argv0[] = { argv[0], NULL };
    Args b;
    parse_args(&b, 1, argv0);
    apply_stored(&b, kv, "the stored settings");
    for (char *line = strtok(lines, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        FUZZ_ASSERT(eq && !strncmp(line, "train.", 6));
        *eq = 0;
        const FlagRow *f = find_flag(line + 6);
        FUZZ_ASSERT(f && f->tag == K_TRAIN);
        const char *x = (const char *)o + f->off, *y = (const char *)&b.o + f->off;
        if (f->type == FLAG_STRING) FUZZ_ASSERT(!strcmp(*(const char *const *)x, *(const char *const *)y));
        else if (f->type == FLAG_DOUBLE) FUZZ_ASSERT(*(const double *)x == *(const double *)y);
        else if (f->type == FLAG_INT || f->type == FLAG_SWITCH) FUZZ_ASSERT(*(const int *)x == *(const int *)y);   // (an int, as train_kv writes it)
        else FUZZ_ASSERT(*(const long long *)x == *(const long long *)y);
    }
    free(lines);
    free(kv);
}
