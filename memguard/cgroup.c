/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cgroup.h"
#include "parse.h"

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

int mg_cgroup_open(struct mg_cgroup *cg, const char *path, unsigned flags, const struct mg_io *io) {
        struct statfs sfs;
        int r;

        *cg = (struct mg_cgroup) { .dirfd = -1, .io = io, .flags = flags };
        for (int i = 0; i < MG_CG_N; i++)
                cg->fd[i] = -1;

        cg->dirfd = io_openat(io, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cg->dirfd < 0)
                return -errno;
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
                int fd = io_openat(io, cg->dirfd, files[i].name, files[i].flags | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0) {
                        r = -errno;
                        /* Older kernels lack memory.events.local, cgroup.kill;
                         * a kernel booted without PSI lacks memory.pressure. */
                        if (r == -ENOENT && !files[i].required)
                                continue;
                        goto fail;
                }
                cg->fd[i] = fd;
        }
        return 0;
fail:
        mg_cgroup_close(cg);
        return r;
}

void mg_cgroup_close(struct mg_cgroup *cg) {
        for (int i = 0; i < MG_CG_N; i++) {
                if (cg->fd[i] >= 0)
                        close(cg->fd[i]);
                cg->fd[i] = -1;
        }
        if (cg->dirfd >= 0)
                close(cg->dirfd);
        cg->dirfd = -1;
}

ssize_t mg_cgroup_read(struct mg_cgroup *cg, enum mg_cgfile f, char *buf, size_t size) {
        ssize_t n;

        if (f >= MG_CG_N || size < 2)
                return -EINVAL;
        if (cg->fd[f] < 0)
                return -EOPNOTSUPP;
        /* Each pread at offset 0 makes kernfs format the file anew, so one
         * call returns one consistent snapshot; a retry after EINTR too. */
        do
                n = io_pread(cg->io, cg->fd[f], buf, size - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t) n >= size - 1) {
                buf[size - 1] = '\0'; /* callers may still scan what fit */
                return -ENOBUFS;
        }
        buf[n] = '\0';
        return n;
}

int mg_cgroup_read_u64(struct mg_cgroup *cg, enum mg_cgfile f, uint64_t *ret) {
        char buf[32]; /* "18446744073709551615\n" is the longest value */
        ssize_t n = mg_cgroup_read(cg, f, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        return mg_parse_u64_value(buf, (size_t) n, ret);
}

int mg_cgroup_write(struct mg_cgroup *cg, enum mg_cgfile f, const char *s) {
        size_t len = strlen(s);
        ssize_t n;

        if (f >= MG_CG_N)
                return -EINVAL;
        if (cg->fd[f] < 0)
                return -EOPNOTSUPP;
        do
                n = io_pwrite(cg->io, cg->fd[f], s, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}
