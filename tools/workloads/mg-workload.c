/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mg-workload: the workloads behind the field failures, one mode each.
 * Every mode ends by printing one line of key=value pairs to stdout, so
 * tests and people can parse what it did.  Sizes are MiB, times seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include "image.h"
#include "util.h"

#define PAGE 4096

static uint64_t rng = 88172645463325252ULL;
static uint64_t xorshift(void) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}


static void hold(long seconds) {
        fflush(stdout);
        if (seconds < 0)
                for (;;)
                        pause();
        if (seconds > 0)
                sleep((unsigned) seconds);
}

static void die(const char *what) {
        fprintf(stderr, "mg-workload: %s: %s\n", what, strerror(errno));
        exit(1);
}

/* A number argument ("1.5", "10", "-1"); anything else exits 2. */
static double num_arg(const char *s) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || *end || errno) {
                fprintf(stderr, "mg-workload: %s: not a number\n", s);
                exit(2);
        }
        return v;
}

/* Touches mib MiB of anon memory in step_kib steps; returns per-step usec. */
static uint64_t *grow_anon(uint64_t mib, uint64_t step_kib, size_t *ret_n) {
        size_t steps = (size_t) (mib * 1024 / step_kib);
        uint64_t *lat = calloc(steps ? steps : 1, sizeof(*lat));
        if (!lat)
                die("calloc");
        for (size_t i = 0; i < steps; i++) {
                uint64_t t = mg_mono_usec();
                char *p = mmap(NULL, step_kib * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        die("mmap");
                for (size_t off = 0; off < step_kib * 1024; off += PAGE)
                        p[off] = (char) (off | 1);
                lat[i] = mg_mono_usec() - t;
        }
        *ret_n = steps;
        return lat;
}

/* MIB of anon memory filled with xorshift bytes (zram stores no page as
 * same-filled), then its first ACTIVE_MIB touched a page at a time, round
 * after round, for SECONDS: a background that allocated beyond its limit
 * and keeps working on its active set (seed 002's pressure generator). */
static int mode_anontouch(int argc, char **argv) {
        uint64_t mib, active, x = 88172645463325252ULL, rounds = 0, t0 = mg_mono_usec();
        double secs;
        char *p;

        if (argc < 3)
                return -1;
        mib = strtoull(argv[0], NULL, 0);
        active = strtoull(argv[1], NULL, 0);
        secs = num_arg(argv[2]);
        if (active > mib)
                active = mib;
        p = mmap(NULL, mib * MG_MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return 1;
        for (uint64_t off = 0; off < mib * MG_MIB; off += sizeof(x)) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                memcpy(p + off, &x, sizeof(x));
        }
        while (mg_mono_usec() - t0 < (uint64_t) (secs * 1e6)) {
                for (uint64_t off = 0; off < active * MG_MIB; off += PAGE)
                        p[off]++;
                rounds++;
        }
        printf("workload=anontouch mib=%" PRIu64 " active_mib=%" PRIu64 " rounds=%" PRIu64 " elapsed_ms=%" PRIu64 "\n",
               mib, active, rounds, (mg_mono_usec() - t0) / 1000);
        munmap(p, mib * MG_MIB);
        return 0;
}

static int mode_anon(int argc, char **argv) {
        uint64_t mib = argc > 0 ? strtoull(argv[0], NULL, 0) : 64;
        uint64_t step = argc > 1 ? strtoull(argv[1], NULL, 0) : 256;
        long holds = argc > 2 ? strtol(argv[2], NULL, 0) : -1;
        uint64_t t0 = mg_mono_usec();
        size_t n;
        free(grow_anon(mib, step ? step : 256, &n));
        printf("workload=anon mib=%" PRIu64 " step_kib=%" PRIu64 " elapsed_ms=%" PRIu64 "\n", mib, step,
               (mg_mono_usec() - t0) / 1000);
        hold(holds);
        return 0;
}

/* Allocation latency per step, for an actor held over memory.high: grows to
 * mib MiB, then for hold_s seconds gives back its last step and takes it
 * again, so every allocation is charged at the same overage. */
static int mode_throttle(int argc, char **argv) {
        uint64_t mib = argc > 0 ? strtoull(argv[0], NULL, 0) : 64;
        uint64_t step = argc > 1 && strtoull(argv[1], NULL, 0) ? strtoull(argv[1], NULL, 0) : 256;
        double hold_s = argc > 2 ? num_arg(argv[2]) : 0;
        uint64_t t0 = mg_mono_usec();
        size_t n, h = 0;
        uint64_t *lat = grow_anon(mib, step, &n), grown = mg_mono_usec() - t0;
        uint64_t *held = calloc(100000, sizeof(*held));
        char *p = NULL;
        if (!held)
                die("calloc");
        for (uint64_t t1 = mg_mono_usec(); mg_mono_usec() - t1 < (uint64_t) (hold_s * 1e6) && h < 100000; h++) {
                if (p)
                        munmap(p, step * 1024);
                uint64_t t = mg_mono_usec();
                p = mmap(NULL, step * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        die("mmap");
                for (size_t off = 0; off < step * 1024; off += PAGE)
                        p[off] = 1;
                held[h] = mg_mono_usec() - t;
        }
        printf("workload=throttle mib=%" PRIu64 " steps=%zu grow_ms=%" PRIu64 " step_p50_us=%" PRIu64
               " step_p99_us=%" PRIu64 " step_max_us=%" PRIu64 " hold_steps=%zu hold_p50_us=%" PRIu64
               " hold_p90_us=%" PRIu64 "\n",
               mib, n, grown / 1000, mg_percentile_u64(lat, n, 50), mg_percentile_u64(lat, n, 99), mg_percentile_u64(lat, n, 100), h, mg_percentile_u64(held, h, 50),
               mg_percentile_u64(held, h, 90));
        free(held);
        free(lat);
        return 0;
}

static int mode_leak(int argc, char **argv) {
        uint64_t rate = argc > 0 ? strtoull(argv[0], NULL, 0) : 16;
        uint64_t total = 0;
        for (;;) {
                size_t n;
                free(grow_anon(1, 256, &n));
                total++;
                usleep((useconds_t) (1000000 / (rate ? rate : 1)));
                if (total % 16 == 0) {
                        printf("workload=leak mib=%" PRIu64 "\n", total);
                        fflush(stdout);
                }
        }
        return 0;
}

/*
 * Writes MIB MiB to FILE in 1 MiB writes, then fsyncs if FSYNC is non-zero.
 * With BEHIND_MIB, write-behind: after each BEHIND_MIB MiB it starts the
 * writeback of that chunk and waits for it (sync_file_range), so no more than
 * BEHIND_MIB MiB, plus the write under way, is ever dirty or under writeback,
 * and the rest of what it wrote is clean page cache reclaim can take.
 * Without it only the kernel's dirty throttling bounds that: on 7.x a writer
 * at a 16 or 32 MiB memory.max had up to 80-90 % of its page cache under
 * writeback behind a busy disk, reclaim found nothing to take, and the
 * kernel OOM-killed the writer (docs/testing.md, healthy-neighbours).
 */
static int mode_write(int argc, char **argv) {
        if (argc < 2)
                return 2;
        uint64_t mib = strtoull(argv[1], NULL, 0);
        uint64_t behind = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
        bool sync = argc > 2 && num_arg(argv[2]) != 0;
        static char buf[1 << 20];
        int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                die(argv[0]);
        memset(buf, 0x5a, sizeof(buf));
        uint64_t t0 = mg_mono_usec();
        for (uint64_t i = 0; i < mib; i++) {
                buf[0] = (char) i;
                if (write(fd, buf, sizeof(buf)) != (ssize_t) sizeof(buf))
                        die("write");
                if (behind && (i + 1) % behind == 0 &&
                    sync_file_range(fd, (off_t) ((i + 1 - behind) * MG_MIB), (off_t) (behind * MG_MIB),
                                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                            SYNC_FILE_RANGE_WAIT_AFTER) < 0)
                        die("sync_file_range");
        }
        if (sync && fsync(fd) < 0)
                die("fsync");
        close(fd);
        printf("workload=write mib=%" PRIu64 " fsync=%d behind_mib=%" PRIu64 " elapsed_ms=%" PRIu64 "\n", mib, sync,
               behind,
               (mg_mono_usec() - t0) / 1000);
        return 0;
}

/* Streams a file sequentially, again and again, for the given time. */
static int mode_read(int argc, char **argv) {
        if (argc < 2)
                return 2;
        double secs = num_arg(argv[1]);
        static char buf[1 << 20];
        uint64_t t0 = mg_mono_usec(), bytes = 0, loops = 0;
        int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die(argv[0]);
        while (mg_mono_usec() - t0 < (uint64_t) (secs * 1e6)) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0)
                        die("read");
                if (n == 0) {
                        lseek(fd, 0, SEEK_SET);
                        loops++;
                }
                bytes += (uint64_t) n;
        }
        printf("workload=read mib=%" PRIu64 " loops=%" PRIu64 " elapsed_ms=%" PRIu64 "\n", bytes / MG_MIB, loops,
               (mg_mono_usec() - t0) / 1000);
        return 0;
}

/*
 * Random touches of a file's pages, skew_pct of them in its first hot_pct:
 * with the hot part larger than the cgroup's limit this thrashes.  The file
 * is mapped, as programs map their data and libraries, so each touch of an
 * evicted page is a major fault.  It first reads the file once in 1 MiB
 * reads, so the thrash starts without seconds of random-read warm-up.
 */
static int mode_hotfile(int argc, char **argv) {
        if (argc < 2)
                return 2;
        double secs = num_arg(argv[1]);
        uint64_t hot_pct = argc > 2 ? strtoull(argv[2], NULL, 0) : 60;
        uint64_t skew = argc > 3 ? strtoull(argv[3], NULL, 0) : 95;
        static char warm[1 << 20];
        int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die(argv[0]);
        off_t size = lseek(fd, 0, SEEK_END);
        uint64_t pages = (uint64_t) size / PAGE, touches = 0, sum = 0;
        uint64_t hot = pages * hot_pct / 100;
        if (pages == 0 || hot == 0) {
                close(fd);
                return 2;
        }
        const volatile char *map = mmap(NULL, (size_t) size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                die("mmap");
        for (off_t off = 0; pread(fd, warm, sizeof(warm), off) > 0; off += (off_t) sizeof(warm))
                ;
        uint64_t t0 = mg_mono_usec();
        while (mg_mono_usec() - t0 < (uint64_t) (secs * 1e6)) {
                uint64_t r = xorshift();
                uint64_t pg = (r % 100 < skew) ? (r >> 8) % hot : (r >> 8) % pages;
                sum += (unsigned char) map[pg * PAGE];
                touches++;
        }
        printf("workload=hotfile pages=%" PRIu64 " touches=%" PRIu64 " elapsed_ms=%" PRIu64 " sum=%" PRIu64 "\n", pages,
               touches, (mg_mono_usec() - t0) / 1000, sum);
        return 0;
}

/*
 * A microVM's guest memory beside its thrash: fills MIB MiB of the memfd
 * FD (inherited from the worker that made it, as a VMM's guest RAM is the
 * worker's) with the snapshot tests' data pattern (image.h), so the shmem is charged to
 * this cgroup and a restore can be compared byte for byte, then runs
 * hotfile on FILE.  Prints "guest filled" to stderr before the thrash.
 */
static int mode_guest(int argc, char **argv) {
        if (argc < 4)
                return 2;
        int fd = (int) num_arg(argv[0]);
        uint64_t len = (uint64_t) num_arg(argv[1]) * MG_MIB;
        uint8_t *map = mmap(NULL, (size_t) len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                die("mmap guest");
        for (uint64_t pg = 0; pg < len / IMG_PAGE; pg++)
                img_fill(map + pg * IMG_PAGE, pg, 7);
        munmap(map, (size_t) len);
        fprintf(stderr, "# guest filled: %" PRIu64 " MiB\n", len / MG_MIB);
        return mode_hotfile(argc - 2, argv + 2);
}

/*
 * The field's file-hot (docs/field-facts.md F3, F4), with its anon-hog beside it in the same process: hold
 * ANON_MIB MiB of heap, map FILE PROT_READ|PROT_EXEC as program text and hot
 * data are mapped, and touch its pages in passes of one touch per page of the
 * file.  "seq PAUSE_MS" walks the file front to back and sleeps PAUSE_MS
 * between passes, at most PASSES of them (one: a loader's or a checksum's single
 * mapped pass); "skew HOT_MIB PCT" sends PCT % of the touches at random into
 * the first HOT_MIB MiB and the rest anywhere.  No warm-up: the first pass
 * reads the file from disk, as a program starting cold does.  Ends after
 * SECONDS, mid-pass if need be.  Prints each whole pass's time to stderr and
 * their percentiles on its final line.
 */
static int mode_filehot(int argc, char **argv) {
        if (argc < 4)
                return 2;
        double secs = num_arg(argv[1]);
        bool seq = strcmp(argv[2], "seq") == 0;
        if (!seq && (strcmp(argv[2], "skew") != 0 || argc < 5))
                return 2;
        uint64_t pause_ms = seq ? (uint64_t) num_arg(argv[3]) : 0;
        uint64_t hot_mib = seq ? 0 : (uint64_t) num_arg(argv[3]), skew = seq ? 0 : (uint64_t) num_arg(argv[4]);
        uint64_t anon = argc > (seq ? 4 : 5) ? (uint64_t) num_arg(argv[seq ? 4 : 5]) : 0;
        size_t max_passes = seq && argc > 5 ? (size_t) num_arg(argv[5]) : SIZE_MAX;
        int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die(argv[0]);
        off_t size = lseek(fd, 0, SEEK_END);
        uint64_t pages = (uint64_t) size / PAGE, hot = hot_mib * MG_MIB / PAGE, sum = 0;
        if (pages == 0 || (!seq && (hot == 0 || hot > pages))) {
                close(fd);
                return 2;
        }
        const volatile char *map = mmap(NULL, (size_t) size, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                die("mmap");
        size_t steps;
        free(grow_anon(anon, 256, &steps));
        static uint64_t pass_ms[100000];
        size_t n = 0;
        uint64_t t0 = mg_mono_usec(), run_usec = (uint64_t) (secs * 1e6);
        bool over = false;
        while (mg_mono_usec() - t0 < run_usec && n < sizeof(pass_ms) / sizeof(pass_ms[0]) && n < max_passes) {
                uint64_t t = mg_mono_usec();
                for (uint64_t i = 0; i < pages; i++) {
                        uint64_t r = seq ? 0 : xorshift();
                        uint64_t pg = seq ? i : (r % 100 < skew) ? (r >> 8) % hot : (r >> 8) % pages;
                        sum += (unsigned char) map[pg * PAGE];
                        /* A pass can outlast the run once every touch is
                         * a refault held in memory.high's throttle (one
                         * was still going at 60 s on 6.1): end on time
                         * within it, the partial pass not counted. */
                        if ((i & 15) == 15 && mg_mono_usec() - t0 >= run_usec) {
                                over = true;
                                break;
                        }
                }
                if (over)
                        break;
                pass_ms[n] = (mg_mono_usec() - t) / 1000;
                /* "# ": the kernel suite streams stderr into its TAP */
                fprintf(stderr, "# pass %zu: %" PRIu64 " ms\n", n, pass_ms[n]);
                n++;
                if (pause_ms)
                        usleep((useconds_t) (pause_ms * 1000));
        }
        uint64_t elapsed = (mg_mono_usec() - t0) / 1000, first = n ? pass_ms[0] : 0;
        printf("workload=filehot mode=%s pages=%" PRIu64 " anon_mib=%" PRIu64 " passes=%zu first_pass_ms=%" PRIu64
               " pass_p50_ms=%" PRIu64 " pass_max_ms=%" PRIu64 " elapsed_ms=%" PRIu64 " sum=%" PRIu64 "\n",
               argv[2], pages, anon, n, first, mg_percentile_u64(pass_ms, n, 50), mg_percentile_u64(pass_ms, n, 100), elapsed, sum);
        return 0;
}

/* Alternates a burst of anon memory and a burst of page cache, so
 * memory.current swings by tens of MiB faster than memory.stat is flushed. */
static int mode_churn(int argc, char **argv) {
        if (argc < 3)
                return 2;
        uint64_t anon = strtoull(argv[0], NULL, 0);
        double secs = num_arg(argv[2]);
        static char buf[1 << 20];
        uint64_t t0 = mg_mono_usec(), rounds = 0;
        int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die(argv[1]);
        while (mg_mono_usec() - t0 < (uint64_t) (secs * 1e6)) {
                char *p = mmap(NULL, anon * MG_MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        die("mmap");
                for (uint64_t off = 0; off < anon * MG_MIB; off += PAGE)
                        p[off] = 1;
                munmap(p, anon * MG_MIB);
                lseek(fd, 0, SEEK_SET);
                while (read(fd, buf, sizeof(buf)) > 0)
                        ;
                posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                rounds++;
        }
        printf("workload=churn anon_mib=%" PRIu64 " rounds=%" PRIu64 " elapsed_ms=%" PRIu64 "\n", anon, rounds,
               (mg_mono_usec() - t0) / 1000);
        return 0;
}

/*
 * Thrash on its own code: run from a copy of this binary with pad_mib MiB of
 * `ret` instructions (0xc3) appended, hold anon_mib MiB of anon memory, and
 * call into the pad at random, skew_pct of the calls in its first hot_pct.
 * The pages are file-backed, executable and charged to the caller's cgroup
 * when first faulted, as a program's text is; reclaim drops them and the
 * next call faults them back in from disk.
 */
static int mode_owncode(int argc, char **argv) {
        if (argc < 3)
                return 2;
        uint64_t anon = strtoull(argv[0], NULL, 0), pad = strtoull(argv[1], NULL, 0) * MG_MIB;
        double secs = num_arg(argv[2]);
        uint64_t hot_pct = argc > 3 ? strtoull(argv[3], NULL, 0) : 60;
        uint64_t skew = argc > 4 ? strtoull(argv[4], NULL, 0) : 95;
        size_t steps;
        int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die("/proc/self/exe");
        off_t size = lseek(fd, 0, SEEK_END);
        if (pad == 0 || size < (off_t) pad) {
                close(fd);
                return 2;
        }
        off_t start = (size - (off_t) pad + PAGE - 1) / PAGE * PAGE;
        uint64_t pages = (uint64_t) (size - start) / PAGE, hot = pages * hot_pct / 100, calls = 0;
        unsigned char *code = mmap(NULL, (size_t) (size - start), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, start);
        if (code == MAP_FAILED)
                die("mmap code");
        if (code[0] != 0xc3) {
                munmap(code, (size_t) (size - start));
                close(fd);
                return 2; /* not a padded copy */
        }
        free(grow_anon(anon, 256, &steps));
        uint64_t t0 = mg_mono_usec();
        while (mg_mono_usec() - t0 < (uint64_t) (secs * 1e6)) {
                uint64_t r = xorshift();
                uint64_t pg = (r % 100 < skew) ? (r >> 8) % hot : (r >> 8) % pages;
                ((void (*)(void)) (code + pg * PAGE))();
                calls++;
        }
        printf("workload=owncode anon_mib=%" PRIu64 " code_pages=%" PRIu64 " calls=%" PRIu64 " elapsed_ms=%" PRIu64 "\n",
               anon, pages, calls, (mg_mono_usec() - t0) / 1000);
        return 0;
}

/* N processes (this one and N-1 children), each holding mib MiB. */
static int mode_procs(int argc, char **argv) {
        int n = argc > 0 ? (int) num_arg(argv[0]) : 4;
        uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 0) : 8;
        size_t steps;
        for (int i = 1; i < n; i++) {
                pid_t pid = fork();
                if (pid < 0)
                        die("fork");
                if (pid == 0) {
                        free(grow_anon(mib, 256, &steps));
                        hold(-1);
                }
        }
        free(grow_anon(mib, 256, &steps));
        printf("workload=procs n=%d mib_each=%" PRIu64 "\n", n, mib);
        hold(-1);
        return 0;
}

/* A tenant writing the xattrs of cgroup directories it owns: N writes of
 * NAME, a different value each time, to the DIRs in turn (N 1: one write,
 * VALUE as given; a forged limit or lend record).  Every write is an
 * IN_ATTRIB for whoever watches their parent. */
static int mode_xattr(int argc, char **argv) {
        if (argc < 4)
                return 2;
        uint64_t n = strtoull(argv[0], NULL, 0), fails = 0;
        const char *name = argv[1], *value = argv[2];
        char buf[32];
        for (uint64_t i = 0; i < n; i++) {
                const char *dir = argv[3 + i % (uint64_t) (argc - 3)], *v = value;
                if (n > 1) {
                        snprintf(buf, sizeof(buf), "%" PRIu64, i);
                        v = buf;
                }
                if (setxattr(dir, name, v, strlen(v), 0) < 0) {
                        if (n == 1)
                                die("setxattr");
                        fails++;
                }
        }
        printf("workload=xattr writes=%" PRIu64 " failed=%" PRIu64 "\n", n, fails);
        return 0;
}

static int mode_cpu(int argc, char **argv) {
        double secs = argc > 0 ? num_arg(argv[0]) : 10;
        uint64_t t0 = mg_mono_usec(), iters = 0;
        volatile uint64_t x = 0;
        while (mg_mono_usec() - t0 < (uint64_t) (secs * 1e6)) {
                for (int i = 0; i < 100000; i++)
                        x += xorshift();
                iters++;
        }
        printf("workload=cpu iters=%" PRIu64 " elapsed_ms=%" PRIu64 "\n", iters, (mg_mono_usec() - t0) / 1000);
        return 0;
}

/* Wakes every period_ms: scheduled start, wake delay and service time of a
 * small memory-touching job, as the field's canaries recorded them
 * (docs/field-facts.md F10). */
static int mode_canary(int argc, char **argv) {
        double secs = argc > 0 ? num_arg(argv[0]) : 10;
        uint64_t period = (argc > 1 ? strtoull(argv[1], NULL, 0) : 100) * 1000;
        size_t max = (size_t) (secs * 1e6 / (double) period) + 1, n = 0;
        uint64_t *wake = calloc(max, sizeof(*wake)), *svc = calloc(max, sizeof(*svc)), misses = 0;
        static char hot[1 << 20];
        struct timespec ts;
        if (!wake || !svc)
                die("calloc");
        uint64_t start = mg_mono_usec();
        for (uint64_t sched = start; n < max; sched += period) {
                ts.tv_sec = (time_t) (sched / 1000000);
                ts.tv_nsec = (long) (sched % 1000000) * 1000;
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                uint64_t w = mg_mono_usec();
                for (size_t i = 0; i < sizeof(hot); i += PAGE)
                        hot[i]++;
                uint64_t d = mg_mono_usec();
                wake[n] = w - sched;
                svc[n] = d - w;
                if (d > sched + period)
                        misses++;
                n++;
        }
        printf("workload=canary n=%zu wake_p50_us=%" PRIu64 " wake_p99_us=%" PRIu64 " wake_max_us=%" PRIu64
               " service_p50_us=%" PRIu64 " service_p99_us=%" PRIu64 " misses=%" PRIu64 "\n",
               n, mg_percentile_u64(wake, n, 50), mg_percentile_u64(wake, n, 99), mg_percentile_u64(wake, n, 100), mg_percentile_u64(svc, n, 50), mg_percentile_u64(svc, n, 99), misses);
        return 0;
}

static const struct {
        const char *name, *usage;
        int (*fn)(int, char **);
} modes[] = {
        { "anon", "MIB [STEP_KIB] [HOLD_S, -1 forever]", mode_anon },
        { "anontouch", "MIB ACTIVE_MIB SECONDS", mode_anontouch },
        { "throttle", "MIB [STEP_KIB] [HOLD_S]", mode_throttle },
        { "leak", "MIB_PER_S", mode_leak },
        { "write", "FILE MIB [FSYNC] [BEHIND_MIB]", mode_write },
        { "read", "FILE SECONDS", mode_read },
        { "hotfile", "FILE SECONDS [HOT_PCT] [SKEW_PCT]", mode_hotfile },
        { "guest", "FD MIB FILE SECONDS [HOT_PCT] [SKEW_PCT] (fills the memfd FD, then hotfile)", mode_guest },
        { "filehot", "FILE SECONDS seq PAUSE_MS [ANON_MIB [PASSES]] | FILE SECONDS skew HOT_MIB PCT [ANON_MIB]", mode_filehot },
        { "churn", "ANON_MIB FILE SECONDS", mode_churn },
        { "owncode", "ANON_MIB PAD_MIB SECONDS [HOT_PCT] [SKEW_PCT] (from a copy padded with 0xc3)", mode_owncode },
        { "procs", "N MIB_EACH", mode_procs },
        { "xattr", "N NAME VALUE DIR... (N 1: NAME=VALUE on one DIR; else N writes of NAME=i, DIRs in turn)", mode_xattr },
        { "cpu", "SECONDS", mode_cpu },
        { "canary", "SECONDS [PERIOD_MS]", mode_canary },
};

int main(int argc, char **argv) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++) {
                if (strcmp(argv[1], modes[i].name) == 0) {
                        int r = modes[i].fn(argc - 2, argv + 2);
                        if (r == 2)
                                fprintf(stderr, "usage: mg-workload %s %s\n", modes[i].name, modes[i].usage);
                        return r;
                }
        }
        fprintf(stderr, "usage: mg-workload MODE ARGS...\nmodes:\n");
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
                fprintf(stderr, "  %s %s\n", modes[i].name, modes[i].usage);
        return 2;
}
