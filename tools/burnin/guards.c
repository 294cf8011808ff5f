/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An actor's limits and the options of its two guards (guards.h).  Pure:
 * no I/O.
 */
#include <errno.h>

#include "guards.h"
#include "util.h"

#define PAGE_BYTES 4096u

uint64_t bi_actor_high_bytes(uint64_t actor_bytes) {
        return actor_bytes / 10 * 9 / PAGE_BYTES * PAGE_BYTES;
}

uint64_t bi_actor_max_bytes(uint64_t actor_bytes) {
        return 2 * actor_bytes;
}

int bi_worker_guard_options(uint64_t actor_bytes, struct mg_guard_options *ret) {
        return mg_guard_options_init(ret, actor_bytes);
}

int bi_actor_guard_options(uint64_t actor_bytes, struct mg_guard_options *ret) {
        int r = mg_guard_options_init(ret, bi_actor_max_bytes(actor_bytes));

        if (r < 0)
                return r;
        ret->flags |= MG_GUARD_DRY_RUN;
        return 0;
}

int bi_worker_park_guard_options(uint64_t actor_bytes, uint64_t park_deadline_usec, struct mg_guard_options *ret) {
        struct mg_guard_options o;
        int r = bi_worker_guard_options(actor_bytes, &o);

        if (r < 0)
                return r;
        if (park_deadline_usec == 0 || park_deadline_usec > MG_PARK_MAX_USEC)
                return -EINVAL;
        o.park_deadline_usec = park_deadline_usec;
        /* the library's default, 2 s + 1 s per GiB of the limit (at most
         * 30 s; docs/tuning.md), where it is longer */
        uint64_t dflt = (2 + actor_bytes / (1024 * MG_MIB)) * MG_USEC_PER_SEC;
        if (dflt > 30 * MG_USEC_PER_SEC)
                dflt = 30 * MG_USEC_PER_SEC;
        if (o.kill_wait_usec == 0)
                o.kill_wait_usec = dflt > BI_PARK_FREEZE_WAIT_USEC ? dflt : BI_PARK_FREEZE_WAIT_USEC;
        else if (o.kill_wait_usec < BI_PARK_FREEZE_WAIT_USEC)
                o.kill_wait_usec = BI_PARK_FREEZE_WAIT_USEC;
        *ret = o;
        return 0;
}
