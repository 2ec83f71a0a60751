// dataset/data.c: token sets (a file, a folder or a glob of byte files or llm.c shards) checked at
// opening and read in ranges, the train/validation split, the byte and llm.c tokenizers, and the
// shard writer. See dataset/data.h for the contract.
//
// All multi-byte integers in files are little-endian and are assembled byte by byte, so the code
// is correct on any host. Every failure exits through CHECK with a sentence naming the file.

#include "dataset/data.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/atomicfile.h"
#include "util/common.h"

enum {
    TOKENIZER_MAGIC = 20240328,
    HEADER_INTS = 256,
    HEADER_BYTES = HEADER_INTS * 4,
    TOKENIZER_MAX_PIECES = 1 << 24,
};

static int32_t get_le32(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    return (int32_t)u;  // two's complement on every platform gcc/clang target
}

static void put_le32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u & 0xff);
    p[1] = (unsigned char)((u >> 8) & 0xff);
    p[2] = (unsigned char)((u >> 16) & 0xff);
    p[3] = (unsigned char)((u >> 24) & 0xff);
}

static void *xrealloc_checked(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    CHECK(q, "out of memory growing a buffer to %zu bytes while reading data; use a smaller file", n);
    return q;
}

// ---- token sets -------------------------------------------------------------------------------

// The kinds of token file: how the tokens are stored and what a model trained on them gets.
static const struct {
    const char *name;
    int32_t magic, version;  // shards only (bytes have no header)
    int width;               // bytes per token
    int vocab, eot;
} KINDS[] = {
    [DATA_BYTES] = { "bytes", 0, 0, 1, 256, -1 },
    [DATA_GPT2] = { "llm.c GPT-2 shards (uint16)", 20240520, 1, 2, 50257, 50256 },
    [DATA_LLAMA3] = { "llm.c Llama-3 shards (uint32)", 20240801, 7, 4, 128256, 128000 },
};

const char *data_kind_name(DataKind kind) { return KINDS[kind].name; }

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

static int64_t header_bytes(DataKind kind) { return kind == DATA_BYTES ? 0 : HEADER_BYTES; }

// Checks one file's header and size: its kind and token count. A byte file is any file that does
// not begin with a shard magic number.
static DataKind open_file(const char *path, uint64_t *ntok) {
    struct stat sb;
    int err = stat(path, &sb) == 0 ? 0 : errno;
    CHECK(!err, "cannot open data file %s: %s; check the path and its permissions", path, strerror(err));
    // before opening it: a named pipe would block the open
    CHECK(S_ISREG(sb.st_mode), "data file %s is not a regular file (a folder, a pipe or a device); the tokens are "
          "read from it during training, so give a file", path);
    FILE *f = fopen(path, "rb");
    err = errno;
    CHECK(f, "cannot open data file %s: %s; check the path and its permissions", path, strerror(err));
    unsigned char h[HEADER_BYTES];
    size_t len = fread(h, 1, sizeof h, f);
    fclose(f);
    uint64_t size = (uint64_t)sb.st_size;
    CHECK(size > 0, "data file %s is empty; pass a file with text or an llm.c token shard", path);
    DataKind kind = DATA_BYTES;
    for (int k = DATA_GPT2; k <= DATA_LLAMA3; k++)
        if (len >= 4 && get_le32(h) == KINDS[k].magic) kind = (DataKind)k;
    if (kind == DATA_BYTES) { *ntok = size; return kind; }
    CHECK(size >= HEADER_BYTES && len == HEADER_BYTES,
          "token shard %s is truncated: it has %llu bytes, less than the %d-byte header; regenerate the shard",
          path, (unsigned long long)size, HEADER_BYTES);
    int32_t version = get_le32(h + 4), n = get_le32(h + 8);
    CHECK(version == KINDS[kind].version,
          "token shard %s has magic %d and version %d, but that magic goes with version %d (%s); regenerate "
          "it with llm.c's data scripts", path, (int)KINDS[kind].magic, (int)version, (int)KINDS[kind].version,
          KINDS[kind].name);
    CHECK(n > 0, "token shard %s declares %d tokens in its header; it must hold at least one token", path, (int)n);
    uint64_t want = HEADER_BYTES + (uint64_t)KINDS[kind].width * (uint64_t)n;
    CHECK(size >= want, "token shard %s is truncated: its header says %d tokens (%llu bytes) but the file has only "
          "%llu bytes; regenerate or re-download the shard", path, (int)n, (unsigned long long)want,
          (unsigned long long)size);
    CHECK(size == want, "token shard %s has %llu bytes after the %d tokens its header declares; the file is "
          "corrupt, regenerate the shard", path, (unsigned long long)(size - want), (int)n);
    *ntok = (uint64_t)n;
    return kind;
}

void data_open_files(const char *const *paths, int n, TokenSet *out) {
    CHECK(paths && n > 0 && out, "data_open_files needs at least one file and an output struct");
    memset(out, 0, sizeof *out);
    out->files = xcalloc((size_t)n, sizeof(TokenFile));
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        DataKind kind = open_file(paths[i], &out->files[i].n);
        CHECK(i == 0 || kind == out->kind, "data file %s holds %s but %s holds %s; the files of one data set "
              "must all be of one kind", paths[0], KINDS[out->kind].name, paths[i], KINDS[kind].name);
        out->kind = kind;
        out->files[i].path = copy_string(paths[i]);
        out->files[i].first = total;
        out->n_files = i + 1;
        total += out->files[i].n;
    }
    out->n = total;
    out->vocab_size = KINDS[out->kind].vocab;
    out->eot = KINDS[out->kind].eot;
    out->limit = out->vocab_size;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// The regular files of a folder whose names do not start with '.', as "dir/name", sorted.
static char **list_folder(const char *dir, int *count) {
    DIR *d = opendir(dir);
    int err = errno;
    CHECK(d, "cannot read the data folder %s: %s", dir, strerror(err));
    char **names = NULL;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = xmalloc(len);
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) { free(path); continue; }
        if (n == cap) names = xrealloc_checked(names, sizeof(char *) * (size_t)(cap = cap ? 2 * cap : 16));
        names[n++] = path;
    }
    closedir(d);
    CHECK(n > 0, "the data folder %s holds no files (names starting with '.' and sub-folders are skipped); put the "
          "shards there, or give a file or a quoted glob such as '%s/*.bin'", dir, dir);
    qsort(names, (size_t)n, sizeof(char *), by_name);
    *count = n;
    return names;
}

// The files a glob pattern matches, sorted by name (byte order, whatever the locale).
static char **expand_glob(const char *pattern, int *count) {
    glob_t g;
    int r = glob(pattern, 0, NULL, &g);
    size_t n = r == 0 ? g.gl_pathc : 0;
    char **names = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) names[i] = copy_string(g.gl_pathv[i]);
    if (r == 0) globfree(&g);   // before any CHECK: glob's memory is not ours to track
    CHECK(r != GLOB_NOSPACE, "out of memory expanding the data pattern %s", pattern);
    CHECK(n > 0, "the data pattern %s matches no file; check the folder and the pattern (quote it, so that the "
          "shell passes it to ./train whole)", pattern);
    CHECK(n <= INT32_MAX, "the data pattern %s matches %zu files, more than this program reads", pattern, n);
    qsort(names, n, sizeof(char *), by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        CHECK(stat(names[i], &sb) != 0 || !S_ISDIR(sb.st_mode), "the data pattern %s matches the folder %s; a "
              "pattern must match files only (for example '%s/*.bin')", pattern, names[i], names[i]);
    }
    *count = (int)n;
    return names;
}

void data_open(const char *spec, TokenSet *out) {
    CHECK(spec && out, "data_open needs a file, folder or pattern and an output struct (got NULL)");
    struct stat sb;
    int exists = stat(spec, &sb) == 0, n = 1;
    char **names = NULL;
    if (exists && S_ISDIR(sb.st_mode)) names = list_folder(spec, &n);
    else if (!exists && strpbrk(spec, "*?[")) names = expand_glob(spec, &n);
    if (!names) { data_open_files(&spec, 1, out); return; }
    data_open_files((const char *const *)names, n, out);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

void data_from_memory(const int *tokens, size_t n, int vocab_size, int eot, const char *name, TokenSet *out) {
    CHECK(out && name && (tokens || n == 0), "data_from_memory needs tokens, a name and an output struct");
    for (size_t i = 0; i < n; i++)
        CHECK(tokens[i] >= 0 && tokens[i] < vocab_size, "%s: token %d at index %zu is outside [0, %d)", name,
              tokens[i], i, vocab_size);
    memset(out, 0, sizeof *out);
    out->files = xcalloc(1, sizeof(TokenFile));
    out->files[0] = (TokenFile){ copy_string(name), n, 0 };
    out->n_files = 1;
    out->memory = xmalloc(sizeof(int) * (n ? n : 1));
    memcpy(out->memory, tokens, sizeof(int) * n);
    out->kind = DATA_BYTES;
    out->n = n;
    out->vocab_size = vocab_size;
    out->eot = eot;
    out->limit = vocab_size;
}

void data_close(TokenSet *s) {
    if (!s) return;
    for (int i = 0; i < s->n_files; i++) free(s->files[i].path);
    free(s->files);
    free(s->memory);
    memset(s, 0, sizeof *s);
}

const TokenFile *data_file_of(const TokenSet *s, uint64_t index, uint64_t *offset) {
    uint64_t at = s->begin + index;
    int lo = 0, hi = s->n_files - 1;          // the last file whose first token is <= at
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (s->files[mid].first <= at) lo = mid; else hi = mid - 1;
    }
    if (offset) *offset = at - s->files[lo].first;
    return &s->files[lo];
}

// One token's check: v must lie in [0, s->limit).
static void check_token(const TokenSet *s, const TokenFile *f, uint64_t offset, int64_t v) {
    CHECK(v >= 0 && v < s->limit, "%s: token id %lld at index %llu is outside the model's vocabulary (0..%lld); use "
          "data made with the model's tokenizer", f->path, (long long)v, (unsigned long long)offset,
          (long long)s->limit - 1);
}

// Tokens [offset, offset + count) of one file: pread in chunks of RAW bytes, decoded little-endian.
static void read_file_tokens(const TokenSet *s, const TokenFile *tf, uint64_t offset, size_t count, int *out) {
    enum { RAW = 1 << 16 };
    unsigned char raw[RAW];
    int width = KINDS[s->kind].width;
    FILE *f = fopen(tf->path, "rb");
    int err = errno;
    CHECK(f, "cannot open data file %s: %s (it was there at start-up)", tf->path, strerror(err));
    for (size_t done = 0; done < count;) {
        size_t k = count - done < RAW / (size_t)width ? count - done : RAW / (size_t)width;
        off_t at = (off_t)(header_bytes(s->kind) + (int64_t)(offset + done) * width);
        ssize_t got = pread(fileno(f), raw, k * (size_t)width, at);
        err = errno;
        CHECK(got == (ssize_t)(k * (size_t)width), "data file %s: cannot read tokens %llu..%llu: %s; it held %llu "
              "tokens at start-up: was it changed during the run?", tf->path, (unsigned long long)(offset + done),
              (unsigned long long)(offset + done + k - 1), got < 0 ? strerror(err) : "the file ends early",
              (unsigned long long)tf->n);
        for (size_t i = 0; i < k; i++) {
            const unsigned char *p = raw + i * (size_t)width;
            int64_t v = width == 1 ? p[0] : width == 2 ? p[0] | p[1] << 8 : (int64_t)(uint32_t)get_le32(p);
            check_token(s, tf, offset + done + i, v);
            out[done + i] = (int)v;
        }
        done += k;
    }
    fclose(f);
}

void data_read(const TokenSet *s, uint64_t index, size_t count, int *out) {
    CHECK(index <= s->n && count <= s->n - index, "internal: data_read of tokens %llu..+%zu from a set of %llu",
          (unsigned long long)index, count, (unsigned long long)s->n);
    while (count > 0) {
        uint64_t offset;
        const TokenFile *tf = data_file_of(s, index, &offset);
        size_t k = tf->n - offset < count ? (size_t)(tf->n - offset) : count;
        if (s->memory) {
            for (size_t i = 0; i < k; i++) {
                check_token(s, tf, offset + i, s->memory[offset + i]);
                out[i] = s->memory[offset + i];
            }
        } else {
            read_file_tokens(s, tf, offset, k, out);
        }
        out += k; index += k; count -= k;
    }
}

void data_check_vocab(TokenSet *s, int vocab) {
    s->limit = vocab;
    int64_t largest = s->kind == DATA_BYTES && !s->memory ? 255 : s->kind == DATA_GPT2 ? 65535 : INT64_MAX;
    if (largest < vocab) return;              // no token of this kind can be outside
    enum { CHUNK = 1 << 16 };
    int *buf = xmalloc(sizeof(int) * CHUNK);
    for (uint64_t i = 0; i < s->n; i += CHUNK) data_read(s, i, s->n - i < CHUNK ? (size_t)(s->n - i) : CHUNK, buf);
    free(buf);
}

void data_split(const TokenSet *all, double val_frac, TokenSet *train, TokenSet *val) {
    CHECK(all && train && val, "data_split needs the data and two output structs (got NULL)");
    CHECK(val_frac >= 0.0 && val_frac <= 0.5,
          "the validation fraction %g is outside [0, 0.5]; pass a value such as 0.1", val_frac);
    uint64_t n_val = (uint64_t)((double)all->n * val_frac);  // floor for non-negative values
    if (n_val > all->n) n_val = all->n;
    *train = *all;
    train->n = all->n - n_val;
    *val = *all;
    val->begin = all->begin + train->n;
    val->n = n_val;
}

void tokenizer_bytes(Tokenizer *t) {
    CHECK(t, "tokenizer_bytes needs an output struct (got NULL)");
    t->n = 256;
    t->eot = -1;
    t->piece = xmalloc(256 * sizeof(char *));
    t->piece_len = xmalloc(256 * sizeof(int));
    for (int i = 0; i < 256; i++) {
        t->piece[i] = xmalloc(2);
        t->piece[i][0] = (char)(unsigned char)i;
        t->piece[i][1] = '\0';
        t->piece_len[i] = 1;
    }
}

void tokenizer_load(const char *path, Tokenizer *t) {
    CHECK(path && t, "tokenizer_load needs a file path and an output struct (got NULL)");
    FILE *f = fopen(path, "rb");
    int err = errno;
    CHECK(f, "cannot open tokenizer file %s: %s; check the path (llm.c writes gpt2_tokenizer.bin)", path,
          strerror(err));
    unsigned char h[HEADER_BYTES];
    memset(h, 0, sizeof h);
    size_t got = fread(h, 1, sizeof h, f);
    int32_t magic = get_le32(h);
    CHECK(magic == TOKENIZER_MAGIC,
          "%s is not an llm.c tokenizer file (magic %d, expected %d); pass the gpt2_tokenizer.bin "
          "written by llm.c",
          path, (int)magic, TOKENIZER_MAGIC);
    CHECK(got == sizeof h,
          "tokenizer file %s is truncated: it has %zu bytes, less than the %d-byte header; "
          "regenerate it with llm.c",
          path, got, HEADER_BYTES);
    int32_t version = get_le32(h + 4), n = get_le32(h + 8);
    CHECK(version == 1 || version == 2,
          "tokenizer file %s has version %d, but only versions 1 and 2 are supported; regenerate it with llm.c",
          path, (int)version);
    CHECK(n > 0 && n <= TOKENIZER_MAX_PIECES,
          "tokenizer file %s declares %d pieces, outside [1, %d]; the file is corrupt, regenerate it", path,
          (int)n, TOKENIZER_MAX_PIECES);
    int eot = -1;
    if (version == 2) {
        eot = (int)get_le32(h + 12);
        CHECK(eot >= -1 && eot < n,
              "tokenizer file %s names end-of-text id %d, outside [0, %d); the file is corrupt, regenerate it",
              path, eot, (int)n);
    }
    t->n = (int)n;
    t->eot = eot;
    t->piece = xcalloc((size_t)n, sizeof(char *));
    t->piece_len = xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) {
        unsigned char len;
        got = fread(&len, 1, 1, f);
        CHECK(got == 1,
              "tokenizer file %s is truncated: it ends before the length of piece %d of %d; "
              "regenerate it with llm.c",
              path, i, (int)n);
        t->piece[i] = xmalloc((size_t)len + 1);
        got = fread(t->piece[i], 1, len, f);
        CHECK(got == len,
              "tokenizer file %s is truncated: piece %d of %d should have %d bytes but only %zu remain; "
              "regenerate it with llm.c",
              path, i, (int)n, (int)len, got);
        t->piece[i][len] = '\0';
        t->piece_len[i] = (int)len;
    }
    err = errno;
    int bad = ferror(f);
    fclose(f);
    CHECK(!bad, "error while reading tokenizer file %s: %s", path, strerror(err));
}

int tokenizer_encode(const Tokenizer *t, const char *text, int *out, int cap) {
    CHECK(t && t->n > 0 && t->piece && t->piece_len, "tokenizer_encode needs a loaded tokenizer");
    CHECK(text, "tokenizer_encode needs a prompt text (got NULL)");
    CHECK(cap >= 0 && (out || cap == 0), "tokenizer_encode needs an output array (cap %d)", cap);
    size_t len = strlen(text), pos = 0;
    int count = 0;
    while (pos < len && count < cap) {
        const unsigned char c = (unsigned char)text[pos];
        size_t rest = len - pos;
        int best = -1, best_len = 0;
        for (int i = 0; i < t->n; i++) {
            int pl = t->piece_len[i];
            if (pl <= best_len || (size_t)pl > rest) continue;
            if ((unsigned char)t->piece[i][0] != c) continue;
            if (memcmp(t->piece[i], text + pos, (size_t)pl) == 0) { best = i; best_len = pl; }
        }
        CHECK(best >= 0,
              "the prompt has byte 0x%02x at offset %zu that no tokenizer piece matches; remove it from "
              "the prompt or use a tokenizer that covers all bytes",
              (unsigned)c, pos);
        out[count++] = best;
        pos += (size_t)best_len;
    }
    return count;
}

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    if (t->piece)
        for (int i = 0; i < t->n; i++) free(t->piece[i]);
    free(t->piece);
    free(t->piece_len);
    memset(t, 0, sizeof *t);
}

void data_write_shard(const char *path, const int *tokens, size_t n) {
    CHECK(path, "data_write_shard needs an output file path (got NULL)");
    CHECK(tokens || n == 0, "data_write_shard for %s needs a token array (got NULL)", path);
    CHECK(n <= (size_t)INT32_MAX, "cannot write %zu tokens to shard %s: the llm.c header holds at most %d",
          n, path, (int)INT32_MAX);
    for (size_t i = 0; i < n; i++)
        CHECK(tokens[i] >= 0 && tokens[i] <= 65535,
              "cannot write token %d at index %zu to shard %s: shard tokens are uint16, so every token "
              "must be in [0, 65535]",
              tokens[i], i, path);

    AtomicFile af;
    af_open(&af, path, "token shard", "wb");
    unsigned char h[HEADER_BYTES];
    memset(h, 0, sizeof h);
    put_le32(h, KINDS[DATA_GPT2].magic);
    put_le32(h + 4, KINDS[DATA_GPT2].version);
    put_le32(h + 8, (int32_t)n);
    af_write(&af, h, sizeof h);

    enum { CHUNK = 4096 };
    unsigned char buf[2 * CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? n - i : CHUNK;
        for (size_t j = 0; j < m; j++) {
            unsigned v = (unsigned)tokens[i + j];
            buf[2 * j] = (unsigned char)(v & 0xff);
            buf[2 * j + 1] = (unsigned char)(v >> 8);
        }
        af_write(&af, buf, 2 * m);
    }
    af_commit(&af);
}
