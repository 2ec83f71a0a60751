// tests/test_import.c: the model files --load reads besides checkpoints (model_load, formats/modelfile.h)
// and --export-llmc's writer (formats/llmc_model.h).
//  - llm.c GPT-2 model files, written here from llm.c's documented layout (llm.c's train_gpt2.c;
//    train_gpt2.py's write_model), not from the reader: versions 3 (float32) and 5 (bfloat16), a
//    vocabulary whose padding differs from ours, none at all. Every value the writer put in a
//    tensor is in the model's tensor of that name; the padding rows are zero; --export-llmc's
//    writer gives a version 3 file back byte for byte (version 5: its version 3 twin).
//  - safetensors exports of models with every kind of positional parameter and setting: importing
//    one and exporting it again gives the same file; parameters, loss and logits bit for bit.
//  - bad files of both formats, each refused with a message naming the file and the problem, before
//    the model is allocated where the file states a model larger than itself.
//  - a checkpoint written before the sinusoidal_scale setting existed (no line of it) loads as the
//    model it was: unscaled embeddings (the reader shared with the safetensors import).
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "formats/checkpoint.h"
#include "formats/llmc_model.h"
#include "formats/modelfile.h"
#include "formats/safetensors.h"
#include "tests/testutil.h"

static char dir[] = "/tmp/test_import_XXXXXX";

static const char *path_of(const char *name) {
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { *n = 0; return NULL; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = xmalloc((size_t)size + 1);
    *n = fread(b, 1, (size_t)size, f);
    fclose(f);
    return b;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x); free(y);
    return same;
}

// ---- an llm.c writer, from the layout alone ----------------------------------------------------

// llm.c's tensors in file order: HF name (%d: the layer), one per layer or not, shape (rows, cols)
// in multiples of C, rows 0 for a vector, VP for the padded vocabulary, MAXT for the context.
enum { VP = -1, MAXT = -2 };
static const struct { const char *name; int per_layer, rows, cols; } LLMC[16] = {
    { "transformer.wte.weight", 0, VP, 1 },
    { "transformer.wpe.weight", 0, MAXT, 1 },
    { "transformer.h.%d.ln_1.weight", 1, 0, 1 },
    { "transformer.h.%d.ln_1.bias", 1, 0, 1 },
    { "transformer.h.%d.attn.c_attn.weight", 1, 3, 1 },
    { "transformer.h.%d.attn.c_attn.bias", 1, 0, 3 },
    { "transformer.h.%d.attn.c_proj.weight", 1, 1, 1 },
    { "transformer.h.%d.attn.c_proj.bias", 1, 0, 1 },
    { "transformer.h.%d.ln_2.weight", 1, 0, 1 },
    { "transformer.h.%d.ln_2.bias", 1, 0, 1 },
    { "transformer.h.%d.mlp.c_fc.weight", 1, 4, 1 },
    { "transformer.h.%d.mlp.c_fc.bias", 1, 0, 4 },
    { "transformer.h.%d.mlp.c_proj.weight", 1, 1, 4 },
    { "transformer.h.%d.mlp.c_proj.bias", 1, 0, 1 },
    { "transformer.ln_f.weight", 0, 0, 1 },
    { "transformer.ln_f.bias", 0, 0, 1 },
};

typedef struct { int version, maxT, V, L, NH, C, Vp; } Header;

// The values of one instance of tensor k
static size_t llmc_size(const Header *h, int k) {
    int r = LLMC[k].rows;
    size_t rows = r == VP ? (size_t)h->Vp : r == MAXT ? (size_t)h->maxT : r == 0 ? 1 : (size_t)r * h->C;
    return rows * LLMC[k].cols * h->C;
}

// The value at element i of tensor k, layer l: a hash in [-2, 2); bf16 keeps its top 16 bits, the
// values a version 5 file holds.
static float llmc_value(int k, int l, size_t i, int bf16) {
    uint64_t z = ((uint64_t)k << 56) ^ ((uint64_t)l << 48) ^ i;
    z = (z ^ (z >> 31)) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
    float x = (float)((double)(z >> 40) / (double)(1 << 24) * 4 - 2);
    if (bf16) { uint32_t u; memcpy(&u, &x, 4); u &= 0xFFFF0000u; memcpy(&x, &u, 4); }
    return x;
}

static void put_le(FILE *f, uint32_t u, int bytes) {
    for (int b = 0; b < bytes; b++) fputc((int)((u >> (8 * b)) & 255), f);
}

// Writes an llm.c model: version 3 float32 (bf16 = 1: with bfloat16-representable values) or
// version 5 (2 bytes a value). Padding rows V..Vp-1 of wte are zero.
static void write_llmc(const char *path, const Header *h, int bf16) {
    FILE *f = fopen(path, "wb");
    CHECK(f, "test: cannot create %s", path);
    int32_t head[256] = { LLMC_MODEL_MAGIC, h->version, h->maxT, h->V, h->L, h->NH, h->C, h->Vp };
    for (int i = 0; i < 256; i++) put_le(f, (uint32_t)head[i], 4);
    for (int k = 0; k < 16; k++)
        for (int l = 0; l < (LLMC[k].per_layer ? h->L : 1); l++) {
            size_t n = llmc_size(h, k), real_n = k == 0 ? (size_t)h->V * h->C : n;
            for (size_t i = 0; i < n; i++) {
                float x = i < real_n ? llmc_value(k, l, i, bf16) : 0.0f;
                uint32_t u;
                memcpy(&u, &x, 4);
                if (h->version == 5) put_le(f, u >> 16, 2); else put_le(f, u, 4);
            }
        }
    CHECK(fclose(f) == 0, "test: cannot write %s", path);
}

// The model holds, in the tensor of each name, what write_llmc wrote there; its padding rows zero
static void check_llmc_values(const GPT *m, const Header *h, int bf16, const char *what) {
    int bad = 0;
    for (int k = 0; k < 16; k++)
        for (int l = 0; l < (LLMC[k].per_layer ? h->L : 1); l++) {
            char name[96];
            snprintf(name, sizeof name, LLMC[k].name, l);
            const TensorInfo *t = gpt_find_tensor(m, name);
            size_t n = k == 0 ? (size_t)h->V * h->C : llmc_size(h, k);
            if (!t || (size_t)t->export_rows * t->cols != n) { bad++; fprintf(stderr, "  %s: %s missing or sized wrongly\n", what, name); continue; }
            for (size_t i = 0; i < n; i++) {
                float want = llmc_value(k, l, i, bf16), got = (float)m->weights.params[t->offset + i];
                if (memcmp(&want, &got, 4) != 0 && bad++ < 5)
                    fprintf(stderr, "  %s: %s[%zu] = %.9g, the file holds %.9g\n", what, name, i, got, want);
            }
        }
    EXPECT(!bad, "%s: %d values differ from what the llm.c file holds", what, bad);
    int pad = 0;
    for (size_t i = (size_t)h->V * h->C; i < (size_t)m->cfg.padded_vocab * h->C; i++) pad += m->weights.p.wte[i] != 0;
    EXPECT(!pad, "%s: wte's padding rows must be zero (%d are not)", what, pad);
}

static void test_llmc(void) {
    // vocabulary 130: llm.c pads it to 256, this program to 192
    Header h = { 3, 12, 130, 2, 2, 8, 256 };
    write_llmc(path_of("v3.bin"), &h, 0);
    GPT m;
    char *kv = (char *)"unset";
    model_load(path_of("v3.bin"), &m, 0, &kv, NULL, NULL);
    EXPECT(kv == NULL, "an llm.c file has no training lines");
    EXPECT(m.cfg.vocab_size == 130 && m.cfg.n_layer == 2 && m.cfg.n_head == 2 && m.cfg.n_embd == 8 &&
           m.cfg.max_seq_len == 12 && m.cfg.padded_vocab == 192, "v3: the header's config");
    EXPECT(posenc_is_gpt2(&m.cfg.pe), "v3: learned input table, every layer nope");
    check_llmc_values(&m, &h, 0, "v3");
    llmc_export(path_of("v3-again.bin"), &m);
    EXPECT(same_file(path_of("v3.bin"), path_of("v3-again.bin")), "v3: load then --export-llmc gives the file back byte for byte");
    gpt_free(&m);

    // version 5: bfloat16 values widen exactly; written back as the version 3 twin
    h.version = 5;
    write_llmc(path_of("v5.bin"), &h, 1);
    h.version = 3;
    write_llmc(path_of("v5-twin.bin"), &h, 1);
    model_load(path_of("v5.bin"), &m, 0, NULL, NULL, NULL);
    check_llmc_values(&m, &h, 1, "v5");
    llmc_export(path_of("v5-again.bin"), &m);
    EXPECT(same_file(path_of("v5-twin.bin"), path_of("v5-again.bin")), "v5: --export-llmc writes its values as version 3, exactly");
    gpt_free(&m);

    // no padding at all (Vp = V): loads; written back padded to 128 as llm.c pads
    Header n = { 3, 5, 64, 1, 1, 4, 64 };
    write_llmc(path_of("nopad.bin"), &n, 0);
    model_load(path_of("nopad.bin"), &m, 0, NULL, NULL, NULL);
    check_llmc_values(&m, &n, 0, "no padding");
    llmc_export(path_of("nopad-again.bin"), &m);
    size_t size;
    unsigned char *b = slurp(path_of("nopad-again.bin"), &size);
    int32_t vp;
    memcpy(&vp, b + 28, 4);
    EXPECT(vp == 128 && size == 1024 + 4 * (128 * 4 + 5 * 4 + (12 * 16 + 13 * 4) + 2 * 4), "no padding: written with Vp 128 "
           "(got %d, %zu bytes)", vp, size);
    free(b);
    gpt_free(&m);
}

// ---- safetensors: export then import is the identity ---------------------------------------------

static GPTConfig config(int L, const char *pe, const char *pe_layers, const char *input_pe, const char *settings) {
    GPTConfig c = { .vocab_size = 70, .n_layer = L, .n_head = 2, .n_embd = 16, .max_seq_len = 12 };
    posenc_defaults(&c.pe, L);
    char msg[256], buf[256];
    CHECK(posenc_schedule(&c.pe, L, pe, pe_layers, input_pe, msg, sizeof msg), "%s", msg);
    snprintf(buf, sizeof buf, "%s", settings ? settings : "");
    for (char *kv = strtok(buf, " "); kv; kv = strtok(NULL, " ")) {
        char *eq = strchr(kv, '=');
        *eq = 0;
        CHECK(posenc_set(&c.pe, kv, eq + 1, msg, sizeof msg) > 0, "%s", msg);
    }
    CHECK(gpt_config_check(&c, msg, sizeof msg), "%s", msg);
    return c;
}

static void random_batch(Batch *b, int V, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    batch_default_positions(b);
    for (int i = 0; i < b->B * b->T; i++) { b->tokens[i] = (int)(rng_u64(&r) % V); b->targets[i] = (int)(rng_u64(&r) % V); }
}

static void test_safetensors_identity(void) {
    struct { const char *what; GPTConfig c; } cases[] = {
        { "learned", config(2, NULL, NULL, NULL, NULL) },
        { "rope, yarn-extended, interleaved half", config(2, "rope", NULL, NULL,
          "rope_scaling=yarn rope_factor=4 rope_original_context=6 rope_pairing=interleaved rope_fraction=0.5 rope_base=500") },
        { "sinusoidal + t5 shared by two layers + alibi", config(3, NULL, "t5,alibi,t5", "sinusoidal", "t5_num_buckets=8 t5_max_distance=20") },
        { "sinusoidal unscaled", config(2, "sinusoidal", NULL, NULL, "sinusoidal_scale=none") },
        { "sinusoidal, the NoPE paper's APE", config(2, "sinusoidal", NULL, NULL, "sinusoidal_scale=paper") },
        { "kerple, fire", config(2, NULL, "kerple,fire", NULL, NULL) },
        { "the smollm3 preset, llama3 extension", config(4, NULL, "smollm3", "none", "rope_scaling=llama3 rope_factor=8") },
        { "xpos, p-rope", config(2, NULL, "xpos,p-rope", NULL, "xpos_scale_base=64 p_rope_fraction=0.5") },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        GPT a, b;
        gpt_build(&a, &cases[k].c, 7 + k, 0);
        for (size_t i = 0; i < a.weights.num_params; i++) a.weights.params[i] += (real)(0.001 * (double)(i % 13));   // not the init
        for (size_t i = (size_t)a.cfg.vocab_size * a.cfg.n_embd; i < (size_t)a.cfg.padded_vocab * a.cfg.n_embd; i++) a.weights.params[i] = 0;
        export_safetensors(path_of("a.safetensors"), &a);
        remove(path_of("config.json"));           // (written beside a plain GPT-2's export)
        model_load(path_of("a.safetensors"), &b, 0, NULL, NULL, NULL);
        char ja[4096], jb[4096];
        model_config_json(&a, ja, sizeof ja);
        model_config_json(&b, jb, sizeof jb);
        EXPECT(strcmp(ja, jb) == 0, "%s: the imported config is the exported one:\n  %s\n  %s", cases[k].what, ja, jb);
        EXPECT(a.weights.num_params == b.weights.num_params && memcmp(a.weights.params, b.weights.params, sizeof(real) * a.weights.num_params) == 0,
               "%s: the parameters, bit for bit", cases[k].what);
        export_safetensors(path_of("b.safetensors"), &b);
        remove(path_of("config.json"));
        EXPECT(same_file(path_of("a.safetensors"), path_of("b.safetensors")), "%s: export, import, export: the same file", cases[k].what);
        Batch bt;
        batch_alloc(&bt, 2, a.cfg.max_seq_len);
        random_batch(&bt, a.cfg.vocab_size, 3);
        double la = gpt_forward(&a, &bt, NULL), lb = gpt_forward(&b, &bt, NULL);
        size_t nl = (size_t)2 * a.cfg.max_seq_len * a.cfg.padded_vocab;
        EXPECT(la == lb && memcmp(a.state.a.logits, b.state.a.logits, sizeof(real) * nl) == 0,
               "%s: the imported model's forward, bit for bit (loss %.9g vs %.9g)", cases[k].what, la, lb);
        batch_free(&bt);
        gpt_free(&a); gpt_free(&b);
    }
}

// ---- a checkpoint older than a setting ---------------------------------------------------------

// Removes the config line `line` (with its newline) from checkpoint `path`: 8 bytes of magic, the
// version, the flags, the config's length (uint32 each), the config text, the rest. Returns 1 if found.
static int remove_config_line(const char *path, const char *line) {
    size_t n, len = strlen(line);
    unsigned char *b = slurp(path, &n);
    CHECK(b && n > 20, "test: cannot read %s", path);
    uint32_t k = (uint32_t)b[16] | (uint32_t)b[17] << 8 | (uint32_t)b[18] << 16 | (uint32_t)b[19] << 24;
    b[n] = 0;
    unsigned char *at = (unsigned char *)strstr((char *)b + 20, line);
    if (!at || at + len > b + 20 + k) { free(b); return 0; }
    k -= (uint32_t)len;
    for (int i = 0; i < 4; i++) b[16 + i] = (unsigned char)(k >> (8 * i));
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, (size_t)(at - b), f) == (size_t)(at - b) &&
          fwrite(at + len, 1, n - (size_t)(at - b) - len, f) == n - (size_t)(at - b) - len && fclose(f) == 0,
          "test: cannot write %s", path);
    free(b);
    return 1;
}

// Before sinusoidal_scale, a sinusoidal input was added to unscaled embeddings: a checkpoint without
// the line must load as that model. Saved with none, the line removed: the same model, bit for bit.
// Saved with sqrt (the default now), the line removed: it loads unscaled, so another loss.
static void test_checkpoint_before_sinusoidal_scale(void) {
    const char *values[2] = { "none", "sqrt" };
    for (int k = 0; k < 2; k++) {
        char kv[64], line[80];
        snprintf(kv, sizeof kv, "sinusoidal_scale=%s", values[k]);
        snprintf(line, sizeof line, "%s\n", kv);
        GPTConfig c = config(2, NULL, "alibi,nope", "sinusoidal", kv);
        GPT a, b;
        gpt_build(&a, &c, 5, 0);
        ckpt_save(path_of("old.ckpt"), &a, NULL, NULL);
        EXPECT(remove_config_line(path_of("old.ckpt"), line), "checkpoint of %s: it holds the line %s", values[k], kv);
        model_load(path_of("old.ckpt"), &b, 0, NULL, NULL, NULL);
        EXPECT(posenc_embed_scale(&b.cfg.pe, b.cfg.n_embd) == 1, "%s, its line removed: loads unscaled (factor %g)",
               values[k], posenc_embed_scale(&b.cfg.pe, b.cfg.n_embd));
        Batch bt;
        batch_alloc(&bt, 2, a.cfg.max_seq_len);
        random_batch(&bt, a.cfg.vocab_size, 9);
        double la = gpt_forward(&a, &bt, NULL), lb = gpt_forward(&b, &bt, NULL);
        EXPECT(k == 0 ? la == lb : la != lb, "%s, its line removed: loss %.9g, saved model's %.9g (%s)", values[k], lb, la,
               k == 0 ? "the same model" : "unscaled now, another loss");
        batch_free(&bt);
        gpt_free(&a); gpt_free(&b);
    }
    remove(path_of("old.ckpt"));
}

// The NoPE paper's APE (--sinusoidal-scale paper) is part of the model: a checkpoint stores the line
// sinusoidal_scale=paper, and --load (as --resume) gives the same model, bit for bit; the line
// changed to sqrt gives another model (the form is read from the file, not assumed).
static void test_checkpoint_paper_form(void) {
    GPTConfig c = config(2, NULL, "t5,nope", "sinusoidal", "sinusoidal_scale=paper");
    GPT a, b;
    gpt_build(&a, &c, 11, 0);
    ckpt_save(path_of("paper.ckpt"), &a, NULL, NULL);
    model_load(path_of("paper.ckpt"), &b, 0, NULL, NULL, NULL);
    EXPECT(b.cfg.pe.sinusoidal_scale == PE_SIN_PAPER && posenc_head_scale(&b.cfg.pe, b.cfg.n_embd) != 1,
           "a checkpoint of the paper's APE loads as it (sinusoidal_scale %d)", b.cfg.pe.sinusoidal_scale);
    Batch bt;
    batch_alloc(&bt, 2, a.cfg.max_seq_len);
    random_batch(&bt, a.cfg.vocab_size, 13);
    double la = gpt_forward(&a, &bt, NULL), lb = gpt_forward(&b, &bt, NULL);
    EXPECT(la == lb, "the paper's APE through a checkpoint: loss %.9g, saved model's %.9g", lb, la);
    gpt_free(&b);
    EXPECT(remove_config_line(path_of("paper.ckpt"), "sinusoidal_scale=paper\n"), "the checkpoint holds sinusoidal_scale=paper");
    model_load(path_of("paper.ckpt"), &b, 0, NULL, NULL, NULL);
    double lc = gpt_forward(&b, &bt, NULL);
    EXPECT(b.cfg.pe.sinusoidal_scale == PE_SIN_NONE && lc != la, "without its line it loads as another form (loss %.9g)", lc);
    batch_free(&bt);
    gpt_free(&a); gpt_free(&b);
    remove(path_of("paper.ckpt"));
}

// ---- bad files ----------------------------------------------------------------------------------

static void load_child(const void *arg) {
    GPT m;
    model_load(arg, &m, 0, NULL, NULL, NULL);
}

static int refused(const char *path, const char *needle) { return dies_with(load_child, path, path, needle); }

static void patch_int(const char *path, int index, int32_t v) {
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, 4L * index, SEEK_SET) == 0, "test: cannot patch %s", path);
    put_le(f, (uint32_t)v, 4);
    fclose(f);
}

static void test_llmc_refusals(void) {
    Header h = { 3, 12, 130, 2, 2, 8, 256 };
    const char *p = path_of("bad.bin");
    size_t size = 1024 + 4 * (256 * 8 + 12 * 8 + 2 * (12 * 64 + 13 * 8) + 16);
    write_llmc(p, &h, 0);
    EXPECT(truncate(p, (off_t)size - 4) == 0 && refused(p, "is truncated"), "a truncated llm.c file");
    write_llmc(p, &h, 0);
    FILE *f = fopen(p, "ab"); fputs("tail", f); fclose(f);
    EXPECT(refused(p, "followed by extra bytes"), "extra bytes after the parameters");
    write_llmc(p, &h, 0);
    EXPECT(truncate(p, 100) == 0 && refused(p, "shorter than its 1024-byte header"), "a file cut inside the header");
    const struct { int index; int32_t value; const char *needle; } fields[] = {
        { 1, 4, "has version 4; this program reads versions 3 (float32) and 5 (bfloat16)" },
        { 7, 129, "padded_vocab_size 129 is smaller than vocab_size 130" },
        { 5, 3, "channels 8 is not a positive multiple of num_heads 3" },
        { 2, 0, "max_seq_len 0 is outside" },
        { 3, 1, "vocab_size 1 is outside" },
        { 4, 65, "num_layers 65 is outside" },
        // a header stating 64 layers of dim 65536 in this small file: refused for its size before
        // any allocation (the model would need 13 TB: allocating first ends "out of memory")
        { 6, 65536, "needs" },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        write_llmc(p, &h, 0);
        if (fields[i].index == 6) patch_int(p, 4, 64);
        patch_int(p, fields[i].index, fields[i].value);
        EXPECT(refused(p, fields[i].needle), "header field %d = %d", fields[i].index, fields[i].value);
    }
    EXPECT(refused(p, "it is truncated"), "the huge header's message says truncated");
    // a non-zero byte in a padding row of wte (row 200 of 256)
    write_llmc(p, &h, 0);
    f = fopen(p, "r+b");
    fseek(f, 1024 + 4L * (200 * 8 + 3), SEEK_SET);
    fputc(1, f);
    fclose(f);
    EXPECT(refused(p, "row 200 of wte is a padding row"), "a non-zero padding row");
    // neither a checkpoint nor llm.c nor safetensors
    f = fopen(p, "wb"); fputs("just some text, not a model at all", f); fclose(f);
    EXPECT(refused(p, "is not a checkpoint of this program"), "a foreign file");
    // a model llm.c cannot run is refused by the writer, which writes nothing
    GPTConfig c = config(2, "rope", NULL, NULL, NULL);
    GPT m;
    gpt_build(&m, &c, 1, 0);
    char msg[512];
    EXPECT(llmc_unsupported(&m, msg, sizeof msg) && strstr(msg, "positions are rope"), "llmc_unsupported names the positions");
    gpt_free(&m);
}

// A copy of the export at src with one change: tensor `drop` left out, tensor `change` written with
// shape `shape` (ndim 2) or as I32 (i32), an extra tensor, or other metadata (NULL: the same).
typedef struct { const char *drop, *change; int64_t shape[2]; int i32; const char *extra, *metadata; } Edit;

static void edited_copy(const char *src, const char *dst, const Edit *e) {
    StFile f;
    st_read(src, &f);
    StWriter w;
    st_writer_init(&w);
    for (int k = 0; k < f.n; k++) {
        const StTensor *t = &f.t[k];
        if (e->drop && !strcmp(t->name, e->drop)) continue;
        int changed = e->change && !strcmp(t->name, e->change);
        if (changed && e->i32) st_add_i32(&w, t->name, t->data, t->ndim, t->shape);
        else if (changed) st_add_f32(&w, t->name, t->data, 2, e->shape);
        else st_add_f32(&w, t->name, t->data, t->ndim, t->shape);
    }
    if (e->extra) { float x = 1; st_add_f32(&w, e->extra, &x, 0, NULL); }
    st_set_metadata(&w, e->metadata ? e->metadata : f.metadata_json);
    st_write(&w, dst);
    st_writer_free(&w);
    st_file_free(&f);
}

static void test_safetensors_refusals(void) {
    GPTConfig c = config(2, NULL, NULL, NULL, NULL);     // learned, V 70, C 16, context 12
    GPT m;
    gpt_build(&m, &c, 5, 0);
    const char *good = path_of("good.safetensors"), *p = path_of("bad.safetensors");
    export_safetensors(good, &m);
    remove(path_of("config.json"));
    gpt_free(&m);
    char cfg[4096], esc[8192], meta[9000];
    const struct { Edit e; const char *needle; } cases[] = {
        { { .drop = "transformer.h.1.ln_1.bias" }, "lacks the tensor transformer.h.1.ln_1.bias" },
        { { .change = "transformer.h.0.attn.c_attn.weight", .shape = { 48, 16 } }, "tensor transformer.h.0.attn.c_attn.weight has shape [48, 16], but its config needs [16, 48]" },
        { { .change = "transformer.wte.weight", .shape = { 35, 32 } }, "tensor transformer.wte.weight has shape [35, 32], but its config needs [70, 16]" },
        { { .change = "transformer.ln_f.bias", .i32 = 1 }, "tensor transformer.ln_f.bias is I32" },
        { { .extra = "logits" }, "holds a tensor logits, which a model of its config does not have" },
        { { .metadata = "{\"format\":\"pt\"}" }, "no \"config\" metadata entry" },
        { { .metadata = "{\"format\":\"pt\",\"config\":\"{\\\"vocab_size\\\":70,\"}" }, "malformed \"config\" metadata" },
        { { .metadata = "{\"config\":\"{\\\"vocab_size\\\":70,\\\"n_layer\\\":2,\\\"n_head\\\":2,\\\"max_seq_len\\\":12}\"}" },
          "lacks part of the model config" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        edited_copy(good, p, &cases[i].e);
        EXPECT(refused(p, cases[i].needle), "safetensors case %zu (%s)", i, cases[i].needle);
    }
    // metadata whose config is an object, not a string (st_set_metadata cannot write it)
    static const char header[] = "{\"__metadata__\":{\"config\":{\"vocab_size\":70}}}";
    FILE *f = fopen(p, "wb");
    put_le(f, (uint32_t)strlen(header), 4);
    put_le(f, 0, 4);
    fputs(header, f);
    fclose(f);
    EXPECT(refused(p, "entry \"config\" is not a string"), "a config that is not a string");
    // the config edited: an unknown key; dim 4096 (more than the file holds: refused before the
    // model is built); 3 layers where the file has 2
    const struct { const char *from, *to, *needle; } configs[] = {
        { "\"n_layer\":2,", "\"n_layer\":2,\"colour\":\"red\",", "unknown config key 'colour'" },
        { "\"n_embd\":16,", "\"n_embd\":4096,", "needs more than" },
        { "\"vocab_size\":70,", "\"vocab_size\":71,", "tensor transformer.wte.weight has shape [70, 16], but its config needs [71, 16]" },
        { "\"max_seq_len\":12,", "\"max_seq_len\":13,", "tensor transformer.wpe.weight has shape [12, 16], but its config needs [13, 16]" },
    };
    GPT again;
    model_load(good, &again, 0, NULL, NULL, NULL);
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        model_config_json(&again, cfg, sizeof cfg);
        char *at = strstr(cfg, configs[i].from), edited[4096];
        CHECK(at, "test: '%s' not in %s", configs[i].from, cfg);
        snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - cfg), cfg, configs[i].to, at + strlen(configs[i].from));
        st_json_escape(esc, sizeof esc, edited);
        snprintf(meta, sizeof meta, "{\"format\":\"pt\",\"config\":\"%s\"}", esc);
        edited_copy(good, p, &(Edit){ .metadata = meta });
        EXPECT(refused(p, configs[i].needle), "config edit %zu (%s)", i, configs[i].needle);
    }
    gpt_free(&again);
}

int main(void) {
    CHECK(mkdtemp(dir), "test: cannot create a temporary folder");
    test_llmc();
    test_safetensors_identity();
    test_checkpoint_before_sinusoidal_scale();
    test_checkpoint_paper_form();
    test_llmc_refusals();
    test_safetensors_refusals();
    const char *names[] = { "v3.bin", "v3-again.bin", "v5.bin", "v5-twin.bin", "v5-again.bin", "nopad.bin", "nopad-again.bin",
                            "a.safetensors", "b.safetensors", "bad.bin", "good.safetensors", "bad.safetensors" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) remove(path_of(names[i]));
    rmdir(dir);
    return test_summary("test_import");
}
