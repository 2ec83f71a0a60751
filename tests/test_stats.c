// tests/test_stats.c: lab/stats.c against known values and hand-computed small cases: t quantiles,
// a t-interval, the incomplete beta and Student's t CDF (closed forms, binomial tails and the
// integrated density), the paired t-test, exact sign-flip p-values (and the Monte Carlo beyond 24 pairs), the binomial
// sampler's distribution, percentiles, and the seed x instance and MRR bootstraps.
#include "lab/stats.h"
#include "tests/testutil.h"

static void test_t(void) {
    const int df[] = { 1, 2, 5, 10, 30, 100 };
    const double t[] = { 12.706, 4.303, 2.571, 2.228, 2.042, 1.984 };
    for (int i = 0; i < 6; i++) {
        char what[32];
        snprintf(what, sizeof what, "t(0.975, %d)", df[i]);
        EXPECT_NEAR(t_quantile_975(df[i]), t[i], 5e-4, 0, what);
    }
    // the expansion where the table ends and beyond (R: qt(0.975, c(31, 40)))
    EXPECT_NEAR(t_quantile_975(31), 2.039513446, 1e-7, 0, "t(0.975, 31)");
    EXPECT_NEAR(t_quantile_975(40), 2.021075383, 1e-7, 0, "t(0.975, 40)");
    EXPECT(isnan(t_quantile_975(0)), "t with 0 degrees of freedom is NAN");
}

static void test_t_interval(void) {
    // {1,2,3,4,5}: mean 3, sd sqrt(2.5), se sqrt(0.5), t(0.975, 4) = 2.776445105
    const double x[] = { 1, 2, 3, 4, 5 };
    Interval iv = mean_t_interval(x, 5);
    double half = 2.776445105 * sqrt(0.5);
    EXPECT_NEAR(iv.mean, 3, 1e-12, 0, "mean");
    EXPECT_NEAR(iv.lo, 3 - half, 1e-8, 0, "t-interval lo");
    EXPECT_NEAR(iv.hi, 3 + half, 1e-8, 0, "t-interval hi");
    EXPECT(iv.n == 5, "n");
    // {+17.4, +15.1, -5.2} (issue 17's NoPE - ALiBi): mean 9.1, sd 12.432, t(2) = 4.302652730
    const double d[] = { 17.4, 15.1, -5.2 };
    iv = mean_t_interval(d, 3);
    double sd = sqrt(((17.4 - 9.1) * (17.4 - 9.1) + (15.1 - 9.1) * (15.1 - 9.1) + (5.2 + 9.1) * (5.2 + 9.1)) / 2);
    EXPECT_NEAR(iv.hi - iv.mean, 4.302652730 * sd / sqrt(3), 1e-8, 0, "3-seed half width");
    EXPECT(iv.lo < 0 && iv.hi > 0, "the 3-seed interval covers 0");
    iv = mean_t_interval(x, 1);
    EXPECT(iv.mean == 1 && isnan(iv.lo) && isnan(iv.hi), "one value: a mean, no interval");
}

static double binom_cdf_half(int n, int k) {     // P(Binomial(n, 1/2) <= k)
    double c = 1, s = 0;
    for (int i = 0; i <= k; i++) { s += c; c = c * (n - i) / (i + 1); }
    return s / pow(2, n);
}

static void test_sign_flip(void) {
    // {1,2,3}: the sums of the 8 patterns are +-6, +-4, +-2, 0, 0: |sum| >= 6 twice
    EXPECT_NEAR(sign_flip_p((const double[]){ 1, 2, 3 }, 3, 1), 0.25, 1e-15, 0, "p of {1,2,3}");
    EXPECT_NEAR(sign_flip_p((const double[]){ 1, -1 }, 2, 1), 1.0, 1e-15, 0, "p of {1,-1}");
    // {2,3,-1,4}: observed 8; a pattern negating a subset of sum S has |10 - 2S| >= 8 iff
    // S <= 1 or S >= 9: {}, {1}, {2,3,4}, {1,2,3,4}: 4 of 16
    EXPECT_NEAR(sign_flip_p((const double[]){ 2, 3, -1, 4 }, 4, 1), 0.25, 1e-15, 0, "p of {2,3,-1,4}");
    // {1,2,3,-4}: observed 2; |10 - 2S| < 2 only for S = 5 ({1,4}, {2,3}): 14 of 16
    EXPECT_NEAR(sign_flip_p((const double[]){ 1, 2, 3, -4 }, 4, 1), 0.875, 1e-15, 0, "p of {1,2,3,-4}");
    // five positive differences: only the two one-signed patterns: 2 / 32
    EXPECT_NEAR(sign_flip_p((const double[]){ 1, 2, 3, 4, 5 }, 5, 1), 0.0625, 1e-15, 0, "p of {1..5}");
    EXPECT_NEAR(sign_flip_p((const double[]){ 0.1, 0.2, 0.3 }, 3, 1), 0.25, 1e-15, 0, "ties despite rounding");
    EXPECT_NEAR(sign_flip_p((const double[]){ 0, 0, 0 }, 3, 1), 1.0, 1e-15, 0, "all zero: p 1");
    EXPECT(isnan(sign_flip_p(NULL, 0, 1)), "no pairs: NAN");
    // 24 ones: exact, 2 / 2^24
    double d[30];
    for (int i = 0; i < 30; i++) d[i] = 1;
    EXPECT_NEAR(sign_flip_p(d, 24, 1), 2.0 / 16777216, 1e-20, 0, "p of 24 ones (exact)");
    // beyond 24: Monte Carlo. 26 values of +-1 (16 up, 10 down): the sum is 26 - 2m with
    // m ~ Binomial(26, 1/2) minus signs; |sum| >= 6 iff m <= 10 or m >= 16
    for (int i = 0; i < 26; i++) d[i] = i < 16 ? 1 : -1;
    double exact = 2 * binom_cdf_half(26, 10);
    EXPECT_NEAR(sign_flip_p(d, 26, 7), exact, 0.003, 0, "Monte Carlo p of 26 values");
    EXPECT(sign_flip_p(d, 26, 7) == sign_flip_p(d, 26, 7), "Monte Carlo p is deterministic given the seed");
    for (int i = 0; i < 30; i++) d[i] = 1;
    double p = sign_flip_p(d, 30, 3);
    EXPECT(p > 0 && p <= 3e-6, "Monte Carlo p of 30 ones is about 1/(1e6+1), got %g", p);
}

static void test_binomial(void) {
    Rng r;
    rng_seed(&r, 11);
    const int ns[] = { 50, 1000, 7 };
    const double ps[] = { 0.3, 0.7, 0.5 };
    for (int c = 0; c < 3; c++) {
        int n = ns[c], draws = 200000;
        double p = ps[c], s = 0, q = 0, mean = n * p, var = n * p * (1 - p);
        for (int i = 0; i < draws; i++) { int k = binomial_draw(&r, n, p); s += k; q += (double)k * k; }
        double m = s / draws, v = q / draws - m * m;
        char what[64];
        snprintf(what, sizeof what, "Binomial(%d, %.1f) mean", n, p);
        EXPECT_NEAR(m, mean, 5 * sqrt(var / draws), 0, what);
        snprintf(what, sizeof what, "Binomial(%d, %.1f) variance", n, p);
        EXPECT_NEAR(v, var, 5 * var * sqrt(2.0 / draws), 0, what);
    }
    // Binomial(3, 1/2): 1/8, 3/8, 3/8, 1/8
    int count[4] = { 0 };
    for (int i = 0; i < 80000; i++) count[binomial_draw(&r, 3, 0.5)]++;
    for (int k = 0; k < 4; k++) EXPECT_NEAR(count[k] / 80000.0, (k == 0 || k == 3 ? 1 : 3) / 8.0, 0.01, 0, "Binomial(3, 1/2) pmf");
    EXPECT(binomial_draw(&r, 9, 0) == 0 && binomial_draw(&r, 9, 1) == 9 && binomial_draw(&r, 0, 0.5) == 0, "edges");
}

static void test_percentile(void) {
    double x[] = { 4, 1, 3, 2 };
    EXPECT_NEAR(percentile(x, 4, 0.5), 2.5, 1e-15, 0, "median of 1..4");
    EXPECT_NEAR(percentile(x, 4, 0), 1, 1e-15, 0, "0th percentile");
    EXPECT_NEAR(percentile(x, 4, 1), 4, 1e-15, 0, "100th percentile");
    EXPECT_NEAR(percentile(x, 4, 0.25), 1.75, 1e-15, 0, "25th percentile");
}

static void test_bootstrap(void) {
    // every seed 100%: [1, 1]
    Bucket a[] = { { 10, 10 }, { 5, 5 }, { 0, 0 } }, b[] = { { 20, 20 } };
    SeedBuckets all[] = { { a, 3 }, { b, 1 }, { a, 2 } };
    Interval iv = bootstrap_accuracy(all, 3, 10000, 1);
    EXPECT(iv.mean == 1 && iv.lo == 1 && iv.hi == 1 && iv.n == 3, "degenerate bootstrap: [%g, %g] mean %g", iv.lo, iv.hi, iv.mean);
    // a run's accuracy weighs every instance the same
    Bucket c[] = { { 10, 5 }, { 30, 30 } };
    EXPECT_NEAR(seed_accuracy(&(SeedBuckets){ c, 2 }), 35.0 / 40, 1e-15, 0, "pooled accuracy of a run");
    // two seeds, 0% and 100%, one instance each: the inner draw is fixed, the outer gives means
    // 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4; 2.5 and 97.5 percentiles 0 and 1
    Bucket zero[] = { { 1, 0 } }, one[] = { { 1, 1 } };
    SeedBuckets two[] = { { zero, 1 }, { one, 1 } };
    Rng r;
    rng_seed(&r, 5);
    double draws[10000];
    EXPECT(bootstrap_accuracy_draws(two, 2, 10000, &r, draws) == 2, "two seeds used");
    int k0 = 0, kh = 0, k1 = 0;
    for (int i = 0; i < 10000; i++) { k0 += draws[i] == 0; kh += draws[i] == 0.5; k1 += draws[i] == 1; }
    EXPECT(k0 + kh + k1 == 10000, "every draw is 0, 0.5 or 1");
    EXPECT_NEAR(k0 / 10000.0, 0.25, 0.02, 0, "P(both 0%)");
    EXPECT_NEAR(kh / 10000.0, 0.5, 0.02, 0, "P(one each)");
    iv = bootstrap_accuracy(two, 2, 10000, 1);
    EXPECT(iv.mean == 0.5 && iv.lo == 0 && iv.hi == 1, "0%%/100%% bootstrap: [%g, %g] mean %g", iv.lo, iv.hi, iv.mean);
    // one seed, 50 of 100: the inner level alone, Binomial(100, 1/2)'s 2.5/97.5 percentiles 40/60
    Bucket half[] = { { 100, 50 } };
    iv = bootstrap_accuracy(&(SeedBuckets){ half, 1 }, 1, 10000, 3);
    EXPECT(iv.lo >= 0.39 && iv.lo <= 0.41 && iv.hi >= 0.59 && iv.hi <= 0.61, "instance bootstrap: [%g, %g]", iv.lo, iv.hi);
    Interval again = bootstrap_accuracy(&(SeedBuckets){ half, 1 }, 1, 10000, 3);
    EXPECT(again.lo == iv.lo && again.hi == iv.hi, "deterministic given the seed");
    iv = bootstrap_accuracy(&(SeedBuckets){ a + 2, 1 }, 1, 100, 3);
    EXPECT(iv.n == 0 && isnan(iv.mean), "no instances: no interval");
}

static void test_mrr(void) {
    // 1 task, 2 seeds, 2 schemes: seed 1 ranks them (1, 1/2), seed 2 (1/2, 1). Resamples: both
    // seed 1 (1/4): MRR 1 and 0.5; mixed (1/2): 0.75; both seed 2 (1/4): 0.5 and 1.
    double rr[] = { 1, 0.5, 0.5, 1 };
    Interval out[2];
    bootstrap_mrr(rr, 1, 2, 2, 10000, 1, out);
    for (int s = 0; s < 2; s++) {
        EXPECT_NEAR(out[s].mean, 0.75, 1e-15, 0, "observed MRR");
        EXPECT(out[s].lo == 0.5 && out[s].hi == 1 && out[s].n == 2, "MRR interval [%g, %g] n %d", out[s].lo, out[s].hi, out[s].n);
    }
    // 2 tasks x 3 seeds x 1 scheme, unranked entries left out; seed s brings both its tasks
    double rr2[] = { 1, NAN, 0.5,  /* task 2 */ 0.5, 1, NAN };
    Interval m;
    bootstrap_mrr(rr2, 2, 3, 1, 4000, 2, &m);
    EXPECT_NEAR(m.mean, 3.0 / 4, 1e-15, 0, "MRR over the ranked entries");
    EXPECT(m.n == 4, "4 ranked configurations, got %d", m.n);
    EXPECT(m.lo >= 0.5 && m.hi <= 1 && m.lo < m.hi, "MRR interval within the values: [%g, %g]", m.lo, m.hi);
}

// The t-interval of a mean accuracy over seeds: runs of 60%, 70%, 90% (each pooled over its
// buckets): mean 0.7333, sd 0.1528, t(2) = 4.3027: [0.354, 1.113], which reaches past the seeds'
// own range (a percentile bootstrap of these seeds stays in [0.6, 0.9]); a seed without instances is
// left out; one seed has no interval.
static void test_seed_interval(void) {
    Bucket s1[] = { { 5, 3 }, { 5, 3 } }, s2[] = { { 10, 7 } }, s3[] = { { 10, 9 } }, none[] = { { 0, 0 } };
    SeedBuckets seeds[] = { { s1, 2 }, { s2, 1 }, { none, 1 }, { s3, 1 } };
    Interval iv = seed_accuracy_interval(seeds, 4);
    EXPECT(iv.n == 3 && fabs(iv.mean - 2.2 / 3) < 1e-12 && fabs(iv.lo - 0.35389) < 1e-4 && fabs(iv.hi - 1.11278) < 1e-4,
           "t-interval over 3 seeds: %g [%g, %g] n %d (want 0.7333 [0.3539, 1.1128] n 3)", iv.mean, iv.lo, iv.hi, iv.n);
    iv = seed_accuracy_interval(seeds + 1, 1);
    EXPECT(iv.n == 1 && iv.mean == 0.7 && isnan(iv.lo) && isnan(iv.hi), "one seed: its accuracy, no interval");
}

// The MRR's t-interval over units, worked by hand: 2 tasks x 3 seeds x 1 scheme, rr task 1 = 1,
// NAN, 0.5 and task 2 = 0.5, 1, NAN. By seed: means 0.75, 1, 0.5 (t(2) 4.3027 x 0.1443): [0.129,
// 1.371]; by task: 0.75, 0.75: [0.75, 0.75]. The MRR is the mean of the 4 entries either way.
static void test_mrr_t(void) {
    double rr[] = { 1, NAN, 0.5, /* task 2 */ 0.5, 1, NAN };
    Interval m;
    mrr_t_intervals(rr, 2, 3, 1, 0, &m);
    EXPECT(m.n == 4 && m.mean == 0.75 && fabs(m.lo - 0.12897) < 1e-4 && fabs(m.hi - 1.37103) < 1e-4,
           "MRR by seed: %g [%g, %g] n %d (want 0.75 [0.1290, 1.3710] n 4)", m.mean, m.lo, m.hi, m.n);
    mrr_t_intervals(rr, 2, 3, 1, 1, &m);
    EXPECT(m.n == 4 && m.mean == 0.75 && m.lo == 0.75 && m.hi == 0.75, "MRR by task: %g [%g, %g]", m.mean, m.lo, m.hi);
    // ties: the expected reciprocal rank of a random break; five runs tied get (1 + 1/2 + ... + 1/5)/5 each
    double five[5] = { 0.2, 0.2, 0.2, 0.2, 0.2 }, two[5] = { 0.9, 0.5, 0.5, 0.1, NAN };
    EXPECT_NEAR(expected_reciprocal_rank(five, 5, 3), (1 + 0.5 + 1.0 / 3 + 0.25 + 0.2) / 5, 1e-15, 0, "a five-way tie");
    EXPECT_NEAR(expected_reciprocal_rank(two, 5, 1), (0.5 + 1.0 / 3) / 2, 1e-15, 0, "a tie at ranks 2-3");
    EXPECT(expected_reciprocal_rank(two, 5, 3) == 0.25 && isnan(expected_reciprocal_rank(two, 5, 4)),
           "below a tie: rank 4; NAN unranked");
}

// Holm's adjustment worked by hand: p = 0.01, 0.04, 0.03, 0.005 (m = 4) sorted 0.005, 0.01, 0.03,
// 0.04 -> 4 x 0.005 = 0.02, 3 x 0.01 = 0.03, 2 x 0.03 = 0.06, max(1 x 0.04, 0.06) = 0.06; a NAN is
// not a test; a product above 1 is 1.
static void test_holm(void) {
    double p[5] = { 0.01, 0.04, NAN, 0.03, 0.005 }, adj[5], want[5] = { 0.03, 0.06, NAN, 0.06, 0.02 };
    holm_adjust(p, 5, adj);
    int ok = 1;
    for (int i = 0; i < 5; i++) ok &= isnan(want[i]) ? isnan(adj[i]) : fabs(adj[i] - want[i]) < 1e-12;
    EXPECT(ok, "Holm: 0.01 0.04 NAN 0.03 0.005 -> %.4g %.4g %.4g %.4g %.4g (want 0.03 0.06 NAN 0.06 0.02)", adj[0], adj[1], adj[2],
           adj[3], adj[4]);
    double q[3] = { 0.5, 0.6, 0.9 }, qa[3];
    holm_adjust(q, 3, qa);
    EXPECT(qa[0] == 1 && qa[1] == 1 && qa[2] == 1, "Holm: 0.5 0.6 0.9 -> 1 1 1 (got %g %g %g)", qa[0], qa[1], qa[2]);
    double one = 0.03125, onea;
    holm_adjust(&one, 1, &onea);
    EXPECT(onea == one, "Holm of one test is its p");
}

// The two-sided p of Student's t by numeric integration of its density (the reference the C code
// is held to): 1 - 2 * the integral of the density over [0, |t|], composite Simpson with 20000
// panels (error ~1e-14 on these smooth integrands).
static double t_p_by_integration(double t, double df) {
    double k = exp(lgamma((df + 1) / 2) - lgamma(df / 2)) / sqrt(df * M_PI), h = fabs(t) / 20000, s = 0;
    for (int i = 0; i <= 20000; i++) {
        double x = i * h, f = k * pow(1 + x * x / df, -(df + 1) / 2);
        s += f * (i == 0 || i == 20000 ? 1 : i % 2 ? 4 : 2);
    }
    return 1 - 2 * s * h / 3;
}

// P(X >= a) for X ~ Binomial(n, x), summed in logs: I_x(a, n - a + 1) for integers a, b
static double binomial_tail(int n, int a, double x) {
    double s = 0;
    for (int j = a; j <= n; j++) s += exp(lgamma(n + 1) - lgamma(j + 1) - lgamma(n - j + 1) + j * log(x) + (n - j) * log1p(-x));
    return s;
}

static void test_incomplete_beta(void) {
    const double xs[] = { 0.01, 0.2, 0.5, 0.77, 0.999 };
    for (int i = 0; i < 5; i++) {
        double x = xs[i];
        char what[96];
        snprintf(what, sizeof what, "I_%g(1, 1) = x", x);
        EXPECT_NEAR(incomplete_beta(1, 1, x), x, 1e-14, 0, what);
        snprintf(what, sizeof what, "I_%g(3.5, 1) = x^3.5", x);
        EXPECT_NEAR(incomplete_beta(3.5, 1, x), pow(x, 3.5), 1e-14, 1e-12, what);
        snprintf(what, sizeof what, "I_%g(1, 2.5) = 1 - (1-x)^2.5", x);
        EXPECT_NEAR(incomplete_beta(1, 2.5, x), 1 - pow(1 - x, 2.5), 1e-14, 1e-12, what);
        snprintf(what, sizeof what, "I_%g(2, 3): a binomial tail", x);
        EXPECT_NEAR(incomplete_beta(2, 3, x), binomial_tail(4, 2, x), 1e-14, 1e-12, what);
        snprintf(what, sizeof what, "I_%g(50, 60): a binomial tail", x);
        EXPECT_NEAR(incomplete_beta(50, 60, x), binomial_tail(109, 50, x), 1e-13, 1e-10, what);
    }
    EXPECT_NEAR(incomplete_beta(7.25, 7.25, 0.5), 0.5, 1e-14, 0, "I_0.5(a, a) = 1/2");
    EXPECT(incomplete_beta(2, 3, 0) == 0 && incomplete_beta(2, 3, 1) == 1, "I_0 = 0, I_1 = 1");
    EXPECT(isnan(incomplete_beta(0, 1, 0.5)) && isnan(incomplete_beta(1, 1, 1.5)) && isnan(incomplete_beta(1, 1, NAN)),
           "I outside its domain is NAN");
}

static void test_t_cdf(void) {
    // the 95% and 99% two-sided points (R: qt(0.975, 4), qt(0.975, 5), qt(0.995, 4)), given to 6 decimals
    EXPECT_NEAR(t_two_sided_p(2.776445, 4), 0.05, 1e-7, 0, "p(t = 2.776445, df 4)");
    EXPECT_NEAR(t_two_sided_p(2.570582, 5), 0.05, 1e-7, 0, "p(t = 2.570582, df 5)");
    EXPECT_NEAR(t_two_sided_p(4.604095, 4), 0.01, 1e-7, 0, "p(t = 4.604095, df 4)");
    EXPECT_NEAR(t_two_sided_p(-4.604095, 4), 0.01, 1e-7, 0, "p(t = -4.604095, df 4)");
    EXPECT_NEAR(t_two_sided_p(1, 1), 0.5, 1e-14, 0, "p(t = 1, df 1)");
    // every quantile of the t-interval's table gives p = 0.05: the interval and the test agree
    for (int df = 1; df <= 40; df++) {
        char what[96];
        snprintf(what, sizeof what, "p(t(0.975, %d), %d) = 0.05", df, df);
        EXPECT_NEAR(t_two_sided_p(t_quantile_975(df), df), 0.05, 1e-8, 0, what);
    }
    // closed forms: df 1 (Cauchy) p = 1 - 2 atan|t| / pi; df 2 p = 1 - |t| / sqrt(2 + t^2);
    // df 3 CDF = 1/2 + (u / (1 + u^2) + atan u) / pi with u = t / sqrt 3
    const double ts[] = { -7.5, -2, -0.3, 0, 0.3, 1.7, 3, 12, 150 };
    for (int i = 0; i < 9; i++) {
        double t = ts[i], u = t / sqrt(3);
        char what[96];
        snprintf(what, sizeof what, "p(t = %g, df 1)", t);
        EXPECT_NEAR(t_two_sided_p(t, 1), 1 - 2 * atan(fabs(t)) / M_PI, 1e-14, 1e-12, what);
        snprintf(what, sizeof what, "p(t = %g, df 2)", t);
        EXPECT_NEAR(t_two_sided_p(t, 2), 1 - fabs(t) / sqrt(2 + t * t), 1e-14, 1e-10, what);
        snprintf(what, sizeof what, "CDF(t = %g, df 3)", t);
        EXPECT_NEAR(t_cdf(t, 3), 0.5 + (u / (1 + u * u) + atan(u)) / M_PI, 1e-14, 1e-10, what);
    }
    // other degrees of freedom, a fractional one too, against the integrated density
    const double dfs[] = { 4, 5.5, 7, 12, 30, 200 }, tt[] = { 0.1, 0.9, 2.1, 3.3, 6 };
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 5; j++) {
            char what[96];
            snprintf(what, sizeof what, "p(t = %g, df %g) against the integrated density", tt[j], dfs[i]);
            EXPECT_NEAR(t_two_sided_p(tt[j], dfs[i]), t_p_by_integration(tt[j], dfs[i]), 1e-11, 0, what);
        }
    EXPECT(t_two_sided_p(INFINITY, 3) == 0 && t_two_sided_p(0, 3) == 1, "p(inf) = 0, p(0) = 1");
    EXPECT_NEAR(t_cdf(-2.776445, 4), 0.025, 1e-7, 0, "CDF(-2.776445, df 4)");
    EXPECT_NEAR(t_cdf(2.776445, 4), 0.975, 1e-7, 0, "CDF(2.776445, df 4)");
    EXPECT(isnan(t_two_sided_p(NAN, 3)) && isnan(t_two_sided_p(1, 0)), "p of NAN t or df 0 is NAN");
}

static void test_paired_t(void) {
    // {1,2,3,4,5}: mean 3, se sqrt(2.5 / 5), t = 3 / sqrt(0.5) = 4.2426, df 4
    TTest x = paired_t_test((const double[]){ 1, 2, 3, 4, 5 }, 5);
    EXPECT_NEAR(x.t, 3 / sqrt(0.5), 1e-12, 0, "t of {1..5}");
    EXPECT(x.df == 4, "df of {1..5}");
    EXPECT_NEAR(x.p, t_p_by_integration(3 / sqrt(0.5), 4), 1e-11, 0, "p of {1..5}");
    EXPECT_NEAR(x.iv.lo, 3 - 2.776445105 * sqrt(0.5), 1e-8, 0, "its interval");
    // {0.5, -0.1, 0.2}: mean 0.2, sd 0.3, t = 0.2 / (0.3 / sqrt 3) = 1.1547, df 2: p = 1 - t / sqrt(2 + t^2)
    x = paired_t_test((const double[]){ 0.5, -0.1, 0.2 }, 3);
    double t = 0.2 / (0.3 / sqrt(3));
    EXPECT_NEAR(x.t, t, 1e-12, 0, "t of {0.5, -0.1, 0.2}");
    EXPECT_NEAR(x.p, 1 - t / sqrt(2 + t * t), 1e-12, 0, "p of {0.5, -0.1, 0.2}");
    // five equal differences, -log 1.5, whose sum over 5 is not exactly -log 1.5 in floating point:
    // still sd 0, so t -inf, p 0 and a point interval (not a t of -1e16 from the rounding)
    x = paired_t_test((const double[]){ -0.4054651081081644, -0.4054651081081644, -0.4054651081081644,
                                        -0.4054651081081644, -0.4054651081081644 }, 5);
    EXPECT(isinf(x.t) && x.t < 0 && x.p == 0, "equal negative differences: t -inf, p 0 (got t %g, p %g)", x.t, x.p);
    EXPECT(x.iv.lo == x.iv.mean && x.iv.hi == x.iv.mean && x.iv.mean == -0.4054651081081644, "equal differences: a point interval");
    x = paired_t_test((const double[]){ 0, 0 }, 2);
    EXPECT(x.t == 0 && x.p == 1, "zero differences: t 0, p 1");
    x = paired_t_test((const double[]){ 1 }, 1);
    EXPECT(isnan(x.t) && isnan(x.p) && x.iv.mean == 1, "one difference: no test");
}

int main(void) {
    test_incomplete_beta();
    test_t_cdf();
    test_paired_t();
    test_holm();
    test_t();
    test_t_interval();
    test_sign_flip();
    test_binomial();
    test_percentile();
    test_bootstrap();
    test_mrr();
    test_seed_interval();
    test_mrr_t();
    return test_summary("test_stats");
}
