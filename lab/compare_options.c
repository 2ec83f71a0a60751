// lab/compare_options.c: ./compare's command line: the flag table (name, value, how the value is
// read and stored, --help's text), which drives both the parsing and --help; then the checks of the
// flags against each other and the defaults that depend on them (lab/compare.h).
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "lab/compare.h"
#include "lab/protocol.h"
#include "lab/variants.h"
#include "eval/ppl_defaults.h"
#include "posenc.h"
#include "util/flags.h"

static int split_list(char *s, char **out, int cap, const char *flag) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        CHECK(n < cap, "%s: at most %d items", flag, cap);
        out[n++] = tok;
    }
    CHECK(n > 0, "%s needs at least one item", flag);
    return n;
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
    s->no_ext = 0;
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

// T and B, the --seq and --batch after --, into c->context and c->batch, for `flag`, whose runs
// (`what`) train at k x T with B / k rows (the same tokens per step); exits with a message when
// they are missing or do not fit.
static void read_context(Cfg *c, const char *flag, int k, const char *what) {
    const char *seq = last_value(c->extra, c->n_extra, "--seq"), *batch = last_value(c->extra, c->n_extra, "--batch");
    CHECK(seq && batch, "%s needs the context and the rows per step after --: give --seq T --batch B (%s train with "
          "--seq %dT --batch B/%d)", flag, what, k, k);
    CHECK(!last_value(c->extra, c->n_extra, "--context"), "%s: --context after -- would give the models trained at T and "
          "at %dT one context, and their windows (multiples of it) would not match; drop it (each run's context is its "
          "--seq)", flag, k);
    char *end;
    long T = strtol(seq, &end, 10), B = strtol(batch, &end, 10);
    CHECK(T >= 1 && T <= 1 << 20, "%s: --seq %s after -- is not a context length", flag, seq);
    CHECK((long long)k * T <= 1 << 20, "%s: %d x --seq %ld is longer than the 1048576 tokens ./compare trains at", flag, k, T);
    if (k == 2) CHECK(B >= 2 && B % 2 == 0, "%s: --batch %s after -- must be even, so that %s take half the rows (the "
                      "same tokens per step)", flag, batch, what);
    CHECK(B >= k && B % k == 0, "%s: --batch %s after -- must be a multiple of %d, so that %s take 1/%d of the rows (the "
          "same tokens per step)", flag, batch, k, what, k);
    c->context = (int)T;
    c->batch = (int)B;
}

// The windows the runs at T are evaluated at, as multiples of T (those of --eval-flags, else
// ./train's default), divided by k into out (200 bytes: "--ppl-windows " and the list fit a
// Scheme's eval_post); exits naming `flag` when they do not fit.
static void divided_windows(const Cfg *c, int k, const char *flag, char *out) {
    char gbuf[256], def[] = PPL_DEFAULT_WINDOWS;
    const char *given = eval_flag(c, "--ppl-windows", gbuf, sizeof gbuf);
    int h = divide_multiples(given ? given : def, k, out, 200);
    CHECK(h >= 0, "%s: --ppl-windows '%s' in --eval-flags is not a list of multiples", flag, given);
    CHECK(h > 0, "%s: the --ppl-windows list '%s' is too long (at most 199 characters once divided by %d)", flag,
          given ? given : def, k);
}

// --long-length 'alibi,rope' (flag; --double-length: factor 2): each listed scheme also trained at
// K = c->long_factor times the context with 1/K of the rows (the same tokens per step), as scheme
// LABEL@KT, its perplexity windows divided by K as multiples so that they are the same lengths as
// the others', and with --long-steps N its own step count.
static void add_long_length(Cfg *c, char *list, const char *flag) {
    int K = c->long_factor;
    CHECK(c->data, "%s applies to text (--data): it compares perplexity at %s the training context", flag,
          K == 2 ? "twice" : "a multiple of");
    read_context(c, flag, K, K == 2 ? "the doubled runs" : "the long runs");
    long T = c->context, B = c->batch;
    char div[200];
    divided_windows(c, K, flag, div);
    if (strcmp(flag, "--double-length")) {          // (--double-length compares at 2T whatever the windows)
        char gbuf[256], def[] = PPL_DEFAULT_WINDOWS, wl[256], *save = NULL;
        const char *given = eval_flag(c, "--ppl-windows", gbuf, sizeof gbuf);
        snprintf(wl, sizeof wl, "%s", given ? given : def);
        int at_k = 0;
        for (char *m = strtok_r(wl, ",", &save); m; m = strtok_r(NULL, ",", &save)) at_k |= fabs(strtod(m, NULL) - K) < 1e-9;
        CHECK(at_k, "%s --long-factor %d: the comparison is at %dT = %ld tokens, which the perplexity windows (%s) do not "
              "include; add %d to --eval-flags '--ppl-windows ...'", flag, K, K, K * T, given ? given : def, K);
    }
    char *items[MAX_ITEMS];
    int n = split_list(list, items, MAX_ITEMS, flag), base = c->n_schemes;
    for (int k = 0; k < n; k++) {
        int x = -1;
        for (int sc = 0; sc < base; sc++) if (!strcmp(c->schemes[sc].label, items[k])) x = sc;
        CHECK(x >= 0, "%s: '%s' is not one of the schemes compared (--schemes / --scheme labels)", flag, items[k]);
        char label[96];
        snprintf(label, sizeof label, "%s@%ld", items[k], K * T);
        add_scheme(c, label, c->schemes[x].flags);
        Scheme *s = &c->schemes[c->n_schemes - 1];
        s->long_of = x;
        snprintf(s->post, sizeof s->post, "--seq %ld --batch %ld", K * T, B / K);
        if (c->long_steps)
            snprintf(s->post + strlen(s->post), sizeof s->post - strlen(s->post), " --steps %d", c->long_steps);
        snprintf(s->eval_post, sizeof s->eval_post, "--ppl-windows %s", div);
    }
}

// --finetune STEPS: every run that takes the extensions fine-tuned under each method at S x T
// (S = --rope-factor) with B / S rows (lab/finetune.c); its --finetune-flags may not set what
// ./compare sets for it.
static void check_finetune(Cfg *c) {
    CHECK(c->data && c->n_ext, "--finetune fine-tunes the model of each --rope-extensions method at the extended length: "
          "give --data and --rope-extensions");
    double S = c->ext_factor;
    CHECK(S >= 2 && S == floor(S) && S <= 1 << 20, "--finetune trains at --rope-factor S x T with 1/S of the rows: give an "
          "integer --rope-factor S >= 2 (got %g)", S);
    read_context(c, "--finetune", (int)S, "the fine-tunes");
    int rope = 0;
    for (int k = 0; k < c->n_schemes; k++) rope |= takes_extensions(&c->schemes[k]);
    CHECK(rope, "--finetune: no scheme compared (trained at T) has a layer of the RoPE family, so no run takes the "
          "extensions and there is nothing to fine-tune; give such a scheme");
    char div[200];
    divided_windows(c, (int)S, "--finetune", div);
    if (!c->finetune_flags) return;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", c->finetune_flags);
    static const char *const set[] = { "--load", "--resume", "--continue", "--save", "--save-every", "--log", "--seed",
        "--data", "--val-data", "--val-frac", "--threads", "--seq", "--batch", "--steps", "--context", "--layers", "--heads",
        "--dim", "--pe", "--pe-layers", "--input-pe", NULL };
    for (char *w = strtok(buf, " \t"); w; w = strtok(NULL, " \t")) {
        for (const char *const *f = set; *f; f++)
            CHECK(strcmp(w, *f), "--finetune-flags: %s is set by ./compare for the fine-tunes (the run's model, data and "
                  "seed, at S x T with B/S rows for --finetune STEPS); give only the training's settings, e.g. '--lr 1e-4'", w);
        CHECK(strncmp(w, "--", 2) || !posenc_is_flag(w + 2), "--finetune-flags: %s is a positional setting; a fine-tune "
              "takes its method's from --rope-extensions and --rope-factor", w);
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

// The windows the perplexity evaluations score, as multiples of the context (--ppl-windows in
// --eval-flags, else ./train's default) into mult (cap); returns their count. The runs at 2T score
// the same lengths (add_double_length), so one list holds for every row.
static int grid_windows(const Cfg *c, double *mult, int cap) {
    char buf[256], list[256];
    const char *given = eval_flag(c, "--ppl-windows", buf, sizeof buf);
    snprintf(list, sizeof list, "%s", given ? given : PPL_DEFAULT_WINDOWS);
    int n = 0;
    for (char *w = strtok(list, ","), *end; w && n < cap; w = strtok(NULL, ",")) {
        double x = strtod(w, &end);
        if (!*end && x > 0) mult[n++] = x;        // ./train refuses a list that is not one
    }
    return n;
}

// --claims on text: 'A<B@W,A>B*1.05@4:sliding,...' (lab/claims_text.h); each claim's rows must be
// rows of the perplexity table and its window one the runs are scored at, so a claim that the
// report could not test is refused before any run.
static void parse_text_claims(Cfg *c, char *v) {
    char *items[MAX_ITEMS], msg[512], rows[2048] = "", label[256];
    c->n_text_claims = split_list(v, items, MAX_ITEMS, "--claims");
    for (int sc = 0; sc < c->n_schemes; sc++)
        for (int k = 0; k < n_variants(c); k++)
            if (row_label(c, sc, k, label, sizeof label) && strlen(rows) + strlen(label) + 3 < sizeof rows)
                snprintf(rows + strlen(rows), sizeof rows - strlen(rows), "%s%s", *rows ? ", " : "", label);
    double mult[64];
    int nw = grid_windows(c, mult, 64);
    for (int i = 0; i < c->n_text_claims; i++) {
        TextClaim *x = &c->text_claims[i];
        CHECK(text_claim_parse(items[i], x, msg, sizeof msg), "--claims: '%s': %s", items[i], msg);
        CHECK(find_row(c, x->a, &x->sa, &x->va), "--claims: '%s': '%s' is not a row of the perplexity table (%s)", x->text, x->a, rows);
        CHECK(find_row(c, x->b, &x->sb, &x->vb), "--claims: '%s': '%s' is not a row of the perplexity table (%s)", x->text, x->b, rows);
        CHECK(x->sa != x->sb || x->va != x->vb || x->margin != 1, "--claims: '%s' compares %s with itself, whose "
              "difference is 0 by construction; compare two rows, or give a margin (%s<%s*1.02@W)", x->text, x->a, x->a, x->a);
        int seen = 0;
        for (int k = 0; k < nw; k++) seen |= fabs(mult[k] - x->window) <= 1e-9 * mult[k];
        char list[256];
        CHECK(seen, "--claims: '%s': the window %gT is not evaluated; the runs are scored at %s times the context "
              "(--eval-flags '--ppl-windows LIST')", x->text, x->window, eval_flag(c, "--ppl-windows", list, sizeof list) ? list :
              PPL_DEFAULT_WINDOWS);
    }
}

// ----------------------------------------------------------------------------------------------
// the flag table

// The command line being read: the settings, and the lists applied once every flag is read
// (--claims names schemes that later flags may give; --double-length and --long-length read the flags after --).
typedef struct {
    Cfg *c; char *claims, *doubled, *longer, *extend; char *paper[MAX_ITEMS]; int n_paper;
    char *task_flags[MAX_ITEMS]; int n_task_flags;     // --task-flags as given, read once the tasks are known
    unsigned char given[128];
} Parse;

static void set_launch(void *ctx, char *v) {
    Parse *p = ctx;
    CHECK(*v, "--launch: give the words to put before ./train, e.g. 'mpirun -np 2'");
    p->c->launch = v;
}

static void set_claims(void *ctx, char *v) { Parse *p = ctx; p->claims = v; }

static void set_unit(void *ctx, char *v) {
    Parse *p = ctx;
    CHECK(!strcmp(v, "seed") || !strcmp(v, "task"), "--claims-unit %s: give seed or task", v);
    p->c->unit_task = !strcmp(v, "task");
}

static void set_floor(void *ctx, char *v) {
    Parse *p = ctx;
    char *end;
    double a = strtod(v, &end);
    CHECK(*v && !*end && a > 0 && a <= 1, "--floor %s must be an in-distribution validation accuracy in (0, 1], e.g. 0.5", v);
    p->c->floor = a;
}

static void set_save_every(void *ctx, char *v) {
    Parse *p = ctx;
    char *end;
    long k = strtol(v, &end, 10);
    CHECK(*v && !*end && k >= 0 && k <= 1000000000, "--save-every %s must be a step count in [0, 1e9] (0: only at the end)", v);
    p->c->save_every = (int)k;
}

static void set_paper(void *ctx, char *v) {
    Parse *p = ctx;
    CHECK(p->n_paper < MAX_ITEMS, "--paper: at most %d lines (one per task)", MAX_ITEMS);
    p->paper[p->n_paper++] = v;
}

// --paper 'TASK:a=98.6,b=77.1': a published mean accuracy (%) beyond training per scheme of a task,
// for the table beside the measured ones; read once the tasks and schemes are known.
static void parse_paper(Cfg *c, char *v) {
    char *colon = strchr(v, ':');
    CHECK(colon, "--paper '%s': write TASK:SCHEME=PERCENT,... (e.g. 'copy:nope=30.5,t5=42.0')", v);
    *colon = 0;
    int t = -1;
    for (int k = 0; k < c->n_tasks; k++) if (!strcmp(c->tasks[k], v)) t = k;
    CHECK(t >= 0, "--paper: '%s' is not one of the tasks compared (--task)", v);
    char *items[MAX_ITEMS];
    int n = split_list(colon + 1, items, MAX_ITEMS, "--paper");
    for (int k = 0; k < n; k++) {
        char *eq = strchr(items[k], '='), *end;
        CHECK(eq, "--paper %s: '%s' is not SCHEME=PERCENT", v, items[k]);
        *eq = 0;
        int sc = -1;
        for (int j = 0; j < c->n_schemes; j++) if (!strcmp(c->schemes[j].label, items[k])) sc = j;
        CHECK(sc >= 0, "--paper %s: '%s' is not one of the schemes compared", v, items[k]);
        double x = strtod(eq + 1, &end);
        CHECK(eq[1] && !*end && x >= 0 && x <= 100, "--paper %s: %s=%s is not a percentage in [0, 100]", v, items[k], eq + 1);
        c->paper[t][sc] = x;
    }
}
static void check_train_words(const Cfg *c, char *const *w, int n, const char *where, int steps);

// --task-flags 'TASK=FLAGS': FLAGS go to TASK's runs after the flags after -- (lab/compare.c's
// build_cmds), so its runs' commands, which mark a finished run as the same one, hold them. TASK must be
// one of --task's, given once; FLAGS are checked as those after --.
static void parse_task_flags(Cfg *c, char *v) {
    CHECK(!c->data, "--task-flags applies to tasks (--task): it gives one task's runs their own training flags");
    char *eq = strchr(v, '=');
    CHECK(eq && eq > v, "--task-flags '%s': write TASK=FLAGS, e.g. 'addition=--steps 6000'", v);
    *eq = 0;
    int t = -1;
    for (int k = 0; k < c->n_tasks; k++) if (!strcmp(c->tasks[k], v)) t = k;
    CHECK(t >= 0, "--task-flags %s=%s: '%s' is not one of the tasks compared (--task); give one of them", v, eq + 1, v);
    CHECK(!c->task_flags[t], "--task-flags: task '%s' is given twice ('%s' and '%s'); give its flags in one", v,
          c->task_flags[t], eq + 1);
    char copy[2048], where[2200], *w[256];
    snprintf(copy, sizeof copy, "%s", eq + 1);
    CHECK(strlen(eq + 1) < sizeof copy, "--task-flags %s=...: the flags are longer than %zu characters", v, sizeof copy - 1);
    int n = 0;
    for (char *tok = strtok(copy, " \t"); tok && n < 256; tok = strtok(NULL, " \t")) w[n++] = tok;
    CHECK(n > 0, "--task-flags %s=: give the task's ./train flags, e.g. '%s=--steps 6000'", v, v);
    CHECK(!strncmp(w[0], "--", 2), "--task-flags %s=%s: '%s' is not a flag; FLAGS are ./train flags, e.g. '--steps 6000'",
          v, eq + 1, w[0]);
    snprintf(where, sizeof where, "in --task-flags '%s=%s'", v, eq + 1);
    check_train_words(c, w, n, where, 1);
    c->task_flags[t] = eq + 1;
}

static void set_double_length(void *ctx, char *v) { Parse *p = ctx; p->doubled = v; }
static void set_long_length(void *ctx, char *v) { Parse *p = ctx; p->longer = v; }
static void set_extend(void *ctx, char *v) { Parse *p = ctx; p->extend = v; }

// --extend LIST: only the listed schemes take the --rope-extensions (and their fine-tunes); each
// must put RoPE in some layer.
static void apply_extend(Cfg *c, char *list) {
    CHECK(c->n_ext, "--extend names the schemes that take --rope-extensions: give --rope-extensions");
    char *items[MAX_ITEMS];
    int n = split_list(list, items, MAX_ITEMS, "--extend");
    for (int sc = 0; sc < c->n_schemes; sc++) c->schemes[sc].no_ext = 1;
    for (int k = 0; k < n; k++) {
        int x = -1;
        for (int sc = 0; sc < c->n_schemes; sc++) if (!strcmp(c->schemes[sc].label, items[k])) x = sc;
        CHECK(x >= 0, "--extend: '%s' is not one of the schemes compared (--schemes / --scheme labels)", items[k]);
        CHECK(uses_rope(&c->schemes[x]), "--extend: '%s' has no RoPE layer, so the RoPE extensions do not act on it", items[k]);
        c->schemes[x].no_ext = 0;
    }
}

static void set_task_flags(void *ctx, char *v) {
    Parse *p = ctx;
    CHECK(p->n_task_flags < MAX_ITEMS, "--task-flags: at most %d (one per task)", MAX_ITEMS);
    p->task_flags[p->n_task_flags++] = v;
}

static void set_fit_target(void *ctx, char *v) {
    Parse *p = ctx;
    char *end;
    double a = strtod(v, &end);
    CHECK(*v && !*end && a > 0 && a <= 1, "--fit-target %s must be a validation accuracy in (0, 1], e.g. 0.9", v);
    p->c->fit_target = v;
}

static void set_tasks(void *ctx, char *v) {
    Parse *p = ctx;
    Cfg *c = p->c;
    c->n_tasks = split_list(v, c->tasks, MAX_ITEMS, "--task");
    for (int a = 0; a < c->n_tasks; a++)
        for (int b = 0; b < a; b++) CHECK(strcmp(c->tasks[a], c->tasks[b]), "--task: '%s' is given twice", c->tasks[a]);
}

static void set_extensions(void *ctx, char *v) {
    Parse *p = ctx;
    Cfg *c = p->c;
    c->n_ext = split_list(v, c->extensions, MAX_ITEMS, "--rope-extensions");
    for (int a = 0; a < c->n_ext; a++)
        for (int b = 0; b < a; b++) CHECK(strcmp(c->extensions[a], c->extensions[b]), "--rope-extensions: '%s' is given twice", c->extensions[a]);
}

static void set_schemes(void *ctx, char *v) {
    Parse *p = ctx;
    char *names[MAX_ITEMS];
    int n = split_list(v, names, MAX_ITEMS, "--schemes");
    for (int k = 0; k < n; k++) { char fl[128]; snprintf(fl, sizeof fl, "--pe %s", names[k]); add_scheme(p->c, names[k], fl); }
}

static void set_scheme(void *ctx, char *v) {
    Parse *p = ctx;
    char *eq = strchr(v, '=');
    CHECK(eq, "--scheme %s: write LABEL=FLAGS, e.g. 'rope25=--pe rope --rope-fraction 0.25'", v);
    *eq = 0;
    check_scheme_flags(v, eq + 1);
    add_scheme(p->c, v, eq + 1);
}

static void set_seeds(void *ctx, char *v) {
    Parse *p = ctx;
    Cfg *c = p->c;
    char *items[MAX_ITEMS], *end;
    c->n_seeds = split_list(v, items, MAX_ITEMS, "--seeds");
    for (int k = 0; k < c->n_seeds; k++) {
        errno = 0;
        c->seeds[k] = strtoll(items[k], &end, 10);
        CHECK(!*end && !errno && c->seeds[k] >= 0, "--seeds: '%s' is not a non-negative integer", items[k]);
        for (int b = 0; b < k; b++) CHECK(c->seeds[b] != c->seeds[k], "--seeds: %lld is given twice", c->seeds[k]);
    }
}

static void set_rope_factor(void *ctx, char *v) {
    Parse *p = ctx;
    char *end;
    p->c->ext_factor = strtod(v, &end);
    CHECK(!*end && p->c->ext_factor >= 1 && p->c->ext_factor <= 1e6, "--rope-factor %s must be a number in [1, 1e6]", v);
}

// Every flag, in --help's order.
#define O(f) offsetof(Cfg, f)
FLAGS_TABLE_BEGIN
static const FlagRow FLAGS[] = {
    { "out", FLAG_STRING, O(out), 0, 0, 0, "DIR", NULL, "the results folder (created)" },
    { "task", FLAG_CALL, 0, 0, 0, 0, "LIST", NULL,
      "synthetic tasks (./train --help lists them); accuracy by length", set_tasks },
    { "data", FLAG_STRING, O(data), 0, 0, 0, "PATH", NULL,
      "text instead (a file, folder or quoted glob, as ./train --data): perplexity against\n"
      "context length (--val-data PATH optional)" },
    { "val-data", FLAG_STRING, O(val_data), 0, 0, 0, "PATH", NULL, NULL },
    { "schemes", FLAG_CALL, 0, 0, 0, 0, "LIST", NULL,
      "scheme names, each run as --pe NAME (default " PE_DEFAULT_COMPARISON ")", set_schemes },
    { "scheme", FLAG_CALL, 0, 0, 0, 0, "LABEL=FLAGS", NULL,
      "a scheme given by its ./train flags, e.g. 'rope25=--pe rope --rope-fraction 0.25'", set_scheme },
    { "seeds", FLAG_CALL, 0, 0, 0, 0, "LIST", NULL, "seeds (default 1)", set_seeds },
    { "rope-extensions", FLAG_CALL, 0, 0, 0, 0, "LIST", NULL,
      "text: also evaluate RoPE runs with these --rope-scaling methods (./train --help names them);\n"
      "LongRoPE's lists are first searched per run on validation tokens the evaluations do not score)",
      set_extensions },
    { "extend", FLAG_CALL, 0, 0, 0, 0, "LIST", NULL,
      "text: only these RoPE schemes take --rope-extensions and --finetune (default: every\n"
      "scheme with a RoPE layer, trained at T)", set_extend },
    { "rope-factor", FLAG_CALL, 0, 0, 0, 0, "X", NULL,
      "the factor of those methods (default 8: the longest window over the context)", set_rope_factor },
    { "eval-per-length", FLAG_INT, O(per_length), 1, 100000, 0, "N", NULL,
      "task: test instances per length (default 100)" },
    { "fit-target", FLAG_CALL, 0, 0, 0, 0, "A", NULL,
      "task: fit-first training, ./train --fit-target A for every run (give --max-steps N\n"
      "after --); runs that do not reach A are reported as not fitted and left out of\n"
      "the comparisons", set_fit_target },
    { "claims", FLAG_CALL, 0, 0, 0, 0, "'a>b,...'", NULL,
      "task: test each claim (scheme a beats scheme b beyond the training lengths) with\n"
      "the paired test pooled over tasks and per task: supported, contradicted or not\n"
      "distinguishable. Text: 'A<B@W,A>B*M@W:sliding,...': row A of the perplexity table\n"
      "has a perplexity below (or above) M times row B's (M 1 unless given) on windows of\n"
      "W times the context, non-overlapping unless :sliding; a paired t-test by seed, Holm\n"
      "over the claims", set_claims },
    { "claims-unit", FLAG_CALL, 0, 0, 0, 0, "seed|task", NULL,
      "task: the unit of the claims pooled over tasks: seed (each seed's mean over the\n"
      "tasks; default) or task (each task's mean over the seeds: the claim is across tasks);\n"
      "the other unit's table follows as a sensitivity table", set_unit },
    { "floor", FLAG_CALL, 0, 0, 0, 0, "A", NULL,
      "task: also a sensitivity table of the claims without the runs whose best\n"
      "in-distribution validation accuracy is below A (every run counts in the main tables)", set_floor },
    { "task-flags", FLAG_CALL, 0, 0, 0, 0, "'TASK=FLAGS'", NULL,
      "task: ./train flags of TASK's runs only (one flag per task), after the flags after --\n"
      "(so they override them), e.g. 'addition=--steps 6000'; summary.md shows them", set_task_flags },
    { "paper", FLAG_CALL, 0, 0, 0, 0, "'TASK:S=P,...'", NULL,
      "task: a paper's mean accuracy beyond training (%) of each scheme S on TASK (one\n"
      "flag per task), shown beside the measured ones", set_paper },
    { "protocol", FLAG_STRING, O(protocol), 0, 0, 0, "FILE", NULL,
      "the experiment from FILE (these flags, one per line, then '-- TRAIN FLAGS'); the\n"
      "command line adds only --out, --jobs, --threads, --train, --launch, --quiet,\n"
      "--save-every, --report-only, --dry-run; summary.md names the file and its hash" },
    { "report-only", FLAG_SWITCH, O(report_only), 0, 1, 0, NULL, NULL,
      "write the report from the finished runs in --out (give the flags that trained\n"
      "them); train nothing" },
    { "dry-run", FLAG_SWITCH, O(dry_run), 0, 1, 0, NULL, NULL,
      "read the flags (or --protocol FILE), print each run's folder, whether it is done\n"
      "in --out and its commands; train nothing, write nothing" },
    { "eval-flags", FLAG_STRING, O(eval_flags), 0, 0, 0, "'FLAGS'", NULL,
      "text: ./train flags for the perplexity evaluations only, e.g. '--ppl-tokens 32768'" },
    { "double-length", FLAG_CALL, 0, 0, 0, 0, "LIST", NULL,
      "text: also train each listed scheme at twice the context with half the rows (give\n"
      "--seq T --batch B after --), as LABEL@2T, and compare at 2T: every listed scheme\n"
      "trained at T against every one trained at 2T, paired by seed (the ALiBi paper's test)", set_double_length },
    { "long-length", FLAG_CALL, 0, 0, 0, 0, "LIST", NULL,
      "text: --double-length at K times the context (--long-factor K): each listed scheme\n"
      "also trained at KT with B/K rows (the same tokens per step), as LABEL@KT, and\n"
      "compared at the window KT (which --ppl-windows must hold)", set_long_length },
    { "long-factor", FLAG_INT, O(long_factor), 2, 1 << 20, 0, "K", NULL,
      "text: the factor of --long-length, an integer that divides --batch (default 2)" },
    { "long-steps", FLAG_INT, O(long_steps), 1, 1000000000, 0, "N", NULL,
      "text: the runs of --long-length (or --double-length) train N steps (default: --steps\n"
      "after --), e.g. the steps at T plus a fine-tune's" },
    { "finetune", FLAG_INT, O(finetune), 1, 1000000000, 0, "STEPS", NULL,
      "text: also fine-tune every RoPE run trained at T under each --rope-extensions method\n"
      "M, STEPS steps at S x T (S: --rope-factor, an integer that divides --batch) with B/S\n"
      "rows, from its weights, with its flags after -- and --seed, into RUN/ft-M/; the\n"
      "fine-tuned model keeps M and is scored at the same windows as LABEL+M+ft. A finished\n"
      "fine-tune is kept when the command runs again; a stopped one starts again" },
    { "finetune-flags", FLAG_STRING, O(finetune_flags), 0, 0, 0, "'FLAGS'", NULL,
      "text: ./train flags for the fine-tunes only, after the run's, e.g. '--lr 1e-4 --warmup 0'" },
    { "attention-stats", FLAG_SWITCH, O(attention_stats), 0, 1, 0, NULL, NULL,
      "text: also measure each run's attention (./train --attention-stats, with --bos when\n"
      "the run trained with it) and add the collapsed fraction of heads by layer to summary.md" },
    { "attention-distance", FLAG_SWITCH, O(attention_distance), 0, 1, 0, NULL, NULL,
      "task: the NoPE paper's attention distance by layer (the textbook JSD to the nearest\n"
      "head, and the paper's code's: 0.5 (KL(m||p) + KL(m||q)), pairs i < j) of nope's\n"
      "runs to every scheme's run of the same seed; also trains NoPE's twin per task and\n"
      "seed (runs/TASK/nope-twin/seedN: the same --seed, --data-seed SEED + 1000003),\n"
      "the baseline of the same initial weights; the tested weights (model.ckpt.best\n"
      "when there is one); tables, paired tests, the claim that NoPE is nearest to t5\n"
      "(with a scheme labelled t5) and a plot in summary.md" },
    { "jobs", FLAG_INT, O(jobs), 1, 100000, 0, "N", NULL, "runs at a time (default 1)" },
    { "threads", FLAG_INT, O(threads), 1, 100000, 0, "N", NULL, "OpenMP threads per run (default: cores / jobs)" },
    { "train", FLAG_STRING, O(train_bin), 0, 0, 0, "PATH", NULL, "the ./train binary (default: next to ./compare)" },
    { "launch", FLAG_CALL, 0, 0, 0, 0, "'WORDS'", NULL,
      "put WORDS before each training command, e.g. 'mpirun -np 2 --bind-to core' to\n"
      "train each run on 2 ranks (./train built with make MPI=1); not under mpirun", set_launch },
    { "quiet", FLAG_SWITCH, O(quiet), 0, 1, 0, NULL, NULL, "no per-run progress lines" },
    { "save-every", FLAG_CALL, 0, 0, 0, 0, "K", NULL,
      "every run checkpoints each K steps (default 100; 0: only at its end), and a run\n"
      "stopped by Ctrl-C, SIGTERM, kill -9 or a reboot continues from its checkpoint when\n"
      "the command runs again (not with --fit-target: those runs start again)", set_save_every },
};
FLAGS_TABLE_END
_Static_assert(sizeof FLAGS / sizeof FLAGS[0] <= sizeof ((Parse *)0)->given, "Parse.given holds one mark per flag");
#undef O
enum { N_FLAGS = (int)(sizeof FLAGS / sizeof FLAGS[0]) };

static void usage(FILE *f) {
    fprintf(f,
        "usage: ./compare --out DIR (--task NAME[,NAME...] | --data PATH) [options] [-- train flags]\n"
        "Trains every scheme x seed (x task) with the same data order and initial weights, evaluates\n"
        "each run and writes DIR/results.csv, DIR/runs.csv (tasks), DIR/summary.md and plots. Finished runs are kept.\n\n");
    flags_help(f, FLAGS, N_FLAGS, NULL, 22, NULL);
}

// ----------------------------------------------------------------------------------------------
// the flags against each other, in this order: the first broken rule is the one reported

// The modes: a task or text, and the flags that apply to one of them only.
static void check_modes(const Cfg *c) {
    CHECK(c->out, "give the results folder: --out DIR");
    CHECK((c->n_tasks > 0) != (c->data != NULL), "give either --task NAME or --data FILE (one of them)");
    CHECK(!c->n_ext || c->data, "--rope-extensions applies to text (--data), where perplexity is measured by length");
    CHECK(!c->val_data || c->data, "--val-data goes with --data");
    CHECK(!c->eval_flags || c->data, "--eval-flags applies to the perplexity evaluations of text (--data)");
    CHECK(!c->attention_stats || c->data, "--attention-stats applies to text (--data): ./train measures attention on windows of text");
    int longrope = 0;
    for (int k = 0; k < c->n_ext; k++) longrope |= posenc_scaling_searched(c->extensions[k]);
    if (longrope) {
        // each run's LongRoPE search scores the validation tokens after those the evaluations score
        // (build_cmds, lab/compare.c): it must know where they end, and read the same validation text
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
    CHECK(!c->data || (!c->unit_task && isnan(c->floor)), "--claims-unit and --floor apply to tasks (--task)");
    // a glob pattern ('dir/*.bin') names no file itself: ./train expands and checks it
    if (c->data && !strpbrk(c->data, "*?[")) CHECK(access(c->data, R_OK) == 0, "--data %s cannot be read: %s", c->data, strerror(errno));
}

// The schemes, claims, long-length schemes, fine-tune checks, seeds, threads and task once every flag is read.
static void complete(Cfg *c, Parse *p, char *claims, char *doubled) {
    if (!c->n_schemes) {
        static char def[] = PE_DEFAULT_COMPARISON;
        char *names[MAX_ITEMS];
        int n = split_list(def, names, MAX_ITEMS, "--schemes");
        for (int k = 0; k < n; k++) { char fl[64]; snprintf(fl, sizeof fl, "--pe %s", names[k]); add_scheme(c, names[k], fl); }
    }
    for (int k = 0; k < p->n_paper; k++) parse_paper(c, p->paper[k]);
    for (int k = 0; k < p->n_task_flags; k++) parse_task_flags(c, p->task_flags[k]);
    if (p->extend) apply_extend(c, p->extend);
    if (doubled) add_long_length(c, doubled, "--double-length");
    if (p->longer) add_long_length(c, p->longer, "--long-length");
    if (c->finetune) check_finetune(c);
    if (claims && c->data) parse_text_claims(c, claims);       // (after the long rows, which claims may name)
    else if (claims) parse_claims(c, claims);
    CHECK(!c->attention_distance || (nope_scheme(c) >= 0 && (c->n_schemes > 1 || c->n_seeds > 1)),
          "--attention-distance measures every scheme's attention against NoPE's: give a scheme labelled nope "
          "(--schemes nope,...) and another scheme or a second seed");
    if (!c->n_seeds) { c->seeds[0] = 1; c->n_seeds = 1; }
    for (int k = 0; k < c->n_seeds && c->attention_distance; k++)      // ./train takes seeds up to 9.2e18
        CHECK(c->seeds[k] <= 9200000000000000000LL - TWIN_DATA_SEED_OFFSET, "--seeds: %lld is too large for "
              "--attention-distance, whose NoPE twin trains on --data-seed SEED + %lld", c->seeds[k], TWIN_DATA_SEED_OFFSET);
    if (!c->threads) {
        // the cores this process may run on (under mpirun: the rank's binding), else all online
        cpu_set_t set;
        long cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
        c->threads = cores / c->jobs > 0 ? (int)(cores / c->jobs) : 1;
    }
    if (!c->n_tasks) { static char text[] = "text"; c->tasks[0] = text; c->n_tasks = 1; }
}

// The flags after -- (every run's): none that ./compare sets itself or that belongs to a scheme, and
// a step budget that suits --fit-target.
// A setting in a scheme's flags that its model would not read (--rope-base with --pe alibi): ./train
// refuses it, so every run of the scheme would fail; refused here, before any run. n_layer: --layers
// after -- (./train's default 4).
static void check_scheme_settings(const Cfg *c) {
    const char *lv = last_value(c->extra, c->n_extra, "--layers");
    int n_layer = lv ? atoi(lv) : 4;
    if (n_layer < 1 || n_layer > PE_MAX_LAYERS) return;            // ./train says what is wrong with it
    for (int i = 0; i < c->n_schemes; i++) {
        char buf[512], msg[512];
        const char *pe = NULL, *pe_layers = NULL, *input_pe = NULL, *scaling = NULL;
        snprintf(buf, sizeof buf, "%s", c->schemes[i].flags);
        char *w[64];
        int n = 0;
        for (char *t = strtok(buf, " \t"); t && n < 64; t = strtok(NULL, " \t")) w[n++] = t;
        for (int k = 0; k + 1 < n; k++) {
            if (!strcmp(w[k], "--pe")) pe = w[k + 1];
            if (!strcmp(w[k], "--pe-layers")) pe_layers = w[k + 1];
            if (!strcmp(w[k], "--input-pe")) input_pe = w[k + 1];
            if (!strcmp(w[k], "--rope-scaling")) scaling = w[k + 1];
        }
        PosConfig pc;
        posenc_defaults(&pc, n_layer);
        if (!posenc_schedule(&pc, n_layer, pe, pe_layers, input_pe, msg, sizeof msg)) continue;   // ./train says it
        if (scaling && posenc_set(&pc, "rope_scaling", scaling, msg, sizeof msg) <= 0) continue;
        for (int k = 0; k < n; k++) {
            if (strncmp(w[k], "--", 2) || !posenc_is_flag(w[k] + 2)) continue;
            const char *reader = posenc_setting_unused(&pc, w[k] + 2);
            CHECK(!reader, "--scheme %s=%s: %s is read only with %s, which this scheme's model does not have: it "
                  "would change nothing (./train refuses it); drop it", c->schemes[i].label, c->schemes[i].flags, w[k], reader);
        }
    }
}

// Training flags given to several runs (where: "after --", or "in --task-flags 'TASK=...'"): none
// that ./compare sets itself or that belongs to a scheme; with steps, no --steps with --fit-target.
static void check_train_words(const Cfg *c, char *const *w, int n, const char *where, int steps) {
    for (int k = 0; k < n; k++)
        for (const char *const *f = (const char *const[]){ "--task", "--pe", "--pe-layers", "--input-pe", "--seed", "--save", "--log", "--eval-out",
                                                    "--eval-per-length", "--data", "--val-data", "--load", "--resume", "--threads",
                                                    "--fit-target", "--data-seed", "--save-every", "--continue", NULL }; *f; f++)
            CHECK(strcmp(w[k], *f), "%s %s is set by ./compare itself; use its own flags", *f, where);
    // a scheme setting there would go to every scheme and override a scheme's own (it follows them)
    for (int k = 0; k < n; k++)
        CHECK(strncmp(w[k], "--", 2) || !posenc_is_flag(w[k] + 2), "%s %s is a positional "
              "setting: it would apply to every scheme and override their own; give it in a scheme, e.g. "
              "--scheme 'LABEL=--pe rope %s ...'", w[k], where, w[k]);
    for (int k = 0; steps && c->fit_target && k < n; k++)
        CHECK(strcmp(w[k], "--steps"), "--steps %s with --fit-target: fit-first training runs until the target or "
              "--max-steps; give --max-steps N instead of --steps", where);
}

static void check_extra(const Cfg *c) {
    check_train_words(c, c->extra, c->n_extra, "after --", 0);
    // fit-first: training stops at the target or at the budget, so the budget is --max-steps
    int max_steps = 0;
    for (int k = 0; k < c->n_extra; k++) max_steps |= !strcmp(c->extra[k], "--max-steps");
    CHECK(!c->fit_target || max_steps, "--fit-target needs a step budget: give --max-steps N after --");
    check_train_words(c, c->extra, c->n_extra, "after --", 1);
}

// 1 when the flag named (without --) was on the command line or in the protocol
static int given(const Parse *p, const char *name) {
    const FlagRow *r = flag_find(FLAGS, N_FLAGS, name);
    return r ? p->given[r - FLAGS] : 0;
}

// Flags that only shape something the grid does not do: refused, not ignored.
static void check_modifiers(const Cfg *c, const Parse *p) {
    CHECK(!c->data || !given(p, "eval-per-length"), "--eval-per-length applies to tasks (--task), whose accuracy it "
          "samples by length; text is scored by perplexity (--eval-flags '--ppl-tokens N')");
    CHECK(c->n_ext || !given(p, "rope-factor"), "--rope-factor is the factor of --rope-extensions: give --rope-extensions "
          "(text), or drop it");
    CHECK(p->claims || isnan(c->floor), "--floor sets the claims' sensitivity table: give --claims");
    CHECK(p->claims || c->attention_distance || !given(p, "claims-unit"), "--claims-unit is the unit of --claims' and "
          "--attention-distance's tests: give one of them");
    CHECK(!p->doubled || !p->longer, "give either --double-length LIST or --long-length LIST (--double-length is "
          "--long-length with --long-factor 2), not both");
    CHECK(p->longer || !given(p, "long-factor"), "--long-factor is the factor of --long-length: give --long-length LIST%s",
          p->doubled ? " in place of --double-length (whose factor is 2)" : "");
    CHECK(p->longer || p->doubled || !given(p, "long-steps"), "--long-steps is the step count of the runs of "
          "--long-length (or --double-length): give one of them, or drop it");
    CHECK(c->finetune || !c->finetune_flags, "--finetune-flags are the fine-tunes' flags: give --finetune STEPS, or drop it");
}

// flags_parse's hooks (util/flags.h)
static void help_hook(void *ctx) { (void)ctx; usage(stdout); }

static void fail_hook(void *ctx, FlagError e, const char *s, const FlagRow *r, const char *v, int argc, char **argv,
                      int i) {
    (void)ctx; (void)r; (void)argv;
    CHECK(e != FLAG_NOT_FLAG, "unexpected argument '%s'; see ./compare --help", s);
    CHECK(i + 1 < argc, "%s needs a value (see ./compare --help)", s);    // (before unknown, as it always was)
    CHECK(e != FLAG_UNKNOWN, "unknown flag %s (see ./compare --help)", s);
    CHECK(0, "%s %s must be an integer in [%.0f, %.0f]", s, v, r->min, r->max);    // FLAG_INT's errors
}

void compare_parse(Cfg *c, int argc, char **argv) {
    memset(c, 0, sizeof *c);
    Parse p = { .c = c };
    c->jobs = 1; c->save_every = 100; c->per_length = 100; c->ext_factor = 8; c->floor = NAN; c->long_factor = 2;
    for (int t = 0; t < MAX_ITEMS; t++) for (int sc = 0; sc < MAX_ITEMS; sc++) c->paper[t][sc] = NAN;
    Protocol pr = { 0 };
    if (protocol_expand(argc, argv, &argc, &argv, &pr)) { c->protocol = pr.path; c->protocol_hash = pr.hash; }
    FlagParser fp = { .rows = FLAGS, .n = N_FLAGS, .base = c, .ctx = &p, .first = 1, .dashes_end = 1, .empty_ok = 1,
                      .help = help_hook, .fail = fail_hook, .given = p.given };
    flags_parse(&fp, argc, argv);
    if (fp.rest) {                              // the flags after --: every run's
        c->extra = argv + fp.rest;
        c->n_extra = argc - fp.rest;
    }
    check_modes(c);
    check_modifiers(c, &p);
    complete(c, &p, p.claims, p.doubled);
    check_extra(c);
    check_scheme_settings(c);
}
