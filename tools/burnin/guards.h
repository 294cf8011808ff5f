/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * An actor's limits and its two guards (burnin.h tells why there are two),
 * in one place: main.c writes the limits and adds the worker's guard,
 * actor.c makes the actor's own; the unit suite drives both on a fixture
 * tree (tests/unit/test-burnin.c).
 */

#include <stdint.h>

#include "memguard/memguard.h"

/* memory.high of an actor of actor_bytes: 90 % of it (kubelet's MemoryQoS),
 * in whole pages, as the kernel keeps it. */
uint64_t bi_actor_high_bytes(uint64_t actor_bytes);

/* memory.max: twice the size, room for a lend's page cache and for a chaos
 * overshoot beside the guest region, so that the kernel's OOM killer never
 * takes a kill the worker's guard should make. */
uint64_t bi_actor_max_bytes(uint64_t actor_bytes);

/* The worker's guard (the main process): the library's defaults at the
 * actor size.  It kills, and tells its kill.  Returns 0 or -EINVAL. */
int bi_worker_guard_options(uint64_t actor_bytes, struct mg_guard_options *ret);

/*
 * The actor's own guard (the actor's process), for the lends of its
 * writes: its limit at memory.max, so it has no overshoot of its own to
 * find.  That alone does not keep it from killing: its line follows the
 * lower kernel limit, memory.high, where the stall rules judge it as they
 * judge the worker's guard, and a kill it made would take its own process,
 * its record with it (nothing could tell it).  So it runs as a dry run
 * (MG_GUARD_DRY_RUN): it decides as usual and tells MG_EVENT_KILL_DRY_RUN,
 * and cgroup.kill is the worker's guard's alone.  Returns 0 or -EINVAL.
 */
int bi_actor_guard_options(uint64_t actor_bytes, struct mg_guard_options *ret);

/*
 * The worker's guard of an actor chaos chose to park (--park): the
 * worker's options with a park deadline, and a kill wait (how long the
 * freeze may take before the park ends MG_PARK_END_NOT_FROZEN) of at least
 * BI_PARK_FREEZE_WAIT_USEC.  An overshoot's growers are throttled above
 * memory.high: mem_cgroup_handle_over_high() sleeps up to 2 s at a time
 * (MEMCG_MAX_HIGH_DELAY_JIFFIES), killable but not freezable, and a task
 * is frozen only when it returns towards user space; the library's default
 * kill wait at 64 MiB is 2 s, and the VM smoke froze one in 1.98 s.
 * Returns 0 or -EINVAL.
 */
#define BI_PARK_FREEZE_WAIT_USEC (5 * UINT64_C(1000000))
int bi_worker_park_guard_options(uint64_t actor_bytes, uint64_t park_deadline_usec, struct mg_guard_options *ret);
