// tests/task_reader.c: an instance of each task read back and its answer recomputed here
// (tests/task_reader.h), not by dataset/tasks.c's generators.
#include "tests/task_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const NAMES[N_TASKS] = {"copy", "copy-2x", "copy-repeat", "copy-repeat-2x", "copy-repeat-change",
                                    "copy-successor", "reverse", "reverse-2x", "reverse-copy", "addition",
                                    "polynomial", "sort", "sort-multi", "sum", "parity", "lego", "scan", "pcfg",
                                    "retrieval"};

uint64_t fnv1a(const char *s, int n) {
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}
int class_of_string(const char *s, int n) {
    uint64_t h = fnv1a(s, n);
    h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h % TASK_SPLIT_MOD == 0 ? TASK_TEST : h % TASK_SPLIT_MOD == 1 ? TASK_VAL : TASK_TRAIN;
}
int is_test_string(const char *s, int n) { return class_of_string(s, n) == TASK_TEST; }
int class_of_tokens(const int *tok, int n) {
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < n; i++) { h ^= (uint64_t)tok[i]; h *= 1099511628211ull; }
    h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h % TASK_SPLIT_MOD == 0 ? TASK_TEST : h % TASK_SPLIT_MOD == 1 ? TASK_VAL : TASK_TRAIN;
}
int pcfg_text_tokens(const char *text, int *out, int cap) {
    int n = 0;
    for (const char *p = text; *p && n < cap; n++) {
        if (*p != '<' || !(p[1] >= '0' && p[1] <= '9')) { out[n] = (unsigned char)*p++; continue; }
        char *end;
        long k = strtol(p + 1, &end, 10);
        if (*end != '>' || k < 26) return -1;
        out[n] = 256 + (int)k - 26;
        p = end + 1;
    }
    return n;
}
int class_at(const TaskConfig *c, int n, const char *s, int len) {
    return n > c->train_max ? TASK_TEST : class_of_string(s, len);
}

void letters_defaults(TaskConfig *c, int task) {
    task_defaults(c, task);
    if (task_has_symbols(task)) c->alphabet = 26;
}

void to_bytes(const int *tok, int n, char *s) {
    for (int i = 0; i < n; i++) s[i] = (char)tok[i];
    s[n] = '\0';
}

static int all_in(const char *s, int n, char lo, char hi) {
    for (int i = 0; i < n; i++)
        if (s[i] < lo || s[i] > hi) return 0;
    return 1;
}

// Big-number sum of two decimal strings (most significant digit first) into out.
static void big_add(const char *a, int la, const char *b, int lb, char *out) {
    char rev[BUF];
    int k = 0, carry = 0;
    for (int i = 0; i < la || i < lb || carry; i++) {
        int d = carry + (i < la ? a[la - 1 - i] - '0' : 0) + (i < lb ? b[lb - 1 - i] - '0' : 0);
        rev[k++] = (char)('0' + d % 10);
        carry = d / 10;
    }
    while (k > 1 && rev[k - 1] == '0') k--;
    for (int i = 0; i < k; i++) out[i] = rev[k - 1 - i];
    out[k] = '\0';
}

static int cmp_char(const void *x, const void *y) { return *(const char *)x - *(const char *)y; }

// ---- the answer of each task, from the body (bl bytes between the tag and the '=') ----
// Each reads the body into *pr (pr->n and the task's fields), writes the answer into want (*wl
// bytes, without the '\n') and returns NULL, or what is wrong with the body.
typedef const char *(*AnswerFn)(int task, const char *body, int bl, Parsed *pr, char *want, int *wl);

// Appends body[0..bl-1] to want at *wl, forwards or backwards.
static void append(char *want, int *wl, const char *body, int bl, int backwards) {
    for (int i = 0; i < bl; i++) want[(*wl)++] = body[backwards ? bl - 1 - i : i];
}

// copy, copy-2x, reverse, reverse-2x, reverse-copy, sort: random letters ('|' between halves)
static const char *answer_letters(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    if (!all_in(body, bl, 'a', 'z')) return "body is not lowercase letters";
    pr->n = bl;
    *wl = 0;
    if (task == SORT) {
        memcpy(want, body, (size_t)bl);
        qsort(want, (size_t)bl, 1, cmp_char);
        *wl = bl;
        return NULL;
    }
    int first_back = task == REV || task == REV2X || task == REVCP;
    append(want, wl, body, bl, first_back);
    if (task == COPY2X || task == REV2X || task == REVCP) {
        want[(*wl)++] = '|';
        append(want, wl, body, bl, task == REV2X);
    }
    return NULL;
}

// copy-repeat, copy-repeat-2x, copy-successor: one letter repeated
static const char *answer_repeat(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    if (!all_in(body, bl, 'a', 'z')) return "body is not lowercase letters";
    for (int i = 1; i < bl; i++)
        if (body[i] != body[0]) return "body is not one letter repeated";
    pr->n = bl;
    char y = task == SUCC ? (body[0] == 'z' ? 'a' : (char)(body[0] + 1)) : body[0];
    *wl = task == REP2X ? 2 * bl : bl;
    memset(want, y, (size_t)*wl);
    return NULL;
}

// copy-repeat-change: "X>Y:" then X repeated; the answer Y as often
static const char *answer_replace(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task;
    if (bl < 5 || body[1] != '>' || body[3] != ':') return "body does not open with X>Y:";
    char x = body[0], y = body[2];
    if (x < 'a' || x > 'z' || y < 'a' || y > 'z' || x == y) return "X and Y are not two different letters";
    for (int i = 4; i < bl; i++)
        if (body[i] != x) return "the repeated part is not X";
    pr->n = bl - 4;
    *wl = pr->n;
    memset(want, y, (size_t)*wl);
    return NULL;
}

static const char *answer_addition(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task;
    const char *plus = memchr(body, '+', (size_t)bl);
    if (!plus) return "addition without '+'";
    int la = (int)(plus - body), lb = bl - la - 1;
    const char *a = body, *b = plus + 1;
    if (la < 1 || lb < 1 || !all_in(a, la, '0', '9') || !all_in(b, lb, '0', '9')) return "operands are not numbers";
    if ((la > 1 && a[0] == '0') || (lb > 1 && b[0] == '0')) return "operand with a leading zero";
    pr->n = la > lb ? la : lb;
    pr->longer = lb > la;
    pr->shorter_len = la < lb ? la : lb;
    big_add(a, la, b, lb, want);
    *wl = (int)strlen(want);
    if (la <= 18 && lb <= 18) {  // a second, machine-integer opinion
        char ca[32], cb[32], cs[32];
        memcpy(ca, a, (size_t)la); ca[la] = '\0';
        memcpy(cb, b, (size_t)lb); cb[lb] = '\0';
        snprintf(cs, sizeof cs, "%llu", strtoull(ca, NULL, 10) + strtoull(cb, NULL, 10));
        if (strcmp(cs, want) != 0) return "big-number addition disagrees with integers (test bug)";
    }
    return NULL;
}

// sum, parity
static const char *answer_digits(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    int acc = 0;
    if (!all_in(body, bl, task == SUM ? '1' : '0', task == SUM ? '9' : '1')) return "body has a wrong digit";
    for (int i = 0; i < bl; i++) acc += body[i] - '0';
    pr->n = bl;
    want[0] = task == SUM ? (char)('0' + acc % 10) : (acc % 2 ? 'o' : 'e');
    *wl = 1;
    return NULL;
}

// A signed digit "+d" / "-d" at s into *v; 0 when malformed.
static int signed_digit(const char *s, int lo, int hi, int *v) {
    if ((s[0] != '+' && s[0] != '-') || s[1] < '0' || s[1] > '9') return 0;
    *v = (s[0] == '-' ? -1 : 1) * (s[1] - '0');
    return *v >= lo && *v <= hi && !(s[0] == '-' && s[1] == '0');
}

// polynomial: "+X:" then terms "+Cxd" joined by '+'; the value at X mod 10 in 0..9
static const char *answer_poly(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task;
    int x, c;
    if (bl < 7 || !signed_digit(body, -2, 2, &x) || body[2] != ':') return "no point +X: in -2..2";
    if ((bl - 3 + 1) % 5 != 0) return "terms are not 4 tokens joined by '+'";
    long long v = 0;
    pr->n = (bl - 3 + 1) / 5;
    for (int k = 0; k < pr->n; k++) {
        const char *t = body + 3 + 5 * k;
        if (k && t[-1] != '+') return "terms not joined by '+'";
        if (!signed_digit(t, -3, 3, &c) || t[2] != 'x' || t[3] < '0' || t[3] > '3') return "malformed term";
        long long p = 1;
        for (int d = 0; d < t[3] - '0'; d++) p *= x;
        v += c * p;
    }
    want[0] = (char)('0' + ((v % 10) + 10) % 10);
    *wl = 1;
    return NULL;
}

static int cmp_long(const void *x, const void *y) {
    long a = *(const long *)x, b = *(const long *)y;
    return (a > b) - (a < b);
}

// sort-multi: integers 10..9999 joined by ','; the answer sorted, joined by ','
static const char *answer_sortm(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task;
    long v[BUF];
    int k = 0;
    for (int i = 0; i < bl;) {
        int j = i;
        while (j < bl && body[j] != ',') j++;
        if (j - i < 2 || j - i > 4 || !all_in(body + i, j - i, '0', '9') || body[i] == '0') return "an item is not 10..9999";
        v[k++] = strtol(body + i, NULL, 10);
        i = j + 1;
        if (j + 1 == bl) return "a trailing ','";
    }
    pr->n = k;
    qsort(v, (size_t)k, sizeof *v, cmp_long);
    *wl = 0;
    for (int i = 0; i < k; i++) *wl += snprintf(want + *wl, 8, "%s%ld", i ? "," : "", v[i]);
    return NULL;
}

// lego: clauses "v:+1" / "v:-1" (the first), then "w:+v" / "w:-v" each naming the variable before,
// distinct letters, joined by ','; then "?q" with q in the chain's second half; the answer +1 / -1
static const char *answer_lego(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task;
    if (bl < 6 || (bl - 2 + 1) % 5 != 0 || body[bl - 2] != '?') return "not clauses of 4 tokens and a question ?q";
    int n = (bl - 2 + 1) / 5, val[26], seen[26] = {0};
    char var[26];
    if (n > 26) return "more than 26 variables";
    for (int k = 0; k < n; k++) {
        const char *t = body + 5 * k;
        if (k && t[-1] != ',') return "clauses not joined by ','";
        if (t[0] < 'a' || t[0] > 'z' || t[1] != ':' || (t[2] != '+' && t[2] != '-')) return "malformed clause";
        if (seen[t[0] - 'a']++) return "a variable assigned twice";
        var[k] = t[0];
        int sign = t[2] == '+' ? 1 : -1;
        if (k == 0 && t[3] != '1') return "the first clause is not +1 or -1";
        if (k > 0 && t[3] != var[k - 1]) return "a clause does not name the variable before it";
        val[k] = k == 0 ? sign : sign * val[k - 1];
    }
    int q = -1;
    for (int k = 0; k < n; k++)
        if (var[k] == body[bl - 1]) q = k;
    if (q < 0) return "the asked variable is not in the chain";
    if (2 * q < n) return "the asked variable is in the chain's first half";
    pr->n = n;
    pr->asked = q;
    want[0] = val[q] > 0 ? '+' : '-';
    want[1] = '1';
    *wl = 2;
    return NULL;
}

static const char *answer_retrieval(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task;
    if (bl < 3 || body[bl - 2] != '?' || body[bl - 1] < 'a' || body[bl - 1] > 'z') return "no question ?L";
    char asked = body[bl - 1];
    const char *h = body;
    int hl = bl - 2;
    char labels[32];
    int found = 0;
    for (int i = 0; i < hl;) {
        if (h[i] == '#') {
            if (i + 9 > hl || h[i + 1] < 'a' || h[i + 1] > 'z' || h[i + 2] != ':' || !all_in(h + i + 3, 5, '0', '9') ||
                h[i + 8] != ' ')
                return "malformed key";
            if (pr->keys >= 26) return "more than 26 keys";
            if (i >= 9 && h[i - 9] == '#') return "two keys without filler between them";
            for (int k = 0; k < pr->keys; k++)
                if (labels[k] == h[i + 1]) return "two keys share a label";
            labels[pr->keys++] = h[i + 1];
            if (h[i + 1] == asked) {
                found++;
                pr->asked_at = i;
                pr->filler_before = pr->filler;
                memcpy(want, h + i + 3, 5);
                *wl = 5;
            }
            i += 9;
        } else {
            unsigned char ch = (unsigned char)h[i];
            if (ch < 32 || ch > 126 || ch == '=' || ch == '?') return "filler has a separator or non-printable byte";
            pr->filler++;
            i++;
        }
    }
    if (found != 1) return "the asked label is not exactly one key";
    pr->n = hl;
    return NULL;
}

// SCAN: a phrase "U", "X D", "X o D", "X a D" (X = U or t, D = < or >) and its actions: "U" is U's
// action; "X D" is the turn D then X's action (none for t); "X o D" turns twice first; "X a D" is
// "X D" four times (Lake and Baroni 2018). *p advances past the phrase; returns the actions written.
static int scan_phrase(const char **p, const char *end, char *out) {
    static const char verbs[] = "wlrj", acts[] = "WLRJ";
    const char *s = *p;
    if (s >= end) return -1;
    const char *v = strchr(verbs, *s);
    int turn = *s == 't';
    if (!*s || (!v && !turn)) return -1;
    char act = v ? acts[v - verbs] : 0;
    s++;
    char form = s < end && (*s == 'o' || *s == 'a') ? *s++ : 0;
    char dir = s < end && (*s == '<' || *s == '>') ? *s++ : 0;
    if ((form && !dir) || (turn && !dir)) return -1;
    int k = 0;
    if (!dir) out[k++] = act;
    else if (form == 'a') for (int r = 0; r < 4; r++) { out[k++] = dir; if (act) out[k++] = act; }
    else {
        if (form == 'o') out[k++] = dir;
        out[k++] = dir;
        if (act) out[k++] = act;
    }
    *p = s;
    return k;
}

// A phrase with its optional twice (2) or thrice (3).
static int scan_repeated(const char **p, const char *end, char *out) {
    int k = scan_phrase(p, end, out);
    if (k < 0) return -1;
    int times = *p < end && (**p == '2' || **p == '3') ? *(*p)++ - '0' : 1;
    for (int r = 1; r < times; r++) memcpy(out + r * k, out, (size_t)k);
    return k * times;
}

static const char *answer_scan(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task;
    const char *p = body, *end = body + bl;
    char a[64], b[64];
    int ka = scan_repeated(&p, end, a), kb = 0;
    if (ka < 0) return "not a SCAN command";
    char join = p < end ? *p++ : 0;
    if (join && join != '+' && join != '@') return "not a SCAN command (expected and '+' or after '@')";
    if (join && (kb = scan_repeated(&p, end, b)) < 0) return "not a SCAN command after its conjunction";
    if (p != end) return "text after the SCAN command";
    // "x and y": x then y; "x after y": y then x
    memcpy(want, join == '@' ? b : a, (size_t)(join == '@' ? kb : ka));
    memcpy(want + (join == '@' ? kb : ka), join == '@' ? a : b, (size_t)(join == '@' ? ka : kb));
    *wl = ka + kb;
    pr->n = ka + kb;
    return NULL;
}

static const char *answer_tokens(int task, const char *body, int bl, Parsed *pr, char *want, int *wl) {
    (void)task; (void)body; (void)bl; (void)pr; (void)want; (void)wl;
    return "pcfg instances hold tokens past the bytes: check them as tokens";
}

static const AnswerFn ANSWER[N_TASKS] = {
    answer_letters, answer_letters, answer_repeat, answer_repeat, answer_replace, answer_repeat, answer_letters,
    answer_letters, answer_letters, answer_addition, answer_poly, answer_letters, answer_sortm, answer_digits,
    answer_digits, answer_lego, answer_scan, answer_tokens, answer_retrieval };

// The form every task shares (the tag, one line, the '=': the only one, in retrieval the last, and
// the haystack's reader refuses any before it), then the task's answer against the target.
const char *check_instance(int task, const char *s, int len, Parsed *pr) {
    static char why[256];
    memset(pr, 0, sizeof *pr);
    if (task < 0 || task >= N_TASKS) return "unknown task";
    const char *tag = task_info(task)->tag;
    int tl = (int)strlen(tag);
    if (len < tl + 3 || strncmp(s, tag, (size_t)tl) != 0) return "does not start with the tag";
    if (s[len - 1] != '\n') return "does not end with a newline";
    if (memchr(s, '\n', (size_t)len - 1)) return "has a newline before its end";
    int eq = -1, n_eq = 0;
    for (int i = 0; i < len; i++)
        if (s[i] == '=') { eq = i; n_eq++; }
    if (eq < 0) return "has no '='";
    if (task != RETRIEVAL && n_eq != 1) return "has more than one '='";
    if (task != RETRIEVAL) {  // the first '=' is the separator
        eq = (int)(strchr(s, '=') - s);
    }
    pr->prompt_len = eq + 1;
    pr->target_len = len - eq - 1;
    const char *body = s + tl, *target = s + eq + 1;
    int bl = eq - tl, gl = len - eq - 2;  // body and target lengths (target without '\n')
    char want[BUF];
    int wl = 0;
    if (bl < 1) return "empty body";
    const char *bad = ANSWER[task](task, body, bl, pr, want, &wl);
    if (bad) return bad;
    if (gl != wl || memcmp(target, want, (size_t)wl) != 0) {
        snprintf(why, sizeof why, "target '%.*s' is not the answer '%.*s'", gl < 100 ? gl : 100, target,
                 wl < 100 ? wl : 100, want);
        return why;
    }
    return NULL;
}
