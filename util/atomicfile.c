// util/atomicfile.c: write PATH.tmp, sync, rename over PATH (util/atomicfile.h).
#include "util/atomicfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *af_open(AtomicFile *a, const char *path, const char *what, const char *mode) {
    size_t n = strlen(path);
    a->path = xmalloc(n + 1);
    memcpy(a->path, path, n + 1);
    a->tmp = xmalloc(n + 5);
    memcpy(a->tmp, path, n);
    memcpy(a->tmp + n, ".tmp", 5);
    a->what = what;
    a->f = fopen(a->tmp, mode);
    CHECK(a->f, "cannot create '%s' (to write the %s '%s'): %s; check that the folder exists and is writable",
          a->tmp, what, path, strerror(errno));
    return a->f;
}

// Stops after a failed write: the temporary goes, PATH stays as it was.
static void af_fail(AtomicFile *a, int err) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    remove(a->tmp);
    struct stat st;
    int kept = stat(a->path, &st) == 0;
    CHECK(0, "could not write the %s '%s': %s%s; %s", a->what, a->path, err ? strerror(err) : "a write failed",
          !err || err == ENOSPC || err == EFBIG || err == EDQUOT ? " (free some disk space or raise the file-size limit)" : "",
          kept ? "the previous file is intact" : "nothing was written");
}

void af_write(AtomicFile *a, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, a->f) != n) af_fail(a, errno);
}

// Makes the rename itself durable: without it a power cut can forget the new directory entry.
static void sync_folder(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) { fsync(fd); close(fd); }     // a hint for durability, not for correctness
}

void af_commit(AtomicFile *a) {
    if (ferror(a->f)) {
        // an fprintf failed earlier and its errno is gone; writing the rest again tells the reason
        clearerr(a->f);
        errno = 0;
        af_fail(a, fflush(a->f) != 0 ? errno : 0);
    }
    if (fflush(a->f) != 0) af_fail(a, errno);
    // fsync fails with EINVAL / EROFS on files that cannot be synced (pipes, some special files)
    if (fsync(fileno(a->f)) != 0 && errno != EINVAL && errno != EROFS) af_fail(a, errno);
    FILE *f = a->f;
    a->f = NULL;
    if (fclose(f) != 0) af_fail(a, errno);
    if (rename(a->tmp, a->path) != 0) {
        int e = errno;
        remove(a->tmp);
        CHECK(0, "could not rename '%s' to the %s '%s': %s", a->tmp, a->what, a->path, strerror(e));
    }
    sync_folder(a->path);
    free(a->path); free(a->tmp);
    a->path = a->tmp = NULL;
}
