// train_options.h: ./train's command line. One table of flags (train_options.c) drives parsing,
// --help, the training settings stored in a checkpoint (for --resume) and the conflict checks.
#ifndef TRAIN_OPTIONS_H
#define TRAIN_OPTIONS_H

#include "util/common.h"
#include "posenc.h"
#include "util/flags.h"

typedef struct {
    const char *data, *val_data, *tokenizer, *save, *load, *resume, *export_path, *dump, *log, *prompt;
    const char *export_llmc;                   // --export-llmc FILE: the model as an llm.c GPT-2 file
    int new_schedule;                          // --new-schedule: --load with the flags' positional schedule
    const char *pe, *pe_layers, *input_pe;
    const char *attention_map;
    const char *task, *eval_out;
    int train_min, train_max, test_max, distractors, depths, alphabet, eval_per_length, show;
    double fit_target;                                    // fit-first training (--fit-target): 0 = off
    int max_steps, fit_every, fit_per_length;
    int select_every;                                     // --select-every K: best-validation checkpoint; 0 = off
    int steps, batch, seq, context, layers, heads, dim, accum, warmup, val_every, val_batches;
    int threads, sample, top_k, save_every, log_every, pack, shuffle, eval_batches;
    int cont;                                  // --continue (the word is taken in C)
    int bos;                                   // --bos: every text window starts with the boundary token
    double lr, min_lr_frac, wd, clip, beta1, beta2, eps, val_frac, temperature;
    double dropout, warmup_frac, poly_power;   // training dropout; lr warm-up as a fraction, poly decay
    const char *schedule;                      // the lr decay: "cosine" or "poly"
    const char *precision;                     // the linear layers' products: "fp32" or "bf16"
    long long seed;
    long long data_seed;                       // --data-seed: the training data's stream; 0 = --seed
    const char *ppl_out, *ppl_positions, *ppl_windows;   // perplexity against window length
    double ppl_stride;
    int ppl_tokens;
    int ppl_skip;         // tokens of the validation text passed over before the scored ones
    const char *longrope_search;               // --longrope-search PREFIX: the factor search (eval/longrope.h)
    int longrope_population, longrope_generations;
    const char *attention_stats, *attention_lengths;   // attention statistics over windows (eval/attnstats.h)
    int attention_windows;
    double collapse_threshold;
    int detect_anomaly;                        // --detect-anomaly: stop at the first NaN or Inf, naming it
    const char *attention_distance, *distance_to;   // --attention-distance OUT --distance-to CKPT (eval/attndist.h)
    int distance_per_length;
    int zero;                                  // --zero 1: ZeRO stage 1 under MPI (mpi/dist_grad.h): moments sharded
    int verify_ranks;                          // --verify-ranks: compare the ranks' parameters after every step
} Options;

enum { K_RUN = 0, K_MODEL = 1, K_TRAIN = 2 };   // a row's tag: run-only, architecture, stored for --resume

// FLAGS' rows (util/flags.h): offsets into Options, the tag one of K_*, the group ./train --help's heading
// (TRAIN_GROUPS); help NULL: a schedule flag (--pe ...), whose help posenc_schedule_help writes.
extern const FlagRow FLAGS[];              // every flag, in the order of the checkpoint's train.* lines
const FlagRow *find_flag(const char *name);   // NULL if there is none

#define MAX_FLAGS 128                      // room in Args.set (train_options.c checks the table fits)
#define MAX_PE_SETTINGS 16                 // scheme settings on one command line

typedef struct {
    Options o;
    int set[MAX_FLAGS];                    // FLAGS[i] was given on the command line
    char pe_key[MAX_PE_SETTINGS][64];      // scheme settings (--rope-base -> rope_base) for posenc
    const char *pe_val[MAX_PE_SETTINGS];
    char pe_file[MAX_PE_SETTINGS][PE_VALUE_CAP];   // a list setting read from a file (posenc_flag_value)
    int n_pe;
    Options stored;                        // the training settings the checkpoint of --resume or --load stored,
    int has_stored;                        // over the defaults (apply_stored, read_stored); 0: none read
    int continuing;                        // --continue found its --save file: the run goes on from it (as
                                           // --resume), the flags given checked against it (train_guards.c)
    char *continued_kv;                    // then: the checkpoint's train.* lines as stored (apply_stored cuts
                                           // its copy up)
} Args;

// The defaults, then argv; --help prints the usage and exits, any bad flag or value exits with a
// message (values are never clamped).
void parse_args(Args *a, int argc, char **argv);
// 1 when the flag --name was given on the command line.
int flag_set(const Args *a, const char *name);
// The flags that give a new model its positional schedule (--pe, --pe-layers, --input-pe), NULL
// after the last; is_schedule_flag: 1 for one of them.
extern const char *const SCHEDULE_FLAGS[];
int is_schedule_flag(const char *name);
// With a checkpoint: exits when an architecture flag (K_MODEL, except --context, and the schedule
// flags with --new-schedule) was given.
void refuse_model_flags(const Args *a, const char *ckpt);

// The train.* lines stored in a checkpoint: every K_TRAIN flag's value (caller frees).
// The command that continues this run from checkpoint `ckpt`: `prog --resume CKPT` and every
// run-only flag given (the training flags are stored in the checkpoint), shell-quoted, into buf.
void resume_command(const Args *a, const char *prog, const char *ckpt, char *buf, size_t cap);

char *train_kv(const Options *o);
// On --resume: stored training settings apply unless the command line gives the flag; a->stored
// gets all of them whatever the command line says. String values point into kv, which must outlive
// the options (it is cut up in place). path: the checkpoint, for messages.
void apply_stored(Args *a, char *kv, const char *path);
// On --load: the stored settings into a->stored only (the model's training run, for checks).
void read_stored(Args *a, char *kv, const char *path);
// --load CKPT --task NAME: the lengths the model was trained with (stored in the checkpoint) are
// the split between in-distribution and longer, and its alphabet the symbols, unless the command
// line gives them.
void apply_stored_task(Args *a, char *kv, const char *path);

#endif
