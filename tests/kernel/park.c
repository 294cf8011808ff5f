/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Park instead of kill (mg_guard_options.park_deadline_usec) on a real
 * cgroup v2 freezer: the actor frozen at the verdict, the worker saving
 * its guest memory while it is frozen, and the park's three ends (the
 * worker's kill, a thaw into a larger limit, the deadline); what the
 * freeze spares the actor's neighbours; and a park that outlives its
 * crashed worker (the park record).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "ktest.h"
#include "park.h"
#include "memguard/snapshot.h"
#include "scenarios.h"

static void log_fn(int level, const char *msg, void *ud) {
        (void) ud;
        if (level <= MG_LOG_WARNING)
                kt_note("library: %s", msg);
}

static bool parked(struct mgt_actor *a, void *ud) {
        (void) ud;
        return a->ev.n[MG_EVENT_PARK] > 0 || a->ev.n[MG_EVENT_KILL] > 0;
}

static bool killed(struct mgt_actor *a, void *ud) {
        (void) ud;
        return a->ev.n[MG_EVENT_KILL] > 0;
}

/* The actor's cgroup.events "frozen". */
static int frozen_now(const char *cg) {
        uint64_t v = UINT64_MAX;
        return mgt_cg_read_key(cg, "cgroup.events", "frozen", &v) < 0 ? -1 : (int) v;
}

/* io.stat rbytes of cg, summed over its devices. */
static uint64_t read_bytes(const char *cg) {
        char buf[4096], *p = buf;
        uint64_t sum = 0;

        if (mgt_cg_read(cg, "io.stat", buf, sizeof(buf)) < 0)
                return 0;
        while ((p = strstr(p, "rbytes=")) != NULL) {
                p += strlen("rbytes=");
                sum += strtoull(p, &p, 10);
        }
        return sum;
}

/* An actor guarded with parks, limit = memory.max = limit. */
static int park_actor(struct mgt_actor *a, const char *name, uint64_t limit, uint64_t deadline_usec) {
        struct mg_guard_options o;

        if (mgt_actor_new(a, kt_base, name, 0) < 0 || mgt_actor_limit(a, "memory.max", limit) < 0)
                return -EIO;
        mg_guard_options_init(&o, limit);
        o.park_deadline_usec = deadline_usec;
        o.log = log_fn;
        return mgt_actor_guard(a, limit, &o);
}

/*
 * "park-guest-thrash": thrash-hot-file's thrash beside a microVM's guest
 * memory.  The worker makes a 16 MiB memfd (its guest RAM); the actor's
 * process fills it (charged to the actor: shmem, which no reclaim frees
 * without swap) and then reads a 96 MiB file at random, 95 % of reads in
 * its first 60 % (58 MiB), in a 64 MiB memory.max: the 48 MiB left for
 * cache is thrash-hot-file's.  Expect: parked (frozen, not killed) as a
 * stall at the verdict, where the kill would be: cgroup.freeze written in
 * the tick that decided (detect_usec), and frozen within the kill wait;
 * the onset-to-park time is printed beside the deciding rule's window
 * (thrash-hot-file's onset-to-kill is the same rule's); while frozen memory.current holds and the
 * actor reads nothing from disk; the worker writes the guest memory
 * (mg_snapshot_write() of the memfd, in a lend of the parked guard) and
 * ends the park with a kill: SIGKILL, the record's park_end
 * MG_PARK_END_KILL; the image restores byte for byte into a new actor,
 * charged there.  Skips without PSI or without cgroup.freeze.
 */
int t_park_guest_thrash(void) {
        const uint64_t limit = 64 * MG_MIB, guest = 16 * MG_MIB;
        struct mgt_actor a = {}, b = {};
        struct mgt_proc *p;
        char file[512], fdarg[16];
        int memfd = -1, dfd = -1, r = KT_FAIL;
        uint8_t *want = MAP_FAILED, *got = MAP_FAILED;
        int copy = -1;

        snprintf(file, sizeof(file), "%s/park-hot", kt_disk);
        KT_CHECK(mgt_make_file(file, 96) == 0, "make %s", file);
        mgt_drop_cache(file);
        KT_CHECK(park_actor(&a, "park-guest", limit, 60 * MG_USEC_PER_SEC) == 0, "actor");
        if (!kt_have_file(a.cg, "memory.pressure") || !kt_have_file(a.cg, "cgroup.freeze")) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "kernel without PSI or cgroup.freeze");
                r = KT_SKIP;
                goto out;
        }
        memfd = memfd_create("guest", 0); /* inherited by the actor's process */
        if (memfd < 0 || ftruncate(memfd, (off_t) guest) < 0) {
                kt_note("memfd: %s", strerror(errno));
                goto out;
        }
        snprintf(fdarg, sizeof(fdarg), "%d", memfd);
        a.workload = kt_workload;
        a.watch_onset = true;
        if (mgt_actor_start(&a, (const char *[]) { "guest", fdarg, "16", file, "60", "60", "95", NULL }, &p) < 0)
                goto out;
        bool told = mgt_actor_run(&a, 60 * MG_USEC_PER_SEC, parked, NULL);
        const struct mg_report *pk = &a.ev.park.report;
        uint64_t window = a.ev.park.report.stall_signals & MG_STALL_REFAULT ? a.guard->params.refault_mapped_window_usec
                                                                             : a.guard->params.stall_window_usec;
        kt_note("parked=%d killed=%d reason=%s onset_to_park_ms=%" PRId64 " verdict_to_freeze_ms=%" PRIu64
                " freeze_ms=%" PRIu64 " window_ms=%" PRIu64 " stalled_ms=%" PRIu64 " signals=%s%s%s used_mib=%" PRIu64
                " shmem_mib=%" PRIu64 " file_mib=%" PRIu64,
                a.ev.n[MG_EVENT_PARK], a.ev.n[MG_EVENT_KILL], mg_kill_reason_to_string(a.ev.park.reason),
                a.onset_usec ? (int64_t) (pk->park_usec - a.onset_usec) / 1000 : -1,
                (pk->park_usec - a.ev.park.detect_usec) / 1000, (pk->frozen_usec - pk->park_usec) / 1000,
                window / 1000, pk->stall_usec / 1000, pk->stall_signals & MG_STALL_MEMORY ? "memory " : "",
                pk->stall_signals & MG_STALL_IO ? "io " : "", pk->stall_signals & MG_STALL_REFAULT ? "refault" : "",
                pk->used_bytes / MG_MIB, pk->stat.shmem / MG_MIB, pk->stat.file / MG_MIB);
        if (!told || a.ev.n[MG_EVENT_PARK] != 1) {
                kt_note("FAILED: not parked within 60 s (%s)", told ? "killed instead" : "no verdict");
                goto out;
        }
        if (a.ev.park.reason != MG_KILL_STALL || pk->stall_usec < window ||
            pk->park_usec - a.ev.park.detect_usec > a.guard->opt.tick_usec + 100 * MG_USEC_PER_MSEC ||
            !pk->frozen_usec || pk->frozen_usec - pk->park_usec > a.guard->opt.kill_wait_usec) {
                kt_note("FAILED: not a stall frozen at its verdict");
                goto out;
        }

        /* Frozen: memory.current holds and nothing is read from disk. */
        uint64_t cur0 = 0, cur1 = 0, rb0 = read_bytes(a.cg);
        (void) mgt_cg_read_u64(a.cg, "memory.current", &cur0);
        mgt_actor_run(&a, 1 * MG_USEC_PER_SEC, NULL, NULL);
        (void) mgt_cg_read_u64(a.cg, "memory.current", &cur1);
        uint64_t rb1 = read_bytes(a.cg);
        kt_note("frozen=%d current_mib=%" PRIu64 "->%" PRIu64 " read_kib_while_frozen=%" PRIu64, frozen_now(a.cg),
                cur0 / MG_MIB, cur1 / MG_MIB, (rb1 - rb0) / 1024);
        if (frozen_now(a.cg) != 1 || cur1 > cur0 + MG_MIB || rb1 - rb0 > 256 * MG_KIB) {
                kt_note("FAILED: the parked actor still runs");
                goto out;
        }

        /* The worker saves the guest memory while the actor is frozen. */
        struct mg_snapshot_options so;
        struct mg_snapshot_stats ss = { .size = sizeof(ss) };
        mg_snapshot_options_init(&so);
        so.guard = a.guard;
        so.log = log_fn;
        dfd = open(kt_disk, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint64_t t_save = mg_mono_usec();
        int w = mg_snapshot_write(&(struct mg_snapshot_source) { .kind = MG_SNAPSHOT_FD, .fd = memfd, .length = guest },
                                  dfd, "park-guest.snap", &so, &ss);
        t_save = mg_mono_usec() - t_save;
        kt_note("save: rc=%d ms=%" PRIu64 " data_mib=%" PRIu64 " method=%s lend_mib=%" PRIu64, w, t_save / 1000,
                ss.data_bytes / MG_MIB, mg_snapshot_method_to_string(ss.method), ss.lend_bytes / MG_MIB);
        if (w < 0)
                goto out;

        /* ... and ends the park with the kill. */
        uint64_t t_end = mg_mono_usec();
        int e = mg_guard_park_end(a.guard, pk->park_id, MG_PARK_KILL, 0);
        bool k = mgt_actor_run(&a, 10 * MG_USEC_PER_SEC, killed, NULL);
        int st = mgt_proc_wait(p, 5 * MG_USEC_PER_SEC);
        kt_note("park_end=%d killed=%d end_to_empty_ms=%" PRIu64 " park_end_kind=%s status=%d", e, k,
                (a.ev.kill.empty_usec - t_end) / 1000, mg_park_end_to_string(a.ev.kill.report.park_end), st);
        if (e != 1 || !k || a.ev.kill.report.park_end != MG_PARK_END_KILL || !is_sigkill_status(st)) {
                kt_note("FAILED: the park did not end in the worker's kill");
                goto out;
        }

        /* Restored into a new actor, charged there, byte for byte. */
        if (mgt_actor_new(&b, kt_base, "park-restored", 0) < 0 || mgt_actor_limit(&b, "memory.max", limit) < 0 ||
            kt_enter(&b) < 0)
                goto out;
        copy = memfd_create("restored", MFD_CLOEXEC);
        uint64_t t_rest = mg_mono_usec();
        int rr = mg_snapshot_restore(dfd, "park-guest.snap",
                                     &(struct mg_snapshot_target) { .kind = MG_SNAPSHOT_FD, .fd = copy, .length = guest },
                                     &so, NULL);
        t_rest = mg_mono_usec() - t_rest;
        uint64_t charged = 0;
        (void) mgt_cg_read_u64(b.cg, "memory.current", &charged);
        if (kt_leave(&b) < 0)
                goto out;
        want = mmap(NULL, guest, PROT_READ, MAP_SHARED, memfd, 0);
        got = mmap(NULL, guest, PROT_READ, MAP_SHARED, copy, 0);
        bool same = rr == 0 && want != MAP_FAILED && got != MAP_FAILED && memcmp(want, got, guest) == 0;
        kt_note("restore: rc=%d ms=%" PRIu64 " new_actor_current_mib=%" PRIu64 " byte_for_byte=%d", rr, t_rest / 1000,
                charged / MG_MIB, same);
        if (!same || charged < guest) {
                kt_note("FAILED: the restore is not the guest memory, or not charged to the new actor");
                goto out;
        }
        r = KT_PASS;
out:
        if (want != MAP_FAILED)
                munmap(want, guest);
        if (got != MAP_FAILED)
                munmap(got, guest);
        if (copy >= 0)
                close(copy);
        if (dfd >= 0) {
                unlinkat(dfd, "park-guest.snap", 0);
                close(dfd);
        }
        mgt_actor_end(&a);
        mgt_actor_end(&b);
        if (memfd >= 0)
                close(memfd);
        unlink(file);
        return r;
}

/* An overshoot at 64 MiB (anon grows to 160 MiB in 256 KiB steps and holds
 * for hold seconds), guarded with parks; no memory.max. */
static int overshoot_actor(struct mgt_actor *a, const char *name, uint64_t deadline_usec, const char *hold,
                           struct mgt_proc **p) {
        struct mg_guard_options o;

        if (mgt_actor_new(a, kt_base, name, 0) < 0)
                return -EIO;
        mg_guard_options_init(&o, 64 * MG_MIB);
        o.park_deadline_usec = deadline_usec;
        o.log = log_fn;
        if (mgt_actor_guard(a, 64 * MG_MIB, &o) < 0)
                return -EIO;
        a->workload = kt_workload;
        return mgt_actor_start(a, (const char *[]) { "anon", "160", "256", hold, NULL }, p);
}

static bool grown(struct mgt_actor *a, void *ud) {
        uint64_t cur = 0;
        (void) mgt_cg_read_u64(a->cg, "memory.current", &cur);
        return cur >= *(uint64_t *) ud || a->ev.n[MG_EVENT_KILL] > 0;
}

/*
 * "park-thaw": an overshoot at 64 MiB is parked; while frozen its
 * memory.current holds; the worker thaws it into a 256 MiB limit.  Expect:
 * MG_EVENT_PARK (reason overshoot), MG_EVENT_THAW, cgroup.freeze 0, and the
 * actor goes on to its 160 MiB and holds it unkilled for 3 s.  Skips
 * without cgroup.freeze.
 */
int t_park_thaw(void) {
        struct mgt_actor a = {};
        struct mgt_proc *p;
        int r = KT_FAIL;

        if (overshoot_actor(&a, "park-thaw", 30 * MG_USEC_PER_SEC, "30", &p) < 0)
                goto out;
        if (!kt_have_file(a.cg, "cgroup.freeze")) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "kernel without cgroup.freeze");
                r = KT_SKIP;
                goto out;
        }
        bool told = mgt_actor_run(&a, 30 * MG_USEC_PER_SEC, parked, NULL);
        const struct mg_report *pk = &a.ev.park.report;
        uint64_t cur0 = 0, cur1 = 0;
        (void) mgt_cg_read_u64(a.cg, "memory.current", &cur0);
        mgt_actor_run(&a, 1 * MG_USEC_PER_SEC, NULL, NULL);
        (void) mgt_cg_read_u64(a.cg, "memory.current", &cur1);
        kt_note("parked=%d reason=%s used_mib=%" PRIu64 " freeze_ms=%" PRIu64 " current_mib=%" PRIu64 "->%" PRIu64,
                a.ev.n[MG_EVENT_PARK], mg_kill_reason_to_string(a.ev.park.reason), pk->used_bytes / MG_MIB,
                (pk->frozen_usec - pk->park_usec) / 1000, cur0 / MG_MIB, cur1 / MG_MIB);
        if (!told || a.ev.n[MG_EVENT_PARK] != 1 || a.ev.park.reason != MG_KILL_OVERSHOOT || cur1 > cur0 + MG_MIB) {
                kt_note("FAILED: not parked as an overshoot, or it grew while frozen");
                goto out;
        }
        int e = mg_guard_park_end(a.guard, pk->park_id, MG_PARK_THAW, 256 * MG_MIB);
        uint64_t want = 160 * MG_MIB;
        bool g = mgt_actor_run(&a, 20 * MG_USEC_PER_SEC, grown, &want);
        mgt_actor_run(&a, 3 * MG_USEC_PER_SEC, killed, NULL);
        uint64_t cur2 = 0;
        (void) mgt_cg_read_u64(a.cg, "memory.current", &cur2);
        kt_note("thaw=%d thawed=%d frozen=%d grew_to_160=%d current_mib=%" PRIu64 " killed=%d running=%d", e,
                a.ev.n[MG_EVENT_THAW], frozen_now(a.cg), g, cur2 / MG_MIB, a.ev.n[MG_EVENT_KILL], !mgt_proc_check(p));
        if (e != 0 || a.ev.n[MG_EVENT_THAW] != 1 || frozen_now(a.cg) != 0 || !g || a.ev.n[MG_EVENT_KILL] != 0 ||
            mgt_proc_check(p)) {
                kt_note("FAILED: the thawed actor did not go on under its new limit");
                goto out;
        }
        r = KT_PASS;
out:
        mgt_actor_end(&a);
        return r;
}

/*
 * "park-deadline": an overshoot parked with a deadline of 2 s, and a worker
 * that never answers.  Expect: MG_EVENT_PARK, then the kill at the
 * deadline (park_end MG_PARK_END_DEADLINE, kill_usec within the next tick
 * of park_usec + 2 s, and 500 ms for a late timer under TCG), SIGKILL while frozen, and mg_guard_park_end() after it
 * -ENOENT.  Skips without cgroup.freeze.
 */
int t_park_deadline(void) {
        struct mgt_actor a = {};
        struct mgt_proc *p;
        int r = KT_FAIL;

        if (overshoot_actor(&a, "park-deadline", 2 * MG_USEC_PER_SEC, "30", &p) < 0)
                goto out;
        if (!kt_have_file(a.cg, "cgroup.freeze")) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "kernel without cgroup.freeze");
                r = KT_SKIP;
                goto out;
        }
        bool k = mgt_actor_run(&a, 30 * MG_USEC_PER_SEC, killed, NULL);
        int st = mgt_proc_wait(p, 5 * MG_USEC_PER_SEC);
        const struct mg_report *kr = &a.ev.kill.report;
        uint64_t tick = a.guard->opt.tick_usec;
        kt_note("parked=%d killed=%d park_end=%s park_to_kill_ms=%" PRIu64 " frozen=%d status=%d", a.ev.n[MG_EVENT_PARK],
                k, mg_park_end_to_string(kr->park_end), (a.ev.kill.kill_usec - kr->park_usec) / 1000,
                kr->frozen_usec != 0, st);
        if (!k || a.ev.n[MG_EVENT_PARK] != 1 || kr->park_end != MG_PARK_END_DEADLINE || !kr->frozen_usec ||
            a.ev.kill.kill_usec < kr->park_usec + 2 * MG_USEC_PER_SEC ||
            a.ev.kill.kill_usec > kr->park_usec + 2 * MG_USEC_PER_SEC + tick + 500 * MG_USEC_PER_MSEC ||
            !is_sigkill_status(st)) {
                kt_note("FAILED: not killed at the park's deadline");
                goto out;
        }
        if (mg_guard_park_end(a.guard, kr->park_id, MG_PARK_KILL, 0) != -ENOENT) {
                kt_note("FAILED: a late answer was not -ENOENT");
                goto out;
        }
        r = KT_PASS;
out:
        mgt_actor_end(&a);
        return r;
}

/* What the neighbour lived through while the worker saved: its read
 * bytes and io.pressure some, and the thrashing actor's own reads. */
struct save_window {
        uint64_t actor_read, neigh_read, neigh_io_some_usec;
};

static int window_of(struct mgt_actor *a, const char *neigh, uint64_t usec, struct save_window *w) {
        struct mg_psi ps0 = {}, ps1 = {};
        uint64_t ar = read_bytes(a->cg), nr = read_bytes(neigh);

        if (mgt_cg_read_psi(neigh, "io.pressure", &ps0) < 0)
                return -EIO;
        mgt_actor_run(a, usec, NULL, NULL);
        if (mgt_cg_read_psi(neigh, "io.pressure", &ps1) < 0)
                return -EIO;
        w->actor_read = read_bytes(a->cg) - ar;
        w->neigh_read = read_bytes(neigh) - nr;
        w->neigh_io_some_usec = ps1.some.total_usec - ps0.some.total_usec;
        return 0;
}

/*
 * "park-neighbours": what a park spares the neighbours.  A thrashing
 * actor (thrash-sequential's: a 96 MiB file mapped and walked front to
 * back in a 48 MiB memory.max, each pass read from disk) beside a
 * neighbour streaming its own 64 MiB file through a 32 MiB memory.max
 * (every read from disk too).  Twice: the worker saves the actor
 * for 4 s before its end, first with the kill put off (a pre-kill
 * deferral: the actor runs meanwhile), then parked (frozen meanwhile).
 * Expect: in the deferral the actor keeps reading from disk; parked it
 * reads nothing (under 256 KiB in 4 s).  The neighbour's read bytes and
 * io stall over the two windows are the figures, side by side.  Skips
 * without PSI or cgroup.freeze.
 */
static struct mg_guard_options defer_opts;
static void defer_event(struct mgt_actor *a, const struct mg_event *ev) {
        if (ev->type == MG_EVENT_PRE_KILL)
                (void) mg_guard_defer_kill(a->guard, 4 * MG_USEC_PER_SEC);
}

static bool deferred(struct mgt_actor *a, void *ud) {
        (void) ud;
        return a->ev.n[MG_EVENT_PRE_KILL] > 0 || a->ev.n[MG_EVENT_KILL] > 0;
}

int t_park_neighbours(void) {
        char hot[512], own[512];
        struct save_window win[2] = {};
        int r = KT_FAIL;

        snprintf(hot, sizeof(hot), "%s/park-nb-hot", kt_disk);
        snprintf(own, sizeof(own), "%s/park-nb-own", kt_disk);
        KT_CHECK(mgt_make_file(hot, 96) == 0 && mgt_make_file(own, 64) == 0, "files");
        const char *neigh = kt_cg_new("park-neighbour");
        KT_CHECK(neigh && mgt_cg_writef(neigh, "memory.max", "%" PRIu64, 32 * MG_MIB) == 0, "neighbour");
        if (!kt_have_file(neigh, "io.pressure") || !kt_have_file(neigh, "cgroup.freeze")) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "kernel without PSI or cgroup.freeze");
                r = KT_SKIP;
                goto out;
        }
        pid_t np = kt_spawn(neigh, (const char *const[]) { "read", own, "600", NULL });
        KT_CHECK(np > 0, "neighbour spawn");
        for (int park = 0; park < 2; park++) {
                struct mgt_actor a = {};
                bool ok;

                mgt_drop_cache(hot);
                mg_guard_options_init(&defer_opts, 48 * MG_MIB);
                defer_opts.log = log_fn;
                if (park)
                        defer_opts.park_deadline_usec = 30 * MG_USEC_PER_SEC;
                else
                        defer_opts.pre_kill_max_defer_usec = 4 * MG_USEC_PER_SEC;
                ok = mgt_actor_new(&a, kt_base, park ? "park-nb-parked" : "park-nb-deferred", 0) == 0 &&
                     mgt_actor_limit(&a, "memory.max", 48 * MG_MIB) == 0 && mgt_actor_guard(&a, 48 * MG_MIB, &defer_opts) == 0;
                a.on_event = park ? NULL : defer_event;
                a.workload = kt_workload;
                ok = ok && mgt_actor_start(&a, (const char *[]) { "filehot", hot, "120", "seq", "200", NULL }, NULL) == 0;
                ok = ok && mgt_actor_run(&a, 60 * MG_USEC_PER_SEC, park ? parked : deferred, NULL) &&
                     a.ev.n[MG_EVENT_KILL] == 0;
                ok = ok && window_of(&a, neigh, 4 * MG_USEC_PER_SEC, &win[park]) == 0;
                if (ok && park)
                        ok = mg_guard_park_end(a.guard, a.ev.park.report.park_id, MG_PARK_KILL, 0) == 1;
                ok = ok && mgt_actor_run(&a, 15 * MG_USEC_PER_SEC, killed, NULL);
                kt_note("%s: actor_read_mib=%" PRIu64 ".%02" PRIu64 " neighbour_read_mib=%" PRIu64
                        " neighbour_io_some_ms=%" PRIu64 " (4 s window) killed=%d",
                        park ? "parked  " : "deferred", win[park].actor_read / MG_MIB,
                        win[park].actor_read % MG_MIB * 100 / MG_MIB, win[park].neigh_read / MG_MIB,
                        win[park].neigh_io_some_usec / 1000, a.ev.n[MG_EVENT_KILL]);
                mgt_actor_end(&a);
                if (!ok) {
                        kt_note("FAILED: the %s run did not reach its window and its kill", park ? "parked" : "deferred");
                        goto out;
                }
        }
        if (win[0].actor_read < 4 * MG_MIB || win[1].actor_read > 256 * MG_KIB) {
                kt_note("FAILED: the deferred actor should read from disk (it thrashes), the parked one nothing");
                goto out;
        }
        r = KT_PASS;
out:
        unlink(hot);
        unlink(own);
        return r;
}

/* ---- park-crash: a park outlives the worker that made it --------------- */

/* What a lone guard of park-crash told: counts, and the last park and kill. */
static struct {
        int n[MG_EVENT_THAW + 1];
        struct mg_kill_record park, kill;
} crash_ev;

static void crash_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) g, (void) ud;
        if (ev->type <= MG_EVENT_THAW)
                crash_ev.n[ev->type]++;
        if (ev->type == MG_EVENT_PARK)
                crash_ev.park = *ev->kill;
        if (ev->type == MG_EVENT_KILL)
                crash_ev.kill = *ev->kill;
        kt_note_event(ev);
}

static void crash_options(struct mg_guard_options *o, uint64_t park_deadline_usec) {
        mg_guard_options_init(o, 64 * MG_MIB);
        o->park_deadline_usec = park_deadline_usec;
        o->on_event = crash_event;
        o->log = log_fn;
}

/* Ticks g (a lone guard, as a worker's own loop does) until done says so
 * or timeout passes; returns done's last answer. */
static bool tick_until(mg_guard *g, uint64_t timeout_usec, bool (*done)(mg_guard *g)) {
        uint64_t end = mg_mono_usec() + timeout_usec, tick = mg_guard_get_tick_usec(g);
        struct timespec ts = { .tv_sec = (time_t) (tick / MG_USEC_PER_SEC),
                               .tv_nsec = (long) (tick % MG_USEC_PER_SEC) * 1000 };

        while (!done(g) && mg_mono_usec() < end) {
                (void) mg_guard_tick(g);
                nanosleep(&ts, NULL);
        }
        return done(g);
}

static bool told_park(mg_guard *g) {
        (void) g;
        return crash_ev.n[MG_EVENT_PARK] > 0 || crash_ev.n[MG_EVENT_KILL] > 0;
}

static bool told_kill(mg_guard *g) {
        (void) g;
        return crash_ev.n[MG_EVENT_KILL] > 0;
}

/* The park record on cg into buf; its length or a negative errno. */
static int park_record_of(const char *cg, char *buf, size_t size) {
        ssize_t n = getxattr(cg, MG_PARK_XATTR, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return (int) n;
}

/*
 * One crashed park: an overshoot at 64 MiB (anon to 160 MiB in 256 KiB
 * steps, held 60 s) in a new cgroup <base>/<name>-<n>; a forked child
 * makes a lone guard with parks (deadline park_deadline_usec), ticks it
 * until MG_EVENT_PARK, reports the park's id and waits; the parent
 * SIGKILLs it.  Checks the crash left the actor frozen (cgroup.freeze 1,
 * cgroup.events frozen 1) and the record on the directory with the park's
 * id.  Returns KT_PASS with *ret_cg, *ret_pid (the actor's) and *ret_id,
 * or KT_FAIL/KT_SKIP.
 */
static int park_and_crash(const char *name, uint64_t park_deadline_usec, const char **ret_cg, pid_t *ret_pid,
                          uint64_t *ret_id) {
        char rec[MG_PARK_RECORD_MAX + 1], want[64];
        struct mg_park_record pr;
        uint64_t id = 0, v = 0;
        int pfd[2];
        const char *cg = kt_cg_new(name);

        KT_CHECK(cg, "setup");
        if (!kt_have_file(cg, "cgroup.freeze")) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "kernel without cgroup.freeze");
                return KT_SKIP;
        }
        if (setxattr(cg, "user.memguard.test", "1", 1, 0) < 0) {
                KT_CHECK(errno == EOPNOTSUPP, "setxattr on cgroupfs: %s", strerror(errno));
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "cgroupfs has no user xattrs (before 5.7)");
                return KT_SKIP;
        }
        KT_CHECK(removexattr(cg, "user.memguard.test") == 0, "removexattr: %s", strerror(errno));
        pid_t actor = kt_spawn(cg, (const char *const[]) { "anon", "160", "256", "60", NULL });
        KT_CHECK(actor > 0, "spawn");
        KT_CHECK(pipe(pfd) == 0, "pipe");
        pid_t child = fork();
        KT_CHECK(child >= 0, "fork: %s", strerror(errno));
        if (child == 0) {
                struct mg_guard_options o;
                mg_guard *g;
                uint64_t got = 0;

                close(pfd[0]);
                crash_options(&o, park_deadline_usec);
                if (mg_guard_new(cg, &o, &g) == 0 && tick_until(g, 30 * MG_USEC_PER_SEC, told_park) &&
                    crash_ev.n[MG_EVENT_PARK] == 1)
                        got = crash_ev.park.report.park_id;
                (void) !write(pfd[1], &got, sizeof(got));
                for (;;)
                        pause(); /* parked until SIGKILL: the guard is never freed */
        }
        close(pfd[1]);
        struct pollfd pl = { .fd = pfd[0], .events = POLLIN };
        bool heard = poll(&pl, 1, 40000) == 1 && read(pfd[0], &id, sizeof(id)) == sizeof(id);
        close(pfd[0]);
        KT_CHECK(kill(child, SIGKILL) == 0, "kill");
        int st = kt_wait(child, 10 * MG_USEC_PER_SEC);
        KT_CHECK(heard && id != 0, "the child did not park the overshoot (id %" PRIu64 ")", id);
        KT_CHECK(is_sigkill_status(st), "child status %d", st);

        KT_CHECK(mgt_cg_read_u64(cg, "cgroup.freeze", &v) == 0 && v == 1, "cgroup.freeze after the crash: %" PRIu64, v);
        KT_CHECK(frozen_now(cg) == 1, "not frozen after the crash");
        KT_CHECK(park_record_of(cg, rec, sizeof(rec)) > 0, "no park record after the crash");
        kt_note("record: %.*s", (int) strcspn(rec, "\n"), rec);
        KT_CHECK(mg_park_record_parse(rec, strlen(rec), &pr) == 0, "malformed record %s", rec);
        snprintf(want, sizeof(want), "id=%" PRIu64 " reason=overshoot ", id);
        KT_CHECK(strstr(rec, want) != NULL && pr.pid == (uint64_t) child, "record %s (child %d)", rec, (int) child);
        *ret_cg = cg;
        *ret_pid = actor;
        *ret_id = id;
        return KT_PASS;
}

/*
 * "park-crash": a park outlives its worker.  Twice, each in a new cgroup
 * <base>/park-crash-<n> with an overshoot at 64 MiB (anon to 160 MiB, held
 * 60 s) and no memory.max; a forked child with a lone guard (parks on)
 * parks it and is SIGKILLed (park_and_crash() above: the actor frozen, the
 * user.memguard.park record on the directory with the park's id).
 * 1. Deadline 30 s.  mg_guard_recover(MG_RECOVER_EXPIRED) returns 0 and
 *    leaves record and freeze alone (a park still promised).  A new guard
 *    in the parent takes the park over: parked from mg_guard_new() with
 *    the record's id, MG_EVENT_PARK within 2 s of ticks (reason overshoot,
 *    used above 64 MiB from a fresh read), and the park ends with
 *    mg_guard_park_end(MG_PARK_KILL) = 1: MG_EVENT_KILL with park_end
 *    MG_PARK_END_KILL, the actor dead of SIGKILL, the record gone.
 * 2. Deadline 2 s, and nobody runs for 3 s after the crash.
 *    mg_guard_recover(0) returns 0 and leaves record and freeze alone (an
 *    expired park is a guard's to kill, with its record).  A new guard
 *    takes the expired park over; its first tick kills (returns 1) with no
 *    MG_EVENT_PARK; MG_EVENT_KILL with park_end MG_PARK_END_DEADLINE, the
 *    actor dead of SIGKILL, the record gone.
 * Skips without cgroup.freeze or without user xattrs on cgroupfs (5.7+).
 */
int t_park_crash(void) {
        char rec[MG_PARK_RECORD_MAX + 1];
        struct mg_guard_options o;
        const char *cg;
        pid_t actor;
        uint64_t id, t0;
        mg_guard *g;
        int r, st;

        /* 1: taken over, ended by the new worker */
        memset(&crash_ev, 0, sizeof(crash_ev));
        r = park_and_crash("park-crash", 30 * MG_USEC_PER_SEC, &cg, &actor, &id);
        if (r != KT_PASS)
                return r;
        memset(&crash_ev, 0, sizeof(crash_ev));
        r = mg_guard_recover(cg, MG_RECOVER_EXPIRED);
        KT_CHECK(r == 0 && park_record_of(cg, rec, sizeof(rec)) > 0 && frozen_now(cg) == 1,
                 "recover(EXPIRED) of a live park: %d, record %s", r, rec);
        crash_options(&o, 30 * MG_USEC_PER_SEC);
        KT_CHECK(mg_guard_new(cg, &o, &g) == 0, "guard");
        KT_CHECK(mg_guard_get_park_id(g) == id, "not taken over: park id %" PRIu64 " (record's %" PRIu64 ")",
                 mg_guard_get_park_id(g), id);
        t0 = mg_mono_usec();
        bool told = tick_until(g, 2 * MG_USEC_PER_SEC, told_park);
        const struct mg_report *pk = &crash_ev.park.report;
        kt_note("takeover: parked=%d park_id=%" PRIu64 " reason=%s used_mib=%" PRIu64 " told_ms=%" PRIu64,
                crash_ev.n[MG_EVENT_PARK], pk->park_id, mg_kill_reason_to_string(crash_ev.park.reason),
                pk->used_bytes / MG_MIB, (mg_mono_usec() - t0) / 1000);
        KT_CHECK(told && crash_ev.n[MG_EVENT_PARK] == 1 && crash_ev.n[MG_EVENT_KILL] == 0 && pk->park_id == id &&
                         crash_ev.park.reason == MG_KILL_OVERSHOOT && pk->used_bytes > 64 * MG_MIB &&
                         pk->frozen_usec != 0,
                 "no MG_EVENT_PARK for the taken-over park");
        r = mg_guard_park_end(g, id, MG_PARK_KILL, 0);
        bool k = tick_until(g, 10 * MG_USEC_PER_SEC, told_kill);
        st = kt_wait(actor, 5 * MG_USEC_PER_SEC);
        int left = park_record_of(cg, rec, sizeof(rec));
        kt_note("end: park_end=%d killed=%d park_end_kind=%s status=%d record=%d", r, k,
                mg_park_end_to_string(crash_ev.kill.report.park_end), st, left);
        KT_CHECK(r == 1 && k && crash_ev.kill.report.park_end == MG_PARK_END_KILL && crash_ev.kill.report.park_id == id &&
                         is_sigkill_status(st) && left == -ENODATA,
                 "the taken-over park did not end in the new worker's kill");
        mg_guard_free(g);

        /* 2: expired while nobody ran: killed at the first tick */
        memset(&crash_ev, 0, sizeof(crash_ev));
        r = park_and_crash("park-crash", 2 * MG_USEC_PER_SEC, &cg, &actor, &id);
        if (r != KT_PASS)
                return r;
        memset(&crash_ev, 0, sizeof(crash_ev));
        nanosleep(&(struct timespec) { .tv_sec = 3 }, NULL);
        r = mg_guard_recover(cg, 0);
        KT_CHECK(r == 0 && frozen_now(cg) == 1 && park_record_of(cg, rec, sizeof(rec)) > 0,
                 "the expired park changed alone, or by recover (%d)", r);
        crash_options(&o, 30 * MG_USEC_PER_SEC);
        KT_CHECK(mg_guard_new(cg, &o, &g) == 0, "guard");
        KT_CHECK(mg_guard_get_park_id(g) == id, "not taken over: park id %" PRIu64, mg_guard_get_park_id(g));
        r = mg_guard_tick(g);
        k = tick_until(g, 10 * MG_USEC_PER_SEC, told_kill);
        st = kt_wait(actor, 5 * MG_USEC_PER_SEC);
        left = park_record_of(cg, rec, sizeof(rec));
        kt_note("expired: first_tick=%d parked=%d killed=%d park_end_kind=%s status=%d record=%d", r,
                crash_ev.n[MG_EVENT_PARK], k, mg_park_end_to_string(crash_ev.kill.report.park_end), st, left);
        KT_CHECK(r == 1 && crash_ev.n[MG_EVENT_PARK] == 0 && k &&
                         crash_ev.kill.report.park_end == MG_PARK_END_DEADLINE && is_sigkill_status(st) &&
                         left == -ENODATA,
                 "the expired park was not killed at the first tick");
        mg_guard_free(g);
        return KT_PASS;
}
