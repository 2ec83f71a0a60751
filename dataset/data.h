// dataset/data.h: token data as a stream read from files, never held whole in memory; the readers
// that check those files, the embedded corpus, the tokenizers and the shard writer.
//
// Every reader checks sizes, magic numbers and ranges, and on bad input exits through CHECK with
// a sentence that names the file and what is wrong with it (see util/common.h).
#ifndef DATA_H
#define DATA_H

#include <stddef.h>
#include <stdint.h>

// ---- token sets -------------------------------------------------------------------------------
// A token set is what --data or --val-data names: one file, every file of a folder, or the files a
// glob pattern matches (folder and glob in name order), read as one sequence of tokens, the files
// one after the other. All files of a set are of one kind:
//   bytes          any file that is not an llm.c shard: one token per byte (vocab 256, no eot)
//   llm.c GPT-2    256 little-endian int32 header h[0]=20240520, h[1]=1, h[2]=ntok, then ntok
//                  uint16 tokens (vocab 50257; eot 50256 opens each document)
//   llm.c Llama-3  h[0]=20240801, h[1]=7, h[2]=ntok, then ntok uint32 tokens (vocab 128256;
//                  <|begin_of_text|> 128000 opens each document)
// Opening a set checks every file's header and size and keeps one small record per file; tokens
// are read when asked for (data_read: pread of the range asked), so memory does not grow with the
// data. A set may instead hold its tokens in memory (the embedded corpus, tests).
typedef enum { DATA_BYTES, DATA_GPT2, DATA_LLAMA3 } DataKind;

typedef struct {
    char *path;          // the file (for a set in memory: a name for messages)
    uint64_t n;          // tokens in it
    uint64_t first;      // the index of its first token in the files' sequence
} TokenFile;

typedef struct {
    TokenFile *files;    // (n_files,) in reading order; shared by a set and the parts data_split cuts
    int n_files;
    int *memory;         // (files[0].n,) a set in memory: its tokens; NULL for a set of files
    DataKind kind;       // how the files store tokens (DATA_BYTES for a set in memory)
    uint64_t begin, n;   // the set is tokens [begin, begin + n) of the files' sequence
    int vocab_size;      // the kind's vocabulary: what a new model trained on the set gets
    int eot;             // the token that opens a document, or -1 when the data has none
    int64_t limit;       // tokens read must lie in [0, limit): the kind's vocabulary, then the
                         // model's (data_check_vocab)
} TokenSet;

// Opens SPEC: a folder (its files, not those whose name starts with '.', not sub-folders), else a
// pattern with * ? or [ that names no existing file (glob(3); every match must be a file), else
// one file. An empty folder, a pattern that matches nothing, a missing, empty, truncated or
// foreign-version file, a file that is not a regular file, and files of two kinds in one set are
// errors that name the file (or the two files). Nothing is read past the headers.
void data_open(const char *spec, TokenSet *out);
// The same for a list of n >= 1 files, in this order.
void data_open_files(const char *const *paths, int n, TokenSet *out);
// A set in memory: a copy of tokens[0..n), each in [0, vocab_size); name is for messages.
void data_from_memory(const int *tokens, size_t n, int vocab_size, int eot, const char *name, TokenSet *out);
// The embedded default corpus as a set in memory: English-like text that the project generates
// itself, deterministically (the same bytes on every machine), as bytes (vocab 256).
void data_default_corpus(TokenSet *out);
// The same corpus as a NUL-terminated string; *len receives its length. Caller frees.
char *data_default_corpus_text(size_t *len);
// Frees what data_open (or data_from_memory, data_default_corpus) allocated; not for split parts.
void data_close(TokenSet *s);

// Tokens [index, index + count) of the set into out (count ints). Each token is checked against
// s->limit (a file changed since it was checked is refused with its name and the token's index).
void data_read(const TokenSet *s, uint64_t index, size_t count, int *out);

// Sets the set's limit to vocab (the model's vocabulary) and, when the kind can hold a token >=
// vocab, reads the whole set once in chunks of 64K tokens to refuse such a token now, before any
// training, naming the file and the index in it.
void data_check_vocab(TokenSet *s, int vocab);

// The file that holds token `index` of the set; *offset receives the token's index in that file.
const TokenFile *data_file_of(const TokenSet *s, uint64_t index, uint64_t *offset);
// "bytes", "llm.c GPT-2 shards (uint16)" or "llm.c Llama-3 shards (uint32)"
const char *data_kind_name(DataKind kind);

// Splits `all` into a training part (its first n - n_val tokens) and a validation part (its last
// n_val tokens, n_val = floor(n * val_frac)): for a set of several files, the last tokens of their
// sequence. The parts share all's files (no copy; close only `all`). val_frac in [0, 0.5]; at 0
// the validation part is empty.
void data_split(const TokenSet *all, double val_frac, TokenSet *train, TokenSet *val);

// Tokenizer for decoding samples: n pieces of bytes. bytes: piece i is the single byte i.
// llm.c tokenizer file: 256 int32 header h[0]=20240328, h[1]=2, h[2]=n, h[3]=eot; then n records
// of uint8 len followed by len bytes.
typedef struct {
    int n;           // number of pieces (vocab size)
    int eot;         // end-of-text id or -1
    char **piece;    // (n,) NUL-terminated byte strings
    int *piece_len;  // (n,) their lengths (a piece may contain NUL bytes)
} Tokenizer;

void tokenizer_bytes(Tokenizer *t);
void tokenizer_load(const char *path, Tokenizer *t);
// Encodes text for a prompt: bytes map to themselves under the byte tokenizer; for an llm.c
// tokenizer this is a greedy longest-match over the pieces (good enough for prompts).
// Returns the number of ids written to out (at most cap).
int tokenizer_encode(const Tokenizer *t, const char *text, int *out, int cap);
void tokenizer_free(Tokenizer *t);

// Writes tokens as an llm.c shard (uint16; every token must be < 65536), through a temporary
// file renamed into place. Used by tests and by tools that prepare data.
void data_write_shard(const char *path, const int *tokens, size_t n);

#endif
