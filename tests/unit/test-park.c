/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Park instead of kill (mg_guard_options.park_deadline_usec): the freeze,
 * MG_EVENT_PARK once cgroup.events says frozen, the worker's end of it (a
 * kill, a thaw judged at once against a new limit), and the guard's
 * promise (the deadline, the freeze wait, the bound on used while frozen,
 * no freezer at all), on the fixture tree with an injected clock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "fixture.h"
#include "guard.h"
#include "tick.h"
#include "util.h"

#define TICK (250 * MG_USEC_PER_MSEC)
#define DEADLINE (5 * MG_USEC_PER_SEC)

static struct fixture fx;
static struct fixture_seen seen;
/* What the MG_EVENT_PARK callback does: end the park at once. */
static struct {
        enum mg_park_action action;     /* 0: nothing */
        uint64_t new_limit;
        int ret;
} on_park;

static void on_log(int level, const char *msg, void *ud) {
        (void) ud;
        fixture_record_log(&seen, level, msg);
}

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) ud;
        fixture_record(&seen, ev);
        if (ev->type == MG_EVENT_PARK && on_park.action)
                on_park.ret = mg_guard_park_end(g, ev->kill->report.park_id, on_park.action, on_park.new_limit);
}

static void setup(void) {
        memset(&seen, 0, sizeof(seen));
        memset(&on_park, 0, sizeof(on_park));
        fixture_init(&fx);
        fixture_write(&fx, "cgroup.freeze", "0\n");
}

static void teardown(void) {
        fixture_cleanup(&fx);
}

TestSuite(park, .init = setup, .fini = teardown);

static mg_guard *new_guard(uint32_t flags) {
        struct mg_guard_options o;
        mg_guard *g = NULL;

        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_event;
        o.log = on_log;
        o.flags = flags;
        o.park_deadline_usec = DEADLINE;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        fixture_map_fds(&fx, &g->cg);
        return g;
}

static int tick_at(mg_guard *g, uint64_t dt_usec) {
        fx.now_usec += dt_usec;
        return mg_guard_tick(g);
}

static struct mg_stats stats_of(const mg_guard *g) {
        struct mg_stats st = { .size = sizeof(st) };
        cr_assert_eq(mg_guard_get_stats(g, &st), 0);
        return st;
}

/* 300 of 256 MiB: used 283 MiB + 4 KiB of sock. */
static void overshoot(void) {
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 2 * MG_MIB, 1 * MG_MIB, 4096, 0, 0);
}

static void frozen(bool yes) {
        fixture_write(&fx, "cgroup.events", yes ? "populated 1\nfrozen 1\n" : "populated 1\nfrozen 0\n");
}

/* The kill a park ended in, delivered: the cgroup empties. */
static void empties(mg_guard *g) {
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 1\n");
        tick_at(g, TICK);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
}

/* An overshoot parked and frozen: MG_EVENT_PARK told. */
static mg_guard *parked(void) {
        mg_guard *g = new_guard(0);

        overshoot();
        frozen(false);
        cr_assert_eq(tick_at(g, TICK), 1, "a park is an action");
        cr_assert_str_eq(fixture_read(&fx, "cgroup.freeze"), "1");
        cr_assert_eq(seen.n[MG_EVENT_PARK], 0, "not before cgroup.events says frozen");
        frozen(true);
        cr_assert_eq(tick_at(g, TICK), 0);
        cr_assert_eq(seen.n[MG_EVENT_PARK], 1);
        return g;
}

Test(park, an_overshoot_is_frozen_and_told_once_frozen) {
        mg_guard *g = parked();
        uint64_t t = fx.now_usec;

        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "frozen, not killed");
        cr_expect_eq(seen.park.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.park.kill_usec, 0, "not killed");
        cr_expect_eq(seen.park.report.park_id, 1);
        cr_expect_eq(seen.park.report.park_usec, t - TICK);
        cr_expect_eq(seen.park.report.frozen_usec, t);
        cr_expect_eq(seen.park.report.park_end, MG_PARK_OPEN);
        cr_expect_eq(seen.park.report.used_bytes, 283 * MG_MIB + 4096);
        cr_expect_eq(mg_guard_get_park_id(g), 1);
        /* parked: ticks read memory.current, told nothing more, kill nothing */
        for (int i = 0; i < 4; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 1);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_eq(stats_of(g).parks, 1);
        char text[1024];
        cr_expect_gt(mg_kill_record_format(&seen.park, text, sizeof(text)), 0);
        cr_expect(strstr(text, " parked: used memory above its limit") && strstr(text, "frozen 250ms after cgroup.freeze"),
                  "%s", text);
        mg_guard_free(g);
}

Test(park, the_worker_ends_it_with_a_kill) {
        mg_guard *g = parked();
        char text[1024];

        /* the worker's save, in a lend: its end starts the windows over */
        uint64_t lend;
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend), 0);
        fx.now_usec += 700 * MG_USEC_PER_MSEC;
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_eq(mg_guard_park_end(g, 2, MG_PARK_KILL, 0), -ESTALE, "another park's id");
        cr_expect_eq(mg_guard_park_end(g, 1, 7, 0), -EINVAL);
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_KILL, 0), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1", "killed frozen: SIGKILL reaches frozen tasks");
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_KILL, 0), -ENOENT, "over");
        empties(g);
        cr_expect_eq(seen.kill.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.kill.detect_usec, seen.park.detect_usec, "the park's detection");
        cr_expect_neq(seen.kill.detect_usec, 0);
        cr_expect_eq(seen.kill.report.park_id, 1);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_KILL);
        cr_expect_eq(seen.kill.report.park_end_usec - seen.kill.report.park_usec, TICK + 700 * MG_USEC_PER_MSEC);
        cr_expect_gt(mg_kill_record_format(&seen.kill, text, sizeof(text)), 0);
        cr_expect(strstr(text, "parked 950ms (frozen), killed at the worker's request"), "%s", text);
        struct mg_stats st = stats_of(g);
        cr_expect_eq(st.parks_killed, 1);
        cr_expect_eq(st.parks_expired, 0);
        cr_expect_eq(st.kills_overshoot, 1);
        mg_guard_free(g);
}

Test(park, a_thaw_with_a_larger_limit_watches_it_again) {
        mg_guard *g = parked();
        struct mg_guard_options o = { .size = sizeof(o) };

        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_THAW, 512 * MG_MIB), 0);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "0");
        cr_expect_eq(seen.n[MG_EVENT_THAW], 1);
        cr_expect_eq(seen.thaw.report.park_end, MG_PARK_END_THAW);
        cr_expect_eq(seen.thaw_read.limit_bytes, 512 * MG_MIB, "the read that judged it, against the new limit");
        cr_expect_eq(seen.thaw_read.used_bytes, 283 * MG_MIB + 4096);
        cr_expect_eq(mg_guard_get_park_id(g), 0);
        cr_assert_eq(mg_guard_get_options(g, &o), 0);
        cr_expect_eq(o.limit_bytes, 512 * MG_MIB);
        cr_expect_eq(o.margin_bytes, 32 * MG_MIB, "the margin keeps its share");
        /* 300 MiB of 512: below the line, nothing to judge */
        for (int i = 0; i < 8; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(stats_of(g).parks_thawed, 1);
        /* over the new limit: the next overshoot parks again, a new id */
        fixture_current(&fx, 560 * MG_MIB);
        fixture_stat(&fx, 530 * MG_MIB, 10 * MG_MIB, 2 * MG_MIB, 1 * MG_MIB, 4096, 0, 0);
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 2, "cgroup.events still says frozen 1 in the fixture");
        cr_expect_eq(seen.park.report.park_id, 2);
        mg_guard_free(g);
}

Test(park, a_thaw_that_leaves_it_over_its_limit_is_a_kill_at_once) {
        mg_guard *g = parked();

        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_THAW, 0), 1, "same limit, still over it");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1", "never thawed");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(seen.n[MG_EVENT_THAW], 0);
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_OVER_LIMIT);
        cr_expect_eq(stats_of(g).parks_expired, 1);
        mg_guard_free(g);
}

Test(park, a_thaw_from_the_park_callback) {
        mg_guard *g = new_guard(0);

        on_park.action = MG_PARK_THAW;
        on_park.new_limit = 1024 * MG_MIB;
        overshoot();
        frozen(true);
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 1, "frozen at once: told in the same tick");
        cr_expect_eq(on_park.ret, 0);
        cr_expect_eq(seen.n[MG_EVENT_THAW], 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "0");
        cr_expect_eq(tick_at(g, TICK), 0);
        mg_guard_free(g);
}

Test(park, the_deadline_kills) {
        mg_guard *g = parked();
        uint64_t t0 = seen.park.report.park_usec;
        int killed = 0;

        while (fx.now_usec - t0 < DEADLINE + TICK && !killed)
                killed = tick_at(g, TICK);
        cr_expect_eq(killed, 1);
        cr_expect_eq(fx.now_usec - t0, DEADLINE, "at the deadline, not a tick later");
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_DEADLINE);
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_THAW, 0), -ENOENT, "a worker late with its answer");
        cr_expect_eq(stats_of(g).parks_expired, 1);
        mg_guard_free(g);
}

Test(park, not_frozen_within_the_kill_wait_kills) {
        mg_guard *g = new_guard(0);
        struct mg_guard_options o = { .size = sizeof(o) };
        int killed = 0, ticks = 0;

        cr_assert_eq(mg_guard_get_options(g, &o), 0);
        overshoot();
        frozen(false);
        cr_assert_eq(tick_at(g, TICK), 1);
        while (!killed && ticks++ < 100)
                killed = tick_at(g, TICK);
        cr_expect_eq(killed, 1);
        cr_expect_eq((uint64_t) ticks * TICK, o.kill_wait_usec > 3 * MG_USEC_PER_SEC ? o.kill_wait_usec
                                                                                     : 3 * MG_USEC_PER_SEC,
                     "the kill wait, at least 3 s: a throttled task sleeps up to 2 s before the freezer takes it");
        cr_expect_eq(seen.n[MG_EVENT_PARK], 0, "never frozen: never told as parked");
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_NOT_FROZEN);
        cr_expect_eq(seen.kill.report.frozen_usec, 0);
        struct mg_stats st = stats_of(g);
        cr_expect_eq(st.parks, 1, "begun at the freeze");
        cr_expect_eq(st.parks_expired, 1);
        mg_guard_free(g);
}

Test(park, used_growing_past_the_bound_while_frozen_kills) {
        mg_guard *g = parked();

        /* page cache above the bound is not used: no kill */
        fixture_current(&fx, 400 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 110 * MG_MIB, 2 * MG_MIB, 1 * MG_MIB, 4096, 0, 0);
        cr_expect_eq(tick_at(g, TICK), 0);
        /* socket buffers charged while frozen: 283 + 40 MiB > 256 + 32 */
        fixture_stat(&fx, 280 * MG_MIB, 70 * MG_MIB, 2 * MG_MIB, 1 * MG_MIB, 40 * MG_MIB, 0, 0);
        cr_expect_eq(tick_at(g, TICK), 1);
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_BOUND);
        cr_expect_eq(seen.kill.report.stat.sock, 40 * MG_MIB, "the read that saw it");
        cr_expect_eq(seen.kill.report.park_id, 1);
        mg_guard_free(g);
}

Test(park, an_actor_frozen_past_the_bound_stays_parked_while_it_grows_nothing) {
        mg_guard *g = new_guard(0);

        fixture_current(&fx, 330 * MG_MIB);
        fixture_stat(&fx, 300 * MG_MIB, 10 * MG_MIB, 2 * MG_MIB, 1 * MG_MIB, 4096, 0, 0);
        frozen(true);
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 1, "parked at 303 MiB of 256");
        for (int i = 0; i < 4; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        /* 5 MiB more while frozen: a socket's queue */
        fixture_stat(&fx, 300 * MG_MIB, 10 * MG_MIB, 2 * MG_MIB, 1 * MG_MIB, 5 * MG_MIB, 0, 0);
        cr_expect_eq(tick_at(g, TICK), 1);
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_BOUND);
        mg_guard_free(g);
}

Test(park, a_thaw_that_cannot_be_written_keeps_the_park_and_its_limit) {
        mg_guard *g = parked();
        struct mg_guard_options o = { .size = sizeof(o) };

        fx.fail_write_errno = EBUSY;
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_THAW, 512 * MG_MIB), -EBUSY);
        fx.fail_write_errno = 0;
        cr_expect_eq(mg_guard_get_park_id(g), 1, "still parked");
        cr_assert_eq(mg_guard_get_options(g, &o), 0);
        cr_expect_eq(o.limit_bytes, 256 * MG_MIB, "under the limit it had");
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_THAW, 512 * MG_MIB), 0, "again");
        cr_expect_eq(seen.n[MG_EVENT_THAW], 1);
        mg_guard_free(g);
}

Test(park, without_a_freezer_it_kills_at_once) {
        mg_guard *g = new_guard(0);

        fixture_remove(&fx, "cgroup.freeze");
        overshoot();
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(seen.n[MG_EVENT_PARK], 0);
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_NO_FREEZE);
        cr_expect(strstr(seen.log, "cannot park"), "%s", seen.log);
        cr_expect_eq(stats_of(g).parks_expired, 0, "not a park");
        mg_guard_free(g);
}

Test(park, a_dry_run_freezes_nothing) {
        mg_guard *g = new_guard(MG_GUARD_DRY_RUN);

        overshoot();
        cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "0\n");
        mg_guard_free(g);
}

Test(park, a_guard_freed_while_parked_thaws_its_actor) {
        mg_guard *g = parked();

        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "0");
        cr_expect(strstr(seen.log, "left open by the guard's end: thawed"), "%s", seen.log);
}

Test(park, the_deadline_is_bounded) {
        struct mg_guard_options o;
        mg_guard *g = NULL;

        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.park_deadline_usec = MG_PARK_MAX_USEC + 1;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EINVAL);
}
