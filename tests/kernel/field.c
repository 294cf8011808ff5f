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
 * limit, read back a MiB or more of file pages it had lost
 * (workingset_refault_file; 6.1 counts a few readahead pages reclaimed
 * before their first use while a walk first fills the cache),
 * or, where the kernel does not count them (MGLRU books no refault for a
 * page evicted more than a few generations ago: a sequential walk of twice
 * its cache shows none on 7.2), the step by which it had read more than its
 * file (pages reclaimed since the start plus the cache): what it reads from
 * then on it had before.  The first fill of the cache before it takes
 * seconds under emulation and is not counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktest.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "scenarios.h"
#include "cgdir.h"

struct counters {
        uint64_t t, current, file, mapped, refaults, restores, high, max, mem_some, io_some;
        /* anon restores (the guard's restore rule counts them with the
         * file's), file activations, pages reclaimed (the cache's
         * turnover at the limit) and major faults */
        uint64_t restores_anon, activates, pgsteal, majfault;
};

struct field {
        struct mgt_events ev;
        const char *cg;
        pid_t pid;
        uint64_t t0, next, onset;
        uint64_t file_bytes;    /* the size of the file its workload reads (0: none) */
        struct counters first, prev;
        /* peaks over one-second steps: refaults in MiB/s, pressure in 0.1 % */
        uint64_t peak_refault_mibs, peak_mem_pm, peak_io_pm, peak_mapped_pm, refault_mib, restores;
        /* over the run: anon restores, and the cache's turnover at the
         * limit (pages reclaimed) in MiB */
        uint64_t restores_anon, steal_mib;
        unsigned at_limit_steps, steps;
        /* the longest run of steps at the limit with refaults: how close a
         * survivor came to the refault rule's window */
        uint64_t run_since, longest_run_usec;
        bool quiet;     /* keeps the peaks, prints no trace */
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
                c.restores_anon = st.workingset_restore_anon;
                c.activates = st.workingset_activate_file;
                c.pgsteal = st.pgsteal;
                c.majfault = st.pgmajfault;
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
        bool read_it_all = f->file_bytes && (c.pgsteal - f->first.pgsteal) * 4096 + c.file >= f->file_bytes;
        if (!f->onset && at_limit && (refault >= MG_MIB || read_it_all))
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
        if (!f->quiet)
                kt_note("t=%4.1fs current=%5.1f file=%5.1f mapped=%5.1f MiB refault=%4" PRIu64 " MiB/s restore+%" PRIu64
                        " anon+%" PRIu64 " activate+%" PRIu64 " steal=%4" PRIu64 " MiB/s majflt+%" PRIu64 " high+%" PRIu64
                        " max+%" PRIu64 " mem=%3" PRIu64 ".%" PRIu64 "%% io=%3" PRIu64 ".%" PRIu64 "%%",
                        (double) (c.t - f->t0) / 1e6, (double) c.current / MG_MIB, (double) c.file / MG_MIB,
                        (double) c.mapped / MG_MIB, mibs, c.restores - p.restores, c.restores_anon - p.restores_anon,
                        c.activates - p.activates, (c.pgsteal - p.pgsteal) * 4096 * MG_USEC_PER_SEC / span / MG_MIB,
                        c.majfault - p.majfault, c.high - p.high, c.max - p.max, mem / 10, mem % 10, io / 10, io % 10);
        f->refault_mib = (c.refaults - f->first.refaults) * 4096 / MG_MIB;
        f->restores = c.restores - f->first.restores;
        f->restores_anon = c.restores_anon - f->first.restores_anon;
        f->steal_mib = (c.pgsteal - f->first.pgsteal) * 4096 / MG_MIB;
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
        /* one more step, so a kill between two steps still has its onset */
        f->next = 0;
        field_sample(f);
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
                " restores=%" PRIu64 " anon_restores=%" PRIu64 " stolen_mib=%" PRIu64 " longest_refault_run_ms=%" PRIu64 " peak_refault_mibs=%" PRIu64
                " peak_mapped_share=%" PRIu64 ".%" PRIu64
                "%% peak_mem_some=%" PRIu64 ".%" PRIu64 "%% peak_io_some=%" PRIu64 ".%" PRIu64
                "%% kills=%d throttled=%d kernel_oom_kills=%" PRIu64,
                a->name, (end - f->t0) / 1000, (unsigned) st, f->onset ? (f->onset - f->t0) / 1000 : 0,
                f->at_limit_steps, f->steps, f->refault_mib, f->restores, f->restores_anon, f->steal_mib,
                f->longest_run_usec / 1000,
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
 * 20 % for 20 s took 35 s: docs/field-facts.md F1), by SIGKILL.  A kill
 * before the onset was seen is the restore rule's: the kernel booked
 * restores of working-set pages before a MiB was re-read (the skewed
 * thrash on 6.12, 1 s after it reached its limit) or before the whole file
 * had been read. */
static int expect_thrash_killed(const char *name, const struct field *f) {
        int st = kt_wait(f->pid, 0);
        KT_CHECK(f->ev.n[MG_EVENT_KILL] == 1, "%s: not killed", name);
        KT_CHECK(f->ev.kill.reason == MG_KILL_STALL, "%s: reason %d", name, f->ev.kill.reason);
        if (!f->onset || f->ev.kill.kill_usec < f->onset) {
                KT_CHECK(!(f->ev.kill.report.stall_signals & MG_STALL_REFAULT),
                         "%s: the refault rule killed before the onset", name);
                kt_note("%s: killed before the onset (restore rule, %" PRIu64 " restores over the run)", name,
                        f->restores + f->restores_anon);
        } else {
                KT_CHECK(f->ev.kill.kill_usec - f->onset <= 30 * MG_USEC_PER_SEC,
                         "%s: killed %" PRIu64 " ms after the onset", name, (f->ev.kill.kill_usec - f->onset) / 1000);
        }
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
        struct field f = { .file_bytes = mib * MG_MIB };
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

/*
 * The field's workloads at any disk speed: "disk-KIND-MIB", run only when
 * named (tests/kernel/meson.build runs them with the VM's disk throttled to
 * 8 MB/s, and the 1 GiB ones at 60 MB/s).  Tree: one actor of MIB MiB
 * (guard limit = memory.max), a file of twice MIB on the disk (prefilled
 * through `tests/kernel/run --disk-file field-<2*MIB>:<2*MIB>`, else
 * written first).  Workloads, the thrashes first:
 *  - seq: the file mapped and walked front to back, 200 ms between passes
 *    (the field's sequential file-hot, F3: a hot set twice the cache);
 *  - skew: 95 % of random touches of the mapped file in its first 400/256
 *    of MIB (400 MiB for a 256 MiB actor);
 *  - cat: `cat` of the file, twice (a backup, a checksum: a finite job that
 *    re-reads twice its cache through read());
 *  - pass: one mapped pass over the file (a loader: re-reads nothing);
 *  - dirty: writes 1.5 x MIB, 8 MiB written back at a time, then fsync;
 *  - healthy: a mapped hot set of MIB/4 (the file's first quarter of its
 *    size) touched at random all along, while `cat` streams the whole file
 *    once beside it (a working set in use and a full cache of pages it is
 *    done with);
 *  - readback: `cat` of the file once, then the hot set of MIB/4 touched at
 *    random for 20 s: a working set read back after a scan pushed it out.
 *    Where reading MIB/4 takes 30 s or more at the disk's pace it is not
 *    run (skipped, with the reason): for that long it re-reads pages it had,
 *    stalled at its limit, as a thrash does, and a thrash is killed within
 *    30 s (docs/design.md, the trade-offs).
 * Expect: seq and skew killed as a stall within 30 s of their onset; the
 * others not killed, exit 0.  Each prints the peaks field_run() traces, so
 * a survivor's signals stand beside a thrash's.
 */
enum disk_kind { DISK_SEQ, DISK_SKEW, DISK_CAT, DISK_PASS, DISK_DIRTY, DISK_HEALTHY, DISK_READBACK, DISK_TENANTS, DISK_SHARE };
static const char *const disk_kinds[] = { "seq", "skew", "cat", "pass", "dirty", "healthy", "readback", "tenants", "share" };

int t_disk_parse(const char *name, unsigned *ret_kind, uint64_t *ret_mib) {
        if (strncmp(name, "disk-", 5) != 0)
                return -EINVAL;
        for (unsigned i = 0; i < sizeof(disk_kinds) / sizeof(disk_kinds[0]); i++) {
                size_t l = strlen(disk_kinds[i]);
                const char *m = name + 5 + l;
                char *end;
                if (strncmp(name + 5, disk_kinds[i], l) != 0 || *m != '-' || m[1] < '0' || m[1] > '9')
                        continue;
                errno = 0;
                unsigned long long mib = strtoull(m + 1, &end, 10);
                if (errno || *end != '\0' || mib < 16 || mib > 4096)
                        return -EINVAL;
                *ret_kind = i;
                *ret_mib = mib;
                return 0;
        }
        return -EINVAL;
}

/* Seconds to move mib MiB at the VM disk's pace (MEMGUARD_TEST_DISK_MBPS;
 * 0 or unset, unthrottled: taken as 200 MB/s). */
static uint64_t disk_secs(uint64_t mib) {
        const char *e = getenv("MEMGUARD_TEST_DISK_MBPS");
        uint64_t mbps = e ? strtoull(e, NULL, 10) : 0;
        return mib * MG_MIB / ((mbps ? mbps : 200) * 1000000) + 1;
}

/* A scenario's file of mib MiB, kt_disk/name: a prefilled one as found,
 * dropped from the cache, or a new one. */
static int disk_file_at(char *path, size_t size, const char *name, uint64_t mib) {
        struct stat st;
        snprintf(path, size, "%s/%s", kt_disk, name);
        if (stat(path, &st) == 0 && (uint64_t) st.st_size == mib * MG_MIB) {
                mgt_drop_cache(path);
                return 0;
        }
        return mgt_make_file(path, mib);
}

static int disk_file(uint64_t mib) {
        char name[32];
        snprintf(name, sizeof(name), "field-%" PRIu64, mib);
        return disk_file_at(path_a, sizeof(path_a), name, mib);
}

/*
 * "disk-tenants-MIB": four actors of MIB MiB run the sequential thrash
 * (each on a file of its own, twice its size) beside four healthy ones
 * (MIB/4 MiB, touching a file of half that at random: it fits), all in one
 * set, on one disk (tests/kernel/meson.build: 60 MB/s).  Files are
 * field-<2*MIB>-<i> and field-<MIB/8>-<i>.  Expect: every thrasher killed
 * as a stall within 30 s of its own onset; no healthy one touched.
 */
#define TENANTS 4
struct tenants {
        struct field th[TENANTS], ok[TENANTS];
};

static void tenants_sample(void *ud) {
        struct tenants *t = ud;
        for (int i = 0; i < TENANTS; i++) {
                field_sample(&t->th[i]);
                field_sample(&t->ok[i]);
        }
}

static bool tenants_stop(void *ud) {
        struct tenants *t = ud;
        for (int i = 0; i < TENANTS; i++)
                if (!mgt_events_killed(&t->th[i].ev) && kt_wait(t->th[i].pid, 0) == -ETIMEDOUT)
                        return false;
        return true;
}

static int disk_tenants(uint64_t mib) {
        static struct tenants t;
        char path[TENANTS][2][560], name[64], hot[24];
        mg_set *s = kt_set_new();
        KT_CHECK(s, "set");
        memset(&t, 0, sizeof(t));
        snprintf(hot, sizeof(hot), "%" PRIu64, mib / 8);
        for (int i = 0; i < TENANTS; i++) {
                struct field *f[2] = { &t.th[i], &t.ok[i] };
                uint64_t limit[2] = { mib, mib / 4 }, file[2] = { 2 * mib, mib / 8 };
                for (int k = 0; k < 2; k++) {
                        mg_guard *g;
                        snprintf(name, sizeof(name), "field-%" PRIu64 "-%d", file[k], i);
                        KT_CHECK(disk_file_at(path[i][k], sizeof(path[i][k]), name, file[k]) == 0, "file %s", name);
                        snprintf(name, sizeof(name), "%s-%d", k ? "healthy" : "thrash", i);
                        f[k]->cg = kt_cg_new(name);
                        KT_CHECK(f[k]->cg, "cgroup");
                        KT_CHECK(mgt_cg_writef(f[k]->cg, "memory.max", "%" PRIu64, limit[k] * MG_MIB) == 0, "memory.max");
                        KT_CHECK(kt_guard(s, f[k]->cg, limit[k] * MG_MIB, &f[k]->ev, &g) == 0, "guard");
                }
        }
        uint64_t t0 = mg_mono_usec();
        for (int i = 0; i < TENANTS; i++) {
                t.th[i].t0 = t.ok[i].t0 = t0;
                t.th[i].file_bytes = 2 * mib * MG_MIB;
                t.ok[i].quiet = true;
                t.th[i].pid = kt_spawn(t.th[i].cg, (const char *[]) { "filehot", path[i][0], "900", "seq", "200", NULL });
                t.ok[i].pid = kt_spawn(t.ok[i].cg, (const char *[]) { "filehot", path[i][1], "900", "skew", hot, "100", NULL });
                KT_CHECK(t.th[i].pid > 0 && t.ok[i].pid > 0, "spawn");
        }
        /* the four share the disk: a pass takes four times as long */
        mgt_run(s, (disk_secs(8 * mib) * 3 / 2 + 60) * MG_USEC_PER_SEC, tenants_stop, tenants_sample, &t);
        for (int i = 0; i < TENANTS; i++) {
                t.th[i].next = 0;
                field_sample(&t.th[i]);
        }
        for (uint64_t end = mg_mono_usec() + 5 * MG_USEC_PER_SEC; mg_mono_usec() < end && !tenants_stop(&t);)
                mgt_run(s, 50 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        int r = KT_PASS;
        for (int i = 0; i < TENANTS && r == KT_PASS; i++) {
                struct field *f = &t.th[i];
                kt_note("thrash-%d: onset_ms=%" PRIu64 " refault_mib=%" PRIu64 " stolen_mib=%" PRIu64
                        " peak_io_some=%" PRIu64 ".%" PRIu64 "%% kills=%d onset_to_kill_ms=%" PRIu64,
                        i, f->onset ? (f->onset - t0) / 1000 : 0, f->refault_mib, f->steal_mib, f->peak_io_pm / 10,
                        f->peak_io_pm % 10, f->ev.n[MG_EVENT_KILL],
                        f->ev.n[MG_EVENT_KILL] && f->onset && f->ev.kill.kill_usec > f->onset
                                ? (f->ev.kill.kill_usec - f->onset) / 1000
                                : 0);
                r = expect_thrash_killed("thrash", f);
        }
        for (int i = 0; i < TENANTS; i++) {
                struct field *f = &t.ok[i];
                kt_note("healthy-%d: refault_mib=%" PRIu64 " peak_io_some=%" PRIu64 ".%" PRIu64
                        "%% peak_mem_some=%" PRIu64 ".%" PRIu64 "%% kills=%d",
                        i, f->refault_mib, f->peak_io_pm / 10, f->peak_io_pm % 10, f->peak_mem_pm / 10,
                        f->peak_mem_pm % 10, f->ev.n[MG_EVENT_KILL]);
                KT_CHECK(f->ev.n[MG_EVENT_KILL] == 0, "healthy-%d killed", i);
                KT_CHECK(kt_wait(f->pid, 0) == -ETIMEDOUT, "healthy-%d ended", i);
        }
        mg_set_free(s);
        return r;
}

/*
 * "disk-share-HEAP": seed 000's two tenants sharing a cache.  Two apps, each
 * a HEAP MiB heap and a 128 MiB file touched 95 % in its first 48 MiB
 * (`mg-workload filehot FILE 90 skew 48 95 HEAP`), in one parent whose
 * memory.max is 2 x HEAP + 65 MiB: 65 MiB of cache for 256 MiB of hot
 * files, the seed's t3.micro.  Twice, each pair in a set of its own:
 *  - budget: each tenant's memory.max = guard limit = half the parent;
 *  - overcommitted: no memory.max of their own and a guard limit of
 *    HEAP + 212 MiB each (512 MiB at 300: what each paid), so the parent's
 *    limit binds first; 60 s.
 * Files field-128-0 and field-128-1.  Expect: budget, both killed as a
 * stall within 30 s of their own onset; overcommitted, neither killed: each
 * stays far below its own line (a guard judges an actor at its own limit,
 * docs/design.md "What is not here yet"), while reclaim takes more than
 * its file (the thrash is there: its signals print beside the budget's).
 */
static int share_pair(uint64_t heap, bool budget) {
        static struct field f[2];
        char path[2][560], name[64], heap_s[24];
        const char *base = kt_base, *parent = kt_cg_new(budget ? "share-budget" : "share-over");
        uint64_t parent_max = (2 * heap + 65) * MG_MIB, limit = budget ? parent_max / 2 : (heap + 212) * MG_MIB;
        mg_set *s = kt_set_new();
        KT_CHECK(s && parent, "setup");
        KT_CHECK(mgt_cg_writef(parent, "memory.max", "%" PRIu64, parent_max) == 0, "memory.max");
        KT_CHECK(mgt_cg_writef(parent, "cgroup.subtree_control", "+memory +io") == 0, "subtree_control");
        memset(f, 0, sizeof(f));
        snprintf(heap_s, sizeof(heap_s), "%" PRIu64, heap);
        kt_base = parent; /* the tenants are removed before the parent */
        for (int i = 0; i < 2; i++) {
                snprintf(name, sizeof(name), "field-128-%d", i);
                KT_CHECK(disk_file_at(path[i], sizeof(path[i]), name, 128) == 0, "file %s", name);
                snprintf(name, sizeof(name), "tenant-%d", i);
                f[i].cg = kt_cg_new(name);
                KT_CHECK(f[i].cg, "cgroup");
                if (budget)
                        KT_CHECK(mgt_cg_writef(f[i].cg, "memory.max", "%" PRIu64, limit) == 0, "memory.max");
                KT_CHECK(kt_guard(s, f[i].cg, limit, &f[i].ev, NULL) == 0, "guard");
        }
        kt_base = base;
        uint64_t t0 = mg_mono_usec();
        for (int i = 0; i < 2; i++) {
                f[i].t0 = t0;
                f[i].file_bytes = 128 * MG_MIB;
                f[i].quiet = i > 0;
                f[i].pid = kt_spawn(f[i].cg, (const char *[]) { "filehot", path[i], "90", "skew", "48", "95", heap_s, NULL });
                KT_CHECK(f[i].pid > 0, "spawn");
        }
        uint64_t until = t0 + (budget ? 80 : 60) * MG_USEC_PER_SEC;
        while (mg_mono_usec() < until) {
                mgt_run(s, 250 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
                field_sample(&f[0]);
                field_sample(&f[1]);
                if (budget && mgt_events_killed(&f[0].ev) && mgt_events_killed(&f[1].ev))
                        break;
        }
        for (int i = 0; i < 2; i++) {
                f[i].next = 0;
                field_sample(&f[i]);
        }
        for (uint64_t end = mg_mono_usec() + 5 * MG_USEC_PER_SEC; mg_mono_usec() < end;)
                mgt_run(s, 50 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        int r = KT_PASS;
        for (int i = 0; i < 2 && r == KT_PASS; i++) {
                kt_note("%s tenant-%d: guard limit %" PRIu64 " MiB, parent memory.max %" PRIu64
                        " MiB; onset_ms=%" PRIu64 " at_limit_steps=%u/%u refault_mib=%" PRIu64 " stolen_mib=%" PRIu64
                        " restores=%" PRIu64 " peak_io_some=%" PRIu64 ".%" PRIu64 "%% peak_mem_some=%" PRIu64
                        ".%" PRIu64 "%% kills=%d onset_to_kill_ms=%" PRIu64,
                        budget ? "budget" : "overcommitted", i, limit / MG_MIB, parent_max / MG_MIB,
                        f[i].onset ? (f[i].onset - t0) / 1000 : 0, f[i].at_limit_steps, f[i].steps, f[i].refault_mib,
                        f[i].steal_mib, f[i].restores, f[i].peak_io_pm / 10, f[i].peak_io_pm % 10,
                        f[i].peak_mem_pm / 10, f[i].peak_mem_pm % 10, f[i].ev.n[MG_EVENT_KILL],
                        f[i].ev.n[MG_EVENT_KILL] && f[i].onset && f[i].ev.kill.kill_usec > f[i].onset
                                ? (f[i].ev.kill.kill_usec - f[i].onset) / 1000
                                : 0);
                if (budget) {
                        r = expect_thrash_killed(i ? "tenant-1" : "tenant-0", &f[i]);
                } else {
                        KT_CHECK(f[i].ev.n[MG_EVENT_KILL] == 0, "tenant-%d killed below its line", i);
                        KT_CHECK(f[i].steal_mib > 128, "tenant-%d: reclaim took %" PRIu64 " MiB: no thrash", i,
                                 f[i].steal_mib);
                }
        }
        mg_set_free(s);
        return r;
}

static int disk_share(uint64_t heap) {
        int r = share_pair(heap, true);
        kt_cleanup_all();
        return r == KT_PASS ? share_pair(heap, false) : r;
}

/* Copies a NULL-terminated list of arguments into args (8 at most). */
static void put_args(const char **args, const char *const *list) {
        for (size_t i = 0; i < 7 && list[i]; i++)
                args[i] = list[i];
}

int t_disk_case(const char *name) {
        unsigned kind;
        uint64_t mib;
        KT_CHECK(t_disk_parse(name, &kind, &mib) == 0, "not a disk case: %s", name);
        if (kind == DISK_TENANTS)
                return disk_tenants(mib);
        if (kind == DISK_SHARE)
                return disk_share(mib);
        KT_CHECK(disk_file(2 * mib) == 0, "file");

        char hot[24], size[24], out[560], cmd[1400];
        uint64_t first_pass = disk_secs(2 * mib);
        struct mgt_actor_spec a = { .name = name, .limit = mib * MG_MIB, .max = mib * MG_MIB };
        const char *args[8] = {};
        a.args = args;
        snprintf(out, sizeof(out), "%s/dirty-out", kt_disk);
        switch (kind) {
        case DISK_SEQ:
                put_args(args, (const char *[]) { "filehot", path_a, "900", "seq", "200", NULL });
                a.timeout_usec = (first_pass * 3 / 2 + 60) * MG_USEC_PER_SEC;
                break;
        case DISK_SKEW:
                snprintf(hot, sizeof(hot), "%" PRIu64, mib * 400 / 256);
                put_args(args, (const char *[]) { "filehot", path_a, "900", "skew", hot, "95", NULL });
                a.timeout_usec = (first_pass * 3 / 2 + 60) * MG_USEC_PER_SEC;
                break;
        case DISK_CAT:
                snprintf(cmd, sizeof(cmd), "cat %s >/dev/null && cat %s >/dev/null && echo workload=cat passes=2",
                         path_a, path_a);
                a.exe = "/bin/sh";
                put_args(args, (const char *[]) { "-c", cmd, NULL });
                a.timeout_usec = (first_pass * 3 + 60) * MG_USEC_PER_SEC;
                break;
        case DISK_PASS:
                put_args(args, (const char *[]) { "filehot", path_a, "900", "seq", "0", "0", "1", NULL });
                a.timeout_usec = (first_pass * 3 / 2 + 60) * MG_USEC_PER_SEC;
                break;
        case DISK_DIRTY:
                snprintf(size, sizeof(size), "%" PRIu64, mib * 3 / 2);
                put_args(args, (const char *[]) { "write", out, size, "1", "8", NULL });
                a.timeout_usec = (disk_secs(mib * 3 / 2) * 2 + 60) * MG_USEC_PER_SEC;
                break;
        case DISK_HEALTHY: {
                /* The hot set is touched until the cat is done and 10 s on. */
                uint64_t secs = first_pass + disk_secs(mib / 4) + 10;
                snprintf(cmd, sizeof(cmd),
                         "%s filehot %s %" PRIu64 " skew %" PRIu64 " 100 & hot=$!; "
                         "cat %s >/dev/null || exit 1; wait $hot",
                         kt_workload, path_a, secs, mib / 4, path_a);
                a.exe = "/bin/sh";
                put_args(args, (const char *[]) { "-c", cmd, NULL });
                a.timeout_usec = (secs * 3 / 2 + 60) * MG_USEC_PER_SEC;
                break;
        }
        default:
                if (disk_secs(mib / 4) >= 30) {
                        snprintf(kt_skip_reason, sizeof(kt_skip_reason),
                                 "reading back %" PRIu64 " MiB takes %" PRIu64 " s at this disk's pace, as long as "
                                 "a thrash is given (docs/design.md, the trade-offs)", mib / 4, disk_secs(mib / 4));
                        return KT_SKIP;
                }
                snprintf(cmd, sizeof(cmd), "cat %s >/dev/null && %s filehot %s 20 skew %" PRIu64 " 100", path_a,
                         kt_workload, path_a, mib / 4);
                a.exe = "/bin/sh";
                put_args(args, (const char *[]) { "-c", cmd, NULL });
                a.timeout_usec = ((first_pass + disk_secs(mib / 4)) * 3 / 2 + 80) * MG_USEC_PER_SEC;
                break;
        }
        struct field f = { .file_bytes = 2 * mib * MG_MIB };
        int r = field_run(&a, &f);
        unlink(out);
        if (r != KT_PASS)
                return r;
        if (kind == DISK_SEQ || kind == DISK_SKEW)
                return expect_thrash_killed(name, &f);
        r = expect_survived(name, &f);
        /* That it read the file from disk again: re-reads counted, or,
         * where MGLRU counts none of them (7.2 at 8 MB/s: the pages went
         * generations ago), reclaim took twice the cache. */
        if (r == KT_PASS && kind == DISK_CAT)
                KT_CHECK(f.refault_mib >= mib || f.steal_mib >= 2 * mib,
                         "re-read only %" PRIu64 " MiB, reclaim took %" PRIu64 " MiB: the cache held the file",
                         f.refault_mib, f.steal_mib);
        return r;
}
