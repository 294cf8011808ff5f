/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The freezer side of a park (park.c): cgroup.freeze written and read
 * back, the park's clock and its events.  It never kills: decide.c says
 * when a park ends and makes the kill.
 */

#include "guard.h"

/* Freezes the actor for the kill the slow path's record holds (its report
 * gets the park's id and times), state MG_GUARD_PARKED, cgroup.events
 * watched.  Returns 0, or the errno of the write (nothing changed). */
int mg_park_begin(mg_guard *g, uint64_t now);
/* Reads cgroup.events "frozen": once it says 1, MG_EVENT_PARK (once).
 * Returns 1 (told, now or before), 0 (not frozen yet), or a negative errno
 * (reported; -ENODEV once the cgroup is gone). */
int mg_park_frozen(mg_guard *g, uint64_t now);
/*
 * How long a freeze may take before the park ends in a kill: the kill
 * wait, and at least MG_PARK_FREEZE_WAIT_MIN_USEC.  The freezer traps a
 * task on its way back to user space, and an actor throttled at
 * memory.high sleeps there first, up to 2 s per return
 * (mm/memcontrol.c mem_cgroup_handle_over_high(),
 * MEMCG_MAX_HIGH_DELAY_JIFFIES), in a sleep only a fatal signal ends: a
 * throttled grower took 1.98 s to freeze in the burn-in.
 */
#define MG_PARK_FREEZE_WAIT_MIN_USEC (3 * UINT64_C(1000000))
static inline uint64_t mg_park_freeze_wait_usec(const mg_guard *g) {
        return g->opt.kill_wait_usec > MG_PARK_FREEZE_WAIT_MIN_USEC ? g->opt.kill_wait_usec
                                                                    : MG_PARK_FREEZE_WAIT_MIN_USEC;
}

/* Writes 0 to cgroup.freeze.  Returns 0 or the (reported) errno. */
int mg_park_thaw(mg_guard *g);
/* The park is over (end): its report says how and when, the watch goes,
 * and a thaw hands the guard back to its usual rules (MG_EVENT_THAW, with
 * read: the read that judged it, against the limit it has now). */
void mg_park_close(mg_guard *g, enum mg_park_end end, uint64_t now, const struct mg_report *read);
