/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared helpers of the benchmarks: a monotonic clock in ns, a counting
 * allocator, an I/O seam that counts what a guard asks the kernel for, the
 * kernel's own count of read syscalls, resident memory and open fds, fake
 * cgroup trees, and callgrind markers.
 *
 * Every bench binary prints its figures as one line per measurement,
 * "result key=value ...", which tools/bench/run turns into tables.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "fixture.h"
#include "util.h"

/* Calls of malloc/calloc/realloc/aligned allocations and frees made by this
 * process (the bench binaries interpose the allocator; see alloc.c).
 * bench_alloc_counting() is false in builds where that is off (sanitizers). */
struct bench_allocs {
        uint64_t allocs, frees, bytes;
};
void bench_allocs_get(struct bench_allocs *ret);
bool bench_alloc_counting(void);

/* What a guard asked of the kernel through its I/O seam. */
struct bench_io {
        struct mg_io io;
        uint64_t opens, preads, pwrites;
};
void bench_io_init(struct bench_io *b);

/* read-like syscalls of this process as the kernel counts them
 * (/proc/self/io syscr, one pread of it included), or UINT64_MAX. */
uint64_t bench_syscr(void);
/* VmRSS in bytes, or 0. */
uint64_t bench_rss_bytes(void);
/* User + system CPU time of this process, all its threads (the kernel's
 * work for its syscalls included, interrupt-time completion not), in µs;
 * the system part into *ret_sys (may be NULL). */
uint64_t bench_cpu_usec(uint64_t *ret_sys);
/* Open fds of this process. */
unsigned bench_count_fds(void);
/* Raises RLIMIT_NOFILE to at least n, or to the hard limit where it cannot
 * be raised (no CAP_SYS_RESOURCE).  Returns 0 or a negative errno. */
int bench_raise_nofile(uint64_t n);

/* bench_memstat_7x (the keys 7.2 prints, values of a busy actor; see
 * memstat.c) with the values of the keys the guard's decision uses
 * replaced. */
void bench_memstat_format(char *buf, size_t size, uint64_t anon, uint64_t file, uint64_t kernel, uint64_t shmem,
                          uint64_t sock, uint64_t restore_file);
extern const char bench_memstat_7x[];
extern const char bench_memstat_7x_captured[];
extern const char bench_memstat_61[];

/* A fake cgroup directory with every file the guard opens
 * (fixture_tree_make(), tests/unit/fixture.c), for an actor of 256 MiB: at
 * rest (memory.current 16 MiB) or at its limit (memory.current 250 MiB,
 * used 200 MiB: the slow path, verdict NEAR); memory.stat has the keys 7.2
 * prints.  Files are rewritten with fixture_tree_write(). */
enum bench_actor_state { BENCH_AT_REST, BENCH_AT_LIMIT };
#define BENCH_LIMIT (256 * MG_MIB)
int bench_fixture_make(const char *dir, enum bench_actor_state st);
/* A directory for fixtures under TMPDIR (or /dev/shm when TMPDIR is unset),
 * removed by bench_tmpdir_remove(). */
int bench_tmpdir_new(char *ret, size_t size, const char *tag);
void bench_tmpdir_remove(const char *dir);

/* Starts a child in the cgroup at cg that touches kib KiB of anon memory,
 * then either sleeps until killed or, with churn_kib, keeps dropping and
 * touching again that much of it (a throttled actor over memory.high keeps
 * charging).  Waits until it has touched it all once.  Returns its pid or a
 * negative errno. */
pid_t bench_spawn_holder(const char *cg, uint64_t kib, uint64_t churn_kib);

/* Callgrind markers (no-ops outside valgrind or without its header): count
 * only between bench_cg_on() and bench_cg_off(), and write the count so far
 * as a dump named name. */
void bench_cg_on(void);
void bench_cg_off(void);
void bench_cg_dump(const char *name);
bool bench_under_valgrind(void);
/* A marker for strace: access("/memguard-bench-mark/WHAT") fails, and shows
 * in a trace as the bounds of a measured loop. */
void bench_mark(const char *what);

/* Sorts v and returns its median. */
double bench_median(double *v, size_t n);
