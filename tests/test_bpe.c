// tests/test_bpe.c: dataset/bpe.c and dataset/bpe_train.c without GPT-2's files or node: GPT-2's
// byte alphabet, the Unicode class table, pre-tokenisation on hand-cut examples, the heap merge
// loop against tiktoken's own loop (tests/bpe_naive.h) on thousands of pieces, training's tie
// rule, minimum count and determinism, encode/decode round trips, and the files written then read.
//
//   tests/test_bpe              the checks above
//   tests/test_bpe --gpt2 DIR   GPT-2's encoder.json and vocab.bpe in DIR instead (tests/test_tokenize_ref.sh):
//                               the vocabulary's known ids, and both files written back byte for byte
#include <errno.h>
#include <sys/stat.h>

#include "util/common.h"
#include "dataset/bpe.h"
#include "dataset/data.h"
#include "tests/bpe_naive.h"
#include "tests/testutil.h"

// ---- GPT-2's byte alphabet and the class table --------------------------------------------------

static void test_alphabet(void) {
    int seen[256] = { 0 }, ok = 1;
    for (int i = 0; i < 256; i++) {
        int b = bpe_byte_of_id(i);
        ok &= b >= 0 && b < 256 && !seen[b] && bpe_id_of_byte(b) == i;
        seen[b] = 1;
    }
    EXPECT(ok, "bpe_byte_of_id and bpe_id_of_byte are inverse permutations of 0..255");
    // bytes_to_unicode: '!' is id 0 and itself, the space is id 220 and U+0120, NUL id 188 U+0100,
    // 0x7F U+0121, 0xAD (the soft hyphen) the last, id 255 and U+0143; 0xA1 '¡' id 94 and itself
    EXPECT(bpe_id_of_byte('!') == 0 && bpe_char_of_byte('!') == '!', "'!' is id 0");
    EXPECT(bpe_id_of_byte(' ') == 220 && bpe_char_of_byte(' ') == 0x120, "space is id 220, U+0120");
    EXPECT(bpe_id_of_byte(0) == 188 && bpe_char_of_byte(0) == 0x100, "NUL is id 188, U+0100");
    EXPECT(bpe_char_of_byte(0x7F) == 0x121 && bpe_id_of_byte(0xAD) == 255 && bpe_char_of_byte(0xAD) == 0x143,
           "0x7F is U+0121, 0xAD is id 255 and U+0143");
    EXPECT(bpe_id_of_byte(0xA1) == 94 && bpe_char_of_byte(0xA1) == 0xA1 && bpe_id_of_byte(0xFF) == 187, "0xA1 id 94, 0xFF id 187");
}

static void test_classes(void) {
    int ok = 1;
    for (int i = 0; i < UNICODE_CLASS_RANGE_COUNT; i++) {
        ok &= UNICODE_CLASS_RANGES[i].lo <= UNICODE_CLASS_RANGES[i].hi && UNICODE_CLASS_RANGES[i].hi <= 0x10FFFF;
        if (i) ok &= UNICODE_CLASS_RANGES[i - 1].hi < UNICODE_CLASS_RANGES[i].lo;
    }
    EXPECT(ok, "the class table is sorted and disjoint");
    EXPECT(!strcmp(UNICODE_CLASSES_VERSION, "16.0.0"), "the table is Unicode 16.0.0 (tiktoken's regex crate), not %s",
           UNICODE_CLASSES_VERSION);
    static const struct { uint32_t cp; CharClass cls; const char *what; } cases[] = {
        { 'a', CH_LETTER, "a" }, { 'Z', CH_LETTER, "Z" }, { '7', CH_NUMBER, "7" }, { '_', CH_OTHER, "_" },
        { '\'', CH_OTHER, "apostrophe" }, { '\t', CH_SPACE, "tab" }, { 0x0B, CH_SPACE, "vertical tab" },
        { 0x1C, CH_OTHER, "U+001C (not White_Space)" }, { 0x85, CH_SPACE, "U+0085 NEL" }, { 0xA0, CH_SPACE, "NBSP" },
        { 0xAA, CH_LETTER, "ª" }, { 0xB2, CH_NUMBER, "² (No)" }, { 0xE9, CH_LETTER, "é" }, { 0x301, CH_OTHER, "combining acute (Mn)" },
        { 0x3000, CH_SPACE, "ideographic space" }, { 0x2028, CH_SPACE, "line separator" }, { 0x200B, CH_OTHER, "ZWSP (Cf)" },
        { 0x180E, CH_OTHER, "Mongolian vowel separator (Cf since Unicode 6.3)" }, { 0xFEFF, CH_OTHER, "BOM (Cf)" },
        { 0x660, CH_NUMBER, "Arabic-Indic zero" }, { 0x2164, CH_NUMBER, "Roman numeral five (Nl)" },
        { 0x4E2D, CH_LETTER, "中" }, { 0x1F600, CH_OTHER, "😀" }, { 0x10D50, CH_LETTER, "Garay letter (new in 16.0)" },
        { 0x1E5F1, CH_NUMBER, "Ol Onal digit (new in 16.0)" }, { 0xE000, CH_OTHER, "private use" },
        { 0x10FFFF, CH_OTHER, "the last code point" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        EXPECT(unicode_class(cases[i].cp) == cases[i].cls, "class of U+%04X (%s): got %d, expected %d", (unsigned)cases[i].cp,
               cases[i].what, (int)unicode_class(cases[i].cp), (int)cases[i].cls);
}

// ---- pre-tokenisation ---------------------------------------------------------------------------

// text (n bytes) must cut into the pieces of want, given as one string with '|' between pieces
static void expect_pieces(const char *text, size_t n, const char *want) {
    char got[1024];
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t j = bpe_piece_end((const unsigned char *)text, n, i);
        if (j <= i || j > n) { EXPECT(0, "bpe_piece_end stuck at %zu", i); return; }
        if (i) got[o++] = '|';
        memcpy(got + o, text + i, j - i);
        o += j - i;
        i = j;
    }
    got[o] = 0;
    EXPECT(o == strlen(want) && !memcmp(got, want, o), "pieces of \"%s\": got \"%s\", expected \"%s\"", text, got, want);
}
#define PIECES(text, want) expect_pieces(text, sizeof text - 1, want)

static void test_pieces(void) {
    PIECES("Hello world", "Hello| world");
    PIECES("I'm here, you're not", "I|'m| here|,| you|'re| not");
    PIECES("don't they'll we've I'd", "don|'t| they|'ll| we|'ve| I|'d");
    PIECES("I'M DON'T", "I|'|M| DON|'|T");               // upper case is no contraction
    PIECES("'s 's", "'s| '|s");                              // a space before the apostrophe: punctuation
    PIECES("!'s", "!'|s");                                   // inside a run of punctuation
    PIECES("rock'n'roll", "rock|'|n|'|roll");
    PIECES("12345 678x9", "12345| 678|x|9");
    PIECES("!!! ??", "!!!| ??");
    PIECES("  x", " | x");                                   // the space before a word joins it
    PIECES("a   b", "a|  | b");
    PIECES("a\n\nb", "a|\n|\n|b");                           // \s+(?!\S) then \s+
    PIECES("a\n\n\nb", "a|\n\n|\n|b");
    PIECES("\t\tx", "\t|\t|x");                              // only U+0020 joins the next word
    PIECES("x  \n", "x|  \n");                               // white space at the end stays whole
    PIECES("   ", "   ");
    PIECES(" ", " ");
    PIECES("a \xc2\xa0" "b", "a| |\xc2\xa0|b");              // NBSP is white space, but only U+0020 joins a word
    PIECES("\xc3\xa9t\xc3\xa9 d\xe2\x80\x99" "ete", "\xc3\xa9t\xc3\xa9| d|\xe2\x80\x99|ete");   // été d’ete
    PIECES("e\xcc\x81" "a", "e|\xcc\x81|a");                 // a combining mark (Mn) is "other"
    PIECES("\xe4\xb8\xad\xe6\x96\x87 123", "\xe4\xb8\xad\xe6\x96\x87| 123");
    // not UTF-8: each bad byte is one "other" character
    PIECES("a\xff" "b", "a|\xff|b");
    PIECES(" \xff\xfe x", " \xff\xfe| x");
    PIECES("\xe2\x82" "x", "\xe2\x82|x");                    // a truncated sequence
    PIECES("\xc0\xaf" "a", "\xc0\xaf|a");                    // an overlong '/'
    PIECES("\xe0\x81\x81" "b", "\xe0\x81\x81|b");              // an overlong 'A' is no letter
    PIECES("\xf0\x80\x81\x81" "b", "\xf0\x80\x81\x81|b");
    PIECES("\xed\xa0\x80" "a", "\xed\xa0\x80|a");            // a surrogate
    PIECES("\xf4\x90\x80\x80" "a", "\xf4\x90\x80\x80|a");    // past U+10FFFF
    PIECES("caf\xc3", "caf|\xc3");                           // cut at the end
    PIECES("'\xff" "s", "'\xff|s");
}

// ---- encoding ---------------------------------------------------------------------------------------

// A small vocabulary learned from the embedded corpus, for the checks below.
static void small_vocab(Bpe *b, int size) {
    size_t n;
    char *corpus = data_default_corpus_text(&n);
    const unsigned char *t = (const unsigned char *)corpus;
    bpe_train(b, &t, &n, 1, size, "the embedded corpus");
    free(corpus);
}

static void decode_ids(const Bpe *b, const IdList *ids, unsigned char *out, size_t *n) {
    *n = 0;
    for (size_t i = 0; i < ids->n; i++) {
        size_t len;
        const unsigned char *s = bpe_token(b, ids->id[i], &len);
        memcpy(out + *n, s, len);
        *n += len;
    }
}

// The heap merge loop equals tiktoken's loop, and decoding gives the bytes back, on corpus
// substrings, corrupted substrings, random bytes and long runs.
static void test_merge_loop(void) {
    Bpe b;
    small_vocab(&b, 700);
    BpeEncoder e;
    bpe_encoder_init(&e, &b);
    size_t n;
    char *corpus = data_default_corpus_text(&n);
    Rng r;
    rng_seed(&r, 12);
    int same = 0, round = 0, cases = 4000;
    unsigned char text[6000], back[6000];
    for (int k = 0; k < cases; k++) {
        size_t len = 1 + rng_u64(&r) % (k % 10 == 0 ? 4000 : 60);
        int kind = k % 4;
        if (kind == 3) {          // a run of one unit: overlapping equal pairs, where the leftmost tie decides
            const char *unit[] = { "a", "e", "l", "s", "o", "ab", " ", "!", "7", "\n", "the" };
            const char *u = unit[rng_u64(&r) % 11];
            for (size_t i = 0; i < len; i++) text[i] = (unsigned char)u[i % strlen(u)];
        } else {
            size_t from = rng_u64(&r) % (n - len);
            memcpy(text, corpus + from, len);
            for (size_t i = 0; kind && i < len; i++)             // corrupted: random bytes here and there
                if (kind == 2 || rng_u64(&r) % 8 == 0) text[i] = (unsigned char)rng_u64(&r);
        }
        IdList fast = { 0 }, slow = { 0 };
        bpe_encode(&e, text, len, &fast);
        naive_encode(&b, text, len, &slow);
        same += fast.n == slow.n && !memcmp(fast.id, slow.id, fast.n * sizeof *fast.id);
        size_t m;
        decode_ids(&b, &fast, back, &m);
        round += m == len && !memcmp(back, text, len);
        id_list_free(&fast);
        id_list_free(&slow);
    }
    EXPECT(same == cases, "the heap merge loop equals tiktoken's loop on %d of %d texts", same, cases);
    EXPECT(round == cases, "decode(encode(x)) == x on %d of %d texts", round, cases);
    // a piece that is itself a token is that token, whatever its merges would make
    IdList one = { 0 };
    bpe_encode(&e, (const unsigned char *)" the", 4, &one);
    size_t len;
    const unsigned char *s = one.n == 1 ? bpe_token(&b, one.id[0], &len) : NULL;
    EXPECT(s && len == 4 && !memcmp(s, " the", 4), "\" the\" is one token of the small vocabulary");
    id_list_free(&one);
    free(corpus);
    bpe_encoder_free(&e);
    bpe_free(&b);
}

// A piece where almost every adjacent pair is a token, as a run of digits is in GPT-2's vocabulary
// (every number of 1 to 3 digits is a token there): each merge queues two new pairs and leaves stale
// ones behind, so the merge heap grows past the piece's length (up to 2n - 2 entries; a heap sized
// for the piece alone, 64 entries or the next power of two, overflowed from 61 digits with GPT-2's
// files). Here: the 100 two-digit strings, then the 1000 three-digit ones, as merges; pieces
// 0123456012... of every length up to 300 (71 heap entries at 64 digits), each with a fresh encoder
// (the first long piece is the one that sizes the scratch), against tiktoken's loop.
static void test_digit_runs(void) {
    static uint16_t merge[1100][2];
    for (int a = 0; a < 10; a++)
        for (int c = 0; c < 10; c++) {
            merge[10 * a + c][0] = (uint16_t)bpe_id_of_byte('0' + a);
            merge[10 * a + c][1] = (uint16_t)bpe_id_of_byte('0' + c);
        }
    for (int ab = 0; ab < 100; ab++)
        for (int c = 0; c < 10; c++) {
            merge[100 + 10 * ab + c][0] = (uint16_t)(256 + ab);
            merge[100 + 10 * ab + c][1] = (uint16_t)bpe_id_of_byte('0' + c);
        }
    Bpe b;
    bpe_from_merges(&b, &merge[0][0], 1100, "the digit merges");
    unsigned char text[300];
    int same = 0, lengths = 0;
    for (int len = 1; len <= 300; len++) {
        for (int i = 0; i < len; i++) text[i] = (unsigned char)('0' + i % 7);   // 0123456012...: 71 entries at 64 digits
        BpeEncoder e;
        bpe_encoder_init(&e, &b);
        IdList fast = { 0 }, slow = { 0 };
        bpe_encode_piece(&e, text, (size_t)len, &fast);
        naive_encode_piece(&b, text, (size_t)len, &slow);
        same += fast.n == slow.n && !memcmp(fast.id, slow.id, fast.n * sizeof *fast.id);
        lengths++;
        id_list_free(&fast);
        id_list_free(&slow);
        bpe_encoder_free(&e);
    }
    EXPECT(same == lengths, "runs of digits with every 2- and 3-digit merge: the heap loop equals tiktoken's on %d of %d lengths",
           same, lengths);
    bpe_free(&b);
}

// ---- training ---------------------------------------------------------------------------------------

static int token_is(const Bpe *b, int id, const char *s) {
    size_t n;
    const unsigned char *t = bpe_token(b, id, &n);
    return n == strlen(s) && !memcmp(t, s, n);
}

typedef struct { const char *text; int vocab; } TrainArgs;
static void child_train(const void *arg) {
    const TrainArgs *a = arg;
    const unsigned char *t = (const unsigned char *)a->text;
    size_t n = strlen(a->text);
    Bpe b;
    bpe_train(&b, &t, &n, 1, a->vocab, "the test corpus");
}

static void test_train_rules(void) {
    // "aaab aaab": pieces "aaab" and " aaab". (a,a) occurs 4 times: "aa" (256). Then (aa,a) and (a,b)
    // both occur twice; the smaller left id wins ('a' = 64 < 256): "ab" (257). Then (aa,ab): "aaab"
    // (258). (Ġ,aaab) occurs once: no fourth merge.
    const unsigned char *t = (const unsigned char *)"aaab aaab";
    size_t n = 9;
    Bpe b;
    bpe_train(&b, &t, &n, 1, 260, "aaab");
    EXPECT(b.n_tokens == 260 && b.eot == 259 && b.n_merges == 3, "aaab: 260 tokens, eot 259");
    EXPECT(token_is(&b, 256, "aa") && token_is(&b, 257, "ab") && token_is(&b, 258, "aaab"),
           "aaab: merges aa, ab (the tie to the smaller left id), aaab");
    EXPECT(b.merge[2] == bpe_id_of_byte('a') && b.merge[3] == bpe_id_of_byte('b') && b.merge[4] == 256 && b.merge[5] == 257,
           "aaab: merge 1 joins a and b, merge 2 joins 256 and 257");
    bpe_free(&b);
    TrainArgs more = { "aaab aaab", 261 };
    EXPECT(dies_with(child_train, &more, "after 3 merges no pair of tokens occurs 2 times", "--vocab-size 260 or less"),
           "a vocabulary the corpus cannot fill is refused with the size it can");
    TrainArgs small = { "abc", 256 };
    EXPECT(dies_with(child_train, &small, "outside [257, 65536]", NULL), "--vocab-size 256 is refused");
    // 257: bytes and the end of text, no merges, from any corpus (an empty one too)
    const unsigned char *empty = (const unsigned char *)"";
    size_t zero = 0;
    bpe_train(&b, &empty, &zero, 1, 257, "nothing");
    EXPECT(b.n_tokens == 257 && b.n_merges == 0 && b.eot == 256, "257 tokens from an empty corpus");
    bpe_free(&b);
}

// Random corpora over a few letters and random bytes: every vocabulary has the size asked for
// (and builds: bpe_from_merges refuses a byte string made twice), two runs agree, and encoding
// round-trips.
static void test_train_random(void) {
    int ok_same = 1, ok_round = 1, ok_size = 1;
    unsigned char text[20000], back[20000];
    for (int seed = 1; seed <= 6; seed++) {
        Rng r;
        rng_seed(&r, (uint64_t)seed);
        size_t n = sizeof text;
        for (size_t i = 0; i < n; i++) {
            uint64_t u = rng_u64(&r) % 16;
            text[i] = u < 12 ? (unsigned char)("abcab"[u % 5]) : u < 14 ? ' ' : u < 15 ? '1' : (unsigned char)rng_u64(&r);
        }
        const unsigned char *t = text;
        Bpe a, b;
        bpe_train(&a, &t, &n, 1, 257 + 60 * seed, "a random corpus");
        bpe_train(&b, &t, &n, 1, 257 + 60 * seed, "a random corpus");
        ok_size &= a.n_tokens == 257 + 60 * seed;
        ok_same &= a.n_merges == b.n_merges && !memcmp(a.merge, b.merge, 2 * (size_t)a.n_merges * sizeof *a.merge);
        BpeEncoder e;
        bpe_encoder_init(&e, &a);
        IdList ids = { 0 };
        bpe_encode(&e, text, n, &ids);
        size_t m;
        decode_ids(&a, &ids, back, &m);
        ok_round &= m == n && !memcmp(back, text, n) && ids.n < n;
        id_list_free(&ids);
        bpe_encoder_free(&e);
        bpe_free(&a);
        bpe_free(&b);
    }
    EXPECT(ok_size, "random corpora: each vocabulary has the size asked for");
    EXPECT(ok_same, "random corpora: two trainings give the same merges");
    EXPECT(ok_round, "random corpora: encoding with the learned vocabulary is shorter and decodes back");
}

// ---- files ------------------------------------------------------------------------------------------

static char tmp_dir[64];

static char *tmp_path(const char *name) {
    static char path[4][128];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 128, "%s/%s", tmp_dir, name);
    return p;
}

static unsigned char *slurp(const char *path, size_t *n) {
    return bpe_read_file(path, "test file", n);
}

// A learned vocabulary written as encoder.json + vocab.bpe reads back as the same vocabulary, and
// its llm.c tokenizer file as the same pieces.
static void test_files(void) {
    Bpe b, back;
    small_vocab(&b, 600);
    char *enc = tmp_path("encoder.json"), *mrg = tmp_path("vocab.bpe"), *tok = tmp_path("tokenizer.bin");
    bpe_write_encoder_json(&b, enc);
    bpe_write_merges(&b, mrg);
    bpe_write_llmc_tokenizer(&b, tok);
    bpe_load(&back, enc, mrg);
    EXPECT(back.n_tokens == b.n_tokens && !memcmp(back.merge, b.merge, 2 * (size_t)b.n_merges * sizeof *b.merge),
           "encoder.json + vocab.bpe read back as the same %d merges", b.n_merges);
    Tokenizer t;
    tokenizer_load(tok, &t);
    int same = t.n == b.n_tokens && t.eot == b.eot && t.piece_len[b.eot] == 13 && !memcmp(t.piece[b.eot], BPE_EOT_TEXT, 13);
    for (int i = 0; same && i < b.eot; i++) {
        size_t n;
        const unsigned char *s = bpe_token(&b, i, &n);
        same = (size_t)t.piece_len[i] == n && !memcmp(t.piece[i], s, n);
    }
    EXPECT(same, "the llm.c tokenizer file holds every token's bytes and \"<|endoftext|>\" last");
    tokenizer_free(&t);
    size_t n;
    unsigned char *json = slurp(enc, &n);
    EXPECT(n > 20 && !memcmp(json, "{\"!\": 0, \"\\\"\": 1, \"#\": 2", 24), "encoder.json starts as GPT-2's does");
    free(json);
    bpe_free(&back);
    bpe_free(&b);
    remove(enc); remove(mrg); remove(tok);
}

// ---- GPT-2's files (--gpt2 DIR) --------------------------------------------------------------------

static void test_gpt2(const char *dir) {
    char enc[4096], mrg[4096];
    snprintf(enc, sizeof enc, "%s/encoder.json", dir);
    snprintf(mrg, sizeof mrg, "%s/vocab.bpe", dir);
    Bpe b;
    bpe_load(&b, enc, mrg);
    EXPECT(b.n_tokens == 50257 && b.eot == 50256 && b.n_merges == 50000, "GPT-2: 50257 tokens, 50000 merges, eot 50256");
    EXPECT(token_is(&b, 220, " ") && token_is(&b, 262, " the") && token_is(&b, 198, "\n") && token_is(&b, 628, "\n\n") &&
           token_is(&b, 50255, " gazed"), "GPT-2's ids: ' ' 220, ' the' 262, '\\n' 198, '\\n\\n' 628, ' gazed' 50255");
    const char *names[2] = { "encoder.json", "vocab.bpe" }, *orig[2] = { enc, mrg };
    bpe_write_encoder_json(&b, tmp_path(names[0]));
    bpe_write_merges(&b, tmp_path(names[1]));
    for (int k = 0; k < 2; k++) {
        size_t n1, n2;
        unsigned char *a = slurp(orig[k], &n1), *c = slurp(tmp_path(names[k]), &n2);
        EXPECT(n1 == n2 && !memcmp(a, c, n1), "GPT-2's %s written back byte for byte (%zu and %zu bytes)", names[k], n1, n2);
        free(a); free(c);
        remove(tmp_path(names[k]));
    }
    bpe_free(&b);
}

int main(int argc, char **argv) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_bpe_XXXXXX");
    CHECK(mkdtemp(tmp_dir), "cannot create a temporary folder: %s", strerror(errno));
    if (argc == 3 && !strcmp(argv[1], "--gpt2")) {
        test_gpt2(argv[2]);
    } else {
        CHECK(argc == 1, "usage: tests/test_bpe [--gpt2 DIR]");
        test_alphabet();
        test_classes();
        test_pieces();
        test_merge_loop();
        test_digit_runs();
        test_train_rules();
        test_train_random();
        test_files();
    }
    rmdir(tmp_dir);
    return test_summary(argc == 3 ? "test_bpe --gpt2" : "test_bpe");
}
