/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A set's internal entry points, for the tests and benchmarks. */

#include "guard.h"

/* The first tick of a set's n-th guard, this long after it joins: a
 * thousandth of a period after the one added before it, so that a thousand
 * guards added together read 4 to a millisecond at 250 ms, not all at one
 * instant, and in the order they were added.  Guards added one after
 * another sit side by side in memory, and so, as a rule, do their cgroups'
 * kernel objects: a wakeup that ticks a run of them finds their pages in
 * the TLB and their lines nearby, where a scattered order missed on about
 * every guard (a step of 7,919 over 1,000 did: docs/benchmarks.md).  And
 * up to a hundred added together share one wakeup a period (a set ticks
 * what is due within 25 ms at once), where the step woke for each. */
static inline uint64_t mg_set_spread_usec(size_t n, uint64_t tick_usec) {
        return (n % 1000) * tick_usec / 1000;
}

/* Adds a guard made by mg_guard_new_internal() to a set, which then owns it. */
int mg_set_add_guard(struct mg_set *s, mg_guard *g);
/* mg_set_add() with cgroup flags and an I/O seam, for tests. */
int mg_set_add_internal(struct mg_set *s, const char *cgroup_path, const struct mg_guard_options *o, unsigned cg_flags,
                        const struct mg_io *io, mg_guard **ret);
/* Moves the next tick of g to when_usec (a test aligning its guards' ticks). */
void mg_set_reschedule(struct mg_set *s, mg_guard *g, uint64_t when_usec);
