/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cgdir.h"

#ifdef BENCH_HAVE_CALLGRIND
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#include <valgrind/callgrind.h>
#pragma GCC diagnostic pop
#endif

static int io_openat(void *ud, int dirfd, const char *name, int flags) {
        struct bench_io *b = ud;
        b->opens++;
        return openat(dirfd, name, flags);
}

static ssize_t io_pread(void *ud, int fd, void *buf, size_t len, off_t off) {
        struct bench_io *b = ud;
        b->preads++;
        return pread(fd, buf, len, off);
}

static ssize_t io_pwrite(void *ud, int fd, const void *buf, size_t len, off_t off) {
        struct bench_io *b = ud;
        b->pwrites++;
        return pwrite(fd, buf, len, off);
}

void bench_io_init(struct bench_io *b) {
        *b = (struct bench_io) { .io = { .openat = io_openat, .pread = io_pread, .pwrite = io_pwrite } };
        b->io.userdata = b;
}

uint64_t bench_syscr(void) {
        static int fd = -1;
        char buf[512], *p;
        ssize_t n;

        if (fd < 0)
                fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return UINT64_MAX;
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return UINT64_MAX;
        buf[n] = '\0';
        p = strstr(buf, "syscr: ");
        return p ? strtoull(p + 7, NULL, 10) : UINT64_MAX;
}

static uint64_t tv_usec(struct timeval tv) {
        return (uint64_t) tv.tv_sec * 1000000 + (uint64_t) tv.tv_usec;
}

uint64_t bench_cpu_usec(uint64_t *ret_sys) {
        struct rusage ru;

        if (getrusage(RUSAGE_SELF, &ru) < 0)
                ru = (struct rusage) {};
        if (ret_sys)
                *ret_sys = tv_usec(ru.ru_stime);
        return tv_usec(ru.ru_utime) + tv_usec(ru.ru_stime);
}

uint64_t bench_rss_bytes(void) {
        char line[256];
        uint64_t kib = 0;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "VmRSS:", 6) == 0) {
                        kib = strtoull(line + 6, NULL, 10);
                        break;
                }
        fclose(f);
        return kib * 1024;
}

unsigned bench_count_fds(void) {
        unsigned n = 0;
        struct dirent *de;
        DIR *d = opendir("/proc/self/fd");

        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n > 0 ? n - 1 : 0; /* the directory's own fd */
}

int bench_raise_nofile(uint64_t n) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (rl.rlim_cur >= n)
                return 0;
        rl.rlim_cur = n;
        if (rl.rlim_max < n) {
                /* Raising the hard limit needs CAP_SYS_RESOURCE; without it,
                 * up to the hard limit, and the run shows whether it fits. */
                struct rlimit up = { n, n };
                if (setrlimit(RLIMIT_NOFILE, &up) == 0)
                        return 0;
                rl.rlim_cur = rl.rlim_max;
        }
        return setrlimit(RLIMIT_NOFILE, &rl) < 0 ? -errno : 0;
}

void bench_memstat_format(char *buf, size_t size, uint64_t anon, uint64_t file, uint64_t kernel, uint64_t shmem,
                          uint64_t sock, uint64_t restore_file) {
        static const char *const keys[] = { "anon", "file", "kernel", "shmem", "sock", "workingset_restore_file" };
        const uint64_t vals[] = { anon, file, kernel, shmem, sock, restore_file };
        const char *p = bench_memstat_7x;
        size_t off = 0;

        buf[0] = '\0';
        while (*p && off < size) {
                const char *sp = strchr(p, ' '), *nl = strchr(p, '\n');
                size_t klen = (size_t) (sp - p);
                int w = -1;

                for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                        if (strlen(keys[i]) == klen && memcmp(keys[i], p, klen) == 0)
                                w = snprintf(buf + off, size - off, "%.*s %" PRIu64 "\n", (int) klen, p, vals[i]);
                if (w < 0)
                        w = snprintf(buf + off, size - off, "%.*s", (int) (nl - p + 1), p);
                off += (size_t) w;
                p = nl + 1;
        }
}

int bench_fixture_make(const char *dir, enum bench_actor_state st) {
        /* the pressure totals and cpu.stat of a live actor: the slow path parses them */
        struct fixture_tree t = {
                .memory_pressure = "some avg10=0.00 avg60=0.00 avg300=0.00 total=1200\n"
                                   "full avg10=0.00 avg60=0.00 avg300=0.00 total=600\n",
                .io_pressure = "some avg10=0.00 avg60=0.00 avg300=0.00 total=3400\n"
                               "full avg10=0.00 avg60=0.00 avg300=0.00 total=3000\n",
                .cpu_stat = "usage_usec 1000\nuser_usec 800\nsystem_usec 200\nnr_periods 0\n"
                            "nr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
        };
        char stat[8192], cur[32];

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (st == BENCH_AT_LIMIT) {
                bench_memstat_format(stat, sizeof(stat), 180 * MG_MIB, 50 * MG_MIB, 12 * MG_MIB, 8 * MG_MIB, 0, 0);
                snprintf(cur, sizeof(cur), "%" PRIu64 "\n", 250 * MG_MIB);
        } else {
                bench_memstat_format(stat, sizeof(stat), 8 * MG_MIB, 6 * MG_MIB, 1 * MG_MIB, 0, 0, 0);
                snprintf(cur, sizeof(cur), "%" PRIu64 "\n", 16 * MG_MIB);
        }
        t.memory_stat = stat;
        t.memory_current = cur;
        return fixture_tree_make(dir, &t);
}

int bench_tmpdir_new(char *ret, size_t size, const char *tag) {
        const char *base = getenv("TMPDIR");
        struct stat st;

        if (!base || !*base)
                base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0
                               ? "/dev/shm"
                               : "/tmp";
        snprintf(ret, size, "%s/memguard-bench-%s-XXXXXX", base, tag);
        return mkdtemp(ret) ? 0 : -errno;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        (void) remove(path);
        return 0;
}

void bench_tmpdir_remove(const char *dir) {
        (void) nftw(dir, rm_one, 64, FTW_DEPTH | FTW_PHYS);
}

pid_t bench_spawn_holder(const char *cg, uint64_t kib, uint64_t churn_kib) {
        int p[2];
        pid_t pid;
        char c;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int e = errno;
                close(p[0]);
                close(p[1]);
                return -e;
        }
        if (pid == 0) {
                char *m;
                close(p[0]);
                if (mgt_cg_write(cg, "cgroup.procs", "0") < 0)
                        _exit(1);
                m = mmap(NULL, kib * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        _exit(1);
                for (uint64_t off = 0; off < kib * 1024; off += 4096)
                        m[off] = 1;
                if (write(p[1], "x", 1) != 1)
                        _exit(1);
                for (;;) {
                        if (!churn_kib) {
                                pause();
                                continue;
                        }
                        (void) madvise(m, churn_kib * 1024, MADV_DONTNEED);
                        for (uint64_t off = 0; off < churn_kib * 1024; off += 4096)
                                m[off] = 1;
                }
        }
        close(p[1]);
        struct pollfd pfd = { .fd = p[0], .events = POLLIN };
        if (poll(&pfd, 1, 60000) != 1 || read(p[0], &c, 1) != 1) {
                close(p[0]);
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return -ETIMEDOUT;
        }
        close(p[0]);
        return pid;
}

#ifdef BENCH_HAVE_CALLGRIND
void bench_cg_on(void) {
        CALLGRIND_TOGGLE_COLLECT;
}

void bench_cg_off(void) {
        CALLGRIND_TOGGLE_COLLECT;
}

void bench_cg_dump(const char *name) {
        CALLGRIND_DUMP_STATS_AT(name);
}

bool bench_under_valgrind(void) {
        return RUNNING_ON_VALGRIND != 0;
}
#else
void bench_cg_on(void) {
}

void bench_cg_off(void) {
}

void bench_cg_dump(const char *name) {
        (void) name;
}

bool bench_under_valgrind(void) {
        return false;
}
#endif

void bench_mark(const char *what) {
        char path[256];
        snprintf(path, sizeof(path), "/memguard-bench-mark/%s", what);
        (void) access(path, F_OK);
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n) {
        if (n == 0)
                return 0;
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
