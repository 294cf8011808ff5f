/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The reclaim actuator of a guard (reclaim.c): opt-in
 * (mg_guard_options.reclaim_dose_bytes), it writes one bounded dose to a
 * cgroup's memory.reclaim when the pressure predicate or the headroom rule
 * (policy.h) fires, checks what the kernel took (pgsteal) and tells
 * MG_EVENT_RECLAIM.  The write blocks while the kernel reclaims: in a set
 * it runs on the set's worker (worker.c), never on the set's thread.
 */

#include "guard.h"

/* A dose as the worker's job: filled on the guard's thread, run on the
 * worker (or the guard's own thread, for a guard alone). */
struct mg_reclaim_job {
        struct mg_job job;              /* kind MG_JOB_RECLAIM */
        /* In: the target's memory.stat and memory.reclaim, read and written
         * only by the job while it is queued. */
        struct mg_cgroup *cg;
        int reclaim_fd;
        struct mg_reader *rd;
        uint32_t page_bytes;
        uint64_t asked_bytes;
        bool cache_only;                /* "swappiness=0" first (the headroom's) */
        /* Out: r is 0 or the negative errno of the write (or of the reads
         * around it, read_failed); achieved from pgsteal's rise. */
        int r;
        bool read_failed;
        uint64_t achieved_bytes, duration_usec;
};

/* Arms g's actuator from g->opt (after the guard's cgroup is open): opens
 * the target's memory.stat, memory.pressure and memory.reclaim, keeping
 * three fds.  Returns 0 (nothing to arm included), -EOPNOTSUPP without
 * memory.reclaim (before 5.19) or, for the pressure predicate, without
 * memory.pressure, -ENOMEM, or the errno of an open. */
int mg_reclaim_new(mg_guard *g, unsigned cg_flags, const struct mg_io *io);
/* Its fds and memory; no job may be in flight (the job holds the guard). */
void mg_reclaim_free(mg_guard *g);
/* Every tick of a guard watching (memory.current read: current): a window
 * ends each second, the headroom is checked, and a dose goes when one
 * fires and none is in flight, no lend open.  In a set the dose is queued
 * to the worker; alone it is written here and told at once. */
void mg_reclaim_tick(mg_guard *g, uint64_t now, uint64_t current);
/* The blocking part: pgsteal, the write, pgsteal again.  Any thread. */
void mg_reclaim_run(struct mg_reclaim_job *j);
/* A job the worker did, finished on the set's thread: told
 * (MG_EVENT_RECLAIM), the actuator stopped if the target went.  Returns 0. */
int mg_reclaim_done(mg_guard *g);
