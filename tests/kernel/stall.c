/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel scenarios for how stalls are noticed: PSI triggers, the kernel's own
 * OOM kills attributed, and healthy actors beside a thrashing one.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktest.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "scenarios.h"

static bool oom_seen(void *ud) {
        return ((struct mgt_events *) ud)->n[MG_EVENT_KERNEL_OOM] > 0;
}

/* Actor: no limit of its own, in a parent whose memory.max is 32 MiB; guard
 * limit 256 MiB.  The guard's line follows the actor's own kernel limits
 * only, so it stays on its fast path and never reads memory.events.local on
 * a tick; anon grows to 96 MiB.  Expect: on its fast path the guard keeps
 * two fds open, memory.current and memory.events.local (the set's watch);
 * the kernel OOM-kills the actor (the victim's memory.events.local counts
 * the oom_kill), and the set, woken by the change of memory.events.local,
 * reports MG_EVENT_KERNEL_OOM within a second. */
int t_kernel_oom_attributed(void) {
        struct mgt_events ev = {};
        mg_set *s = kt_set_new();
        const char *parent = kt_cg_new("kernel-oom-parent"), *base = kt_base, *cg;
        KT_CHECK(s && parent, "setup");
        KT_CHECK(mgt_cg_writef(parent, "memory.max", "%" PRIu64, 32 * MG_MIB) == 0, "memory.max");
        KT_CHECK(mgt_cg_writef(parent, "cgroup.subtree_control", "+memory") == 0, "subtree_control");
        kt_base = parent; /* the child is removed before the parent */
        cg = kt_cg_new("kernel-oom");
        kt_base = base;
        KT_CHECK(cg, "child");
        mg_guard *g = NULL;
        KT_CHECK(kt_guard(s, cg, 256 * MG_MIB, &ev, &g) == 0, "guard");
        /* its first tick, which trims what mg_guard_new() opened */
        (void) mgt_run(s, 400 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        unsigned fds = mg_cgroup_fds_open(&g->cg);
        kt_note("fast-path fds=%u memory.events.local watched=%d", fds, g->events_watched);
        KT_CHECK(fds == 2 && g->events_watched && g->cg.fd[MG_CG_EVENTS_LOCAL] >= 0, "fast-path fds %u", fds);
        pid_t pid = kt_spawn(cg, (const char *[]) { "anon", "96", "256", "-1", NULL });
        KT_CHECK(pid > 0, "spawn");
        int st = kt_wait(pid, 30 * MG_USEC_PER_SEC);
        uint64_t died = mg_mono_usec();
        bool seen = mgt_run(s, 5 * MG_USEC_PER_SEC, oom_seen, NULL, &ev);
        mg_set_free(s);
        uint64_t oom_kill = UINT64_MAX;
        (void) mgt_cg_read_key(cg, "memory.events", "oom_kill", &oom_kill);
        kt_note("oom_kill=%" PRIu64 " exit_to_event_ms=%" PRIu64, oom_kill, (mg_mono_usec() - died) / 1000);
        KT_CHECK(is_sigkill_status(st), "workload status %d", st);
        KT_CHECK(seen, "no MG_EVENT_KERNEL_OOM");
        KT_CHECK(mg_mono_usec() - died < 1 * MG_USEC_PER_SEC, "reported late");
        KT_CHECK(ev.n[MG_EVENT_KILL] == 0, "the guard killed too");
        return KT_PASS;
}

/* Actor: memory.max 48 MiB, guard limit 48 MiB with a 1.5 s tick (window
 * 3 s); the own-code thrash of scenarios.c's hot file, mapped.  Once the
 * guard is on its slow path it holds PSI triggers (10 % of 2 s) on both
 * pressure files.  Expect: a trigger registered on the slow path, the set's
 * fd readable before the next tick is due at least once, and the thrash
 * still killed as a stall (once, by SIGKILL). */
int t_psi_trigger_wakes(void) {
        struct mgt_events ev = {};
        struct mg_guard_options o;
        char file[512];
        mg_set *s = kt_set_new();
        mg_guard *g;
        const char *cg = kt_cg_new("trigger");
        KT_CHECK(s && cg, "setup");
        snprintf(file, sizeof(file), "%s/trigger-hot", kt_disk);
        KT_CHECK(mgt_make_file(file, 96) == 0, "file");
        KT_CHECK(mgt_cg_writef(cg, "memory.max", "%" PRIu64, 48 * MG_MIB) == 0, "memory.max");
        mg_guard_options_init(&o, 48 * MG_MIB);
        o.tick_usec = 1500 * MG_USEC_PER_MSEC;
        o.stall_window_usec = 3000 * MG_USEC_PER_MSEC;
        KT_CHECK(kt_guard_opts(s, cg, &o, &ev, &g) == 0, "guard");
        pid_t pid = kt_spawn(cg, (const char *[]) { "hotfile", file, "60", "60", "95", NULL });
        KT_CHECK(pid > 0, "spawn");
        int early = 0;
        bool triggers = false;
        struct pollfd p = { .fd = mg_set_get_fd(s), .events = POLLIN };
        uint64_t end = mg_mono_usec() + 60 * MG_USEC_PER_SEC;
        while (ev.n[MG_EVENT_KILL] == 0 && mg_mono_usec() < end) {
                uint64_t due, now = mg_mono_usec();
                mg_set_get_timeout(s, &due);
                bool armed = g->trigger_fd[0] >= 0 || g->trigger_fd[1] >= 0;
                triggers |= armed;
                /* wake before the tick is due only for an fd event, and on
                 * the slow path only a trigger is watched */
                int wait_ms = due > now + 20 * MG_USEC_PER_MSEC ? (int) ((due - now) / 1000) - 20 : 0;
                if (poll(&p, 1, wait_ms) == 1 && armed && wait_ms > 0 && mg_mono_usec() + 20 * MG_USEC_PER_MSEC < due)
                        early++;
                mg_set_process(s);
        }
        int st = kt_wait(pid, 10 * MG_USEC_PER_SEC);
        mg_set_free(s);
        unlink(file);
        kt_note("triggers_registered=%d early_wakeups=%d killed=%d", triggers, early, ev.n[MG_EVENT_KILL]);
        KT_CHECK(triggers, "no PSI trigger was registered on the slow path");
        KT_CHECK(early > 0, "the set never woke before a tick was due");
        KT_CHECK(ev.n[MG_EVENT_KILL] == 1 && ev.kill.reason == MG_KILL_STALL, "not killed as a stall");
        KT_CHECK(is_sigkill_status(st), "status %d", st);
        return KT_PASS;
}

/* A healthy actor beside the thrashing one, and what its end says. */
struct neighbour {
        const char *name, *cg, *want; /* want: how its final line starts */
        pid_t pid;
        mg_guard *g;
        struct mgt_events ev;
};

struct neighbours {
        struct mgt_events *thrash;
        const char *writer;
        uint64_t next_sample, peak_dirty_wb;
};

static bool thrash_killed(void *ud) {
        return mgt_events_killed(((struct neighbours *) ud)->thrash);
}

/* How much of the writer's page cache was dirty or under writeback, at most:
 * what reclaim could not take from it at its limit. */
static void writer_sample(void *ud) {
        struct neighbours *n = ud;
        if (mg_mono_usec() < n->next_sample)
                return;
        n->next_sample = mg_mono_usec() + 250 * MG_USEC_PER_MSEC;
        struct mg_memstat st;
        if (mgt_cg_read_memstat(n->writer, &st) == 0 && st.file_dirty + st.file_writeback > n->peak_dirty_wb)
                n->peak_dirty_wb = st.file_dirty + st.file_writeback;
}

static const char *status_text(int st, char *buf, size_t size) {
        if (st == -ETIMEDOUT)
                snprintf(buf, size, "still running");
        else if (WIFEXITED(st))
                snprintf(buf, size, "exit %d", WEXITSTATUS(st));
        else if (WIFSIGNALED(st))
                snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        else
                snprintf(buf, size, "wait status 0x%x", (unsigned) st);
        return buf;
}

/* Healthy actors guarded by the same set as a thrashing one: CPU-bound,
 * briefly over memory.high then back under it, a dirty writer at its limit.
 * Expect: only the thrashing actor is killed; each of the others exits 0
 * with its final line, not killed by memguard nor by the kernel.
 *
 * The writer writes 160 MiB through a 32 MiB memory.max with 8 MiB of
 * write-behind: at its limit, with dirty pages, stalled on writeback, and
 * always with clean page cache reclaim can take.  Left to the kernel's dirty
 * throttling alone, 7.x let up to 90 % of a small writer's cache be under
 * writeback while the thrash kept the disk busy, and then OOM-killed it
 * (docs/testing.md).  A kernel OOM kill in a neighbour is a failure of this
 * setup, reported as such (memory.events oom_kill, the signal): it says
 * nothing about memguard, which must neither cause it nor be blamed. */
int t_healthy_neighbours(void) {
        struct mgt_events ev_thrash = {};
        struct neighbour nb[] = {
                { .name = "cpu", .cg = kt_cg_new("n-cpu"), .want = "workload=cpu " },
                { .name = "over-high", .cg = kt_cg_new("n-high"), .want = "workload=anon " },
                { .name = "writer", .cg = kt_cg_new("n-writer"), .want = "workload=write " },
        };
        struct neighbour *cpu = &nb[0], *high = &nb[1], *writer = &nb[2];
        char hot[512], out[512];
        mg_guard *gt = NULL;
        mg_set *s = kt_set_new();
        const char *thrash = kt_cg_new("n-thrash");
        KT_CHECK(s && thrash && cpu->cg && high->cg && writer->cg, "setup");
        snprintf(hot, sizeof(hot), "%s/n-hot", kt_disk);
        snprintf(out, sizeof(out), "%s/n-out", kt_disk);
        KT_CHECK(mgt_make_file(hot, 96) == 0, "file");
        KT_CHECK(mgt_cg_writef(thrash, "memory.max", "%" PRIu64, 48 * MG_MIB) == 0, "max");
        KT_CHECK(mgt_cg_writef(high->cg, "memory.high", "%" PRIu64, 24 * MG_MIB) == 0, "high");
        KT_CHECK(mgt_cg_writef(writer->cg, "memory.max", "%" PRIu64, 32 * MG_MIB) == 0, "max");
        KT_CHECK(kt_guard(s, thrash, 48 * MG_MIB, &ev_thrash, &gt) == 0 &&
                         kt_guard(s, cpu->cg, 64 * MG_MIB, &cpu->ev, &cpu->g) == 0 &&
                         kt_guard(s, high->cg, 32 * MG_MIB, &high->ev, &high->g) == 0 &&
                         kt_guard(s, writer->cg, 32 * MG_MIB, &writer->ev, &writer->g) == 0,
                 "guards");
        cpu->pid = kt_spawn(cpu->cg, (const char *[]) { "cpu", "20", NULL });
        high->pid = kt_spawn(high->cg, (const char *[]) { "anon", "28", "256", "0", NULL });
        writer->pid = kt_spawn(writer->cg, (const char *[]) { "write", out, "160", "0", "8", NULL });
        pid_t pt = kt_spawn(thrash, (const char *[]) { "hotfile", hot, "60", "60", "95", NULL });
        KT_CHECK(cpu->pid > 0 && high->pid > 0 && writer->pid > 0 && pt > 0, "spawn");
        struct neighbours n = { .thrash = &ev_thrash, .writer = writer->cg };
        mgt_run(s, 60 * MG_USEC_PER_SEC, thrash_killed, writer_sample, &n);
        /* the others go on to their end under the guard */
        while (kt_wait(cpu->pid, 0) == -ETIMEDOUT || kt_wait(writer->pid, 0) == -ETIMEDOUT ||
               kt_wait(high->pid, 0) == -ETIMEDOUT)
                if (!mgt_run(s, 200 * MG_USEC_PER_MSEC, NULL, writer_sample,
                            &n) && mg_mono_usec() > ev_thrash.kill_time + 60 * MG_USEC_PER_SEC)
                        break;
        /* A kill record is delivered once its cgroup is empty: run the set
         * until no guard waits for that, or a kill of a neighbour that ended
         * a moment ago would go unseen. */
        uint64_t settle = mg_mono_usec() + 5 * MG_USEC_PER_SEC;
        while (mg_mono_usec() < settle && (mg_guard_is_killing(gt) || mg_guard_is_killing(cpu->g) ||
                                     mg_guard_is_killing(high->g) || mg_guard_is_killing(writer->g)))
                mgt_run(s, 50 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        mg_set_free(s);
        unlink(hot);
        unlink(out);

        char line[3][512], status[3][128];
        int st[3];
        uint64_t oom_kill[3];
        for (int i = 0; i < 3; i++) {
                st[i] = kt_wait(nb[i].pid, 0);
                snprintf(line[i], sizeof(line[i]), "%s", kt_result(nb[i].pid));
                status_text(st[i], status[i], sizeof(status[i]));
                /* UINT64_MAX where memory.events could not be read */
                struct mg_mem_events e = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };
                (void) mgt_cg_read_events(nb[i].cg, "memory.events", &e);
                oom_kill[i] = e.oom_kill;
                kt_note("%s: %s; %s; memory.events max %" PRIu64 " high %" PRIu64 " oom %" PRIu64 " oom_kill %" PRIu64
                        "; memguard kills %d, kernel OOM kills reported %d",
                        nb[i].name, line[i][0] ? line[i] : "(no final line)", status[i],
                        e.max, e.high, e.oom, oom_kill[i], nb[i].ev.n[MG_EVENT_KILL],
                        nb[i].ev.n[MG_EVENT_KERNEL_OOM]);
        }
        uint64_t writer_max = UINT64_MAX, over_high = UINT64_MAX, writer_at_max = UINT64_MAX;
        (void) mgt_cg_read_u64(writer->cg, "memory.max", &writer_max);
        kt_note("writer: peak dirty+writeback %" PRIu64 " KiB, memory.max %" PRIu64 " KiB", n.peak_dirty_wb >> 10,
                writer_max >> 10);

        KT_CHECK(ev_thrash.n[MG_EVENT_KILL] == 1, "the thrashing actor was not killed");
        for (int i = 0; i < 3; i++)
                KT_CHECK(nb[i].ev.n[MG_EVENT_KILL] == 0, "memguard killed the healthy %s actor (%s)", nb[i].name,
                         status[i]);
        for (int i = 0; i < 3; i++)
                KT_CHECK(oom_kill[i] == 0,
                         "the kernel's OOM killer, not memguard, killed in the healthy %s actor's cgroup "
                         "(memory.events oom_kill %" PRIu64 ", the actor %s): the setup drove it into its memory.max",
                         nb[i].name, oom_kill[i], status[i]);
        for (int i = 0; i < 3; i++)
                KT_CHECK(st[i] != -ETIMEDOUT && WIFEXITED(st[i]) && WEXITSTATUS(st[i]) == 0 &&
                                 strncmp(line[i], nb[i].want, strlen(nb[i].want)) == 0,
                         "the healthy %s actor did not finish: %s, %s", nb[i].name, status[i],
                         line[i][0] ? line[i] : "no final line");
        (void) mgt_cg_read_key(high->cg, "memory.events", "high", &over_high);
        (void) mgt_cg_read_key(writer->cg, "memory.events", "max", &writer_at_max);
        KT_CHECK(over_high > 0, "the over-high actor never went over");
        KT_CHECK(writer_at_max > 0, "the writer never reached its memory.max");
        return KT_PASS;
}

/* Actor: guard limit 64 MiB, no memory.max, anon held at 62 MiB: above the
 * 60 MiB line, so every tick reads the pressure files.  Then 0 is written to
 * its cgroup.pressure (6.1+), which hides memory.pressure and io.pressure:
 * the guard's open fds of them read ENODEV, as a removed cgroup's would.
 * Expect: not MG_EVENT_GONE but one error per hidden file, the set's fd not
 * spinning on the PSI triggers it held (a hidden trigger polls as ready), and
 * the guard still guarding: anon grown to 160 MiB in the same cgroup is
 * killed as an overshoot. */
int t_pressure_hidden(void) {
        struct mgt_events ev = {};
        mg_set *s = kt_set_new();
        const char *cg = kt_cg_new("pressure-hidden");
        KT_CHECK(s && cg, "setup");
        char p[600];
        snprintf(p, sizeof(p), "%s/cgroup.pressure", cg);
        if (access(p, F_OK) < 0) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "no cgroup.pressure on this kernel");
                mg_set_free(s);
                return KT_SKIP;
        }
        KT_CHECK(kt_guard(s, cg, 64 * MG_MIB, &ev, NULL) == 0, "guard");
        pid_t holder = kt_spawn(cg, (const char *[]) { "anon", "62", "256", "-1", NULL });
        KT_CHECK(holder > 0, "spawn");
        /* on the slow path, triggers held, for a few ticks */
        mgt_run(s, 3 * MG_USEC_PER_SEC, NULL, NULL, NULL);
        uint64_t held = UINT64_MAX;
        (void) mgt_cg_read_u64(cg, "memory.current", &held);
        KT_CHECK(held >= 60 * MG_MIB, "holder not at 62 MiB");
        KT_CHECK(mgt_cg_writef(cg, "cgroup.pressure", "0") == 0, "cgroup.pressure 0");
        unsigned wakeups = 0;
        struct pollfd pfd = { .fd = mg_set_get_fd(s), .events = POLLIN };
        for (uint64_t until = mg_mono_usec() + 3 * MG_USEC_PER_SEC; mg_mono_usec() < until;) {
                uint64_t due, now = mg_mono_usec();
                mg_set_get_timeout(s, &due);
                int ms = due > now ? (int) ((due - now + 999) / 1000) : 0;
                if (poll(&pfd, 1, ms > 100 ? 100 : ms) == 1)
                        wakeups++;
                mg_set_process(s);
        }
        kt_note("after cgroup.pressure 0: %u wakeups in 3 s, errors %d, gone %d", wakeups, ev.n[MG_EVENT_ERROR],
                ev.gone);
        KT_CHECK(ev.gone == 0, "the guard took a hidden pressure file for a removed cgroup");
        KT_CHECK(ev.n[MG_EVENT_ERROR] >= 1 && ev.n[MG_EVENT_ERROR] <= 2, "%d errors", ev.n[MG_EVENT_ERROR]);
        KT_CHECK(wakeups <= 3 * 4 * 2, "the set's fd woke %u times in 3 s: a hidden trigger spins it", wakeups);
        pid_t hog = kt_spawn(cg, (const char *[]) { "anon", "160", "256", "-1", NULL });
        KT_CHECK(hog > 0, "spawn");
        bool killed = mgt_run(s, 30 * MG_USEC_PER_SEC, mgt_events_killed, NULL, &ev);
        (void) kt_wait(hog, 10 * MG_USEC_PER_SEC);
        mg_set_free(s);
        KT_CHECK(killed && ev.kill.reason == MG_KILL_OVERSHOOT, "the overshoot was not killed");
        return KT_PASS;
}
