/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "memguard/memguard.h"

/* Copies the caller's options (of whatever .size) into *ret, fills every
 * zero field with the default tuned to the limit and checks the result.
 * Returns 0, -EINVAL or -E2BIG (unknown non-zero fields past our size). */
int mg_options_resolve(const struct mg_guard_options *o, struct mg_guard_options *ret);

/*
 * The one rule for how long a lend may last by default: the time to write
 * bytes at 50 MiB/s (a slow network disk), plus 10 s, so a snapshot fits
 * and a forgotten lend still ends.  The guard's default deadline is this
 * for its limit (tune.c); a snapshot write's is this for its image, never
 * shorter than its guard's deadline.  A caller who plans for a slower disk
 * gives its own (mg_snapshot_options.lend_deadline_usec).
 */
uint64_t mg_lend_deadline_usec(uint64_t bytes);
