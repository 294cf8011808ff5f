/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The field's thrashes at the sizes docs/field-facts.md gives (F1, F3, F4),
 * and the workloads beside them that must survive.  Each scenario builds one
 * actor (a cgroup with the kernel limits it names), guards it with a set at
 * the limit it names, runs the workload and traces, every second, what the
 * stall rules look at: memory.current, page cache and how much of it is
 * mapped, file refaults (and how many of them the kernel booked as
 * restores), memory.events high and max, memory and io pressure.  It prints
 * each figure's peak, so a kill's signals and a survivor's stand side by
 * side in the suite's output (docs/design.md quotes them).
 *
 * Onset of a thrash: the first trace step in which the actor, at a kernel
 * limit, read back file pages it had lost (workingset_refault_file rose).
 * The first fill of the cache before it takes seconds under emulation and
 * is not counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktest.h"
#include "guard.h"
#include "scenarios.h"
#include "cgdir.h"

struct counters {
        uint64_t t, current, file, mapped, refaults, restores, high, max, mem_some, io_some;
};

struct field {
        struct mgt_events ev;
        const char *cg;
        pid_t pid;
        uint64_t t0, next, onset;
        struct counters first, prev;
        /* peaks over one-second steps: refaults in MiB/s, pressure in 0.1 % */
        uint64_t peak_refault_mibs, peak_mem_pm, peak_io_pm, peak_mapped_pm, refault_mib, restores;
        unsigned at_limit_steps, steps;
        /* the longest run of steps at the limit with refaults: how close a
         * survivor came to the refault rule's window */
        uint64_t run_since, longest_run_usec;
};

static struct counters read_counters(const char *cg) {
        struct counters c = { .t = mg_mono_usec() };
        struct mg_memstat st;
        struct mg_mem_events ev;
        struct mg_psi psi;

        (void) mgt_cg_read_u64(cg, "memory.current", &c.current);
        if (mgt_cg_read_memstat(cg, &st) == 0) {
                c.file = st.file;
                c.mapped = st.file_mapped;
                c.refaults = st.workingset_refault_file;
                c.restores = st.workingset_restore_file;
        }
        if (mgt_cg_read_events(cg, "memory.events.local", &ev) == 0) {
                c.high = ev.high;
                c.max = ev.max;
        }
        if (mgt_cg_read_psi(cg, "memory.pressure", &psi) == 0)
                c.mem_some = psi.some.total_usec;
        if (mgt_cg_read_psi(cg, "io.pressure", &psi) == 0)
                c.io_some = psi.some.total_usec;
        return c;
}

static uint64_t per_mille(uint64_t part, uint64_t whole) {
        return whole ? part * 1000 / whole : 0;
}

static void field_sample(void *ud) {
        struct field *f = ud;
        uint64_t now = mg_mono_usec();
        if (now < f->next)
                return;
        f->next = now + 1 * MG_USEC_PER_SEC;
        struct counters c = read_counters(f->cg), p = f->prev;
        if (!f->first.t) {
                f->first = f->prev = c;
                return;
        }
        uint64_t span = c.t - p.t, refault = (c.refaults - p.refaults) * 4096;
        uint64_t mem = per_mille(c.mem_some - p.mem_some, span), io = per_mille(c.io_some - p.io_some, span);
        bool at_limit = c.high + c.max > p.high + p.max;
        f->steps++;
        f->at_limit_steps += at_limit;
        if (!f->onset && at_limit && refault > 0)
                f->onset = p.t;
        if (at_limit && refault > 0) {
                f->run_since = f->run_since ? f->run_since : p.t;
                if (c.t - f->run_since > f->longest_run_usec)
                        f->longest_run_usec = c.t - f->run_since;
        } else {
                f->run_since = 0;
        }
        uint64_t mibs = refault * MG_USEC_PER_SEC / span / MG_MIB, mapped = per_mille(c.mapped, c.file);
        f->peak_refault_mibs = mibs > f->peak_refault_mibs ? mibs : f->peak_refault_mibs;
        f->peak_mem_pm = mem > f->peak_mem_pm ? mem : f->peak_mem_pm;
        f->peak_io_pm = io > f->peak_io_pm ? io : f->peak_io_pm;
        if (at_limit && mapped > f->peak_mapped_pm)
                f->peak_mapped_pm = mapped;
        kt_note("t=%4.1fs current=%5.1f file=%5.1f mapped=%5.1f MiB refault=%4" PRIu64 " MiB/s restore+%" PRIu64
                " high+%" PRIu64 " max+%" PRIu64 " mem=%3" PRIu64 ".%" PRIu64 "%% io=%3" PRIu64 ".%" PRIu64 "%%",
                (double) (c.t - f->t0) / 1e6, (double) c.current / MG_MIB, (double) c.file / MG_MIB,
                (double) c.mapped / MG_MIB, mibs, c.restores - p.restores, c.high - p.high, c.max - p.max, mem / 10,
                mem % 10, io / 10, io % 10);
        f->refault_mib = (c.refaults - f->first.refaults) * 4096 / MG_MIB;
        f->restores = c.restores - f->first.restores;
        f->prev = c;
}

static bool field_stop(void *ud) {
        struct field *f = ud;
        return mgt_events_killed(&f->ev) || kt_wait(f->pid, 0) != -ETIMEDOUT;
}

/* The file of a scenario (with_file()): FILE in its workload's args. */
static char path_a[512];

/* Runs the actor under its guard until it is killed, ends, or times out;
 * prints the peaks.  Returns KT_PASS, or KT_FAIL on a setup failure. */
static int field_run(const struct mgt_actor_spec *a, struct field *f) {
        mg_set *s = kt_set_new();
        f->cg = kt_cg_new(a->name);
        KT_CHECK(s && f->cg, "setup");
        if (a->max)
                KT_CHECK(mgt_cg_writef(f->cg, "memory.max", "%" PRIu64, a->max) == 0, "memory.max");
        if (a->high)
                KT_CHECK(mgt_cg_writef(f->cg, "memory.high", "%" PRIu64, a->high) == 0, "memory.high");
        mg_guard *g;
        struct mg_guard_options o = { .size = sizeof(o) };
        KT_CHECK(kt_guard(s, f->cg, a->limit, &f->ev, &g) == 0, "guard");
        KT_CHECK(mg_guard_get_options(g, &o) == 0, "options");
        kt_note("%s: guard limit %" PRIu64 " MiB, memory.max %" PRIu64 " MiB, memory.high %" PRIu64
                " MiB, fast path below %.1f MiB, stall window %" PRIu64 " ms, refault windows %" PRIu64
                " ms (mapped %" PRIu64 " ms)",
                a->name, a->limit / MG_MIB, a->max / MG_MIB, a->high / MG_MIB, (double) g->params.line_bytes / MG_MIB,
                o.stall_window_usec / 1000, o.refault_window_usec / 1000, o.refault_mapped_window_usec / 1000);
        f->t0 = mg_mono_usec();
        const char *argv[16];
        KT_CHECK(mgt_spec_args(a, path_a, "90", argv, 16) == 0, "args");
        f->pid = kt_spawn_exe(f->cg, a->exe ? a->exe : kt_workload, argv);
        KT_CHECK(f->pid > 0, "spawn: %s", strerror((int) -f->pid));
        mgt_run(s, a->timeout_usec, field_stop, field_sample, f);
        int st = kt_wait(f->pid, 10 * MG_USEC_PER_SEC);
        /* A kill record is delivered once the cgroup is empty, and the
         * workload may have died of the kill before that: run the set until
         * the guard waits no more. */
        for (uint64_t end = mg_mono_usec() + 5 * MG_USEC_PER_SEC; mg_mono_usec() < end && mg_guard_is_killing(g);)
                mgt_run(s, 50 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        mg_set_free(s);
        uint64_t end = f->ev.n[MG_EVENT_KILL] ? f->ev.kill.kill_usec : mg_mono_usec(), oom_kill = UINT64_MAX;
        (void) mgt_cg_read_key(f->cg, "memory.events", "oom_kill", &oom_kill);
        kt_note("%s: ran_ms=%" PRIu64 " status=0x%x onset_ms=%" PRIu64 " at_limit_steps=%u/%u refault_mib=%" PRIu64
                " restores=%" PRIu64 " longest_refault_run_ms=%" PRIu64 " peak_refault_mibs=%" PRIu64
                " peak_mapped_share=%" PRIu64 ".%" PRIu64
                "%% peak_mem_some=%" PRIu64 ".%" PRIu64 "%% peak_io_some=%" PRIu64 ".%" PRIu64
                "%% kills=%d throttled=%d kernel_oom_kills=%" PRIu64,
                a->name, (end - f->t0) / 1000, (unsigned) st, f->onset ? (f->onset - f->t0) / 1000 : 0,
                f->at_limit_steps, f->steps, f->refault_mib, f->restores, f->longest_run_usec / 1000,
                f->peak_refault_mibs,
                f->peak_mapped_pm / 10, f->peak_mapped_pm % 10, f->peak_mem_pm / 10, f->peak_mem_pm % 10,
                f->peak_io_pm / 10, f->peak_io_pm % 10, f->ev.n[MG_EVENT_KILL], f->ev.n[MG_EVENT_THROTTLED],
                oom_kill);
        kt_note("%s: %s", a->name, kt_result(f->pid));
        if (f->ev.n[MG_EVENT_KILL])
                kt_note("%s: killed onset_to_kill_ms=%" PRIu64 " reason=%s stalled_ms=%" PRIu64 " signals=%s%s%s",
                        a->name,
                        f->onset && f->ev.kill.kill_usec > f->onset ? (f->ev.kill.kill_usec - f->onset) / 1000 : 0,
                        mg_kill_reason_to_string(f->ev.kill.reason), f->ev.kill.report.stall_usec / 1000,
                        f->ev.kill.report.stall_signals & MG_STALL_MEMORY ? "memory " : "",
                        f->ev.kill.report.stall_signals & MG_STALL_IO ? "io " : "",
                        f->ev.kill.report.stall_signals & MG_STALL_REFAULT ? "refault" : "");
        return KT_PASS;
}

/* A thrash is killed as a stall within 30 s of its onset (systemd-oomd at
 * 20 % for 20 s took 35 s: docs/field-facts.md F1), by SIGKILL. */
static int expect_thrash_killed(const char *name, const struct field *f) {
        int st = kt_wait(f->pid, 0);
        KT_CHECK(f->ev.n[MG_EVENT_KILL] == 1, "%s: not killed", name);
        KT_CHECK(f->ev.kill.reason == MG_KILL_STALL, "%s: reason %d", name, f->ev.kill.reason);
        KT_CHECK(f->onset, "%s: never saw a refault at the limit", name);
        KT_CHECK(f->ev.kill.kill_usec - f->onset <= 30 * MG_USEC_PER_SEC, "%s: killed %" PRIu64 " ms after the onset",
                 name,
                 (f->ev.kill.kill_usec - f->onset) / 1000);
        KT_CHECK(is_sigkill_status(st), "%s: status %d", name, st);
        return KT_PASS;
}

static int expect_survived(const char *name, const struct field *f) {
        int st = kt_wait(f->pid, 0);
        KT_CHECK(f->ev.n[MG_EVENT_KILL] == 0, "%s: killed (%s)", name, mg_kill_reason_to_string(f->ev.kill.reason));
        KT_CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", name, st);
        return KT_PASS;
}


static int with_file(const char *name, uint64_t mib) {
        snprintf(path_a, sizeof(path_a), "%s/%s", kt_disk, name);
        return mgt_make_file(path_a, mib);
}

/* A thrash on a file of mib MiB: the actor's args name it as path_a. */
static int thrash_killed(const char *file, uint64_t mib, const struct mgt_actor_spec *a) {
        struct field f = {};
        KT_CHECK(with_file(file, mib) == 0, "file");
        int r = field_run(a, &f);
        unlink(path_a);
        return r == KT_PASS ? expect_thrash_killed(a->name, &f) : r;
}

/* The sequential file-hot (docs/field-facts.md F3): a 96 MiB file mapped and walked front to
 * back, 200 ms between passes, memory.max = guard limit = 48 MiB.  Every
 * pass reads the file from disk again; the refault distance is larger than
 * the active list, so the kernel books no restores.  Expect: killed. */
int t_thrash_sequential(void) {
        return thrash_killed("seq-hot", mgt_spec_thrash_sequential.file_mib, &mgt_spec_thrash_sequential);
}

/* The skewed app under kubelet's MemoryQoS memory.high (docs/field-facts.md
 * F4: 90 % of the limit): guard limit = memory.max = 64 MiB, memory.high
 * 57.6 MiB, below the fast-path line of 60 MiB.  16 MiB of heap and a
 * 128 MiB file, 95 % of touches in its first 80 MiB: a hot set twice the
 * ~40 MiB of cache left under memory.high.  Expect: killed. */
int t_thrash_under_high(void) {
        return thrash_killed("high-hot", mgt_spec_thrash_under_high.file_mib, &mgt_spec_thrash_under_high);
}

/* The hot-file thrash of thrash-hot-file (96 MiB, 95 % in the first 58 MiB)
 * under a memory.max of 48 MiB with the guard's limit at 64 MiB: the actor
 * is pressed against a kernel limit below the guard's fast-path line.
 * Expect: killed. */
int t_thrash_below_line(void) {
        struct mgt_actor_spec a = { .name = "thrash-line", .limit = 64 * MG_MIB, .max = 48 * MG_MIB,
                                    .args = (const char *[]) { "filehot", path_a, "90", "skew", "58", "95", NULL },
                                    .timeout_usec = 60 * MG_USEC_PER_SEC };
        return thrash_killed("line-hot", 96, &a);
}

/* A finite job that re-reads a file larger than its cache: `cat` of a
 * 256 MiB file three times at memory.max = guard limit = 48 MiB.  From the
 * second pass on every page is a refault.  Expect: not killed, exits 0. */
int t_reread_finite(void) {
        struct field f = {};
        KT_CHECK(with_file("reread", 256) == 0, "file");
        char cmd[700];
        snprintf(cmd, sizeof(cmd), "for i in 1 2 3; do cat %s > /dev/null || exit 1; done; echo workload=cat passes=3",
                 path_a);
        struct mgt_actor_spec a = { .name = "reread-finite", .limit = 48 * MG_MIB, .max = 48 * MG_MIB,
                                    .exe = "/bin/sh", .args = (const char *[]) { "-c", cmd, NULL },
                                    .timeout_usec = 120 * MG_USEC_PER_SEC };
        int r = field_run(&a, &f);
        unlink(path_a);
        if (r != KT_PASS || (r = expect_survived(a.name, &f)) != KT_PASS)
                return r;
        KT_CHECK(f.refault_mib >= 256, "re-read only %" PRIu64 " MiB: the cache held the file", f.refault_mib);
        return KT_PASS;
}

/* A big dirty writer: 384 MiB at memory.max = guard limit = 48 MiB, each
 * 8 MiB written back before the next (as healthy-neighbours' writer: with
 * the kernel's dirty throttling alone, 6.12 and 7.x let most of a small
 * writer's cache sit under writeback behind the throttled disk and then
 * OOM-killed it themselves, `dd` included: docs/testing.md), then fsync.
 * At its limit, stalled on writeback, reads nothing back.  Expect: not
 * killed, by memguard or by the kernel, exits 0. */
int t_dirty_writer(void) {
        struct field f = {};
        snprintf(path_a, sizeof(path_a), "%s/dirty-out", kt_disk);
        struct mgt_actor_spec a = { .name = "dirty-writer", .limit = 48 * MG_MIB, .max = 48 * MG_MIB,
                                    .args = (const char *[]) { "write", path_a, "384", "1", "8", NULL },
                                    .timeout_usec = 120 * MG_USEC_PER_SEC };
        int r = field_run(&a, &f);
        uint64_t oom = UINT64_MAX;
        (void) mgt_cg_read_key(f.cg, "memory.events", "oom_kill", &oom);
        unlink(path_a);
        if (r != KT_PASS)
                return r;
        KT_CHECK(f.ev.n[MG_EVENT_KILL] == 0, "memguard killed the writer");
        KT_CHECK(oom == 0, "the kernel's OOM killer killed the writer (oom_kill %" PRIu64 "): the setup, not memguard",
                 oom);
        if ((r = expect_survived(a.name, &f)) != KT_PASS)
                return r;
        KT_CHECK(f.at_limit_steps > 0, "the writer never reached its memory.max");
        return KT_PASS;
}

/* Throttled, not thrashing, under a memory.high below the fast-path line:
 * guard limit = memory.max = 64 MiB, memory.high 48 MiB; the workload grows
 * anon to 50 MiB and for 12 s gives back and retakes its last 256 KiB.
 * Expect: reported throttled once, never killed, exits 0. */
int t_throttled_below_line(void) {
        struct field f = {};
        struct mgt_actor_spec a = { .name = "throttle-line", .limit = 64 * MG_MIB, .max = 64 * MG_MIB, .high = 48 * MG_MIB,
                                    .args = (const char *[]) { "throttle", "50", "256", "12", NULL },
                                    .timeout_usec = 90 * MG_USEC_PER_SEC };
        int r = field_run(&a, &f);
        if (r != KT_PASS)
                return r;
        r = expect_survived(a.name, &f);
        if (r != KT_PASS)
                return r;
        KT_CHECK(f.ev.n[MG_EVENT_THROTTLED] == 1, "throttled reported %d times", f.ev.n[MG_EVENT_THROTTLED]);
        KT_CHECK(f.ev.throttle.high_bytes == 48 * MG_MIB, "throttle at %" PRIu64, f.ev.throttle.high_bytes);
        return KT_PASS;
}
