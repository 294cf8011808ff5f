/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guard sets: many guards on one thread, driven through one epoll fd
 * (mg_set_get_fd) and mg_set_process(), their ticks on the schedule's slots,
 * their lends' restores and reclaim doses on the set's worker thread, the calls made from
 * their callbacks deferred to the end of the call that runs them.  It reaches
 * a guard through tick.h's and lend.h's entry points and the host hooks it
 * gives it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "guard.h"
#include "lend.h"
#include "schedule.h"
#include "set.h"
#include "sized.h"
#include "tick.h"
#include "reclaim.h"
#include "worker.h"

/*
 * Many guards, one thread: a schedule of guards by next tick time
 * (schedule.c) behind one timerfd, all in one epoll fd with what the
 * guards watch through their host interface (struct mg_guard_host):
 * memory.events.local on the fast path (a kernel OOM kill, a limit hit),
 * PSI triggers on the slow path, cgroup.events while a kill waits for the
 * cgroup to empty.
 * Thousands of actors cost one wakeup per slot their ticks fall on
 * (mg_set_slot_usec()), not one timer each.
 * The one thing no guard may do on that thread is a write that reclaims:
 * memory.high restored at the end of a lend (for seconds on 6.1 and 6.12)
 * or a dose to memory.reclaim.  A worker makes them (memguard/worker.c),
 * whose eventfd is in the same epoll fd.  The set reaches its guards only through functions.
 */
struct mg_set {
        struct mg_guard_host host; /* first: a guard's host is its set */
        int epfd, tfd;
        struct mg_sched sched;
        uint64_t armed_usec;
        /* Calls on the set, or on one of its guards, under way (set_enter()):
         * while one is, a removed guard waits among the zombies, and a
         * freed set (free_pending) for the outermost call to return. */
        unsigned busy;
        bool free_pending;
        /* Guards removed during a call, freed when the outermost returns
         * (a callback removed it, and process() may still hold the
         * pointer).  Every guard is in the schedule or here, and
         * mg_set_add_guard() keeps room for all of them: a removal never
         * allocates. */
        mg_guard **zombies;
        size_t n_zombies, zombies_cap;
        struct mg_set_options opt;
        struct mg_worker worker; /* its efd's epoll entry: data.ptr = &worker */
        /* The slow path's states its guards gave back (struct mg_slow):
         * as many as were ever at their limits at once. */
        struct mg_slow *slow_free;
        /* mg_set_get_stats(): the counts of the guards removed so far. */
        struct mg_stats removed;
};

static mg_set *set_of(struct mg_guard_host *h) {
        return (mg_set *) h;
}

static void set_destroy(mg_set *s);

static void set_enter(mg_set *s) {
        s->busy++;
}

/* The end of a call on s: the outermost frees the guards removed meanwhile
 * and, if a callback freed the set, the set. */
static void set_leave(mg_set *s) {
        if (s->busy > 1) {
                s->busy--;
                return;
        }
        while (s->n_zombies > 0)
                mg_guard_free(s->zombies[--s->n_zombies]);
        if (!s->free_pending) {
                s->busy = 0;
                return;
        }
        /* Busy to the end: the set's log, told of the last restores, can
         * neither process the set nor free it again. */
        set_destroy(s);
}

__attribute__((format(printf, 3, 4))) static void slog(const mg_set *s, int level, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        if (!s->opt.log)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        s->opt.log(level, msg, s->opt.log_userdata);
}

/* Arms the timerfd for the earliest tick; absolute, so a late process()
 * still fires at once. */
static int arm(mg_set *s) {
        const struct mg_sched_entry *e = mg_sched_peek(&s->sched);
        uint64_t when = e ? e->when : 0;
        struct itimerspec its = {};

        if (when == s->armed_usec)
                return 0;
        if (when == UINT64_MAX)
                when = 0; /* only gone guards left: disarm */
        if (when) {
                its.it_value.tv_sec = (time_t) (when / 1000000);
                its.it_value.tv_nsec = (long) (when % 1000000) * 1000;
                if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
                        its.it_value.tv_nsec = 1; /* zero would disarm */
        }
        if (timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
                return -errno;
        s->armed_usec = when;
        return 0;
}

void mg_set_reschedule(mg_set *s, mg_guard *g, uint64_t when_usec) {
        if (!mg_sched_take(&s->sched, g, NULL))
                return;
        mg_sched_push(&s->sched, when_usec, g);
        (void) arm(s);
}

/* How early a wakeup runs a guard's tick: MG_SET_SLACK_USEC, or less than
 * half a period, so that no guard ticks twice in one wakeup. */
static uint64_t slack_usec(uint64_t tick_usec) {
        return tick_usec / 2 < MG_SET_SLACK_USEC ? tick_usec / 2 : MG_SET_SLACK_USEC;
}

/* A guard asks for a tick now (an event, a lend's end): the start of the
 * slot now falls in is due at once, and the guard's next tick falls on a
 * slot again, a period after it. */
static void host_reschedule_cb(struct mg_guard_host *h, mg_guard *g, uint64_t when_usec) {
        uint64_t slot = mg_set_slot_usec(mg_guard_get_tick_usec(g));

        mg_set_reschedule(set_of(h), g, slot ? when_usec - when_usec % slot : when_usec);
}

/* kernfs signals a changed cgroup.events or memory.events.local, and psi a
 * fired trigger, as EPOLLPRI (and EPOLLERR, which epoll always reports)
 * until the file is read again.  The entry is the guard, tagged with what
 * in the low bits (a guard is aligned far more than 4). */
static int host_watch_cb(struct mg_guard_host *h, mg_guard *g, int fd, enum mg_watch what, bool on) {
        struct epoll_event ev = { .events = EPOLLPRI, .data.u64 = (uint64_t) (uintptr_t) g | what };
        int r = epoll_ctl(set_of(h)->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, on ? &ev : NULL);

        return r < 0 ? -errno : 0;
}

static void host_queue_job_cb(struct mg_guard_host *h, struct mg_job *j) {
        mg_worker_queue(&set_of(h)->worker, j);
}

static void host_log_cb(struct mg_guard_host *h, int level, const char *msg) {
        slog(set_of(h), level, "%s", msg);
}

static struct mg_slow *host_slow_get_cb(struct mg_guard_host *h) {
        mg_set *s = set_of(h);
        struct mg_slow *sl = s->slow_free;

        if (!sl)
                return calloc(1, sizeof(*sl));
        s->slow_free = sl->next_free;
        memset(sl, 0, sizeof(*sl));
        return sl;
}

static void host_slow_put_cb(struct mg_guard_host *h, struct mg_slow *sl) {
        mg_set *s = set_of(h);

        sl->next_free = s->slow_free;
        s->slow_free = sl;
}

static void host_enter_cb(struct mg_guard_host *h) {
        set_enter(set_of(h));
}

static void host_leave_cb(struct mg_guard_host *h) {
        set_leave(set_of(h));
}

int mg_set_new(const struct mg_set_options *o, mg_set **ret) {
        struct epoll_event ev = { .events = EPOLLIN };
        struct mg_set_options opt = { .size = sizeof(opt) };
        mg_set *s;
        int r;

        if (!ret)
                return -EINVAL;
        if (o) {
                r = mg_sized_copy_in(&opt, sizeof(opt), o, MG_SIZED_MIN);
                if (r < 0)
                        return r;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->host = (struct mg_guard_host) {
                .watch = host_watch_cb,
                .reschedule = host_reschedule_cb,
                .queue_job = host_queue_job_cb,
                .log = host_log_cb,
                .slow_get = host_slow_get_cb,
                .slow_put = host_slow_put_cb,
                .enter = host_enter_cb,
                .leave = host_leave_cb,
                .stat_buf = malloc(MG_STAT_BUF_SIZE + MG_SMALL_BUF_SIZE),
        };
        s->host.small_buf = s->host.stat_buf ? s->host.stat_buf + MG_STAT_BUF_SIZE : NULL;
        s->opt = opt;
        s->tfd = -1;
        s->worker.efd = -1;
        if (!s->host.stat_buf) {
                free(s);
                return -ENOMEM;
        }
        s->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (s->epfd < 0)
                goto errno_fail;
        s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s->tfd < 0)
                goto errno_fail;
        ev.data.ptr = s;
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->tfd, &ev) < 0)
                goto errno_fail;
        /* Now, not at the first restore: by then the host may have confined
         * its thread (mg_confine_thread()), and a confined thread cannot
         * start one (clone is not in the list, on purpose). */
        r = mg_worker_start(&s->worker);
        if (r < 0)
                goto fail;
        if (s->worker.confine_result < 0 && s->worker.confine_result != -EOPNOTSUPP)
                slog(s, MG_LOG_INFO, "the set's worker runs unconfined: %s",
                     strerror(-s->worker.confine_result));
        ev.data.ptr = &s->worker;
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->worker.efd, &ev) < 0)
                goto errno_fail;
        *ret = s;
        return 0;
errno_fail:
        r = -errno;
fail:
        mg_set_free(s);
        return r;
}

/* Jobs the worker did: each finished on the set's thread (the lend's end
 * or the dose told, unless its guard was removed meanwhile), and the job's
 * hold dropped, which frees a removed guard.  Counts the lends that ended
 * into *acted (may be NULL). */
static void finish_jobs(mg_set *s, int *acted) {
        struct mg_job *j, *next;
        uint64_t count;

        /* First: a job done after the take below writes it again. */
        (void) !read(s->worker.efd, &count, sizeof(count));
        for (j = mg_worker_take_done(&s->worker); j; j = next) {
                mg_guard *g = j->guard;
                struct mg_guard_host *h;
                int r;

                next = j->next;
                /* The job's hold keeps g: entered for its callbacks only. */
                h = mg_guard_enter(g);
                r = j->kind == MG_JOB_RESTORE ? mg_guard_restore_done(g, &s->host) : mg_reclaim_done(g);
                if (r > 0 && mg_guard_get_host(g) == &s->host && acted)
                        (*acted)++;
                mg_guard_leave(g, h);
                mg_guard_release(g);
        }
}

mg_set *mg_set_free(mg_set *s) {
        if (!s)
                return NULL;
        /* Its guards go at once, silent; the set itself when the outermost
         * call on it returns: this one, or the one whose callback this is. */
        s->free_pending = true;
        set_enter(s);
        while (mg_sched_size(&s->sched) > 0)
                (void) mg_set_remove(s, mg_sched_at(&s->sched, mg_sched_size(&s->sched) - 1));
        set_leave(s);
        return NULL;
}

static void set_destroy(mg_set *s) {
        /* The end of the set: every job still queued is made, and
         * waited for (their guards are removed: told to no one). */
        if (s->worker.started) {
                mg_worker_stop(&s->worker);
                finish_jobs(s, NULL);
        }
        mg_worker_close(&s->worker);
        mg_sched_free(&s->sched);
        free(s->zombies);
        if (s->tfd >= 0)
                close(s->tfd);
        if (s->epfd >= 0)
                close(s->epfd);
        while (s->slow_free) {
                struct mg_slow *sl = s->slow_free;
                s->slow_free = sl->next_free;
                free(sl);
        }
        free(s->host.stat_buf);
        free(s);
}

int mg_set_add_guard(mg_set *s, mg_guard *g) {
        uint64_t tick, slot, first;
        size_t n;
        int r;

        if (!s || !g || mg_guard_get_host(g))
                return -EINVAL;
        if (s->free_pending)
                return -ECANCELED; /* a callback freed the set */
        n = mg_sched_size(&s->sched);
        r = mg_sched_reserve(&s->sched, n + 1);
        if (r < 0)
                return r;
        if (n + s->n_zombies >= s->zombies_cap) {
                size_t cap = s->zombies_cap ? s->zombies_cap * 2 : 16;
                mg_guard **z = realloc(s->zombies, cap * sizeof(mg_guard *));
                if (!z)
                        return -ENOMEM;
                s->zombies = z;
                s->zombies_cap = cap;
        }
        tick = mg_guard_get_tick_usec(g);
        slot = mg_set_slot_usec(tick);
        first = mg_guard_now(g);
        if (slot && first % slot && first < UINT64_MAX - slot) /* not at the clock's end (an injected one) */
                first += slot - first % slot;
        mg_sched_push(&s->sched, mg_usec_add(first, mg_set_spread_usec(n, tick)), g);
        r = arm(s);
        if (r < 0) {
                (void) mg_sched_take(&s->sched, g, NULL);
                return r;
        }
        /* A set's guards read memory.stat into the set's buffer: 8 KiB per
         * set, not per guard. */
        mg_guard_attach(g, &s->host);
        return 0;
}

int mg_set_add(mg_set *s, const char *cgroup_path, const struct mg_guard_options *o, mg_guard **ret) {
        return mg_set_add_internal(s, cgroup_path, o, 0, NULL, ret);
}

int mg_set_add_internal(mg_set *s, const char *cgroup_path, const struct mg_guard_options *o, unsigned cg_flags,
                        const struct mg_io *io, mg_guard **ret) {
        mg_guard *g;
        int r;

        if (!s)
                return -EINVAL;
        /* The new guard's log (a lend record on its directory) may free
         * the set: it stays until this returns. */
        set_enter(s);
        r = mg_guard_new_hosted(cgroup_path, o, cg_flags, io, &s->host, &g);
        if (r >= 0) {
                r = mg_set_add_guard(s, g);
                if (r < 0)
                        mg_guard_free(g);
                else if (ret)
                        *ret = g;
        }
        set_leave(s);
        return r < 0 ? r : 0;
}

int mg_set_remove(mg_set *s, mg_guard *g) {
        int r;

        if (!s || !g || mg_guard_get_host(g) != &s->host)
                return -EINVAL;
        /* Out of the schedule first: a callback run by the detach (a log
         * of its lend's end) that removes g again finds it gone. */
        if (!mg_sched_take(&s->sched, g, NULL))
                return -EINVAL;
        set_enter(s);
        mg_guard_stats_add(g, &s->removed);
        /* Freed when the outermost call on s returns (this one, or the
         * one that runs the callback removing it, which may still hold
         * g), unless a hold keeps it longer. */
        if (mg_guard_detach(g))
                s->zombies[s->n_zombies++] = g;
        r = arm(s);
        set_leave(s);
        return r;
}

int mg_set_get_stats(const mg_set *s, struct mg_stats *ret) {
        struct mg_stats st;

        if (!s || !ret || mg_sized_check_out(ret) < 0)
                return -EINVAL;
        st = s->removed;
        st.size = sizeof(st);
        for (size_t i = 0; i < mg_sched_size(&s->sched); i++)
                mg_guard_stats_add(mg_sched_at(&s->sched, i), &st);
        return mg_sized_copy_out(ret, &st, sizeof(st));
}

size_t mg_set_size(const mg_set *s) {
        return s ? mg_sched_size(&s->sched) : 0;
}

int mg_set_get_fd(const mg_set *s) {
        return s ? s->epfd : -EINVAL;
}

int mg_set_get_timeout(const mg_set *s, uint64_t *ret_usec) {
        const struct mg_sched_entry *e;

        if (!s || !ret_usec)
                return -EINVAL;
        e = mg_sched_peek(&s->sched);
        *ret_usec = e ? e->when : UINT64_MAX;
        return 0;
}

static bool in_set(const mg_set *s, const mg_guard *g) {
        return mg_guard_get_host(g) == &s->host;
}

static void tick_guard(mg_set *s, mg_guard *g, uint64_t now, int *acted) {
        struct mg_guard_host *h;

        if (!in_set(s, g))
                return; /* removed by a callback earlier in this round */
        h = mg_guard_enter(g);
        if (mg_guard_tick_at(g, now) > 0)
                (*acted)++;
        mg_guard_leave(g, h); /* a zombie if removed: process() frees it */
}

static void dispatch(mg_set *s, uint64_t data, int *acted) {
        mg_guard *g = (mg_guard *) (uintptr_t) (data & ~(uint64_t) 3);
        struct mg_guard_host *h;

        if (!in_set(s, g))
                return;
        if ((data & 3) == MG_WATCH_MEM_EVENTS) {
                h = mg_guard_enter(g);
                mg_guard_events_changed(g);
                mg_guard_leave(g, h);
        } else {
                tick_guard(s, g, mg_guard_now(g), acted);
        }
}

MG_HOT int mg_set_process(mg_set *s) {
        struct epoll_event evs[64];
        uint64_t expirations;
        bool jobs = false;
        int acted = 0, n, r = 0;

        if (!s)
                return -EINVAL;
        /* Re-entered from a callback, of this call or of a call on one of
         * its guards: the round or the tick under way is mid-step. */
        if (s->busy > 0)
                return -EDEADLK;
        set_enter(s);
        /* Guards whose cgroup.events changed tick now, out of turn. */
        n = epoll_wait(s->epfd, evs, 64, 0);
        if (n < 0 && errno != EINTR)
                r = -errno;
        for (int i = 0; i < n; i++) {
                if (evs[i].data.ptr == &s->worker)
                        jobs = true;
                else if (evs[i].data.ptr != s)
                        dispatch(s, evs[i].data.u64, &acted);
        }
        (void) !read(s->tfd, &expirations, sizeof(expirations));
        /* After the batch: finishing may free a removed guard, and the batch
         * may name it. */
        if (jobs)
                finish_jobs(s, &acted);

        for (const struct mg_sched_entry *e; (e = mg_sched_peek(&s->sched));) {
                mg_guard *g = e->g, *soon[2];
                uint64_t now = mg_guard_now(g), when = e->when, tick = mg_guard_get_tick_usec(g);

                /* Have the first lines of the guards due next come in
                 * while this guard's read is in the kernel. */
                for (size_t k = mg_sched_next(&s->sched, soon); k-- > 0;)
                        for (size_t off = 0; off < 256; off += 64)
                                __builtin_prefetch((const char *) soon[k] + off);

                /* UINT64_MAX: only unscheduled (gone) guards are left */
                if (when == UINT64_MAX || when > mg_usec_add(now, slack_usec(tick)))
                        break;
                tick_guard(s, g, now, &acted);
                if (!in_set(s, g))
                        continue;
                /* Its callbacks may have added, removed or rescheduled
                 * guards (itself too): its time is taken anew. */
                (void) mg_sched_take(&s->sched, g, &when);
                if (mg_guard_is_gone(g)) {
                        /* Stays in the set, unscheduled, until the caller
                         * removes it after MG_EVENT_GONE. */
                        when = UINT64_MAX;
                } else {
                        /* Saturated: a clock within a tick of its end (an
                         * injected one) leaves the guard unscheduled, where
                         * a wrapped time would be in the past and tick it
                         * again in this loop without end. */
                        uint64_t after = mg_usec_add(now, slack_usec(tick));

                        when = mg_usec_add(when, tick);
                        /* Once per wakeup: a host a period or more late (it
                         * did not call) has each guard tick once, and its
                         * next tick is the first of its slot's after this
                         * wakeup. */
                        if (when <= after && when != UINT64_MAX)
                                when = mg_usec_add(mg_usec_add(when, (after - when) / tick * tick), tick);
                }
                mg_sched_push(&s->sched, when, g);
        }
        s->armed_usec = 0;
        if (r == 0 && !s->free_pending)
                r = arm(s);
        set_leave(s); /* may free s: a callback freed it */
        return r < 0 ? r : acted;
}
