// tests/test_viz.c: attention pictures, in the double build.
//   - attention_probs, for every layer scheme, on a batch with packing (two documents in one row)
//     and padding (doc -1 before and after a sequence): each row sums to 1 over the keys it may
//     attend, is exactly 0 at every other key (future, other document, padding), equals a plain
//     softmax computed here from m->a.qkv and the scheme's bias hook called one key at a time, and
//     reproduces the attention output the forward stored (sum_j p(i,j) v_j);
//   - viz_attention and viz_positions write their data and scripts for every kind of scheme (with
//     gnuplot hidden from PATH: no rendering here; tests/test_cli.sh renders through ./train).
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../model.h"
#include "../viz.h"
#include "testutil.h"

enum { V = 19, T = 37, B = 2, NL = 2, NH = 2, C = 16 };
#define TOL 1e-12

static Rng rng;

static void build(GPT *m, const char *pe_layers, const char *input_pe) {
    GPTConfig cfg = { .vocab_size = V, .n_layer = NL, .n_head = NH, .n_embd = C, .max_seq_len = 48 };
    posenc_defaults(&cfg.pe, NL);
    char msg[256];
    CHECK(posenc_schedule(&cfg.pe, NL, NULL, pe_layers, input_pe, msg, sizeof msg), "%s", msg);
    cfg.pe.t5_num_buckets = 8; cfg.pe.t5_max_distance = 20; cfg.pe.p_rope_fraction = 0.5; cfg.pe.xpos_scale_base = 16;
    gpt_build(m, &cfg, 7, 0);
    // random parameters of some size, so that heads and biases differ and rows are not uniform
    for (size_t i = 0; i < m->num_params; i++) m->params[i] += (real)(0.3 * (2 * rng_uniform(&rng) - 1));
}

// Row 0: document A (15 tokens, positions 0..14, doc 0) then B (22 tokens, positions 0..21, doc 1).
// Row 1: 5 pad tokens, 27 tokens of doc 0 at positions 0..26, 5 pad tokens (pad: doc -1, position 0).
static void fill_batch(Batch *b) {
    for (int t = 0; t < T; t++) {
        b->tokens[t] = (int)(rng_u64(&rng) % V); b->targets[t] = (int)(rng_u64(&rng) % V);
        b->pos[t] = t < 15 ? t : t - 15; b->doc[t] = t >= 15;
        int u = T + t, valid = t >= 5 && t < 32;
        b->tokens[u] = (int)(rng_u64(&rng) % V); b->targets[u] = (int)(rng_u64(&rng) % V);
        b->pos[u] = valid ? t - 5 : 0; b->doc[u] = valid ? 0 : -1; b->weights[u] = (float)valid;
    }
}

static void test_probs(const char *label, GPT *m) {
    Batch b; batch_alloc(&b, B, T);
    fill_batch(&b);
    gpt_forward(m, &b);
    int hs = C / NH;
    real *P = xmalloc(sizeof(real) * T * T);
    double ref[T], worst_ref = 0, worst_sum = 0, worst_out = 0;
    int masked_nonzero = 0, masked_seen = 0, pad_seen = 0;
    for (int l = 0; l < NL; l++) {
        const PosScheme *s = posenc_scheme(m->cfg.pe.layer[l]);
        const real *qkv = m->a.qkv + (size_t)l * B * T * 3 * C, *atty = m->a.atty + (size_t)l * B * T * C;
        for (int r = 0; r < B; r++)
            for (int h = 0; h < NH; h++) {
                attention_probs(m, l, r, h, P);
                const int *pos = b.pos + r * T, *doc = b.doc + r * T;
                for (int i = 0; i < T; i++) {
                    const real *q = qkv + ((size_t)r * T + i) * 3 * C + h * hs;
                    // the reference: plain scores, the bias hook one key at a time, a plain softmax
                    double mx = -INFINITY, sum = 0, psum = 0;
                    for (int j = 0; j < T; j++) {
                        ref[j] = NAN;
                        if (j > i || doc[j] != doc[i]) continue;
                        const real *k = qkv + ((size_t)r * T + j) * 3 * C + C + h * hs;
                        double dot = 0;
                        for (int c = 0; c < hs; c++) dot += (double)q[c] * k[c];
                        real bias = 0;
                        if (s->bias_forward) s->bias_forward(&m->pt, m->p.pe_layer[l], NULL, h, pos[i], pos + j, 1, &bias);
                        ref[j] = dot / sqrt((double)hs) + bias;
                        if (ref[j] > mx) mx = ref[j];
                    }
                    for (int j = 0; j < T; j++) if (!isnan(ref[j])) sum += exp(ref[j] - mx);
                    for (int j = 0; j < T; j++) {
                        const real *p_ij = P + (size_t)i * T + j;
                        if (isnan(ref[j])) {
                            masked_seen++;
                            if (doc[j] < 0 && doc[i] >= 0) pad_seen++;
                            if (*p_ij != 0) masked_nonzero++;
                            continue;
                        }
                        worst_ref = fmax(worst_ref, fabs(*p_ij - exp(ref[j] - mx) / sum));
                        psum += *p_ij;
                    }
                    worst_sum = fmax(worst_sum, fabs(psum - 1));
                    // the output the forward stored is sum_j p(i,j) v_j
                    for (int c = 0; c < hs; c++) {
                        double o = 0;
                        for (int j = 0; j < T; j++) o += P[(size_t)i * T + j] * qkv[((size_t)r * T + j) * 3 * C + 2 * C + h * hs + c];
                        worst_out = fmax(worst_out, fabs(o - atty[((size_t)r * T + i) * C + h * hs + c]));
                    }
                }
            }
    }
    EXPECT(masked_seen > 0 && pad_seen > 0, "%s: the batch must have masked keys (%d) and padding (%d)", label, masked_seen, pad_seen);
    EXPECT(masked_nonzero == 0, "%s: %d masked keys (future, other document, padding) got a non-zero probability", label, masked_nonzero);
    EXPECT(worst_sum < TOL, "%s: a row's probabilities over its allowed keys sum to 1 +- %.3g", label, worst_sum);
    EXPECT(worst_ref < TOL, "%s: attention_probs differs from a plain softmax by %.3g", label, worst_ref);
    EXPECT(worst_out < TOL, "%s: sum_j p v_j differs from the forward's attention output by %.3g", label, worst_out);
    free(P);
    batch_free(&b);
}

static int nonempty(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

// pictures of a model with this schedule: the .dat and .gp files of every layer that has a signal
static void test_pictures(const char *pe_layers, const char *input_pe, const char *const *expect_files,
                          const char *const *absent_files) {
    GPT m;
    build(&m, pe_layers, input_pe);
    char dir[] = "/tmp/test_viz.XXXXXX";
    CHECK(mkdtemp(dir), "cannot create a temporary folder");
    int tokens[12];
    for (int t = 0; t < 12; t++) tokens[t] = (int)(rng_u64(&rng) % V);
    viz_attention(&m, tokens, 12, dir);
    EXPECT(m.batch == NULL, "viz_attention must not leave m->batch pointing at its freed batch");
    viz_positions(&m, 20, dir);
    for (int l = 0; l < NL; l++) {
        char name[64];
        snprintf(name, sizeof name, "attn_layer%d.dat", l);
        EXPECT(nonempty(dir, name), "%s: %s/%s missing", pe_layers, dir, name);
        snprintf(name, sizeof name, "attn_layer%d.gp", l);
        EXPECT(nonempty(dir, name), "%s: %s/%s missing", pe_layers, dir, name);
    }
    for (int k = 0; expect_files[k]; k++) EXPECT(nonempty(dir, expect_files[k]), "%s: %s/%s missing", pe_layers, dir, expect_files[k]);
    for (int k = 0; absent_files[k]; k++) EXPECT(!nonempty(dir, absent_files[k]), "%s: %s/%s should not exist", pe_layers, dir, absent_files[k]);
    DIR *d = opendir(dir);                  // remove the folder (PATH has no rm now)
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.') remove(path);
    }
    if (d) closedir(d);
    EXPECT(rmdir(dir) == 0, "could not remove %s", dir);
    gpt_free(&m);
}

int main(void) {
    rng_seed(&rng, 11);
    char layers[64];
    for (int s = 0; s < posenc_count(); s++) {
        const PosScheme *sc = posenc_scheme(s);
        if (sc->hooks & PE_HOOK_INPUT) continue;
        GPT m;
        snprintf(layers, sizeof layers, "%s,%s", sc->name, sc->name);
        build(&m, layers, "none");
        test_probs(sc->name, &m);
        gpt_free(&m);
    }
    { GPT m; build(&m, "rope,alibi", "learned"); test_probs("rope,alibi + learned input", &m); gpt_free(&m); }

    // no gnuplot on PATH: the data and scripts are still written (rendering is tests/test_cli.sh's)
    CHECK(setenv("PATH", "/nonexistent", 1) == 0, "setenv");
    test_pictures("rope,alibi", "learned",
                  (const char *const[]){ "pos_input.dat", "pos_input.gp", "pos_rope_layer0.dat", "pos_rope_layer0.gp",
                                         "pos_bias_layer1.dat", "pos_bias_layer1.gp", NULL },
                  (const char *const[]){ "pos_bias_layer0.dat", "pos_rope_layer1.dat", NULL });
    test_pictures("t5,t5", "sinusoidal",   // t5 shares one table: layer 1 is the same picture
                  (const char *const[]){ "pos_input.dat", "pos_bias_layer0.dat", NULL },
                  (const char *const[]){ "pos_bias_layer1.dat", NULL });
    test_pictures("kerple,fire", "none",
                  (const char *const[]){ "pos_bias_layer0.dat", "pos_bias_layer1.dat", NULL },
                  (const char *const[]){ "pos_input.dat", NULL });
    test_pictures("xpos,p-rope", "none",
                  (const char *const[]){ "pos_rope_layer0.dat", "pos_rope_layer1.dat", NULL },
                  (const char *const[]){ "pos_input.dat", NULL });
    test_pictures("nope,nope", "none", (const char *const[]){ NULL },
                  (const char *const[]){ "pos_input.dat", "pos_bias_layer0.dat", "pos_rope_layer0.dat", NULL });
    return test_summary("test_viz");
}
