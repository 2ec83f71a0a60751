// tests/test_safetensors.c: the safetensors writer and reader.
// Round trip of F32, I32, scalar and empty tensors with metadata; header layout (8-byte aligned
// data, contiguous offsets, no .tmp left behind); hand-written files from "another writer"
// (unaligned offsets, escapes, surrogate pairs); and rejection of broken files, each checked in a
// forked child that must exit 1 with a message naming the file.
#include "util/common.h"
#include "formats/safetensors.h"
#include "tests/testutil.h"

#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[64];   // scratch directory for this run

static void path_in_dir(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (!fp) { *size = 0; return NULL; }
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = xmalloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, fp);
    fclose(fp);
    b[got] = 0;
    *size = got;
    return b;
}

static void spit(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    CHECK(fp, "test: cannot create %s", path);
    CHECK(fwrite(data, 1, n, fp) == n, "test: cannot write %s", path);
    fclose(fp);
}

// Writes a safetensors file from a header text and raw data, the way another writer might.
static void write_raw(const char *path, const char *header, const void *data, size_t nd) {
    size_t hl = strlen(header);
    unsigned char *b = xmalloc(8 + hl + nd);
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)hl >> (8 * k));
    memcpy(b + 8, header, hl);
    if (nd) memcpy(b + 8 + hl, data, nd);
    spit(path, b, 8 + hl + nd);
    free(b);
}

// Runs st_read(path) in a child with stderr captured. Returns the child's exit status (-1 if it
// did not exit normally) and fills msg with what it printed.
static int read_in_child(const char *path, char *msg, size_t cap) {
    char errpath[128];
    path_in_dir(errpath, sizeof errpath, "child_stderr.txt");
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "test: fork failed");
    if (pid == 0) {
        FILE *e = freopen(errpath, "w", stderr);
        if (!e) _exit(99);
        setvbuf(stderr, NULL, _IONBF, 0);   // freopen may make it buffered; keep every byte
        StFile f;
        st_read(path, &f);
        st_file_free(&f);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    size_t n;
    unsigned char *b = slurp(errpath, &n);
    snprintf(msg, cap, "%s", b ? (char *)b : "");
    free(b);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void expect_rejected(const char *path, const char *also, const char *what) {
    char msg[2048];
    int rc = read_in_child(path, msg, sizeof msg);
    EXPECT(rc == 1, "%s: child exit status %d, expected 1", what, rc);
    EXPECT(strstr(msg, path) != NULL, "%s: message does not name the file: %s", what, msg);
    if (also) EXPECT(strstr(msg, also) != NULL, "%s: message does not mention '%s': %s", what, also, msg);
}

static void test_round_trip(void) {
    char path[128], tmp[140];
    path_in_dir(path, sizeof path, "rt.safetensors");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);

    float a[6] = {1.5f, -2.25f, 3.0e-8f, 1.0e30f, -0.0f, 42.0f};
    int64_t sa[2] = {2, 3};
    int32_t b[4] = {0, -1, 2147483647, -2147483647 - 1};
    int64_t sb[1] = {4};
    float sc = 3.25f;
    int32_t si = -7;
    int64_t se[2] = {0, 3};
    float c[24];
    for (int k = 0; k < 24; k++) c[k] = (float)k * 0.5f - 3.0f;
    int64_t sc4[4] = {1, 2, 3, 4};
    const char *odd = "we\"ird\\name\n\x01/é";
    const char *meta = "{\"format\":\"pt\",\"config\":\"{\\\"n_layer\\\":2,\\\"layer_pe\\\":[\\\"rope\\\"]}\"}";

    StWriter w;
    st_writer_init(&w);
    st_add_f32(&w, "a.weight", a, 2, sa);
    st_add_i32(&w, "tokens", b, 1, sb);
    st_add_f32(&w, "loss", &sc, 0, NULL);
    st_add_i32(&w, "step", &si, 0, NULL);
    st_add_f32(&w, "empty", NULL, 2, se);
    st_add_f32(&w, "c4", c, 4, sc4);
    st_add_f32(&w, odd, a, 1, sb);
    a[0] = 99.0f;   // data is copied at add time
    st_set_metadata(&w, meta);
    st_write(&w, path);
    st_writer_free(&w);
    a[0] = 1.5f;

    EXPECT(file_exists(path), "written file %s missing", path);
    EXPECT(!file_exists(tmp), "temporary file %s left behind", tmp);

    // Layout: data section 8-byte aligned, offsets contiguous, file ends where the data ends.
    size_t size;
    unsigned char *raw = slurp(path, &size);
    uint64_t hl = 0;
    for (int k = 0; k < 8; k++) hl |= (uint64_t)raw[k] << (8 * k);
    EXPECT((8 + hl) % 8 == 0, "data section starts at %llu, not 8-byte aligned", (unsigned long long)(8 + hl));
    size_t data_bytes = (6 + 4 + 1 + 1 + 0 + 24 + 4) * 4;
    EXPECT(size == 8 + hl + data_bytes, "file is %zu bytes, expected %llu", size,
           (unsigned long long)(8 + hl + data_bytes));
    EXPECT(hl > 0 && raw[8] == '{', "header does not start with '{'");
    // insertion order in the header
    const char *h = (const char *)raw + 8;
    const char *pa = strstr(h, "\"a.weight\""), *pt = strstr(h, "\"tokens\""), *pl = strstr(h, "\"loss\"");
    EXPECT(pa && pt && pl && pa < pt && pt < pl, "tensors not in insertion order in the header");
    EXPECT(strstr(h, "\"data_offsets\":[0,24]") != NULL, "first tensor's offsets are not [0,24]");
    EXPECT(strstr(h, "\"data_offsets\":[24,40]") != NULL, "second tensor's offsets are not [24,40]");
    EXPECT(strstr(h, "\"shape\":[]") != NULL, "scalar shape is not []");
    free(raw);

    StFile f;
    st_read(path, &f);
    EXPECT(f.n == 7, "read %d tensors, expected 7", f.n);
    if (f.n == 7) {
        EXPECT(strcmp(f.t[0].name, "a.weight") == 0 && strcmp(f.t[1].name, "tokens") == 0 &&
               strcmp(f.t[2].name, "loss") == 0 && strcmp(f.t[6].name, odd) == 0,
               "names or order changed in the round trip");
    }
    const StTensor *t = st_find(&f, "a.weight");
    EXPECT(t && t->dtype == ST_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6,
           "a.weight: dtype or shape wrong");
    if (t) EXPECT(memcmp(t->data, a, sizeof a) == 0, "a.weight: data differs (bitwise)");
    t = st_find(&f, "tokens");
    EXPECT(t && t->dtype == ST_I32 && t->ndim == 1 && t->shape[0] == 4 && t->numel == 4, "tokens: dtype or shape wrong");
    if (t) EXPECT(memcmp(t->data, b, sizeof b) == 0, "tokens: data differs");
    t = st_find(&f, "loss");
    EXPECT(t && t->dtype == ST_F32 && t->ndim == 0 && t->numel == 1, "loss: not an F32 scalar");
    if (t) EXPECT(((float *)t->data)[0] == 3.25f, "loss: value %g", ((float *)t->data)[0]);
    t = st_find(&f, "step");
    EXPECT(t && t->dtype == ST_I32 && t->ndim == 0 && t->numel == 1, "step: not an I32 scalar");
    if (t) EXPECT(((int32_t *)t->data)[0] == -7, "step: value %d", ((int32_t *)t->data)[0]);
    t = st_find(&f, "empty");
    EXPECT(t && t->ndim == 2 && t->shape[0] == 0 && t->shape[1] == 3 && t->numel == 0, "empty: shape wrong");
    t = st_find(&f, "c4");
    EXPECT(t && t->ndim == 4 && t->shape[3] == 4 && t->numel == 24, "c4: shape wrong");
    if (t) EXPECT(memcmp(t->data, c, sizeof c) == 0, "c4: data differs");
    t = st_find(&f, odd);
    EXPECT(t && t->numel == 4, "the tensor with escaped characters in its name was not found");
    EXPECT(st_find(&f, "absent") == NULL, "st_find found a tensor that does not exist");
    EXPECT(f.metadata_json && strcmp(f.metadata_json, meta) == 0, "metadata changed: %s",
           f.metadata_json ? f.metadata_json : "(null)");
    st_file_free(&f);

    // No metadata, no tensors: still a valid file.
    StWriter w2;
    st_writer_init(&w2);
    st_write(&w2, path);
    st_writer_free(&w2);
    st_read(path, &f);
    EXPECT(f.n == 0 && f.metadata_json == NULL, "empty file read back %d tensors", f.n);
    st_file_free(&f);
}

static void test_escape(void) {
    char buf[64];
    size_t n = st_json_escape(buf, sizeof buf, "a\"b\\c\nd\te\x01");
    EXPECT(strcmp(buf, "a\\\"b\\\\c\\nd\\te\\u0001") == 0, "escape gave %s", buf);
    EXPECT(n == strlen("a\\\"b\\\\c\\nd\\te\\u0001"), "escape returned %zu", n);
    n = st_json_escape(buf, 4, "abcdef");
    EXPECT(n == 6 && strcmp(buf, "abc") == 0, "truncated escape gave '%s' (%zu)", buf, n);
    n = st_json_escape(NULL, 0, "x\"y");
    EXPECT(n == 4, "size query returned %zu, expected 4", n);
    n = st_json_escape(buf, sizeof buf, "héllo");
    EXPECT(strcmp(buf, "héllo") == 0 && n == strlen("héllo"), "UTF-8 was not passed through: %s", buf);
}

// A file from another writer: unaligned offsets, tensors out of order in the data, whitespace,
// escapes and a surrogate pair in names, metadata with nested values.
static void test_foreign_file(void) {
    char path[128];
    path_in_dir(path, sizeof path, "foreign.safetensors");
    const char *header =
        " { \"__metadata__\" : {\"k\" : \"v\\u00e9\", \"n\": [1, 2.5e3, -3, true, null, {\"x\": false}]},\n"
        "  \"b\\u0041\\n\\ud83d\\ude00\" : {\"shape\": [2], \"dtype\": \"I32\", \"data_offsets\": [1, 9]},\n"
        "  \"s\" : {\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[9,13]} }  ";
    unsigned char data[13] = {0xAA};
    int32_t iv[2] = {5, -6};
    float fv = -1.25f;
    memcpy(data + 1, iv, 8);
    memcpy(data + 9, &fv, 4);
    write_raw(path, header, data, sizeof data);
    StFile f;
    st_read(path, &f);
    EXPECT(f.n == 2, "foreign file: %d tensors", f.n);
    const StTensor *t = st_find(&f, "bA\n\xF0\x9F\x98\x80");
    EXPECT(t != NULL, "foreign file: escaped name not decoded");
    if (t) EXPECT(((int32_t *)t->data)[0] == 5 && ((int32_t *)t->data)[1] == -6, "foreign file: I32 data wrong");
    t = st_find(&f, "s");
    EXPECT(t && t->ndim == 0 && ((float *)t->data)[0] == -1.25f, "foreign file: scalar wrong");
    EXPECT(f.metadata_json && f.metadata_json[0] == '{' && strstr(f.metadata_json, "\"x\": false}]}"),
           "foreign file: metadata raw text wrong: %s", f.metadata_json ? f.metadata_json : "(null)");
    st_file_free(&f);

    // an empty tensor name is legal JSON: it must come back as "", not as uninitialised memory
    path_in_dir(path, sizeof path, "emptyname.safetensors");
    write_raw(path, "{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &fv, 4);
    st_read(path, &f);
    EXPECT(f.n == 1 && f.t[0].name && f.t[0].name[0] == 0, "empty tensor name not read as \"\"");
    EXPECT(st_find(&f, "") != NULL, "st_find of the empty name");
    st_file_free(&f);
}

static void test_rejections(void) {
    char good[128], path[128];
    path_in_dir(good, sizeof good, "good.safetensors");
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t s[1] = {8};
    StWriter w;
    st_writer_init(&w);
    st_add_f32(&w, "x", a, 1, s);
    st_add_f32(&w, "y", a, 1, s);
    st_write(&w, good);
    st_writer_free(&w);
    size_t size;
    unsigned char *raw = slurp(good, &size);

    path_in_dir(path, sizeof path, "truncated.safetensors");
    spit(path, raw, size - 5);
    expect_rejected(path, "tensor y has", "truncated data");

    path_in_dir(path, sizeof path, "truncated_header.safetensors");
    spit(path, raw, 20);
    expect_rejected(path, NULL, "truncated inside the header");

    path_in_dir(path, sizeof path, "tiny.safetensors");
    spit(path, raw, 5);
    expect_rejected(path, NULL, "shorter than the length field");

    path_in_dir(path, sizeof path, "biglen.safetensors");
    unsigned char *bad = xmalloc(size);
    memcpy(bad, raw, size);
    uint64_t big = (uint64_t)size;   // larger than what follows the 8-byte field
    for (int k = 0; k < 8; k++) bad[k] = (unsigned char)(big >> (8 * k));
    spit(path, bad, size);
    expect_rejected(path, "header", "header length larger than the file");
    for (int k = 0; k < 8; k++) bad[k] = 0xFF;
    spit(path, bad, size);
    expect_rejected(path, "header", "header length 2^64-1");
    free(bad);
    free(raw);

    float d[4] = {0};
    path_in_dir(path, sizeof path, "dtype.safetensors");
    write_raw(path, "{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", d, 4);
    expect_rejected(path, "tensor w has dtype \"F16\"", "unknown dtype F16");
    write_raw(path, "{\"w\":{\"dtype\":\"Q9\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8);
    expect_rejected(path, "Q9", "unknown dtype Q9");

    path_in_dir(path, sizeof path, "overlap.safetensors");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"q\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", d, 16);
    expect_rejected(path, "tensors p and q overlap", "overlapping tensors");

    path_in_dir(path, sizeof path, "size.safetensors");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d, 16);
    expect_rejected(path, "tensor p spans", "size does not match shape");

    path_in_dir(path, sizeof path, "range.safetensors");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", d, 16);
    expect_rejected(path, "tensor p has data_offsets", "begin after end");

    path_in_dir(path, sizeof path, "json.safetensors");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", d, 8);
    expect_rejected(path, NULL, "unterminated JSON");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", d, 8);
    expect_rejected(path, NULL, "negative shape");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[2]}}", d, 8);
    expect_rejected(path, "data_offsets", "missing data_offsets");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"p\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", d, 16);
    expect_rejected(path, "twice", "duplicate tensor name");
    write_raw(path, "{\"p\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,2],\"data_offsets\":[0,8]}}", d, 8);
    expect_rejected(path, "dimensions", "too many dimensions");
    write_raw(path, "not json at all", d, 8);
    expect_rejected(path, NULL, "not JSON");

    path_in_dir(path, sizeof path, "does_not_exist.safetensors");
    expect_rejected(path, NULL, "missing file");
}

// A write into a directory that does not exist must exit 1 naming the file, leaving nothing.
static void test_write_failure(void) {
    char path[160], errpath[128];
    snprintf(path, sizeof path, "%s/no_such_dir/out.safetensors", g_dir);
    path_in_dir(errpath, sizeof errpath, "child_stderr.txt");
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "test: fork failed");
    if (pid == 0) {
        if (!freopen(errpath, "w", stderr)) _exit(99);
        setvbuf(stderr, NULL, _IONBF, 0);
        StWriter w;
        st_writer_init(&w);
        float x = 1;
        st_add_f32(&w, "x", &x, 0, NULL);
        st_write(&w, path);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    size_t n;
    unsigned char *msg = slurp(errpath, &n);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 1, "failed write: child did not exit 1");
    EXPECT(msg && strstr((char *)msg, path), "failed write: message does not name %s: %s", path, msg ? (char *)msg : "");
    free(msg);
}

static void cleanup_dir(void) {
    static const char *names[] = {
        "rt.safetensors", "foreign.safetensors", "good.safetensors", "truncated.safetensors",
        "truncated_header.safetensors", "tiny.safetensors", "biglen.safetensors", "dtype.safetensors",
        "overlap.safetensors", "size.safetensors", "range.safetensors", "json.safetensors",
        "emptyname.safetensors", "child_stderr.txt",
    };
    char p[160];
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        path_in_dir(p, sizeof p, names[k]);
        remove(p);
    }
    if (rmdir(g_dir) != 0) fprintf(stderr, "test_safetensors: note: %s not removed\n", g_dir);
}

int main(void) {
    const char *tmpdir = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/test_st_XXXXXX", tmpdir && strlen(tmpdir) < 40 ? tmpdir : "/tmp");
    CHECK(mkdtemp(g_dir), "test_safetensors: cannot create a scratch directory %s; set TMPDIR", g_dir);
    test_escape();
    test_round_trip();
    test_foreign_file();
    test_rejections();
    test_write_failure();
    cleanup_dir();
    return test_summary("test_safetensors");
}
