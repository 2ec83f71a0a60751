// lab/stats.c: t-intervals, Student's t distribution and the paired t-test, the sign-flip
// permutation test, the binomial sampler and the percentile bootstraps of ./compare's and ./ladder's
// reports (lab/stats.h says what each computes).
#include <math.h>

#include "lab/stats.h"

// t(0.975, df) for df = 1..30
static const double T975[30] = {
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252,
    2.306004135, 2.262157163, 2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688,
    2.131449546, 2.119905299, 2.109815578, 2.100922040, 2.093024054, 2.085963447, 2.079613845,
    2.073873068, 2.068657610, 2.063898562, 2.059538553, 2.055529439, 2.051830516, 2.048407142,
    2.045229642, 2.042272456,
};

double t_quantile_975(int df) {
    if (df <= 30) return df >= 1 ? T975[df - 1] : NAN;
    // Cornish-Fisher (Abramowitz & Stegun 26.7.5) around the normal quantile z
    double z = 1.959963984540054, v = df, z2 = z * z;
    double g1 = z * (z2 + 1) / 4;
    double g2 = z * ((5 * z2 + 16) * z2 + 3) / 96;
    double g3 = z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / 384;
    double g4 = z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / 92160;
    return z + (g1 + (g2 + (g3 + g4 / v) / v) / v) / v;
}

Interval mean_t_interval(const double *x, int n) {
    Interval iv = { .mean = NAN, .lo = NAN, .hi = NAN, .n = n };
    if (n < 1) return iv;
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i];
    iv.mean = s / n;
    if (n < 2) return iv;
    for (int i = 0; i < n; i++) q += (x[i] - iv.mean) * (x[i] - iv.mean);
    double half = t_quantile_975(n - 1) * sqrt(q / (n - 1) / n);
    iv.lo = iv.mean - half;
    iv.hi = iv.mean + half;
    return iv;
}

// The continued fraction of I_x(a, b) (Abramowitz & Stegun 26.5.8),
//     I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * 1 / (1 + d1 / (1 + d2 / (1 + ...))),
//     d(2m) = m (b - m) x / ((a + 2m - 1)(a + 2m)),  d(2m+1) = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)),
// by the modified Lentz method: the ratios c = A_k / A_(k-1) and d = B_(k-1) / B_k of the
// convergents' numerators and denominators, each kept off zero, and f the fraction, f *= c d.
// It converges in O(sqrt(max(a, b))) steps for x < (a + 1) / (a + b + 2).
static double beta_fraction(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-15;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double f = d;
    for (int m = 1; m <= 10000; m++) {
        for (int odd = 0; odd < 2; odd++) {
            double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1 + num * d;
            if (fabs(d) < tiny) d = tiny;
            c = 1 + num / c;
            if (fabs(c) < tiny) c = tiny;
            d = 1 / d;
            f *= c * d;
        }
        if (fabs(c * d - 1) < eps) break;        // the last step changed f by less than eps
    }
    return f;
}

double incomplete_beta(double a, double b, double x) {
    if (!(a > 0 && b > 0 && x >= 0 && x <= 1)) return NAN;
    if (x == 0 || x == 1) return x;
    // the prefactor x^a (1-x)^b / B(a, b), in logs so that large a or b do not overflow
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
    return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double t_two_sided_p(double t, double df) {
    if (isnan(t) || !(df > 0)) return NAN;
    return incomplete_beta(df / 2, 0.5, df / (df + t * t));     // t infinite: x = 0, p = 0
}

double t_cdf(double t, double df) {
    double p = t_two_sided_p(t, df);             // the two tails together; the distribution is symmetric
    return t >= 0 ? 1 - p / 2 : p / 2;
}

TTest paired_t_test(const double *d, int n) {
    TTest x = { .iv = mean_t_interval(d, n), .t = NAN, .p = NAN, .df = n - 1 };
    if (n < 2) return x;
    double q = 0, mean = x.iv.mean;
    int same = 1;
    for (int i = 0; i < n; i++) { q += (d[i] - mean) * (d[i] - mean); same &= d[i] == d[0]; }
    // every difference the same: sd = 0 exactly (the rounding of the mean would leave a sd of ~1e-17)
    if (same) {
        x.t = d[0] == 0 ? 0 : copysign(INFINITY, d[0]);
        x.p = d[0] == 0 ? 1 : 0;
        x.iv.mean = x.iv.lo = x.iv.hi = d[0];
        return x;
    }
    double se = sqrt(q / (n - 1) / n);
    x.t = mean / se;
    x.p = t_two_sided_p(x.t, n - 1);
    return x;
}

double sign_flip_p(const double *d, int n, uint64_t seed) {
    if (n < 1) return NAN;
    long double total = 0;
    double scale = 0;
    for (int i = 0; i < n; i++) { total += d[i]; scale += fabs(d[i]); }
    double limit = fabsl(total) - 1e-9 * scale;        // |sum| >= observed, ties included
    if (n <= SIGN_FLIP_EXACT_MAX) {
        // Gray code order: each next pattern flips one sign, so the sum is updated in O(1);
        // long double keeps 2^24 updates far inside the tie tolerance
        int sign[SIGN_FLIP_EXACT_MAX];
        for (int i = 0; i < n; i++) sign[i] = 1;
        uint64_t patterns = 1ull << n, hits = 0;
        long double s = total;
        for (uint64_t g = 1; ; g++) {
            hits += fabsl(s) >= limit;
            if (g == patterns) break;
            int b = __builtin_ctzll(g);
            sign[b] = -sign[b];
            s += 2.0L * sign[b] * d[b];
        }
        return (double)hits / (double)patterns;
    }
    Rng r;
    rng_seed(&r, seed);
    uint64_t hits = 0;
    for (int k = 0; k < SIGN_FLIP_DRAWS; k++) {
        long double s = 0;
        uint64_t bits = 0;
        for (int i = 0; i < n; i++) {
            if (i % 64 == 0) bits = rng_u64(&r);
            s += (bits >> (i % 64)) & 1 ? d[i] : -d[i];
        }
        hits += fabsl(s) >= limit;
    }
    return (hits + 1.0) / (SIGN_FLIP_DRAWS + 1.0);
}

// Binomial(n, p) for p <= 0.5 and (1-p)^n well above underflow: walk the cumulative distribution
// from 0, P(k) = P(k-1) (n-k+1)/k p/(1-p), until it passes a uniform draw
static int binomial_invert(Rng *r, int n, double p) {
    double ratio = p / (1 - p), f = pow(1 - p, n), u = rng_uniform(r);
    int k = 0;
    while (u >= f && k < n) {
        u -= f;
        k++;
        f *= ratio * (n - k + 1) / k;
    }
    return k;
}

int binomial_draw(Rng *r, int n, double p) {
    if (n <= 0 || p <= 0) return 0;
    if (p >= 1) return n;
    if (p > 0.5) return n - binomial_draw(r, n, 1 - p);
    // a sum of independent binomials with the same p is binomial: chunks of <= 30/p trials keep
    // (1-p)^chunk >= e^-42
    int chunk = n * p > 30 ? (int)(30 / p) : n, k = 0;
    for (int done = 0; done < n; done += chunk) k += binomial_invert(r, n - done < chunk ? n - done : chunk, p);
    return k;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void holm_adjust(const double *p, int m, double *adj) {
    int *order = xmalloc(sizeof(int) * (m > 0 ? m : 1)), k = 0;
    for (int i = 0; i < m; i++) {
        adj[i] = NAN;
        if (!isnan(p[i])) order[k++] = i;
    }
    for (int i = 1; i < k; i++)                    // insertion sort by p (families are small), stable
        for (int j = i; j > 0 && p[order[j]] < p[order[j - 1]]; j--) { int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t; }
    double run = 0;
    for (int i = 0; i < k; i++) {
        double a = (k - i) * p[order[i]];
        run = fmax(run, a < 1 ? a : 1);
        adj[order[i]] = run;
    }
    free(order);
}

double expected_reciprocal_rank(const double *vals, int n, int i) {
    if (isnan(vals[i])) return NAN;
    int above = 0, tied = 0;                     // NAN compares false
    for (int k = 0; k < n; k++) { above += vals[k] > vals[i]; tied += vals[k] == vals[i]; }
    double rr = 0;
    for (int r = above + 1; r <= above + tied; r++) rr += 1.0 / r;
    return rr / tied;
}

double percentile(double *x, int n, double q) {
    qsort(x, n, sizeof *x, cmp_double);
    double h = (n - 1) * q;
    int lo = (int)floor(h);
    if (lo >= n - 1) return x[n - 1];
    return x[lo] + (h - lo) * (x[lo + 1] - x[lo]);
}

double seed_accuracy(const SeedBuckets *s) {
    long long num = 0, den = 0;
    for (int i = 0; i < s->nb; i++) { num += s->b[i].correct; den += s->b[i].n; }
    return den ? (double)num / den : NAN;
}

int bootstrap_accuracy_draws(const SeedBuckets *seeds, int n_seeds, int resamples, Rng *r, double *draws) {
    const SeedBuckets **use = xmalloc(sizeof(*use) * (n_seeds ? n_seeds : 1));
    int k = 0;
    for (int i = 0; i < n_seeds; i++) if (!isnan(seed_accuracy(&seeds[i]))) use[k++] = &seeds[i];
    for (int b = 0; k && b < resamples; b++) {
        double sum = 0;
        for (int j = 0; j < k; j++) {
            const SeedBuckets *s = use[rng_u64(r) % k];                 // outer: a seed
            long long num = 0, den = 0;
            for (int i = 0; i < s->nb; i++) {                            // inner: its instances
                const Bucket *u = &s->b[i];
                if (u->n <= 0) continue;
                num += binomial_draw(r, u->n, (double)u->correct / u->n);
                den += u->n;
            }
            sum += (double)num / den;
        }
        draws[b] = sum / k;
    }
    free(use);
    return k;
}

Interval bootstrap_accuracy(const SeedBuckets *seeds, int n_seeds, int resamples, uint64_t seed) {
    Interval iv = { .mean = NAN, .lo = NAN, .hi = NAN, .n = 0 };
    double sum = 0;
    for (int i = 0; i < n_seeds; i++) {
        double a = seed_accuracy(&seeds[i]);
        if (!isnan(a)) { sum += a; iv.n++; }
    }
    if (!iv.n) return iv;
    iv.mean = sum / iv.n;
    Rng r;
    rng_seed(&r, seed);
    double *draws = xmalloc(sizeof(double) * resamples);
    bootstrap_accuracy_draws(seeds, n_seeds, resamples, &r, draws);
    iv.lo = percentile(draws, resamples, 0.025);
    iv.hi = percentile(draws, resamples, 0.975);
    free(draws);
    return iv;
}

Interval seed_accuracy_interval(const SeedBuckets *seeds, int n_seeds) {
    double *x = xmalloc(sizeof(double) * (n_seeds > 0 ? n_seeds : 1));
    int k = 0;
    for (int i = 0; i < n_seeds; i++) {
        double a = seed_accuracy(&seeds[i]);
        if (!isnan(a)) x[k++] = a;
    }
    Interval iv = mean_t_interval(x, k);
    free(x);
    return iv;
}

void mrr_t_intervals(const double *rr, int n_tasks, int n_seeds, int n_schemes, int by_task, Interval *out) {
    int nu = by_task ? n_tasks : n_seeds, ni = by_task ? n_seeds : n_tasks;
    double *unit = xmalloc(sizeof(double) * (nu > 0 ? nu : 1));
    for (int sc = 0; sc < n_schemes; sc++) {
        double all = 0;
        int n_all = 0, k = 0;
        for (int u = 0; u < nu; u++) {
            double sum = 0;
            int n = 0;
            for (int i = 0; i < ni; i++) {
                int t = by_task ? u : i, sd = by_task ? i : u;
                double v = rr[((size_t)t * n_seeds + sd) * n_schemes + sc];
                if (!isnan(v)) { sum += v; n++; }
            }
            if (n) unit[k++] = sum / n;
            all += sum; n_all += n;
        }
        Interval iv = mean_t_interval(unit, k);
        out[sc] = (Interval){ .mean = n_all ? all / n_all : NAN, .lo = iv.lo, .hi = iv.hi, .n = n_all };
    }
    free(unit);
}

void bootstrap_mrr(const double *rr, int n_tasks, int n_seeds, int n_schemes, int resamples, uint64_t seed, Interval *out) {
    Rng r;
    rng_seed(&r, seed);
    double *draws = xmalloc(sizeof(double) * resamples * n_schemes);
    double *sum = xcalloc(n_schemes, sizeof(double));
    int *cnt = xcalloc(n_schemes, sizeof(int));
    // the observed MRR, then each resample's (NAN when a draw holds none of a scheme's entries)
    for (int b = -1; b < resamples; b++) {
        for (int sc = 0; sc < n_schemes; sc++) { sum[sc] = 0; cnt[sc] = 0; }
        for (int j = 0; j < n_seeds; j++) {
            int sd = b < 0 ? j : (int)(rng_u64(&r) % n_seeds);
            for (int t = 0; t < n_tasks; t++)
                for (int sc = 0; sc < n_schemes; sc++) {
                    double v = rr[((size_t)t * n_seeds + sd) * n_schemes + sc];
                    if (!isnan(v)) { sum[sc] += v; cnt[sc]++; }
                }
        }
        for (int sc = 0; sc < n_schemes; sc++) {
            double m = cnt[sc] ? sum[sc] / cnt[sc] : NAN;
            if (b < 0) out[sc] = (Interval){ .mean = m, .lo = NAN, .hi = NAN, .n = cnt[sc] };
            else draws[(size_t)sc * resamples + b] = m;
        }
    }
    for (int sc = 0; sc < n_schemes; sc++) {
        double *x = draws + (size_t)sc * resamples;
        int k = 0;
        for (int b = 0; b < resamples; b++) if (!isnan(x[b])) x[k++] = x[b];
        if (k) { out[sc].lo = percentile(x, k, 0.025); out[sc].hi = percentile(x, k, 0.975); }
    }
    free(draws); free(sum); free(cnt);
}
