// train.h: what the files of ./train share: the Session one invocation builds, the seed salts, and
// the functions one file calls in another. ./train is, by job:
//   train.c          main and the stages of a run in the order they run (flags, inputs, model,
//                    data), the training loop (train) and what follows it
//   train_options.c  the command line: one table of flags (train_options.h)
//   train_guards.c   refusals before the work (memory, output folders), what a killed run left
//                    behind (a save's temporaries, log rows), SIGINT/SIGTERM during training
//   train_tasks.c    a synthetic --task: its settings and flags, fit-first's check, the accuracy
//                    by length and the examples after training
//   train_modes.c    the one-shot modes (export, attention map and distance, eval-batches,
//                    perplexity, LongRoPE search, attention statistics, dump-step) and sampling
#ifndef TRAIN_H
#define TRAIN_H

#include <signal.h>

#include "dataset/loader.h"
#include "dataset/tasks.h"
#include "mpi/dist_grad.h"
#include "formats/checkpoint.h"
#include "model.h"
#include "train_options.h"

// Seed salts: each random stream is seeded by --seed combined with its own salt, so the streams are
// independent of each other and, for one seed, the same whatever the scheme (the fair comparison).
// Sampling (--sample) uses --seed itself. The training data's streams (task instances, --shuffle's
// orders, --dropout's masks) take data_seed(o) in place of --seed: --data-seed N trains a model from
// the same initial weights on another stream of data (./compare's NoPE twin). Changing a salt changes the instances drawn: the losses,
// accuracies and checkpoints of every --task run, or the pictures and examples shown.
static const uint64_t TASK_DATA_SALT = 0x7A5C0FFEEull;    // a --task's training instances: seed ^ salt
static const uint64_t SHOW_SALT = 77;                    // --show's examples: seed + salt (+ 1 at the test length)
static const uint64_t ATTENTION_MAP_SALT = 4242;         // --attention-map's task instance: seed + salt
static const uint64_t FIT_SALT = 0xF17F17ull;             // --fit-target's validation instances: (seed ^ salt) + length
static const uint64_t SHUFFLE_SALT = 0x5B0FF1Eull;        // --shuffle's orders of files and windows: seed ^ salt
static const uint64_t DISTANCE_SALT = 0xD157ull;           // --attention-distance's test instances: salt + length

// The seed of the training data's streams: --data-seed, or --seed when it is 0 (the default).
static inline uint64_t data_seed(const Options *o) { return (uint64_t)(o->data_seed ? o->data_seed : o->seed); }

// Everything one ./train invocation builds, in the order it is built.
typedef struct {
    Args a;
    Options *o;                                  // &a.o
    Tokenizer tok;
    TaskConfig tc;                               // --task: the task's settings
    TokenSet all, train, val, valfile;           // text: the data, its split, --val-data's set
    const char *data_name;                       // where the text comes from, for messages
    int have_data;                               // `all` is loaded
    GPT model;
    TrainState st;                               // --resume: steps done, RNG and data position
    char *stored;                                // the checkpoint's train.* lines; --resume's options point into it
    Rng rng;                                     // sampling (--sample)
    Rng task_rng;                                // a --task's instance stream: the same for every scheme
    int train_steps;                             // steps left to train; 0 in the one-shot modes
    int need_data;                               // the modes or the training read batches
    Batch *mb;                                   // (accum,) micro-batches
    Loader loader;                               // text: the training stream
    const char *prog;                            // argv[0], for the command that resumes
    int rank, ranks;                             // under mpirun: this process's rank of `ranks` (mpi/dist.h)
    DistGrad dg;                                 // the gradients' reduction across ranks
    Batch task_rows;                             // a --task's global micro-batch (ranks x --batch rows)
    struct Select *sel;                          // --select-every's best check (rank 0), for the checkpoints
} Session;

// ---- train.c

// The mean validation loss over the first --val-batches global batches of the validation text
// (also --eval-batches'). Every rank must call it.
double evaluate(GPT *m, const TokenSet *val, const Options *o, Batch *b, int rank, int ranks);

// ---- train_guards.c

// Refuses a model of cfg, trained on (B, T) batches when B > 0 (else only its weights and
// gradients), when it cannot fit; `allocated` bytes of it exist already.
void check_memory(const GPTConfig *cfg, int B, int T, double allocated);
// Sets the model's memory check (gpt_set_memory_check) to one with check_memory's reckoning: the
// evaluations' activations (a longer window) and KV caches are refused with a message, not killed.
void guard_memory(void);
// The processes that share this machine's memory with this one, itself included: the ranks of
// this run here times PEGPT_MEMORY_SHARE (./compare sets it to the runs it trains at once here).
int memory_sharers(void);
// The line "machine: CPU MODEL | matmul: PATH" of a run's setup.
void print_machine(void);
// A note on stderr (a terminal's only) when the load average leaves fewer free cores than threads.
void check_cores(int threads);
// The folder an output file goes into: "." for a bare name, "/" for a file at the root.
void folder_of(const char *path, char *dir, size_t cap);
// Refuse an output (--flag path) whose folder (dir, or path's) cannot take a new file now.
void check_output_folder(const char *flag, const char *path, const char *dir);
void check_output_file(const char *flag, const char *path);
// The NAME.tmp files an interrupted save of --save's pattern left, removed.
void remove_stale_temporaries(const char *pattern);
// A resumed run's --log: rows past the checkpoint's step (of a run killed after it) cut off.
void drop_log_rows_after(const char *path, int step);

// --continue (with --save FILE): when FILE exists, the run goes on from it: continue_or_start sets
// --resume FILE and a->continuing (else it says the run starts afresh); continue_check_model exits
// when the model the flags describe (want) is not the checkpoint's (have); continue_check_training
// when the training flags (train_kv after the stored ones applied, as a fresh run would store them)
// are not those stored.
void continue_or_start(Args *a);
void continue_check_model(const GPTConfig *want, const GPTConfig *have, const char *ckpt);
void continue_check_training(const Args *a, uint64_t step);

// Interruption: SIGINT (Ctrl-C) or SIGTERM (a scheduler's time limit) during training finish the
// step, save a checkpoint when --save is given, and exit with EXIT_INTERRUPTED; a second signal
// ends the process at once (the default action, so the shell sees the signal).
enum { EXIT_INTERRUPTED = 75 };                   // sysexits' EX_TEMPFAIL: try again (--resume)
extern volatile sig_atomic_t interrupted;         // the signal number, 0 while none came
void catch_signals(int on);                       // 1: the handler above; 0: the default action

// ---- train_tasks.c

// The task settings from the flags (0 / -1 = the task's defaults).
void setup_task(Args *a, TaskConfig *tc);
// The flags that apply to a task (or to fit-first training) only, and the model's vocabulary
// against the task's.
void check_task_flags(const Session *s);
// After training: the accuracy by length (--eval-per-length, --eval-out) and --show's examples.
void evaluate_task(GPT *m, const TaskConfig *tc, const Options *o);

// Fit-first training (--fit-target): the exact-match accuracy on validation instances at every
// training length, pooled. The instances are fixed for the run: --fit-per-length distinct ones of
// each length from the validation class, chosen by their own seed (never the training stream, so
// a --resume stays bit-exact).
typedef struct {
    TaskSet *sets;        // (n_sets,) lengths train_min..train_max
    int n_sets, total;    // lengths, instances over all of them
    int *ok;              // (fit_per_length,) one set's results
} FitCheck;

void fit_init(FitCheck *f, const TaskConfig *tc, const Options *o);
// The validation accuracy now; prints the check's line, "WHAT check: step S | validation accuracy A (c/n)".
double fit_check(GPT *m, const FitCheck *f, int step, const char *what);
void fit_free(FitCheck *f);

// ---- train_select.c

// --select-every K (rank 0 alone): the best check of a fixed budget (train_select.c).
typedef struct Select {
    FitCheck set;          // the validation instances, as --fit-target's
    real *best;            // (num_params,) the weights of the best check; NULL before one
    double best_acc;       // its accuracy (-1 before one)
    int best_step;         // its step (0 before one)
} Select;
void select_path(const char *save, char *out, size_t cap);   // SAVE.best (or the {step} pattern's "best")
void select_init(Select *sl, Session *s);                   // on --resume, the stored best and its weights
// The check at `step`: a new best (strictly above the last) is kept, and written with kv to SAVE.best.
void select_check(Select *sl, Session *s, int step, const char *kv);
// After training: the best weights into the model (the tests use them); prints the "select:" line.
void select_finish(Select *sl, Session *s);
// A run continued after its last step (killed while testing): the best check's weights from
// SAVE.best into the model, as select_finish left them.
void select_restore(Session *s);

// ---- train_modes.c

// Perplexity against window length (--ppl-out, --ppl-positions) is asked for.
int ppl_requested(const Options *o);
// An evaluation on text instead of training: perplexity, attention statistics, or the LongRoPE
// factor search.
int eval_requested(const Options *o);
// The one-shot modes' flags, checked before any work.
void check_mode_flags(const Args *a);
// --attention-map, --attention-distance, --export and --export-llmc need the model only; returns 1
// when one of them ran.
int model_only_modes(Session *s);
// --eval-batches, --ppl-out/--ppl-positions, --longrope-search, --attention-stats and --dump-step:
// evaluations of the model on data (training is skipped when one is given).
void data_modes(Session *s);
// The sample: the prompt (or end-of-text, or a newline) and n generated tokens (--sample N, or the
// default sample after training on text, after_training).
void generate(GPT *m, const Tokenizer *tok, const Options *o, int n, Rng *rng);
// After training (or with --load alone): a --task's accuracy by length, and the sample text.
void after_training(Session *s);

#endif
