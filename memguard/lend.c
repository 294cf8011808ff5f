/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lends of memory.high: the begin, the end (in place, on the set's worker,
 * or from a snapshot write's thread), the deadline, the restore that
 * writes back only the lend's own value, the lend record on the cgroup's
 * directory with its text format, the takeover of a record found at
 * mg_guard_new(), and mg_guard_recover()'s part for it (tick.c's
 * mg_guard_recover() runs it beside the park record's).  It writes the
 * guard's lend (struct mg_guard_lend, and the lent bit) and uses guard.c's
 * voice and reads; the public begin and end are tick.c's, which bracket
 * them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "lend.h"
#include "parse.h"

static bool restore_busy(const mg_guard *g);
static void lend_abandon(mg_guard *g);
static int restore_queue(mg_guard *g, enum mg_event_type why);

void mg_guard_release_lend(mg_guard *g, bool taken_over_too) {
        int r;

        if (!g->lent || (g->lend.adopted && !taken_over_too))
                return;
        if (restore_busy(g))
                return; /* under way: it ends as it is */
        /* A set's guard: the worker restores, and the job keeps the guard
         * until it is done (mg_set_remove() frees it then). */
        r = g->host ? restore_queue(g, MG_EVENT_LEND_END) : mg_lend_end(g, g->lend.info.id);
        if (r < 0 && g->lent) {
                mg_guard_log(g, MG_LOG_ERR, "%s: restoring memory.high to %s as the guard goes: %s%s", g->path,
                     g->lend.old_high, strerror(-r),
                     g->lend.recorded || g->lend.adopted ? " (the lend record stays, for mg_guard_recover())" : "");
                /* Never retried in place: on the set's thread that would be
                 * the blocking write this avoids. */
                if (g->host)
                        lend_abandon(g);
        }
}

bool mg_guard_is_lent(const mg_guard *g) {
        return g->lent;
}

uint64_t mg_guard_get_lend_id(const mg_guard *g) {
        return g && g->lent ? g->lend.info.id : 0;
}

/* The lend is over: its record goes.  A record that cannot be removed is
 * harmless (restoring it again writes the value memory.high now has). */
static void lend_record_remove(mg_guard *g) {
        if (g->lend.recorded || g->lend.adopted) {
                int r = mg_cgroup_remove_xattr(&g->cg, MG_LEND_XATTR);
                if (r < 0 && r != -ENODATA)
                        mg_guard_log(g, MG_LOG_WARNING, "%s: removing the lend record: %s", g->path, strerror(-r));
        }
        g->lend.recorded = g->lend.adopted = false;
}

/* The lend is over, whether memory.high went back or not: kills resume at
 * once, with a window that starts now (what the lend let the actor do is
 * not evidence of a stall), and the line follows memory.high as it is. */
static void lend_close(mg_guard *g, uint64_t high) {
        g->lent = false;
        g->lend.ending = false;
        lend_record_remove(g);
        mg_guard_line_follow(g, high, g->max_bytes);
        mg_guard_window_reset(g);
        g->detect_usec = 0;
}

/* bytes as the kernel reads back what was written to memory.high: whole
 * pages (page_counter_memparse() rounds down), and a count of pages at
 * PAGE_COUNTER_MAX (LONG_MAX / PAGE_SIZE on 64-bit) reads "max". */
static uint64_t kept_bytes(uint64_t bytes, uint32_t page_bytes) {
        uint64_t pages;

        if (bytes == MG_UNLIMITED)
                return MG_UNLIMITED;
        pages = bytes / page_bytes;
        return pages >= (uint64_t) LONG_MAX / page_bytes ? MG_UNLIMITED : pages * page_bytes;
}

static uint64_t high_as_kept(const mg_guard *g, uint64_t bytes) {
        return kept_bytes(bytes, g->page_bytes);
}

/* The job for the end of the open lend, through fd (memory.high: the
 * guard's own, or one opened for the job, own_fd). */
static void restore_fill(mg_guard *g, struct mg_restore *j, int fd, bool own_fd) {
        j->cg = (struct mg_cgroup) { .dirfd = -1, .io = g->cg.io, .flags = g->cg.flags };
        for (int i = 0; i < MG_CG_N; i++)
                j->cg.fd[i] = -1;
        j->cg.fd[MG_CG_HIGH] = fd;
        j->cg.have = fd >= 0 ? MG_CG_BIT(MG_CG_HIGH) : 0;
        j->own_fd = own_fd;
        memcpy(j->text, g->lend.old_high, sizeof(j->text));
        j->lend_high_bytes = high_as_kept(g, g->lend.info.new_high_bytes);
        j->old_high_bytes = g->lend.info.old_high_bytes;
        j->page_bytes = g->page_bytes;
        j->any_high = g->lend.high_unknown;
        j->no_raise = g->lend.adopted;
        j->r = 0;
        j->read_ok = false;
        j->outcome = MG_RESTORE_WRITTEN;
        j->found_high_bytes = 0;
}

/*
 * Only the lend's own value is restored: memory.high is written back only
 * if it still holds what the lend wrote.  Anything else is someone else's
 * change made during the lend (an in-place resize of the actor, an
 * operator, kubelet): writing the saved value over it would undo it.  A
 * change between this read and the write cannot be told (cgroupfs has no
 * compare and swap); the window is one pread, here too on the set's
 * worker, which reads just before it writes.
 */
void mg_restore_run(struct mg_restore *j) {
        uint64_t high;
        int r = mg_cgroup_read_u64(&j->cg, MG_CG_HIGH, &high);

        j->read_ok = r >= 0;
        j->r = r < 0 ? r : 0;
        if (r < 0)
                return;
        j->found_high_bytes = high;
        if (!j->any_high && kept_bytes(high, j->page_bytes) != j->lend_high_bytes) {
                j->outcome = MG_RESTORE_CHANGED;
                return;
        }
        /* Another process's record: trust it only to lower memory.high.  A
         * lend raises it, so its restore never raises it; a record that
         * would is not one (or someone lowered memory.high since). */
        if (j->no_raise && j->old_high_bytes > high) {
                j->outcome = MG_RESTORE_NOT_RAISED;
                return;
        }
        j->r = mg_cgroup_write(&j->cg, MG_CG_HIGH, j->text);
        j->outcome = MG_RESTORE_WRITTEN;
}

/*
 * What the restore did, on the guard's thread: the lend ends with
 * memory.high written back or left as found (g->lend.info says which, for the
 * event), or stays open on an error.  Returns 1 if restored, 0 if the lend
 * ended with memory.high left as found, or a negative errno (retried).
 */
static int restore_outcome(mg_guard *g, const struct mg_restore *j) {
        char found[32];

        if (j->r < 0)
                return mg_gone_errno(j->r) ? mg_guard_read_failed(g, MG_CG_HIGH, j->r, false) : j->r;
        mg_guard_error_clear(g, MG_CG_HIGH); /* it was read */
        g->lend.info.found_high_bytes = j->found_high_bytes;
        g->lend.info.restored = j->outcome == MG_RESTORE_WRITTEN;
        switch (j->outcome) {
        case MG_RESTORE_CHANGED:
                if (j->found_high_bytes == MG_UNLIMITED)
                        snprintf(found, sizeof(found), "max");
                else
                        snprintf(found, sizeof(found), "%" PRIu64, j->found_high_bytes);
                mg_guard_log(g, MG_LOG_WARNING,
                     "%s: memory.high changed during the lend (%s, not what the lend wrote): left as found, "
                     "not restored to %s; the lend is over",
                     g->path, found, g->lend.old_high);
                lend_close(g, j->found_high_bytes);
                return 0;
        case MG_RESTORE_NOT_RAISED:
                mg_guard_log(g, MG_LOG_WARNING, "%s: the adopted lend record would raise memory.high to %s: dropped",
                     g->path, g->lend.old_high);
                lend_close(g, j->found_high_bytes);
                return 0;
        case MG_RESTORE_WRITTEN:
        default:
                lend_close(g, g->lend.info.old_high_bytes);
                return 1;
        }
}

/*
 * Ends the lend in place, on the calling thread: memory.high back to the
 * text read before it, through the guard's own fd.  For a lone guard (its
 * caller's thread is the one that waits).
 * Returns 1 if restored, 0 if the lend ended with memory.high left as
 * found, or a negative errno (the lend stays open: retried).
 */
static int lend_restore(mg_guard *g) {
        struct mg_restore j = { .own_fd = false };

        restore_fill(g, &j, g->cg.fd[MG_CG_HIGH], false);
        mg_restore_run(&j);
        return restore_outcome(g, &j);
}

/*
 * The end of a lend told: the deadline's (MG_EVENT_LEND_EXPIRED) or the
 * caller's (MG_EVENT_LEND_END); r is restore_outcome()'s.  A failure is
 * reported (once per streak) if report, else it is the caller's, who gets
 * it back.  Returns r.
 */
static int lend_told(mg_guard *g, enum mg_event_type why, int r, bool report) {
        if (r < 0) {
                if (report && g->state != MG_GUARD_GONE)
                        /* Retried every tick; kills stay paused until it works. */
                        mg_guard_error(g, MG_ERR_WRITE_HIGH, MG_LOG_ERR,
                                     why == MG_EVENT_LEND_EXPIRED ? "restoring after the lend deadline"
                                                                  : "restoring at the end of the lend",
                                     "memory.high", r);
                return r;
        }
        mg_guard_error_clear(g, MG_ERR_WRITE_HIGH);
        if (why == MG_EVENT_LEND_EXPIRED) {
                if (r > 0)
                        mg_guard_log(g, MG_LOG_WARNING, "%s: lend deadline passed, memory.high restored to %s", g->path,
                             g->lend.old_high);
                else
                        mg_guard_log(g, MG_LOG_WARNING, "%s: lend deadline passed, memory.high left as found", g->path);
        } else if (r > 0) {
                mg_guard_log(g, MG_LOG_INFO, "%s: memory.high restored to %s", g->path, g->lend.old_high);
        }
        mg_guard_emit(g, &(struct mg_event) { .type = why, .lend = &g->lend.info });
        if (why == MG_EVENT_LEND_END && g->host)
                host_reschedule(g, mg_guard_now(g));
        return r;
}

static bool restore_busy(const mg_guard *g) {
        return atomic_load(&g->lend.restore.job.state) != MG_JOB_IDLE;
}

/* Fills g->lend.restore for the end of the open lend, through a memory.high fd
 * of its own: the blocking write goes through it while the guard's thread
 * goes on reading memory.high through its own fd (kernfs would make those
 * reads wait for the write: mg_cgroup_reopen()).  Returns 0, -ENODEV once
 * the cgroup is gone, or the errno of the open. */
static int restore_prepare(mg_guard *g, enum mg_event_type why, enum mg_job_state state) {
        int fd = mg_cgroup_reopen(&g->cg, MG_CG_HIGH);

        if (fd < 0)
                return mg_gone_errno(fd) && mg_read_removed(&g->cg) ? mg_guard_gone(g, "memory.high") : fd;
        restore_fill(g, &g->lend.restore, fd, true);
        g->lend.restore.why = why;
        g->lend.restore.job.kind = MG_JOB_RESTORE;
        g->lend.restore.job.guard = g;
        g->lend.restore.job.next = NULL;
        atomic_store(&g->lend.restore.job.state, state);
        return 0;
}

/* Hands the end of the open lend to the set's restore worker; the job
 * holds the guard until mg_set_process() finishes it.  Returns 0, or
 * restore_prepare()'s errno (nothing queued, the lend stays open). */
static int restore_queue(mg_guard *g, enum mg_event_type why) {
        int r = restore_prepare(g, why, MG_JOB_QUEUED);

        if (r < 0)
                return r;
        mg_guard_hold(g);
        g->host->queue_job(g->host, &g->lend.restore.job);
        return 0;
}

/* The job's fd goes, and with it the job: its results have been read. */
static void restore_clear(mg_guard *g) {
        struct mg_restore *j = &g->lend.restore;

        if (j->own_fd && j->cg.fd[MG_CG_HIGH] >= 0)
                close(j->cg.fd[MG_CG_HIGH]);
        j->cg.fd[MG_CG_HIGH] = -1;
        j->own_fd = false;
        atomic_store(&j->job.state, MG_JOB_IDLE);
}

/* A job that has run (on the worker, or on a caller's thread): its
 * outcome on the guard (restore_outcome()), then the job is idle again,
 * before anything is told (a callback may end or begin a lend).  *ret_open
 * says whether there was a lend to end: the cgroup may have gone while the
 * job ran, and the lend with it. */
static int restore_end(mg_guard *g, bool *ret_open) {
        bool open = g->state != MG_GUARD_GONE && g->lent;
        int r = open ? restore_outcome(g, &g->lend.restore) : 0;

        restore_clear(g);
        *ret_open = open && g->state != MG_GUARD_GONE;
        return r;
}

/* Gives up a lend whose restore failed as the guard goes: the lend record
 * stays, for mg_guard_recover(). */
static void lend_abandon(mg_guard *g) {
        g->lent = false;
        g->lend.ending = false;
}

int mg_guard_restore_done(mg_guard *g, struct mg_guard_host *host) {
        enum mg_event_type why = g->lend.restore.why;
        bool open;
        int r = restore_end(g, &open);

        if (open)
                r = lend_told(g, why, r, true);
        if (g->host != host && g->lent && g->holds == 1) {
                /* Removed, its events and logs silenced, and this was its
                 * last restore: the host's log says so. */
                char msg[512];
                snprintf(msg, sizeof(msg),
                         "%s: restoring memory.high to %s as the guard goes: %s (the lend record stays, for "
                         "mg_guard_recover())",
                         g->path, g->lend.old_high, strerror(-r));
                host->log(host, MG_LOG_ERR, msg);
                lend_abandon(g);
        }
        return !open ? 0 : r < 0 ? r : 1;
}

int mg_lend_begin(mg_guard *g, uint64_t extra_bytes, uint64_t deadline_usec, uint64_t *ret_lend_id) {
        struct mg_lend_record rec = {};
        char buf[32], newval[32], text[MG_LEND_RECORD_MAX + 1];
        uint64_t old, now, rel, bt;
        bool recorded = false;
        ssize_t n;
        int r;

        if (!g)
                return -EINVAL;
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        if (g->lent)
                return -EBUSY;
        /* Everything the lend and its end use is open before it begins:
         * the end must not need a free fd. */
        r = mg_guard_files_open(g);
        if (r < 0)
                return r;
        n = mg_cgroup_read(&g->cg, MG_CG_HIGH, buf, sizeof(buf));
        if (n < 0)
                return mg_gone_errno((int) n) && mg_read_removed(&g->cg) ? mg_guard_gone(g, "memory.high") : (int) n;
        /* The kernel ends the value with a newline.  Without one the read
         * may have been cut short, and "2411" of "241172480" would be what
         * the end of the lend writes back: trusted only if a second read
         * gives the same bytes. */
        if (n > 0 && buf[n - 1] == '\n') {
                buf[--n] = '\0';
        } else {
                char again[32];
                ssize_t m = mg_cgroup_read(&g->cg, MG_CG_HIGH, again, sizeof(again));
                if (m != n || memcmp(buf, again, (size_t) n) != 0)
                        return m < 0 && mg_gone_errno((int) m) && mg_read_removed(&g->cg) ? mg_guard_gone(g, "memory.high")
                                                                                 : -EBADMSG;
        }
        r = mg_parse_u64_value(buf, (size_t) n, &old);
        if (r < 0)
                return r;

        if (extra_bytes == MG_UNLIMITED || old == MG_UNLIMITED || old > MG_UNLIMITED - 1 - extra_bytes)
                snprintf(newval, sizeof(newval), "max");
        else
                snprintf(newval, sizeof(newval), "%" PRIu64, old + extra_bytes);
        rel = deadline_usec ? deadline_usec : g->opt.lend_deadline_usec;

        /* The record before memory.high is raised: a crash between the two
         * leaves a record of the value memory.high still has, which
         * restores nothing.  XATTR_CREATE: one lend per cgroup, whichever
         * process makes it. */
        memcpy(rec.old_high, buf, (size_t) n + 1);
        rec.old_high_bytes = old;
        bt = mg_boottime_usec();
        rec.deadline_boottime_usec = mg_usec_add(bt, rel);
        rec.pid = (uint64_t) getpid();
        r = mg_lend_record_format(&rec, text, sizeof(text));
        if (r < 0)
                return r;
        /* A record on a directory its tenant can write would be no better
         * than one the tenant forged: no guard takes such a record over
         * (mg_lend_adopt), so none is written. */
        r = mg_cgroup_tenant_writes(&g->cg) ? -EPERM
                                     : mg_cgroup_set_xattr(&g->cg, MG_LEND_XATTR, text, (size_t) r, XATTR_CREATE);
        if (r == -EEXIST) {
                mg_guard_log(g, MG_LOG_WARNING, "%s: a lend record is already there (another lend, or a crashed one "
                     "mg_guard_recover() has not ended)", g->path);
                return -EBUSY;
        }
        if (r == -EOPNOTSUPP || r == -EPERM) {
                /* No user xattrs (cgroupfs before 5.7, tmpfs before 6.6 for
                 * test trees), or a directory others can write.  The lend
                 * works, but dies with the process. */
                mg_guard_log(g, MG_LOG_WARNING, "%s: %s: this lend is not recorded, a crash leaves memory.high raised",
                             g->path, r == -EPERM ? "its tenant can write this directory" : "no user xattrs here");
        } else if (mg_gone_errno(r) && mg_read_removed(&g->cg)) {
                return mg_guard_gone(g, MG_LEND_XATTR);
        } else if (r < 0) {
                return r;
        } else {
                recorded = true;
        }
        r = mg_cgroup_write(&g->cg, MG_CG_HIGH, newval);
        if (r < 0) {
                if (recorded)
                        (void) mg_cgroup_remove_xattr(&g->cg, MG_LEND_XATTR);
                return mg_gone_errno(r) && mg_read_removed(&g->cg) ? mg_guard_gone(g, "memory.high") : r;
        }

        now = mg_guard_now(g);
        memcpy(g->lend.old_high, buf, (size_t) n + 1);
        g->lend.info = (struct mg_lend_info) {
                .old_high_bytes = old,
                /* what memory.high reads now: the end compares with it */
                .new_high_bytes = strcmp(newval, "max") == 0 ? MG_UNLIMITED : high_as_kept(g, old + extra_bytes),
                .deadline_usec = mg_usec_add(now, rel),
                .id = ++g->lend.last_id,
        };
        g->lent = true;
        g->lend.ending = false;
        g->lend.recorded = recorded;
        g->lend.adopted = false;
        g->lend.high_unknown = false;
        mg_guard_line_follow(g, g->lend.info.new_high_bytes, g->max_bytes);
        mg_guard_log(g, MG_LOG_INFO, "%s: lent memory.high %s -> %s", g->path, g->lend.old_high, newval);
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_LEND_BEGIN, .time_usec = now, .lend = &g->lend.info });
        if (ret_lend_id)
                *ret_lend_id = g->lend.info.id;
        return 0;
}

/* The checks of every end: the open lend, and its id.  Ids are never
 * reused: one that is not the open lend's is a lend that is over (it
 * expired, and someone lent again since), or was never given.  Ending the
 * open lend for it would lower memory.high and resume kills under a write
 * still running in that lend. */
static int lend_end_check(const mg_guard *g, uint64_t lend_id) {
        if (!g)
                return -EINVAL;
        if (!g->lent)
                return -ENOENT;
        return lend_id == g->lend.info.id ? 0 : -ESTALE;
}

int mg_lend_end(mg_guard *g, uint64_t lend_id) {
        int r = lend_end_check(g, lend_id);

        if (r < 0)
                return r;
        if (restore_busy(g)) {
                /* Under way already: the deadline's, or a snapshot write's
                 * on its own thread.  If it fails, ticks retry it. */
                g->lend.ending = true;
                return 1;
        }
        if (g->host) {
                /* The set's thread must not wait for the write: the worker
                 * makes it, mg_set_process() tells (MG_EVENT_LEND_END). */
                r = restore_queue(g, MG_EVENT_LEND_END);
                if (r < 0)
                        return r;
                g->lend.ending = true;
                return 1;
        }
        r = lend_restore(g);
        if (r < 0)
                return r;
        (void) lend_told(g, MG_EVENT_LEND_END, r, false);
        return 0;
}

static void take_lock(void (*lock)(void *, bool), void *userdata, bool on) {
        if (lock)
                lock(userdata, on);
}

int mg_guard_lend_end_serialised(mg_guard *g, uint64_t lend_id, void (*lock)(void *userdata, bool lock),
                                 void *lock_userdata) {
        struct timespec poll_gap = { .tv_nsec = 2000000 }; /* 2 ms */
        bool open;
        int r;

        for (;;) {
                take_lock(lock, lock_userdata, true);
                r = lend_end_check(g, lend_id);
                if (r >= 0) {
                        switch (atomic_load(&g->lend.restore.job.state)) {
                        case MG_JOB_IDLE:
                                r = restore_prepare(g, MG_EVENT_LEND_END, MG_JOB_CALLER);
                                break;
                        case MG_JOB_QUEUED:
                                r = -EINPROGRESS;
                                break;
                        case MG_JOB_DONE:
                                /* The worker wrote (the deadline's restore):
                                 * the lend is over but for the telling,
                                 * which the set's thread does. */
                                r = g->lend.restore.r < 0 ? g->lend.restore.r : -ENOENT;
                                break;
                        default:
                                r = -EBUSY; /* another caller's: one write runs a lend at a time */
                        }
                }
                take_lock(lock, lock_userdata, false);
                if (r != -EINPROGRESS)
                        break;
                /* The deadline's restore of this lend is with the set's
                 * worker: wait for its write, which goes on without the
                 * set's thread (the guard is held: it stays).  The state is
                 * the one field read without the lock. */
                while (atomic_load(&g->lend.restore.job.state) == MG_JOB_QUEUED)
                        (void) nanosleep(&poll_gap, NULL);
        }
        if (r < 0)
                return r;
        mg_restore_run(&g->lend.restore); /* the blocking part, without the lock */
        take_lock(lock, lock_userdata, true);
        r = restore_end(g, &open);
        if (!open)
                r = -ENODEV; /* the cgroup went during the write */
        else
                r = lend_told(g, MG_EVENT_LEND_END, r, false);
        take_lock(lock, lock_userdata, false);
        return r < 0 ? r : 0;
}

int mg_lend_record_format(const struct mg_lend_record *r, char *buf, size_t size) {
        int n = snprintf(buf, size, "memguard-lend 1 high=%s deadline_boottime_usec=%" PRIu64 " pid=%" PRIu64 "\n",
                         r->old_high, r->deadline_boottime_usec, r->pid);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

int mg_lend_record_parse(const char *buf, size_t len, struct mg_lend_record *ret) {
        static const char head[] = "memguard-lend 1 high=";
        struct mg_lend_record r = {};
        const char *p, *end, *v, *e;

        if (!buf || !ret)
                return -EINVAL;
        if (len > MG_LEND_RECORD_MAX || len < sizeof(head) - 1 || memcmp(buf, head, sizeof(head) - 1) != 0)
                return -EBADMSG;
        p = buf + sizeof(head) - 1;
        end = buf + len;
        v = p;
        e = memchr(v, ' ', (size_t) (end - v));
        if (!e || e == v || (size_t) (e - v) >= sizeof(r.old_high))
                return -EBADMSG;
        if (e - v == 3 && memcmp(v, "max", 3) == 0) {
                r.old_high_bytes = MG_UNLIMITED;
        } else {
                /* as the kernel prints memory.high: digits, no leading zero */
                if (*v == '0' && e - v > 1)
                        return -EBADMSG;
                for (const char *c = v; c < e; c++)
                        if (*c < '0' || *c > '9')
                                return -EBADMSG;
                if (mg_parse_u64_value(v, (size_t) (e - v), &r.old_high_bytes) < 0 ||
                    r.old_high_bytes == MG_UNLIMITED)
                        return -EBADMSG;
        }
        memcpy(r.old_high, v, (size_t) (e - v));
        p = e + 1;
        if (!mg_parse_record_field(&p, end, "deadline_boottime_usec=", ' ', &r.deadline_boottime_usec) ||
            !mg_parse_record_field(&p, end, "pid=", '\n', &r.pid) || p != end)
                return -EBADMSG;
        *ret = r;
        return 0;
}

/*
 * A lend record on the directory at mg_guard_new(): a lend some process
 * began and has not ended (it crashed or was killed; or it still runs, in
 * which case two guards watch one cgroup).  Not ignored: the guard takes
 * the lend over as its own, kills paused, and restores memory.high at the
 * record's deadline (MG_EVENT_LEND_EXPIRED), or at mg_guard_lend_end()
 * (its id: mg_guard_get_lend_id()).  The wait is cut to this guard's own
 * lend deadline: whoever can write the directory's xattrs can write a
 * record, and must not pause kills for long.
 * A record that cannot be read or parsed is logged and left for
 * mg_guard_recover() to report.
 */
void mg_lend_adopt(mg_guard *g) {
        char buf[MG_LEND_RECORD_MAX + 1];
        struct mg_lend_record rec;
        uint64_t now_bt, left, high;
        ssize_t n;

        if (g->cg.fd[MG_CG_HIGH] < 0)
                return; /* nothing to restore it into */
        n = mg_cgroup_get_xattr(&g->cg, MG_LEND_XATTR, buf, sizeof(buf) - 1);
        if (n == -ENODATA || n == -EOPNOTSUPP)
                return;
        if (mg_cgroup_tenant_writes(&g->cg)) {
                mg_guard_log(g, MG_LOG_WARNING,
                             "%s: a lend record is there, on a directory uid %u can write (mode %04o): not taken "
                             "over, kills not paused",
                             g->path, (unsigned) g->cg.dir_uid, (unsigned) (g->cg.dir_mode & 07777));
                return;
        }
        if (n < 0 || mg_lend_record_parse(buf, (size_t) n, &rec) < 0) {
                mg_guard_log(g, MG_LOG_WARNING, "%s: a lend record is there but %s; left for mg_guard_recover()", g->path,
                     n < 0 ? strerror((int) -n) : "malformed");
                return;
        }
        now_bt = mg_boottime_usec();
        if (rec.deadline_boottime_usec == UINT64_MAX)
                left = UINT64_MAX; /* a lend without a deadline */
        else
                left = rec.deadline_boottime_usec > now_bt ? rec.deadline_boottime_usec - now_bt : 0;
        if (left > g->opt.lend_deadline_usec)
                left = g->opt.lend_deadline_usec;
        /* What the lend wrote is not in the record: memory.high as found
         * now stands for it, so a change made after this is not undone at
         * the end.  Unread, only the rule against raising it is left. */
        g->lend.high_unknown = mg_cgroup_read_u64(&g->cg, MG_CG_HIGH, &high) < 0;
        if (g->lend.high_unknown)
                high = MG_UNLIMITED;
        memcpy(g->lend.old_high, rec.old_high, sizeof(rec.old_high));
        g->lend.info = (struct mg_lend_info) {
                .old_high_bytes = rec.old_high_bytes,
                .new_high_bytes = high,
                .deadline_usec = mg_usec_add(mg_guard_now(g), left),
                .id = ++g->lend.last_id, /* no caller holds it: mg_guard_get_lend_id() */
        };
        g->lent = g->lend.adopted = true;
        g->lend.recorded = false;
        mg_guard_log(g, MG_LOG_WARNING,
             "%s: found the open lend of pid %" PRIu64 " (memory.high to go back to %s): taken over, kills "
             "paused, restored in %" PRIu64 " ms",
             g->path, rec.pid, rec.old_high, left / 1000);
}

int mg_lend_recover(struct mg_cgroup *cg, unsigned flags) {
        char buf[MG_LEND_RECORD_MAX + 1];
        struct mg_lend_record rec;
        uint64_t high;
        ssize_t n;
        int r;

        n = mg_cgroup_get_xattr(cg, MG_LEND_XATTR, buf, sizeof(buf) - 1);
        if (n == -ENODATA || n == -EOPNOTSUPP)
                return 0; /* no record, or no xattrs at all */
        if (mg_cgroup_tenant_writes(cg))
                return -EPERM; /* the tenant's own words: left as they are */
        if (n < 0)
                return n == -ERANGE ? -EBADMSG : (int) n; /* longer than any record */
        r = mg_lend_record_parse(buf, (size_t) n, &rec);
        if (r < 0)
                return r;
        if ((flags & MG_RECOVER_EXPIRED) && rec.deadline_boottime_usec > mg_boottime_usec())
                return -EBUSY;
        if (cg->fd[MG_CG_HIGH] < 0)
                return -EOPNOTSUPP;
        r = mg_cgroup_read_u64(cg, MG_CG_HIGH, &high);
        if (r < 0)
                return r;
        /* A lend only raises memory.high: a record above the present value
         * is not a lend to end (someone lowered memory.high since, or wrote
         * the record to raise it); it is dropped, memory.high left alone. */
        if (rec.old_high_bytes <= high) {
                r = mg_cgroup_write(cg, MG_CG_HIGH, rec.old_high);
                if (r < 0)
                        return r;
                r = 1;
        }
        /* After the restore: if this fails, the record stays and the next
         * recovery writes the same value again. */
        (void) mg_cgroup_remove_xattr(cg, MG_LEND_XATTR);
        return r;
}

int mg_lend_tick(mg_guard *g, uint64_t now) {
        enum mg_event_type why;
        int r, acted = 0;

        /* The end of the lend, past its deadline (UINT64_MAX: a lend
         * without one, or a saturated one), or asked for and not done yet
         * (a write that failed).  Not while a restore is under way: the
         * lend counts as open until it is done, kills paused, and the tick
         * goes on reading. */
        if (!g->lent || restore_busy(g) ||
            !(g->lend.ending || (g->lend.info.deadline_usec != UINT64_MAX && now >= g->lend.info.deadline_usec)))
                return 0;
        why = g->lend.ending ? MG_EVENT_LEND_END : MG_EVENT_LEND_EXPIRED;
        if (g->host) {
                /* The write may reclaim for seconds: the set's worker makes
                 * it, and mg_set_process() tells. */
                r = restore_queue(g, why);
        } else {
                r = lend_restore(g);
                if (r >= 0)
                        acted = 1;
        }
        if (r < 0 && g->state == MG_GUARD_GONE)
                return r;
        if (r < 0 || !g->host)
                (void) lend_told(g, why, r, true);
        return acted;
}

int mg_guard_reclaim(mg_guard *g, uint64_t bytes) {
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        return mg_cgroup_reclaim(&g->cg, -1, bytes, true);
}
