// dataset/bpe.h: byte-level BPE as GPT-2 defines it and tiktoken computes it: the vocabulary and
// its files, pre-tokenisation, encoding (dataset/bpe.c) and training (dataset/bpe_train.c).
// ./tokenize (tools/tokenize.c) is the command line over this module.
//
// The vocabulary, V tokens (V <= 65536, so every id fits an llm.c uint16 shard):
//   ids 0..255      the 256 single bytes, in GPT-2's bytes_to_unicode order: id 0 is '!' (0x21),
//                   id 220 is ' ' (bpe_byte_of_id, bpe_id_of_byte)
//   ids 256..V-2    merges: token 256+m is the bytes of merge m's left token followed by its right
//   id V-1          end of text, "<|endoftext|>": marks a document start, never made from text
// GPT-2's own files give V = 50257 (256 bytes, 50000 merges, end of text 50256).
//
// Encoding a text, exactly as tiktoken's encode_ordinary:
//   1. pre-tokenisation cuts the text into pieces with GPT-2's pattern
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      (bpe_piece_end; the classes \p{L}, \p{N}, \s come from dataset/unicode_classes.c);
//   2. a piece whose bytes are a token is that token (tiktoken's shortcut: with GPT-2's vocabulary,
//      and with learned ones, merging the bytes reaches the same token, so it only saves time);
//   3. any other piece starts as its single bytes, and the adjacent pair whose concatenation is
//      the token of lowest id is merged, the leftmost such pair on a tie, until no adjacent pair
//      concatenates to a token. (tiktoken's rule: the rank of a pair is the id of the bytes it
//      makes, whichever merge line made them; GPT-2's Python encoder looked up the pair itself.)
// Bytes that are not valid UTF-8 (a stray continuation byte, a truncated or overlong sequence, a
// surrogate, anything above U+10FFFF) are read one byte at a time, each as a character of class
// "other", the class of U+FFFD: the pieces are those tiktoken makes of the text decoded with
// replacement characters, while the merges run on the original bytes, so decoding gives back
// exactly the bytes that were encoded.
#ifndef BPE_H
#define BPE_H

#include <stddef.h>
#include <stdint.h>

#include "dataset/unicode_classes.h"

enum {
    BPE_MAX_VOCAB = 65536,     // ids must fit uint16 shards
    BPE_MAX_TOKEN_BYTES = 255, // the llm.c tokenizer file stores a piece's length in one byte
};
#define BPE_EOT_TEXT "<|endoftext|>"

// ---- helpers shared by bpe.c, bpe_train.c and tools/tokenize.c ------------------------------------------

// The whole file in a malloc'd buffer (*len bytes, plus a NUL not counted); `what` names it in the
// messages ("input", "encoder file", ...). A missing, unreadable or directory path is refused.
unsigned char *bpe_read_file(const char *path, const char *what, size_t *len);

// A set of byte strings numbered in insertion order (entry 0, 1, ...): open addressing over a
// power-of-two table of entry numbers. The strings live back to back in one arena.
typedef struct {
    unsigned char *arena;      // (arena_len,) every entry's bytes, in entry order
    size_t arena_len, arena_cap;
    size_t *off;               // (n,) entry e is arena[off[e] .. off[e] + len[e])
    uint32_t *len;             // (n,)
    uint64_t *hash;            // (n,) each entry's hash, kept for growing the table
    int n, entry_cap;
    int32_t *slot;             // (slot_cap,) entry number + 1, 0 when empty
    size_t slot_cap;           // a power of two, at least twice n
} BytesMap;

void bytes_map_init(BytesMap *m);
void bytes_map_free(BytesMap *m);
int bytes_map_find(const BytesMap *m, const unsigned char *key, size_t len);   // entry or -1
// The entry of key, added as entry n when absent (*added set to 1 then, else 0; added may be NULL).
int bytes_map_add(BytesMap *m, const unsigned char *key, size_t len, int *added);
static inline const unsigned char *bytes_map_key(const BytesMap *m, int e, size_t *len) {
    *len = m->len[e];
    return m->arena + m->off[e];
}

// A map from a pair of ids (each < 65536) to an int32, open addressing over a power-of-two table.
typedef struct {
    uint32_t *key;             // (cap,) left << 16 | right, or PAIR_MAP_EMPTY
    int32_t *val;              // (cap,)
    size_t cap, n;
} PairMap;
#define PAIR_MAP_EMPTY 0xFFFFFFFFu   // left = right = 65535 is never asked: id 65535 can only be V-1, the end of text

void pair_map_init(PairMap *m, size_t expected);
void pair_map_free(PairMap *m);
int32_t pair_map_get(const PairMap *m, uint32_t left, uint32_t right);        // -1 when absent
int32_t *pair_map_slot(PairMap *m, uint32_t left, uint32_t right, int *added); // the value, added as -1

// GPT-2's bytes_to_unicode. The printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) come
// first, ids 0..187, and stand for themselves in encoder.json and vocab.bpe; the other 68 (the
// controls and space 0x00..0x20, 0x7F..0xA0, 0xAD) follow in byte order, ids 188..255, and stand
// for U+0100..U+0143 (the space, id 220, is U+0120 'Ġ').
static inline int bpe_id_of_byte(int b) {
    return b >= 0x21 && b <= 0x7E ? b - 0x21 : b >= 0xA1 && b <= 0xAC ? 94 + b - 0xA1
         : b >= 0xAE ? 106 + b - 0xAE : b <= 0x20 ? 188 + b : b <= 0xA0 ? 221 + b - 0x7F : 255;
}
static inline int bpe_byte_of_id(int i) {
    return i < 94 ? 0x21 + i : i < 106 ? 0xA1 + i - 94 : i < 188 ? 0xAE + i - 106
         : i < 221 ? i - 188 : i < 255 ? 0x7F + i - 221 : 0xAD;
}
static inline int bpe_char_of_byte(int b) {
    int i = bpe_id_of_byte(b);
    return i < 188 ? b : 0x100 + i - 188;
}

// ---- the vocabulary ---------------------------------------------------------------------------

typedef struct {
    int n_tokens;              // V, the end of text included
    int eot;                   // V - 1
    int n_merges;              // V - 257
    uint16_t *merge;           // (n_merges, 2): the left and right ids of merge m, which makes token 256 + m
    BytesMap tokens;           // the ordinary tokens' bytes, entry t = token t (t < eot)
    PairMap pairs;             // (left, right) -> the token their bytes concatenate to, for every such pair of tokens
} Bpe;

// The vocabulary of 256 bytes, the given merges in order, and the end of text. A merge's two ids
// must be earlier tokens; `what` names the source in the messages. A merge whose bytes are already
// a token, or longer than BPE_MAX_TOKEN_BYTES, is refused.
void bpe_from_merges(Bpe *b, const uint16_t *merge, int n_merges, const char *what);
// Reads GPT-2's two files: encoder.json (token -> id, JSON) and vocab.bpe (merges, one per line,
// rank order, after a "#version" line) and checks that they describe one vocabulary in the layout
// above: every byte at its bytes_to_unicode id, merge m's parts in the encoder before it and its
// result at id 256 + m, "<|endoftext|>" last, no other entry, no id twice, every id < 65536.
void bpe_load(Bpe *b, const char *encoder_path, const char *merges_path);
void bpe_free(Bpe *b);
// The bytes of token id (not the end of text).
static inline const unsigned char *bpe_token(const Bpe *b, int id, size_t *len) { return bytes_map_key(&b->tokens, id, len); }

// The same three files, written whole or not at all (util/atomicfile.h). encoder.json and vocab.bpe
// come out byte for byte as GPT-2's (JSON with \u escapes, ", " and ": " separators; "#version:
// 0.2" then one merge per line); the llm.c tokenizer (magic 20240328, version 2) holds every
// token's bytes, "<|endoftext|>" for the end of text.
void bpe_write_encoder_json(const Bpe *b, const char *path);
void bpe_write_merges(const Bpe *b, const char *path);
void bpe_write_llmc_tokenizer(const Bpe *b, const char *path);

// ---- pre-tokenisation and encoding --------------------------------------------------------------

// The class of code point cp (binary search in the generated table; ASCII by a lookup).
CharClass unicode_class(uint32_t cp);
// The end of the piece that starts at s[i] (i < n) under GPT-2's pattern (see the top): the next
// piece starts there. Each piece is at least one byte.
size_t bpe_piece_end(const unsigned char *s, size_t n, size_t i);

// Token ids appended to a growing array.
typedef struct {
    int *id;
    size_t n, cap;
} IdList;
void id_list_push(IdList *l, int id);
void id_list_free(IdList *l);

// Encoding state: scratch space for the merges of one piece, reused from piece to piece.
typedef struct {
    const Bpe *bpe;
    size_t cap;                // the longest piece the scratch holds
    int32_t *part;             // (cap,) the token of the part that starts at byte i; -1 when i is inside a part
    int32_t *next, *prev;      // (cap,) the neighbouring parts' starts (n past the end, -1 before the start)
    int32_t *rank;             // (cap,) the token the part at i makes with its right neighbour, or -1
    uint64_t *heap;            // (2 cap,) candidate merges, rank << 32 | start, smallest first (stale ones too)
} BpeEncoder;

void bpe_encoder_init(BpeEncoder *e, const Bpe *b);
void bpe_encoder_free(BpeEncoder *e);
// Appends the tokens of text[0..n) to out (no end of text).
void bpe_encode(BpeEncoder *e, const unsigned char *text, size_t n, IdList *out);
// Appends the tokens of one piece (bytes that pre-tokenisation keeps together) to out.
void bpe_encode_piece(BpeEncoder *e, const unsigned char *piece, size_t n, IdList *out);

// ---- training -----------------------------------------------------------------------------------

// Learns a vocabulary of vocab_size tokens (257 + the number of merges) from n_texts texts: every
// text is cut into pieces as above, equal pieces are counted once with their count, and merges
// are learned within pieces. Each step merges the adjacent pair of tokens with the highest count
// over the corpus, ties to the smallest left id and then the smallest right id; a pair must occur
// at least twice; a pair whose bytes would exceed BPE_MAX_TOKEN_BYTES is skipped. Deterministic: the same texts give the same merges on any machine. Refuses (CHECK) when the
// corpus has too few repeated pairs for vocab_size; `what` names the corpus in that message.
void bpe_train(Bpe *b, const unsigned char *const *text, const size_t *len, int n_texts, int vocab_size,
               const char *what);

// Shared by bpe.c and bpe_files.c (not an interface for callers):
//   bpe_grow: grows *p (elements of `size` bytes, *cap of them) to hold at least `need`;
//   bpe_token_text: a token's bytes b (n,) as encoder.json writes them, cut past 120 bytes, for messages;
//   bpe_utf8_char: the code point at s[*i] (advancing *i), or -1 for a byte that is not UTF-8.
void bpe_grow(void *p, int64_t *cap, int64_t need, size_t size);
const char *bpe_token_text(const unsigned char *b, size_t n, char *buf, size_t cap);
int64_t bpe_utf8_char(const unsigned char *s, size_t n, size_t *i);

#endif
