// train.c: the command line, the training loop, evaluation, checkpoints, sampling and export.
//
//   ./train                          train the default tiny model on the embedded corpus
//   ./train --data FILE --pe rope    train on a file with RoPE in every layer
//   ./train --help                   every flag
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "checkpoint.h"
#include "dataset/data.h"
#include "dataset/loader.h"
#include "dataset/tasks.h"
#include "eval.h"
#include "model.h"
#include "viz.h"
#include "perplexity.h"

// ----------------------------------------------------------------------------------------------
// options: one table drives parsing, --help, checkpoint storage and conflict checks

typedef struct {
    const char *data, *val_data, *tokenizer, *save, *load, *resume, *export_path, *dump, *log, *prompt;
    const char *pe, *pe_layers, *input_pe;
    const char *attention_map;
    const char *task, *eval_out;
    int train_min, train_max, test_max, distractors, depths, eval_per_length, show;
    int steps, batch, seq, context, layers, heads, dim, accum, warmup, val_every, val_batches;
    int threads, sample, top_k, save_every, log_every, pack, eval_batches;
    double lr, min_lr_frac, wd, clip, beta1, beta2, eps, val_frac, temperature;
    long long seed;
    const char *ppl_out, *ppl_positions, *ppl_windows;   // perplexity against window length
    double ppl_stride;
    int ppl_tokens;
} Options;

typedef enum { F_INT, F_DBL, F_STR, F_LL } FlagType;
enum { K_RUN = 0, K_MODEL = 1, K_TRAIN = 2 };   // run-only, architecture, stored for --resume

typedef struct {
    const char *name;
    FlagType type;
    size_t off;
    double min, max;
    int kind;
    const char *arg, *help;     // help NULL: a schedule flag (--pe ...), whose help posenc_schedule_help writes
} Flag;

#define O(f) offsetof(Options, f)
static const Flag FLAGS[] = {
    { "data", F_STR, O(data), 0, 0, K_TRAIN, "FILE", "training data: an llm.c token shard, or any file read as bytes (default: the embedded corpus)" },
    { "val-data", F_STR, O(val_data), 0, 0, K_TRAIN, "FILE", "validation data (default: the last --val-frac of --data)" },
    { "val-frac", F_DBL, O(val_frac), 0, 0.5, K_TRAIN, "F", "fraction of the data held out for validation (0.1)" },
    { "tokenizer", F_STR, O(tokenizer), 0, 0, K_RUN, "FILE", "llm.c tokenizer file to print samples of token data" },
    { "pack", F_INT, O(pack), 0, 1, K_TRAIN, "0|1", "1: isolate documents (after end-of-text, or a blank line in bytes) and restart their positions (0)" },
    { "task", F_STR, O(task), 0, 0, K_TRAIN, "NAME", "train on a synthetic length-generalisation task instead of text (see the task table below)" },
    { "train-min", F_INT, O(train_min), 0, 100000, K_TRAIN, "N", "--task: shortest training length, 0 = the task's" },
    { "train-max", F_INT, O(train_max), 0, 100000, K_TRAIN, "N", "--task: longest training length; longer is out-of-distribution, 0 = the task's" },
    { "test-max", F_INT, O(test_max), 0, 100000, K_TRAIN, "N", "--task: longest test length, 0 = the task's ratio x --train-max (2x; retrieval 4x)" },
    { "distractors", F_INT, O(distractors), -1, 20, K_TRAIN, "N", "--task retrieval: decoy keys with other labels in each haystack, -1 = 3" },
    { "depths", F_INT, O(depths), 0, 8, K_TRAIN, "N", "--task retrieval: key depths tested, evenly spaced in [0, 1], 0 = 5" },
    { "eval-per-length", F_INT, O(eval_per_length), 0, 1000000, K_RUN, "N", "--task: test instances per length (and depth) for the accuracy after training, 0 = none (100)" },
    { "eval-out", F_STR, O(eval_out), 0, 0, K_RUN, "FILE", "--task: write the accuracy by length as CSV (task,scheme,seed,length,depth,split,n,correct,accuracy,skipped)" },
    { "show", F_INT, O(show), 0, 1000, K_RUN, "N", "--task: print N test prompts with the model's greedy answers at the longest training and test lengths (0)" },
    { "steps", F_INT, O(steps), 0, 1e9, K_TRAIN, "N", "optimiser steps (default 300)" },
    { "batch", F_INT, O(batch), 1, 1e6, K_TRAIN, "B", "sequences per micro-batch (16)" },
    { "seq", F_INT, O(seq), 1, 1e7, K_TRAIN, "T", "tokens per sequence (64)" },
    { "accum", F_INT, O(accum), 1, 1e6, K_TRAIN, "N", "micro-batches per optimiser step, gradients accumulated (1)" },
    { "context", F_INT, O(context), 1, 1e7, K_MODEL, "N", "the model's context length, the learned table size (default --seq)" },
    { "layers", F_INT, O(layers), 1, 64, K_MODEL, "L", "transformer blocks (4)" },
    { "heads", F_INT, O(heads), 1, 4096, K_MODEL, "H", "attention heads (4)" },
    { "dim", F_INT, O(dim), 1, 65536, K_MODEL, "C", "channels, a multiple of --heads (128)" },
    { "pe", F_STR, O(pe), 0, 0, K_MODEL, "NAME", NULL },
    { "pe-layers", F_STR, O(pe_layers), 0, 0, K_MODEL, "a,b,...", NULL },
    { "input-pe", F_STR, O(input_pe), 0, 0, K_MODEL, "S", NULL },
    { "lr", F_DBL, O(lr), 0, 10, K_TRAIN, "X", "peak learning rate (1e-3)" },
    { "min-lr-frac", F_DBL, O(min_lr_frac), 0, 1, K_TRAIN, "F", "cosine decay ends at lr*F (0.1)" },
    { "warmup", F_INT, O(warmup), 0, 1e9, K_TRAIN, "N", "linear warm-up steps (default steps/10)" },
    { "wd", F_DBL, O(wd), 0, 10, K_TRAIN, "X", "AdamW weight decay on matrices and embedding tables (0.1)" },
    { "clip", F_DBL, O(clip), 0, 1e9, K_TRAIN, "X", "clip the global gradient norm to X, 0 = off (1.0)" },
    { "beta1", F_DBL, O(beta1), 0, 0.999999, K_TRAIN, "X", "AdamW beta1 (0.9)" },
    { "beta2", F_DBL, O(beta2), 0, 0.999999, K_TRAIN, "X", "AdamW beta2 (0.95)" },
    { "eps", F_DBL, O(eps), 1e-30, 1, K_TRAIN, "X", "AdamW epsilon (1e-8)" },
    { "seed", F_LL, O(seed), 0, 9.2e18, K_TRAIN, "N", "seed of the initial weights and of sampling (1337)" },
    { "val-every", F_INT, O(val_every), 0, 1e9, K_TRAIN, "N", "validation loss every N steps, 0 = only at the end (100)" },
    { "val-batches", F_INT, O(val_batches), 1, 1e6, K_TRAIN, "N", "micro-batches per validation (8)" },
    { "threads", F_INT, O(threads), 1, 1024, K_RUN, "N", "OpenMP threads (default: all cores)" },
    { "log", F_STR, O(log), 0, 0, K_RUN, "FILE", "CSV log: step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s" },
    { "log-every", F_INT, O(log_every), 1, 1e9, K_RUN, "N", "progress line every N steps (10)" },
    { "save", F_STR, O(save), 0, 0, K_RUN, "FILE", "write a checkpoint at the end (and every --save-every steps); {step} in FILE becomes the step" },
    { "save-every", F_INT, O(save_every), 0, 1e9, K_RUN, "N", "also checkpoint every N steps (0 = only at the end)" },
    { "load", F_STR, O(load), 0, 0, K_RUN, "FILE", "start from a checkpoint's weights (fresh optimiser)" },
    { "resume", F_STR, O(resume), 0, 0, K_RUN, "FILE", "continue a run exactly: weights, optimiser, step, data position" },
    { "sample", F_INT, O(sample), 0, 1e7, K_RUN, "N", "generate N tokens after training (or from --load)" },
    { "prompt", F_STR, O(prompt), 0, 0, K_RUN, "TEXT", "text to continue when sampling" },
    { "temperature", F_DBL, O(temperature), 0, 100, K_RUN, "X", "sampling temperature, 0 = greedy (1.0)" },
    { "top-k", F_INT, O(top_k), 0, 1e9, K_RUN, "K", "sample among the K most likely tokens, 0 = all (0)" },
    { "eval-batches", F_INT, O(eval_batches), 0, 1e6, K_RUN, "N", "evaluate the --load model on N validation batches of --batch x --seq, then exit" },
    { "ppl-out", F_STR, O(ppl_out), 0, 0, K_RUN, "FILE", "perplexity of the --load model on validation windows shorter and longer than its context, as CSV (window,mode,tokens,loss,ppl,note), then exit" },
    { "ppl-positions", F_STR, O(ppl_positions), 0, 0, K_RUN, "FILE", "with the perplexity evaluation: mean loss at each position of the window, nonoverlap mode, as CSV (window,position,loss)" },
    { "ppl-windows", F_STR, O(ppl_windows), 0, 0, K_RUN, "LIST", "perplexity windows as multiples of the model's context (0.5,1,2,4,8)" },
    { "ppl-stride", F_DBL, O(ppl_stride), 0, 1, K_RUN, "F", "sliding-window stride as a fraction of the window, in (0, 1] (0.5)" },
    { "ppl-tokens", F_INT, O(ppl_tokens), 1, 1e9, K_RUN, "N", "tokens scored at every window length, the same ones (default: all the validation text holds, at most 65536)" },
    { "export", F_STR, O(export_path), 0, 0, K_RUN, "FILE", "write the model as safetensors with HF GPT-2 names, then exit" },
    { "dump-step", F_STR, O(dump), 0, 0, K_RUN, "FILE", "write one forward/backward on the first batch as safetensors, then exit" },
    { "attention-map", F_STR, O(attention_map), 0, 0, K_RUN, "DIR", "draw every head's attention on --prompt (or a --task test instance) and the positional signal as PNG in DIR (gnuplot), then exit; needs --load" },
};
#undef O
enum { N_FLAGS = (int)(sizeof(FLAGS) / sizeof(FLAGS[0])) };

static void defaults(Options *o) {
    memset(o, 0, sizeof *o);
    o->steps = 300; o->batch = 16; o->seq = 64; o->accum = 1; o->layers = 4; o->heads = 4; o->dim = 128;
    o->warmup = -1; o->lr = 1e-3; o->min_lr_frac = 0.1; o->wd = 0.1; o->clip = 1.0; o->beta1 = 0.9;
    o->beta2 = 0.95; o->eps = 1e-8; o->seed = 1337; o->val_every = 100; o->val_batches = 8;
    o->val_frac = 0.1; o->log_every = 10; o->temperature = 1.0; o->ppl_stride = 0.5;
    o->distractors = -1; o->eval_per_length = 100;
}

static void usage(FILE *f) {
    fprintf(f, "usage: ./train [flags]\n"
               "Trains a GPT-2 style model whose positional encoding is a plug; see README.md.\n\nFlags:\n");
    for (int i = 0; i < N_FLAGS; i++) {
        char left[64], help[256];
        snprintf(left, sizeof left, "--%s %s", FLAGS[i].name, FLAGS[i].arg);
        fprintf(f, "  %-22s %s\n", left, FLAGS[i].help ? FLAGS[i].help : posenc_schedule_help(FLAGS[i].name, help, sizeof help));
    }
    fprintf(f, "  %-22s %s\n\n", "--help", "this text");
    posenc_help(f);
    fprintf(f, "\n");
    task_help(f);
}

static const Flag *find_flag(const char *name) {
    for (int i = 0; i < N_FLAGS; i++) if (strcmp(FLAGS[i].name, name) == 0) return &FLAGS[i];
    return NULL;
}

// Strict parsing: the whole value must be a number in [min, max]; never clamped.
static void set_flag(Options *o, const Flag *f, const char *v, const char *source) {
    char *end;
    void *p = (char *)o + f->off;
    errno = 0;
    if (f->type == F_STR) {
        CHECK(*v, "%s --%s needs a non-empty value", source, f->name);
        *(const char **)p = v;
    } else if (f->type == F_DBL) {
        double x = strtod(v, &end);
        CHECK(*v && !*end && !errno && isfinite(x), "%s --%s: '%s' is not a number", source, f->name, v);
        CHECK(x >= f->min && x <= f->max, "%s --%s %s is out of range [%g, %g]", source, f->name, v, f->min, f->max);
        *(double *)p = x;
    } else {
        long long x = strtoll(v, &end, 10);
        CHECK(*v && !*end && !errno, "%s --%s: '%s' is not an integer", source, f->name, v);
        CHECK(x >= f->min && (double)x <= f->max, "%s --%s %s is out of range [%.0f, %.0f]", source, f->name, v, f->min, f->max);
        if (f->type == F_INT) *(int *)p = (int)x; else *(long long *)p = x;
    }
}

typedef struct {
    Options o;
    int set[N_FLAGS];                      // given on the command line
    char pe_key[16][64];                   // scheme settings (--rope-base -> rope_base) for posenc
    const char *pe_val[16];
    int n_pe;
} Args;

static void parse_args(Args *a, int argc, char **argv) {
    defaults(&a->o);
    memset(a->set, 0, sizeof a->set);
    a->n_pe = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) { usage(stdout); exit(0); }
        CHECK(strncmp(s, "--", 2) == 0, "unexpected argument '%s'; flags start with -- (see --help)", s);
        const char *name = s + 2;
        const Flag *f = find_flag(name);
        CHECK(f || posenc_is_flag(name), "unknown flag --%s (see --help)", name);
        CHECK(i + 1 < argc, "--%s needs a value (see --help)", name);
        const char *v = argv[++i];
        if (f) { set_flag(&a->o, f, v, "flag"); a->set[f - FLAGS] = 1; continue; }
        // scheme settings belong to posenc: --rope-base -> rope_base
        char key[64];
        size_t k = 0;
        for (; name[k]; k++) key[k] = name[k] == '-' ? '_' : name[k];
        key[k] = 0;
        PosConfig probe; posenc_defaults(&probe, 1);
        char msg[256];
        CHECK(posenc_set(&probe, key, v, msg, sizeof msg) > 0, "%s", msg);
        CHECK(a->n_pe < 16, "too many scheme settings");
        memcpy(a->pe_key[a->n_pe], key, sizeof key);
        a->pe_val[a->n_pe++] = v;
    }
}

// The train.* lines stored in a checkpoint: every K_TRAIN flag's value.
static char *train_kv(const Options *o) {
    char *buf = NULL; size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    for (int i = 0; i < N_FLAGS; i++) {
        const Flag *fl = &FLAGS[i];
        if (fl->kind != K_TRAIN) continue;
        const void *p = (const char *)o + fl->off;
        if (fl->type == F_STR) { if (*(const char *const *)p) fprintf(f, "train.%s=%s\n", fl->name, *(const char *const *)p); }
        else if (fl->type == F_DBL) fprintf(f, "train.%s=%.17g\n", fl->name, *(const double *)p);
        else if (fl->type == F_INT) fprintf(f, "train.%s=%d\n", fl->name, *(const int *)p);
        else fprintf(f, "train.%s=%lld\n", fl->name, *(const long long *)p);
    }
    fclose(f);
    return buf;
}

// On --resume: stored training settings apply unless the command line gives the flag.
// String values point into kv, which must outlive the options.
static void apply_stored(Args *a, char *kv, const char *path) {
    for (char *line = strtok(kv, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (!eq || strncmp(line, "train.", 6) != 0) continue;
        *eq = 0;
        const Flag *f = find_flag(line + 6);
        CHECK(f, "checkpoint '%s' stores an unknown training setting '%s'", path, line + 6);
        if (a->set[f - FLAGS]) continue;
        set_flag(&a->o, f, eq + 1, path);
    }
}

// ----------------------------------------------------------------------------------------------
// data

static void check_tokens(const TokenData *d, int vocab, const char *name) {
    for (size_t i = 0; i < d->n; i++)
        CHECK(d->tokens[i] >= 0 && d->tokens[i] < vocab, "%s: token id %d at index %zu is outside the "
              "model's vocabulary (0..%d); use data made with the model's tokenizer", name, d->tokens[i], i, vocab - 1);
}

// ----------------------------------------------------------------------------------------------
// helpers

// linear warm-up to lr, then cosine decay to lr * min_lr_frac at the last step (step = steps-1)
static double lr_at(const Options *o, int step) {
    int warm = o->warmup;
    if (step < warm) return o->lr * (step + 1) / warm;
    double progress = o->steps - 1 > warm ? (double)(step - warm) / (o->steps - 1 - warm) : 1.0;
    double floor_lr = o->lr * o->min_lr_frac;
    return floor_lr + 0.5 * (o->lr - floor_lr) * (1 + cos(M_PI * progress));
}

// --save path with "{step}" replaced by the step number (keeps one checkpoint per save)
static void save_path(const char *pattern, int step, char *out, size_t cap) {
    const char *at = strstr(pattern, "{step}");
    if (!at) { snprintf(out, cap, "%s", pattern); return; }
    snprintf(out, cap, "%.*s%d%s", (int)(at - pattern), pattern, step, at + 6);
}

static double evaluate(GPT *m, const TokenData *val, const Options *o, Batch *b) {
    Loader l = { val, 0, o->pack };
    double sum = 0, wsum = 0;
    for (int i = 0; i < o->val_batches; i++) {
        loader_next(&l, b);
        gpt_forward(m, b);
        sum += m->loss * m->weight_sum; wsum += m->weight_sum;
    }
    return wsum > 0 ? sum / wsum : 0;
}

static void print_piece(const Tokenizer *tok, int id) {
    if (id >= 0 && id < tok->n) fwrite(tok->piece[id], 1, tok->piece_len[id], stdout);
    fflush(stdout);
}

// Picks the next token from logits (V,): greedy at temperature 0, else softmax(logits/temp) over
// the top_k most likely (all when 0). An explicit RNG keeps sampling reproducible.
static int sample_token(const real *logits, int V, double temp, int top_k, Rng *rng) {
    int best = argmax_token(logits, V);
    if (temp == 0) return best;
    double *p = xmalloc(sizeof(double) * V);
    double kth = -INFINITY;
    if (top_k > 0 && top_k < V) {        // the k-th largest logit is the admission threshold
        double *s = xmalloc(sizeof(double) * V);
        for (int v = 0; v < V; v++) s[v] = logits[v];
        for (int i = 0; i < top_k; i++) {
            int arg = i;
            for (int v = i + 1; v < V; v++) if (s[v] > s[arg]) arg = v;
            double t = s[i]; s[i] = s[arg]; s[arg] = t;
        }
        kth = s[top_k - 1];
        free(s);
    }
    double sum = 0;
    for (int v = 0; v < V; v++) { p[v] = logits[v] >= kth ? exp((logits[v] - logits[best]) / temp) : 0; sum += p[v]; }
    double u = rng_uniform(rng) * sum, acc = 0;
    int pick = best;
    for (int v = 0; v < V; v++) { acc += p[v]; if (p[v] > 0 && u < acc) { pick = v; break; } }
    free(p);
    return pick;
}

// Generation with the KV cache: the prompt is one chunk, then one token per step at the next
// position. When the cache (the model's context) is full, the last half of the text is encoded
// again from position 0 and generation continues from there.
static void generate(GPT *m, const Tokenizer *tok, const Options *o, Rng *rng) {
    int T = m->cfg.max_seq_len, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab;
    int cap = (int)strlen(o->prompt ? o->prompt : "") + 1;
    int *ctx = xmalloc(sizeof(int) * (size_t)(cap + o->sample + 1)), *pos = xmalloc(sizeof(int) * T);
    int n = o->prompt ? tokenizer_encode(tok, o->prompt, ctx, cap) : 0;
    if (n == 0) ctx[n++] = tok->eot >= 0 ? tok->eot : '\n';   // start from end-of-text or a newline
    for (int i = 0; i < n; i++) CHECK(ctx[i] < V, "--prompt: token %d is outside the model's vocabulary", ctx[i]);
    printf("---- sample (%d tokens, temperature %g, top-k %d) ----\n", o->sample, o->temperature, o->top_k);
    if (o->prompt) fputs(o->prompt, stdout);
    KVCache kc;
    kv_cache_init(&kc, m, T);
    int fed = 0;                                 // tokens of ctx whose keys are in the cache
    for (int i = 0; i < o->sample; i++) {
        if (kc.len + (n - fed) > T) {            // full: start again from the last T/2 tokens
            int keep = T / 2 > 0 ? T / 2 : 1;
            kc.len = 0;
            fed = n > keep ? n - keep : 0;
        }
        int chunk = n - fed, P = kc.len;
        for (int t = 0; t < chunk; t++) pos[t] = P + t;          // positions P .. P+chunk-1
        gpt_forward_cached(m, &kc, ctx + fed, pos, chunk);
        fed = n;
        int next = sample_token(m->a.logits + (size_t)(chunk - 1) * Vp, V, o->temperature, o->top_k, rng);
        ctx[n++] = next;
        print_piece(tok, next);
    }
    printf("\n---- end of sample ----\n");
    kv_cache_free(&kc);
    free(ctx); free(pos);
}

// ----------------------------------------------------------------------------------------------

// With --load: the settings of how a trained model is run may change: a new --context (not for a
// learned position table, whose size is fixed) and the context-extension settings (--rope-scaling ...).
static void adjust_loaded(GPTConfig *cfg, void *ctx) {
    Args *a = ctx;
    Options *o = &a->o;
    char msg[512];
    if (a->set[find_flag("context") - FLAGS] && o->context != cfg->max_seq_len) {
        CHECK(!o->resume, "--context %d differs from the context %d of the checkpoint; --resume continues "
              "the same run (use --load to change the context)", o->context, cfg->max_seq_len);
        CHECK(!posenc_fixed_table(&cfg->pe), "--context %d: the model's %s position table has %d rows and cannot "
              "serve another context", o->context, posenc_scheme(cfg->pe.input)->name, cfg->max_seq_len);
        cfg->max_seq_len = o->context;
    }
    for (int i = 0; i < a->n_pe; i++) {
        char flag[64];
        size_t k = 0;
        for (; a->pe_key[i][k]; k++) flag[k] = a->pe_key[i][k] == '_' ? '-' : a->pe_key[i][k];
        flag[k] = 0;
        CHECK(!o->resume && posenc_is_flag(flag) == 2, "--%s cannot change the model in the checkpoint; %s",
              flag, o->resume ? "--resume continues the same run" : "only --context and the context-extension "
              "settings (--rope-scaling, --rope-factor, ...) may change with --load");
        CHECK(posenc_set(&cfg->pe, a->pe_key[i], a->pe_val[i], msg, sizeof msg) > 0, "%s", msg);
    }
}

// The model: from a checkpoint (--load/--resume; architecture flags refused) or from the flags.
// vocab: the vocabulary of a new model (from --tokenizer or the data). Evaluation beyond the
// context extends the position tables later (gpt_reserve_positions).
static void build_model(Args *a, GPT *model, TrainState *st, char **stored, int vocab) {
    Options *o = &a->o;
    const char *ckpt = o->resume ? o->resume : o->load;
    char msg[512];
    if (ckpt) {
        ckpt_load(ckpt, model, 0, stored, o->resume ? st : NULL, adjust_loaded, a);
        if (o->resume) {
            CHECK(st->has_opt, "--resume: '%s' holds weights only (it was saved without optimiser state); "
                  "use --load to fine-tune from it", ckpt);
            apply_stored(a, *stored, ckpt);
        }
        for (int i = 0; i < N_FLAGS; i++)
            CHECK(!(a->set[i] && FLAGS[i].kind == K_MODEL) || strcmp(FLAGS[i].name, "context") == 0,
                  "--%s cannot change the architecture of the model in '%s'; drop the flag", FLAGS[i].name, ckpt);
        return;
    }
    GPTConfig cfg = { .vocab_size = vocab, .n_layer = o->layers, .n_head = o->heads, .n_embd = o->dim,
                      .max_seq_len = o->context ? o->context : o->seq };
    posenc_defaults(&cfg.pe, cfg.n_layer);
    CHECK(posenc_schedule(&cfg.pe, cfg.n_layer, o->pe, o->pe_layers, o->input_pe, msg, sizeof msg), "%s", msg);
    for (int i = 0; i < a->n_pe; i++) CHECK(posenc_set(&cfg.pe, a->pe_key[i], a->pe_val[i], msg, sizeof msg) > 0, "%s", msg);
    CHECK(gpt_config_check(&cfg, msg, sizeof msg), "%s", msg);
    gpt_build(model, &cfg, (uint64_t)o->seed, 0);
}

// Refuses a --save whose folder does not exist now, rather than after hours of training.
static void check_save_path(const char *pattern) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", pattern);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    CHECK(access(dir, W_OK | X_OK) == 0, "--save %s: cannot write into the folder '%s': %s", pattern, dir, strerror(errno));
}

// ----------------------------------------------------------------------------------------------
// synthetic tasks (--task): the data of a training run and the accuracy after it

static int flag_set(const Args *a, const char *name) { return a->set[find_flag(name) - FLAGS]; }

// The task settings from the flags (0 / -1 = the task's defaults). A new run without --seq gets
// a sequence twice the longest training instance (rounded up to 32), so rows pack a few instances.
static void setup_task(Args *a, TaskConfig *tc) {
    Options *o = &a->o;
    char msg[512];
    int id = task_find(o->task);
    CHECK(id >= 0, "--task %s is not a task; ./train --help lists them", o->task);
    CHECK(!o->data && !o->val_data, "--task %s generates its own data; drop --data and --val-data", o->task);
    CHECK(!o->pack, "--task packs its instances as separate documents already; drop --pack");
    task_defaults(tc, id);
    if (o->train_min) tc->train_min = o->train_min;
    if (o->train_max) tc->train_max = o->train_max;
    const TaskInfo *ti = task_info(id);
    if (o->test_max) tc->test_max = o->test_max;                 // default: the task's ratio (2x; retrieval 4x)
    else if (o->train_max) tc->test_max = tc->train_max * (ti->test_max / ti->train_max);
    if (o->distractors >= 0) tc->distractors = o->distractors;
    if (o->depths) tc->n_depths = o->depths;
    CHECK(task_check(tc, msg, sizeof msg), "%s", msg);
    CHECK(id == task_find("retrieval") || (!flag_set(a, "distractors") && !flag_set(a, "depths")),
          "--distractors and --depths apply to --task retrieval, not %s", o->task);
    CHECK(id == task_find("retrieval") || tc->test_max <= 4096, "--test-max %d: at most 4096 test lengths "
          "(each length is evaluated)", tc->test_max);
    for (const char *const *f = (const char *const[]){ "val-frac", "val-every", "val-batches", NULL }; *f; f++)
        CHECK(!flag_set(a, *f), "--%s: a --task has no validation text; its test is the accuracy by length "
              "(--eval-per-length)", *f);
    if (!flag_set(a, "seq") && !o->resume) {
        int need = 2 * task_max_tokens(tc, tc->train_max);
        o->seq = (need + 31) / 32 * 32;
    }
}

// --load CKPT --task NAME: the lengths the model was trained with (stored in the checkpoint) are
// the split between in-distribution and longer, unless the command line gives them.
static void apply_stored_task(Args *a, char *kv, const char *path) {
    static const char *names[] = { "train-min", "train-max", "test-max", "distractors", "depths" };
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

static void print_task_scores(const TaskConfig *tc, const TaskScore *s, int n, int per_length) {
    const TaskInfo *ti = task_info(tc->task);
    printf("accuracy on %s (exact match of the greedy answer, %d test instances per bucket; trained on lengths %d-%d):\n",
           ti->name, per_length, tc->train_min, tc->train_max);
    for (int i = 0; i < n; i++) {
        double acc = 100.0 * s[i].correct / (s[i].n + s[i].skipped);    // skipped instances count as wrong
        if (s[i].depth >= 0) printf("  len %4d depth %.2f %s %5.1f%%", s[i].length, s[i].depth, s[i].ood ? "*" : " ", acc);
        else printf("  len %3d%s %5.1f%%", s[i].length, s[i].ood ? "*" : " ", acc);
        if (s[i].skipped) printf(" (%d past the position table: wrong)", s[i].skipped);
        if ((i + 1) % (s[i].depth >= 0 || s[i].skipped ? 3 : 6) == 0 || i + 1 == n) printf("\n");
    }
    double id = task_accuracy(s, n, 0), ood = task_accuracy(s, n, 1);
    printf("in-distribution (len <= %d): %.1f%% | longer (* len %d-%d): ", tc->train_max, 100 * id, tc->train_max + 1, tc->test_max);
    if (isnan(ood)) printf("none\n"); else printf("%.1f%%\n", 100 * ood);
}

// --show N: N test prompts at the longest training length and at the longest test length, with
// the model's greedy answer (KV-cache decoding) next to the expected one.
static void show_examples(GPT *m, const TaskConfig *tc, int count, uint64_t seed) {
    int lengths[2] = { tc->train_max, tc->test_max };
    for (int k = 0; k < 2; k++) {
        int cap = task_max_tokens(tc, lengths[k]), np;
        int *inst = xmalloc(sizeof(int) * (size_t)cap), *out = xmalloc(sizeof(int) * (size_t)cap);
        Rng rng;
        rng_seed(&rng, seed + 77 + k);
        printf("---- %d examples at length %d%s ----\n", count, lengths[k], k ? " (test)" : " (longest trained)");
        for (int i = 0; i < count; i++) {
            int len = task_instance(tc, lengths[k], -1, TASK_TEST, &rng, inst, cap, &np);
            if (!len) break;
            int got = greedy_decode(m, inst, np, len - np, '\n', out);
            int ok = got == len - np;
            for (int t = 0; t < got && ok; t++) ok = out[t] == inst[np + t];
            printf("%s ", ok ? "ok  " : "FAIL");
            for (int t = 0; t < np; t++) putchar(inst[t]);
            printf(" expected ");
            for (int t = np; t < len - 1; t++) putchar(inst[t]);
            printf(" got ");
            if (got == 0 || (got == 1 && out[0] == '\n')) printf("(nothing)");
            for (int t = 0; t < got; t++) if (out[t] != '\n') putchar(out[t] >= 32 && out[t] < 127 ? out[t] : '?');
            printf("\n");
        }
        free(inst); free(out);
    }
}

static void evaluate_task(GPT *m, const TaskConfig *tc, const Options *o) {
    gpt_reserve_positions(m, task_max_tokens(tc, tc->test_max));
    if (o->eval_per_length > 0) {
        int cap = 4096 * TASK_MAX_DEPTHS;                         // lengths x depths, at most
        TaskScore *s = xmalloc(sizeof(TaskScore) * (size_t)cap);
        int n = task_evaluate(m, tc, o->eval_per_length, (uint64_t)o->seed, s, cap, isatty(2));
        print_task_scores(tc, s, n, o->eval_per_length);
        if (o->eval_out) {
            char label[PE_MAX_LAYERS * 24];
            posenc_label(&m->cfg.pe, label, sizeof label);
            task_scores_write(o->eval_out, task_info(tc->task)->name, label, o->seed, s, n);
            printf("wrote %s\n", o->eval_out);
        }
        free(s);
    }
    if (o->show) show_examples(m, tc, o->show, (uint64_t)o->seed);
}

// ----------------------------------------------------------------------------------------------
// perplexity against window length (--ppl-out, --ppl-positions; perplexity.h)

static int ppl_requested(const Options *o) { return o->ppl_out || o->ppl_positions; }

// The --ppl-* flags, checked before any work: combinations, the window list, the output folders.
static void check_ppl_flags(const Args *a) {
    const Options *o = &a->o;
    static const char *opts[] = { "ppl-windows", "ppl-stride", "ppl-tokens" };
    for (int i = 0; i < 3; i++)
        CHECK(ppl_requested(o) || !a->set[find_flag(opts[i]) - FLAGS], "--%s applies to the perplexity evaluation; "
              "give --ppl-out FILE (or --ppl-positions FILE)", opts[i]);
    if (!ppl_requested(o)) return;
    CHECK(o->load || o->resume, "--ppl-out and --ppl-positions need the model from --load CKPT (or --resume CKPT)");
    CHECK(!o->task, "--ppl-out and --ppl-positions evaluate text; they do not apply to --task");
    CHECK(o->ppl_stride > 0, "--ppl-stride %g: the sliding stride is a fraction of the window in (0, 1]", o->ppl_stride);
    double mult[PPL_MAX_WINDOWS];
    char msg[512];
    CHECK(ppl_parse_multiples(o->ppl_windows ? o->ppl_windows : "0.5,1,2,4,8", mult, PPL_MAX_WINDOWS, msg, sizeof msg),
          "--ppl-windows %s", msg);
    const char *outs[2] = { o->ppl_out, o->ppl_positions }, *names[2] = { "ppl-out", "ppl-positions" };
    for (int i = 0; i < 2; i++) {
        if (!outs[i]) continue;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", outs[i]);
        char *slash = strrchr(dir, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == dir) dir[1] = 0;
        else *slash = 0;
        CHECK(access(dir, W_OK | X_OK) == 0, "--%s %s: cannot write into the folder '%s': %s", names[i], outs[i], dir, strerror(errno));
    }
}

// Scores the first N predictions of the validation text at every window, prints the table and
// writes the CSV files. val_name: where the text comes from, for messages.
static void run_perplexity(GPT *m, const TokenData *val, const Options *o, const char *val_name) {
    double mult[PPL_MAX_WINDOWS];
    int W[PPL_MAX_WINDOWS], T = m->cfg.max_seq_len, wmax = 0;
    char msg[512];
    int nw = ppl_parse_multiples(o->ppl_windows ? o->ppl_windows : "0.5,1,2,4,8", mult, PPL_MAX_WINDOWS, msg, sizeof msg);
    CHECK(nw > 0, "--ppl-windows %s", msg);
    CHECK(ppl_windows(mult, nw, T, W, msg, sizeof msg), "--ppl-windows %s: %s", o->ppl_windows ? o->ppl_windows : "0.5,1,2,4,8", msg);
    for (int i = 0; i < nw; i++) if (W[i] > wmax) wmax = W[i];
    size_t avail = val->n ? val->n - 1 : 0, N = ppl_token_count(val->n, (size_t)o->ppl_tokens, wmax);
    CHECK(!(o->ppl_tokens && (size_t)o->ppl_tokens > avail), "--ppl-tokens %d: the validation text (%s) has %zu tokens, "
          "so %zu predictions; give fewer, or more text with --val-data FILE or a larger --val-frac",
          o->ppl_tokens, val_name, val->n, avail);
    CHECK(N > 0 || !o->ppl_tokens, "--ppl-tokens %d is fewer than the largest window, %d tokens (%g x the context %d); "
          "give at least %d or shorter --ppl-windows", o->ppl_tokens, wmax, (double)wmax / T, T, wmax);
    CHECK(N > 0, "the validation text (%s) holds %zu predictions, fewer than the largest window, %d tokens (%g x the "
          "context %d); give more text with --val-data FILE or a larger --val-frac, or shorter --ppl-windows",
          val_name, avail, wmax, (double)wmax / T, T);
    char layers[PE_MAX_LAYERS * 24];
    posenc_layer_list(&m->cfg.pe, layers, sizeof layers);
    printf("perplexity: model context %d, positions: input %s, layers %s | text: %s, its first %zu tokens scored | "
           "windows of %d..%d tokens\n", T, m->cfg.pe.input == PE_NOPE ? "none" : posenc_scheme(m->cfg.pe.input)->name,
           layers, val_name, N, W[0], wmax);
    PplResult *r = xcalloc((size_t)2 * nw, sizeof(PplResult));
    ppl_run(m, val->tokens, N, W, nw, o->ppl_stride, PPL_BATCH_TOKENS, r, stdout);
    ppl_print_table(stdout, r, nw, T, N, o->ppl_stride);
    if (o->ppl_out) { ppl_write_csv(o->ppl_out, r, 2 * nw); printf("wrote %s\n", o->ppl_out); }
    if (o->ppl_positions) { ppl_write_positions(o->ppl_positions, r, 2 * nw); printf("wrote %s\n", o->ppl_positions); }
    for (int i = 0; i < 2 * nw; i++) ppl_result_free(&r[i]);
    free(r);
}

// --attention-map DIR: the folder, created when only its last part is missing.
static void attention_map_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        CHECK(S_ISDIR(sb.st_mode), "--attention-map %s: that is a file, not a folder; give a folder for the pictures", dir);
        CHECK(access(dir, W_OK | X_OK) == 0, "--attention-map %s: cannot write into the folder: %s", dir, strerror(errno));
        return;
    }
    CHECK(mkdir(dir, 0777) == 0, "--attention-map %s: cannot create the folder: %s (its parent folder must exist)",
          dir, strerror(errno));
}

// --attention-map: every head's attention on one input (the --prompt, or a test instance of --task
// at its longest training length, --train-max) and the positional signal over the model's context
// (at most 256 positions), as data, gnuplot scripts and PNG (viz.h).
static void attention_map(GPT *m, const Tokenizer *tok, const Options *o, const TaskConfig *tc) {
    int n, *tokens, context = m->cfg.max_seq_len;
    if (o->task) {
        int cap = task_max_tokens(tc, tc->train_max), np;
        tokens = xmalloc(sizeof(int) * (size_t)cap);
        Rng r;
        rng_seed(&r, (uint64_t)o->seed + 4242);
        n = task_instance(tc, tc->train_max, -1, TASK_TEST, &r, tokens, cap, &np);
        CHECK(n > 0, "--attention-map: --task %s has no test instance of length %d; pick another length with --train-max",
              o->task, tc->train_max);
        printf("input: a %s test instance of length %d (--train-max): ", o->task, tc->train_max);
        for (int t = 0; t < n; t++) putchar(tokens[t] == '\n' ? ' ' : tokens[t]);
        printf("\n");
    } else {
        int cap = (int)strlen(o->prompt) + 1;
        tokens = xmalloc(sizeof(int) * (size_t)cap);
        n = tokenizer_encode(tok, o->prompt, tokens, cap);
        CHECK(n > 0, "--attention-map: --prompt '%s' encodes to no tokens; give some text", o->prompt);
        for (int t = 0; t < n; t++)
            CHECK(tokens[t] < m->cfg.vocab_size, "--prompt: token %d is outside the model's vocabulary", tokens[t]);
    }
    CHECK(n <= context, "--attention-map: the input has %d tokens, more than the model's context %d; %s", n, context,
          o->task ? "lower --train-max" : "shorten --prompt");
    viz_attention(m, tokens, n, o->attention_map);
    viz_positions(m, context < 256 ? context : 256, o->attention_map);
    free(tokens);
}

int main(int argc, char **argv) {
    Args a;
    parse_args(&a, argc, argv);
    Options *o = &a.o;
    CHECK(!(o->load && o->resume), "give either --load or --resume, not both");
    CHECK(!(o->export_path || o->dump || o->eval_batches) || o->load || o->resume,
          "--export, --dump-step and --eval-batches need the model from --load CKPT (or --resume CKPT)");
    CHECK(!o->attention_map || o->load, "--attention-map needs a trained model: give --load CKPT (a checkpoint "
          "written with --save)");
    CHECK(!o->attention_map || (o->prompt != NULL) != (o->task != NULL), "--attention-map draws attention on one "
          "input: give --prompt TEXT or --task NAME (a test instance of the task), exactly one of them");
    if (o->attention_map) attention_map_dir(o->attention_map);
    check_ppl_flags(&a);
#ifdef _OPENMP
    if (o->threads) omp_set_num_threads(o->threads);
#endif
    if (o->save) check_save_path(o->save);
    Tokenizer tok;
    if (o->tokenizer) tokenizer_load(o->tokenizer, &tok); else tokenizer_bytes(&tok);

    // data first: a new model takes its vocabulary from the tokenizer, else from the data
    // (a --task makes its own byte data; --resume learns its task from the checkpoint below)
    TaskConfig tc = { 0 };
    if (o->task) setup_task(&a, &tc);
    TokenData all = { 0 }, train = { 0 }, val = { 0 }, valfile = { 0 };
    const char *data_name = o->data ? o->data : "the embedded corpus";
    int have_data = !o->task && (o->data || (!o->load && !o->resume));   // --resume may name its data below
    if (have_data) { if (o->data) data_load(o->data, &all); else data_default_corpus(&all); }

    GPT model;
    TrainState st = { 0 };
    char *stored = NULL;      // the checkpoint's train.* lines; --resume's options point into it
    build_model(&a, &model, &st, &stored, o->tokenizer ? tok.n : have_data ? all.vocab_size : 256);
    const GPTConfig *cfg = &model.cfg;
    if (o->load && o->task && stored) { apply_stored_task(&a, stored, o->load); setup_task(&a, &tc); }
    if (o->resume && o->task) setup_task(&a, &tc);
    static const char *task_flags[] = { "train-min", "train-max", "test-max", "distractors", "depths", "eval-per-length", "eval-out", "show" };
    for (size_t i = 0; i < sizeof task_flags / sizeof *task_flags; i++)
        CHECK(o->task || !flag_set(&a, task_flags[i]), "--%s applies to a synthetic task; give --task NAME (./train --help lists them)", task_flags[i]);
    CHECK(!o->task || cfg->vocab_size == 256, "--task %s: the tasks are byte strings but the model's vocabulary is %d", o->task, cfg->vocab_size);
    CHECK(!o->task || !o->eval_batches, "--eval-batches evaluates text; with --task the accuracy is evaluated (--eval-per-length)");
    CHECK(!o->tokenizer || tok.n == cfg->vocab_size, "--tokenizer %s has %d tokens but the model's vocabulary "
          "is %d; use the tokenizer the data was made with", o->tokenizer, tok.n, cfg->vocab_size);
    // --load gives weights to sample, export or dump; it trains only when --steps is given
    if (o->load && !a.set[find_flag("steps") - FLAGS]) o->steps = 0;
    if (o->warmup < 0) o->warmup = o->steps / 10;
    CHECK(!o->resume || o->dump || o->sample || ppl_requested(o) || o->steps > st.step, "--resume: '%s' has already done %lld steps "
          "and --steps is %d; give a larger --steps to train further", o->resume, (long long)st.step, o->steps);
    CHECK(!o->sample || o->tokenizer || cfg->vocab_size == 256, "--sample: the model's vocabulary is %d tokens, "
          "not bytes; pass --tokenizer FILE to encode the prompt and print the sample", cfg->vocab_size);
    Rng rng;
    rng_seed(&rng, (uint64_t)o->seed);
    if (o->resume) rng.s = st.rng;

    if (o->attention_map) {
        attention_map(&model, &tok, o, &tc);
        data_free(&all); tokenizer_free(&tok); gpt_free(&model); free(stored);
        return 0;
    }
    if (o->export_path) {
        export_safetensors(o->export_path, &model);
        fprintf(stderr, "exported %zu parameters to %s\n", model.num_params, o->export_path);
        data_free(&all); tokenizer_free(&tok); gpt_free(&model); free(stored);
        return 0;
    }

    int train_steps = o->dump || o->eval_batches || ppl_requested(o) ? 0 : o->steps - (int)st.step;
    int need_data = o->dump || o->eval_batches || ppl_requested(o) || train_steps > 0;
    if (need_data && !have_data && !o->task) {   // --resume without --data: the stored data path
        if (o->data) data_load(o->data, &all); else data_default_corpus(&all);
        data_name = o->data ? o->data : "the embedded corpus";
    }
    if (need_data && !o->task) {
        check_tokens(&all, cfg->vocab_size, data_name);
        if (o->val_data) {
            data_load(o->val_data, &valfile);
            check_tokens(&valfile, cfg->vocab_size, o->val_data);
            train = all; val = valfile;
        } else {
            data_split(&all, o->val_frac, &train, &val);
        }
        size_t need = (size_t)o->batch * o->seq + 1;
        CHECK(train.n >= need || ((o->eval_batches || ppl_requested(o)) && !o->dump), "%s has %zu training tokens, fewer than --batch %d x --seq %d + 1 = %zu; "
              "use more data or a smaller batch", data_name, train.n, o->batch, o->seq, need);
        CHECK(o->seq <= cfg->max_seq_len || !(o->dump || o->eval_batches || train_steps > 0), "--seq %d is longer than the model's context %d; raise --context",
              o->seq, cfg->max_seq_len);
        size_t eval_need = (size_t)o->eval_batches * o->batch * o->seq + 1;
        CHECK(!o->eval_batches || val.n >= eval_need, "--eval-batches %d: %zu validation tokens are fewer than "
              "%d batches of %d x %d (%zu; no token is counted twice); give --val-data, a larger --val-frac or "
              "fewer batches", o->eval_batches, val.n, o->eval_batches, o->batch, o->seq, eval_need);
        if (train_steps > 0 && val.n < need) {
            if (val.n || o->val_data)
                fprintf(stderr, "warning: %zu validation tokens are fewer than one batch (%zu); no validation loss\n", val.n, need);
            val.n = 0;
        }
    }
    Batch *mb = xcalloc(o->accum, sizeof(Batch));
    if (need_data) for (int k = 0; k < o->accum; k++) batch_alloc(&mb[k], o->batch, o->seq);
    Loader loader = { &train, o->resume ? st.data_pos : 0, o->pack };
    Rng task_rng;                            // a --task's instance stream: the same for every scheme
    rng_seed(&task_rng, (uint64_t)o->seed ^ 0x7A5C0FFEEull);
    if (o->resume && o->task) task_rng.s = st.data_pos;

    if (o->eval_batches) {
        Options eo = *o;
        eo.val_batches = o->eval_batches;
        double loss = evaluate(&model, &val, &eo, &mb[0]);
        printf("eval: loss %.6f (perplexity %.4f) over %d batches of %d x %d validation tokens (model context %d)\n",
               loss, exp(loss), o->eval_batches, o->batch, o->seq, cfg->max_seq_len);
    }
    if (ppl_requested(o)) {
        CHECK(!o->task, "--ppl-out and --ppl-positions evaluate text; '%s' was trained on --task %s", o->resume ? o->resume : o->load, o->task);
        char val_name[4200];
        if (o->val_data) snprintf(val_name, sizeof val_name, "%s", o->val_data);
        else snprintf(val_name, sizeof val_name, "the last %g of %s", o->val_frac, data_name);
        run_perplexity(&model, &val, o, val_name);
    }
    if (o->dump) {
        loader.pos = 0;
        if (o->task) task_fill_batch(&tc, &task_rng, &mb[0]); else loader_next(&loader, &mb[0]);
        dump_step(o->dump, &model, &mb[0]);
        fprintf(stderr, "dumped one step (B=%d, T=%d, loss %.6f) to %s\n", o->batch, o->seq, model.loss, o->dump);
    }

    // ---- training
    char layers[PE_MAX_LAYERS * 24];
    posenc_layer_list(&cfg->pe, layers, sizeof layers);
    if (train_steps > 0) {
        printf("model: %d layers, %d heads, dim %d, context %d, vocab %d | %zu parameters\n",
               cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->max_seq_len, cfg->vocab_size, model.num_params);
        printf("positions: input %s, layers %s\n", cfg->pe.input == PE_NOPE ? "none" : posenc_scheme(cfg->pe.input)->name, layers);
        if (o->task)
            printf("data: task %s, lengths %d-%d (tested to %d), instances packed as documents | batch %d x %d x accum %d | %d steps%s\n",
                   o->task, tc.train_min, tc.train_max, tc.test_max, o->batch, o->seq, o->accum, o->steps, o->resume ? " (resumed)" : "");
        else
            printf("data: %s, %zu train / %zu val tokens | batch %d x %d x accum %d | %d steps%s\n",
                   data_name, train.n, val.n, o->batch, o->seq, o->accum, o->steps, o->resume ? " (resumed)" : "");
#ifdef _OPENMP
        printf("threads: %d\n", omp_get_max_threads());
#endif
    }
    FILE *log = NULL;
    if (o->log && train_steps > 0) {
        // a resumed run appends to its log; a new log starts with the header
        log = fopen(o->log, o->resume ? "a" : "w");
        CHECK(log, "cannot open the log '%s': %s", o->log, strerror(errno));
        if (ftell(log) == 0) fprintf(log, "step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s\n");
    }
    char *kv = train_kv(o);
    AdamWConfig adam = { o->lr, o->beta1, o->beta2, o->eps, o->wd };
    double t0 = now_seconds(), tokens_done = 0;
    for (int step = (int)st.step; train_steps > 0 && step < o->steps; step++) {
        double ts = now_seconds();
        for (int k = 0; k < o->accum; k++) {
            if (o->task) task_fill_batch(&tc, &task_rng, &mb[k]); else loader_next(&loader, &mb[k]);
        }
        double wtotal = 0;      // the step's loss is the mean over every weighted token
        for (int k = 0; k < o->accum; k++)
            for (size_t n = 0; n < (size_t)o->batch * o->seq; n++) wtotal += mb[k].weights[n];
        gpt_zero_grad(&model);
        double loss = 0;
        for (int k = 0; k < o->accum; k++) {
            gpt_forward(&model, &mb[k]);
            loss += model.loss * model.weight_sum / (wtotal > 0 ? wtotal : 1);
            if (wtotal > 0) gpt_backward(&model, 1.0 / wtotal);
        }
        // stop before a diverged step reaches the weights or a checkpoint
        CHECK(isfinite(loss), "the training loss is %g at step %d: training diverged; lower --lr or keep --clip", loss, step + 1);
        double norm = gpt_grad_norm(&model);
        CHECK(isfinite(norm), "the gradient norm is %g at step %d: training diverged; lower --lr", norm, step + 1);
        adam.lr = lr_at(o, step);
        gpt_adamw(&model, &adam, step + 1, gpt_clip_scale(norm, o->clip));   // clipping inside the update
        double dt = now_seconds() - ts;
        tokens_done += (double)o->accum * o->batch * o->seq;
        int last = step + 1 == o->steps;
        double val_loss = NAN;
        if (val.n && ((o->val_every && (step + 1) % o->val_every == 0) || last))
            val_loss = evaluate(&model, &val, o, &mb[0]);
        double elapsed = now_seconds() - t0, tps = tokens_done / elapsed;
        if ((step + 1) % o->log_every == 0 || last || step == (int)st.step || !isnan(val_loss)) {
            char eta[32];
            fmt_duration(elapsed / (step + 1 - (int)st.step) * (o->steps - step - 1), eta, sizeof eta);
            printf("step %5d/%d | loss %.4f", step + 1, o->steps, loss);
            if (!isnan(val_loss)) printf(" | val %.4f", val_loss);
            printf(" | lr %.2e | norm %6.3f | %7.0f tok/s | %4.0f ms | ETA %s\n", adam.lr, norm, tps, dt * 1e3, eta);
            fflush(stdout);
        }
        if (log) {
            fprintf(log, "%d,%.17g,", step + 1, loss);     // 17 digits: the exact double
            if (!isnan(val_loss)) fprintf(log, "%.17g", val_loss);
            fprintf(log, ",%.6e,%.6f,%.1f,%.3f\n", adam.lr, norm, tps, elapsed);
            fflush(log);
        }
        if (o->save && (last || (o->save_every && (step + 1) % o->save_every == 0))) {
            TrainState s = { 1, step + 1, rng.s, o->task ? task_rng.s : loader.pos };
            char path[4096];
            save_path(o->save, step + 1, path, sizeof path);
            ckpt_save(path, &model, kv, &s);
            if (last) printf("saved %s\n", path);
        }
    }
    if (log) fclose(log);
    if (o->task && !o->dump) evaluate_task(&model, &tc, o);

    if (o->sample && !o->dump && !o->eval_batches && !ppl_requested(o)) generate(&model, &tok, o, &rng);

    free(kv);
    if (need_data) for (int k = 0; k < o->accum; k++) batch_free(&mb[k]);
    free(mb);
    data_free(&all);
    if (o->val_data) data_free(&valfile);
    tokenizer_free(&tok);
    gpt_free(&model);
    free(stored);
    return 0;
}
