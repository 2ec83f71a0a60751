// lab/stats.h: the statistics behind ./compare's intervals and tests (docs/lab.md, The comparison;
// paired by seed, as small-seed comparisons need): means with t-intervals, Student's t distribution
// and the paired t-test, the exact sign-flip permutation test of paired differences, an exact
// binomial sampler, t-intervals of a mean accuracy and of the mean reciprocal rank over units, and
// percentile bootstraps of an accuracy over seeds and instances and of the mean reciprocal rank
// over seeds (./ladder's). Pure functions: no I/O, and every random
// draw comes from an Rng (util/common.h) seeded by the caller, so a report is the same every time.
#ifndef STATS_H
#define STATS_H

#include "util/common.h"

// A mean with a 95% interval [lo, hi]; lo = hi = NAN when the interval is undefined (n < 2 for a
// t-interval) and mean = NAN when there is no value (n = 0).
typedef struct { double mean, lo, hi; int n; } Interval;

// The 0.975 quantile of Student's t with df degrees of freedom (df >= 1): a table for df 1..30,
// the Cornish-Fisher expansion in 1/df beyond (accurate to 1e-7 from df 31 on).
double t_quantile_975(int df);

// The mean of x (n values) with the 95% t-interval mean +- t(0.975, n-1) * sd / sqrt(n).
Interval mean_t_interval(const double *x, int n);

// The regularized incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b) for a, b > 0 and
// 0 <= x <= 1 (NAN outside): the continued fraction of Abramowitz & Stegun 26.5.8, evaluated by the
// modified Lentz method to a relative 1e-15, on x itself when x < (a + 1) / (a + b + 2) and through
// I_x(a, b) = 1 - I_(1-x)(b, a) beyond, where the fraction converges fast.
double incomplete_beta(double a, double b, double x);

// Student's t with df > 0 degrees of freedom: the CDF P(T <= t), from the incomplete beta,
// P(|T| >= |t|) = I_(df / (df + t^2))(df / 2, 1 / 2). t may be infinite; NAN for a NAN t or df <= 0.
double t_cdf(double t, double df);
// The two-sided p of a t statistic, P(|T| >= |t|), computed directly (no 1 - CDF cancellation).
double t_two_sided_p(double t, double df);

// The paired t-test of differences d (n values) against 0: the mean with its 95% t-interval,
// t = mean / (sd / sqrt(n)), df = n - 1 and the two-sided p. With n < 2, t and p are NAN. When
// every difference is the same (sd = 0), t is +-infinity and p = 0, or t = 0 and p = 1 when they
// are all 0.
typedef struct { Interval iv; double t, p; int df; } TTest;
TTest paired_t_test(const double *d, int n);

// Patterns up to which sign_flip_p enumerates every one of the 2^n sign patterns.
#define SIGN_FLIP_EXACT_MAX 24
// Monte Carlo patterns beyond that.
#define SIGN_FLIP_DRAWS 1000000

// The two-sided sign-flip permutation p-value of the mean of paired differences d (n values): the
// fraction of the 2^n sign patterns s with |sum s_k d_k| >= |sum d_k| (ties within 1e-9 of the
// scale count as >=). Exact for n <= SIGN_FLIP_EXACT_MAX; beyond, SIGN_FLIP_DRAWS random patterns
// from seed, p = (hits + 1) / (draws + 1) (the observed pattern counted once). NAN when n = 0.
// The smallest possible exact p is 2 / 2^n: 0.25 with 3 pairs, 0.0625 with 5, 0.03125 with 6.
double sign_flip_p(const double *d, int n, uint64_t seed);

// Holm's step-down adjustment of m p-values (a family of tests): with the p sorted ascending as
// p(1) <= ... <= p(m), adj(j) = max over i <= j of min(1, (m - i + 1) p(i)), written back in the
// input's order. Rejecting every test with adj < alpha keeps the chance of any false rejection in
// the family at or below alpha, whatever the tests' dependence (Holm 1979). NAN entries are not
// tests: they stay NAN and do not count in m.
void holm_adjust(const double *p, int m, double *adj);

// A draw from Binomial(n, p): exact inversion of the cumulative distribution (the pmf by its
// recurrence), on min(p, 1-p); n is split into chunks of at most 30 / p trials so that (1-p)^chunk
// stays far from underflow. Expected work O(n min(p, 1-p)).
int binomial_draw(Rng *r, int n, double p);

// The q-quantile (0 <= q <= 1) of x (n >= 1 values, sorted in place), interpolated linearly
// between order statistics at (n - 1) q.
double percentile(double *x, int n, double q);

// The reciprocal rank of vals[i] among vals[n] (higher ranks first; NAN entries are not ranked) in
// expectation over a random break of ties, as the NoPE paper breaks them arbitrarily: with g
// values above it and e equal to it (itself included), its rank is g+1 .. g+e, each equally
// likely, so the mean of 1/r over them. NAN when vals[i] is NAN.
double expected_reciprocal_rank(const double *vals, int n, int i);

// One length bucket of a run: n instances scored, correct of them right.
typedef struct { int n, correct; } Bucket;
// One run (seed) of a scheme: its buckets (those with n = 0 are ignored).
typedef struct { const Bucket *b; int nb; } SeedBuckets;

// The accuracy of a run: sum correct / sum n over its buckets (every instance weighs the same);
// NAN without instances.
double seed_accuracy(const SeedBuckets *s);

// The two-level bootstrap of a scheme's accuracy, the mean over its seeds of seed_accuracy (seeds
// without instances are left out). Each of the `resamples` draws resamples the seeds with
// replacement (outer), then the instances within each drawn seed (inner: every bucket's correct
// count redrawn as Binomial(n, correct / n), which is resampling its n instances with replacement);
// draws[] receives each resample's mean. Returns the number of seeds with instances (0: draws
// untouched).
int bootstrap_accuracy_draws(const SeedBuckets *seeds, int n_seeds, int resamples, Rng *r, double *draws);

// The observed mean over seeds with its 95% percentile interval (2.5 and 97.5 percentiles of
// `resamples` draws of bootstrap_accuracy_draws).
Interval bootstrap_accuracy(const SeedBuckets *seeds, int n_seeds, int resamples, uint64_t seed);

// The mean over seeds of seed_accuracy (seeds without instances are left out) with its 95%
// t-interval over those seeds (mean_t_interval): the interval of a mean over a few seeds, which a
// percentile bootstrap cannot give (its resamples never leave the seeds' own range: with 3 seeds
// there are only 10 distinct ones).
Interval seed_accuracy_interval(const SeedBuckets *seeds, int n_seeds);

// The mean reciprocal rank of each scheme with a 95% t-interval over units. rr is (n_tasks, n_seeds,
// n_schemes) as for bootstrap_mrr. A unit is a seed (its mean over the tasks where the scheme was
// ranked) or, with by_task, a task (its mean over its seeds); out[sc].mean is the MRR (the mean of
// every entry, the paper's), lo and hi the t-interval of the units' means, n the entries. With as
// many entries in every unit (every run ranked) the interval is centred on the MRR.
void mrr_t_intervals(const double *rr, int n_tasks, int n_seeds, int n_schemes, int by_task, Interval *out);

// The bootstrap interval of the mean reciprocal rank of each scheme. rr is (n_tasks, n_seeds,
// n_schemes): the reciprocal rank of a scheme in a task x seed configuration, NAN where that run is
// not ranked. A scheme's MRR is the mean of its non-NAN entries. Each resample draws n_seeds seeds
// with replacement, each bringing all its tasks. out[n_schemes]: the observed MRR, the 2.5 and 97.5
// percentiles, and n = the configurations it was ranked in.
void bootstrap_mrr(const double *rr, int n_tasks, int n_seeds, int n_schemes, int resamples, uint64_t seed, Interval *out);

#endif
