/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guard object and what its other units use of it: the clock, the
 * voice (events to the caller's callback, logs, errors once per streak),
 * the cgroup gone, files opened again after a trim, and the reads judged:
 * read.c reads and says what it found, and here a failure is taken for the
 * cgroup gone, an error to report or a window to start over, and the
 * fast-path line follows the kernel limits.  It calls nothing of the units
 * above it (decide.c, lend.c, tick.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "borrow.h"
#include "guard.h"
#include "sized.h"

MG_HOT uint64_t mg_guard_default_clock(void *userdata) {
        (void) userdata;
        return mg_mono_usec();
}

uint64_t mg_boottime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

MG_HOT uint64_t mg_guard_now(const mg_guard *g) {
        return g->clock(g->clock_userdata);
}

void mg_guard_set_clock(mg_guard *g, mg_clock_fn clock, void *userdata) {
        uint64_t old = mg_guard_now(g);
        uint64_t left = g->lent && g->lend.info.deadline_usec > old ? g->lend.info.deadline_usec - old : 0;

        g->clock = clock ? clock : mg_guard_default_clock;
        g->clock_userdata = userdata;
        g->limits_due_usec = mg_guard_now(g) + MG_LIMITS_REREAD_USEC;
        /* a lend adopted at mg_guard_new() keeps the time it had left; one
         * that never ends still never does */
        if (g->lent && g->lend.info.deadline_usec != UINT64_MAX)
                g->lend.info.deadline_usec = mg_usec_add(mg_guard_now(g), left);
        /* and a park taken over there, its time and what it has left */
        if (g->state == MG_GUARD_PARKED) {
                struct mg_slow *sl = g->slow_state;
                uint64_t park_left = sl->park_deadline_usec > old ? sl->park_deadline_usec - old : 0;
                uint64_t since = old > sl->kill.report.park_usec ? old - sl->kill.report.park_usec : 0;

                sl->park_deadline_usec = mg_usec_add(mg_guard_now(g), park_left);
                sl->kill.report.park_usec = mg_guard_now(g) > since ? mg_guard_now(g) - since : 0;
                if (sl->park_taken_over)
                        sl->kill.detect_usec = sl->kill.report.park_usec;
        }
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
                if (ev->kill->report.park_end == MG_PARK_END_KILL)
                        c->parks_killed++;
                else if (ev->kill->report.park_end != MG_PARK_OPEN && ev->kill->report.park_end != MG_PARK_END_NO_FREEZE)
                        c->parks_expired++;
                break;
        case MG_EVENT_KILL_DRY_RUN: c->dry_run_kills++; break;
        case MG_EVENT_KERNEL_OOM: c->kernel_oom_kills += (uint32_t) ev->count; break;
        case MG_EVENT_ERROR: c->errors++; break;
        case MG_EVENT_LEND_BEGIN: c->lends++; break;
        case MG_EVENT_LEND_EXPIRED: c->lend_expiries++; break;
        case MG_EVENT_THROTTLED: c->throttles++; break;
        case MG_EVENT_KILL_AVERTED: c->kills_averted++; break;
        case MG_EVENT_THAW: c->parks_thawed++; break;
        case MG_EVENT_RECLAIM:
                c->reclaims++;
                c->reclaimed_bytes += ev->reclaim->achieved_bytes;
                break;
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

int mg_guard_gone(mg_guard *g, const char *what) {
        if (g->state != MG_GUARD_GONE) {
                g->state = MG_GUARD_GONE;
                g->lent = false; /* nothing left to restore */
                g->lend.ending = false;
                mg_guard_log(g, MG_LOG_INFO, "%s: cgroup is gone", g->path);
                mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_GONE, .what = what });
        }
        return -ENODEV;
}

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

int mg_guard_read_parsed(mg_guard *g, enum mg_cgfile f, void *ret) {
        int r = mg_read_parsed(&g->rd, &g->cg, f, ret);

        if (r >= 0)
                mg_guard_error_clear(g, f);
        return r;
}

void mg_guard_line_follow(mg_guard *g, uint64_t high, uint64_t max) {
        g->max_bytes = max;
        g->params.line_bytes = mg_policy_line(g->params.limit_bytes, g->params.margin_bytes, high < max ? high : max);
}

/* memory.high and memory.max for the line, now; where neither can be read,
 * the guard's own limit draws it.  The next periodic re-read is due in
 * MG_LIMITS_REREAD_USEC. */
void mg_guard_limits_read(mg_guard *g) {
        uint64_t high, max;

        reads_ok(g, mg_read_kernel_limits(&g->cg, &high, &max));
        mg_guard_line_follow(g, high, max);
        g->limits_due_usec = mg_guard_now(g) + MG_LIMITS_REREAD_USEC;
}

/* Both, into a report or a kill record; optional, so errors leave "max". */
void mg_guard_report_limits(mg_guard *g, struct mg_report *rep) {
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
int mg_guard_read_sample(mg_guard *g, uint64_t current, enum mg_read_mode mode, struct mg_report *rep,
                         struct mg_sample *x) {
        bool report = mode == MG_READ_REPORT;
        struct mg_read_outcome out;
        int r;

        r = mg_read_sample(&g->rd, &g->cg, g->page_bytes, mg_guard_now(g), current, mode != MG_READ_TICK, rep, x, &out);
        reads_ok(g, out.ok);
        if (out.hidden) {
                for (enum mg_cgfile f = MG_CG_PRESSURE; f <= MG_CG_IO_PRESSURE; f++)
                        if (out.hidden & MG_CG_BIT(f))
                                mg_guard_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), out.err[f]);
                mg_guard_triggers_close(g);
        }
        if (r < 0)
                return mg_guard_read_failed(g, out.at, r, report);
        rep->limit_bytes = g->params.limit_bytes;
        rep->margin_bytes = g->params.margin_bytes;
        /* Keep reading for a window after the last sign, so the window the
         * policy looks back over has the extra figures at both ends. */
        if (x->have_events && !report && rose(&g->last_high_events, x->high_events))
                g->throttle_until_usec = x->time_usec + g->params.stall_window_usec + 2 * g->opt.tick_usec;
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
int mg_guard_read_populated(mg_guard *g) {
        int populated, r = mg_guard_read_parsed(g, MG_CG_EVENTS, &populated);

        if (r >= 0)
                return populated;
        if (mg_gone_errno(r))
                return mg_guard_gone(g, "cgroup.events");
        return mg_guard_error(g, MG_CG_EVENTS, MG_LOG_WARNING, "reading", "cgroup.events", r);
}

/* cgroup.procs, parsed.  Returns 0, -ENODEV once the cgroup is gone, or
 * another (reported) error. */
int mg_guard_read_members(mg_guard *g, struct mg_procs *ret, bool *ret_cut) {
        int r = mg_read_members(&g->cg, ret, ret_cut);

        if (r >= 0) {
                mg_guard_error_clear(g, MG_CG_PROCS);
                return 0;
        }
        if (mg_gone_errno(r))
                return mg_guard_gone(g, "cgroup.procs");
        return mg_guard_error(g, MG_CG_PROCS, MG_LOG_WARNING, "reading", "cgroup.procs", r);
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

void mg_guard_triggers_close(mg_guard *g) {
        for (int i = 0; i < 2; i++) {
                if (g->trigger_fd[i] < 0)
                        continue;
                host_watch(g, g->trigger_fd[i], MG_WATCH_TRIGGER, false);
                close(g->trigger_fd[i]);
                g->trigger_fd[i] = -1;
        }
}

void mg_guard_window_reset(mg_guard *g) {
        if (g->slow_state)
                mg_policy_reset(&g->slow_state->policy);
}

void mg_guard_hold(mg_guard *g) {
        g->holds++;
}

MG_HOT uint64_t mg_guard_get_tick_usec(const mg_guard *g) {
        return g->opt.tick_usec;
}

int mg_guard_get_options(const mg_guard *g, struct mg_guard_options *ret) {
        struct mg_guard_options o = g ? g->opt : (struct mg_guard_options) {};

        if (!g || !ret)
                return -EINVAL;
        o.limit_bytes = g->params.limit_bytes;
        o.margin_bytes = g->params.margin_bytes;
        o.stall_window_usec = g->params.stall_window_usec;
        o.stall_pressure_permyriad = g->params.stall_pressure_permyriad;
        o.refault_window_usec = g->params.refault_window_usec;
        o.refault_mapped_window_usec = g->params.refault_mapped_window_usec;
        /* ret may be an older caller's, shorter struct */
        return mg_sized_copy_out(ret, &o, sizeof(o));
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
        sum->reclaims += c->reclaims;
        sum->reclaimed_bytes += c->reclaimed_bytes;
        sum->parks += c->parks;
        sum->parks_thawed += c->parks_thawed;
        sum->parks_killed += c->parks_killed;
        sum->parks_expired += c->parks_expired;
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

uint64_t mg_guard_get_limit_bytes(const mg_guard *g) {
        return g->params.limit_bytes;
}
