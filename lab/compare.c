// lab/compare.c: the fair comparison. Trains a grid of positional schemes x seeds (x tasks) with
// everything else identical, evaluates each run, and writes one folder with the results.
//
//   ./compare --out runs/default --task copy --schemes nope,learned,rope --seeds 1,2,3 -- --steps 1500
//             (flags after -- go to every ./train run)
//   ./compare --out runs/alibi --data data/kjv.txt --schemes nope,rope,alibi --rope-extensions linear,yarn
//
// Fairness comes from ./train: the same --seed gives the same data order (task instances or text
// batches) and the same initial value of every shared tensor whatever the scheme (each tensor is
// drawn from its own stream, seeded by the run seed and the tensor's name). Only the scheme flags
// differ between the runs of one seed.
//
// lab/compare_options.c reads the command line (the flag table); lab/compare.c runs the grid;
// lab/report.c and its sections (lab/report_*.c) read the results and write the report; lab/runs.h
// holds what they share.
//
// Folder layout (OUT):
//   runs/TASK/SCHEME/seedN/   train.log (everything ./train printed), log.csv (loss per step),
//                             model.ckpt, eval.csv (task accuracy) or ppl*.csv (text), done,
//                             attention.csv (text with --attention-stats), distance.csv
//                             (--attention-distance: NoPE's model against this run's)
//   runs/TASK/nope-twin/seedN/  --attention-distance: NoPE's twin (lab/runs.h), as a run, and the
//                             distance.csv of NoPE to it (the baseline of the same initial weights)
//   runs/text/SCHEME/seedN/ft-M/  --finetune: the run's fine-tune under method M (lab/variants.h):
//                             train.log, log.csv, model.ckpt, ppl.csv, and its markers trained, evaluated
//   results.csv               one row per run and length bucket (tasks) or window (text)
//   runs.csv                  tasks: one row per run (fitted, steps to fit, accuracies, degenerate lengths)
//   summary.md                per task: fitted runs, means with 95% bootstrap intervals, test pools,
//                             degenerate runs, paired tests of every two schemes; pooled tests, the
//                             MRR with its interval, the --claims verdicts
//   *.png, *.svg, *.gp, *.dat loss curves and accuracy (or perplexity) against length, via gnuplot
//   compare.log               what every sitting that trained printed (stdout and stderr; under
//                             mpirun, rank 0's), each after a line naming its start and command
// A run whose `done` file exists is not redone: run the command again to finish an interrupted grid.
// A run stopped before its end (Ctrl-C or SIGTERM to ./compare, kill -9, a reboot) goes on from its
// last checkpoint (./train --save-every K --continue; lab/compare.c's run_child) and ends with the
// same bits as a run never stopped; its `started` file holds its settings, so a later command with
// other settings is refused instead of continuing it. A fine-tune finished before is kept, one
// stopped starts again (run_child). OUT/.lock keeps two ./compare off one folder.
#define _GNU_SOURCE   // fopencookie
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include "lab/compare.h"
#include "lab/report.h"
#include "lab/runs.h"
#include "lab/variants.h"
#include "mpi/dist.h"
#include "eval/ppl_defaults.h"

#define MAX_CMDS (4 + 3 * MAX_ITEMS) // a run's commands: training, a perplexity evaluation per variant (1 + 2 x
                                     // MAX_ITEMS), LongRoPE's search, a fine-tune per method, attention

static void mkdirs(const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(p, 0777); *s = '/'; }
    CHECK(mkdir(p, 0777) == 0 || errno == EEXIST, "cannot create the folder '%s': %s", p, strerror(errno));
}

// Runs argv with stdout and stderr appended to log; returns the exit status (0 = success).
// In a child of ./compare under mpirun: the variables through which Open MPI (and PMIx) tell a
// process which job and rank it is, removed, so that a ./train built with MPI starts as a job of its
// own (one rank, or the ranks of --launch) instead of taking the place of this rank.
static void forget_mpi_job(void) {
    extern char **environ;
    static const char *const prefixes[] = { "OMPI_", "PMIX_", "PMI_", "OPAL_", "ORTE_", "PRTE_", NULL };
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e && !again; e++)
            for (const char *const *p = prefixes; *p; p++)
                if (!strncmp(*e, *p, strlen(*p))) {
                    char name[256];
                    size_t n = strcspn(*e, "=");
                    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), *e);
                    unsetenv(name);
                    again = 1;                 // environ changed under us: start over
                    break;
                }
    }
}

// A run's process (run_child) stops its command with SIGTERM when it gets SIGTERM or SIGINT
// itself, from ./compare or, through the parent-death signal, when ./compare died (kill -9).
static volatile sig_atomic_t child_stop;
static volatile pid_t child_cmd;
static void child_on_signal(int sig) {
    (void)sig;
    child_stop = 1;
    if (child_cmd > 0) kill(child_cmd, SIGTERM);
}

// SIGINT, SIGTERM and SIGCHLD, blocked around each fork (and while ./compare decides whether to
// wait): the child starts with them held, sets its own actions, then lets them in, so a signal
// that came meanwhile is acted on by the process that knows what to do with it.
static sigset_t stop_set(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT); sigaddset(&s, SIGTERM); sigaddset(&s, SIGCHLD);
    return s;
}

static void unblock_all(void) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static int run_cmd(Argv *a, const char *log) {
    if (child_stop) return 128;                    // stopped before this command started
    sigset_t block = stop_set(), was;
    sigprocmask(SIG_BLOCK, &block, &was);
    pid_t parent = getpid(), pid = fork();
    CHECK(pid >= 0, "fork failed: %s", strerror(errno));
    if (pid == 0) {
        signal(SIGINT, SIG_DFL); signal(SIGTERM, SIG_DFL); signal(SIGCHLD, SIG_DFL);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGTERM);          // its run's process killed: this command stops too
#endif
        if (getppid() != parent) _exit(128);       // (killed before the line above)
        unblock_all();                             // a SIGTERM held since the fork ends it here
        int in = open("/dev/null", O_RDONLY);      // a run in a background group must not read the terminal
        if (in >= 0) { dup2(in, 0); close(in); }   // (mpirun under --launch reads its stdin)
        FILE *f = fopen(log, "a");
        if (!f) _exit(127);
        fprintf(f, "$");
        for (int i = 0; i < a->n; i++) fprintf(f, " %s", a->v[i]);
        fprintf(f, "\n");
        fflush(f);
        dup2(fileno(f), 1); dup2(fileno(f), 2);
        if (dist_mpi()) forget_mpi_job();
        execvp(a->v[0], a->v);
        fprintf(stderr, "cannot run %s: %s\n", a->v[0], strerror(errno));
        _exit(127);
    }
    child_cmd = pid;
    sigprocmask(SIG_SETMASK, &was, NULL);          // a signal held since the fork reaches child_on_signal now
    int status;
    while (waitpid(pid, &status, 0) < 0) CHECK(errno == EINTR, "waitpid failed: %s", strerror(errno));
    child_cmd = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// 1 when the run's training flags (its scheme's, or those after --) include --bos
static int run_bos(const Cfg *c, const Run *r) {
    int bos = 0;
    for (int k = 0; k < c->n_extra; k++) bos |= !strcmp(c->extra[k], "--bos");
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", c->schemes[r->scheme].flags);
    for (char *w = strtok(tmp, " \t"); w; w = strtok(NULL, " \t")) bos |= !strcmp(w, "--bos");
    return bos;
}

// The training command of a run (which also writes the task accuracy to eval.csv). exec: as run
// (build_cmds).
static void train_command(Argv *a, const Cfg *c, const Run *r, int exec) {
    if (c->launch) arg_words(a, c->launch);
    arg(a, "%s", c->train_bin);
    if (c->data) { arg(a, "--data"); arg(a, "%s", c->data); if (c->val_data) { arg(a, "--val-data"); arg(a, "%s", c->val_data); } }
    else { arg(a, "--task"); arg(a, "%s", c->tasks[r->task]); arg(a, "--eval-per-length"); arg(a, "%d", c->per_length);
           arg(a, "--eval-out"); arg(a, "%s/eval.csv", r->dir); }
    if (c->fit_target) { arg(a, "--fit-target"); arg(a, "%s", c->fit_target); }
    arg_words(a, c->schemes[r->scheme].flags);
    arg(a, "--seed"); arg(a, "%lld", c->seeds[r->seed]);
    if (r->twin) { arg(a, "--data-seed"); arg(a, "%lld", twin_data_seed(c->seeds[r->seed])); }
    arg(a, "--threads"); arg(a, "%d", c->threads);
    arg(a, "--log"); arg(a, "%s/log.csv", r->dir);
    arg(a, "--save"); arg(a, "%s/model.ckpt", r->dir);
    if (exec && c->save_every && !c->fit_target) { arg(a, "--save-every"); arg(a, "%d", c->save_every); }
    if (exec && !c->fit_target) arg(a, "--continue");    // (fit-first runs stop at a step a checkpoint does not record)
    // (a --sample after -- still gives one)
    if (exec && c->data) { arg(a, "--sample"); arg(a, "0"); }
    for (int k = 0; k < c->n_extra; k++) arg(a, "%s", c->extra[k]);
    if (!c->data && c->task_flags[r->task]) arg_words(a, c->task_flags[r->task]);   // --task-flags: after, so they override
    if (*c->schemes[r->scheme].post) arg_words(a, c->schemes[r->scheme].post);
}

// LongRoPE's lists are searched for a run's model first (./train --longrope-search), scored on
// validation tokens that the evaluations do not score: from the one after the last they read
// (they score --ppl-tokens tokens after their --ppl-skip, and read one more).
static void longrope_search_command(Argv *q, const Cfg *c, const Run *r) {
    char tb[64], sb[64];
    const char *pt = eval_flag(c, "--ppl-tokens", tb, sizeof tb), *ps = eval_flag(c, "--ppl-skip", sb, sizeof sb);
    long long skip = (ps ? atoll(ps) : 0) + (pt ? atoll(pt) : PPL_DEFAULT_TOKENS) + 1;
    variant_eval_command(q, c, r, 0);
    arg(q, "--rope-factor"); arg(q, "%g", c->ext_factor);
    arg(q, "--ppl-skip"); arg(q, "%lld", skip);
    arg(q, "--longrope-search"); arg(q, "%s/longrope", r->dir);
}

// The perplexity evaluation of variant v of a run (lab/variants.h) at 0.5x .. 8x the context (or
// --ppl-windows): the windows of a model of K x the context (a scheme trained at K x T, a
// fine-tune at S x T) divided by K, so that every variant is scored at the same lengths.
static void ppl_command(Argv *b, const Cfg *c, const Run *r, int v) {
    const Scheme *sch = &c->schemes[r->scheme];
    variant_eval_command(b, c, r, v);
    if (c->eval_flags) arg_words(b, c->eval_flags);
    if (*sch->eval_post) arg_words(b, sch->eval_post);
    int k = variant_context_factor(c, v);
    if (k > 1) {
        char gbuf[256], def[] = PPL_DEFAULT_WINDOWS, div[256];
        const char *given = eval_flag(c, "--ppl-windows", gbuf, sizeof gbuf);
        CHECK(divide_multiples(given ? given : def, k, div, sizeof div) > 0, "internal: dividing %s by %d", given ? given : def, k);
        arg(b, "--ppl-windows"); arg(b, "%s", div);
    }
    if (variant_finetuned(c, v)) {           // kept once done, as its fine-tune (run_child)
        variant_sub(c, v, b->sub, sizeof b->sub);
        snprintf(b->marker, sizeof b->marker, "evaluated");
    }
    char path[4200];
    variant_file(c, r, v, "ppl", path, sizeof path);
    arg(b, "--ppl-out"); arg(b, "%s", path);
    variant_file(c, r, v, "ppl_positions", path, sizeof path);
    arg(b, "--ppl-positions"); arg(b, "%s", path);
}

// The commands of one run: the training, then for text a perplexity evaluation per variant (its
// own positions, each RoPE extension after LongRoPE's search, each fine-tune after the fine-tune;
// lab/variants.h) and, with --attention-stats, the attention statistics (attention.csv). cmds
// holds MAX_CMDS; returns the count.
// exec: the commands as run, with the training's checkpoints to continue from (--save-every K
// --continue) and, on text, no sample (--sample 0): no bit of the results changes, so the
// settings, exec = 0, leave them out.
static int build_cmds(const Cfg *c, const Run *r, Argv *cmds, int exec) {
    train_command(&cmds[0], c, r, exec);
    if (!c->data) return 1;
    const Scheme *sch = &c->schemes[r->scheme];
    int nc = 1;
    for (int v = 0; v < n_variants(c); v++) {
        if (!variant_applies(c, r->scheme, v)) continue;
        CHECK(nc + 3 < MAX_CMDS, "internal: more than %d commands for a run", MAX_CMDS);
        int e = variant_method(c, v);
        if (variant_finetuned(c, v)) finetune_command(&cmds[nc++], c, r, v, exec);
        else if (e >= 0 && posenc_scaling_searched(c->extensions[e])) longrope_search_command(&cmds[nc++], c, r);
        ppl_command(&cmds[nc++], c, r, v);
    }
    if (!c->attention_stats) return nc;
    Argv *s = &cmds[nc++];                    // at 0.5x .. 8x the context, the run's own positions
    variant_eval_command(s, c, r, 0);
    if (run_bos(c, r)) arg(s, "--bos");
    if (sch->long_of >= 0) {                  // trained at K x T: the same window lengths as the runs at T
        char div[128];
        CHECK(divide_multiples(PPL_DEFAULT_WINDOWS, c->long_factor, div, sizeof div) > 0, "internal: dividing %s", PPL_DEFAULT_WINDOWS);
        arg(s, "--attention-lengths"); arg(s, "%s", div);
    }
    arg(s, "--attention-stats"); arg(s, "%s/attention.csv", r->dir);
    return nc;
}

// A run's settings: its commands, one per line. Stored in its `done` file, so that a later
// command with other settings does not mix its runs in silently.
static char *run_settings(const Cfg *c, const Run *r) {
    Argv *cmds = xcalloc(MAX_CMDS, sizeof(Argv));
    int n = build_cmds(c, r, cmds, 0);
    char *buf = NULL; size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < cmds[i].n; k++) fprintf(f, "%s%s", k ? " " : "", cmds[i].v[k]);
        fprintf(f, "\n");
    }
    fclose(f);
    free(cmds);
    return buf;
}

// DIR/NAME holding text, whole or not at all (written, synced, renamed): a marker cut short would
// record no settings. Returns 0 on success.
static int write_marker(const char *dir, const char *name, const char *text) {
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "compare: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static char *relocated(const char *stored, const Run *r);

// 1 when DIR/NAME, a command's marker, holds the run's settings set (with the run's folder as it is
// now): the command finished in an earlier sitting of these settings.
static int marker_holds(const char *dir, const char *name, const char *set, const Run *r) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *stored = NULL; size_t cap = 0;
    ssize_t k = getdelim(&stored, &cap, 0, f);
    fclose(f);
    char *moved = k > 0 ? relocated(stored, r) : NULL;
    int same = moved && !strcmp(moved, set);
    free(stored); free(moved);
    return same;
}

// Command i of a run runs in its folder DIR (cmds[i].sub): the first of that folder starts its
// train.log afresh, and the markers of the later ones there are removed (they used what it remakes).
static void remake_from(const Argv *cmds, int i, int n, const char *dir) {
    char path[4300];
    int first = 1;
    for (int k = 0; k < i; k++) first &= strcmp(cmds[k].sub, cmds[i].sub) != 0;
    if (first) { snprintf(path, sizeof path, "%s/train.log", dir); remove(path); }
    for (int k = i + 1; k < n; k++)
        if (*cmds[k].marker && !strcmp(cmds[k].sub, cmds[i].sub)) { snprintf(path, sizeof path, "%s/%s", dir, cmds[k].marker); remove(path); }
}

// The child process of one run: `started` (its settings), every command, then `done` (the settings
// again) marks success. A run that has a checkpoint (it was stopped) continues from it and appends
// to its train.log. A command with a marker (a fine-tune and its evaluation, in RUN/ft-M/) that
// finished in an earlier sitting is kept; one stopped before its end starts again. In a process
// group of its own: a terminal's Ctrl-C reaches ./compare alone, which stops each run once, with SIGTERM.
static void run_child(const Cfg *c, const Run *r, pid_t compare_pid) {
    setpgid(0, 0);
    struct sigaction sa = { .sa_handler = child_on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGCHLD, SIG_DFL);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);              // ./compare killed (kill -9): the run stops at a checkpoint
#endif
    if (getppid() != compare_pid) _exit(1);        // (killed before the line above)
    unblock_all();                                 // (held since the fork: a stop that came meanwhile arrives now)
    char log[4200], ckpt[4200];
    snprintf(log, sizeof log, "%s/train.log", r->dir);
    snprintf(ckpt, sizeof ckpt, "%s/model.ckpt", r->dir);
    if (c->fit_target || access(ckpt, F_OK) != 0) remove(log);
    char *set = run_settings(c, r);
    if (write_marker(r->dir, "started", set)) _exit(1);
    Argv *cmds = xcalloc(MAX_CMDS, sizeof(Argv));
    int n = build_cmds(c, r, cmds, 1);
    for (int i = 0; i < n; i++) {
        const Argv *a = &cmds[i];
        char dir[4200], sub_log[4300];
        snprintf(dir, sizeof dir, "%s%s%s", r->dir, *a->sub ? "/" : "", a->sub);
        if (*a->marker && marker_holds(dir, a->marker, set, r)) continue;
        if (*a->sub) { mkdirs(dir); remake_from(cmds, i, n, dir); }
        snprintf(sub_log, sizeof sub_log, "%s/train.log", dir);
        if (run_cmd(&cmds[i], *a->sub ? sub_log : log) || child_stop) _exit(1);
        if (*a->marker && write_marker(dir, a->marker, set)) _exit(1);
    }
    _exit(write_marker(r->dir, "done", set) ? 1 : 0);
}

// A run's settings as stored, with its folder as it is now: a grid folder moved or copied
// (results/NAME from runs/NAME, tools/keep_results.sh) keeps its runs. The stored folder is the one
// of the training command's --log (FOLDER/log.csv); every occurrence of it is replaced. The caller frees.
static char *relocated(const char *stored, const Run *r) {
    const char *at = strstr(stored, " --log "), *file = "/log.csv";
    if (!at) return strdup(stored);
    at += 7;
    size_t n = strcspn(at, " \n");
    if (n <= strlen(file) || strncmp(at + n - strlen(file), file, strlen(file))) return strdup(stored);
    n -= strlen(file);
    char *old = strndup(at, n);
    size_t cap = strlen(stored) * (strlen(r->dir) / (n ? n : 1) + 2) + strlen(r->dir) + 1, used = 0;
    char *out = xmalloc(cap);
    for (const char *p = stored; *p;) {
        if (!strncmp(p, old, n)) { used += (size_t)snprintf(out + used, cap - used, "%s", r->dir); p += n; }
        else out[used++] = *p++;
    }
    out[used] = 0;
    free(old);
    return out;
}

// A stopped run (a `started` file, no `done`) continues from its checkpoint: exits with a message
// when it was started with other settings.
static void check_started(const Cfg *c, const Run *r) {
    char path[4200];
    snprintf(path, sizeof path, "%s/started", r->dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *stored = NULL; size_t cap = 0;
    ssize_t k = getdelim(&stored, &cap, 0, f);
    fclose(f);
    char *want = run_settings(c, r), *moved = k > 0 ? relocated(stored, r) : NULL;
    CHECK(k > 0 && !strcmp(moved, want), "%s was started with other settings (its commands are in %s) and stopped "
          "before its end; it would go on from where it stopped:\n%s\nnow:\n%s"
          "give another --out, or delete that folder to start the run afresh", r->dir, path, k > 0 ? stored : "", want);
    free(stored); free(want); free(moved);
}

// 1 when the run finished with these settings; exits with a message when it finished with others
// (or was started with others: check_started)
static int finished(const Cfg *c, const Run *r) {
    char path[4200];
    snprintf(path, sizeof path, "%s/done", r->dir);
    FILE *f = fopen(path, "r");
    if (!f) { if (!c->report_only) check_started(c, r); return 0; }
    char *stored = NULL; size_t cap = 0;
    ssize_t k = getdelim(&stored, &cap, 0, f);
    fclose(f);
    char *want = run_settings(c, r);
    // An empty marker records no settings: a run made by hand for a report, which only
    // --report-only takes (./compare writes its markers whole, with the settings)
    CHECK(k > 0 || c->report_only, "%s is empty: it records no settings, so the run cannot be checked against these "
          "(made by hand, or by an older ./compare cut short); delete %s to redo the run, or use --report-only", path, r->dir);
    char *moved = k > 0 ? relocated(stored, r) : NULL;
    int same = k <= 0 || strcmp(moved, want) == 0;
    free(moved);
    CHECK(same, "%s was made with other settings (its commands are in %s):\n%s\nnow:\n%s"
          "give another --out, or delete that folder to redo the run", r->dir, path, stored, want);
    free(stored); free(want);
    return 1;
}


// SIGINT or SIGTERM to ./compare: no new run starts, each run in progress gets SIGTERM (./train
// finishes its step, checkpoints and stops), and ./compare exits without a report once they have.
static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }
static void on_child(int sig) { (void)sig; }      // wakes run_all's sigsuspend

static void catch_stop(void) {
    struct sigaction sa = { .sa_handler = on_stop };      // no SA_RESTART: waitpid returns EINTR
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

// Tells the runs in progress to stop (once); returns how many it told.
static int stop_runs(const Run *runs, int n) {
    int told = 0;
    for (int i = 0; i < n; i++) if (runs[i].state == RUN_RUNNING) { kill(runs[i].pid, SIGTERM); told++; }
    printf("compare: %s: stopping the %d runs in progress at their checkpoints; the same command continues the grid\n",
           stop_signal == SIGINT ? "SIGINT" : "SIGTERM", told);
    fflush(stdout);
    return told;
}

// The plan line: how many runs, how many done, how many to train and how. Returns the count to train.
static int print_plan(const Cfg *c, const Run *runs, int n) {
    int todo = 0, done = 0, elsewhere = 0;
    for (int i = 0; i < n; i++) {
        todo += runs[i].state == RUN_TODO;
        done += runs[i].state == RUN_FOUND_DONE;
        elsewhere += runs[i].state == RUN_ELSEWHERE;
    }
    int twins = n_twin_runs(c);
    printf("compare: %d runs (%d tasks x %d schemes x %d seeds", n, c->n_tasks, c->n_schemes, c->n_seeds);
    if (twins) printf(", and %d NoPE twins for the attention distance's baseline", twins);
    printf("), %d already done, %d to train", done, todo);
    if (elsewhere) printf(" here (rank 0; %d on the other ranks)", elsewhere);
    printf("; %d at a time, %d threads each\n", c->jobs, c->threads);
    fflush(stdout);
    return todo;
}

// --dry-run: the plan, then each run's folder, state and commands (as they would run); nothing is
// trained or written.
static void dry_run(const Cfg *c, const Run *runs, int n) {
    print_plan(c, runs, n);
    if (access(c->train_bin, X_OK) != 0) printf("compare: the trainer '%s' cannot be run: build it with make, or give --train PATH\n", c->train_bin);
    Argv *cmds = xcalloc(MAX_CMDS, sizeof(Argv));
    for (int i = 0; i < n; i++) {
        char started[4200];
        snprintf(started, sizeof started, "%s/started", runs[i].dir);
        printf("%s (%s)\n", runs[i].dir, runs[i].state == RUN_FOUND_DONE ? "done"
               : access(started, F_OK) == 0 ? "stopped: continues from its checkpoint" : "to train");
        memset(cmds, 0, MAX_CMDS * sizeof(Argv));
        int nc = build_cmds(c, &runs[i], cmds, 1);
        for (int k = 0; k < nc; k++) {
            printf("  ");
            for (int w = 0; w < cmds[k].n; w++) printf("%s%s", w ? " " : "", cmds[k].v[w]);
            printf("\n");
        }
    }
    free(cmds);
    if (c->attention_distance) printf("then the attention distance of each task and seed, once its runs are done\n");
    printf("compare: --dry-run: nothing trained, nothing written\n");
}

static int run_all(const Cfg *c, Run *runs, int n) {
    int failed = 0, told = 0, todo = print_plan(c, runs, n);
    int running = 0, finished = 0, next = 0;
    double t_start = now_seconds(), busy = 0;
    pid_t self = getpid();
    // the signals stay blocked but in sigsuspend, so none falls between a check and the wait
    struct sigaction sc = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };
    sigemptyset(&sc.sa_mask);
    sigaction(SIGCHLD, &sc, NULL);
    sigset_t block = stop_set(), was;
    sigprocmask(SIG_BLOCK, &block, &was);
    while (finished < todo) {
        while (!stop_signal && running < c->jobs && next < n) {
            Run *r = &runs[next++];
            if (r->state != RUN_TODO) continue;
            mkdirs(r->dir);
            fflush(stdout);
            r->pid = fork();
            CHECK(r->pid >= 0, "fork failed: %s", strerror(errno));
            if (r->pid == 0) run_child(c, r, self);
            r->state = RUN_RUNNING; r->t0 = now_seconds(); running++;
        }
        if (stop_signal && !told) told = stop_runs(runs, n) + 1;
        if (stop_signal && !running) break;
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid == 0) { sigsuspend(&was); continue; }      // until a run ends or a stop comes
        if (pid < 0 && errno == EINTR) continue;
        CHECK(pid > 0, "waitpid failed: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            Run *r = &runs[i];
            if (r->state != RUN_RUNNING || r->pid != pid) continue;
            int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            running--;
            if (!ok && stop_signal) {          // stopped: it continues from its checkpoint next time
                r->state = RUN_TODO;
                char label[96];
                printf("        %s %s seed %lld: stopped\n", c->tasks[r->task], run_label(c, r, label, sizeof label), c->seeds[r->seed]);
                continue;
            }
            r->state = ok ? RUN_DONE : RUN_FAILED;
            finished++; failed += !ok;
            double dt = now_seconds() - r->t0;
            busy += dt;
            char took[32], eta[32], res[1024];
            fmt_duration(dt, took, sizeof took);
            fmt_duration(busy / finished * (todo - finished) / c->jobs, eta, sizeof eta);
            last_line(r->dir, c->data ? "step" : "in-distribution", res, sizeof res);
            char label[96];
            if (!c->quiet || !ok)
                printf("[%d/%d] %s %s seed %lld: %s in %s | %s | ETA %s\n", finished, todo, c->tasks[r->task],
                       run_label(c, r, label, sizeof label), c->seeds[r->seed], ok ? "done" : "FAILED", took,
                       ok ? res : "see train.log", eta);
            if (!ok) printf("        log: %s/train.log\n", r->dir);
            fflush(stdout);
        }
    }
    sigprocmask(SIG_SETMASK, &was, NULL);
    signal(SIGCHLD, SIG_DFL);
    char total[32];
    fmt_duration(now_seconds() - t_start, total, sizeof total);
    if (stop_signal) { printf("compare: stopped after %s: %d of %d runs trained now\n", total, finished - failed, todo); return failed; }
    if (todo) printf("compare: trained %d runs in %s%s\n", todo, total, failed ? " (some failed)" : "");
    return failed;
}

// The weights a run is tested with: model.ckpt.best when ./train --select-every wrote it, else model.ckpt.
static void tested_ckpt(const Run *r, char *out, size_t cap) {
    snprintf(out, cap, "%s/model.ckpt.best", r->dir);
    if (access(out, F_OK) != 0) snprintf(out, cap, "%s/model.ckpt", r->dir);
}

// ./train --attention-distance of a's tested model to b's, into home's distance.csv, unless one of
// that pair is there. Returns 1 when made, 0 when kept or left out, -1 when it failed.
static int distance_pair(const Cfg *c, int t, const Run *a, const Run *b, const Run *home) {
    if (!run_has_results(a) || !run_has_results(b)) return 0;
    char out[4200], log[4200], pair_path[4200], pair[8500], was[8500] = "", ck_a[4200], ck_b[4200];
    tested_ckpt(a, ck_a, sizeof ck_a);
    tested_ckpt(b, ck_b, sizeof ck_b);
    snprintf(out, sizeof out, "%s/distance.csv", home->dir);
    // distance.pair names the two models a distance.csv was computed from: one kept from another
    // pairing (another seed list gives NoPE another partner, a best checkpoint written since) is
    // computed again
    snprintf(pair_path, sizeof pair_path, "%s/distance.pair", home->dir);
    snprintf(pair, sizeof pair, "%s %s\n", ck_a, ck_b);
    FILE *pf = fopen(pair_path, "r");
    if (pf) { if (!fgets(was, sizeof was, pf)) was[0] = 0; fclose(pf); }
    int stale = pf && strcmp(was, pair) != 0;
    if (access(out, F_OK) == 0 && !stale) return 0;   // (a distance.csv without distance.pair: kept)
    if (stale) { remove(out); remove(pair_path); }
    if (access(ck_a, R_OK) != 0 || access(ck_b, R_OK) != 0) {   // runs restored without their checkpoints
        printf("attention distance of %s to %s: no model.ckpt (its checkpoint was not kept), left out%s\n", a->dir,
               b->dir, stale ? " (the one kept was of another pair, and is removed)" : "");
        return 0;
    }
    snprintf(log, sizeof log, "%s/distance.log", home->dir);
    remove(log);
    Argv *cmd = xcalloc(1, sizeof(Argv));
    arg(cmd, "%s", c->train_bin);
    arg(cmd, "--load"); arg(cmd, "%s", ck_a);
    arg(cmd, "--task"); arg(cmd, "%s", c->tasks[t]);
    arg(cmd, "--attention-distance"); arg(cmd, "%s", out);
    arg(cmd, "--distance-to"); arg(cmd, "%s", ck_b);
    arg(cmd, "--threads"); arg(cmd, "%d", c->threads);
    int rc = run_cmd(cmd, log);
    free(cmd);
    if (rc) { printf("attention distance of %s to %s FAILED: see %s\n", a->dir, b->dir, log); return -1; }
    FILE *w = fopen(pair_path, "w");
    CHECK(w && fputs(pair, w) >= 0 && fclose(w) == 0, "cannot write '%s'", pair_path);
    return 1;
}

// --attention-distance, after training: for every task and seed, the NoPE paper's attention distance
// (./train --attention-distance) of nope's model to each scheme's model of the seed, to its twin's
// (the baseline of the same initial weights) and to nope's of the next seed (the baseline of
// another start), each into the other run's distance.csv (nope's own folder holds the next seed's).
// Both runs must be finished; a distance.csv already there is kept. Returns the number that failed.
static int attention_distances(const Cfg *c, const Run *runs) {
    int ns = nope_scheme(c), failed = 0, made = 0;
    double t0 = now_seconds();
    for (int t = 0; t < c->n_tasks; t++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            const Run *a = &runs[run_index(c, t, ns, sd)];
            for (int sc = 0; sc <= c->n_schemes; sc++) {          // sc == n_schemes: the twin
                if (sc == ns && c->n_seeds < 2) continue;
                const Run *b = sc == c->n_schemes ? &runs[twin_index(c, t, sd)]
                             : &runs[run_index(c, t, sc, sc == ns ? (sd + 1) % c->n_seeds : sd)];
                const Run *home = sc == c->n_schemes ? b : &runs[run_index(c, t, sc, sd)];
                int k = distance_pair(c, t, a, b, home);
                made += k > 0; failed += k < 0;
            }
        }
    char took[32];
    fmt_duration(now_seconds() - t0, took, sizeof took);
    if (made || failed) printf("compare: %d attention distances in %s%s\n", made, took, failed ? " (some failed)" : "");
    return failed;
}

// OUT/.lock, held (flock) while this ./compare and its runs live: a second ./compare on the same
// folder would train the same runs at once. The runs' processes hold it too (inherited), so a
// ./compare killed with kill -9 keeps the folder until its runs have stopped at their checkpoints.
static void lock_out(const Cfg *c) {
    char path[4200], was[32] = "";
    snprintf(path, sizeof path, "%s/.lock", c->out);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    CHECK(fd >= 0, "cannot open '%s': %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ssize_t k = read(fd, was, sizeof was - 1);
        was[k > 0 ? k : 0] = 0;
        was[strcspn(was, "\n")] = 0;
        CHECK(0, "another ./compare (process %s) is working in %s, or its runs are still stopping; wait for it to end "
              "(or stop it: its runs stop at their checkpoints), then run this again", *was ? was : "?", c->out);
    }
    char pid[32];
    int k = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)k, 0) == k, "cannot write '%s': %s", path, strerror(errno));
}

// ---- compare.log: a grid trained in several sittings keeps what each printed, in order, in
// OUT/compare.log, so its folder holds its own record (tools/keep_results.sh copies it). stdout and
// stderr become streams that write each piece both to their descriptor and to the log, appended;
// a sitting starts with a line naming its time and command. Children's output goes to their own
// train.log, not here (their descriptors are redirected before exec; the log is close-on-exec).
static int g_log = -1;

static void write_all(int fd, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t k = write(fd, buf, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return;
        buf += k; n -= (size_t)k;
    }
}

static ssize_t tee_write(void *cookie, const char *buf, size_t n) {
    write_all((int)(intptr_t)cookie, buf, n);
    if (g_log >= 0) write_all(g_log, buf, n);
    return (ssize_t)n;
}

static void log_sitting(const Cfg *c, const char *command) {
    char path[4200];
    snprintf(path, sizeof path, "%s/compare.log", c->out);
    g_log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    CHECK(g_log >= 0, "cannot write '%s': %s", path, strerror(errno));
    char when[64] = "?", line[256];
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    int k = snprintf(line, sizeof line, "== compare, a sitting started %s (process %d): ", when, (int)getpid());
    write_all(g_log, line, (size_t)k);
    write_all(g_log, command, strlen(command));
    write_all(g_log, "\n", 1);
    cookie_io_functions_t io = { .write = tee_write };
    FILE *out = fopencookie((void *)(intptr_t)STDOUT_FILENO, "w", io), *err = fopencookie((void *)(intptr_t)STDERR_FILENO, "w", io);
    CHECK(out && err, "cannot set up %s: %s", path, strerror(errno));
    setvbuf(out, NULL, _IOLBF, 0);
    setvbuf(err, NULL, _IONBF, 0);
    fflush(stdout);
    fflush(stderr);
    stdout = out;
    stderr = err;
}

int main(int argc, char **argv) {
    Cfg c;
    dist_init(&argc, &argv);          // under mpirun (make MPI=1): the runs are shared out over the ranks
    int rank = dist_rank(), ranks = dist_size();
    static char command[16384];       // the command line as given, for compare.log (parsing splits its lists)
    for (int i = 0, k = 0; i < argc && k < (int)sizeof command - 1; i++)
        k += snprintf(command + k, sizeof command - k, "%s%s", i ? " " : "", argv[i]);
    compare_parse(&c, argc, argv);
    CHECK(ranks == 1 || !c.launch, "--launch starts each run as a job of its own (mpirun); it cannot be nested in "
          "a ./compare under mpirun with %d ranks: run ./compare without mpirun, or drop --launch", ranks);
    static char bin[4096];
    if (!c.train_bin) {
        const char *slash = strrchr(argv[0], '/');
        snprintf(bin, sizeof bin, "%.*strain", slash ? (int)(slash - argv[0] + 1) : 2, slash ? argv[0] : "./");
        c.train_bin = bin;
    }
    if (c.dry_run) CHECK(!c.report_only, "--dry-run and --report-only: give one (--dry-run trains and writes nothing)");
    CHECK(!c.dry_run || ranks == 1, "--dry-run under mpirun: run it without mpirun (it trains nothing)");
    if (c.report_only) {
        struct stat st;
        CHECK(stat(c.out, &st) == 0 && S_ISDIR(st.st_mode), "--report-only: --out %s is not a folder of runs", c.out);
    } else if (!c.dry_run) {
        CHECK(access(c.train_bin, X_OK) == 0, "cannot run the trainer '%s' (build it with make, or give --train PATH)", c.train_bin);
        mkdirs(c.out);
    }
    if (rank == 0 && !c.dry_run) lock_out(&c);
    if (rank == 0 && !c.report_only && !c.dry_run) log_sitting(&c, command);
    catch_stop();
    // the runs trained at once on this machine (--jobs x the ranks here) share its memory: each run's
    // memory checks count on its share (./train's PEGPT_MEMORY_SHARE; one set above multiplies)
    const char *had = getenv("PEGPT_MEMORY_SHARE");
    long share = (had && atol(had) >= 1 ? atol(had) : 1) * c.jobs * dist_node_size();
    char sh[32];
    snprintf(sh, sizeof sh, "%ld", share);
    setenv("PEGPT_MEMORY_SHARE", sh, 1);
    int n = n_grid_runs(&c), n_all = n + n_twin_runs(&c);       // the grid, then NoPE's twins
    Run *runs = xcalloc(n_all, sizeof(Run));
    for (int t = 0; t < c.n_tasks; t++)
        for (int sd = 0; sd < c.n_seeds; sd++)
            for (int sc = 0; sc <= c.n_schemes; sc++) {
                if (sc == c.n_schemes && !n_twin_runs(&c)) continue;
                Run *r = &runs[sc < c.n_schemes ? run_index(&c, t, sc, sd) : twin_index(&c, t, sd)];
                r->task = t; r->scheme = sc < c.n_schemes ? sc : nope_scheme(&c); r->seed = sd; r->twin = sc == c.n_schemes;
                char label[96];
                snprintf(r->dir, sizeof r->dir, "%s/runs/%s/%s/seed%lld", c.out, c.tasks[t], run_label(&c, r, label, sizeof label),
                         c.seeds[sd]);
                r->state = finished(&c, r) ? RUN_FOUND_DONE : RUN_TODO;
            }
    if (c.dry_run) {
        if (rank == 0) dry_run(&c, runs, n_all);
        free(runs);
        dist_finalize();
        return 0;
    }
    // under mpirun: the runs still to train, dealt out in turn (the i-th goes to rank i % ranks)
    int todo = 0;
    for (int i = 0; i < n_all && !c.report_only; i++)
        if (runs[i].state == RUN_TODO && todo++ % ranks != rank) runs[i].state = RUN_ELSEWHERE;
    int failed = 0;
    if (c.report_only) {
        int done = 0;
        for (int i = 0; i < n_all; i++) done += runs[i].state == RUN_FOUND_DONE;
        CHECK(done, "--report-only: no finished run in %s (a run is finished when its folder has a done file)", c.out);
        printf("compare: --report-only: %d of %d runs finished%s\n", done, n_all, done < n_all ? "; the others are left out (nothing is trained)" : "");
    } else failed = run_all(&c, runs, n_all);
    if (ranks > 1) {
        dist_idle_barrier();                // every rank waits here (asleep) until the last run is done
        failed = (int)dist_sum(failed);
        // a stop seen by any rank stops them all here (no report), so every rank ends the same way
        if (dist_sum(stop_signal != 0) > 0 && !stop_signal) stop_signal = SIGTERM;
        for (int i = 0; i < n_all; i++)     // the others' runs, back from their done files
            if (runs[i].state == RUN_ELSEWHERE) runs[i].state = finished(&c, &runs[i]) ? RUN_FOUND_DONE : RUN_FAILED;
        if (rank == 0 && !stop_signal) printf("compare: %d ranks trained %d runs\n", ranks, todo);
    }
    if (rank == 0 && c.attention_distance && !c.report_only && !stop_signal) failed += attention_distances(&c, runs);
    if (stop_signal) {                    // the next command reports, from every run
        fprintf(stderr, "compare: stopped by %s before the end; no report written now; the same command continues\n",
                stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
        free(runs);
        dist_finalize();
        return 128 + stop_signal;
    }
    if (rank == 0) report(&c, runs, n);     // rank 0 alone writes the report (the twins after runs[n - 1])
    free(runs);
    dist_finalize();
    if (failed) { fprintf(stderr, "compare: %d runs failed; their train.log says why; run the command again to retry them\n", failed); return 1; }
    return 0;
}
