/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A guard's life as its caller or its set drives it (tick.c): made,
 * attached to a set, ticked, reported on, detached and freed; the calls
 * that may run its callbacks, bracketed.
 */

#include "guard.h"

/* Same as mg_guard_new() with cgroup flags and an I/O seam, for tests. */
int mg_guard_new_internal(const char *path, const struct mg_guard_options *o, unsigned cg_flags,
                          const struct mg_io *io, mg_guard **ret);
/* The same for a guard about to join host (mg_guard_attach()): it reads
 * into host's buffers from the start, and allocates none of its own. */
int mg_guard_new_hosted(const char *path, const struct mg_guard_options *o, unsigned cg_flags,
                        const struct mg_io *io, const struct mg_guard_host *host, mg_guard **ret);
/* mg_guard_recover() with cgroup flags and an I/O seam, for tests. */
int mg_guard_recover_internal(const char *path, unsigned flags, unsigned cg_flags, const struct mg_io *io);
/* mg_guard_tick() at now, the guard's clock as its caller just read it (a
 * set reads it once per guard to see the tick is due). */
int mg_guard_tick_at(mg_guard *g, uint64_t now);
/* memory.events.local changed (a set saw POLLPRI on it): reads it and
 * reports a kernel OOM kill at once, whatever the tick. */
void mg_guard_events_changed(mg_guard *g);

/*
 * A call of the library on g that may run g's callbacks (or its host's
 * log), from mg_guard_enter() to mg_guard_leave(); calls nest.  While one
 * runs, a callback's mg_guard_free() of g only silences it, and the leave
 * that ends the outermost call frees it: the call never touches freed
 * memory.  The host is entered too (mg_guard_host.enter), so that a
 * callback's mg_set_free() or mg_set_remove() waits for the call as well.
 * A public entry that runs callbacks is wrapped so; mg_guard_tick() and
 * mg_set_process() are refused (-EDEADLK) while theirs is busy.
 * Returns the host entered, for mg_guard_leave(): g may leave it meanwhile.
 */
struct mg_guard_host *mg_guard_enter(mg_guard *g);
/* Ends what mg_guard_enter() began: g may be freed here, and must not be
 * used after (h may be, if the caller holds it otherwise). */
void mg_guard_leave(mg_guard *g, struct mg_guard_host *h);

/* g joins h: it watches memory.events.local through h and reads
 * memory.stat into h's buffer (its own goes). */
void mg_guard_attach(mg_guard *g, struct mg_guard_host *h);
/* g leaves its host, every watch with it; a lend not held by a write is
 * handed to the host's worker first (mg_guard_release_lend()).  It is
 * detached: no more events or logs.  Returns true if g is the caller's to
 * free, false if a hold keeps it: then the last release frees it. */
bool mg_guard_detach(mg_guard *g);
/* Drops a hold (mg_guard_hold()); the last release of a detached guard
 * frees it. */
void mg_guard_release(mg_guard *g);
