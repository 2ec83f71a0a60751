// lab/claims_text.c: a claim on a text grid read from its text (lab/claims_text.h has the syntax).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/claims_text.h"

// A positive finite number that is the whole of s[0..len) (strtod's syntax); NAN when it is not.
static double whole_number(const char *s, size_t len) {
    char buf[64], *end;
    if (!len || len >= sizeof buf) return NAN;
    memcpy(buf, s, len);
    buf[len] = 0;
    errno = 0;
    double x = strtod(buf, &end);
    return *end || errno || !isfinite(x) || !(x > 0) ? NAN : x;
}

// A row label: 1 .. CLAIM_LABEL_MAX - 1 bytes copied into out.
static int copy_label(const char *s, size_t len, char *out) {
    if (!len || len >= CLAIM_LABEL_MAX) return 0;
    memcpy(out, s, len);
    out[len] = 0;
    return 1;
}

int text_claim_parse(const char *s, TextClaim *x, char *msg, size_t cap) {
    memset(x, 0, sizeof *x);
    x->sa = x->va = x->sb = x->vb = -1;
    const char *how = "write A<B@W or A>B@W (A's perplexity below or above B's at W times the context), "
                      "optionally with a margin on B (A<B*1.02@1) and :sliding after W";
    size_t n = strlen(s);
    if (!n || n >= CLAIM_TEXT_MAX) { snprintf(msg, cap, "a claim has 1 to %d characters; %s", CLAIM_TEXT_MAX - 1, how); return 0; }
    if (strpbrk(s, " \t\r\n")) { snprintf(msg, cap, "a claim has no spaces; %s", how); return 0; }
    snprintf(x->text, sizeof x->text, "%s", s);
    const char *op = strpbrk(s, "<>");
    if (!op || strpbrk(op + 1, "<>")) { snprintf(msg, cap, "a claim has one < or >; %s", how); return 0; }
    x->less = *op == '<';
    const char *at = strrchr(s, '@');
    if (!at || at < op) { snprintf(msg, cap, "no window: end the claim with @W, W a multiple of the context (@1, @4); %s", how); return 0; }
    // the window, then the mode
    const char *colon = strchr(at, ':');
    size_t wlen = colon ? (size_t)(colon - at - 1) : strlen(at + 1);
    x->window = whole_number(at + 1, wlen);
    if (isnan(x->window)) {
        snprintf(msg, cap, "'%.*s' after @ is not a window: give a positive multiple of the context, as --ppl-windows does (@1, @4, @0.5)",
                 (int)wlen, at + 1);
        return 0;
    }
    if (colon && !strcmp(colon + 1, "sliding")) x->sliding = 1;
    else if (colon && strcmp(colon + 1, "nonoverlap")) {
        snprintf(msg, cap, "':%s' after the window is not a mode: give :sliding or :nonoverlap (the default)", colon + 1);
        return 0;
    }
    // the rows, and the margin on B
    const char *b = op + 1, *star = NULL;
    for (const char *p = b; p < at; p++) if (*p == '*') star = p;
    x->margin = 1;
    if (star) {
        x->margin = whole_number(star + 1, (size_t)(at - star - 1));
        if (isnan(x->margin)) {
            snprintf(msg, cap, "'%.*s' after * is not a margin: give a positive factor on B's perplexity (*1.02: within 2%%)",
                     (int)(at - star - 1), star + 1);
            return 0;
        }
    }
    if (!copy_label(s, (size_t)(op - s), x->a) || !copy_label(b, (size_t)((star ? star : at) - b), x->b)) {
        snprintf(msg, cap, "a row label is empty or over %d characters; %s", CLAIM_LABEL_MAX - 1, how);
        return 0;
    }
    return 1;
}
