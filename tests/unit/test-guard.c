/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A guard alone on the fixture tree, with the injected clock: what it
 * reads, its line, its kills and what it tells of them, lends, errors.
 * The same suite (guard) goes on in test-set.c (guards in a set) and
 * test-sizes.c (the sized structs); its harness is guard-suite.h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "guard-suite.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"
#include "util.h"

TestSuite(guard, .init = setup, .fini = teardown);

Test(guard, refuses_non_cgroup2_dir) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        mg_guard_options_init(&o, 256 * MG_MIB);
        cr_expect_eq(mg_guard_new(fx.dir, &o, &g), -ENOTSUP);
        cr_expect_null(g);
        cr_expect_eq(mg_guard_new("/nonexistent/memguard", &o, &g), -ENOENT);
}

Test(guard, required_and_optional_files) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        mg_guard_options_init(&o, 256 * MG_MIB);
        /* older kernels: no cgroup.kill, no memory.events.local, no PSI */
        fixture_remove(&fx, "cgroup.kill");
        fixture_remove(&fx, "memory.events.local");
        fixture_remove(&fx, "memory.pressure");
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        struct mg_report rep = { .size = sizeof(rep) };
        cr_expect_eq(mg_guard_report(g, &rep), 0);
        mg_guard_free(g);
        /* no memory controller: refused with a clear errno */
        fixture_remove(&fx, "memory.stat");
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -ENOENT);
}

Test(guard, fast_path_reads_only_memory_current) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 100 * MG_MIB);
        for (int i = 0; i < 10; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(fx.reads, 10, "one read per fast tick");
        cr_expect_eq(fx.reads_of[MG_CG_CURRENT], 10);
        cr_expect_eq(fx.opens, 0, "no open after mg_guard_new");
        mg_guard_free(g);
}

Test(guard, slow_path_read_counts) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 100 * MG_MIB, 140 * MG_MIB, 2 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        /* current, stat, events.local, and both pressure files: the stall
         * rules need PSI at both ends of their windows, from the start */
        cr_expect_eq(fx.reads, 5);
        cr_expect_eq(fx.reads_of[MG_CG_STAT], 1, "memory.stat read once");
        cr_expect_eq(fx.reads_of[MG_CG_PRESSURE], 1, "PSI whether or not the working set is lost");
        cr_expect_eq(fx.reads_of[MG_CG_IO_PRESSURE], 1);
        fixture_reset_counts(&fx);
        for (int i = 0; i < 13; i++)
                tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(fx.reads, 13 * 5, "the same five on every slow tick");
        cr_expect_eq(fx.opens, 0);
        mg_guard_free(g);
}

Test(guard, line_follows_kernel_limits) {
        /* memory.high at 90 % of the limit (kubelet MemoryQoS), read at
         * mg_guard_new(): the line is 230.4 MiB less a sixteenth of it */
        char high[32];
        snprintf(high, sizeof(high), "%" PRIu64 "\n", 256 * MG_MIB * 9 / 10);
        fixture_write(&fx, "memory.high", high);
        mg_guard *g = new_guard();
        cr_expect_eq(g->params.line_bytes, 256 * MG_MIB * 9 / 10 - 256 * MG_MIB * 9 / 160);
        fixture_current(&fx, 230 * MG_MIB);
        fixture_stat(&fx, 100 * MG_MIB, 120 * MG_MIB, 2 * MG_MIB, 0, 0, 0, 0);
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(fx.reads_of[MG_CG_STAT], 1, "pressed against memory.high below limit - margin: slow path");

        /* raised from outside: seen at the next re-read, MG_LIMITS_REREAD_USEC
         * after mg_guard_new() (the first tick above was one of its ticks) */
        const int period = (int) (MG_LIMITS_REREAD_USEC / (250 * MG_USEC_PER_MSEC));
        fixture_write(&fx, "memory.high", "max\n");
        fixture_reset_counts(&fx);
        for (int i = 0; i < period - 2; i++)
                tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(fx.reads_of[MG_CG_MAX], 0, "not re-read before the period");
        cr_expect_eq(fx.reads_of[MG_CG_STAT], (unsigned) period - 2);
        fixture_reset_counts(&fx);
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(fx.reads_of[MG_CG_HIGH], 1);
        cr_expect_eq(fx.reads_of[MG_CG_MAX], 1);
        cr_expect_eq(g->params.line_bytes, 240 * MG_MIB);
        cr_expect_eq(fx.reads, 4, "memory.high, memory.max, memory.current, and memory.events.local once "
                                  "on leaving the slow path (a kernel OOM kill there is not missed)");
        cr_expect_eq(fx.reads_of[MG_CG_EVENTS_LOCAL], 1);

        /* a memory.max below the line, lowered from outside: the fast path
         * reads memory.current alone until the next re-read */
        fixture_write(&fx, "memory.max", "209715200\n");
        fixture_reset_counts(&fx);
        for (int i = 0; i < period - 1; i++)
                tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(fx.reads, (unsigned) period - 1, "one read per fast tick");
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(g->params.line_bytes, 200 * MG_MIB - 200 * MG_MIB / 16);
        cr_expect_eq(fx.reads_of[MG_CG_STAT], 1, "230 MiB is at a 200 MiB memory.max");
        mg_guard_free(g);
}

Test(guard, lend_moves_the_line) {
        uint64_t lend = 0;
        fixture_write(&fx, "memory.high", "209715200\n");
        mg_guard *g = new_guard();
        cr_expect_eq(g->params.line_bytes, 200 * MG_MIB - 200 * MG_MIB / 16);
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
        cr_expect_eq(g->params.line_bytes, 240 * MG_MIB, "memory.high lent to max");
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_eq(g->params.line_bytes, 200 * MG_MIB - 200 * MG_MIB / 16, "back with memory.high");
        mg_guard_free(g);
}

Test(guard, page_cache_at_the_limit_never_kills) {
        mg_guard *g = new_guard();
        /* memory.max unset: page cache, half of it dirty, takes current far
         * past the limit; used stays at 60 MiB. */
        fixture_current(&fx, 600 * MG_MIB);
        fixture_stat(&fx, 50 * MG_MIB, 540 * MG_MIB, 8 * MG_MIB, 2 * MG_MIB, 0, 270 * MG_MIB, 64 * MG_MIB);
        for (int i = 0; i < 100; i++) {
                fixture_events(&fx, (uint64_t) i * 17, 0, 0);
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        }
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_eq(fx.writes, 0, "nothing written, cgroup.kill untouched");
        mg_guard_free(g);
}

Test(guard, stale_stat_cannot_kill) {
        mg_guard *g = new_guard();
        /* memory.current exact at 250 MiB; memory.stat not yet flushed
         * still says 300 MiB of anon. */
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 300 * MG_MIB, 0, 2 * MG_MIB, 0, 0, 0, 0);
        for (int i = 0; i < 20; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        mg_guard_free(g);
}

Test(guard, overshoot_kills_and_reports) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 1 * MG_MIB, 4096, 1 * MG_MIB, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0, "the record comes once the cgroup is empty");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.reason, MG_KILL_OVERSHOOT);
        cr_expect_eq(seen.kill.method, MG_KILL_CGROUP_KILL);
        cr_expect_eq(seen.kill.report.used_bytes, 280 * MG_MIB + 3 * MG_MIB + 1 * MG_MIB + 4096);
        cr_expect_gt(seen.kill.report.used_bytes, seen.kill.report.limit_bytes);
        cr_expect_eq(seen.kill.report.current_bytes, 300 * MG_MIB);
        cr_expect_eq(seen.kill.report.stat.file_dirty, 1 * MG_MIB);
        cr_expect_eq(seen.kill.empty_usec - seen.kill.kill_usec, 500 * MG_USEC_PER_MSEC);
        cr_expect_not(seen.kill.empty_timed_out);
        char buf[1024];
        mg_kill_record_format(&seen.kill, buf, sizeof(buf));
        cr_expect(strstr(buf, "used memory above its limit") != NULL, "%s", buf);
        cr_expect(strstr(buf, "limit 262144kB") != NULL, "%s", buf);

        /* hold-off: no second kill while counters settle, then watching again */
        fixture_write(&fx, "cgroup.kill", "");
        fixture_write(&fx, "cgroup.events", "populated 1\nfrozen 0\n");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(tick_at(g, 3000 * MG_USEC_PER_MSEC), 1, "after the hold-off a new overshoot is acted on");
        mg_guard_free(g);
}

/* Memory held by no process: the actor's last process wrote a tmpfs file
 * and exited, or the worker holds a memfd charged to it, or slab outlives
 * its processes.  cgroup.kill on an empty cgroup succeeds and frees
 * nothing: no kill, one report per episode, and a process that appears is
 * judged by the usual rule. */
Test(guard, empty_cgroup_over_limit_is_reported_not_killed) {
        mg_guard *g = new_guard();
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 0, 4 * MG_MIB, 2 * MG_MIB, 290 * MG_MIB, 0, 0, 0);
        for (int i = 0; i < 240; i++) /* 60 s */
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0, "tick %d", i);
        cr_expect_eq(fx.writes, 0, "cgroup.kill written %u times for an empty cgroup", fx.writes);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_assert_eq(seen.n[MG_EVENT_EMPTY_OVER_LIMIT], 1, "once per episode, not %d times",
                     seen.n[MG_EVENT_EMPTY_OVER_LIMIT]);
        cr_expect_eq(seen.empty.limit_bytes, 256 * MG_MIB);
        cr_expect_eq(seen.empty.used_bytes, 292 * MG_MIB);
        cr_expect_eq(seen.empty.current_bytes, 300 * MG_MIB);
        cr_expect_eq(seen.empty.stat.shmem, 290 * MG_MIB, "what holds it");
        cr_expect_eq(seen.empty.stat.kernel, 2 * MG_MIB);
        cr_expect_eq(seen.empty.stat.anon, 0);
        cr_expect_eq(seen.empty.stat.file, 4 * MG_MIB, "memory.stat whole");
        cr_expect_eq(seen.empty.verdict, MG_VERDICT_OVERSHOOT);

        /* used back at the limit (still on the slow path) ends the episode;
         * over it again is a second one */
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 0, 4 * MG_MIB, 2 * MG_MIB, 240 * MG_MIB, 0, 0, 0);
        for (int i = 0; i < 8; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_EMPTY_OVER_LIMIT], 1);
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 0, 4 * MG_MIB, 2 * MG_MIB, 290 * MG_MIB, 0, 0, 0);
        for (int i = 0; i < 40; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_EMPTY_OVER_LIMIT], 2, "a second episode: %d reports",
                     seen.n[MG_EVENT_EMPTY_OVER_LIMIT]);
        cr_expect_eq(fx.writes, 0);

        /* a process appears in a cgroup still over its limit: an overshoot
         * with a member, killed as usual, detected when it became one */
        fixture_write(&fx, "cgroup.events", "populated 1\nfrozen 0\n");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1, "a member over the limit is killed");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.reason, MG_KILL_OVERSHOOT);
        cr_expect_leq(seen.kill.kill_usec - seen.kill.detect_usec, 250 * MG_USEC_PER_MSEC,
                      "detected %" PRIu64 " ms before the kill: the empty episode counted",
                      (seen.kill.kill_usec - seen.kill.detect_usec) / 1000);
        cr_expect_eq(seen.n[MG_EVENT_EMPTY_OVER_LIMIT], 2);
        mg_guard_free(g);
}

Test(guard, kill_waits_and_times_out) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        for (int i = 0; i < 7; i++)
                tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        tick_at(g, 1000 * MG_USEC_PER_MSEC); /* 2 s + 1 s/GiB for 256 MiB = 2 s */
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect(seen.kill.empty_timed_out);
        mg_guard_free(g);
}

/* Members that never die (D state, stuck in I/O): cgroup.events stays
 * "populated 1" after the kill.  After the kill wait: the kill record (timed
 * out), then one unkillable report with the pids and their states; while the
 * same members are there, no new kill and no new report; new pids, or the
 * cgroup emptying, bring back the usual rules.  The pids: this process
 * (its /proc/PID/stat reads 'R') and one that cannot exist (above the
 * kernel's PID_MAX_LIMIT, 4 Mi): '?'. */
Test(guard, unkillable_members_reported_once) {
        char procs[64], more[96];
        mg_guard *g = new_guard();
        uint64_t wait = g->opt.kill_wait_usec;
        snprintf(procs, sizeof(procs), "%d\n99999999\n", (int) getpid());
        fixture_write(&fx, "cgroup.procs", procs);
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        cr_assert_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        uint64_t killed_at = fx.now_usec;
        fixture_write(&fx, "cgroup.kill", "");
        fixture_reset_counts(&fx);
        while (fx.now_usec - killed_at < wait)
                tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect(seen.kill.empty_timed_out, "the first record, timed out as before");
        cr_assert_eq(seen.n[MG_EVENT_UNKILLABLE], 1, "reported at the end of the kill wait");
        cr_expect_eq(seen.kills_before_unkillable, 1, "right after the kill record");
        cr_expect(seen.unkillable_kill.empty_timed_out);
        cr_expect_eq(seen.unkillable.kill_usec, seen.kill.kill_usec);
        cr_expect_geq(seen.unkillable.wait_usec, wait);
        cr_expect_eq(seen.unkillable.n_members, 2);
        cr_expect_not(seen.unkillable.more_members);
        cr_assert_eq(seen.unkillable.n_pids, 2);
        cr_expect_eq(seen.unkillable.pids[0], getpid());
        cr_expect_eq(seen.unkillable.states[0], 'R', "state of this process: %c", seen.unkillable.states[0]);
        cr_expect_eq(seen.unkillable.pids[1], 99999999);
        cr_expect_eq(seen.unkillable.states[1], '?', "no such process: %c", seen.unkillable.states[1]);

        /* 60 s of the same members, over the limit: no kill, no report */
        for (int i = 0; i < 240; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0, "tick %d", i);
        cr_expect_eq(fx.writes, 0, "cgroup.kill written %u times after the report", fx.writes);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1, "%d kill records", seen.n[MG_EVENT_KILL]);
        cr_expect_eq(seen.n[MG_EVENT_UNKILLABLE], 1, "%d unkillable reports", seen.n[MG_EVENT_UNKILLABLE]);
        cr_expect_not(mg_guard_is_killing(g));

        /* a new pid: the usual rules, a kill (and its own report) */
        snprintf(more, sizeof(more), "%s12345\n", procs);
        fixture_write(&fx, "cgroup.procs", more);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1, "new members are killed");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        fixture_write(&fx, "cgroup.kill", "");
        fixture_write(&fx, "cgroup.procs", procs); /* 12345 died, the old ones did not */
        for (uint64_t t0 = fx.now_usec; fx.now_usec - t0 < wait;)
                tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 2);
        cr_expect_eq(seen.n[MG_EVENT_UNKILLABLE], 2, "one report per kill that did not take");
        cr_expect_eq(seen.unkillable.n_members, 2);

        /* the old ones go and the cgroup empties: forgotten, so members
         * listed later (the same pid numbers, reused) are killed as usual */
        fixture_write(&fx, "cgroup.procs", "");
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        for (int i = 0; i < 20; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        fixture_write(&fx, "cgroup.procs", procs);
        fixture_write(&fx, "cgroup.events", "populated 1\nfrozen 0\n");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1, "a cgroup that emptied starts over");
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        mg_guard_free(g);
}

Test(guard, stall_kills_after_window) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 255 * MG_MIB);
        uint64_t t0 = fx.now_usec;
        int acted = 0, i;
        for (i = 1; i <= 40 && !acted; i++) {
                fx.restore_file = (uint64_t) i * 100;
                fx.mapped = 40 * MG_MIB; /* faulting: its cache mapped */
                fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
                fixture_events(&fx, 0, (uint64_t) i * 3, 0);
                fixture_psi(&fx, "memory.pressure", (uint64_t) i * 150 * MG_USEC_PER_MSEC);
                acted = tick_at(g, 250 * MG_USEC_PER_MSEC);
        }
        cr_assert_eq(acted, 1);
        /* PSI is read from the first slow tick on: the kill comes when the
         * 3 s window from that tick is covered */
        cr_expect_eq(fx.now_usec - t0, 3250 * MG_USEC_PER_MSEC);
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.reason, MG_KILL_STALL);
        cr_expect_geq(seen.kill.report.stall_usec, 3000 * MG_USEC_PER_MSEC);
        cr_expect_eq(seen.kill.report.stat.file, 40 * MG_MIB, "the record has memory.stat whole");
        cr_expect_eq(seen.kill.report.stat.inactive_file, 40 * MG_MIB);
        mg_guard_free(g);
}

/* Tick i of the sequential file-hot (docs/field-facts.md F3) at a 256 MiB guard: no
 * restores, 190 of 200 MiB of cache mapped and re-read at 40 MiB/s, max
 * events +5 and io some +30 % per tick, memory.current as given. */
static int tick_refault_thrash(mg_guard *g, int i, uint64_t current) {
        fx.mapped = 190 * MG_MIB;
        fx.refault_file = (uint64_t) i * 10 * MG_MIB / 4096;
        fixture_current(&fx, current);
        fixture_stat(&fx, 40 * MG_MIB, 200 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        fixture_events(&fx, 0, (uint64_t) i * 5, 0);
        fixture_psi(&fx, "io.pressure", (uint64_t) i * 75 * MG_USEC_PER_MSEC);
        return tick_at(g, 250 * MG_USEC_PER_MSEC);
}

Test(guard, refault_thrash_killed_through_dips) {
        /* every 3 s memory.current dips below the line for a tick, as
         * 6.12's batched reclaim makes it do */
        mg_guard *g = new_guard();
        uint64_t t0 = fx.now_usec;
        int acted = 0;
        for (int i = 1; i <= 100 && !acted; i++)
                acted = tick_refault_thrash(g, i, i % 12 == 0 ? 200 * MG_MIB : 255 * MG_MIB);
        cr_assert_eq(acted, 1);
        /* first slow tick at 0.25 s; the streak starts there, 12 s mapped */
        cr_expect_eq(fx.now_usec - t0, 12250 * MG_USEC_PER_MSEC);
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.reason, MG_KILL_STALL);
        cr_expect_eq(seen.kill.report.stall_signals, MG_STALL_REFAULT | MG_STALL_IO);
        cr_expect_eq(seen.kill.report.stall_usec, 12000 * MG_USEC_PER_MSEC);
        cr_expect_eq(seen.kill.report.stall_refault_bytes, UINT64_C(12) * 4 * 10 * MG_MIB);
        char buf[1024];
        mg_kill_record_format(&seen.kill, buf, sizeof(buf));
        cr_expect(strstr(buf, "re-read 491520kB of file pages while reclaim took 0kB in 12000ms (page cache 204800kB, "
                              "95% of it mapped)"),
                  "%s", buf);
        mg_guard_free(g);
}

Test(guard, leaving_the_limit_clears_the_windows) {
        /* the same thrash, but the actor gets below the line for 2 s, more
         * than half a stall window: what came before is not counted */
        mg_guard *g = new_guard();
        uint64_t t0 = fx.now_usec;
        int acted = 0;
        for (int i = 1; i <= 100 && !acted; i++)
                acted = tick_refault_thrash(g, i, i >= 24 && i < 32 ? 200 * MG_MIB : 255 * MG_MIB);
        cr_assert_eq(acted, 1);
        cr_expect_eq(fx.now_usec - t0, 8000 * MG_USEC_PER_MSEC + 12000 * MG_USEC_PER_MSEC, "12 s from the first slow tick after the stay below, not %" PRIu64 " ms", (fx.now_usec - t0) / 1000);
        mg_guard_free(g);
}

Test(guard, memory_stat_layout_change_is_followed) {
        mg_guard *g = new_guard();
        char buf[2048];
        /* at the limit, then the kernel's memory.stat gains a line above
         * anon (the tick finds other keys on its learnt lines and parses in
         * full again), then an overshoot */
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 290 * MG_MIB, 0, 3 * MG_MIB, 0, 0, 0, 0);
        snprintf(buf, sizeof(buf), "new_counter 1\n%s", fixture_read(&fx, "memory.stat"));
        fixture_write(&fx, "memory.stat", buf);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 0);
        mg_guard_free(g);
}

Test(guard, lend_restores_exact_value) {
        uint64_t lend = 0;
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "308281344");
        cr_expect(mg_guard_is_lent(g));
        cr_expect_eq(mg_guard_lend_begin(g, 1, 0, NULL), -EBUSY);
        cr_expect_eq(seen.n[MG_EVENT_LEND_BEGIN], 1);

        /* kills paused: a true overshoot during the lend is left alone */
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        for (int i = 0; i < 8; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));

        /* the snapshot left dirty page cache behind: no kill after the lend */
        fixture_current(&fx, 256 * MG_MIB);
        fixture_stat(&fx, 100 * MG_MIB, 150 * MG_MIB, 3 * MG_MIB, 0, 0, 120 * MG_MIB, 20 * MG_MIB);
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1);
        cr_expect_eq(mg_guard_lend_end(g, lend), -ENOENT);
        for (int i = 0; i < 8; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        mg_guard_free(g);
}

Test(guard, lend_all_writes_max_and_back) {
        uint64_t lend = 0;
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        /* an actor with no memory.high gets "max" back */
        fixture_write(&fx, "memory.high", "max\n");
        cr_assert_eq(mg_guard_lend_begin(g, 32 * MG_MIB, 0, &lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        mg_guard_free(g);
}

Test(guard, lend_deadline_restores) {
        uint64_t lend = 0;
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 1000 * MG_USEC_PER_MSEC, &lend), 0);
        cr_expect_eq(tick_at(g, 750 * MG_USEC_PER_MSEC), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect(seen.lend.restored);
        cr_expect_eq(seen.lend.found_high_bytes, MG_UNLIMITED);
        cr_expect_eq(mg_guard_lend_end(g, lend), -ENOENT, "the caller's late end is told it expired");
        mg_guard_free(g);
}

/* A lend has an identity.  Lend A expires during a slow write, a retry
 * begins lend B, then A's writer ends "its" lend late: B must hold, and
 * A's writer is told (-ESTALE).  Ids are never 0 and never reused. */
Test(guard, late_end_of_an_expired_lend_leaves_the_next_one) {
        mg_guard *g = new_guard();
        uint64_t a = 0, b = 0, c = 0, none = 4242;
        struct mg_lend_info last = {};
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 1000 * MG_USEC_PER_MSEC, &a), 0);
        cr_expect_neq(a, 0);
        cr_expect_eq(g->lend.info.id, a, "the lend's events carry its id");
        cr_expect_eq(mg_guard_get_lend_id(g), a);
        cr_expect_eq(tick_at(g, 1000 * MG_USEC_PER_MSEC), 1);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(mg_guard_get_lend_id(g), 0, "no lend open");

        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &b), 0);
        cr_expect_neq(b, a);
        cr_expect_neq(b, 0);
        cr_expect_eq(mg_guard_lend_begin(g, 1, 0, &none), -EBUSY);
        cr_expect_eq(none, 4242, "*ret_lend_id written on failure");
        last = g->lend.info;
        cr_expect_eq(mg_guard_lend_end(g, a), -ESTALE, "A's late end");
        cr_expect_eq(mg_guard_lend_end(g, 0), -ESTALE, "0 is never an id");
        cr_expect_eq(mg_guard_lend_end(g, b + 1), -ESTALE, "an id never given");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max", "A's late end ended B");
        cr_expect(mg_guard_is_lent(g));
        cr_expect_eq(mg_guard_get_lend_id(g), b);
        cr_expect(last.id == g->lend.info.id && last.old_high_bytes == g->lend.info.old_high_bytes &&
                  last.new_high_bytes == g->lend.info.new_high_bytes && last.deadline_usec == g->lend.info.deadline_usec,
                  "a stale end changed the lend");
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 0);

        /* kills stay paused under B: a true overshoot is left alone */
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));

        cr_expect_eq(mg_guard_lend_end(g, b), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1);
        cr_expect_eq(mg_guard_lend_end(g, b), -ENOENT);

        /* the next lend gets a new id again */
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &c), 0);
        cr_expect(c != a && c != b && c != 0);
        cr_expect_eq(mg_guard_lend_end(g, b), -ESTALE);
        cr_expect_eq(mg_guard_lend_end(g, c), 0);
        mg_guard_free(g);
}

/* Someone else changes memory.high during a lend (an in-place resize of
 * the actor during a snapshot): the end of the lend must not write the
 * saved value over theirs.  The lend ends all the same (kills resume) and
 * says it did not restore. */
Test(guard, lend_end_keeps_an_outside_change) {
        mg_guard *g = new_guard();
        uint64_t lend = 0;
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "308281344");
        fixture_write(&fx, "memory.high", "209715200\n"); /* resized to 200 MiB */
        seen.warnings = 0;
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "209715200\n", "the resize was overwritten");
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1);
        cr_expect_not(seen.lend.restored, "the event says restored");
        cr_expect_eq(seen.lend.found_high_bytes, 200 * MG_MIB);
        cr_expect_eq(seen.lend.new_high_bytes, 308281344);
        cr_expect_eq(seen.lend.old_high_bytes, 241172480);
        cr_expect_eq(seen.lend.id, lend);
        cr_expect_eq(seen.warnings, 1);
        cr_expect(strstr(seen.warning_log, "memory.high changed during the lend (209715200") != NULL, "%s",
                  seen.warning_log);
        cr_expect_eq(mg_guard_lend_end(g, lend), -ENOENT, "the lend is over");
        cr_expect_eq(g->params.line_bytes, 200 * MG_MIB - 200 * MG_MIB / 16, "the line follows the resize");
        /* kills resume */
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1");
        mg_guard_free(g);

        /* mg_guard_free() ending the lend leaves it too; an unchanged one
         * is restored, and says so */
        g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend), 0);
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect(seen.lend.restored);
        cr_expect_eq(seen.lend.found_high_bytes, 308281344);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, NULL), 0);
        fixture_write(&fx, "memory.high", "134217728\n");
        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "134217728\n");
        cr_expect_not(seen.lend.restored);
        cr_expect_eq(seen.lend.found_high_bytes, 128 * MG_MIB);
}

/* The kernel keeps memory.high in whole pages: a lend of part of a page
 * reads back rounded down, and that is still the lend's own value. */
Test(guard, lend_of_part_of_a_page_is_still_ours) {
        mg_guard *g = new_guard();
        uint64_t lend = 0;
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, 1000, 0, &lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241173480");
        cr_expect_eq(seen.lend.new_high_bytes, 241172480, "what the kernel keeps of it");
        fixture_write(&fx, "memory.high", "241172480\n"); /* as kernfs would read it back */
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect(seen.lend.restored);
        cr_assert_eq(mg_guard_lend_begin(g, 4096 + 1000, 0, &lend), 0);
        cr_assert_eq(mg_guard_lend_end(g, lend), 0); /* the fixture holds the bytes as written */
        cr_expect(seen.lend.restored);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        mg_guard_free(g);
}

/* The same at the deadline: the guard's own restore leaves the outside
 * value, ends the lend, and kills resume. */
Test(guard, lend_expiry_keeps_an_outside_change) {
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 1000 * MG_USEC_PER_MSEC, NULL), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        fixture_write(&fx, "memory.high", "268435456\n");
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 750 * MG_USEC_PER_MSEC), 0, "kills paused during the lend");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "268435456\n", "the resize was overwritten");
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_not(seen.lend.restored, "the event says restored");
        cr_expect_eq(seen.lend.found_high_bytes, 256 * MG_MIB);
        cr_expect_eq(seen.lend.new_high_bytes, MG_UNLIMITED);
        cr_expect(strstr(seen.warning_log, "lend deadline passed, memory.high left as found") != NULL, "%s",
                  seen.warning_log);
        cr_expect_str_eq(fixture_read(&fx, "cgroup.kill"), "1", "kills resume at the end of the lend");
        mg_guard_free(g);
}

Test(guard, lend_default_deadline_scales) {
        mg_guard *g = new_guard();
        cr_assert_eq(mg_guard_lend_begin(g, 1, 0, NULL), 0);
        /* 10 s + 256 MiB at 50 MiB/s (5 s, rounded down) */
        cr_expect_eq(g->lend.info.deadline_usec - fx.now_usec, 15000 * MG_USEC_PER_MSEC);
        mg_guard_free(g);
}

/* A deadline that does not fit the clock (UINT64_MAX: "never") saturates
 * instead of wrapping into the past, and never expires: not after hours of
 * ticks, not when the guard's clock is swapped for one far ahead. */
static uint64_t clock_far_ahead(void *userdata) {
        (void) userdata;
        return fx.now_usec + UINT64_C(1000000) * 3600 * 24 * 365;
}

Test(guard, lend_never_expires) {
        uint64_t lend = 0;
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, UINT64_MAX, &lend), 0);
        cr_expect_eq(g->lend.info.deadline_usec, UINT64_MAX);
        for (int i = 0; i < 1000; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0, "tick %d", i);
        cr_expect_eq(tick_at(g, UINT64_C(3600) * 1000 * MG_USEC_PER_MSEC), 0);
        mg_guard_set_clock(g, clock_far_ahead, NULL);
        cr_expect_eq(g->lend.info.deadline_usec, UINT64_MAX, "the clock swap moved a deadline of never");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect(mg_guard_is_lent(g));
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "308281344");
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");

        /* a finite deadline keeps the time it had left across a clock swap */
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 1000 * MG_USEC_PER_MSEC, &lend), 0);
        mg_guard_set_clock(g, clock_far_ahead, NULL);
        cr_expect_eq(g->lend.info.deadline_usec, clock_far_ahead(NULL) + 1000 * MG_USEC_PER_MSEC);
        cr_expect_eq(tick_at(g, 750 * MG_USEC_PER_MSEC), 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        mg_guard_free(g);
}

/* tick_usec is bounded (10 ms to 1 h): the set adds it to its heap's times. */
Test(guard, tick_usec_bounded) {
        static const uint64_t bad[] = { UINT64_MAX, UINT64_MAX / 2, UINT64_C(3600) * 1000 * MG_USEC_PER_MSEC + 1, 9 * MG_USEC_PER_MSEC };
        struct mg_guard_options o;
        mg_guard *g = NULL;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                mg_guard_options_init(&o, 256 * MG_MIB);
                o.tick_usec = bad[i];
                cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EINVAL,
                             "tick_usec %llu", (unsigned long long) bad[i]);
        }
        mg_guard_options_init(&o, 256 * MG_MIB);
        o.tick_usec = UINT64_C(3600) * 1000 * MG_USEC_PER_MSEC;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        cr_expect_eq(mg_guard_get_tick_usec(g), UINT64_C(3600) * 1000 * MG_USEC_PER_MSEC);
        mg_guard_free(g);
}

/* A guard freed while it lends ends the lend, as mg_guard_lend_end() does
 * (and mg_set_remove(), mg_set_free() for a set's guards: through the set's
 * worker, the guard freed once it is done, and told to no one, since the
 * guard has left the set): memory.high holds the old value again. */
Test(guard, free_ends_the_lend) {
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, NULL), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "308281344");
        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1);

        mg_set *s;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        for (int i = 0; i < 2; i++) {
                g = new_guard();
                cr_assert_eq(mg_set_add_guard(s, g), 0);
                cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, NULL), 0);
                cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
                if (i == 0) {
                        int fds = fixture_open_fds();
                        cr_expect_eq(mg_set_remove(s, g), 0);
                        cr_expect_eq(mg_set_size(s), 0, "the guard left the set at once");
                        /* freed (its fds closed) once its restore is done */
                        for (int k = 0; k < 5000 && fixture_open_fds() > fds - 5; k++) {
                                (void) mg_set_process(s);
                                (void) poll(NULL, 0, 1);
                        }
                } else {
                        mg_set_free(s);
                }
                cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480", "%s",
                                 i == 0 ? "mg_set_remove" : "mg_set_free");
        }
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1, "a removed guard's end told");
}

Test(guard, lend_without_memory_high) {
        struct mg_guard_options o;
        mg_guard *g;
        mg_guard_options_init(&o, 256 * MG_MIB);
        fixture_remove(&fx, "memory.high");
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        cr_expect_eq(mg_guard_lend_begin(g, 1, 0, NULL), -EOPNOTSUPP);
        cr_expect_not(mg_guard_is_lent(g));
        mg_guard_free(g);
}

Test(guard, read_errors_never_kill_and_recover) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        fx.fail_errno = EIO;
        for (int i = 0; i < 5; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), -EIO);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "one report per streak");
        cr_expect_eq(seen.last_error, -EIO);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        fx.fail_errno = 0;
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1, "recovers when the fault clears");
        mg_guard_free(g);
}

Test(guard, malformed_stat_is_an_error_not_a_kill) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 300 * MG_MIB);
        fixture_write(&fx, "memory.stat", "anon 99999999999\nanon 1\n");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), -EBADMSG);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1);
        fixture_write(&fx, "memory.stat", "anon 1");
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), -EBADMSG);
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        mg_guard_free(g);
}

Test(guard, vanished_cgroup) {
        mg_guard *g = new_guard();
        fx.fail_errno = ENODEV;
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), -ENODEV);
        cr_expect_eq(seen.n[MG_EVENT_GONE], 1);
        fx.fail_errno = 0;
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), -ENODEV, "a gone guard stays gone");
        cr_expect_eq(seen.n[MG_EVENT_GONE], 1);
        cr_expect_eq(mg_guard_lend_begin(g, 1, 0, NULL), -ENODEV);
        mg_guard_free(g);
}

Test(guard, kernel_oom_attributed) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        fixture_events(&fx, 0, 35, 0);
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        fixture_events(&fx, 0, 40, 1);
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(seen.n[MG_EVENT_KERNEL_OOM], 1);
        cr_expect_eq(seen.oom_count, 1);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        mg_guard_free(g);
}

Test(guard, throttled_reported_once_never_killed) {
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n"); /* 230 MiB */
        fixture_current(&fx, 246 * MG_MIB);
        fixture_stat(&fx, 240 * MG_MIB, 2 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        for (int i = 1; i <= 40; i++) {
                char cpu[64];
                fixture_events(&fx, (uint64_t) i * 17, 0, 0);
                fixture_psi(&fx, "memory.pressure", (uint64_t) i * 240 * MG_USEC_PER_MSEC);
                snprintf(cpu, sizeof(cpu), "usage_usec %d\n", i * 2000);
                fixture_write(&fx, "cpu.stat", cpu);
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        }
        cr_expect_eq(seen.n[MG_EVENT_THROTTLED], 1, "once per episode");
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0, "a throttle is not a kill");
        cr_expect_str_empty(fixture_read(&fx, "cgroup.kill"));
        mg_guard_free(g);
}

Test(guard, report_does_not_feed_the_window) {
        mg_guard *g = new_guard();
        struct mg_report rep = { .size = sizeof(rep) };
        uint64_t line = g->params.line_bytes, high_events = g->last_high_events;
        fixture_current(&fx, 255 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 1 * MG_MIB, 0, 2 * MG_MIB, 0);
        fixture_write(&fx, "memory.high", "241172480\n");
        fixture_events(&fx, 5, 0, 0);
        cr_assert_eq(mg_guard_report(g, &rep), 0);
        /* nor what the tick keeps: the high events it saw, its throttle
         * window, the line (memory.high is the tick's to follow) */
        cr_expect_eq(g->params.line_bytes, line);
        cr_expect_eq(g->last_high_events, high_events);
        cr_expect_eq(g->throttle_until_usec, 0);
        cr_expect_eq(rep.verdict, MG_VERDICT_NEAR);
        cr_expect_eq(rep.used_bytes, 204 * MG_MIB);
        cr_expect_eq(rep.high_bytes, 241172480);
        cr_expect_eq(rep.max_bytes, MG_UNLIMITED);
        cr_expect(!g->slow_state || g->slow_state->policy.count == 0);
        mg_guard_free(g);
}

/* What only the slow path needs (struct mg_slow: the window, the kill
 * record) is held while the guard is at its limit and given back once it
 * has stayed below the line for half a stall window; a dip keeps it. */
Test(guard, slow_state_only_at_the_limit) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 100 * MG_MIB);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_null(g->slow_state, "a guard far from its limit holds none");
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 1 * MG_MIB, 0, 2 * MG_MIB, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_assert_not_null(g->slow_state);
        cr_expect_eq(g->slow_state->policy.count, 1);
        fixture_current(&fx, 100 * MG_MIB);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_not_null(g->slow_state, "a dip below the line keeps the window");
        for (int i = 0; i < 6; i++)
                cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 0);
        cr_expect_null(g->slow_state, "given back after half a stall window (1.5 s) below");
        mg_guard_free(g);
}
