/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup file layer (cgroup.h): the actor's directory and the files
 * below it, opened one name at a time without following links, read with
 * pread at offset 0 into the caller's buffers, trimmed and opened again.
 * It touches only that directory and its files, through struct mg_io; it
 * knows nothing of guards.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cgroup.h"
#include "parse.h"
#include "util.h"

static const struct {
        const char *name;
        int flags;
        bool required;
} files[MG_CG_N] = {
        [MG_CG_CURRENT] = { "memory.current", O_RDONLY, true },
        [MG_CG_STAT] = { "memory.stat", O_RDONLY, true },
        [MG_CG_PRESSURE] = { "memory.pressure", O_RDONLY, false },
        [MG_CG_IO_PRESSURE] = { "io.pressure", O_RDONLY, false },
        [MG_CG_EVENTS_LOCAL] = { "memory.events.local", O_RDONLY, false },
        /* Lowering memory.high makes the writer reclaim synchronously (up
         * to 16 fruitless retries); kernels that honour O_NONBLOCK on it
         * return at once instead, older ones ignore the flag. */
        [MG_CG_HIGH] = { "memory.high", O_RDWR | O_NONBLOCK, false },
        [MG_CG_MAX] = { "memory.max", O_RDONLY, false },
        [MG_CG_CPU_STAT] = { "cpu.stat", O_RDONLY, false },
        [MG_CG_KILL] = { "cgroup.kill", O_WRONLY, false },
        [MG_CG_PROCS] = { "cgroup.procs", O_RDONLY, false },
        [MG_CG_EVENTS] = { "cgroup.events", O_RDONLY, true },
};

const char *mg_cgfile_name(enum mg_cgfile f) {
        return f < MG_CG_N ? files[f].name : "?";
}

static int io_openat(const struct mg_io *io, int dirfd, const char *name, int flags) {
        if (io && io->openat)
                return io->openat(io->userdata, dirfd, name, flags);
        return openat(dirfd, name, flags);
}

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* struct open_how, version 0 (24 bytes), without needing 5.6 headers. */
struct mg_open_how {
        uint64_t flags, mode, resolve;
};

/* openat2 (5.6+) with MG_RESOLVE; -1 and ENOSYS where the kernel lacks it. */
static int sys_openat2(int dirfd, const char *name, int flags) {
        /* Remembered per process: a kernel does not grow openat2 later. */
        static atomic_bool missing;
        struct mg_open_how how = { .flags = (uint64_t) flags, .resolve = MG_RESOLVE };
        int fd;

        if (atomic_load_explicit(&missing, memory_order_relaxed)) {
                errno = ENOSYS;
                return -1;
        }
        fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS)
                atomic_store_explicit(&missing, true, memory_order_relaxed);
        return fd;
}

/*
 * Opens one name below dirfd without following a symlink anywhere.  The
 * names are single components, so on the openat fallback O_NOFOLLOW covers
 * the one component there is; RESOLVE_NO_XDEV additionally refuses a file
 * something was mounted over.  Returns the fd or a negative errno.
 */
static int open_beneath(const struct mg_io *io, int dirfd, const char *name, int flags) {
        int fd = -1;

        if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return -EINVAL;
        flags |= O_CLOEXEC | O_NOFOLLOW;
        for (int i = 0; i < MG_EINTR_RETRIES; i++) {
                if (io && io->openat2)
                        fd = io->openat2(io->userdata, dirfd, name, flags, MG_RESOLVE);
                else if (!io || !io->openat)
                        fd = sys_openat2(dirfd, name, flags);
                else
                        fd = io_openat(io, dirfd, name, flags);
                if (fd < 0 && errno == ENOSYS)
                        fd = io_openat(io, dirfd, name, flags);
                if (fd >= 0 || errno != EINTR)
                        break;
        }
        return fd < 0 ? -errno : fd;
}

static ssize_t io_pread(const struct mg_io *io, int fd, void *buf, size_t len) {
        if (io && io->pread)
                return io->pread(io->userdata, fd, buf, len, 0);
        return pread(fd, buf, len, 0);
}

static ssize_t io_pwrite(const struct mg_io *io, int fd, const void *buf, size_t len) {
        if (io && io->pwrite)
                return io->pwrite(io->userdata, fd, buf, len, 0);
        return pwrite(fd, buf, len, 0);
}

/* The actor's directory itself: a path from the caller, so not beneath
 * anything; its last component must not be a symlink.  A trailing slash
 * would make the kernel follow a symlink despite O_NOFOLLOW, so trailing
 * slashes are dropped first ("/" stays). */
static int open_dir(const struct mg_io *io, const char *path) {
        char buf[PATH_MAX];
        size_t len = strlen(path);
        int fd = -1;

        if (len == 0)
                return -ENOENT;
        if (len >= sizeof(buf))
                return -ENAMETOOLONG;
        memcpy(buf, path, len + 1);
        while (len > 1 && buf[len - 1] == '/')
                buf[--len] = '\0';
        for (int i = 0; i < MG_EINTR_RETRIES; i++) {
                fd = io_openat(io, AT_FDCWD, buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 || errno != EINTR)
                        break;
        }
        if (fd < 0 && errno == ENOTDIR) {
                /* O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR; say
                 * what it is (for the message only: nothing is opened). */
                struct stat st;
                if (fstatat(AT_FDCWD, buf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                        return -ELOOP;
                errno = ENOTDIR;
        }
        return fd < 0 ? -errno : fd;
}

static int open_file(struct mg_cgroup *cg, enum mg_cgfile f) {
        int fd = open_beneath(cg->io, cg->dirfd, files[f].name, files[f].flags);
        if (fd >= 0)
                cg->fd[f] = fd;
        return fd < 0 ? fd : 0;
}

int mg_cgroup_open(struct mg_cgroup *cg, const char *path, unsigned flags, const struct mg_io *io) {
        struct statfs sfs;
        struct stat st;
        int r;

        *cg = (struct mg_cgroup) { .dirfd = -1, .io = io, .flags = flags, .path = path };
        for (int i = 0; i < MG_CG_N; i++)
                cg->fd[i] = -1;

        r = open_dir(io, path);
        if (r < 0)
                return r;
        cg->dirfd = r;
        if (fstat(cg->dirfd, &st) < 0) {
                r = -errno;
                goto fail;
        }
        cg->dev = st.st_dev;
        cg->ino = st.st_ino;
        cg->dir_uid = st.st_uid;
        cg->dir_mode = st.st_mode;
        if (!(flags & MG_CGROUP_ANY_FS)) {
                if (fstatfs(cg->dirfd, &sfs) < 0) {
                        r = -errno;
                        goto fail;
                }
                if (sfs.f_type != CGROUP2_SUPER_MAGIC) {
                        r = -ENOTSUP;
                        goto fail;
                }
        }
        for (int i = 0; i < MG_CG_N; i++) {
                if ((flags & MG_CGROUP_HIGH_ONLY) && i != MG_CG_HIGH)
                        continue;
                r = open_file(cg, i);
                if (r < 0) {
                        /* Older kernels lack memory.events.local, cgroup.kill;
                         * a kernel booted without PSI lacks memory.pressure. */
                        if (r == -ENOENT && !files[i].required)
                                continue;
                        goto fail;
                }
                cg->have = (uint16_t) (cg->have | MG_CG_BIT(i));
        }
        cg->all_open = !(flags & MG_CGROUP_HIGH_ONLY);
        return 0;
fail:
        mg_cgroup_close(cg);
        return r;
}

/* The directory again, by its path: the same one, or -ESTALE. */
static int need_dir(struct mg_cgroup *cg) {
        struct stat st;
        int fd;

        if (cg->dirfd >= 0)
                return 0;
        if (!cg->path)
                return -EBADF;
        fd = open_dir(cg->io, cg->path);
        if (fd < 0)
                return fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ? -ESTALE : fd;
        if (fstat(fd, &st) < 0 || st.st_dev != cg->dev || st.st_ino != cg->ino) {
                close(fd);
                return -ESTALE;
        }
        cg->dirfd = fd;
        return 0;
}

int mg_cgroup_need(struct mg_cgroup *cg, enum mg_cgfile f) {
        int r;

        if (cg->fd[f] >= 0)
                return 0;
        if (!(cg->have & MG_CG_BIT(f)))
                return -EOPNOTSUPP;
        r = need_dir(cg);
        return r < 0 ? r : open_file(cg, f);
}

/* An optional file that is not there now (the pressure files a live
 * cgroup hides: cgroup.pressure 0) is left to its reads, which report it. */
static bool open_failed(enum mg_cgfile f, int r) {
        return r < 0 && r != -EOPNOTSUPP && !(r == -ENOENT && !files[f].required);
}

int mg_cgroup_open_all(struct mg_cgroup *cg) {
        int r;

        if (cg->all_open)
                return 0;
        r = mg_cgroup_need(cg, MG_CG_KILL);
        if (open_failed(MG_CG_KILL, r))
                return r;
        for (int i = 0; i < MG_CG_N; i++) {
                r = mg_cgroup_need(cg, i);
                if (open_failed(i, r))
                        return r;
        }
        r = need_dir(cg);
        cg->all_open = r == 0;
        return r;
}

void mg_cgroup_trim(struct mg_cgroup *cg, unsigned keep) {
        cg->all_open = false;
        for (int i = 0; i < MG_CG_N; i++) {
                if (cg->fd[i] >= 0 && !(keep & MG_CG_BIT(i))) {
                        close(cg->fd[i]);
                        cg->fd[i] = -1;
                }
        }
        if (cg->dirfd >= 0)
                close(cg->dirfd);
        cg->dirfd = -1;
}

void mg_cgroup_forget(struct mg_cgroup *cg, enum mg_cgfile f) {
        if (cg->fd[f] >= 0)
                close(cg->fd[f]);
        cg->fd[f] = -1;
        cg->have &= (uint16_t) ~MG_CG_BIT(f);
}

unsigned mg_cgroup_fds_open(const struct mg_cgroup *cg) {
        unsigned n = cg->dirfd >= 0;

        for (int i = 0; i < MG_CG_N; i++)
                n += cg->fd[i] >= 0;
        return n;
}

int mg_cgroup_open_file(struct mg_cgroup *cg, const char *name, int flags) {
        int r = need_dir(cg);

        return r < 0 ? r : open_beneath(cg->io, cg->dirfd, name, flags);
}

int mg_cgroup_reopen(struct mg_cgroup *cg, enum mg_cgfile f) {
        int r;

        if (f >= MG_CG_N)
                return -EINVAL;
        r = mg_cgroup_need(cg, f);
        if (r < 0)
                return r;
        return open_beneath(cg->io, cg->dirfd, files[f].name, files[f].flags);
}

void mg_cgroup_close(struct mg_cgroup *cg) {
        cg->all_open = false;
        for (int i = 0; i < MG_CG_N; i++) {
                if (cg->fd[i] >= 0)
                        close(cg->fd[i]);
                cg->fd[i] = -1;
        }
        if (cg->dirfd >= 0)
                close(cg->dirfd);
        cg->dirfd = -1;
}

/* fd's text into buf (size >= 2), NUL-terminated: its length, -ENOBUFS if
 * it may not have fit, or the pread's errno. */
static inline ssize_t read_fd(struct mg_cgroup *cg, int fd, char *buf, size_t size) {
        ssize_t n;

        /* Each pread at offset 0 makes kernfs format the file anew, so one
         * call returns one consistent snapshot; a retry after EINTR too. */
        for (int i = 0;; i++) {
                n = io_pread(cg->io, fd, buf, size - 1);
                if (n >= 0 || errno != EINTR || i + 1 >= MG_EINTR_RETRIES)
                        break;
        }
        if (n < 0)
                return -errno;
        if ((size_t) n >= size - 1) {
                buf[size - 1] = '\0'; /* callers may still scan what fit */
                return -ENOBUFS;
        }
        buf[n] = '\0';
        return n;
}

/* Inlined into mg_cgroup_read_u64(): memory.current on every fast tick. */
static inline ssize_t read_file(struct mg_cgroup *cg, enum mg_cgfile f, char *buf, size_t size) {
        ssize_t n;

        if (f >= MG_CG_N || size < 2)
                return -EINVAL;
        if (cg->fd[f] < 0 && (n = mg_cgroup_need(cg, f)) < 0)
                return n;
        return read_fd(cg, cg->fd[f], buf, size);
}

ssize_t mg_cgroup_read(struct mg_cgroup *cg, enum mg_cgfile f, char *buf, size_t size) {
        return read_file(cg, f, buf, size);
}

MG_HOT int mg_cgroup_read_u64(struct mg_cgroup *cg, enum mg_cgfile f, uint64_t *ret) {
        char buf[32]; /* "18446744073709551615\n" is the longest value */
        ssize_t n = read_file(cg, f, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        if (n == 0 || buf[n - 1] != '\n') {
                /* The kernel ends the value with a newline: this read may
                 * have been cut short ("2411" of "241172480\n").  Trusted only
                 * if a second read gives the same bytes. */
                char again[sizeof(buf)];
                ssize_t m = mg_cgroup_read(cg, f, again, sizeof(again));
                if (m < 0)
                        return (int) m;
                if (m != n || memcmp(buf, again, (size_t) n) != 0)
                        return -EBADMSG;
        }
        return mg_parse_u64_value(buf, (size_t) n, ret);
}

int mg_cgroup_write_fd(struct mg_cgroup *cg, int fd, const char *s) {
        size_t len = strlen(s);
        ssize_t n;

        for (int i = 0;; i++) {
                n = io_pwrite(cg->io, fd, s, len);
                if (n >= 0 || errno != EINTR || i + 1 >= MG_EINTR_RETRIES)
                        break;
        }
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}

int mg_cgroup_write(struct mg_cgroup *cg, enum mg_cgfile f, const char *s) {
        int r;

        if (f >= MG_CG_N)
                return -EINVAL;
        if ((r = mg_cgroup_need(cg, f)) < 0)
                return r;
        return mg_cgroup_write_fd(cg, cg->fd[f], s);
}

int mg_cgroup_write_file(struct mg_cgroup *cg, const char *name, const char *s) {
        int fd = mg_cgroup_open_file(cg, name, O_WRONLY | O_CLOEXEC), r;

        if (fd < 0)
                return fd;
        r = mg_cgroup_write_fd(cg, fd, s);
        close(fd);
        return r;
}

int mg_cgroup_reclaim(struct mg_cgroup *cg, int fd, uint64_t bytes, bool cache_only) {
        char buf[64];
        int r = -EINVAL;

        if (cache_only) {
                snprintf(buf, sizeof(buf), "%" PRIu64 " swappiness=0", bytes);
                r = fd >= 0 ? mg_cgroup_write_fd(cg, fd, buf) : mg_cgroup_write_file(cg, "memory.reclaim", buf);
        }
        if (r == -EINVAL) {
                snprintf(buf, sizeof(buf), "%" PRIu64, bytes);
                r = fd >= 0 ? mg_cgroup_write_fd(cg, fd, buf) : mg_cgroup_write_file(cg, "memory.reclaim", buf);
        }
        return r;
}

bool mg_cgroup_tenant_writes(const struct mg_cgroup *cg) {
        return mg_writable_by_others(cg->dir_uid, cg->dir_mode, geteuid());
}

ssize_t mg_cgroup_read_file(struct mg_cgroup *cg, const char *name, char *buf, size_t size) {
        ssize_t n;
        int fd;

        if (size < 2)
                return -EINVAL;
        fd = mg_cgroup_open_file(cg, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return fd;
        n = read_fd(cg, fd, buf, size);
        close(fd);
        return n;
}

ssize_t mg_cgroup_get_xattr(struct mg_cgroup *cg, const char *name, void *buf, size_t size) {
        const struct mg_io *io = cg->io;
        ssize_t n;

        if ((n = need_dir(cg)) < 0)
                return n;
        n = io && io->fgetxattr ? io->fgetxattr(io->userdata, cg->dirfd, name, buf, size)
                                : fgetxattr(cg->dirfd, name, buf, size);
        return n < 0 ? -errno : n;
}

int mg_cgroup_set_xattr(struct mg_cgroup *cg, const char *name, const void *value, size_t size, int flags) {
        const struct mg_io *io = cg->io;
        int r;

        if ((r = need_dir(cg)) < 0)
                return r;
        r = io && io->fsetxattr ? io->fsetxattr(io->userdata, cg->dirfd, name, value, size, flags)
                                : fsetxattr(cg->dirfd, name, value, size, flags);
        return r < 0 ? -errno : 0;
}

int mg_cgroup_remove_xattr(struct mg_cgroup *cg, const char *name) {
        const struct mg_io *io = cg->io;
        int r;

        if ((r = need_dir(cg)) < 0)
                return r;
        r = io && io->fremovexattr ? io->fremovexattr(io->userdata, cg->dirfd, name) : fremovexattr(cg->dirfd, name);
        return r < 0 ? -errno : 0;
}
