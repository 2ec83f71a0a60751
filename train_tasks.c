// train_tasks.c: a synthetic --task in ./train: its settings from the flags, the flags that apply
// to a task only, fit-first training's check (--fit-target), and the accuracy by length and the
// examples (--show) after training.
#include <math.h>
#include <unistd.h>

#include "eval/eval.h"
#include "train.h"

// ---- the task's settings and flags

// The task settings from the flags (0 / -1 = the task's defaults). A new run without --seq gets
// a sequence twice the longest training instance (rounded up to 32), so rows pack a few instances.
void setup_task(Args *a, TaskConfig *tc) {
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
    if (o->test_max) tc->test_max = o->test_max;
    else if (o->train_max) tc->test_max = task_scaled_test_max(id, tc->train_max);
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


// ---- after training: the accuracy by length and the examples

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

void evaluate_task(GPT *m, const TaskConfig *tc, const Options *o) {
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

// --fit-target and its settings (stored values included, on --resume): a task, a budget
// (--max-steps) instead of --steps, and no fit setting without a target.
static void check_fit_flags(const Session *s) {
    const Options *o = s->o;
    const Args *a = &s->a;
    CHECK(!flag_set(a, "fit-target") || o->fit_target > 0, "--fit-target %g: the validation accuracy to reach is in (0, 1]",
          o->fit_target);
    CHECK(o->fit_target == 0 || o->max_steps > 0, "--fit-target needs --max-steps N: the budget of steps to fit in");
    CHECK(o->max_steps == 0 || o->fit_target > 0, "--max-steps is the budget of --fit-target; without a target give --steps");
    CHECK(!(o->fit_target > 0 && o->select_every), "--fit-target stops a run when it fits, --select-every trains every "
          "run its whole --steps and tests its best check: give one of them");
    CHECK(!(flag_set(a, "steps") && o->max_steps > 0), "--steps and --max-steps: with --fit-target the budget is --max-steps; "
          "drop --steps");
    CHECK(o->fit_target > 0 || !flag_set(a, "fit-every"), "--fit-every applies to fit-first training; give --fit-target A");
    CHECK(o->fit_target > 0 || o->select_every || !flag_set(a, "fit-per-length"), "--fit-per-length sizes the validation "
          "check of --fit-target or --select-every; give one of them");
}

// The task flags and the model's vocabulary against the task's (check_with_model, train.c).
void check_task_flags(const Session *s) {
    const Options *o = s->o;
    const GPTConfig *cfg = &s->model.cfg;
    static const char *task_flags[] = { "train-min", "train-max", "test-max", "distractors", "depths", "alphabet",
                                        "eval-per-length", "eval-out", "show", "fit-target", "select-every" };
    for (size_t i = 0; i < sizeof task_flags / sizeof *task_flags; i++)
        CHECK(o->task || !flag_set(&s->a, task_flags[i]), "--%s applies to a synthetic task; give --task NAME (./train --help lists them)", task_flags[i]);
    CHECK(!o->task || cfg->vocab_size == task_vocab(&s->tc), "--task %s: its tokens need a vocabulary of %d (256 bytes and "
          "the symbols past 'z' of --alphabet %d) but the model's is %d; give the --alphabet it was trained with "
          "(vocabulary 256 + N - 26)", o->task, task_vocab(&s->tc), s->tc.alphabet, cfg->vocab_size);
    check_fit_flags(s);
}

// ---- fit-first training (--fit-target): FitCheck (train.h), made once, checked every --fit-every steps

void fit_init(FitCheck *f, const TaskConfig *tc, const Options *o) {
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
double fit_check(GPT *m, const FitCheck *f, int step, const char *what) {
    int correct = 0;
    for (int k = 0; k < f->n_sets; k++) correct += task_set_exact_match(m, &f->sets[k], f->ok);
    double acc = (double)correct / f->total;
    printf("%s check: step %d | validation accuracy %.4f (%d/%d)\n", what, step, acc, correct, f->total);
    return acc;
}

void fit_free(FitCheck *f) {
    for (int k = 0; k < f->n_sets; k++) task_set_free(&f->sets[k]);
    free(f->sets); free(f->ok);
}
