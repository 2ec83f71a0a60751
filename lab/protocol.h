// lab/protocol.h: ./compare --protocol FILE, the experiment fixed in a file before its run
// (lab/protocol.c says the format).
#ifndef PROTOCOL_H
#define PROTOCOL_H

#include "util/common.h"

typedef struct {
    const char *path;    // the file as given; NULL: no protocol
    uint64_t hash;       // FNV-1a 64 of its bytes
} Protocol;

// FNV-1a 64 of n bytes.
uint64_t protocol_hash(const char *text, size_t n);
// When argv holds --protocol FILE: the command line's run flags, then the file's flags, as a new
// argument list (*out_argc, *out_argv: kept for the life of the process), p filled; returns 1.
// Without --protocol returns 0 and touches nothing. Exits with a message naming the file and line
// on a line it cannot read, and on a command-line flag that would change the experiment.
int protocol_expand(int argc, char **argv, int *out_argc, char ***out_argv, Protocol *p);

#endif
