/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The freezer side of a park (park.c): cgroup.freeze written and read
 * back, the park's clock and its events, and the park record that lets a
 * park outlive its worker.  It never kills: decide.c says when a park ends
 * and makes the kill.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guard.h"

/*
 * The park record: the user.memguard.park xattr of the actor's cgroup
 * directory, written before cgroup.freeze is, removed once the park has
 * ended (the thaw written, or the kill sent), so a park outlives the
 * process that made it: a frozen actor whose worker crashed is not frozen
 * for good, the next mg_guard_new() takes the park over (mg_park_adopt())
 * and its deadline holds.  The same rules as the lend record (lend.h):
 * only where mg_cgroup_tenant_writes() says no, CLOCK_BOOTTIME for the
 * deadline, a strict parser.  One line:
 *   "memguard-park 1 id=<N> reason=<overshoot|stall> deadline_boottime_usec=<N> pid=<N>\n"
 * id is the park's (report.park_id, never 0), reason the kill's it stands
 * for, pid the parker's (for the log only).
 */
#define MG_PARK_XATTR "user.memguard.park"
#define MG_PARK_RECORD_MAX 128 /* longest: 20-digit id, deadline and pid, "overshoot": 111 */

struct mg_park_record {
        uint64_t id;
        enum mg_kill_reason reason;
        uint64_t deadline_boottime_usec;
        uint64_t pid;
};

/* Formats r; returns the length (< size), -EINVAL (id 0, an unknown
 * reason) or -ENOBUFS. */
int mg_park_record_format(const struct mg_park_record *r, char *buf, size_t size);
/* Parses exactly what mg_park_record_format() writes.  Returns 0 or
 * -EBADMSG; *ret is written only on success. */
int mg_park_record_parse(const char *buf, size_t len, struct mg_park_record *ret);

/*
 * What mg_guard_new() finds of a park record (mg_park_adopt() acts on
 * it): 1 and *ret if a record that counts is on a directory whose
 * cgroup.freeze reads 1 (a park to take over); 0 if there is none, or
 * none to act on (a stale record, on a cgroup not frozen: removed; one its
 * tenant can write, or malformed: left, never acted on); the log says
 * which.
 */
int mg_park_record_find(mg_guard *g, struct mg_park_record *ret);
/* The park of rec taken over: the guard, its slow state taken, starts
 * MG_GUARD_PARKED with the record's id and deadline (MG_EVENT_PARK at the
 * first tick once cgroup.events says frozen; a deadline passed: killed at
 * the first tick, MG_PARK_END_DEADLINE, untold as a park). */
void mg_park_adopt(mg_guard *g, const struct mg_park_record *rec);
/* The guard goes with its park open (mg_guard_free(), mg_set_remove()):
 * its own park is thawed and its record removed (nothing else would thaw
 * it); one taken over is left as found, frozen, record and all, for the
 * next guard (a takeover never thaws).  Best effort, logged. */
void mg_park_release(mg_guard *g);
/*
 * mg_guard_recover()'s part (cg opened by it): a park record on a cgroup
 * not frozen (or without a freezer) is stale and removed; one on a frozen
 * cgroup, its deadline passed or not, is left for mg_guard_new(), which
 * takes the park over (and kills at its first tick one whose deadline
 * passed, with the kill record a worker counts): recovery neither thaws
 * nor kills.  Returns 0, -EPERM (a directory its tenant can write: left),
 * -EBADMSG (left), or the errno of a read.
 */
int mg_park_recover(struct mg_cgroup *cg);

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
