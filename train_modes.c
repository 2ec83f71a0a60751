// train_modes.c: ./train's one-shot modes, which evaluate or write a trained model and exit without
// training: --export and --export-llmc, --attention-map, --attention-distance, --eval-batches,
// perplexity against window length (--ppl-out, --ppl-positions), LongRoPE's factor search,
// attention statistics and --dump-step; their flag checks; and sampling (--sample).
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/atomicfile.h"
#include "eval/attndist.h"
#include "eval/attnstats.h"
#include "eval/eval.h"
#include "eval/longrope.h"
#include "eval/perplexity.h"
#include "eval/viz.h"
#include "formats/llmc_model.h"
#include "formats/modelfile.h"
#include "train.h"

// ----------------------------------------------------------------------------------------------
// perplexity against window length (--ppl-out, --ppl-positions; eval/perplexity.h)

int ppl_requested(const Options *o) { return o->ppl_out || o->ppl_positions; }
// An evaluation on text instead of training: perplexity, attention statistics, or the LongRoPE
// factor search
int eval_requested(const Options *o) { return ppl_requested(o) || o->attention_stats || o->longrope_search; }

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

// ----------------------------------------------------------------------------------------------
// attention map and attention distance (a --prompt or a --task's instances)

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
// averaged over the instances of the training lengths ("in") and of the longer ones ("longer"), in
// both definitions: jsd (textbook, each of A's heads to B's nearest) and jsd_paper (the paper's code:
// the nearest pair of B's head g and A's head h, g < h; empty when A has one head).
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
    double depths[TASK_MAX_DEPTHS], *sum = xcalloc((size_t)4 * L, sizeof(double)), *d = xmalloc(sizeof(double) * (size_t)2 * L);
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
            attention_distance(m, &other, set.tokens + (size_t)i * set.stride, T, d, d + L);
            // sum[(def * 2 + split) * L + l]: def 0 the textbook JSD, 1 the paper's
            for (int l = 0; l < 2 * L; l++) sum[((l / L) * 2 + split) * L + l % L] += d[l];
            count[split]++;
        }
        task_set_free(&set);
    }
    CHECK(count[0] + count[1] > 0, "--attention-distance: no test instance fits both models' positions (%d)", limit);
    AtomicFile af;
    FILE *f = af_open(&af, o->attention_distance, "attention distance CSV", "w");
    fprintf(f, "layer,split,instances,jsd,jsd_paper\n");
    printf("attention distance (nats) of %s to %s, %d test instances per length; JSD: each of A's heads to B's "
           "nearest head; paper: the nearest pair (B's head g, A's head h), g < h, of the paper's code\n",
           o->load, o->distance_to, o->distance_per_length);
    printf("  layer | lengths <= %d (%ld instances): JSD, paper | longer (%ld): JSD, paper\n", tc->train_max, count[0], count[1]);
    for (int l = 0; l < L; l++) {
        printf("  %5d |", l);
        for (int sp = 0; sp < 2; sp++) {
            if (!count[sp]) { printf(" %s", sp ? "-" : "- |"); continue; }
            double v = sum[sp * L + l] / (double)count[sp], vp = sum[(2 + sp) * L + l] / (double)count[sp];
            fprintf(f, "%d,%s,%ld,%.9f,", l, sp ? "longer" : "in", count[sp], v);
            if (!isnan(vp)) fprintf(f, "%.9f", vp);
            fprintf(f, "\n");
            printf(sp ? " %.4f, %.4f" : " %.4f, %.4f |", v, vp);
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
// the modes as stages of a run (train.c's main)

// --attention-map, --attention-distance, --export and --export-llmc run on the model alone and end
// the run (model_only_modes): a request for anything else beside them would be dropped, so it is
// refused, as are two of them at once (but --export with --export-llmc, which both run).
static void check_model_only_flags(const Args *a) {
    const Options *o = &a->o;
    const char *mode = o->attention_map ? "attention-map" : o->attention_distance ? "attention-distance"
                     : o->export_path ? "export" : o->export_llmc ? "export-llmc" : NULL;
    if (!mode) return;
    static const char *const other[] = { "steps", "max-steps", "fit-target", "save", "log", "eval-batches", "ppl-out",
                                         "ppl-positions", "longrope-search", "attention-stats", "dump-step", "sample",
                                         "attention-map", "attention-distance", "export", "export-llmc", NULL };
    for (const char *const *f = other; *f; f++)
        CHECK(!strcmp(*f, mode) || !flag_set(a, *f) || (!strcmp(mode, "export") && !strcmp(*f, "export-llmc")),
              "--%s runs on the model alone and ends the run (no training, evaluation or sampling): --%s would be "
              "ignored; give it in a command of its own", mode, *f);
}

// Flags that only modify something not asked for: refused rather than ignored.
static void check_modifier_flags(const Args *a) {
    const Options *o = &a->o;
    int evaluates = o->dump || o->eval_batches || eval_requested(o);    // these run instead of training
    CHECK(o->sample || (!flag_set(a, "temperature") && !flag_set(a, "top-k")), "--temperature and --top-k shape "
          "--sample's draws: give --sample N");
    CHECK(o->sample || o->attention_map || !o->prompt, "--prompt is the text --sample continues (or --attention-map "
          "draws): give --sample N");
    CHECK(!o->sample || !evaluates, "--sample is not run beside --dump-step, --eval-batches, --ppl-out, --ppl-positions, "
          "--attention-stats or --longrope-search (they evaluate the model instead of training it); sample in a command "
          "of its own");
    CHECK(!evaluates || !flag_set(a, "steps"), "--steps: --dump-step, --eval-batches, --ppl-out, --ppl-positions, "
          "--attention-stats and --longrope-search evaluate the model instead of training it; train in a command of "
          "its own (with --save), then evaluate its checkpoint");
    CHECK(!o->save_every || o->save, "--save-every %d checkpoints to --save FILE: give --save", o->save_every);
    CHECK(!o->eval_out || o->eval_per_length, "--eval-out writes the accuracy by length, which --eval-per-length 0 "
          "turns off");
    CHECK(!o->val_data || !flag_set(a, "val-frac") || o->val_frac == 0, "--val-frac %g with --val-data: the "
          "validation text is --val-data's and all of --data trains; drop --val-frac", o->val_frac);
}

// The one-shot modes' flags, checked before any work (check_flags, train.c).
void check_mode_flags(const Args *a) {
    const Options *o = &a->o;
    check_model_only_flags(a);
    check_modifier_flags(a);
    if (o->attention_map) attention_map_dir(o->attention_map);
    check_ppl_flags(a);
    check_longrope_flags(a);
    check_astats_flags(a);
    check_distance_flags(a);
}

// --attention-map, --attention-distance, --export and --export-llmc need the model only; returns 1
// when one of them ran.
int model_only_modes(Session *s) {
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
            fprintf(stderr, "exported %zu parameters to %s\n", s->model.weights.num_params, o->export_path);
        }
        if (o->export_llmc) {
            llmc_export(o->export_llmc, &s->model);
            fprintf(stderr, "exported %zu parameters to %s (llm.c GPT-2 model, version 3)\n", s->model.weights.num_params, o->export_llmc);
        }
        return 1;
    }
    return 0;
}

// --eval-batches, --ppl-out/--ppl-positions, --longrope-search, --attention-stats and --dump-step:
// evaluations of the model on data (training is skipped when one is given).
void data_modes(Session *s) {
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
        fprintf(stderr, "dumped one step (B=%d, T=%d, loss %.6f) to %s\n", o->batch, o->seq, s->model.state.loss, o->dump);
    }
}

// ----------------------------------------------------------------------------------------------
// sampling (--sample, after training or from --load; the default sample after training on text)

static void print_piece(const Tokenizer *tok, int id) {
    if (id >= 0 && id < tok->n) fwrite(tok->piece[id], 1, tok->piece_len[id], stdout);
    fflush(stdout);
}

// The sample: the prompt (or end-of-text, or a newline) and n generated tokens (sample_tokens,
// eval/eval.h: the KV cache, started again from the last half of the text when the context is full).
static void emit_piece(void *tok, int token, const real *logits) { (void)logits; print_piece(tok, token); }

void generate(GPT *m, const Tokenizer *tok, const Options *o, int n_new, Rng *rng) {
    int V = m->cfg.vocab_size;
    int cap = (int)strlen(o->prompt ? o->prompt : "") + 1;
    int *ctx = xmalloc(sizeof(int) * (size_t)(cap + n_new + 1));
    int n = o->prompt ? tokenizer_encode(tok, o->prompt, ctx, cap) : 0;
    if (n == 0) ctx[n++] = tok->eot >= 0 ? tok->eot : '\n';   // start from end-of-text or a newline
    for (int i = 0; i < n; i++) CHECK(ctx[i] < V, "--prompt: token %d is outside the model's vocabulary", ctx[i]);
    printf("---- sample (%d tokens, temperature %g, top-k %d) ----\n", n_new, o->temperature, o->top_k);
    if (o->prompt) fputs(o->prompt, stdout);
    sample_tokens(m, ctx, n, n_new, o->temperature, o->top_k, rng, emit_piece, (void *)tok);
    printf("\n---- end of sample ----\n");
    free(ctx);
}

// The tokens to sample after this run: --sample N's N when given; else DEFAULT_SAMPLE after a run that
// trained on text (a step or more, not --task) with a vocabulary it can print (bytes or --tokenizer),
// as --sample DEFAULT_SAMPLE would (the default --temperature, --top-k and no --prompt: those are
// refused without --sample); else none.
#define DEFAULT_SAMPLE 64
static int sample_tokens_after(const Session *s) {
    const Options *o = s->o;
    if (flag_set(&s->a, "sample")) return o->sample;
    int printable = o->tokenizer || s->model.cfg.vocab_size == 256;
    return !o->task && s->train_steps > 0 && printable ? DEFAULT_SAMPLE : 0;
}

// After training (or with --load alone): a --task's accuracy by length, and the sample text.
void after_training(Session *s) {
    const Options *o = s->o;
    if (o->task && !o->dump) evaluate_task(&s->model, &s->tc, o);
    int n = sample_tokens_after(s);
    if (n && !o->dump && !o->eval_batches && !eval_requested(o)) generate(&s->model, &s->tok, o, n, &s->rng);
}
