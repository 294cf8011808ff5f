/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Park instead of kill (mg_guard_options.park_deadline_usec): the freeze,
 * MG_EVENT_PARK once cgroup.events says frozen, the worker's end of it (a
 * kill, a thaw judged at once against a new limit), and the guard's
 * promise (the deadline, the freeze wait, the bound on used while frozen,
 * no freezer at all), on the fixture tree with an injected clock.
 * The park record (suite park_record): user.memguard.park written before
 * the freeze and removed at the park's end, a park taken over by the
 * next guard after its parker died (and killed at the first tick if its
 * deadline passed meanwhile), stale, forged and malformed records, and
 * mg_guard_recover()'s part.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fixture.h"
#include "guard.h"
#include "park.h"
#include "set.h"
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

/* ---- the park record --------------------------------------------------------------- */

TestSuite(park_record, .init = setup, .fini = teardown);

static char text[MG_PARK_RECORD_MAX + 1];

/* Skips where the fixture's file system has no user xattrs (tmpfs before
 * 6.6); the fixture is on ext4 or a newer tmpfs otherwise. */
static void need_user_xattrs(void) {
        int r = fixture_user_xattrs(fx.dir);

        cr_assert_geq(r, 0, "setxattr: %s", strerror(-r));
        if (r == 0)
                cr_skip_test("%s has no user xattrs (tmpfs before 6.6?): park records cannot be tested here", fx.dir);
}

/* The record on the directory now, into text; its length or -1 (errno). */
static ssize_t get_record(void) {
        return fixture_get_xattr(fx.dir, MG_PARK_XATTR, text, sizeof(text));
}

static void put_record(uint64_t id, enum mg_kill_reason reason, uint64_t deadline_boottime_usec) {
        struct mg_park_record rec = { .id = id, .reason = reason, .deadline_boottime_usec = deadline_boottime_usec,
                                      .pid = 4242 };
        char t[MG_PARK_RECORD_MAX + 1];
        int n = mg_park_record_format(&rec, t, sizeof(t));

        cr_assert_gt(n, 0);
        cr_assert_eq(setxattr(fx.dir, MG_PARK_XATTR, t, (size_t) n, 0), 0, "%s", strerror(errno));
}

/* What the kernel shows of a cgroup frozen by someone before this guard. */
static void found_frozen(void) {
        fixture_write(&fx, "cgroup.freeze", "1\n");
        frozen(true);
}

/* The seam's pwrite, noting whether the record is there as cgroup.freeze
 * gets its 1. */
static ssize_t (*fx_pwrite)(void *, int, const void *, size_t, off_t);
static int freezes;
static bool record_at_freeze;

static ssize_t pwrite_checks_record(void *ud, int fd, const void *buf, size_t len, off_t off) {
        char link[64], path[512];
        ssize_t n;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof(path) - 1);
        if (n > 0 && len >= 1 && *(const char *) buf == '1') {
                path[n] = '\0';
                if (strlen(path) > 14 && strcmp(path + strlen(path) - 14, "/cgroup.freeze") == 0) {
                        freezes++;
                        record_at_freeze = get_record() > 0;
                }
        }
        return fx_pwrite(ud, fd, buf, len, off);
}

static void watch_freezes(void) {
        fx_pwrite = fx.io.pwrite;
        fx.io.pwrite = pwrite_checks_record;
        freezes = 0;
        record_at_freeze = false;
}

Test(park_record, written_before_the_freeze_removed_once_the_kill_is_sent) {
        need_user_xattrs();
        watch_freezes();
        uint64_t bt = mg_boottime_usec();
        mg_guard *g = parked();
        struct mg_park_record rec;

        cr_expect_eq(freezes, 1);
        cr_expect(record_at_freeze, "cgroup.freeze written before the record was");
        cr_assert_gt(get_record(), 0);
        cr_assert_eq(mg_park_record_parse(text, strlen(text), &rec), 0, "%s", text);
        cr_expect_eq(rec.id, 1);
        cr_expect_eq(rec.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(rec.pid, (uint64_t) getpid());
        cr_expect_geq(rec.deadline_boottime_usec, bt + DEADLINE);
        cr_expect_leq(rec.deadline_boottime_usec, mg_boottime_usec() + DEADLINE);
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_KILL, 0), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_lt(get_record(), 0, "the record outlived the kill: %s", text);
        cr_expect_eq(errno, ENODATA);
        empties(g);
        mg_guard_free(g);
}

Test(park_record, removed_after_the_thaw_and_the_deadline_kill) {
        need_user_xattrs();
        mg_guard *g = parked();

        cr_expect_gt(get_record(), 0);
        cr_assert_eq(mg_guard_park_end(g, 1, MG_PARK_THAW, 512 * MG_MIB), 0);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "0");
        cr_expect_lt(get_record(), 0, "the record outlived the thaw: %s", text);
        /* parked again over the new limit; its deadline kills: gone too */
        fixture_current(&fx, 560 * MG_MIB);
        fixture_stat(&fx, 530 * MG_MIB, 10 * MG_MIB, 2 * MG_MIB, 1 * MG_MIB, 4096, 0, 0);
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_assert_gt(get_record(), 0);
        cr_expect(strstr(text, "memguard-park 1 id=2 reason=overshoot "), "%s", text);
        int killed = 0;
        for (int i = 0; i < 40 && !killed; i++)
                killed = tick_at(g, TICK);
        cr_expect_eq(killed, 1);
        cr_expect_lt(get_record(), 0, "the record outlived the deadline's kill: %s", text);
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_DEADLINE);
        mg_guard_free(g);
}

Test(park_record, a_guard_freed_while_parked_thaws_and_removes_it) {
        need_user_xattrs();
        mg_guard *g = parked();

        cr_expect_gt(get_record(), 0);
        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "0");
        cr_expect_lt(get_record(), 0);
}

static int fsetxattr_fails(void *ud, int fd, const char *name, const void *value, size_t size, int flags) {
        (void) ud, (void) fd, (void) name, (void) value, (void) size, (void) flags;
        errno = EIO;
        return -1;
}

/* A record that cannot be written (no user xattrs, EIO) stops nothing:
 * the park goes on, unrecorded, and the log says a crash would leave the
 * actor frozen. */
Test(park_record, a_record_that_cannot_be_written_does_not_stop_the_park) {
        fx.io.fsetxattr = fsetxattr_fails;
        mg_guard *g = parked();

        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1");
        cr_expect(strstr(seen.log, "this park is not recorded"), "%s", seen.log);
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_KILL, 0), 1);
        empties(g);
        mg_guard_free(g);
}

/* A worker that dies mid-park: a child parks an overshoot and exits
 * without ending it (its guard never freed: nothing thaws). */
static void park_and_crash(void) {
        int st;
        pid_t pid = fork();

        cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
        if (pid == 0) {
                struct mg_guard_options o;
                mg_guard *g;
                int r = mg_guard_options_init(&o, 256 * MG_MIB);
                if (r == 0) {
                        o.park_deadline_usec = DEADLINE;
                        r = mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g);
                }
                if (r == 0)
                        r = mg_guard_tick(g) == 1 && mg_guard_get_park_id(g) == 1 ? 0 : -1;
                _exit(r == 0 ? 0 : 1);
        }
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child could not park (status %d)", st);
}

Test(park_record, the_next_guard_takes_a_crashed_workers_park_over) {
        need_user_xattrs();
        overshoot();
        frozen(true);
        park_and_crash();
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1");
        cr_assert_gt(get_record(), 0, "the crashed park left no record");
        /* now under the limit, as a save in its lend might leave it: the
         * record's reason is what the event says */
        mg_guard *g = new_guard(0);
        cr_expect_eq(mg_guard_get_park_id(g), 1, "parked from the start, the record's id");
        cr_expect(strstr(seen.log, "taken over"), "%s", seen.log);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 0, "told at the first tick");
        cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 1);
        cr_expect_eq(seen.park.report.park_id, 1);
        cr_expect_eq(seen.park.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.park.kill_usec, 0);
        cr_expect_eq(seen.park.report.used_bytes, 283 * MG_MIB + 4096, "a fresh read");
        cr_expect_eq(seen.park.report.limit_bytes, 256 * MG_MIB);
        cr_expect_eq(seen.park.report.park_end, MG_PARK_OPEN);
        cr_expect_neq(seen.park.report.frozen_usec, 0);
        cr_expect_eq(seen.park.detect_usec, seen.park.report.park_usec, "the takeover stands for the detection");
        /* taken over at mg_guard_new(), carried onto the injected clock
         * with the moment before it was set */
        cr_expect_leq(fx.now_usec - TICK - seen.park.report.park_usec, 50 * MG_USEC_PER_MSEC);
        /* the restarted worker's save, then its kill */
        cr_expect_eq(mg_guard_park_end(g, 1, MG_PARK_KILL, 0), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_lt(get_record(), 0);
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_KILL);
        cr_expect_eq(seen.kill.report.park_id, 1);
        struct mg_stats st = stats_of(g);
        cr_expect_eq(st.parks, 1);
        cr_expect_eq(st.parks_killed, 1);
        mg_guard_free(g);
}

/* The record's deadline holds across the crash (its CLOCK_BOOTTIME time,
 * on the new guard's clock), cut to the new guard's own park deadline. */
Test(park_record, a_taken_over_park_keeps_its_deadline) {
        need_user_xattrs();
        overshoot();
        found_frozen();
        put_record(9, MG_KILL_STALL, mg_boottime_usec() + 3 * MG_USEC_PER_SEC);
        mg_guard *g = new_guard(0);
        uint64_t t0 = fx.now_usec;
        int killed = 0;

        cr_assert_eq(mg_guard_get_park_id(g), 9);
        while (!killed && fx.now_usec - t0 < 10 * MG_USEC_PER_SEC)
                killed = tick_at(g, TICK);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 1);
        cr_expect_eq(seen.park.reason, MG_KILL_STALL);
        cr_expect_eq(fx.now_usec - t0, 3 * MG_USEC_PER_SEC, "killed at the recorded deadline");
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_DEADLINE);
        cr_expect_eq(seen.kill.reason, MG_KILL_STALL);
        cr_expect_lt(get_record(), 0);
        mg_guard_free(g);

        /* an hour left in the record: cut to this guard's 5 s */
        fixture_write(&fx, "cgroup.kill", "");
        memset(&seen, 0, sizeof(seen));
        found_frozen();
        put_record(10, MG_KILL_OVERSHOOT, mg_boottime_usec() + 3600 * MG_USEC_PER_SEC);
        g = new_guard(0);
        t0 = fx.now_usec;
        killed = 0;
        while (!killed && fx.now_usec - t0 < 20 * MG_USEC_PER_SEC)
                killed = tick_at(g, TICK);
        cr_expect_eq(fx.now_usec - t0, DEADLINE);
        mg_guard_free(g);
}

/* Its deadline passed while nobody ran: killed at the first tick, an
 * expired park, with no MG_EVENT_PARK asking for a save first. */
Test(park_record, an_expired_park_is_killed_at_the_first_tick) {
        need_user_xattrs();
        overshoot();
        found_frozen();
        put_record(3, MG_KILL_OVERSHOOT, 1);
        mg_guard *g = new_guard(0);

        cr_expect_eq(mg_guard_get_park_id(g), 3);
        cr_expect(strstr(seen.log, "deadline passed: taken over, killed at the first tick"), "%s", seen.log);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(seen.n[MG_EVENT_PARK], 0);
        cr_expect_lt(get_record(), 0);
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_DEADLINE);
        cr_expect_eq(seen.kill.report.park_id, 3);
        cr_expect_neq(seen.kill.report.frozen_usec, 0, "found frozen: its record says so");
        cr_expect_eq(stats_of(g).parks_expired, 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1\n", "never thawed");
        mg_guard_free(g);
}

/* A record on a cgroup that is not frozen (thawed by hand, or a crash
 * between the record and the freeze) is stale: removed, nothing else. */
Test(park_record, a_stale_record_is_removed) {
        need_user_xattrs();
        overshoot();
        put_record(5, MG_KILL_OVERSHOOT, mg_boottime_usec() + 3600 * MG_USEC_PER_SEC);
        fixture_write(&fx, "cgroup.freeze", "0\n");
        mg_guard *g = new_guard(0);

        cr_expect_eq(mg_guard_get_park_id(g), 0, "not parked");
        cr_expect_lt(get_record(), 0, "a stale record stayed: %s", text);
        cr_expect(strstr(seen.log, "not frozen: stale, removed"), "%s", seen.log);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "0\n");
        mg_guard_free(g);

        /* no freezer at all: stale too */
        put_record(5, MG_KILL_OVERSHOOT, mg_boottime_usec() + 3600 * MG_USEC_PER_SEC);
        fixture_remove(&fx, "cgroup.freeze");
        g = new_guard(0);
        cr_expect_eq(mg_guard_get_park_id(g), 0);
        cr_expect_lt(get_record(), 0);
        mg_guard_free(g);
}

/* A tenant owning its directory can freeze itself and write a record:
 * never taken over, never acted on (no park, no thaw, no kill from it),
 * left as it is; and a park there writes none. */
Test(park_record, a_record_its_tenant_can_write_decides_nothing) {
        need_user_xattrs();
        struct stat st;

        found_frozen();
        put_record(5, MG_KILL_OVERSHOOT, 1);
        cr_assert_eq(stat(fx.dir, &st), 0);
        cr_assert_eq(chmod(fx.dir, (st.st_mode & 07777) | S_IWOTH), 0);
        mg_guard *g = new_guard(0);
        cr_expect_eq(mg_guard_get_park_id(g), 0, "the tenant's record was taken over");
        cr_expect(strstr(seen.log, "not taken over, nothing decided from it"), "%s", seen.log);
        for (int i = 0; i < 4; i++)
                cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 0);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1\n", "touched");
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_gt(get_record(), 0, "left as it is");
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fx.io), -EPERM);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "recover killed on the tenant's word");
        cr_expect_gt(get_record(), 0);
        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1\n", "freeing it thawed the tenant");

        /* its own park there: unrecorded */
        cr_assert_eq(removexattr(fx.dir, MG_PARK_XATTR), 0);
        fixture_write(&fx, "cgroup.freeze", "0\n");
        memset(&seen, 0, sizeof(seen));
        g = parked();
        cr_expect_lt(get_record(), 0, "a record written where the tenant can forge one");
        cr_expect(strstr(seen.log, "its tenant can write this directory: this park is not recorded"), "%s", seen.log);
        mg_guard_free(g);
        cr_assert_eq(chmod(fx.dir, st.st_mode & 07777), 0);
}

Test(park_record, malformed_records_are_rejected) {
        need_user_xattrs();
        static const char *const bad[] = {
                "memguard-park 1 id=1 reason=overshoot deadline_boottime_usec=1 pid=1",   /* no newline */
                "memguard-park 2 id=1 reason=overshoot deadline_boottime_usec=1 pid=1\n", /* version */
                "memguard-park 1 id=0 reason=overshoot deadline_boottime_usec=1 pid=1\n", /* id 0 */
                "memguard-park 1 id=01 reason=overshoot deadline_boottime_usec=1 pid=1\n",
                "memguard-park 1 id=1 reason=oom deadline_boottime_usec=1 pid=1\n",
                "memguard-park 1 id=1 reason=1 deadline_boottime_usec=1 pid=1\n",
                "memguard-park 1 id=1 reason=stall deadline_boottime_usec=max pid=1\n",
                "memguard-park 1 id=1 reason=stall pid=1 deadline_boottime_usec=1\n",
                "memguard-park 1 id=1 reason=stall deadline_boottime_usec=18446744073709551616 pid=1\n",
                "memguard-park 1 id=1 reason=stall deadline_boottime_usec=1 pid=1\nx",
                "memguard-park 1  id=1 reason=stall deadline_boottime_usec=1 pid=1\n",
                "memguard-lend 1 high=max deadline_boottime_usec=1 pid=1\n",
                "",
        };
        struct mg_park_record rec;

        found_frozen();
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                cr_expect_eq(mg_park_record_parse(bad[i], strlen(bad[i]), &rec), -EBADMSG, "accepted: %s", bad[i]);
                cr_assert_eq(setxattr(fx.dir, MG_PARK_XATTR, bad[i], strlen(bad[i]), 0), 0);
                cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fx.io), -EBADMSG, "%s", bad[i]);
                mg_guard *g = new_guard(0);
                cr_expect_eq(mg_guard_get_park_id(g), 0, "took a malformed record over: %s", bad[i]);
                cr_expect_gt(get_record(), -1, "left as found");
                mg_guard_free(g);
        }
        char big[300];
        memset(big, '1', sizeof(big));
        cr_assert_eq(setxattr(fx.dir, MG_PARK_XATTR, big, sizeof(big), 0), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fx.io), -EBADMSG, "too long");
        mg_guard *g = new_guard(0);
        cr_expect_eq(mg_guard_get_park_id(g), 0);
        cr_expect(strstr(seen.log, "but too long"), "%s", seen.log);
        mg_guard_free(g);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1\n");
        /* the canonical form round-trips */
        struct mg_park_record r = { .id = 18446744073709551615u, .reason = MG_KILL_OVERSHOOT,
                                    .deadline_boottime_usec = 18446744073709551615u, .pid = 18446744073709551615u };
        int n = mg_park_record_format(&r, text, sizeof(text));
        cr_assert_gt(n, 0);
        cr_expect_leq(n, MG_PARK_RECORD_MAX);
        cr_expect_eq(mg_park_record_parse(text, (size_t) n, &rec), 0, "%s", text);
        cr_expect_eq(rec.id, r.id);
        r.id = 0;
        cr_expect_eq(mg_park_record_format(&r, text, sizeof(text)), -EINVAL);
}

/* A lone guard that took a park over leaves it as found when freed: the
 * actor frozen, the record for the next guard (a takeover never thaws). */
Test(park_record, a_taken_over_park_is_left_frozen_by_the_guards_end) {
        need_user_xattrs();
        overshoot();
        found_frozen();
        put_record(4, MG_KILL_OVERSHOOT, mg_boottime_usec() + 3600 * MG_USEC_PER_SEC);
        mg_guard *g = new_guard(0);

        cr_assert_eq(mg_guard_get_park_id(g), 4);
        cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect_eq(seen.n[MG_EVENT_PARK], 1);
        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1\n", "a takeover thawed");
        cr_expect_gt(get_record(), 0);
        cr_expect(strstr(seen.log, "left frozen, its record for the next guard"), "%s", seen.log);
        /* and the next guard takes it over again */
        g = new_guard(0);
        cr_expect_eq(mg_guard_get_park_id(g), 4);
        mg_guard_free(g);
}

/* mg_guard_recover() neither thaws nor kills: a park on a frozen cgroup,
 * live or past its deadline, is left for mg_guard_new() (whose first tick
 * kills an expired one, told as a kill); a stale one is removed. */
Test(park_record, recover_leaves_a_park_for_the_next_guard) {
        need_user_xattrs();
        overshoot();
        found_frozen();
        put_record(2, MG_KILL_OVERSHOOT, mg_boottime_usec() + 3600 * MG_USEC_PER_SEC);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fx.io), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, MG_RECOVER_EXPIRED, MG_CGROUP_ANY_FS, &fx.io), 0);
        cr_expect_gt(get_record(), 0, "left for mg_guard_new()");

        put_record(2, MG_KILL_OVERSHOOT, 1);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fx.io), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, MG_RECOVER_EXPIRED, MG_CGROUP_ANY_FS, &fx.io), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "recovery killed");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1\n", "recovery thawed");
        cr_expect_gt(get_record(), 0, "an expired park left for mg_guard_new()");
        mg_guard *g = new_guard(0);
        cr_expect_eq(tick_at(g, TICK), 1, "killed at the first tick");
        empties(g);
        cr_expect_eq(seen.kill.report.park_end, MG_PARK_END_DEADLINE);
        mg_guard_free(g);

        fixture_write(&fx, "cgroup.kill", "");
        fixture_write(&fx, "cgroup.freeze", "0\n");
        put_record(2, MG_KILL_OVERSHOOT, 1);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fx.io), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_lt(get_record(), 0, "stale: removed");
        /* a lend record beside it: recovered as before, the answer its */
        put_record(2, MG_KILL_OVERSHOOT, 1);
        const char *lend = "memguard-lend 1 high=300000000 deadline_boottime_usec=1 pid=1\n";
        fixture_write(&fx, "memory.high", "max\n");
        cr_assert_eq(setxattr(fx.dir, "user.memguard.lend", lend, strlen(lend), 0), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, MG_RECOVER_EXPIRED, MG_CGROUP_ANY_FS, &fx.io), 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "300000000");
        cr_expect_lt(get_record(), 0, "the stale park record beside it removed too");
}

/* A set's guard takes a park over the same way (mg_set_process() tells
 * MG_EVENT_PARK), and mg_set_remove() leaves it frozen, record and all. */
Test(park_record, a_sets_guard_takes_it_over_and_its_removal_leaves_it_frozen) {
        need_user_xattrs();
        struct mg_guard_options o;
        mg_guard *g;
        mg_set *s;

        overshoot();
        found_frozen();
        put_record(6, MG_KILL_OVERSHOOT, mg_boottime_usec() + 3600 * MG_USEC_PER_SEC);
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_event;
        o.log = on_log;
        o.park_deadline_usec = DEADLINE;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        cr_assert_eq(mg_set_add_guard(s, g), 0);
        cr_expect_eq(mg_guard_get_park_id(g), 6);
        for (int k = 0; k < 4 && !seen.n[MG_EVENT_PARK]; k++) {
                fx.now_usec += TICK;
                cr_expect_geq(mg_set_process(s), 0);
        }
        cr_expect_eq(seen.n[MG_EVENT_PARK], 1);
        cr_expect_eq(seen.park.report.park_id, 6);
        cr_expect_eq(mg_set_remove(s, g), 0);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.freeze"), "1\n", "removing a taken-over park thawed it");
        cr_expect_gt(get_record(), 0);
        mg_set_free(s);
}
