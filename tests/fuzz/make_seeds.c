// tests/fuzz/make_seeds.c: writes the seed inputs of the harnesses that do not come from ./train
// (make fuzz runs ./train for the checkpoints and safetensors files) into DIR/NAME/: llm.c token
// shards (uint16 and uint32), a byte file and sets of several files (shard), llm.c tokenizer files
// (tokenizer), llm.c model files (llmc), a learned BPE vocabulary as encoder.json + vocab.bpe
// (bpe_vocab), texts to encode (bpe_encode), a shard for ./tokenize decode (tokenize_decode), and
// command lines, one argument per line (train_args, compare_args, task: one per task).
//
//   make_seeds DIR
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "util/common.h"
#include "dataset/bpe.h"
#include "dataset/data.h"
#include "dataset/tasks.h"

static char dir[4096];

static FILE *create(const char *name, const char *file) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(mkdir(path, 0777) == 0 || errno == EEXIST, "cannot create %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/%s/%s", dir, name, file);
    FILE *f = fopen(path, "wb");
    CHECK(f, "cannot create %s: %s", path, strerror(errno));
    return f;
}

static void text(const char *name, const char *file, const char *content) {
    FILE *f = create(name, file);
    fputs(content, f);
    CHECK(fclose(f) == 0, "cannot write %s/%s/%s", dir, name, file);
}

// n command lines as name/line0.txt, line1.txt, ...
static void lines(const char *name, const char *const *content, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char file[32];
        snprintf(file, sizeof file, "line%zu.txt", i);
        text(name, file, content[i]);
    }
}

static void put32(FILE *f, int32_t v) {
    unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24) };
    fwrite(b, 1, 4, f);
}

// An llm.c token shard of n tokens of `width` bytes (2: GPT-2, 4: Llama-3) into f.
static void shard(FILE *f, int width, const int *tok, int n) {
    put32(f, width == 2 ? 20240520 : 20240801);
    put32(f, width == 2 ? 1 : 7);
    put32(f, n);
    for (int i = 3; i < 256; i++) put32(f, 0);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < width; k++) fputc((unsigned)tok[i] >> (8 * k) & 0xff, f);
}

// An llm.c tokenizer: the 256 bytes, then `extra` two-byte pieces, then (version 2) "<|eot|>".
static void tokenizer(const char *file, int version, int extra) {
    FILE *f = create("tokenizer", file);
    int n = 256 + extra + (version == 2);
    put32(f, 20240328);
    put32(f, version);
    put32(f, n);
    put32(f, version == 2 ? n - 1 : 0);
    for (int i = 4; i < 256; i++) put32(f, 0);
    for (int i = 0; i < 256; i++) { fputc(1, f); fputc(i, f); }
    for (int i = 0; i < extra; i++) { fputc(2, f); fputc("the "[i % 4], f); fputc('a' + i % 26, f); }
    if (version == 2) { fputc(7, f); fputs("<|eot|>", f); }
    CHECK(fclose(f) == 0, "cannot write the tokenizer seed %s", file);
}

// A small llm.c GPT-2 model (formats/llmc_model.h): context 4, vocabulary 5 padded to 8, 1 layer, 2 heads,
// 4 channels; version 3 (float32) or 5 (bfloat16); the padding rows zero.
static void llmc_model(const char *file, int version) {
    FILE *f = create("llmc", file);
    const int maxT = 4, V = 5, Vp = 8, L = 1, NH = 2, C = 4;
    int32_t h[256] = { 20240326, version, maxT, V, L, NH, C, Vp };
    for (int i = 0; i < 256; i++) put32(f, h[i]);
    size_t n = (size_t)Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C;
    for (size_t i = 0; i < n; i++) {
        float x = i >= (size_t)V * C && i < (size_t)Vp * C ? 0.0f : 0.125f * (float)((int)(i % 17) - 8);
        uint32_t u;
        memcpy(&u, &x, 4);
        if (version == 5) { fputc((int)(u >> 16) & 255, f); fputc((int)(u >> 24), f); }
        else put32(f, (int32_t)u);
    }
    CHECK(fclose(f) == 0, "cannot write the llm.c model seed %s", file);
}

// bpe_vocab/trained.txt: 300 tokens learned from the embedded corpus, written by bpe.c's writers,
// then joined as fuzz_bpe_vocab reads them; bpe_encode/: the corpus's start and mixed text;
// tokenize_decode/: a shard of byte tokens and ends of text (ids below 257).
static void bpe_seeds(void) {
    size_t n;
    char *corpus = data_default_corpus_text(&n);
    const unsigned char *t = (const unsigned char *)corpus;
    Bpe b;
    bpe_train(&b, &t, &n, 1, 300, "the embedded corpus");
    char enc[8192], mrg[8192];
    snprintf(enc, sizeof enc, "%s/encoder.json", dir);
    snprintf(mrg, sizeof mrg, "%s/vocab.bpe", dir);
    bpe_write_encoder_json(&b, enc);
    bpe_write_merges(&b, mrg);
    size_t ne, nm;
    unsigned char *e = bpe_read_file(enc, "seed", &ne), *m = bpe_read_file(mrg, "seed", &nm);
    FILE *f = create("bpe_vocab", "trained.txt");
    fwrite(e, 1, ne, f);
    fputs("\n---- vocab.bpe ----\n", f);
    fwrite(m, 1, nm, f);
    CHECK(fclose(f) == 0, "cannot write the bpe_vocab seed");
    remove(enc);
    remove(mrg);
    free(e); free(m);
    bpe_free(&b);
    corpus[n < 4096 ? n : 4096] = 0;
    text("bpe_encode", "corpus.txt", corpus);
    int tokens[300];
    for (int i = 0; i < 300; i++) tokens[i] = i % 50 == 0 ? 256 : bpe_id_of_byte((unsigned char)corpus[i]);
    char path[8192];
    snprintf(path, sizeof path, "%s/tokenize_decode", dir);
    CHECK(mkdir(path, 0777) == 0 || errno == EEXIST, "cannot create %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/tokenize_decode/bytes.bin", dir);
    data_write_shard(path, tokens, 300);
    text("bpe_encode", "mixed.txt", "It's 12:30, we'll see. I'M \xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd "
         "\xe2\x80\x99s  \t\n\n  x \xc2\xa0y 1234567 \xd9\xa3 \xff\xfe\x80 caf\xc3");
    free(corpus);
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: make_seeds DIR");
    snprintf(dir, sizeof dir, "%s", argv[1]);
    CHECK(mkdir(dir, 0777) == 0 || errno == EEXIST, "cannot create %s: %s", dir, strerror(errno));

    char path[8192];
    text("shard", "bytes.txt", "The quick brown fox.\n\nA second document.\n");
    int tokens[300];
    for (int i = 0; i < 300; i++) tokens[i] = i % 7 == 6 ? 50256 : (i * 7919) % 50257;
    snprintf(path, sizeof path, "%s/shard/gpt2.bin", dir);
    data_write_shard(path, tokens, 300);
    snprintf(path, sizeof path, "%s/shard/one.bin", dir);
    data_write_shard(path, tokens, 1);
    int big[64];                                  // Llama-3 ids, past 65535, opening documents with 128000
    for (int i = 0; i < 64; i++) big[i] = i % 9 == 0 ? 128000 : (i * 104729) % 128256;
    FILE *f = create("shard", "llama3.bin");
    shard(f, 4, big, 64);
    CHECK(fclose(f) == 0, "cannot write the shard seed llama3.bin");
    // sets: files joined by the line fuzz_shard.c cuts at
    f = create("shard", "set-gpt2.bin");
    for (int k = 0; k < 3; k++) { if (k) fputs("\n--next-file--\n", f); shard(f, 2, tokens + 40 * k, 13 + 7 * k); }
    CHECK(fclose(f) == 0, "cannot write the shard seed set-gpt2.bin");
    text("shard", "set-bytes.txt", "One file.\n\n\n--next-file--\nAnother file,\nlonger.\n\nIts second document.\n");

    tokenizer("v1.bin", 1, 0);
    tokenizer("v2.bin", 2, 40);
    llmc_model("v3.bin", 3);
    llmc_model("v5.bin", 5);

    static const char *train[] = {
        "--steps\n20\n--lr\n3e-3\n--batch\n4\n--seq\n32\n--layers\n2\n--heads\n2\n--dim\n32\n",
        "--pe\nrope\n--rope-base\n500000\n--rope-fraction\n0.25\n--rope-pairing\ninterleaved\n--context\n64\n",
        "--pe-layers\nrope,nope,alibi,t5\n--input-pe\nsinusoidal\n--wd\n0.05\n--schedule\npoly\n--warmup-frac\n0.06\n",
        "--pe\nlearned\n--ppl-windows\n0.5,1,2,4,8\n--ppl-stride\n0.25\n--ppl-tokens\n4096\n--dropout\n0.1\n--precision\nbf16\n",
        "--pe\nrope\n--rope-scaling\nyarn\n--rope-factor\n8\n--seed\n-5\n--clip\n0\n--beta2\n0.99\n--eps\n1e-6\n",
        "--task\ncopy-repeat\n--fit-target\n0.9\n--max-steps\n600\n--train-max\n20\n--test-max\n40\n--alphabet\n640\n",
    };
    lines("train_args", train, sizeof train / sizeof *train);
    static const char *compare[] = {
        "--out\nruns/x\n--task\ncopy-repeat,copy-successor\n--schemes\nnope,learned,alibi,t5\n--scheme\nrope-full=--pe rope\n"
        "--seeds\n1,2,3\n--jobs\n2\n--eval-per-length\n50\n--fit-target\n0.9\n--claims\nnope>learned,alibi>t5\n--\n--max-steps\n600\n",
        "--out\nruns/y\n--data\n/dev/null\n--schemes\nnope,rope\n--rope-extensions\nlinear,dynamic,yarn\n--rope-factor\n4\n"
        "--eval-flags\n--ppl-tokens 32768\n--quiet\n--threads\n1\n",
        "--out\nruns/z\n--task\nretrieval\n--report-only\n--seeds\n7\n",
        "--out\nruns/w\n--data\n/dev/null\n--schemes\nalibi,rope,sinusoidal\n--double-length\nalibi,rope\n--rope-extensions\n"
        "yarn,longrope\n--eval-flags\n--ppl-tokens 4096 --ppl-windows 1,2,4\n--\n--seq\n64\n--batch\n16\n",
    };
    lines("compare_args", compare, sizeof compare / sizeof *compare);
    bpe_seeds();
    for (int t = 0; task_info(t); t++) {
        const TaskInfo *ti = task_info(t);
        char file[96], line[256];
        snprintf(file, sizeof file, "%s.txt", ti->name);
        snprintf(line, sizeof line, "--task\n%s\n--train-min\n%d\n--train-max\n%d\n--seed\n%d\n", ti->name,
                 ti->train_min, ti->train_max, t);
        text("task", file, line);
    }
    return 0;
}
