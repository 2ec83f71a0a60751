// eval/viz.c: attention pictures (eval/viz.h). The numbers come from the model (attention_probs) and from the
// schemes' own hooks (posenc.h), never from a second copy of a formula; gnuplot only draws them.
#include "eval/viz.h"

#include <errno.h>
#include <math.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// files

static FILE *open_in(const char *dir, const char *name, const char *ext) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "w");
    CHECK(f, "cannot write '%s': %s; give a writable folder", path, strerror(errno));
    return f;
}

static void close_checked(FILE *f, const char *dir, const char *name, const char *ext) {
    CHECK(!ferror(f) && fclose(f) == 0, "writing '%s/%s.%s' failed (disk full?)", dir, name, ext);
}

static void write_value(FILE *f, double x) {
    if (isnan(x)) fputs("NaN", f); else fprintf(f, "%.6g", x);
}

// n blocks of a (rows, cols) matrix each, in gnuplot's matrix format (blank-line pairs between
// blocks, so that `index k` picks block k); NaN marks a cell gnuplot leaves blank.
static void write_blocks(FILE *f, const real *a, int n, int rows, int cols, const char *block_name) {
    for (int k = 0; k < n; k++) {
        if (k) fputs("\n\n", f);
        fprintf(f, "# %s %d (index %d)\n", block_name, k, k);
        const real *m = a + (size_t)k * rows * cols;
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) { if (c) fputc(' ', f); write_value(f, m[(size_t)r * cols + c]); }
            fputc('\n', f);
        }
    }
}

// the largest |a_i| (NaN skipped), 1 when all are 0: a colour range
static double max_abs(const real *a, size_t n) {
    double mx = 0;
    for (size_t i = 0; i < n; i++) if (!isnan(a[i]) && fabs(a[i]) > mx) mx = fabs(a[i]);
    return mx > 0 ? mx : 1;
}

// ----------------------------------------------------------------------------------------------
// gnuplot

// 'text' for a shell command line
static void shell_quote(char *out, size_t cap, const char *s) {
    size_t k = 0;
    out[k++] = '\'';
    for (; *s && k + 6 < cap; s++) {
        if (*s == '\'') { memcpy(out + k, "'\\''", 4); k += 4; } else out[k++] = *s;
    }
    out[k++] = '\'';
    out[k] = 0;
}

// Runs `gnuplot NAME.gp` in dir; its messages go to NAME.log, which is shown (kept) only when it
// fails. Returns 1 when the PNG was drawn, 0 when gnuplot is not installed.
static int render(const char *dir, const char *name) {
    static int have = -1;
    if (have < 0) have = system("command -v gnuplot > /dev/null 2>&1") == 0;
    if (!have) return 0;
    char qdir[8192], cmd[8400], log[4096];
    shell_quote(qdir, sizeof qdir, dir);
    snprintf(cmd, sizeof cmd, "cd %s && gnuplot %s.gp 2> %s.log", qdir, name, name);
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    if (system(cmd) == 0) {
        remove(log);
        printf("  %s/%s.png\n", dir, name);
    } else {
        fprintf(stderr, "warning: gnuplot could not draw %s/%s.gp; its messages are in %s\n", dir, name, log);
    }
    return 1;
}

static void no_gnuplot(const char *dir) {
    static int told = 0;                    // once per run
    if (told++) return;
    printf("gnuplot not found: apt-get install gnuplot-nox to render %s/*.gp (cd %s && gnuplot NAME.gp)\n", dir, dir);
}

// The lines every script starts with: PNG of w x h pixels, plain text (no enhanced-mode markup, so
// '_' and '^' in token labels stay literal).
static void script_head(FILE *f, const char *name, int w, int h) {
    fprintf(f, "# %s.gp, written by ./train --attention-map; the numbers are in %s.dat.\n"
               "# Re-render: cd into this folder, then: gnuplot %s.gp\n"
               "set encoding utf8\n"
               "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "    set terminal pngcairo size %d,%d noenhanced font ',9'\n"
               "} else {\n"
               "    set terminal png size %d,%d noenhanced\n"
               "}\n"
               "set output '%s.png'\n", name, name, name, w, h, w, h, name);
}

#define PALETTE_SEQ "set palette defined (0 '#ffffff', 0.15 '#c6dbef', 0.4 '#6baed6', 0.7 '#2171b5', 1 '#08306b')\n"
#define PALETTE_DIV "set palette defined (-1 '#2166ac', -0.5 '#92c5de', 0 '#f7f7f7', 0.5 '#f4a582', 1 '#b2182b')\n"

// A grid of heat maps, one per block of NAME.dat: rows on y from the top, columns on x.
typedef struct {
    const char *name, *title;       // file stem; title over the grid
    int n;                          // panels (blocks)
    int rows, cols;                 // each block's shape
    const char *xlabel, *ylabel;
    const double *range;            // per panel: colours over [-r, r] (diverging) or [0, r] (sequential)
    int diverging;                  // 1: blue-white-red around 0; 0: white to blue from 0
    const char *tics;               // "'a' 0, 'b' 1, ..." labels of both axes, or NULL for numbers
    char (*panel_title)[64];        // (n,)
    int square;                     // 1: square panels
} Grid;

static void write_grid_script(FILE *f, const Grid *g) {
    int gc = (int)ceil(sqrt((double)g->n)), gr = (g->n + gc - 1) / gc;
    int big = g->rows > g->cols ? g->rows : g->cols;
    int panel = g->tics ? 11 * big + 170 : 460;
    if (panel < 380) panel = 380;
    if (panel > 900) panel = 900;
    script_head(f, g->name, gc * panel * (g->square ? 2 : 3) / 2, gr * panel + 30);   // wide panels for tables
    fputs(g->diverging ? PALETTE_DIV : PALETTE_SEQ, f);
    fprintf(f, "set multiplot layout %d,%d title '%s'\n", gr, gc, g->title);
    if (g->square) fputs("set size square\n", f);
    fprintf(f, "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n", g->cols - 1, g->rows - 1);
    fprintf(f, "set xlabel '%s'\nset ylabel '%s'\n", g->xlabel, g->ylabel);
    if (g->tics) fprintf(f, "set xtics (%s) rotate by 90 right font ',7'\nset ytics (%s) font ',7'\n", g->tics, g->tics);
    fputs("set tics out nomirror\nset cbtics font ',7'\n", f);
    for (int k = 0; k < g->n; k++) {
        fprintf(f, "set cbrange [%.6g:%.6g]\n", g->diverging ? -g->range[k] : 0, g->range[k]);
        fprintf(f, "set title '%s'\nplot '%s.dat' index %d matrix with image notitle\n", g->panel_title[k], g->name, k);
    }
    fputs("unset multiplot\n", f);
}

// ----------------------------------------------------------------------------------------------
// attention

// A token as an axis label inside a gnuplot single-quoted string: a byte model's printable bytes as
// themselves (' doubled), space as U+2423, \n \t and \xHH for the others; token ids otherwise.
static void token_label(char *out, size_t cap, int tok, int bytes) {
    if (!bytes) snprintf(out, cap, "%d", tok);
    else if (tok == ' ') snprintf(out, cap, "\xe2\x90\xa3");
    else if (tok == '\n') snprintf(out, cap, "\\n");
    else if (tok == '\t') snprintf(out, cap, "\\t");
    else if (tok == '\'') snprintf(out, cap, "''");
    else if (tok > 32 && tok < 127) snprintf(out, cap, "%c", tok);
    else snprintf(out, cap, "\\x%02X", tok & 0xFF);
}

// "'a' 0, 'b' 1, ..." for T tokens (caller frees)
static char *token_tics(const int *tokens, int T, int bytes) {
    size_t cap = (size_t)T * 32 + 1, k = 0;
    char *s = xmalloc(cap), lab[24];
    s[0] = 0;
    for (int t = 0; t < T; t++) {
        token_label(lab, sizeof lab, tokens[t], bytes);
        k += (size_t)snprintf(s + k, cap - k, "%s'%s' %d", t ? ", " : "", lab, t);
    }
    return s;
}

void viz_attention(GPT *m, const int *tokens, int T, const char *dir) {
    const GPTConfig *c = &m->cfg;
    int L = c->n_layer, NH = c->n_head;
    CHECK(T >= 1, "no tokens to draw attention for; give a non-empty --prompt");
    Batch b;
    batch_alloc(&b, 1, T);                  // positions 0..T-1, document 0
    memcpy(b.tokens, tokens, sizeof(int) * (size_t)T);
    free(b.targets); b.targets = NULL;      // inference: logits only
    gpt_forward(m, &b, NULL);

    size_t TT = (size_t)T * T;
    real *p = xmalloc(sizeof(real) * NH * TT);
    char *tics = T <= 64 ? token_tics(tokens, T, c->vocab_size == 256) : NULL;
    char (*titles)[64] = xmalloc(sizeof(*titles) * NH);
    double *range = xmalloc(sizeof(double) * NH);
    int drawn = 1;
    printf("attention of %d tokens, %d layers x %d heads, in %s:\n", T, L, NH, dir);
    for (int l = 0; l < L; l++) {
        char name[64], title[160];
        snprintf(name, sizeof name, "attn_layer%d", l);
        snprintf(title, sizeof title, "attention, layer %d (%s), %d tokens (colours up to the largest p below row 0)",
                 l, posenc_scheme(c->pe.layer[l])->name, T);
        for (int h = 0; h < NH; h++) {
            attention_probs(m, l, 0, h, p + (size_t)h * TT);
            snprintf(titles[h], sizeof titles[h], "layer %d head %d", l, h);
            // row 0 is always p = 1 (the first token sees only itself): it would wash out the rest
            range[h] = T > 1 ? max_abs(p + (size_t)h * TT + T, TT - T) : 1;
        }
        FILE *f = open_in(dir, name, "dat");
        fprintf(f, "# %s: attention probabilities p(i, j) of layer %d, one block per head (gnuplot: index h);\n"
                   "# row i = query position i, column j = key position j, 0 where masked (j > i). Tokens:",
                title, l);
        for (int t = 0; t < T; t++) fprintf(f, " %d", tokens[t]);
        fputs("\n", f);
        write_blocks(f, p, NH, T, T, "head");
        close_checked(f, dir, name, "dat");
        Grid g = { .name = name, .title = title, .n = NH, .rows = T, .cols = T, .xlabel = "key position j",
                   .ylabel = "query position i", .range = range, .tics = tics, .panel_title = titles, .square = 1 };
        f = open_in(dir, name, "gp");
        write_grid_script(f, &g);
        close_checked(f, dir, name, "gp");
        drawn &= render(dir, name);
    }
    if (!drawn) no_gnuplot(dir);
    free(titles); free(range); free(tics); free(p);
    batch_free(&b);
    m->state.batch = NULL;                        // its batch is gone
}

// ----------------------------------------------------------------------------------------------
// the positional signal

// hook 1: the rows the input scheme adds for positions 0..T-1 (its table), positions x channels
static int draw_input(GPT *m, const PosScheme *s, int T, const char *dir) {
    int C = m->cfg.n_embd;
    real *x = xcalloc((size_t)T * C, sizeof(real));
    int *pos = xmalloc(sizeof(int) * T);
    for (int t = 0; t < T; t++) pos[t] = t;
    s->input_forward(&m->pt, m->weights.p.pe_input, x, pos, T);      // added to zeros: the table itself
    const char *name = "pos_input";
    char title[128];
    snprintf(title, sizeof title, "input positions: %s table (positions x channels)", s->name);
    FILE *f = open_in(dir, name, "dat");
    fprintf(f, "# %s: row p = the vector added to the token embedding at position p, column = channel\n", title);
    write_blocks(f, x, 1, T, C, "table");
    close_checked(f, dir, name, "dat");
    double sym = max_abs(x, (size_t)T * C);
    char titles[1][64];
    snprintf(titles[0], sizeof titles[0], "%s", s->name);
    Grid g = { .name = name, .title = title, .n = 1, .rows = T, .cols = C, .xlabel = "channel",
               .ylabel = "position", .range = &sym, .diverging = 1, .panel_title = titles };
    f = open_in(dir, name, "gp");
    write_grid_script(f, &g);
    close_checked(f, dir, name, "gp");
    free(x); free(pos);
    return render(dir, name);
}

// hook 3: b_h(i, j) for i, j < T, j <= i (NaN, drawn blank, above the diagonal: never attended)
static int draw_bias(GPT *m, int l, const PosScheme *s, int T, const char *dir) {
    int NH = m->cfg.n_head;
    size_t TT = (size_t)T * T;
    real *bias = xmalloc(sizeof(real) * NH * TT);
    int *pos = xmalloc(sizeof(int) * T);
    for (int t = 0; t < T; t++) pos[t] = t;
    double *sym = xmalloc(sizeof(double) * NH);
    char (*titles)[64] = xmalloc(sizeof(*titles) * NH);
    for (int h = 0; h < NH; h++) {
        real *bh = bias + (size_t)h * TT;
        for (int i = 0; i < T; i++) {
            real *row = bh + (size_t)i * T;
            for (int j = 0; j < T; j++) row[j] = j <= i ? 0 : NAN;
            s->bias_forward(&m->pt, m->weights.p.pe_layer[l], NULL, h, i, pos, i + 1, row);
        }
        sym[h] = max_abs(bh, TT);
        snprintf(titles[h], sizeof titles[h], "layer %d head %d", l, h);
    }
    char name[64], title[160];
    snprintf(name, sizeof name, "pos_bias_layer%d", l);
    snprintf(title, sizeof title, "%s score bias b(i, j), layer %d, positions 0..%d", s->name, l, T - 1);
    FILE *f = open_in(dir, name, "dat");
    fprintf(f, "# %s: one block per head (gnuplot: index h); row i = query position, column j = key position;\n"
               "# NaN above the diagonal (a causal query never sees j > i)\n", title);
    write_blocks(f, bias, NH, T, T, "head");
    close_checked(f, dir, name, "dat");
    Grid g = { .name = name, .title = title, .n = NH, .rows = T, .cols = T, .xlabel = "key position j",
               .ylabel = "query position i", .range = sym, .diverging = 1, .panel_title = titles, .square = 1 };
    f = open_in(dir, name, "gp");
    write_grid_script(f, &g);
    close_checked(f, dir, name, "gp");
    free(bias); free(pos); free(sym); free(titles);
    return render(dir, name);
}

// <q rotated at position p, k rotated at position 0> (q and k are hooked in place)
static double rotated_dot(GPT *m, const PosScheme *s, real *q, real *k, int p, int hs) {
    s->qk_forward(&m->pt, q, p, 0);
    s->qk_forward(&m->pt, k, 0, 1);
    double dot = 0;
    for (int c = 0; c < hs; c++) dot += (double)q[c] * k[c];
    return dot;
}

// hook 2: the rotation kernel. Block 0 (positions x channels): <R(p) e_c, R(0) e_c>, q = e_c at
// position p, k = e_c at position 0 (cos(p theta) of the pair of c; 1 for channels that do not
// turn). Block 1: distance d, <R(d) 1, R(0) 1> / hs, the score of all-ones q (position d) and k
// (position 0), 1 at d = 0 for plain rope.
static int draw_rope(GPT *m, int l, const PosScheme *s, int T, const char *dir) {
    int hs = m->cfg.n_embd / m->cfg.n_head;
    real *kern = xmalloc(sizeof(real) * (size_t)T * hs), *score = xmalloc(sizeof(real) * T);
    real *q = xmalloc(sizeof(real) * hs), *k = xmalloc(sizeof(real) * hs);
    for (int p = 0; p < T; p++) {
        for (int ch = 0; ch < hs; ch++) {
            for (int c = 0; c < hs; c++) q[c] = k[c] = c == ch;
            kern[(size_t)p * hs + ch] = (real)rotated_dot(m, s, q, k, p, hs);
        }
        for (int c = 0; c < hs; c++) q[c] = k[c] = 1;
        score[p] = (real)(rotated_dot(m, s, q, k, p, hs) / hs);
    }
    char name[64], title[160];
    snprintf(name, sizeof name, "pos_rope_layer%d", l);
    snprintf(title, sizeof title, "%s rotation kernel, layer %d, positions 0..%d", s->name, l, T - 1);
    FILE *f = open_in(dir, name, "dat");
    fprintf(f, "# %s\n# block 0 (index 0): row p, column c = <R(p) e_c, R(0) e_c> (q = unit vector e_c at position p,\n"
               "# k = e_c at position 0); block 1 (index 1): distance d, <R(d) 1, R(0) 1> / head_size\n", title);
    write_blocks(f, kern, 1, T, hs, "kernel");
    fputs("\n\n# score (index 1): distance, all-ones score / head_size\n", f);
    for (int p = 0; p < T; p++) { fprintf(f, "%d ", p); write_value(f, score[p]); fputc('\n', f); }
    close_checked(f, dir, name, "dat");

    f = open_in(dir, name, "gp");
    script_head(f, name, 900, 1000);
    fprintf(f, PALETTE_DIV "set multiplot layout 2,1 title '%s'\n"
               "set title 'q = e_c at position p, k = e_c at position 0: <R(p) e_c, R(0) e_c> per channel c'\n"
               "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\nset cbrange [-%.6g:%.6g]\n"
               "set xlabel 'channel c of the head'\nset ylabel 'position p'\nset tics out nomirror\n"
               "plot '%s.dat' index 0 matrix with image notitle\n"
               "set title 'all-ones q at position d, k at position 0: <R(d) 1, R(0) 1> / head_size'\n"
               "set autoscale\nset xrange [0:%d]\nset xlabel 'distance d = i - j'\nset ylabel 'score / head_size'\n"
               "set grid\nplot '%s.dat' index 1 using 1:2 with lines lw 2 lc rgb '#2171b5' notitle\n"
               "unset multiplot\n", title, hs - 1, T - 1, max_abs(kern, (size_t)T * hs), max_abs(kern, (size_t)T * hs),
            name, T - 1, name);
    close_checked(f, dir, name, "gp");
    free(kern); free(score); free(q); free(k);
    return render(dir, name);
}

void viz_positions(GPT *m, int T, const char *dir) {
    const GPTConfig *c = &m->cfg;
    int limit = gpt_position_limit(m);
    CHECK(T >= 1 && T <= limit, "positional pictures cover positions 0..%d, but the model's tables end at %d",
          T - 1, limit - 1);
    printf("positional signal for positions 0..%d, in %s:\n", T - 1, dir);
    int drawn = 1;
    const PosScheme *in = posenc_scheme(c->pe.input);
    if (in->input_forward) drawn &= draw_input(m, in, T, dir);
    else printf("  input: none, no positional signal added to the token embeddings\n");
    for (int l = 0; l < c->n_layer; l++) {
        const PosScheme *s = posenc_scheme(c->pe.layer[l]);
        if (!(s->hooks & (PE_HOOK_QK | PE_HOOK_BIAS))) {
            printf("  layer %d: %s, no positional signal in this layer (order comes only from the causal mask)\n", l, s->name);
            continue;
        }
        int same = -1;      // an earlier layer with this scheme and these parameters draws the same
        for (int k = 0; k < l && same < 0; k++)
            if (c->pe.layer[k] == c->pe.layer[l] && m->weights.p.pe_layer[k] == m->weights.p.pe_layer[l]) same = k;
        if (same >= 0) {
            printf("  layer %d: %s, the same as layer %d (%s_layer%d.png)\n", l, s->name, same,
                   s->hooks & PE_HOOK_BIAS ? "pos_bias" : "pos_rope", same);
            continue;
        }
        if (s->hooks & PE_HOOK_BIAS) drawn &= draw_bias(m, l, s, T, dir);
        if (s->hooks & PE_HOOK_QK) drawn &= draw_rope(m, l, s, T, dir);
    }
    if (!drawn) no_gnuplot(dir);
}
