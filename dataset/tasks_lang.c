// dataset/tasks_lang.c: the two tasks of the NoPE paper built on a fixed language: SCAN (Lake and
// Baroni 2018; dataset/scan.h) and PCFG SET (Hupkes et al. 2020; dataset/pcfg.h).
//
//     scan:ja>+w2=>J>J>J>JWW        "jump around right and walk twice" -> its 10 actions
//     pcfg:Aw<0><1><2>,d<3><4>=...  "append swap_first_last A1 B1 C1 , repeat D1 E1" -> its value
//
// SCAN: the length is the number of actions; the instances of a length are SCAN's commands with
// that many actions, numbered as scan_of_length numbers them (a pool, enumerated for the tests,
// and drawn from the whole language with every command equally likely: tasks.c's table weighs
// each training length by its pool). Lengths no command has (23, 29, 31, ...) have no instance.
// PCFG: the length is the number of function words; pcfg_draw samples an expression with exactly
// that many (never enumerated), and its value is the target.
#include "dataset/pcfg.h"
#include "dataset/scan.h"
#include "dataset/tasks_impl.h"

long long size_scan(const TaskConfig *c, int n) {
    (void)c;
    return n >= 1 && n <= SCAN_MAX_ACTIONS ? scan_count_of_length(n) : 0;
}

// A training length's weight: its pool, so that every command of the language is equally likely.
long long weight_scan(const TaskConfig *c, int n) { return size_scan(c, n); }

int max_scan(const TaskConfig *c, int n) {
    (void)c;
    return SCAN_MAX_COMMAND_TOKENS + 1 + n;          // the command, '=', n actions
}

void pool_scan(const TaskConfig *c, int n, long long i, Out *o, int *prompt_len) {
    (void)c;
    int cmd = scan_of_length(n, (int)i);
    o->n += scan_command_tokens(cmd, o->p + o->n, SCAN_MAX_COMMAND_TOKENS);
    put_eq(o, prompt_len);
    o->n += scan_action_tokens(cmd, o->p + o->n, n);
}

int max_pcfg(const TaskConfig *c, int n) {
    (void)c;
    return pcfg_max_in_tokens(n) + 1 + pcfg_max_out_tokens(n);   // the expression, '=', its value
}

void gen_pcfg(const TaskConfig *c, int n, double depth, Rng *r, Out *o, int *prompt_len) {
    (void)c; (void)depth;
    int in = pcfg_max_in_tokens(n), out = pcfg_max_out_tokens(n), n_in = 0, n_out = 0;
    int *buf = o->p + o->n;          // the expression in place; the value after '='
    int value[PCFG_MAX_STRING];
    pcfg_draw(n, r, buf, in, &n_in, value, out, &n_out);
    o->n += n_in;
    put_eq(o, prompt_len);
    for (int k = 0; k < n_out; k++) put(o, value[k]);
}
