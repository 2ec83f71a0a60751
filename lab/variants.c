// lab/variants.c: the models a text run is evaluated as (lab/variants.h): the list, their labels,
// their files and the start of the command that evaluates each.
#include <string.h>

#include "lab/variants.h"
#include "posenc.h"

int n_variants(const Cfg *c) { return 1 + c->n_ext * (c->finetune > 0 ? 2 : 1); }

// (with --finetune each method's two variants are next to each other: 1 + 2e and 2 + 2e)
int variant_method(const Cfg *c, int v) { return v == 0 ? -1 : (v - 1) / (c->finetune > 0 ? 2 : 1); }

int variant_finetuned(const Cfg *c, int v) { return c->finetune > 0 && v > 0 && (v - 1) % 2 == 1; }

int variant_applies(const Cfg *c, int scheme, int v) {
    return v == 0 || (v < n_variants(c) && takes_extensions(&c->schemes[scheme]));
}

int variant_context_factor(const Cfg *c, int v) { return variant_finetuned(c, v) ? (int)c->ext_factor : 1; }

const char *variant_label(const Cfg *c, int scheme, int v, char *buf, size_t cap) {
    int e = variant_method(c, v);
    snprintf(buf, cap, "%s%s%s%s", c->schemes[scheme].label, e >= 0 ? "+" : "", e >= 0 ? c->extensions[e] : "",
             variant_finetuned(c, v) ? "+ft" : "");
    return buf;
}

const char *variant_sub(const Cfg *c, int v, char *buf, size_t cap) {
    if (variant_finetuned(c, v)) snprintf(buf, cap, "ft-%s", c->extensions[variant_method(c, v)]);
    else snprintf(buf, cap, "%s", "");
    return buf;
}

void variant_dir(const Cfg *c, const Run *r, int v, char *out, size_t cap) {
    char sub[96];
    variant_sub(c, v, sub, sizeof sub);
    snprintf(out, cap, "%s%s%s", r->dir, *sub ? "/" : "", sub);
}

void variant_file(const Cfg *c, const Run *r, int v, const char *name, char *out, size_t cap) {
    int e = variant_method(c, v);
    char dir[4200];
    variant_dir(c, r, v, dir, sizeof dir);
    if (variant_finetuned(c, v)) snprintf(out, cap, "%s/%s.csv", dir, name);
    else snprintf(out, cap, "%s/%s%s%s.csv", dir, name, e >= 0 ? "_" : "", e >= 0 ? c->extensions[e] : "");
}

void variant_eval_command(Argv *a, const Cfg *c, const Run *r, int v) {
    char dir[4200];
    variant_dir(c, r, v, dir, sizeof dir);
    arg(a, "%s", c->train_bin);
    arg(a, "--load"); arg(a, "%s/model.ckpt", dir);
    arg(a, "--threads"); arg(a, "%d", c->threads);
    arg(a, "--data"); arg(a, "%s", c->data);
    if (c->val_data) { arg(a, "--val-data"); arg(a, "%s", c->val_data); }
    for (int k = 0; k < c->n_extra; k++)
        if (!strcmp(c->extra[k], "--val-frac") && k + 1 < c->n_extra) { arg(a, "--val-frac"); arg(a, "%s", c->extra[k + 1]); }
    int e = variant_method(c, v);
    if (e < 0 || variant_finetuned(c, v)) return;         // (a fine-tuned model stores its method)
    arg(a, "--rope-scaling"); arg(a, "%s", c->extensions[e]);
    arg(a, "--rope-factor"); arg(a, "%g", c->ext_factor);
    if (posenc_scaling_searched(c->extensions[e])) {
        arg(a, "--longrope-short"); arg(a, "%s/longrope.short", r->dir);
        arg(a, "--longrope-long"); arg(a, "%s/longrope.long", r->dir);
    }
}

int row_label(const Cfg *c, int sc, int v, char *buf, size_t cap) {
    if (sc < 0 || sc >= c->n_schemes || v < 0 || v >= n_variants(c) || !variant_applies(c, sc, v)) return 0;
    variant_label(c, sc, v, buf, cap);
    return 1;
}

int find_row(const Cfg *c, const char *label, int *sc, int *v) {
    char buf[256];
    for (int i = 0; i < c->n_schemes; i++)
        for (int k = 0; k < n_variants(c); k++)
            if (row_label(c, i, k, buf, sizeof buf) && !strcmp(buf, label)) { *sc = i; *v = k; return 1; }
    return 0;
}
