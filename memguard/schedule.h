/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A set's schedule: (next tick, guard) entries, the earliest first.
 *
 * A guard that ticks is due again one tick length later, so with one tick
 * length for all (the common case: every guard of a set at 250 ms) the
 * times put back come in the order they are taken out.  Those go to the
 * tail of a sorted FIFO ring, O(1) each way; only a time that would break
 * its order (a first tick before the tail's, a reschedule, a second tick
 * length, a guard that will not tick again) goes to a binary min-heap
 * beside it.  The earliest is the earlier of the two heads.
 *
 * Entries hold the time next to the pointer and the guards do not hold
 * their place: taking one out never touches a guard, which with thousands
 * of guards spread over memory would cost a cache miss each.  Finding a
 * guard that is not at a head is a scan, for the rare remove or reschedule.
 *
 * mg_sched_reserve() makes room first: pushing, taking and moving entries
 * never allocate, so a guard can always be put back.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mg_guard mg_guard;

struct mg_sched_entry {
        uint64_t when;
        mg_guard *g;
};

struct mg_sched {
        struct mg_sched_entry *ring; /* sorted by when, from ring[head] on */
        size_t head, len, ring_cap;  /* ring_cap: 0 or a power of two */
        struct mg_sched_entry *heap;
        size_t n_heap, heap_cap;
};

/* Room for n entries in all; 0 or -ENOMEM (the schedule unchanged). */
int mg_sched_reserve(struct mg_sched *q, size_t n);
void mg_sched_free(struct mg_sched *q);

static inline size_t mg_sched_size(const struct mg_sched *q) {
        return q->len + q->n_heap;
}

static inline size_t mg_sched_ring_index(const struct mg_sched *q, size_t i) {
        return (q->head + i) & (q->ring_cap - 1);
}

/* The earliest entry, or NULL when empty. */
static inline const struct mg_sched_entry *mg_sched_peek(const struct mg_sched *q) {
        if (q->len == 0)
                return q->n_heap ? &q->heap[0] : NULL;
        if (q->n_heap && q->heap[0].when < q->ring[q->head].when)
                return &q->heap[0];
        return &q->ring[q->head];
}

void mg_sched_push_heap(struct mg_sched *q, struct mg_sched_entry e);

/* Adds g due at when (UINT64_MAX: never).  Needs the room reserved. */
static inline void mg_sched_push(struct mg_sched *q, uint64_t when, mg_guard *g) {
        struct mg_sched_entry e = { .when = when, .g = g };

        /* A never (UINT64_MAX) at the ring's tail would send every later
         * time to the heap. */
        if (when != UINT64_MAX && (q->len == 0 || when >= q->ring[mg_sched_ring_index(q, q->len - 1)].when)) {
                q->ring[mg_sched_ring_index(q, q->len++)] = e;
                return;
        }
        mg_sched_push_heap(q, e);
}

bool mg_sched_take_any(struct mg_sched *q, mg_guard *g, uint64_t *ret_when);

/* Takes g out, its time into *ret_when (may be NULL); false if absent.
 * O(1) when g is the earliest. */
static inline bool mg_sched_take(struct mg_sched *q, mg_guard *g, uint64_t *ret_when) {
        if (q->len == 0 || q->ring[q->head].g != g)
                return mg_sched_take_any(q, g, ret_when);
        if (ret_when)
                *ret_when = q->ring[q->head].when;
        q->head = mg_sched_ring_index(q, 1);
        q->len--;
        return true;
}

size_t mg_sched_next_mixed(const struct mg_sched *q, mg_guard *ret[2]);

/* Up to two guards due soon after the earliest (for a prefetch); how many. */
static inline size_t mg_sched_next(const struct mg_sched *q, mg_guard *ret[2]) {
        size_t k = 0;

        if (q->n_heap)
                return mg_sched_next_mixed(q, ret);
        for (; k < 2 && k + 1 < q->len; k++)
                ret[k] = q->ring[mg_sched_ring_index(q, k + 1)].g;
        return k;
}

/* Entry i of mg_sched_size(), in no order: to walk every guard. */
mg_guard *mg_sched_at(const struct mg_sched *q, size_t i);
