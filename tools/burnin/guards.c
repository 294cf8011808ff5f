/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An actor's limits and the options of its two guards (guards.h).  Pure:
 * no I/O.
 */
#include "guards.h"

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
