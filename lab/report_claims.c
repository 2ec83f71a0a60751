// lab/report_claims.c: summary.md's claims on text (./compare --data ... --claims; the syntax in
// lab/claims_text.h, the test in docs/lab.md, "Claims on text"). Each claim compares two rows of the
// perplexity table at one window, paired by seed over the seeds where both have a perplexity:
//     d_s = log ppl_A,s - log ppl_B,s - log m
// the difference of the two mean losses per token, less the margin. A two-sided paired t-test of d
// against 0 (df = n - 1, lab/stats.c), Holm over every claim of the grid as one family, and the exact
// sign-flip p of the same d beside it, a check that does not lean on normality.
#include <math.h>
#include <string.h>

#include "lab/report.h"

typedef struct {
    int n, ka, kb;             // seeds with both perplexities; with A's; with B's
    Interval ia, ib;           // A's and B's geometric-mean perplexity over their seeds, 95% t-interval
    TTest x;                   // the t-test of d
    double sign_p;             // the exact sign-flip p of d
    char by[1024];             // A / B by seed
} ClaimRow;

// An interval of mean log perplexities carried back through the exponential (the geometric mean)
static Interval exp_of(Interval iv, double shift) {
    iv.mean = exp(iv.mean + shift); iv.lo = exp(iv.lo + shift); iv.hi = exp(iv.hi + shift);
    return iv;
}

// One claim's numbers at its window, w = W x context tokens (as ./train rounds a window).
static void claim_row(const Report *rp, int t, int context, const TextClaim *cl, ClaimRow *r) {
    const Cfg *c = rp->c;
    int w = (int)lround(cl->window * context);
    double la[MAX_ITEMS], lb[MAX_ITEMS], d[MAX_ITEMS];
    memset(r, 0, sizeof *r);
    for (int sd = 0; sd < c->n_seeds; sd++) {
        double a = ppl_value(rp, run_index(c, t, cl->sa, sd), cl->va, cl->sliding, w, NULL);
        double b = ppl_value(rp, run_index(c, t, cl->sb, sd), cl->vb, cl->sliding, w, NULL);
        if (!isnan(a)) la[r->ka++] = log(a);
        if (!isnan(b)) lb[r->kb++] = log(b);
        if (isnan(a) || isnan(b)) continue;
        d[r->n++] = log(a) - log(b) - log(cl->margin);
        size_t u = strlen(r->by);
        snprintf(r->by + u, sizeof r->by - u, "%s%lld: %.4f", u ? ", " : "", c->seeds[sd], a / b);
    }
    r->ia = exp_of(mean_t_interval(la, r->ka), 0);
    r->ib = exp_of(mean_t_interval(lb, r->kb), 0);
    r->x = paired_t_test(d, r->n);
    r->sign_p = sign_flip_p(d, r->n, stream_seed("text", cl->text, 50));
}

// +1 supported, -1 contradicted, 0 neither: Holm p < 0.05 decides, the mean of d gives the side
static int verdict(const TextClaim *cl, const ClaimRow *r, double holm) {
    if (r->n < 2 || !(holm < 0.05)) return 0;
    return (r->x.iv.mean < 0) == cl->less ? 1 : -1;
}

static void claim_line(const Report *rp, const TextClaim *cl, const ClaimRow *r, double holm, int context) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    fprintf(md, "| `%s` | %ld (%gT)%s | %d |", cl->text, lround(cl->window * context), cl->window,
            cl->sliding ? ", sliding" : "", r->n);
    if (r->ka) seeds_cell(md, r->ia, r->ka, c->n_seeds, 3); else fprintf(md, " n/a |");
    if (r->kb) seeds_cell(md, r->ib, r->kb, c->n_seeds, 3); else fprintf(md, " n/a |");
    Interval ratio = exp_of(r->x.iv, log(cl->margin));           // the geometric mean of A / B, margin added back
    fprintf(md, " %s |", r->by);
    if (r->n) fprintf(md, " %.4f |", ratio.mean); else fprintf(md, " |");
    if (r->n >= 2) fprintf(md, " [%.4f, %.4f] | %.4g | %.4g | %.4g |", ratio.lo, ratio.hi, r->x.t, r->x.p, holm);
    else fprintf(md, " | | | |");
    if (r->n) fprintf(md, " %.4g |", r->sign_p); else fprintf(md, " |");
    int v = verdict(cl, r, holm);
    if (v) fprintf(md, " %s |\n", v > 0 ? "supported" : "contradicted");
    else if (!r->n) fprintf(md, " no seed with both perplexities |\n");
    else not_distinguishable(md, r->n, "seed");
}

void text_claims_section(const Report *rp, int t) {
    const Cfg *c = rp->c;
    FILE *md = rp->md;
    int m = c->n_text_claims, most = 0, context = grid_context(rp);
    if (m < 1) return;
    ClaimRow *rows = xmalloc(sizeof(ClaimRow) * m);
    double *p = xmalloc(sizeof(double) * m), *holm = xmalloc(sizeof(double) * m);
    for (int k = 0; k < m; k++) {
        claim_row(rp, t, context, &c->text_claims[k], &rows[k]);
        p[k] = rows[k].x.p;                        // NAN with fewer than 2 seeds: not a test
        most = rows[k].n > most ? rows[k].n : most;
    }
    holm_adjust(p, m, holm);                       // every claim of the grid: one family
    fprintf(md, "## Claims\n\n`A<B*m@W` claims that A's perplexity at W times the context (T = %d) is below m times B's "
                "(m = 1 without `*m`); `>` claims it is above. Windows are non-overlapping unless the claim ends in "
                "`:sliding`. Per seed with both perplexities, d = log ppl_A - log ppl_B - log m: the difference of the mean "
                "losses per token, less the margin. A two-sided paired t-test (seeds - 1 degrees of freedom) tests d "
                "against 0, and Holm adjusts its p over the %d claims of this grid. Supported: Holm p < 0.05 with the mean "
                "of d on the claimed side. Contradicted: Holm p < 0.05 on the other side. Otherwise not distinguishable, "
                "which is no evidence against the claim. A verdict holds with the chance of any false verdict among the "
                "claims at most 5%%, if d is near normal across seeds. A and B: geometric-mean perplexity [95%% "
                "t-interval]. A / B: the geometric mean of the seeds' ratios with its 95%% t-interval, which excludes m "
                "when p < 0.05. The sign-flip p is exact and assumes no normality, but it cannot go below 2/2^n", context, m);
    if (most) fprintf(md, " (%.4g with %d seeds)", 2.0 / ldexp(1.0, most), most);
    fprintf(md, ".\n\n"
                "| claim | window | seeds | A | B | A / B by seed | A / B | 95%% interval | t | p | Holm p | sign-flip p | verdict |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < m; k++) claim_line(rp, &c->text_claims[k], &rows[k], holm[k], context);
    int held = 0;
    fprintf(md, "\nWith the chance of any false verdict among these %d claims at most 5%% (Holm p < 0.05): ", m);
    for (int k = 0; k < m; k++) {
        int v = verdict(&c->text_claims[k], &rows[k], holm[k]);
        if (v) fprintf(md, "%s`%s` %s", held++ ? ", " : "", c->text_claims[k].text, v > 0 ? "supported" : "contradicted");
    }
    fprintf(md, "%s.\n\n", held ? "" : "none");
    free(rows); free(p); free(holm);
}
