// formats/llmc_model.c: llm.c's GPT-2 model files (formats/llmc_model.h): the reader behind --load and the writer
// of --export-llmc. Values are decoded byte by byte (little-endian), so the host's order is moot.
#include "formats/llmc_model.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "util/atomicfile.h"

enum { LLMC_FP32 = 3, LLMC_BF16 = 5 };     // the versions: every parameter float32 / bfloat16
enum { LLMC_PAD = 128 };                   // llm.c pads the vocabulary to a multiple of this
enum { CHUNK = 4096 };                     // values through the stack buffer at a time
static const double MAX_CONTEXT = 1e7;     // what --context allows (and the checkpoint reader)

static uint32_t le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

// One parameter: 4 bytes of float32, or 2 bytes of bfloat16 (the top half of a float32: exact).
static real decode(const unsigned char *b, int width) {
    uint32_t u = width == 2 ? (uint32_t)b[0] << 16 | (uint32_t)b[1] << 24 : le32(b);
    float x;
    memcpy(&x, &u, 4);
    return (real)x;
}

// The header's model, checked field by field: the config of a learned table over nope layers,
// llm.c's padded vocabulary in *Vp and the bytes per value in *width.
static void header_config(const char *path, const int32_t *h, GPTConfig *cfg, int *Vp, int *width) {
    CHECK(h[0] == LLMC_MODEL_MAGIC, "'%s' is not an llm.c model (magic %d, not %d)", path, h[0], LLMC_MODEL_MAGIC);
    CHECK(h[1] == LLMC_FP32 || h[1] == LLMC_BF16, "llm.c model '%s' has version %d; this program reads versions "
          "%d (float32) and %d (bfloat16)", path, h[1], LLMC_FP32, LLMC_BF16);
    int maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6];
    *Vp = h[7];
    *width = h[1] == LLMC_FP32 ? 4 : 2;
    CHECK(maxT >= 1 && maxT <= MAX_CONTEXT, "llm.c model '%s': max_seq_len %d is outside 1..%.0f (a damaged file)",
          path, maxT, MAX_CONTEXT);
    CHECK(V >= 2 && V <= (1 << 24), "llm.c model '%s': vocab_size %d is outside 2..16777216 (a damaged file)", path, V);
    CHECK(L >= 1 && L <= PE_MAX_LAYERS, "llm.c model '%s': num_layers %d is outside the 1..%d layers this program "
          "builds", path, L, PE_MAX_LAYERS);
    CHECK(NH >= 1 && C >= 1 && C % NH == 0, "llm.c model '%s': channels %d is not a positive multiple of num_heads %d "
          "(a damaged file)", path, C, NH);
    CHECK(*Vp >= V, "llm.c model '%s': padded_vocab_size %d is smaller than vocab_size %d (a damaged file)", path, *Vp, V);
    *cfg = (GPTConfig){ .vocab_size = V, .n_layer = L, .n_head = NH, .n_embd = C, .max_seq_len = maxT };
    posenc_defaults(&cfg->pe, L);          // GPT-2's positions: a learned input table, every layer nope
    char msg[512];
    CHECK(gpt_config_check(cfg, msg, sizeof msg), "llm.c model '%s' holds an invalid config: %s", path, msg);
}

// The parameters after wte and wpe, which both layouts keep in one block: L (12 C^2 + 13 C) + 2 C.
static double block_values(const GPTConfig *c) {
    double C = c->n_embd;
    return c->n_layer * (12 * C * C + 13 * C) + 2 * C;
}

typedef struct { FILE *f; const char *path; int width; } In;

// n values of the file's precision into x
static void read_values(In *in, real *x, size_t n) {
    unsigned char buf[4 * CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        CHECK(fread(buf, (size_t)in->width, k, in->f) == k, "cannot read llm.c model '%s': %s (the file changed "
              "while it was read?)", in->path, ferror(in->f) ? strerror(errno) : "it ended early");
        for (size_t j = 0; j < k; j++) x[i + j] = decode(buf + j * (size_t)in->width, in->width);
    }
}

// wte's padding rows V..Vp-1 (n values) must be zero, byte for byte
static void check_padding(In *in, int V, int Vp, int C) {
    unsigned char buf[4 * CHUNK];
    size_t n = (size_t)(Vp - V) * C;
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        CHECK(fread(buf, (size_t)in->width, k, in->f) == k, "cannot read llm.c model '%s': %s", in->path,
              ferror(in->f) ? strerror(errno) : "it ended early");
        for (size_t j = 0; j < k * (size_t)in->width; j++)
            CHECK(buf[j] == 0, "llm.c model '%s': row %zu of wte is a padding row (the vocabulary has %d, padded to %d) "
                  "but is not zero; llm.c writes zeros there: the file is damaged or was not written by llm.c",
                  in->path, V + (i + j / (size_t)in->width) / (size_t)C, V, Vp);
    }
}

void llmc_load(const char *path, GPT *m, int max_pos, CkptAdjust adjust, void *ctx) {
    In in = { fopen(path, "rb"), path, 0 };
    CHECK(in.f, "cannot open llm.c model '%s': %s", path, strerror(errno));
    struct stat sb;
    CHECK(fstat(fileno(in.f), &sb) == 0, "cannot stat '%s': %s", path, strerror(errno));
    unsigned char head[4 * LLMC_HEADER_INTS];
    CHECK(fread(head, 1, sizeof head, in.f) == sizeof head, "llm.c model '%s' is truncated: %lld bytes, shorter than "
          "its %zu-byte header", path, (long long)sb.st_size, sizeof head);
    int32_t h[LLMC_HEADER_INTS];
    for (int i = 0; i < LLMC_HEADER_INTS; i++) h[i] = (int32_t)le32(head + 4 * i);
    GPTConfig cfg;
    int Vp, width;
    header_config(path, h, &cfg, &Vp, &width);
    in.width = width;
    // The size, before anything is allocated: in double first (a damaged header could ask for more
    // than 64 bits), then exactly.
    double C = cfg.n_embd, values = (double)Vp * C + cfg.max_seq_len * C + block_values(&cfg);
    CHECK(values * width <= (double)sb.st_size, "llm.c model '%s' is %lld bytes but its header (%d layers, %d heads, "
          "dim %d, vocabulary %d padded to %d, context %d) needs %.0f: it is truncated", path, (long long)sb.st_size,
          cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.vocab_size, Vp, cfg.max_seq_len, sizeof head + values * width);
    uint64_t expect = sizeof head + (uint64_t)values * (uint64_t)width;
    CHECK((uint64_t)sb.st_size == expect, "llm.c model '%s' is %lld bytes but its header needs %llu: it is %s", path,
          (long long)sb.st_size, (unsigned long long)expect, (uint64_t)sb.st_size < expect ? "truncated" : "followed by extra bytes");
    if (adjust) {                       // after the checks: the file is what it says
        adjust(&cfg, ctx);
        char msg[512];
        CHECK(gpt_config_check(&cfg, msg, sizeof msg), "with the model of '%s': %s", path, msg);
    }
    gpt_build(m, &cfg, 0, max_pos);
    const GPTConfig *c = &m->cfg;
    size_t V = (size_t)c->vocab_size, nC = (size_t)c->n_embd, rest = (size_t)(m->weights.p.lnfb + nC - m->weights.p.ln1w);
    CHECK(m->weights.p.pe_input && rest == (size_t)block_values(c) &&
          m->weights.num_params == (size_t)c->padded_vocab * nC + (size_t)c->max_seq_len * nC + rest,
          "internal: the model's layout is not llm.c's with wpe moved behind lnfb");
    read_values(&in, m->weights.p.wte, V * nC);                  // wte's real rows (ours are padded with zeros)
    check_padding(&in, c->vocab_size, Vp, c->n_embd);
    read_values(&in, m->weights.p.pe_input, (size_t)c->max_seq_len * nC);   // wpe
    read_values(&in, m->weights.p.ln1w, rest);                   // ln1w .. lnfb
    fclose(in.f);
}

const char *llmc_unsupported(const GPT *m, char *msg, size_t cap) {
    if (posenc_is_gpt2(&m->cfg.pe)) return NULL;
    char label[PE_MAX_LAYERS * 24];
    posenc_label(&m->cfg.pe, label, sizeof label);
    snprintf(msg, cap, "llm.c's GPT-2 adds a learned position table at the input and has no positional scheme in its "
             "layers, but this model's positions are %.200s; llm.c cannot run it (--export writes any model as safetensors)", label);
    return msg;
}

// n values as little-endian float32
static void write_values(AtomicFile *o, const real *x, size_t n) {
    unsigned char buf[4 * CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        for (size_t j = 0; j < k; j++) {
            float f = x ? (float)x[i + j] : 0.0f;
            uint32_t u;
            memcpy(&u, &f, 4);
            for (int b = 0; b < 4; b++) buf[4 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        af_write(o, buf, 4 * k);
    }
}

void llmc_export(const char *path, const GPT *m) {
    char msg[512];
    CHECK(!llmc_unsupported(m, msg, sizeof msg), "--export-llmc %s: %s", path, msg);
    const GPTConfig *c = &m->cfg;
    int Vp = (c->vocab_size + LLMC_PAD - 1) / LLMC_PAD * LLMC_PAD;
    int32_t h[LLMC_HEADER_INTS] = { LLMC_MODEL_MAGIC, LLMC_FP32, c->max_seq_len, c->vocab_size, c->n_layer,
                                    c->n_head, c->n_embd, Vp };
    unsigned char head[4 * LLMC_HEADER_INTS];
    for (int i = 0; i < LLMC_HEADER_INTS; i++)
        for (int b = 0; b < 4; b++) head[4 * i + b] = (unsigned char)((uint32_t)h[i] >> (8 * b));
    size_t nC = (size_t)c->n_embd;
    AtomicFile o;
    af_open(&o, path, "llm.c model", "wb");
    af_write(&o, head, sizeof head);
    write_values(&o, m->weights.p.wte, (size_t)c->vocab_size * nC);
    write_values(&o, NULL, (size_t)(Vp - c->vocab_size) * nC);   // the padding rows: zeros
    write_values(&o, m->weights.p.pe_input, (size_t)c->max_seq_len * nC);
    write_values(&o, m->weights.p.ln1w, (size_t)(m->weights.p.lnfb + nC - m->weights.p.ln1w));
    af_commit(&o);
}
