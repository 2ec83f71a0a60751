// tests/test_claims.c: the syntax of a claim on a text grid (lab/claims_text.h): claims read into
// their rows, side, margin, window and mode, and malformed claims refused with a message that says
// what is wrong. Whether the rows and windows exist is the grid's question (tests/test_compare.sh).
#include "lab/claims_text.h"
#include "tests/testutil.h"

static void good(const char *s, const char *a, const char *b, int less, double margin, double window, int sliding) {
    TextClaim x;
    char msg[512] = "";
    int ok = text_claim_parse(s, &x, msg, sizeof msg);
    EXPECT(ok, "'%s' refused: %s", s, msg);
    if (!ok) return;
    EXPECT(!strcmp(x.a, a) && !strcmp(x.b, b), "'%s': rows '%s' and '%s', expected '%s' and '%s'", s, x.a, x.b, a, b);
    EXPECT(x.less == less, "'%s': side %d, expected %d", s, x.less, less);
    EXPECT(x.margin == margin && x.window == window, "'%s': margin %g window %g, expected %g and %g", s, x.margin, x.window,
           margin, window);
    EXPECT(x.sliding == sliding, "'%s': sliding %d, expected %d", s, x.sliding, sliding);
    EXPECT(!strcmp(x.text, s), "'%s': kept as '%s'", s, x.text);
    EXPECT(x.sa == -1 && x.va == -1 && x.sb == -1 && x.vb == -1, "'%s': rows resolved by the parser", s);
}

static void bad(const char *s, const char *needle) {
    TextClaim x;
    char msg[512] = "";
    EXPECT(!text_claim_parse(s, &x, msg, sizeof msg), "'%s' accepted", s);
    EXPECT(strstr(msg, needle), "'%s': the message '%s' lacks '%s'", s, msg, needle);
}

int main(void) {
    good("rope<alibi@1", "rope", "alibi", 1, 1, 1, 0);
    good("rope>alibi@4", "rope", "alibi", 0, 1, 4, 0);
    good("rope25<rope*1.02@1", "rope25", "rope", 1, 1.02, 1, 0);
    good("pi>rope*1.05@4:sliding", "pi", "rope", 0, 1.05, 4, 1);
    good("a<b@0.5:nonoverlap", "a", "b", 1, 1, 0.5, 0);
    // labels with '@' (the --double-length rows) and '+' (extensions): the last '@' starts the window
    good("rope+yarn+ft<rope@512*1.05@4", "rope+yarn+ft", "rope@512", 1, 1.05, 4, 0);
    good("alibi@32>alibi@2", "alibi@32", "alibi", 0, 1, 2, 0);
    good("a<a*1.5@1", "a", "a", 1, 1.5, 1, 0);
    good("a<b*2e-1@1e0", "a", "b", 1, 0.2, 1, 0);

    bad("", "1 to 127 characters");
    bad("a < b@1", "no spaces");
    bad("a=b@1", "one < or >");
    bad("a<b<c@1", "one < or >");
    bad("a<b>c@1", "one < or >");
    bad("a<b", "no window");
    bad("a@1<b", "no window");
    bad("a<b@", "is not a window");
    bad("a<b@x", "'x' after @ is not a window");
    bad("a<b@0", "'0' after @ is not a window");
    bad("a<b@-2", "is not a window");
    bad("a<b@inf", "is not a window");
    bad("a<b@2:slide", "':slide' after the window is not a mode");
    bad("a<b@2:", "after the window is not a mode");
    bad("a<b*@1", "'' after * is not a margin");
    bad("a<b*0@1", "'0' after * is not a margin");
    bad("a<b*-1.02@1", "is not a margin");
    bad("a<b*1.02x@1", "'1.02x' after * is not a margin");
    bad("<b@1", "a row label is empty");
    bad("a<@1", "a row label is empty");
    bad("a<*1.02@1", "a row label is empty");
    char longer[200];
    memset(longer, 'x', 150); longer[150] = 0;
    bad(longer, "1 to 127 characters");
    memset(longer, 'x', 100); strcpy(longer + 100, "<b@1");
    bad(longer, "over 95 characters");
    return test_summary("test_claims");
}
