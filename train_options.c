// train_options.c: ./train's flags: the table, the defaults, --help, strict parsing, and the
// training settings a checkpoint stores for --resume.
#include "train_options.h"

#include <errno.h>
#include <math.h>

#include "eval/attnstats.h"
#include "dataset/tasks.h"
#include "eval/longrope.h"
#include "eval/perplexity.h"
#include "posenc.h"

#define O(f) offsetof(Options, f)
#define STRINGIFY(x) #x
#define NUMBER_TEXT(x) STRINGIFY(x)     // a numeric macro as a string literal, for help texts
FLAGS_TABLE_BEGIN
const FlagRow FLAGS[] = {
    { "data", FLAG_STRING, O(data), 0, 0, K_TRAIN, "PATH", "data",
      "training data: a file, a folder (its files) or a quoted glob ('dir/*.bin', sorted) of llm.c token shards "
      "(uint16 GPT-2 or uint32 Llama-3) or of byte files, read as one sequence in windows, never whole (default: "
      "the embedded corpus)" },
    { "val-data", FLAG_STRING, O(val_data), 0, 0, K_TRAIN, "PATH", "data",
      "validation data, as --data (default: the last --val-frac of --data)" },
    { "val-frac", FLAG_DOUBLE, O(val_frac), 0, 0.5, K_TRAIN, "F", "data",
      "fraction of the data held out for validation: the last tokens of its sequence (0.1)" },
    { "tokenizer", FLAG_STRING, O(tokenizer), 0, 0, K_TRAIN, "FILE", "data",
      "llm.c tokenizer file: a new model's vocabulary, its end of text as the documents' boundary in token data "
      "(--pack, --bos), the pieces of --prompt and samples; stored for --resume" },
    { "pack", FLAG_INT, O(pack), 0, 1, K_TRAIN, "0|1", "data",
      "1: isolate documents (after end-of-text, or a blank line in bytes) and restart their positions (0)" },
    { "shuffle", FLAG_SWITCH, O(shuffle), 0, 1, K_TRAIN, "", "data",
      "train on the data in a new order every epoch, from --seed (or --data-seed): the files, and windows of "
      "--seq + 1 tokens within each file (default: in order)" },
    { "bos", FLAG_SWITCH, O(bos), 0, 1, K_TRAIN, "", "data",
      "start every window of text (training and evaluation) with the boundary token: the data's end of text, or "
      "byte 2 (STX) in byte data, followed by --seq - 1 tokens of text; stored for --resume (with --load, give it "
      "again to evaluate a model trained with it)" },
    { "task", FLAG_STRING, O(task), 0, 0, K_TRAIN, "NAME", "task",
      "train on a synthetic length-generalisation task instead of text (see the task table below)" },
    { "train-min", FLAG_INT, O(train_min), 0, 100000, K_TRAIN, "N", "task",
      "--task: shortest training length, 0 = the task's" },
    { "train-max", FLAG_INT, O(train_max), 0, 100000, K_TRAIN, "N", "task",
      "--task: longest training length; longer is out-of-distribution, 0 = the task's" },
    { "test-max", FLAG_INT, O(test_max), 0, 100000, K_TRAIN, "N", "task",
      "--task: longest test length, 0 = --train-max x the task's test/train ratio, rounded (2x; scan 48/25, "
      "pcfg 35/8, retrieval 4x), at most the task's longest" },
    { "distractors", FLAG_INT, O(distractors), -1, 20, K_TRAIN, "N", "task",
      "--task retrieval: decoy keys with other labels in each haystack, -1 = 3" },
    { "depths", FLAG_INT, O(depths), 0, 8, K_TRAIN, "N", "task",
      "--task retrieval: key depths tested, evenly spaced in [0, 1], 0 = 5" },
    { "alphabet", FLAG_INT, O(alphabet), 0, TASK_MAX_ALPHABET, K_TRAIN, "N", "task",
      "--task with symbols (copy, reverse, sort and their variants): symbols a-z, then tokens past the bytes; the "
      "vocabulary is 256 + N - 26, 0 = the task's: " NUMBER_TEXT(TASK_DEFAULT_ALPHABET) ", sort 50 (the NoPE "
      "paper's items)" },
    { "fit-target", FLAG_DOUBLE, O(fit_target), 0, 1, K_TRAIN, "A", "task",
      "--task: fit-first training: stop at the first check whose in-distribution validation accuracy is >= A, in "
      "(0, 1]; needs --max-steps" },
    { "max-steps", FLAG_INT, O(max_steps), 0, 1e9, K_TRAIN, "N", "task",
      "with --fit-target: the budget of steps, which the lr schedule spans (instead of --steps)" },
    { "fit-every", FLAG_INT, O(fit_every), 1, 1e9, K_TRAIN, "K", "task",
      "with --fit-target: check every K steps and at the last (50)" },
    { "fit-per-length", FLAG_INT, O(fit_per_length), 1, 1e6, K_TRAIN, "M", "task",
      "with --fit-target or --select-every: distinct validation instances per training length (20)" },
    { "select-every", FLAG_INT, O(select_every), 0, 1e9, K_TRAIN, "K", "task",
      "--task: train all --steps and keep the weights of the best check of in-distribution validation accuracy, "
      "checked every K steps and at the last (the earliest of equals); the accuracy after training and --show "
      "use them, and with --save they are also written to SAVE.best (0: off)" },
    { "eval-per-length", FLAG_INT, O(eval_per_length), 0, 1000000, K_RUN, "N", "task",
      "--task: distinct test instances per length (and depth), all of them when fewer, for the accuracy after "
      "training, 0 = none (100)" },
    { "eval-out", FLAG_STRING, O(eval_out), 0, 0, K_RUN, "FILE", "task",
      "--task: write the accuracy by length as CSV "
      "(task,scheme,seed,length,depth,split,n,correct,accuracy,skipped,pool,distinct,top_share)" },
    { "show", FLAG_INT, O(show), 0, 1000, K_RUN, "N", "task",
      "--task: print N test prompts with the model's greedy answers at the longest training and test lengths (0)" },
    { "steps", FLAG_INT, O(steps), 0, 1e9, K_TRAIN, "N", "optimiser", "optimiser steps (default 300)" },
    { "batch", FLAG_INT, O(batch), 1, 1e6, K_TRAIN, "B", "optimiser", "sequences per micro-batch (16)" },
    { "seq", FLAG_INT, O(seq), 1, 1e7, K_TRAIN, "T", "optimiser", "tokens per sequence (64)" },
    { "accum", FLAG_INT, O(accum), 1, 1e6, K_TRAIN, "N", "optimiser",
      "micro-batches per optimiser step, gradients accumulated (1)" },
    { "context", FLAG_INT, O(context), 1, 1e7, K_MODEL, "N", "model",
      "the model's context length, the learned table size (default --seq)" },
    { "layers", FLAG_INT, O(layers), 1, 64, K_MODEL, "L", "model", "transformer blocks (4)" },
    { "heads", FLAG_INT, O(heads), 1, 4096, K_MODEL, "H", "model", "attention heads (4)" },
    { "dim", FLAG_INT, O(dim), 1, 65536, K_MODEL, "C", "model", "channels, a multiple of --heads (128)" },
    { "pe", FLAG_STRING, O(pe), 0, 0, K_MODEL, "NAME", "positions", NULL },
    { "pe-layers", FLAG_STRING, O(pe_layers), 0, 0, K_MODEL, "a,b,...", "positions", NULL },
    { "input-pe", FLAG_STRING, O(input_pe), 0, 0, K_MODEL, "S", "positions", NULL },
    { "lr", FLAG_DOUBLE, O(lr), 0, 10, K_TRAIN, "X", "optimiser", "peak learning rate (1e-3)" },
    { "min-lr-frac", FLAG_DOUBLE, O(min_lr_frac), 0, 1, K_TRAIN, "F", "optimiser",
      "the decay ends at lr*F at the last step (0.1)" },
    { "schedule", FLAG_STRING, O(schedule), 0, 0, K_TRAIN, "cosine|poly", "optimiser",
      "lr decay after the warm-up: cosine, or polynomial (1 - progress)^--poly-power (cosine)" },
    { "poly-power", FLAG_DOUBLE, O(poly_power), 0, 100, K_TRAIN, "X", "optimiser",
      "--schedule poly: the power, 1 = linear decay (1.0)" },
    { "warmup", FLAG_INT, O(warmup), 0, 1e9, K_TRAIN, "N", "optimiser", "linear warm-up steps (default steps/10)" },
    { "warmup-frac", FLAG_DOUBLE, O(warmup_frac), 0, 1, K_TRAIN, "F", "optimiser",
      "linear warm-up over the fraction F of --steps, rounded up (instead of --warmup)" },
    { "wd", FLAG_DOUBLE, O(wd), 0, 10, K_TRAIN, "X", "optimiser",
      "AdamW weight decay on matrices and embedding tables (0.1)" },
    { "precision", FLAG_STRING, O(precision), 0, 0, K_TRAIN, "fp32|bf16", "model",
      "the linear layers' matrix products: fp32, or bf16 operands with fp32 sums (the fastest path the CPU has; "
      "PEGPT_BF16_PATH=amx|avx512bf16|portable|avx512bf16-emulated|amx-emulated forces one); parameters, attention, "
      "softmax, layernorm, the loss and AdamW stay fp32; stored for --resume (with --load, give it again to "
      "evaluate in bf16) (fp32)" },
    { "dropout", FLAG_DOUBLE, O(dropout), 0, 0.999999, K_TRAIN, "P", "optimiser",
      "training dropout as in GPT-2: embeddings, attention probabilities, residual branches (0)" },
    { "clip", FLAG_DOUBLE, O(clip), 0, 1e9, K_TRAIN, "X", "optimiser",
      "clip the global gradient norm to X, 0 = off (1.0)" },
    { "detect-anomaly", FLAG_SWITCH, O(detect_anomaly), 0, 1, K_RUN, "", "run",
      "check every tensor of each training step (forward, backward, AdamW update) for NaN and Inf; stop at the "
      "first, naming its layer, tensor and index" },
    { "beta1", FLAG_DOUBLE, O(beta1), 0, 0.999999, K_TRAIN, "X", "optimiser", "AdamW beta1 (0.9)" },
    { "beta2", FLAG_DOUBLE, O(beta2), 0, 0.999999, K_TRAIN, "X", "optimiser", "AdamW beta2 (0.95)" },
    { "eps", FLAG_DOUBLE, O(eps), 1e-30, 1, K_TRAIN, "X", "optimiser", "AdamW epsilon (1e-8)" },
    { "seed", FLAG_LLONG, O(seed), 0, 9.2e18, K_TRAIN, "N", "run",
      "seed of the initial weights and of sampling, and of the training data unless --data-seed (1337)" },
    { "data-seed", FLAG_LLONG, O(data_seed), 0, 9.2e18, K_TRAIN, "N", "data",
      "seed of the training data alone: a --task's instance stream, --shuffle's order, --dropout's masks; the "
      "initial weights, evaluation and validation instances stay --seed's (0 = --seed, the default)" },
    { "val-every", FLAG_INT, O(val_every), 0, 1e9, K_TRAIN, "N", "evaluation",
      "validation loss every N steps, 0 = only at the end (100)" },
    { "val-batches", FLAG_INT, O(val_batches), 1, 1e6, K_TRAIN, "N", "evaluation", "micro-batches per validation (8)" },
    { "threads", FLAG_INT, O(threads), 1, 1024, K_RUN, "N", "run",
      "OpenMP threads (default: all cores; under mpirun: per rank, default the cores the rank is bound to)" },
    { "zero", FLAG_INT, O(zero), 0, 1, K_RUN, "N", "run",
      "under mpirun (make MPI=1): 1 = ZeRO stage 1, each rank keeps 1/ranks of the AdamW moments and updates its "
      "slice of every tensor (reduce-scatter, update, all-gather); 0 = every rank holds them all (0)" },
    { "verify-ranks", FLAG_SWITCH, O(verify_ranks), 0, 1, K_RUN, "", "run",
      "under mpirun: after every step, check that every rank holds bit-identical parameters (a hash per rank); stop "
      "naming the rank that differs" },
    { "log", FLAG_STRING, O(log), 0, 0, K_RUN, "FILE", "run",
      "CSV log: step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s" },
    { "log-every", FLAG_INT, O(log_every), 1, 1e9, K_RUN, "N", "run", "progress line every N steps (10)" },
    { "save", FLAG_STRING, O(save), 0, 0, K_RUN, "FILE", "run",
      "write a checkpoint at the end (and every --save-every steps); {step} in FILE becomes the step" },
    { "save-every", FLAG_INT, O(save_every), 0, 1e9, K_RUN, "N", "run",
      "also checkpoint every N steps (0 = only at the end)" },
    { "load", FLAG_STRING, O(load), 0, 0, K_RUN, "FILE", "run",
      "start from a model's weights (fresh optimiser): a checkpoint, an llm.c GPT-2 model (version 3 or 5) or a "
      "--export safetensors file, told apart by content" },
    { "new-schedule", FLAG_SWITCH, O(new_schedule), 0, 1, K_RUN, "", "run",
      "with --load: give the model the positional schedule of --pe/--pe-layers/--input-pe (and the scheme flags) in "
      "place of its own; the other weights are kept, a position table the new schedule has no place for is dropped, "
      "new positional parameters start from --seed" },
    { "resume", FLAG_STRING, O(resume), 0, 0, K_RUN, "FILE", "run",
      "continue a run exactly: weights, optimiser, step, data position" },
    { "continue", FLAG_SWITCH, O(cont), 0, 1, K_RUN, "", "run",
      "with --save FILE (no {step}): when FILE exists, go on from it as --resume FILE does, after checking that the "
      "model and training flags given are the ones it was made with; else start afresh. With --save-every, a run "
      "killed at any point continues from its last checkpoint when the same command is run again (./compare does)" },
    { "sample", FLAG_INT, O(sample), 0, 1e7, K_RUN, "N", "evaluation",
      "generate N tokens after training (or from --load); 0 = none (64 after training on text, else 0)" },
    { "prompt", FLAG_STRING, O(prompt), 0, 0, K_RUN, "TEXT", "evaluation", "text to continue when sampling" },
    { "temperature", FLAG_DOUBLE, O(temperature), 0, 100, K_RUN, "X", "evaluation",
      "sampling temperature, 0 = greedy (1.0)" },
    { "top-k", FLAG_INT, O(top_k), 0, 1e9, K_RUN, "K", "evaluation",
      "sample among the K most likely tokens, 0 = all (0)" },
    { "eval-batches", FLAG_INT, O(eval_batches), 0, 1e6, K_RUN, "N", "evaluation",
      "evaluate the --load model on N validation batches of --batch x --seq, then exit" },
    { "ppl-out", FLAG_STRING, O(ppl_out), 0, 0, K_RUN, "FILE", "evaluation",
      "perplexity of the --load model on validation windows shorter and longer than its context, as CSV "
      "(window,mode,tokens,loss,ppl,note), then exit" },
    { "ppl-positions", FLAG_STRING, O(ppl_positions), 0, 0, K_RUN, "FILE", "evaluation",
      "with the perplexity evaluation: mean loss at each position of the window, nonoverlap mode, as CSV "
      "(window,position,loss)" },
    { "ppl-windows", FLAG_STRING, O(ppl_windows), 0, 0, K_RUN, "LIST", "evaluation",
      "perplexity windows as multiples of the model's context (" PPL_DEFAULT_WINDOWS ")" },
    { "ppl-stride", FLAG_DOUBLE, O(ppl_stride), 0, 1, K_RUN, "F", "evaluation",
      "sliding-window stride as a fraction of the window, in (0, 1] (0.5)" },
    { "attention-distance", FLAG_STRING, O(attention_distance), 0, 0, K_RUN, "FILE", "evaluation",
      "the NoPE paper's attention distance: with --load A --task NAME --distance-to B, on the same test instances, "
      "each layer's mean over A's heads of the Jensen-Shannon divergence to B's nearest head (jsd), and the paper's "
      "code's: the nearest pair of B's head g and A's head h with g < h of 0.5 (KL(m||p) + KL(m||q)) (jsd_paper), "
      "as CSV (layer,split,instances,jsd,jsd_paper), then exit" },
    { "distance-to", FLAG_STRING, O(distance_to), 0, 0, K_RUN, "CKPT", "evaluation",
      "with --attention-distance: model B (a checkpoint with as many layers, trained on the same task)" },
    { "distance-per-length", FLAG_INT, O(distance_per_length), 1, 10000, K_RUN, "N", "evaluation",
      "with --attention-distance: distinct test instances per test length (5)" },
    { "attention-stats", FLAG_STRING, O(attention_stats), 0, 0, K_RUN, "FILE", "evaluation",
      "attention statistics of the --load model over windows of the validation text: per layer and head the mean "
      "first-key (sink) mass, row entropy and attended distance, and the fraction of heads collapsed, as CSV "
      "(window,layer,head,windows,rows,sink_mass,entropy,distance,collapsed,layer_collapsed_frac,note), then exit" },
    { "attention-lengths", FLAG_STRING, O(attention_lengths), 0, 0, K_RUN, "LIST", "evaluation",
      "attention-statistics window lengths as multiples of the model's context (" PPL_DEFAULT_WINDOWS ")" },
    { "attention-windows", FLAG_INT, O(attention_windows), 1, 1e6, K_RUN, "N", "evaluation",
      "attention statistics: windows per length, the first N of the validation text ("
      NUMBER_TEXT(ASTATS_DEFAULT_WINDOWS) ")" },
    { "collapse-threshold", FLAG_DOUBLE, O(collapse_threshold), 0, 1, K_RUN, "F", "evaluation",
      "attention statistics: a head is collapsed when its mean first-key mass is >= F, in (0, 1] (0.5)" },
    { "ppl-tokens", FLAG_INT, O(ppl_tokens), 1, 1e9, K_RUN, "N", "evaluation",
      "tokens scored at every window length, the same ones (default: all the validation text holds, at most 65536); "
      "with --longrope-search, by every candidate (default " NUMBER_TEXT(LONGROPE_DEFAULT_TOKENS) ")" },
    { "ppl-skip", FLAG_INT, O(ppl_skip), 0, 1e9, K_RUN, "N", "evaluation",
      "score the validation text from its token N on (0: from the start), for --ppl-out and --longrope-search: a "
      "factor search on tokens the evaluation does not score" },
    { "longrope-search", FLAG_STRING, O(longrope_search), 0, 0, K_RUN, "PREFIX", "evaluation",
      "search LongRoPE factor lists for the --load RoPE model at --rope-factor S (and --rope-original-context L0): "
      "evolutionary, scored by perplexity of --ppl-tokens validation tokens at windows of S*L0 (long list) and L0 "
      "(short list); writes PREFIX.short and PREFIX.long, then exits" },
    { "longrope-population", FLAG_INT, O(longrope_population), 4, 1000, K_RUN, "P", "evaluation",
      "--longrope-search: lists per generation, the best P/2 kept (" NUMBER_TEXT(LONGROPE_DEFAULT_POPULATION) ")" },
    { "longrope-generations", FLAG_INT, O(longrope_generations), 0, 1000, K_RUN, "G", "evaluation",
      "--longrope-search: generations after the first (" NUMBER_TEXT(LONGROPE_DEFAULT_GENERATIONS) ")" },
    { "export", FLAG_STRING, O(export_path), 0, 0, K_RUN, "FILE", "export",
      "write the model as safetensors with HF GPT-2 names, then exit" },
    { "export-llmc", FLAG_STRING, O(export_llmc), 0, 0, K_RUN, "FILE", "export",
      "write the model as an llm.c GPT-2 model file (version 3, float32), then exit; only a learned input table "
      "over nope layers, which llm.c runs" },
    { "dump-step", FLAG_STRING, O(dump), 0, 0, K_RUN, "FILE", "export",
      "write one forward/backward on the first batch as safetensors, then exit" },
    { "attention-map", FLAG_STRING, O(attention_map), 0, 0, K_RUN, "DIR", "export",
      "draw every head's attention on --prompt (or a --task test instance) and the positional signal as PNG in DIR "
      "(gnuplot), then exit; needs --load" },
};
FLAGS_TABLE_END
#undef O
#undef NUMBER_TEXT
#undef STRINGIFY
enum { N_FLAGS = (int)(sizeof(FLAGS) / sizeof(FLAGS[0])) };
_Static_assert(N_FLAGS <= MAX_FLAGS, "raise MAX_FLAGS in train_options.h: Args.set has a slot per flag");

static void defaults(Options *o) {
    memset(o, 0, sizeof *o);
    o->steps = 300; o->batch = 16; o->seq = 64; o->accum = 1; o->layers = 4; o->heads = 4; o->dim = 128;
    o->warmup = -1; o->lr = 1e-3; o->min_lr_frac = 0.1; o->wd = 0.1; o->clip = 1.0; o->beta1 = 0.9;
    o->beta2 = 0.95; o->eps = 1e-8; o->seed = 1337; o->val_every = 100; o->val_batches = 8;
    o->val_frac = 0.1; o->log_every = 10; o->temperature = 1.0; o->ppl_stride = 0.5;
    o->distractors = -1; o->eval_per_length = 100; o->ppl_windows = PPL_DEFAULT_WINDOWS;
    o->attention_lengths = PPL_DEFAULT_WINDOWS; o->attention_windows = ASTATS_DEFAULT_WINDOWS;
    o->distance_per_length = 5;
    o->collapse_threshold = ASTATS_DEFAULT_THRESHOLD;
    o->fit_every = 50; o->fit_per_length = 20;
    o->schedule = "cosine"; o->poly_power = 1.0; o->precision = "fp32";
    o->longrope_population = LONGROPE_DEFAULT_POPULATION; o->longrope_generations = LONGROPE_DEFAULT_GENERATIONS;
}

// ./train --help's headings, in its order: every row's group is one of them (usage checks).
static const char *const TRAIN_GROUPS[] = { "model", "positions", "data", "optimiser", "task", "evaluation", "export",
                                            "run", NULL };

// The help of a schedule flag (a row with help NULL), which posenc writes: it names the schemes.
static const char *schedule_help(const FlagRow *r, char *buf, size_t cap) { return posenc_schedule_help(r->name, buf, cap); }

static void usage(FILE *f) {
    fprintf(f, "usage: ./train [flags]\n"
               "Trains a GPT-2 style model whose positional encoding is a plug; see README.md.\n");
    for (int i = 0; i < N_FLAGS; i++) {
        int known = 0;
        for (const char *const *g = TRAIN_GROUPS; *g; g++) known |= !strcmp(*g, FLAGS[i].group);
        CHECK(known, "internal: --%s's group '%s' is not one of ./train --help's", FLAGS[i].name, FLAGS[i].group);
    }
    for (const char *const *g = TRAIN_GROUPS; *g; g++) {
        fprintf(f, "\n%s:\n", *g);
        flags_help(f, FLAGS, N_FLAGS, *g, 27, schedule_help);
        if (!strcmp(*g, "positions"))          // posenc's rows: the scheme settings
            flags_help(f, posenc_setting(0), posenc_setting_count(), NULL, 27, NULL);
    }
    fprintf(f, "  %-27s %s\n\n", "--help", "this text");
    posenc_help(f);
    fprintf(f, "\n");
    task_help(f);
}

const FlagRow *find_flag(const char *name) { return flag_find(FLAGS, N_FLAGS, name); }

// A bad value's message (flag_value: the whole value must be a number in [min, max]; never clamped);
// source: "flag", or the checkpoint a stored value comes from.
static void report(const FlagRow *f, FlagError e, const char *v, const char *source) {
    CHECK(e != FLAG_EMPTY, "%s --%s needs a non-empty value", source, f->name);
    CHECK(e != FLAG_NOT_NUMBER, "%s --%s: '%s' is not a number", source, f->name, v);
    CHECK(e != FLAG_NOT_INTEGER, "%s --%s: '%s' is not an integer", source, f->name, v);
    if (f->type == FLAG_DOUBLE)
        CHECK(e != FLAG_OUT_OF_RANGE, "%s --%s %s is out of range [%g, %g]", source, f->name, v, f->min, f->max);
    CHECK(e != FLAG_OUT_OF_RANGE, "%s --%s %s is out of range [%.0f, %.0f]", source, f->name, v, f->min, f->max);
    CHECK(e == FLAG_OK, "internal: %s --%s %s: error %d", source, f->name, v, (int)e);   // (no choice rows here)
}

static void set_flag(Options *o, const FlagRow *f, const char *v, const char *source) {
    report(f, flag_value(f, o, v, 0), v, source);
}

// flags_parse's hooks (util/flags.h), with the Args being read as their context
static void help_hook(void *ctx) { (void)ctx; usage(stdout); }

static void fail_hook(void *ctx, FlagError e, const char *s, const FlagRow *r, const char *v, int argc, char **argv,
                      int i) {
    (void)ctx; (void)argc;
    if (e == FLAG_NOT_FLAG) {
        // an unquoted glob after --data: the shell has expanded it into several words
        CHECK(i < 3 || (strcmp(argv[i - 2], "--data") && strcmp(argv[i - 2], "--val-data")),
              "unexpected argument '%s' after %s %s: quote a glob (%s 'dir/*.bin') so that the shell passes it to "
              "./train whole", s, argv[i - 2], argv[i - 1], argv[i - 2]);
        CHECK(0, "unexpected argument '%s'; flags start with -- (see --help)", s);
    }
    CHECK(e != FLAG_UNKNOWN, "unknown flag %s (see --help)", s);
    CHECK(e != FLAG_NO_VALUE, "%s needs a value (see --help)", s);
    report(r, e, v, "flag");
}

// A scheme setting (--rope-base X): posenc's rows, checked by posenc and kept for it as rope_base=X.
static int scheme_setting(void *ctx, int argc, char **argv, int *i) {
    Args *a = ctx;
    const char *name = argv[*i] + 2;
    if (!posenc_is_flag(name)) return 0;
    CHECK(*i + 1 < argc, "--%s needs a value (see --help)", name);
    const char *v = argv[++*i];
    char key[64];
    size_t k = 0;
    for (; name[k]; k++) key[k] = name[k] == '-' ? '_' : name[k];
    key[k] = 0;
    char msg[512];
    CHECK(a->n_pe < MAX_PE_SETTINGS, "too many scheme settings");
    v = posenc_flag_value(key, v, a->pe_file[a->n_pe], sizeof a->pe_file[a->n_pe], msg, sizeof msg);   // a list's file
    CHECK(v, "%s", msg);
    PosConfig probe; posenc_defaults(&probe, 1);
    CHECK(posenc_set(&probe, key, v, msg, sizeof msg) > 0, "%s", msg);
    memcpy(a->pe_key[a->n_pe], key, sizeof key);
    a->pe_val[a->n_pe++] = v;
    return 1;
}

void parse_args(Args *a, int argc, char **argv) {
    defaults(&a->o);
    memset(a->set, 0, sizeof a->set);
    a->n_pe = 0;
    unsigned char given[MAX_FLAGS] = { 0 };
    FlagParser p = { .rows = FLAGS, .n = N_FLAGS, .base = &a->o, .ctx = a, .first = 1, .help = help_hook,
                     .other = scheme_setting, .fail = fail_hook, .given = given };
    flags_parse(&p, argc, argv);
    for (int i = 0; i < N_FLAGS; i++) a->set[i] = given[i];
}
// Appends ` --NAME VALUE` to buf, the value in single quotes when the shell would split or expand it.
static void append_flag(char *buf, size_t cap, const char *name, const char *v) {
    size_t n = strlen(buf);
    int plain = *v != 0;
    for (const char *c = v; *c; c++) plain &= strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./,:@{}%", *c) != NULL;
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, " --%s %s", name, plain ? v : "'");
    if (plain) return;
    for (const char *c = v; *c && n + 5 < cap; c++) {
        if (*c == '\'') { memcpy(buf + n, "'\\''", 4); n += 4; } else buf[n++] = *c;
    }
    snprintf(buf + n, n < cap ? cap - n : 0, "'");
}

void resume_command(const Args *a, const char *prog, const char *ckpt, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", prog);
    append_flag(buf, cap, "resume", ckpt);
    for (int i = 0; i < N_FLAGS; i++) {
        const FlagRow *f = &FLAGS[i];
        // --load and --new-schedule made the model the checkpoint now holds
        if (!a->set[i] || f->tag != K_RUN || !strcmp(f->name, "resume") || !strcmp(f->name, "load") ||
            !strcmp(f->name, "continue") ||
            !strcmp(f->name, "new-schedule")) continue;
        const void *p = (const char *)&a->o + f->off;
        if (f->type == FLAG_SWITCH) {                 // a switch takes no value
            size_t n = strlen(buf);
            snprintf(buf + n, n < cap ? cap - n : 0, " --%s", f->name);
            continue;
        }
        char v[64];
        if (f->type == FLAG_STRING) { append_flag(buf, cap, f->name, *(const char *const *)p); continue; }
        if (f->type == FLAG_SWITCH) { snprintf(buf + strlen(buf), cap - strlen(buf), " --%s", f->name); continue; }
        if (f->type == FLAG_DOUBLE) snprintf(v, sizeof v, "%.17g", *(const double *)p);
        else if (f->type == FLAG_INT) snprintf(v, sizeof v, "%d", *(const int *)p);
        else snprintf(v, sizeof v, "%lld", *(const long long *)p);
        append_flag(buf, cap, f->name, v);
    }
}

char *train_kv(const Options *o) {
    char *buf = NULL; size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    for (int i = 0; i < N_FLAGS; i++) {
        const FlagRow *fl = &FLAGS[i];
        if (fl->tag != K_TRAIN) continue;
        const void *p = (const char *)o + fl->off;
        if (fl->type == FLAG_STRING) { if (*(const char *const *)p) fprintf(f, "train.%s=%s\n", fl->name, *(const char *const *)p); }
        else if (fl->type == FLAG_DOUBLE) fprintf(f, "train.%s=%.17g\n", fl->name, *(const double *)p);
        else if (fl->type == FLAG_INT || fl->type == FLAG_SWITCH) fprintf(f, "train.%s=%d\n", fl->name, *(const int *)p);
        else fprintf(f, "train.%s=%lld\n", fl->name, *(const long long *)p);
    }
    fclose(f);
    return buf;
}

// The train.* lines of kv (cut up in place) over the defaults into a->stored; with `apply`, also into
// a->o where the command line did not give the flag.
static void parse_stored(Args *a, char *kv, const char *path, int apply) {
    defaults(&a->stored);
    a->has_stored = 1;
    for (char *line = strtok(kv, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (!eq || strncmp(line, "train.", 6) != 0) continue;
        *eq = 0;
        const FlagRow *f = find_flag(line + 6);
        CHECK(f || !apply, "checkpoint '%s' stores an unknown training setting '%s'", path, line + 6);
        if (!f) continue;                        // --load reads them for checks only, and skips it
        set_flag(&a->stored, f, eq + 1, path);
        if (apply && !a->set[f - FLAGS]) set_flag(&a->o, f, eq + 1, path);
    }
}

void apply_stored(Args *a, char *kv, const char *path) { parse_stored(a, kv, path, 1); }
void read_stored(Args *a, char *kv, const char *path) { parse_stored(a, kv, path, 0); }

int flag_set(const Args *a, const char *name) { return a->set[find_flag(name) - FLAGS]; }

const char *const SCHEDULE_FLAGS[] = { "pe", "pe-layers", "input-pe", NULL };

int is_schedule_flag(const char *name) {
    for (const char *const *f = SCHEDULE_FLAGS; *f; f++) if (!strcmp(name, *f)) return 1;
    return 0;
}

void refuse_model_flags(const Args *a, const char *ckpt) {
    for (int i = 0; i < N_FLAGS; i++)
        CHECK(!(a->set[i] && FLAGS[i].tag == K_MODEL) || strcmp(FLAGS[i].name, "context") == 0 ||
              (a->o.new_schedule && is_schedule_flag(FLAGS[i].name)),
              "--%s cannot change the architecture of the model in '%s'; drop the flag", FLAGS[i].name, ckpt);
}

void apply_stored_task(Args *a, char *kv, const char *path) {
    static const char *names[] = { "train-min", "train-max", "test-max", "distractors", "depths", "alphabet" };
    char *copy = strdup(kv), *task = NULL;
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, "train.task=", 11)) task = line + 11;
    if (task && !strcmp(task, a->o.task)) {
        strcpy(copy, kv);
        for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
            char *eq = strchr(line, '=');
            if (!eq || strncmp(line, "train.", 6)) continue;
            *eq = 0;
            for (size_t i = 0; i < sizeof names / sizeof *names; i++)
                if (!strcmp(line + 6, names[i]) && !flag_set(a, names[i])) set_flag(&a->o, find_flag(names[i]), eq + 1, path);
        }
    }
    free(copy);
}
