// tests/fuzz/fuzz.h: what a harness (tests/fuzz/fuzz_NAME.c) defines and what tests/fuzz/fuzz.c
// gives it. A harness feeds one input to a reader and checks what the reader accepted; a CHECK in
// the reader (a refused input) longjmps back to fuzz.c, which releases what the input allocated.
// fuzz.c provides the libFuzzer entry point, or with -DFUZZ_STANDALONE a main() that runs files
// (the regression inputs of tests/fuzz/regress/, or a crash that libFuzzer saved).
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>

// The harness: one input. It returns when the reader accepted the input.
void fuzz_one(const uint8_t *data, size_t size);

// A path that reads as the bytes data[0..size): "/proc/self/fd/N" of a memfd, no disk write.
// Closed by fuzz.c after the input.
const char *fuzz_file(const uint8_t *data, size_t size);

// The input split into an argument vector at each '\n' (argv[0] = prog, then one argument per
// line; a last line without '\n' counts too), at most cap entries with argv[argc] = NULL. The
// strings are writable (parsers cut them up with strtok) and freed by fuzz.c after the input.
int fuzz_argv(const uint8_t *data, size_t size, const char *prog, char **argv, int cap);
// 1 when argv[1..argc) holds --help or -h anywhere: the programs then print their usage and exit
// 0, which is not a parse to fuzz. It errs on the safe side: where -h is a flag's value the parser
// would take it as one, and the input is skipped, not misjudged. ./compare's harness, whose -- ends
// its flags, walks the arguments as its parser does instead.
int fuzz_asks_help(char **argv, int argc);

// The harness's own checks of what a reader accepted: a failure aborts (a finding).
#define FUZZ_ASSERT(cond)                                                               \
    do {                                                                                \
        if (!(cond)) fuzz_assert_fail(#cond, __FILE__, __LINE__);                       \
    } while (0)
_Noreturn void fuzz_assert_fail(const char *what, const char *file, int line);

#endif
