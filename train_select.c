// train_select.c: --select-every K, the model selection of the NoPE paper's protocol (Kazemnejad et
// al. 2023): every run trains the same fixed budget (--steps), the in-distribution validation
// exact match is checked every K steps and at the last, and the weights of the best check are the
// ones tested. Equal accuracies keep the earliest check. No run stops early and none is left out,
// so a comparison of schemes selects nothing on the outcome.
//
// The best weights stay in memory (num_params reals on rank 0, which alone checks and evaluates);
// with --save they are also written, weights only, to SAVE.best at every new best (atomically, as
// every checkpoint), and the run's checkpoints store the best check's step and accuracy
// (select.step, select.acc), so a --resume goes on with the same best. The validation set is the
// one --fit-target checks: --fit-per-length distinct instances of each training length.
#include <errno.h>
#include <string.h>

#include "eval/eval.h"
#include "train.h"

// Where the best weights are written: --save's pattern with {step} made "best", else SAVE.best.
void select_path(const char *save, char *out, size_t cap) {
    const char *at = strstr(save, "{step}");
    if (at) snprintf(out, cap, "%.*sbest%s", (int)(at - save), save, at + 6);
    else snprintf(out, cap, "%s.best", save);
}

// A resumed run's best weights, from SAVE.best. The file may hold a later best than the
// checkpoint names (a run stopped after a new best and before its next checkpoint): its accuracy
// then differs from the stored one and it is left unread; the resumed run, retracing the same
// steps, finds that best again (or, if it never does, select_finish says so).
static void select_resume(Select *sl, Session *s) {
    const Options *o = s->o;
    sl->best_step = (int)s->st.select_step;
    sl->best_acc = s->st.select_acc;
    if (!sl->best_step) return;
    CHECK(o->save, "--resume: '%s' has a best validation check (step %d) whose weights are in its run's --save "
          "PATH.best; give --save as the run did", o->resume, sl->best_step);
    char path[4096];
    select_path(o->save, path, sizeof path);
    FILE *f = fopen(path, "rb");
    CHECK(f, "--resume: '%s' has a best validation check at step %d, but its weights '%s' cannot be opened: %s",
          o->resume, sl->best_step, path, strerror(errno));
    fclose(f);
    GPT best;
    ckpt_load(path, &best, 0, NULL, NULL, NULL, NULL);
    size_t P = s->model.weights.num_params;
    CHECK(best.weights.num_params == P, "--resume: '%s' holds %zu parameters, the model %zu; it is not this run's",
          path, (size_t)best.weights.num_params, P);
    // its accuracy on the run's validation set, in the run's model (the tensors are views into params)
    real *now = xmalloc(sizeof(real) * P);
    memcpy(now, s->model.weights.params, sizeof(real) * P);
    memcpy(s->model.weights.params, best.weights.params, sizeof(real) * P);
    int correct = 0;
    for (int k = 0; k < sl->set.n_sets; k++) correct += task_set_exact_match(&s->model, &sl->set.sets[k], sl->set.ok);
    memcpy(s->model.weights.params, now, sizeof(real) * P);
    free(now);
    if ((double)correct / sl->set.total == sl->best_acc) {
        sl->best = xmalloc(sizeof(real) * P);
        memcpy(sl->best, best.weights.params, sizeof(real) * P);
        printf("select: resumed with the best check at step %d (accuracy %.4f), its weights from %s\n", sl->best_step,
               sl->best_acc, path);
    } else {
        printf("select: %s holds a later best than the checkpoint's (step %d, accuracy %.4f); this run retraces it\n",
               path, sl->best_step, sl->best_acc);
    }
    gpt_free(&best);
}

void select_init(Select *sl, Session *s) {
    memset(sl, 0, sizeof *sl);
    sl->best_acc = -1;
    fit_init(&sl->set, &s->tc, s->o);
    if (s->o->resume) select_resume(sl, s);
}

void select_check(Select *sl, Session *s, int step, const char *kv) {
    double acc = fit_check(&s->model, &sl->set, step, "select");
    if (sl->best_step && acc <= sl->best_acc) return;
    size_t P = s->model.weights.num_params;
    if (!sl->best) sl->best = xmalloc(sizeof(real) * P);
    memcpy(sl->best, s->model.weights.params, sizeof(real) * P);
    sl->best_step = step;
    sl->best_acc = acc;
    printf("select: new best at step %d\n", step);
    if (s->o->save) {
        char path[4096];
        select_path(s->o->save, path, sizeof path);
        ckpt_save(path, &s->model, kv, NULL);
    }
}

void select_finish(Select *sl, Session *s) {
    CHECK(sl->best, "--select-every: the best validation check (step %d, accuracy %.4f) came before the --resume and "
          "its weights in SAVE.best were overwritten by a later best that this run did not reach again (a different "
          "--threads?); run again from the start", sl->best_step, sl->best_acc);
    memcpy(s->model.weights.params, sl->best, sizeof(real) * s->model.weights.num_params);
    printf("select: best validation accuracy %.4f at step %d of %d (checked every %d steps); the tests use it\n",
           sl->best_acc, sl->best_step, s->o->steps, s->o->select_every);
    free(sl->best);
    fit_free(&sl->set);
    memset(sl, 0, sizeof *sl);
}

void select_restore(Session *s) {
    static Select sl;
    select_init(&sl, s);
    select_finish(&sl, s);
}
