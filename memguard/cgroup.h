/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cgroup file layer: one actor directory opened once, the files read
 * every tick kept open and read with pread at offset 0 into caller buffers.
 * No allocation and no open() after mg_cgroup_open().  All kernel I/O goes
 * through struct mg_io so tests can count calls and inject faults.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum mg_cgfile {
        MG_CG_CURRENT,          /* memory.current */
        MG_CG_STAT,             /* memory.stat */
        MG_CG_PRESSURE,         /* memory.pressure (absent without PSI) */
        MG_CG_IO_PRESSURE,      /* io.pressure (absent without PSI) */
        MG_CG_EVENTS_LOCAL,     /* memory.events.local (5.7+) */
        MG_CG_HIGH,             /* memory.high, read-write, O_NONBLOCK */
        MG_CG_MAX,              /* memory.max */
        MG_CG_CPU_STAT,         /* cpu.stat */
        MG_CG_KILL,             /* cgroup.kill (5.14+), write-only */
        MG_CG_PROCS,            /* cgroup.procs */
        MG_CG_EVENTS,           /* cgroup.events */
        MG_CG_N,
};

/* The seam for fault injection and call counting; NULL members fall back
 * to the system calls. */
struct mg_io {
        int (*openat)(void *ud, int dirfd, const char *name, int flags);
        ssize_t (*pread)(void *ud, int fd, void *buf, size_t len, off_t off);
        ssize_t (*pwrite)(void *ud, int fd, const void *buf, size_t len, off_t off);
        void *userdata;
};

struct mg_cgroup {
        int dirfd;
        int fd[MG_CG_N];        /* -1 where the kernel has no such file */
        const struct mg_io *io;
        unsigned flags;         /* MG_CGROUP_* given to mg_cgroup_open() */
};

enum {
        MG_CGROUP_ANY_FS = 1 << 0, /* fixture trees in temp dirs: skip the cgroup2 check */
};

const char *mg_cgfile_name(enum mg_cgfile f);

/* Returns 0, -ENOTSUP if path is not a cgroup2 directory, -ENOENT if it or
 * memory.current/memory.stat is missing (no memory controller), or another
 * negative errno of open. */
int mg_cgroup_open(struct mg_cgroup *cg, const char *path, unsigned flags, const struct mg_io *io);
void mg_cgroup_close(struct mg_cgroup *cg);

/* Reads the whole file into buf (NUL-terminated, size - 1 bytes usable).
 * Returns the length, -EOPNOTSUPP for a file this kernel lacks, -ENOBUFS if
 * the file did not fit (buf then holds what did), -ENODEV/-ENOENT once the cgroup is gone, or the
 * read's errno.  EINTR is retried. */
ssize_t mg_cgroup_read(struct mg_cgroup *cg, enum mg_cgfile f, char *buf, size_t size);
/* Reads and parses a one-value file ("max" = MG_UNLIMITED). */
int mg_cgroup_read_u64(struct mg_cgroup *cg, enum mg_cgfile f, uint64_t *ret);
/* Writes s to the file at offset 0.  Returns 0 or a negative errno. */
int mg_cgroup_write(struct mg_cgroup *cg, enum mg_cgfile f, const char *s);
