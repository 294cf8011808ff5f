/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A guard's life as its caller or set drives it: mg_guard_new() (the
 * limits, the baselines, a lend record taken over), joining and leaving a
 * set, the files kept open on the fast path, the slow path's state and PSI
 * triggers, the tick (fast path, slow path, the kill decision's place in
 * it), reports, and the end (mg_guard_free(), holds).  The public entries
 * that may run callbacks are bracketed here (mg_guard_enter()).  It sits
 * above the guard's other units and uses each: guard.c, decide.c, lend.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decide.h"
#include "lend.h"
#include "park.h"
#include "reclaim.h"
#include "sized.h"
#include "tick.h"
#include "tune.h"

/*
 * A guard far below its limit keeps open what its fast path uses, not
 * twelve files: memory.current, and memory.events.local while its set
 * watches it (a kernel OOM kill, a limit hit: mg_guard_events_changed()).
 * Everything else (the directory, cgroup.kill, memory.stat, PSI, the
 * limits) is open while the slow path, a kill, a lend or a snapshot write
 * on another thread may use it, and closed by the first fast tick after.
 */
static void files_trim(mg_guard *g) {
        unsigned keep = MG_CG_BIT(MG_CG_CURRENT) | (g->events_watched ? MG_CG_BIT(MG_CG_EVENTS_LOCAL) : 0);

        /* Every file opened again opens the directory first, and trimming
         * closes it: a closed directory is a trimmed guard (the fast tick's
         * test, on the line it reads anyway). */
        if (g->cg.dirfd < 0 || g->slow_state || g->lent || g->lend.ending || g->holds > 0 ||
            g->state != MG_GUARD_WATCHING ||
            atomic_load_explicit(&g->lend.restore.job.state, memory_order_relaxed) != MG_JOB_IDLE)
                return;
        mg_cgroup_trim(&g->cg, keep);
}

static int slow_get(mg_guard *g);

/* A park record on the directory, of a park whose process died (or still
 * runs: then two guards watch one cgroup): taken over, the guard parked
 * from the start (park.h).  Its slow state is the guard's own until it
 * joins a set, whose pool takes it back like any other. */
static void park_adopt(mg_guard *g) {
        struct mg_park_record rec;

        if (mg_park_record_find(g, &rec) <= 0 || slow_get(g) < 0)
                return;
        mg_park_adopt(g, &rec);
}

int mg_guard_new_hosted(const char *path, const struct mg_guard_options *o, unsigned cg_flags,
                        const struct mg_io *io, const struct mg_guard_host *host, mg_guard **ret) {
        mg_guard *g;
        int r;

        if (!path || !ret)
                return -EINVAL;
        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->cg.dirfd = -1;
        for (int i = 0; i < MG_CG_N; i++)
                g->cg.fd[i] = -1;
        /* before anything can fail: mg_guard_free() closes them */
        g->trigger_fd[0] = g->trigger_fd[1] = -1;
        atomic_init(&g->lend.restore.job.state, MG_JOB_IDLE);
        r = mg_options_resolve(o, &g->opt);
        if (r < 0)
                goto fail;
        g->path = strdup(path);
        if (host) {
                g->rd.stat_buf = host->stat_buf;
                g->rd.small_buf = host->small_buf;
        } else if ((g->rd.stat_buf = g->own_bufs = malloc(MG_STAT_BUF_SIZE + MG_SMALL_BUF_SIZE))) {
                g->rd.small_buf = g->own_bufs + MG_STAT_BUF_SIZE;
        }
        if (!g->path || !g->rd.stat_buf) {
                r = -ENOMEM;
                goto fail;
        }
        r = mg_cgroup_open(&g->cg, g->path, cg_flags, io);
        if (r < 0)
                goto fail;
        g->params = (struct mg_policy_params) {
                .limit_bytes = g->opt.limit_bytes,
                .margin_bytes = g->opt.margin_bytes,
                .stall_window_usec = g->opt.stall_window_usec,
                .stall_pressure_permyriad = g->opt.stall_pressure_permyriad,
                .refault_window_usec = g->opt.refault_window_usec,
                .refault_mapped_window_usec = g->opt.refault_mapped_window_usec,
        };
        /* The limit, its margin and the windows live in params alone. */
        g->opt.limit_bytes = g->opt.margin_bytes = 0;
        g->opt.stall_window_usec = g->opt.refault_window_usec = g->opt.refault_mapped_window_usec = 0;
        g->opt.stall_pressure_permyriad = 0;
        g->page_bytes = (uint32_t) sysconf(_SC_PAGESIZE);
        g->clock = mg_guard_default_clock;
        mg_guard_limits_read(g);
        g->state = MG_GUARD_WATCHING;
        /* The baseline for kernel OOM attribution: kills before the guard
         * existed are not news. */
        if (mg_guard_read_parsed(g, MG_CG_EVENTS_LOCAL, &g->last_events) >= 0)
                g->have_last_events = true;
        /* The keys this kernel prints in memory.stat, so that a read cut
         * short at a line boundary is told from a kernel without them. */
        (void) mg_guard_read_parsed(g, MG_CG_STAT, &(struct mg_memstat) {});
        g->last_high_events = UINT64_MAX; /* unknown until the first slow tick */
        r = mg_reclaim_new(g, cg_flags, io);
        if (r < 0)
                goto fail;
        mg_lend_adopt(g);
        park_adopt(g);
        if (!host)
                files_trim(g); /* a set's guard: mg_guard_attach() */
        *ret = g;
        return 0;
fail:
        mg_guard_free(g);
        return r;
}

int mg_guard_new_internal(const char *path, const struct mg_guard_options *o, unsigned cg_flags,
                          const struct mg_io *io, mg_guard **ret) {
        return mg_guard_new_hosted(path, o, cg_flags, io, NULL, ret);
}

int mg_guard_new(const char *cgroup_path, const struct mg_guard_options *o, mg_guard **ret) {
        return mg_guard_new_internal(cgroup_path, o, 0, NULL, ret);
}

int mg_guard_recover(const char *cgroup_path, unsigned flags) {
        return mg_guard_recover_internal(cgroup_path, flags, 0, NULL);
}

/* Both records, each on its own (a bad park record does not keep a lend
 * from its end): the lend's answer first, then the park's error if any.
 * The park's part acts on a stale record alone (park.h), so 1 still means
 * memory.high was written. */
int mg_guard_recover_internal(const char *path, unsigned flags, unsigned cg_flags, const struct mg_io *io) {
        struct mg_cgroup cg;
        int r, p;

        if (!path || (flags & ~(unsigned) MG_RECOVER_EXPIRED))
                return -EINVAL;
        r = mg_cgroup_open(&cg, path, cg_flags | MG_CGROUP_HIGH_ONLY, io);
        if (r < 0)
                return r;
        r = mg_lend_recover(&cg, flags);
        p = mg_park_recover(&cg);
        mg_cgroup_close(&cg);
        if (r < 0)
                return r;
        return p < 0 ? p : r;
}

/*
 * PSI triggers make the kernel wake the set within its window when the actor
 * stalls, instead of the next tick noticing.  They exist only while the actor
 * is at its limit: each costs the kernel a poll worker per cgroup (a
 * "psimon" thread for privileged openers), too much for thousands of idle
 * actors.  A window of 2 s is accepted from unprivileged openers too (they
 * need multiples of 2 s); where a trigger is refused (no PSI, permission),
 * ticks alone do the work.
 */
static void triggers_open(mg_guard *g) {
        static const char *const files[2] = { "memory.pressure", "io.pressure" };
        char spec[64];

        if (g->cg.flags & MG_CGROUP_ANY_FS)
                return; /* a fixture tree: its pressure files are plain files */
        snprintf(spec, sizeof(spec), "some %" PRIu64 " 2000000",
                 (uint64_t) g->params.stall_pressure_permyriad * 2000000 / 10000);
        for (int i = 0; i < 2; i++) {
                int fd = mg_cgroup_open_file(&g->cg, files[i], O_RDWR | O_NONBLOCK);
                if (fd < 0)
                        continue;
                if (write(fd, spec, strlen(spec) + 1) < 0) {
                        close(fd);
                        continue;
                }
                g->trigger_fd[i] = fd;
                host_watch(g, fd, MG_WATCH_TRIGGER, true);
        }
}

/* The slow path's state (struct mg_slow): from the host's pool, or the
 * guard's own allocation.  Returns 0 or -ENOMEM (reported). */
static int slow_get(mg_guard *g) {
        if (g->slow_state)
                return 0;
        g->slow_state = g->host ? g->host->slow_get(g->host) : calloc(1, sizeof(*g->slow_state));
        if (!g->slow_state)
                return mg_guard_error(g, MG_ERR_NOMEM, MG_LOG_ERR, "allocating", "the slow path's state", -ENOMEM);
        mg_guard_error_clear(g, MG_ERR_NOMEM);
        return 0;
}

static void slow_put(mg_guard *g) {
        if (!g->slow_state)
                return;
        if (g->host)
                g->host->slow_put(g->host, g->slow_state);
        else
                free(g->slow_state);
        g->slow_state = NULL;
}

/* Fast path <-> slow path.  At the limit, memory.events.local is read every
 * tick, so the set stops watching it (it would wake up to 100 times a second
 * while the limit is hit) and watches PSI triggers instead. */
static void set_slow(mg_guard *g, bool slow) {
        if (slow == g->slow)
                return;
        g->slow = slow;
        if (!g->host)
                return;
        g->events_watched = host_watch(g, g->cg.fd[MG_CG_EVENTS_LOCAL], MG_WATCH_MEM_EVENTS, !slow) == 0 && !slow;
        if (slow)
                triggers_open(g);
        else
                mg_guard_triggers_close(g);
}

struct mg_guard_host *mg_guard_enter(mg_guard *g) {
        struct mg_guard_host *h = g->host;

        g->busy++;
        if (h && h->enter)
                h->enter(h);
        return h;
}

void mg_guard_leave(mg_guard *g, struct mg_guard_host *h) {
        if (--g->busy == 0 && g->free_pending) {
                g->free_pending = false;
                mg_guard_free(g);
        }
        if (h && h->leave)
                h->leave(h);
}

mg_guard *mg_guard_free(mg_guard *g) {
        if (!g)
                return NULL;
        if (g->host) {
                /* Its set would go on ticking freed memory. */
                mg_guard_log(g, MG_LOG_ERR, "%s: mg_guard_free() of a guard in a set: not freed (mg_set_remove() frees it)",
                             g->path);
                return NULL;
        }
        if (g->busy > 0) {
                /* From a callback of a call on g, which goes on using it:
                 * silent from now on (the caller may free what its
                 * callbacks use), and freed as that call returns
                 * (mg_guard_leave()), its lend ended then, untold. */
                g->detached = true;
                g->free_pending = true;
                return NULL;
        }
        if (g->holds > 0) {
                /* A snapshot write on another thread still uses it: the last
                 * mg_guard_release() frees it.  The lend is that write's to
                 * end. */
                g->detached = true;
                return NULL;
        }
        mg_park_release(g);
        /* The end of the lend tells MG_EVENT_LEND_END: a callback there
         * that frees g again only marks it, and a lend it begins is ended
         * too, untold. */
        g->busy++;
        mg_guard_release_lend(g, false);
        g->detached = true;
        mg_guard_release_lend(g, false);
        g->busy--;
        mg_guard_triggers_close(g);
        mg_reclaim_free(g);
        mg_cgroup_close(&g->cg);
        free(g->path);
        slow_put(g);
        free(g->own_bufs);
        free(g);
        return NULL;
}

void mg_guard_attach(mg_guard *g, struct mg_guard_host *h) {
        g->host = h;
        /* A file that cannot be polled (a fixture tree's) is closed with
         * the rest; one that can stays open for the watch. */
        (void) mg_cgroup_need(&g->cg, MG_CG_EVENTS_LOCAL);
        g->events_watched = host_watch(g, g->cg.fd[MG_CG_EVENTS_LOCAL], MG_WATCH_MEM_EVENTS, true) == 0;
        /* A park taken over at mg_guard_new(): cgroup.events says when it
         * is frozen, as for a park of its own. */
        if (g->state == MG_GUARD_PARKED)
                (void) host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, true);
        /* A guard leaves its host only to be freed: it never needs its own
         * buffer again. */
        free(g->own_bufs);
        g->own_bufs = NULL;
        g->rd.stat_buf = h->stat_buf;
        g->rd.small_buf = h->small_buf;
        files_trim(g);
}

bool mg_guard_detach(mg_guard *g) {
        mg_park_release(g);
        /* A held guard's lend is the one of the write that holds it, or one
         * whose restore is under way (the job holds it): it ends as it is.
         * Any other is handed to the worker now, and that job holds it. */
        if (g->holds == 0)
                mg_guard_release_lend(g, true);
        if (g->state == MG_GUARD_KILLING)
                host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, false);
        if (g->events_watched)
                host_watch(g, g->cg.fd[MG_CG_EVENTS_LOCAL], MG_WATCH_MEM_EVENTS, false);
        g->events_watched = false;
        /* a trigger that fired would wake the host for good while nobody
         * reads it */
        mg_guard_triggers_close(g);
        g->host = NULL;
        /* Silent from now on, whoever frees it: the caller may free what
         * its callbacks use, and a callback that removed it may run above
         * this in the stack, its tick going on. */
        g->detached = true;
        /* If a write on another thread, or the worker, still uses it, the
         * last release frees it. */
        return g->holds == 0;
}

void mg_guard_release(mg_guard *g) {
        if (--g->holds == 0 && g->detached)
                mg_guard_free(g);
}

/* A throttle is reported once per episode; it ends when the criteria stop
 * holding (the actor got under memory.high, or died). */
static void note_throttle(mg_guard *g) {
        struct mg_throttle_info t;
        bool now = mg_policy_throttled(&g->params, &g->slow_state->policy, &t);

        if (now && !g->throttled) {
                g->throttle = t;
                mg_guard_log(g, MG_LOG_WARNING,
                     "%s: throttled at memory.high: %" PRIu64 " over %" PRIu64 " bytes, ~%" PRIu64
                     " ms per 256 KiB allocated",
                     g->path, t.current_bytes - t.high_bytes, t.high_bytes, t.est_delay_usec / 1000);
                mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_THROTTLED, .throttle = &g->throttle });
        }
        g->throttled = now;
}

static void note_kernel_oom(mg_guard *g, const struct mg_report *rep) {
        if (g->have_last_events && rep->events.oom_kill > g->last_events.oom_kill)
                mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_KERNEL_OOM,
                                             .count = rep->events.oom_kill - g->last_events.oom_kill });
        g->last_events = rep->events;
        g->have_last_events = true;
}

void mg_guard_events_changed(mg_guard *g) {
        struct mg_report rep = { .size = sizeof(rep) };
        uint64_t high = g->last_events.high, max = g->last_events.max;

        if (g->state == MG_GUARD_GONE)
                return;
        if (mg_guard_read_parsed(g, MG_CG_EVENTS_LOCAL, &rep.events) < 0)
                return;
        /* On the fast path, a memory.high or memory.max event says the actor
         * is pressed against a kernel limit the line may not know yet (it
         * was lowered from outside): read the limits now, not at the next
         * periodic re-read. */
        if (g->have_last_events && (rep.events.high > high || rep.events.max > max) && !g->slow) {
                mg_guard_limits_read(g);
                host_reschedule(g, mg_guard_now(g));
        }
        note_kernel_oom(g, &rep);
}

/*
 * Below the line.  A thrashing actor's memory.current dips under it now
 * and then (6.12 reclaims in batches: 40 of 48 MiB for a moment in
 * thrash-sequential), and a window cleared by every dip would never fill:
 * the windows go only once it has stayed below for half a stall window.
 */
static void tick_fast(mg_guard *g, uint64_t now) {
        if (!g->below_since_usec)
                g->below_since_usec = now;
        if (now - g->below_since_usec >= g->params.stall_window_usec / 2) {
                mg_guard_window_reset(g);
                g->detect_usec = 0;
                if (g->slow_state)
                        g->slow_state->dry_hold_until_usec = 0; /* it left its limit */
        }
        if (g->slow)
                /* a kernel OOM kill since the last slow tick ended it
                 * there: the fast path does not read the events */
                mg_guard_events_changed(g);
        set_slow(g, false);
        mg_guard_end_empty(g, "used is back below the limit");
        /* Its windows are gone and no episode is open: what only the slow
         * path needs goes back. */
        if (g->detect_usec == 0 && !g->unkillable && !g->empty_over && g->slow_state &&
            g->slow_state->policy.count == 0 && g->slow_state->defer_until_usec == 0)
                slow_put(g);
        files_trim(g);
}

int mg_guard_tick(mg_guard *g) {
        struct mg_guard_host *h;
        int r;

        if (!g)
                return -EINVAL;
        /* From one of its callbacks: the tick that runs it is mid-step. */
        if (g->busy > 0)
                return -EDEADLK;
        h = mg_guard_enter(g);
        r = mg_guard_tick_at(g, mg_guard_now(g));
        mg_guard_leave(g, h);
        return r;
}

MG_HOT int mg_guard_tick_at(mg_guard *g, uint64_t now) {
        struct mg_report rep;
        struct mg_sample x;
        uint64_t current, stall_usec;
        unsigned signals;
        enum mg_verdict v;
        int r, acted = 0;

        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        if (g->lent) {
                acted = mg_lend_tick(g, now);
                if (acted < 0)
                        return acted;
        }

        /* One test on the fast path for every state but watching. */
        if (g->state != MG_GUARD_WATCHING) {
                switch (g->state) {
                case MG_GUARD_KILLING:
                        r = mg_guard_tick_killing(g, now);
                        return r < 0 ? r : acted;
                case MG_GUARD_PARKED:
                        r = mg_guard_tick_parked(g, now);
                        return r < 0 ? r : r > 0 ? 1 : acted;
                case MG_GUARD_HOLDOFF:
                        if (now < g->holdoff_until_usec)
                                return acted;
                        g->state = MG_GUARD_WATCHING;
                        break;
                default:
                        break; /* gone in the lend's tick: its reads say so */
                }
        }

        /* A set that watches memory.events.local hears of a kernel limit
         * the actor hits (mg_guard_events_changed()); a trimmed guard would
         * open both files for the periodic re-read, so there it waits for
         * the slow path. */
        if (now >= g->limits_due_usec && !g->events_watched)
                mg_guard_limits_read(g);
        r = mg_guard_read_current(g, &current);
        if (r < 0)
                return r;
        if (g->reclaim)
                mg_reclaim_tick(g, now, current);
        if (g->slow_state && g->slow_state->defer_until_usec) {
                if (g->lent) {
                        mg_guard_defer_drop(g, "a lend began (kills are paused)");
                } else if (now >= g->slow_state->defer_until_usec) {
                        r = mg_guard_defer_end(g, now, current);
                        return r < 0 ? r : r > 0 ? 1 : acted;
                }
        }
        if (mg_policy_fast(&g->params, current)) {
                g->fast_ticks++;
                tick_fast(g, now);
                return acted;
        }
        r = mg_guard_files_open(g);
        if (r < 0)
                return r;
        r = slow_get(g);
        if (r < 0)
                return r;
        g->counts.slow_ticks++;
        set_slow(g, true);
        g->below_since_usec = 0;

        r = mg_guard_read_sample(g, current, MG_READ_TICK, &rep, &x);
        if (r < 0)
                return r;
        note_kernel_oom(g, &rep);
        if (rep.used_bytes <= g->params.limit_bytes)
                mg_guard_end_empty(g, "used is back at the limit");
        v = mg_policy_decide(&g->params, &g->slow_state->policy, &x, &stall_usec, &signals);
        note_throttle(g);
        r = mg_guard_kill_decide(g, v, now, &rep, stall_usec, signals);
        return r < 0 ? r : r > 0 ? 1 : acted;
}

/* The smallest .size mg_guard_report() fills: .size and time_usec, the
 * first field after it (a report without even that is a mistake, not an
 * older caller). */
#define MG_REPORT_SIZE_MIN (offsetof(struct mg_report, time_usec) + sizeof(uint64_t))

static int report_read(mg_guard *g, struct mg_report *ret) {
        struct mg_report rep;
        struct mg_sample x;
        struct mg_policy_state scratch;
        uint64_t current;
        bool trimmed;
        int r;

        if (!g || !ret)
                return -EINVAL;
        /* ret may be an older caller's, shorter struct; refused before
         * anything is read if it has no room for the first field */
        if (mg_sized_size(ret) < MG_REPORT_SIZE_MIN)
                return -EINVAL;
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        /* What a trimmed guard opens for the report it closes again: a
         * service reporting on thousands of guards at once would otherwise
         * hold a dozen descriptors each until their next fast tick. */
        trimmed = g->cg.dirfd < 0;
        r = mg_guard_files_open(g);
        if (r < 0)
                return r;
        r = mg_cgroup_read_u64(&g->cg, MG_CG_CURRENT, &current);
        if (r < 0) {
                r = mg_guard_read_failed(g, MG_CG_CURRENT, r, true);
        } else {
                mg_guard_error_clear(g, MG_CG_CURRENT);
                r = mg_guard_read_sample(g, current, MG_READ_REPORT, &rep, &x);
        }
        if (r >= 0)
                mg_guard_report_limits(g, &rep);
        if (trimmed)
                files_trim(g);
        if (r < 0)
                return r;
        if (mg_policy_fast(&g->params, current)) {
                rep.verdict = MG_VERDICT_OK;
        } else {
                /* Decide on a copy: a report must not feed the window. */
                scratch = g->slow_state ? g->slow_state->policy : (struct mg_policy_state) {};
                rep.verdict = mg_policy_decide(&g->params, &scratch, &x, &rep.stall_usec, &rep.stall_signals);
                rep.stall_refault_bytes = scratch.stall_refault_bytes;
                rep.stall_reclaimed_bytes = scratch.stall_reclaimed_bytes;
        }
        return mg_sized_copy_out(ret, &rep, sizeof(rep));
}

int mg_guard_report(mg_guard *g, struct mg_report *ret) {
        struct mg_guard_host *h;
        int r;

        if (!g)
                return -EINVAL;
        /* Its read errors are told (MG_EVENT_ERROR), and the callback may
         * free g, or its set. */
        h = mg_guard_enter(g);
        r = report_read(g, ret);
        mg_guard_leave(g, h);
        return r;
}

int mg_guard_lend_begin(mg_guard *g, uint64_t extra_bytes, uint64_t deadline_usec, uint64_t *ret_lend_id) {
        struct mg_guard_host *h;
        int r;

        if (!g)
                return -EINVAL;
        /* MG_EVENT_LEND_BEGIN and the logs may free g, or its set. */
        h = mg_guard_enter(g);
        r = mg_lend_begin(g, extra_bytes, deadline_usec, ret_lend_id);
        mg_guard_leave(g, h);
        return r;
}

int mg_guard_lend_end(mg_guard *g, uint64_t lend_id) {
        struct mg_guard_host *h;
        int r;

        if (!g)
                return -EINVAL;
        /* MG_EVENT_LEND_END (a guard alone) and the logs may free g, or
         * its set. */
        h = mg_guard_enter(g);
        r = mg_lend_end(g, lend_id);
        mg_guard_leave(g, h);
        return r;
}

int mg_guard_park_end(mg_guard *g, uint64_t park_id, enum mg_park_action action, uint64_t new_limit_bytes) {
        struct mg_guard_host *h;
        int r;

        if (!g)
                return -EINVAL;
        /* MG_EVENT_THAW, a kill's record and the logs may free g, or its set. */
        h = mg_guard_enter(g);
        r = mg_guard_park_finish(g, park_id, action, new_limit_bytes);
        mg_guard_leave(g, h);
        return r;
}

uint64_t mg_guard_get_park_id(const mg_guard *g) {
        return g && g->state == MG_GUARD_PARKED ? g->slow_state->kill.report.park_id : 0;
}
