/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Structs that record their own size (a uint64_t .size first: the options
 * of a guard, a set and a snapshot, the snapshot stats, a report) cross the
 * library's boundary by one rule, the kernel's for clone3() and
 * sched_getattr(): the library reads or fills min(the caller's .size, its
 * own sizeof) bytes.
 *   in:  a larger caller struct is fine if every byte past ours is zero
 *        (fields this library does not know, left at their default); a
 *        non-zero one is -E2BIG, since ignoring it would drop a setting.
 *   out: what fits is filled, the caller's bytes past ours up to its .size
 *        are zeroed (fields this library does not know), nothing past the
 *        caller's .size is written, and .size keeps the caller's value.
 * A .size that does not even cover .size itself is -EINVAL.
 * What the library hands out by pointer (a kill record in an event, with
 * the report in it) carries .size = its own sizeof: a caller built against
 * a newer header reads a field only if it ends within .size.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* .size itself: the offset of the first field after it. */
#define MG_SIZED_MIN sizeof(uint64_t)

static inline uint64_t mg_sized_size(const void *p) {
        uint64_t size;
        memcpy(&size, p, sizeof(size));
        return size;
}

/* The caller's struct at p is their_size bytes, ours our_size: 0 if every
 * byte past ours is zero (or there are none), else -E2BIG. */
static inline int mg_sized_check_tail(const void *p, uint64_t their_size, size_t our_size) {
        const unsigned char *c = p;

        for (uint64_t i = our_size; i < their_size; i++)
                if (c[i])
                        return -E2BIG;
        return 0;
}

/* In: the caller's struct at src into dst (our_size bytes, zero where the
 * caller's is shorter, .size set to our_size).  min_size is the smallest
 * .size taken (the fields every caller must have).  Returns 0, -EINVAL or
 * -E2BIG; dst is written only on success. */
static inline int mg_sized_copy_in(void *dst, size_t our_size, const void *src, size_t min_size) {
        uint64_t size = mg_sized_size(src), ours = our_size;
        int r;

        if (size < MG_SIZED_MIN || size < min_size)
                return -EINVAL;
        r = mg_sized_check_tail(src, size, our_size);
        if (r < 0)
                return r;
        memset(dst, 0, our_size);
        memcpy(dst, src, size < our_size ? (size_t) size : our_size);
        memcpy(dst, &ours, sizeof(ours));
        return 0;
}

/* Out: can the caller's struct at dst take a result?  0 or -EINVAL, so a
 * call can refuse before it does what the struct would report. */
static inline int mg_sized_check_out(const void *dst) {
        return mg_sized_size(dst) < MG_SIZED_MIN ? -EINVAL : 0;
}

/* Out: src (our_size bytes) into the caller's struct at dst, by the rule
 * above.  Returns 0 or -EINVAL. */
static inline int mg_sized_copy_out(void *dst, const void *src, size_t our_size) {
        uint64_t size = mg_sized_size(dst);
        size_t fill = size < our_size ? (size_t) size : our_size;

        if (size < MG_SIZED_MIN)
                return -EINVAL;
        memcpy((char *) dst + MG_SIZED_MIN, (const char *) src + MG_SIZED_MIN, fill - MG_SIZED_MIN);
        if (size > our_size)
                memset((char *) dst + our_size, 0, (size_t) (size - our_size));
        return 0;
}
