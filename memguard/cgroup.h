/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cgroup file layer: one actor directory, its files read with pread at
 * offset 0 into caller buffers.  mg_cgroup_open() opens every file, so a
 * missing one is told at once; mg_cgroup_trim() then closes all but those a
 * guard far below its limit uses (memory.current, and memory.events.local
 * while its set watches it), and a file that is not open is opened again
 * when it is used, or all at once by mg_cgroup_open_all().
 * The directory is found again by its path, and must be the same one (its
 * device and inode: cgroup2 inode numbers are kernfs node ids, not reused
 * within a boot).  No allocation.  All kernel I/O goes through struct
 * mg_io so tests can count calls and inject faults.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif
#ifndef RESOLVE_BENEATH /* headers before 5.6 */
#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#endif

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

/*
 * The seam for fault injection and call counting; NULL members fall back
 * to the system calls.  Each behaves like its system call: -1 and errno on
 * failure.
 *
 * Every file below the actor's directory is opened by one name, never
 * following a symlink: openat2() with MG_RESOLVE (RESOLVE_BENEATH,
 * RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_XDEV), or openat()
 * with O_NOFOLLOW where openat2 fails with ENOSYS (before 5.6).  A seam
 * with .openat2 gets those opens with the resolve flags (ENOSYS from it
 * takes the openat fallback); a seam with only .openat gets them as openat
 * with O_NOFOLLOW, so counting seams see every open either way.
 */
struct mg_io {
        int (*openat)(void *ud, int dirfd, const char *name, int flags);
        ssize_t (*pread)(void *ud, int fd, void *buf, size_t len, off_t off);
        ssize_t (*pwrite)(void *ud, int fd, const void *buf, size_t len, off_t off);
        void *userdata;
        int (*openat2)(void *ud, int dirfd, const char *name, int flags, uint64_t resolve);
        /* The lend record (a user.* xattr on the actor's directory). */
        ssize_t (*fgetxattr)(void *ud, int fd, const char *name, void *buf, size_t size);
        int (*fsetxattr)(void *ud, int fd, const char *name, const void *value, size_t size, int flags);
        int (*fremovexattr)(void *ud, int fd, const char *name);
        /* The kill's fallback without cgroup.kill (kill.c). */
        int (*pidfd_open)(void *ud, pid_t pid, unsigned flags);
        int (*pidfd_send_signal)(void *ud, int pidfd, int sig, unsigned flags);
};

/* openat2 resolve flags for every file below the actor's directory. */
#define MG_RESOLVE ((uint64_t) (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV))

/* A persistent EINTR must not spin a guard's thread: retried this often. */
#define MG_EINTR_RETRIES 8

#define MG_CG_BIT(f) (1u << (f))

struct mg_cgroup {
        /* 64 bytes of what every read uses, then what reopening does */
        int fd[MG_CG_N];        /* -1: not open now (see have), or the kernel has no such file */
        int dirfd;              /* -1 while trimmed */
        uint16_t have;          /* MG_CG_BIT()s of the files mg_cgroup_open() found */
        bool all_open;          /* mg_cgroup_open_all() did it, no trim since */
        unsigned flags;         /* MG_CGROUP_* given to mg_cgroup_open() */
        const struct mg_io *io;
        const char *path;       /* the caller's, kept for reopening: must outlive cg; NULL: none */
        uint64_t dev, ino;      /* the directory's, to know it again by its path */
        uid_t dir_uid;          /* the directory's owner and mode at open: */
        mode_t dir_mode;        /* who can write its xattrs (mg_writable_by_others) */
};

enum {
        MG_CGROUP_ANY_FS = 1 << 0,   /* fixture trees in temp dirs: skip the cgroup2 check */
        MG_CGROUP_HIGH_ONLY = 1 << 1, /* open memory.high only (mg_guard_recover) */
};

const char *mg_cgfile_name(enum mg_cgfile f);

/*
 * Opens path (its last component must not be a symlink: O_NOFOLLOW, with
 * trailing slashes removed so they cannot force a follow) and the files
 * below it through the seam, without following symlinks.  Returns 0,
 * -ENOTSUP if path is not a cgroup2 directory, -ENOENT if it or
 * memory.current/memory.stat is missing (no memory controller), -ELOOP if
 * the directory or one of its files is a symlink, -EXDEV if a file is on
 * another mount, or another negative errno of open.
 */
int mg_cgroup_open(struct mg_cgroup *cg, const char *path, unsigned flags, const struct mg_io *io);
/*
 * Opens again what mg_cgroup_trim() closed: the directory by its path, then
 * cgroup.kill first (a kill decided after this needs no free fd), then
 * every other file mg_cgroup_open() found (an optional one not there now,
 * a hidden pressure file, is left closed).  Returns 0, -ESTALE if the path
 * no longer names the directory mg_cgroup_open() opened (removed, maybe
 * made again; or renamed), or the errno of an open (-EMFILE); what opened
 * stays open.  Cheap when nothing is closed.
 */
int mg_cgroup_open_all(struct mg_cgroup *cg);
/* File f open (the directory first, if it is not), if this kernel has it.
 * Returns 0, -EOPNOTSUPP, -ESTALE (as mg_cgroup_open_all()) or the open's
 * errno. */
int mg_cgroup_need(struct mg_cgroup *cg, enum mg_cgfile f);
/* Closes the directory and every file but those in keep (MG_CG_BIT()s).
 * Every file opened again opens the directory first: a closed directory
 * means nothing but keep is open. */
void mg_cgroup_trim(struct mg_cgroup *cg, unsigned keep);
/* File f closed and marked absent, as on a kernel without it (cgroup.kill
 * before 5.14): for tests. */
void mg_cgroup_forget(struct mg_cgroup *cg, enum mg_cgfile f);
/* Open files and directory, for the benchmarks and tests. */
unsigned mg_cgroup_fds_open(const struct mg_cgroup *cg);

/* Opens one more file below the directory (a PSI trigger) the same way;
 * name is one component.  Returns the fd or a negative errno. */
int mg_cgroup_open_file(struct mg_cgroup *cg, const char *name, int flags);
/* Opens file f again, with the flags mg_cgroup_open() gave it: a second
 * open file of it.  kernfs serialises the reads and writes of one open file
 * (kernfs_fop_write_iter() and kernfs_seq_start() take of->mutex), so a
 * write that blocks (memory.high lowered: the writer reclaims) blocks every
 * pread of the same fd; one of another open file goes on.  Returns the fd,
 * -EOPNOTSUPP for a file this kernel lacks (or that was not opened), or the
 * errno of the open. */
int mg_cgroup_reopen(struct mg_cgroup *cg, enum mg_cgfile f);
void mg_cgroup_close(struct mg_cgroup *cg);

/* Reads the whole file into buf (NUL-terminated, size - 1 bytes usable),
 * opening it first if it is not open (an error of that open is returned).
 * Returns the length, -EOPNOTSUPP for a file this kernel lacks, -ENOBUFS if
 * the file did not fit (buf then holds what did), -ENODEV/-ENOENT once the cgroup is gone, or the
 * read's errno.  EINTR is retried MG_EINTR_RETRIES times, then returned. */
ssize_t mg_cgroup_read(struct mg_cgroup *cg, enum mg_cgfile f, char *buf, size_t size);
/* Reads and parses a one-value file ("max" = MG_UNLIMITED).  The kernel
 * ends the value with a newline; a read without one may have been cut
 * short, and is read again: -EBADMSG unless both say the same (rather than
 * a value with digits missing). */
int mg_cgroup_read_u64(struct mg_cgroup *cg, enum mg_cgfile f, uint64_t *ret);
/* Writes s to the file at offset 0.  Returns 0 or a negative errno
 * (-EIO for a short write; EINTR is retried MG_EINTR_RETRIES times). */
int mg_cgroup_write(struct mg_cgroup *cg, enum mg_cgfile f, const char *s);
/* The same for a file the guard does not keep open (memory.reclaim):
 * opened below the directory as every other file, written once, closed.
 * The open's errno too (-ENOENT: a kernel without the file). */
int mg_cgroup_write_file(struct mg_cgroup *cg, const char *name, const char *s);

/* Writes s to an open file of the cgroup (one mg_cgroup_open_file() gave). */
int mg_cgroup_write_fd(struct mg_cgroup *cg, int fd, const char *s);
/* Writes a dose of bytes to memory.reclaim, through fd (-1: opened for this
 * write).  cache_only asks for file pages alone ("swappiness=0", 6.11+); a
 * kernel that refuses the key (EINVAL) gets the bytes alone.  Returns 0,
 * -EAGAIN (the kernel took less than asked), -ENOENT (no memory.reclaim:
 * before 5.19), or the write's errno. */
int mg_cgroup_reclaim(struct mg_cgroup *cg, int fd, uint64_t bytes, bool cache_only);

/* Extended attributes of the actor's directory, through the seam.
 * get returns the length (-ENODATA if absent, -ERANGE if it does not fit);
 * set and remove return 0; all return a negative errno on failure. */
ssize_t mg_cgroup_get_xattr(struct mg_cgroup *cg, const char *name, void *buf, size_t size);
int mg_cgroup_set_xattr(struct mg_cgroup *cg, const char *name, const void *value, size_t size, int flags);
int mg_cgroup_remove_xattr(struct mg_cgroup *cg, const char *name);
/*
 * The trust rule of every record the library leaves on the actor's
 * directory (the lend's, the park's: see docs/security.md "A forged lend
 * record"): someone other than root and this process's user can write the
 * directory (a cgroup delegated to its tenant, chowned to it, or a group
 * or other write bit) as it was at mg_cgroup_open().  user.* xattrs need
 * only write access to the directory (xattr_permission()), so a record
 * there may be the tenant's: none is written, none is acted on.
 */
bool mg_cgroup_tenant_writes(const struct mg_cgroup *cg);

/* Reads a file the cgroup does not keep open (cgroup.freeze) into buf
 * (NUL-terminated, size - 1 bytes usable): opened below the directory as
 * every other file, read once at offset 0, closed.  Returns the length,
 * -ENOBUFS if it did not fit, or the open's or read's errno (-ENOENT: a
 * kernel without the file). */
ssize_t mg_cgroup_read_file(struct mg_cgroup *cg, const char *name, char *buf, size_t size);
