/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Units, the monotonic clock and a clamp, for the library and for the
 * tests, tools and benchmarks built beside it (header-only: mg-workload
 * uses it without linking the library).  Times are microseconds of
 * CLOCK_MONOTONIC unless a name says otherwise.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#define MG_KIB (UINT64_C(1) << 10)
#define MG_MIB (UINT64_C(1) << 20)
#define MG_GIB (UINT64_C(1) << 30)
/* Bytes in whole KiB, as the kernel's reports print them. */
#define MG_TO_KIB(bytes) ((bytes) >> 10)

#define MG_USEC_PER_MSEC UINT64_C(1000)
#define MG_USEC_PER_SEC UINT64_C(1000000)
#define MG_NSEC_PER_USEC UINT64_C(1000)

static inline uint64_t mg_mono_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline uint64_t mg_mono_usec(void) {
        return mg_mono_nsec() / MG_NSEC_PER_USEC;
}

/* A function of the fast tick: gcc and clang place these together
 * (.text.hot), so that a tick's code spans few cache lines and pages. */
#define MG_HOT __attribute__((hot))

/* The p-th percentile of n values, by nearest rank (the smallest value
 * with at least p % of them at or below it); sorts v in place.  0 if n is
 * 0.  For the tools' and benchmarks' latency figures. */
static inline int mg_cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* The nearest-rank p-th percentile of n values sorted up; 0 for none. */
static inline uint64_t mg_percentile_sorted_u64(const uint64_t *v, size_t n, unsigned p) {
        size_t rank;

        if (n == 0)
                return 0;
        rank = (n * p + 99) / 100;
        return v[rank ? rank - 1 : 0];
}

/* The same of values in any order: sorts v first. */
static inline uint64_t mg_percentile_u64(uint64_t *v, size_t n, unsigned p) {
        qsort(v, n, sizeof(*v), mg_cmp_u64);
        return mg_percentile_sorted_u64(v, n, p);
}

/* The struct a member pointer p of type's member is in. */
#define mg_container_of(p, type, member) ((type *) (void *) ((char *) (p) - offsetof(type, member)))

static inline uint64_t mg_clamp_u64(uint64_t v, uint64_t lo, uint64_t hi) {
        return v < lo ? lo : v > hi ? hi : v;
}

/* Someone other than root and `self` (this process's effective uid) can
 * write a file or directory of this owner and mode: the tenant a cgroup was
 * delegated to (its directory chowned to it), or anyone through a group or
 * other write bit.  Whatever such a writer can put there (an xattr, a
 * value) is the tenant's input, never the platform's word about it. */
static inline bool mg_writable_by_others(uid_t owner, mode_t mode, uid_t self) {
        return (owner != 0 && owner != self) || (mode & (S_IWGRP | S_IWOTH)) != 0;
}
