/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parks' choice and per-slot figures (parks.h).  Pure: no I/O.
 */
#include <errno.h>
#include <stdlib.h>

#include "parks.h"
#include "util.h"

const char *bi_park_phase_to_string(enum bi_park_phase p) {
        switch (p) {
        case BI_PARK_FREEZE:
                return "freeze";
        case BI_PARK_SAVE:
                return "save";
        case BI_PARK_FREE:
                return "free";
        default:
                return "?";
        }
}

bool bi_park_pick(uint32_t k, uint32_t chaos, uint32_t park) {
        return k < chaos && k < park;
}

static int span(uint64_t a, uint64_t b, uint64_t *ret) {
        if (a == 0 || b == 0 || b < a)
                return -ENODATA;
        *ret = b - a;
        return 0;
}

int bi_park_phase_usec(const struct bi_park *p, enum bi_park_phase phase, uint64_t *ret) {
        switch (phase) {
        case BI_PARK_FREEZE:
                return span(p->park_usec, p->frozen_usec, ret);
        case BI_PARK_SAVE:
                return span(p->save_begin_usec, p->save_end_usec, ret);
        case BI_PARK_FREE:
                return span(p->park_end_usec, p->empty_usec, ret);
        default:
                return -ENODATA;
        }
}

uint64_t bi_park_slot(const struct bi_park *p, uint64_t start_usec, uint64_t slot_usec) {
        uint64_t t = p->empty_usec ? p->empty_usec
                     : p->park_end_usec ? p->park_end_usec
                     : p->save_end_usec ? p->save_end_usec
                                        : p->park_usec;
        return t > start_usec && slot_usec ? (t - start_usec) / slot_usec : 0;
}

int bi_park_slot_stats(const struct bi_park *parks, size_t n, uint64_t start_usec, uint64_t slot_usec,
                       uint64_t slot, enum bi_park_phase phase, uint64_t *scratch, struct bi_park_stats *ret) {
        size_t k = 0;
        if (slot_usec == 0)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                uint64_t v;
                if (bi_park_slot(&parks[i], start_usec, slot_usec) == slot &&
                    bi_park_phase_usec(&parks[i], phase, &v) == 0)
                        scratch[k++] = v;
        }
        *ret = (struct bi_park_stats) { .n = k };
        if (k == 0)
                return 0;
        /* nearest rank, as the phase tables (report.c) */
        ret->p50 = mg_percentile_u64(scratch, k, 50);
        ret->p90 = mg_percentile_u64(scratch, k, 90);
        ret->p99 = mg_percentile_u64(scratch, k, 99);
        ret->max = scratch[k - 1];
        return 0;
}
