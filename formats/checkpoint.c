// formats/checkpoint.c: checkpoint files, safetensors export and import, and the dump of one training step.
#include "formats/checkpoint.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/atomicfile.h"
#include "formats/safetensors.h"

enum { CKPT_VERSION = 1 };

// ---- writing ----------------------------------------------------------------------------------

// Parameters are stored as float32 whatever `real` is: they pass through a float buffer of
// CHUNK values at a time.
enum { CHUNK = 4096 };

static void out_reals(AtomicFile *o, const real *x, size_t n) {
    float buf[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        for (size_t j = 0; j < k; j++) buf[j] = (float)x[i + j];
        af_write(o, buf, k * sizeof(float));
    }
}

// The config lines: the model, the training settings (train_kv) and, with st, the rest of the
// data stream's position (data.*).
static char *config_text(const GPT *m, const char *train_kv, const TrainState *st, size_t *len) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    CHECK(f, "out of memory");
    const GPTConfig *c = &m->cfg;
    fprintf(f, "vocab_size=%d\nn_layer=%d\nn_head=%d\nn_embd=%d\nmax_seq_len=%d\n",
            c->vocab_size, c->n_layer, c->n_head, c->n_embd, c->max_seq_len);
    posenc_write_kv(&c->pe, f);
    if (train_kv) fputs(train_kv, f);
    if (st)
        fprintf(f, "data.epoch=%llu\ndata.shard=%llu\ndata.tokens=%llu\ndata.files=%llu\n",
                (unsigned long long)st->data_epoch, (unsigned long long)st->data_shard,
                (unsigned long long)st->data_tokens, (unsigned long long)st->data_files);
    if (st && st->select_step) fprintf(f, "select.step=%llu\nselect.acc=%.17g\n", (unsigned long long)st->select_step,
                                       st->select_acc);
    fclose(f);
    *len = size;
    return buf;
}

void ckpt_save(const char *path, const GPT *m, const char *train_kv, const TrainState *st) {
    AtomicFile o;
    af_open(&o, path, "checkpoint", "wb");
    size_t klen;
    uint32_t version = CKPT_VERSION, flags = st && st->has_opt && m->weights.adam_m ? 1 : 0;
    char *text = config_text(m, train_kv, flags & 1 ? st : NULL, &klen);
    uint32_t k = (uint32_t)klen;
    uint64_t P = m->weights.num_params;
    af_write(&o, CKPT_MAGIC, 8);
    af_write(&o, &version, 4);
    af_write(&o, &flags, 4);
    af_write(&o, &k, 4);
    af_write(&o, text, klen);
    af_write(&o, &P, 8);
    out_reals(&o, m->weights.params, P);
    if (flags & 1) {
        out_reals(&o, m->weights.adam_m, P);
        out_reals(&o, m->weights.adam_v, P);
        int64_t step = st->step;
        af_write(&o, &step, 8);
        af_write(&o, &st->rng, 8);
        af_write(&o, &st->data_pos, 8);
    }
    free(text);
    af_commit(&o);
}

// ---- reading ----------------------------------------------------------------------------------

typedef struct { FILE *f; const char *path; } In;

static void in_read(In *in, void *p, size_t size, const char *what) {
    CHECK(fread(p, 1, size, in->f) == size, "checkpoint '%s' is truncated (reading %s); it may be "
          "from an interrupted copy: use another checkpoint", in->path, what);
}

static void in_reals(In *in, real *x, size_t n, const char *what) {
    float buf[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        in_read(in, buf, k * sizeof(float), what);
        for (size_t j = 0; j < k; j++) x[i + j] = buf[j];
    }
}

static int parse_int_value(const char *v, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < -2147483647L || x > 2147483647L) return 0;
    *out = (int)x;
    return 1;
}

// "data.NAME=N": one of the data stream's numbers into st; 0 when the key is not one of them.
static int parse_data_key(const char *path, const char *key, const char *val, TrainState *st) {
    if (!strcmp(key, "select.acc")) {                  // --select-every's best accuracy, in [0, 1]
        char *end;
        st->select_acc = strtod(val, &end);
        CHECK(*val && !*end && st->select_acc >= 0 && st->select_acc <= 1, "checkpoint '%s': %s=%s is not an accuracy "
              "in [0, 1] (a damaged file)", path, key, val);
        return 1;
    }
    const struct { const char *key; uint64_t *field; } keys[] = {
        { "data.epoch", &st->data_epoch }, { "data.shard", &st->data_shard },
        { "data.tokens", &st->data_tokens }, { "data.files", &st->data_files }, { "select.step", &st->select_step } };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strcmp(key, keys[i].key)) continue;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(val, &end, 10);
        CHECK(*val >= '0' && *val <= '9' && !*end && !errno, "checkpoint '%s': %s=%s is not a count (a damaged file)",
              path, key, val);
        *keys[i].field = x;
        return 1;
    }
    return 0;
}

// Parses the config lines into cfg and the data stream's numbers into *stream (NULL: none may
// appear); the train.* lines are copied to *train_kv. kind: what path is ("checkpoint",
// "safetensors file"), for messages.
static void parse_config(const char *path, const char *kind, char *text, GPTConfig *cfg, char **train_kv,
                         TrainState *stream) {
    memset(cfg, 0, sizeof *cfg);
    posenc_stored_defaults(&cfg->pe, 1);    // a setting the file predates: what its model was
    cfg->pe.input = PE_NOPE;
    size_t tlen = 0, tcap = strlen(text) + 1;
    char *train = xcalloc(tcap, 1);
    // the integer keys every config holds; `have` counts the lines that set one
    const struct { const char *key; int *field; } ints[] = {
        { "vocab_size", &cfg->vocab_size }, { "n_layer", &cfg->n_layer }, { "n_head", &cfg->n_head },
        { "n_embd", &cfg->n_embd }, { "max_seq_len", &cfg->max_seq_len } };
    const int n_ints = (int)(sizeof ints / sizeof ints[0]);
    int have = 0;
    char msg[512];
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        CHECK(eq, "%s '%s': config line '%s' is not key=value (a damaged or foreign file)", kind, path, line);
        *eq = 0;
        const char *key = line, *val = eq + 1;
        int *field = NULL;
        for (int i = 0; i < n_ints; i++) if (strcmp(key, ints[i].key) == 0) field = ints[i].field;
        if (field) {
            CHECK(parse_int_value(val, field), "%s '%s': %s=%s is not an integer", kind, path, key, val);
            have++;
        } else if (strncmp(key, "train.", 6) == 0) {
            tlen += snprintf(train + tlen, tcap - tlen, "%s=%s\n", key, val);
        } else if (!stream || !parse_data_key(path, key, val, stream)) {
            int r = posenc_set(&cfg->pe, key, val, msg, sizeof msg);
            CHECK(r != 0, "%s '%s': unknown config key '%s' (written by a newer version?)", kind, path, key);
            CHECK(r > 0, "%s '%s': %s", kind, path, msg);
        }
    }
    CHECK(have == n_ints, "%s '%s' lacks part of the model config (vocab_size, n_layer, n_head, "
          "n_embd, max_seq_len)", kind, path);
    CHECK(cfg->pe.n_layer == cfg->n_layer, "%s '%s': layer_pe names %d layers but n_layer is %d",
          kind, path, cfg->pe.n_layer, cfg->n_layer);
    CHECK(gpt_config_check(cfg, msg, sizeof msg), "%s '%s' holds an invalid config: %s", kind, path, msg);
    CHECK(cfg->max_seq_len <= 10000000, "%s '%s': max_seq_len=%d is beyond the 1e7 that --context allows "
          "(a damaged file)", kind, path, cfg->max_seq_len);
    if (train_kv) *train_kv = train; else free(train);
}

// Fewer parameters than any model of c has: wte (V x C) and each layer's matrices (12 C^2), in
// double, where C^2 x L cannot overflow. A reader compares it with what its file holds before it
// lays the model out (whose sizes are ints).
static double least_params(const GPTConfig *c) {
    double C = c->n_embd;
    return (double)c->vocab_size * C + 12.0 * c->n_layer * C * C;
}

void ckpt_load(const char *path, GPT *m, int max_pos, char **train_kv, TrainState *st, CkptAdjust adjust, void *ctx) {
    In in = { fopen(path, "rb"), path };
    CHECK(in.f, "cannot open checkpoint '%s': %s", path, strerror(errno));
    struct stat sb;
    CHECK(fstat(fileno(in.f), &sb) == 0, "cannot stat '%s'", path);
    char magic[8];
    CHECK(fread(magic, 1, 8, in.f) == 8 && memcmp(magic, CKPT_MAGIC, 8) == 0,
          "'%s' is not a checkpoint of this program (bad magic); pass a file written by --save", path);
    uint32_t version, flags, klen;
    in_read(&in, &version, 4, "the version");
    CHECK(version == CKPT_VERSION, "checkpoint '%s' has version %u; this program reads version %d",
          path, version, CKPT_VERSION);
    in_read(&in, &flags, 4, "the flags");
    in_read(&in, &klen, 4, "the config length");
    CHECK(klen < (1u << 20) && (off_t)klen < sb.st_size, "checkpoint '%s': its config length %u does not fit in the file: it is truncated "
          "or damaged; use another checkpoint", path, klen);
    char *text = xmalloc(klen + 1);
    in_read(&in, text, klen, "the config");
    text[klen] = 0;
    GPTConfig cfg;
    TrainState stream = { 0 };
    parse_config(path, "checkpoint", text, &cfg, train_kv, &stream);
    free(text);
    uint64_t P;
    in_read(&in, &P, 8, "the parameter count");
    // Before the model is built (a damaged config could ask for terabytes): the size must match the
    // parameter count P, and the config must fit in P parameters (least_params).
    CHECK(P <= (uint64_t)sb.st_size / 4, "checkpoint '%s' states %llu parameters, more than its %lld bytes hold: it is "
          "truncated or damaged", path, (unsigned long long)P, (long long)sb.st_size);
    uint64_t expect = 8 + 12 + (uint64_t)klen + 8 + 4 * P + ((flags & 1) ? 8 * P + 24 : 0);
    CHECK((uint64_t)sb.st_size == expect, "checkpoint '%s' is %lld bytes but should be %llu: it is %s",
          path, (long long)sb.st_size, (unsigned long long)expect,
          (uint64_t)sb.st_size < expect ? "truncated" : "followed by extra bytes");
    double least = least_params(&cfg);
    CHECK(least <= (double)P, "checkpoint '%s' holds %llu parameters but its config needs more than %.0f (damaged file)",
          path, (unsigned long long)P, least);
    // the exact count, from the tensor list alone: least_params leaves out the positional tables (a
    // learned table at a damaged context of 10^7 rows would otherwise be allocated and filled first)
    int n_tensors;
    size_t need;
    free(gpt_tensor_list(&cfg, &n_tensors, &need));
    CHECK(P == need, "checkpoint '%s' holds %llu parameters but its config needs %zu (damaged file)", path,
          (unsigned long long)P, need);
    if (adjust) {                       // after the checks: the file is what it says
        adjust(&cfg, ctx);
        char msg[512];
        CHECK(gpt_config_check(&cfg, msg, sizeof msg), "with the model of '%s': %s", path, msg);
    }
    gpt_build(m, &cfg, 0, max_pos);
    CHECK(P == m->weights.num_params, "checkpoint '%s' holds %llu parameters but its config needs %zu (damaged file)",
          path, (unsigned long long)P, m->weights.num_params);
    in_reals(&in, m->weights.params, P, "the parameters");
    if (st) memset(st, 0, sizeof *st);
    if (flags & 1) {
        if (st) {
            m->weights.adam_m = xmalloc(sizeof(real) * P);
            m->weights.adam_v = xmalloc(sizeof(real) * P);
            in_reals(&in, m->weights.adam_m, P, "the AdamW moments");
            in_reals(&in, m->weights.adam_v, P, "the AdamW moments");
            int64_t step;
            in_read(&in, &step, 8, "the step");
            in_read(&in, &st->rng, 8, "the RNG state");
            in_read(&in, &st->data_pos, 8, "the data position");
            st->data_epoch = stream.data_epoch;
            st->data_shard = stream.data_shard;
            st->data_tokens = stream.data_tokens;
            st->data_files = stream.data_files;
            st->select_step = stream.select_step;
            st->select_acc = stream.select_acc;
            st->step = step;
            st->has_opt = 1;
        }
    }
    fclose(in.f);
}

// ---- export -----------------------------------------------------------------------------------

void model_config_json(const GPT *m, char *buf, size_t cap) {
    const GPTConfig *c = &m->cfg;
    size_t k = snprintf(buf, cap, "{\"vocab_size\":%d,\"n_layer\":%d,\"n_head\":%d,\"n_embd\":%d,\"max_seq_len\":%d,",
                        c->vocab_size, c->n_layer, c->n_head, c->n_embd, c->max_seq_len);
    k += posenc_json(&c->pe, buf + k, k < cap ? cap - k : 0);
    if (k + 2 < cap) { buf[k] = '}'; buf[k + 1] = 0; }
}

// The shape tensor t has in an export: Conv1D weights (in, out), vectors 1-D (by kind, not by row
// count: a learned table at context 1 is (1, C), as its config's n_positions says), wte's real rows;
// returns the number of dimensions.
static int export_shape(const TensorInfo *t, int64_t shape[2]) {
    if (t->transpose) { shape[0] = t->cols; shape[1] = t->export_rows; return 2; }
    if (t->vector) { shape[0] = t->cols; return 1; }
    shape[0] = t->export_rows; shape[1] = t->cols;
    return 2;
}

// Adds every parameter tensor (values from `base`: params or grads) under prefix+name.
static void add_model_tensors(StWriter *w, const GPT *m, const real *base, const char *prefix) {
    for (int i = 0; i < m->weights.n_tensors; i++) {
        const TensorInfo *t = &m->weights.tensors[i];
        int rows = t->export_rows, cols = t->cols;
        size_t n = (size_t)rows * cols;
        float *buf = xmalloc(sizeof(float) * n);
        const real *x = base + t->offset;
        int64_t shape[2];
        int ndim = export_shape(t, shape);
        if (t->transpose) {            // Conv1D: (in, out) = transpose of our (out, in)
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++) buf[(size_t)c * rows + r] = (float)x[(size_t)r * cols + c];
        } else {
            for (size_t k = 0; k < n; k++) buf[k] = (float)x[k];
        }
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        st_add_f32(w, name, buf, ndim, shape);
        free(buf);
    }
}

static void set_metadata(StWriter *w, const GPT *m) {
    char cfg[32768], esc[65536], meta[90000], flat[16384];   // room for two lists of PE_MAX_FACTORS
    model_config_json(m, cfg, sizeof cfg);
    st_json_escape(esc, sizeof esc, cfg);
    posenc_metadata(&m->cfg.pe, flat, sizeof flat);
    snprintf(meta, sizeof meta, "{\"format\":\"pt\",\"config\":\"%s\"%s}", esc, flat);
    st_set_metadata(w, meta);
}

// config.json for transformers' GPT2LMHeadModel (only meaningful for learned input + nope layers)
static void write_hf_config(const char *export_path, const GPT *m) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", export_path);
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = 0; else dir[0] = 0;
    snprintf(path, sizeof path, "%sconfig.json", dir);
    const GPTConfig *c = &m->cfg;
    AtomicFile af;
    FILE *f = af_open(&af, path, "transformers config", "w");
    fprintf(f, "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
               "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n"
               "  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"n_inner\": %d,\n  \"activation_function\": \"gelu_new\",\n"
               "  \"layer_norm_epsilon\": 1e-05,\n  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n"
               "  \"attn_pdrop\": 0.0,\n  \"initializer_range\": 0.02,\n  \"tie_word_embeddings\": true,\n"
               "  \"scale_attn_weights\": true,\n  \"torch_dtype\": \"float32\"\n}\n",
            c->vocab_size, c->max_seq_len, c->max_seq_len, c->n_embd, c->n_layer, c->n_head, 4 * c->n_embd);
    af_commit(&af);
    fprintf(stderr, "wrote %s (transformers GPT2LMHeadModel config)\n", path);
}

void export_safetensors(const char *path, const GPT *m) {
    StWriter w;
    st_writer_init(&w);
    add_model_tensors(&w, m, m->weights.params, "");
    set_metadata(&w, m);
    st_write(&w, path);
    st_writer_free(&w);
    if (posenc_is_gpt2(&m->cfg.pe)) { write_hf_config(path, m); return; }
    // a config.json left by an earlier plain-GPT-2 export would describe the wrong model
    char cfg_path[4200];
    snprintf(cfg_path, sizeof cfg_path, "%s", path);
    char *slash = strrchr(cfg_path, '/');
    snprintf(slash ? slash + 1 : cfg_path, sizeof cfg_path - (slash ? (size_t)(slash + 1 - cfg_path) : 0), "config.json");
    if (access(cfg_path, F_OK) == 0)
        fprintf(stderr, "note: %s is from another export: this model (not plain GPT-2) has no transformers config\n", cfg_path);
}

void dump_step(const char *path, GPT *m, const Batch *b) {
    double loss = gpt_forward(m, b, NULL);
    int B = b->B, T = b->T, V = m->cfg.vocab_size, Vp = m->cfg.padded_vocab;
    size_t N = (size_t)B * T;
    float *logits = xmalloc(sizeof(float) * N * V);   // copied before backward reuses the buffers
    for (size_t n = 0; n < N; n++)
        for (int v = 0; v < V; v++) logits[n * V + v] = (float)m->state.a.logits[n * Vp + v];
    CHECK(m->state.weight_sum > 0, "--dump-step: the batch has no token with loss weight 1");
    gpt_zero_grad(m);
    gpt_backward(m, 1.0 / m->state.weight_sum, NULL);
    StWriter w;
    st_writer_init(&w);
    int32_t *ids = xmalloc(sizeof(int32_t) * N);
    int64_t shape2[2] = { B, T }, shape3[3] = { B, T, V };
    for (size_t n = 0; n < N; n++) ids[n] = b->tokens[n];
    st_add_i32(&w, "tokens", ids, 2, shape2);
    for (size_t n = 0; n < N; n++) ids[n] = b->targets[n];
    st_add_i32(&w, "targets", ids, 2, shape2);
    st_add_f32(&w, "logits", logits, 3, shape3);
    float l = (float)loss;
    st_add_f32(&w, "loss", &l, 0, NULL);
    add_model_tensors(&w, m, m->weights.grads, "grad.");
    set_metadata(&w, m);
    st_write(&w, path);
    st_writer_free(&w);
    free(ids); free(logits);
}

// ---- import: --load of an export --------------------------------------------------------------

// shape as text, "[3, 4]", for messages
static const char *shape_text(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t k = snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && k < cap; d++) k += snprintf(buf + k, cap - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

// The file's tensor for the model's tensor t, checked to be as export_safetensors writes it
// (present, F32, export_shape).
static const StTensor *exported_tensor(const char *path, const StFile *f, const TensorInfo *t) {
    const StTensor *s = st_find(f, t->name);
    CHECK(s, "safetensors file %s lacks the tensor %s, which a model of its config has: it is not a whole export "
          "(write one with --export)", path, t->name);
    CHECK(s->dtype == ST_F32, "safetensors file %s: tensor %s is I32, but --export writes every parameter as F32", path, t->name);
    int64_t shape[2];
    int nd = export_shape(t, shape), same = s->ndim == nd;
    for (int d = 0; same && d < nd; d++) same = s->shape[d] == shape[d];
    char got[96], want[96];
    CHECK(same, "safetensors file %s: tensor %s has shape %s, but its config needs %s", path, t->name,
          shape_text(s->ndim, s->shape, got, sizeof got), shape_text(nd, shape, want, sizeof want));
    return s;
}

// Before the model is built, the file against the model its config describes: every tensor there
// as the export writes it, and no other. A bound in double first: the layout's sizes are ints, and
// a damaged config could ask for any size.
static void check_exported_tensors(const char *path, const StFile *f, const GPTConfig *cfg) {
    double have = 0;
    for (int k = 0; k < f->n; k++) have += (double)f->t[k].numel;
    CHECK(least_params(cfg) <= have, "safetensors file %s holds %.0f values but its config (%d layers, dim %d, "
          "vocabulary %d) needs more than %.0f: tensors are missing or the config is damaged", path, have,
          cfg->n_layer, cfg->n_embd, cfg->vocab_size, least_params(cfg));
    int n;
    size_t P;
    TensorInfo *want = gpt_tensor_list(cfg, &n, &P);
    for (int i = 0; i < n; i++) exported_tensor(path, f, &want[i]);
    for (int k = 0; k < f->n; k++) {
        int known = 0;
        for (int i = 0; i < n && !known; i++) known = strcmp(f->t[k].name, want[i].name) == 0;
        CHECK(known, "safetensors file %s holds a tensor %s, which a model of its config does not have: it is not an "
              "export of this program's model (a --dump-step file, or written elsewhere)", path, f->t[k].name);
    }
    free(want);
}

// The model from the "config" metadata (parsed as a checkpoint's config lines), every parameter
// from its tensor. The inverse of export_safetensors, bit for bit.
void import_safetensors(const char *path, GPT *m, int max_pos, CkptAdjust adjust, void *ctx) {
    StFile f;
    st_read(path, &f);
    char *json = st_metadata_string(&f, "config", path);
    CHECK(json, "safetensors file %s has no \"config\" metadata entry: the model's config comes from there, so only "
          "files written by --export can be loaded", path);
    char *lines = st_json_lines(json, path, "\"config\" metadata");
    free(json);
    GPTConfig cfg;
    parse_config(path, "safetensors file", lines, &cfg, NULL, NULL);
    free(lines);
    check_exported_tensors(path, &f, &cfg);
    if (adjust) {                       // after the checks: the file is what it says
        adjust(&cfg, ctx);
        char msg[512];
        CHECK(gpt_config_check(&cfg, msg, sizeof msg), "with the model of '%s': %s", path, msg);
    }
    gpt_build(m, &cfg, 0, max_pos);
    for (int i = 0; i < m->weights.n_tensors; i++) {
        const TensorInfo *t = &m->weights.tensors[i];
        const float *x = exported_tensor(path, &f, t)->data;
        real *p = m->weights.params + t->offset;
        int rows = t->export_rows, cols = t->cols;
        for (int r = 0; r < rows; r++)          // Conv1D (in, out) back to (out, in)
            for (int c = 0; c < cols; c++) p[(size_t)r * cols + c] = x[t->transpose ? (size_t)c * rows + r : (size_t)r * cols + c];
    }
    st_file_free(&f);
}
