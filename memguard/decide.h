/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The kill decision and the kill (decide.c), as the tick (tick.c) runs
 * them: each returns 1 if it killed, 0 if not, or a negative errno.
 */

#include "guard.h"

/* The whole kill decision for verdict v of the slow tick's sample (rep):
 * the steps are listed at its definition. */
int mg_guard_kill_decide(mg_guard *g, enum mg_verdict v, uint64_t now, struct mg_report *rep, uint64_t stall_usec,
                         unsigned signals);
/* MG_GUARD_KILLING: waits for cgroup.events "populated 0" (the kill
 * record goes out then, or at the kill wait), kills again what a fallback
 * kill may have missed. */
int mg_guard_tick_killing(mg_guard *g, uint64_t now);
/* A deferral (mg_guard_defer_kill()) is up: the put-off kill is confirmed
 * afresh and made, or MG_EVENT_KILL_AVERTED. */
int mg_guard_defer_end(mg_guard *g, uint64_t now, uint64_t current);
/* The deferral goes without a kill decision of its own (a lend began). */
void mg_guard_defer_drop(mg_guard *g, const char *why);
/* The episode of over the limit with no process ends (why: for the log). */
void mg_guard_end_empty(mg_guard *g, const char *why);
/* MG_GUARD_PARKED: the park's deadline and bounds (mg_guard_options.
 * park_deadline_usec); 1 if it killed. */
int mg_guard_tick_parked(mg_guard *g, uint64_t now);
/* mg_guard_park_end(), inside the guard's bracket. */
int mg_guard_park_finish(mg_guard *g, uint64_t park_id, enum mg_park_action action, uint64_t new_limit_bytes);
/* The kill record a park taken over from its record stands for (park.c's
 * mg_park_adopt()): reason, the method a kill would use, rep with the
 * kernel limits; kill_usec 0, nothing sent. */
void mg_guard_kill_record_set(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep);
