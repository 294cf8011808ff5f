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
#include "memguard/guard.h"
#include "scenarios.h"

static bool oom_seen(void *ud) {
        return ((struct kt_events *) ud)->n[MG_EVENT_KERNEL_OOM] > 0;
}

/* Actor: memory.max 32 MiB, guard limit 256 MiB, so the guard stays on its
 * fast path and never reads memory.events.local on a tick; anon grows to
 * 96 MiB.  Expect: the kernel OOM-kills it, and the set, woken by the change
 * of memory.events.local, reports MG_EVENT_KERNEL_OOM within a second. */
int t_kernel_oom_attributed(void) {
        struct kt_events ev = {};
        mg_set *s = kt_set_new();
        const char *cg = kt_cg_new("kernel-oom");
        KT_CHECK(s && cg, "setup");
        KT_CHECK(kt_cg_write(cg, "memory.max", "%" PRIu64, 32 * MIB) == 0, "memory.max");
        KT_CHECK(kt_guard(s, cg, 256 * MIB, &ev, NULL) == 0, "guard");
        pid_t pid = kt_spawn(cg, (const char *[]) { "anon", "96", "256", "-1", NULL });
        KT_CHECK(pid > 0, "spawn");
        int st = kt_wait(pid, 30 * SEC);
        uint64_t died = kt_now();
        bool seen = kt_run(s, 5 * SEC, oom_seen, NULL, &ev);
        mg_set_free(s);
        kt_note("oom_kill=%" PRIu64 " exit_to_event_ms=%" PRIu64, kt_cg_key(cg, "memory.events", "oom_kill"),
                (kt_now() - died) / 1000);
        KT_CHECK(is_sigkill_status(st), "workload status %d", st);
        KT_CHECK(seen, "no MG_EVENT_KERNEL_OOM");
        KT_CHECK(kt_now() - died < 1 * SEC, "reported late");
        KT_CHECK(ev.n[MG_EVENT_KILL] == 0, "the guard killed too");
        return KT_PASS;
}

/* Actor: memory.max 48 MiB, guard limit 48 MiB with a 1.5 s tick (window
 * 3 s); the own-code thrash of scenarios.c's hot file, mapped.  Once the
 * guard is on its slow path it holds PSI triggers (10 % of 2 s) on both
 * pressure files; expect the set's fd to become readable before the next
 * tick is due, at least once, and the thrash still killed as a stall. */
int t_psi_trigger_wakes(void) {
        struct kt_events ev = {};
        struct mg_guard_options o;
        char file[512];
        mg_set *s = kt_set_new();
        mg_guard *g;
        const char *cg = kt_cg_new("trigger");
        KT_CHECK(s && cg, "setup");
        snprintf(file, sizeof(file), "%s/trigger-hot", kt_disk);
        KT_CHECK(kt_make_file(file, 96) == 0, "file");
        KT_CHECK(kt_cg_write(cg, "memory.max", "%" PRIu64, 48 * MIB) == 0, "memory.max");
        mg_guard_options_init(&o, 48 * MIB);
        o.tick_usec = 1500 * MS;
        o.stall_window_usec = 3000 * MS;
        KT_CHECK(kt_guard_opts(s, cg, &o, &ev, &g) == 0, "guard");
        pid_t pid = kt_spawn(cg, (const char *[]) { "hotfile", file, "60", "60", "95", NULL });
        KT_CHECK(pid > 0, "spawn");
        int early = 0;
        bool triggers = false;
        struct pollfd p = { .fd = mg_set_get_fd(s), .events = POLLIN };
        uint64_t end = kt_now() + 60 * SEC;
        while (ev.n[MG_EVENT_KILL] == 0 && kt_now() < end) {
                uint64_t due, now = kt_now();
                mg_set_get_timeout(s, &due);
                bool armed = g->trigger_fd[0] >= 0 || g->trigger_fd[1] >= 0;
                triggers |= armed;
                /* wake before the tick is due only for an fd event, and on
                 * the slow path only a trigger is watched */
                int wait_ms = due > now + 20 * MS ? (int) ((due - now) / 1000) - 20 : 0;
                if (poll(&p, 1, wait_ms) == 1 && armed && wait_ms > 0 && kt_now() + 20 * MS < due)
                        early++;
                mg_set_process(s);
        }
        int st = kt_wait(pid, 10 * SEC);
        mg_set_free(s);
        unlink(file);
        kt_note("triggers_registered=%d early_wakeups=%d killed=%d", triggers, early, ev.n[MG_EVENT_KILL]);
        KT_CHECK(triggers, "no PSI trigger was registered on the slow path");
        KT_CHECK(early > 0, "the set never woke before a tick was due");
        KT_CHECK(ev.n[MG_EVENT_KILL] == 1 && ev.kill.reason == MG_KILL_STALL, "not killed as a stall");
        KT_CHECK(is_sigkill_status(st), "status %d", st);
        return KT_PASS;
}

/* Healthy actors guarded by the same set as a thrashing one: CPU-bound,
 * briefly over memory.high then back under it, a dirty writer at its limit.
 * Expect: only the thrashing actor is killed. */
int t_healthy_neighbours(void) {
        struct kt_events ev_thrash = {}, ev_cpu = {}, ev_high = {}, ev_writer = {};
        char hot[512], out[512];
        mg_set *s = kt_set_new();
        const char *thrash = kt_cg_new("n-thrash"), *cpu = kt_cg_new("n-cpu"), *high = kt_cg_new("n-high"),
                   *writer = kt_cg_new("n-writer");
        KT_CHECK(s && thrash && cpu && high && writer, "setup");
        snprintf(hot, sizeof(hot), "%s/n-hot", kt_disk);
        snprintf(out, sizeof(out), "%s/n-out", kt_disk);
        KT_CHECK(kt_make_file(hot, 96) == 0, "file");
        KT_CHECK(kt_cg_write(thrash, "memory.max", "%" PRIu64, 48 * MIB) == 0, "max");
        KT_CHECK(kt_cg_write(high, "memory.high", "%" PRIu64, 24 * MIB) == 0, "high");
        KT_CHECK(kt_cg_write(writer, "memory.max", "%" PRIu64, 32 * MIB) == 0, "max");
        KT_CHECK(kt_guard(s, thrash, 48 * MIB, &ev_thrash, NULL) == 0 && kt_guard(s, cpu, 64 * MIB, &ev_cpu, NULL) == 0 &&
                         kt_guard(s, high, 32 * MIB, &ev_high, NULL) == 0 &&
                         kt_guard(s, writer, 32 * MIB, &ev_writer, NULL) == 0,
                 "guards");
        pid_t pc = kt_spawn(cpu, (const char *[]) { "cpu", "20", NULL });
        pid_t ph = kt_spawn(high, (const char *[]) { "anon", "28", "256", "0", NULL });
        pid_t pw = kt_spawn(writer, (const char *[]) { "write", out, "160", "0", NULL });
        pid_t pt = kt_spawn(thrash, (const char *[]) { "hotfile", hot, "60", "60", "95", NULL });
        KT_CHECK(pc > 0 && ph > 0 && pw > 0 && pt > 0, "spawn");
        kt_run(s, 60 * SEC, killed_any, NULL, &ev_thrash);
        /* the others go on to their end under the guard */
        while (kt_wait(pc, 0) == -ETIMEDOUT || kt_wait(pw, 0) == -ETIMEDOUT || kt_wait(ph, 0) == -ETIMEDOUT)
                if (!kt_run(s, 200 * MS, NULL, NULL, NULL) && kt_now() > ev_thrash.kill_time + 60 * SEC)
                        break;
        mg_set_free(s);
        unlink(hot);
        unlink(out);
        kt_note("cpu: %s", kt_result(pc));
        kt_note("over-high: %s (high events %" PRIu64 ")", kt_result(ph), kt_cg_key(high, "memory.events", "high"));
        kt_note("writer: %s", kt_result(pw));
        KT_CHECK(ev_thrash.n[MG_EVENT_KILL] == 1, "the thrashing actor was not killed");
        KT_CHECK(ev_cpu.n[MG_EVENT_KILL] + ev_high.n[MG_EVENT_KILL] + ev_writer.n[MG_EVENT_KILL] == 0,
                 "a healthy actor was killed: cpu %d high %d writer %d", ev_cpu.n[MG_EVENT_KILL],
                 ev_high.n[MG_EVENT_KILL], ev_writer.n[MG_EVENT_KILL]);
        KT_CHECK(kt_cg_key(high, "memory.events", "high") > 0, "the over-high actor never went over");
        KT_CHECK(WIFEXITED(kt_wait(pc, 0)) && WIFEXITED(kt_wait(ph, 0)) && WIFEXITED(kt_wait(pw, 0)),
                 "a healthy actor did not finish");
        return KT_PASS;
}
