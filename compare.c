// compare.c: the fair comparison. Trains a grid of positional schemes x seeds (x tasks) with
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
// Folder layout (OUT):
//   runs/TASK/SCHEME/seedN/   train.log (everything ./train printed), log.csv (loss per step),
//                             model.ckpt, eval.csv (task accuracy) or ppl*.csv (text), done
//   results.csv               one row per run and length bucket (tasks) or window (text)
//   summary.md                mean +- std per scheme in and out of distribution, MRR across tasks
//   *.png, *.svg, *.gp, *.dat loss curves and accuracy (or perplexity) against length, via gnuplot
// A run whose `done` file exists is not redone: run the command again to finish an interrupted grid.
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "posenc.h"

#define MAX_ITEMS 64
#define MAX_ARGS 256

typedef struct { char label[64]; char flags[512]; } Scheme;

typedef struct {
    const char *out, *data, *val_data, *train_bin, *eval_flags;
    char *tasks[MAX_ITEMS]; int n_tasks;
    Scheme schemes[MAX_ITEMS]; int n_schemes;
    long long seeds[MAX_ITEMS]; int n_seeds;
    char *extensions[MAX_ITEMS]; int n_ext;      // text: RoPE context-extension methods at evaluation
    double ext_factor;
    int jobs, threads, per_length, quiet;
    char **extra; int n_extra;                    // flags after --, given to every training run
} Cfg;

typedef struct {
    int task, scheme, seed;
    char dir[4096];
    pid_t pid;
    double t0;
    int state;                                    // 0 to do, 1 running, 2 done, 3 failed, 4 found done
} Run;

static void usage(FILE *f) {
    fprintf(f,
        "usage: ./compare --out DIR (--task NAME[,NAME...] | --data FILE) [options] [-- train flags]\n"
        "Trains every scheme x seed (x task) with the same data order and initial weights, evaluates\n"
        "each run and writes DIR/results.csv, DIR/summary.md and plots. Finished runs are kept.\n\n"
        "  --out DIR              the results folder (created)\n"
        "  --task LIST            synthetic tasks (./train --help lists them); accuracy by length\n"
        "  --data FILE            text instead: perplexity against context length (--val-data FILE optional)\n"
        "  --schemes LIST         scheme names, each run as --pe NAME (default " PE_DEFAULT_COMPARISON ")\n"
        "  --scheme LABEL=FLAGS   a scheme given by its ./train flags, e.g. 'rope25=--pe rope --rope-fraction 0.25'\n"
        "  --seeds LIST           seeds (default 1)\n"
        "  --rope-extensions LIST text: also evaluate RoPE runs with these --rope-scaling methods (linear,dynamic,yarn,llama3)\n"
        "  --rope-factor X        the factor of those methods (default 8: the longest window over the context)\n"
        "  --eval-per-length N    task: test instances per length (default 100)\n"
        "  --eval-flags 'FLAGS'   text: ./train flags for the perplexity evaluations only, e.g. '--ppl-tokens 32768'\n"
        "  --jobs N               runs at a time (default 1)\n"
        "  --threads N            OpenMP threads per run (default: cores / jobs)\n"
        "  --train PATH           the ./train binary (default: next to ./compare)\n"
        "  --quiet                no per-run progress lines\n");
}

static int split_list(char *s, char **out, int cap, const char *flag) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        CHECK(n < cap, "%s: at most %d items", flag, cap);
        out[n++] = tok;
    }
    CHECK(n > 0, "%s needs at least one item", flag);
    return n;
}

// 1 when a scheme's flags put a RoPE-family scheme (one that takes the context-extension settings,
// posenc_takes_extension) in some layer: those runs are also evaluated with the --rope-extensions methods
static int uses_rope(const Scheme *s) {
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s->flags);
    for (char *w = strtok(tmp, " \t,="); w; w = strtok(NULL, " \t,="))
        if (posenc_takes_extension(w)) return 1;
    return 0;
}

static void add_scheme(Cfg *c, const char *label, const char *flags) {
    CHECK(c->n_schemes < MAX_ITEMS, "at most %d schemes", MAX_ITEMS);
    CHECK(*label && strlen(label) < 64 && !strpbrk(label, ",/ \t"), "scheme label '%s' must be 1-63 characters "
          "without commas, slashes or spaces", label);
    for (int i = 0; i < c->n_schemes; i++) CHECK(strcmp(c->schemes[i].label, label), "scheme '%s' is given twice", label);
    Scheme *s = &c->schemes[c->n_schemes++];
    snprintf(s->label, sizeof s->label, "%s", label);
    snprintf(s->flags, sizeof s->flags, "%s", flags);
}

static void parse(Cfg *c, int argc, char **argv) {
    memset(c, 0, sizeof *c);
    c->jobs = 1; c->per_length = 100; c->ext_factor = 8;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) { usage(stdout); exit(0); }
        if (!strcmp(s, "--")) { c->extra = argv + i + 1; c->n_extra = argc - i - 1; break; }
        if (!strcmp(s, "--quiet")) { c->quiet = 1; continue; }
        CHECK(!strncmp(s, "--", 2), "unexpected argument '%s'; see ./compare --help", s);
        CHECK(i + 1 < argc, "%s needs a value (see ./compare --help)", s);
        char *v = argv[++i], *end;
        if (!strcmp(s, "--out")) c->out = v;
        else if (!strcmp(s, "--data")) c->data = v;
        else if (!strcmp(s, "--val-data")) c->val_data = v;
        else if (!strcmp(s, "--train")) c->train_bin = v;
        else if (!strcmp(s, "--eval-flags")) c->eval_flags = v;
        else if (!strcmp(s, "--task")) {
            c->n_tasks = split_list(v, c->tasks, MAX_ITEMS, "--task");
            for (int a = 0; a < c->n_tasks; a++)
                for (int b = 0; b < a; b++) CHECK(strcmp(c->tasks[a], c->tasks[b]), "--task: '%s' is given twice", c->tasks[a]);
        }
        else if (!strcmp(s, "--rope-extensions")) c->n_ext = split_list(v, c->extensions, MAX_ITEMS, "--rope-extensions");
        else if (!strcmp(s, "--schemes")) {
            char *names[MAX_ITEMS];
            int n = split_list(v, names, MAX_ITEMS, "--schemes");
            for (int k = 0; k < n; k++) { char fl[128]; snprintf(fl, sizeof fl, "--pe %s", names[k]); add_scheme(c, names[k], fl); }
        } else if (!strcmp(s, "--scheme")) {
            char *eq = strchr(v, '=');
            CHECK(eq, "--scheme %s: write LABEL=FLAGS, e.g. 'rope25=--pe rope --rope-fraction 0.25'", v);
            *eq = 0;
            add_scheme(c, v, eq + 1);
        } else if (!strcmp(s, "--seeds")) {
            char *items[MAX_ITEMS];
            c->n_seeds = split_list(v, items, MAX_ITEMS, "--seeds");
            for (int k = 0; k < c->n_seeds; k++) {
                errno = 0;
                c->seeds[k] = strtoll(items[k], &end, 10);
                CHECK(!*end && !errno && c->seeds[k] >= 0, "--seeds: '%s' is not a non-negative integer", items[k]);
                for (int b = 0; b < k; b++) CHECK(c->seeds[b] != c->seeds[k], "--seeds: %lld is given twice", c->seeds[k]);
            }
        } else if (!strcmp(s, "--rope-factor")) {
            c->ext_factor = strtod(v, &end);
            CHECK(!*end && c->ext_factor >= 1 && c->ext_factor <= 1e6, "--rope-factor %s must be a number in [1, 1e6]", v);
        } else {
            int *dst = !strcmp(s, "--jobs") ? &c->jobs : !strcmp(s, "--threads") ? &c->threads
                     : !strcmp(s, "--eval-per-length") ? &c->per_length : NULL;
            CHECK(dst, "unknown flag %s (see ./compare --help)", s);
            long x = strtol(v, &end, 10);
            CHECK(*v && !*end && x >= 1 && x <= 100000, "%s %s must be an integer in [1, 100000]", s, v);
            *dst = (int)x;
        }
    }
    CHECK(c->out, "give the results folder: --out DIR");
    CHECK((c->n_tasks > 0) != (c->data != NULL), "give either --task NAME or --data FILE (one of them)");
    CHECK(!c->n_ext || c->data, "--rope-extensions applies to text (--data), where perplexity is measured by length");
    CHECK(!c->val_data || c->data, "--val-data goes with --data");
    CHECK(!c->eval_flags || c->data, "--eval-flags applies to the perplexity evaluations of text (--data)");
    if (c->data) CHECK(access(c->data, R_OK) == 0, "--data %s cannot be read: %s", c->data, strerror(errno));
    if (!c->n_schemes) {
        static char def[] = PE_DEFAULT_COMPARISON;
        char *names[MAX_ITEMS];
        int n = split_list(def, names, MAX_ITEMS, "--schemes");
        for (int k = 0; k < n; k++) { char fl[64]; snprintf(fl, sizeof fl, "--pe %s", names[k]); add_scheme(c, names[k], fl); }
    }
    if (!c->n_seeds) { c->seeds[0] = 1; c->n_seeds = 1; }
    if (!c->threads) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        c->threads = cores / c->jobs > 0 ? (int)(cores / c->jobs) : 1;
    }
    if (!c->n_tasks) { static char text[] = "text"; c->tasks[0] = text; c->n_tasks = 1; }
    for (int k = 0; k < c->n_extra; k++)
        for (const char *const *f = (const char *const[]){ "--task", "--pe", "--pe-layers", "--input-pe", "--seed", "--save", "--log", "--eval-out",
                                                    "--eval-per-length", "--data", "--val-data", "--load", "--resume", "--threads", NULL }; *f; f++)
            CHECK(strcmp(c->extra[k], *f), "%s after -- is set by ./compare itself; use its own flags", *f);
}

// ----------------------------------------------------------------------------------------------
// running

static void mkdirs(const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(p, 0777); *s = '/'; }
    CHECK(mkdir(p, 0777) == 0 || errno == EEXIST, "cannot create the folder '%s': %s", p, strerror(errno));
}

typedef struct { char *v[MAX_ARGS]; int n; char buf[8192]; size_t used; } Argv;

static void arg(Argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(Argv *a, const char *fmt, ...) {
    CHECK(a->n < MAX_ARGS - 1, "internal: too many arguments");
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(a->buf + a->used, sizeof a->buf - a->used, fmt, ap);
    va_end(ap);
    CHECK(k >= 0 && a->used + k + 1 < sizeof a->buf, "internal: arguments too long");
    a->v[a->n++] = a->buf + a->used;
    a->v[a->n] = NULL;
    a->used += k + 1;
}

static void arg_words(Argv *a, const char *s) {      // a scheme's flags, split at spaces
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s);
    for (char *w = strtok(tmp, " \t"); w; w = strtok(NULL, " \t")) arg(a, "%s", w);
}

// Runs argv with stdout and stderr appended to log; returns the exit status (0 = success).
static int run_cmd(Argv *a, const char *log) {
    pid_t pid = fork();
    CHECK(pid >= 0, "fork failed: %s", strerror(errno));
    if (pid == 0) {
        FILE *f = fopen(log, "a");
        if (!f) _exit(127);
        fprintf(f, "$");
        for (int i = 0; i < a->n; i++) fprintf(f, " %s", a->v[i]);
        fprintf(f, "\n");
        fflush(f);
        dup2(fileno(f), 1); dup2(fileno(f), 2);
        execv(a->v[0], a->v);
        fprintf(stderr, "cannot run %s: %s\n", a->v[0], strerror(errno));
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// The commands of one run: the training (which also writes the task accuracy to eval.csv), then
// for text one perplexity evaluation per RoPE extension. cmds holds 1 + MAX_ITEMS; returns the count.
static int build_cmds(const Cfg *c, const Run *r, Argv *cmds) {
    Argv *a = &cmds[0];
    arg(a, "%s", c->train_bin);
    if (c->data) { arg(a, "--data"); arg(a, "%s", c->data); if (c->val_data) { arg(a, "--val-data"); arg(a, "%s", c->val_data); } }
    else { arg(a, "--task"); arg(a, "%s", c->tasks[r->task]); arg(a, "--eval-per-length"); arg(a, "%d", c->per_length);
           arg(a, "--eval-out"); arg(a, "%s/eval.csv", r->dir); }
    arg_words(a, c->schemes[r->scheme].flags);
    arg(a, "--seed"); arg(a, "%lld", c->seeds[r->seed]);
    arg(a, "--threads"); arg(a, "%d", c->threads);
    arg(a, "--log"); arg(a, "%s/log.csv", r->dir);
    arg(a, "--save"); arg(a, "%s/model.ckpt", r->dir);
    for (int k = 0; k < c->n_extra; k++) arg(a, "%s", c->extra[k]);
    if (!c->data) return 1;
    // perplexity at 0.5x .. 8x the context; RoPE runs also with each context-extension method
    int n_eval = 1 + (uses_rope(&c->schemes[r->scheme]) ? c->n_ext : 0);
    for (int e = 0; e < n_eval; e++) {
        Argv *b = &cmds[1 + e];
        arg(b, "%s", c->train_bin);
        arg(b, "--load"); arg(b, "%s/model.ckpt", r->dir);
        arg(b, "--threads"); arg(b, "%d", c->threads);
        arg(b, "--data"); arg(b, "%s", c->data);
        if (c->val_data) { arg(b, "--val-data"); arg(b, "%s", c->val_data); }
        for (int k = 0; k < c->n_extra; k++)          // the same validation split as training
            if (!strcmp(c->extra[k], "--val-frac") && k + 1 < c->n_extra) { arg(b, "--val-frac"); arg(b, "%s", c->extra[k + 1]); }
        const char *suffix = e ? c->extensions[e - 1] : "";
        if (e) { arg(b, "--rope-scaling"); arg(b, "%s", suffix); arg(b, "--rope-factor"); arg(b, "%g", c->ext_factor); }
        if (c->eval_flags) arg_words(b, c->eval_flags);
        arg(b, "--ppl-out"); arg(b, "%s/ppl%s%s.csv", r->dir, e ? "_" : "", suffix);
        arg(b, "--ppl-positions"); arg(b, "%s/ppl_positions%s%s.csv", r->dir, e ? "_" : "", suffix);
    }
    return n_eval + 1;
}

// A run's settings: its commands, one per line. Stored in its `done` file, so that a later
// command with other settings does not mix its runs in silently.
static char *run_settings(const Cfg *c, const Run *r) {
    Argv *cmds = xcalloc(1 + MAX_ITEMS, sizeof(Argv));
    int n = build_cmds(c, r, cmds);
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

// The child process of one run: every command, then `done` (holding the settings) marks success.
static void run_child(const Cfg *c, const Run *r) {
    char log[4200], path[4200];
    snprintf(log, sizeof log, "%s/train.log", r->dir);
    remove(log);
    Argv *cmds = xcalloc(1 + MAX_ITEMS, sizeof(Argv));
    int n = build_cmds(c, r, cmds);
    for (int i = 0; i < n; i++) if (run_cmd(&cmds[i], log)) _exit(1);
    char *set = run_settings(c, r);
    snprintf(path, sizeof path, "%s/done", r->dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(set, f) < 0 || fclose(f) != 0) _exit(1);
    _exit(0);
}

// 1 when the run finished with these settings; exits with a message when it finished with others
static int finished(const Cfg *c, const Run *r) {
    char path[4200];
    snprintf(path, sizeof path, "%s/done", r->dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *stored = NULL; size_t cap = 0;
    ssize_t k = getdelim(&stored, &cap, 0, f);
    fclose(f);
    char *want = run_settings(c, r);
    int same = k <= 0 || strcmp(stored, want) == 0;     // an empty marker records no settings
    CHECK(same, "%s was made with other settings (its commands are in %s):\n%s\nnow:\n%s"
          "give another --out, or delete that folder to redo the run", r->dir, path, stored, want);
    free(stored); free(want);
    return 1;
}

// the last line of a run's train.log that starts with prefix (for the progress report)
static void last_line(const char *dir, const char *prefix, char *out, size_t cap) {
    char p[4200], line[1024];
    snprintf(p, sizeof p, "%s/train.log", dir);
    out[0] = 0;
    FILE *f = fopen(p, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, prefix, strlen(prefix))) { line[strcspn(line, "\n")] = 0; snprintf(out, cap, "%s", line); }
    fclose(f);
}

static int run_all(const Cfg *c, Run *runs, int n) {
    int todo = 0, failed = 0;
    for (int i = 0; i < n; i++) if (runs[i].state == 0) todo++;
    printf("compare: %d runs (%d tasks x %d schemes x %d seeds), %d already done, %d to train; %d at a time, %d threads each\n",
           n, c->n_tasks, c->n_schemes, c->n_seeds, n - todo, todo, c->jobs, c->threads);
    fflush(stdout);
    int running = 0, finished = 0, next = 0;
    double t_start = now_seconds(), busy = 0;
    while (finished < todo) {
        while (running < c->jobs && next < n) {
            Run *r = &runs[next++];
            if (r->state != 0) continue;
            mkdirs(r->dir);
            fflush(stdout);
            r->pid = fork();
            CHECK(r->pid >= 0, "fork failed: %s", strerror(errno));
            if (r->pid == 0) run_child(c, r);
            r->state = 1; r->t0 = now_seconds(); running++;
        }
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        CHECK(pid > 0, "waitpid failed: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            Run *r = &runs[i];
            if (r->state != 1 || r->pid != pid) continue;
            int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            r->state = ok ? 2 : 3;
            running--; finished++; failed += !ok;
            double dt = now_seconds() - r->t0;
            busy += dt;
            char took[32], eta[32], res[1024];
            fmt_duration(dt, took, sizeof took);
            fmt_duration(busy / finished * (todo - finished) / c->jobs, eta, sizeof eta);
            last_line(r->dir, c->data ? "step" : "in-distribution", res, sizeof res);
            if (!c->quiet || !ok)
                printf("[%d/%d] %s %s seed %lld: %s in %s | %s | ETA %s\n", finished, todo, c->tasks[r->task],
                       c->schemes[r->scheme].label, c->seeds[r->seed], ok ? "done" : "FAILED", took,
                       ok ? res : "see train.log", eta);
            if (!ok) printf("        log: %s/train.log\n", r->dir);
            fflush(stdout);
        }
    }
    char total[32];
    fmt_duration(now_seconds() - t_start, total, sizeof total);
    if (todo) printf("compare: trained %d runs in %s%s\n", todo, total, failed ? " (some failed)" : "");
    return failed;
}

// ----------------------------------------------------------------------------------------------
// results

#define MAX_LEN 4096

typedef struct {           // one (run, bucket) row of an eval.csv or a ppl.csv
    int run;
    int length;            // task length, or window (tokens)
    double depth;          // retrieval depth or -1
    int ood, n, correct;   // task
    int sliding;           // text: 0 nonoverlap, 1 sliding
    int variant;           // text: 0 the run's own positions, e > 0 RoPE extension e-1
    double value;          // accuracy (task) or perplexity (text); NAN when none
    double loss;           // text: mean loss
    int tokens;            // text
    char note[128];
} Row;

typedef struct { Row *r; int n, cap; } Rows;

static void push(Rows *rs, const Row *r) {
    if (rs->n == rs->cap) { rs->cap = rs->cap ? 2 * rs->cap : 1024; rs->r = realloc(rs->r, sizeof(Row) * rs->cap); CHECK(rs->r, "out of memory"); }
    rs->r[rs->n++] = *r;
}

// splits a CSV line in place (no quoting is used by these files); returns the field count
static int fields(char *line, char **f, int cap) {
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    f[n++] = line;
    for (char *s = line; *s && n < cap; s++) if (*s == ',') { *s = 0; f[n++] = s + 1; }
    return n;
}

// Opens a finished run's CSV past its header line.
static FILE *open_result(const char *path, char *line, int cap) {
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot read '%s' (the run's done marker exists; remove it to redo the run)", path);
    CHECK(fgets(line, cap, f), "'%s' is empty; remove the run's folder to redo it", path);
    return f;
}

static void read_eval(const char *path, int run, Rows *rs) {
    char line[1024], *fl[16];
    FILE *f = open_result(path, line, sizeof line);
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 16);
        CHECK(k >= 10, "'%s': a row has %d fields, expected 10 (task,scheme,seed,length,depth,split,n,correct,accuracy,skipped)", path, k);
        // an instance the model cannot run (past a learned position table) counts as wrong
        Row r = { .run = run, .length = atoi(fl[3]), .depth = *fl[4] ? atof(fl[4]) : -1, .ood = !strcmp(fl[5], "ood"),
                  .n = atoi(fl[6]) + atoi(fl[9]), .correct = atoi(fl[7]) };
        r.value = r.n ? (double)r.correct / r.n : NAN;
        push(rs, &r);
    }
    fclose(f);
}

static void read_ppl(const char *path, int run, int variant, Rows *rs) {
    char line[1024], *fl[16];
    FILE *f = open_result(path, line, sizeof line);
    while (fgets(line, sizeof line, f)) {
        int k = fields(line, fl, 16);
        CHECK(k >= 5, "'%s': a row has %d fields, expected window,mode,tokens,loss,ppl,note", path, k);
        Row r = { .run = run, .length = atoi(fl[0]), .depth = -1, .sliding = !strcmp(fl[1], "sliding"), .variant = variant,
                  .tokens = atoi(fl[2]), .loss = *fl[3] ? atof(fl[3]) : NAN, .value = *fl[4] ? atof(fl[4]) : NAN };
        if (k > 5) snprintf(r.note, sizeof r.note, "%s", fl[5]);
        push(rs, &r);
    }
    fclose(f);
}

static void sort_ints(int *x, int n) {
    for (int i = 1; i < n; i++) for (int k = i; k > 0 && x[k] < x[k - 1]; k--) { int t = x[k]; x[k] = x[k - 1]; x[k - 1] = t; }
}

static void mean_std(const double *x, int n, double *mean, double *sd) {
    double s = 0, q = 0; int k = 0;
    for (int i = 0; i < n; i++) if (!isnan(x[i])) { s += x[i]; k++; }
    *mean = k ? s / k : NAN;
    for (int i = 0; i < n; i++) if (!isnan(x[i])) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = k > 1 ? sqrt(q / (k - 1)) : 0;
}

static int run_index(const Cfg *c, int task, int scheme, int seed) {
    return (task * c->n_seeds + seed) * c->n_schemes + scheme;
}

static int have_gnuplot(void) { return system("command -v gnuplot > /dev/null 2>&1") == 0; }

static void gnuplot(const char *out, const char *name, int *made) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp'", out, name);
    if (system(cmd) == 0) { printf("  %s/%s.png (and .svg)\n", out, name); (*made)++; }
    else printf("  gnuplot failed on %s/%s.gp\n", out, name);
}

// The terminal lines shared by every script: the PNG first, then the same plot again as SVG.
static void gp_begin(FILE *g, const char *name, const char *title, const char *xl, const char *yl) {
    fprintf(g, "set terminal pngcairo size 1000,560 noenhanced\nset output '%s.png'\n", name);
    fprintf(g, "set title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n", title, xl, yl);
}
static void gp_again_svg(FILE *g, const char *name) {
    fprintf(g, "set terminal svg size 1000,560 noenhanced\nset output '%s.svg'\nreplot\n", name);
}

static const char *COLORS[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };

// the loss curves of every run (one colour per scheme, one line per seed)
static void plot_loss(const Cfg *c, const Run *runs, int task, FILE *md, int plots, int *made) {
    char name[256], path[4200];
    snprintf(name, sizeof name, "loss_%s", c->tasks[task]);
    snprintf(path, sizeof path, "%s/%s.gp", c->out, name);
    FILE *g = fopen(path, "w");
    CHECK(g, "cannot write '%s'", path);
    char title[256];
    snprintf(title, sizeof title, "%s: training loss (every scheme and seed)", c->tasks[task]);
    gp_begin(g, name, title, "step", "loss (nats per target token)");
    fprintf(g, "set datafile separator ','\nset logscale y\nset format y '%%g'\nplot ");
    int first = 1;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int sd = 0; sd < c->n_seeds; sd++) {
            const Run *r = &runs[run_index(c, task, sc, sd)];
            if (r->state != 2 && r->state != 4) continue;
            fprintf(g, "%s'%s/log.csv' using 1:2 skip 1 with lines lw 1.5 lc rgb '%s' title '%s'", first ? "" : ", \\\n     ",
                    r->dir + strlen(c->out) + 1, COLORS[sc % 10], sd == 0 ? c->schemes[sc].label : "");
            first = 0;
        }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (plots && !first) gnuplot(c->out, name, made);
    fprintf(md, "![loss](%s.png)\n\n", name);
}

// accuracy (task) or perplexity (text) against length: one column per scheme (mean over seeds)
static void plot_by_length(const Cfg *c, const Rows *rs, int task, int train_max, int context, FILE *md, int plots, int *made) {
    int text = c->data != NULL;
    int n_var = text ? 1 + c->n_ext : 1;
    char name[256], path[4200];
    snprintf(name, sizeof name, text ? "ppl_by_length" : "accuracy_%s", c->tasks[task]);
    snprintf(path, sizeof path, "%s/%s.dat", c->out, name);
    FILE *d = fopen(path, "w");
    CHECK(d, "cannot write '%s'", path);
    // rows: every length present; columns: scheme (x variant) means over seeds (depths pooled)
    int lengths[MAX_LEN], nl = 0;
    for (int i = 0; i < rs->n; i++) {
        const Row *r = &rs->r[i];
        if ((r->run / c->n_schemes) / c->n_seeds != task || (text && r->sliding)) continue;
        int seen = 0;
        for (int k = 0; k < nl; k++) seen |= lengths[k] == r->length;
        if (!seen && nl < MAX_LEN) lengths[nl++] = r->length;
    }
    sort_ints(lengths, nl);
    double ymin = INFINITY;              // text: the best perplexity, for the y range
    fprintf(d, "# %s", text ? "window" : "length");
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++) fprintf(d, " %s%s%s", c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
    fprintf(d, "\n");
    for (int li = 0; li < nl; li++) {
        fprintf(d, "%d", lengths[li]);
        for (int sc = 0; sc < c->n_schemes; sc++)
            for (int v = 0; v < n_var; v++) {
                double sum = 0; long long num = 0, den = 0; int k = 0;
                for (int i = 0; i < rs->n; i++) {
                    const Row *r = &rs->r[i];
                    if ((r->run / c->n_schemes) / c->n_seeds != task || r->run % c->n_schemes != sc || r->length != lengths[li]) continue;
                    if (text) { if (!r->sliding && r->variant == v && !isnan(r->value)) { sum += r->value; k++; } }
                    else { num += r->correct; den += r->n; }
                }
                double val = text ? (k ? sum / k : NAN) : (den ? (double)num / den : NAN);
                if (isnan(val)) fprintf(d, " NaN"); else fprintf(d, " %.6g", val);
                if (!isnan(val) && val < ymin) ymin = val;
            }
        fprintf(d, "\n");
    }
    fclose(d);
    snprintf(path, sizeof path, "%s/%s.gp", c->out, name);
    FILE *g = fopen(path, "w");
    CHECK(g, "cannot write '%s'", path);
    char title[256];
    if (text) snprintf(title, sizeof title, "perplexity against evaluation window (trained at %d tokens; non-overlapping windows; y cut at 4x the best)", context);
    else snprintf(title, sizeof title, "%s: exact-match accuracy against length (trained on lengths <= %d; mean over seeds)", c->tasks[task], train_max);
    gp_begin(g, name, title, text ? "window (tokens)" : "length", text ? "perplexity" : "accuracy");
    // text: y from the best perplexity to 4 times it (a scheme that explodes leaves the top)
    if (text) fprintf(g, "set logscale x 2\nset logscale y\nset yrange [%g:%g]\nset ytics %.3g, 1.25\nset format y '%%.3g'\n"
                         "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb 'gray'\n", 0.95 * ymin, 4 * ymin, ymin, context, context);
    else fprintf(g, "set yrange [-0.02:1.02]\nset arrow from %g, graph 0 to %g, graph 1 nohead dt 2 lc rgb 'gray'\n", train_max + 0.5, train_max + 0.5);
    fprintf(g, "plot ");
    int col = 2;
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int v = 0; v < n_var; v++, col++) {
            if (v && !uses_rope(&c->schemes[sc])) continue;
            fprintf(g, "%s'%s.dat' using 1:%d with linespoints lw 2 pt 7 ps 0.5 lc rgb '%s' dt %d title '%s%s%s'",
                    col == 2 ? "" : ", \\\n     ", name, col, COLORS[sc % 10], v + 1, c->schemes[sc].label, v ? "+" : "",
                    v ? c->extensions[v - 1] : "");
        }
    fprintf(g, "\n");
    gp_again_svg(g, name);
    fclose(g);
    if (plots) gnuplot(c->out, name, made);
    fprintf(md, "![%s](%s.png)\n\n", text ? "perplexity" : "accuracy", name);
}

// Retrieval: the accuracy of each scheme by haystack length (rows) and key depth (columns),
// pooled over seeds: "retrieval difficulty and distractors controlled".
static void depth_tables(const Cfg *c, const Rows *rs, int task, FILE *md) {
    double depths[16]; int nd = 0, lengths[MAX_LEN], nl = 0;
    for (int i = 0; i < rs->n; i++) {
        const Row *r = &rs->r[i];
        if ((r->run / c->n_schemes) / c->n_seeds != task || r->depth < 0) continue;
        int seen = 0;
        for (int k = 0; k < nd; k++) seen |= depths[k] == r->depth;
        if (!seen && nd < 16) depths[nd++] = r->depth;
        seen = 0;
        for (int k = 0; k < nl; k++) seen |= lengths[k] == r->length;
        if (!seen && nl < MAX_LEN) lengths[nl++] = r->length;
    }
    if (!nd) return;
    sort_ints(lengths, nl);
    for (int i = 1; i < nd; i++) for (int k = i; k > 0 && depths[k] < depths[k - 1]; k--) { double t = depths[k]; depths[k] = depths[k - 1]; depths[k - 1] = t; }
    fprintf(md, "Accuracy (%%) by haystack length (tokens) and depth of the asked key (0 = start), all seeds pooled:\n\n");
    for (int sc = 0; sc < c->n_schemes; sc++) {
        fprintf(md, "| %s | ", c->schemes[sc].label);
        for (int d = 0; d < nd; d++) fprintf(md, "depth %.2f | ", depths[d]);
        fprintf(md, "\n|---|");
        for (int d = 0; d < nd; d++) fprintf(md, "---|");
        fprintf(md, "\n");
        for (int li = 0; li < nl; li++) {
            fprintf(md, "| %d |", lengths[li]);
            for (int d = 0; d < nd; d++) {
                long long num = 0, den = 0;
                for (int i = 0; i < rs->n; i++) {
                    const Row *r = &rs->r[i];
                    if ((r->run / c->n_schemes) / c->n_seeds == task && r->run % c->n_schemes == sc && r->length == lengths[li] && r->depth == depths[d])
                        { num += r->correct; den += r->n; }
                }
                if (den) fprintf(md, " %.1f |", 100.0 * num / den); else fprintf(md, " |");
            }
            fprintf(md, "\n");
        }
        fprintf(md, "\n");
    }
}

// The train-max of a task as ./train reports it ("trained on lengths a-b" in train.log).
static int task_train_max(const Run *r) {
    char line[1024];
    last_line(r->dir, "accuracy on", line, sizeof line);
    const char *s = strstr(line, "lengths ");
    int a, b;
    return s && sscanf(s, "lengths %d-%d", &a, &b) == 2 ? b : 0;
}

static int text_context(const Run *r) {
    char line[1024];
    last_line(r->dir, "model:", line, sizeof line);
    const char *s = strstr(line, "context ");
    int ctx;
    return s && sscanf(s, "context %d", &ctx) == 1 ? ctx : 0;
}

static void report(const Cfg *c, const Run *runs, int n) {
    Rows rs = { 0 };
    char path[4200];
    int text = c->data != NULL, n_var = text ? 1 + c->n_ext : 1;
    for (int i = 0; i < n; i++) {
        const Run *r = &runs[i];
        if (r->state != 2 && r->state != 4) continue;
        if (!text) { snprintf(path, sizeof path, "%s/eval.csv", r->dir); read_eval(path, i, &rs); continue; }
        for (int v = 0; v < n_var; v++) {
            if (v && !uses_rope(&c->schemes[r->scheme])) continue;
            snprintf(path, sizeof path, "%s/ppl%s%s.csv", r->dir, v ? "_" : "", v ? c->extensions[v - 1] : "");
            read_ppl(path, i, v, &rs);
        }
    }
    // results.csv: one row per run and bucket
    snprintf(path, sizeof path, "%s/results.csv", c->out);
    FILE *f = fopen(path, "w");
    CHECK(f, "cannot write '%s'", path);
    if (text) fprintf(f, "data,scheme,seed,window,mode,tokens,loss,ppl,note\n");
    else fprintf(f, "task,scheme,seed,length,depth,split,n,correct,accuracy\n");
    for (int i = 0; i < rs.n; i++) {
        const Row *r = &rs.r[i];
        const Run *u = &runs[r->run];
        char label[160];
        snprintf(label, sizeof label, "%s%s%s", c->schemes[u->scheme].label, r->variant ? "+" : "", r->variant ? c->extensions[r->variant - 1] : "");
        if (text) {
            fprintf(f, "%s,%s,%lld,%d,%s,%d,", c->data, label, c->seeds[u->seed], r->length, r->sliding ? "sliding" : "nonoverlap", r->tokens);
            if (!isnan(r->loss)) fprintf(f, "%.6f", r->loss);
            fprintf(f, ",");
            if (!isnan(r->value)) fprintf(f, "%.6f", r->value);
            fprintf(f, ",%s\n", r->note);
        } else {
            fprintf(f, "%s,%s,%lld,%d,", c->tasks[u->task], label, c->seeds[u->seed], r->length);
            if (r->depth >= 0) fprintf(f, "%.4g", r->depth);
            fprintf(f, ",%s,%d,%d,", r->ood ? "ood" : "id", r->n, r->correct);
            if (r->n) fprintf(f, "%.6f", r->value);
            fprintf(f, "\n");
        }
    }
    fclose(f);

    // summary.md
    snprintf(path, sizeof path, "%s/summary.md", c->out);
    FILE *md = fopen(path, "w");
    CHECK(md, "cannot write '%s'", path);
    int plots = have_gnuplot(), made = 0;
    if (!plots) printf("gnuplot not found: apt-get install gnuplot-nox, then run this command again for the plots "
                       "(results.csv and summary.md are written; the .gp scripts are in %s)\n", c->out);
    else printf("plots:\n");
    double *mrr = xcalloc(c->n_schemes, sizeof(double));
    int mrr_n = 0;
    for (int t = 0; t < c->n_tasks; t++) {
        if (!text) {
            int train_max = 0;
            for (int i = 0; i < n && !train_max; i++) if (runs[i].task == t && (runs[i].state == 2 || runs[i].state == 4)) train_max = task_train_max(&runs[i]);
            fprintf(md, "## %s\n\nExact-match accuracy of the greedy answer (%%), mean +- std over %d seed%s; "
                        "in-distribution: lengths <= %d, longer: the rest up to the longest test length, all: every "
                        "test length with equal weight.\n\n"
                        "| scheme | in-distribution | longer than training | all lengths | per seed (longer) |\n|---|---|---|---|---|\n",
                    c->tasks[t], c->n_seeds, c->n_seeds > 1 ? "s" : "", train_max);
            double acc[MAX_ITEMS][MAX_ITEMS][3];       // [scheme][seed][in-distribution, longer, all]
            for (int sc = 0; sc < c->n_schemes; sc++)
                for (int sd = 0; sd < c->n_seeds; sd++) {
                    int ri = run_index(c, t, sc, sd);
                    for (int o = 0; o < 3; o++) {
                        long long num = 0, den = 0;
                        for (int i = 0; i < rs.n; i++)
                            if (rs.r[i].run == ri && (o == 2 || rs.r[i].ood == o)) { num += rs.r[i].correct; den += rs.r[i].n; }
                        acc[sc][sd][o] = den ? 100.0 * num / den : NAN;
                    }
                }
            for (int sc = 0; sc < c->n_schemes; sc++) {
                double x[3][MAX_ITEMS], m[3], s[3];
                for (int o = 0; o < 3; o++) { for (int sd = 0; sd < c->n_seeds; sd++) x[o][sd] = acc[sc][sd][o]; mean_std(x[o], c->n_seeds, &m[o], &s[o]); }
                fprintf(md, "| %s | %.1f +- %.1f | %.1f +- %.1f | %.1f +- %.1f | ", c->schemes[sc].label, m[0], s[0], m[1], s[1], m[2], s[2]);
                for (int sd = 0; sd < c->n_seeds; sd++) fprintf(md, "%s%.1f", sd ? " " : "", acc[sc][sd][1]);
                fprintf(md, " |\n");
            }
            // the NoPE paper's ranking: per (task, seed), rank the schemes by accuracy on longer
            // lengths (1 = best; ties share the better rank) and average 1/rank
            for (int sd = 0; sd < c->n_seeds; sd++) {
                int complete = 1;
                for (int sc = 0; sc < c->n_schemes; sc++) complete &= !isnan(acc[sc][sd][1]);
                if (!complete) continue;
                for (int sc = 0; sc < c->n_schemes; sc++) {
                    int rank = 1;
                    for (int k = 0; k < c->n_schemes; k++) rank += acc[k][sd][1] > acc[sc][sd][1];
                    mrr[sc] += 1.0 / rank;
                }
                mrr_n++;
            }
            fprintf(md, "\n");
            depth_tables(c, &rs, t, md);
            plot_by_length(c, &rs, t, train_max, 0, md, plots, &made);
        } else {
            int context = 0;
            for (int i = 0; i < n && !context; i++) if (runs[i].state == 2 || runs[i].state == 4) context = text_context(&runs[i]);
            fprintf(md, "## Perplexity against context length on %s\n\nTrained at %d tokens; perplexity (mean +- std over %d seed%s) "
                        "on windows of each length, first non-overlapping windows, then a sliding window "
                        "(each token scored once, with at least half a window of context).\n\n", c->data, context, c->n_seeds,
                    c->n_seeds > 1 ? "s" : "");
            int windows[64], nw = 0;
            for (int i = 0; i < rs.n; i++) {
                int seen = 0;
                for (int k = 0; k < nw; k++) seen |= windows[k] == rs.r[i].length;
                if (!seen && nw < 64) windows[nw++] = rs.r[i].length;
            }
            sort_ints(windows, nw);
            for (int mode = 0; mode < 2; mode++) {
                char notes[1024] = "";
                fprintf(md, "%s\n\n| scheme |", mode ? "Sliding window:" : "Non-overlapping windows:");
                for (int w = 0; w < nw; w++) fprintf(md, " %d |", windows[w]);
                fprintf(md, "\n|---|");
                for (int w = 0; w < nw; w++) fprintf(md, "---|");
                fprintf(md, "\n");
                for (int sc = 0; sc < c->n_schemes; sc++)
                    for (int v = 0; v < n_var; v++) {
                        if (v && !uses_rope(&c->schemes[sc])) continue;
                        fprintf(md, "| %s%s%s |", c->schemes[sc].label, v ? "+" : "", v ? c->extensions[v - 1] : "");
                        for (int w = 0; w < nw; w++) {
                            double x[MAX_ITEMS], m, s; const char *note = "";
                            for (int sd = 0; sd < c->n_seeds; sd++) {
                                x[sd] = NAN;
                                for (int i = 0; i < rs.n; i++) {
                                    const Row *r = &rs.r[i];
                                    if (r->run == run_index(c, t, sc, sd) && r->variant == v && r->sliding == mode && r->length == windows[w]) {
                                        x[sd] = r->value;
                                        if (r->note[0]) note = r->note;
                                    }
                                }
                            }
                            mean_std(x, c->n_seeds, &m, &s);
                            if (isnan(m)) {
                                fprintf(md, " n/a |");
                                char line[256];
                                snprintf(line, sizeof line, "n/a for %s: %s. ", c->schemes[sc].label, *note ? note : "no number");
                                if (!strstr(notes, line) && strlen(notes) + strlen(line) < sizeof notes) strcat(notes, line);
                            }
                            else if (c->n_seeds > 1) fprintf(md, " %.2f +- %.2f |", m, s);
                            else fprintf(md, " %.2f |", m);
                        }
                        fprintf(md, "\n");
                    }
                fprintf(md, "\n%s%s", notes, *notes ? "\n\n" : "");
            }
            plot_by_length(c, &rs, t, 0, context, md, plots, &made);
        }
        plot_loss(c, runs, t, md, plots, &made);
    }
    if (!text && mrr_n) {
        fprintf(md, "## Mean reciprocal rank\n\nThe NoPE paper's aggregate: for every task and seed the schemes are ranked by "
                    "accuracy on lengths longer than training (1 = best, ties share the better rank); the table averages "
                    "1/rank over %d task x seed configurations.\n\n| scheme | MRR |\n|---|---|\n", mrr_n);
        for (int sc = 0; sc < c->n_schemes; sc++) fprintf(md, "| %s | %.3f |\n", c->schemes[sc].label, mrr[sc] / mrr_n);
        fprintf(md, "\n");
    }
    fclose(md);
    free(mrr);
    free(rs.r);
    // print the summary
    printf("\n");
    snprintf(path, sizeof path, "%s/summary.md", c->out);
    FILE *s = fopen(path, "r");
    char line[4096];
    while (s && fgets(line, sizeof line, s)) if (strncmp(line, "![", 2)) fputs(line, stdout);
    if (s) fclose(s);
    printf("results: %s/results.csv, %s/summary.md%s\n", c->out, c->out, made ? ", plots listed above" : "");
}

int main(int argc, char **argv) {
    Cfg c;
    parse(&c, argc, argv);
    static char bin[4096];
    if (!c.train_bin) {
        const char *slash = strrchr(argv[0], '/');
        snprintf(bin, sizeof bin, "%.*strain", slash ? (int)(slash - argv[0] + 1) : 2, slash ? argv[0] : "./");
        c.train_bin = bin;
    }
    CHECK(access(c.train_bin, X_OK) == 0, "cannot run the trainer '%s' (build it with make, or give --train PATH)", c.train_bin);
    mkdirs(c.out);
    int n = c.n_tasks * c.n_schemes * c.n_seeds;
    Run *runs = xcalloc(n, sizeof(Run));
    for (int t = 0; t < c.n_tasks; t++)
        for (int sd = 0; sd < c.n_seeds; sd++)
            for (int sc = 0; sc < c.n_schemes; sc++) {
                Run *r = &runs[run_index(&c, t, sc, sd)];
                r->task = t; r->scheme = sc; r->seed = sd;
                snprintf(r->dir, sizeof r->dir, "%s/runs/%s/%s/seed%lld", c.out, c.tasks[t], c.schemes[sc].label, c.seeds[sd]);
                r->state = finished(&c, r) ? 4 : 0;
            }
    int failed = run_all(&c, runs, n);
    report(&c, runs, n);
    free(runs);
    if (failed) { fprintf(stderr, "compare: %d runs failed; their train.log says why; run the command again to retry them\n", failed); return 1; }
    return 0;
}
