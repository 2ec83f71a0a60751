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
// lab/compare.c runs the grid; lab/compare_report.c reads the results and writes the report.
//
// Folder layout (OUT):
//   runs/TASK/SCHEME/seedN/   train.log (everything ./train printed), log.csv (loss per step),
//                             model.ckpt, eval.csv (task accuracy) or ppl*.csv (text), done,
//                             attention.csv (text with --attention-stats)
//   results.csv               one row per run and length bucket (tasks) or window (text)
//   runs.csv                  tasks: one row per run (fitted, steps to fit, accuracies, degenerate lengths)
//   summary.md                per task: fitted runs, means with 95% bootstrap intervals, test pools,
//                             degenerate runs, paired tests of every two schemes; pooled tests, the
//                             MRR with its interval, the --claims verdicts
//   *.png, *.svg, *.gp, *.dat loss curves and accuracy (or perplexity) against length, via gnuplot
// A run whose `done` file exists is not redone: run the command again to finish an interrupted grid.
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/compare.h"
#include "dist/dist.h"
#include "eval/perplexity.h"
#include "posenc.h"

#define MAX_ARGS 256
#define MAX_CMDS (4 + MAX_ITEMS)     // a run's commands: training, up to 1 + MAX_ITEMS perplexity evaluations,
                                     // LongRoPE's search, attention

static void usage(FILE *f) {
    fprintf(f,
        "usage: ./compare --out DIR (--task NAME[,NAME...] | --data PATH) [options] [-- train flags]\n"
        "Trains every scheme x seed (x task) with the same data order and initial weights, evaluates\n"
        "each run and writes DIR/results.csv, DIR/runs.csv (tasks), DIR/summary.md and plots. Finished runs are kept.\n\n"
        "  --out DIR              the results folder (created)\n"
        "  --task LIST            synthetic tasks (./train --help lists them); accuracy by length\n"
        "  --data PATH            text instead (a file, folder or quoted glob, as ./train --data): perplexity against\n"
        "                         context length (--val-data PATH optional)\n"
        "  --schemes LIST         scheme names, each run as --pe NAME (default " PE_DEFAULT_COMPARISON ")\n"
        "  --scheme LABEL=FLAGS   a scheme given by its ./train flags, e.g. 'rope25=--pe rope --rope-fraction 0.25'\n"
        "  --seeds LIST           seeds (default 1)\n"
        "  --rope-extensions LIST text: also evaluate RoPE runs with these --rope-scaling methods (linear,dynamic,yarn,llama3,\n"
        "                         longrope: its lists first searched per run on validation tokens the evaluations do not score)\n"
        "  --rope-factor X        the factor of those methods (default 8: the longest window over the context)\n"
        "  --eval-per-length N    task: test instances per length (default 100)\n"
        "  --fit-target A         task: fit-first training, ./train --fit-target A for every run (give --max-steps N\n"
        "                         after --); runs that do not reach A are reported as not fitted and left out of\n"
        "                         the comparisons\n"
        "  --claims 'a>b,...'     task: test each claim (scheme a beats scheme b beyond the training lengths) with\n"
        "                         the paired test pooled over tasks and per task: supported, contradicted or not\n"
        "                         distinguishable\n"
        "  --report-only          write the report from the finished runs in --out (give the flags that trained\n"
        "                         them); train nothing\n"
        "  --eval-flags 'FLAGS'   text: ./train flags for the perplexity evaluations only, e.g. '--ppl-tokens 32768'\n"
        "  --double-length LIST   text: also train each listed scheme at twice the context with half the rows (give\n"
        "                         --seq T --batch B after --), as LABEL@2T, and compare at 2T: every listed scheme\n"
        "                         trained at T against every one trained at 2T, paired by seed (the ALiBi paper's test)\n"
        "  --attention-stats      text: also measure each run's attention (./train --attention-stats, with --bos when\n"
        "                         the run trained with it) and add the collapsed fraction of heads by layer to summary.md\n"
        "  --attention-distance   task: the NoPE paper's attention distance (JSD to the nearest head, by layer) of\n"
        "                         nope's runs to every scheme's run of the same seed, and to nope's of the next\n"
        "                         seed (the baseline), after training; a table and a plot by layer in summary.md\n"
        "  --jobs N               runs at a time (default 1)\n"
        "  --threads N            OpenMP threads per run (default: cores / jobs)\n"
        "  --train PATH           the ./train binary (default: next to ./compare)\n"
        "  --launch 'WORDS'       put WORDS before each training command, e.g. 'mpirun -np 2 --bind-to core' to\n"
        "                         train each run on 2 ranks (./train built with make MPI=1); not under mpirun\n"
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
int uses_rope(const Scheme *s) {
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
    s->long_of = -1;
}

// A scheme's flags may set its positions only (--pe, --pe-layers, --input-pe and the scheme
// settings): anything else would make its runs differ from the others in more than the scheme.
static void check_scheme_flags(const char *label, const char *flags) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", flags);
    int words = 0;
    for (char *w = strtok(buf, " \t"); w; w = strtok(NULL, " \t")) {
        words++;
        if (strncmp(w, "--", 2)) continue;       // a value
        const char *name = w + 2;
        CHECK(!strcmp(name, "pe") || !strcmp(name, "pe-layers") || !strcmp(name, "input-pe") || posenc_is_flag(name),
              "--scheme %s=%s: %s is not a positional setting; a scheme gives its positions only (--pe, --pe-layers, "
              "--input-pe and the scheme settings), so that its runs differ from the others in nothing else; give "
              "other flags after -- (every run)", label, flags, w);
    }
    CHECK(words, "--scheme %s=: give the scheme's flags, e.g. '%s=--pe rope --rope-fraction 0.25'", label, label);
}

// A list of positive multiples of the context (e.g. "0.5,1,2"), halved into out: the same window
// lengths for a model trained at twice the context. Returns 1, 0 when out is too short, -1 when the
// list is not such a list.
static int halve_multiples(const char *list, char *out, size_t cap) {
    char buf[256], *end;
    snprintf(buf, sizeof buf, "%s", list);
    out[0] = 0;
    for (char *m = strtok(buf, ","); m; m = strtok(NULL, ",")) {
        double x = strtod(m, &end);
        if (!(x > 0) || *end) return -1;
        size_t u = strlen(out);
        int w = snprintf(out + u, cap - u, "%s%.17g", u ? "," : "", x / 2);
        if (w <= 0 || (size_t)w >= cap - u) return 0;
    }
    return 1;
}

// The value of the last `flag` among n words (NULL when absent).
static const char *last_value(char *const *w, int n, const char *flag) {
    const char *v = NULL;
    for (int k = 0; k + 1 < n; k++) if (!strcmp(w[k], flag)) v = w[k + 1];
    return v;
}

const char *eval_flag(const Cfg *c, const char *flag, char *buf, size_t cap) {
    char ev[512] = "", *words[64];
    int nw = 0;
    if (c->eval_flags) snprintf(ev, sizeof ev, "%s", c->eval_flags);
    for (char *w = strtok(ev, " \t"); w && nw < 64; w = strtok(NULL, " \t")) words[nw++] = w;
    const char *v = last_value(words, nw, flag);
    if (!v) return NULL;
    snprintf(buf, cap, "%s", v);
    return buf;
}

// --double-length 'alibi,rope': each listed scheme also trained at twice the context with half the
// rows (the same tokens per step), as scheme LABEL@2T, and its perplexity windows halved as
// multiples so that they are the same lengths as the others'.
static void add_double_length(Cfg *c, char *list) {
    CHECK(c->data, "--double-length applies to text (--data): it compares perplexity at twice the training context");
    const char *seq = last_value(c->extra, c->n_extra, "--seq"), *batch = last_value(c->extra, c->n_extra, "--batch");
    CHECK(seq && batch, "--double-length needs the context and the rows per step after --: give --seq T --batch B "
          "(the doubled runs train with --seq 2T --batch B/2)");
    CHECK(!last_value(c->extra, c->n_extra, "--context"), "--double-length: --context after -- would give the models "
          "trained at T and at 2T one context, and their windows (multiples of it) would not match; drop it (each "
          "run's context is its --seq)");
    char *end;
    long T = strtol(seq, &end, 10), B = strtol(batch, &end, 10);
    CHECK(T >= 1 && T <= 1 << 20, "--double-length: --seq %s after -- is not a context length", seq);
    CHECK(B >= 2 && B % 2 == 0, "--double-length: --batch %s after -- must be even, so that the doubled runs take "
          "half the rows (the same tokens per step)", batch);
    c->context = (int)T;
    // the windows the others are evaluated at, as multiples of T: those of --eval-flags, else ./train's default
    char gbuf[256], def[] = PPL_DEFAULT_WINDOWS;
    const char *given = eval_flag(c, "--ppl-windows", gbuf, sizeof gbuf);
    char half[200];                 // (200: "--ppl-windows " and the list fit a Scheme's eval_post)
    int h = halve_multiples(given ? given : def, half, sizeof half);
    CHECK(h >= 0, "--double-length: --ppl-windows '%s' in --eval-flags is not a list of multiples", given);
    CHECK(h > 0, "--double-length: the --ppl-windows list '%s' is too long (at most 199 characters once halved)",
          given ? given : def);
    char *items[MAX_ITEMS];
    int n = split_list(list, items, MAX_ITEMS, "--double-length"), base = c->n_schemes;
    for (int k = 0; k < n; k++) {
        int x = -1;
        for (int sc = 0; sc < base; sc++) if (!strcmp(c->schemes[sc].label, items[k])) x = sc;
        CHECK(x >= 0, "--double-length: '%s' is not one of the schemes compared (--schemes / --scheme labels)", items[k]);
        char label[96];
        snprintf(label, sizeof label, "%s@%ld", items[k], 2 * T);
        add_scheme(c, label, c->schemes[x].flags);
        Scheme *s = &c->schemes[c->n_schemes - 1];
        s->long_of = x;
        snprintf(s->post, sizeof s->post, "--seq %ld --batch %ld", 2 * T, B / 2);
        snprintf(s->eval_post, sizeof s->eval_post, "--ppl-windows %s", half);
    }
}

// --claims 'a>b,b>c': each claim's two schemes, by their labels
static void parse_claims(Cfg *c, char *v) {
    char *items[MAX_ITEMS];
    c->n_claims = split_list(v, items, MAX_ITEMS, "--claims");
    for (int k = 0; k < c->n_claims; k++) {
        char *gt = strchr(items[k], '>');
        CHECK(gt && !strchr(gt + 1, '>'), "--claims: '%s' is not a claim; write A>B with two scheme labels (scheme A beats scheme B)", items[k]);
        *gt = 0;
        const char *side[2] = { items[k], gt + 1 };
        for (int j = 0; j < 2; j++) {
            c->claims[k][j] = -1;
            for (int sc = 0; sc < c->n_schemes; sc++) if (!strcmp(c->schemes[sc].label, side[j])) c->claims[k][j] = sc;
            CHECK(c->claims[k][j] >= 0, "--claims: '%s' is not one of the schemes compared (--schemes / --scheme labels)", side[j]);
        }
        CHECK(c->claims[k][0] != c->claims[k][1], "--claims: '%s>%s' compares a scheme with itself", side[0], side[1]);
    }
}

void compare_parse(Cfg *c, int argc, char **argv) {
    memset(c, 0, sizeof *c);
    char *claims = NULL, *doubled = NULL;
    c->jobs = 1; c->per_length = 100; c->ext_factor = 8;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) { usage(stdout); exit(0); }
        if (!strcmp(s, "--")) { c->extra = argv + i + 1; c->n_extra = argc - i - 1; break; }
        if (!strcmp(s, "--quiet")) { c->quiet = 1; continue; }
        if (!strcmp(s, "--report-only")) { c->report_only = 1; continue; }
        if (!strcmp(s, "--attention-stats")) { c->attention_stats = 1; continue; }
        if (!strcmp(s, "--attention-distance")) { c->attention_distance = 1; continue; }
        CHECK(!strncmp(s, "--", 2), "unexpected argument '%s'; see ./compare --help", s);
        CHECK(i + 1 < argc, "%s needs a value (see ./compare --help)", s);
        char *v = argv[++i], *end;
        if (!strcmp(s, "--out")) c->out = v;
        else if (!strcmp(s, "--data")) c->data = v;
        else if (!strcmp(s, "--val-data")) c->val_data = v;
        else if (!strcmp(s, "--train")) c->train_bin = v;
        else if (!strcmp(s, "--launch")) { CHECK(*v, "--launch: give the words to put before ./train, e.g. 'mpirun -np 2'"); c->launch = v; }
        else if (!strcmp(s, "--eval-flags")) c->eval_flags = v;
        else if (!strcmp(s, "--claims")) claims = v;
        else if (!strcmp(s, "--double-length")) doubled = v;
        else if (!strcmp(s, "--fit-target")) {
            double a = strtod(v, &end);
            CHECK(*v && !*end && a > 0 && a <= 1, "--fit-target %s must be a validation accuracy in (0, 1], e.g. 0.9", v);
            c->fit_target = v;
        }
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
            check_scheme_flags(v, eq + 1);
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
    CHECK(!c->attention_stats || c->data, "--attention-stats applies to text (--data): ./train measures attention on windows of text");
    int longrope = 0;
    for (int k = 0; k < c->n_ext; k++) longrope |= !strcmp(c->extensions[k], "longrope");
    if (longrope) {
        // each run's LongRoPE search scores the validation tokens after those the evaluations score
        // (build_cmds): it must know where they end, and read the same validation text
        char tb[64];
        CHECK(eval_flag(c, "--ppl-tokens", tb, sizeof tb), "--rope-extensions longrope: give --eval-flags '--ppl-tokens N', the "
              "validation tokens the evaluations score; each run's LongRoPE search scores the ones after them (without it "
              "the evaluations take up to %d, and a shorter validation text leaves the search nothing)", PPL_DEFAULT_TOKENS);
        const char *other[] = { "--val-frac", "--val-data", "--data" };
        for (int k = 0; k < 3; k++)
            CHECK(!eval_flag(c, other[k], tb, sizeof tb), "--rope-extensions longrope: --eval-flags gives %s, so the "
                  "evaluations would read another validation text than the LongRoPE search; give ./compare --val-data, or "
                  "--val-frac after --, which both use", other[k]);
    }
    CHECK(!c->attention_distance || !c->data, "--attention-distance applies to tasks (--task): it compares task models "
          "on the same test instances");
    CHECK(!c->fit_target || !c->data, "--fit-target applies to tasks (--task), whose in-distribution validation accuracy it reads");
    CHECK(!claims || !c->data, "--claims applies to tasks (--task): it compares accuracy beyond the training lengths");
    // a glob pattern ('dir/*.bin') names no file itself: ./train expands and checks it
    if (c->data && !strpbrk(c->data, "*?[")) CHECK(access(c->data, R_OK) == 0, "--data %s cannot be read: %s", c->data, strerror(errno));
    if (!c->n_schemes) {
        static char def[] = PE_DEFAULT_COMPARISON;
        char *names[MAX_ITEMS];
        int n = split_list(def, names, MAX_ITEMS, "--schemes");
        for (int k = 0; k < n; k++) { char fl[64]; snprintf(fl, sizeof fl, "--pe %s", names[k]); add_scheme(c, names[k], fl); }
    }
    if (claims) parse_claims(c, claims);
    if (doubled) add_double_length(c, doubled);
    CHECK(!c->attention_distance || (nope_scheme(c) >= 0 && (c->n_schemes > 1 || c->n_seeds > 1)),
          "--attention-distance measures every scheme's attention against NoPE's: give a scheme labelled nope "
          "(--schemes nope,...) and another scheme or a second seed");
    if (!c->n_seeds) { c->seeds[0] = 1; c->n_seeds = 1; }
    if (!c->threads) {
        // the cores this process may run on (under mpirun: the rank's binding), else all online
        cpu_set_t set;
        long cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
        c->threads = cores / c->jobs > 0 ? (int)(cores / c->jobs) : 1;
    }
    if (!c->n_tasks) { static char text[] = "text"; c->tasks[0] = text; c->n_tasks = 1; }
    for (int k = 0; k < c->n_extra; k++)
        for (const char *const *f = (const char *const[]){ "--task", "--pe", "--pe-layers", "--input-pe", "--seed", "--save", "--log", "--eval-out",
                                                    "--eval-per-length", "--data", "--val-data", "--load", "--resume", "--threads",
                                                    "--fit-target", NULL }; *f; f++)
            CHECK(strcmp(c->extra[k], *f), "%s after -- is set by ./compare itself; use its own flags", *f);
    // a scheme setting after -- would go to every run and override a scheme's own (it follows them)
    for (int k = 0; k < c->n_extra; k++)
        CHECK(strncmp(c->extra[k], "--", 2) || !posenc_is_flag(c->extra[k] + 2), "%s after -- is a positional "
              "setting: it would apply to every scheme and override their own; give it in a scheme, e.g. "
              "--scheme 'LABEL=--pe rope %s ...'", c->extra[k], c->extra[k]);
    // fit-first: training stops at the target or at the budget, so the budget is --max-steps
    int max_steps = 0, steps = 0;
    for (int k = 0; k < c->n_extra; k++) { max_steps |= !strcmp(c->extra[k], "--max-steps"); steps |= !strcmp(c->extra[k], "--steps"); }
    CHECK(!c->fit_target || max_steps, "--fit-target needs a step budget: give --max-steps N after --");
    CHECK(!c->fit_target || !steps, "--steps after -- with --fit-target: fit-first training runs until the target or --max-steps; "
          "give --max-steps N instead of --steps");
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
        if (dist_mpi()) forget_mpi_job();
        execvp(a->v[0], a->v);
        fprintf(stderr, "cannot run %s: %s\n", a->v[0], strerror(errno));
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
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

// The start of a command that evaluates a run's model on text: ./train --load its checkpoint, with
// the run's threads and the same validation text and split as its training.
static void eval_command(Argv *a, const Cfg *c, const Run *r) {
    arg(a, "%s", c->train_bin);
    arg(a, "--load"); arg(a, "%s/model.ckpt", r->dir);
    arg(a, "--threads"); arg(a, "%d", c->threads);
    arg(a, "--data"); arg(a, "%s", c->data);
    if (c->val_data) { arg(a, "--val-data"); arg(a, "%s", c->val_data); }
    for (int k = 0; k < c->n_extra; k++)
        if (!strcmp(c->extra[k], "--val-frac") && k + 1 < c->n_extra) { arg(a, "--val-frac"); arg(a, "%s", c->extra[k + 1]); }
}

// The commands of one run: the training (which also writes the task accuracy to eval.csv), then
// for text one perplexity evaluation per RoPE extension and, with --attention-stats, the attention
// statistics (attention.csv). cmds holds MAX_CMDS; returns the count.
static int build_cmds(const Cfg *c, const Run *r, Argv *cmds) {
    Argv *a = &cmds[0];
    if (c->launch) arg_words(a, c->launch);
    arg(a, "%s", c->train_bin);
    if (c->data) { arg(a, "--data"); arg(a, "%s", c->data); if (c->val_data) { arg(a, "--val-data"); arg(a, "%s", c->val_data); } }
    else { arg(a, "--task"); arg(a, "%s", c->tasks[r->task]); arg(a, "--eval-per-length"); arg(a, "%d", c->per_length);
           arg(a, "--eval-out"); arg(a, "%s/eval.csv", r->dir); }
    if (c->fit_target) { arg(a, "--fit-target"); arg(a, "%s", c->fit_target); }
    arg_words(a, c->schemes[r->scheme].flags);
    arg(a, "--seed"); arg(a, "%lld", c->seeds[r->seed]);
    arg(a, "--threads"); arg(a, "%d", c->threads);
    arg(a, "--log"); arg(a, "%s/log.csv", r->dir);
    arg(a, "--save"); arg(a, "%s/model.ckpt", r->dir);
    for (int k = 0; k < c->n_extra; k++) arg(a, "%s", c->extra[k]);
    const Scheme *sch = &c->schemes[r->scheme];
    if (*sch->post) arg_words(a, sch->post);
    if (!c->data) return 1;
    // perplexity at 0.5x .. 8x the context; RoPE runs also with each context-extension method (not
    // those trained at twice the context: the extensions are measured on the models trained at T)
    int n_eval = 1 + (takes_extensions(sch) ? c->n_ext : 0), nc = 1;
    for (int e = 0; e < n_eval; e++) {
        const char *suffix = e ? c->extensions[e - 1] : "";
        int longrope = !strcmp(suffix, "longrope");
        if (longrope) {
            // LongRoPE's lists are searched for this model first (./train --longrope-search), scored on
            // validation tokens that the evaluations do not score: from the one after the last they read
            // (they score --ppl-tokens tokens after their --ppl-skip, and read one more)
            Argv *q = &cmds[nc++];
            char tb[64], sb[64];
            const char *pt = eval_flag(c, "--ppl-tokens", tb, sizeof tb), *ps = eval_flag(c, "--ppl-skip", sb, sizeof sb);
            long long skip = (ps ? atoll(ps) : 0) + (pt ? atoll(pt) : PPL_DEFAULT_TOKENS) + 1;
            eval_command(q, c, r);
            arg(q, "--rope-factor"); arg(q, "%g", c->ext_factor);
            arg(q, "--ppl-skip"); arg(q, "%lld", skip);
            arg(q, "--longrope-search"); arg(q, "%s/longrope", r->dir);
        }
        Argv *b = &cmds[nc++];
        eval_command(b, c, r);
        if (e) { arg(b, "--rope-scaling"); arg(b, "%s", suffix); arg(b, "--rope-factor"); arg(b, "%g", c->ext_factor); }
        if (longrope) {
            arg(b, "--longrope-short"); arg(b, "%s/longrope.short", r->dir);
            arg(b, "--longrope-long"); arg(b, "%s/longrope.long", r->dir);
        }
        if (c->eval_flags) arg_words(b, c->eval_flags);
        if (*sch->eval_post) arg_words(b, sch->eval_post);
        arg(b, "--ppl-out"); arg(b, "%s/ppl%s%s.csv", r->dir, e ? "_" : "", suffix);
        arg(b, "--ppl-positions"); arg(b, "%s/ppl_positions%s%s.csv", r->dir, e ? "_" : "", suffix);
    }
    if (!c->attention_stats) return nc;
    Argv *s = &cmds[nc++];                    // at 0.5x .. 8x the context, the run's own positions
    eval_command(s, c, r);
    if (run_bos(c, r)) arg(s, "--bos");
    if (sch->long_of >= 0) {                  // trained at 2T: the same window lengths as the runs at T
        char half[128];
        CHECK(halve_multiples(PPL_DEFAULT_WINDOWS, half, sizeof half) > 0, "internal: halving %s", PPL_DEFAULT_WINDOWS);
        arg(s, "--attention-lengths"); arg(s, "%s", half);
    }
    arg(s, "--attention-stats"); arg(s, "%s/attention.csv", r->dir);
    return nc;
}

// A run's settings: its commands, one per line. Stored in its `done` file, so that a later
// command with other settings does not mix its runs in silently.
static char *run_settings(const Cfg *c, const Run *r) {
    Argv *cmds = xcalloc(MAX_CMDS, sizeof(Argv));
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
    Argv *cmds = xcalloc(MAX_CMDS, sizeof(Argv));
    int n = build_cmds(c, r, cmds);
    for (int i = 0; i < n; i++) if (run_cmd(&cmds[i], log)) _exit(1);
    char *set = run_settings(c, r), tmp[4300];
    snprintf(path, sizeof path, "%s/done", r->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    // whole or not at all (written, synced, renamed): a marker cut short would record no settings
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(set, f) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "compare: cannot write %s: %s\n", path, strerror(errno));
        _exit(1);
    }
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
    // An empty marker records no settings: a run made by hand for a report, which only
    // --report-only takes (./compare writes its markers whole, with the settings)
    CHECK(k > 0 || c->report_only, "%s is empty: it records no settings, so the run cannot be checked against these "
          "(made by hand, or by an older ./compare cut short); delete %s to redo the run, or use --report-only", path, r->dir);
    int same = k <= 0 || strcmp(stored, want) == 0;
    CHECK(same, "%s was made with other settings (its commands are in %s):\n%s\nnow:\n%s"
          "give another --out, or delete that folder to redo the run", r->dir, path, stored, want);
    free(stored); free(want);
    return 1;
}

void last_line(const char *dir, const char *prefix, char *out, size_t cap) {
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
    int todo = 0, failed = 0, done = 0, elsewhere = 0;
    for (int i = 0; i < n; i++) {
        todo += runs[i].state == RUN_TODO;
        done += runs[i].state == RUN_FOUND_DONE;
        elsewhere += runs[i].state == RUN_ELSEWHERE;
    }
    printf("compare: %d runs (%d tasks x %d schemes x %d seeds), %d already done, %d to train", n, c->n_tasks,
           c->n_schemes, c->n_seeds, done, todo);
    if (elsewhere) printf(" here (rank 0; %d on the other ranks)", elsewhere);
    printf("; %d at a time, %d threads each\n", c->jobs, c->threads);
    fflush(stdout);
    int running = 0, finished = 0, next = 0;
    double t_start = now_seconds(), busy = 0;
    while (finished < todo) {
        while (running < c->jobs && next < n) {
            Run *r = &runs[next++];
            if (r->state != RUN_TODO) continue;
            mkdirs(r->dir);
            fflush(stdout);
            r->pid = fork();
            CHECK(r->pid >= 0, "fork failed: %s", strerror(errno));
            if (r->pid == 0) run_child(c, r);
            r->state = RUN_RUNNING; r->t0 = now_seconds(); running++;
        }
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        CHECK(pid > 0, "waitpid failed: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            Run *r = &runs[i];
            if (r->state != RUN_RUNNING || r->pid != pid) continue;
            int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            r->state = ok ? RUN_DONE : RUN_FAILED;
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

// --attention-distance, after training: for every task and seed, ./train --attention-distance of
// nope's model to each scheme's model of the seed, and to nope's of the next seed (the baseline),
// into the other run's distance.csv (nope's own folder holds the baseline). Both runs must be
// finished; a distance.csv already there is kept. Returns the number that failed.
static int attention_distances(const Cfg *c, const Run *runs) {
    int ns = nope_scheme(c), failed = 0, made = 0;
    double t0 = now_seconds();
    for (int t = 0; t < c->n_tasks; t++)
        for (int sd = 0; sd < c->n_seeds; sd++)
            for (int sc = 0; sc < c->n_schemes; sc++) {
                if (sc == ns && c->n_seeds < 2) continue;
                const Run *a = &runs[run_index(c, t, ns, sd)];
                const Run *b = &runs[run_index(c, t, sc, sc == ns ? (sd + 1) % c->n_seeds : sd)];
                const Run *home = &runs[run_index(c, t, sc, sd)];
                if (!run_has_results(a) || !run_has_results(b)) continue;
                char out[4200], log[4200], pair_path[4200], pair[8500], was[8500] = "";
                snprintf(out, sizeof out, "%s/distance.csv", home->dir);
                // distance.pair names the two models a distance.csv was computed from: one kept from
                // another pairing (another seed list gives NoPE another partner) is computed again
                snprintf(pair_path, sizeof pair_path, "%s/distance.pair", home->dir);
                snprintf(pair, sizeof pair, "%s/model.ckpt %s/model.ckpt\n", a->dir, b->dir);
                FILE *pf = fopen(pair_path, "r");
                if (pf) { if (!fgets(was, sizeof was, pf)) was[0] = 0; fclose(pf); }
                int stale = pf && strcmp(was, pair) != 0;
                if (access(out, F_OK) == 0 && !stale) continue;   // (a distance.csv without distance.pair: kept)
                if (stale) { remove(out); remove(pair_path); }
                char ck_a[4200], ck_b[4200];
                snprintf(ck_a, sizeof ck_a, "%s/model.ckpt", a->dir);
                snprintf(ck_b, sizeof ck_b, "%s/model.ckpt", b->dir);
                if (access(ck_a, R_OK) != 0 || access(ck_b, R_OK) != 0) {   // runs restored without their checkpoints
                    printf("attention distance of %s to %s: no model.ckpt (its checkpoint was not kept), left out%s\n", a->dir,
                           b->dir, stale ? " (the one kept was of another pair, and is removed)" : "");
                    continue;
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
                if (rc) { failed++; printf("attention distance of %s to %s FAILED: see %s\n", a->dir, b->dir, log); }
                else {
                    made++;
                    FILE *w = fopen(pair_path, "w");
                    CHECK(w && fputs(pair, w) >= 0 && fclose(w) == 0, "cannot write '%s'", pair_path);
                }
            }
    char took[32];
    fmt_duration(now_seconds() - t0, took, sizeof took);
    if (made || failed) printf("compare: %d attention distances in %s%s\n", made, took, failed ? " (some failed)" : "");
    return failed;
}

int main(int argc, char **argv) {
    Cfg c;
    dist_init(&argc, &argv);          // under mpirun (make MPI=1): the runs are shared out over the ranks
    int rank = dist_rank(), ranks = dist_size();
    compare_parse(&c, argc, argv);
    CHECK(ranks == 1 || !c.launch, "--launch starts each run as a job of its own (mpirun); it cannot be nested in "
          "a ./compare under mpirun with %d ranks: run ./compare without mpirun, or drop --launch", ranks);
    static char bin[4096];
    if (!c.train_bin) {
        const char *slash = strrchr(argv[0], '/');
        snprintf(bin, sizeof bin, "%.*strain", slash ? (int)(slash - argv[0] + 1) : 2, slash ? argv[0] : "./");
        c.train_bin = bin;
    }
    if (c.report_only) {
        struct stat st;
        CHECK(stat(c.out, &st) == 0 && S_ISDIR(st.st_mode), "--report-only: --out %s is not a folder of runs", c.out);
    } else {
        CHECK(access(c.train_bin, X_OK) == 0, "cannot run the trainer '%s' (build it with make, or give --train PATH)", c.train_bin);
        mkdirs(c.out);
    }
    int n = c.n_tasks * c.n_schemes * c.n_seeds;
    Run *runs = xcalloc(n, sizeof(Run));
    for (int t = 0; t < c.n_tasks; t++)
        for (int sd = 0; sd < c.n_seeds; sd++)
            for (int sc = 0; sc < c.n_schemes; sc++) {
                Run *r = &runs[run_index(&c, t, sc, sd)];
                r->task = t; r->scheme = sc; r->seed = sd;
                snprintf(r->dir, sizeof r->dir, "%s/runs/%s/%s/seed%lld", c.out, c.tasks[t], c.schemes[sc].label, c.seeds[sd]);
                r->state = finished(&c, r) ? RUN_FOUND_DONE : RUN_TODO;
            }
    // under mpirun: the runs still to train, dealt out in turn (the i-th goes to rank i % ranks)
    int todo = 0;
    for (int i = 0; i < n && !c.report_only; i++)
        if (runs[i].state == RUN_TODO && todo++ % ranks != rank) runs[i].state = RUN_ELSEWHERE;
    int failed = 0;
    if (c.report_only) {
        int done = 0;
        for (int i = 0; i < n; i++) done += runs[i].state == RUN_FOUND_DONE;
        CHECK(done, "--report-only: no finished run in %s (a run is finished when its folder has a done file)", c.out);
        printf("compare: --report-only: %d of %d runs finished%s\n", done, n, done < n ? "; the others are left out (nothing is trained)" : "");
    } else failed = run_all(&c, runs, n);
    if (ranks > 1) {
        dist_idle_barrier();                // every rank waits here (asleep) until the last run is done
        failed = (int)dist_sum(failed);
        for (int i = 0; i < n; i++)         // the others' runs, back from their done files
            if (runs[i].state == RUN_ELSEWHERE) runs[i].state = finished(&c, &runs[i]) ? RUN_FOUND_DONE : RUN_FAILED;
        if (rank == 0) printf("compare: %d ranks trained %d runs\n", ranks, todo);
    }
    if (rank == 0 && c.attention_distance && !c.report_only) failed += attention_distances(&c, runs);
    if (rank == 0) report(&c, runs, n);     // rank 0 alone writes the report
    free(runs);
    dist_finalize();
    if (failed) { fprintf(stderr, "compare: %d runs failed; their train.log says why; run the command again to retry them\n", failed); return 1; }
    return 0;
}
