// tests/test_scan.c: the SCAN language (dataset/scan.h): its size and lengths against the public
// dataset (brendenlake/SCAN, tasks.txt and the length split), the paper's worked examples, every
// command's actions against an interpreter of the paper's semantics written here on words, the
// numbering, the table by length (built from two threads at once), and the refusals.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/common.h"
#include "dataset/scan.h"
#include "tests/testutil.h"

// Commands per action count 1..48 in the released tasks.txt of brendenlake/SCAN (20,910 lines);
// lengths 23, 29, 31, 34, 35, 37-39 and 41-47 have none. Its length split trains on the 16,990
// commands of 1..22 actions and tests the 3,920 of 24..48; at 25 the split is 17,774 / 3,136.
static const int PER_LENGTH[49] = {
    0, 6, 88, 398, 860, 1184, 1178, 1104, 1450, 1256, 1696, 1072, 1578, 432, 848, 688, 304, 512,
    784, 448, 464, 64, 576, 0, 336, 448, 512, 448, 448, 0, 576, 0, 448, 256, 0, 0, 64, 0, 0, 0,
    256, 0, 0, 0, 0, 0, 0, 0, 128,
};

// The tokens of command i as a string.
static void command_string(int i, char *s) {
    int t[SCAN_MAX_COMMAND_TOKENS];
    int n = scan_command_tokens(i, t, SCAN_MAX_COMMAND_TOKENS);
    for (int k = 0; k < n; k++) s[k] = (char)t[k];
    s[n] = '\0';
}
static void action_string(int i, char *s) {
    int t[SCAN_MAX_ACTIONS];
    int n = scan_action_tokens(i, t, SCAN_MAX_ACTIONS);
    for (int k = 0; k < n; k++) s[k] = (char)t[k];
    s[n] = '\0';
}

// The paper's worked examples (its table 1 and README) and a few more worked by hand, in this
// module's tokens: W L R J for WALK LOOK RUN JUMP, < > for TURN_LEFT TURN_RIGHT.
static void test_examples(void) {
    static const struct { const char *words, *tokens, *actions; } EX[] = {
        {"jump", "j", "J"},
        {"jump left", "j<", "<J"},
        {"jump around right", "ja>", ">J>J>J>J"},
        {"turn left twice", "t<2", "<<"},
        {"jump thrice", "j3", "JJJ"},
        {"jump opposite left and walk thrice", "jo<+w3", "<<JWWW"},
        {"jump opposite left after walk around left", "jo<@wa<", "<W<W<W<W<<J"},
        {"jump around right and walk twice", "ja>+w2", ">J>J>J>JWW"},
        {"turn opposite left", "to<", "<<"},
        {"turn around right", "ta>", ">>>>"},
        {"walk after run thrice", "w@r3", "RRRW"},
        {"look around left twice", "la<2", "<L<L<L<L<L<L<L<L"},
        {"run opposite left twice and turn opposite left", "ro<2+to<", "<<R<<R<<"},
        {"turn right thrice after look", "t>3@l", "L>>>"},
    };
    for (size_t e = 0; e < sizeof EX / sizeof EX[0]; e++) {
        int i = scan_parse(EX[e].words);
        EXPECT(i >= 0, "'%s' does not parse", EX[e].words);
        if (i < 0) continue;
        char cmd[16], act[64], text[128];
        command_string(i, cmd);
        action_string(i, act);
        scan_command_text(i, text, sizeof text);
        EXPECT(strcmp(cmd, EX[e].tokens) == 0, "'%s': tokens %s, expected %s", EX[e].words, cmd, EX[e].tokens);
        EXPECT(strcmp(act, EX[e].actions) == 0, "'%s': actions %s, expected %s", EX[e].words, act, EX[e].actions);
        EXPECT(scan_actions(i) == (int)strlen(EX[e].actions), "'%s': %d actions", EX[e].words, scan_actions(i));
        EXPECT(strcmp(text, EX[e].words) == 0, "command %d reads '%s', expected '%s'", i, text, EX[e].words);
    }
    // the numbering of scan.h
    EXPECT(scan_parse("walk") == 0 && scan_parse("jump thrice") == 11 && scan_parse("walk left") == 12,
           "numbering: walk %d, jump thrice %d, walk left %d", scan_parse("walk"), scan_parse("jump thrice"),
           scan_parse("walk left"));
    EXPECT(scan_parse("turn around right thrice") == 101 && scan_parse("walk and walk") == 102 &&
           scan_parse("walk after walk") == 102 + 102 * 102 &&
           scan_parse("turn around right thrice after turn around right thrice") == SCAN_COMMANDS - 1,
           "numbering of the phrases and pairs");
    static const char *const BAD[] = {"turn", "turn twice", "jump jump", "walk and", "and walk", "walk twice twice",
                                      "left", "jump around", "walk opposite", "walk left right", "walk and run and jump",
                                      "jump around right left", "", "Walk", "walk  and run x"};
    for (size_t b = 0; b < sizeof BAD / sizeof BAD[0]; b++)
        EXPECT(scan_parse(BAD[b]) == -1, "'%s' parsed as %d, not a command", BAD[b], scan_parse(BAD[b]));
    EXPECT(scan_parse(NULL) == -1, "NULL parsed");
    char small[8];
    EXPECT(scan_command_text(SCAN_COMMANDS - 1, small, sizeof small) > 8 && strlen(small) == 7,
           "a short buffer gets the cut text and the full length");
}

// The paper's interpretation function on words, independently of scan.c: appends the actions of
// words w[0..n-1] to out (a NUL-terminated string); returns 0 if the words are not a phrase.
static int interpret(char **w, int n, char *out) {
    for (int k = 0; k < n; k++)   // [[x and y]] = [[x]] [[y]]; [[x after y]] = [[y]] [[x]]
        if (!strcmp(w[k], "and") || !strcmp(w[k], "after")) {
            int after = !strcmp(w[k], "after");
            return interpret(after ? w + k + 1 : w, after ? n - k - 1 : k, out) &&
                   interpret(after ? w : w + k + 1, after ? k : n - k - 1, out);
        }
    if (n >= 2 && (!strcmp(w[n - 1], "twice") || !strcmp(w[n - 1], "thrice"))) {
        int times = !strcmp(w[n - 1], "twice") ? 2 : 3;
        for (int t = 0; t < times; t++)
            if (!interpret(w, n - 1, out)) return 0;
        return 1;
    }
    const char *verbs = "WLRJ", *names[] = {"walk", "look", "run", "jump"};
    char u = 0;
    for (int v = 0; v < 4; v++)
        if (!strcmp(w[0], names[v])) u = verbs[v];
    if (!u && strcmp(w[0], "turn")) return 0;
    char turn = !strcmp(w[n - 1], "left") ? '<' : !strcmp(w[n - 1], "right") ? '>' : 0;
    char one[4] = {0};   // [[U D]] = TURN_D U, [[turn D]] = TURN_D
    if (n == 1 && u) one[0] = u;
    else if (n == 2 && turn) { one[0] = turn; one[1] = u; }
    else if (n == 3 && turn && !strcmp(w[1], "opposite")) { one[0] = turn; one[1] = turn; one[2] = u; }
    else if (n == 3 && turn && !strcmp(w[1], "around")) {
        for (int t = 0; t < 4; t++) { char p[3] = {turn, u, 0}; strcat(out, p); }
        return 1;
    } else return 0;
    strcat(out, one);
    return 1;
}

static int cmp_string(const void *a, const void *b) { return strcmp(a, b); }

// Every command: its words parse back to it, its actions are the interpreter's, its tokens spell
// its words one for one, and no two commands share their tokens.
static void test_all_commands(void) {
    static char tokens[SCAN_COMMANDS][SCAN_MAX_COMMAND_TOKENS + 1];
    int count[SCAN_MAX_ACTIONS + 2] = {0}, bad_parse = 0, bad_actions = 0, bad_tokens = 0, longest = 0, longest_cmd = 0;
    for (int i = 0; i < scan_count(); i++) {
        char text[128], copy[128], act[64], want[128] = "";
        scan_command_text(i, text, sizeof text);
        bad_parse += scan_parse(text) != i;
        action_string(i, act);
        strcpy(copy, text);
        char *w[16];
        int n = 0;
        for (char *p = strtok(copy, " "); p; p = strtok(NULL, " ")) w[n++] = p;
        bad_actions += !interpret(w, n, want) || strcmp(act, want) != 0 || scan_actions(i) != (int)strlen(act);
        command_string(i, tokens[i]);
        bad_tokens += (int)strlen(tokens[i]) != n || strpbrk(tokens[i], "=\n|") != NULL;
        if (n == (int)strlen(tokens[i]))   // each word's token is the one the header lists
            for (int k = 0; k < n; k++) {
                const char *words = "walk look run jump turn left right opposite around twice thrice and after";
                const char *toks = "wlrjt<>oa23+@";
                const char *at = strstr(words, w[k]);
                int idx = 0;
                for (const char *c = words; c < at; c++) idx += *c == ' ';
                bad_tokens += !at || tokens[i][k] != toks[idx];
            }
        bad_tokens += strspn(act, "WLRJ<>") != strlen(act);
        count[scan_actions(i)]++;
        if (scan_actions(i) > longest) longest = scan_actions(i);
        if (n > longest_cmd) longest_cmd = n;
    }
    EXPECT(bad_parse == 0, "%d commands do not parse back to their number", bad_parse);
    EXPECT(bad_actions == 0, "%d commands' actions differ from the paper's interpretation", bad_actions);
    EXPECT(bad_tokens == 0, "%d commands' tokens do not spell their words", bad_tokens);
    EXPECT(longest == 48 && scan_max_actions() == 48, "longest %d actions (max %d), expected 48", longest, scan_max_actions());
    EXPECT(longest_cmd == 9 && scan_max_command_tokens() == 9, "longest command %d words, expected 9", longest_cmd);
    qsort(tokens, SCAN_COMMANDS, sizeof tokens[0], cmp_string);
    int dup = 0;
    for (int i = 1; i < SCAN_COMMANDS; i++) dup += strcmp(tokens[i - 1], tokens[i]) == 0;
    EXPECT(dup == 0, "%d commands share their tokens with another", dup);
    int total = 0;
    for (int n = 1; n <= 48; n++) {
        EXPECT(count[n] == PER_LENGTH[n], "length %d: %d commands, the dataset has %d", n, count[n], PER_LENGTH[n]);
        total += count[n];
    }
    EXPECT(total == 20910 && scan_count() == 20910, "%d commands (scan_count %d), expected 20910", total, scan_count());
}

// The table by length, first built by two threads at once.
static void test_by_length(void) {
    int got[2] = {0, 0};
    #pragma omp parallel for num_threads(2)
    for (int t = 0; t < 2; t++) got[t] = scan_count_of_length(48);
    EXPECT(got[0] == 128 && got[1] == 128, "commands of 48 actions from two threads: %d %d", got[0], got[1]);
    int total = 0, le22 = 0, le25 = 0, bad = 0;
    for (int n = 0; n <= 50; n++) {
        int c = scan_count_of_length(n);
        EXPECT(c == (n >= 1 && n <= 48 ? PER_LENGTH[n] : 0), "scan_count_of_length(%d) = %d", n, c);
        for (int k = 0; k < c; k++) {
            int i = scan_of_length(n, k);
            bad += scan_actions(i) != n || (k > 0 && i <= scan_of_length(n, k - 1));
        }
        total += c;
        if (n <= 22) le22 += c;
        if (n <= 25) le25 += c;
    }
    EXPECT(bad == 0, "%d entries of the length table are wrong or out of order", bad);
    EXPECT(total == 20910 && le22 == 16990 && le25 == 17774, "by length: %d in all, %d <= 22, %d <= 25", total, le22, le25);
    // the 48-action commands are "X around D thrice" joined to another: 8 x 8 pairs, and or after
    char text[128];
    scan_command_text(scan_of_length(48, 0), text, sizeof text);
    EXPECT(strcmp(text, "walk around left thrice and walk around left thrice") == 0, "first of length 48: %s", text);
}

static void child_range(const void *arg) { scan_actions(*(const int *)arg); }
static void child_of_length(const void *arg) { (void)arg; scan_of_length(23, 0); }
static void child_cap(const void *arg) {
    (void)arg;
    int t[SCAN_MAX_ACTIONS];
    scan_action_tokens(scan_of_length(48, 0), t, 47);
}

static void test_refusals(void) {
    int minus = -1, past = SCAN_COMMANDS;
    EXPECT(dies_with(child_range, &minus, "out of range", NULL), "a negative command number is refused");
    EXPECT(dies_with(child_range, &past, "out of range", NULL), "command 20910 is refused");
    EXPECT(dies_with(child_of_length, NULL, "length 23", NULL), "a command of 23 actions is refused (there is none)");
    EXPECT(dies_with(child_cap, NULL, "room for 47", NULL), "a buffer one short is refused");
}

int main(void) {
    test_examples();
    test_all_commands();
    test_by_length();
    test_refusals();
    return test_summary("test_scan");
}
