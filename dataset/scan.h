// dataset/scan.h: the whole SCAN language (Lake and Baroni 2018, "Generalization without
// systematicity", ICML), every command numbered, with its action sequence, written in one-byte
// tokens. This module provides the language only; the task layer builds the instances and chooses
// the split.
//
// The paper's grammar (its released tasks.txt holds exactly these 20,910 commands):
//
//     C -> S and S | S after S | S          S -> V twice | V thrice | V
//     V -> X opposite D | X around D | X D | U          X -> U | turn
//     D -> left | right                     U -> walk | look | run | jump
//
// ("turn" never stands alone.) Meaning: U is its action; "turn D" is TURN_D; "U D" is TURN_D U;
// "X opposite D" is TURN_D TURN_D then X's action if X is not turn; "X around D" is that of "X D"
// four times; twice / thrice repeat the phrase; "x and y" is x then y; "x after y" is y then x.
// E.g. "jump around right and walk twice" -> TURN_RIGHT JUMP TURN_RIGHT JUMP TURN_RIGHT JUMP
// TURN_RIGHT JUMP WALK WALK. The length of a command is its number of actions, 1..48; the paper's
// length split trains on 1..22 and tests on 24..48 (no command has 23).
//
// Tokens: one byte a word, never '=', '\n' or '|' (the task's separator, end and NEXT markers).
//
//     command  walk w   look l   run r   jump j   turn t   left <   right >
//              opposite o   around a   twice 2   thrice 3   and +   after @
//     action   WALK W   LOOK L   RUN R   JUMP J   TURN_LEFT <   TURN_RIGHT >
//
// so "jump around right and walk twice" is "ja>+w2" and its actions ">J>J>J>JWW". Left and right
// are the same tokens in both: a turn is its direction.
//
// Numbering (fixed; it is the order of scan_command_tokens over i = 0..20909):
//   V: 0..3 = walk, look, run, jump; then 4 + 10 f + 2 x + d for the form f (0 "X D", 1 "X opposite
//      D", 2 "X around D"), X = x (walk, look, run, jump, turn) and D = d (left, right): 34 in all.
//   S: 3 v + m, m = 0 (V), 1 (V twice), 2 (V thrice): 102 in all.
//   C: 0..101 = S alone; 102 + 102 s1 + s2 = "s1 and s2"; 102 + 102^2 + 102 s1 + s2 = "s1 after s2".
#ifndef SCAN_H
#define SCAN_H

#include <stddef.h>

enum {
    SCAN_COMMANDS = 20910,          // the whole language
    SCAN_MAX_ACTIONS = 48,          // "X around D thrice and/after X around D thrice" (X not turn)
    SCAN_MAX_COMMAND_TOKENS = 9,    // e.g. "walk around left twice and walk around left twice"
};

// command tokens
#define SCAN_WALK 'w'
#define SCAN_LOOK 'l'
#define SCAN_RUN 'r'
#define SCAN_JUMP 'j'
#define SCAN_TURN 't'
#define SCAN_LEFT '<'
#define SCAN_RIGHT '>'
#define SCAN_OPPOSITE 'o'
#define SCAN_AROUND 'a'
#define SCAN_TWICE '2'
#define SCAN_THRICE '3'
#define SCAN_AND '+'
#define SCAN_AFTER '@'
// action tokens
#define SCAN_A_WALK 'W'
#define SCAN_A_LOOK 'L'
#define SCAN_A_RUN 'R'
#define SCAN_A_JUMP 'J'
#define SCAN_A_TURN_LEFT '<'
#define SCAN_A_TURN_RIGHT '>'

int scan_count(void);                                  // SCAN_COMMANDS
int scan_max_command_tokens(void);                     // SCAN_MAX_COMMAND_TOKENS
int scan_max_actions(void);                            // SCAN_MAX_ACTIONS

// Command i (0 <= i < scan_count(); CHECK otherwise): its action count, its command tokens and its
// action tokens. The token functions write at most cap tokens (CHECK that cap suffices) and return
// how many they wrote.
int scan_actions(int i);
int scan_command_tokens(int i, int *out, int cap);
int scan_action_tokens(int i, int *out, int cap);

// Commands by length: how many have n actions (0 for n outside 1..48 and for the lengths no
// command has), and the number of the k-th of them, 0 <= k < scan_count_of_length(n), in
// increasing command number (CHECK otherwise). The table behind them is built on first use
// (thread-safe) and kept for the life of the process.
int scan_count_of_length(int n);
int scan_of_length(int n, int k);

// Command i in the paper's words ("jump around right and walk twice"), NUL-terminated; returns the
// length snprintf would (so a return >= cap means the text was cut).
int scan_command_text(int i, char *buf, size_t cap);
// The number of the command written in words (single spaces, as scan_command_text writes it), or
// -1 when the text is not a SCAN command.
int scan_parse(const char *words);

#endif
