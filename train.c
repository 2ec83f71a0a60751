// train.c: ./train: the command line (train_options.h) to the model, the data, the one-shot modes
// (export, dump, evaluation, perplexity, attention map), the training loop, then the accuracy of a
// task and sampling. main at the bottom reads as the list of these stages.
//
//   ./train                          train the default tiny model on the embedded corpus
//   ./train --data FILE --pe rope    train on a file with RoPE in every layer
//   ./train --help                   every flag
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "util/atomicfile.h"
#include "eval/attndist.h"
#include "eval/attnstats.h"
#include "nn/bf16.h"
#include "formats/checkpoint.h"
#include "dataset/data.h"
#include "dist/dist.h"
#include "dist/dist_grad.h"
#include "dataset/loader.h"
#include "dataset/tasks.h"
#include "eval/eval.h"
#include "formats/llmc_model.h"
#include "formats/modelfile.h"
#include "model.h"
#include "eval/viz.h"
#include "eval/longrope.h"
#include "eval/perplexity.h"
#include "train_options.h"

// Seed salts: each random stream is seeded by --seed combined with its own salt, so the streams are
// independent of each other and, for one seed, the same whatever the scheme (the fair comparison).
// Sampling (--sample) uses --seed itself. Changing a salt changes the instances drawn: the losses,
// accuracies and checkpoints of every --task run, or the pictures and examples shown.
static const uint64_t TASK_DATA_SALT = 0x7A5C0FFEEull;    // a --task's training instances: seed ^ salt
static const uint64_t SHOW_SALT = 77;                    // --show's examples: seed + salt (+ 1 at the test length)
static const uint64_t ATTENTION_MAP_SALT = 4242;         // --attention-map's task instance: seed + salt
static const uint64_t FIT_SALT = 0xF17F17ull;             // --fit-target's validation instances: (seed ^ salt) + length
static const uint64_t SHUFFLE_SALT = 0x5B0FF1Eull;        // --shuffle's orders of files and windows: seed ^ salt
static const uint64_t DISTANCE_SALT = 0xD157ull;           // --attention-distance's test instances: salt + length

// ----------------------------------------------------------------------------------------------
// helpers

// The learning rate of step `step` (0-based): a linear warm-up to lr over --warmup steps, then a
// decay to lr * min_lr_frac at the last step (step = steps-1), with progress 0 -> 1 after the
// warm-up: cosine, or (--schedule poly) end + (lr - end) (1 - progress)^poly_power, HF's
// polynomial decay (power 1: linear).
static double lr_at(const Options *o, int step) {
    int warm = o->warmup;
    if (step < warm) return o->lr * (step + 1) / warm;
    double progress = o->steps - 1 > warm ? (double)(step - warm) / (o->steps - 1 - warm) : 1.0;
    double floor_lr = o->lr * o->min_lr_frac;
    if (strcmp(o->schedule, "poly") == 0) return floor_lr + (o->lr - floor_lr) * pow(1 - progress, o->poly_power);
    return floor_lr + 0.5 * (o->lr - floor_lr) * (1 + cos(M_PI * progress));
}

// A run resumed from the checkpoint of step `step` appends to its --log; rows past that step are
// those of a run killed after the checkpoint (kill -9, a crash) and are trained again now: they are
// cut from the file first, so every step appears once. A log that does not exist yet is left alone.
static void drop_log_rows_after(const char *path, int step) {
    FILE *f = fopen(path, "r+");
    if (!f) return;
    char line[4096];
    long keep = -1, at = 0;
    while (keep < 0 && fgets(line, sizeof line, f)) {
        int st;
        if (sscanf(line, "%d,", &st) == 1 && st > step) keep = at;   // (the header has no number)
        at = ftell(f);
    }
    if (keep >= 0) {
        CHECK(ftruncate(fileno(f), keep) == 0, "cannot cut the log '%s' back to step %d: %s", path, step, strerror(errno));
        fprintf(stderr, "the log %s had rows past step %d (a run stopped after its checkpoint): cut back to step %d\n",
                path, step, step);
    }
    fclose(f);
}

// --save path with "{step}" replaced by the step number (keeps one checkpoint per save)
static void save_path(const char *pattern, int step, char *out, size_t cap) {
    const char *at = strstr(pattern, "{step}");
    if (!at) { snprintf(out, cap, "%s", pattern); return; }
    snprintf(out, cap, "%.*s%d%s", (int)(at - pattern), pattern, step, at + 6);
}

// The whole global batches of the validation text read in order (each takes ranks x --batch rows
// of --seq tokens and needs one more), at most --val-batches.
static int val_whole_batches(const TokenSet *val, const Options *o, int ranks) {
    uint64_t per = (uint64_t)ranks * o->batch * o->seq, whole = val->n > per ? (val->n - 1) / per : 0;
    return whole < (uint64_t)o->val_batches ? (int)whole : o->val_batches;
}

// The mean loss over the first --val-batches global batches of the validation text, read in order;
// fewer when the text holds fewer whole batches (no token counted twice: prepare_data says so).
// Every rank scores its rows of each global batch, as in training, and the sums are added over the
// ranks: N ranks x B rows validate on the tokens of 1 process x N*B rows. Every rank must call it.
static double evaluate(GPT *m, const TokenSet *val, const Options *o, Batch *b, int rank, int ranks) {
    Loader l = { .d = val, .pack = o->pack, .bos = o->bos };
    double sum = 0, wsum = 0;
    for (int i = 0, nb = val_whole_batches(val, o, ranks); i < nb; i++) {
        loader_next_slice(&l, b, rank, ranks);
        gpt_forward(m, b);
        sum += m->loss * m->weight_sum; wsum += m->weight_sum;
    }
    sum = dist_sum(sum); wsum = dist_sum(wsum);
    return wsum > 0 ? sum / wsum : 0;
}

static void print_piece(const Tokenizer *tok, int id) {
    if (id >= 0 && id < tok->n) fwrite(tok->piece[id], 1, tok->piece_len[id], stdout);
    fflush(stdout);
}

// --sample: the prompt (or end-of-text, or a newline) and o->sample generated tokens (sample_tokens,
// eval/eval.h: the KV cache, started again from the last half of the text when the context is full).
static void emit_piece(void *tok, int token, const real *logits) { (void)logits; print_piece(tok, token); }

static void generate(GPT *m, const Tokenizer *tok, const Options *o, Rng *rng) {
    int V = m->cfg.vocab_size;
    int cap = (int)strlen(o->prompt ? o->prompt : "") + 1;
    int *ctx = xmalloc(sizeof(int) * (size_t)(cap + o->sample + 1));
    int n = o->prompt ? tokenizer_encode(tok, o->prompt, ctx, cap) : 0;
    if (n == 0) ctx[n++] = tok->eot >= 0 ? tok->eot : '\n';   // start from end-of-text or a newline
    for (int i = 0; i < n; i++) CHECK(ctx[i] < V, "--prompt: token %d is outside the model's vocabulary", ctx[i]);
    printf("---- sample (%d tokens, temperature %g, top-k %d) ----\n", o->sample, o->temperature, o->top_k);
    if (o->prompt) fputs(o->prompt, stdout);
    sample_tokens(m, ctx, n, o->sample, o->temperature, o->top_k, rng, emit_piece, (void *)tok);
    printf("\n---- end of sample ----\n");
    free(ctx);
}

// ----------------------------------------------------------------------------------------------

// ---- memory: a model or batch too large for the machine is refused with the sizes it asked for,
// before the allocation, instead of being killed by the kernel (Linux hands out memory it does not
// have and kills the process when the pages are first touched).

// A "kB" field of a /proc file, in bytes; -1 when absent.
static double proc_field(const char *file, const char *key) {
    FILE *f = fopen(file, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    size_t k = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':') { v = 1024 * atof(line + k + 1); break; }
    fclose(f);
    return v;
}

// The bytes this process can still get: MemAvailable + SwapFree (under mpirun: its share, divided
// by the ranks on this machine), or what the address-space limit (ulimit -v, per process) leaves,
// whichever is smaller; *why names it. Infinity when nothing says.
static double memory_available(const char **why) {
    double avail = INFINITY, mem = proc_field("/proc/meminfo", "MemAvailable"), swap = proc_field("/proc/meminfo", "SwapFree");
    *why = "";
    int local = dist_node_size();     // ranks on this machine share its memory, not their address-space limits
    if (mem >= 0) {
        avail = (mem + (swap > 0 ? swap : 0)) / local;
        *why = local > 1 ? "rank's share of the available memory (MemAvailable + SwapFree, over the ranks on this machine)"
                         : "available memory (MemAvailable + SwapFree)";
    }
    struct rlimit rl;
    double used = proc_field("/proc/self/status", "VmSize");
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && used >= 0 && (double)rl.rlim_cur - used < avail) {
        avail = (double)rl.rlim_cur - used;
        *why = "address space left under the limit (ulimit -v)";
    }
    return avail;
}

// Refuses a model of cfg, trained on (B, T) batches when B > 0 (else only its weights and
// gradients), when it cannot fit; `allocated` bytes of it exist already.
static void check_memory(const GPTConfig *cfg, int B, int T, double allocated) {
#ifdef _OPENMP
    int threads = omp_get_max_threads();
#else
    int threads = 1;
#endif
    GPTMemory m = gpt_memory(cfg, B ? B : 1, B ? T : 1, 0, threads);
    double need = m.params + m.grads + (B ? m.adam + m.acts : 0), GiB = 1024.0 * 1024 * 1024;
    const char *why;
    double avail = memory_available(&why);
    if (need - allocated <= avail) return;     // (under ZeRO-1 a rank holds fewer moments: this errs on the safe side)
    char shape[96] = "";
    if (B) snprintf(shape, sizeof shape, ", AdamW moments %.2f, activations %.2f for --batch %d x --seq %d", m.adam / GiB,
                    m.acts / GiB, B, T);
    char share[64] = "";
    if (dist_node_size() > 1 && strstr(why, "share")) snprintf(share, sizeof share, " (1/%d)", dist_node_size());
    CHECK(0, "out of memory: this model%s %.2f GiB (parameters %.2f, gradients %.2f%s; %d layers, dim %d, "
          "vocabulary %d) but the %s is %.2f GiB%s%s; %s", B ? " and batch need" : " needs", need / GiB, m.params / GiB,
          m.grads / GiB, shape, cfg->n_layer, cfg->n_embd, cfg->vocab_size, why, (avail + allocated) / GiB, share,
          allocated > 0 ? " (counting what it holds already)" : "",
          B ? "lower --batch or --seq (--accum keeps the tokens per step), or use a smaller model" : "use a smaller model");
}

// With --load: the settings of how a trained model is run may change: a new --context (not for a
// learned position table, whose size is fixed) and the context-extension settings (--rope-scaling ...).
// With --new-schedule the model loads as it is: those flags are the new schedule's (new_schedule).
static void adjust_loaded(GPTConfig *cfg, void *ctx) {
    Args *a = ctx;
    Options *o = &a->o;
    char msg[512];
    if (o->new_schedule) { check_memory(cfg, 0, 0, 0); return; }
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
    check_memory(cfg, 0, 0, 0);
}

// The positional schedule of the flags (--pe, --pe-layers, --input-pe, the scheme settings) on cfg,
// whose dimensions are set; exits with the flags' problem.
static void schedule_from_flags(const Args *a, GPTConfig *cfg) {
    const Options *o = &a->o;
    char msg[512];
    posenc_defaults(&cfg->pe, cfg->n_layer);
    CHECK(posenc_schedule(&cfg->pe, cfg->n_layer, o->pe, o->pe_layers, o->input_pe, msg, sizeof msg), "%s", msg);
    for (int i = 0; i < a->n_pe; i++) CHECK(posenc_set(&cfg->pe, a->pe_key[i], a->pe_val[i], msg, sizeof msg) > 0, "%s", msg);
    CHECK(gpt_config_check(cfg, msg, sizeof msg), "%s", msg);
}

// A loaded model keeps the positional schedule it was trained with unless --new-schedule asks for
// the flags' one: a schedule flag alone is refused, naming what would be lost.
static void refuse_schedule_flags(const Args *a, const GPT *m, const char *ckpt) {
    char label[PE_MAX_LAYERS * 24];
    posenc_label(&m->cfg.pe, label, sizeof label);
    const PosScheme *table = posenc_fixed_table(&m->cfg.pe);
    for (const char *const *f = SCHEDULE_FLAGS; *f && !a->o.new_schedule; f++) {
        if (!flag_set(a, *f)) continue;
        CHECK(!table, "--%s would give the model of '%s' a new positional schedule, dropping the %s position table it "
              "was trained with; add --new-schedule to do that (README: Importing models)", *f, ckpt, table->name);
        CHECK(0, "--%s would give the model of '%s' a new positional schedule in place of its own (%s); add "
              "--new-schedule to do that (README: Importing models)", *f, ckpt, label);
    }
}

// --new-schedule: the loaded model *m takes the flags' positional schedule. A model built from that
// schedule and --seed (its context: --context, else the loaded one) takes every tensor of *m it has
// by the same name and shape: wte, the blocks and ln_f always, a positional table the two schedules
// share; the positional parameters only it has keep their --seed initialisation, and those only
// *m has (a learned table over a schedule without one) are dropped.
static void new_schedule(const Args *a, GPT *m, const char *ckpt) {
    const Options *o = &a->o;
    GPTConfig cfg = m->cfg;
    if (o->context) cfg.max_seq_len = o->context;
    schedule_from_flags(a, &cfg);
    CHECK(!posenc_fixed_table(&cfg.pe) || !posenc_fixed_table(&m->cfg.pe) || cfg.max_seq_len == m->cfg.max_seq_len,
          "--new-schedule --context %d: the new schedule keeps the %s position table of '%s', which has %d rows and "
          "cannot serve another context", cfg.max_seq_len, posenc_fixed_table(&cfg.pe)->name, ckpt, m->cfg.max_seq_len);
    check_memory(&cfg, 0, 0, 0);
    GPT fresh;
    gpt_build(&fresh, &cfg, (uint64_t)o->seed, 0);
    char fresh_names[1024] = "", dropped[1024] = "";
    for (int i = 0; i < fresh.n_tensors; i++) {
        const TensorInfo *t = &fresh.tensors[i];
        const TensorInfo *had = gpt_find_tensor(m, t->name);
        if (had && had->rows == t->rows && had->cols == t->cols)
            memcpy(fresh.params + t->offset, m->params + had->offset, sizeof(real) * (size_t)t->rows * t->cols);
        else snprintf(fresh_names + strlen(fresh_names), sizeof fresh_names - strlen(fresh_names), " %s", t->name);
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = gpt_find_tensor(&fresh, m->tensors[i].name);
        if (!t || t->rows != m->tensors[i].rows || t->cols != m->tensors[i].cols)
            snprintf(dropped + strlen(dropped), sizeof dropped - strlen(dropped), " %s", m->tensors[i].name);
    }
    char was[PE_MAX_LAYERS * 24], now[PE_MAX_LAYERS * 24];
    posenc_label(&m->cfg.pe, was, sizeof was);
    posenc_label(&cfg.pe, now, sizeof now);
    fprintf(stderr, "--new-schedule: the model of '%s' had positions %s, now %s; dropped:%s; new (from --seed):%s\n",
            ckpt, was, now, *dropped ? dropped : " nothing", *fresh_names ? fresh_names : " nothing");
    gpt_free(m);
    *m = fresh;
}

// The model: from a model file (--load: any format model_load reads; --resume: a checkpoint;
// architecture flags refused, the schedule flags with --new-schedule taken) or from the flags.
// vocab: the vocabulary of a new model (from --tokenizer or the data). Evaluation beyond the
// context extends the position tables later (gpt_reserve_positions).
static void build_model(Args *a, GPT *model, TrainState *st, char **stored, int vocab) {
    Options *o = &a->o;
    const char *ckpt = o->resume ? o->resume : o->load;
    if (ckpt) {
        if (o->resume) ckpt_load(ckpt, model, 0, stored, st, adjust_loaded, a);
        else model_load(ckpt, model, 0, stored, adjust_loaded, a);
        if (o->resume) {
            CHECK(st->has_opt, "--resume: '%s' holds weights only (it was saved without optimiser state); "
                  "use --load to fine-tune from it", ckpt);
            apply_stored(a, *stored, ckpt);
        }
        refuse_schedule_flags(a, model, ckpt);
        refuse_model_flags(a, ckpt);
        if (o->new_schedule) new_schedule(a, model, ckpt);
        return;
    }
    GPTConfig cfg = { .vocab_size = vocab, .n_layer = o->layers, .n_head = o->heads, .n_embd = o->dim,
                      .max_seq_len = o->context ? o->context : o->seq };
    schedule_from_flags(a, &cfg);
    check_memory(&cfg, 0, 0, 0);
    gpt_build(model, &cfg, (uint64_t)o->seed, 0);
}

// The folder an output file goes into: "." for a bare name, "/" for a file at the root.
static void folder_of(const char *path, char *dir, size_t cap) {
    snprintf(dir, cap, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
}

// Refuses an output whose folder cannot take a new file now, rather than after hours of training.
// access(W_OK) is not enough: it says yes to root on a read-only mount or a chmod'ed folder where
// root can write anyway, so this creates (and removes) a file in the folder.
static void check_output_folder(const char *flag, const char *path, const char *dir) {
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.train-probe-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0, "--%s %s: cannot write into the folder '%s': %s; give a writable folder (checked before "
          "anything runs, so a long run does not fail at its end)", flag, path, dir, strerror(errno));
    close(fd);
    unlink(probe);
}

static void check_output_file(const char *flag, const char *path) {
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    check_output_folder(flag, path, dir);
}

// A killed save leaves NAME.tmp (util/atomicfile.h) next to the checkpoints of --save's pattern; a new
// run removes those of its own pattern ({step} matching digits) before it writes any.
static void remove_stale_temporaries(const char *pattern) {
    char dir[4096];
    folder_of(pattern, dir, sizeof dir);
    const char *base = strrchr(pattern, '/') ? strrchr(pattern, '/') + 1 : pattern;
    const char *at = strstr(base, "{step}");
    size_t pre = at ? (size_t)(at - base) : strlen(base);
    const char *post = at ? at + 6 : "";
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        size_t len = strlen(n), post_len = strlen(post);
        if (len < pre + post_len + 4 || strcmp(n + len - 4, ".tmp") || strncmp(n, base, pre)) continue;
        size_t digits = len - 4 - pre - post_len;               // what {step} matched
        if (strncmp(n + pre + digits, post, post_len)) continue;
        int ok = at ? digits > 0 : digits == 0;
        for (size_t i = 0; at && i < digits; i++) ok &= n[pre + i] >= '0' && n[pre + i] <= '9';
        if (!ok) continue;
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        if (unlink(path) == 0) fprintf(stderr, "removed %s, left by an interrupted save\n", path);   // files only
    }
    closedir(d);
}

// ---- interruption: SIGINT (Ctrl-C) or SIGTERM (a scheduler's time limit) during training finish
// the step, save a checkpoint when --save is given, and exit with EXIT_INTERRUPTED; a second
// signal ends the process at once (the default action, so the shell sees the signal).
enum { EXIT_INTERRUPTED = 75 };                   // sysexits' EX_TEMPFAIL: try again (--resume)
static volatile sig_atomic_t interrupted;         // the signal number, 0 while none came

static void on_signal(int sig) {
    if (interrupted) { signal(sig, SIG_DFL); raise(sig); return; }
    interrupted = sig;
    static const char msg[] = "\ntrain: signal received: finishing this step and saving; send it again to stop at once\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

static void catch_signals(int on) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on ? on_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

// ----------------------------------------------------------------------------------------------
// synthetic tasks (--task): the data of a training run and the accuracy after it

// The task settings from the flags (0 / -1 = the task's defaults). A new run without --seq gets
// a sequence twice the longest training instance (rounded up to 32), so rows pack a few instances.
static void setup_task(Args *a, TaskConfig *tc) {
    Options *o = &a->o;
    char msg[512];
    int id = task_find(o->task);
    CHECK(id >= 0, "--task %s is not a task; ./train --help lists them", o->task);
    CHECK(!o->data && !o->val_data, "--task %s generates its own data; drop --data and --val-data", o->task);
    CHECK(!o->pack, "--task packs its instances as separate documents already; drop --pack");
    CHECK(!o->bos, "--bos starts windows of text (--data) with a boundary token; --task instances are separate documents already; drop --bos");
    CHECK(!o->shuffle, "--task draws its instances at random already; --shuffle orders text (--data); drop it");
    task_defaults(tc, id);
    if (o->train_min) tc->train_min = o->train_min;
    if (o->train_max) tc->train_max = o->train_max;
    const TaskInfo *ti = task_info(id);
    if (o->test_max) tc->test_max = o->test_max;                 // default: the task's ratio (2x; retrieval 4x)
    else if (o->train_max) tc->test_max = tc->train_max * (ti->test_max / ti->train_max);
    if (o->distractors >= 0) tc->distractors = o->distractors;
    if (o->depths) tc->n_depths = o->depths;
    if (o->alphabet) tc->alphabet = o->alphabet;                 // task_check refuses it for a task without symbols
    CHECK(task_check(tc, msg, sizeof msg), "%s", msg);
    CHECK(id == task_find("retrieval") || (!flag_set(a, "distractors") && !flag_set(a, "depths")),
          "--distractors and --depths apply to --task retrieval, not %s", o->task);
    CHECK(id == task_find("retrieval") || tc->test_max <= EVAL_MAX_LENGTHS, "--test-max %d: at most %d test "
          "lengths (each length is evaluated)", tc->test_max, EVAL_MAX_LENGTHS);
    for (const char *const *f = (const char *const[]){ "val-frac", "val-every", "val-batches", NULL }; *f; f++)
        CHECK(!flag_set(a, *f), "--%s: a --task has no validation text; its test is the accuracy by length "
              "(--eval-per-length)", *f);
    if (!flag_set(a, "seq") && !o->resume) {
        int need = 2 * task_max_tokens(tc, tc->train_max);
        o->seq = (need + 31) / 32 * 32;
    }
}


// The lengths whose answers are (nearly) all the same: a line naming them, or nothing.
static void print_degenerate(const TaskScore *s, int n) {
    int flagged = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].n < TOP_SHARE_MIN_N || !(s[i].top_share >= TOP_SHARE_FLAG)) continue;
        if (!flagged++) printf("warning: the same greedy answer for >= %.0f%% of the instances (an answer that does not "
                               "depend on the input) at", 100 * TOP_SHARE_FLAG);
        if (s[i].depth >= 0) printf(" len %d depth %.2f (%.0f%%)", s[i].length, s[i].depth, 100 * s[i].top_share);
        else printf(" len %d (%.0f%%)", s[i].length, 100 * s[i].top_share);
    }
    if (flagged) printf("\n");
}

static void print_task_scores(const TaskConfig *tc, const TaskScore *s, int n, int per_length) {
    const TaskInfo *ti = task_info(tc->task);
    printf("accuracy on %s (exact match of the greedy answer, up to %d distinct test instances per bucket; trained on lengths %d-%d):\n",
           ti->name, per_length, tc->train_min, tc->train_max);
    for (int i = 0; i < n; i++) {
        int asked = s[i].n + s[i].skipped;
        if (s[i].depth >= 0) printf("  len %4d depth %.2f %s", s[i].length, s[i].depth, s[i].ood ? "*" : " ");
        else printf("  len %3d%s", s[i].length, s[i].ood ? "*" : " ");
        if (asked) printf(" %5.1f%%", 100.0 * s[i].correct / asked);    // skipped instances count as wrong
        else printf("   none");
        if (s[i].skipped) printf(" (%d past the position table: wrong)", s[i].skipped);
        if ((i + 1) % (s[i].depth >= 0 || s[i].skipped ? 3 : 6) == 0 || i + 1 == n) printf("\n");
    }
    int few = 0;                                                  // buckets with fewer than asked
    for (int i = 0; i < n; i++) {
        if (s[i].n + s[i].skipped >= per_length) continue;
        if (!few++) printf("fewer than %d test instances (all there are):", per_length);
        if (s[i].depth >= 0) printf(" len %d depth %.2f: %d", s[i].length, s[i].depth, s[i].n + s[i].skipped);
        else printf(" len %d: %d", s[i].length, s[i].n + s[i].skipped);
    }
    if (few) printf("\n");
    print_degenerate(s, n);
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
        rng_seed(&rng, seed + SHOW_SALT + k);
        printf("---- %d examples at length %d%s ----\n", count, lengths[k], k ? " (test)" : " (longest trained)");
        for (int i = 0; i < count; i++) {
            int len = task_instance(tc, lengths[k], -1, TASK_TEST, &rng, inst, cap, &np);
            if (!len) break;
            int got = greedy_decode(m, inst, np, len - np, '\n', out);
            int ok = got == len - np;
            for (int t = 0; t < got && ok; t++) ok = out[t] == inst[np + t];
            printf("%s ", ok ? "ok  " : "FAIL");
            task_print_tokens(stdout, inst, np);
            printf(" expected ");
            task_print_tokens(stdout, inst + np, len - 1 - np);
            printf(" got ");
            if (got == 0 || (got == 1 && out[0] == '\n')) printf("(nothing)");
            for (int t = 0; t < got; t++) if (out[t] != '\n') task_print_tokens(stdout, &out[t], 1);
            printf("\n");
        }
        free(inst); free(out);
    }
}

static void evaluate_task(GPT *m, const TaskConfig *tc, const Options *o) {
    gpt_reserve_positions(m, task_max_tokens(tc, tc->test_max));
    if (o->eval_per_length > 0) {
        int cap = EVAL_MAX_LENGTHS * TASK_MAX_DEPTHS;             // lengths x depths, at most
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

// Fit-first training (--fit-target): the exact-match accuracy on validation instances at every
// training length, pooled. The instances are fixed for the run: --fit-per-length distinct ones of
// each length from the validation class, chosen by their own seed (never the training stream, so
// a --resume stays bit-exact).
typedef struct {
    TaskSet *sets;        // (n_sets,) lengths train_min..train_max
    int n_sets, total;    // lengths, instances over all of them
    int *ok;              // (fit_per_length,) one set's results
} FitCheck;

static void fit_init(FitCheck *f, const TaskConfig *tc, const Options *o) {
    f->n_sets = tc->train_max - tc->train_min + 1;
    f->sets = xcalloc((size_t)f->n_sets, sizeof(TaskSet));
    f->total = 0;
    for (int k = 0; k < f->n_sets; k++) {
        int n = tc->train_min + k;
        f->total += task_eval_set(tc, n, -1.0, TASK_VAL, o->fit_per_length, ((uint64_t)o->seed ^ FIT_SALT) + (uint64_t)n,
                                  &f->sets[k]);
    }
    CHECK(f->total > 0, "--fit-target: lengths %d-%d have no validation instance; widen --train-min/--train-max",
          tc->train_min, tc->train_max);
    int few = 0;   // lengths that weigh less in the pooled accuracy than the others
    for (int k = 0; k < f->n_sets; k++) {
        if (f->sets[k].count >= o->fit_per_length) continue;
        if (!few++) printf("fit set: fewer than %d validation instances (all there are):", o->fit_per_length);
        printf(" len %d: %d", tc->train_min + k, f->sets[k].count);
    }
    if (few) printf("; the check pools %d over lengths %d-%d\n", f->total, tc->train_min, tc->train_max);
    f->ok = xmalloc(sizeof(int) * (size_t)o->fit_per_length);
}

// The validation accuracy now; prints the check's line.
static double fit_check(GPT *m, const FitCheck *f, int step) {
    int correct = 0;
    for (int k = 0; k < f->n_sets; k++) correct += task_set_exact_match(m, &f->sets[k], f->ok);
    double acc = (double)correct / f->total;
    printf("fit check: step %d | validation accuracy %.4f (%d/%d)\n", step, acc, correct, f->total);
    return acc;
}

static void fit_free(FitCheck *f) {
    for (int k = 0; k < f->n_sets; k++) task_set_free(&f->sets[k]);
    free(f->sets); free(f->ok);
}

// ----------------------------------------------------------------------------------------------
// perplexity against window length (--ppl-out, --ppl-positions; eval/perplexity.h)

static int ppl_requested(const Options *o) { return o->ppl_out || o->ppl_positions; }
// An evaluation on text instead of training: perplexity, attention statistics, or the LongRoPE
// factor search
static int eval_requested(const Options *o) { return ppl_requested(o) || o->attention_stats || o->longrope_search; }

// The --ppl-* flags, checked before any work: combinations, the window list, the output folders.
static void check_ppl_flags(const Args *a) {
    const Options *o = &a->o;
    static const char *opts[] = { "ppl-windows", "ppl-stride", "ppl-tokens", "ppl-skip" };
    for (int i = 0; i < 4; i++)
        CHECK(ppl_requested(o) || !flag_set(a, opts[i]) || (o->longrope_search && i >= 2), "--%s applies to the perplexity "
              "evaluation; give --ppl-out FILE (or --ppl-positions FILE)%s", opts[i], i >= 2 ? " or --longrope-search PREFIX" : "");
    if (!ppl_requested(o)) return;
    CHECK(o->load || o->resume, "--ppl-out and --ppl-positions need the model from --load CKPT (or --resume CKPT)");
    CHECK(!o->task, "--ppl-out and --ppl-positions evaluate text; they do not apply to --task");
    CHECK(o->ppl_stride > 0, "--ppl-stride %g: the sliding stride is a fraction of the window in (0, 1]", o->ppl_stride);
    double mult[PPL_MAX_WINDOWS];
    char msg[512];
    CHECK(ppl_parse_multiples(o->ppl_windows, mult, PPL_MAX_WINDOWS, msg, sizeof msg), "--ppl-windows %s", msg);
    const char *outs[2] = { o->ppl_out, o->ppl_positions }, *names[2] = { "ppl-out", "ppl-positions" };
    for (int i = 0; i < 2; i++) {
        if (!outs[i]) continue;
        char dir[4096];
        folder_of(outs[i], dir, sizeof dir);
        CHECK(access(dir, W_OK | X_OK) == 0, "--%s %s: cannot write into the folder '%s': %s", names[i], outs[i], dir, strerror(errno));
    }
}

// --ppl-skip: the tokens of the validation text left after the first `skip`; refuses a skip (> 0)
// that leaves fewer than two (one prediction).
static size_t ppl_skip_check(const TokenSet *val, size_t skip, const char *val_name) {
    if (!skip) return val->n;                           // (too little text at all: the callers say so)
    CHECK(skip + 2 <= val->n, "--ppl-skip %zu: the validation text (%s) has %llu tokens, so nothing is left to score; "
          "give a smaller skip, or more text with --val-data FILE or a larger --val-frac", skip, val_name,
          (unsigned long long)val->n);
    return val->n - skip;
}

// "its first N tokens" or, after a skip, "its tokens A..B" (for the first line of the output)
static void ppl_span(size_t skip, size_t N, char *out, size_t cap) {
    if (skip) snprintf(out, cap, "its tokens %zu..%zu", skip, skip + N);
    else snprintf(out, cap, "its first %zu tokens", N);
}

// Scores the first N predictions of the validation text (after --ppl-skip) at every window, prints the table and
// writes the CSV files. val_name: where the text comes from, for messages.
static void run_perplexity(GPT *m, const TokenSet *val, const Options *o, const char *val_name) {
    double mult[PPL_MAX_WINDOWS];
    int W[PPL_MAX_WINDOWS], T = m->cfg.max_seq_len, wmax = 0;
    char msg[512];
    int nw = ppl_parse_multiples(o->ppl_windows, mult, PPL_MAX_WINDOWS, msg, sizeof msg);
    CHECK(nw > 0, "--ppl-windows %s", msg);
    CHECK(ppl_windows(mult, nw, T, W, msg, sizeof msg), "--ppl-windows %s: %s", o->ppl_windows, msg);
    for (int i = 0; i < nw; i++) if (W[i] > wmax) wmax = W[i];
    size_t skip = (size_t)o->ppl_skip, left = ppl_skip_check(val, skip, val_name);
    size_t avail = left ? left - 1 : 0, N = ppl_token_count(left, (size_t)o->ppl_tokens, wmax);
    CHECK(!(o->ppl_tokens && (size_t)o->ppl_tokens > avail), "--ppl-tokens %d: the validation text (%s) has %llu tokens%s, "
          "so %zu predictions; give fewer, or more text with --val-data FILE or a larger --val-frac",
          o->ppl_tokens, val_name, (unsigned long long)left, skip ? " after --ppl-skip" : "", avail);
    CHECK(N > 0 || !o->ppl_tokens, "--ppl-tokens %d is fewer than the largest window, %d tokens (%g x the context %d); "
          "give at least %d or shorter --ppl-windows", o->ppl_tokens, wmax, (double)wmax / T, T, wmax);
    CHECK(N > 0, "the validation text (%s) holds %zu predictions, fewer than the largest window, %d tokens (%g x the "
          "context %d); give more text with --val-data FILE or a larger --val-frac, or shorter --ppl-windows",
          val_name, avail, wmax, (double)wmax / T, T);
    char layers[PE_MAX_LAYERS * 24];
    posenc_layer_list(&m->cfg.pe, layers, sizeof layers);
    char span[96];
    ppl_span(skip, N, span, sizeof span);
    printf("perplexity: model context %d, positions: input %s, layers %s | text: %s, %s scored | "
           "windows of %d..%d tokens\n", T, m->cfg.pe.input == PE_NOPE ? "none" : posenc_scheme(m->cfg.pe.input)->name,
           layers, val_name, span, W[0], wmax);
    PplResult *r = xcalloc((size_t)2 * nw, sizeof(PplResult));
    int *tokens = xmalloc(sizeof(int) * (N + 1));            // the N + 1 tokens scored: read once, in memory
    data_read(val, skip, N + 1, tokens);
    ppl_run(m, tokens, N, W, nw, o->ppl_stride, PPL_BATCH_TOKENS, r, stdout);
    free(tokens);
    ppl_print_table(stdout, r, nw, T, N, o->ppl_stride);
    if (o->ppl_out) { ppl_write_csv(o->ppl_out, r, 2 * nw); printf("wrote %s\n", o->ppl_out); }
    if (o->ppl_positions) { ppl_write_positions(o->ppl_positions, r, 2 * nw); printf("wrote %s\n", o->ppl_positions); }
    for (int i = 0; i < 2 * nw; i++) ppl_result_free(&r[i]);
    free(r);
}

// ----------------------------------------------------------------------------------------------
// LongRoPE's factor search (--longrope-search; eval/longrope.h)

// The --longrope-* flags, checked before any work
static void check_longrope_flags(const Args *a) {
    const Options *o = &a->o;
    static const char *opts[] = { "longrope-population", "longrope-generations" };
    for (int i = 0; i < 2; i++)
        CHECK(o->longrope_search || !flag_set(a, opts[i]), "--%s applies to the factor search; give --longrope-search PREFIX", opts[i]);
    if (!o->longrope_search) return;
    CHECK(o->load, "--longrope-search searches the factors of a trained RoPE model: give --load CKPT");
    CHECK(!o->task, "--longrope-search scores perplexity on text; it does not apply to --task");
    CHECK(!ppl_requested(o) && !o->eval_batches && !o->dump && !o->attention_stats, "--longrope-search runs alone; "
          "evaluate its lists in another run (--ppl-out with --longrope-short PREFIX.short --longrope-long PREFIX.long)");
    CHECK(!o->bos, "--longrope-search scores perplexity windows, which do not start with a boundary token, so --bos "
          "does not apply; drop it");
}

static void run_longrope_search(GPT *m, const TokenSet *val, const Options *o, const char *val_name) {
    int sw, lw;
    char msg[512];
    CHECK(longrope_windows(m, &sw, &lw, msg, sizeof msg), "--longrope-search: %s", msg);
    size_t skip = (size_t)o->ppl_skip, left = ppl_skip_check(val, skip, val_name), avail = left ? left - 1 : 0;
    size_t want = o->ppl_tokens ? (size_t)o->ppl_tokens : avail < LONGROPE_DEFAULT_TOKENS ? avail : LONGROPE_DEFAULT_TOKENS;
    size_t N = ppl_token_count(left, want, lw);
    CHECK(!(o->ppl_tokens && (size_t)o->ppl_tokens > avail), "--ppl-tokens %d: the validation text (%s) has %zu "
          "predictions%s; give fewer, or more text with --val-data FILE or a larger --val-frac", o->ppl_tokens, val_name,
          avail, skip ? " after --ppl-skip" : "");
    CHECK(N > 0, "--longrope-search: %zu tokens of the validation text (%s) are fewer than one long window of %d tokens "
          "(--rope-factor x L0); give more with --ppl-tokens, --val-data or --val-frac", want, val_name, lw);
    LongropeSearch ls = { .population = o->longrope_population, .generations = o->longrope_generations,
                          .seed = (uint64_t)o->seed, .batch_tokens = PPL_BATCH_TOKENS };
    char span[96];
    ppl_span(skip, N, span, sizeof span);
    printf("longrope search: model context %d | %s, %s scored | windows of %d (long list) and %d (short "
           "list) | population %d, %d generations, seed %lld\n", m->cfg.max_seq_len, val_name, span, lw, sw, ls.population,
           ls.generations, o->seed);
    int *tokens = xmalloc(sizeof(int) * (N + 1));
    data_read(val, skip, N + 1, tokens);
    LongropeResult r;
    longrope_search(m, tokens, N, &ls, &r, stdout);
    free(tokens);
    longrope_write(o->longrope_search, &r);
    printf("long list: ppl %.4f at windows of %d (the seeds' best %.4f)\nshort list: ppl %.4f at windows of %d (the "
           "seeds' best %.4f)\nwrote %s.short and %s.long (--longrope-short and --longrope-long read them)\n",
           exp(r.long_loss), lw, exp(r.long_start), exp(r.short_loss), sw, exp(r.short_start), o->longrope_search,
           o->longrope_search);
}

// ----------------------------------------------------------------------------------------------
// attention statistics over windows of text (--attention-stats; eval/attnstats.h)

// The --attention-* flags and --collapse-threshold, checked before any work.
static void check_astats_flags(const Args *a) {
    const Options *o = &a->o;
    static const char *opts[] = { "attention-lengths", "attention-windows", "collapse-threshold" };
    for (int i = 0; i < 3; i++)
        CHECK(o->attention_stats || !flag_set(a, opts[i]), "--%s applies to the attention statistics; give "
              "--attention-stats FILE", opts[i]);
    if (!o->attention_stats) return;
    CHECK(o->load || o->resume, "--attention-stats needs the model from --load CKPT (or --resume CKPT)");
    CHECK(!o->task, "--attention-stats measures windows of text; it does not apply to --task (text models only)");
    CHECK(o->collapse_threshold > 0, "--collapse-threshold %g: a head's mean first-key mass is compared with a "
          "threshold in (0, 1]", o->collapse_threshold);
    double mult[PPL_MAX_WINDOWS];
    char msg[512];
    CHECK(ppl_parse_multiples(o->attention_lengths, mult, PPL_MAX_WINDOWS, msg, sizeof msg), "--attention-lengths %s", msg);
}

// The statistics at every window length over the first windows of the validation text; prints the
// table and writes the CSV. val_name: where the text comes from, for messages.
static void run_attention_stats(GPT *m, const TokenSet *val, const Options *o, const char *val_name) {
    double mult[PPL_MAX_WINDOWS];
    int W[PPL_MAX_WINDOWS], T = m->cfg.max_seq_len, nwin = o->attention_windows, bos = o->bos ? loader_bos_token(val) : -1;
    char msg[512];
    int nw = ppl_parse_multiples(o->attention_lengths, mult, PPL_MAX_WINDOWS, msg, sizeof msg);
    CHECK(nw > 0, "--attention-lengths %s", msg);
    CHECK(ppl_windows(mult, nw, T, W, msg, sizeof msg), "--attention-lengths %s: %s", o->attention_lengths, msg);
    size_t need = 0;
    int wmax = 0;
    for (int i = 0; i < nw; i++) {
        CHECK(W[i] >= 2, "--attention-lengths %s: %g x the context %d is a window of %d token; the statistics need at "
              "least 2 (row 0 is not averaged)", o->attention_lengths, mult[i], T, W[i]);
        size_t n = astats_tokens_needed(W[i], nwin, bos);
        if (n > need && ppl_window_ok(m, W[i], NULL, 0)) { need = n; wmax = W[i]; }
    }
    CHECK(val->n >= need, "--attention-stats: %d windows of up to %d tokens need %zu tokens of text, but the validation "
          "text (%s) has %llu; give fewer --attention-windows, shorter --attention-lengths, or more text with --val-data "
          "FILE or a larger --val-frac", nwin, wmax, need, val_name, (unsigned long long)val->n);
    char layers[PE_MAX_LAYERS * 24];
    posenc_layer_list(&m->cfg.pe, layers, sizeof layers);
    printf("attention statistics: model context %d, positions: input %s, layers %s | text: %s, %d windows per length%s\n",
           T, m->cfg.pe.input == PE_NOPE ? "none" : posenc_scheme(m->cfg.pe.input)->name, layers, val_name, nwin,
           bos >= 0 ? ", each opened by the boundary token (--bos)" : "");
    int *tokens = xmalloc(sizeof(int) * (need ? need : 1));
    data_read(val, 0, need, tokens);
    AStatsResult *r = xcalloc((size_t)nw, sizeof(AStatsResult));
    for (int i = 0; i < nw; i++) {
        if (!ppl_window_ok(m, W[i], r[i].note, sizeof r[i].note)) {
            r[i].window = W[i]; r[i].L = m->cfg.n_layer; r[i].NH = m->cfg.n_head;
            printf("attention: window %d: no number, %s\n", W[i], r[i].note);
            continue;
        }
        astats_evaluate(m, tokens, W[i], nwin, bos, &r[i]);
        printf("attention: window %5d: %d windows (%.1f s)\n", W[i], nwin, r[i].seconds);
        fflush(stdout);
    }
    free(tokens);
    astats_print_table(stdout, r, nw, T, o->collapse_threshold);
    astats_write_csv(o->attention_stats, r, nw, o->collapse_threshold);
    printf("wrote %s\n", o->attention_stats);
    for (int i = 0; i < nw; i++) astats_result_free(&r[i]);
    free(r);
}

// --attention-map DIR: the folder, created when only its last part is missing.
static void attention_map_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        CHECK(S_ISDIR(sb.st_mode), "--attention-map %s: that is a file, not a folder; give a folder for the pictures", dir);
        check_output_folder("attention-map", dir, dir);
        return;
    }
    CHECK(mkdir(dir, 0777) == 0, "--attention-map %s: cannot create the folder: %s (its parent folder must exist)",
          dir, strerror(errno));
}

// --attention-map: every head's attention on one input (the --prompt, or a test instance of --task
// at its longest training length, --train-max) and the positional signal over the model's context
// (at most 256 positions), as data, gnuplot scripts and PNG (eval/viz.h).
static void attention_map(GPT *m, const Tokenizer *tok, const Options *o, const TaskConfig *tc) {
    int n, *tokens, context = m->cfg.max_seq_len;
    if (o->task) {
        int cap = task_max_tokens(tc, tc->train_max), np;
        tokens = xmalloc(sizeof(int) * (size_t)cap);
        Rng r;
        rng_seed(&r, (uint64_t)o->seed + ATTENTION_MAP_SALT);
        n = task_instance(tc, tc->train_max, -1, TASK_TEST, &r, tokens, cap, &np);
        CHECK(n > 0, "--attention-map: --task %s has no test instance of length %d; pick another length with --train-max",
              o->task, tc->train_max);
        printf("input: a %s test instance of length %d (--train-max): ", o->task, tc->train_max);
        task_print_tokens(stdout, tokens, n - 1);                 // without its end marker
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

// --attention-distance FILE --distance-to B: the NoPE paper's attention distance (eval/attndist.h) of the
// --load model (A) to B, on --distance-per-length distinct test instances at every test length (the
// same instances for every pair of models: they depend on the task and the length only), each layer
// averaged over the instances of the training lengths ("in") and of the longer ones ("longer").
static void check_distance_flags(const Args *a) {
    const Options *o = &a->o;
    CHECK(o->attention_distance || (!o->distance_to && !flag_set(a, "distance-per-length")), "--distance-to and "
          "--distance-per-length apply to the attention distance; give --attention-distance FILE");
    if (!o->attention_distance) return;
    CHECK(o->load && o->task && o->distance_to, "--attention-distance FILE compares two models trained on a task: give "
          "--load A.ckpt --task NAME --distance-to B.ckpt");
}

static void run_attention_distance(GPT *m, const TaskConfig *tc, const Options *o) {
    GPT other = { 0 };
    char *stored = NULL;
    model_load(o->distance_to, &other, 0, &stored, NULL, NULL);
    free(stored);
    int L = m->cfg.n_layer;
    CHECK(other.cfg.n_layer == L, "--distance-to %s: it has %d layers and --load %s has %d; the distance compares layer "
          "by layer", o->distance_to, other.cfg.n_layer, o->load, L);
    CHECK(other.cfg.vocab_size == m->cfg.vocab_size, "--distance-to %s: its vocabulary is %d tokens, --load %s's %d; "
          "train both on the same task (and --alphabet)", o->distance_to, other.cfg.vocab_size, o->load, m->cfg.vocab_size);
    int lengths[EVAL_MAX_LENGTHS];
    int nl = task_test_lengths(tc, lengths, EVAL_MAX_LENGTHS);
    double depths[TASK_MAX_DEPTHS], *sum = xcalloc((size_t)2 * L, sizeof(double)), *d = xmalloc(sizeof(double) * (size_t)L);
    task_test_depths(tc, depths, TASK_MAX_DEPTHS);
    long count[2] = { 0, 0 }, skipped = 0;
    int limit = gpt_position_limit(m) < gpt_position_limit(&other) ? gpt_position_limit(m) : gpt_position_limit(&other);
    for (int k = 0; k < nl; k++) {
        TaskSet set;
        int n = task_eval_set(tc, lengths[k], depths[0], TASK_TEST, o->distance_per_length, DISTANCE_SALT + (uint64_t)lengths[k], &set);
        int split = lengths[k] > tc->train_max;
        for (int i = 0; i < n; i++) {
            int T = set.len[i];
            if (T > limit) { skipped++; continue; }
            attention_distance(m, &other, set.tokens + (size_t)i * set.stride, T, d);
            for (int l = 0; l < L; l++) sum[split * L + l] += d[l];
            count[split]++;
        }
        task_set_free(&set);
    }
    CHECK(count[0] + count[1] > 0, "--attention-distance: no test instance fits both models' positions (%d)", limit);
    AtomicFile af;
    FILE *f = af_open(&af, o->attention_distance, "attention distance CSV", "w");
    fprintf(f, "layer,split,instances,jsd\n");
    printf("attention distance (JSD, nats; each of A's heads to B's nearest head) of %s to %s, %d test instances per length:\n",
           o->load, o->distance_to, o->distance_per_length);
    printf("  layer | lengths <= %d (%ld instances) | longer (%ld)\n", tc->train_max, count[0], count[1]);
    for (int l = 0; l < L; l++) {
        printf("  %5d |", l);
        for (int sp = 0; sp < 2; sp++) {
            if (!count[sp]) { printf(" %s", sp ? "-" : "- |"); continue; }
            double v = sum[sp * L + l] / (double)count[sp];
            fprintf(f, "%d,%s,%ld,%.9f\n", l, sp ? "longer" : "in", count[sp], v);
            printf(sp ? " %.4f" : " %.4f |", v);
        }
        printf("\n");
    }
    if (skipped) printf("  (%ld instances longer than a model's %d positions left out)\n", skipped, limit);
    af_commit(&af);
    printf("wrote %s\n", o->attention_distance);
    free(sum); free(d);
    gpt_free(&other);
}

// ----------------------------------------------------------------------------------------------
// main's stages, in the order they run:
//   check_flags -> load_inputs -> load_model -> check_with_model -> seed_streams
//   -> model_only_modes (--attention-map, --export: then exit)
//   -> prepare_data -> data_modes (--eval-batches, --ppl-*, --dump-step) -> train -> after_training

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
    int rank, ranks;                             // under mpirun: this process's rank of `ranks` (dist/dist.h)
    DistGrad dg;                                 // the gradients' reduction across ranks
    Batch task_rows;                             // a --task's global micro-batch (ranks x --batch rows)
} Session;

// Flag combinations that need neither the model nor the data, refused before any work.
static void check_flags(const Args *a) {
    const Options *o = &a->o;
    CHECK(!(o->load && o->resume), "give either --load or --resume, not both");
    CHECK(!(o->export_path || o->export_llmc || o->dump || o->eval_batches) || o->load || o->resume,
          "--export, --export-llmc, --dump-step and --eval-batches need the model from --load CKPT (or --resume CKPT)");
    CHECK(!o->new_schedule || o->load, "--new-schedule gives the model of --load FILE a new positional schedule; give "
          "--load (--resume continues the same run)");
    CHECK(!o->new_schedule || o->pe || o->pe_layers || o->input_pe, "--new-schedule: give the new positional schedule "
          "with --pe, --pe-layers or --input-pe");
    CHECK(!o->attention_map || o->load, "--attention-map needs a trained model: give --load CKPT (a checkpoint "
          "written with --save)");
    CHECK(!o->attention_map || (o->prompt != NULL) != (o->task != NULL), "--attention-map draws attention on one "
          "input: give --prompt TEXT or --task NAME (a test instance of the task), exactly one of them");
    if (o->attention_map) attention_map_dir(o->attention_map);
    check_ppl_flags(a);
    check_longrope_flags(a);
    check_astats_flags(a);
    check_distance_flags(a);
    const struct { const char *flag, *path; } outputs[] = {
        { "save", o->save }, { "log", o->log }, { "eval-out", o->eval_out }, { "ppl-out", o->ppl_out },
        { "attention-stats", o->attention_stats }, { "attention-distance", o->attention_distance },
        { "ppl-positions", o->ppl_positions }, { "export", o->export_path }, { "export-llmc", o->export_llmc },
        { "dump-step", o->dump }, { "longrope-search", o->longrope_search },
    };
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
        if (outputs[i].path) check_output_file(outputs[i].flag, outputs[i].path);
}

// The tokenizer, the task and the text. Data come before the model: a new model takes its
// vocabulary from the tokenizer, else from the data (a --task makes its own byte data; --resume
// learns its task and its data from the checkpoint, in load_model and prepare_data).
static void load_inputs(Session *s) {
    const Options *o = s->o;
    if (o->tokenizer) tokenizer_load(o->tokenizer, &s->tok); else tokenizer_bytes(&s->tok);
    if (o->task) setup_task(&s->a, &s->tc);
    s->data_name = o->data ? o->data : "the embedded corpus";
    s->have_data = !o->task && (o->data || (!o->load && !o->resume));   // --resume may name its data below
    if (s->have_data) { if (o->data) data_open(o->data, &s->all); else data_default_corpus(&s->all); }
}

// The model (from a checkpoint or the flags), then the task settings a checkpoint holds.
static void load_model(Session *s) {
    const Options *o = s->o;
    int vocab = o->task ? task_vocab(&s->tc) : o->tokenizer ? s->tok.n : s->have_data ? s->all.vocab_size : 256;
    const char *tok_before = o->tokenizer;
    build_model(&s->a, &s->model, &s->st, &s->stored, vocab);
    // --resume restores a stored --tokenizer (its end of text is the documents' boundary): read it now
    if (o->tokenizer && o->tokenizer != tok_before) { tokenizer_free(&s->tok); tokenizer_load(o->tokenizer, &s->tok); }
    if (o->load && o->task && s->stored) { apply_stored_task(&s->a, s->stored, o->load); setup_task(&s->a, &s->tc); }
    if (o->load && s->stored) read_stored(&s->a, s->stored, o->load);   // (cuts s->stored up: its last use)
    if (o->resume && o->task) setup_task(&s->a, &s->tc);
}

// --fit-target and its settings (stored values included, on --resume): a task, a budget
// (--max-steps) instead of --steps, and no fit setting without a target.
static void check_fit_flags(const Session *s) {
    const Options *o = s->o;
    const Args *a = &s->a;
    CHECK(!flag_set(a, "fit-target") || o->fit_target > 0, "--fit-target %g: the validation accuracy to reach is in (0, 1]",
          o->fit_target);
    CHECK(o->fit_target == 0 || o->max_steps > 0, "--fit-target needs --max-steps N: the budget of steps to fit in");
    CHECK(o->max_steps == 0 || o->fit_target > 0, "--max-steps is the budget of --fit-target; without a target give --steps");
    CHECK(!(flag_set(a, "steps") && o->max_steps > 0), "--steps and --max-steps: with --fit-target the budget is --max-steps; "
          "drop --steps");
    for (const char *const *f = (const char *const[]){ "fit-every", "fit-per-length", NULL }; *f; f++)
        CHECK(o->fit_target > 0 || !flag_set(a, *f), "--%s applies to fit-first training; give --fit-target A", *f);
}

// The checks that need the model (its vocabulary, the steps a --resume has done); then the step
// count and the warm-up are final.
static void check_with_model(Session *s) {
    Options *o = s->o;
    const GPTConfig *cfg = &s->model.cfg;
    static const char *task_flags[] = { "train-min", "train-max", "test-max", "distractors", "depths", "alphabet",
                                        "eval-per-length", "eval-out", "show", "fit-target" };
    for (size_t i = 0; i < sizeof task_flags / sizeof *task_flags; i++)
        CHECK(o->task || !flag_set(&s->a, task_flags[i]), "--%s applies to a synthetic task; give --task NAME (./train --help lists them)", task_flags[i]);
    CHECK(!o->task || cfg->vocab_size == task_vocab(&s->tc), "--task %s: its tokens need a vocabulary of %d (256 bytes and "
          "the symbols past 'z' of --alphabet %d) but the model's is %d; give the --alphabet it was trained with "
          "(vocabulary 256 + N - 26)", o->task, task_vocab(&s->tc), s->tc.alphabet, cfg->vocab_size);
    check_fit_flags(s);
    CHECK(!o->task || !o->eval_batches, "--eval-batches evaluates text; with --task the accuracy is evaluated (--eval-per-length)");
    CHECK(!o->tokenizer || s->tok.n == cfg->vocab_size, "--tokenizer %s has %d tokens but the model's vocabulary "
          "is %d; use the tokenizer the data was made with", o->tokenizer, s->tok.n, cfg->vocab_size);
    // --load gives weights to sample, export or dump; it trains only when --steps is given
    if (o->load && !flag_set(&s->a, "steps")) o->steps = 0;
    if (o->fit_target > 0) o->steps = o->max_steps;              // the budget: the schedule spans it
    CHECK(!strcmp(o->schedule, "cosine") || !strcmp(o->schedule, "poly"), "--schedule %s: give cosine or poly", o->schedule);
    CHECK(!flag_set(&s->a, "poly-power") || !strcmp(o->schedule, "poly"), "--poly-power applies to --schedule poly");
    CHECK(!(flag_set(&s->a, "warmup") && flag_set(&s->a, "warmup-frac")), "give either --warmup N or --warmup-frac F, not both");
    // (less 1e-9: 0.07 x 100 is 7.000000000000001 in doubles, and ceil would make it 8)
    if (flag_set(&s->a, "warmup-frac")) o->warmup = (int)ceil(o->warmup_frac * o->steps - 1e-9);
    if (o->warmup < 0) o->warmup = o->steps / 10;
    CHECK(!o->resume || o->dump || o->sample || eval_requested(o) || o->steps > s->st.step, "--resume: '%s' has already done %lld steps "
          "and --steps is %d; give a larger --steps (--max-steps with --fit-target) to train further", o->resume, (long long)s->st.step, o->steps);
    CHECK(!o->detect_anomaly || (o->steps > s->st.step && !o->dump && !o->eval_batches && !eval_requested(o) &&
          !o->attention_map && !o->export_path && !o->export_llmc), "--detect-anomaly checks training steps and this run trains none; "
          "give --steps N (with --load) or drop the flag");
    CHECK(!strcmp(o->precision, "fp32") || !strcmp(o->precision, "bf16"), "--precision %s: give fp32 or bf16", o->precision);
    gpt_set_bf16(&s->model, !strcmp(o->precision, "bf16"));
    if (s->model.bf16) bf16_path();            // a PEGPT_BF16_PATH the CPU cannot run stops here, before any work
    char msg[512];
    CHECK(!o->export_llmc || !llmc_unsupported(&s->model, msg, sizeof msg), "--export-llmc %s: %s", o->export_llmc, msg);
    CHECK(!o->sample || o->tokenizer || cfg->vocab_size == 256, "--sample: the model's vocabulary is %d tokens, "
          "not bytes; pass --tokenizer FILE to encode the prompt and print the sample", cfg->vocab_size);
}

// The random streams, from --seed (sampling) and --seed ^ TASK_DATA_SALT (task instances), or
// where a --resume left them.
static void seed_streams(Session *s) {
    const Options *o = s->o;
    rng_seed(&s->rng, (uint64_t)o->seed);
    if (o->resume) s->rng.s = s->st.rng;
    rng_seed(&s->task_rng, (uint64_t)o->seed ^ TASK_DATA_SALT);
    if (o->resume && o->task) s->task_rng.s = s->st.data_pos;
}

// --attention-map, --export and --export-llmc need the model only; returns 1 when one of them ran.
static int model_only_modes(Session *s) {
    const Options *o = s->o;
    if (o->attention_map) {
        attention_map(&s->model, &s->tok, o, &s->tc);
        return 1;
    }
    if (o->attention_distance) {
        run_attention_distance(&s->model, &s->tc, o);
        return 1;
    }
    if (o->export_path || o->export_llmc) {
        if (o->export_path) {
            export_safetensors(o->export_path, &s->model);
            fprintf(stderr, "exported %zu parameters to %s\n", s->model.num_params, o->export_path);
        }
        if (o->export_llmc) {
            llmc_export(o->export_llmc, &s->model);
            fprintf(stderr, "exported %zu parameters to %s (llm.c GPT-2 model, version 3)\n", s->model.num_params, o->export_llmc);
        }
        return 1;
    }
    return 0;
}

// A shard set's document token is its kind's (GPT-2's 50256, Llama-3's 128000) unless --tokenizer
// gives another: shards ./tokenize encode wrote with a vocabulary of its own (./tokenize train) open
// each document with that vocabulary's end of text, which --pack must take as the boundary.
static void use_tokenizer_eot(const Session *s, TokenSet *set) {
    if (s->o->tokenizer && s->tok.eot >= 0 && set->kind != DATA_BYTES) set->eot = s->tok.eot;
}

// Text: the training and validation tokens (--val-data, or the last --val-frac of the data),
// checked against the model (every token inside its vocabulary: data_check_vocab reads the data
// once, in chunks, when its kind can hold a token past it) and the batch shape.
// --load of a checkpoint trained on the same data with a smaller --val-frac: the validation part now
// begins inside what it trained on (--load restores no training setting), which a warning says.
static void warn_trained_tokens(const Session *s) {
    const Options *o = s->o, *was = &s->a.stored;
    if (!o->load || !s->a.has_stored) return;
    int same = o->data && was->data ? !strcmp(o->data, was->data) : !o->data && !was->data;   // or the embedded corpus both times
    if (same && o->val_frac > was->val_frac)
        fprintf(stderr, "warning: '%s' was trained on %s with --val-frac %g; --val-frac %g scores the last %g of it, of "
                "which the first %g were trained on; give --val-frac %g (or less) to score held-out tokens only\n",
                o->load, s->data_name, was->val_frac, o->val_frac, o->val_frac, o->val_frac - was->val_frac, was->val_frac);
}

static void split_text(Session *s) {
    const Options *o = s->o;
    int vocab = s->model.cfg.vocab_size, context = s->model.cfg.max_seq_len;
    data_check_vocab(&s->all, vocab);
    use_tokenizer_eot(s, &s->all);
    if (o->val_data) {
        data_open(o->val_data, &s->valfile);
        CHECK(s->valfile.kind == s->all.kind, "--val-data %s holds %s, but the training data (%s) %s: a loss over token "
              "ids of another kind means nothing; give validation data of the training data's kind (./tokenize it with "
              "the same tokenizer)", o->val_data, data_kind_name(s->valfile.kind), s->data_name, data_kind_name(s->all.kind));
        data_check_vocab(&s->valfile, vocab);
        use_tokenizer_eot(s, &s->valfile);
        s->train = s->all; s->val = s->valfile;
    } else {
        data_split(&s->all, o->val_frac, &s->train, &s->val);
        warn_trained_tokens(s);
    }
    const TokenSet *sets[2] = { &s->train, &s->val };
    for (int k = 0; k < 2 && o->bos; k++) {
        int bos = loader_bos_token(sets[k]);
        CHECK(bos >= 0, "--bos: the %s data (%s) have no boundary token (no end of text, and not bytes); drop --bos",
              k ? "validation" : "training", k && o->val_data ? o->val_data : s->data_name);
        CHECK(bos < vocab, "--bos: the boundary token %d is outside the model's vocabulary (0..%d)", bos, vocab - 1);
    }
    // a step reads every rank's rows: ranks x --batch rows of --seq, one token more in order
    uint64_t rows = (uint64_t)s->ranks * o->batch, need = rows * o->seq + 1, n = s->train.n;
    int reads = o->dump || s->train_steps > 0;                    // the training stream is read
    char per_rank[64] = "";
    if (s->ranks > 1) snprintf(per_rank, sizeof per_rank, "%d ranks x ", s->ranks);
    CHECK(n >= need || !reads, "%s has %llu training tokens, fewer than %s--batch %d x --seq %d + 1 = %llu; use more data "
          "or a smaller batch", s->data_name, (unsigned long long)n, per_rank, o->batch, o->seq, (unsigned long long)need);
    Loader shuffled = { .d = &s->train, .shuffle = 1 };
    uint64_t windows = o->shuffle && reads ? loader_rows(&shuffled, o->seq) : 0;
    CHECK(!o->shuffle || !reads || windows >= rows, "--shuffle: the training files of %s hold %llu windows of "
          "--seq %d + 1 tokens (a window lies inside one file), fewer than %s--batch %d; use more data, or a smaller --seq "
          "or --batch", s->data_name, (unsigned long long)windows, o->seq, per_rank, o->batch);
    CHECK(o->seq <= context || !(o->dump || o->eval_batches || s->train_steps > 0), "--seq %d is longer than the model's context %d; raise --context",
          o->seq, context);
    uint64_t eval_need = (uint64_t)o->eval_batches * o->batch * o->seq + 1;
    CHECK(!o->eval_batches || s->val.n >= eval_need, "--eval-batches %d: %llu validation tokens are fewer than "
          "%d batches of %d x %d (%llu; no token is counted twice); give --val-data, a larger --val-frac or "
          "fewer batches", o->eval_batches, (unsigned long long)s->val.n, o->eval_batches, o->batch, o->seq,
          (unsigned long long)eval_need);
    uint64_t val_need = (uint64_t)s->ranks * o->batch * o->seq + 1;   // one global batch, shared by the ranks
    if (s->train_steps > 0 && s->val.n < val_need) {
        if (s->val.n || o->val_data)
            fprintf(stderr, "warning: %llu validation tokens are fewer than one batch (%llu); no validation loss\n",
                    (unsigned long long)s->val.n, (unsigned long long)val_need);
        s->val.n = 0;
    }
    int whole = s->val.n ? val_whole_batches(&s->val, o, s->ranks) : 0;
    if (s->train_steps > 0 && s->val.n && whole < o->val_batches)
        fprintf(stderr, "warning: %llu validation tokens hold %d whole batches of %d x %d, fewer than --val-batches %d; the "
                "validation loss reads those %d (no token counted twice)\n", (unsigned long long)s->val.n, whole, s->ranks * o->batch,
                o->seq, o->val_batches, whole);
}

// The training stream: from the start, or where a --resume left it (refused when the data are not
// the ones the run was trained on: another size or number of files, or a position outside them).
static void start_stream(Session *s) {
    const Options *o = s->o;
    const TrainState *st = &s->st;
    s->loader = (Loader){ .d = &s->train, .pack = o->pack, .bos = o->bos, .shuffle = o->shuffle, .seed = (uint64_t)o->seed ^ SHUFFLE_SALT };
    if (!o->resume || o->task || !s->need_data) return;
    CHECK(!st->data_tokens || (st->data_tokens == s->train.n && st->data_files == (uint64_t)s->train.n_files),
          "--resume: '%s' was trained on %llu tokens in %llu files, but the training data now (%s) hold %llu tokens in %d "
          "files; resume with the data (and --val-frac) the run was trained on", o->resume,
          (unsigned long long)st->data_tokens, (unsigned long long)st->data_files, s->data_name,
          (unsigned long long)s->train.n, s->train.n_files);
    // the stored position means a token offset in order, or a window of the permutation drawn from
    // --seed over windows of --seq + 1 tokens when shuffled: another reading would go on silently
    // with windows read twice or never
    const Options *was = &s->a.stored;
    CHECK(was->shuffle == o->shuffle, "--resume: '%s' read its text %s; resuming it %s would take its place in the "
          "stream for another kind of position; drop --shuffle (or start a new run)", o->resume,
          was->shuffle ? "shuffled" : "in order", o->shuffle ? "shuffled" : "in order");
    CHECK(!o->shuffle || (was->seed == o->seed && was->seq == o->seq), "--resume: '%s' reads its text shuffled, in an "
          "order drawn from --seed %lld over windows of --seq %d; --seed %lld --seq %d would go on in another order, "
          "reading windows twice or never; drop --seed and --seq", o->resume, was->seed, was->seq, o->seed, o->seq);
    s->loader.pos = (StreamPos){ st->data_epoch, st->data_shard, st->data_pos };
    loader_check_pos(&s->loader, o->seq, o->resume);
}

// What training and the data-reading modes need: the steps left, the text (loaded now when
// --resume named it), the micro-batches and the text stream (where a --resume left it).
static void prepare_data(Session *s) {
    const Options *o = s->o;
    s->train_steps = o->dump || o->eval_batches || eval_requested(o) ? 0 : o->steps - (int)s->st.step;
    s->need_data = o->dump || o->eval_batches || eval_requested(o) || s->train_steps > 0;
    // a checkpoint or a loss log of a run that trains nothing would silently not be written
    CHECK(s->train_steps > 0 || (!o->save && !o->log), "--save and --log keep what training steps make, and this run "
          "trains none (%s); drop them, or give --steps N to train", o->dump || o->eval_batches || eval_requested(o) ?
          "it evaluates" : o->load ? "--load trains only with --steps" : "--steps 0");
    if (s->need_data && !s->have_data && !o->task) {   // --resume without --data: the stored data path
        if (o->data) data_open(o->data, &s->all); else data_default_corpus(&s->all);
        s->data_name = o->data ? o->data : "the embedded corpus";
    }
    if (s->need_data && !o->task) split_text(s);
    s->mb = xcalloc(o->accum, sizeof(Batch));
    if (s->need_data) for (int k = 0; k < o->accum; k++) batch_alloc(&s->mb[k], o->batch, o->seq);
    if (s->need_data && o->task && s->ranks > 1) batch_alloc(&s->task_rows, o->batch * s->ranks, o->seq);
    if (!o->task) start_stream(s);
}

// --eval-batches, --ppl-out/--ppl-positions and --dump-step: evaluations of the model on data
// (training is skipped when one is given).
static void data_modes(Session *s) {
    const Options *o = s->o;
    if (o->eval_batches) {
        Options eo = *o;
        eo.val_batches = o->eval_batches;
        double loss = evaluate(&s->model, &s->val, &eo, &s->mb[0], 0, 1);   // one process (check_ranks)
        printf("eval: loss %.6f (perplexity %.4f) over %d batches of %d x %d validation tokens (model context %d)\n",
               loss, exp(loss), o->eval_batches, o->batch, o->seq, s->model.cfg.max_seq_len);
    }
    if (ppl_requested(o)) {
        CHECK(!o->task, "--ppl-out and --ppl-positions evaluate text; '%s' was trained on --task %s", o->resume ? o->resume : o->load, o->task);
        CHECK(!o->bos, "--ppl-out and --ppl-positions: the perplexity windows do not start with a boundary token, so "
              "--bos%s does not apply; evaluate with --load CKPT and without --bos", o->resume && !flag_set(&s->a, "bos") ?
              " (stored in the checkpoint)" : "");
        char val_name[4200];
        if (o->val_data) snprintf(val_name, sizeof val_name, "%s", o->val_data);
        else snprintf(val_name, sizeof val_name, "the last %g of %s", o->val_frac, s->data_name);
        run_perplexity(&s->model, &s->val, o, val_name);
    }
    if (o->longrope_search) {
        char val_name[4200];
        if (o->val_data) snprintf(val_name, sizeof val_name, "%s", o->val_data);
        else snprintf(val_name, sizeof val_name, "the last %g of %s", o->val_frac, s->data_name);
        run_longrope_search(&s->model, &s->val, o, val_name);
    }
    if (o->attention_stats) {
        CHECK(!o->task, "--attention-stats measures windows of text; '%s' was trained on --task %s", o->resume ? o->resume : o->load, o->task);
        char val_name[4200];
        if (o->val_data) snprintf(val_name, sizeof val_name, "%s", o->val_data);
        else snprintf(val_name, sizeof val_name, "the last %g of %s", o->val_frac, s->data_name);
        run_attention_stats(&s->model, &s->val, o, val_name);
    }
    if (o->dump) {
        s->loader.pos = (StreamPos){ 0 };
        if (o->task) task_fill_batch(&s->tc, &s->task_rng, &s->mb[0]); else loader_next(&s->loader, &s->mb[0]);
        dump_step(o->dump, &s->model, &s->mb[0]);
        fprintf(stderr, "dumped one step (B=%d, T=%d, loss %.6f) to %s\n", o->batch, o->seq, s->model.loss, o->dump);
    }
}

// The lines a training run starts with: the model, its positions, the data, the threads.
static void print_setup(const Session *s) {
    const Options *o = s->o;
    const GPTConfig *cfg = &s->model.cfg;
    char layers[PE_MAX_LAYERS * 24];
    posenc_layer_list(&cfg->pe, layers, sizeof layers);
    printf("model: %d layers, %d heads, dim %d, context %d, vocab %d | %zu parameters\n",
           cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->max_seq_len, cfg->vocab_size, s->model.num_params);
    printf("positions: input %s, layers %s\n", cfg->pe.input == PE_NOPE ? "none" : posenc_scheme(cfg->pe.input)->name, layers);
    if (o->task) {
        char alphabet[48] = "";
        if (s->tc.alphabet) snprintf(alphabet, sizeof alphabet, ", alphabet %d", s->tc.alphabet);
        printf("data: task %s, lengths %d-%d (tested to %d)%s, instances packed as documents | batch %d x %d x accum %d | %d steps%s\n",
               o->task, s->tc.train_min, s->tc.train_max, s->tc.test_max, alphabet, o->batch, o->seq, o->accum, o->steps,
               o->resume ? " (resumed)" : "");
        if (o->fit_target > 0)
            printf("fit-first: until validation accuracy >= %.4f at lengths %d-%d (%d instances per length), checked every "
                   "%d steps, within %d steps\n", o->fit_target, s->tc.train_min, s->tc.train_max, o->fit_per_length,
                   o->fit_every, o->steps);
    } else {
        char files[160] = "";
        if (s->train.n_files > 1 || o->shuffle)
            snprintf(files, sizeof files, " (%d file%s of %s%s)", s->train.n_files, s->train.n_files > 1 ? "s" : "",
                     data_kind_name(s->train.kind), o->shuffle ? ", shuffled every epoch" : "");
        printf("data: %s%s, %llu train / %llu val tokens | batch %d x %d x accum %d | %d steps%s\n", s->data_name, files,
               (unsigned long long)s->train.n, (unsigned long long)s->val.n, o->batch, o->seq, o->accum, o->steps,
               o->resume ? " (resumed)" : "");
    }
    if (o->dropout > 0 || strcmp(o->schedule, "cosine")) {      // (a run with the defaults prints no such line)
        printf("training: dropout %g | lr %g, %d warm-up steps, %s decay to %g", o->dropout, o->lr, o->warmup,
               o->schedule, o->lr * o->min_lr_frac);
        if (!strcmp(o->schedule, "poly")) printf(" (power %g)", o->poly_power);
        printf("\n");
    }
    if (s->model.bf16)
        printf("precision: bf16 operands, fp32 sums in the linear layers (path %s: %s)\n", bf16_path_name(bf16_path()),
               bf16_path_reason());
#ifdef _OPENMP
    if (s->ranks > 1)
        printf("ranks: %d x %d threads | global batch %d x %d rows x accum %d%s\n", s->ranks, omp_get_max_threads(),
               s->ranks, o->batch, o->accum, o->zero ? " | ZeRO-1: AdamW moments sharded over the ranks" : "");
    else printf("threads: %d\n", omp_get_max_threads());
#endif
}

// --detect-anomaly: the first NaN or Inf of the model's last checked call stops the run, named
static void stop_on_anomaly(const GPT *m, int step) {
    CHECK(!m->anomaly.found, "anomaly at step %d: %s (--detect-anomaly)", step + 1, m->anomaly.msg);
}

// One optimiser step over accum micro-batches (gradients accumulated); returns the step's loss,
// the mean over every weighted token, and the gradient norm before clipping in *norm. A diverged
// step stops the run before it reaches the weights or a checkpoint.
static double train_step(Session *s, int step, AdamWConfig *adam, double *norm) {
    const Options *o = s->o;
    Batch *mb = s->mb;
    // each rank's rows of the step's global micro-batches (ranks x --batch rows each): the rows one
    // process with ranks x --batch rows would read, whatever the number of ranks
    for (int k = 0; k < o->accum; k++) {
        if (o->task) task_fill_slice(&s->tc, &s->task_rng, &mb[k], &s->task_rows, s->rank, s->ranks);
        else loader_next_slice(&s->loader, &mb[k], s->rank, s->ranks);
    }
    double wtotal = 0;
    for (int k = 0; k < o->accum; k++)
        for (size_t n = 0; n < (size_t)o->batch * o->seq; n++) wtotal += mb[k].weights[n];
    wtotal = dist_sum(wtotal);                  // the loss is the mean over every rank's tokens
    gpt_zero_grad(&s->model);
    gpt_set_detect_anomaly(&s->model, o->detect_anomaly);   // validation and evaluation are not checked
    double loss = 0;
    for (int k = 0; k < o->accum; k++) {
        // --dropout: masks from (--seed, step, micro-batch), so a resumed run drops what this one did
        gpt_set_dropout(&s->model, o->dropout, gpt_dropout_key((uint64_t)o->seed, step, k));
        gpt_set_dropout_rows(&s->model, (uint64_t)s->rank * o->batch);   // this rank's rows of the global batch
        gpt_forward(&s->model, &mb[k]);
        stop_on_anomaly(&s->model, step);
        loss += s->model.loss * s->model.weight_sum / (wtotal > 0 ? wtotal : 1);
        // under mpirun the last backward reduces each block's gradients across the ranks as it
        // finishes the block (dist/dist.h); the earlier micro-batches only accumulate
        if (k == o->accum - 1 && wtotal > 0) dist_grad_arm(&s->dg);
        if (wtotal > 0) gpt_backward(&s->model, 1.0 / wtotal);
        stop_on_anomaly(&s->model, step);
    }
    gpt_set_dropout(&s->model, 0, 0);          // validation and everything after training never drop
    loss = dist_sum(loss);
    CHECK(isfinite(loss), "the training loss is %g at step %d: training diverged; lower --lr or keep --clip", loss, step + 1);
    if (wtotal > 0) dist_grad_wait(&s->dg);
    else dist_grad_none(&s->dg);                 // no backward ran: a zero gradient on every path
    *norm = dist_grad_norm(&s->dg);
    CHECK(isfinite(*norm), "the gradient norm is %g at step %d: training diverged; lower --lr", *norm, step + 1);
    adam->lr = lr_at(o, step);
    dist_adamw(&s->dg, adam, step + 1, gpt_clip_scale(*norm, o->clip));   // clipping inside the update
    stop_on_anomaly(&s->model, step);
    gpt_set_detect_anomaly(&s->model, 0);
    return loss;
}

// What a checkpoint after `steps` steps stores to resume: the steps, the sampling RNG and the data
// position: a --task run's instance stream's state; for text, the stream's place and the training
// data's size.
static TrainState train_state(const Session *s, int steps) {
    TrainState st = { .has_opt = 1, .step = steps, .rng = s->rng.s, .data_pos = s->task_rng.s };
    if (s->o->task) return st;
    const StreamPos *p = &s->loader.pos;
    st.data_pos = p->offset;
    st.data_epoch = p->epoch;
    st.data_shard = p->shard;
    st.data_tokens = s->train.n;
    st.data_files = (uint64_t)s->train.n_files;
    return st;
}

// After a signal (catch_signals): the step is finished and, with --save, checkpointed; say how to
// go on and exit with EXIT_INTERRUPTED (without --save, 128 + the signal, as if it had killed us).
static void interrupt_exit(Session *s, int step, FILE *log, char *kv) {
    const Options *o = s->o;
    int sig = interrupted ? interrupted : SIGTERM;   // under mpirun another rank may have seen it
    const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    if (log) fclose(log);
    free(kv);
    if (!o->save) {
        printf("interrupted by %s after step %d of %d: nothing saved (no --save)\n", name, step, o->steps);
        fflush(stdout);
        dist_finalize();
        exit(128 + sig);
    }
    char path[4096], cmd[8192];
    save_path(o->save, step, path, sizeof path);
    resume_command(&s->a, s->prog, path, cmd, sizeof cmd);
#ifdef _OPENMP
    // the same losses, bit for bit, need the same thread count
    if (!flag_set(&s->a, "threads")) snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " --threads %d", omp_get_max_threads());
#endif
    printf("interrupted by %s after step %d of %d: checkpoint %s; continue with:\n  %s%s\n", name, step, o->steps, path,
           s->ranks > 1 ? "mpirun -np N " : "", cmd);
    fflush(stdout);
    dist_finalize();
    exit(EXIT_INTERRUPTED);
}

// The training loop: a step, then the validation loss (every --val-every steps and at the end),
// the progress line, the --log row and the checkpoints (--save, --save-every).
static void train(Session *s) {
    const Options *o = s->o;
    if (s->train_steps <= 0) return;
    GPTMemory held = gpt_memory(&s->model.cfg, 1, 1, 0, 1);       // the weights and gradients exist
    check_memory(&s->model.cfg, o->batch, o->seq, held.params + held.grads);
    print_setup(s);
    dist_grad_init(&s->dg, &s->model, o->zero);
    dist_moments_shard(&s->dg);                 // --zero 1 after --resume: this rank's slice of the moments
    int writer = s->rank == 0;                  // rank 0 alone writes the log and the checkpoints
    FILE *log = NULL;
    if (o->log && writer) {
        // a resumed run appends to its log; a new log starts with the header
        if (o->resume) drop_log_rows_after(o->log, (int)s->st.step);
        log = fopen(o->log, o->resume ? "a" : "w");
        CHECK(log, "cannot open the log '%s': %s", o->log, strerror(errno));
        if (ftell(log) == 0) fprintf(log, "step,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s\n");
    }
    if (o->save && writer) remove_stale_temporaries(o->save);
    catch_signals(1);
    char *kv = train_kv(o);
    AdamWConfig adam = { o->lr, o->beta1, o->beta2, o->eps, o->wd };
    int first = (int)s->st.step, done = first, fitted = 0;
    FitCheck fit = { 0 };
    double fit_acc = NAN;
    if (o->fit_target > 0 && writer) fit_init(&fit, &s->tc, o);
    double t0 = now_seconds(), tokens_done = 0, step_s = 0;
    if (o->detect_anomaly) { gpt_check_parameters(&s->model); stop_on_anomaly(&s->model, first); }   // the weights it starts from
    for (int step = first; step < o->steps; step++) {
        double ts = now_seconds(), norm;
        double loss = train_step(s, step, &adam, &norm);
        double dt = now_seconds() - ts;
        step_s += dt;
        tokens_done += (double)o->accum * o->batch * o->seq * s->ranks;    // every rank's tokens
        done = step + 1;
        int last = step + 1 == o->steps;
        if (o->fit_target > 0 && ((step + 1) % o->fit_every == 0 || last)) {
            if (writer) fit_acc = fit_check(&s->model, &fit, step + 1);   // rank 0 decides, every rank stops
            dist_bcast(&fit_acc, sizeof fit_acc);
            fitted = fit_acc >= o->fit_target;
            if (fitted) last = 1;                                 // it ends here, as at the last step
        }
        double val_loss = NAN;
        if (s->val.n && ((o->val_every && (step + 1) % o->val_every == 0) || last))   // on every rank
            val_loss = evaluate(&s->model, &s->val, o, &s->mb[0], s->rank, s->ranks);
        if (o->verify_ranks) dist_check_same(s->model.params, sizeof(real) * s->model.num_params, "the parameters");
        double elapsed = now_seconds() - t0, tps = tokens_done / elapsed;
        if ((step + 1) % o->log_every == 0 || last || step == first || !isnan(val_loss)) {
            char eta[32];
            fmt_duration(elapsed / (step + 1 - first) * (o->steps - step - 1), eta, sizeof eta);
            printf("step %5d/%d | loss %.4f", step + 1, o->steps, loss);
            if (!isnan(val_loss)) printf(" | val %.4f", val_loss);
            printf(" | lr %.2e | norm %6.3f | %7.0f tok/s | %4.0f ms | ETA %s\n", adam.lr, norm, tps, dt * 1e3, eta);
            fflush(stdout);
        }
        if (log) {
            fprintf(log, "%d,%.17g,", step + 1, loss);     // 17 digits: the exact double
            if (!isnan(val_loss)) fprintf(log, "%.17g", val_loss);
            fprintf(log, ",%.6e,%.6f,%.1f,%.3f\n", adam.lr, norm, tps, elapsed);
            // a full disk: stop now, with the checkpoints written so far intact, not an hour later
            CHECK(fflush(log) == 0 && !ferror(log), "could not write the log '%s' at step %d: %s; it holds the steps "
                  "before, and the checkpoints written so far are intact", o->log, step + 1, strerror(errno));
        }
        // the step is done: stop here (a fitted run ends anyway); under mpirun every rank stops at
        // the step where the first of them saw the signal
        int stop = dist_any(interrupted) && !fitted && !last;      // a run past its last step finishes
        if (o->save && (last || stop || (o->save_every && (step + 1) % o->save_every == 0))) {
            TrainState st = train_state(s, step + 1);
            char path[4096];
            save_path(o->save, step + 1, path, sizeof path);
            dist_moments_gather(&s->dg);        // --zero 1: the moments' slices, whole on rank 0
            if (writer) ckpt_save(path, &s->model, kv, &st);
            dist_moments_release(&s->dg);
            if (last || stop) printf("saved %s\n", path);
        }
        if (stop) interrupt_exit(s, step + 1, log, kv);
        if (fitted) break;
    }
    catch_signals(0);
    // the ranks trained one model: checked once at the end (every step with --verify-ranks)
    dist_check_same(s->model.params, sizeof(real) * s->model.num_params, "the parameters");
    if (s->ranks > 1) printf("ranks: %d, parameters bit-identical on every rank; rank 0 waited %.2f s of its %.2f s of "
                             "steps (%.1f%%) for communication\n", s->ranks, s->dg.wait_s, step_s,
                             step_s > 0 ? 100 * s->dg.wait_s / step_s : 0.0);
    dist_grad_free(&s->dg);
    if (o->fit_target > 0) {
        if (fitted) printf("fit: fitted at step %d: validation accuracy %.4f >= %.4f\n", done, fit_acc, o->fit_target);
        else printf("fit: not fitted in %d steps: validation accuracy %.4f < %.4f\n", o->steps, fit_acc, o->fit_target);
        fit_free(&fit);
    }
    if (log) fclose(log);
    free(kv);
}

// After training (or with --load alone): a --task's accuracy by length, and the --sample text.
static void after_training(Session *s) {
    const Options *o = s->o;
    if (o->task && !o->dump) evaluate_task(&s->model, &s->tc, o);
    if (o->sample && !o->dump && !o->eval_batches && !eval_requested(o)) generate(&s->model, &s->tok, o, &s->rng);
}

static void session_free(Session *s) {
    if (s->need_data) for (int k = 0; k < s->o->accum; k++) batch_free(&s->mb[k]);
    if (s->task_rows.B) batch_free(&s->task_rows);
    free(s->mb);
    data_close(&s->all);
    data_close(&s->valfile);
    tokenizer_free(&s->tok);
    gpt_free(&s->model);
    free(s->stored);
}

// Under mpirun with more than one rank, the modes that evaluate or write a model once are refused:
// they run in one process.
static void check_ranks(const Session *s) {
    const Options *o = s->o;
    if (s->ranks == 1) return;
    CHECK(!(o->attention_map || o->attention_distance || o->export_path || o->export_llmc || o->dump || o->eval_batches || eval_requested(o)),
          "--attention-map, --export, --export-llmc, --dump-step, --eval-batches, --ppl-out, --ppl-positions, "
          "--attention-stats and --longrope-search run in one process: run them without mpirun (or with -np 1)");
    CHECK(!o->detect_anomaly, "--detect-anomaly runs in one process: run it without mpirun (or with -np 1)");
}

int main(int argc, char **argv) {
    static Session s;                            // static: starts zeroed
    dist_init(&argc, &argv);                     // MPI first (make MPI=1); one rank of one otherwise
    s.rank = dist_rank();
    s.ranks = dist_size();
    parse_args(&s.a, argc, argv);
    s.o = &s.a.o;
    s.prog = argv[0];
    // past a file-size limit (ulimit -f) a write fails with EFBIG and is reported (util/atomicfile.h);
    // the default action of SIGXFSZ would kill the process without a word
    signal(SIGXFSZ, SIG_IGN);
    check_flags(&s.a);
    check_ranks(&s);
#ifdef _OPENMP
    if (s.o->threads) omp_set_num_threads(s.o->threads);
#endif
    load_inputs(&s);
    load_model(&s);
    check_with_model(&s);
    seed_streams(&s);
    if (!model_only_modes(&s)) {
        prepare_data(&s);
        data_modes(&s);
        train(&s);
        if (s.rank == 0) after_training(&s);    // rank 0 alone evaluates and samples
    }
    session_free(&s);
    dist_finalize();
    return 0;
}
