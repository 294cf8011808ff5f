/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel scenario suite: the failures memguard exists for, reproduced on
 * a real cgroup v2 (inside the VM harness, or natively on a host with a
 * delegated memory controller), with the library's public API guarding them.
 *
 * Tree: <root>/memguard-test-<pid>/<scenario>-<n>, memory io cpu pids
 * enabled down to the scenario cgroups.  Each scenario says which limits it
 * sets and what it expects; figures go out as "# key=value" TAP comments.
 *
 * Usage: memguard-kernel-tests [SCENARIO...]   (TAP on stdout)
 * Env:   MEMGUARD_TEST_CGROUP (default /sys/fs/cgroup), MEMGUARD_TEST_DISK
 *        (default /mnt/disk: a real disk file system), MEMGUARD_WORKLOAD.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>

#include "ktest.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "scenarios.h"

#define LIMIT (64 * MG_MIB)

/* Prints the working-set and pressure counters of cg over ms. */
static void thrash_note(const char *what, const char *cg, uint64_t ms);


/* ---- 1. anon overshoot ------------------------------------------------ */

struct overshoot_watch {
        struct mgt_events ev;
        const char *cg;
        uint64_t crossed_usec, below_usec, peak_current;
};

/* memory.current >= used at every instant (it also holds page cache and the
 * per-CPU charge stock), so its first crossing is an upper bound on when
 * used crossed: kill - crossing measured this way can only be too long. */
static void overshoot_sample(void *ud) {
        struct overshoot_watch *w = ud;
        uint64_t cur = UINT64_MAX;
        (void) mgt_cg_read_u64(w->cg, "memory.current", &cur);
        if (cur != UINT64_MAX && cur > w->peak_current)
                w->peak_current = cur;
        if (w->crossed_usec || cur == UINT64_MAX)
                return;
        if (cur > LIMIT)
                w->crossed_usec = mg_mono_usec();
        else
                w->below_usec = mg_mono_usec();
}

static bool overshoot_stop(void *ud) {
        return mgt_events_killed(&((struct overshoot_watch *) ud)->ev);
}

/* Actor: no memory.max, guard limit 64 MiB; the workload grows anon to
 * 160 MiB in 256 KiB steps and holds.  Expect: killed within two ticks
 * (+100 ms for the emulated CPU) of crossing, reason overshoot, used > limit. */
int t_anon_overshoot(void) {
        struct overshoot_watch w = {};
        mg_set *s = kt_set_new();
        w.cg = kt_cg_new("overshoot");
        KT_CHECK(s && w.cg, "setup");
        KT_CHECK(kt_guard(s, w.cg, mgt_spec_anon_overshoot.limit, &w.ev, NULL) == 0, "guard");
        pid_t pid = kt_spawn(w.cg, mgt_spec_anon_overshoot.args);
        KT_CHECK(pid > 0, "spawn: %s", strerror((int) -pid));
        bool k = mgt_run(s, mgt_spec_anon_overshoot.timeout_usec, overshoot_stop, overshoot_sample, &w);
        int status = kt_wait(pid, 10 * MG_USEC_PER_SEC);
        mg_set_free(s);
        KT_CHECK(k, "no kill within 60 s; peak memory.current %" PRIu64, w.peak_current);
        KT_CHECK(w.ev.kill.reason == MG_KILL_OVERSHOOT, "reason %d", w.ev.kill.reason);
        KT_CHECK(w.ev.kill.report.used_bytes > LIMIT, "used %" PRIu64, w.ev.kill.report.used_bytes);
        KT_CHECK(w.crossed_usec > 0, "never saw memory.current cross the limit");
        /* The sampler and the guard read memory.current at their own times:
         * when the guard saw the crossing first and killed before the
         * sampler's next read, the crossing lies between the sampler's last
         * read below the limit and the kill, and that read is the bound. */
        bool late = w.ev.kill.kill_usec < w.crossed_usec;
        uint64_t crossed = !late ? w.crossed_usec : w.below_usec ? w.below_usec : w.ev.kill.kill_usec, delay = w.ev.kill.kill_usec - crossed;
        kt_note("crossing_to_kill_ms=%" PRIu64 " crossing_to_empty_ms=%" PRIu64 " used_at_kill_mib=%" PRIu64
                " method=%s%s",
                delay / 1000, (w.ev.kill.empty_usec - crossed) / 1000, w.ev.kill.report.used_bytes / MG_MIB,
                w.ev.kill.method == MG_KILL_CGROUP_KILL ? "cgroup.kill" : "pidfd",
                late ? " crossing_seen_after_kill=1 (bound: last sample below the limit)" : "");
        KT_CHECK(w.ev.kill.kill_usec >= w.crossed_usec || w.crossed_usec - w.ev.kill.kill_usec < 20 * MG_USEC_PER_MSEC,
                 "killed before crossing?");
        KT_CHECK(w.ev.kill.kill_usec < w.crossed_usec || delay <= 2 * (250 * MG_USEC_PER_MSEC) + 100 * MG_USEC_PER_MSEC,
                 "kill %" PRIu64 " ms after crossing", delay / 1000);
        KT_CHECK(is_sigkill_status(status), "workload status %d", status);
        KT_CHECK(!w.ev.kill.empty_timed_out, "cgroup did not empty");
        return KT_PASS;
}

/* ---- 2. page cache at the limit --------------------------------------- */

struct cache_watch {
        struct mgt_events ev;
        const char *cg;
        pid_t writer, reader;
        uint64_t peak_current, peak_dirty, at_limit_samples, samples, last;
};

static void cache_sample(void *ud) {
        struct cache_watch *w = ud;
        uint64_t now = mg_mono_usec();
        if (now - w->last < 50 * MG_USEC_PER_MSEC)
                return;
        w->last = now;
        uint64_t cur = UINT64_MAX;
        (void) mgt_cg_read_u64(w->cg, "memory.current", &cur);
        uint64_t dirty = UINT64_MAX;
        (void) mgt_cg_read_key(w->cg, "memory.stat", "file_dirty", &dirty);
        w->samples++;
        if (cur != UINT64_MAX) {
                if (cur > w->peak_current)
                        w->peak_current = cur;
                if (cur >= LIMIT - LIMIT / 16)
                        w->at_limit_samples++;
        }
        if (dirty != UINT64_MAX && dirty > w->peak_dirty)
                w->peak_dirty = dirty;
}

static bool cache_stop(void *ud) {
        struct cache_watch *w = ud;
        return mgt_events_killed(&w->ev) || (waitpid(w->reader, NULL, WNOHANG) == w->reader && (w->reader = -1, true));
}

/* Actor: memory.max 64 MiB = guard limit.  A writer of 192 MiB (dirty cache)
 * and a reader looping over a 128 MiB file for 12 s.  Expect: memory.current
 * sits at the limit, nothing is killed, both finish. */
int t_page_cache_at_limit(void) {
        const struct mgt_actor_spec *sw = &mgt_spec_page_cache_writer, *sr = &mgt_spec_page_cache_reader;
        struct cache_watch w = {};
        char rfile[512], wfile[512];
        const char *wargs[8], *rargs[8];
        mg_set *s = kt_set_new();
        w.cg = kt_cg_new(sw->name);
        KT_CHECK(s && w.cg, "setup");
        snprintf(rfile, sizeof(rfile), "%s/pc-read", kt_disk);
        snprintf(wfile, sizeof(wfile), "%s/pc-write", kt_disk);
        KT_CHECK(mgt_make_file(rfile, sr->file_mib) == 0, "make %s", rfile);
        KT_CHECK(mgt_cg_writef(w.cg, "memory.max", "%" PRIu64, sw->max) == 0, "memory.max");
        KT_CHECK(kt_guard(s, w.cg, sw->limit, &w.ev, NULL) == 0, "guard");
        KT_CHECK(mgt_spec_args(sw, wfile, NULL, wargs, 8) == 0 && mgt_spec_args(sr, rfile, "12", rargs, 8) == 0, "args");
        uint64_t t0 = mg_mono_usec();
        w.writer = kt_spawn(w.cg, wargs);
        w.reader = kt_spawn(w.cg, rargs);
        KT_CHECK(w.writer > 0 && w.reader > 0, "spawn");
        pid_t reader = w.reader;
        mgt_run(s, 60 * MG_USEC_PER_SEC, cache_stop, cache_sample, &w);
        int wst = kt_wait(w.writer, 60 * MG_USEC_PER_SEC);
        uint64_t ran = mg_mono_usec() - t0, max_events = UINT64_MAX;
        mg_set_free(s);
        (void) mgt_cg_read_key(w.cg, "memory.events", "max", &max_events);
        kt_note("ran_ms=%" PRIu64 " peak_current_mib=%" PRIu64 " peak_dirty_mib=%" PRIu64
                " at_limit=%" PRIu64 "/%" PRIu64 " max_events=%" PRIu64 " reader: %s",
                ran / 1000, w.peak_current / MG_MIB, w.peak_dirty / MG_MIB, w.at_limit_samples, w.samples,
                max_events, kt_result(reader));
        thrash_note("page cache", w.cg, ran / 1000);
        unlink(rfile);
        unlink(wfile);
        KT_CHECK(w.ev.n[MG_EVENT_KILL] == 0, "page cache got the actor killed");
        KT_CHECK(ran >= 10 * MG_USEC_PER_SEC, "ran only %" PRIu64 " ms", ran / 1000);
        KT_CHECK(w.at_limit_samples > 0, "memory.current never reached the slow path");
        KT_CHECK(wst >= 0 && WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "writer status %d", wst);
        return KT_PASS;
}

/* ---- 3. dirty cache after a lend --------------------------------------- */

/* Actor: memory.high at 90 % of 64 MiB, no memory.max, guard limit 64 MiB.
 * Lend memory.high (remove it), write 256 MiB without fsync, end the lend.
 * Expect: memory.high back to the exact bytes it had, the guard resumes at
 * once and does not kill for the dirty cache left behind (3 s watched). */
int t_dirty_after_lend(void) {
        const struct mgt_actor_spec *sp = &mgt_spec_dirty_after_lend;
        struct mgt_events ev = {};
        char file[512], before[64], after[64];
        const char *args[8];
        mg_set *s = kt_set_new();
        mg_guard *g;
        const char *cg = kt_cg_new(sp->name);
        KT_CHECK(s && cg, "setup");
        snprintf(file, sizeof(file), "%s/lend-write", kt_disk);
        KT_CHECK(mgt_spec_args(sp, file, NULL, args, 8) == 0, "args");
        KT_CHECK(mgt_cg_writef(cg, "memory.high", "%" PRIu64, sp->high) == 0, "memory.high");
        KT_CHECK(mgt_cg_read(cg, "memory.high", before, sizeof(before)) > 0, "read memory.high");
        KT_CHECK(kt_guard(s, cg, sp->limit, &ev, &g) == 0, "guard");
        uint64_t lend = 0;
        KT_CHECK(mg_guard_lend_begin(g, MG_UNLIMITED, 60 * MG_USEC_PER_SEC, &lend) == 0, "lend_begin");
        KT_CHECK(mgt_cg_read(cg, "memory.high", after, sizeof(after)) > 0 && strcmp(after, "max\n") == 0,
                 "lent memory.high is %s", after);
        pid_t pid = kt_spawn(cg, args);
        KT_CHECK(pid > 0, "spawn");
        /* run the guard while the writer works: it must not act during the lend */
        while (kt_wait(pid, 0) == -ETIMEDOUT)
                mgt_run(s, 100 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        uint64_t dirty = UINT64_MAX;
        (void) mgt_cg_read_key(cg, "memory.stat", "file_dirty", &dirty);
        uint64_t wb = UINT64_MAX;
        (void) mgt_cg_read_key(cg, "memory.stat", "file_writeback", &wb);
        uint64_t t_end = mg_mono_usec();
        /* the set's worker writes memory.high back; told when it is done */
        int r = kt_lend_end(s, g, lend, &ev, 30 * MG_USEC_PER_SEC);
        KT_CHECK(r == 0, "lend_end: %d", r);
        uint64_t restore_ms = (mg_mono_usec() - t_end) / 1000;
        KT_CHECK(mgt_cg_read(cg, "memory.high", after, sizeof(after)) > 0, "read");
        uint64_t cur = UINT64_MAX;
        (void) mgt_cg_read_u64(cg, "memory.current", &cur);
        mgt_run(s, 3 * MG_USEC_PER_SEC, mgt_events_killed, NULL, &ev);
        struct mg_report rep = { .size = sizeof(rep) };
        mg_guard_report(g, &rep);
        mg_set_free(s);
        unlink(file);
        kt_note("dirty_at_restore_mib=%" PRIu64 " writeback_mib=%" PRIu64 " current_after_restore_mib=%" PRIu64
                " restore_ms=%" PRIu64 " used_after_mib=%" PRIu64 " file_after_mib=%" PRIu64 " writer: %s",
                dirty / MG_MIB, wb / MG_MIB, cur / MG_MIB, restore_ms, rep.used_bytes / MG_MIB, rep.stat.file / MG_MIB,
                kt_result(pid));
        KT_CHECK(strcmp(before, after) == 0, "memory.high %s restored as %s", before, after);
        KT_CHECK(ev.n[MG_EVENT_KILL] == 0, "killed for dirty cache");
        KT_CHECK(ev.n[MG_EVENT_LEND_BEGIN] == 1 && ev.n[MG_EVENT_LEND_END] == 1, "lend events");
        return KT_PASS;
}

/* ---- 4. stale memory.stat ---------------------------------------------- */

struct stale_watch {
        struct mgt_events ev;
        const char *cg;
        pid_t pid;
        uint64_t swings, last_cur, peak, stat_over_current;
};

static void stale_sample(void *ud) {
        struct stale_watch *w = ud;
        uint64_t cur = UINT64_MAX;
        (void) mgt_cg_read_u64(w->cg, "memory.current", &cur);
        uint64_t anon = UINT64_MAX;
        (void) mgt_cg_read_key(w->cg, "memory.stat", "anon", &anon);
        if (cur == UINT64_MAX)
                return;
        if (cur > w->peak)
                w->peak = cur;
        if (w->last_cur && (cur > w->last_cur + 16 * MG_MIB || cur + 16 * MG_MIB < w->last_cur))
                w->swings++;
        if (anon != UINT64_MAX && anon > cur)
                w->stat_over_current++; /* the stat still shows freed anon */
        w->last_cur = cur;
}

static bool stale_stop(void *ud) {
        struct stale_watch *w = ud;
        return mgt_events_killed(&w->ev) || kt_wait(w->pid, 0) != -ETIMEDOUT;
}

/* Actor: no memory.max, guard limit 64 MiB.  For 8 s the workload maps and
 * touches 56 MiB of anon, frees it, reads 96 MiB of file into the cache,
 * drops it, again and again: memory.current swings by tens of MiB between
 * ticks, faster than memory.stat is flushed.  Expect: no kill (used never
 * truly exceeds 56 MiB + a few MiB of kernel memory). */
int t_stale_stat(void) {
        struct stale_watch w = {};
        char file[512];
        mg_set *s = kt_set_new();
        w.cg = kt_cg_new("stale");
        KT_CHECK(s && w.cg, "setup");
        snprintf(file, sizeof(file), "%s/stale-read", kt_disk);
        KT_CHECK(mgt_make_file(file, 96) == 0, "make file");
        KT_CHECK(kt_guard(s, w.cg, LIMIT, &w.ev, NULL) == 0, "guard");
        w.pid = kt_spawn(w.cg, (const char *[]) { "churn", "56", file, "8", NULL });
        KT_CHECK(w.pid > 0, "spawn");
        mgt_run(s, 60 * MG_USEC_PER_SEC, stale_stop, stale_sample, &w);
        int st = kt_wait(w.pid, 10 * MG_USEC_PER_SEC);
        mg_set_free(s);
        unlink(file);
        kt_note("swings=%" PRIu64 " peak_current_mib=%" PRIu64 " stat_anon_above_current=%" PRIu64 " %s", w.swings,
                w.peak / MG_MIB, w.stat_over_current, kt_result(w.pid));
        KT_CHECK(w.ev.n[MG_EVENT_KILL] == 0, "false kill");
        KT_CHECK(w.peak > LIMIT, "memory.current never passed the limit (%" PRIu64 " MiB)", w.peak / MG_MIB);
        KT_CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "workload status %d", st);
        return KT_PASS;
}

/* ---- 5. thrash under memory.max without swap ---------------------------- */

struct thrash {
        uint64_t refaults, activates, restores, max_events, mem_some, io_some, oom_kills;
};

/* UINT64_MAX for what could not be read */
static struct thrash thrash_counters(const char *cg) {
        struct thrash t = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };
        struct mg_memstat st;
        struct mg_mem_events e;
        struct mg_psi mem, io;

        if (mgt_cg_read_memstat(cg, &st) == 0) {
                t.refaults = st.workingset_refault_file;
                t.activates = st.workingset_activate_file;
                t.restores = st.workingset_restore_file;
        }
        if (mgt_cg_read_events(cg, "memory.events", &e) == 0) {
                t.max_events = e.max;
                t.oom_kills = e.oom_kill;
        }
        if (mgt_cg_read_psi(cg, "memory.pressure", &mem) == 0)
                t.mem_some = mem.some.total_usec;
        if (mgt_cg_read_psi(cg, "io.pressure", &io) == 0)
                t.io_some = io.some.total_usec;
        return t;
}

static void thrash_note(const char *what, const char *cg, uint64_t ms) {
        struct thrash t = thrash_counters(cg);
        kt_note("%s: ms=%" PRIu64 " refault_file=%" PRIu64 " activate_file=%" PRIu64 " restore_file=%" PRIu64
                " max_events=%" PRIu64 " oom_kill=%" PRIu64 " memory_some_pct=%.1f io_some_pct=%.1f",
                what, ms, t.refaults, t.activates, t.restores, t.max_events, t.oom_kills, ms ? (double) t.mem_some / 10.0 / (double) ms : 0,
                ms ? (double) t.io_some / 10.0 / (double) ms : 0);
}

/* Every 100 ms: has the actor started losing its working set (the onset of
 * the thrash)?  Every 500 ms: what changed, to see how a stall builds up. */
struct trace {
        struct mgt_events *ev;
        mg_guard *g; /* once it kills, the trace stops: every sample is from before the kill */
        const char *cg;
        uint64_t t0, last, last_print, onset;
        struct thrash first, prev;
        /* systemd-oomd's rule on the same samples: memory "full" avg10 above
         * 60 % for 30 s, or above 20 % for 20 s (its documented examples) */
        uint64_t above60_since, above20_since, oomd_fired, max_full_avg10;
};

/* memory.pressure "full" avg10 in hundredths of a percent. */
static uint64_t full_avg10(const char *cg) {
        struct mg_psi p;
        return mgt_cg_read_psi(cg, "memory.pressure", &p) == 0 ? p.full.avg10_centipct : 0;
}

static void oomd_rule(struct trace *t, uint64_t now) {
        uint64_t a = full_avg10(t->cg);
        if (a > t->max_full_avg10)
                t->max_full_avg10 = a;
        t->above60_since = a > 6000 ? (t->above60_since ? t->above60_since : now) : 0;
        t->above20_since = a > 2000 ? (t->above20_since ? t->above20_since : now) : 0;
        if (!t->oomd_fired && ((t->above60_since && now - t->above60_since >= 30 * MG_USEC_PER_SEC) ||
                               (t->above20_since && now - t->above20_since >= 20 * MG_USEC_PER_SEC)))
                t->oomd_fired = now;
}

static void trace_sample(void *ud) {
        struct trace *t = ud;
        uint64_t now = mg_mono_usec();
        if (t->g && (mg_guard_is_killing(t->g) || mgt_events_killed(t->ev)))
                return;
        if (now - t->last < 100 * MG_USEC_PER_MSEC)
                return;
        t->last = now;
        oomd_rule(t, now);
        struct thrash c = thrash_counters(t->cg);
        if (!t->last_print) {
                t->first = t->prev = c;
                t->last_print = now;
                return;
        }
        if (!t->onset && mgt_thrash_onset(t->first.refaults, c.refaults))
                t->onset = now;
        if (now - t->last_print < 500 * MG_USEC_PER_MSEC)
                return;
        kt_note("t=%.1fs restore+%" PRIu64 " refault+%" PRIu64 " max+%" PRIu64 " mem_some+%" PRIu64 "ms io_some+%" PRIu64
                "ms",
                (double) (now - t->t0) / 1e6, c.restores - t->prev.restores, c.refaults - t->prev.refaults,
                c.max_events - t->prev.max_events, (c.mem_some - t->prev.mem_some) / 1000,
                (c.io_some - t->prev.io_some) / 1000);
        t->prev = c;
        t->last_print = now;
}

static bool trace_killed(void *ud) {
        return mgt_events_killed(((struct trace *) ud)->ev);
}

/*
 * A thrash, twice: the kernel alone for 10 s in one cgroup (expect: no OOM
 * kill, it just thrashes), then guarded in another with the guard limit at
 * memory.max (expect: killed as a stall within the window of the rule that
 * decided, +1 s for two ticks and the 100 ms onset sampling, of the onset:
 * 1 MiB re-read, mgt_thrash_onset(); the stall window for restores, the
 * faulting window for refaults).  Filling the cache before the onset takes
 * seconds under emulation, so it is not counted.
 */
static int thrash(const char *name, uint64_t limit, const char *exe, const char *const control[],
                  const char *const guarded[], void (*reset)(void)) {
        struct mgt_events ev = {};
        char ctl_name[64], g_name[64];
        snprintf(ctl_name, sizeof(ctl_name), "%s-control", name);
        snprintf(g_name, sizeof(g_name), "%s-guarded", name);
        const char *ctl = kt_cg_new(ctl_name), *cg = kt_cg_new(g_name);
        KT_CHECK(ctl && cg, "setup");
        if (!kt_have_file(cg, "memory.pressure")) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "kernel without PSI (memory.pressure)");
                return KT_SKIP;
        }

        KT_CHECK(mgt_cg_writef(ctl, "memory.max", "%" PRIu64, limit) == 0, "memory.max");
        uint64_t t0 = mg_mono_usec();
        pid_t pid = kt_spawn_exe(ctl, exe, control);
        KT_CHECK(pid > 0, "spawn");
        struct trace ct = { .cg = ctl, .t0 = t0 };
        while (kt_wait(pid, 0) == -ETIMEDOUT && mg_mono_usec() - t0 < 60 * MG_USEC_PER_SEC) {
                (void) poll(NULL, 0, 100); /* bounded by the workload's own 10 s */
                oomd_rule(&ct, mg_mono_usec());
        }
        int st = kt_wait(pid, 1 * MG_USEC_PER_SEC);
        kt_note("kernel alone: systemd-oomd rule %s (max memory full avg10 %.2f %%)",
                ct.oomd_fired ? "would have fired" : "would not have fired", (double) ct.max_full_avg10 / 100);
        thrash_note("kernel alone", ctl, (mg_mono_usec() - t0) / 1000);
        kt_note("control: %s", kt_result(pid));
        KT_CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "kernel alone ended it: status %d", st);
        uint64_t ctl_oom = UINT64_MAX;
        (void) mgt_cg_read_key(ctl, "memory.events", "oom_kill", &ctl_oom);
        KT_CHECK(ctl_oom == 0, "kernel alone OOM-killed");
        reset();

        mg_set *s = kt_set_new();
        mg_guard *g;
        KT_CHECK(s, "set");
        KT_CHECK(mgt_cg_writef(cg, "memory.max", "%" PRIu64, limit) == 0, "memory.max");
        KT_CHECK(kt_guard(s, cg, limit, &ev, &g) == 0, "guard");
        uint64_t window = g->params.stall_window_usec;
        t0 = mg_mono_usec();
        pid = kt_spawn_exe(cg, exe, guarded);
        KT_CHECK(pid > 0, "spawn");
        struct trace tr = { .ev = &ev, .g = g, .cg = cg, .t0 = t0 };
        bool k = mgt_run(s, 60 * MG_USEC_PER_SEC, trace_killed, trace_sample, &tr);
        uint64_t ms = (mg_mono_usec() - t0) / 1000;
        st = kt_wait(pid, 10 * MG_USEC_PER_SEC);
        mg_set_free(s);
        thrash_note("guarded", cg, ms);
        KT_CHECK(k, "not killed within 60 s");
        KT_CHECK(ev.kill.reason == MG_KILL_STALL, "reason %d", ev.kill.reason);
        /* The guard reads PSI from its first slow tick, so the first
         * re-reads can complete a window that was already stalled: it may
         * kill before the 100 ms sampler sees the onset.  The kill
         * record's memory.stat then shows it, and the onset lies between the
         * sampler's last read (the trace stops at the kill, so that read is
         * before it) and the kill: that read bounds it. */
        bool onset_in_record = false;
        if (!tr.onset && mgt_thrash_onset(tr.first.refaults, ev.kill.report.stat.workingset_refault_file)) {
                tr.onset = tr.last;
                onset_in_record = true;
        }
        if (onset_in_record)
                kt_note("onset_seen_in_kill_record=1 (bound: the sampler's last read before the kill)");
        kt_note("guarded: systemd-oomd rule %s (max memory full avg10 %.2f %%)",
                tr.oomd_fired ? "would have fired first" : "would not have fired by the kill",
                (double) tr.max_full_avg10 / 100);
        KT_CHECK(tr.onset, "never saw the working set lost");
        if (ev.kill.report.stall_signals & MG_STALL_REFAULT)
                window = g->params.refault_mapped_window_usec;
        kt_note("start_to_kill_ms=%" PRIu64 " onset_to_kill_ms=%" PRIu64 " window_ms=%" PRIu64 " stalled_ms=%" PRIu64
                " signals=%s%s",
                (ev.kill.kill_usec - t0) / 1000, (ev.kill.kill_usec - tr.onset) / 1000, window / 1000,
                ev.kill.report.stall_usec / 1000, ev.kill.report.stall_signals & MG_STALL_MEMORY ? "memory " : "",
                ev.kill.report.stall_signals & MG_STALL_IO ? "io" : "");
        KT_CHECK(ev.kill.kill_usec - tr.onset <= window + 1 * MG_USEC_PER_SEC,
                 "kill %" PRIu64 " ms after the onset, window %" PRIu64 " ms", (ev.kill.kill_usec - tr.onset) / 1000,
                 window / 1000);
        KT_CHECK(is_sigkill_status(st), "status %d", st);
        return KT_PASS;
}

static char hot_path[512], code_path[512];

static void drop_hot(void) {
        mgt_drop_cache(hot_path);
}

/* A 96 MiB file read at random, 95 % of reads in its first 60 % (58 MiB,
 * more than the 48 MiB memory.max holds): mgt_spec_thrash_hot_file, 10 s
 * alone, up to 60 s guarded, through thrash() above.
 * Expect: alone, it exits 0 and memory.events oom_kill stays 0; guarded, it
 * is killed by SIGKILL as a stall within 60 s, within the deciding rule's
 * window + 1 s of the onset (which must be seen).  Skips without PSI. */
int t_thrash_hot_file(void) {
        const struct mgt_actor_spec *a = &mgt_spec_thrash_hot_file;
        const char *alone[16], *guarded[16];
        snprintf(hot_path, sizeof(hot_path), "%s/hot", kt_disk);
        KT_CHECK(mgt_make_file(hot_path, a->file_mib) == 0, "make file");
        KT_CHECK(mgt_spec_args(a, hot_path, "10", alone, 16) == 0 && mgt_spec_args(a, hot_path, "60", guarded, 16) == 0,
                 "args");
        int r = thrash(a->name, a->limit, kt_workload, alone, guarded, drop_hot);
        unlink(hot_path);
        return r;
}

static void drop_code(void) {
        mgt_drop_cache(code_path);
}

/* The workload's own binary, copied to the disk with 64 MiB of code (ret
 * instructions) appended, dropped from the cache, then run in a 48 MiB
 * memory.max holding 16 MiB of anon: its hot code (60 % of the pad, 38 MiB)
 * does not fit in what is left, so it is read back from disk again and again.
 * Expect: as thrash-hot-file (thrash() above): alone, it exits 0 with
 * oom_kill 0; guarded, it is killed by SIGKILL as a stall within 60 s, within
 * the deciding rule's window + 1 s of the onset.  Skips without PSI. */
int t_thrash_own_code(void) {
        static char pad[1 << 20];
        char buf[1 << 16];
        snprintf(code_path, sizeof(code_path), "%s/owncode", kt_disk);
        int in = open(kt_workload, O_RDONLY | O_CLOEXEC);
        int out = open(code_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        KT_CHECK(in >= 0 && out >= 0, "copy %s", kt_workload);
        ssize_t n;
        while ((n = read(in, buf, sizeof(buf))) > 0)
                KT_CHECK(write(out, buf, (size_t) n) == n, "write");
        memset(pad, 0xc3, sizeof(pad));
        for (int i = 0; i < 64; i++)
                KT_CHECK(write(out, pad, sizeof(pad)) == (ssize_t) sizeof(pad), "pad");
        close(in);
        close(out);
        mgt_drop_cache(code_path);
        int r = thrash("thrash-code", 48 * MG_MIB, code_path,
                       (const char *[]) { "owncode", "16", "64", "10", "60", "95", NULL },
                       (const char *[]) { "owncode", "16", "64", "60", "60", "95", NULL }, drop_code);
        unlink(code_path);
        return r;
}

/* ---- 6. throttled at memory.high ---------------------------------------- */

static bool throttled_or_exited(void *ud) {
        struct overshoot_watch *w = ud; /* reuses .ev and .crossed_usec as the pid */
        return w->ev.n[MG_EVENT_KILL] > 0 || kt_wait((pid_t) w->crossed_usec, 0) != -ETIMEDOUT;
}

/*
 * Actor: memory.max 64 MiB, memory.high 90 % of it (57.6 MiB), guard limit
 * 64 MiB; the workload grows to 62 MiB (docs/field-facts.md F5: 239 of 256 MiB, scaled),
 * then for 12 s gives back and retakes its last 256 KiB, every allocation
 * charged at the same overage.  It fits under memory.max but not memory.high:
 * the kernel makes it sleep and never kills it.
 * Expect: reported as throttled (once), never killed (used stays below the
 * limit, nothing is re-read), exits 0; the guard's estimated sleep per
 * 256 KiB within 0.5x-2x of the median the workload measured while holding
 * (the kernel sleeps once per 64-page batch or once per page depending on
 * the per-CPU charge stock: the field saw both; on a busy emulated CPU the
 * sleep also runs long).
 */
int t_throttled_at_high(void) {
        struct overshoot_watch w = {};
        mg_set *s = kt_set_new();
        const char *cg = kt_cg_new("throttle");
        KT_CHECK(s && cg, "setup");
        KT_CHECK(mgt_cg_writef(cg, "memory.max", "%" PRIu64, LIMIT) == 0, "memory.max");
        KT_CHECK(mgt_cg_writef(cg, "memory.high", "%" PRIu64, LIMIT * 9 / 10) == 0, "memory.high");
        KT_CHECK(kt_guard(s, cg, LIMIT, &w.ev, NULL) == 0, "guard");
        uint64_t t0 = mg_mono_usec();
        pid_t pid = kt_spawn(cg, (const char *[]) { "throttle", "62", "256", "12", NULL });
        KT_CHECK(pid > 0, "spawn");
        w.crossed_usec = (uint64_t) pid;
        mgt_run(s, 90 * MG_USEC_PER_SEC, throttled_or_exited, NULL, &w);
        int st = kt_wait(pid, 30 * MG_USEC_PER_SEC);
        mg_set_free(s);
        const char *res = kt_result(pid);
        const char *p50 = strstr(res, "hold_p50_us=");
        uint64_t measured = p50 ? strtoull(p50 + 12, NULL, 10) : 0, est = w.ev.throttle.est_delay_usec;
        uint64_t high_events = UINT64_MAX, oom_kill = UINT64_MAX;
        (void) mgt_cg_read_key(cg, "memory.events", "high", &high_events);
        (void) mgt_cg_read_key(cg, "memory.events", "oom_kill", &oom_kill);
        kt_note("ran_ms=%" PRIu64 " high_events=%" PRIu64 " oom_kill=%" PRIu64 " est_delay_ms=%" PRIu64
                " measured_hold_p50_ms=%" PRIu64 " workload: %s",
                (mg_mono_usec() - t0) / 1000, high_events, oom_kill, est / 1000, measured / 1000, res);
        KT_CHECK(w.ev.n[MG_EVENT_KILL] == 0, "guard killed a throttled actor: expected no kill");
        KT_CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "workload status %d", st);
        KT_CHECK(w.ev.n[MG_EVENT_THROTTLED] == 1, "throttled reported %d times", w.ev.n[MG_EVENT_THROTTLED]);
        KT_CHECK(measured > 0 && est * 2 >= measured && est <= measured * 2,
                 "estimate %" PRIu64 " us vs measured %" PRIu64 " us", est, measured);
        return KT_PASS;
}

/* ---- 7. lifecycle faults ------------------------------------------------- */

static bool gone(void *ud) {
        return ((struct mgt_events *) ud)->gone > 0;
}

/* (a) the cgroup removed while guarded: MG_EVENT_GONE, no error storm;
 * (b) processes exiting mid-tick; (c) an empty actor: nothing happens;
 * (d) a 4-process actor over its limit is killed whole, by cgroup.kill and
 * again through the pidfd fallback.  Guard limit 64 MiB each, no memory.max.
 * Expect: (a) MG_EVENT_GONE within 5 s of the rmdir and no error event;
 * (b) 20 processes of 8 MiB anon, one after another: no error, no kill;
 * (c) no event of any kind; (d) with 24 MiB in each process, killed within
 * 60 s by the method named, the cgroup empty, the workload dead of SIGKILL. */
int t_lifecycle(void) {
        struct mgt_events ev = {};
        mg_set *s = kt_set_new();
        KT_CHECK(s, "set");

        const char *a = kt_cg_new("gone");
        KT_CHECK(a && kt_guard(s, a, LIMIT, &ev, NULL) == 0, "guard a");
        mgt_run(s, 300 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        KT_CHECK(rmdir(a) == 0, "rmdir: %s", strerror(errno));
        uint64_t t0 = mg_mono_usec();
        KT_CHECK(mgt_run(s, 5 * MG_USEC_PER_SEC, gone, NULL, &ev), "no MG_EVENT_GONE after rmdir");
        kt_note("rmdir_to_gone_ms=%" PRIu64 " errors=%d", (mg_mono_usec() - t0) / 1000, ev.n[MG_EVENT_ERROR]);
        KT_CHECK(ev.n[MG_EVENT_ERROR] == 0, "errors reported for a removed cgroup");
        mg_set_free(s);

        /* (b) and (c) */
        struct mgt_events eb = {}, ec = {};
        s = kt_set_new();
        const char *b = kt_cg_new("exits"), *c = kt_cg_new("empty");
        KT_CHECK(s && b && c && kt_guard(s, b, LIMIT, &eb, NULL) == 0 && kt_guard(s, c, LIMIT, &ec, NULL) == 0,
                 "guards");
        for (int i = 0; i < 20; i++) {
                pid_t p = kt_spawn(b, (const char *[]) { "anon", "8", "256", "0", NULL });
                KT_CHECK(p > 0, "spawn");
                while (kt_wait(p, 0) == -ETIMEDOUT)
                        mgt_run(s, 20 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        }
        mgt_run(s, 1 * MG_USEC_PER_SEC, NULL, NULL, NULL);
        mg_set_free(s);
        KT_CHECK(eb.n[MG_EVENT_ERROR] == 0 && eb.n[MG_EVENT_KILL] == 0, "exiting processes: errors %d kills %d",
                 eb.n[MG_EVENT_ERROR], eb.n[MG_EVENT_KILL]);
        for (int i = 0; i < 16; i++)
                KT_CHECK(ec.n[i] == 0, "empty actor had event %d", i);

        /* (d) twice: cgroup.kill, then the pidfd fallback */
        for (int fallback = 0; fallback < 2; fallback++) {
                struct mgt_events ed = {};
                mg_guard *g;
                s = kt_set_new();
                const char *d = kt_cg_new(fallback ? "procs-pidfd" : "procs");
                KT_CHECK(s && d && kt_guard(s, d, LIMIT, &ed, &g) == 0, "guard d");
                if (fallback) {
                        /* what a kernel before 5.14 looks like to the guard:
                         * no cgroup.kill found at mg_guard_new() */
                        mg_cgroup_forget(&g->cg, MG_CG_KILL);
                }
                pid_t p = kt_spawn(d, (const char *[]) { "procs", "4", "24", NULL });
                KT_CHECK(p > 0, "spawn");
                bool k = mgt_run(s, 60 * MG_USEC_PER_SEC, mgt_events_killed, NULL, &ed);
                int st = kt_wait(p, 10 * MG_USEC_PER_SEC);
                mg_set_free(s);
                KT_CHECK(k, "4-process actor not killed");
                KT_CHECK(ed.kill.method == (fallback ? MG_KILL_PIDFD : MG_KILL_CGROUP_KILL), "method %d",
                         ed.kill.method);
                KT_CHECK(!ed.kill.empty_timed_out && mgt_cg_wait_populated(d, 0, 1 * MG_USEC_PER_SEC) == 0,
                         "not empty");
                KT_CHECK(is_sigkill_status(st), "status %d", st);
                kt_note("%s: kill_to_empty_ms=%" PRIu64, fallback ? "pidfd" : "cgroup.kill",
                        (ed.kill.empty_usec - ed.kill.kill_usec) / 1000);
        }
        return KT_PASS;
}

/* ---- 8. the kernel behaviours the guard relies on ------------------------ */

/* Tree: <base>/facts-<n> (memory.max 32 MiB, anon grown to 96 MiB),
 * facts-high-<n> (memory.high 16 MiB, anon grown to 20 MiB),
 * facts-reclaim-<n> (a 48 MiB file read once), facts-kill-<n> (3 processes
 * of 4 MiB); no guard.
 * Expect: memory.stat has anon, file, shmem, sock, file_dirty,
 * file_writeback, workingset_refault_file, pgscan, pgsteal, kernel_stack;
 * memory.events.local, cgroup.kill, memory.reclaim, memory.pressure exist;
 * memory.max kills the anon by SIGKILL (max events, oom_kill >= 1);
 * memory.high counts high events with oom_kill 0; the read leaves at
 * least 32 MiB charged and memory.reclaim of 16 MiB takes 15 MiB or more (or
 * says EAGAIN); cgroup.kill empties its cgroup, the leader dead of SIGKILL. */
int t_kernel_facts(void) {
        struct utsname u;
        uname(&u);
        kt_note("kernel=%s", u.release);

        /* memory.stat carries every key used = anon + shmem + kernel + sock
         * and the page-cache parts read for the report */
        const char *cg = kt_cg_new("facts");
        KT_CHECK(cg, "setup");
        static const char *keys[] = { "anon", "file", "shmem", "sock", "file_dirty", "file_writeback",
                                      "workingset_refault_file", "pgscan", "pgsteal", "kernel_stack" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                KT_CHECK(mgt_cg_read_key(cg, "memory.stat", keys[i], &(uint64_t) { 0 }) == 0, "memory.stat lacks %s",
                         keys[i]);
        kt_note("memory.stat kernel key: %s",
                mgt_cg_read_key(cg, "memory.stat", "kernel", &(uint64_t) { 0 }) == 0 ? "yes" : "derived");
        KT_CHECK(kt_have_file(cg, "memory.events.local"), "no memory.events.local");
        KT_CHECK(kt_have_file(cg, "cgroup.kill"), "no cgroup.kill");
        KT_CHECK(kt_have_file(cg, "memory.reclaim"), "no memory.reclaim");
        KT_CHECK(kt_have_file(cg, "memory.pressure"), "no memory.pressure (boot with psi=1)");

        /* memory.max kills an anon overshoot: max events, then oom_kill */
        KT_CHECK(mgt_cg_writef(cg, "memory.max", "%" PRIu64, 32 * MG_MIB) == 0, "memory.max");
        uint64_t t0 = mg_mono_usec();
        pid_t p = kt_spawn(cg, (const char *[]) { "anon", "96", "256", "0", NULL });
        int st = kt_wait(p, 30 * MG_USEC_PER_SEC);
        uint64_t oom = UINT64_MAX, mx = UINT64_MAX;
        (void) mgt_cg_read_key(cg, "memory.events", "oom_kill", &oom);
        (void) mgt_cg_read_key(cg, "memory.events", "max", &mx);
        kt_note("memory.max kill: after_ms=%" PRIu64 " max_events=%" PRIu64 " oom_kill=%" PRIu64,
                (mg_mono_usec() - t0) / 1000, mx, oom);
        KT_CHECK(is_sigkill_status(st) && oom >= 1 && mx > 0, "memory.max did not kill: status %d", st);

        /* memory.high: throttled, counted in memory.events high, no kill */
        const char *h = kt_cg_new("facts-high");
        KT_CHECK(h && mgt_cg_writef(h, "memory.high", "%" PRIu64, 16 * MG_MIB) == 0, "memory.high");
        p = kt_spawn(h, (const char *[]) { "anon", "20", "256", "0", NULL });
        st = kt_wait(p, 60 * MG_USEC_PER_SEC);
        uint64_t high = UINT64_MAX, high_oom = UINT64_MAX;
        (void) mgt_cg_read_key(h, "memory.events", "high", &high);
        (void) mgt_cg_read_key(h, "memory.events", "oom_kill", &high_oom);
        kt_note("memory.high: high_events=%" PRIu64 " oom_kill=%" PRIu64 " status=%d", high, high_oom, st);
        KT_CHECK(high > 0, "no high events");
        KT_CHECK(high_oom == 0, "memory.high killed");

        /* memory.reclaim takes clean page cache back */
        char file[512];
        const char *r = kt_cg_new("facts-reclaim");
        snprintf(file, sizeof(file), "%s/reclaim", kt_disk);
        KT_CHECK(r && mgt_make_file(file, 48) == 0, "file");
        p = kt_spawn(r, (const char *[]) { "read", file, "1", NULL });
        kt_wait(p, 30 * MG_USEC_PER_SEC);
        uint64_t before = UINT64_MAX;
        (void) mgt_cg_read_u64(r, "memory.current", &before);
        int rc = mgt_cg_writef(r, "memory.reclaim", "%" PRIu64, 16 * MG_MIB);
        uint64_t after = UINT64_MAX;
        (void) mgt_cg_read_u64(r, "memory.current", &after);
        kt_note("memory.reclaim 16M: rc=%d current %" PRIu64 " -> %" PRIu64 " MiB", rc, before / MG_MIB,
                after / MG_MIB);
        unlink(file);
        KT_CHECK(before >= 32 * MG_MIB, "read left only %" PRIu64 " MiB cached", before / MG_MIB);
        KT_CHECK((rc == 0 && before - after >= 15 * MG_MIB) || rc == -EAGAIN, "memory.reclaim rc %d", rc);

        /* cgroup.kill takes every member, and cgroup.events says so */
        const char *k = kt_cg_new("facts-kill");
        KT_CHECK(k, "cg");
        p = kt_spawn(k, (const char *[]) { "procs", "3", "4", NULL });
        KT_CHECK(mgt_cg_wait_populated(k, 1, 5 * MG_USEC_PER_SEC) == 0, "not populated");
        /* wait (bounded) for the forks to show up */
        char procs[256];
        for (int i = 0; i < 200 && mgt_cg_read(k, "cgroup.procs", procs, sizeof(procs)) > 0; i++) {
                int lines = 0;
                for (char *c = procs; *c; c++)
                        lines += *c == '\n';
                if (lines >= 3)
                        break;
                (void) poll(NULL, 0, 10); /* bounded: at most 2 s in all */
        }
        KT_CHECK(mgt_cg_writef(k, "cgroup.kill", "1") == 0, "cgroup.kill");
        KT_CHECK(mgt_cg_wait_populated(k, 0, 5 * MG_USEC_PER_SEC) == 0, "cgroup.kill left members");
        KT_CHECK(is_sigkill_status(kt_wait(p, 5 * MG_USEC_PER_SEC)), "leader not SIGKILLed");
        return KT_PASS;
}

static const struct {
        const char *name;
        int (*fn)(void);
} scenarios[] = {
        { "anon-overshoot", t_anon_overshoot },
        { "page-cache-at-limit", t_page_cache_at_limit },
        { "dirty-after-lend", t_dirty_after_lend },
        { "stale-stat", t_stale_stat },
        { "thrash-hot-file", t_thrash_hot_file },
        { "thrash-own-code", t_thrash_own_code },
        { "throttled-at-high", t_throttled_at_high },
        { "lifecycle", t_lifecycle },
        { "kernel-facts", t_kernel_facts },
        { "kernel-oom-attributed", t_kernel_oom_attributed },
        { "psi-trigger-wakes", t_psi_trigger_wakes },
        { "healthy-neighbours", t_healthy_neighbours },
        { "pressure-hidden", t_pressure_hidden },
        { "thrash-sequential", t_thrash_sequential },
        { "thrash-under-high", t_thrash_under_high },
        { "thrash-below-line", t_thrash_below_line },
        { "reread-finite", t_reread_finite },
        { "dirty-writer", t_dirty_writer },
        { "throttled-below-line", t_throttled_below_line },
        { "snapshot-write", t_snapshot_write },
        { "snapshot-baseline", t_snapshot_baseline },
        { "snapshot-faults", t_snapshot_faults },
        { "snapshot-cycles", t_snapshot_cycles },
        { "lend-crash", t_lend_crash },
        { "lend-resize", t_lend_resize },
        { "confined-guard", t_confined_guard },
        { "restore-beside-overshoot", t_restore_beside_overshoot },
        { "empty-over-limit", t_empty_over_limit },
        { "reclaim-dose", t_reclaim_dose },
        { "reclaim-lend", t_reclaim_lend },
        { "reclaim-pressure", t_reclaim_pressure },
        { "reclaim-vanish", t_reclaim_vanish },
        { "reclaim-zram", t_reclaim_zram },
        { "park-guest-thrash", t_park_guest_thrash },
        { "park-thaw", t_park_thaw },
        { "park-deadline", t_park_deadline },
        { "park-neighbours", t_park_neighbours },
        { "park-crash", t_park_crash },
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static bool selected(int argc, char **argv, const char *name) {
        if (argc < 2)
                return true;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return true;
        return false;
}

static bool is_disk_case(const char *name) {
        unsigned kind;
        uint64_t mib;
        return t_disk_parse(name, &kind, &mib) == 0;
}

/* Runs scenario k (fn, or named_fn with its name) and prints its TAP line;
 * returns 1 if it failed. */
static int run_one(int k, const char *name, int (*fn)(void), int (*named_fn)(const char *)) {
        kt_skip_reason[0] = '\0';
        kt_note("--- %s", name);
        uint64_t t0 = mg_mono_usec();
        int res = fn ? fn() : named_fn ? named_fn(name) : KT_FAIL;
        kt_cleanup_all();
        kt_note("%s took %" PRIu64 " ms", name, (mg_mono_usec() - t0) / 1000);
        if (res == KT_PASS)
                printf("ok %d - %s\n", k, name);
        else if (res == KT_SKIP)
                printf("ok %d - %s # SKIP %s\n", k, name, kt_skip_reason);
        else
                printf("not ok %d - %s\n", k, name);
        return res == KT_FAIL;
}

/* Makes the test's own cgroup with the controllers enabled below it. */
static int setup_base(const char *root, char *ret, size_t size) {
        struct statfs sfs;
        char buf[256];
        if (statfs(root, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC)
                return -ENOTSUP;
        if (mgt_cg_read(root, "cgroup.controllers", buf, sizeof(buf)) < 0 || !strstr(buf, "memory"))
                return -ENOTSUP;
        snprintf(ret, size, "%s/memguard-test-%d", root, getpid());
        return mgt_cg_make_parent(root, ret, "+memory +io +cpu +pids");
}

int main(int argc, char **argv) {
        static char base[512], workload[512];
        const char *root = getenv("MEMGUARD_TEST_CGROUP") ? getenv("MEMGUARD_TEST_CGROUP") : "/sys/fs/cgroup";
        int failed = 0, n = 0;

        setvbuf(stdout, NULL, _IOLBF, 0);
        kt_disk = getenv("MEMGUARD_TEST_DISK") ? getenv("MEMGUARD_TEST_DISK") : "/mnt/disk";
        kt_workload = getenv("MEMGUARD_WORKLOAD");
        if (!kt_workload) {
                char self[400];
                ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
                self[l > 0 ? l : 0] = '\0';
                snprintf(workload, sizeof(workload), "%s/mg-workload", dirname(self));
                kt_workload = workload;
        }
        for (size_t i = 0; i < N_SCENARIOS; i++)
                n += selected(argc, argv, scenarios[i].name);
        for (int i = 1; i < argc; i++)
                n += is_disk_case(argv[i]);
        printf("TAP version 13\n1..%d\n", n);

        /* No skip here: this binary only runs where a cgroup v2 memory
         * controller is expected (the VM, or a delegated host). */
        int r = setup_base(root, base, sizeof(base));
        if (r < 0) {
                printf("Bail out! no usable cgroup v2 memory controller at %s: %s\n", root, strerror(-r));
                return 1;
        }
        kt_base = base;
        if (access(kt_workload, X_OK) < 0 || access(kt_disk, W_OK) < 0) {
                printf("Bail out! need %s (executable) and %s (writable disk)\n", kt_workload, kt_disk);
                rmdir(base);
                return 1;
        }

        int k = 0;
        for (size_t i = 0; i < N_SCENARIOS; i++)
                if (selected(argc, argv, scenarios[i].name))
                        failed += run_one(++k, scenarios[i].name, scenarios[i].fn, NULL);
        for (int i = 1; i < argc; i++)
                if (is_disk_case(argv[i]))
                        failed += run_one(++k, argv[i], NULL, t_disk_case);
        rmdir(base);
        return failed ? 1 : 0;
}
