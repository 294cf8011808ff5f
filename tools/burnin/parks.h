/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Parks among the chaos kills (--park N): which overshoots of a step are
 * parked, and the per-slot figures of the parks' three phases.  Pure: no
 * I/O; main.c and park.c fill the records, report.c prints them, the unit
 * suite checks them (tests/unit/test-burnin.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A chaos actor's park as the worker saw it, CLOCK_MONOTONIC usec (0: not
 * reached).  park, frozen, park_end: its kill record's report; save: the
 * worker's mg_snapshot_write() of the guest memfd; empty: the record's
 * empty_usec, the cgroup empty after the worker's kill. */
struct bi_park {
        uint32_t actor;
        uint32_t park_end;              /* enum mg_park_end of the kill record */
        uint64_t detect_usec;           /* MG_EVENT_PARK's record: the verdict */
        uint64_t park_usec, frozen_usec;
        uint64_t save_begin_usec, save_end_usec;
        uint64_t park_end_usec, empty_usec;
        bool lost;                      /* no image: the save or the restore failed */
        bool corrupted;                 /* restored, but a page differs from the pattern */
        int64_t bad_page;               /* the first page that differs, or -1 */
};

enum bi_park_phase {
        BI_PARK_FREEZE = 0,             /* frozen_usec - park_usec */
        BI_PARK_SAVE = 1,               /* the snapshot write */
        BI_PARK_FREE = 2,               /* park_end_usec to empty_usec */
        BI_PARK_PHASES = 3,
};

/* "freeze", "save", "free". */
const char *bi_park_phase_to_string(enum bi_park_phase p);

/* Whether the k-th overshoot (from 0) of a step is parked: the first park
 * of its chaos overshoots are, the rest killed as before. */
bool bi_park_pick(uint32_t k, uint32_t chaos, uint32_t park);

/* The phase's duration, or -ENODATA where one of its ends was not reached
 * (or comes before the other). */
int bi_park_phase_usec(const struct bi_park *p, enum bi_park_phase phase, uint64_t *ret);

/* The slot a park counts in: the one its end (empty_usec, else its last
 * time reached) falls in, counted from start_usec. */
uint64_t bi_park_slot(const struct bi_park *p, uint64_t start_usec, uint64_t slot_usec);

struct bi_park_stats {
        size_t n;
        uint64_t p50, p90, p99, max;    /* nearest rank, usec; 0 where n is 0 */
};

/* The figures of one phase over the parks of one slot.  scratch holds n
 * values.  Returns 0 or -EINVAL (slot_usec 0). */
int bi_park_slot_stats(const struct bi_park *parks, size_t n, uint64_t start_usec, uint64_t slot_usec,
                       uint64_t slot, enum bi_park_phase phase, uint64_t *scratch, struct bi_park_stats *ret);
