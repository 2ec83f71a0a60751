// dataset/bpe_train.c: learning a byte-level BPE vocabulary from a corpus (bpe_train; the rules
// are in dataset/bpe.h).
//
// The corpus is cut into pieces as encoding cuts it, and equal pieces are kept once with their
// count: a "word". Each word is a sequence of token ids, its bytes at first. Every adjacent pair
// of ids has a count over the corpus (the sum of the counts of the words it occurs in, once per
// occurrence) and a list of the words it occurs in; a max-heap orders the pairs by count. A
// merge rewrites only the words on its pair's list and updates the counts of the pairs those
// words lose and gain, so a step costs the size of the words it touches, not of the corpus.
// The heap is lazy: a pair whose count changed gets a new entry, and an entry whose count is no
// longer the pair's is skipped when it comes up.
#include "dataset/bpe.h"

#include "util/common.h"

enum { MIN_PAIR_COUNT = 2 };   // a pair seen once is one word memorised, not a subword

typedef struct {
    uint16_t a, b;             // the left and right ids
    int64_t count;             // occurrences over the corpus
    int64_t queued;            // the count of its newest heap entry
    int32_t *word;             // (n_words,) words it occurs in (or did: a list may hold stale words)
    int n_words, cap_words;
    int touched;               // the step that last changed its count
    int banned;                // its bytes would exceed BPE_MAX_TOKEN_BYTES
} Pair;

typedef struct {
    int64_t count;
    uint16_t a, b;
} HeapEntry;

typedef struct {
    BytesMap words;            // the distinct pieces, word w = entry w
    int64_t *count;            // (n_words,) how often each occurs
    uint16_t *sym;             // word w's ids are sym[words.off[w] .. words.off[w] + len[w])
    int32_t *len;              // (n_words,) shrinks as merges join ids
    int *seen;                 // (n_words,) the step that last rewrote the word
    Pair *pair;                // (n_pairs,)
    int n_pairs, cap_pairs;
    PairMap pair_index;        // (a, b) -> index into pair
    HeapEntry *heap;           // max-heap: count, then the smaller a, then the smaller b, first
    size_t heap_n, heap_cap;
    int *touched;              // (n_touched,) pairs whose count the current step changed
    int n_touched, cap_touched;
    int step;
    BytesMap tokens;           // every token's bytes so far, entry t = token t
} Trainer;

static void *grow_to(void *p, int *cap, int need, size_t size) {
    if (need <= *cap) return p;
    int c = *cap ? *cap : 16;
    while (c < need) { CHECK(c <= INT32_MAX / 2, "bpe_train: out of memory (more than 2^30 entries)"); c *= 2; }
    void *q = realloc(p, (size_t)c * size);
    CHECK(q, "bpe_train: out of memory growing a table to %d entries of %zu bytes", c, size);
    *cap = c;
    return q;
}

// x comes out of the heap before y
static int heap_before(HeapEntry x, HeapEntry y) {
    if (x.count != y.count) return x.count > y.count;
    if (x.a != y.a) return x.a < y.a;
    return x.b < y.b;
}

static void heap_push(Trainer *tr, const Pair *p) {
    if (tr->heap_n == tr->heap_cap) {
        tr->heap_cap = tr->heap_cap ? 2 * tr->heap_cap : 1024;
        tr->heap = realloc(tr->heap, tr->heap_cap * sizeof *tr->heap);
        CHECK(tr->heap, "bpe_train: out of memory growing the heap to %zu entries", tr->heap_cap);
    }
    HeapEntry x = { p->count, p->a, p->b };
    size_t i = tr->heap_n++;
    while (i > 0 && heap_before(x, tr->heap[(i - 1) / 2])) { tr->heap[i] = tr->heap[(i - 1) / 2]; i = (i - 1) / 2; }
    tr->heap[i] = x;
}

static HeapEntry heap_pop(Trainer *tr) {
    HeapEntry *h = tr->heap, top = h[0], last = h[--tr->heap_n];
    size_t i = 0, n = tr->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_before(h[c + 1], h[c])) c++;
        if (!heap_before(h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

// Adds delta to the count of pair (a, b), creating it; word w (when >= 0) joins its list.
static void pair_add(Trainer *tr, uint16_t a, uint16_t b, int64_t delta, int w) {
    int added;
    int32_t *slot = pair_map_slot(&tr->pair_index, a, b, &added);
    if (added) {
        *slot = tr->n_pairs;
        tr->pair = grow_to(tr->pair, &tr->cap_pairs, tr->n_pairs + 1, sizeof *tr->pair);
        tr->pair[tr->n_pairs++] = (Pair){ .a = a, .b = b, .touched = -1 };
    }
    int p = *slot;
    Pair *P = &tr->pair[p];
    P->count += delta;
    if (w >= 0 && (P->n_words == 0 || P->word[P->n_words - 1] != w)) {
        P->word = grow_to(P->word, &P->cap_words, P->n_words + 1, sizeof *P->word);
        P->word[P->n_words++] = w;
    }
    if (P->touched != tr->step) {
        P->touched = tr->step;
        tr->touched = grow_to(tr->touched, &tr->cap_touched, tr->n_touched + 1, sizeof *tr->touched);
        tr->touched[tr->n_touched++] = p;
    }
}

// Counts the corpus's pieces into words, and the words' pairs.
static void count_words(Trainer *tr, const unsigned char *const *text, const size_t *len, int n_texts) {
    int cap_count = 0;
    bytes_map_init(&tr->words);
    for (int k = 0; k < n_texts; k++)
        for (size_t i = 0; i < len[k];) {
            size_t j = bpe_piece_end(text[k], len[k], i);
            int added;
            int w = bytes_map_add(&tr->words, text[k] + i, j - i, &added);
            if (added) {
                tr->count = grow_to(tr->count, &cap_count, w + 1, sizeof *tr->count);
                tr->count[w] = 0;
            }
            tr->count[w]++;
            i = j;
        }
    int n = tr->words.n;
    tr->sym = xmalloc((tr->words.arena_len ? tr->words.arena_len : 1) * sizeof *tr->sym);
    tr->len = xmalloc((size_t)(n ? n : 1) * sizeof *tr->len);
    tr->seen = xcalloc((size_t)(n ? n : 1), sizeof *tr->seen);
    for (size_t i = 0; i < tr->words.arena_len; i++) tr->sym[i] = (uint16_t)bpe_id_of_byte(tr->words.arena[i]);
    pair_map_init(&tr->pair_index, 1 << 16);
    for (int w = 0; w < n; w++) {
        tr->len[w] = (int32_t)tr->words.len[w];
        const uint16_t *s = tr->sym + tr->words.off[w];
        for (int i = 0; i + 1 < tr->len[w]; i++) pair_add(tr, s[i], s[i + 1], tr->count[w], w);
    }
    for (int p = 0; p < tr->n_pairs; p++) { tr->pair[p].queued = tr->pair[p].count; heap_push(tr, &tr->pair[p]); }
    tr->n_touched = 0;
}

// Rewrites every word of pair p with c in place of each (a, b), left to right, and queues the
// pairs whose counts changed.
static void apply_merge(Trainer *tr, int p, uint16_t c) {
    tr->step++;
    uint16_t a = tr->pair[p].a, b = tr->pair[p].b;
    int32_t *words = tr->pair[p].word;
    int n_words = tr->pair[p].n_words;
    tr->pair[p].word = NULL;                       // no word holds (a, b) afterwards
    tr->pair[p].n_words = tr->pair[p].cap_words = 0;
    for (int k = 0; k < n_words; k++) {
        int w = words[k];
        if (tr->seen[w] == tr->step) continue;
        tr->seen[w] = tr->step;
        uint16_t *s = tr->sym + tr->words.off[w];
        int n = tr->len[w], has = 0;
        for (int i = 0; i + 1 < n && !has; i++) has = s[i] == a && s[i + 1] == b;
        if (!has) continue;                        // a stale entry of the list
        int64_t cnt = tr->count[w];
        for (int i = 0; i + 1 < n; i++) pair_add(tr, s[i], s[i + 1], -cnt, -1);
        int o = 0;
        for (int i = 0; i < n;) {
            if (i + 1 < n && s[i] == a && s[i + 1] == b) { s[o++] = c; i += 2; }
            else s[o++] = s[i++];
        }
        tr->len[w] = o;
        for (int i = 0; i + 1 < o; i++) pair_add(tr, s[i], s[i + 1], cnt, s[i] == c || s[i + 1] == c ? w : -1);
    }
    free(words);
    for (int k = 0; k < tr->n_touched; k++) {
        Pair *P = &tr->pair[tr->touched[k]];
        if (P->count != P->queued && P->count > 0) { P->queued = P->count; heap_push(tr, P); }
    }
    tr->n_touched = 0;
}

void bpe_train(Bpe *b, const unsigned char *const *text, const size_t *len, int n_texts, int vocab_size,
               const char *what) {
    CHECK(vocab_size >= 257 && vocab_size <= BPE_MAX_VOCAB, "bpe_train: a vocabulary of %d tokens is outside [257, %d] "
          "(256 bytes and the end of text at least; ids in uint16 shards at most)", vocab_size, BPE_MAX_VOCAB);
    Trainer tr;
    memset(&tr, 0, sizeof tr);
    count_words(&tr, text, len, n_texts);
    bytes_map_init(&tr.tokens);
    for (int i = 0; i < 256; i++) {
        unsigned char c = (unsigned char)bpe_byte_of_id(i);
        bytes_map_add(&tr.tokens, &c, 1, NULL);
    }
    int want = vocab_size - 257, made = 0;
    uint16_t *merge = xmalloc(2 * (size_t)(want ? want : 1) * sizeof *merge);
    unsigned char joined[2 * BPE_MAX_TOKEN_BYTES];
    while (made < want) {
        int64_t best = 0;
        int p = -1;
        while (tr.heap_n && p < 0) {               // the first entry that is still true
            HeapEntry top = heap_pop(&tr);
            int q = pair_map_get(&tr.pair_index, top.a, top.b);
            if (!tr.pair[q].banned && tr.pair[q].count == top.count) { p = q; best = top.count; }
        }
        CHECK(p >= 0 && best >= MIN_PAIR_COUNT, "%s: after %d merges no pair of tokens occurs %d times or more, so "
              "a vocabulary of %d tokens cannot be learned from it; pass --vocab-size %d or less, or more text",
              what, made, MIN_PAIR_COUNT, vocab_size, 257 + made);
        Pair *P = &tr.pair[p];
        size_t na, nb;
        const unsigned char *sa = bytes_map_key(&tr.tokens, P->a, &na), *sb = bytes_map_key(&tr.tokens, P->b, &nb);
        if (na + nb > BPE_MAX_TOKEN_BYTES) { P->banned = 1; continue; }
        memcpy(joined, sa, na);
        memcpy(joined + na, sb, nb);
        // Never already a token: once a stretch of a word has token edges, the merges inside it
        // happen as in every other word with those bytes, so equal bytes are always made by the same
        // pair at the same step. Checked all the same (bpe_from_merges checks it again).
        int added;
        int c = bytes_map_add(&tr.tokens, joined, na + nb, &added);
        CHECK(added, "bpe_train: the merge of ids %d and %d made the existing token %d; this is a bug", P->a, P->b, c);
        merge[2 * made] = P->a;
        merge[2 * made + 1] = P->b;
        made++;
        apply_merge(&tr, p, (uint16_t)c);
    }
    for (int p = 0; p < tr.n_pairs; p++) free(tr.pair[p].word);
    free(tr.pair); free(tr.heap); free(tr.touched); free(tr.count); free(tr.sym); free(tr.len); free(tr.seen);
    pair_map_free(&tr.pair_index);
    bytes_map_free(&tr.words);
    bytes_map_free(&tr.tokens);
    bpe_from_merges(b, merge, made, what);
    free(merge);
}
