/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a guard reads, and the sample it builds from it: every cgroup file
 * through the guard's open files (cgroup.c) into the reader's buffers,
 * parsed by parse.c; the slow path's one read of each file per tick; the
 * kernel limits the fast-path line follows; cgroup.procs for the checks
 * around a kill.  It may touch the struct mg_cgroup and struct mg_reader it
 * is given and nothing of the guard: it returns data and errnos, and
 * guard.c decides what they mean (gone, an error to report, a window to
 * start over, a line to move).
 */
#include <errno.h>
#include <string.h>

#include "kill.h"
#include "read.h"

/* A removed cgroup makes every open file return ENODEV (kernfs deactivates
 * the node); ENOENT is taken the same way.  But a live cgroup can take one
 * file away too: writing 0 to cgroup.pressure (6.1+) hides the pressure
 * files (kernfs_show(), and their open fds read ENODEV), and a parent that
 * drops +memory from cgroup.subtree_control removes every memory.* file.
 * So a guard ends only when the cgroup itself says so: mg_read_removed(). */
bool mg_gone_errno(int err) {
        return err == -ENODEV || err == -ENOENT;
}

/* cgroup.events is a core file that neither of those can hide.  A trimmed
 * guard opens it by the directory's path: -ESTALE if the path names
 * another directory or none, and then memory.current, which it keeps open,
 * tells a removed cgroup (ENODEV) from a renamed one. */
bool mg_read_removed(struct mg_cgroup *cg) {
        char buf[64];
        ssize_t n = mg_cgroup_read(cg, MG_CG_EVENTS, buf, sizeof(buf));

        if (n == -ESTALE)
                n = mg_cgroup_read(cg, MG_CG_CURRENT, buf, sizeof(buf));
        return n < 0 && mg_gone_errno((int) n);
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

/* On the tick only the lines the decision needs (see
 * mg_parse_memstat_tick), in full for a report, a kill record, or when the
 * layout learnt from the last full parse does not fit. */
int mg_read_stat(struct mg_reader *rd, struct mg_cgroup *cg, bool full, struct mg_memstat *ret) {
        ssize_t n = mg_cgroup_read(cg, MG_CG_STAT, rd->stat_buf, MG_STAT_BUF_SIZE);
        struct mg_memstat_layout layout;
        struct mg_memstat st;
        uint64_t keys;
        int r;

        if (n < 0)
                return (int) n;
        r = full ? -ESTALE : mg_parse_memstat_tick(rd->stat_buf, (size_t) n, &rd->stat_layout, &st);
        if (r == -ESTALE) {
                r = mg_parse_memstat_keys(rd->stat_buf, (size_t) n, &st, &keys, &layout);
                if (r >= 0)
                        r = check_keys(&rd->stat_keys, keys);
                if (r >= 0)
                        rd->stat_layout = layout; /* only from a read with every key */
        }
        if (r < 0)
                return r;
        *ret = st;
        return 0;
}

int mg_read_parsed(struct mg_reader *rd, struct mg_cgroup *cg, enum mg_cgfile f, void *ret) {
        const char *buf = rd->small_buf;
        struct mg_mem_events ev;
        uint64_t keys;
        ssize_t n;
        int r;

        if (f == MG_CG_STAT)
                return mg_read_stat(rd, cg, true, ret); /* its own, larger buffer */
        n = mg_cgroup_read(cg, f, rd->small_buf, MG_SMALL_BUF_SIZE);
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
                        r = check_keys(&rd->events_keys, keys);
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
        return r;
}

/* r of reading f: counted in out; returns whether the read goes on (a file
 * this kernel lacks is no error). */
static bool outcome(struct mg_read_outcome *out, enum mg_cgfile f, int r) {
        if (r >= 0) {
                out->ok |= (uint16_t) MG_CG_BIT(f);
                return true;
        }
        if (r == -EOPNOTSUPP)
                return true;
        out->at = f;
        out->err[f] = r;
        return false;
}

/* A pressure file that cannot be read: hidden by cgroup.pressure 0 while
 * the cgroup lives (the read goes on without pressure: overshoots are still
 * judged, the stall rules wait for it to come back), or any other error,
 * which ends the read. */
static bool pressure_outcome(struct mg_cgroup *cg, struct mg_read_outcome *out, enum mg_cgfile f, int r) {
        if (r < 0 && mg_gone_errno(r) && !mg_read_removed(cg)) {
                out->hidden |= (uint16_t) MG_CG_BIT(f);
                out->err[f] = r;
                return true;
        }
        return outcome(out, f, r);
}

/*
 * Five preads: memory.current (the caller's), memory.stat,
 * memory.events.local, memory.pressure and io.pressure.  Every term of used
 * comes from the one memory.stat read; memory.current is only compared,
 * never subtracted from.
 */
int mg_read_sample(struct mg_reader *rd, struct mg_cgroup *cg, uint32_t page_bytes, uint64_t now,
                   uint64_t current, bool full, struct mg_report *rep, struct mg_sample *x,
                   struct mg_read_outcome *out) {
        int r;

        out->ok = out->hidden = 0;
        *rep = (struct mg_report) {
                .size = sizeof(*rep),
                .time_usec = now,
                .current_bytes = current,
                .high_bytes = MG_UNLIMITED,
                .max_bytes = MG_UNLIMITED,
        };
        r = mg_read_stat(rd, cg, full, &rep->stat);
        if (!outcome(out, MG_CG_STAT, r))
                return r;
        rep->used_bytes = mg_used_bytes(&rep->stat);
        *x = (struct mg_sample) {
                .time_usec = now,
                .current_bytes = current,
                .used_bytes = rep->used_bytes,
                .restores = rep->stat.workingset_restore_anon + rep->stat.workingset_restore_file,
                .refault_bytes = rep->stat.workingset_refault_file * page_bytes,
                .file_bytes = rep->stat.file,
                .mapped_bytes = rep->stat.file_mapped,
                .majfaults = rep->stat.pgmajfault,
                .steal_bytes = rep->stat.pgsteal * page_bytes,
                .dirty_bytes = rep->stat.file_dirty + rep->stat.file_writeback,
                .high_bytes = MG_UNLIMITED,
        };

        r = mg_read_parsed(rd, cg, MG_CG_EVENTS_LOCAL, &rep->events);
        if (!outcome(out, MG_CG_EVENTS_LOCAL, r))
                return r;
        if (r >= 0) {
                x->have_events = true;
                x->limit_events = rep->events.high + rep->events.max;
                x->high_events = rep->events.high;
        }
        /* Both stall rules look back over the pressure totals of every
         * sample in their window, and the onset of a stall is not known in
         * advance: read on every slow tick. */
        r = mg_read_parsed(rd, cg, MG_CG_PRESSURE, &rep->memory_pressure);
        if (!pressure_outcome(cg, out, MG_CG_PRESSURE, r))
                return r;
        if (r >= 0) {
                x->have_pressure = true;
                x->mem_some_usec = rep->memory_pressure.some.total_usec;
        }
        r = mg_read_parsed(rd, cg, MG_CG_IO_PRESSURE, &rep->io_pressure);
        if (!pressure_outcome(cg, out, MG_CG_IO_PRESSURE, r))
                return r;
        if (r >= 0)
                x->io_some_usec = rep->io_pressure.some.total_usec;
        return 0;
}

int mg_read_throttle(struct mg_reader *rd, struct mg_cgroup *cg, struct mg_sample *x, struct mg_read_outcome *out) {
        int r;

        out->ok = out->hidden = 0;
        r = mg_cgroup_read_u64(cg, MG_CG_HIGH, &x->high_bytes);
        if (!outcome(out, MG_CG_HIGH, r) || r < 0)
                return r;
        r = mg_read_parsed(rd, cg, MG_CG_CPU_STAT, &x->cpu_usec);
        if (!outcome(out, MG_CG_CPU_STAT, r) || r < 0)
                return r;
        x->have_throttle = true;
        return 0;
}

unsigned mg_read_kernel_limits(struct mg_cgroup *cg, uint64_t *ret_high, uint64_t *ret_max) {
        unsigned ok = 0;

        if (mg_cgroup_read_u64(cg, MG_CG_HIGH, ret_high) < 0)
                *ret_high = MG_UNLIMITED;
        else
                ok |= MG_CG_BIT(MG_CG_HIGH);
        if (mg_cgroup_read_u64(cg, MG_CG_MAX, ret_max) < 0)
                *ret_max = MG_UNLIMITED;
        else
                ok |= MG_CG_BIT(MG_CG_MAX);
        return ok;
}

int mg_read_members(struct mg_cgroup *cg, struct mg_procs *ret, bool *ret_cut) {
        char buf[MG_PROCS_BUF_SIZE];
        int r = mg_cgroup_read_procs(cg, buf, sizeof(buf), ret_cut);

        return r < 0 ? r : mg_parse_procs(buf, strlen(buf), ret);
}
