/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Sizes on the command line, as pure functions (no I/O, no locale): the
 * unit tests drive them through `memguard size-parse`.
 */

#include <stddef.h>
#include <stdint.h>

enum {
        MGT_SIZE_PERCENT = 1 << 0,      /* "90%" of percent_base */
        MGT_SIZE_MAX = 1 << 1,          /* "max" gives MG_UNLIMITED */
};

/*
 * Parses a size: plain bytes ("67108864", "512B"), a power of 1024 with a
 * suffix K, M, G or T, optionally followed by "i" or "iB" ("64M", "64Mi",
 * "64MiB", "1.5G"; case-insensitive letter), "max" with MGT_SIZE_MAX, and
 * "90%" / "12.5%" of percent_base with MGT_SIZE_PERCENT.  "MB" and friends
 * are refused: they read as powers of 1000 to many people.  A fraction is
 * rounded down to whole bytes.  Returns 0, -EINVAL (not a size), -ERANGE
 * (above 2^64 - 1 bytes) or -EDOM (a percentage where none is allowed, or
 * percent_base is 0 or MG_UNLIMITED).  *ret is not written on failure.
 */
int mgt_size_parse(const char *s, uint64_t percent_base, unsigned flags, uint64_t *ret);

/* Formats bytes for people: "512 B", "57.6 MiB" (to the nearest tenth),
 * "max" for MG_UNLIMITED.  Returns buf. */
const char *mgt_size_format(uint64_t bytes, char *buf, size_t len);
