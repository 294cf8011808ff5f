/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a borrower of a lend outside the guard (snapshot/write.c) may use
 * of a guard, besides the public mg_guard_lend_begin(): nothing of its
 * insides.  Declarations only: tick.c holds and releases, lend.c ends and
 * reclaims, guard.c tells the limit.
 */

#include <stdbool.h>
#include <stdint.h>

#include "memguard/memguard.h"

/*
 * What keeps a guard alive while another thread uses it: a hold.  A
 * snapshot write, which lends from the caller's thread under the options'
 * lock, holds its guard from start to end; a restore job with the set's
 * worker holds its guard until mg_set_process() (or mg_set_free()) has
 * finished it.  Both are called under that lock, which the set's thread
 * holds around mg_set_process().  mg_set_remove() or mg_guard_free() of a
 * held guard detaches it (no more ticks, watches, events or logs; a set's
 * guard leaves the set) and the last release frees it.
 */
void mg_guard_hold(mg_guard *g);
void mg_guard_release(mg_guard *g);

/*
 * mg_guard_lend_end() for a caller on another thread than the guard's,
 * serialised with it by lock (a snapshot write: the set's thread holds the
 * same lock around mg_set_process()).  The checks and the end's bookkeeping
 * run under the lock; the blocking write of memory.high between them runs
 * without it, through a second open file of memory.high, so the set's
 * thread neither waits for the lock nor for that file meanwhile.  If the
 * deadline's restore of this lend is with the set's worker, it waits (the
 * lock released, polling) until the worker has written.  lock may be NULL
 * (the caller is the guard's thread).
 * Returns 0 when memory.high is back (or was left as found: the event
 * says), -ENOENT when the lend is over already, the worker's write included
 * (it ended or expired), -ESTALE, -ENODEV, -EINVAL as mg_guard_lend_end(),
 * or the errno of the open, read or write (the lend stays open; after a
 * failed write of the worker's the guard's ticks retry it).
 */
int mg_guard_lend_end_serialised(mg_guard *g, uint64_t lend_id, void (*lock)(void *userdata, bool lock),
                                 void *lock_userdata);

/* One bounded memory.reclaim of the guard's cgroup (5.19+), through the
 * guard's open directory and I/O seam like every other file.
 * "swappiness=0" (6.11+) keeps it to page cache where swap exists; older
 * kernels reject the key with EINVAL and get the plain form.  Returns 0 or
 * a negative errno (-ENOENT before 5.19, -EAGAIN if it reclaimed less). */
int mg_guard_reclaim(mg_guard *g, uint64_t bytes);

/* The guard's limit (mg_guard_options.limit_bytes). */
uint64_t mg_guard_get_limit_bytes(const mg_guard *g);
