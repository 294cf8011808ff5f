/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard demo: the signature scenarios, each run twice on a real cgroup v2
 * (once with the kernel's limits alone, once guarded) and a table of what
 * happened.  On a host without a delegated memory controller it boots a
 * Debian kernel under qemu (tests/vm/vmrun) and runs itself there.
 *
 * Tree: <parent>/memguard-demo-<pid>/<scenario>-<n>, +memory enabled below
 * the demo cgroup; every actor is 64 MiB (48 MiB for two of the thrashes, so
 * their hot sets do not fit).  Temp files live on a disk file system (/mnt/disk in
 * the VM): on tmpfs the page cache would be shmem, which counts as used.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cgdir.h"
#include "util.h"
#include "cli.h"
#include "demo.h"
#include "events.h"
#include "loop.h"

#define LIMIT (64 * MG_MIB)

struct row {
        const char *name;
        char alone[160], guarded[160], when[64];
        bool ok;
        char why[256];
};

__attribute__((format(printf, 2, 3))) static void step(struct demo *d, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        demo_progress("[%u/%u] %s: %s", d->step, d->steps, d->scenario, msg);
}

/* Marks the row failed; the reasons are listed under the table. */
__attribute__((format(printf, 2, 3))) static void expect_failed(struct row *w, const char *fmt, ...) {
        size_t len = strlen(w->why);
        va_list ap;

        w->ok = false;
        if (len && len + 2 < sizeof(w->why)) {
                memcpy(w->why + len, "; ", 3);
                len += 2;
        }
        va_start(ap, fmt);
        vsnprintf(w->why + len, sizeof(w->why) - len, fmt, ap);
        va_end(ap);
}

static void file_path(const struct demo *d, const char *name, char *buf, size_t len) {
        /* d->dir is a mkdtemp() result well below PATH_MAX - 64 (pick_dir) */
        if ((size_t) snprintf(buf, len, "%s/%s", d->dir, name) >= len)
                buf[0] = '\0';
}

/* ---- 1. anon overshoot -------------------------------------------------- */

/* No memory.max; the workload maps 160 MiB of anon in 256 KiB steps and
 * holds it.  Kernel alone: nothing stops it.  Guarded at 64 MiB: killed as
 * an overshoot; timed from memory.current's first crossing (an upper bound
 * on when used crossed, since used <= memory.current). */
static void s_overshoot(struct demo *d, struct row *w) {
        const struct mgt_actor_spec *c = &mgt_spec_anon_overshoot; /* the kernel suite's anon-overshoot */
        const char *const *args = c->args;
        struct mgt_actor a;
        char b1[32], b2[32];

        step(d, "kernel alone: no memory.max, mg-workload anon 160");
        if (demo_actor_new(d, "overshoot-alone", 0, &a) == 0 && demo_proc_start(&a, args) == 0) {
                demo_actor_run(&a, 60 * MG_USEC_PER_SEC, demo_printed_or_done);
                uint64_t oom = 0;
                (void) mgt_cg_read_key(a.cg, "memory.events", "oom_kill", &oom);
                if (mgt_proc_printed(&a.proc[0]) && !a.proc[0].done) {
                        snprintf(w->alone, sizeof(w->alone), "grew to %s unchecked", demo_mib(a.peak, b1, sizeof(b1)));
                        if (a.peak < 150 * MG_MIB)
                                expect_failed(w, "kernel alone: peak memory.current only %s",
                                              demo_mib(a.peak, b1, sizeof(b1)));
                } else {
                        snprintf(w->alone, sizeof(w->alone), "stopped at %s (%s, oom_kill %" PRIu64 ")",
                                 demo_mib(a.peak, b1, sizeof(b1)), mgt_proc_status(&a.proc[0], b2, sizeof(b2)), oom);
                        expect_failed(w, "kernel alone: the workload did not grow to 160 MiB and hold");
                }
        } else {
                snprintf(w->alone, sizeof(w->alone), "could not run");
                expect_failed(w, "kernel alone: setup failed");
        }
        demo_actor_end(&a);
        step(d, "kernel alone: %s", w->alone);
        if (d->interrupted)
                return;

        step(d, "memguard: guard limit 64 MiB, mg-workload anon 160");
        if (demo_actor_new(d, "overshoot-guarded", c->limit, &a) == 0 && demo_proc_start(&a, args) == 0) {
                a.watch_bytes = c->limit;
                demo_actor_run(&a, 60 * MG_USEC_PER_SEC, demo_killed_or_done);
                mgt_proc_check(&a.proc[0]);
                if (a.ev.n[MG_EVENT_KILL]) {
                        snprintf(w->guarded, sizeof(w->guarded), "killed (%s) at %s used",
                                 mg_kill_reason_to_string(a.ev.kill.reason),
                                 demo_mib(a.ev.kill.report.used_bytes, b1, sizeof(b1)));
                        if (a.crossed_usec && a.ev.kill.kill_usec >= a.crossed_usec)
                                snprintf(w->when, sizeof(w->when), "%s after crossing 64 MiB",
                                         demo_dur(a.ev.kill.kill_usec - a.crossed_usec, b2, sizeof(b2)));
                        else
                                snprintf(w->when, sizeof(w->when), "at the crossing");
                        if (a.ev.kill.reason != MG_KILL_OVERSHOOT)
                                expect_failed(w, "memguard: killed as %s, expected overshoot",
                                              mg_kill_reason_to_string(a.ev.kill.reason));
                } else {
                        snprintf(w->guarded, sizeof(w->guarded), "not killed (peak %s, %s)",
                                 demo_mib(a.peak, b1, sizeof(b1)), mgt_proc_status(&a.proc[0], b2, sizeof(b2)));
                        snprintf(w->when, sizeof(w->when), "-");
                        expect_failed(w, "memguard: expected an overshoot kill");
                }
        } else {
                snprintf(w->guarded, sizeof(w->guarded), "could not run");
                expect_failed(w, "memguard: setup failed");
        }
        demo_actor_end(&a);
        if (a.ev.n[MG_EVENT_KILL] && !mgt_proc_sigkilled(&a.proc[0]))
                expect_failed(w, "memguard: the workload ended with %s, not SIGKILL",
                              mgt_proc_status(&a.proc[0], b1, sizeof(b1)));
        step(d, "memguard: %s", w->guarded);
}

/* ---- 2. page cache at the limit ----------------------------------------- */

/* memory.max 64 MiB: a writer of 192 MiB (dirty cache) and a reader looping
 * over a 128 MiB file for 10 s.  memory.current sits at the limit the whole
 * time, all of it reclaimable cache: neither the kernel nor the guard
 * should touch them. */
static void s_page_cache(struct demo *d, struct row *w) {
        const struct mgt_actor_spec *sw = &mgt_spec_page_cache_writer, *sr = &mgt_spec_page_cache_reader;
        char rfile[PATH_MAX], wfile[PATH_MAX], b1[32], b2[32], b3[32];
        const char *wargs[8], *rargs[8];
        int r;

        file_path(d, "pagecache-read", rfile, sizeof(rfile));
        file_path(d, "pagecache-write", wfile, sizeof(wfile));
        (void) mgt_spec_args(sw, wfile, NULL, wargs, 8); /* the specs have fewer */
        (void) mgt_spec_args(sr, rfile, "10", rargs, 8);
        step(d, "writing a 128 MiB file to read");
        r = mgt_make_file(rfile, sr->file_mib);
        if (r < 0) {
                demo_progress("%s: %s", rfile, strerror(-r));
                snprintf(w->alone, sizeof(w->alone), "could not run");
                snprintf(w->guarded, sizeof(w->guarded), "could not run");
                expect_failed(w, "cannot write %s", rfile);
                return;
        }
        for (int guarded = 0; guarded < 2 && !d->interrupted; guarded++) {
                const char *who = guarded ? "memguard" : "kernel alone";
                char *cell = guarded ? w->guarded : w->alone;
                size_t cell_len = guarded ? sizeof(w->guarded) : sizeof(w->alone);
                struct mgt_actor a;

                step(d, "%s: memory.max 64 MiB, a 192 MiB writer and a 10 s reader of 128 MiB", who);
                if (demo_actor_new(d, guarded ? "pagecache-guarded" : "pagecache-alone", guarded ? sw->limit : 0, &a) < 0 ||
                    demo_actor_set(&a, "memory.max", sw->max) < 0 || demo_proc_start(&a, wargs) < 0 ||
                    demo_proc_start(&a, rargs) < 0) {
                        snprintf(cell, cell_len, "could not run");
                        expect_failed(w, "%s: setup failed", who);
                        demo_actor_end(&a);
                        continue;
                }
                demo_actor_run(&a, 60 * MG_USEC_PER_SEC, demo_killed_or_done);
                uint64_t oom = 0;
                (void) mgt_cg_read_key(a.cg, "memory.events", "oom_kill", &oom);
                uint64_t ms = (mg_mono_usec() - a.start_usec) / MG_USEC_PER_MSEC;
                unsigned kills = (unsigned) a.ev.n[MG_EVENT_KILL];
                enum mg_kill_reason reason = a.ev.kill.reason;
                demo_actor_end(&a);
                if (kills) {
                        snprintf(cell, cell_len, "killed (%s)", mg_kill_reason_to_string(reason));
                        expect_failed(w, "%s: page cache got the actor killed", who);
                } else if (mgt_proc_exited_ok(&a.proc[0]) && mgt_proc_exited_ok(&a.proc[1]) && oom == 0) {
                        snprintf(cell, cell_len, "untouched, both done (cache %s)", demo_mib(a.peak, b1, sizeof(b1)));
                } else {
                        snprintf(cell, cell_len, "writer %s, reader %s, oom_kill %" PRIu64,
                                 mgt_proc_status(&a.proc[0], b2,
                                                 sizeof(b2)), mgt_proc_status(&a.proc[1], b3, sizeof(b3)), oom);
                        expect_failed(w, "%s: expected both to finish untouched", who);
                }
                char first[512];
                size_t len = mgt_proc_output(&a.proc[1], first, sizeof(first));
                first[strcspn(first, "\n")] = '\0'; /* its first line */
                step(d, "%s: %s (%" PRIu64 " ms; reader: %s)", who, cell, ms, len ? first : "-");
                unlink(wfile);
                mgt_drop_cache(rfile);
        }
        snprintf(w->when, sizeof(w->when), "-");
        unlink(rfile);
}

/* ---- 3. a snapshot-like write in a lend --------------------------------- */

static bool lend_ended(struct mgt_actor *a, void *ud) {
        (void) ud;
        return a->ev.n[MG_EVENT_LEND_END] > 0;
}

/* memory.high at 90 % of 64 MiB.  Kernel alone: a 256 MiB buffered write is
 * throttled at memory.high.  memguard: memory.high lent (to "max") around
 * the write, then the lend ends: memory.high must read back exactly as
 * before, and the dirty cache left behind must not get the actor killed. */
static void s_lend(struct demo *d, struct row *w) {
        const struct mgt_actor_spec *sp = &mgt_spec_dirty_after_lend;
        const uint64_t high = sp->high;
        char file[PATH_MAX], before[64] = "", lent[64] = "", after[64] = "", b1[32], b2[32];
        const char *args[8];
        struct mgt_actor a;

        file_path(d, "lend-write", file, sizeof(file));
        (void) mgt_spec_args(sp, file, NULL, args, 8);
        step(d, "kernel alone: memory.high 90%% of 64 MiB, a 256 MiB buffered write");
        if (demo_actor_new(d, "lend-alone", 0, &a) == 0 && demo_actor_set(&a, "memory.high", high) == 0 &&
            demo_proc_start(&a, args) == 0) {
                demo_actor_run(&a, 120 * MG_USEC_PER_SEC, demo_all_done);
                uint64_t oom = 0;
                (void) mgt_cg_read_key(a.cg, "memory.events", "oom_kill", &oom);
                uint64_t high_events = 0;
                (void) mgt_cg_read_key(a.cg, "memory.events", "high", &high_events);
                uint64_t elapsed_ms = 0;
                (void) mgt_proc_result_value(&a.proc[0], "elapsed_ms", &elapsed_ms);
                if (mgt_proc_exited_ok(&a.proc[0]) && oom == 0) {
                        snprintf(w->alone, sizeof(w->alone), "write throttled: 256 MiB in %s",
                                 demo_dur(elapsed_ms * MG_USEC_PER_MSEC, b1, sizeof(b1)));
                } else {
                        snprintf(w->alone, sizeof(w->alone), "writer %s, oom_kill %" PRIu64,
                                 mgt_proc_status(&a.proc[0], b1, sizeof(b1)), oom);
                        expect_failed(w, "kernel alone: the write did not finish");
                }
                step(d, "kernel alone: %s (%" PRIu64 " high events)", w->alone, high_events);
        } else {
                snprintf(w->alone, sizeof(w->alone), "could not run");
                expect_failed(w, "kernel alone: setup failed");
        }
        demo_actor_end(&a);
        unlink(file);
        if (d->interrupted)
                return;

        step(d, "memguard: memory.high 90%% of 64 MiB, lent around the same write");
        if (demo_actor_new(d, "lend-guarded", sp->limit, &a) < 0 || demo_actor_set(&a, "memory.high", high) < 0 ||
            mgt_cg_read(a.cg, "memory.high", before, sizeof(before)) < 0) {
                snprintf(w->guarded, sizeof(w->guarded), "could not run");
                expect_failed(w, "memguard: setup failed");
                demo_actor_end(&a);
                return;
        }
        uint64_t lend = 0;
        int r = mg_guard_lend_begin(a.guard, MG_UNLIMITED, 120 * MG_USEC_PER_SEC, &lend);
        (void) mgt_cg_read(a.cg, "memory.high", lent, sizeof(lent));
        if (r < 0 || demo_proc_start(&a, args) < 0) {
                snprintf(w->guarded, sizeof(w->guarded), "lend failed: %s", strerror(r < 0 ? -r : EIO));
                expect_failed(w, "memguard: lend_begin failed");
                demo_actor_end(&a);
                return;
        }
        demo_actor_run(&a, 120 * MG_USEC_PER_SEC, demo_all_done);
        uint64_t t_end = mg_mono_usec();
        /* In a set the end is queued (1): the set's restore worker writes
         * memory.high back, and the set tells MG_EVENT_LEND_END when it is
         * done.  The guard runs meanwhile. */
        r = mg_guard_lend_end(a.guard, lend);
        if (r == 1)
                r = demo_actor_run(&a, 60 * MG_USEC_PER_SEC, lend_ended) ? 0 : -ETIMEDOUT;
        uint64_t restore = mg_mono_usec() - t_end;
        (void) mgt_cg_read(a.cg, "memory.high", after, sizeof(after));
        /* the dirty cache the write left must not look like a reason to kill */
        demo_actor_run(&a, 3 * MG_USEC_PER_SEC, NULL);
        before[strcspn(before, "\n")] = lent[strcspn(lent, "\n")] = after[strcspn(after, "\n")] = '\0';
        if (r == 0 && strcmp(before, after) == 0 && a.ev.n[MG_EVENT_KILL] == 0) {
                snprintf(w->guarded, sizeof(w->guarded), "lent; memory.high restored exactly");
        } else if (a.ev.n[MG_EVENT_KILL]) {
                snprintf(w->guarded, sizeof(w->guarded), "killed (%s)", mg_kill_reason_to_string(a.ev.kill.reason));
        } else {
                snprintf(w->guarded, sizeof(w->guarded), "memory.high %s, restored as %s", before, after);
        }
        snprintf(w->when, sizeof(w->when), "restored in %s", demo_dur(restore, b2, sizeof(b2)));
        if (r < 0)
                expect_failed(w, "memguard: lend_end: %s", strerror(-r));
        if (strcmp(lent, "max") != 0)
                expect_failed(w, "memguard: lent memory.high read %s, not max", lent);
        if (strcmp(before, after) != 0)
                expect_failed(w, "memguard: memory.high %s restored as %s", before, after);
        if (a.ev.n[MG_EVENT_KILL])
                expect_failed(w, "memguard: killed around a lend");
        if (a.ev.n[MG_EVENT_LEND_BEGIN] != 1 || a.ev.n[MG_EVENT_LEND_END] != 1)
                expect_failed(w, "memguard: %d lend-begin and %d lend-end events",
                              a.ev.n[MG_EVENT_LEND_BEGIN], a.ev.n[MG_EVENT_LEND_END]);
        if (!mgt_proc_exited_ok(&a.proc[0]))
                expect_failed(w, "memguard: writer %s", mgt_proc_status(&a.proc[0], b1, sizeof(b1)));
        demo_actor_end(&a);
        unlink(file);
        uint64_t elapsed_ms = 0;
        (void) mgt_proc_result_value(&a.proc[0], "elapsed_ms", &elapsed_ms);
        step(d, "memguard: memory.high %s, lent as %s, 256 MiB written in %s, restored as %s in %s; %d kills", before,
             lent, demo_dur(elapsed_ms * MG_USEC_PER_MSEC, b1, sizeof(b1)), after,
             demo_dur(restore, b2, sizeof(b2)), a.ev.n[MG_EVENT_KILL]);
}

/* ---- 4-6. thrash ---------------------------------------------------------- */

/* The field's thrashes (docs/field-facts.md F1, F3, F4), each run for 10 s with the kernel's
 * limits alone (expect: no OOM kill, it keeps re-reading what reclaim took)
 * and then guarded (expect: killed as a stall).  Timed, as the kernel suite
 * does, from the onset: the first read-back of a file page it had lost
 * (workingset_refault_file rising).  Filling the cache before that takes
 * seconds under emulation. */
struct thrash_case {
        const char *what;               /* for the progress lines */
        const char *file;
        const struct mgt_actor_spec *spec; /* the kernel suite's */
};

static void thrash_row(struct demo *d, struct row *w, const struct thrash_case *tc) {
        const struct mgt_actor_spec *c = tc->spec;
        char file[PATH_MAX], b1[32], b2[32], limits[96];
        const char *argv[16];
        struct mgt_actor a;
        uint64_t key_refaults = 0;
        int r;

        file_path(d, tc->file, file, sizeof(file));
        step(d, "writing a %" PRIu64 " MiB file", c->file_mib);
        r = mgt_make_file(file, c->file_mib);
        if (r < 0) {
                demo_progress("%s: %s", file, strerror(-r));
                snprintf(w->alone, sizeof(w->alone), "could not run");
                snprintf(w->guarded, sizeof(w->guarded), "could not run");
                expect_failed(w, "cannot write %s", file);
                return;
        }
        if (c->high)
                snprintf(limits, sizeof(limits), "memory.max %s, memory.high %s", demo_mib(c->max, b1, sizeof(b1)),
                         demo_mib(c->high, b2, sizeof(b2)));
        else
                snprintf(limits, sizeof(limits), "memory.max %s", demo_mib(c->max, b1, sizeof(b1)));
        (void) mgt_spec_args(c, file, "10", argv, 16); /* the specs have fewer */

        step(d, "kernel alone: %s, %s for 10 s", limits, tc->what);
        if (demo_actor_new(d, "thrash-alone", 0, &a) == 0 && demo_actor_set(&a, "memory.max", c->max) == 0 &&
            (!c->high || demo_actor_set(&a, "memory.high", c->high) == 0) && demo_proc_start(&a, argv) == 0) {
                demo_actor_run(&a, 60 * MG_USEC_PER_SEC, demo_all_done);
                uint64_t refaults = 0;
                (void) mgt_cg_read_key(a.cg, "memory.stat", "workingset_refault_file", &refaults);
                uint64_t oom = 0;
                (void) mgt_cg_read_key(a.cg, "memory.events", "oom_kill", &oom);
                /* Still running at 60 s is not killed either: a thrash
                 * under memory.high can spend its 10 s and more waiting in
                 * the throttle's reclaim. */
                bool running = !mgt_proc_check(&a.proc[0]);
                if ((running || mgt_proc_exited_ok(&a.proc[0])) && oom == 0) {
                        snprintf(w->alone, sizeof(w->alone), "not killed: %" PRIu64 " refaults in %s", refaults,
                                 running ? "60 s, still running" : "10 s");
                        if (refaults == 0)
                                expect_failed(w, "kernel alone: no refaults: it did not thrash");
                } else {
                        snprintf(w->alone, sizeof(w->alone), "%s, oom_kill %" PRIu64,
                                 mgt_proc_status(&a.proc[0], b1, sizeof(b1)),
                                 oom);
                        expect_failed(w, "kernel alone: expected no kill");
                }
                step(d, "kernel alone: %s", w->alone);
        } else {
                snprintf(w->alone, sizeof(w->alone), "could not run");
                expect_failed(w, "kernel alone: setup failed");
        }
        demo_actor_end(&a);
        mgt_drop_cache(file);
        if (d->interrupted) {
                unlink(file);
                return;
        }

        (void) mgt_spec_args(c, file, "45", argv, 16);
        step(d, "memguard: %s, guard limit %s, the same for up to 45 s", limits, demo_mib(c->limit, b1, sizeof(b1)));
        if (demo_actor_new(d, "thrash-guarded", c->limit, &a) == 0 && demo_actor_set(&a, "memory.max", c->max) == 0 &&
            (!c->high || demo_actor_set(&a, "memory.high", c->high) == 0) && demo_proc_start(&a, argv) == 0) {
                a.watch_onset = true;
                demo_actor_run(&a, 45 * MG_USEC_PER_SEC, demo_killed_or_done);
                mgt_proc_check(&a.proc[0]);
                uint64_t refaults = 0;
                (void) mgt_cg_read_key(a.cg, "memory.stat", "workingset_refault_file", &refaults);
                key_refaults = refaults;
                if (a.ev.n[MG_EVENT_KILL]) {
                        snprintf(w->guarded, sizeof(w->guarded), "killed (%s, %s rule), stuck %s",
                                 mg_kill_reason_to_string(a.ev.kill.reason),
                                 a.ev.kill.report.stall_signals & MG_STALL_REFAULT ? "refault" : "restore",
                                 demo_dur(a.ev.kill.report.stall_usec, b1, sizeof(b1)));
                        if (a.onset_usec && a.ev.kill.kill_usec > a.onset_usec)
                                snprintf(w->when, sizeof(w->when), "%s after the thrash began",
                                         demo_dur(a.ev.kill.kill_usec - a.onset_usec, b2, sizeof(b2)));
                        else
                                snprintf(w->when, sizeof(w->when), "%s after start",
                                         demo_dur(a.ev.kill.kill_usec - a.start_usec, b2, sizeof(b2)));
                        if (a.ev.kill.reason != MG_KILL_STALL)
                                expect_failed(w, "memguard: killed as %s, expected stall",
                                              mg_kill_reason_to_string(a.ev.kill.reason));
                } else {
                        uint64_t oom = 0;
                        (void) mgt_cg_read_key(a.cg, "memory.events", "oom_kill", &oom);
                        snprintf(w->guarded, sizeof(w->guarded), "not killed (%s, %" PRIu64 " refaults%s)",
                                 mgt_proc_status(&a.proc[0], b1,
                                                 sizeof(b1)), refaults, oom ? ", the kernel OOM-killed it" : "");
                        snprintf(w->when, sizeof(w->when), "-");
                        expect_failed(w, "memguard: expected a stall kill");
                }
        } else {
                snprintf(w->guarded, sizeof(w->guarded), "could not run");
                expect_failed(w, "memguard: setup failed");
        }
        demo_actor_end(&a);
        if (a.ev.n[MG_EVENT_KILL] && !mgt_proc_sigkilled(&a.proc[0]))
                expect_failed(w, "memguard: the workload ended with %s, not SIGKILL",
                              mgt_proc_status(&a.proc[0], b1, sizeof(b1)));
        unlink(file);
        step(d, "memguard: %s (%" PRIu64 " refaults)", w->guarded, key_refaults);
}

/* Random reads of a 96 MiB file, 95 % of them in its first 60 % (58 MiB,
 * more than the 48 MiB memory.max holds): pages of its working set come
 * back, and the kernel books them as restores. */
static void s_thrash(struct demo *d, struct row *w) {
        const struct thrash_case c = { "mg-workload hotfile (58 MiB hot)", "thrash-hot", &mgt_spec_thrash_hot_file };
        thrash_row(d, w, &c);
}

/* The sequential file-hot (docs/field-facts.md F3): a 96 MiB file mapped and walked front to
 * back, 200 ms between passes, at a 48 MiB memory.max.  The hot set is twice
 * the cache: the kernel books no restores and memory pressure stays low;
 * only the re-reads themselves show it. */
static void s_thrash_seq(struct demo *d, struct row *w) {
        const struct thrash_case c = { "sequential file-hot (96 MiB mapped, walked front to back)", "thrash-seq",
                                       &mgt_spec_thrash_sequential };
        thrash_row(d, w, &c);
}

/* The field's skewed app (docs/field-facts.md F4; 16 MiB heap, 95 % of touches in the first 80 MiB of
 * a 128 MiB file) under kubelet's MemoryQoS memory.high, 90 % of 64 MiB:
 * pressed against a kernel limit below the guard's fast-path line. */
static void s_thrash_high(struct demo *d, struct row *w) {
        const struct thrash_case c = { "skewed file-hot (80 MiB hot, 16 MiB heap)", "thrash-high",
                                       &mgt_spec_thrash_under_high };
        thrash_row(d, w, &c);
}

/* ---- 7. throttled at memory.high ---------------------------------------- */

/* memory.max 64 MiB, memory.high 90 % of it; the workload needs 60 MiB:
 * it fits under memory.max but not under memory.high, so the kernel
 * throttles it and never kills.  Neither should the guard: used stays
 * below the limit and nothing is re-read.  Up to 15 s each. */
static void s_throttle(struct demo *d, struct row *w) {
        static const char *const args[] = { "throttle", "60", NULL };
        char b1[32], b2[32];

        for (int guarded = 0; guarded < 2 && !d->interrupted; guarded++) {
                const char *who = guarded ? "memguard" : "kernel alone";
                char *cell = guarded ? w->guarded : w->alone;
                size_t cell_len = guarded ? sizeof(w->guarded) : sizeof(w->alone);
                        struct mgt_actor a;

                step(d, "%s: memory.max 64 MiB, memory.high 90%%, mg-workload throttle 60", who);
                if (demo_actor_new(d, guarded ? "throttle-guarded" : "throttle-alone", guarded ? LIMIT : 0, &a) < 0 ||
                    demo_actor_set(&a, "memory.max", LIMIT) < 0 ||
                    demo_actor_set(&a, "memory.high", LIMIT * 9 / 10) < 0 || demo_proc_start(&a, args) < 0) {
                        snprintf(cell, cell_len, "could not run");
                        expect_failed(w, "%s: setup failed", who);
                        demo_actor_end(&a);
                        continue;
                }
                a.sample_reports = true;
                demo_actor_run(&a, 15 * MG_USEC_PER_SEC, demo_killed_or_done);
                uint64_t ran = mg_mono_usec() - a.start_usec;
                uint64_t high_events = 0;
                (void) mgt_cg_read_key(a.cg, "memory.events", "high", &high_events);
                uint64_t oom = 0;
                (void) mgt_cg_read_key(a.cg, "memory.events", "oom_kill", &oom);
                struct mg_psi psi = { .some.total_usec = 0 };
                (void) mgt_cg_read_psi(a.cg, "memory.pressure", &psi);
                uint64_t some = psi.some.total_usec;
                unsigned kills = (unsigned) a.ev.n[MG_EVENT_KILL];
                demo_actor_end(&a);
                uint64_t some_pct = ran ? some * 100 / ran : 0;
                char how[64];
                uint64_t elapsed_ms = 0;
                (void) mgt_proc_result_value(&a.proc[0], "elapsed_ms", &elapsed_ms);
                if (mgt_proc_exited_ok(&a.proc[0]))
                        snprintf(how, sizeof(how), "60 MiB in %s", demo_dur(elapsed_ms * MG_USEC_PER_MSEC, b1,
                                                                            sizeof(b1)));
                else if (a.proc[0].done && !kills)
                        snprintf(how, sizeof(how), "%s after %s", mgt_proc_status(&a.proc[0], b2, sizeof(b2)),
                                 demo_dur(ran, b1, sizeof(b1)));
                else
                        snprintf(how, sizeof(how), "still at it after %s", demo_dur(ran, b1, sizeof(b1)));
                if (oom && !kills)
                        snprintf(cell, cell_len, "OOM-killed by memory.max%s", guarded ? "; no guard kill" : "");
                else if (guarded)
                        snprintf(cell, cell_len, "no kill (worst verdict: %s)", mg_verdict_to_string(a.worst));
                else
                        snprintf(cell, cell_len, "throttled (%" PRIu64 " high events), no kill", high_events);
                if (kills) {
                        snprintf(cell, cell_len, "killed (%s)", mg_kill_reason_to_string(a.ev.kill.reason));
                        expect_failed(w, "%s: killed a throttled actor", who);
                }
                if (oom)
                        expect_failed(w, "%s: the kernel OOM-killed it", who);
                if (high_events == 0)
                        expect_failed(w, "%s: memory.high was never hit", who);
                if (a.proc[0].done && !mgt_proc_exited_ok(&a.proc[0]) && !kills)
                        expect_failed(w, "%s: workload %s", who, mgt_proc_status(&a.proc[0], b1, sizeof(b1)));
                if (guarded)
                        step(d, "%s: %s; used at most %s; %s; memory some %" PRIu64 "%%", who, cell,
                             demo_mib(a.max_used, b2, sizeof(b2)), how, some_pct);
                else
                        step(d, "%s: %s; %s; memory some %" PRIu64 "%%", who, cell, how, some_pct);
        }
        snprintf(w->when, sizeof(w->when), "-");
}

/* ---- the table ------------------------------------------------------------ */

static void print_table(const struct row *rows, unsigned n) {
        const char *head[5] = { "scenario", "kernel alone", "memguard", "time to verdict", "as expected" };
        size_t wd[5];

        for (int c = 0; c < 5; c++)
                wd[c] = strlen(head[c]);
        for (unsigned i = 0; i < n; i++) {
                const char *cells[4] = { rows[i].name, rows[i].alone, rows[i].guarded, rows[i].when };
                for (int c = 0; c < 4; c++)
                        if (strlen(cells[c]) + (c == 0 ? 3 : 0) > wd[c])
                                wd[c] = strlen(cells[c]) + (c == 0 ? 3 : 0);
        }
        printf("%-*s | %-*s | %-*s | %-*s | %s\n", (int) wd[0], head[0], (int) wd[1], head[1], (int) wd[2], head[2],
               (int) wd[3], head[3], head[4]);
        for (int c = 0; c < 5; c++) {
                for (size_t k = 0; k < wd[c] + (c ? 2 : 1) - (c == 4 ? 1 : 0); k++)
                        putchar('-');
                if (c < 4)
                        putchar('+');
        }
        putchar('\n');
        for (unsigned i = 0; i < n; i++) {
                char name[96];
                snprintf(name, sizeof(name), "%u. %s", i + 1, rows[i].name);
                printf("%-*s | %-*s | %-*s | %-*s | %s\n", (int) wd[0], name, (int) wd[1], rows[i].alone, (int) wd[2],
                       rows[i].guarded, (int) wd[3], rows[i].when, rows[i].ok ? "yes" : "NO");
        }
}

/* ---- setup: natively, or in a VM ------------------------------------------ */

/* The cgroup to make ours under, if this host delegates a cgroup v2 memory
 * controller to us.  On failure why says what is missing. */
static int native_parent(char **ret, char *why, size_t len) {
        char *parent;
        int r = mgt_cg_default_parent(&parent);

        if (r == -ENOTSUP) {
                snprintf(why, len, MGT_CGROUP_ROOT " is not cgroup v2");
                return r;
        }
        if (r < 0) {
                snprintf(why, len, "no cgroup v2 entry in /proc/self/cgroup");
                return r;
        }
        if (mgt_cg_has_word(parent, "cgroup.controllers", "memory") <= 0) {
                snprintf(why, len, "no memory controller in %s", parent);
                free(parent);
                return -ENOTSUP;
        }
        if (access(parent, W_OK) < 0) {
                snprintf(why, len, "%s is not writable", parent);
                free(parent);
                return -EACCES;
        }
        *ret = parent;
        return 0;
}

/* A directory on a disk file system for the temp files: the VM's ext4
 * disk, else $TMPDIR, else /var/tmp; never tmpfs. */
static int pick_dir(struct demo *d) {
        const char *env = getenv("MEMGUARD_DEMO_DIR"), *tmp = getenv("TMPDIR");
        const char *tries[4] = { env, getenv("MEMGUARD_VM") ? "/mnt/disk" : NULL, tmp && *tmp ? tmp : "/tmp",
                                 "/var/tmp" };
        struct statfs sfs;

        for (int i = 0; i < 4; i++) {
                if (!tries[i] || statfs(tries[i], &sfs) < 0 || access(tries[i], W_OK) < 0)
                        continue;
                if (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC) {
                        if (i == 0)
                                demo_progress("MEMGUARD_DEMO_DIR=%s is tmpfs: its page cache would be shmem", env);
                        continue;
                }
                if (strlen(tries[i]) > sizeof(d->dir) - 64)
                        continue;
                snprintf(d->dir, sizeof(d->dir), "%s/memguard-demo.XXXXXX", tries[i]);
                if (mkdtemp(d->dir))
                        return 0;
        }
        d->dir[0] = '\0';
        return -ENOENT;
}

static int demo_native(void) {
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, 0 };
        static const struct {
                const char *name;
                void (*fn)(struct demo *, struct row *);
        } scenarios[] = {
                { "anon overshoot", s_overshoot },
                { "page cache at the limit", s_page_cache },
                { "write in a lend", s_lend },
                { "thrash", s_thrash },
                { "sequential thrash", s_thrash_seq },
                { "thrash under memory.high", s_thrash_high },
                { "throttled at memory.high", s_throttle },
        };
        enum { N = sizeof(scenarios) / sizeof(scenarios[0]) };
        struct demo d = { .steps = N };
        struct row rows[N];
        struct utsname u;
        char why[256], *parent = NULL;
        unsigned good = 0;
        int r, ret = MGT_EXIT_FAIL;
        uint64_t t0 = mg_mono_usec();

        uname(&u);
        if (native_parent(&parent, why, sizeof(why)) < 0) {
                mgt_error(NULL, "demo", 0, "cannot run natively: %s", why);
                return MGT_EXIT_FAIL;
        }
        d.workload = mgt_find_workload();
        if (!d.workload) {
                mgt_error(NULL, "demo", 0, "cannot find mg-workload next to memguard (set MEMGUARD_WORKLOAD)");
                goto out;
        }
        if (pick_dir(&d) < 0) {
                mgt_error(NULL, "demo", 0, "no writable directory on a disk file system (set MEMGUARD_DEMO_DIR)");
                goto out;
        }
        d.sigfd = mgt_signals_open(sigs);
        r = d.sigfd < 0 ? d.sigfd : mgt_cg_enable_memory(parent);
        if (r >= 0)
                r = mgt_cg_make_child(parent, "memguard-demo", &d.base);
        if (r >= 0)
                r = mgt_cg_write(d.base, "cgroup.subtree_control", "+memory");
        if (r < 0) {
                mgt_error(NULL, "demo", r, "setting up a cgroup below %s", parent);
                goto out;
        }
        demo_progress("Linux %s, cgroup %s, files in %s", u.release, d.base, d.dir);

        for (unsigned i = 0; i < N && !d.interrupted; i++) {
                rows[i] = (struct row) { .name = scenarios[i].name, .ok = true };
                d.step = i + 1;
                d.scenario = scenarios[i].name;
                uint64_t s0 = mg_mono_usec();
                scenarios[i].fn(&d, &rows[i]);
                step(&d, "%s (%" PRIu64 " s)", rows[i].ok ? "as expected" : "NOT as expected",
                     (mg_mono_usec() - s0) / MG_USEC_PER_SEC);
                good += rows[i].ok;
        }
        if (d.interrupted) {
                demo_progress("interrupted");
                ret = 130;
                goto out;
        }

        printf("\nmemguard demo on Linux %s: each scenario with the kernel's limits alone, then guarded by "
               "memguard\n\n",
               u.release);
        print_table(rows, N);
        printf("\n");
        for (unsigned i = 0; i < N; i++)
                if (!rows[i].ok)
                        printf("%u. %s: %s\n", i + 1, rows[i].name, rows[i].why);
        printf("%u of %u scenarios behaved as expected (%" PRIu64 " s)\n", good, (unsigned) N,
               (mg_mono_usec() - t0) / MG_USEC_PER_SEC);
        ret = good == N ? MGT_EXIT_OK : MGT_EXIT_FAIL;
out:
        if (d.base) {
                r = mgt_cg_destroy(d.base, 10 * MG_USEC_PER_SEC);
                if (r < 0)
                        demo_progress("removing %s: %s", d.base, strerror(-r));
        }
        if (d.dir[0] && rmdir(d.dir) < 0)
                demo_progress("removing %s: %s", d.dir, strerror(errno));
        free(d.base);
        free(d.workload);
        free(parent);
        return ret;
}

int mgt_cmd_demo(int argc, char **argv) {
        static const struct option opts[] = {
                { "kernel", required_argument, NULL, 'k' },
                { "native", no_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *kernel = "6.1";
        bool native = false;
        char why[256], *parent;
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (c) {
                case 'k': kernel = optarg; break;
                case 'n': native = true; break;
                case 'h': return mgt_help("demo");
                default: return mgt_getopt_error("demo", c, argv);
                }
        }
        if (optind < argc)
                return mgt_usage_error("demo", "unexpected argument '%s'", argv[optind]);
        if (strcmp(kernel, "6.1") != 0 && strcmp(kernel, "6.12") != 0 && strcmp(kernel, "7") != 0)
                return mgt_usage_error("demo", "--kernel %s: one of 6.1, 6.12, 7", kernel);
        if (native)
                return demo_native();
        if (native_parent(&parent, why, sizeof(why)) == 0) {
                free(parent);
                return demo_native();
        }
        return demo_vm(kernel, why);
}
