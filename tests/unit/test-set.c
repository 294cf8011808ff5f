/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guard suite's guards in a set: the set's schedule, slots, fd and
 * clock, its slow states' pool, and the restores its worker makes off the
 * set's thread, on fixture trees (guard-suite.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "guard-suite.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"
#include "util.h"

TestSuite(guard, .init = setup, .fini = teardown);

/* The guard set on fixtures, with the injected clock. */
static int removed_in_callback;
static mg_set *cb_set;
static void remove_on_kill(mg_guard *g, const struct mg_event *ev, void *ud) {
        on_event(g, ev, ud);
        if (ev->type == MG_EVENT_KILL && cb_set) {
                cr_expect_eq(mg_set_remove(cb_set, g), 0);
                removed_in_callback++;
        }
}

Test(guard, set_schedules_and_kills) {
        mg_set *s;
        mg_guard *g[3];
        struct fixture other[2];
        struct mg_guard_options o;
        uint64_t t;

        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cr_expect_geq(mg_set_get_fd(s), 0);
        cr_expect_eq(mg_set_get_timeout(s, &t), 0);
        cr_expect_eq(t, UINT64_MAX);
        mg_guard_options_init(&o, 256 * MG_MIB);
        o.on_event = remove_on_kill;
        for (int i = 0; i < 3; i++) {
                struct fixture *f = i == 0 ? &fx : &other[i - 1];
                if (i > 0)
                        fixture_init(f);
                f->now_usec = fx.now_usec;
                cr_assert_eq(mg_guard_new_internal(f->dir, &o, MG_CGROUP_ANY_FS, &f->io, &g[i]), 0);
                mg_guard_set_clock(g[i], fixture_clock, &fx); /* one clock for all */
                cr_assert_eq(mg_set_add_guard(s, g[i]), 0);
        }
        cb_set = s;
        cr_expect_eq(mg_set_size(s), 3);
        cr_expect_eq(mg_set_get_timeout(s, &t), 0);
        cr_expect_leq(t, fx.now_usec + 250 * MG_USEC_PER_MSEC);

        /* every guard ticks once per period */
        for (int k = 0; k < 4; k++) {
                fx.now_usec += 250 * MG_USEC_PER_MSEC;
                cr_expect_geq(mg_set_process(s), 0);
        }
        cr_expect_eq(mg_set_get_timeout(s, &t), 0);
        cr_expect_gt(t, fx.now_usec);
        cr_expect_leq(t, fx.now_usec + 250 * MG_USEC_PER_MSEC);

        /* guard 1 overshoots, empties, and is removed from its own callback */
        fixture_current(&other[0], 300 * MG_MIB);
        fixture_stat(&other[0], 290 * MG_MIB, 0, 3 * MG_MIB, 0, 0, 0, 0);
        fx.now_usec += 250 * MG_USEC_PER_MSEC;
        cr_expect_eq(mg_set_process(s), 1);
        fixture_write(&other[0], "cgroup.events", "populated 0\nfrozen 0\n");
        fx.now_usec += 250 * MG_USEC_PER_MSEC;
        cr_expect_geq(mg_set_process(s), 0);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(removed_in_callback, 1);
        cr_expect_eq(mg_set_size(s), 2);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_str_empty(fixture_read(&other[1], "cgroup.kill"));

        cb_set = NULL;
        mg_set_free(s);
        fixture_cleanup(&other[0]);
        fixture_cleanup(&other[1]);
}

/* Runs s as its host would until fx's clock reads `until`, each wakeup at
 * the set's timeout; counts the wakeups, and those off a 50 ms slot. */
static unsigned run_set_until(mg_set *s, uint64_t until, unsigned *off_slot) {
        unsigned n = 0;
        uint64_t t;

        while (mg_set_get_timeout(s, &t) == 0 && t <= until) {
                if (t > fx.now_usec)
                        fx.now_usec = t;
                *off_slot += t % (50 * MG_USEC_PER_MSEC) != 0;
                cr_assert_geq(mg_set_process(s), 0);
                n++;
        }
        fx.now_usec = until;
        return n;
}

/* Ticks made so far, by one guard (g) or by all in s. */
static uint64_t ticks_of(const mg_set *s, const mg_guard *g) {
        struct mg_stats st = { .size = sizeof(st) };
        cr_assert_eq(g ? mg_guard_get_stats(g, &st) : mg_set_get_stats(s, &st), 0);
        return st.fast_ticks + st.slow_ticks;
}

/* The set's slots (mg_set_slot_usec()): 40 guards added one by one at
 * random moments, as a platform starts its actors, tick on the 50 ms slots
 * of the clock and wake the set at most 5 times a period; a guard that
 * asks for a tick out of turn gets it in the next wakeup and stays on the
 * slots; a host late by more than a period puts none off them. */
Test(guard, set_ticks_on_slots) {
        const uint64_t tick = 250 * MG_USEC_PER_MSEC, second = 1000 * MG_USEC_PER_MSEC;
        mg_set *s;
        mg_guard *g[40];
        unsigned seed = 16, off_slot = 0, wakeups;
        uint64_t before;

        cr_assert_eq(mg_set_new(NULL, &s), 0);
        fx.now_usec += 7;
        for (size_t i = 0; i < 40; i++) {
                (void) run_set_until(s, fx.now_usec + (uint64_t) rand_r(&seed) % (2 * tick), &off_slot);
                g[i] = new_guard();
                cr_assert_eq(mg_set_add_guard(s, g[i]), 0);
        }
        (void) run_set_until(s, fx.now_usec + tick, &off_slot); /* every first tick made */
        before = ticks_of(s, NULL);
        wakeups = run_set_until(s, fx.now_usec + second, &off_slot);
        cr_expect_leq(wakeups, 4 * 5, "%u wakeups in 4 periods", wakeups);
        cr_expect_eq(ticks_of(s, NULL) - before, (uint64_t) 40 * 4, "every guard ticks once a period");
        cr_expect_eq(off_slot, 0, "%u wakeups off a slot", off_slot);

        fx.now_usec += 17 * MG_USEC_PER_MSEC;
        before = ticks_of(NULL, g[3]);
        host_reschedule(g[3], fx.now_usec);
        cr_expect_geq(mg_set_process(s), 0);
        cr_expect_eq(ticks_of(NULL, g[3]) - before, 1, "the guard that asked ticked at once");
        wakeups = run_set_until(s, fx.now_usec + second, &off_slot);
        cr_expect_leq(wakeups, 4 * 5, "%u wakeups in 4 periods after it", wakeups);
        cr_expect_eq(off_slot, 0, "%u wakeups off a slot after it", off_slot);

        fx.now_usec += 3 * tick + 31 * MG_USEC_PER_MSEC; /* the host did not call */
        before = ticks_of(s, NULL);
        cr_expect_geq(mg_set_process(s), 0);
        cr_expect_eq(ticks_of(s, NULL) - before, 40, "each late guard ticks once, not once per period missed");
        wakeups = run_set_until(s, fx.now_usec + second, &off_slot);
        cr_expect_leq(wakeups, 4 * 5, "%u wakeups in 4 periods after a late host", wakeups);
        cr_expect_eq(off_slot, 0, "%u wakeups off a slot after a late host", off_slot);
        mg_set_free(s);
}

/* A period shorter than the set's slack (25 ms) ticks once a wakeup, on
 * time: a 20 ms guard 50 times a second, not twice at one instant every
 * 40 ms. */
Test(guard, set_short_period_ticks_once_a_wakeup) {
        struct mg_guard_options o;
        mg_set *s;
        mg_guard *g;
        unsigned off_slot = 0, wakeups;
        uint64_t before;

        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.tick_usec = 20 * MG_USEC_PER_MSEC;
        o.stall_window_usec = 1000 * MG_USEC_PER_MSEC;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        cr_assert_eq(mg_set_add_guard(s, g), 0);
        (void) run_set_until(s, fx.now_usec + 20 * MG_USEC_PER_MSEC, &off_slot);
        before = ticks_of(NULL, g);
        wakeups = run_set_until(s, fx.now_usec + 1000 * MG_USEC_PER_MSEC, &off_slot);
        cr_expect_eq(ticks_of(NULL, g) - before, 50);
        cr_expect_eq(wakeups, 50);
        mg_set_free(s);
}

/* The set's fd wakes a poll() when a tick is due (real clock). */
Test(guard, set_fd_wakes_poll) {
        mg_set *s;
        mg_guard *g;
        struct mg_guard_options o;
        mg_guard_options_init(&o, 256 * MG_MIB);
        o.tick_usec = 20 * MG_USEC_PER_MSEC;
        o.stall_window_usec = 1000 * MG_USEC_PER_MSEC;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        fixture_map_fds(&fx, &g->cg);
        cr_assert_eq(mg_set_add_guard(s, g), 0);
        fixture_reset_counts(&fx);
        struct pollfd p = { .fd = mg_set_get_fd(s), .events = POLLIN };
        for (int i = 0; i < 3; i++) {
                /* bounded: a 20 ms tick must wake us well within 5 s */
                cr_assert_eq(poll(&p, 1, 5000), 1);
                cr_expect_geq(mg_set_process(s), 0);
        }
        cr_expect_geq(fx.reads_of[MG_CG_CURRENT], 2);
        mg_set_free(s);
}

/* The set's heap times saturate: a clock 10 ms from its end (an injected
 * one; CLOCK_MONOTONIC gets there after 584,000 years) still ticks the due
 * guard once, and leaves it unscheduled instead of wrapping its next tick
 * into the past. */
Test(guard, set_at_the_end_of_the_clock) {
        mg_set *s;
        mg_guard *g = new_guard();
        uint64_t t;
        fx.now_usec = UINT64_MAX - 10 * MG_USEC_PER_MSEC;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cr_assert_eq(mg_set_add_guard(s, g), 0);
        cr_expect_geq(mg_set_process(s), 0);
        cr_expect_eq(fx.reads_of[MG_CG_CURRENT], 1, "the due guard ticked %u times", fx.reads_of[MG_CG_CURRENT]);
        cr_expect_eq(mg_set_get_timeout(s, &t), 0);
        cr_expect_eq(t, UINT64_MAX);
        mg_set_free(s);
}

/* In a set the states come from the set's pool: one given back is the next
 * one taken, zeroed. */
Test(guard, slow_states_come_from_the_set_pool) {
        mg_set *s = NULL;
        mg_guard *g = new_guard();
        struct mg_slow *first;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cr_assert_eq(mg_set_add_guard(s, g), 0);
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 1 * MG_MIB, 0, 2 * MG_MIB, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        first = g->slow_state;
        cr_assert_not_null(first);
        fixture_current(&fx, 100 * MG_MIB);
        for (int i = 0; i < 8; i++)
                (void) tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_assert_null(g->slow_state);
        fixture_current(&fx, 250 * MG_MIB);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(g->slow_state, first, "the pool's");
        cr_expect_eq(g->slow_state->policy.count, 1, "zeroed: one sample, this tick's");
        mg_set_free(s);
}

/* ---- restores off the set's thread ---------------------------------------
 * Writing memory.high below memory.current reclaims in the writer's write(2)
 * (seconds on 6.1 and 6.12, which ignore O_NONBLOCK there).  In a set that
 * write runs on the set's restore worker: the fixture's gate holds it, as
 * the reclaim would, while the test drives the set's other guard. */

static struct {
        char high[64];          /* memory.high when the last LEND_* came */
        int gate_passed;        /* the gate's count then */
} told;

static void on_restore_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        struct fixture *f = ud;
        on_event(g, ev, NULL);
        if (f && (ev->type == MG_EVENT_LEND_END || ev->type == MG_EVENT_LEND_EXPIRED)) {
                snprintf(told.high, sizeof(told.high), "%s", fixture_read(f, "memory.high"));
                told.gate_passed = fixture_load(&f->gate_passed);
        }
}

/* A guard for a 256 MiB actor on f, in s, on fx's clock. */
static mg_guard *set_guard(mg_set *s, struct fixture *f) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_restore_event;
        o.userdata = f;
        o.log = on_log;
        cr_assert_eq(mg_guard_new_internal(f->dir, &o, MG_CGROUP_ANY_FS, &f->io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        fixture_map_fds(f, &g->cg);
        cr_assert_eq(mg_set_add_guard(s, g), 0);
        return g;
}

/* One period of the set on the injected clock; the call itself must come
 * back at once (real time): a set's thread that waited for the gate would
 * wait up to its 10 s. */
static int step(mg_set *s) {
        uint64_t t0 = mg_mono_usec();
        int r;
        fx.now_usec += 250 * MG_USEC_PER_MSEC;
        r = mg_set_process(s);
        cr_assert_lt(mg_mono_usec() - t0, 1000 * MG_USEC_PER_MSEC, "mg_set_process() took %" PRIu64 " ms",
                     (mg_mono_usec() - t0) / 1000);
        return r;
}

/* Runs the set, without moving its clock, until the worker has handed
 * g's restore back and the set has finished it (5 s at most, real time). */
static void settle(mg_set *s, mg_guard *g) {
        for (int i = 0; i < 5000 && atomic_load(&g->lend.restore.job.state) != MG_JOB_IDLE; i++) {
                (void) mg_set_process(s);
                if (atomic_load(&g->lend.restore.job.state) != MG_JOB_IDLE)
                        (void) poll(NULL, 0, 1);
        }
        cr_assert_eq(atomic_load(&g->lend.restore.job.state), MG_JOB_IDLE, "the restore never came back");
}

/* The actor of f overshoots: 300 of 256 MiB, all anon. */
static void overshoot(struct fixture *f) {
        fixture_current(f, 300 * MG_MIB);
        fixture_stat(f, 290 * MG_MIB, 0, 3 * MG_MIB, 0, 0, 0, 0);
}

/* Guard A's lend expires; its restore blocks (the gate) on the worker.
 * Meanwhile guard B of the same set ticks every period and its overshoot is
 * killed at its first slow tick; A ticks on too, lent (kills paused: its
 * own overshoot is left alone).  MG_EVENT_LEND_EXPIRED comes after the
 * write, with memory.high exact; then A's kills resume. */
Test(guard, set_expiry_restore_blocks_no_other_guard) {
        struct fixture b;
        mg_set *s;
        uint64_t lend = 0;
        fixture_init(&b);
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *a = set_guard(s, &fx), *gb = set_guard(s, &b);
        cr_assert_eq(mg_guard_lend_begin(a, MG_UNLIMITED, 1000 * MG_USEC_PER_MSEC, &lend), 0);
        fixture_gate(&fx);
        for (int k = 0; k < 4; k++)
                cr_expect_geq(step(s), 0);
        cr_assert(fixture_gate_wait(&fx, 1, 5000), "A's restore never reached memory.high");
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 0, "told before the write");
        cr_expect(mg_guard_is_lent(a), "the lend counts as open while it is restored");
        cr_expect_eq(mg_guard_get_lend_id(a), lend);
        cr_expect_eq(mg_guard_lend_begin(a, 1, 0, NULL), -EBUSY);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");

        overshoot(&b);
        overshoot(&fx);
        unsigned a_reads = fx.reads_of[MG_CG_CURRENT], b_reads = b.reads_of[MG_CG_CURRENT];
        cr_expect_eq(step(s), 1, "B's overshoot is killed at its next tick");
        cr_expect_str_eq(fixture_read(&b, "cgroup.kill"), "1");
        cr_expect_gt(b.reads_of[MG_CG_CURRENT], b_reads, "B did not tick");
        for (int k = 0; k < 4; k++) {
                b_reads = b.reads; /* killing: it reads cgroup.events */
                cr_expect_geq(step(s), 0);
                cr_expect_gt(b.reads, b_reads, "B missed a tick, step %d", k);
        }
        cr_expect_gt(fx.reads_of[MG_CG_CURRENT], a_reads + 4, "A stopped ticking while restored");
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "A killed while its lend was restored");
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 0);
        cr_expect_eq(fixture_load(&fx.gate_waiting), 1, "one restore in flight, not one per tick");

        fixture_gate_open(&fx, 1);
        settle(s, a);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_eq(told.gate_passed, 1, "told before the write was done");
        cr_expect_str_eq(told.high, "241172480", "memory.high when told");
        cr_expect(seen.lend.restored);
        cr_expect_eq(seen.lend.found_high_bytes, MG_UNLIMITED);
        cr_expect_eq(seen.lend.id, lend);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect(!mg_guard_is_lent(a));
        cr_expect_eq(mg_guard_lend_end(a, lend), -ENOENT);
        cr_expect_eq(step(s), 1, "A's kills resume after the restore");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(fixture_load(&fx.gate_timeouts), 0);
        (void) gb;
        mg_set_free(s);
        fixture_cleanup(&b);
}

/* mg_set_remove() of a lent guard: out of the set at once, its restore
 * queued; the other guard ticks and kills on time while the write waits;
 * the removed guard is freed (its fds closed) only when the write is done,
 * and tells no one. */
Test(guard, set_remove_of_a_lent_guard_frees_it_after_its_restore) {
        struct fixture b;
        mg_set *s;
        fixture_init(&b);
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *a = set_guard(s, &fx);
        mg_guard *gb = set_guard(s, &b);
        cr_assert_eq(mg_guard_lend_begin(a, MG_UNLIMITED, 0, NULL), 0);
        cr_expect_geq(step(s), 0);
        int fds = fixture_open_fds();
        /* the other guard opens its slow path's files for its overshoot */
        int b_fds = (int) mg_cgroup_fds_open(&gb->cg);
        fixture_gate(&fx);
        uint64_t t0 = mg_mono_usec();
        cr_assert_eq(mg_set_remove(s, a), 0);
        cr_expect_lt(mg_mono_usec() - t0, 1000 * MG_USEC_PER_MSEC, "mg_set_remove() waited for the restore");
        cr_expect_eq(mg_set_size(s), 1);
        cr_assert(fixture_gate_wait(&fx, 1, 5000), "the removed guard's restore never reached memory.high");
        overshoot(&b);
        cr_expect_eq(step(s), 1, "the other guard's overshoot is killed at its next tick");
        cr_expect_str_eq(fixture_read(&b, "cgroup.kill"), "1");
        cr_expect_geq(step(s), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        /* the restore's own fd, and the guard's: all still open */
        cr_expect_geq(fixture_open_fds(), fds + 1, "the guard was freed before its restore");

        fixture_gate_open(&fx, 1);
        for (int k = 0; k < 5000 && fixture_open_fds() > fds - 5; k++) {
                (void) mg_set_process(s);
                (void) poll(NULL, 0, 1);
        }
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        fds += (int) mg_cgroup_fds_open(&gb->cg) - b_fds;
        cr_expect_leq(fixture_open_fds(), fds - 5, "the removed guard's fds stay open: %d of %d", fixture_open_fds(), fds);
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 0, "a removed guard told its end");
        cr_expect_eq(fixture_load(&fx.gate_timeouts), 0);
        mg_set_free(s);
        fixture_cleanup(&b);
}

static void *open_gate_later(void *ud) {
        struct fixture *f = ud;
        (void) poll(NULL, 0, 300);
        fixture_gate_open(f, 2);
        return NULL;
}

/* mg_set_free() is the end of the set: it waits for the restores still to
 * make, of a lent guard still in the set and of one removed before. */
Test(guard, set_free_waits_for_its_restores) {
        struct fixture b;
        mg_set *s;
        pthread_t t;
        fixture_init(&b);
        fixture_write(&fx, "memory.high", "241172480\n");
        fixture_write(&b, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *a = set_guard(s, &fx), *gb = set_guard(s, &b);
        cr_assert_eq(mg_guard_lend_begin(a, MG_UNLIMITED, 0, NULL), 0);
        cr_assert_eq(mg_guard_lend_begin(gb, 64 * MG_MIB, 0, NULL), 0);
        fixture_gate(&fx);
        fixture_gate(&b);
        cr_assert_eq(mg_set_remove(s, gb), 0);
        cr_assert_eq(pthread_create(&t, NULL, open_gate_later, &fx), 0);
        /* b's write waits at its own gate: let it through from here, once
         * a's is held */
        fixture_gate_open(&b, 1);
        uint64_t t0 = mg_mono_usec();
        mg_set_free(s);
        uint64_t took = mg_mono_usec() - t0;
        pthread_join(t, NULL);
        cr_expect_geq(took, 250 * MG_USEC_PER_MSEC, "mg_set_free() returned before the restore was written (%" PRIu64 " ms)",
                      took / 1000);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_str_eq(fixture_read(&b, "memory.high"), "241172480");
        cr_expect_eq(fixture_load(&fx.gate_timeouts), 0);
        cr_expect_eq(fixture_load(&b.gate_timeouts), 0);
        fixture_cleanup(&b);
}

/* mg_guard_lend_end() of a set's guard returns 1 once the restore is
 * queued: the lend counts as open until the set tells MG_EVENT_LEND_END.
 * Its checks are as before, and so is the rule that memory.high changed
 * from outside is left as found (read by the worker just before it would
 * write: nothing is written). */
Test(guard, set_lend_end_is_queued) {
        mg_set *s;
        uint64_t lend = 0;
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *a = set_guard(s, &fx);
        cr_assert_eq(mg_guard_lend_begin(a, 64 * MG_MIB, 0, &lend), 0);
        fixture_gate(&fx);
        uint64_t t0 = mg_mono_usec();
        cr_expect_eq(mg_guard_lend_end(a, lend), 1, "queued");
        cr_expect_lt(mg_mono_usec() - t0, 1000 * MG_USEC_PER_MSEC);
        cr_expect(mg_guard_is_lent(a));
        cr_expect_eq(mg_guard_get_lend_id(a), lend);
        cr_expect_eq(mg_guard_lend_begin(a, 1, 0, NULL), -EBUSY);
        cr_expect_eq(mg_guard_lend_end(a, lend), 1, "under way");
        cr_expect_eq(mg_guard_lend_end(a, lend + 1), -ESTALE);
        cr_assert(fixture_gate_wait(&fx, 1, 5000));
        cr_expect_eq(fixture_load(&fx.gate_waiting), 1, "one write per restore");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "308281344");
        cr_expect_geq(step(s), 0);
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 0);
        fixture_gate_open(&fx, 1);
        settle(s, a);
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1);
        cr_expect_str_eq(told.high, "241172480");
        cr_expect(seen.lend.restored);
        cr_expect_eq(seen.lend.found_high_bytes, 308281344);
        cr_expect(!mg_guard_is_lent(a));
        cr_expect_eq(mg_guard_lend_end(a, lend), -ENOENT);

        /* resized from outside during the lend: left as found, no write */
        fixture_gate_open(&fx, 1); /* the lend's own write */
        cr_assert_eq(mg_guard_lend_begin(a, 64 * MG_MIB, 0, &lend), 0);
        fixture_write(&fx, "memory.high", "209715200\n");
        int writes = fixture_load(&fx.high_writes);
        cr_expect_eq(mg_guard_lend_end(a, lend), 1);
        settle(s, a);
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 2);
        cr_expect_not(seen.lend.restored);
        cr_expect_eq(seen.lend.found_high_bytes, 200 * MG_MIB);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "209715200\n");
        cr_expect_eq(fixture_load(&fx.high_writes), writes, "memory.high written");
        cr_expect(strstr(seen.warning_log, "memory.high changed during the lend (209715200") != NULL, "%s",
                  seen.warning_log);
        cr_expect(!mg_guard_is_lent(a));
        cr_expect_eq(fixture_load(&fx.gate_timeouts), 0);
        mg_set_free(s);
}

/* The worker's write fails: reported once (MG_EVENT_ERROR), the lend stays
 * open (kills paused) and is retried at every tick, without a new report;
 * once the fault clears, the restore goes through and is told. */
Test(guard, set_restore_failure_is_reported_once_and_retried) {
        mg_set *s;
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *a = set_guard(s, &fx);
        cr_assert_eq(mg_guard_lend_begin(a, MG_UNLIMITED, 1000 * MG_USEC_PER_MSEC, NULL), 0);
        __atomic_store_n(&fx.fail_high_write_errno, EIO, __ATOMIC_SEQ_CST);
        overshoot(&fx);
        for (int k = 0; k < 8; k++) {
                cr_expect_geq(step(s), 0);
                settle(s, a);
        }
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "one report per streak");
        cr_expect_eq(seen.last_error, -EIO);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 0);
        cr_expect(mg_guard_is_lent(a));
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "killed while the lend was open");
        cr_expect_gt(fx.writes, 4, "not retried: %u writes", fx.writes);
        __atomic_store_n(&fx.fail_high_write_errno, 0, __ATOMIC_SEQ_CST);
        cr_expect_geq(step(s), 0);
        settle(s, a);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1);
        mg_set_free(s);
}
