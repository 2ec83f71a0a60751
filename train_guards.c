// train_guards.c: ./train's guards: what is refused before the work starts (a model or batch the
// memory cannot hold, an output folder that cannot take a file), what a killed run left behind
// (a save's temporaries, log rows past its checkpoint), SIGINT/SIGTERM during training, and a note
// when the run's threads start on cores that other work keeps busy.
#define _GNU_SOURCE   // sched_getaffinity, CPU_COUNT
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "mpi/dist.h"
#include "nn/kernels.h"
#include "train.h"
#include "util/cpu.h"

// ---- --continue: a run of a grid goes on from its checkpoint when the same command runs again

void continue_or_start(Args *a) {
    Options *o = &a->o;
    if (!o->cont) return;
    CHECK(o->save && !strstr(o->save, "{step}"), "--continue goes on from the checkpoint --save FILE writes; give "
          "--save with a fixed path (no {step})");
    CHECK(!o->resume && !o->load, "--continue decides itself whether to resume (from --save FILE); drop --resume and --load");
    CHECK(!(o->fit_target > 0), "--continue with --fit-target: a fit-first run stops at a step its checkpoint does not "
          "record as the end, so going on from it could train past that step; run it again from the start");
    if (access(o->save, F_OK) != 0) {
        printf("continue: no checkpoint %s yet; starting from step 0\n", o->save);
        return;
    }
    o->resume = o->save;
    a->continuing = 1;
}

static char *pe_text(const PosConfig *c) {        // the caller frees
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    CHECK(f, "out of memory");
    posenc_write_kv(c, f);
    fclose(f);
    return buf;
}

void continue_check_model(const GPTConfig *want, const GPTConfig *have, const char *ckpt) {
    CHECK(want->n_layer == have->n_layer && want->n_head == have->n_head && want->n_embd == have->n_embd &&
          want->max_seq_len == have->max_seq_len, "--continue: '%s' holds a model of %d layers, %d heads, %d channels "
          "and context %d; the flags give %d, %d, %d and %d. It is another run's: give its flags, or delete it to start "
          "afresh", ckpt, have->n_layer, have->n_head, have->n_embd, have->max_seq_len, want->n_layer, want->n_head,
          want->n_embd, want->max_seq_len);
    char *a = pe_text(&want->pe), *b = pe_text(&have->pe);
    CHECK(!strcmp(a, b), "--continue: the positional settings of '%s' are not those the flags give:\n%s\nflags:\n%s"
          "It is another run's: give its flags, or delete it to start afresh", ckpt, b, a);
    free(a); free(b);
}

void continue_check_training(const Args *a, uint64_t step) {
    char *now = train_kv(&a->o);
    const char *was = a->continued_kv;
    // the first line that differs, for the message
    size_t i = 0, line = 0;
    for (; now[i] && now[i] == was[i]; i++) if (now[i] == '\n') line = i + 1;
    if (now[i] || was[i]) {
        int n1 = (int)strcspn(was + line, "\n"), n2 = (int)strcspn(now + line, "\n");
        CHECK(0, "--continue: '%s' was trained with other settings: it stores %.*s, the flags give %.*s. It is another "
              "run's: give its flags, or delete it to start afresh", a->o.resume, n1, was + line, n2, now + line);
    }
    free(now);
    printf("continue: going on from %s after step %llu of %d\n", a->o.resume, (unsigned long long)step, a->o.steps);
}

// ---- memory: a model or batch too large for the machine is refused with the sizes it asked for,
// before the allocation, instead of being killed by the kernel (Linux hands out memory it does not
// have and kills the process when the pages are first touched).

// A "kB" field of a /proc file, in bytes; -1 when absent.
static double proc_field(const char *file, const char *key) {
    FILE *f = fopen(file, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    size_t k = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':') { v = 1024 * atof(line + k + 1); break; }
    fclose(f);
    return v;
}

// The processes that share this machine's memory with this one, itself included: the ranks of this
// run on the machine (under mpirun) times PEGPT_MEMORY_SHARE, which ./compare sets to the runs it
// trains at once on the machine (--jobs x its ranks there): they start together, and each must
// fit in its share before the others have taken theirs.
int memory_sharers(void) {
    const char *e = getenv("PEGPT_MEMORY_SHARE");
    long share = e ? strtol(e, NULL, 10) : 1;
    return dist_node_size() * (int)(share >= 1 && share <= 1000000 ? share : 1);
}

// The bytes this process can still get: MemAvailable + SwapFree (shared: divided by the processes
// that share the machine, memory_sharers), or what the address-space limit (ulimit -v, per
// process) leaves, whichever is smaller; *why names it, and share (cap >= 32) says " (1/N)" when it
// is a share of the machine's. Infinity when nothing says.
static double memory_available(const char **why, char *share) {
    double avail = INFINITY, mem = proc_field("/proc/meminfo", "MemAvailable"), swap = proc_field("/proc/meminfo", "SwapFree");
    *why = "";
    share[0] = 0;
    int local = memory_sharers();     // they share the machine's memory, not their address-space limits
    if (mem >= 0) {
        avail = (mem + (swap > 0 ? swap : 0)) / local;
        *why = local > 1 ? "share of the available memory (MemAvailable + SwapFree, over the ranks and runs on this machine)"
                         : "available memory (MemAvailable + SwapFree)";
        if (local > 1) snprintf(share, 32, " (1/%d)", local);
    }
    struct rlimit rl;
    double used = proc_field("/proc/self/status", "VmSize");
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && used >= 0 && (double)rl.rlim_cur - used < avail) {
        avail = (double)rl.rlim_cur - used;
        *why = "address space left under the limit (ulimit -v)";
        share[0] = 0;
    }
    return avail;
}

// Refuses a model of cfg, trained on (B, T) batches when B > 0 (else only its weights and
// gradients), when it cannot fit; `allocated` bytes of it exist already.
void check_memory(const GPTConfig *cfg, int B, int T, double allocated) {
#ifdef _OPENMP
    int threads = omp_get_max_threads();
#else
    int threads = 1;
#endif
    GPTMemory m = gpt_memory(cfg, B ? B : 1, B ? T : 1, 0, threads);
    double need = m.params + m.grads + (B ? m.adam + m.acts : 0), GiB = 1024.0 * 1024 * 1024;
    const char *why;
    char share[32];
    double avail = memory_available(&why, share);
    if (need - allocated <= avail) return;     // (under ZeRO-1 a rank holds fewer moments: this errs on the safe side)
    char shape[96] = "";
    if (B) snprintf(shape, sizeof shape, ", AdamW moments %.2f, activations %.2f for --batch %d x --seq %d", m.adam / GiB,
                    m.acts / GiB, B, T);
    CHECK(0, "out of memory: this model%s %.2f GiB (parameters %.2f, gradients %.2f%s; %d layers, dim %d, "
          "vocabulary %d) but the %s is %.2f GiB%s%s; %s", B ? " and batch need" : " needs", need / GiB, m.params / GiB,
          m.grads / GiB, shape, cfg->n_layer, cfg->n_embd, cfg->vocab_size, why, (avail + allocated) / GiB, share,
          allocated > 0 ? " (counting what it holds already)" : "",
          B ? "lower --batch or --seq (--accum keeps the tokens per step), or use a smaller model" : "use a smaller model");
}

static void memory_hook(double bytes, double freed, const char *what) {
    const char *why;
    char share[32];
    double avail = memory_available(&why, share), GiB = 1024.0 * 1024 * 1024;
    if (bytes - freed <= avail) return;
    CHECK(0, "out of memory for %s: %.3f GiB needed%s, but the %s is %.3f GiB%s; evaluate fewer tokens at once or "
          "shorter lengths (--ppl-windows, --attention-lengths, --test-max, --sample), or use a smaller model", what,
          bytes / GiB, freed > 0 ? " (in place of the smaller buffers)" : "", why, (avail + freed) / GiB, share);
}

void guard_memory(void) { gpt_set_memory_check(memory_hook); }

// ---- the machine a run is on, for its record: the CPU (/proc/cpuinfo's model name, util/cpu.h) and the matrix
// product's path (the micro-kernel cpuid chose), so a grid trained in several sittings says which
// machine made each run
void print_machine(void) {
    printf("machine: %s | matmul: %s\n", cpu_name() ? cpu_name() : "unknown CPU", gemm_backend());
}

// ---- cores shared with other work. The threads of a run meet at the end of every parallel loop,
// hundreds of times a step, and libgomp's threads spin while they wait: with more busy threads
// than cores, a thread that lost its core holds up the others, which spin on the cores it needs.
// Beside two busy processes on 2 cores, `tiny` at 2 threads ran 877 tokens/s against 26009 at 1
// thread (docs/speed.md, "Sharing the cores"). So a run of more than one thread that starts while
// the 1-minute load average leaves fewer cores free than it has threads says so, with the two ways
// out, on stderr and only when stderr is a terminal: what a run writes to its logs does not depend
// on the load. PEGPT_LOAD replaces the load average and the terminal test (for tests). Nothing is
// said when GOMP_SPINCOUNT or OMP_WAIT_POLICY is set: the user chose how threads wait.
void check_cores(int threads) {
    if (threads < 2 || getenv("GOMP_SPINCOUNT") || getenv("OMP_WAIT_POLICY")) return;
    const char *e = getenv("PEGPT_LOAD");
    double load;
    if (e && *e) load = atof(e);
    else if (!isatty(STDERR_FILENO) || getloadavg(&load, 1) != 1) return;
    int cores = 0;
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
#endif
    if (cores < 1) cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1 || !(load > cores - threads + 0.5)) return;
    int free_cores = (int)floor(cores - load + 0.5);
    fprintf(stderr, "note: the load average is %.1f on the %d cores this run may use: other work is running, and %d "
            "threads that wait for each other at every step can run several times slower beside it; --threads %d, "
            "or GOMP_SPINCOUNT=2000 in the environment, avoids that (docs/speed.md, \"Sharing the cores\")\n",
            load, cores, threads, free_cores > 1 ? free_cores : 1);
}

// ---- output files: checked before any work, so a long run does not fail at its end

// The folder an output file goes into: "." for a bare name, "/" for a file at the root.
void folder_of(const char *path, char *dir, size_t cap) {
    snprintf(dir, cap, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
}

// Refuses an output whose folder cannot take a new file now, rather than after hours of training.
// access(W_OK) is not enough: it says yes to root on a read-only mount or a chmod'ed folder where
// root can write anyway, so this creates (and removes) a file in the folder.
void check_output_folder(const char *flag, const char *path, const char *dir) {
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.train-probe-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0, "--%s %s: cannot write into the folder '%s': %s; give a writable folder (checked before "
          "anything runs, so a long run does not fail at its end)", flag, path, dir, strerror(errno));
    close(fd);
    unlink(probe);
}

void check_output_file(const char *flag, const char *path) {
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    check_output_folder(flag, path, dir);
}

// A killed save leaves NAME.tmp (util/atomicfile.h) next to the checkpoints of --save's pattern; a new
// run removes those of its own pattern ({step} matching digits) before it writes any.
void remove_stale_temporaries(const char *pattern) {
    char dir[4096];
    folder_of(pattern, dir, sizeof dir);
    const char *base = strrchr(pattern, '/') ? strrchr(pattern, '/') + 1 : pattern;
    const char *at = strstr(base, "{step}");
    size_t pre = at ? (size_t)(at - base) : strlen(base);
    const char *post = at ? at + 6 : "";
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        size_t len = strlen(n), post_len = strlen(post);
        if (len < pre + post_len + 4 || strcmp(n + len - 4, ".tmp") || strncmp(n, base, pre)) continue;
        size_t digits = len - 4 - pre - post_len;               // what {step} matched
        if (strncmp(n + pre + digits, post, post_len)) continue;
        int ok = at ? digits > 0 : digits == 0;
        for (size_t i = 0; at && i < digits; i++) ok &= n[pre + i] >= '0' && n[pre + i] <= '9';
        if (!ok) continue;
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        if (unlink(path) == 0) fprintf(stderr, "removed %s, left by an interrupted save\n", path);   // files only
    }
    closedir(d);
}

// A run resumed from the checkpoint of step `step` appends to its --log; rows past that step are
// those of a run killed after the checkpoint (kill -9, a crash) and are trained again now: they are
// cut from the file first, so every step appears once. A log that does not exist yet is left alone.
void drop_log_rows_after(const char *path, int step) {
    FILE *f = fopen(path, "r+");
    if (!f) return;
    char line[4096];
    long keep = -1, at = 0;
    while (keep < 0 && fgets(line, sizeof line, f)) {
        int st;
        if (sscanf(line, "%d,", &st) == 1 && st > step) keep = at;   // (the header has no number)
        at = ftell(f);
    }
    if (keep >= 0) {
        CHECK(ftruncate(fileno(f), keep) == 0, "cannot cut the log '%s' back to step %d: %s", path, step, strerror(errno));
        fprintf(stderr, "the log %s had rows past step %d (a run stopped after its checkpoint): cut back to step %d\n",
                path, step, step);
    }
    fclose(f);
}

// ---- interruption (EXIT_INTERRUPTED, train.h): the handler notes the signal; the training loop
// finishes its step, saves and exits (interrupt_exit, train.c).
volatile sig_atomic_t interrupted;                // the signal number, 0 while none came

static void on_signal(int sig) {
    if (interrupted) { signal(sig, SIG_DFL); raise(sig); return; }
    interrupted = sig;
    static const char msg[] = "\ntrain: signal received: finishing this step and saving; send it again to stop at once\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

void catch_signals(int on) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on ? on_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}
