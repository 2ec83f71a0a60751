// lab/finetune.c: --finetune, the commands that fine-tune a run's model under each context-extension
// method at the extended length (lab/variants.h), as the papers that extend RoPE do after the
// change of frequencies (PI: Chen et al. 2023; YaRN: Peng et al. 2023).
#include <string.h>

#include "lab/variants.h"
#include "posenc.h"

// The flags after -- that give the architecture: a loaded model has its own, and ./train --load refuses them.
static int architecture_flag(const char *w) {
    static const char *const arch[] = { "--layers", "--heads", "--dim", NULL };
    for (const char *const *f = arch; *f; f++) if (!strcmp(w, *f)) return 1;
    return 0;
}

void finetune_command(Argv *a, const Cfg *c, const Run *r, int v, int exec) {
    int e = variant_method(c, v), S = (int)c->ext_factor, T = c->context;
    CHECK(variant_finetuned(c, v) && T >= 1 && S >= 2 && c->batch % S == 0, "internal: no fine-tune for variant %d", v);
    char dir[4200];
    variant_dir(c, r, v, dir, sizeof dir);
    variant_sub(c, v, a->sub, sizeof a->sub);
    snprintf(a->marker, sizeof a->marker, "trained");
    if (c->launch) arg_words(a, c->launch);
    arg(a, "%s", c->train_bin);
    arg(a, "--load"); arg(a, "%s/model.ckpt", r->dir);
    arg(a, "--data"); arg(a, "%s", c->data);
    if (c->val_data) { arg(a, "--val-data"); arg(a, "%s", c->val_data); }
    arg(a, "--seed"); arg(a, "%lld", c->seeds[r->seed]);
    arg(a, "--threads"); arg(a, "%d", c->threads);
    arg(a, "--log"); arg(a, "%s/log.csv", dir);
    arg(a, "--save"); arg(a, "%s/model.ckpt", dir);
    if (exec) { arg(a, "--sample"); arg(a, "0"); }
    // the run's data, optimiser and schedule; the later flags override its --seq, --batch and --steps
    for (int k = 0; k < c->n_extra; k++) {
        if (architecture_flag(c->extra[k])) { k++; continue; }
        arg(a, "%s", c->extra[k]);
    }
    arg(a, "--rope-scaling"); arg(a, "%s", c->extensions[e]);
    arg(a, "--rope-factor"); arg(a, "%d", S);
    arg(a, "--rope-original-context"); arg(a, "%d", T);
    if (posenc_scaling_searched(c->extensions[e])) {
        arg(a, "--longrope-short"); arg(a, "%s/longrope.short", r->dir);
        arg(a, "--longrope-long"); arg(a, "%s/longrope.long", r->dir);
    }
    arg(a, "--context"); arg(a, "%d", S * T);
    arg(a, "--seq"); arg(a, "%d", S * T);
    arg(a, "--batch"); arg(a, "%d", c->batch / S);
    arg(a, "--steps"); arg(a, "%d", c->finetune);
    if (c->finetune_flags) arg_words(a, c->finetune_flags);
}
