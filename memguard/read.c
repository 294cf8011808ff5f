/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a guard reads, and the sample it builds from it: every cgroup file
 * through the guard's open files (cgroup.c) into the guard's buffers,
 * parsed by parse.c; the slow path's one read of each file per tick; the
 * kernel limits the fast-path line follows; the checks just before a kill
 * (cgroup.events, cgroup.procs).  A read that fails is reported here, and
 * a removed cgroup is told from a hidden file here.
 */
#include <errno.h>
#include <string.h>

#include "guard.h"
#include "kill.h"
#include "parse.h"

/* A removed cgroup makes every open file return ENODEV (kernfs deactivates
 * the node); ENOENT is taken the same way.  But a live cgroup can take one
 * file away too: writing 0 to cgroup.pressure (6.1+) hides the pressure
 * files (kernfs_show(), and their open fds read ENODEV), and a parent that
 * drops +memory from cgroup.subtree_control removes every memory.* file.
 * So the guard ends only when the cgroup itself says so: mg_read_removed(). */
bool mg_gone_errno(int err) {
        return err == -ENODEV || err == -ENOENT;
}

/* cgroup.events is a core file that neither of those can hide.  A trimmed
 * guard opens it by the directory's path: -ESTALE if the path names
 * another directory or none, and then memory.current, which it keeps open,
 * tells a removed cgroup (ENODEV) from a renamed one. */
bool mg_read_removed(mg_guard *g) {
        char buf[64];
        ssize_t n = mg_cgroup_read(&g->cg, MG_CG_EVENTS, buf, sizeof(buf));

        if (n == -ESTALE)
                n = mg_cgroup_read(&g->cg, MG_CG_CURRENT, buf, sizeof(buf));
        return n < 0 && mg_gone_errno((int) n);
}

/* A read or parse error of a file the decision needs: reported, and on a
 * tick the window starts over (a gap in it says nothing); a report's read
 * leaves the tick's window as it was. */
int mg_read_failed(mg_guard *g, enum mg_cgfile f, int err, enum mg_read_mode mode) {
        if (mg_gone_errno(err) && mg_read_removed(g))
                return mg_guard_gone(g, mg_cgfile_name(f));
        mg_guard_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), err);
        if (mode != MG_READ_REPORT)
                mg_guard_window_reset(g);
        return err;
}

/* Inlined into mg_read_current(): one call less on every fast tick. */
static inline int read_u64(mg_guard *g, enum mg_cgfile f, uint64_t *ret) {
        int r = mg_cgroup_read_u64(&g->cg, f, ret);
        if (r >= 0)
                mg_guard_error_clear(g, f);
        return r;
}

int mg_read_u64(mg_guard *g, enum mg_cgfile f, uint64_t *ret) {
        return read_u64(g, f, ret);
}

/* Reads memory.current; returns 0 or the (reported) error. */
MG_HOT int mg_read_current(mg_guard *g, uint64_t *ret) {
        int r = read_u64(g, MG_CG_CURRENT, ret);
        return r < 0 ? mg_read_failed(g, MG_CG_CURRENT, r, MG_READ_TICK) : 0;
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
int mg_read_stat(mg_guard *g, bool full, struct mg_memstat *ret) {
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
        mg_guard_error_clear(g, MG_CG_STAT);
        *ret = st;
        return 0;
}

int mg_read_parsed(mg_guard *g, enum mg_cgfile f, void *ret) {
        const char *buf = g->small_buf;
        struct mg_mem_events ev;
        uint64_t keys;
        ssize_t n;
        int r;

        if (f == MG_CG_STAT)
                return mg_read_stat(g, true, ret); /* its own, larger buffer */
        n = mg_cgroup_read(&g->cg, f, g->small_buf, MG_SMALL_BUF_SIZE);
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
                mg_guard_error_clear(g, f);
        return r;
}

/* A pressure file that cannot be read.  Hidden by cgroup.pressure 0 while
 * the cgroup lives: reported once, and the tick goes on without pressure
 * (overshoots are still judged; the stall rules need pressure and wait for
 * it to come back; the PSI triggers go, or their fds would poll as ready for
 * good, a report's too).  Any other error is mg_read_failed()'s.  Returns 0
 * to go on. */
static int pressure_failed(mg_guard *g, enum mg_cgfile f, int err, enum mg_read_mode mode) {
        if (!mg_gone_errno(err) || mg_read_removed(g))
                return mg_read_failed(g, f, err, mode);
        mg_guard_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), err);
        mg_guard_triggers_close(g);
        return 0;
}

/* The fast-path line follows the lower of the kernel limits. */
void mg_guard_line_follow(mg_guard *g, uint64_t high, uint64_t max) {
        g->max_bytes = max;
        g->params.line_bytes = mg_policy_line(g->opt.limit_bytes, g->opt.margin_bytes, high < max ? high : max);
}

/* memory.high and memory.max.  Optional: a file that cannot be read
 * (absent in the root cgroup, an error) counts as "max". */
void mg_read_kernel_limits(mg_guard *g, uint64_t *ret_high, uint64_t *ret_max) {
        if (mg_read_u64(g, MG_CG_HIGH, ret_high) < 0)
                *ret_high = MG_UNLIMITED;
        if (mg_read_u64(g, MG_CG_MAX, ret_max) < 0)
                *ret_max = MG_UNLIMITED;
}

/* The same for the line: where neither can be read, the guard's own limit
 * draws it, as before these files were read. */
void mg_read_line_limits(mg_guard *g) {
        uint64_t high, max;

        mg_read_kernel_limits(g, &high, &max);
        mg_guard_line_follow(g, high, max);
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
int mg_read_sample(mg_guard *g, uint64_t current, enum mg_read_mode mode, struct mg_report *rep,
                   struct mg_sample *x) {
        bool full_stat = mode != MG_READ_TICK, report = mode == MG_READ_REPORT;
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
        r = mg_read_stat(g, full_stat, &rep->stat);
        if (r < 0)
                return mg_read_failed(g, MG_CG_STAT, r, mode);
        rep->used_bytes = mg_used_bytes(&rep->stat);
        *x = (struct mg_sample) {
                .time_usec = rep->time_usec,
                .current_bytes = current,
                .used_bytes = rep->used_bytes,
                .restores = rep->stat.workingset_restore_anon + rep->stat.workingset_restore_file,
                .refault_bytes = rep->stat.workingset_refault_file * g->page_bytes,
                .file_bytes = rep->stat.file,
                .mapped_bytes = rep->stat.file_mapped,
                .majfaults = rep->stat.pgmajfault,
                .steal_bytes = rep->stat.pgsteal * g->page_bytes,
                .dirty_bytes = rep->stat.file_dirty + rep->stat.file_writeback,
                .high_bytes = MG_UNLIMITED,
        };
        /* Keep reading for a window after the last sign, so the window the
         * policy looks back over has the extra figures at both ends. */
        hold = x->time_usec + g->opt.stall_window_usec + 2 * g->opt.tick_usec;

        r = mg_read_parsed(g, MG_CG_EVENTS_LOCAL, &rep->events);
        if (r >= 0) {
                x->have_events = true;
                x->limit_events = rep->events.high + rep->events.max;
                x->high_events = rep->events.high;
                if (!report && rose(&g->last_high_events, rep->events.high))
                        g->throttle_until_usec = hold;
        } else if (r != -EOPNOTSUPP)
                return mg_read_failed(g, MG_CG_EVENTS_LOCAL, r, mode);

        /* Both stall rules look back over the pressure totals of every
         * sample in their window, and the onset of a stall is not known in
         * advance: read on every slow tick. */
        r = mg_read_parsed(g, MG_CG_PRESSURE, &rep->memory_pressure);
        if (r >= 0) {
                x->have_pressure = true;
                x->mem_some_usec = rep->memory_pressure.some.total_usec;
        } else if (r != -EOPNOTSUPP && (r = pressure_failed(g, MG_CG_PRESSURE, r, mode)) < 0) {
                return r;
        }
        r = mg_read_parsed(g, MG_CG_IO_PRESSURE, &rep->io_pressure);
        if (r >= 0)
                x->io_some_usec = rep->io_pressure.some.total_usec;
        else if (r != -EOPNOTSUPP && (r = pressure_failed(g, MG_CG_IO_PRESSURE, r, mode)) < 0)
                return r;
        if (report || x->time_usec < g->throttle_until_usec) {
                /* Optional: without them there is no throttle diagnosis.  An
                 * error is reported all the same, but the window goes on. */
                enum mg_cgfile f = MG_CG_HIGH;
                r = mg_read_u64(g, f, &x->high_bytes);
                if (r >= 0)
                        r = mg_read_parsed(g, f = MG_CG_CPU_STAT, &x->cpu_usec);
                if (r >= 0) {
                        x->have_throttle = true;
                        if (!report)
                                mg_guard_line_follow(g, x->high_bytes, g->max_bytes);
                } else if (mg_gone_errno(r))
                        return mg_read_failed(g, f, r, mode);
                else if (r != -EOPNOTSUPP)
                        mg_guard_error(g, f, MG_LOG_WARNING, "reading", mg_cgfile_name(f), r);
                rep->high_bytes = x->high_bytes;
        }
        return 0;
}

/* Reads the limit files for a report; optional, so errors leave "max". */
void mg_read_report_limits(mg_guard *g, struct mg_report *rep) {
        mg_read_kernel_limits(g, &rep->high_bytes, &rep->max_bytes);
}

/* cgroup.events "populated", read just before acting.  Returns 1 or 0;
 * -ENODEV once the cgroup is gone; another error is reported (once per
 * streak) and returned, and the caller acts as if populated: the check
 * only spares an empty cgroup a kill, a confirmed overshoot it cannot
 * tell about is acted on as before. */
int mg_read_populated(mg_guard *g) {
        int populated, r = mg_read_parsed(g, MG_CG_EVENTS, &populated);

        if (r >= 0)
                return populated;
        if (mg_gone_errno(r))
                return mg_guard_gone(g, "cgroup.events");
        return mg_guard_error(g, MG_CG_EVENTS, MG_LOG_WARNING, "reading", "cgroup.events", r);
}

/* cgroup.procs, parsed: the members now.  Returns 0, -ENODEV once the
 * cgroup is gone, or another (reported) error. */
int mg_read_members(mg_guard *g, struct mg_procs *ret, bool *ret_cut) {
        char buf[MG_PROCS_BUF_SIZE];
        int r = mg_cgroup_read_procs(&g->cg, buf, sizeof(buf), ret_cut);

        if (r >= 0)
                r = mg_parse_procs(buf, strlen(buf), ret);
        if (r >= 0) {
                mg_guard_error_clear(g, MG_CG_PROCS);
                return 0;
        }
        if (mg_gone_errno(r))
                return mg_guard_gone(g, "cgroup.procs");
        return mg_guard_error(g, MG_CG_PROCS, MG_LOG_WARNING, "reading", "cgroup.procs", r);
}
