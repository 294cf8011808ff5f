/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A guard's life and its state machine: creation and the end, the clock,
 * events and logs, errors once per streak, the PSI triggers of the slow
 * path, the tick (fast path, slow path, the kill decision, the wait for
 * the cgroup to empty and the hold-off), and reports.  What it reads comes
 * from read.c; lends, their record and recovery are lend.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "kill.h"
#include "parse.h"
#include "sized.h"
#include "tune.h"

MG_HOT static uint64_t default_clock(void *userdata) {
        (void) userdata;
        return mg_mono_usec();
}

MG_HOT uint64_t mg_guard_now(const mg_guard *g) {
        return g->clock(g->clock_userdata);
}

void mg_guard_set_clock(mg_guard *g, mg_clock_fn clock, void *userdata) {
        uint64_t old = mg_guard_now(g);
        uint64_t left = g->lent && g->lend.deadline_usec > old ? g->lend.deadline_usec - old : 0;

        g->clock = clock ? clock : default_clock;
        g->clock_userdata = userdata;
        g->limits_due_usec = mg_guard_now(g) + MG_LIMITS_REREAD_USEC;
        /* a lend adopted at mg_guard_new() keeps the time it had left; one
         * that never ends still never does */
        if (g->lent && g->lend.deadline_usec != UINT64_MAX)
                g->lend.deadline_usec = mg_usec_add(mg_guard_now(g), left);
}

__attribute__((format(printf, 3, 4))) void mg_guard_log(const mg_guard *g, int level, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        if (!g->opt.log || g->detached)
                return; /* detached: the caller may have freed what its callbacks use */
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        g->opt.log(level, msg, g->opt.log_userdata);
}

/* mg_guard_get_stats(): each event as it is delivered. */
static void count_event(struct mg_guard_counts *c, const struct mg_event *ev) {
        switch (ev->type) {
        case MG_EVENT_KILL:
                if (ev->kill->reason == MG_KILL_STALL)
                        c->kills_stall++;
                else
                        c->kills_overshoot++;
                break;
        case MG_EVENT_KILL_DRY_RUN: c->dry_run_kills++; break;
        case MG_EVENT_KERNEL_OOM: c->kernel_oom_kills += (uint32_t) ev->count; break;
        case MG_EVENT_ERROR: c->errors++; break;
        case MG_EVENT_LEND_BEGIN: c->lends++; break;
        case MG_EVENT_LEND_EXPIRED: c->lend_expiries++; break;
        case MG_EVENT_THROTTLED: c->throttles++; break;
        case MG_EVENT_KILL_AVERTED: c->kills_averted++; break;
        default: break;
        }
}

void mg_guard_emit(mg_guard *g, struct mg_event *ev) {
        if (g->detached)
                return;
        count_event(&g->counts, ev);
        ev->cgroup = g->path;
        if (ev->time_usec == 0)
                ev->time_usec = mg_guard_now(g);
        if (g->opt.on_event)
                g->opt.on_event(g, ev, g->opt.userdata);
}

/*
 * The guard's reads: read.c reads and says what it found; here a failure
 * is judged (the cgroup gone, an error to report once, a window to start
 * over) and a file that reads again clears its error.
 */
enum read_mode {
        READ_TICK,      /* a slow tick: memory.stat's decision lines; memory.high and cpu.stat while a
                         * throttle window is open */
        READ_CONFIRM,   /* the fresh read before a kill: memory.stat whole, for the record */
        READ_REPORT,    /* mg_guard_report(): everything, whole, and nothing the tick keeps (high events
                         * seen, throttle window, the line, and the stall window when a read fails) moves */
};

int mg_guard_read_failed(mg_guard *g, enum mg_cgfile f, int err, bool keep_window) {
        if (mg_gone_errno(err) && mg_read_removed(&g->cg))
                return mg_guard_gone(g, mg_cgfile_name(f));
        mg_guard_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), err);
        if (!keep_window)
                mg_guard_window_reset(g);
        return err;
}

/* The files in ok (MG_CG_BIT()s) read: their next errors are reported. */
static void reads_ok(mg_guard *g, unsigned ok) {
        for (unsigned f = 0, erring = g->erring & ok; erring; f++, erring >>= 1)
                if (erring & 1)
                        mg_guard_error_clear(g, f);
}

/* memory.current, on every tick; returns 0 or the (reported) error. */
MG_HOT static inline int read_current(mg_guard *g, uint64_t *ret) {
        int r = mg_cgroup_read_u64(&g->cg, MG_CG_CURRENT, ret);

        if (r < 0)
                return mg_guard_read_failed(g, MG_CG_CURRENT, r, false);
        mg_guard_error_clear(g, MG_CG_CURRENT);
        return 0;
}

static int read_parsed(mg_guard *g, enum mg_cgfile f, void *ret) {
        int r = mg_read_parsed(&g->rd, &g->cg, f, ret);

        if (r >= 0)
                mg_guard_error_clear(g, f);
        return r;
}

void mg_guard_line_follow(mg_guard *g, uint64_t high, uint64_t max) {
        g->max_bytes = max;
        g->params.line_bytes = mg_policy_line(g->opt.limit_bytes, g->opt.margin_bytes, high < max ? high : max);
}

/* memory.high and memory.max for the line, now; where neither can be read,
 * the guard's own limit draws it.  The next periodic re-read is due in
 * MG_LIMITS_REREAD_USEC. */
static void limits_read(mg_guard *g) {
        uint64_t high, max;

        reads_ok(g, mg_read_kernel_limits(&g->cg, &high, &max));
        mg_guard_line_follow(g, high, max);
        g->limits_due_usec = mg_guard_now(g) + MG_LIMITS_REREAD_USEC;
}

/* Both, into a report or a kill record; optional, so errors leave "max". */
static void report_limits(mg_guard *g, struct mg_report *rep) {
        reads_ok(g, mg_read_kernel_limits(&g->cg, &rep->high_bytes, &rep->max_bytes));
}

/* The counter rose since the last slow tick (which saw *last). */
static bool rose(uint64_t *last, uint64_t now) {
        bool r = *last != UINT64_MAX && now > *last;
        *last = now;
        return r;
}

/*
 * The slow path's sample (mg_read_sample()), and what it means for the
 * guard.  A pressure file hidden while the cgroup lives is reported once,
 * and its PSI triggers go (their fds would poll as ready for good).  While
 * the actor hits memory.high, and a window after, memory.high and cpu.stat
 * are read too (mg_read_throttle()): only a throttle needs them, and their
 * errors are reported but end nothing, unless the cgroup is gone.  A tick
 * follows memory.high with the line; a report moves nothing the tick keeps.
 */
static int read_sample(mg_guard *g, uint64_t current, enum read_mode mode, struct mg_report *rep,
                       struct mg_sample *x) {
        bool report = mode == READ_REPORT;
        struct mg_read_outcome out;
        int r;

        r = mg_read_sample(&g->rd, &g->cg, g->page_bytes, mg_guard_now(g), current, mode != READ_TICK, rep, x, &out);
        reads_ok(g, out.ok);
        if (out.hidden) {
                for (enum mg_cgfile f = MG_CG_PRESSURE; f <= MG_CG_IO_PRESSURE; f++)
                        if (out.hidden & MG_CG_BIT(f))
                                mg_guard_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), out.err[f]);
                mg_guard_triggers_close(g);
        }
        if (r < 0)
                return mg_guard_read_failed(g, out.at, r, report);
        rep->limit_bytes = g->opt.limit_bytes;
        rep->margin_bytes = g->opt.margin_bytes;
        /* Keep reading for a window after the last sign, so the window the
         * policy looks back over has the extra figures at both ends. */
        if (x->have_events && !report && rose(&g->last_high_events, x->high_events))
                g->throttle_until_usec = x->time_usec + g->opt.stall_window_usec + 2 * g->opt.tick_usec;
        if (!report && x->time_usec >= g->throttle_until_usec)
                return 0;
        r = mg_read_throttle(&g->rd, &g->cg, x, &out);
        reads_ok(g, out.ok);
        if (r >= 0) {
                if (!report)
                        mg_guard_line_follow(g, x->high_bytes, g->max_bytes);
        } else if (mg_gone_errno(r)) {
                return mg_guard_read_failed(g, out.at, r, report);
        } else if (r != -EOPNOTSUPP) {
                mg_guard_error(g, out.at, MG_LOG_WARNING, "reading", mg_cgfile_name(out.at), r);
        }
        rep->high_bytes = x->high_bytes;
        return 0;
}

/* cgroup.events "populated", read just before acting.  Returns 1 or 0;
 * -ENODEV once the cgroup is gone; another error is reported (once per
 * streak) and returned, and the caller acts as if populated: the check
 * only spares an empty cgroup a kill, a confirmed overshoot it cannot
 * tell about is acted on as before. */
static int read_populated(mg_guard *g) {
        int populated, r = read_parsed(g, MG_CG_EVENTS, &populated);

        if (r >= 0)
                return populated;
        if (mg_gone_errno(r))
                return mg_guard_gone(g, "cgroup.events");
        return mg_guard_error(g, MG_CG_EVENTS, MG_LOG_WARNING, "reading", "cgroup.events", r);
}

/* cgroup.procs, parsed.  Returns 0, -ENODEV once the cgroup is gone, or
 * another (reported) error. */
static int read_members(mg_guard *g, struct mg_procs *ret, bool *ret_cut) {
        int r = mg_read_members(&g->cg, ret, ret_cut);

        if (r >= 0) {
                mg_guard_error_clear(g, MG_CG_PROCS);
                return 0;
        }
        if (mg_gone_errno(r))
                return mg_guard_gone(g, "cgroup.procs");
        return mg_guard_error(g, MG_CG_PROCS, MG_LOG_WARNING, "reading", "cgroup.procs", r);
}

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
        if (g->cg.dirfd < 0 || g->slow_state || g->lent || g->lend_ending || g->holds > 0 ||
            g->state != MG_GUARD_WATCHING ||
            atomic_load_explicit(&g->restore.state, memory_order_relaxed) != MG_RESTORE_IDLE)
                return;
        mg_cgroup_trim(&g->cg, keep);
}

int mg_guard_files_open(mg_guard *g) {
        int r = mg_cgroup_open_all(&g->cg);

        if (r >= 0) {
                mg_guard_error_clear(g, MG_ERR_OPEN);
                return 0;
        }
        /* -ESTALE: the path no longer names this cgroup; removed, if its
         * memory.current says so too. */
        if (mg_read_removed(&g->cg))
                return mg_guard_gone(g, "cgroup directory");
        return mg_guard_error(g, MG_ERR_OPEN, MG_LOG_ERR, "opening", "the cgroup's files", r);
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
        atomic_init(&g->restore.state, MG_RESTORE_IDLE);
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
        g->page_bytes = (uint32_t) sysconf(_SC_PAGESIZE);
        g->clock = default_clock;
        limits_read(g);
        g->state = MG_GUARD_WATCHING;
        /* The baseline for kernel OOM attribution: kills before the guard
         * existed are not news. */
        if (read_parsed(g, MG_CG_EVENTS_LOCAL, &g->last_events) >= 0)
                g->have_last_events = true;
        /* The keys this kernel prints in memory.stat, so that a read cut
         * short at a line boundary is told from a kernel without them. */
        (void) read_parsed(g, MG_CG_STAT, &(struct mg_memstat) {});
        g->last_high_events = UINT64_MAX; /* unknown until the first slow tick */
        mg_lend_adopt(g);
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

void mg_guard_triggers_close(mg_guard *g) {
        for (int i = 0; i < 2; i++) {
                if (g->trigger_fd[i] < 0)
                        continue;
                host_watch(g, g->trigger_fd[i], MG_WATCH_TRIGGER, false);
                close(g->trigger_fd[i]);
                g->trigger_fd[i] = -1;
        }
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
                 (uint64_t) g->opt.stall_pressure_permyriad * 2000000 / 10000);
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

void mg_guard_window_reset(mg_guard *g) {
        if (g->slow_state)
                mg_policy_reset(&g->slow_state->policy);
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
        /* The end of the lend tells MG_EVENT_LEND_END: a callback there
         * that frees g again only marks it, and a lend it begins is ended
         * too, untold. */
        g->busy++;
        mg_guard_release_lend(g, false);
        g->detached = true;
        mg_guard_release_lend(g, false);
        g->busy--;
        mg_guard_triggers_close(g);
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
        /* A guard leaves its host only to be freed: it never needs its own
         * buffer again. */
        free(g->own_bufs);
        g->own_bufs = NULL;
        g->rd.stat_buf = h->stat_buf;
        g->rd.small_buf = h->small_buf;
        files_trim(g);
}

bool mg_guard_detach(mg_guard *g) {
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

void mg_guard_hold(mg_guard *g) {
        g->holds++;
}

void mg_guard_release(mg_guard *g) {
        if (--g->holds == 0 && g->detached)
                mg_guard_free(g);
}

MG_HOT uint64_t mg_guard_get_tick_usec(const mg_guard *g) {
        return g->opt.tick_usec;
}

int mg_guard_get_options(const mg_guard *g, struct mg_guard_options *ret) {
        if (!g || !ret)
                return -EINVAL;
        /* ret may be an older caller's, shorter struct */
        return mg_sized_copy_out(ret, &g->opt, sizeof(g->opt));
}

void mg_guard_stats_add(const mg_guard *g, struct mg_stats *sum) {
        const struct mg_guard_counts *c = &g->counts;

        sum->fast_ticks += g->fast_ticks;
        sum->slow_ticks += c->slow_ticks;
        sum->kills_overshoot += c->kills_overshoot;
        sum->kills_stall += c->kills_stall;
        sum->dry_run_kills += c->dry_run_kills;
        sum->kernel_oom_kills += c->kernel_oom_kills;
        sum->errors += c->errors;
        sum->lends += c->lends;
        sum->lend_expiries += c->lend_expiries;
        sum->throttles += c->throttles;
        sum->kills_deferred += c->kills_deferred;
        sum->kills_averted += c->kills_averted;
}

int mg_guard_get_stats(const mg_guard *g, struct mg_stats *ret) {
        struct mg_stats st = { .size = sizeof(st) };

        if (!g || !ret || mg_sized_check_out(ret) < 0)
                return -EINVAL;
        mg_guard_stats_add(g, &st);
        return mg_sized_copy_out(ret, &st, sizeof(st));
}

bool mg_guard_is_killing(const mg_guard *g) {
        return g && g->state == MG_GUARD_KILLING;
}

const char *mg_guard_get_path(const mg_guard *g) {
        return g->path;
}

void *mg_guard_get_userdata(const mg_guard *g) {
        return g->opt.userdata;
}

int mg_guard_gone(mg_guard *g, const char *what) {
        if (g->state != MG_GUARD_GONE) {
                g->state = MG_GUARD_GONE;
                g->lent = false; /* nothing left to restore */
                g->lend_ending = false;
                mg_guard_log(g, MG_LOG_INFO, "%s: cgroup is gone", g->path);
                mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_GONE, .what = what });
        }
        return -ENODEV;
}

/* An error is reported once per streak of it on the same file or action
 * (slot: enum mg_cgfile or MG_ERR_*), never acted on.  The log says
 * "<verb> <what>: <error>", or "<what> failed: <error>" without a verb.
 * Returns err. */
int mg_guard_error(mg_guard *g, unsigned slot, int level, const char *verb, const char *what, int err) {
        if (g->error_streak[slot] != err) {
                g->error_streak[slot] = err;
                g->erring |= 1u << slot;
                if (verb)
                        mg_guard_log(g, level, "%s: %s %s: %s", g->path, verb, what, strerror(-err));
                else
                        mg_guard_log(g, level, "%s: %s failed: %s", g->path, what, strerror(-err));
                mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_ERROR, .error = err, .what = what });
        }
        return err;
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
        if (read_parsed(g, MG_CG_EVENTS_LOCAL, &rep.events) < 0)
                return;
        /* On the fast path, a memory.high or memory.max event says the actor
         * is pressed against a kernel limit the line may not know yet (it
         * was lowered from outside): read the limits now, not at the next
         * periodic re-read. */
        if (g->have_last_events && (rep.events.high > high || rep.events.max > max) && !g->slow) {
                limits_read(g);
                host_reschedule(g, mg_guard_now(g));
        }
        note_kernel_oom(g, &rep);
}

/*
 * Over the limit with no process: the memory is held by something a kill
 * cannot reach (files on tmpfs, a memfd the worker holds, slab, pages of
 * processes moved out: see MG_EVENT_EMPTY_OVER_LIMIT), and cgroup.kill on
 * an empty cgroup succeeds, so without this check every hold-off ended in
 * another kill record that killed nothing.  Reported once per episode.
 */
static void note_empty(mg_guard *g, const struct mg_report *rep) {
        const struct mg_memstat *st = &rep->stat;

        if (g->empty_over)
                return;
        g->empty_over = true;
        g->slow_state->empty_report = *rep;
        report_limits(g, &g->slow_state->empty_report);
        mg_guard_log(g, MG_LOG_WARNING,
             "%s: used %" PRIu64 " of limit %" PRIu64 " bytes held by no process (shmem %" PRIu64 ", kernel %" PRIu64
             ", anon %" PRIu64 ", sock %" PRIu64 "): not killed; tmpfs files and memfds charged to it, or its slab "
             "until rmdir, keep it",
             g->path, rep->used_bytes, rep->limit_bytes, st->shmem, st->kernel, st->anon, st->sock);
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_EMPTY_OVER_LIMIT, .report = &g->slow_state->empty_report });
}

static void end_empty(mg_guard *g, const char *why) {
        if (!g->empty_over)
                return;
        g->empty_over = false;
        mg_guard_log(g, MG_LOG_INFO, "%s: no longer over the limit with no process: %s", g->path, why);
}

static void end_unkillable(mg_guard *g, const char *why) {
        if (!g->unkillable)
                return;
        g->unkillable = false;
        mg_guard_log(g, MG_LOG_INFO, "%s: the members that outlived the kill: %s, back to the usual rules", g->path, why);
}

/* Does cgroup.procs list the members that outlived the kill, and only
 * them?  Returns 1 or 0, or a negative errno. */
static int same_members(mg_guard *g) {
        struct mg_procs p;
        bool cut;
        int r = read_members(g, &p, &cut);

        if (r < 0)
                return r;
        return p.n == g->slow_state->unkillable_procs.n && p.digest == g->slow_state->unkillable_procs.digest && cut == g->unkillable_cut;
}

/* A verdict to kill while a reported episode lasts: over the limit with no
 * process, or members that outlived a kill.  Returns 1 if nothing is new
 * (no kill, no report, and none of the confirming reads), 0 to go on with
 * the usual rules, -ENODEV once the cgroup is gone.  Reads that fail leave
 * the usual rules in force: they act on a confirmed verdict, as before. */
static int nothing_new(mg_guard *g) {
        int populated = read_populated(g), r;

        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        if (populated == 0) {
                end_unkillable(g, "the cgroup emptied");
                return g->empty_over;
        }
        if (populated > 0)
                end_empty(g, "a process appeared");
        if (!g->unkillable)
                return 0;
        r = same_members(g);
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        if (r > 0)
                return 1;
        end_unkillable(g, r == 0 ? "cgroup.procs changed" : "cgroup.procs cannot be read");
        return 0;
}

/*
 * The kill wait ran out with members still listed: they did not die of
 * SIGKILL (uninterruptible sleep, 'D': a process stuck in I/O, on a dead
 * NFS server or a hung device, takes the signal only when the I/O ends).
 * Killing again changes nothing, and every hold-off would end in another
 * kill record: one report instead, right after the kill record, with the
 * pids and their states, and no new kill while the same members are there.
 * Fills g->slow_state->unkillable_info; returns true if there is something to report.
 */
static bool find_unkillable(mg_guard *g, uint64_t now) {
        struct mg_unkillable_info *u = &g->slow_state->unkillable_info;
        struct mg_procs p;
        bool cut;

        if (read_members(g, &p, &cut) < 0 || p.n == 0)
                return false; /* reported; or it emptied since: the usual rules */
        *u = (struct mg_unkillable_info) {
                .kill_usec = g->slow_state->kill.kill_usec,
                .wait_usec = now - g->slow_state->kill.kill_usec,
                .n_members = p.n,
                .more_members = cut,
                .n_pids = p.n < MG_UNKILLABLE_MAX ? p.n : MG_UNKILLABLE_MAX,
        };
        for (uint32_t i = 0; i < u->n_pids; i++) {
                u->pids[i] = p.pid[i];
                u->states[i] = mg_proc_state(p.pid[i]);
        }
        g->unkillable = true;
        g->slow_state->unkillable_procs = p;
        g->unkillable_cut = cut;
        return true;
}

static void report_unkillable(mg_guard *g, uint64_t now) {
        const struct mg_unkillable_info *u = &g->slow_state->unkillable_info;
        char list[MG_UNKILLABLE_MAX * 16] = ""; /* "2147483647 (D) " is 15 */
        size_t at = 0;

        for (uint32_t i = 0; i < u->n_pids; i++)
                at += (size_t) snprintf(list + at, sizeof(list) - at, "%s%" PRId32 " (%c)", i ? " " : "", u->pids[i],
                                        u->states[i]);
        mg_guard_log(g, MG_LOG_WARNING,
             "%s: unkillable: %" PRIu32 " member%s still there %" PRIu64 " ms after SIGKILL: %s%s; not killed again "
             "while the same members are there",
             g->path, u->n_members, u->n_members == 1 ? "" : "s", u->wait_usec / 1000, list,
             u->n_members > u->n_pids || u->more_members ? " ..." : "");
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_UNKILLABLE, .time_usec = now, .kill = &g->slow_state->kill,
                                     .unkillable = u });
}

/* The kill record of reason over rep, in the slow path's state: a real
 * kill's, a dry run's, a pre-kill's (kill_usec 0: not sent). */
static void record_fill(mg_guard *g, enum mg_kill_reason reason, enum mg_kill_method method,
                        const struct mg_report *rep, uint64_t kill_usec) {
        g->slow_state->kill = (struct mg_kill_record) {
                .size = sizeof(g->slow_state->kill),
                .reason = reason,
                .method = method,
                .cgroup = g->path,
                .report = *rep,
                .detect_usec = g->detect_usec,
                .kill_usec = kill_usec,
        };
        report_limits(g, &g->slow_state->kill.report);
}

/* The method a kill would use: cgroup.kill where the kernel has it. */
static enum mg_kill_method kill_method(const mg_guard *g) {
        return g->cg.have & MG_CG_BIT(MG_CG_KILL) ? MG_KILL_CGROUP_KILL : MG_KILL_PIDFD;
}

/* MG_GUARD_DRY_RUN: the record a kill would carry, told at once, and
 * nothing signalled.  The windows start over as after a kill, and the same
 * would-be kill is not told again before the hold (MG_EVENT_KILL_DRY_RUN). */
static void dry_kill(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep, uint64_t now) {
        record_fill(g, reason, kill_method(g), rep, now);
        mg_guard_log(g, MG_LOG_WARNING, "%s: would kill (%s, dry run): used %" PRIu64 " of limit %" PRIu64, g->path,
                     mg_kill_reason_to_string(reason), rep->used_bytes, rep->limit_bytes);
        g->slow_state->dry_hold_until_usec = mg_usec_add(now, MG_DRY_RUN_HOLDOFF_USEC);
        mg_guard_window_reset(g);
        g->detect_usec = 0;
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_KILL_DRY_RUN, .time_usec = now,
                                              .kill = &g->slow_state->kill });
}

int mg_guard_defer_kill(mg_guard *g, uint64_t usec) {
        const struct mg_report *rep;

        if (!g || usec == 0)
                return -EINVAL;
        if (!g->pre_kill_open || !g->slow_state)
                return -ENOENT;
        if (usec > g->opt.pre_kill_max_defer_usec)
                return -ERANGE;
        rep = &g->slow_state->kill.report;
        if (!mg_policy_may_defer(&g->params, rep->stat.anon + rep->stat.shmem, g->max_bytes))
                return -EPERM;
        g->slow_state->defer_until_usec = mg_usec_add(mg_guard_now(g), usec);
        return 0;
}

/* MG_EVENT_PRE_KILL, where the options ask for it.  Returns 1 if the kill
 * is put off (or the callback removed the guard: nothing more to do), 0 to
 * kill now. */
static int pre_kill(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep, uint64_t now) {
        struct mg_guard_host *host = g->host;
        struct mg_slow *sl = g->slow_state;

        if (g->opt.pre_kill_max_defer_usec == 0)
                return 0;
        record_fill(g, reason, kill_method(g), rep, 0);
        sl->defer_until_usec = 0;
        g->pre_kill_open = true;
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_PRE_KILL, .time_usec = now, .kill = &sl->kill });
        g->pre_kill_open = false;
        if (g->host != host || g->detached) {
                sl->defer_until_usec = 0;
                return 1; /* removed by its callback */
        }
        if (sl->defer_until_usec == 0)
                return 0;
        g->counts.kills_deferred++;
        mg_guard_log(g, MG_LOG_WARNING, "%s: kill (%s) deferred %" PRIu64 " ms at the caller's request", g->path,
                     mg_kill_reason_to_string(reason), (sl->defer_until_usec - mg_guard_now(g)) / 1000);
        return 1;
}

/* The deferral goes without a kill decision of its own (a lend began). */
static void defer_drop(mg_guard *g, const char *why) {
        if (!g->slow_state || !g->slow_state->defer_until_usec)
                return;
        g->slow_state->defer_until_usec = 0;
        g->detect_usec = 0;
        mg_guard_log(g, MG_LOG_INFO, "%s: the deferred kill is dropped: %s", g->path, why);
}

static int start_kill(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep) {
        enum mg_kill_method method;
        int r;

        r = mg_cgroup_kill(&g->cg, &method);
        if (r < 0) {
                if (mg_gone_errno(r) && mg_read_removed(&g->cg))
                        return mg_guard_gone(g, "kill");
                /* Once per streak: the verdict holds every tick until it works. */
                return mg_guard_error(g, MG_ERR_KILL, MG_LOG_ERR, NULL, "kill", r);
        }
        mg_guard_error_clear(g, MG_ERR_KILL);
        record_fill(g, reason, method, rep, mg_guard_now(g));
        g->state = MG_GUARD_KILLING;
        mg_guard_log(g, MG_LOG_WARNING, "%s: killed (%s): used %" PRIu64 " of limit %" PRIu64, g->path,
             mg_kill_reason_to_string(reason), rep->used_bytes, rep->limit_bytes);
        host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, true);
        return 1;
}

static void finish_kill(mg_guard *g, uint64_t now, bool timed_out) {
        g->slow_state->kill.empty_usec = timed_out ? 0 : now;
        g->slow_state->kill.empty_timed_out = timed_out;
        g->state = MG_GUARD_HOLDOFF;
        g->holdoff_until_usec = mg_usec_add(now, g->opt.post_kill_holdoff_usec);
        mg_guard_window_reset(g);
        g->detect_usec = 0;
        host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, false);
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_KILL, .time_usec = now, .kill = &g->slow_state->kill });
}

/* KILLING: wait for cgroup.events "populated 0", and kill again what a
 * fallback kill may have missed (a fork racing the pidfd loop). */
static int tick_killing(mg_guard *g, uint64_t now) {
        int populated, r;

        r = read_parsed(g, MG_CG_EVENTS, &populated);
        if (r < 0) {
                r = mg_guard_read_failed(g, MG_CG_EVENTS, r, false);
                if (g->state == MG_GUARD_GONE)
                        return r;
                /* Whether it emptied cannot be told: give up waiting at the
                 * usual time instead of never delivering the record. */
                if (now - g->slow_state->kill.kill_usec >= g->opt.kill_wait_usec) {
                        mg_guard_log(g, MG_LOG_ERR, "%s: cgroup.events unreadable %" PRIu64 " ms after the kill", g->path,
                             (now - g->slow_state->kill.kill_usec) / 1000);
                        finish_kill(g, now, true);
                }
                return r;
        }
        if (!populated) {
                finish_kill(g, now, false);
                return 0;
        }
        if (now - g->slow_state->kill.kill_usec >= g->opt.kill_wait_usec) {
                struct mg_guard_host *host = g->host;
                bool unkillable;

                mg_guard_log(g, MG_LOG_ERR, "%s: still populated %" PRIu64 " ms after the kill", g->path,
                     (now - g->slow_state->kill.kill_usec) / 1000);
                /* Who is left, read before the record goes out (its
                 * callback may remove the guard); reported right after it:
                 * the record says what was killed and why, the report
                 * what did not die. */
                unkillable = find_unkillable(g, now);
                if (g->state == MG_GUARD_GONE)
                        return -ENODEV;
                finish_kill(g, now, true);
                if (unkillable && g->host == host)
                        report_unkillable(g, now);
                return 0;
        }
        if (g->slow_state->kill.method == MG_KILL_PIDFD)
                (void) mg_cgroup_kill(&g->cg, &(enum mg_kill_method) { 0 });
        return 0;
}

/* The kill, or under MG_GUARD_DRY_RUN what it would be.  Returns 1 if it
 * killed, 0 (a dry run) or a negative errno. */
static int act(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep, uint64_t now) {
        int r;

        if (g->opt.flags & MG_GUARD_DRY_RUN) {
                dry_kill(g, reason, rep, now);
                return 0;
        }
        r = start_kill(g, reason, rep);
        if (r < 0)
                return r;
        /* cgroup.kill is synchronous for signalling; the group may already be empty. */
        tick_killing(g, mg_guard_now(g));
        return 1;
}

/*
 * Steps 4 and 5 of the kill decision (kill_decide()), for a verdict v a
 * fresh read confirmed, rep its record.  cgroup.events is read last, just
 * before acting: an empty cgroup is never killed (an overshoot there is
 * reported).  Then the kill, told first (MG_EVENT_PRE_KILL) unless it was
 * already.  A stall needs tasks to stall: what is left of its window is
 * not acted on, and a process that appears later is detected anew.
 * Returns 1 if it killed, 0 if not, or a negative errno.
 */
static int kill_if_populated(mg_guard *g, enum mg_verdict v, struct mg_report *rep, uint64_t now, bool told) {
        enum mg_kill_reason reason = v == MG_VERDICT_OVERSHOOT ? MG_KILL_OVERSHOOT : MG_KILL_STALL;
        int r = read_populated(g);

        if (g->state == MG_GUARD_GONE)
                return r;
        if (r == 0) {
                g->detect_usec = 0;
                if (v == MG_VERDICT_OVERSHOOT)
                        note_empty(g, rep);
                return 0;
        }
        if (!told && pre_kill(g, reason, rep, now))
                return 0;
        return act(g, reason, rep, now);
}

/*
 * The end of a deferral (mg_guard_defer_kill()): step 3 of the kill
 * decision again, a fresh read, on the verdict the deferral put off, and
 * steps 4 and 5 if it still stands; if the actor has left its limit,
 * MG_EVENT_KILL_AVERTED instead.  Returns 1 if it killed, 0, or a negative
 * errno (a read that failed: the deferral is over, and the next tick
 * decides anew).
 */
static int defer_end(mg_guard *g, uint64_t now, uint64_t current) {
        struct mg_slow *sl = g->slow_state;
        enum mg_verdict v = sl->kill.reason == MG_KILL_STALL ? MG_VERDICT_STALL : MG_VERDICT_OVERSHOOT;
        struct mg_report rep;
        struct mg_sample x;
        int r;

        sl->defer_until_usec = 0;
        r = mg_guard_files_open(g); /* open since the deferral began (its state keeps them): cheap */
        if (r < 0)
                return r;
        r = read_sample(g, current, READ_CONFIRM, &rep, &x);
        if (r < 0) {
                g->detect_usec = 0;
                return r;
        }
        report_limits(g, &rep);
        if (mg_policy_confirm(&g->params, v, rep.current_bytes, rep.used_bytes) != v) {
                g->detect_usec = 0;
                mg_guard_log(g, MG_LOG_INFO,
                             "%s: the deferred kill (%s) is not made: the actor left its limit (used %" PRIu64
                             ", memory.current %" PRIu64 " of limit %" PRIu64 ")",
                             g->path, mg_kill_reason_to_string(sl->kill.reason), rep.used_bytes, rep.current_bytes,
                             rep.limit_bytes);
                mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_KILL_AVERTED, .time_usec = now,
                                                      .kill = &sl->kill, .report = &rep });
                return 0;
        }
        rep.verdict = v;
        rep.stall_usec = sl->kill.report.stall_usec;
        rep.stall_signals = sl->kill.report.stall_signals;
        rep.stall_refault_bytes = sl->kill.report.stall_refault_bytes;
        rep.stall_reclaimed_bytes = sl->kill.report.stall_reclaimed_bytes;
        return kill_if_populated(g, v, &rep, now, true);
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
        end_empty(g, "used is back below the limit");
        /* Its windows are gone and no episode is open: what only the slow
         * path needs goes back. */
        if (g->detect_usec == 0 && !g->unkillable && !g->empty_over && g->slow_state &&
            g->slow_state->policy.count == 0 && g->slow_state->defer_until_usec == 0)
                slow_put(g);
        files_trim(g);
}

/*
 * The kill decision, all of it, in the order its steps run, for a verdict
 * v of mg_policy_decide() over the slow tick's sample (rep):
 *  1. no kill during a lend (the lend pauses kills, lend.c);
 *  2. an episode already reported (over the limit with no process,
 *     members that outlived a kill) kills again only for something new;
 *  3. a fresh read of memory.current (and for an overshoot memory.stat)
 *     must confirm it (mg_policy_confirm(), pure, policy.c), and the
 *     record gets memory.stat whole;
 *  4. an empty cgroup is never killed: an overshoot there is reported;
 *  5. MG_EVENT_PRE_KILL, which may put the kill off (mg_guard_defer_kill():
 *     defer_end() runs steps 3 to 5 again when that time is up), and
 *     cgroup.kill (start_kill()).
 * Returns 1 if it killed, 0 if not, or a negative errno.
 */
static int kill_decide(mg_guard *g, enum mg_verdict v, uint64_t now, struct mg_report *rep, uint64_t stall_usec,
                       unsigned signals) {
        struct mg_slow *sl = g->slow_state;
        struct mg_sample fresh;
        uint64_t current;
        bool told = false; /* MG_EVENT_PRE_KILL went out for this kill already */
        int r;

        if (g->lent) {
                defer_drop(g, "a lend began (kills are paused)");
                return 0;
        }
        if (sl->defer_until_usec) {
                /* Put off until defer_end(), unless past the hard bound. */
                if (mg_policy_may_defer(&g->params, rep->stat.anon + rep->stat.shmem, g->max_bytes))
                        return 0;
                mg_guard_log(g, MG_LOG_WARNING,
                             "%s: anon + shmem %" PRIu64 " past the bound of a deferral: the deferred kill is made now",
                             g->path, rep->stat.anon + rep->stat.shmem);
                if (v != MG_VERDICT_OVERSHOOT && v != MG_VERDICT_STALL) {
                        v = sl->kill.reason == MG_KILL_STALL ? MG_VERDICT_STALL : MG_VERDICT_OVERSHOOT;
                        stall_usec = sl->kill.report.stall_usec;
                        signals = sl->kill.report.stall_signals;
                }
                sl->defer_until_usec = 0;
                told = true;
        }
        if (v != MG_VERDICT_OVERSHOOT && v != MG_VERDICT_STALL)
                return 0;
        if (sl->dry_hold_until_usec) {
                if (now < sl->dry_hold_until_usec)
                        return 0;
                sl->dry_hold_until_usec = 0;
        }
        if (g->empty_over || g->unkillable) {
                r = nothing_new(g);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        if (g->detect_usec == 0)
                g->detect_usec = now;

        r = read_current(g, &current);
        if (r < 0)
                return r;
        if (v == MG_VERDICT_OVERSHOOT) {
                r = read_sample(g, current, READ_CONFIRM, rep, &fresh);
                if (r < 0)
                        return r;
        }
        if (mg_policy_confirm(&g->params, v, current, rep->used_bytes) != v)
                return 0;
        if (v == MG_VERDICT_STALL) {
                /* The tick parsed only what the decision needs; the kill
                 * record shows memory.stat whole. */
                r = mg_read_stat(&g->rd, &g->cg, true, &rep->stat);
                if (r < 0)
                        return mg_guard_read_failed(g, MG_CG_STAT, r, false);
                mg_guard_error_clear(g, MG_CG_STAT);
                rep->current_bytes = current;
                rep->used_bytes = mg_used_bytes(&rep->stat);
        }
        rep->verdict = v;
        rep->stall_usec = stall_usec;
        rep->stall_signals = signals;
        rep->stall_refault_bytes = g->slow_state->policy.stall_refault_bytes;
        rep->stall_reclaimed_bytes = g->slow_state->policy.stall_reclaimed_bytes;
        return kill_if_populated(g, v, rep, now, told);
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

        if (g->state == MG_GUARD_KILLING) {
                r = tick_killing(g, now);
                return r < 0 ? r : acted;
        }
        if (g->state == MG_GUARD_HOLDOFF) {
                if (now < g->holdoff_until_usec)
                        return acted;
                g->state = MG_GUARD_WATCHING;
        }

        /* A set that watches memory.events.local hears of a kernel limit
         * the actor hits (mg_guard_events_changed()); a trimmed guard would
         * open both files for the periodic re-read, so there it waits for
         * the slow path. */
        if (now >= g->limits_due_usec && !g->events_watched)
                limits_read(g);
        r = read_current(g, &current);
        if (r < 0)
                return r;
        if (g->slow_state && g->slow_state->defer_until_usec) {
                if (g->lent) {
                        defer_drop(g, "a lend began (kills are paused)");
                } else if (now >= g->slow_state->defer_until_usec) {
                        r = defer_end(g, now, current);
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

        r = read_sample(g, current, READ_TICK, &rep, &x);
        if (r < 0)
                return r;
        note_kernel_oom(g, &rep);
        if (rep.used_bytes <= g->opt.limit_bytes)
                end_empty(g, "used is back at the limit");
        v = mg_policy_decide(&g->params, &g->slow_state->policy, &x, &stall_usec, &signals);
        note_throttle(g);
        r = kill_decide(g, v, now, &rep, stall_usec, signals);
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
                r = read_sample(g, current, READ_REPORT, &rep, &x);
        }
        if (r >= 0)
                report_limits(g, &rep);
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
