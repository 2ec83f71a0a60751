// util/flags.h: the flag tables of every program (./train, ./compare, ./ladder, ./tokenize, ./bench)
// and of posenc's scheme settings. A program declares one array of FlagRow, a row per flag, which
// drives parsing (flags_parse), the type and range checks (flag_value) and --help (flags_help).
// The words of the error messages stay the program's: flags_parse reports each error through the
// program's fail() with what went wrong, so every program keeps the messages it has always printed.
#ifndef UTIL_FLAGS_H
#define UTIL_FLAGS_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    FLAG_INT,      // an int in [min, max]
    FLAG_LONG,     // a long in [min, max]
    FLAG_LLONG,    // a long long in [min, max] (max compared as a double: 9.2e18)
    FLAG_DOUBLE,   // a finite double in [min, max] ((min, max] with lo_open)
    FLAG_STRING,   // the value as given, a const char * into argv
    FLAG_SWITCH,   // no value on the command line: the int set to 1 (a stored value: an int in [min, max])
    FLAG_CHOICE,   // one of choices[]: the int set to its index
    FLAG_LIST,     // a list of numbers; the owner of the row reads it (posenc: PosFactors, each in (min, max])
    FLAG_CALL,     // the value handed to call(ctx, value), which checks and keeps it
} FlagType;

typedef struct FlagRow {
    const char *name;                   // the flag without its leading --: "rope-base"
    FlagType type;
    size_t off;                         // offsetof(the program's struct, field); FLAG_CALL: unused
    double min, max;                    // numbers outside [min, max] are refused, never clamped
    int tag;                            // the program's own mark (./train: K_RUN, K_MODEL, K_TRAIN;
                                        // ./tokenize: its commands; posenc: PE_EVAL | PE_METADATA)
    const char *arg;                    // the value's name in --help ("N"); NULL or "": a switch
    const char *group;                  // the --help heading it is listed under (NULL: none)
    const char *help;                   // --help's text, a further indented line per "\n";
                                        // NULL: not listed, unless the printer's describe() writes it
    void (*call)(void *ctx, char *value);   // FLAG_CALL
    // the less common fields, given by name (.key = ...)
    const char *key;                    // a stored name other than the flag's ("rope_base")
    const char *const *choices;         // FLAG_CHOICE: the value names, NULL-terminated
    double def;                         // a default the row's owner applies (posenc), a choice's index
    int lo_open;                        // 1: the range is (min, max]
    int required;                       // ./tokenize: the commands (tag bits) that need the flag
    const char *absent;                 // the value meant when a stored file lacks this row (posenc)
} FlagRow;

// A table's rows give the common fields in order and leave the rest out (zero); -Wextra would warn
// of every row, so a table stands between FLAGS_TABLE_BEGIN and FLAGS_TABLE_END.
#define FLAGS_TABLE_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"")
#define FLAGS_TABLE_END _Pragma("GCC diagnostic pop")

// What flag_value and flags_parse report to the program's fail().
typedef enum {
    FLAG_OK,
    FLAG_EMPTY,          // a string flag given ""
    FLAG_NOT_INTEGER,    // not an integer (or past a long long)
    FLAG_NOT_NUMBER,     // not a finite number
    FLAG_OUT_OF_RANGE,   // a number outside [min, max]
    FLAG_NOT_CHOICE,     // a FLAG_CHOICE value that is none of its names
    FLAG_UNKNOWN,        // a --word that is no row (and that other() did not take)
    FLAG_NO_VALUE,       // the last word is a flag that takes a value
    FLAG_NOT_FLAG,       // a word without -- where the program takes none (positional: 0)
    FLAG_TWICE,          // a flag given again (once: 1)
    FLAG_OTHER_COMMAND,  // a row whose tag lacks every bit of `only` (./tokenize: another command's flag)
} FlagError;

// The row named `name` (without --), or NULL.
const FlagRow *flag_find(const FlagRow *rows, int n, const char *name);
// Checks value v against row r and, when it is good, stores it at base + r->off (FLAG_CALL rows are
// not stored: flags_parse calls them). empty_ok: a string may be "". Returns FLAG_OK or the error.
FlagError flag_value(const FlagRow *r, void *base, const char *v, int empty_ok);

// One parse of argv[first..argc-1] against a table.
typedef struct FlagParser {
    const FlagRow *rows;
    int n;
    void *base;           // the struct the rows' offsets point into
    void *ctx;            // handed to the rows' call(), and to the hooks below
    int first;            // the first word read (1, or 2 after a command)
    int dashes_end;       // 1: a word "--" ends the flags (then word() gets the rest, or parsing stops)
    int positional;       // 1: a word without -- goes to word(); 0: it is an error (FLAG_NOT_FLAG)
    int once;             // 1: a flag given twice is an error (FLAG_TWICE)
    int empty_ok;         // 1: a string flag may be given ""
    int only;             // nonzero: a row whose tag has none of these bits is an error
    void (*help)(void *ctx);                           // --help or -h: prints; flags_parse exits 0
    int (*other)(void *ctx, int argc, char **argv, int *i);   // a --name no row has: 1 when taken (it
                                                       // reads its value at *i + 1 and moves *i on)
    void (*word)(void *ctx, char *word);               // a positional word
    // An error: word is argv[i], r its row (NULL for FLAG_UNKNOWN and FLAG_NOT_FLAG), v its value
    // (NULL when there is none). It must not return (it prints the program's message and exits).
    void (*fail)(void *ctx, FlagError e, const char *word, const FlagRow *r, const char *v, int argc, char **argv, int i);
    unsigned char *given;  // out, when not NULL: given[k] = 1 for every row k on the command line (n entries)
    int rest;              // out: the index after "--" (dashes_end and no word()); 0: there was none
} FlagParser;

void flags_parse(FlagParser *p, int argc, char **argv);

// --help's lines of the rows in `group` (NULL: every row, whatever its group), in table order:
// "  --NAME ARG" padded to width, a space, the help (its further lines indented under its first)
// and " (required)" for a row with required bits. describe, when not NULL, writes the help of a row
// whose help is NULL into buf and returns it (NULL: the row is not listed).
typedef const char *(*FlagDescribe)(const FlagRow *r, char *buf, size_t cap);
void flags_help(FILE *f, const FlagRow *rows, int n, const char *group, int width, FlagDescribe describe);

#endif
