// lab/variants.h: the models a text run is evaluated as, in one list that every per-run evaluation
// loops over, and the fine-tunes that make some of them (lab/variants.c, lab/finetune.c).
//
//   variant                      model                                        label        weights
//   0                            the run's own                                LABEL        RUN/model.ckpt
//   1 + e (with --finetune 1+2e) the same weights under --rope-extensions M   LABEL+M      RUN/model.ckpt
//   2 + 2e (--finetune)          M's model fine-tuned at S x T                LABEL+M+ft   RUN/ft-M/model.ckpt
//
// e indexes c->extensions (M), S is --rope-factor and T the context the run trained at. Only the
// runs that take the extensions (takes_extensions: RoPE schemes trained at T) have variants past 0.
// A fine-tuned model stores its method (./train keeps the context-extension settings in the
// checkpoint), so it is evaluated with no scaling flag; its context is S x T, so an evaluation that
// takes multiples of the context divides them by variant_context_factor (the same window lengths).
#ifndef VARIANTS_H
#define VARIANTS_H

#include "lab/runs.h"

// lab/variants.c
int n_variants(const Cfg *c);                          // 1 + n_ext, and n_ext more with --finetune
int variant_method(const Cfg *c, int v);               // e, the index of M in c->extensions; -1 for variant 0
int variant_finetuned(const Cfg *c, int v);            // 1 for a LABEL+M+ft variant
int variant_applies(const Cfg *c, int scheme, int v);  // 1 when the scheme's runs have variant v
int variant_context_factor(const Cfg *c, int v);       // the variant's context over the run's: S for +M+ft, else 1
// "LABEL", "LABEL+M" or "LABEL+M+ft", into buf
const char *variant_label(const Cfg *c, int scheme, int v, char *buf, size_t cap);
// The variant's folder within its run's: "" (the run's own) or "ft-M" (its fine-tune's), into buf
const char *variant_sub(const Cfg *c, int v, char *buf, size_t cap);
// The folder a variant's files go to: the run's, or its fine-tune's (RUN/ft-M)
void variant_dir(const Cfg *c, const Run *r, int v, char *out, size_t cap);
// The variant's file NAME.csv: RUN/NAME.csv, RUN/NAME_M.csv, RUN/ft-M/NAME.csv
void variant_file(const Cfg *c, const Run *r, int v, const char *name, char *out, size_t cap);
// The start of a command that evaluates variant v of a run on text: ./train --load its weights,
// with the run's threads and the same validation text and split as its training, then the flags
// that run the weights as the variant (+M: --rope-scaling M --rope-factor S, and LongRoPE's lists
// searched for the run).
void variant_eval_command(Argv *a, const Cfg *c, const Run *r, int v);

// The rows of text's perplexity table are the variants, labelled as variant_label does. row_label:
// the label of scheme sc's variant v into buf and 1, or 0 when the scheme has no such variant.
// find_row: the scheme and variant of a label, 1 when found. The perplexity tables, results.csv and
// the claims (--claims on text) use these.
int row_label(const Cfg *c, int sc, int v, char *buf, size_t cap);
int find_row(const Cfg *c, const char *label, int *sc, int *v);

// lab/finetune.c
// The fine-tune of variant v (a +M+ft one) of a run, into cmd: ./train --load RUN/model.ckpt
// --rope-scaling M --rope-factor S --rope-original-context T (LongRoPE: the run's searched lists)
// --context ST --seq ST --batch B/S --steps STEPS, with the run's flags after -- (less the
// architecture's) before and --finetune-flags after, --seed SEED, saved in RUN/ft-M/. exec: as run
// (with --sample 0), else as the settings record it.
void finetune_command(Argv *cmd, const Cfg *c, const Run *r, int v, int exec);

#endif
