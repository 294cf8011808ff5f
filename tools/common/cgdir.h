/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cgroup chores of the tools, the benchmarks and the kernel suite, by
 * path: finding where to create cgroups, creating them, small
 * reads and writes, emptying and removing them.  The library's guard does
 * the per-tick reading; this is everything around it.
 * Fallible calls return a negative errno.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memguard/memguard.h"

#define MGT_CGROUP_ROOT "/sys/fs/cgroup"

/* 1 if path is a directory on cgroup2, 0 if it is something else, or a
 * negative errno (-ENOENT) if it cannot be looked at. */
int mgt_cg_is_cgroup2(const char *path);

/*
 * Resolves a cgroup named on the command line: a cgroup2 directory as
 * given, otherwise a path below /sys/fs/cgroup ("user.slice",
 * "/user.slice").  Returns 0 with a malloc'd absolute-or-as-given path,
 * -ENOTSUP if the path exists but is not cgroup2, -ENOENT, -ENOMEM.
 */
int mgt_cg_resolve(const char *arg, char **ret);

/* The directory of this process's cgroup v2 (the "0::" line of
 * /proc/self/cgroup under /sys/fs/cgroup), malloc'd.  -ENOTSUP if
 * /sys/fs/cgroup is not cgroup2, -ENOENT if there is no "0::" line. */
int mgt_cg_self(char **ret);
/* The same under root, the mount point of cgroup2 (not checked). */
int mgt_cg_self_in(const char *root, char **ret);
/* Where to create cgroups by default: the parent of our own cgroup (a
 * delegated subtree is usually handed out as the parent of the scope we
 * run in), or the root if we run in the root.  malloc'd. */
int mgt_cg_default_parent(char **ret);

/* Whole small file into buf, NUL-terminated (buf[0] is '\0' on failure).
 * Returns the length. */
ssize_t mgt_cg_read(const char *cg, const char *file, char *buf, size_t size);
int mgt_cg_write(const char *cg, const char *file, const char *val);
int mgt_cg_writef(const char *cg, const char *file, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Reads parsed by memguard/parse.c, so the tools see a file as the guard
 * does.  Each returns 0 and writes *ret, or a negative errno and leaves *ret
 * alone: the read's, or -EBADMSG for a file that does not parse.
 */
/* A one-value file (memory.current, memory.max): "max" is MG_UNLIMITED. */
int mgt_cg_read_u64(const char *cg, const char *file, uint64_t *ret);
/* memory.stat (mg_parse_memstat(): "kernel" derived where absent). */
int mgt_cg_read_memstat(const char *cg, struct mg_memstat *ret);
/* memory.events or memory.events.local (mg_parse_mem_events()). */
int mgt_cg_read_events(const char *cg, const char *file, struct mg_mem_events *ret);
/* memory.pressure, io.pressure (mg_parse_psi()). */
int mgt_cg_read_psi(const char *cg, const char *file, struct mg_psi *ret);
/* One key of a flat keyed file: for a key the parsers' structs do not
 * carry, and to ask whether the kernel prints it at all.  -ENOENT if the
 * file has no such key; the value is parsed by mg_parse_u64_value(). */
int mgt_cg_read_key(const char *cg, const char *file, const char *key, uint64_t *ret);
/* The same over a buffer the caller read. */
int mgt_key_value(const char *buf, size_t len, const char *key, uint64_t *ret);

/* 1 if word is one of the space-separated words of the file (e.g.
 * "memory" in cgroup.controllers), 0 if not. */
int mgt_cg_has_word(const char *cg, const char *file, const char *word);
/* Makes sure children of cg get the memory controller.  Returns 0 if it
 * already was on, 1 if it enabled it, -ENOTSUP if cg does not have it
 * itself, or the write's errno (-EBUSY: cg has processes of its own). */
int mgt_cg_enable_memory(const char *cg);

/* The cgroup a test or a benchmark makes its actors in: mkdir path below
 * root, with controllers ("+memory +io ...") enabled in root's
 * cgroup.subtree_control (if it can: they may be on already) and then in
 * path's own, or "+memory" alone where path cannot take them all.
 * Returns 0, or a negative errno (path removed again). */
int mgt_cg_make_parent(const char *root, const char *path, const char *controllers);

/* mkdir parent/prefix-PID, or -PID-N if that exists.  malloc'd path. */
int mgt_cg_make_child(const char *parent, const char *prefix, char **ret);

/* 1 if cgroup.events says populated, 0 if not (mg_parse_populated()). */
int mgt_cg_populated(const char *cg);
/* Waits until cgroup.events says populated == want (POLLPRI, bounded by
 * timeout_usec).  0 once it does, -ETIMEDOUT, or the open's errno. */
int mgt_cg_wait_populated(const char *cg, int want, uint64_t timeout_usec);
/* Opens cgroup.events for POLLPRI (kernfs notifies changes that way). */
int mgt_cg_open_events(const char *cg);
/* SIGKILLs every process in cg: cgroup.kill (5.14+), else each pid of
 * cgroup.procs.  Returns 0 or a negative errno. */
int mgt_cg_kill_all(const char *cg);
/* rmdir, retried while a killed task still lingers (EBUSY) for up to
 * timeout_usec.  0 if removed or already gone. */
int mgt_cg_rmdir(const char *cg, uint64_t timeout_usec);
/* Kill, wait (bounded) for populated 0, rmdir: for cleanup paths.
 * 0 if removed or already gone, -ETIMEDOUT if it never emptied (it is
 * then left in place), or rmdir's errno. */
int mgt_cg_destroy(const char *cg, uint64_t timeout_usec);
