// lab/compare.h: ./compare's command line, read into the settings of lab/runs.h by the flag table of
// lab/compare_options.c.
#ifndef COMPARE_H
#define COMPARE_H

#include "lab/runs.h"

// The command line into c: defaults, then the flags; exits with a message on any bad flag or value
// (--help prints the usage and exits 0). The strings of c point into argv, which list flags cut up.
void compare_parse(Cfg *c, int argc, char **argv);

#endif
