/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The set's schedule (memguard/schedule.c): the earliest entry always on
 * top whatever order times come in, the ring taking the in-order ones, and
 * entries found, moved and taken out anywhere, against a plain array as
 * the reference.  Guards are never dereferenced: small integers stand in.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

#include "schedule.h"
#include "set.h"

#define G(i) ((mg_guard *) (uintptr_t) ((i) + 1) /* never NULL */)

struct ref {
        uint64_t when[4096];
        bool in[4096];
};

static uint64_t ref_min(const struct ref *r, size_t n) {
        uint64_t m = UINT64_MAX;
        for (size_t i = 0; i < n; i++)
                if (r->in[i] && r->when[i] < m)
                        m = r->when[i];
        return m;
}

/* Every guard in the reference once, in the schedule once. */
static void check_same(const struct mg_sched *q, const struct ref *r, size_t n) {
        size_t count = 0;
        unsigned seen[4096] = {};

        for (size_t i = 0; i < n; i++)
                count += r->in[i];
        cr_assert_eq(mg_sched_size(q), count);
        for (size_t i = 0; i < mg_sched_size(q); i++) {
                size_t g = (size_t) (uintptr_t) mg_sched_at(q, i) - 1;
                cr_assert_lt(g, n);
                cr_assert(r->in[g], "guard %zu is in the schedule, not in the reference", g);
                cr_assert_eq(seen[g]++, 0, "guard %zu twice", g);
        }
        if (count) {
                const struct mg_sched_entry *e = mg_sched_peek(q);
                cr_assert_not_null(e);
                cr_assert_eq(e->when, ref_min(r, n));
        } else {
                cr_assert_null(mg_sched_peek(q));
        }
}

/* One tick length for all: after the first round every time put back is
 * the latest, and the heap empties. */
Test(schedule, one_tick_length_goes_to_the_ring) {
        struct mg_sched q = {};
        const size_t n = 1000;
        uint64_t now = 0;

        cr_assert_eq(mg_sched_reserve(&q, n), 0);
        for (size_t i = 0; i < n; i++)
                mg_sched_push(&q, (i * 7919 % n) * 250, G(i)); /* over one period, out of order */
        cr_expect_gt(q.n_heap, n / 2, "first ticks out of order go to the heap");
        for (size_t t = 0; t < 3 * n; t++) {
                const struct mg_sched_entry *e = mg_sched_peek(&q);
                uint64_t when;
                mg_guard *g = e->g;
                cr_assert_geq(e->when, now, "taken in order");
                now = e->when;
                cr_assert(mg_sched_take(&q, g, &when));
                cr_assert_eq(when, now);
                mg_sched_push(&q, when + 250000, g);
        }
        cr_expect_eq(q.n_heap, 0, "every guard in the ring once it ticked");
        cr_expect_eq(q.len, n);
        mg_sched_free(&q);
}

/* A set's first ticks (mg_set_spread_usec()): a thousand added together
 * come in the order they were added, 200 to each of the five 50 ms slots
 * of a 250 ms period, and all go to the ring; the next thousand fall on
 * the first's times.  A period under two slots is one slot. */
Test(schedule, a_set_spreads_first_ticks_in_order) {
        struct mg_sched q = {};
        const size_t n = 1000;
        const uint64_t tick = 250000, slot = 50000;
        size_t per_slot[5] = {};

        cr_assert_eq(mg_set_slot_usec(tick), slot);
        cr_assert_eq(mg_sched_reserve(&q, n), 0);
        for (size_t i = 0; i < n; i++) {
                uint64_t t = mg_set_spread_usec(i, tick);
                cr_assert_lt(t, tick);
                cr_assert_eq(t % slot, 0, "guard %zu off its slot: %" PRIu64, i, t);
                if (i > 0)
                        cr_assert_geq(t, mg_set_spread_usec(i - 1, tick), "guard %zu before guard %zu", i, i - 1);
                per_slot[t / slot]++;
                mg_sched_push(&q, t, G(i));
        }
        cr_expect_eq(q.n_heap, 0, "in order: every first tick in the ring");
        for (size_t k = 0; k < 5; k++)
                cr_expect_eq(per_slot[k], n / 5, "slot %zu of 50 ms holds %zu", k, per_slot[k]);
        cr_expect_eq(mg_set_spread_usec(n, tick), mg_set_spread_usec(0, tick));
        cr_expect_eq(mg_set_spread_usec(n + 7, tick), mg_set_spread_usec(7, tick));
        cr_expect_eq(mg_set_slot_usec(330000), 55000, "6 slots of 55 ms");
        cr_expect_eq(mg_set_slot_usec(99000), 99000, "one slot");
        cr_expect_eq(mg_set_spread_usec(999, 99000), 0);
        mg_sched_free(&q);
}

/* Random pushes, takes from anywhere, moves and nevers, against the
 * reference: the earliest on top after every step. */
Test(schedule, random_against_a_reference) {
        static struct ref r;
        struct mg_sched q = {};
        const size_t n = 256;
        unsigned seed = 12345;

        cr_assert_eq(mg_sched_reserve(&q, n), 0);
        for (int step = 0; step < 20000; step++) {
                size_t g = (size_t) rand_r(&seed) % n;
                unsigned op = (unsigned) rand_r(&seed) % 8;
                uint64_t when, base = (uint64_t) step * 100;

                if (!r.in[g]) {
                        /* mostly in order (a tick put back), some not, some never */
                        when = op < 5 ? base + 250000 : op < 7 ? base + (uint64_t) (rand_r(&seed) % 500000) : UINT64_MAX;
                        mg_sched_push(&q, when, G(g));
                        r.in[g] = true;
                        r.when[g] = when;
                } else if (op < 4) {
                        cr_assert(mg_sched_take(&q, G(g), &when));
                        cr_assert_eq(when, r.when[g]);
                        r.in[g] = false;
                } else {
                        /* a reschedule: taken out and put back */
                        cr_assert(mg_sched_take(&q, G(g), &when));
                        cr_assert_eq(when, r.when[g]);
                        when = base + (uint64_t) (rand_r(&seed) % 300000);
                        mg_sched_push(&q, when, G(g));
                        r.when[g] = when;
                }
                if (step % 97 == 0)
                        check_same(&q, &r, n);
                else
                        cr_assert_eq(mg_sched_peek(&q) ? mg_sched_peek(&q)->when : UINT64_MAX, ref_min(&r, n),
                                     "step %d", step);
        }
        check_same(&q, &r, n);
        mg_sched_free(&q);
}

Test(schedule, absent_and_empty) {
        struct mg_sched q = {};
        mg_guard *soon[2] = { NULL, NULL };
        uint64_t when = 7;

        cr_expect_null(mg_sched_peek(&q));
        cr_expect_not(mg_sched_take(&q, G(0), &when));
        cr_expect_eq(when, 7, "untouched");
        cr_expect_eq(mg_sched_next(&q, soon), 0);
        cr_assert_eq(mg_sched_reserve(&q, 3), 0);
        mg_sched_push(&q, 10, G(0));
        mg_sched_push(&q, 20, G(1));
        mg_sched_push(&q, 5, G(2)); /* before the ring's tail: the heap */
        cr_expect_eq(mg_sched_peek(&q)->g, G(2));
        cr_expect_eq(mg_sched_next(&q, soon), 1, "the ring's head, and nothing after the heap's top");
        cr_expect_eq(soon[0], G(0));
        cr_expect_not(mg_sched_take(&q, G(3), NULL));
        cr_expect(mg_sched_take(&q, G(1), NULL), "from the ring's tail");
        cr_expect(mg_sched_take(&q, G(2), NULL));
        cr_expect_eq(mg_sched_peek(&q)->g, G(0));
        cr_expect_eq(mg_sched_next(&q, soon), 0);
        mg_sched_free(&q);
        cr_expect_eq(mg_sched_size(&q), 0);
}

/* Growing keeps the order of a ring that has wrapped. */
Test(schedule, reserve_keeps_a_wrapped_ring) {
        struct mg_sched q = {};
        uint64_t when;

        cr_assert_eq(mg_sched_reserve(&q, 16), 0);
        for (size_t i = 0; i < 16; i++)
                mg_sched_push(&q, i, G(i));
        for (size_t i = 0; i < 10; i++) {
                cr_assert(mg_sched_take(&q, G(i), &when));
                mg_sched_push(&q, 100 + i, G(i)); /* the ring wraps */
        }
        cr_assert_eq(q.n_heap, 0);
        cr_assert_eq(mg_sched_reserve(&q, 40), 0);
        for (size_t k = 0; k < 16; k++) {
                const struct mg_sched_entry *e = mg_sched_peek(&q);
                uint64_t want = k < 6 ? 10 + k : 100 + (k - 6);
                cr_assert_eq(e->when, want, "entry %zu", k);
                cr_assert(mg_sched_take(&q, e->g, NULL));
        }
        mg_sched_free(&q);
}
