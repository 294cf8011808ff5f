/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Calls made from inside the callbacks the library runs (a guard's event
 * and log callbacks, the pre-kill event, a set's log), on the fixture tree
 * with an injected clock, for a guard alone and for guards in a set:
 *  - mg_guard_free() of the guard told about, and mg_set_free() of its
 *    set, are carried out when the library's call that runs the callback
 *    returns: nothing more is told, the fds close then;
 *  - mg_set_remove() of the guard, from any call on it, likewise frees it
 *    once that call is over;
 *  - mg_guard_tick() of that guard and mg_set_process() of that set are
 *    refused with -EDEADLK;
 *  - mg_guard_free() of a set's guard is refused (logged), in a callback
 *    or not;
 *  - the rest works as outside a callback.
 * Each ends by checking the process's fds: what was freed closed its own.
 * Run under ASan, a use after free is a crash.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fixture.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"
#include "util.h"

#define TICK (250 * MG_USEC_PER_MSEC)

static struct fixture fx, fb;

/* What a callback does when its trigger comes (once). */
enum action {
        DO_NOTHING,
        DO_FREE_GUARD,  /* mg_guard_free() of the guard */
        DO_FREE_SET,    /* mg_set_free() of cb.s */
        DO_REMOVE,      /* mg_set_remove() of the guard from cb.s */
        DO_TICK,        /* mg_guard_tick() of the guard */
        DO_PROCESS,     /* mg_set_process() of cb.s */
        DO_OTHERS,      /* the calls that work as outside a callback */
};

static struct {
        /* The trigger: an event of this type, or a log line (the guards'
         * or the set's) with this in it. */
        enum mg_event_type on_event;
        const char *on_log;
        enum action action;
        mg_guard *g;            /* acted on by a log trigger (a log has no guard) */
        mg_set *s;
        bool fired;
        int ret;                /* what the call returned */
        mg_guard *added;        /* DO_OTHERS: the guard it added to cb.s */
} cb;
/* What was told; after an action that frees or removes (seen.silent),
 * every callback is one too many (seen.after). */
static struct fixture_seen seen;

static bool silences(enum action a) {
        return a == DO_FREE_GUARD || a == DO_FREE_SET || a == DO_REMOVE;
}

static void others(mg_guard *g) {
        struct mg_report rep = { .size = sizeof(rep) };
        struct mg_stats st = { .size = sizeof(st) };
        struct mg_guard_options o;

        cr_expect_eq(mg_guard_report(g, &rep), 0);
        cr_expect_eq(rep.current_bytes, 300 * MG_MIB);
        cr_expect_eq(mg_guard_get_stats(g, &st), 0);
        cr_expect_eq(st.slow_ticks, 1);
        cr_expect_eq(mg_guard_defer_kill(g, 1000 * MG_USEC_PER_MSEC), 0);
        if (!cb.s)
                return;
        cr_expect_eq(mg_set_get_stats(cb.s, &st), 0);
        cr_expect_eq(mg_set_size(cb.s), 1);
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        cr_expect_eq(mg_set_add_internal(cb.s, fb.dir, &o, MG_CGROUP_ANY_FS, &fb.io, &cb.added), 0);
        cr_expect_eq(mg_set_size(cb.s), 2);
}

static void act(mg_guard *g) {
        cb.fired = true;
        switch (cb.action) {
        case DO_NOTHING: break;
        case DO_FREE_GUARD: mg_guard_free(g); break;
        case DO_FREE_SET: mg_set_free(cb.s); break;
        case DO_REMOVE: cb.ret = mg_set_remove(cb.s, g); break;
        case DO_TICK: cb.ret = mg_guard_tick(g); break;
        case DO_PROCESS: cb.ret = mg_set_process(cb.s); break;
        case DO_OTHERS: others(g); break;
        }
        seen.silent = silences(cb.action);
}

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) ud;
        cr_assert_lt((int) ev->type, FIXTURE_EVENT_TYPES);
        fixture_record(&seen, ev);
        if (!cb.fired && cb.on_event == ev->type)
                act(g);
}

static void on_log(int level, const char *msg, void *ud) {
        (void) ud;
        fixture_record_log(&seen, level, msg);
        if (!cb.fired && cb.on_log && strstr(msg, cb.on_log))
                act(cb.g);
}

/* Arms the trigger: at event type ev (0: none), or a log line with line
 * in it (NULL: none), do a; g for a log trigger. */
static void when(enum mg_event_type ev, const char *line, enum action a, mg_guard *g) {
        cb.on_event = ev;
        cb.on_log = line;
        cb.action = a;
        cb.g = g;
}

static void setup(void) {
        memset(&cb, 0, sizeof(cb));
        memset(&seen, 0, sizeof(seen));
        fixture_init(&fx);
        fixture_init(&fb);
        fb.now_usec = fx.now_usec;
}

static void teardown(void) {
        fixture_cleanup(&fx);
        fixture_cleanup(&fb);
}

static struct mg_guard_options options(uint32_t max_defer_usec) {
        struct mg_guard_options o;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_event;
        o.log = on_log;
        o.pre_kill_max_defer_usec = max_defer_usec;
        return o;
}

/* A guard alone for the 256 MiB actor of fx; pre-kill deferrals up to
 * max_defer_usec (0: no MG_EVENT_PRE_KILL). */
static mg_guard *lone_guard(uint32_t max_defer_usec) {
        struct mg_guard_options o = options(max_defer_usec);
        mg_guard *g = NULL;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        return g;
}

/* The same for the actor of f, in s; every guard on fx's clock. */
static mg_guard *set_guard(mg_set *s, struct fixture *f, uint32_t max_defer_usec) {
        struct mg_guard_options o = options(max_defer_usec);
        mg_guard *g = NULL;
        cr_assert_eq(mg_guard_new_internal(f->dir, &o, MG_CGROUP_ANY_FS, &f->io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        cr_assert_eq(mg_set_add_guard(s, g), 0);
        return g;
}

static int tick_at(mg_guard *g, uint64_t dt_usec) {
        fx.now_usec += dt_usec;
        return mg_guard_tick(g);
}

/* One period of the set on the injected clock. */
static int step(mg_set *s) {
        fx.now_usec += TICK;
        return mg_set_process(s);
}

/* The actor of f overshoots: 300 of 256 MiB, used 273 (270 anon: below
 * the hard bound of a deferral, limit + limit/8). */
static void overshoot(struct fixture *f) {
        fixture_current(f, 300 * MG_MIB);
        fixture_stat(f, 270 * MG_MIB, 0, 3 * MG_MIB, 0, 0, 0, 0);
}

static void emptied(struct fixture *f) {
        fixture_write(f, "cgroup.events", "populated 0\nfrozen 0\n");
}

TestSuite(reentry, .init = setup, .fini = teardown);

/* A guard alone, freed on MG_EVENT_GONE while it waits for the cgroup it
 * killed to empty: the tick that told it returns -ENODEV, and the guard
 * goes then. */
Test(reentry, guard_freed_on_gone) {
        int fds = fixture_open_fds();
        mg_guard *g = lone_guard(0);
        overshoot(&fx);
        cr_assert_eq(tick_at(g, TICK), 1);
        when(MG_EVENT_GONE, NULL, DO_FREE_GUARD, g);
        fx.fail_errno = ENODEV;
        cr_expect_eq(tick_at(g, TICK), -ENODEV);
        fx.fail_errno = 0;
        cr_expect(cb.fired);
        cr_expect_eq(seen.after, 0, "told after its free");
        cr_expect_eq(fixture_open_fds(), fds, "freed as the tick returned");
}

/* Freed on its kill record, with members left that outlived the kill: the
 * unkillable report that would follow is not told. */
Test(reentry, guard_freed_on_kill) {
        char procs[32];
        int fds = fixture_open_fds();
        mg_guard *g = lone_guard(0);
        snprintf(procs, sizeof(procs), "%d\n", (int) getpid());
        fixture_write(&fx, "cgroup.procs", procs);
        overshoot(&fx);
        cr_assert_eq(tick_at(g, TICK), 1);
        uint64_t killed_at = fx.now_usec, wait = g->opt.kill_wait_usec;
        when(MG_EVENT_KILL, NULL, DO_FREE_GUARD, g);
        while (!cb.fired && fx.now_usec - killed_at <= wait)
                cr_expect_geq(tick_at(g, TICK), 0);
        cr_assert(cb.fired);
        cr_expect_eq(seen.n[MG_EVENT_UNKILLABLE], 0);
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* Freed from its log callback, on the line of its kill: the kill is made
 * (it was under way), nothing is told after, and the guard goes. */
Test(reentry, guard_freed_from_its_log) {
        int fds = fixture_open_fds();
        mg_guard *g = lone_guard(0);
        when(0, "killed (", DO_FREE_GUARD, g);
        overshoot(&fx);
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect(cb.fired);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* Freed on MG_EVENT_PRE_KILL: no kill by it. */
Test(reentry, guard_freed_on_pre_kill_makes_no_kill) {
        int fds = fixture_open_fds();
        mg_guard *g = lone_guard(2000 * MG_USEC_PER_MSEC);
        when(MG_EVENT_PRE_KILL, NULL, DO_FREE_GUARD, g);
        overshoot(&fx);
        cr_expect_eq(tick_at(g, TICK), 0);
        cr_expect(cb.fired);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* Freed on MG_EVENT_LEND_EXPIRED: memory.high was restored before it was
 * told. */
Test(reentry, guard_freed_on_lend_expired) {
        int fds = fixture_open_fds();
        fixture_write(&fx, "memory.high", "241172480\n");
        mg_guard *g = lone_guard(0);
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 1000 * MG_USEC_PER_MSEC, NULL), 0);
        when(MG_EVENT_LEND_EXPIRED, NULL, DO_FREE_GUARD, g);
        cr_expect_eq(tick_at(g, 1000 * MG_USEC_PER_MSEC), 1);
        cr_expect(cb.fired);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(fixture_open_fds(), fds);
}

/* mg_guard_free() of a lent guard tells MG_EVENT_LEND_END; a callback that
 * frees the guard again there does nothing more. */
Test(reentry, guard_freed_again_on_the_lend_end_of_its_free) {
        int fds = fixture_open_fds();
        fixture_write(&fx, "memory.high", "241172480\n");
        mg_guard *g = lone_guard(0);
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, NULL), 0);
        when(MG_EVENT_LEND_END, NULL, DO_FREE_GUARD, g);
        mg_guard_free(g);
        cr_expect(cb.fired);
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(fixture_open_fds(), fds);
}

/* Freed from the log of an error mg_guard_report() met: the report
 * returns the error, and its MG_EVENT_ERROR is not told. */
Test(reentry, guard_freed_during_its_report) {
        struct mg_report rep = { .size = sizeof(rep) };
        int fds = fixture_open_fds();
        mg_guard *g = lone_guard(0);
        when(0, "reading memory.current", DO_FREE_GUARD, g);
        fx.fail_errno = EIO;
        cr_expect_eq(mg_guard_report(g, &rep), -EIO);
        fx.fail_errno = 0;
        cr_expect(cb.fired);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 0);
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* mg_guard_tick() of the guard from its own callback: -EDEADLK, and the
 * tick that runs the callback goes on (the kill is made). */
Test(reentry, guard_tick_from_its_callback_is_refused) {
        mg_guard *g = lone_guard(2000 * MG_USEC_PER_MSEC);
        when(MG_EVENT_PRE_KILL, NULL, DO_TICK, g);
        overshoot(&fx);
        cr_expect_eq(tick_at(g, TICK), 1);
        cr_expect(cb.fired);
        cr_expect_eq(cb.ret, -EDEADLK);
        cr_expect_eq(seen.n[MG_EVENT_PRE_KILL], 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        emptied(&fx);
        cr_expect_eq(tick_at(g, TICK), 0, "and ticks work again after it");
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1);
        mg_guard_free(g);
}

/* The other calls work from a callback: here MG_EVENT_PRE_KILL's. */
Test(reentry, other_calls_work_from_a_callback) {
        mg_guard *g = lone_guard(2000 * MG_USEC_PER_MSEC);
        when(MG_EVENT_PRE_KILL, NULL, DO_OTHERS, g);
        overshoot(&fx);
        cr_expect_eq(tick_at(g, TICK), 0, "deferred");
        cr_expect(cb.fired);
        mg_guard_free(g);

        mg_set *s;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        memset(&cb, 0, sizeof(cb));
        memset(&seen, 0, sizeof(seen));
        cb.s = s;
        when(MG_EVENT_PRE_KILL, NULL, DO_OTHERS, NULL);
        (void) set_guard(s, &fx, 2000 * MG_USEC_PER_MSEC);
        cr_expect_eq(step(s), 0);
        cr_expect(cb.fired);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"), "deferred");
        cr_assert_not_null(cb.added);
        cr_expect_eq(mg_set_size(s), 2);
        mg_set_free(s);
}

/* Both guards of a set kill; the first record's callback frees the set:
 * the other guard's record is not told, and mg_set_process() frees the
 * set (fds and all) as it returns. */
Test(reentry, set_freed_on_kill) {
        mg_set *s;
        int fds = fixture_open_fds();
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        (void) set_guard(s, &fx, 0);
        (void) set_guard(s, &fb, 0);
        overshoot(&fx);
        overshoot(&fb);
        cr_expect_eq(step(s), 2);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_str_eq(fixture_read(&fb, "cgroup.kill"), "1");
        emptied(&fx);
        emptied(&fb);
        cb.s = s;
        when(MG_EVENT_KILL, NULL, DO_FREE_SET, NULL);
        cr_expect_geq(step(s), 0);
        cr_expect(cb.fired);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds, "the set and its guards freed");
}

/* The same from a guard's log callback, mid-tick (the line of its kill). */
Test(reentry, set_freed_from_a_guards_log) {
        mg_set *s;
        int fds = fixture_open_fds();
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        (void) set_guard(s, &fx, 0);
        (void) set_guard(s, &fb, 0);
        overshoot(&fx);
        overshoot(&fb);
        cb.s = s;
        when(0, "killed (", DO_FREE_SET, NULL);
        cr_expect_geq(step(s), 0);
        cr_expect(cb.fired);
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* The set's own log: a removed guard's restore failed (the log says the
 * lend record stays); freeing the set there frees it once
 * mg_set_process() returns. */
Test(reentry, set_freed_from_its_own_log) {
        struct mg_set_options so = { .size = sizeof(so), .log = on_log };
        mg_set *s;
        int fds = fixture_open_fds();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(&so, &s), 0);
        mg_guard *g = set_guard(s, &fx, 0);
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, NULL), 0);
        __atomic_store_n(&fx.fail_high_write_errno, EIO, __ATOMIC_SEQ_CST);
        cb.s = s;
        when(0, "as the guard goes", DO_FREE_SET, NULL);
        cr_assert_eq(mg_set_remove(s, g), 0);
        for (int i = 0; i < 5000 && !cb.fired; i++) {
                cr_expect_geq(mg_set_process(s), 0);
                if (!cb.fired)
                        (void) poll(NULL, 0, 1);
        }
        cr_assert(cb.fired, "%s", seen.log);
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* mg_set_process() from a callback of its own guard: -EDEADLK. */
Test(reentry, set_process_from_a_callback_is_refused) {
        mg_set *s;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        (void) set_guard(s, &fx, 0);
        overshoot(&fx);
        cr_expect_eq(step(s), 1);
        emptied(&fx);
        cb.s = s;
        when(MG_EVENT_KILL, NULL, DO_PROCESS, NULL);
        cr_expect_geq(step(s), 0);
        cr_expect(cb.fired);
        cr_expect_eq(cb.ret, -EDEADLK);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_geq(step(s), 0, "and it works again after it");
        mg_set_free(s);
}

/* mg_guard_tick() of a set's guard from its own callback: -EDEADLK. */
Test(reentry, set_guard_tick_from_its_callback_is_refused) {
        mg_set *s;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        (void) set_guard(s, &fx, 2000 * MG_USEC_PER_MSEC);
        overshoot(&fx);
        when(MG_EVENT_PRE_KILL, NULL, DO_TICK, NULL);
        cr_expect_eq(step(s), 1);
        cr_expect(cb.fired);
        cr_expect_eq(cb.ret, -EDEADLK);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        mg_set_free(s);
}

/* A set's guard removed by its own callback outside mg_set_process(): in
 * mg_guard_report(), from the log of the error it met.  Out of the set at
 * once, freed when the report returns. */
Test(reentry, set_guard_removed_during_its_report) {
        struct mg_report rep = { .size = sizeof(rep) };
        struct mg_stats st = { .size = sizeof(st) };
        mg_set *s;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        int fds = fixture_open_fds();
        mg_guard *g = set_guard(s, &fx, 0);
        cr_expect_eq(step(s), 0);
        cb.s = s;
        when(0, "reading memory.current", DO_REMOVE, g);
        fx.fail_errno = EIO;
        cr_expect_eq(mg_guard_report(g, &rep), -EIO);
        fx.fail_errno = 0;
        cr_expect(cb.fired);
        cr_expect_eq(cb.ret, 0);
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(mg_set_size(s), 0);
        cr_expect_eq(mg_set_get_stats(s, &st), 0);
        cr_expect_eq(st.fast_ticks, 1, "its counts kept by the set");
        cr_expect_eq(fixture_open_fds(), fds, "freed as the report returned");
        mg_set_free(s);
}

/* The set freed from the same callback: once the report returns. */
Test(reentry, set_freed_during_a_guards_report) {
        struct mg_report rep = { .size = sizeof(rep) };
        mg_set *s;
        int fds = fixture_open_fds();
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *g = set_guard(s, &fx, 0);
        (void) set_guard(s, &fb, 0);
        cb.s = s;
        when(0, "reading memory.current", DO_FREE_SET, g);
        fx.fail_errno = EIO;
        cr_expect_eq(mg_guard_report(g, &rep), -EIO);
        fx.fail_errno = 0;
        cr_expect(cb.fired);
        cr_expect_eq(seen.after, 0);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* The set freed by the log of the guard mg_set_add() makes (a lend record
 * it cannot read on the directory): mg_set_add() returns -ECANCELED, and
 * the set is gone as it returns. */
Test(reentry, set_freed_during_set_add) {
        struct mg_guard_options o = options(0);
        mg_guard *g = NULL;
        mg_set *s;
        int fds = fixture_open_fds();
        if (setxattr(fx.dir, MG_LEND_XATTR, "garbage", 7, 0) < 0)
                cr_skip_test("%s has no user xattrs", fx.dir);
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        cb.s = s;
        when(0, "a lend record is there", DO_FREE_SET, NULL);
        cr_expect_eq(mg_set_add_internal(s, fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -ECANCELED);
        cr_expect(cb.fired, "%s", seen.log);
        cr_expect_null(g);
        cr_expect_eq(fixture_open_fds(), fds);
}

/* mg_guard_free() of a set's guard is refused, from its callback or not:
 * the set owns it (mg_set_remove() frees it). */
Test(reentry, set_guard_free_is_refused) {
        mg_set *s;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *g = set_guard(s, &fx, 0);
        overshoot(&fx);
        when(0, "killed (", DO_FREE_GUARD, g);
        cr_expect_eq(step(s), 1);
        cr_expect(cb.fired);
        cr_expect(strstr(seen.log, "not freed") != NULL, "%s", seen.log);
        cr_expect_eq(mg_set_size(s), 1);
        emptied(&fx);
        cr_expect_geq(step(s), 0);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1, "it goes on");
        cr_expect_null(mg_guard_free(g));
        cr_expect_eq(mg_set_size(s), 1);
        cr_expect_eq(mg_set_remove(s, g), 0);
        mg_set_free(s);
}

/* Freed on MG_EVENT_LEND_BEGIN: mg_guard_lend_begin() returns as usual (its
 * id given), and the free that follows ends the lend, untold. */
Test(reentry, guard_freed_on_lend_begin) {
        uint64_t id = 0;
        int fds = fixture_open_fds();
        fixture_write(&fx, "memory.high", "241172480\n");
        mg_guard *g = lone_guard(0);
        when(MG_EVENT_LEND_BEGIN, NULL, DO_FREE_GUARD, g);
        cr_expect_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &id), 0);
        cr_expect(cb.fired);
        cr_expect_eq(id, 1);
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(fixture_open_fds(), fds);
}

/* Freed on the MG_EVENT_LEND_END of mg_guard_lend_end() (a guard alone). */
Test(reentry, guard_freed_on_lend_end) {
        uint64_t id = 0;
        int fds = fixture_open_fds();
        fixture_write(&fx, "memory.high", "241172480\n");
        mg_guard *g = lone_guard(0);
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &id), 0);
        when(MG_EVENT_LEND_END, NULL, DO_FREE_GUARD, g);
        cr_expect_eq(mg_guard_lend_end(g, id), 0);
        cr_expect(cb.fired);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(fixture_open_fds(), fds);
}

/* A set's guard removed, or its set freed, on MG_EVENT_LEND_BEGIN: the
 * lend is ended through the set's worker (mg_set_free() waits for it). */
Test(reentry, set_guard_removed_on_lend_begin) {
        mg_set *s;
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        int fds = fixture_open_fds();
        mg_guard *g = set_guard(s, &fx, 0);
        cb.s = s;
        when(MG_EVENT_LEND_BEGIN, NULL, DO_REMOVE, g);
        cr_expect_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, NULL), 0);
        cr_expect(cb.fired);
        cr_expect_eq(cb.ret, 0);
        cr_expect_eq(mg_set_size(s), 0);
        for (int i = 0; i < 5000 && fixture_open_fds() > fds; i++) {
                (void) mg_set_process(s);
                (void) poll(NULL, 0, 1);
        }
        cr_expect_eq(fixture_open_fds(), fds, "freed once its restore was done");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        mg_set_free(s);
}

Test(reentry, set_freed_on_lend_begin) {
        mg_set *s;
        int fds = fixture_open_fds();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *g = set_guard(s, &fx, 0);
        cb.s = s;
        when(MG_EVENT_LEND_BEGIN, NULL, DO_FREE_SET, g);
        cr_expect_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, NULL), 0);
        cr_expect(cb.fired);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(fixture_open_fds(), fds);
}

Test(reentry, set_process_from_lend_begin_is_refused) {
        mg_set *s;
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        mg_guard *g = set_guard(s, &fx, 0);
        cb.s = s;
        when(MG_EVENT_LEND_BEGIN, NULL, DO_PROCESS, g);
        cr_expect_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, NULL), 0);
        cr_expect(cb.fired);
        cr_expect_eq(cb.ret, -EDEADLK);
        mg_set_free(s);
}
