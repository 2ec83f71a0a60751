// util/atomicfile.h: files written whole or not at all. Everything the programs write to keep
// (checkpoints, safetensors exports, token shards, result CSVs) goes to PATH.tmp, and only after
// every byte has reached the disk (fflush, fsync) is PATH.tmp renamed over PATH (rename is atomic
// within a folder) and the folder synced. A crash, a kill, a full disk or a file-size limit at
// any moment leaves the previous PATH (or no PATH) and at worst a PATH.tmp; never a half-written
// PATH. The temporary's name is the same every time, so one left by a killed writer is truncated
// and reused by the next write of PATH (train also removes stale ones when it starts).
//
// A write error stops the program (CHECK) with a message naming the file, the system's reason
// ("No space left on device", "File too large") and what was kept; the temporary is removed.
#ifndef ATOMICFILE_H
#define ATOMICFILE_H

#include "util/common.h"

typedef struct {
    FILE *f;            // write through this: af_write, or fprintf and friends (errors are sticky)
    char *path, *tmp;   // PATH and PATH.tmp
    const char *what;   // "checkpoint", "safetensors file", ...: the messages' noun
} AtomicFile;

// Creates PATH.tmp (truncating a stale one) and returns the stream; `mode` is "w" or "wb".
FILE *af_open(AtomicFile *a, const char *path, const char *what, const char *mode);
// fwrite that stops the program on a short write (the temporary is removed, PATH untouched).
void af_write(AtomicFile *a, const void *p, size_t n);
// Flushes, syncs and closes the temporary, renames it over PATH and syncs the folder; any error
// (including one an earlier fprintf left in the stream) removes the temporary and stops.
void af_commit(AtomicFile *a);

#endif
