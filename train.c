// train.c: ./train, one run. main (at the bottom) calls the stages in the order they run; each is a
// function here or in a train_*.c file beside it (train.h says which file holds what):
//   check_flags -> load_inputs -> load_model -> check_with_model -> seed_streams
//   -> model_only_modes (--attention-map, --attention-distance, --export: then exit; train_modes.c)
//   -> prepare_data -> data_modes (--eval-batches, --ppl-*, --dump-step; train_modes.c)
//   -> train (the training loop, below train_step) -> after_training (a --task's accuracy, --sample)
//
//   ./train                          train the default tiny model on the embedded corpus
//   ./train --data FILE --pe rope    train on a file with RoPE in every layer
//   ./train --help                   every flag
#include <errno.h>
#include <math.h>
#include <string.h>
#include <signal.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "nn/bf16.h"
#include "nn/kernels.h"
#include "formats/checkpoint.h"
#include "dataset/data.h"
#include "mpi/dist.h"
#include "mpi/dist_grad.h"
#include "dataset/loader.h"
#include "dataset/tasks.h"
#include "formats/llmc_model.h"
#include "formats/modelfile.h"
#include "eval/eval.h"
#include "model.h"
#include "train_options.h"
#include "train.h"

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
double evaluate(GPT *m, const TokenSet *val, const Options *o, Batch *b, int rank, int ranks) {
    Loader l = { .d = val, .pack = o->pack, .bos = o->bos };
    double sum = 0, wsum = 0;
    for (int i = 0, nb = val_whole_batches(val, o, ranks); i < nb; i++) {
        loader_next_slice(&l, b, rank, ranks);
        gpt_forward(m, b, NULL);
        eval_stop_on_anomaly(m, "the validation loss");
        sum += m->state.loss * m->state.weight_sum; wsum += m->state.weight_sum;
    }
    sum = dist_sum(sum); wsum = dist_sum(wsum);
    return wsum > 0 ? sum / wsum : 0;
}

// ----------------------------------------------------------------------------------------------
// the model: from the flags, or from a model file (--load, --resume) with the settings that may change

// A scheme setting's key ("rope_base") as its flag's name ("rope-base"), into buf
static void setting_flag(const char *key, char *buf, size_t cap) {
    size_t k = 0;
    for (; key[k] && k + 1 < cap; k++) buf[k] = key[k] == '_' ? '-' : key[k];
    buf[k] = 0;
}

// With --load: the settings of how a trained model is run may change: a new --context (not for a
// learned position table, whose size is fixed) and the context-extension settings (--rope-scaling ...).
// With --new-schedule the model loads as it is: those flags are the new schedule's (new_schedule).
static void adjust_loaded(GPTConfig *cfg, void *ctx) {
    Args *a = ctx;
    Options *o = &a->o;
    char msg[512];
    // --new-schedule: the flags are the new schedule's (new_schedule); --continue: they are checked
    // against the model (continue_check_model)
    if (o->new_schedule || a->continuing) { check_memory(cfg, 0, 0, 0); return; }
    if (a->set[find_flag("context") - FLAGS] && o->context != cfg->max_seq_len) {
        CHECK(!o->resume, "--context %d differs from the context %d of the checkpoint; --resume continues "
              "the same run (use --load to change the context)", o->context, cfg->max_seq_len);
        CHECK(!posenc_fixed_table(&cfg->pe), "--context %d: the model's %s position table has %d rows and cannot "
              "serve another context", o->context, posenc_scheme(cfg->pe.input)->name, cfg->max_seq_len);
        cfg->max_seq_len = o->context;
    }
    for (int i = 0; i < a->n_pe; i++) {
        char flag[64];
        setting_flag(a->pe_key[i], flag, sizeof flag);
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
        CHECK(!a->o.resume, "--%s: --resume continues the run of '%s' with its own positional schedule (%s); to train "
              "it with another, --load it with --new-schedule", *f, ckpt, label);
        CHECK(!table, "--%s would give the model of '%s' a new positional schedule, dropping the %s position table it "
              "was trained with; add --new-schedule to do that (docs/formats.md: Importing models)", *f, ckpt, table->name);
        CHECK(0, "--%s would give the model of '%s' a new positional schedule in place of its own (%s); add "
              "--new-schedule to do that (docs/formats.md: Importing models)", *f, ckpt, label);
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
    for (int i = 0; i < fresh.weights.n_tensors; i++) {
        const TensorInfo *t = &fresh.weights.tensors[i];
        const TensorInfo *had = gpt_find_tensor(m, t->name);
        if (had && had->rows == t->rows && had->cols == t->cols)
            memcpy(fresh.weights.params + t->offset, m->weights.params + had->offset, sizeof(real) * (size_t)t->rows * t->cols);
        else snprintf(fresh_names + strlen(fresh_names), sizeof fresh_names - strlen(fresh_names), " %s", t->name);
    }
    for (int i = 0; i < m->weights.n_tensors; i++) {
        const TensorInfo *t = gpt_find_tensor(&fresh, m->weights.tensors[i].name);
        if (!t || t->rows != m->weights.tensors[i].rows || t->cols != m->weights.tensors[i].cols)
            snprintf(dropped + strlen(dropped), sizeof dropped - strlen(dropped), " %s", m->weights.tensors[i].name);
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
            if (a->continuing) CHECK(a->continued_kv = strdup(*stored), "out of memory");
            apply_stored(a, *stored, ckpt);
        }
        if (a->continuing) {              // the model the flags describe must be the one stored
            GPTConfig want = { .vocab_size = model->cfg.vocab_size, .n_layer = o->layers, .n_head = o->heads,
                               .n_embd = o->dim, .max_seq_len = o->context ? o->context : o->seq };
            schedule_from_flags(a, &want);
            continue_check_model(&want, &model->cfg, ckpt);
            return;
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

// ----------------------------------------------------------------------------------------------
// main's stages, in the order they run (the list at the top of the file)

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
    check_mode_flags(a);
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

// The checks that need the model (its vocabulary, the steps a --resume has done); then the step
// count and the warm-up are final.
static void check_with_model(Session *s) {
    Options *o = s->o;
    const GPTConfig *cfg = &s->model.cfg;
    check_task_flags(s);
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
    CHECK(!o->resume || s->a.continuing || o->dump || o->sample || eval_requested(o) || o->steps > s->st.step, "--resume: '%s' has already done %lld steps "
          "and --steps is %d; give a larger --steps (--max-steps with --fit-target) to train further", o->resume, (long long)s->st.step, o->steps);
    // checked: the training steps and the evaluations (--eval-batches, perplexity, attention
    // statistics, LongRoPE's search, a task's accuracy, sampling through the KV cache)
    CHECK(!o->detect_anomaly || !(o->dump || o->attention_map || o->attention_distance || o->export_path || o->export_llmc),
          "--detect-anomaly checks training steps and evaluations; --dump-step, --attention-map, --attention-distance, "
          "--export and --export-llmc are not checked: drop the flag");
    CHECK(!o->detect_anomaly || o->steps > s->st.step || o->eval_batches || eval_requested(o) || o->sample || o->task,
          "--detect-anomaly checks training steps and evaluations, and this run has neither; give --steps N (with --load), "
          "an evaluation or --sample, or drop the flag");
    CHECK(!strcmp(o->precision, "fp32") || !strcmp(o->precision, "bf16"), "--precision %s: give fp32 or bf16", o->precision);
    // a scheme setting the model reads (else it would change nothing); LongRoPE's search reads the
    // extension settings without a --rope-scaling and checks its model itself
    for (int i = 0; i < s->a.n_pe && !o->longrope_search; i++) {
        const char *reader = posenc_setting_unused(&cfg->pe, s->a.pe_key[i]);
        char flag[64], label[PE_MAX_LAYERS * 24];
        setting_flag(s->a.pe_key[i], flag, sizeof flag);
        if (reader) posenc_label(&cfg->pe, label, sizeof label);
        CHECK(!reader, "--%s is read only with %s, which this model does not have (its positions: %s): it would "
              "change nothing; drop it", flag, reader, label);
    }
    // a run must do something (--save and --log without training have their own message, prepare_data)
    CHECK(o->steps > s->st.step || s->a.continuing || o->dump || o->eval_batches || eval_requested(o) || o->sample ||
          (o->task && o->eval_per_length > 0) || o->attention_map || o->attention_distance || o->export_path ||
          o->export_llmc || o->save || o->log, "nothing to do: the run trains no step (--steps %d%s) and asks for no "
          "evaluation, sample or export; give --steps N, --sample N, --eval-batches N, --ppl-out, a --task's "
          "--eval-per-length or --export", o->steps, o->load ? ", the default with --load" : "");
    // the training's own settings on a run that trains nothing would change nothing (a --continue
    // given after the last step tests again with the run's flags: those are not refused)
    int trains = o->steps > s->st.step && !(o->dump || o->eval_batches || eval_requested(o) || o->attention_map ||
                                           o->attention_distance || o->export_path || o->export_llmc);
    static const char *const training_only[] = { "lr", "min-lr-frac", "schedule", "poly-power", "warmup", "warmup-frac",
        "wd", "beta1", "beta2", "eps", "clip", "dropout", "accum", "select-every", NULL };
    for (const char *const *f = training_only; *f && !trains && !s->a.continuing; f++)
        CHECK(!flag_set(&s->a, *f), "--%s shapes training, and this run trains no step%s: it would change nothing; drop "
              "it", *f, o->load && !flag_set(&s->a, "steps") ? " (with --load, give --steps N to train)" : "");
    gpt_set_bf16(&s->model, !strcmp(o->precision, "bf16"));
    if (s->model.state.bf16) bf16_path();            // a PEGPT_BF16_PATH the CPU cannot run stops here, before any work
    char msg[512];
    CHECK(!o->export_llmc || !llmc_unsupported(&s->model, msg, sizeof msg), "--export-llmc %s: %s", o->export_llmc, msg);
    CHECK(!o->sample || o->tokenizer || cfg->vocab_size == 256, "--sample: the model's vocabulary is %d tokens, "
          "not bytes; pass --tokenizer FILE to encode the prompt and print the sample", cfg->vocab_size);
}

// The random streams, from --seed (sampling) and the data seed ^ TASK_DATA_SALT (task instances), or
// where a --resume left them.
static void seed_streams(Session *s) {
    const Options *o = s->o;
    rng_seed(&s->rng, (uint64_t)o->seed);
    if (o->resume) s->rng.s = s->st.rng;
    rng_seed(&s->task_rng, data_seed(o) ^ TASK_DATA_SALT);
    if (o->resume && o->task) s->task_rng.s = s->st.data_pos;
}

// A shard set's document token is its kind's (GPT-2's 50256, Llama-3's 128000) unless --tokenizer
// gives another: shards ./tokenize encode wrote with a vocabulary of its own (./tokenize train) open
// each document with that vocabulary's end of text, which --pack must take as the boundary.
static void use_tokenizer_eot(const Session *s, TokenSet *set) {
    if (s->o->tokenizer && s->tok.eot >= 0 && set->kind != DATA_BYTES) set->eot = s->tok.eot;
}

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

// Text: the training and validation tokens (--val-data, or the last --val-frac of the data),
// checked against the model (every token inside its vocabulary: data_check_vocab reads the data
// once, in chunks, when its kind can hold a token past it) and the batch shape.
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
    s->loader = (Loader){ .d = &s->train, .pack = o->pack, .bos = o->bos, .shuffle = o->shuffle, .seed = data_seed(o) ^ SHUFFLE_SALT };
    if (!o->resume || o->task || !s->need_data) return;
    CHECK(!st->data_tokens || (st->data_tokens == s->train.n && st->data_files == (uint64_t)s->train.n_files),
          "--resume: '%s' was trained on %llu tokens in %llu files, but the training data now (%s) hold %llu tokens in %d "
          "files; resume with the data (and --val-frac) the run was trained on", o->resume,
          (unsigned long long)st->data_tokens, (unsigned long long)st->data_files, s->data_name,
          (unsigned long long)s->train.n, s->train.n_files);
    // the stored position means a token offset in order, or a window of the permutation drawn from
    // the data seed over windows of --seq + 1 tokens when shuffled: another reading would go on
    // silently with windows read twice or never
    const Options *was = &s->a.stored;
    CHECK(was->shuffle == o->shuffle, "--resume: '%s' read its text %s; resuming it %s would take its place in the "
          "stream for another kind of position; drop --shuffle (or start a new run)", o->resume,
          was->shuffle ? "shuffled" : "in order", o->shuffle ? "shuffled" : "in order");
    CHECK(!o->shuffle || (data_seed(was) == data_seed(o) && was->seq == o->seq), "--resume: '%s' reads its text "
          "shuffled, in an order drawn from --seed %llu over windows of --seq %d; --seed %llu --seq %d would go on in "
          "another order (the order's seed is --data-seed where one is given), reading windows twice or never; drop "
          "--seed, --data-seed and --seq", o->resume, (unsigned long long)data_seed(was), was->seq,
          (unsigned long long)data_seed(o), o->seq);
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
    CHECK(s->train_steps > 0 || s->a.continuing || (!o->save && !o->log), "--save and --log keep what training steps make, and this run "
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


// The lines a training run starts with: the model, its positions, the data, the threads.
static void print_setup(const Session *s) {
    const Options *o = s->o;
    const GPTConfig *cfg = &s->model.cfg;
    char layers[PE_MAX_LAYERS * 24];
    posenc_layer_list(&cfg->pe, layers, sizeof layers);
    printf("model: %d layers, %d heads, dim %d, context %d, vocab %d | %zu parameters\n",
           cfg->n_layer, cfg->n_head, cfg->n_embd, cfg->max_seq_len, cfg->vocab_size, s->model.weights.num_params);
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
    if (s->model.state.bf16)
        printf("precision: bf16 operands, fp32 sums in the linear layers (path %s: %s)\n", bf16_path_name(bf16_path()),
               bf16_path_reason());
#ifdef _OPENMP
    if (s->ranks > 1)
        printf("ranks: %d x %d threads | global batch %d x %d rows x accum %d%s\n", s->ranks, omp_get_max_threads(),
               s->ranks, o->batch, o->accum, o->zero ? " | ZeRO-1: AdamW moments sharded over the ranks" : "");
    else printf("threads: %d\n", omp_get_max_threads());
#endif
    print_machine();
#ifdef _OPENMP
    if (s->ranks == 1) check_cores(omp_get_max_threads());
#endif
    if (memory_sharers() > 1)
        printf("memory: checked against a 1/%d share of this machine's (the ranks and runs that share it)\n", memory_sharers());
}

// --detect-anomaly: the first NaN or Inf of the model's last checked call stops the run, named
static void stop_on_anomaly(const GPT *m, int step) {
    CHECK(!m->state.anomaly.found, "anomaly at step %d: %s (--detect-anomaly)", step + 1, m->state.anomaly.msg);
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
    gpt_set_detect_anomaly(&s->model, o->detect_anomaly);   // the step is checked; the validation between steps is not
    double loss = 0;
    // each forward writes its dlogits at the backward's scale: one pass over (rows, vocabulary) fewer;
    // --dropout on this rank's rows of the global batch
    GptPass pass = { .loss_grad_scale = wtotal > 0 ? 1.0 / wtotal : 0, .dropout = o->dropout,
                     .drop_row0 = (uint64_t)s->rank * o->batch };
    for (int k = 0; k < o->accum; k++) {
        // masks from (data seed, step, micro-batch), so a resumed run drops what this one did
        pass.drop_key = gpt_dropout_key(data_seed(o), step, k);
        // the last backward leaves the final gradients: it gathers their norm as it writes them
        pass.skip_norm = k != o->accum - 1;
        gpt_forward(&s->model, &mb[k], &pass);
        stop_on_anomaly(&s->model, step);
        loss += s->model.state.loss * s->model.state.weight_sum / (wtotal > 0 ? wtotal : 1);
        // under mpirun the last backward reduces each block's gradients across the ranks as it
        // finishes the block (mpi/dist.h); the earlier micro-batches only accumulate
        if (k == o->accum - 1 && wtotal > 0) dist_grad_arm(&s->dg);
        if (wtotal > 0) gpt_backward(&s->model, 1.0 / wtotal, &pass);
        stop_on_anomaly(&s->model, step);
    }
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
    if (s->sel) { st.select_step = (uint64_t)s->sel->best_step; st.select_acc = s->sel->best_acc; }
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
    if (s->a.continuing) continue_check_training(&s->a, s->st.step);
    if (s->train_steps <= 0) {          // --continue after the last step (stopped while testing): test again
        if (s->a.continuing && o->select_every && s->rank == 0) select_restore(s);
        return;
    }
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
    static Select sel;
    if (o->select_every && writer) { select_init(&sel, s); s->sel = &sel; }
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
            if (writer) fit_acc = fit_check(&s->model, &fit, step + 1, "fit");   // rank 0 decides, every rank stops
            dist_bcast(&fit_acc, sizeof fit_acc);
            fitted = fit_acc >= o->fit_target;
            if (fitted) last = 1;                                 // it ends here, as at the last step
        }
        if (s->sel && ((step + 1) % o->select_every == 0 || last)) select_check(s->sel, s, step + 1, kv);
        double val_loss = NAN;
        if (s->val.n && ((o->val_every && (step + 1) % o->val_every == 0) || last))   // on every rank
            val_loss = evaluate(&s->model, &s->val, o, &s->mb[0], s->rank, s->ranks);
        if (o->verify_ranks) dist_check_same(s->model.weights.params, sizeof(real) * s->model.weights.num_params, "the parameters");
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
    dist_check_same(s->model.weights.params, sizeof(real) * s->model.weights.num_params, "the parameters");
    if (s->ranks > 1) printf("ranks: %d, parameters bit-identical on every rank; rank 0 waited %.2f s of its %.2f s of "
                             "steps (%.1f%%) for communication\n", s->ranks, s->dg.wait_s, step_s,
                             step_s > 0 ? 100 * s->dg.wait_s / step_s : 0.0);
    dist_grad_free(&s->dg);
    if (o->fit_target > 0) {
        if (fitted) printf("fit: fitted at step %d: validation accuracy %.4f >= %.4f\n", done, fit_acc, o->fit_target);
        else printf("fit: not fitted in %d steps: validation accuracy %.4f < %.4f\n", o->steps, fit_acc, o->fit_target);
        fit_free(&fit);
    }
    if (s->sel) { select_finish(s->sel, s); s->sel = NULL; }
    if (log) fclose(log);
    free(kv);
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
    CHECK(s->ranks > 1 || (!flag_set(&s->a, "zero") && !flag_set(&s->a, "verify-ranks")), "--zero and --verify-ranks "
          "work across the ranks of mpirun (make MPI=1, 2 or more ranks); this run is one process: drop them");
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
    guard_memory();                              // every allocation of activations or a KV cache is checked first
    check_flags(&s.a);
    continue_or_start(&s.a);
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
        gpt_set_detect_anomaly(&s.model, s.o->detect_anomaly);   // the evaluations of the data modes
        data_modes(&s);
        train(&s);
        gpt_set_detect_anomaly(&s.model, s.o->detect_anomaly);   // the evaluations after training
        if (s.rank == 0) after_training(&s);    // rank 0 alone evaluates and samples
    }
    session_free(&s);
    dist_finalize();
    return 0;
}
