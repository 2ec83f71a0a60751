// dataset/tasks_sets.c: the instances of dataset/tasks.h in bulk: the numbered pools (through
// each task's pool operations, dataset/tasks_impl.h), the evaluation sets drawn from them or
// sampled, and the packed training batches.

#include "dataset/tasks.h"

#include <stdlib.h>
#include <string.h>

#include "dataset/tasks_impl.h"

enum {
    LENGTH_TRIES = 1000,           // lengths task_fill_batch draws before giving up
    SET_DRAWS_PER_INSTANCE = 20    // task_eval_set without a pool: draws per instance asked, at most
};

// ---------------------------------------------------------------------------------------------
// numbered pools and evaluation sets

long long task_pool_size(const TaskConfig *c, int n) {
    CHECK(c && c->task >= 0 && c->task < T_COUNT, "task_pool_size: unknown task id %d", c ? c->task : -1);
    CHECK(n >= 1, "task_pool_size: length %d must be >= 1", n);
    const TaskOps *ops = &TASK_OPS[c->task];
    return ops->pool_size && n >= task_min_length(c) ? ops->pool_size(c, n) : -1;
}

int task_pool_instance(const TaskConfig *c, int n, long long i, int *out, int cap, int *prompt_len) {
    const char *name = task_info(c->task)->name;
    long long pool = task_pool_size(c, n);
    CHECK(pool >= 0, "task %s: length %d has no numbered pool (more than %d instances, or a sampled task)", name, n,
          TASK_POOL_MAX);
    CHECK(i >= 0 && i < pool, "task %s: instance %lld outside [0, %lld)", name, i, pool);
    CHECK(cap >= task_max_tokens(c, n), "task %s: an output of %d tokens cannot hold a length-%d instance (up to %d)",
          name, cap, n, task_max_tokens(c, n));
    Out o = {out, 0};
    put_str(&o, task_info(c->task)->tag);
    TASK_OPS[c->task].pool_instance(c, n, i, &o, prompt_len);
    put(&o, '\n');
    return o.n;
}

void task_set_free(TaskSet *s) {
    free(s->tokens); free(s->len); free(s->prompt_len);
    memset(s, 0, sizeof *s);
}

// Room for `count` instances of `stride` tokens.
static void set_alloc(TaskSet *s, int count, int stride) {
    s->stride = stride;
    s->tokens = xmalloc(sizeof(int) * (size_t)(count > 0 ? count : 1) * (size_t)stride);
    s->len = xmalloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
    s->prompt_len = xmalloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
}

static int cmp_ll(const void *x, const void *y) {
    long long a = *(const long long *)x, b = *(const long long *)y;
    return (a > b) - (a < b);
}

static void set_by_sampling(const TaskConfig *c, int n, double depth, int split, int count, Rng *rng, TaskSet *s);

// 1 when the generator draws every instance of a length's pool with the same probability, so that
// a uniform choice from the enumerated pool is a draw from the training distribution. Addition's
// is not: its pair of digit counts is uniform over the 2n - 1 pairs whose longer is n, where the
// pool is dominated by pairs of two n-digit numbers (81% of it at n = 3, a fifth of the draws).
static int generator_uniform(const TaskConfig *c) { return TASK_OPS[c->task].uniform; }

// Enumerates the pool: the numbers of the class's instances, then all of them or `count` chosen by
// a partial Fisher-Yates shuffle (kept in increasing order). Where the generator is not uniform
// over the pool, `count` of more are drawn as set_by_sampling draws them (the generator's
// distribution, repeats rejected); the pool's size is still reported.
static void set_from_pool(const TaskConfig *c, int n, long long pool, int split, int count, Rng *rng, TaskSet *s) {
    int stride = task_max_tokens(c, n), p;
    int *tmp = xmalloc(sizeof(int) * (size_t)stride);
    long long *idx = xmalloc(sizeof(long long) * (size_t)pool), k = 0;   // (pool,) at most
    for (long long i = 0; i < pool; i++) {
        int len = task_pool_instance(c, n, i, tmp, stride, &p);
        if (task_class_of(c, n, tmp, len) == split) idx[k++] = i;
    }
    if (k > count && !generator_uniform(c)) {
        free(idx); free(tmp);
        set_by_sampling(c, n, -1.0, split, count, rng, s);
        s->pool = k;
        return;
    }
    s->pool = k;
    if (k > count) {
        for (long long j = 0; j < count; j++) {
            long long r = j + (long long)(rng_u64(rng) % (uint64_t)(k - j)), t = idx[j];
            idx[j] = idx[r]; idx[r] = t;
        }
        k = count;
        qsort(idx, (size_t)k, sizeof *idx, cmp_ll);
    }
    set_alloc(s, (int)k, stride);
    for (long long j = 0; j < k; j++)
        s->len[j] = task_pool_instance(c, n, idx[j], s->tokens + (size_t)j * stride, stride, &s->prompt_len[j]);
    s->count = (int)k;
    free(idx); free(tmp);
}

// Draws instances of the class, keeping each distinct one (a table of content hashes, confirmed
// by comparing tokens), until `count` or count x SET_DRAWS_PER_INSTANCE draws.
static void set_by_sampling(const TaskConfig *c, int n, double depth, int split, int count, Rng *rng, TaskSet *s) {
    int stride = task_max_tokens(c, n);
    set_alloc(s, count, stride);
    s->pool = -1;
    size_t size = 16;
    while (size < 2 * (size_t)count) size *= 2;
    int *table = xmalloc(sizeof(int) * size);                 // (size,) slot of an instance, -1 empty
    for (size_t i = 0; i < size; i++) table[i] = -1;
    long long draws = (long long)count * SET_DRAWS_PER_INSTANCE;
    for (long long t = 0; t < draws && s->count < count; t++) {
        int *slot = s->tokens + (size_t)s->count * stride, p;
        int len = task_instance(c, n, depth, split, rng, slot, stride, &p);
        if (len == 0) break;                                  // the class has no instance of this length
        size_t h = (size_t)task_content_hash(slot, len) & (size - 1);
        int seen = 0;
        for (; table[h] >= 0; h = (h + 1) & (size - 1)) {
            int j = table[h];
            if (s->len[j] == len && !memcmp(s->tokens + (size_t)j * stride, slot, sizeof(int) * (size_t)len)) { seen = 1; break; }
        }
        if (seen) continue;
        table[h] = s->count;
        s->len[s->count] = len;
        s->prompt_len[s->count++] = p;
    }
    free(table);
}

int task_eval_set(const TaskConfig *c, int n, double depth, int split, int count, uint64_t seed, TaskSet *s) {
    char msg[256];
    CHECK(task_check(c, msg, sizeof msg), "%s", msg);
    CHECK(count >= 0, "task_eval_set: count %d must be >= 0", count);
    CHECK(split == TASK_TRAIN || split == TASK_TEST || split == TASK_VAL, "task_eval_set: unknown class %d", split);
    memset(s, 0, sizeof *s);
    Rng rng;
    rng_seed(&rng, seed);
    long long pool = task_pool_size(c, n);
    if (pool >= 0) set_from_pool(c, n, pool, split, count, &rng, s);
    else set_by_sampling(c, n, depth, split, count, &rng, s);
    return s->count;
}

// ---------------------------------------------------------------------------------------------
// training batches

// A training length: uniform in [train_min, train_max], or, for a task whose table gives a length
// weight, length n with probability weight(n) / (the weights of the range): SCAN's pools, so that
// every command of the language is equally likely (as in its training set); addition's 2n - 1
// pairs of digit counts, so that the pair is uniform over the grid of counts (the paper's bins).
static int draw_training_length(const TaskConfig *c, Rng *rng) {
    long long (*weight)(const TaskConfig *, int) = TASK_OPS[c->task].length_weight;
    if (!weight) return c->train_min + draw(rng, c->train_max - c->train_min + 1);
    long long total = 0;
    for (int n = c->train_min; n <= c->train_max; n++) total += weight(c, n);
    CHECK(total > 0, "task %s has no instance at lengths %d..%d; widen --train-min/--train-max", task_info(c->task)->name,
          c->train_min, c->train_max);
    long long x = (long long)(rng_u64(rng) % (uint64_t)total);
    int n = c->train_min;
    for (; x >= weight(c, n); n++) x -= weight(c, n);
    return n;
}

static int draw_training_instance(const TaskConfig *c, Rng *rng, int *inst, int cap, int *prompt_len) {
    for (int k = 0; k < LENGTH_TRIES; k++) {
        int n = draw_training_length(c, rng);
        int len = task_instance(c, n, -1.0, TASK_TRAIN, rng, inst, cap, prompt_len);
        if (len > 0) return len;
    }
    CHECK(0, "task %s: found no training instance at lengths %d..%d in %d tries (every instance hashes to the "
          "test or validation class); widen --train-min/--train-max", task_info(c->task)->name, c->train_min, c->train_max, LENGTH_TRIES);
    return 0;
}

// Rows are filled left to right with whole instances. An instance that does not fit in what is
// left of a row is not dropped: the Rng is rewound to before its draw, so it is drawn again, the
// same, as the first instance of the next row (or of the next call). The stream of instances is
// therefore i.i.d. (lengths as draw_training_length draws them), and none is skipped for being long.
void task_fill_batch(const TaskConfig *c, Rng *rng, Batch *b) {
    char msg[256];
    CHECK(task_check(c, msg, sizeof msg), "%s", msg);
    int need = task_max_tokens(c, c->train_max);
    CHECK(need <= b->T, "task %s: a training instance of length %d (--train-max) takes up to %d tokens, more than "
          "the %d of a batch row; raise --seq to at least %d or lower --train-max", task_info(c->task)->name,
          c->train_max, need, b->T, need);
    int *inst = xmalloc((size_t)need * sizeof(int));  // (need,) one instance
    for (int row = 0; row < b->B; row++) {
        size_t base = (size_t)row * b->T;
        int t = 0, doc = 0;
        for (;;) {
            Rng before = *rng;
            int p = 0, len = draw_training_instance(c, rng, inst, need, &p);
            if (t + len > b->T) {  // full: this instance opens the next row
                CHECK(t > 0, "task_fill_batch: an instance of %d tokens does not fit an empty row of %d", len, b->T);
                *rng = before;
                break;
            }
            for (int i = 0; i < len; i++) {
                size_t k = base + (size_t)(t + i);
                b->tokens[k] = inst[i];
                b->targets[k] = i + 1 < len ? inst[i + 1] : '\n';
                b->weights[k] = (i + 1 >= p && i + 1 < len) ? 1.0f : 0.0f;  // predicts a target token
                b->pos[k] = i;
                b->doc[k] = doc;
            }
            t += len;
            doc++;
        }
        for (; t < b->T; t++) {  // padding
            size_t k = base + (size_t)t;
            b->tokens[k] = '\n'; b->targets[k] = '\n';
            b->weights[k] = 0.0f; b->pos[k] = 0; b->doc[k] = -1;
        }
    }
    free(inst);
}

void task_fill_slice(const TaskConfig *c, Rng *rng, Batch *b, Batch *global, int rank, int nranks) {
    if (nranks == 1) { task_fill_batch(c, rng, b); return; }
    CHECK(global->B == nranks * b->B && global->T == b->T && rank >= 0 && rank < nranks,
          "internal: task_fill_slice: a global batch of %d x %d for rank %d of %d with %d x %d rows", global->B, global->T,
          rank, nranks, b->B, b->T);
    task_fill_batch(c, rng, global);
    size_t at = (size_t)rank * b->B * b->T, n = (size_t)b->B * b->T;
    memcpy(b->tokens, global->tokens + at, n * sizeof(int));
    memcpy(b->targets, global->targets + at, n * sizeof(int));
    memcpy(b->weights, global->weights + at, n * sizeof(float));
    memcpy(b->pos, global->pos + at, n * sizeof(int));
    memcpy(b->doc, global->doc + at, n * sizeof(int));
}
