/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "util.h"

/* Counters the seam bumps may be bumped on a set's restore worker too. */
static void bump(unsigned *counter) {
        __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static bool same_file(int a, int b) {
        struct stat sa, sb;
        return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void fixture_note_open(struct fixture *f, const char *name, int fd) {
        if (fd < 0)
                return;
        for (int i = 0; i < MG_CG_N; i++) {
                bool named = strcmp(mg_cgfile_name((enum mg_cgfile) i), name) == 0;
                /* fd was closed and its number reused for another file */
                if (f->fd_of[i] == fd && !named)
                        f->fd_of[i] = -1;
                /* the first open of the file, or one again after its fd
                 * was closed (a trimmed guard); not a second one (the
                 * restore's own fd of memory.high) */
                if (named && (f->fd_of[i] < 0 || f->fd_of[i] == fd || !same_file(f->fd_of[i], fd)))
                        f->fd_of[i] = fd;
        }
}

static int fx_openat(void *ud, int dirfd, const char *name, int flags) {
        struct fixture *f = ud;
        int fd;

        bump(&f->opens);
        fd = openat(dirfd, name, flags);
        fixture_note_open(f, name, fd);
        return fd;
}

static ssize_t fx_pread(void *ud, int fd, void *buf, size_t len, off_t off) {
        struct fixture *f = ud;
        int err = __atomic_load_n(&f->fail_errno, __ATOMIC_RELAXED);
        bump(&f->reads);
        for (int i = 0; i < MG_CG_N; i++)
                if (f->fd_of[i] == fd)
                        bump(&f->reads_of[i]);
        if (err) {
                errno = err;
                return -1;
        }
        ssize_t n = pread(fd, buf, len, off);
        if (n > 0) {
                const char *nul = memchr(buf, '\0', (size_t) n);
                if (nul)
                        n = nul - (const char *) buf; /* a tail fx_pwrite() blanked */
        }
        return n;
}

static bool is_high(struct fixture *f, int fd) {
        struct stat st;
        return f->gate_ino && fstat(fd, &st) == 0 && (unsigned long) st.st_ino == f->gate_ino;
}

/* The gate: one byte on gate[0] per write let through, waited for with
 * poll (allowed under the worker's filter), 10 s at most. */
static void pass_gate(struct fixture *f) {
        struct pollfd p = { .fd = f->gate[0], .events = POLLIN };
        char c;

        __atomic_fetch_add(&f->gate_waiting, 1, __ATOMIC_SEQ_CST);
        if (poll(&p, 1, 10000) == 1 && read(f->gate[0], &c, 1) == 1)
                __atomic_fetch_add(&f->gate_passed, 1, __ATOMIC_SEQ_CST);
        else
                __atomic_fetch_add(&f->gate_timeouts, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_sub(&f->gate_waiting, 1, __ATOMIC_SEQ_CST);
}

/* kernfs replaces the value on each write; a regular file would keep the
 * tail of a longer old value.  Truncated by opening the fd's /proc link
 * with O_TRUNC; on a set's restore worker, under mg_confine_thread()'s
 * list (no ftruncate, no O_TRUNC), the tail is overwritten with NULs
 * instead, which fx_pread() and fixture_read() stop at (kernfs values have
 * none). */
static ssize_t fx_pwrite(void *ud, int fd, const void *buf, size_t len, off_t off) {
        struct fixture *f = ud;
        char self[64];
        struct stat st;
        int t;

        bump(&f->writes);
        t = __atomic_load_n(&f->fail_write_errno, __ATOMIC_RELAXED);
        if (t) {
                errno = t;
                return -1;
        }
        if (f->gate_ino && is_high(f, fd)) {
                int err = __atomic_load_n(&f->fail_high_write_errno, __ATOMIC_RELAXED);
                if (f->gate[0] >= 0)
                        pass_gate(f);
                if (err) {
                        errno = err;
                        return -1;
                }
                __atomic_fetch_add(&f->high_writes, 1, __ATOMIC_SEQ_CST);
        }
        snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
        t = open(self, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (t >= 0) {
                close(t);
                return pwrite(fd, buf, len, off);
        }
        if (errno != EPERM || fstat(fd, &st) < 0)
                return -1;
        for (off_t at = off + (off_t) len; at < st.st_size;) {
                static const char nul[64];
                size_t n = st.st_size - at < (off_t) sizeof(nul) ? (size_t) (st.st_size - at) : sizeof(nul);
                ssize_t k = pwrite(fd, nul, n, at);
                if (k <= 0)
                        return -1;
                at += k;
        }
        return pwrite(fd, buf, len, off);
}

static void note_high_ino(struct fixture *f) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof(path), "%s/memory.high", f->dir);
        f->gate_ino = stat(path, &st) == 0 ? (unsigned long) st.st_ino : 0;
}

void fixture_gate(struct fixture *f) {
        if (f->gate[0] < 0 && pipe2(f->gate, O_CLOEXEC) < 0)
                abort();
        note_high_ino(f);
}

void fixture_gate_open(struct fixture *f, int n) {
        for (int i = 0; i < n; i++)
                if (write(f->gate[1], "x", 1) != 1)
                        abort();
}

void fixture_ungate(struct fixture *f) {
        for (int i = 0; i < 2; i++)
                if (f->gate[i] >= 0)
                        close(f->gate[i]);
        f->gate[0] = f->gate[1] = -1;
}

bool fixture_gate_wait(struct fixture *f, int n, int timeout_ms) {
        struct timespec gap = { .tv_nsec = 1000000 }; /* 1 ms */
        for (int i = 0; i < timeout_ms; i++) {
                if (__atomic_load_n(&f->gate_waiting, __ATOMIC_SEQ_CST) >= n)
                        return true;
                nanosleep(&gap, NULL);
        }
        return __atomic_load_n(&f->gate_waiting, __ATOMIC_SEQ_CST) >= n;
}

int fixture_load(const int *counter) {
        return __atomic_load_n(counter, __ATOMIC_SEQ_CST);
}

int fixture_tree_write(const char *dir, const char *name, const char *content) {
        char path[4096];
        size_t len = strlen(content);
        int fd, r = 0;

        if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        /* a fixture file written short would make a test pass for nothing */
        if (len && write(fd, content, len) != (ssize_t) len)
                r = -EIO;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

void fixture_write(struct fixture *f, const char *file, const char *content) {
        if (fixture_tree_write(f->dir, file, content) < 0)
                abort();
}

const char *fixture_read(struct fixture *f, const char *file) {
        static char buf[8192];
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", f->dir, file);
        FILE *fp = fopen(path, "r");
        if (!fp)
                return NULL;
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        buf[n] = '\0';
        fclose(fp);
        return buf;
}

void fixture_remove(struct fixture *f, const char *file) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", f->dir, file);
        unlink(path);
}

/* The unit suite's memory.stat: the decision's keys, some others as zeros. */
static void memstat_format(char *buf, size_t size, uint64_t anon, uint64_t file, uint64_t kernel, uint64_t shmem,
                           uint64_t sock, uint64_t dirty, uint64_t writeback, uint64_t mapped, uint64_t refault_file,
                           uint64_t restore_file) {
        snprintf(buf, size,
                 "anon %" PRIu64 "\nfile %" PRIu64 "\nkernel %" PRIu64 "\nkernel_stack 16384\npagetables 40960\n"
                 "sec_pagetables 0\npercpu 0\nsock %" PRIu64 "\nvmalloc 0\nshmem %" PRIu64 "\nzswap 0\n"
                 "file_mapped %" PRIu64 "\nfile_dirty %" PRIu64 "\nfile_writeback %" PRIu64 "\nswapcached 0\n"
                 "anon_thp 0\ninactive_anon %" PRIu64 "\nactive_anon 0\ninactive_file %" PRIu64 "\n"
                 "active_file 0\nunevictable 0\nslab_reclaimable 0\nslab_unreclaimable 0\nslab 0\n"
                 "workingset_refault_anon 0\nworkingset_refault_file %" PRIu64 "\nworkingset_restore_file %" PRIu64 "\n"
                 "pgscan 0\npgsteal 0\n"
                 "pgfault 0\npgmajfault 0\n",
                 anon, file, kernel, sock, shmem, mapped, dirty, writeback, anon, file, refault_file, restore_file);
}

void fixture_stat(struct fixture *f, uint64_t anon, uint64_t file, uint64_t kernel, uint64_t shmem, uint64_t sock,
                  uint64_t dirty, uint64_t writeback) {
        char buf[2048];
        memstat_format(buf, sizeof(buf), anon, file, kernel, shmem, sock, dirty, writeback, f->mapped,
                       f->refault_file, f->restore_file);
        fixture_write(f, "memory.stat", buf);
}

static void psi_format(char *buf, size_t size, uint64_t some_total_usec) {
        snprintf(buf, size,
                 "some avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n"
                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n",
                 some_total_usec, some_total_usec / 2);
}

void fixture_psi(struct fixture *f, const char *file, uint64_t some_total_usec) {
        char buf[256];
        psi_format(buf, sizeof(buf), some_total_usec);
        fixture_write(f, file, buf);
}

void fixture_events(struct fixture *f, uint64_t high, uint64_t max, uint64_t oom_kill) {
        char buf[256];
        snprintf(buf, sizeof(buf), "low 0\nhigh %" PRIu64 "\nmax %" PRIu64 "\noom %" PRIu64 "\noom_kill %" PRIu64
                 "\noom_group_kill 0\n", high, max, oom_kill, oom_kill);
        fixture_write(f, "memory.events.local", buf);
}

void fixture_current(struct fixture *f, uint64_t bytes) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRIu64 "\n", bytes);
        fixture_write(f, "memory.current", buf);
}

uint64_t fixture_clock(void *userdata) {
        return ((struct fixture *) userdata)->now_usec;
}

int fixture_tree_make(const char *dir, const struct fixture_tree *t) {
        static const struct fixture_tree none;
        char stat[2048], psi[256];
        /* what fixture_events(f, 0, 0, 0) writes */
        static const char events[] = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n";
        int r;

        if (!t)
                t = &none;
        memstat_format(stat, sizeof(stat), 8 * MG_MIB, 6 * MG_MIB, 1 * MG_MIB, 0, 0, 0, 0, 0, 0, 0);
        psi_format(psi, sizeof(psi), 0);
        const char *const files[][2] = {
                { "memory.current", t->memory_current ? t->memory_current : "16777216\n" },
                { "memory.stat", t->memory_stat ? t->memory_stat : stat },
                { "memory.pressure", t->memory_pressure ? t->memory_pressure : psi },
                { "io.pressure", t->io_pressure ? t->io_pressure : psi },
                { "memory.events.local", events },
                { "memory.events", events },
                { "memory.high", "max\n" },
                { "memory.max", "max\n" },
                { "cpu.stat", t->cpu_stat ? t->cpu_stat : "usage_usec 1000\nuser_usec 800\nsystem_usec 200\n" },
                { "cgroup.kill", "" },
                { "cgroup.procs", "" },
                { "cgroup.events", "populated 1\nfrozen 0\n" },
        };
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                r = fixture_tree_write(dir, files[i][0], files[i][1]);
                if (r < 0)
                        return r;
        }
        return 0;
}

void fixture_init(struct fixture *f) {
        memset(f, 0, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "%s/memguard-fixture-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(f->dir))
                abort();
        f->io = (struct mg_io) { .openat = fx_openat, .pread = fx_pread, .pwrite = fx_pwrite, .userdata = f };
        f->gate[0] = f->gate[1] = -1;
        for (int i = 0; i < MG_CG_N; i++)
                f->fd_of[i] = -1;
        f->now_usec = 1000000;
        if (fixture_tree_make(f->dir, NULL) < 0)
                abort();
        note_high_ino(f);
}

void fixture_map_fds(struct fixture *f, const struct mg_cgroup *cg) {
        for (int i = 0; i < MG_CG_N; i++)
                f->fd_of[i] = cg->fd[i];
}

void fixture_reset_counts(struct fixture *f) {
        f->opens = f->reads = f->writes = 0;
        memset(f->reads_of, 0, sizeof(f->reads_of));
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) type;
        (void) ftw;
        return remove(path);
}

int fixture_remove_tree(const char *dir) {
        if (access(dir, F_OK) < 0 && errno == ENOENT)
                return 0; /* a test removed it (a cgroup that went away) */
        /* children first; symlinks removed, not followed; nothing below a
         * mount a test left behind (removing it then fails: EBUSY) */
        return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void fixture_cleanup(struct fixture *f) {
        fixture_ungate(f);
        if (fixture_remove_tree(f->dir) < 0)
                abort();
}

int fixture_user_xattrs(const char *dir) {
        if (setxattr(dir, "user.memguard.test", "1", 1, 0) < 0)
                return errno == ENOTSUP ? 0 : -errno;
        (void) removexattr(dir, "user.memguard.test");
        return 1;
}

ssize_t fixture_get_xattr(const char *dir, const char *name, char *buf, size_t size) {
        ssize_t n = getxattr(dir, name, buf, size - 1);

        buf[n > 0 ? n : 0] = '\0';
        return n;
}

int fixture_open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = -1; /* the DIR's own */

        if (!d)
                return -1;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static void append_line(char *buf, size_t size, const char *msg) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "%s\n", msg);
}

void fixture_record(struct fixture_seen *s, const struct mg_event *ev) {
        if (s->silent)
                s->after++;
        if ((unsigned) ev->type >= FIXTURE_EVENT_TYPES)
                abort();
        s->n[ev->type]++;
        s->events++;
        if (ev->lend)
                s->lend = *ev->lend;
        switch (ev->type) {
        case MG_EVENT_KILL: s->kill = *ev->kill; break;
        case MG_EVENT_KILL_DRY_RUN: s->dry = *ev->kill; break;
        case MG_EVENT_PRE_KILL: s->pre = *ev->kill; break;
        case MG_EVENT_KILL_AVERTED:
                s->averted = *ev->kill;
                s->averted_read = *ev->report;
                break;
        case MG_EVENT_ERROR:
                s->last_error = ev->error;
                s->last_what = ev->what;
                break;
        case MG_EVENT_KERNEL_OOM: s->oom_count += ev->count; break;
        case MG_EVENT_EMPTY_OVER_LIMIT: s->empty = *ev->report; break;
        case MG_EVENT_RECLAIM: s->reclaim = *ev->reclaim; break;
        case MG_EVENT_PARK: s->park = *ev->kill; break;
        case MG_EVENT_THAW:
                s->thaw = *ev->kill;
                s->thaw_read = *ev->report;
                break;
        case MG_EVENT_UNKILLABLE:
                s->unkillable = *ev->unkillable;
                s->unkillable_kill = *ev->kill;
                s->kills_before_unkillable = s->n[MG_EVENT_KILL];
                break;
        default: break;
        }
}

void fixture_record_log(struct fixture_seen *s, int level, const char *msg) {
        if (s->silent)
                s->after++;
        append_line(s->log, sizeof(s->log), msg);
        if (level == MG_LOG_WARNING) {
                s->warnings++;
                append_line(s->warning_log, sizeof(s->warning_log), msg);
        }
}
