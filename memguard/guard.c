/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "guard.h"
#include "kill.h"
#include "parse.h"
#include "tune.h"

uint64_t mg_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static int read_parsed(mg_guard *g, enum mg_cgfile f, void *ret);

static uint64_t default_clock(void *userdata) {
        (void) userdata;
        return mg_now_usec();
}

uint64_t mg_guard_now(const mg_guard *g) {
        return g->clock(g->clock_userdata);
}

void mg_guard_set_clock(mg_guard *g, mg_clock_fn clock, void *userdata) {
        g->clock = clock ? clock : default_clock;
        g->clock_userdata = userdata;
}

__attribute__((format(printf, 3, 4))) static void glog(const mg_guard *g, int level, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        if (!g->opt.log)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        g->opt.log(level, msg, g->opt.log_userdata);
}

static void emit(mg_guard *g, struct mg_event *ev) {
        ev->cgroup = g->path;
        if (ev->time_usec == 0)
                ev->time_usec = mg_guard_now(g);
        if (g->opt.on_event)
                g->opt.on_event(g, ev, g->opt.userdata);
}

int mg_guard_new_internal(const char *path, const struct mg_guard_options *o, unsigned cg_flags,
                          const struct mg_io *io, mg_guard **ret) {
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
        r = mg_options_resolve(o, &g->opt);
        if (r < 0)
                goto fail;
        g->path = strdup(path);
        if (!g->path) {
                r = -ENOMEM;
                goto fail;
        }
        r = mg_cgroup_open(&g->cg, path, cg_flags, io);
        if (r < 0)
                goto fail;
        g->params = (struct mg_policy_params) {
                .limit_bytes = g->opt.limit_bytes,
                .margin_bytes = g->opt.margin_bytes,
                .stall_window_usec = g->opt.stall_window_usec,
                .stall_pressure_permyriad = g->opt.stall_pressure_permyriad,
        };
        g->clock = default_clock;
        g->state = MG_GUARD_WATCHING;
        /* The baseline for kernel OOM attribution: kills before the guard
         * existed are not news. */
        if (read_parsed(g, MG_CG_EVENTS_LOCAL, &g->last_events) >= 0)
                g->have_last_events = true;
        g->heap_index = SIZE_MAX;
        g->last_restores = g->last_high_events = UINT64_MAX; /* unknown until the first slow tick */
        g->trigger_fd[0] = g->trigger_fd[1] = -1;
        *ret = g;
        return 0;
fail:
        mg_guard_free(g);
        return r;
}

int mg_guard_new(const char *cgroup_path, const struct mg_guard_options *o, mg_guard **ret) {
        return mg_guard_new_internal(cgroup_path, o, 0, NULL, ret);
}

static void triggers_close(mg_guard *g) {
        for (int i = 0; i < 2; i++) {
                if (g->trigger_fd[i] < 0)
                        continue;
                if (g->set)
                        mg_set_watch(g->set, g, g->trigger_fd[i], MG_WATCH_TRIGGER, false);
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
                int fd = openat(g->cg.dirfd, files[i], O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue;
                if (write(fd, spec, strlen(spec) + 1) < 0) {
                        close(fd);
                        continue;
                }
                g->trigger_fd[i] = fd;
                mg_set_watch(g->set, g, fd, MG_WATCH_TRIGGER, true);
        }
}

/* Fast path <-> slow path.  At the limit, memory.events.local is read every
 * tick, so the set stops watching it (it would wake up to 100 times a second
 * while the limit is hit) and watches PSI triggers instead. */
static void set_slow(mg_guard *g, bool slow) {
        if (slow == g->slow)
                return;
        g->slow = slow;
        if (!g->set)
                return;
        mg_set_watch(g->set, g, g->cg.fd[MG_CG_EVENTS_LOCAL], MG_WATCH_MEM_EVENTS, !slow);
        if (slow)
                triggers_open(g);
        else
                triggers_close(g);
}

mg_guard *mg_guard_free(mg_guard *g) {
        if (!g)
                return NULL;
        triggers_close(g);
        mg_cgroup_close(&g->cg);
        free(g->path);
        free(g);
        return NULL;
}

uint64_t mg_guard_get_tick_usec(const mg_guard *g) {
        return g->opt.tick_usec;
}

int mg_guard_get_options(const mg_guard *g, struct mg_guard_options *ret) {
        if (!g || !ret)
                return -EINVAL;
        *ret = g->opt;
        return 0;
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

bool mg_guard_is_lent(const mg_guard *g) {
        return g->lent;
}

/* A read or parse error is reported once per streak, never acted on.  A
 * cgroup that was removed makes every open file return ENODEV (kernfs
 * deactivates the node), so that one ends the guard. */
static int read_failed(mg_guard *g, enum mg_cgfile f, int err) {
        if (err == -ENODEV || err == -ENOENT) {
                if (g->state != MG_GUARD_GONE) {
                        g->state = MG_GUARD_GONE;
                        g->lent = false; /* nothing left to restore */
                        glog(g, MG_LOG_INFO, "%s: cgroup is gone", g->path);
                        emit(g, &(struct mg_event) { .type = MG_EVENT_GONE, .what = mg_cgfile_name(f) });
                }
                return -ENODEV;
        }
        if (err != g->last_error) {
                g->last_error = err;
                glog(g, MG_LOG_WARNING, "%s: reading %s: %s", g->path, mg_cgfile_name(f), strerror(-err));
                emit(g, &(struct mg_event) { .type = MG_EVENT_ERROR, .error = err, .what = mg_cgfile_name(f) });
        }
        mg_policy_reset(&g->policy);
        return err;
}

/* Reads memory.current; returns 0 or the (reported) error. */
static int read_current(mg_guard *g, uint64_t *ret) {
        int r = mg_cgroup_read_u64(&g->cg, MG_CG_CURRENT, ret);
        return r < 0 ? read_failed(g, MG_CG_CURRENT, r) : 0;
}

static int read_parsed(mg_guard *g, enum mg_cgfile f, void *ret) {
        char *buf = f == MG_CG_STAT ? g->stat_buf : g->small_buf;
        size_t size = f == MG_CG_STAT ? sizeof(g->stat_buf) : sizeof(g->small_buf);
        ssize_t n = mg_cgroup_read(&g->cg, f, buf, size);
        int r;

        if (n < 0)
                return (int) n;
        switch (f) {
        case MG_CG_STAT:
                r = mg_parse_memstat(buf, (size_t) n, ret);
                break;
        case MG_CG_PRESSURE:
        case MG_CG_IO_PRESSURE:
                r = mg_parse_psi(buf, (size_t) n, ret);
                break;
        case MG_CG_EVENTS_LOCAL:
                r = mg_parse_mem_events(buf, (size_t) n, ret);
                break;
        case MG_CG_EVENTS:
                r = mg_parse_populated(buf, (size_t) n, ret);
                break;
        case MG_CG_CPU_STAT:
                r = mg_parse_cpu_usage(buf, (size_t) n, ret);
                break;
        default:
                r = -EINVAL;
        }
        return r;
}

/* The counter rose since the last slow tick (which saw *last). */
static bool rose(uint64_t *last, uint64_t now) {
        bool r = *last != UINT64_MAX && now > *last;
        *last = now;
        return r;
}

/*
 * The slow path: memory.current, memory.stat and memory.events.local, three
 * preads.  While the actor loses its working set (and a window after), also
 * memory.pressure and io.pressure, which a stall needs; while it hits
 * memory.high, those and memory.high and cpu.stat, which a throttle needs.  Every
 * term of used comes from the one memory.stat read; memory.current is only
 * compared, never subtracted from.  Files this kernel lacks leave their part
 * of the report empty.
 */
static int read_slow(mg_guard *g, uint64_t current, bool all, struct mg_report *rep, struct mg_sample *x) {
        uint64_t hold;
        int r;

        *rep = (struct mg_report) {
                .time_usec = mg_guard_now(g),
                .limit_bytes = g->opt.limit_bytes,
                .margin_bytes = g->opt.margin_bytes,
                .current_bytes = current,
                .high_bytes = MG_UNLIMITED,
                .max_bytes = MG_UNLIMITED,
        };
        r = read_parsed(g, MG_CG_STAT, &rep->stat);
        if (r < 0)
                return read_failed(g, MG_CG_STAT, r);
        rep->used_bytes = mg_used_bytes(&rep->stat);
        *x = (struct mg_sample) {
                .time_usec = rep->time_usec,
                .current_bytes = current,
                .used_bytes = rep->used_bytes,
                .restores = rep->stat.workingset_restore_anon + rep->stat.workingset_restore_file,
                .high_bytes = MG_UNLIMITED,
        };
        /* Keep reading for a window after the last sign, so the window the
         * policy looks back over has the extra figures at both ends. */
        hold = x->time_usec + g->opt.stall_window_usec + 2 * g->opt.tick_usec;
        if (rose(&g->last_restores, x->restores))
                g->pressure_until_usec = hold;

        r = read_parsed(g, MG_CG_EVENTS_LOCAL, &rep->events);
        if (r >= 0) {
                x->have_events = true;
                x->limit_events = rep->events.high + rep->events.max;
                x->high_events = rep->events.high;
                if (rose(&g->last_high_events, rep->events.high))
                        g->pressure_until_usec = g->throttle_until_usec = hold;
        } else if (r != -EOPNOTSUPP)
                return read_failed(g, MG_CG_EVENTS_LOCAL, r);

        if (all || x->time_usec < g->pressure_until_usec) {
                r = read_parsed(g, MG_CG_PRESSURE, &rep->memory_pressure);
                if (r >= 0) {
                        x->have_pressure = true;
                        x->mem_some_usec = rep->memory_pressure.some.total_usec;
                } else if (r != -EOPNOTSUPP)
                        return read_failed(g, MG_CG_PRESSURE, r);
                r = read_parsed(g, MG_CG_IO_PRESSURE, &rep->io_pressure);
                if (r >= 0)
                        x->io_some_usec = rep->io_pressure.some.total_usec;
                else if (r != -EOPNOTSUPP)
                        return read_failed(g, MG_CG_IO_PRESSURE, r);
        }
        if (all || x->time_usec < g->throttle_until_usec) {
                /* Optional: without them there is no throttle diagnosis. */
                if (mg_cgroup_read_u64(&g->cg, MG_CG_HIGH, &x->high_bytes) >= 0 &&
                    read_parsed(g, MG_CG_CPU_STAT, &x->cpu_usec) >= 0)
                        x->have_throttle = true;
                rep->high_bytes = x->high_bytes;
        }
        g->last_error = 0;
        return 0;
}

/* A throttle is reported once per episode; it ends when the criteria stop
 * holding (the actor got under memory.high, or died). */
static void note_throttle(mg_guard *g) {
        struct mg_throttle_info t;
        bool now = mg_policy_throttled(&g->params, &g->policy, &t);

        if (now && !g->throttled) {
                g->throttle = t;
                glog(g, MG_LOG_WARNING,
                     "%s: throttled at memory.high: %" PRIu64 " over %" PRIu64 " bytes, ~%" PRIu64
                     " ms per 256 KiB allocated",
                     g->path, t.current_bytes - t.high_bytes, t.high_bytes, t.est_delay_usec / 1000);
                emit(g, &(struct mg_event) { .type = MG_EVENT_THROTTLED, .throttle = &g->throttle });
        }
        g->throttled = now;
}

static void note_kernel_oom(mg_guard *g, const struct mg_report *rep) {
        if (g->have_last_events && rep->events.oom_kill > g->last_events.oom_kill)
                emit(g, &(struct mg_event) { .type = MG_EVENT_KERNEL_OOM,
                                             .count = rep->events.oom_kill - g->last_events.oom_kill });
        g->last_events = rep->events;
        g->have_last_events = true;
}

void mg_guard_events_changed(mg_guard *g) {
        struct mg_report rep = {};

        if (g->state == MG_GUARD_GONE)
                return;
        if (read_parsed(g, MG_CG_EVENTS_LOCAL, &rep.events) >= 0)
                note_kernel_oom(g, &rep);
}

/* Reads the limit files for a report; optional, so errors leave "max". */
static void read_limits(mg_guard *g, struct mg_report *rep) {
        if (mg_cgroup_read_u64(&g->cg, MG_CG_HIGH, &rep->high_bytes) < 0)
                rep->high_bytes = MG_UNLIMITED;
        if (mg_cgroup_read_u64(&g->cg, MG_CG_MAX, &rep->max_bytes) < 0)
                rep->max_bytes = MG_UNLIMITED;
}

static int start_kill(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep) {
        enum mg_kill_method method;
        int r;

        r = mg_cgroup_kill(&g->cg, &method);
        if (r < 0) {
                glog(g, MG_LOG_ERR, "%s: kill failed: %s", g->path, strerror(-r));
                emit(g, &(struct mg_event) { .type = MG_EVENT_ERROR, .error = r, .what = "kill" });
                return r;
        }
        g->kill = (struct mg_kill_record) {
                .reason = reason,
                .method = method,
                .cgroup = g->path,
                .report = *rep,
                .detect_usec = g->detect_usec,
                .kill_usec = mg_guard_now(g),
        };
        read_limits(g, &g->kill.report);
        g->state = MG_GUARD_KILLING;
        glog(g, MG_LOG_WARNING, "%s: killed (%s): used %" PRIu64 " of limit %" PRIu64, g->path,
             mg_kill_reason_to_string(reason), rep->used_bytes, rep->limit_bytes);
        if (g->set)
                mg_set_watch(g->set, g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, true);
        return 1;
}

static void finish_kill(mg_guard *g, uint64_t now, bool timed_out) {
        g->kill.empty_usec = timed_out ? 0 : now;
        g->kill.empty_timed_out = timed_out;
        g->state = MG_GUARD_HOLDOFF;
        g->holdoff_until_usec = now + g->opt.post_kill_holdoff_usec;
        mg_policy_reset(&g->policy);
        g->detect_usec = 0;
        if (g->set)
                mg_set_watch(g->set, g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, false);
        emit(g, &(struct mg_event) { .type = MG_EVENT_KILL, .time_usec = now, .kill = &g->kill });
}

/* KILLING: wait for cgroup.events "populated 0", and kill again what a
 * fallback kill may have missed (a fork racing the pidfd loop). */
static int tick_killing(mg_guard *g, uint64_t now) {
        int populated, r;

        r = read_parsed(g, MG_CG_EVENTS, &populated);
        if (r < 0)
                return read_failed(g, MG_CG_EVENTS, r);
        if (!populated) {
                finish_kill(g, now, false);
                return 0;
        }
        if (now - g->kill.kill_usec >= g->opt.kill_wait_usec) {
                glog(g, MG_LOG_ERR, "%s: still populated %" PRIu64 " ms after the kill", g->path,
                     (now - g->kill.kill_usec) / 1000);
                finish_kill(g, now, true);
                return 0;
        }
        if (g->kill.method == MG_KILL_PIDFD)
                (void) mg_cgroup_kill(&g->cg, &(enum mg_kill_method) { 0 });
        return 0;
}

static int lend_restore(mg_guard *g) {
        int r = mg_cgroup_write(&g->cg, MG_CG_HIGH, g->lend_old_high);
        if (r == -ENODEV || r == -ENOENT) {
                g->lent = false;
                return read_failed(g, MG_CG_HIGH, r);
        }
        if (r < 0)
                return r;
        g->lent = false;
        /* Resume at once, with a window that starts now: what the lend let
         * the actor do is not evidence of a stall. */
        mg_policy_reset(&g->policy);
        g->detect_usec = 0;
        return 0;
}

int mg_guard_tick(mg_guard *g) {
        struct mg_report rep;
        struct mg_sample x;
        uint64_t now, current, stall_usec;
        unsigned signals;
        enum mg_verdict v;
        int r, acted = 0;

        if (!g)
                return -EINVAL;
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        now = mg_guard_now(g);

        if (g->lent && now >= g->lend.deadline_usec) {
                r = lend_restore(g);
                if (r < 0) {
                        glog(g, MG_LOG_ERR, "%s: restoring memory.high after the lend deadline: %s", g->path,
                             strerror(-r));
                        if (g->state == MG_GUARD_GONE)
                                return r;
                } else {
                        glog(g, MG_LOG_WARNING, "%s: lend deadline passed, memory.high restored to %s", g->path,
                             g->lend_old_high);
                        emit(g, &(struct mg_event) { .type = MG_EVENT_LEND_EXPIRED, .lend = &g->lend });
                        acted = 1;
                }
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

        r = read_current(g, &current);
        if (r < 0)
                return r;
        if (mg_policy_fast(&g->params, current)) {
                mg_policy_reset(&g->policy);
                g->detect_usec = 0;
                g->last_error = 0;
                set_slow(g, false);
                return acted;
        }
        set_slow(g, true);

        r = read_slow(g, current, false, &rep, &x);
        if (r < 0)
                return r;
        note_kernel_oom(g, &rep);
        v = mg_policy_decide(&g->params, &g->policy, &x, &stall_usec, &signals);
        note_throttle(g);
        if (g->lent || (v != MG_VERDICT_OVERSHOOT && v != MG_VERDICT_STALL))
                return acted; /* kills are paused during a lend */
        if (g->detect_usec == 0)
                g->detect_usec = now;

        /* Confirm just before acting with a fresh read of both files: an
         * overshoot must still be there, a stall must still be at the limit.
         * A stale memory.stat flushes on a read once enough updates are
         * pending, so two reads that agree are the kernel's current word. */
        r = read_current(g, &current);
        if (r < 0)
                return r;
        if (v == MG_VERDICT_OVERSHOOT) {
                struct mg_sample y;
                r = read_slow(g, current, false, &rep, &y);
                if (r < 0)
                        return r;
                if (!mg_policy_overshoot(&g->params, current, rep.used_bytes))
                        return acted;
        } else if (mg_policy_fast(&g->params, current)) {
                return acted;
        }
        rep.verdict = v;
        rep.stall_usec = stall_usec;
        rep.stall_signals = signals;
        r = start_kill(g, v == MG_VERDICT_OVERSHOOT ? MG_KILL_OVERSHOOT : MG_KILL_STALL, &rep);
        if (r < 0)
                return r;
        /* cgroup.kill is synchronous for signalling; the group may already be empty. */
        tick_killing(g, mg_guard_now(g));
        return 1;
}

int mg_guard_report(mg_guard *g, struct mg_report *ret) {
        struct mg_report rep;
        struct mg_sample x;
        struct mg_policy_state scratch;
        uint64_t current;
        int r;

        if (!g || !ret)
                return -EINVAL;
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        r = read_current(g, &current);
        if (r < 0)
                return r;
        r = read_slow(g, current, true, &rep, &x);
        if (r < 0)
                return r;
        read_limits(g, &rep);
        if (mg_policy_fast(&g->params, current)) {
                rep.verdict = MG_VERDICT_OK;
        } else {
                /* Decide on a copy: a report must not feed the window. */
                scratch = g->policy;
                rep.verdict = mg_policy_decide(&g->params, &scratch, &x, &rep.stall_usec, &rep.stall_signals);
        }
        *ret = rep;
        return 0;
}

int mg_guard_lend_begin(mg_guard *g, uint64_t extra_bytes, uint64_t deadline_usec) {
        char buf[32], newval[32];
        uint64_t old, now;
        ssize_t n;
        int r;

        if (!g)
                return -EINVAL;
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        if (g->lent)
                return -EBUSY;
        n = mg_cgroup_read(&g->cg, MG_CG_HIGH, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        r = mg_parse_u64_value(buf, (size_t) n, &old);
        if (r < 0)
                return r;
        if (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';

        if (extra_bytes == MG_UNLIMITED || old == MG_UNLIMITED || old > MG_UNLIMITED - 1 - extra_bytes)
                snprintf(newval, sizeof(newval), "max");
        else
                snprintf(newval, sizeof(newval), "%" PRIu64, old + extra_bytes);
        r = mg_cgroup_write(&g->cg, MG_CG_HIGH, newval);
        if (r < 0)
                return r;

        now = mg_guard_now(g);
        memcpy(g->lend_old_high, buf, (size_t) n + 1);
        g->lend = (struct mg_lend_info) {
                .old_high_bytes = old,
                .new_high_bytes = strcmp(newval, "max") == 0 ? MG_UNLIMITED : old + extra_bytes,
                .deadline_usec = now + (deadline_usec ? deadline_usec : g->opt.lend_deadline_usec),
        };
        g->lent = true;
        glog(g, MG_LOG_INFO, "%s: lent memory.high %s -> %s", g->path, g->lend_old_high, newval);
        emit(g, &(struct mg_event) { .type = MG_EVENT_LEND_BEGIN, .time_usec = now, .lend = &g->lend });
        return 0;
}

int mg_guard_lend_end(mg_guard *g) {
        int r;

        if (!g)
                return -EINVAL;
        if (!g->lent)
                return -ENOENT;
        r = lend_restore(g);
        if (r < 0)
                return r;
        glog(g, MG_LOG_INFO, "%s: memory.high restored to %s", g->path, g->lend_old_high);
        emit(g, &(struct mg_event) { .type = MG_EVENT_LEND_END, .lend = &g->lend });
        if (g->set)
                mg_set_reschedule(g->set, g, mg_guard_now(g));
        return 0;
}
