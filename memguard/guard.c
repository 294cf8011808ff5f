/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "kill.h"
#include "parse.h"
#include "sized.h"
#include "tune.h"

static int read_parsed(mg_guard *g, enum mg_cgfile f, void *ret);
static int read_u64(mg_guard *g, enum mg_cgfile f, uint64_t *ret);
static void lend_adopt(mg_guard *g);
static void read_limits_now(mg_guard *g);

uint64_t mg_boottime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static uint64_t default_clock(void *userdata) {
        (void) userdata;
        return mg_mono_usec();
}

uint64_t mg_guard_now(const mg_guard *g) {
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

__attribute__((format(printf, 3, 4))) static void glog(const mg_guard *g, int level, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        if (!g->opt.log || g->detached)
                return; /* detached: the caller may have freed what its callbacks use */
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        g->opt.log(level, msg, g->opt.log_userdata);
}

static void emit(mg_guard *g, struct mg_event *ev) {
        if (g->detached)
                return;
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
        /* before anything can fail: mg_guard_free() closes them */
        g->trigger_fd[0] = g->trigger_fd[1] = -1;
        atomic_init(&g->restore.state, MG_RESTORE_IDLE);
        r = mg_options_resolve(o, &g->opt);
        if (r < 0)
                goto fail;
        g->path = strdup(path);
        g->stat_buf = g->own_stat_buf = malloc(MG_STAT_BUF_SIZE);
        if (!g->path || !g->stat_buf) {
                r = -ENOMEM;
                goto fail;
        }
        r = mg_cgroup_open(&g->cg, path, cg_flags, io);
        if (r < 0)
                goto fail;
        g->params = (struct mg_policy_params) {
                .limit_bytes = g->opt.limit_bytes,
                .margin_bytes = g->opt.margin_bytes,
                .line_bytes = g->opt.limit_bytes - g->opt.margin_bytes,
                .stall_window_usec = g->opt.stall_window_usec,
                .stall_pressure_permyriad = g->opt.stall_pressure_permyriad,
                .refault_window_usec = g->opt.refault_window_usec,
                .refault_mapped_window_usec = g->opt.refault_mapped_window_usec,
        };
        g->page_bytes = (uint32_t) sysconf(_SC_PAGESIZE);
        g->clock = default_clock;
        read_limits_now(g);
        g->state = MG_GUARD_WATCHING;
        /* The baseline for kernel OOM attribution: kills before the guard
         * existed are not news. */
        if (read_parsed(g, MG_CG_EVENTS_LOCAL, &g->last_events) >= 0)
                g->have_last_events = true;
        /* The keys this kernel prints in memory.stat, so that a read cut
         * short at a line boundary is told from a kernel without them. */
        (void) read_parsed(g, MG_CG_STAT, &(struct mg_memstat) {});
        g->last_high_events = UINT64_MAX; /* unknown until the first slow tick */
        lend_adopt(g);
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
                int fd = mg_cgroup_open_file(&g->cg, files[i], O_RDWR | O_NONBLOCK);
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

static int restore_queue(mg_guard *g, enum mg_event_type why);
static bool restore_busy(const mg_guard *g);

void mg_guard_release_lend(mg_guard *g, bool taken_over_too) {
        int r;

        if (!g->lent || (g->lend_adopted && !taken_over_too))
                return;
        if (restore_busy(g))
                return; /* under way: it ends as it is */
        /* A set's guard: the worker restores, and the job keeps the guard
         * until it is done (mg_set_remove() frees it then). */
        r = g->set ? restore_queue(g, MG_EVENT_LEND_END) : mg_guard_lend_end(g, g->lend.id);
        if (r < 0 && g->lent) {
                glog(g, MG_LOG_ERR, "%s: restoring memory.high to %s as the guard goes: %s%s", g->path,
                     g->lend_old_high, strerror(-r),
                     g->lend_recorded || g->lend_adopted ? " (the lend record stays, for mg_guard_recover())" : "");
                /* Never retried in place: on the set's thread that would be
                 * the blocking write this avoids. */
                if (g->set)
                        mg_guard_abandon_lend(g);
        }
}

mg_guard *mg_guard_free(mg_guard *g) {
        if (!g)
                return NULL;
        if (g->holds > 0) {
                /* A snapshot write on another thread still uses it: the last
                 * mg_guard_release() frees it.  The lend is that write's to
                 * end. */
                g->detached = true;
                return NULL;
        }
        mg_guard_release_lend(g, false);
        triggers_close(g);
        mg_cgroup_close(&g->cg);
        free(g->path);
        free(g->own_stat_buf);
        free(g);
        return NULL;
}

void mg_guard_hold(mg_guard *g) {
        g->holds++;
}

void mg_guard_release(mg_guard *g) {
        if (--g->holds == 0 && g->detached)
                mg_guard_free(g);
}

uint64_t mg_guard_get_tick_usec(const mg_guard *g) {
        return g->opt.tick_usec;
}

int mg_guard_get_options(const mg_guard *g, struct mg_guard_options *ret) {
        if (!g || !ret)
                return -EINVAL;
        /* ret may be an older caller's, shorter struct */
        return mg_sized_copy_out(ret, &g->opt, sizeof(g->opt));
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

uint64_t mg_guard_get_lend_id(const mg_guard *g) {
        return g && g->lent ? g->lend.id : 0;
}

/* A removed cgroup makes every open file return ENODEV (kernfs deactivates
 * the node); ENOENT is taken the same way.  But a live cgroup can take one
 * file away too: writing 0 to cgroup.pressure (6.1+) hides the pressure
 * files (kernfs_show(), and their open fds read ENODEV), and a parent that
 * drops +memory from cgroup.subtree_control removes every memory.* file.
 * So the guard ends only when the cgroup itself says so: cgroup_removed(). */
static bool gone_errno(int err) {
        return err == -ENODEV || err == -ENOENT;
}

/* cgroup.events is a core file that neither of those can hide. */
static bool cgroup_removed(mg_guard *g) {
        char buf[64];
        ssize_t n = mg_cgroup_read(&g->cg, MG_CG_EVENTS, buf, sizeof(buf));
        return n < 0 && gone_errno((int) n);
}

static int cgroup_gone(mg_guard *g, const char *what) {
        if (g->state != MG_GUARD_GONE) {
                g->state = MG_GUARD_GONE;
                g->lent = false; /* nothing left to restore */
                g->lend_ending = false;
                glog(g, MG_LOG_INFO, "%s: cgroup is gone", g->path);
                emit(g, &(struct mg_event) { .type = MG_EVENT_GONE, .what = what });
        }
        return -ENODEV;
}

/* An error is reported once per streak of it on the same file or action
 * (slot: enum mg_cgfile or MG_ERR_*), never acted on.  The log says
 * "<verb> <what>: <error>", or "<what> failed: <error>" without a verb.
 * Returns err. */
static int report_error(mg_guard *g, unsigned slot, int level, const char *verb, const char *what, int err) {
        if (g->error_streak[slot] != err) {
                g->error_streak[slot] = err;
                g->erring |= 1u << slot;
                if (verb)
                        glog(g, level, "%s: %s %s: %s", g->path, verb, what, strerror(-err));
                else
                        glog(g, level, "%s: %s failed: %s", g->path, what, strerror(-err));
                emit(g, &(struct mg_event) { .type = MG_EVENT_ERROR, .error = err, .what = what });
        }
        return err;
}

static void clear_error(mg_guard *g, unsigned slot) {
        if (g->erring & (1u << slot)) {
                g->erring &= ~(1u << slot);
                g->error_streak[slot] = 0;
        }
}

/* A read or parse error of a file the decision needs: reported, and the
 * window starts over (a gap in it says nothing). */
static int read_failed(mg_guard *g, enum mg_cgfile f, int err) {
        if (gone_errno(err) && cgroup_removed(g))
                return cgroup_gone(g, mg_cgfile_name(f));
        report_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), err);
        mg_policy_reset(&g->policy);
        return err;
}

static int read_u64(mg_guard *g, enum mg_cgfile f, uint64_t *ret) {
        int r = mg_cgroup_read_u64(&g->cg, f, ret);
        if (r >= 0)
                clear_error(g, f);
        return r;
}

/* Reads memory.current; returns 0 or the (reported) error. */
static int read_current(mg_guard *g, uint64_t *ret) {
        int r = read_u64(g, MG_CG_CURRENT, ret);
        return r < 0 ? read_failed(g, MG_CG_CURRENT, r) : 0;
}

/* The kernel prints the same keys every time; a read with fewer than an
 * earlier one had was cut short at a line boundary (it still parses: the
 * lost lines would read as 0, and counters that drop and come back look
 * like working-set loss or new OOM kills). */
static int check_keys(uint64_t *known, uint64_t keys) {
        if ((keys & *known) != *known)
                return -EBADMSG;
        *known |= keys;
        return 0;
}

/* memory.stat: on the tick only the lines the decision needs (full false,
 * see mg_parse_memstat_tick), in full for a report, a kill record, or when
 * the layout learnt from the last full parse does not fit. */
static int read_stat(mg_guard *g, bool full, struct mg_memstat *ret) {
        ssize_t n = mg_cgroup_read(&g->cg, MG_CG_STAT, g->stat_buf, MG_STAT_BUF_SIZE);
        struct mg_memstat_layout layout;
        struct mg_memstat st;
        uint64_t keys;
        int r;

        if (n < 0)
                return (int) n;
        r = full ? -ESTALE : mg_parse_memstat_tick(g->stat_buf, (size_t) n, &g->stat_layout, &st);
        if (r == -ESTALE) {
                r = mg_parse_memstat_keys(g->stat_buf, (size_t) n, &st, &keys, &layout);
                if (r >= 0)
                        r = check_keys(&g->stat_keys, keys);
                if (r >= 0)
                        g->stat_layout = layout; /* only from a read with every key */
        }
        if (r < 0)
                return r;
        clear_error(g, MG_CG_STAT);
        *ret = st;
        return 0;
}

static int read_parsed(mg_guard *g, enum mg_cgfile f, void *ret) {
        const char *buf = g->small_buf;
        struct mg_mem_events ev;
        uint64_t keys;
        ssize_t n;
        int r;

        if (f == MG_CG_STAT)
                return read_stat(g, true, ret); /* its own, larger buffer */
        n = mg_cgroup_read(&g->cg, f, g->small_buf, sizeof(g->small_buf));
        if (n < 0)
                return (int) n;
        switch (f) {
        case MG_CG_PRESSURE:
        case MG_CG_IO_PRESSURE:
                r = mg_parse_psi(buf, (size_t) n, ret);
                break;
        case MG_CG_EVENTS_LOCAL:
                r = mg_parse_mem_events_keys(buf, (size_t) n, &ev, &keys);
                if (r >= 0)
                        r = check_keys(&g->events_keys, keys);
                if (r >= 0)
                        *(struct mg_mem_events *) ret = ev;
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
        if (r >= 0)
                clear_error(g, f);
        return r;
}

/* A pressure file that cannot be read.  Hidden by cgroup.pressure 0 while
 * the cgroup lives: reported once, and the tick goes on without pressure
 * (overshoots are still judged; the stall rules need pressure and wait for
 * it to come back; the PSI triggers go, or their fds would poll as ready for
 * good).  Any other error is read_failed()'s.  Returns 0 to go on. */
static int pressure_failed(mg_guard *g, enum mg_cgfile f, int err) {
        if (!gone_errno(err) || cgroup_removed(g))
                return read_failed(g, f, err);
        report_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), err);
        triggers_close(g);
        return 0;
}

/* The fast-path line follows the lower of the kernel limits. */
static void set_kernel_limits(mg_guard *g, uint64_t high, uint64_t max) {
        g->max_bytes = max;
        g->params.line_bytes = mg_policy_line(g->opt.limit_bytes, g->opt.margin_bytes, high < max ? high : max);
}

/* memory.high and memory.max.  Optional: a file that cannot be read
 * (absent in the root cgroup, an error) counts as "max". */
static void read_kernel_limits(mg_guard *g, uint64_t *ret_high, uint64_t *ret_max) {
        if (read_u64(g, MG_CG_HIGH, ret_high) < 0)
                *ret_high = MG_UNLIMITED;
        if (read_u64(g, MG_CG_MAX, ret_max) < 0)
                *ret_max = MG_UNLIMITED;
}

/* The same for the line: where neither can be read, the guard's own limit
 * draws it, as before these files were read. */
static void read_limits_now(mg_guard *g) {
        uint64_t high, max;

        read_kernel_limits(g, &high, &max);
        set_kernel_limits(g, high, max);
        g->limits_due_usec = mg_guard_now(g) + MG_LIMITS_REREAD_USEC;
}

/* The counter rose since the last slow tick (which saw *last). */
static bool rose(uint64_t *last, uint64_t now) {
        bool r = *last != UINT64_MAX && now > *last;
        *last = now;
        return r;
}

/*
 * The slow path: memory.current, memory.stat, memory.events.local,
 * memory.pressure and io.pressure, five preads; while it hits memory.high
 * (and a window after), also memory.high and cpu.stat, which only a
 * throttle needs.  Every term of used comes from the one memory.stat read;
 * memory.current is only compared, never subtracted from.  Files this
 * kernel lacks leave their part of the report empty.
 */
static int read_slow(mg_guard *g, uint64_t current, bool all, bool full_stat, struct mg_report *rep,
                     struct mg_sample *x) {
        uint64_t hold;
        int r;

        *rep = (struct mg_report) {
                .size = sizeof(*rep),
                .time_usec = mg_guard_now(g),
                .limit_bytes = g->opt.limit_bytes,
                .margin_bytes = g->opt.margin_bytes,
                .current_bytes = current,
                .high_bytes = MG_UNLIMITED,
                .max_bytes = MG_UNLIMITED,
        };
        r = read_stat(g, full_stat, &rep->stat);
        if (r < 0)
                return read_failed(g, MG_CG_STAT, r);
        rep->used_bytes = mg_used_bytes(&rep->stat);
        *x = (struct mg_sample) {
                .time_usec = rep->time_usec,
                .current_bytes = current,
                .used_bytes = rep->used_bytes,
                .restores = rep->stat.workingset_restore_anon + rep->stat.workingset_restore_file,
                .refault_bytes = rep->stat.workingset_refault_file * g->page_bytes,
                .file_bytes = rep->stat.file,
                .mapped_bytes = rep->stat.file_mapped,
                .high_bytes = MG_UNLIMITED,
        };
        /* Keep reading for a window after the last sign, so the window the
         * policy looks back over has the extra figures at both ends. */
        hold = x->time_usec + g->opt.stall_window_usec + 2 * g->opt.tick_usec;

        r = read_parsed(g, MG_CG_EVENTS_LOCAL, &rep->events);
        if (r >= 0) {
                x->have_events = true;
                x->limit_events = rep->events.high + rep->events.max;
                x->high_events = rep->events.high;
                if (rose(&g->last_high_events, rep->events.high))
                        g->throttle_until_usec = hold;
        } else if (r != -EOPNOTSUPP)
                return read_failed(g, MG_CG_EVENTS_LOCAL, r);

        /* Both stall rules look back over the pressure totals of every
         * sample in their window, and the onset of a stall is not known in
         * advance: read on every slow tick. */
        r = read_parsed(g, MG_CG_PRESSURE, &rep->memory_pressure);
        if (r >= 0) {
                x->have_pressure = true;
                x->mem_some_usec = rep->memory_pressure.some.total_usec;
        } else if (r != -EOPNOTSUPP && (r = pressure_failed(g, MG_CG_PRESSURE, r)) < 0) {
                return r;
        }
        r = read_parsed(g, MG_CG_IO_PRESSURE, &rep->io_pressure);
        if (r >= 0)
                x->io_some_usec = rep->io_pressure.some.total_usec;
        else if (r != -EOPNOTSUPP && (r = pressure_failed(g, MG_CG_IO_PRESSURE, r)) < 0)
                return r;
        if (all || x->time_usec < g->throttle_until_usec) {
                /* Optional: without them there is no throttle diagnosis.  An
                 * error is reported all the same, but the window goes on. */
                enum mg_cgfile f = MG_CG_HIGH;
                r = read_u64(g, f, &x->high_bytes);
                if (r >= 0)
                        r = read_parsed(g, f = MG_CG_CPU_STAT, &x->cpu_usec);
                if (r >= 0) {
                        x->have_throttle = true;
                        set_kernel_limits(g, x->high_bytes, g->max_bytes);
                } else if (gone_errno(r))
                        return read_failed(g, f, r);
                else if (r != -EOPNOTSUPP)
                        report_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), r);
                rep->high_bytes = x->high_bytes;
        }
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
                read_limits_now(g);
                if (g->set)
                        mg_set_reschedule(g->set, g, mg_guard_now(g));
        }
        note_kernel_oom(g, &rep);
}

/* Reads the limit files for a report; optional, so errors leave "max". */
static void read_limits(mg_guard *g, struct mg_report *rep) {
        read_kernel_limits(g, &rep->high_bytes, &rep->max_bytes);
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
        if (gone_errno(r))
                return cgroup_gone(g, "cgroup.events");
        return report_error(g, MG_CG_EVENTS, MG_LOG_WARNING, "reading", "cgroup.events", r);
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
        g->empty_report = *rep;
        read_limits(g, &g->empty_report);
        glog(g, MG_LOG_WARNING,
             "%s: used %" PRIu64 " of limit %" PRIu64 " bytes held by no process (shmem %" PRIu64 ", kernel %" PRIu64
             ", anon %" PRIu64 ", sock %" PRIu64 "): not killed; tmpfs files and memfds charged to it, or its slab "
             "until rmdir, keep it",
             g->path, rep->used_bytes, rep->limit_bytes, st->shmem, st->kernel, st->anon, st->sock);
        emit(g, &(struct mg_event) { .type = MG_EVENT_EMPTY_OVER_LIMIT, .report = &g->empty_report });
}

static void end_empty(mg_guard *g, const char *why) {
        if (!g->empty_over)
                return;
        g->empty_over = false;
        glog(g, MG_LOG_INFO, "%s: no longer over the limit with no process: %s", g->path, why);
}

/* cgroup.procs, parsed: the members now.  Returns 0, -ENODEV once the
 * cgroup is gone, or another (reported) error. */
static int read_members(mg_guard *g, struct mg_procs *ret, bool *ret_cut) {
        char buf[MG_PROCS_BUF_SIZE];
        int r = mg_cgroup_read_procs(&g->cg, buf, sizeof(buf), ret_cut);

        if (r >= 0)
                r = mg_parse_procs(buf, strlen(buf), ret);
        if (r >= 0) {
                clear_error(g, MG_CG_PROCS);
                return 0;
        }
        if (gone_errno(r))
                return cgroup_gone(g, "cgroup.procs");
        return report_error(g, MG_CG_PROCS, MG_LOG_WARNING, "reading", "cgroup.procs", r);
}

static void end_unkillable(mg_guard *g, const char *why) {
        if (!g->unkillable)
                return;
        g->unkillable = false;
        glog(g, MG_LOG_INFO, "%s: the members that outlived the kill: %s, back to the usual rules", g->path, why);
}

/* Does cgroup.procs list the members that outlived the kill, and only
 * them?  Returns 1 or 0, or a negative errno. */
static int same_members(mg_guard *g) {
        struct mg_procs p;
        bool cut;
        int r = read_members(g, &p, &cut);

        if (r < 0)
                return r;
        return p.n == g->unkillable_procs.n && p.digest == g->unkillable_procs.digest && cut == g->unkillable_cut;
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
 * Fills g->unkillable_info; returns true if there is something to report.
 */
static bool find_unkillable(mg_guard *g, uint64_t now) {
        struct mg_unkillable_info *u = &g->unkillable_info;
        struct mg_procs p;
        bool cut;

        if (read_members(g, &p, &cut) < 0 || p.n == 0)
                return false; /* reported; or it emptied since: the usual rules */
        *u = (struct mg_unkillable_info) {
                .kill_usec = g->kill.kill_usec,
                .wait_usec = now - g->kill.kill_usec,
                .n_members = p.n,
                .more_members = cut,
                .n_pids = p.n < MG_UNKILLABLE_MAX ? p.n : MG_UNKILLABLE_MAX,
        };
        for (uint32_t i = 0; i < u->n_pids; i++) {
                u->pids[i] = p.pid[i];
                u->states[i] = mg_proc_state(p.pid[i]);
        }
        g->unkillable = true;
        g->unkillable_procs = p;
        g->unkillable_cut = cut;
        return true;
}

static void report_unkillable(mg_guard *g, uint64_t now) {
        const struct mg_unkillable_info *u = &g->unkillable_info;
        char list[MG_UNKILLABLE_MAX * 16] = ""; /* "2147483647 (D) " is 15 */
        size_t at = 0;

        for (uint32_t i = 0; i < u->n_pids; i++)
                at += (size_t) snprintf(list + at, sizeof(list) - at, "%s%" PRId32 " (%c)", i ? " " : "", u->pids[i],
                                        u->states[i]);
        glog(g, MG_LOG_WARNING,
             "%s: unkillable: %" PRIu32 " member%s still there %" PRIu64 " ms after SIGKILL: %s%s; not killed again "
             "while the same members are there",
             g->path, u->n_members, u->n_members == 1 ? "" : "s", u->wait_usec / 1000, list,
             u->n_members > u->n_pids || u->more_members ? " ..." : "");
        emit(g, &(struct mg_event) { .type = MG_EVENT_UNKILLABLE, .time_usec = now, .kill = &g->kill,
                                     .unkillable = u });
}

static int start_kill(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep) {
        enum mg_kill_method method;
        int r;

        r = mg_cgroup_kill(&g->cg, &method);
        if (r < 0) {
                if (gone_errno(r) && cgroup_removed(g))
                        return cgroup_gone(g, "kill");
                /* Once per streak: the verdict holds every tick until it works. */
                return report_error(g, MG_ERR_KILL, MG_LOG_ERR, NULL, "kill", r);
        }
        clear_error(g, MG_ERR_KILL);
        g->kill = (struct mg_kill_record) {
                .size = sizeof(g->kill),
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
        g->holdoff_until_usec = mg_usec_add(now, g->opt.post_kill_holdoff_usec);
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
        if (r < 0) {
                r = read_failed(g, MG_CG_EVENTS, r);
                if (g->state == MG_GUARD_GONE)
                        return r;
                /* Whether it emptied cannot be told: give up waiting at the
                 * usual time instead of never delivering the record. */
                if (now - g->kill.kill_usec >= g->opt.kill_wait_usec) {
                        glog(g, MG_LOG_ERR, "%s: cgroup.events unreadable %" PRIu64 " ms after the kill", g->path,
                             (now - g->kill.kill_usec) / 1000);
                        finish_kill(g, now, true);
                }
                return r;
        }
        if (!populated) {
                finish_kill(g, now, false);
                return 0;
        }
        if (now - g->kill.kill_usec >= g->opt.kill_wait_usec) {
                struct mg_set *set = g->set;
                bool unkillable;

                glog(g, MG_LOG_ERR, "%s: still populated %" PRIu64 " ms after the kill", g->path,
                     (now - g->kill.kill_usec) / 1000);
                /* Who is left, read before the record goes out (its
                 * callback may remove the guard); reported right after it:
                 * the record says what was killed and why, the report
                 * what did not die. */
                unkillable = find_unkillable(g, now);
                if (g->state == MG_GUARD_GONE)
                        return -ENODEV;
                finish_kill(g, now, true);
                if (unkillable && g->set == set)
                        report_unkillable(g, now);
                return 0;
        }
        if (g->kill.method == MG_KILL_PIDFD)
                (void) mg_cgroup_kill(&g->cg, &(enum mg_kill_method) { 0 });
        return 0;
}

/* The lend is over: its record goes.  A record that cannot be removed is
 * harmless (restoring it again writes the value memory.high now has). */
static void lend_record_remove(mg_guard *g) {
        if (g->lend_recorded || g->lend_adopted) {
                int r = mg_cgroup_remove_xattr(&g->cg, MG_LEND_XATTR);
                if (r < 0 && r != -ENODATA)
                        glog(g, MG_LOG_WARNING, "%s: removing the lend record: %s", g->path, strerror(-r));
        }
        g->lend_recorded = g->lend_adopted = false;
}

/* The lend is over, whether memory.high went back or not: kills resume at
 * once, with a window that starts now (what the lend let the actor do is
 * not evidence of a stall), and the line follows memory.high as it is. */
static void lend_close(mg_guard *g, uint64_t high) {
        g->lent = false;
        g->lend_ending = false;
        lend_record_remove(g);
        set_kernel_limits(g, high, g->max_bytes);
        mg_policy_reset(&g->policy);
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
        j->own_fd = own_fd;
        memcpy(j->text, g->lend_old_high, sizeof(j->text));
        j->lend_high_bytes = high_as_kept(g, g->lend.new_high_bytes);
        j->old_high_bytes = g->lend.old_high_bytes;
        j->page_bytes = g->page_bytes;
        j->any_high = g->lend_high_unknown;
        j->no_raise = g->lend_adopted;
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
 * memory.high written back or left as found (g->lend says which, for the
 * event), or stays open on an error.  Returns 1 if restored, 0 if the lend
 * ended with memory.high left as found, or a negative errno (retried).
 */
static int restore_outcome(mg_guard *g, const struct mg_restore *j) {
        char found[32];

        if (j->r < 0)
                return gone_errno(j->r) ? read_failed(g, MG_CG_HIGH, j->r) : j->r;
        clear_error(g, MG_CG_HIGH); /* it was read */
        g->lend.found_high_bytes = j->found_high_bytes;
        g->lend.restored = j->outcome == MG_RESTORE_WRITTEN;
        switch (j->outcome) {
        case MG_RESTORE_CHANGED:
                if (j->found_high_bytes == MG_UNLIMITED)
                        snprintf(found, sizeof(found), "max");
                else
                        snprintf(found, sizeof(found), "%" PRIu64, j->found_high_bytes);
                glog(g, MG_LOG_WARNING,
                     "%s: memory.high changed during the lend (%s, not what the lend wrote): left as found, "
                     "not restored to %s; the lend is over",
                     g->path, found, g->lend_old_high);
                lend_close(g, j->found_high_bytes);
                return 0;
        case MG_RESTORE_NOT_RAISED:
                glog(g, MG_LOG_WARNING, "%s: the adopted lend record would raise memory.high to %s: dropped",
                     g->path, g->lend_old_high);
                lend_close(g, j->found_high_bytes);
                return 0;
        case MG_RESTORE_WRITTEN:
        default:
                lend_close(g, g->lend.old_high_bytes);
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
                        report_error(g, MG_ERR_WRITE_HIGH, MG_LOG_ERR,
                                     why == MG_EVENT_LEND_EXPIRED ? "restoring after the lend deadline"
                                                                  : "restoring at the end of the lend",
                                     "memory.high", r);
                return r;
        }
        clear_error(g, MG_ERR_WRITE_HIGH);
        if (why == MG_EVENT_LEND_EXPIRED) {
                if (r > 0)
                        glog(g, MG_LOG_WARNING, "%s: lend deadline passed, memory.high restored to %s", g->path,
                             g->lend_old_high);
                else
                        glog(g, MG_LOG_WARNING, "%s: lend deadline passed, memory.high left as found", g->path);
        } else if (r > 0) {
                glog(g, MG_LOG_INFO, "%s: memory.high restored to %s", g->path, g->lend_old_high);
        }
        emit(g, &(struct mg_event) { .type = why, .lend = &g->lend });
        if (why == MG_EVENT_LEND_END && g->set)
                mg_set_reschedule(g->set, g, mg_guard_now(g));
        return r;
}

static bool restore_busy(const mg_guard *g) {
        return atomic_load(&g->restore.state) != MG_RESTORE_IDLE;
}

/* Fills g->restore for the end of the open lend, through a memory.high fd
 * of its own: the blocking write goes through it while the guard's thread
 * goes on reading memory.high through its own fd (kernfs would make those
 * reads wait for the write: mg_cgroup_reopen()).  Returns 0, -ENODEV once
 * the cgroup is gone, or the errno of the open. */
static int restore_prepare(mg_guard *g, enum mg_event_type why, enum mg_restore_state state) {
        int fd = mg_cgroup_reopen(&g->cg, MG_CG_HIGH);

        if (fd < 0)
                return gone_errno(fd) && cgroup_removed(g) ? cgroup_gone(g, "memory.high") : fd;
        restore_fill(g, &g->restore, fd, true);
        g->restore.why = why;
        g->restore.guard = g;
        g->restore.next = NULL;
        atomic_store(&g->restore.state, state);
        return 0;
}

/* Hands the end of the open lend to the set's restore worker; the job
 * holds the guard until mg_set_process() finishes it.  Returns 0, or
 * restore_prepare()'s errno (nothing queued, the lend stays open). */
static int restore_queue(mg_guard *g, enum mg_event_type why) {
        int r = restore_prepare(g, why, MG_RESTORE_QUEUED);

        if (r < 0)
                return r;
        mg_guard_hold(g);
        mg_set_queue_restore(g->set, g);
        return 0;
}

/* The job's fd goes, and with it the job: its results have been read. */
static void restore_clear(mg_guard *g) {
        struct mg_restore *j = &g->restore;

        if (j->own_fd && j->cg.fd[MG_CG_HIGH] >= 0)
                close(j->cg.fd[MG_CG_HIGH]);
        j->cg.fd[MG_CG_HIGH] = -1;
        j->own_fd = false;
        atomic_store(&j->state, MG_RESTORE_IDLE);
}

/* A job that has run (on the worker, or on a caller's thread): its
 * outcome on the guard (restore_outcome()), then the job is idle again,
 * before anything is told (a callback may end or begin a lend).  *ret_open
 * says whether there was a lend to end: the cgroup may have gone while the
 * job ran, and the lend with it. */
static int restore_end(mg_guard *g, bool *ret_open) {
        bool open = g->state != MG_GUARD_GONE && g->lent;
        int r = open ? restore_outcome(g, &g->restore) : 0;

        restore_clear(g);
        *ret_open = open && g->state != MG_GUARD_GONE;
        return r;
}

int mg_guard_restore_done(mg_guard *g) {
        enum mg_event_type why = g->restore.why;
        bool open;
        int r = restore_end(g, &open);

        if (!open)
                return 0;
        r = lend_told(g, why, r, true);
        return r < 0 ? r : 1;
}

void mg_guard_abandon_lend(mg_guard *g) {
        g->lent = false;
        g->lend_ending = false;
}

void mg_guard_unwatch(mg_guard *g) {
        triggers_close(g);
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

        /* The end of the lend, past its deadline (UINT64_MAX: a lend
         * without one, or a saturated one), or asked for and not done yet
         * (a write that failed).  Not while a restore is under way: the
         * lend counts as open until it is done, kills paused, and the tick
         * goes on reading. */
        if (g->lent && !restore_busy(g) &&
            (g->lend_ending || (g->lend.deadline_usec != UINT64_MAX && now >= g->lend.deadline_usec))) {
                enum mg_event_type why = g->lend_ending ? MG_EVENT_LEND_END : MG_EVENT_LEND_EXPIRED;
                if (g->set) {
                        /* The write may reclaim for seconds: the set's
                         * worker makes it, and mg_set_process() tells. */
                        r = restore_queue(g, why);
                } else {
                        r = lend_restore(g);
                        if (r >= 0)
                                acted = 1;
                }
                if (r < 0 && g->state == MG_GUARD_GONE)
                        return r;
                if (r < 0 || !g->set)
                        (void) lend_told(g, why, r, true);
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

        if (now >= g->limits_due_usec)
                read_limits_now(g);
        r = read_current(g, &current);
        if (r < 0)
                return r;
        if (mg_policy_fast(&g->params, current)) {
                /* Below the line.  A thrashing actor's memory.current dips
                 * under it now and then (6.12 reclaims in batches: 40 of
                 * 48 MiB for a moment in thrash-sequential), and a window
                 * cleared by every dip would never fill: the windows go only
                 * once it has stayed below for half a stall window. */
                if (!g->below_since_usec)
                        g->below_since_usec = now;
                if (now - g->below_since_usec >= g->opt.stall_window_usec / 2) {
                        mg_policy_reset(&g->policy);
                        g->detect_usec = 0;
                }
                if (g->slow)
                        /* a kernel OOM kill since the last slow tick ended
                         * it there: the fast path does not read the events */
                        mg_guard_events_changed(g);
                set_slow(g, false);
                end_empty(g, "used is back below the limit");
                return acted;
        }
        set_slow(g, true);
        g->below_since_usec = 0;

        r = read_slow(g, current, false, false, &rep, &x);
        if (r < 0)
                return r;
        note_kernel_oom(g, &rep);
        if (rep.used_bytes <= g->opt.limit_bytes)
                end_empty(g, "used is back at the limit");
        v = mg_policy_decide(&g->params, &g->policy, &x, &stall_usec, &signals);
        note_throttle(g);
        if (g->lent || (v != MG_VERDICT_OVERSHOOT && v != MG_VERDICT_STALL))
                return acted; /* kills are paused during a lend */
        if (g->empty_over || g->unkillable) {
                r = nothing_new(g);
                if (r != 0)
                        return r < 0 ? r : acted;
        }
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
                r = read_slow(g, current, false, true, &rep, &y);
                if (r < 0)
                        return r;
                if (!mg_policy_overshoot(&g->params, current, rep.used_bytes))
                        return acted;
        } else if (mg_policy_fast(&g->params, current)) {
                return acted;
        } else {
                /* The tick parsed only what the decision needs; the kill
                 * record shows memory.stat whole. */
                r = read_stat(g, true, &rep.stat);
                if (r < 0)
                        return read_failed(g, MG_CG_STAT, r);
                rep.current_bytes = current;
                rep.used_bytes = mg_used_bytes(&rep.stat);
        }
        rep.verdict = v;
        rep.stall_usec = stall_usec;
        rep.stall_signals = signals;
        rep.stall_refault_bytes = g->policy.stall_refault_bytes;
        /* Last, just before acting: an empty cgroup is never killed.  An
         * overshoot there is reported (once per episode); a stall needs
         * tasks to stall, and what is left of its window is not acted on.
         * A process that appears later is detected anew. */
        r = read_populated(g);
        if (g->state == MG_GUARD_GONE)
                return r;
        if (r == 0) {
                g->detect_usec = 0;
                if (v == MG_VERDICT_OVERSHOOT)
                        note_empty(g, &rep);
                return acted;
        }
        r = start_kill(g, v == MG_VERDICT_OVERSHOOT ? MG_KILL_OVERSHOOT : MG_KILL_STALL, &rep);
        if (r < 0)
                return r;
        /* cgroup.kill is synchronous for signalling; the group may already be empty. */
        tick_killing(g, mg_guard_now(g));
        return 1;
}

/* The smallest .size mg_guard_report() fills: .size and time_usec, the
 * first field after it (a report without even that is a mistake, not an
 * older caller). */
#define MG_REPORT_SIZE_MIN (offsetof(struct mg_report, time_usec) + sizeof(uint64_t))

int mg_guard_report(mg_guard *g, struct mg_report *ret) {
        struct mg_report rep;
        struct mg_sample x;
        struct mg_policy_state scratch;
        uint64_t current;
        int r;

        if (!g || !ret)
                return -EINVAL;
        /* ret may be an older caller's, shorter struct; refused before
         * anything is read if it has no room for the first field */
        if (mg_sized_size(ret) < MG_REPORT_SIZE_MIN)
                return -EINVAL;
        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        r = read_current(g, &current);
        if (r < 0)
                return r;
        r = read_slow(g, current, true, true, &rep, &x);
        if (r < 0)
                return r;
        read_limits(g, &rep);
        if (mg_policy_fast(&g->params, current)) {
                rep.verdict = MG_VERDICT_OK;
        } else {
                /* Decide on a copy: a report must not feed the window. */
                scratch = g->policy;
                rep.verdict = mg_policy_decide(&g->params, &scratch, &x, &rep.stall_usec, &rep.stall_signals);
                rep.stall_refault_bytes = scratch.stall_refault_bytes;
        }
        return mg_sized_copy_out(ret, &rep, sizeof(rep));
}

int mg_guard_lend_begin(mg_guard *g, uint64_t extra_bytes, uint64_t deadline_usec, uint64_t *ret_lend_id) {
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
        n = mg_cgroup_read(&g->cg, MG_CG_HIGH, buf, sizeof(buf));
        if (n < 0)
                return gone_errno((int) n) && cgroup_removed(g) ? cgroup_gone(g, "memory.high") : (int) n;
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
                        return m < 0 && gone_errno((int) m) && cgroup_removed(g) ? cgroup_gone(g, "memory.high")
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
        r = mg_cgroup_set_xattr(&g->cg, MG_LEND_XATTR, text, (size_t) r, XATTR_CREATE);
        if (r == -EEXIST) {
                glog(g, MG_LOG_WARNING, "%s: a lend record is already there (another lend, or a crashed one "
                     "mg_guard_recover() has not ended)", g->path);
                return -EBUSY;
        }
        if (r == -EOPNOTSUPP) {
                /* No user xattrs: cgroupfs before 5.7 (tmpfs before 6.6 for
                 * test trees).  The lend works, but dies with the process. */
                glog(g, MG_LOG_WARNING, "%s: no user xattrs here: this lend is not recorded, a crash leaves "
                     "memory.high raised", g->path);
        } else if (gone_errno(r) && cgroup_removed(g)) {
                return cgroup_gone(g, MG_LEND_XATTR);
        } else if (r < 0) {
                return r;
        } else {
                recorded = true;
        }
        r = mg_cgroup_write(&g->cg, MG_CG_HIGH, newval);
        if (r < 0) {
                if (recorded)
                        (void) mg_cgroup_remove_xattr(&g->cg, MG_LEND_XATTR);
                return gone_errno(r) && cgroup_removed(g) ? cgroup_gone(g, "memory.high") : r;
        }

        now = mg_guard_now(g);
        memcpy(g->lend_old_high, buf, (size_t) n + 1);
        g->lend = (struct mg_lend_info) {
                .old_high_bytes = old,
                /* what memory.high reads now: the end compares with it */
                .new_high_bytes = strcmp(newval, "max") == 0 ? MG_UNLIMITED : high_as_kept(g, old + extra_bytes),
                .deadline_usec = mg_usec_add(now, rel),
                .id = ++g->lend_last_id,
        };
        g->lent = true;
        g->lend_ending = false;
        g->lend_recorded = recorded;
        g->lend_adopted = false;
        g->lend_high_unknown = false;
        set_kernel_limits(g, g->lend.new_high_bytes, g->max_bytes);
        glog(g, MG_LOG_INFO, "%s: lent memory.high %s -> %s", g->path, g->lend_old_high, newval);
        emit(g, &(struct mg_event) { .type = MG_EVENT_LEND_BEGIN, .time_usec = now, .lend = &g->lend });
        if (ret_lend_id)
                *ret_lend_id = g->lend.id;
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
        return lend_id == g->lend.id ? 0 : -ESTALE;
}

int mg_guard_lend_end(mg_guard *g, uint64_t lend_id) {
        int r = lend_end_check(g, lend_id);

        if (r < 0)
                return r;
        if (restore_busy(g)) {
                /* Under way already: the deadline's, or a snapshot write's
                 * on its own thread.  If it fails, ticks retry it. */
                g->lend_ending = true;
                return 1;
        }
        if (g->set) {
                /* The set's thread must not wait for the write: the worker
                 * makes it, mg_set_process() tells (MG_EVENT_LEND_END). */
                r = restore_queue(g, MG_EVENT_LEND_END);
                if (r < 0)
                        return r;
                g->lend_ending = true;
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
                        switch (atomic_load(&g->restore.state)) {
                        case MG_RESTORE_IDLE:
                                r = restore_prepare(g, MG_EVENT_LEND_END, MG_RESTORE_CALLER);
                                break;
                        case MG_RESTORE_QUEUED:
                                r = -EINPROGRESS;
                                break;
                        case MG_RESTORE_DONE:
                                /* The worker wrote (the deadline's restore):
                                 * the lend is over but for the telling,
                                 * which the set's thread does. */
                                r = g->restore.r < 0 ? g->restore.r : -ENOENT;
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
                while (atomic_load(&g->restore.state) == MG_RESTORE_QUEUED)
                        (void) nanosleep(&poll_gap, NULL);
        }
        if (r < 0)
                return r;
        mg_restore_run(&g->restore); /* the blocking part, without the lock */
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

/* "<key>=<decimal u64>" ending at a ' ' or the last '\n'; advances *p. */
static bool record_field(const char **p, const char *end, const char *key, char stop, uint64_t *ret) {
        size_t kl = strlen(key);
        const char *v, *e;

        if ((size_t) (end - *p) < kl || memcmp(*p, key, kl) != 0)
                return false;
        v = *p + kl;
        e = memchr(v, stop, (size_t) (end - v));
        /* digits only, no leading zero: "max" and "007" are not what we write */
        if (!e || e == v || *v < '0' || *v > '9' || (*v == '0' && e - v > 1))
                return false;
        for (const char *c = v; c < e; c++)
                if (*c < '0' || *c > '9')
                        return false;
        if (mg_parse_u64_value(v, (size_t) (e - v), ret) < 0)
                return false;
        *p = e + 1;
        return true;
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
        if (!record_field(&p, end, "deadline_boottime_usec=", ' ', &r.deadline_boottime_usec) ||
            !record_field(&p, end, "pid=", '\n', &r.pid) || p != end)
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
static void lend_adopt(mg_guard *g) {
        char buf[MG_LEND_RECORD_MAX + 1];
        struct mg_lend_record rec;
        uint64_t now_bt, left, high;
        ssize_t n;

        if (g->cg.fd[MG_CG_HIGH] < 0)
                return; /* nothing to restore it into */
        n = mg_cgroup_get_xattr(&g->cg, MG_LEND_XATTR, buf, sizeof(buf) - 1);
        if (n == -ENODATA || n == -EOPNOTSUPP)
                return;
        if (n < 0 || mg_lend_record_parse(buf, (size_t) n, &rec) < 0) {
                glog(g, MG_LOG_WARNING, "%s: a lend record is there but %s; left for mg_guard_recover()", g->path,
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
        g->lend_high_unknown = read_u64(g, MG_CG_HIGH, &high) < 0;
        if (g->lend_high_unknown)
                high = MG_UNLIMITED;
        memcpy(g->lend_old_high, rec.old_high, sizeof(rec.old_high));
        g->lend = (struct mg_lend_info) {
                .old_high_bytes = rec.old_high_bytes,
                .new_high_bytes = high,
                .deadline_usec = mg_usec_add(mg_guard_now(g), left),
                .id = ++g->lend_last_id, /* no caller holds it: mg_guard_get_lend_id() */
        };
        g->lent = g->lend_adopted = true;
        g->lend_recorded = false;
        glog(g, MG_LOG_WARNING,
             "%s: found the open lend of pid %" PRIu64 " (memory.high to go back to %s): taken over, kills "
             "paused, restored in %" PRIu64 " ms",
             g->path, rec.pid, rec.old_high, left / 1000);
}

int mg_guard_recover(const char *cgroup_path, unsigned flags) {
        return mg_guard_recover_internal(cgroup_path, flags, 0, NULL);
}

int mg_guard_recover_internal(const char *path, unsigned flags, unsigned cg_flags, const struct mg_io *io) {
        char buf[MG_LEND_RECORD_MAX + 1];
        struct mg_lend_record rec;
        struct mg_cgroup cg;
        uint64_t high;
        ssize_t n;
        int r;

        if (!path || (flags & ~(unsigned) MG_RECOVER_EXPIRED))
                return -EINVAL;
        r = mg_cgroup_open(&cg, path, cg_flags | MG_CGROUP_HIGH_ONLY, io);
        if (r < 0)
                return r;
        n = mg_cgroup_get_xattr(&cg, MG_LEND_XATTR, buf, sizeof(buf) - 1);
        if (n == -ENODATA || n == -EOPNOTSUPP) {
                r = 0; /* no record, or no xattrs at all */
                goto out;
        }
        if (n < 0) {
                r = n == -ERANGE ? -EBADMSG : (int) n; /* longer than any record */
                goto out;
        }
        r = mg_lend_record_parse(buf, (size_t) n, &rec);
        if (r < 0)
                goto out;
        if ((flags & MG_RECOVER_EXPIRED) && rec.deadline_boottime_usec > mg_boottime_usec()) {
                r = -EBUSY;
                goto out;
        }
        if (cg.fd[MG_CG_HIGH] < 0) {
                r = -EOPNOTSUPP;
                goto out;
        }
        r = mg_cgroup_read_u64(&cg, MG_CG_HIGH, &high);
        if (r < 0)
                goto out;
        /* A lend only raises memory.high: a record above the present value
         * is not a lend to end (someone lowered memory.high since, or wrote
         * the record to raise it); it is dropped, memory.high left alone. */
        if (rec.old_high_bytes <= high) {
                r = mg_cgroup_write(&cg, MG_CG_HIGH, rec.old_high);
                if (r < 0)
                        goto out;
                r = 1;
        }
        /* After the restore: if this fails, the record stays and the next
         * recovery writes the same value again. */
        (void) mg_cgroup_remove_xattr(&cg, MG_LEND_XATTR);
out:
        mg_cgroup_close(&cg);
        return r;
}
