/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cgdir.h"
#include "parse.h"
#include "util.h"

static void sleep_usec(uint64_t usec) {
        struct timespec ts = { .tv_sec = (time_t) (usec / 1000000), .tv_nsec = (long) (usec % 1000000) * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int mgt_cg_is_cgroup2(const char *path) {
        struct statfs sfs;
        struct stat st;

        if (statfs(path, &sfs) < 0 || stat(path, &st) < 0)
                return -errno;
        return sfs.f_type == CGROUP2_SUPER_MAGIC && S_ISDIR(st.st_mode);
}

static int join(const char *dir, const char *rel, char **ret) {
        char *p;

        while (*rel == '/')
                rel++;
        /* *ret is not written on failure (asprintf leaves p undefined then) */
        if (asprintf(&p, "%s%s%s", dir, *rel ? "/" : "", rel) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int mgt_cg_resolve(const char *arg, char **ret) {
        char *p;
        int r;

        if (!arg || !*arg)
                return -EINVAL;
        r = mgt_cg_is_cgroup2(arg);
        if (r > 0) {
                p = strdup(arg);
                if (!p)
                        return -ENOMEM;
                *ret = p;
                return 0;
        }
        /* Not a cgroup as given: try it as a cgroup path ("/user.slice"),
         * unless it already points into the mount. */
        if (strncmp(arg, MGT_CGROUP_ROOT, strlen(MGT_CGROUP_ROOT)) != 0) {
                if (join(MGT_CGROUP_ROOT, arg, &p) < 0)
                        return -ENOMEM;
                if (mgt_cg_is_cgroup2(p) > 0) {
                        *ret = p;
                        return 0;
                }
                free(p);
        }
        return r == 0 ? -ENOTSUP : r;
}

int mgt_cg_self_in(const char *root, char **ret) {
        char line[PATH_MAX + 8];
        FILE *f;
        int r = -ENOENT;

        f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "0::", 3) != 0)
                        continue;
                line[strcspn(line, "\n")] = '\0';
                r = join(root, line + 3, ret);
                break;
        }
        fclose(f);
        return r;
}

int mgt_cg_self(char **ret) {
        if (mgt_cg_is_cgroup2(MGT_CGROUP_ROOT) <= 0)
                return -ENOTSUP;
        return mgt_cg_self_in(MGT_CGROUP_ROOT, ret);
}

int mgt_cg_default_parent(char **ret) {
        char *self, *slash;
        int r;

        r = mgt_cg_self(&self);
        if (r < 0)
                return r;
        /* NOLINTNEXTLINE(clang-analyzer-core.CallAndMessage): set when r >= 0; the analyzer lets fopen() fail with errno 0 */
        slash = strrchr(self, '/');
        if (strcmp(self, MGT_CGROUP_ROOT) != 0 && slash && slash - self >= (ptrdiff_t) strlen(MGT_CGROUP_ROOT))
                *slash = '\0';
        *ret = self;
        return 0;
}

static int open_in(const char *cg, const char *file, int flags) {
        char path[PATH_MAX];
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", cg, file) >= sizeof(path))
                return -ENAMETOOLONG;
        int fd = open(path, flags | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fd;
}

ssize_t mgt_cg_read(const char *cg, const char *file, char *buf, size_t size) {
        ssize_t n;
        int fd, e;

        if (size == 0)
                return -EINVAL;
        buf[0] = '\0'; /* callers may scan it after a failure */
        fd = open_in(cg, file, O_RDONLY);
        if (fd < 0)
                return fd;
        do
                n = pread(fd, buf, size - 1, 0);
        while (n < 0 && errno == EINTR);
        e = errno;
        close(fd);
        if (n < 0)
                return -e;
        buf[n] = '\0';
        return n;
}

int mgt_cg_write(const char *cg, const char *file, const char *val) {
        int fd = open_in(cg, file, O_WRONLY);
        ssize_t n;
        int r = 0;

        if (fd < 0)
                return fd;
        do
                n = write(fd, val, strlen(val));
        while (n < 0 && errno == EINTR);
        if (n < 0)
                r = -errno;
        close(fd);
        return r;
}

int mgt_cg_writef(const char *cg, const char *file, const char *fmt, ...) {
        char val[128]; /* a number, "max", "+memory +io": cgroup values are short */
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(val, sizeof(val), fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(val))
                return -EINVAL;
        return mgt_cg_write(cg, file, val);
}

int mgt_cg_read_u64(const char *cg, const char *file, uint64_t *ret) {
        char buf[64];
        ssize_t n = mgt_cg_read(cg, file, buf, sizeof(buf));
        return n < 0 ? (int) n : mg_parse_u64_value(buf, (size_t) n, ret);
}

/* memory.stat is about 2.5 KiB on 7.x; 8 KiB leaves room to grow.  On the
 * stack: the tickers read beside the main thread. */
#define KEYED_MAX 8192

int mgt_cg_read_memstat(const char *cg, struct mg_memstat *ret) {
        char buf[KEYED_MAX];
        ssize_t n = mgt_cg_read(cg, "memory.stat", buf, sizeof(buf));
        return n < 0 ? (int) n : mg_parse_memstat(buf, (size_t) n, ret);
}

int mgt_cg_read_events(const char *cg, const char *file, struct mg_mem_events *ret) {
        char buf[512];
        ssize_t n = mgt_cg_read(cg, file, buf, sizeof(buf));
        return n < 0 ? (int) n : mg_parse_mem_events(buf, (size_t) n, ret);
}

int mgt_cg_read_psi(const char *cg, const char *file, struct mg_psi *ret) {
        char buf[512];
        ssize_t n = mgt_cg_read(cg, file, buf, sizeof(buf));
        return n < 0 ? (int) n : mg_parse_psi(buf, (size_t) n, ret);
}

int mgt_key_value(const char *buf, size_t len, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);
        const char *end = buf + len;

        for (const char *p = buf; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t line = (size_t) ((nl ? nl : end) - p);
                if (line > kl && memcmp(p, key, kl) == 0 && p[kl] == ' ')
                        return mg_parse_u64_value(p + kl + 1, line - kl - 1, ret);
                if (!nl)
                        break;
                p = nl + 1;
        }
        return -ENOENT;
}

int mgt_cg_read_key(const char *cg, const char *file, const char *key, uint64_t *ret) {
        char buf[KEYED_MAX];
        ssize_t n = mgt_cg_read(cg, file, buf, sizeof(buf));
        return n < 0 ? (int) n : mgt_key_value(buf, (size_t) n, key, ret);
}

int mgt_cg_has_word(const char *cg, const char *file, const char *word) {
        char buf[512];
        size_t wl = strlen(word);
        ssize_t n = mgt_cg_read(cg, file, buf, sizeof(buf));

        if (n < 0)
                return (int) n;
        for (char *p = buf; (p = strstr(p, word)); p += wl)
                if ((p == buf || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\n' || p[wl] == '\0'))
                        return 1;
        return 0;
}

int mgt_cg_enable_memory(const char *cg) {
        int r = mgt_cg_has_word(cg, "cgroup.subtree_control", "memory");
        if (r != 0)
                return r < 0 ? r : 0;
        r = mgt_cg_has_word(cg, "cgroup.controllers", "memory");
        if (r <= 0)
                return r < 0 ? r : -ENOTSUP;
        r = mgt_cg_write(cg, "cgroup.subtree_control", "+memory");
        return r < 0 ? r : 1;
}

int mgt_cg_make_parent(const char *root, const char *path, const char *controllers) {
        int r;

        (void) mgt_cg_write(root, "cgroup.subtree_control", controllers);
        if (mkdir(path, 0755) < 0)
                return -errno;
        r = mgt_cg_write(path, "cgroup.subtree_control", controllers);
        if (r < 0 && strcmp(controllers, "+memory") != 0)
                r = mgt_cg_write(path, "cgroup.subtree_control", "+memory");
        if (r < 0)
                (void) rmdir(path);
        return r;
}

int mgt_cg_make_child(const char *parent, const char *prefix, char **ret) {
        char *p;
        for (int i = 0; i < 1000; i++) {
                int n = i == 0 ? asprintf(&p, "%s/%s-%d", parent, prefix, (int) getpid())
                               : asprintf(&p, "%s/%s-%d-%d", parent, prefix, (int) getpid(), i);
                if (n < 0)
                        return -ENOMEM;
                if (mkdir(p, 0755) == 0) {
                        *ret = p;
                        return 0;
                }
                int r = -errno;
                free(p);
                if (r != -EEXIST)
                        return r;
        }
        return -EEXIST;
}

int mgt_cg_populated(const char *cg) {
        char buf[128];
        ssize_t n = mgt_cg_read(cg, "cgroup.events", buf, sizeof(buf));
        int populated, r;

        if (n < 0)
                return (int) n;
        r = mg_parse_populated(buf, (size_t) n, &populated);
        return r < 0 ? r : populated;
}

int mgt_cg_open_events(const char *cg) {
        return open_in(cg, "cgroup.events", O_RDONLY);
}

int mgt_cg_wait_populated(const char *cg, int want, uint64_t timeout_usec) {
        uint64_t end = mg_mono_usec() + timeout_usec;
        int fd = mgt_cg_open_events(cg);

        if (fd < 0)
                return fd;
        for (;;) {
                char buf[128];
                int populated;
                ssize_t n = pread(fd, buf, sizeof(buf), 0);
                if (n > 0 && mg_parse_populated(buf, (size_t) n, &populated) == 0 && populated == want) {
                        close(fd);
                        return 0;
                }
                uint64_t now = mg_mono_usec();
                if (now >= end)
                        break;
                /* kernfs wakes POLLPRI when cgroup.events changes */
                struct pollfd pfd = { .fd = fd, .events = POLLPRI };
                uint64_t left = (end - now) / 1000 + 1;
                (void) poll(&pfd, 1, (int) (left > 100 ? 100 : left));
        }
        close(fd);
        return -ETIMEDOUT;
}

int mgt_cg_kill_all(const char *cg) {
        char buf[16384];
        int r = mgt_cg_write(cg, "cgroup.kill", "1");

        if (r != -ENOENT && r != -EACCES && r != -EPERM)
                return r;
        /* Before 5.14: signal each member.  A fork racing this loop is
         * caught by the caller's next round (it waits for populated 0). */
        ssize_t n = mgt_cg_read(cg, "cgroup.procs", buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        for (const char *p = buf, *end = buf + n; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                uint64_t pid;
                if (!nl)
                        break; /* a read cut mid-line: the caller's next round */
                /* never kill(0) or kill(-1) */
                if (mg_parse_u64_value(p, (size_t) (nl - p), &pid) == 0 && pid > 0 && pid <= INT_MAX) {
                        if (kill((pid_t) pid, SIGKILL) < 0 && errno != ESRCH)
                                r = -errno;
                        else
                                r = 0;
                }
                p = nl + 1;
        }
        return r < 0 && r != -ENOENT ? r : 0;
}

int mgt_cg_rmdir(const char *cg, uint64_t timeout_usec) {
        uint64_t end = mg_mono_usec() + timeout_usec;
        for (;;) {
                if (rmdir(cg) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY || mg_mono_usec() >= end)
                        return -errno;
                sleep_usec(10000); /* a killed task lingers briefly after populated 0 */
        }
}

int mgt_cg_destroy(const char *cg, uint64_t timeout_usec) {
        uint64_t end = mg_mono_usec() + timeout_usec;
        int r;

        if (access(cg, F_OK) < 0)
                return 0;
        /* kill again each round: a member may fork while it is signalled */
        do {
                (void) mgt_cg_kill_all(cg);
                r = mgt_cg_wait_populated(cg, 0, 50 * MG_USEC_PER_MSEC);
        } while (r == -ETIMEDOUT && mg_mono_usec() < end);
        if (r == -ETIMEDOUT)
                return r;
        return mgt_cg_rmdir(cg, end > mg_mono_usec() ? end - mg_mono_usec() : 100000);
}
