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
/* Writes 0 to cgroup.freeze.  Returns 0 or the (reported) errno. */
int mg_park_thaw(mg_guard *g);
/* The park is over (end): its report says how and when, the watch goes,
 * and a thaw hands the guard back to its usual rules (MG_EVENT_THAW, with
 * read: the read that judged it, against the limit it has now). */
void mg_park_close(mg_guard *g, enum mg_park_end end, uint64_t now, const struct mg_report *read);
