/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard-burnin's two guards of an actor (tools/burnin/guards.h) on a
 * fixture tree shaped as its cgroup: a 64 MiB actor, memory.high 57.6 MiB
 * (90 %), memory.max 128 MiB.  A chaos overshoot grows anon in 8 processes;
 * the kernel throttles them at memory.high while reclaim takes the actor's
 * mapped text and its threads fault it back.  There:
 *  - the actor's own guard (its limit at memory.max, lends only) reaches a
 *    stall verdict all the same, its line following memory.high; it must
 *    kill nothing: a kill from inside the cgroup takes its own process and
 *    its record with it, and the run sees a chaos actor dead of SIGKILL
 *    that no guard told (the half-hour run of issue 38, actor 22);
 *  - the worker's guard kills the overshoot once used passes the actor
 *    size, and tells it.
 * And the parks among the chaos kills (tools/burnin/parks.h): which
 * overshoots are parked, and the per-slot figures of their time to freeze,
 * to save and to free.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>

#include "fixture.h"
#include "guard-suite.h"
#include "guards.h"
#include "parks.h"

#define ACTOR (64 * MG_MIB)

TestSuite(burnin, .init = setup, .fini = teardown);

/* The actor's cgroup: its limits as main.c writes them. */
static void actor_limits(void) {
        char v[32];
        snprintf(v, sizeof(v), "%" PRIu64 "\n", bi_actor_high_bytes(ACTOR));
        fixture_write(&fx, "memory.high", v);
        snprintf(v, sizeof(v), "%" PRIu64 "\n", bi_actor_max_bytes(ACTOR));
        fixture_write(&fx, "memory.max", v);
}

static mg_guard *guard_with(struct mg_guard_options *o) {
        mg_guard *g = NULL;
        o->on_event = on_event;
        o->log = on_log;
        cr_assert_eq(mg_guard_new_internal(fx.dir, o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        fixture_map_fds(&fx, &g->cg);
        fixture_reset_counts(&fx);
        return g;
}

/* Tick i of the chaos actor held at memory.high: memory.current 2.4 MiB
 * over it, used (anon + kernel) below the actor size; its 3 MiB of cache
 * mapped (program text) and restored at 400 KiB a tick; high events and
 * memory pressure (60 %) rising, as the throttle's sleeps make them. */
static int tick_held_at_high(mg_guard *g, int i) {
        fx.mapped = 3 * MG_MIB;
        fx.restore_file = (uint64_t) i * 100;
        fixture_current(&fx, 60 * MG_MIB);
        fixture_stat(&fx, 55 * MG_MIB, 3 * MG_MIB, 2 * MG_MIB, 0, 0, 0, 0);
        fixture_events(&fx, (uint64_t) i * 17, 0, 0);
        fixture_psi(&fx, "memory.pressure", (uint64_t) i * 150 * MG_USEC_PER_MSEC);
        return tick_at(g, 250 * MG_USEC_PER_MSEC);
}

Test(burnin, limits_of_an_actor) {
        cr_expect_eq(bi_actor_high_bytes(ACTOR), 58980 * UINT64_C(1024), "57.6 MiB, in whole pages");
        cr_expect_eq(bi_actor_max_bytes(ACTOR), 128 * MG_MIB);
}

Test(burnin, own_guard_held_at_high_kills_nothing) {
        struct mg_guard_options o;
        cr_assert_eq(bi_actor_guard_options(ACTOR, &o), 0);
        cr_expect_eq(o.limit_bytes, 128 * MG_MIB, "its limit is memory.max");
        actor_limits();
        mg_guard *g = guard_with(&o);
        for (int i = 1; i <= 80 && seen.n[MG_EVENT_KILL_DRY_RUN] == 0; i++)
                cr_expect_eq(tick_held_at_high(g, i), 0, "tick %d acted", i);
        /* the verdict a kill would follow: its limit at memory.max did not
         * keep it from one */
        cr_assert_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 1, "a stall at memory.high is judged");
        cr_expect_eq(seen.dry.reason, MG_KILL_STALL);
        /* and no kill: cgroup.kill never written, nothing to tell */
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 0);
        mg_guard_free(g);
}

Test(burnin, own_guard_still_lends) {
        struct mg_guard_options o;
        uint64_t lend = 0;
        char high[32];
        cr_assert_eq(bi_actor_guard_options(ACTOR, &o), 0);
        actor_limits();
        snprintf(high, sizeof(high), "%" PRIu64, bi_actor_high_bytes(ACTOR));
        mg_guard *g = guard_with(&o);
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), high, "its value back");
        mg_guard_free(g);
}

Test(burnin, worker_guard_kills_the_overshoot) {
        struct mg_guard_options o;
        cr_assert_eq(bi_worker_guard_options(ACTOR, &o), 0);
        cr_expect_eq(o.flags & MG_GUARD_DRY_RUN, 0u);
        actor_limits();
        mg_guard *g = guard_with(&o);
        cr_expect_eq(tick_held_at_high(g, 1), 0);
        /* the growth passes the actor size: used 64.5 MiB */
        fixture_current(&fx, 67 * MG_MIB);
        fixture_stat(&fx, 62 * MG_MIB + MG_MIB / 2, 3 * MG_MIB, 2 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 0);
        mg_guard_free(g);
}

Test(burnin, worker_park_guard_waits_for_the_freeze) {
        struct mg_guard_options o, w;
        cr_assert_eq(bi_worker_guard_options(ACTOR, &w), 0);
        cr_assert_eq(bi_worker_park_guard_options(ACTOR, 120 * MG_USEC_PER_SEC, &o), 0);
        cr_expect_eq(o.park_deadline_usec, 120 * MG_USEC_PER_SEC);
        cr_expect_eq(o.kill_wait_usec, BI_PARK_FREEZE_WAIT_USEC, "the library's 2 s at 64 MiB is one throttle sleep");
        cr_expect_eq(o.limit_bytes, w.limit_bytes);
        cr_expect_eq(o.flags, w.flags, "it kills: no dry run");
        cr_assert_eq(bi_worker_park_guard_options(UINT64_C(16) * 1024 * MG_MIB, 120 * MG_USEC_PER_SEC, &o), 0);
        cr_expect_eq(o.kill_wait_usec, 18 * MG_USEC_PER_SEC, "a longer default kept");
        cr_expect_eq(bi_worker_park_guard_options(ACTOR, 0, &o), -EINVAL);
        /* and the guard takes them: parks, with that wait */
        actor_limits();
        cr_assert_eq(bi_worker_park_guard_options(ACTOR, 120 * MG_USEC_PER_SEC, &o), 0);
        mg_guard *g = guard_with(&o);
        struct mg_guard_options got = { .size = sizeof(got) };
        cr_assert_eq(mg_guard_get_options(g, &got), 0);
        cr_expect_eq(got.kill_wait_usec, BI_PARK_FREEZE_WAIT_USEC);
        cr_expect_eq(got.park_deadline_usec, 120 * MG_USEC_PER_SEC);
        mg_guard_free(g);
}

/* ---- parks (parks.h): pure ---- */

TestSuite(burnin_parks);

Test(burnin_parks, the_first_n_of_a_step_are_parked) {
        cr_expect(bi_park_pick(0, 2, 1));
        cr_expect_not(bi_park_pick(1, 2, 1), "the second overshoot is killed");
        cr_expect(bi_park_pick(1, 2, 2));
        cr_expect_not(bi_park_pick(0, 2, 0), "--park 0: none");
        cr_expect_not(bi_park_pick(2, 2, 3), "never past the step's overshoots");
}

#define S MG_USEC_PER_SEC
#define MS MG_USEC_PER_MSEC

/* A park from t0 on (run seconds): frozen after freeze_ms, saved in
 * save_ms, free_ms from the park's end to the cgroup empty. */
static struct bi_park park_at(uint64_t t0, uint64_t freeze_ms, uint64_t save_ms, uint64_t free_ms) {
        uint64_t t = 1000 * S + t0 * S;
        struct bi_park p = { .actor = 1, .park_usec = t, .frozen_usec = t + freeze_ms * MS, .bad_page = -1 };
        p.save_begin_usec = p.frozen_usec + MS;
        p.save_end_usec = p.save_begin_usec + save_ms * MS;
        p.park_end_usec = p.save_end_usec + MS;
        p.empty_usec = p.park_end_usec + free_ms * MS;
        return p;
}

Test(burnin_parks, phases_from_the_record) {
        struct bi_park p = park_at(5, 30, 1200, 80);
        uint64_t v = 0;
        cr_assert_eq(bi_park_phase_usec(&p, BI_PARK_FREEZE, &v), 0);
        cr_expect_eq(v, 30 * MS);
        cr_assert_eq(bi_park_phase_usec(&p, BI_PARK_SAVE, &v), 0);
        cr_expect_eq(v, 1200 * MS);
        cr_assert_eq(bi_park_phase_usec(&p, BI_PARK_FREE, &v), 0);
        cr_expect_eq(v, 80 * MS);
        cr_expect_str_eq(bi_park_phase_to_string(BI_PARK_SAVE), "save");
        /* never frozen (the deadline's kill, or NOT_FROZEN): no freeze figure */
        p.frozen_usec = 0;
        v = 7;
        cr_expect_eq(bi_park_phase_usec(&p, BI_PARK_FREEZE, &v), -ENODATA);
        cr_expect_eq(v, 7u, "not written on failure");
        /* ends out of order are no figure either */
        p.empty_usec = p.park_end_usec - 1;
        cr_expect_eq(bi_park_phase_usec(&p, BI_PARK_FREE, &v), -ENODATA);
}

Test(burnin_parks, slot_is_the_cgroup_empty) {
        struct bi_park p = park_at(9, 30, 1500, 80); /* empty at 10.6 s */
        cr_expect_eq(bi_park_slot(&p, 1000 * S, 10 * S), 1u);
        p.empty_usec = 0; /* not killed: its last time reached, the park's end */
        cr_expect_eq(bi_park_slot(&p, 1000 * S, 10 * S), 1u);
        p.park_end_usec = p.save_end_usec = 0;
        cr_expect_eq(bi_park_slot(&p, 1000 * S, 10 * S), 0u, "frozen at 9 s");
}

Test(burnin_parks, slot_stats_nearest_rank) {
        struct bi_park parks[12];
        uint64_t scratch[12];
        struct bi_park_stats st;
        /* slot 0 (0-60 s): ten parks saving 100..1000 ms; slot 1: two */
        for (int i = 0; i < 10; i++)
                parks[i] = park_at(2 + (uint64_t) i, 20 + (uint64_t) i, 100 * (uint64_t) (10 - i), 50);
        parks[10] = park_at(70, 40, 3000, 60);
        parks[11] = park_at(80, 41, 2000, 90);
        parks[9].frozen_usec = 0; /* a park without a freeze: no freeze figure, the rest kept */
        cr_assert_eq(bi_park_slot_stats(parks, 12, 1000 * S, 60 * S, 0, BI_PARK_SAVE, scratch, &st), 0);
        cr_expect_eq(st.n, 10u);
        cr_expect_eq(st.p50, 500 * MS);
        cr_expect_eq(st.p90, 900 * MS);
        cr_expect_eq(st.p99, 1000 * MS);
        cr_expect_eq(st.max, 1000 * MS);
        cr_assert_eq(bi_park_slot_stats(parks, 12, 1000 * S, 60 * S, 0, BI_PARK_FREEZE, scratch, &st), 0);
        cr_expect_eq(st.n, 9u);
        cr_expect_eq(st.max, 28 * MS);
        cr_assert_eq(bi_park_slot_stats(parks, 12, 1000 * S, 60 * S, 1, BI_PARK_FREE, scratch, &st), 0);
        cr_expect_eq(st.n, 2u);
        cr_expect_eq(st.p50, 60 * MS);
        cr_expect_eq(st.max, 90 * MS);
        cr_assert_eq(bi_park_slot_stats(parks, 12, 1000 * S, 60 * S, 5, BI_PARK_SAVE, scratch, &st), 0);
        cr_expect_eq(st.n, 0u, "an empty slot");
        cr_expect_eq(st.max, 0u);
        cr_expect_eq(bi_park_slot_stats(parks, 12, 1000 * S, 0, 0, BI_PARK_SAVE, scratch, &st), -EINVAL);
}
