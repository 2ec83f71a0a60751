// tools/tokenize.c: ./tokenize, GPT-2's byte-level BPE for the dataset side (the BPE is dataset/bpe.h).
//
//   ./tokenize encode --encoder encoder.json --merges vocab.bpe --out SHARD.bin [--tokenizer-out TOK.bin]
//                     [--shard-tokens N] [--doc-sep TEXT] INPUT...    text -> llm.c token shards
//   ./tokenize train --vocab-size N --out-dir DIR INPUT...              a corpus -> a new vocabulary
//   ./tokenize decode --tokenizer TOK.bin SHARD.bin...                  shards -> text on stdout
//
// Documents: each INPUT file is one document, or with --doc-sep TEXT, each stretch of a file
// between occurrences of TEXT (which is dropped); every document, an empty one too, is written as
// the end-of-text token followed by its tokens, as llm.c's data scripts do. decode writes the
// end of text as nothing, so decoding the shards of one INPUT (without --doc-sep) gives it back
// byte for byte.
//
// Nothing is written when the flags, the vocabulary files or an input are bad: everything is read
// and encoded before the first shard is written, and each file is written whole or not at all
// (util/atomicfile.h). The tokens are held in memory until then (4 bytes a token, about the input's size).
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/common.h"
#include "util/flags.h"
#include "dataset/bpe.h"
#include "dataset/data.h"

enum {
    SHARD_MAGIC = 20240520,
    LLAMA3_SHARD_MAGIC = 20240801,
    SHARD_HEADER_BYTES = 1024,
};

typedef enum { CMD_ENCODE = 1, CMD_TRAIN = 2, CMD_DECODE = 4 } Command;

typedef struct {
    const char *encoder, *merges, *out, *tokenizer_out, *doc_sep, *out_dir, *tokenizer;
    long shard_tokens, vocab_size;
    char **input;              // the positional arguments: text files (encode, train) or shards (decode)
    int n_inputs;
} Args;

// The flags (util/flags.h): one table drives parsing, the required checks and --help. A row's tag:
// the commands that take it; its group: the command's name in --help; required: the commands that need it.
#define O(field) offsetof(Args, field)
FLAGS_TABLE_BEGIN
static const FlagRow FLAGS[] = {
    { "encoder", FLAG_STRING, O(encoder), 0, 0, CMD_ENCODE, "FILE", "encode",
      "encoder.json: token -> id (GPT-2's, or one ./tokenize train wrote)", .required = CMD_ENCODE },
    { "merges", FLAG_STRING, O(merges), 0, 0, CMD_ENCODE, "FILE", "encode",
      "vocab.bpe: the merges in rank order, one \"LEFT RIGHT\" per line", .required = CMD_ENCODE },
    { "out", FLAG_STRING, O(out), 0, 0, CMD_ENCODE, "SHARD.bin", "encode",
      "the llm.c token shard to write (uint16 tokens, magic 20240520)", .required = CMD_ENCODE },
    { "tokenizer-out", FLAG_STRING, O(tokenizer_out), 0, 0, CMD_ENCODE, "FILE", "encode",
      "also write the llm.c tokenizer file (./train --tokenizer decodes samples with it)" },
    { "shard-tokens", FLAG_LONG, O(shard_tokens), 1, INT32_MAX, CMD_ENCODE, "N", "encode",
      "numbered shards of N tokens each, the last one shorter: SHARD_000000.bin, SHARD_000001.bin, ... (SHARD: --out "
      "without .bin)" },
    { "doc-sep", FLAG_STRING, O(doc_sep), 0, 0, CMD_ENCODE, "TEXT", "encode",
      "TEXT also ends a document inside a file, and is dropped (e.g. '<|endoftext|>', or $'\\n\\n' in bash)" },
    { "vocab-size", FLAG_LONG, O(vocab_size), 257, 65536, CMD_TRAIN, "N", "train",
      "tokens in the vocabulary: 256 bytes + N - 257 merges + the end of text", .required = CMD_TRAIN },
    { "out-dir", FLAG_STRING, O(out_dir), 0, 0, CMD_TRAIN, "DIR", "train",
      "where encoder.json, vocab.bpe and tokenizer.bin go (created if missing)", .required = CMD_TRAIN },
    { "tokenizer", FLAG_STRING, O(tokenizer), 0, 0, CMD_DECODE, "FILE", "decode",
      "the llm.c tokenizer file of the shards' vocabulary", .required = CMD_DECODE },
};
FLAGS_TABLE_END
#undef O
enum { N_FLAGS = sizeof FLAGS / sizeof FLAGS[0] };

static void usage(FILE *f) {
    fprintf(f,
        "usage: ./tokenize encode --encoder encoder.json --merges vocab.bpe --out SHARD.bin [--tokenizer-out TOK.bin]\n"
        "                         [--shard-tokens N] [--doc-sep TEXT] INPUT...\n"
        "       ./tokenize train --vocab-size N --out-dir DIR INPUT...\n"
        "       ./tokenize decode --tokenizer TOK.bin SHARD.bin...\n\n"
        "Byte-level BPE with GPT-2's pre-tokenisation, exactly tiktoken's \"gpt2\" encoding with GPT-2's files.\n"
        "  encode  INPUT text files -> llm.c token shards: each file is a document (with --doc-sep, each part of\n"
        "          it), written as the end-of-text token and then its tokens\n"
        "  train   learn a vocabulary of N tokens from the INPUT files (deterministic); encode takes its files\n"
        "  decode  the shards' tokens back to text on stdout (the end of text prints as nothing)\n\n");
    const char *names[] = { "encode", "train", "decode" };
    for (int c = 0; c < 3; c++) {
        fprintf(f, "%s:\n", names[c]);
        flags_help(f, FLAGS, N_FLAGS, names[c], 22, NULL);
    }
    fprintf(f, "\n--help, -h: this text. See docs/data.md, \"Tokenizing text (./tokenize)\".\n");
}

// flags_parse's hooks (util/flags.h): the command line being read
typedef struct { Args *a; const char *name; } Parse;

static void help_hook(void *ctx) { (void)ctx; usage(stdout); }
static void input_word(void *ctx, char *w) { Args *a = ((Parse *)ctx)->a; a->input[a->n_inputs++] = w; }

static void fail_hook(void *ctx, FlagError e, const char *s, const FlagRow *r, const char *v, int argc, char **argv,
                      int i) {
    (void)argc; (void)argv; (void)i;
    const char *name = ((const Parse *)ctx)->name;
    CHECK(e != FLAG_UNKNOWN, "./tokenize %s: unknown flag %s (see ./tokenize --help)", name, s);
    CHECK(e != FLAG_OTHER_COMMAND, "./tokenize %s: %s is a flag of another command (see ./tokenize --help)", name, s);
    CHECK(e != FLAG_TWICE, "./tokenize %s: %s is given twice", name, s);
    CHECK(e != FLAG_NO_VALUE, "./tokenize %s: %s needs a value (%s)", name, s, r->arg);
    CHECK(e != FLAG_EMPTY, "./tokenize %s: %s needs a non-empty %s", name, s, r->arg);
    CHECK(e != FLAG_NOT_INTEGER, "./tokenize %s: %s '%s' is not an integer", name, s, v);
    CHECK(0, "./tokenize %s: %s %ld is out of range; it must be in [%ld, %ld]", name, s, strtol(v, NULL, 10),
          (long)r->min, (long)r->max);
}

static void parse(int argc, char **argv, Command *cmd, Args *a) {
    memset(a, 0, sizeof *a);
    // --help or -h where a command or a flag may stand (not as a flag's value, nor an input after --)
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) { usage(stdout); exit(0); }
    CHECK(argc >= 2, "./tokenize needs a command: encode, train or decode (see ./tokenize --help)");
    const char *name = argv[1];
    *cmd = !strcmp(name, "encode") ? CMD_ENCODE : !strcmp(name, "train") ? CMD_TRAIN : !strcmp(name, "decode") ? CMD_DECODE : 0;
    CHECK(*cmd, "unknown command '%s'; ./tokenize takes encode, train or decode (see ./tokenize --help)", name);
    a->input = xmalloc((size_t)argc * sizeof *a->input);
    unsigned char seen[N_FLAGS] = { 0 };
    Parse p = { .a = a, .name = name };
    FlagParser fp = { .rows = FLAGS, .n = N_FLAGS, .base = a, .ctx = &p, .first = 2, .dashes_end = 1, .positional = 1,
                      .once = 1, .only = *cmd, .help = help_hook, .word = input_word, .fail = fail_hook, .given = seen };
    flags_parse(&fp, argc, argv);
    for (int k = 0; k < N_FLAGS; k++)
        CHECK(seen[k] || !(FLAGS[k].required & *cmd), "./tokenize %s needs --%s %s (see ./tokenize --help)", name,
              FLAGS[k].name, FLAGS[k].arg);
    CHECK(a->n_inputs > 0, "./tokenize %s needs at least one %s after the flags", name,
          *cmd == CMD_DECODE ? "shard file" : "INPUT text file");
}

// The folder of path, checked to exist and be writable, before any work (flag names the flag).
static void check_writable_folder(const char *path, const char *flag) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "%s %s: the folder %s does not exist; create it first", flag, path, dir);
    CHECK(access(dir, W_OK) == 0, "%s %s: the folder %s is not writable", flag, path, dir);
}

// Every input exists, is a file and can be opened, before anything is read.
static void check_inputs(char **input, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        struct stat st;
        CHECK(stat(input[i], &st) == 0, "cannot read the %s %s: %s", what, input[i], strerror(errno));
        CHECK(!S_ISDIR(st.st_mode), "the %s %s is a folder, not a file; name the files in it", what, input[i]);
        CHECK(access(input[i], R_OK) == 0, "cannot read the %s %s: %s", what, input[i], strerror(errno));
    }
}

// ---- encode ---------------------------------------------------------------------------------------

// shard k's file name when --shard-tokens is given: --out without ".bin", then _%06d.bin
static void shard_name(char *buf, size_t cap, const char *out, int k) {
    size_t n = strlen(out);
    if (n >= 4 && !strcmp(out + n - 4, ".bin")) n -= 4;
    snprintf(buf, cap, "%.*s_%06d.bin", (int)n, out, k);
}

// The first occurrence of sep (sep_len > 0 bytes) in s[0..n), or NULL
static const unsigned char *find(const unsigned char *s, size_t n, const char *sep, size_t sep_len) {
    for (size_t i = 0; i + sep_len <= n; i++)
        if (s[i] == (unsigned char)sep[0] && !memcmp(s + i, sep, sep_len)) return s + i;
    return NULL;
}

static void encode(const Args *a) {
    check_inputs(a->input, a->n_inputs, "input");
    check_writable_folder(a->out, "--out");
    if (a->tokenizer_out) check_writable_folder(a->tokenizer_out, "--tokenizer-out");
    Bpe bpe;
    bpe_load(&bpe, a->encoder, a->merges);
    BpeEncoder enc;
    bpe_encoder_init(&enc, &bpe);
    IdList ids = { 0 };
    size_t bytes = 0, docs = 0, sep_len = a->doc_sep ? strlen(a->doc_sep) : 0;
    double seconds = 0;
    for (int i = 0; i < a->n_inputs; i++) {
        size_t n;
        unsigned char *text = bpe_read_file(a->input[i], "input", &n);
        double t0 = now_seconds();
        for (size_t start = 0;;) {        // one document per stretch between separators
            const unsigned char *sep = sep_len ? find(text + start, n - start, a->doc_sep, sep_len) : NULL;
            size_t end = sep ? (size_t)(sep - text) : n;
            id_list_push(&ids, bpe.eot);
            bpe_encode(&enc, text + start, end - start, &ids);
            docs++;
            if (!sep) break;
            start = end + sep_len;
        }
        seconds += now_seconds() - t0;
        bytes += n;
        free(text);
    }
    int n_shards = 1;
    char path[4096];
    if (a->shard_tokens) {
        size_t count = (ids.n + (size_t)a->shard_tokens - 1) / (size_t)a->shard_tokens;
        CHECK(count <= 1000000, "--shard-tokens %ld: %zu tokens would make %zu shards, more than the 1000000 that "
              "six-digit names number; pass a larger --shard-tokens", a->shard_tokens, ids.n, count);
        n_shards = (int)count;
        shard_name(path, sizeof path, a->out, n_shards);
        CHECK(access(path, F_OK) != 0, "--out %s: %s exists, from an earlier run with more shards; a glob would mix it "
              "with the %d new shards, so remove it first", a->out, path, n_shards);
    } else {
        CHECK(ids.n <= INT32_MAX, "--out %s: %zu tokens do not fit one llm.c shard (its header counts at most %d); "
              "pass --shard-tokens N", a->out, ids.n, INT32_MAX);
    }
    for (int k = 0; k < n_shards; k++) {
        size_t from = a->shard_tokens ? (size_t)k * (size_t)a->shard_tokens : 0;
        size_t count = a->shard_tokens && ids.n - from > (size_t)a->shard_tokens ? (size_t)a->shard_tokens : ids.n - from;
        if (a->shard_tokens) shard_name(path, sizeof path, a->out, k);
        data_write_shard(a->shard_tokens ? path : a->out, ids.id + from, count);
    }
    if (a->tokenizer_out) bpe_write_llmc_tokenizer(&bpe, a->tokenizer_out);
    printf("encode: %d input%s, %zu document%s, %zu bytes -> %zu tokens (%.2f bytes a token, end-of-text tokens "
           "included) in %.3f s: %.2f MB/s\n", a->n_inputs, a->n_inputs == 1 ? "" : "s", docs, docs == 1 ? "" : "s",
           bytes, ids.n, ids.n ? (double)bytes / (double)ids.n : 0.0, seconds, seconds > 0 ? bytes / seconds / 1e6 : 0.0);
    if (a->shard_tokens) {
        shard_name(path, sizeof path, a->out, 0);
        printf("wrote %d shard%s of up to %ld tokens: %s", n_shards, n_shards == 1 ? "" : "s", a->shard_tokens, path);
        if (n_shards > 1) { shard_name(path, sizeof path, a->out, n_shards - 1); printf(" .. %s", path); }
        printf("\n");
    } else {
        printf("wrote %s\n", a->out);
    }
    if (a->tokenizer_out) printf("wrote %s (%d tokens, end of text %d)\n", a->tokenizer_out, bpe.n_tokens, bpe.eot);
    id_list_free(&ids);
    bpe_encoder_free(&enc);
    bpe_free(&bpe);
}

// ---- train ----------------------------------------------------------------------------------------

static void train(const Args *a) {
    check_inputs(a->input, a->n_inputs, "input");
    struct stat st;                      // the folder, or the one it will be created in, is writable
    int exists = stat(a->out_dir, &st) == 0;
    if (exists) CHECK(S_ISDIR(st.st_mode) && access(a->out_dir, W_OK) == 0, "--out-dir %s is %s", a->out_dir,
                      S_ISDIR(st.st_mode) ? "a folder that is not writable" : "a file, not a folder");
    else check_writable_folder(a->out_dir, "--out-dir");
    unsigned char **text = xmalloc((size_t)a->n_inputs * sizeof *text);
    size_t *len = xmalloc((size_t)a->n_inputs * sizeof *len), bytes = 0;
    for (int i = 0; i < a->n_inputs; i++) { text[i] = bpe_read_file(a->input[i], "input", &len[i]); bytes += len[i]; }
    char what[4200];
    snprintf(what, sizeof what, "the corpus (%s%s)", a->input[0], a->n_inputs > 1 ? " and the other inputs" : "");
    double t0 = now_seconds();
    Bpe bpe;
    bpe_train(&bpe, (const unsigned char *const *)text, len, a->n_inputs, (int)a->vocab_size, what);
    double seconds = now_seconds() - t0;
    if (!exists) CHECK(mkdir(a->out_dir, 0777) == 0, "--out-dir %s cannot be created: %s", a->out_dir, strerror(errno));
    char path[3][4200];
    const char *names[3] = { "encoder.json", "vocab.bpe", "tokenizer.bin" };
    for (int k = 0; k < 3; k++) snprintf(path[k], sizeof path[k], "%s/%s", a->out_dir, names[k]);
    bpe_write_encoder_json(&bpe, path[0]);
    bpe_write_merges(&bpe, path[1]);
    bpe_write_llmc_tokenizer(&bpe, path[2]);
    printf("train: %zu bytes -> %d tokens (%d merges, end of text %d) in %.3f s: %.2f MB/s\n", bytes, bpe.n_tokens,
           bpe.n_merges, bpe.eot, seconds, seconds > 0 ? bytes / seconds / 1e6 : 0.0);
    printf("wrote %s, %s, %s\n", path[0], path[1], path[2]);
    for (int i = 0; i < a->n_inputs; i++) free(text[i]);
    free(text);
    free(len);
    bpe_free(&bpe);
}

// ---- decode ---------------------------------------------------------------------------------------

static int32_t get_le32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

// Opens an llm.c uint16 shard with its header and size checked; *ntok receives its token count.
static FILE *open_shard(const char *path, int32_t *ntok) {
    FILE *f = fopen(path, "rb");
    CHECK(f, "cannot open the shard %s: %s", path, strerror(errno));
    struct stat st;
    CHECK(fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode), "the shard %s is not a regular file", path);
    unsigned char h[SHARD_HEADER_BYTES];
    size_t got = fread(h, 1, sizeof h, f);
    int32_t magic = got >= 4 ? get_le32(h) : 0;
    CHECK(magic != LLAMA3_SHARD_MAGIC, "%s is a Llama-3 shard (uint32 tokens, magic %d); ./tokenize decodes GPT-2-style "
          "uint16 shards (magic %d)", path, LLAMA3_SHARD_MAGIC, SHARD_MAGIC);
    CHECK(magic == SHARD_MAGIC, "%s is not an llm.c token shard (its first 4 bytes are not the magic %d); pass the "
          "shards ./tokenize encode wrote", path, SHARD_MAGIC);
    CHECK(got == sizeof h, "the shard %s is truncated: %zu bytes, less than the %d-byte header", path, got,
          SHARD_HEADER_BYTES);
    CHECK(get_le32(h + 4) == 1, "the shard %s has version %d; ./tokenize decodes version 1 (uint16 tokens)", path,
          (int)get_le32(h + 4));
    *ntok = get_le32(h + 8);
    CHECK(*ntok >= 0, "the shard %s declares %d tokens", path, (int)*ntok);
    long long want = SHARD_HEADER_BYTES + 2LL * *ntok;
    CHECK((long long)st.st_size >= want, "the shard %s is truncated: its header says %d tokens (%lld bytes) but the file "
          "has %lld bytes", path, (int)*ntok, want, (long long)st.st_size);
    CHECK((long long)st.st_size == want, "the shard %s is %lld bytes longer than its %d tokens; the file is damaged",
          path, (long long)st.st_size - want, (int)*ntok);
    return f;
}

// Reads the shard's tokens in chunks; with out == NULL only checks them against the tokenizer.
static void decode_shard(const char *path, const Tokenizer *tok, const char *tok_path, FILE *out) {
    int32_t ntok;
    FILE *f = open_shard(path, &ntok);
    unsigned char buf[1 << 16];
    for (int32_t i = 0; i < ntok;) {
        size_t want = (size_t)(ntok - i) < sizeof buf / 2 ? (size_t)(ntok - i) : sizeof buf / 2;
        CHECK(fread(buf, 2, want, f) == want, "error while reading the shard %s at token %d", path, (int)i);
        for (size_t k = 0; k < want; k++, i++) {
            int t = buf[2 * k] | buf[2 * k + 1] << 8;
            CHECK(t < tok->n, "the shard %s has token %d at index %d, but the tokenizer %s has %d tokens; decode with the "
                  "tokenizer the shard was made with", path, t, (int)i, tok_path, tok->n);
            if (out && t != tok->eot) fwrite(tok->piece[t], 1, (size_t)tok->piece_len[t], out);
        }
    }
    fclose(f);
}

static void decode(const Args *a) {
    check_inputs(a->input, a->n_inputs, "shard");
    Tokenizer tok;
    tokenizer_load(a->tokenizer, &tok);
    for (int i = 0; i < a->n_inputs; i++) decode_shard(a->input[i], &tok, a->tokenizer, NULL);   // all checked first
    for (int i = 0; i < a->n_inputs; i++) decode_shard(a->input[i], &tok, a->tokenizer, stdout);
    CHECK(fflush(stdout) == 0 && !ferror(stdout), "could not write the decoded text to stdout: %s", strerror(errno));
    tokenizer_free(&tok);
}

int main(int argc, char **argv) {
    Command cmd;
    Args a;
    parse(argc, argv, &cmd, &a);
    if (cmd == CMD_ENCODE) encode(&a);
    else if (cmd == CMD_TRAIN) train(&a);
    else decode(&a);
    free(a.input);
    return 0;
}
