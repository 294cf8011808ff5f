/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A set's internal entry points, for the tests and benchmarks. */

#include "guard.h"

/* A wakeup also runs the ticks due within this much (within less than
 * half a period for a shorter one): a tick off its slot (below) may come
 * up to 25 ms early. */
#define MG_SET_SLACK_USEC 25000
/* The narrowest slot: wider than the slack, so that the wakeup for one
 * slot does not run the next one's ticks early. */
#define MG_SET_SLOT_USEC (2 * MG_SET_SLACK_USEC)

/* Where a set's guards tick: on slots a whole number of which fill a
 * period (5 of 50 ms at 250 ms; one at a period under 100 ms), counted
 * from the clock's zero, so that guards added at any time share them.  A
 * wakeup costs the host about what 50 reads cost (on a VM: docs/
 * benchmarks.md), so fewer, fuller wakeups cost less, as long as one
 * slot's reads stay short for the host's loop: 1,000 guards at 250 ms
 * make 20 wakeups a second of 200 reads each (about 0.4 ms), where first
 * ticks a thousandth of a period apart made 40 of 100. */
static inline uint64_t mg_set_slot_usec(uint64_t tick_usec) {
        uint64_t slots = tick_usec / MG_SET_SLOT_USEC;

        return slots > 1 ? tick_usec / slots : tick_usec;
}

/* The first tick of a set's n-th guard, this long after the slot at or
 * after it joins: the n-th of a thousand takes the slot of its place in
 * the period, so that a thousand added together read 200 to a wakeup,
 * and in the order they were added.  Guards added one after another sit
 * side by side in memory, and so, as a rule, do their cgroups' kernel
 * objects: a wakeup that ticks a run of them finds their pages in the TLB
 * and their lines nearby, where a scattered order missed on about every
 * guard (a step of 7,919 over 1,000 did: docs/benchmarks.md). */
static inline uint64_t mg_set_spread_usec(size_t n, uint64_t tick_usec) {
        uint64_t slot = mg_set_slot_usec(tick_usec);

        return slot ? (n % 1000) * (tick_usec / slot) / 1000 * slot : 0;
}

/* Adds a guard made by mg_guard_new_internal() to a set, which then owns it. */
int mg_set_add_guard(struct mg_set *s, mg_guard *g);
/* mg_set_add() with cgroup flags and an I/O seam, for tests. */
int mg_set_add_internal(struct mg_set *s, const char *cgroup_path, const struct mg_guard_options *o, unsigned cg_flags,
                        const struct mg_io *io, mg_guard **ret);
/* Moves the next tick of g to when_usec (a test aligning its guards' ticks). */
void mg_set_reschedule(struct mg_set *s, mg_guard *g, uint64_t when_usec);
