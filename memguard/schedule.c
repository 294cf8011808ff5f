/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A set's schedule (schedule.h): a FIFO ring beside a min-heap of (next
 * tick, guard) entries.  It owns its arrays and never touches a guard.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

/* Both return the entry's final index. */
static size_t heap_up(struct mg_sched *q, size_t i) {
        struct mg_sched_entry e = q->heap[i];

        while (i > 0 && q->heap[(i - 1) / 2].when > e.when) {
                q->heap[i] = q->heap[(i - 1) / 2];
                i = (i - 1) / 2;
        }
        q->heap[i] = e;
        return i;
}

static size_t heap_down(struct mg_sched *q, size_t i) {
        struct mg_sched_entry e = q->heap[i];

        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = l;
                if (l >= q->n_heap)
                        break;
                if (r < q->n_heap && q->heap[r].when < q->heap[l].when)
                        m = r;
                if (q->heap[m].when >= e.when)
                        break;
                q->heap[i] = q->heap[m];
                i = m;
        }
        q->heap[i] = e;
        return i;
}

int mg_sched_reserve(struct mg_sched *q, size_t n) {
        if (n > q->heap_cap) {
                size_t cap = q->heap_cap ? q->heap_cap : 16;
                while (cap < n)
                        cap *= 2;
                struct mg_sched_entry *h = realloc(q->heap, cap * sizeof(*h));
                if (!h)
                        return -ENOMEM;
                q->heap = h;
                q->heap_cap = cap;
        }
        if (n > q->ring_cap) {
                size_t cap = q->ring_cap ? q->ring_cap : 16;
                while (cap < n)
                        cap *= 2;
                struct mg_sched_entry *r = malloc(cap * sizeof(*r));
                if (!r)
                        return -ENOMEM; /* the heap grew: harmless */
                for (size_t i = 0; i < q->len; i++)
                        r[i] = q->ring[mg_sched_ring_index(q, i)];
                free(q->ring);
                q->ring = r;
                q->ring_cap = cap;
                q->head = 0;
        }
        return 0;
}

void mg_sched_free(struct mg_sched *q) {
        free(q->ring);
        free(q->heap);
        *q = (struct mg_sched) {};
}

void mg_sched_push_heap(struct mg_sched *q, struct mg_sched_entry e) {
        q->heap[q->n_heap] = e;
        heap_up(q, q->n_heap++);
}

static bool heap_take(struct mg_sched *q, size_t i, uint64_t *ret_when) {
        if (ret_when)
                *ret_when = q->heap[i].when;
        q->n_heap--;
        if (i < q->n_heap) {
                q->heap[i] = q->heap[q->n_heap];
                heap_up(q, heap_down(q, i));
        }
        return true;
}

/* Closes the gap at ring position i from whichever end is nearer. */
static bool ring_take(struct mg_sched *q, size_t i, uint64_t *ret_when) {
        if (ret_when)
                *ret_when = q->ring[mg_sched_ring_index(q, i)].when;
        if (i < q->len / 2) {
                for (; i > 0; i--)
                        q->ring[mg_sched_ring_index(q, i)] = q->ring[mg_sched_ring_index(q, i - 1)];
                q->head = mg_sched_ring_index(q, 1);
        } else {
                for (; i + 1 < q->len; i++)
                        q->ring[mg_sched_ring_index(q, i)] = q->ring[mg_sched_ring_index(q, i + 1)];
        }
        q->len--;
        return true;
}

bool mg_sched_take_any(struct mg_sched *q, mg_guard *g, uint64_t *ret_when) {
        if (q->n_heap && q->heap[0].g == g)
                return heap_take(q, 0, ret_when);
        /* From the ends: a set is freed from there. */
        for (size_t i = q->len; i-- > 0;)
                if (q->ring[mg_sched_ring_index(q, i)].g == g)
                        return ring_take(q, i, ret_when);
        for (size_t i = q->n_heap; i-- > 0;)
                if (q->heap[i].g == g)
                        return heap_take(q, i, ret_when);
        return false;
}

/* With entries in the heap: the earliest's follower in its own structure,
 * and the other's head. */
size_t mg_sched_next_mixed(const struct mg_sched *q, mg_guard *ret[2]) {
        size_t k = 0;

        if (mg_sched_peek(q) != q->heap) {
                if (q->len > 1)
                        ret[k++] = q->ring[mg_sched_ring_index(q, 1)].g;
                ret[k++] = q->heap[0].g;
        } else {
                if (q->len)
                        ret[k++] = q->ring[q->head].g;
                if (q->n_heap > 1)
                        ret[k++] = q->heap[q->n_heap > 2 && q->heap[2].when < q->heap[1].when ? 2 : 1].g;
        }
        return k;
}

mg_guard *mg_sched_at(const struct mg_sched *q, size_t i) {
        return i < q->len ? q->ring[mg_sched_ring_index(q, i)].g : q->heap[i - q->len].g;
}
