/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reclaim actuator on the fixture tree (memguard/reclaim.c): its
 * options, when a dose goes and what it writes, what it tells, and when
 * none goes (a lend, the cool-down, an episode already dosed, a kernel
 * without memory.reclaim, a target that went).  The decisions alone are in
 * test-policy.c; what the kernel reclaims is the kernel suite's
 * (tests/kernel/reclaim.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "guard-suite.h"
#include "set.h"
#include "tune.h"

TestSuite(reclaim, .init = setup, .fini = teardown);

#define DOSE (96 * MG_MIB)

static mg_guard *armed(struct mg_guard_options *o) {
        mg_guard *g = NULL;
        o->on_event = on_event;
        o->log = on_log;
        fixture_write(&fx, "memory.reclaim", "");
        cr_assert_eq(mg_guard_new_internal(fx.dir, o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        fixture_map_fds(&fx, &g->cg);
        fixture_reset_counts(&fx);
        return g;
}

static mg_guard *armed_pressure(void) {
        struct mg_guard_options o;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.reclaim_dose_bytes = DOSE;
        return armed(&o);
}

/* One second of ticks with the memory stall total at *total, which rises
 * by rise_usec over the second. */
static void second(mg_guard *g, uint64_t *total, uint64_t rise_usec) {
        *total += rise_usec;
        fixture_psi(&fx, "memory.pressure", *total);
        for (int i = 0; i < 4; i++)
                cr_assert_geq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
}

Test(reclaim, options_default_to_seed_002_and_refuse_what_cannot_be) {
        struct mg_guard_options o, r;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        cr_assert_eq(mg_options_resolve(&o, &r), 0);
        cr_expect_eq(r.reclaim_dose_bytes, 0, "off unless asked");
        cr_expect_eq(r.reclaim_some_usec, 0);
        cr_expect_eq(r.reclaim_windows, 0);

        o.reclaim_dose_bytes = DOSE;
        cr_assert_eq(mg_options_resolve(&o, &r), 0);
        cr_expect_eq(r.reclaim_some_usec, 1000, "1 ms of some stall a window");
        cr_expect_eq(r.reclaim_windows, 3);
        cr_expect_eq(r.reclaim_cooldown_usec, 10 * MG_USEC_PER_SEC);

        o.reclaim_headroom_bytes = 32 * MG_MIB;
        cr_assert_eq(mg_options_resolve(&o, &r), 0);
        cr_expect_eq(r.reclaim_some_usec, 0, "headroom alone: no pressure predicate");
        cr_expect_eq(r.reclaim_windows, 0);

        o.reclaim_cooldown_usec = MG_USEC_PER_SEC;
        cr_expect_eq(mg_options_resolve(&o, &r), -EINVAL, "a cool-down with no predicate to cool");
        o.reclaim_cooldown_usec = 0;
        o.reclaim_headroom_bytes = 256 * MG_MIB;
        cr_expect_eq(mg_options_resolve(&o, &r), -EINVAL, "headroom as large as the limit");
        o.reclaim_headroom_bytes = 32 * MG_MIB;
        o.reclaim_cgroup = "/sys/fs/cgroup/background";
        cr_expect_eq(mg_options_resolve(&o, &r), -EINVAL, "headroom is the actor's own");
        o.reclaim_headroom_bytes = 0;
        o.reclaim_windows = MG_RECLAIM_WINDOWS_MAX + 1;
        cr_expect_eq(mg_options_resolve(&o, &r), -EINVAL);
        o.reclaim_windows = 0;
        o.reclaim_cgroup = "";
        cr_expect_eq(mg_options_resolve(&o, &r), -EINVAL);
        o.reclaim_cgroup = NULL;
        o.reclaim_dose_bytes = 0;
        o.reclaim_some_usec = 500;
        cr_expect_eq(mg_options_resolve(&o, &r), -EINVAL, "a predicate with no dose is a mistake");
}

Test(reclaim, without_memory_reclaim_the_guard_is_refused) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.reclaim_dose_bytes = DOSE;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EOPNOTSUPP);
        cr_expect_null(g);
        /* headroom alone needs no PSI; the pressure predicate does */
        fixture_write(&fx, "memory.reclaim", "");
        fixture_remove(&fx, "memory.pressure");
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EOPNOTSUPP);
        o.reclaim_headroom_bytes = 32 * MG_MIB;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_free(g);
}

Test(reclaim, three_windows_of_a_millisecond_write_one_dose) {
        mg_guard *g = armed_pressure();
        uint64_t total = 5000000;
        struct mg_stats st = { .size = sizeof(st) };

        second(g, &total, 0); /* the first read: the baseline */
        second(g, &total, 2000);
        second(g, &total, 1500);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 0, "two windows are not three");
        second(g, &total, 1000);
        cr_assert_eq(seen.n[MG_EVENT_RECLAIM], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.reclaim"), "100663296");
        cr_expect_eq(seen.reclaim.why, MG_RECLAIM_PRESSURE);
        cr_expect_eq(seen.reclaim.asked_bytes, DOSE);
        cr_expect_eq(seen.reclaim.error, 0);
        cr_expect_eq(seen.reclaim.windows, 3);
        cr_expect_eq(seen.reclaim.some_usec[0], 2000);
        cr_expect_eq(seen.reclaim.some_usec[2], 1000);
        cr_expect_eq(seen.reclaim.achieved_bytes, 0, "the fixture's pgsteal does not move");
        cr_expect_not(seen.reclaim.counted, "nothing achieved: the dose does not count");
        cr_expect_str_eq(seen.reclaim.target, fx.dir);
        cr_expect(strstr(seen.log, "reclaim: a dose of 98304 KiB"), "the log says it: %s", seen.log);

        /* The episode goes on: no second dose, cool-down or not. */
        for (int i = 0; i < 15; i++)
                second(g, &total, 5000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 1, "once per episode");
        /* A window without stall ends it; the next episode doses again. */
        second(g, &total, 999);
        for (int i = 0; i < 3; i++)
                second(g, &total, 5000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 2);
        cr_assert_eq(mg_guard_get_stats(g, &st), 0);
        cr_expect_eq(st.reclaims, 2);
        mg_guard_free(g);
}

Test(reclaim, the_cool_down_holds_a_new_episode_until_it_ends) {
        mg_guard *g = armed_pressure();
        uint64_t total = 0;

        second(g, &total, 0);
        for (int i = 0; i < 3; i++)
                second(g, &total, 3000);
        cr_assert_eq(seen.n[MG_EVENT_RECLAIM], 1);
        /* broken at once, and held again: 4 s after the dose, within 10 s */
        second(g, &total, 0);
        for (int i = 0; i < 3; i++)
                second(g, &total, 3000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 1, "within the cool-down");
        for (int i = 0; i < 4; i++)
                second(g, &total, 3000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 1, "still 9 s after the dose");
        second(g, &total, 3000);
        second(g, &total, 3000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 2, "the predicate still holds once the cool-down is over");
        mg_guard_free(g);
}

Test(reclaim, nothing_is_reclaimed_while_a_lend_is_open) {
        mg_guard *g = armed_pressure();
        uint64_t total = 0, lend;

        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend), 0);
        second(g, &total, 0);
        for (int i = 0; i < 6; i++)
                second(g, &total, 4000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 0, "a snapshot write lends: no dose under it");
        cr_expect_str_eq(fixture_read(&fx, "memory.reclaim"), "");
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        second(g, &total, 4000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 1, "the episode's dose once the lend is over");
        mg_guard_free(g);
}

Test(reclaim, the_fast_path_reads_pressure_once_a_second_only_when_armed) {
        mg_guard *g = armed_pressure();
        uint64_t total = 0;

        fixture_current(&fx, 100 * MG_MIB);
        for (int i = 0; i < 10; i++)
                second(g, &total, 0);
        cr_expect_eq(fx.reads_of[MG_CG_CURRENT], 40);
        /* the target's memory.pressure is the guard's own file, opened
         * again: every read but memory.current's is the actuator's */
        cr_expect_eq(fx.reads, 40 + 10, "memory.current each tick, memory.pressure each second");
        mg_guard_free(g);
}

Test(reclaim, headroom_doses_what_brings_the_actor_back_from_its_cache) {
        struct mg_guard_options o;
        mg_guard *g;

        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.reclaim_dose_bytes = 32 * MG_MIB;
        o.reclaim_headroom_bytes = 96 * MG_MIB; /* the line: 160 MiB */
        g = armed(&o);
        /* below the headroom line: nothing read but memory.current */
        fixture_current(&fx, 150 * MG_MIB);
        fixture_stat(&fx, 60 * MG_MIB, 100 * MG_MIB, MG_MIB, 0, 0, 10 * MG_MIB, 0);
        cr_assert_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(fx.reads, 1);
        /* 12 MiB into the headroom */
        fixture_current(&fx, 172 * MG_MIB);
        cr_assert_geq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_assert_eq(seen.n[MG_EVENT_RECLAIM], 1);
        cr_expect_eq(seen.reclaim.why, MG_RECLAIM_HEADROOM);
        cr_expect_eq(seen.reclaim.asked_bytes, 12 * MG_MIB);
        cr_expect_eq(seen.reclaim.current_bytes, 172 * MG_MIB);
        cr_expect_eq(seen.reclaim.file_bytes, 90 * MG_MIB, "dirty pages do not count");
        cr_expect_str_eq(fixture_read(&fx, "memory.reclaim"), "12582912 swappiness=0", "file pages only");
        /* at most once a second */
        cr_assert_geq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 1);
        /* bounded by what clean cache there is, and by the dose */
        fixture_current(&fx, 255 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 20 * MG_MIB, MG_MIB, 0, 0, 0, 0);
        for (int i = 0; i < 4; i++)
                cr_assert_geq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 2);
        cr_expect_eq(seen.reclaim.asked_bytes, 20 * MG_MIB, "no more than its cache");
        fixture_stat(&fx, 100 * MG_MIB, 150 * MG_MIB, MG_MIB, 0, 0, 0, 0);
        for (int i = 0; i < 4; i++)
                cr_assert_geq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 3);
        cr_expect_eq(seen.reclaim.asked_bytes, 32 * MG_MIB, "no more than a dose");
        /* less than a MiB into it: not worth a write */
        fixture_current(&fx, 160 * MG_MIB + 512 * MG_KIB);
        for (int i = 0; i < 8; i++)
                cr_assert_geq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 3);
        mg_guard_free(g);
}

Test(reclaim, a_target_that_went_stops_the_actuator) {
        mg_guard *g = armed_pressure();
        uint64_t total = 0;

        second(g, &total, 0);
        fx.fail_write_errno = ENODEV;
        for (int i = 0; i < 3; i++)
                second(g, &total, 2000);
        cr_assert_eq(seen.n[MG_EVENT_RECLAIM], 1);
        cr_expect_eq(seen.reclaim.error, -ENODEV);
        cr_expect_not(seen.reclaim.counted);
        cr_expect(strstr(seen.warning_log, "is gone: no more doses"), "%s", seen.warning_log);
        fx.fail_write_errno = 0;
        second(g, &total, 0);
        for (int i = 0; i < 5; i++)
                second(g, &total, 2000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 1, "stopped");
        mg_guard_free(g);
}

Test(reclaim, a_dose_that_took_less_is_told_not_counted) {
        mg_guard *g = armed_pressure();
        uint64_t total = 0;

        second(g, &total, 0);
        fx.fail_write_errno = EAGAIN;
        for (int i = 0; i < 3; i++)
                second(g, &total, 2000);
        fx.fail_write_errno = 0;
        cr_assert_eq(seen.n[MG_EVENT_RECLAIM], 1);
        cr_expect_eq(seen.reclaim.error, -EAGAIN);
        cr_expect_eq(seen.warnings, 0, "less than asked is the kernel's answer, not a failure");
        mg_guard_free(g);
}

/* In a set, the dose is the worker's: the set's thread only queues it,
 * and tells it when mg_set_process() sees the job done. */
Test(reclaim, in_a_set_the_worker_writes_the_dose) {
        struct mg_guard_options o;
        mg_set *s = NULL;
        mg_guard *g = NULL;
        uint64_t total = 0;

        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.reclaim_dose_bytes = DOSE;
        o.on_event = on_event;
        fixture_write(&fx, "memory.reclaim", "");
        cr_assert_eq(mg_set_add_internal(s, fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        /* the guard's ticks, made by the test on its clock, as the set's
         * thread would */
        mg_guard_set_clock(g, fixture_clock, &fx);
        second(g, &total, 0);
        for (int i = 0; i < 3; i++)
                second(g, &total, 2000);
        cr_expect_eq(seen.n[MG_EVENT_RECLAIM], 0, "not told before the set's thread finishes the job");
        /* the worker's write, then the set's round that tells it: 5 s at most */
        for (int i = 0; i < 5000 && seen.n[MG_EVENT_RECLAIM] == 0; i++) {
                cr_assert_geq(mg_set_process(s), 0);
                if (seen.n[MG_EVENT_RECLAIM] == 0)
                        (void) poll(NULL, 0, 1);
        }
        cr_assert_eq(seen.n[MG_EVENT_RECLAIM], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.reclaim"), "100663296");
        mg_set_free(s);
}
