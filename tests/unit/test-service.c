/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a node agent needs of the library: the counters (mg_guard_get_stats(),
 * mg_set_get_stats()), dry runs (MG_GUARD_DRY_RUN) and the pre-kill event
 * with its bounded deferral (mg_guard_defer_kill()), on the fixture tree
 * with an injected clock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"
#include "util.h"

#define TICK (250 * MG_USEC_PER_MSEC)

static struct fixture fx;
static struct fixture_seen seen;
/* What the MG_EVENT_PRE_KILL callback does, and what it saw. */
static struct {
        uint64_t defer_usec;            /* the deferral it asks for; 0: none */
        int defer_ret;                  /* mg_guard_defer_kill()'s answer */
        char kill_file[16];             /* cgroup.kill as it saw it */
} pre_kill;

static void on_log(int level, const char *msg, void *ud) {
        (void) ud;
        fixture_record_log(&seen, level, msg);
}

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) ud;
        cr_assert_lt((int) ev->type, FIXTURE_EVENT_TYPES);
        fixture_record(&seen, ev);
        if (ev->type == MG_EVENT_PRE_KILL) {
                snprintf(pre_kill.kill_file, sizeof(pre_kill.kill_file), "%s", fixture_read(&fx, "cgroup.kill"));
                pre_kill.defer_ret = pre_kill.defer_usec ? mg_guard_defer_kill(g, pre_kill.defer_usec) : 0;
        }
}

static void setup(void) {
        memset(&seen, 0, sizeof(seen));
        memset(&pre_kill, 0, sizeof(pre_kill));
        fixture_init(&fx);
}

static void teardown(void) {
        fixture_cleanup(&fx);
}

/* A guard for a 256 MiB actor on the fixture, clock injected. */
static mg_guard *new_guard_with(uint32_t flags, uint32_t max_defer_usec) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_event;
        o.log = on_log;
        o.flags = flags;
        o.pre_kill_max_defer_usec = max_defer_usec;
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

/* 300 of 256 MiB; anon as given, 3 MiB kernel. */
static void overshoot(uint64_t anon) {
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, anon, 10 * MG_MIB, 3 * MG_MIB, 1 * MG_MIB, 4096, 0, 0);
}

static void at_rest(void) {
        fixture_current(&fx, 16 * MG_MIB);
        fixture_stat(&fx, 8 * MG_MIB, 6 * MG_MIB, 1 * MG_MIB, 0, 0, 0, 0);
}

TestSuite(service, .init = setup, .fini = teardown);

/* ---- counters */

Test(service, ticks_kills_and_errors_are_counted) {
        mg_guard *g = new_guard_with(0, 0);
        struct mg_stats st;

        for (int i = 0; i < 5; i++)
                cr_assert_eq(tick_at(g, TICK), 0);
        st = stats_of(g);
        cr_expect_eq(st.fast_ticks, 5);
        cr_expect_eq(st.slow_ticks, 0);

        /* at the limit: slow ticks; page cache does not kill */
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 100 * MG_MIB, 140 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        for (int i = 0; i < 3; i++)
                cr_assert_eq(tick_at(g, TICK), 0);
        st = stats_of(g);
        cr_expect_eq(st.fast_ticks, 5);
        cr_expect_eq(st.slow_ticks, 3);

        /* a read error: counted once per streak, as it is told */
        fx.fail_errno = EIO;
        for (int i = 0; i < 3; i++)
                cr_assert_eq(tick_at(g, TICK), -EIO);
        fx.fail_errno = 0;
        cr_expect_eq(stats_of(g).errors, 1);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1);

        /* an overshoot: the kill counts when its record is delivered */
        overshoot(280 * MG_MIB);
        cr_assert_eq(tick_at(g, TICK), 1);
        cr_expect_eq(stats_of(g).kills_overshoot, 0, "not before MG_EVENT_KILL");
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        cr_assert_eq(tick_at(g, TICK), 0);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        st = stats_of(g);
        cr_expect_eq(st.kills_overshoot, 1);
        cr_expect_eq(st.kills_stall, 0);
        cr_expect_eq(st.slow_ticks, 4, "a tick waiting for the cgroup to empty is neither fast nor slow");
        cr_expect_eq(st.dry_run_kills, 0);

        /* a kernel OOM kill: the count, not the events */
        fixture_write(&fx, "cgroup.events", "populated 1\nfrozen 0\n");
        at_rest();
        fixture_events(&fx, 0, 3, 2);
        tick_at(g, 3000 * MG_USEC_PER_MSEC);
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 100 * MG_MIB, 140 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        tick_at(g, TICK);
        fixture_events(&fx, 0, 5, 5);
        tick_at(g, TICK);
        cr_expect_eq(stats_of(g).kernel_oom_kills, 5);
        mg_guard_free(g);
}

Test(service, lends_and_expiries_are_counted) {
        mg_guard *g = new_guard_with(0, 0);
        uint64_t lend;

        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 1000 * MG_USEC_PER_MSEC, &lend), 0);
        cr_expect_eq(stats_of(g).lends, 1);
        tick_at(g, 1000 * MG_USEC_PER_MSEC);
        cr_assert_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        struct mg_stats st = stats_of(g);
        cr_expect_eq(st.lends, 2);
        cr_expect_eq(st.lend_expiries, 1, "an end by the caller is no expiry");
        mg_guard_free(g);
}

Test(service, stats_are_sized) {
        mg_guard *g = new_guard_with(0, 0);
        unsigned char big[sizeof(struct mg_stats) + 16];
        struct mg_stats *st = (struct mg_stats *) big;
        struct { uint64_t size, fast_ticks, canary; } old = { .size = 16, .canary = 0xdead };

        tick_at(g, TICK);
        memset(big, 0xa5, sizeof(big));
        st->size = sizeof(big);
        cr_assert_eq(mg_guard_get_stats(g, st), 0);
        cr_expect_eq(st->size, sizeof(big), ".size keeps the caller's value");
        cr_expect_eq(st->fast_ticks, 1);
        for (size_t i = sizeof(struct mg_stats); i < sizeof(big); i++)
                cr_expect_eq(big[i], 0, "byte %zu past the library's struct is zeroed", i);

        cr_assert_eq(mg_guard_get_stats(g, (struct mg_stats *) &old), 0);
        cr_expect_eq(old.fast_ticks, 1);
        cr_expect_eq(old.canary, 0xdead, "nothing past .size is written");

        struct mg_stats tiny = { .size = 4 };
        cr_expect_eq(mg_guard_get_stats(g, &tiny), -EINVAL);
        cr_expect_eq(mg_guard_get_stats(NULL, st), -EINVAL);
        cr_expect_eq(mg_guard_get_stats(g, NULL), -EINVAL);
        cr_expect_eq(mg_set_get_stats(NULL, st), -EINVAL);
        mg_guard_free(g);
}

/* A set's totals: its guards' counts and those of the guards it removed. */
Test(service, set_totals_keep_removed_guards) {
        struct fixture fy;
        mg_set *s = NULL;
        mg_guard *a, *b;
        struct mg_stats st = { .size = sizeof(st) };

        fixture_init(&fy);
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        a = new_guard_with(0, 0);
        cr_assert_eq(mg_set_add_guard(s, a), 0);
        {
                struct mg_guard_options o;
                cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
                o.on_event = on_event;
                cr_assert_eq(mg_guard_new_internal(fy.dir, &o, MG_CGROUP_ANY_FS, &fy.io, &b), 0);
                mg_guard_set_clock(b, fixture_clock, &fx);
                cr_assert_eq(mg_set_add_guard(s, b), 0);
        }
        for (int i = 0; i < 8; i++) {
                fx.now_usec += TICK;
                cr_assert_geq(mg_set_process(s), 0);
        }
        struct mg_stats sa = stats_of(a), sb = stats_of(b);
        cr_expect_gt(sa.fast_ticks, 0);
        cr_expect_gt(sb.fast_ticks, 0);
        cr_assert_eq(mg_set_get_stats(s, &st), 0);
        cr_expect_eq(st.fast_ticks, sa.fast_ticks + sb.fast_ticks);

        cr_assert_eq(mg_set_remove(s, b), 0);
        fx.now_usec += TICK;
        cr_assert_geq(mg_set_process(s), 0);
        sa = stats_of(a);
        cr_assert_eq(mg_set_get_stats(s, &st), 0);
        cr_expect_eq(st.fast_ticks, sa.fast_ticks + sb.fast_ticks, "the removed guard's ticks stay in the total");
        mg_set_free(s);
        fixture_cleanup(&fy);
}

/* ---- dry run */

static bool reports_agree(const struct mg_report *x, const struct mg_report *y) {
        return x->size == y->size && x->time_usec == y->time_usec && x->limit_bytes == y->limit_bytes &&
               x->margin_bytes == y->margin_bytes && x->current_bytes == y->current_bytes &&
               x->used_bytes == y->used_bytes && x->high_bytes == y->high_bytes && x->max_bytes == y->max_bytes &&
               x->stat.anon == y->stat.anon && x->stat.file == y->stat.file && x->stat.kernel == y->stat.kernel &&
               x->stat.shmem == y->stat.shmem && x->stat.sock == y->stat.sock &&
               x->stat.file_dirty == y->stat.file_dirty && x->events.max == y->events.max &&
               x->memory_pressure.some.total_usec == y->memory_pressure.some.total_usec &&
               x->stall_usec == y->stall_usec && x->stall_signals == y->stall_signals && x->verdict == y->verdict;
}

/* The record of a dry run is the record the kill would carry: a real
 * guard on the same tree at the same instant kills with the same one. */
Test(service, dry_run_reports_the_kill_record_and_kills_nothing) {
        mg_guard *dry = new_guard_with(MG_GUARD_DRY_RUN, 0), *real;

        overshoot(280 * MG_MIB);
        fx.now_usec += TICK;
        cr_expect_eq(mg_guard_tick(dry), 0, "a dry run acts on nothing");
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "nothing was written to cgroup.kill");
        cr_assert_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 1, "told at once, no wait for the cgroup to empty");
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_not(mg_guard_is_killing(dry));
        cr_expect(strstr(seen.log, "would kill (overshoot, dry run)") != NULL, "%s", seen.log);

        real = new_guard_with(0, 0);
        cr_assert_eq(mg_guard_tick(real), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        cr_assert_eq(mg_guard_tick(real), 0);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);

        cr_expect_eq(seen.dry.size, seen.kill.size);
        cr_expect_eq(seen.dry.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.dry.reason, seen.kill.reason);
        cr_expect_eq(seen.dry.method, seen.kill.method, "the method it would use");
        cr_expect_str_eq(seen.dry.cgroup, seen.kill.cgroup);
        cr_expect_eq(seen.dry.detect_usec, seen.kill.detect_usec);
        cr_expect_eq(seen.dry.kill_usec, seen.kill.kill_usec);
        cr_expect(reports_agree(&seen.dry.report, &seen.kill.report), "the same report");
        cr_expect_eq(seen.dry.empty_usec, 0, "nothing emptied");
        cr_expect_not(seen.dry.empty_timed_out);
        char a[1024], b[1024];
        mg_kill_record_format(&seen.dry, a, sizeof(a));
        mg_kill_record_format(&seen.kill, b, sizeof(b));
        cr_expect_str_eq(a, b, "the formatted records agree");
        cr_expect_eq(stats_of(dry).dry_run_kills, 1);
        cr_expect_eq(stats_of(dry).kills_overshoot, 0);
        mg_guard_free(real);
        mg_guard_free(dry);
}

Test(service, dry_run_does_not_repeat_every_tick) {
        mg_guard *g = new_guard_with(MG_GUARD_DRY_RUN, 0);
        uint64_t t0;

        overshoot(280 * MG_MIB);
        cr_assert_eq(tick_at(g, TICK), 0);
        cr_assert_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 1);
        t0 = fx.now_usec;
        /* still over its limit: held off, for MG_DRY_RUN_HOLDOFF_USEC */
        uint64_t ticks = 1;
        while (fx.now_usec + TICK < t0 + MG_DRY_RUN_HOLDOFF_USEC) {
                cr_assert_eq(tick_at(g, TICK), 0);
                ticks++;
        }
        cr_expect_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 1, "not told again while it stays over");
        cr_expect_eq(stats_of(g).slow_ticks, ticks, "it kept ticking meanwhile");
        tick_at(g, TICK);
        cr_expect_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 2, "told again once the hold-off has passed");

        /* it leaves its limit for half a stall window: the hold goes */
        at_rest();
        for (int i = 0; i < 8; i++)
                tick_at(g, TICK);
        overshoot(280 * MG_MIB);
        tick_at(g, TICK);
        cr_expect_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 3, "a new overshoot after leaving the limit is told at once");
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(stats_of(g).dry_run_kills, 3);
        mg_guard_free(g);
}

Test(service, bad_options_are_refused) {
        struct mg_guard_options o;
        mg_guard *g = NULL;

        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        cr_expect_eq(o.flags, 0);
        cr_expect_eq(o.pre_kill_max_defer_usec, 0, "pre-kill is off by default");
        o.flags = 1u << 7;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EINVAL);
        o.flags = 0;
        o.pre_kill_max_defer_usec = MG_PRE_KILL_MAX_DEFER_USEC + 1;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EINVAL);
        cr_expect_null(g);
}

/* ---- before a kill */

Test(service, pre_kill_is_off_by_default) {
        mg_guard *g = new_guard_with(0, 0);

        pre_kill.defer_usec = 1000 * MG_USEC_PER_MSEC;
        overshoot(280 * MG_MIB);
        cr_expect_eq(tick_at(g, TICK), 1, "killed at once");
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 0);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(mg_guard_defer_kill(g, 1000), -ENOENT, "outside a pre-kill callback");
        cr_expect_eq(mg_guard_defer_kill(NULL, 1000), -EINVAL);
        mg_guard_free(g);
}

Test(service, pre_kill_without_a_deferral_kills_in_the_same_tick) {
        mg_guard *g = new_guard_with(0, 2000 * MG_USEC_PER_MSEC);

        overshoot(280 * MG_MIB);
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1);
        cr_expect_str_empty(pre_kill.kill_file, "told before the kill");
        cr_expect_eq(seen.pre.kill_usec, 0, "not sent yet");
        cr_expect_eq(seen.pre.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.pre.report.used_bytes, 280 * MG_MIB + 3 * MG_MIB + 1 * MG_MIB + 4096);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        mg_guard_free(g);
}

/* A guard (deferrals up to 2 s) whose overshoot's kill the pre-kill
 * callback has just put off by usec. */
static mg_guard *deferred_overshoot(uint64_t usec) {
        mg_guard *g = new_guard_with(0, 2000 * MG_USEC_PER_MSEC);

        pre_kill.defer_usec = usec;
        overshoot(280 * MG_MIB);
        cr_assert_eq(tick_at(g, TICK), 0);
        cr_assert_eq(seen.n[MG_EVENT_PRE_KILL], 1);
        cr_assert_eq(pre_kill.defer_ret, 0);
        return g;
}

Test(service, deferred_kill_follows_the_deferral) {
        mg_guard *g = deferred_overshoot(1000 * MG_USEC_PER_MSEC);
        uint64_t t0 = fx.now_usec;

        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "deferred");
        for (int i = 0; i < 3; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "not before the deferral ends");
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1, "told once");
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_eq(fx.now_usec - t0, 1000 * MG_USEC_PER_MSEC);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1", "killed when the deferral ends");
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        tick_at(g, TICK);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.kill.detect_usec, seen.pre.detect_usec, "the detection the pre-kill told");
        cr_expect_eq(seen.kill.kill_usec, t0 + 1000 * MG_USEC_PER_MSEC);
        cr_expect_eq(seen.n[MG_EVENT_KILL_AVERTED], 0);
        struct mg_stats st = stats_of(g);
        cr_expect_eq(st.kills_deferred, 1);
        cr_expect_eq(st.kills_overshoot, 1);
        mg_guard_free(g);
}

/* Emptied while the kill was put off: an empty cgroup is never killed, and
 * its overshoot is reported as one no process holds, when the deferral
 * ends, as a kill decided then would report it. */
Test(service, a_deferred_overshoot_of_an_emptied_cgroup_is_reported_not_killed) {
        mg_guard *g = deferred_overshoot(500 * MG_USEC_PER_MSEC);

        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_EMPTY_OVER_LIMIT], 0, "not before the deferral ends");
        cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_EMPTY_OVER_LIMIT], 1, "reported when the deferral ends");
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "an empty cgroup is never killed");
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_eq(seen.n[MG_EVENT_KILL_AVERTED], 0);
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1);
        mg_guard_free(g);
}

Test(service, deferred_kill_is_averted_if_the_actor_left_its_limit) {
        mg_guard *g = deferred_overshoot(1000 * MG_USEC_PER_MSEC);

        /* it freed its memory while saving: back under the limit, still near it */
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        for (int i = 0; i < 4; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "no kill");
        cr_assert_eq(seen.n[MG_EVENT_KILL_AVERTED], 1);
        cr_expect_eq(seen.averted.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.averted.detect_usec, seen.pre.detect_usec, "the deferred record");
        cr_expect_eq(seen.averted_read.used_bytes, 203 * MG_MIB, "the read that withdrew it");
        cr_expect(strstr(seen.log, "not made: the actor left its limit") != NULL, "%s", seen.log);
        for (int i = 0; i < 8; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1);
        cr_expect_eq(stats_of(g).kills_averted, 1);
        mg_guard_free(g);
}

/* Back below its line: averted too, from the fast path. */
Test(service, deferred_kill_is_averted_below_the_line) {
        mg_guard *g = deferred_overshoot(500 * MG_USEC_PER_MSEC);

        at_rest();
        tick_at(g, TICK);
        tick_at(g, TICK);
        cr_expect_eq(seen.n[MG_EVENT_KILL_AVERTED], 1);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        mg_guard_free(g);
}

/* A deferral never covers an anon overshoot past limit + limit/8: the
 * next tick that sees it there kills, before the deferral's end. */
Test(service, anon_past_the_hard_bound_is_killed_at_once) {
        mg_guard *g = new_guard_with(0, 10000 * MG_USEC_PER_MSEC);

        pre_kill.defer_usec = 10000 * MG_USEC_PER_MSEC;
        overshoot(280 * MG_MIB); /* anon + shmem 281 MiB: within 256 + 32 */
        cr_assert_eq(tick_at(g, TICK), 0);
        cr_assert_eq(pre_kill.defer_ret, 0);
        cr_expect_eq(tick_at(g, TICK), 0);
        fixture_current(&fx, 320 * MG_MIB);
        fixture_stat(&fx, 300 * MG_MIB, 0, 3 * MG_MIB, 1 * MG_MIB, 0, 0, 0); /* 301 MiB */
        cr_expect_eq(tick_at(g, TICK), 1, "killed in the tick that saw it");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1, "no second pre-kill");
        cr_expect(strstr(seen.log, "past the bound of a deferral") != NULL, "%s", seen.log);
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        tick_at(g, TICK);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.report.stat.anon, 300 * MG_MIB, "the record has the read that decided");
        mg_guard_free(g);
}

Test(service, no_deferral_past_the_hard_bound) {
        mg_guard *g = new_guard_with(0, 10000 * MG_USEC_PER_MSEC);

        pre_kill.defer_usec = 5000 * MG_USEC_PER_MSEC;
        overshoot(300 * MG_MIB);
        cr_expect_eq(tick_at(g, TICK), 1, "killed in the same tick");
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1, "still told first");
        cr_expect_eq(pre_kill.defer_ret, -EPERM);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        mg_guard_free(g);
}

/* Close to memory.max the kernel's OOM killer would act first. */
Test(service, no_deferral_near_memory_max) {
        mg_guard *g;

        fixture_write(&fx, "memory.max", "293601280\n"); /* 280 MiB */
        g = new_guard_with(0, 10000 * MG_USEC_PER_MSEC);
        pre_kill.defer_usec = 5000 * MG_USEC_PER_MSEC;
        fixture_current(&fx, 279 * MG_MIB);
        fixture_stat(&fx, 272 * MG_MIB, 0, 3 * MG_MIB, 1 * MG_MIB, 0, 0, 0); /* 273 MiB: within 8 MiB of max */
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_eq(pre_kill.defer_ret, -EPERM);
        mg_guard_free(g);
}

Test(service, a_deferral_longer_than_the_bound_is_refused) {
        mg_guard *g = new_guard_with(0, 1000 * MG_USEC_PER_MSEC);

        pre_kill.defer_usec = 1001 * MG_USEC_PER_MSEC;
        overshoot(280 * MG_MIB);
        cr_expect_eq(tick_at(g, TICK), 1, "a refused deferral kills now");
        cr_expect_eq(pre_kill.defer_ret, -ERANGE);
        mg_guard_free(g);
}

/* The same steps under a dry run: the kill they end in is a dry run's. */
Test(service, deferral_in_a_dry_run) {
        mg_guard *g = new_guard_with(MG_GUARD_DRY_RUN, 1000 * MG_USEC_PER_MSEC);

        pre_kill.defer_usec = 500 * MG_USEC_PER_MSEC;
        overshoot(280 * MG_MIB);
        tick_at(g, TICK);
        tick_at(g, TICK);
        cr_expect_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 0);
        tick_at(g, TICK);
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1);
        cr_expect_eq(seen.n[MG_EVENT_KILL_DRY_RUN], 1);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        mg_guard_free(g);
}

/* A lend pauses kills: one that begins during a deferral ends it. */
Test(service, a_lend_drops_the_deferral) {
        mg_guard *g = new_guard_with(0, 2000 * MG_USEC_PER_MSEC);
        uint64_t lend;

        pre_kill.defer_usec = 1000 * MG_USEC_PER_MSEC;
        overshoot(280 * MG_MIB);
        cr_assert_eq(tick_at(g, TICK), 0);
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
        for (int i = 0; i < 8; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect(strstr(seen.log, "the deferred kill is dropped") != NULL, "%s", seen.log);
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        pre_kill.defer_usec = 0;
        cr_expect_eq(tick_at(g, TICK), 1, "decided anew after the lend");
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 2);
        mg_guard_free(g);
}
