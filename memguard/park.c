/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parking an actor instead of killing it: the cgroup v2 freezer.
 * Writing 1 to cgroup.freeze (5.2+, kernel/cgroup/freezer.c) sets
 * JOBCTL_TRAP_FREEZE on every task of the cgroup and its descendants;
 * each stops on its way back to user space, so a task in uninterruptible
 * sleep (I/O on a slow disk) is frozen only when that I/O returns, and
 * cgroup.events says "frozen 1" (with a poll notification) once the last
 * task has stopped.  A frozen task charges no more anon or page cache, and
 * reads nothing from disk: the actor's growth and its neighbours' I/O stop
 * at once.  What the kernel charges on the actor's behalf goes on: a
 * socket's receive queue, kernel memory of its open files.  Fatal signals
 * reach frozen tasks (cgroup.kill works on a frozen cgroup), so a park
 * ends in a kill without a thaw.  An empty cgroup reads frozen as soon as
 * it is asked to be.
 */
#include <errno.h>
#include <inttypes.h>

#include "park.h"

int mg_park_begin(mg_guard *g, uint64_t now) {
        struct mg_slow *sl = g->slow_state;
        struct mg_report *rep = &sl->kill.report;
        int r = mg_cgroup_write_file(&g->cg, "cgroup.freeze", "1");

        if (r < 0)
                return r;
        rep->park_id = ++g->park_last_id;
        rep->park_usec = now;
        rep->frozen_usec = rep->park_end_usec = 0;
        rep->park_end = MG_PARK_OPEN;
        sl->park_deadline_usec = mg_usec_add(now, g->opt.park_deadline_usec);
        sl->park_told = false;
        g->counts.parks++;
        g->state = MG_GUARD_PARKED;
        host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, true);
        mg_guard_log(g, MG_LOG_WARNING, "%s: parking (%s): used %" PRIu64 " of limit %" PRIu64 ", frozen until the worker "
                     "ends the park, at most %" PRIu64 " ms", g->path, mg_kill_reason_to_string(sl->kill.reason),
                     rep->used_bytes, rep->limit_bytes, g->opt.park_deadline_usec / 1000);
        return 0;
}

int mg_park_frozen(mg_guard *g, uint64_t now) {
        struct mg_slow *sl = g->slow_state;
        char buf[128];
        ssize_t n;
        int frozen, r;

        if (sl->park_told)
                return 1;
        n = mg_cgroup_read(&g->cg, MG_CG_EVENTS, buf, sizeof(buf));
        r = n < 0 ? (int) n : mg_parse_frozen(buf, (size_t) n, &frozen);
        if (r < 0)
                return mg_guard_read_failed(g, MG_CG_EVENTS, r, true);
        mg_guard_error_clear(g, MG_CG_EVENTS);
        if (!frozen)
                return 0;
        sl->kill.report.frozen_usec = now;
        sl->park_told = true;
        mg_guard_log(g, MG_LOG_INFO, "%s: parked: frozen %" PRIu64 " ms after the freeze", g->path,
                     (now - sl->kill.report.park_usec) / 1000);
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_PARK, .time_usec = now, .kill = &sl->kill });
        return 1;
}

int mg_park_thaw(mg_guard *g) {
        int r = mg_cgroup_write_file(&g->cg, "cgroup.freeze", "0");

        if (r < 0)
                return mg_guard_error(g, MG_ERR_FREEZE, MG_LOG_ERR, "thawing", "cgroup.freeze", r);
        mg_guard_error_clear(g, MG_ERR_FREEZE);
        return 0;
}

void mg_park_close(mg_guard *g, enum mg_park_end end, uint64_t now, const struct mg_report *read) {
        struct mg_slow *sl = g->slow_state;
        struct mg_report *rep = &sl->kill.report;

        rep->park_end = end;
        rep->park_end_usec = now;
        if (g->state == MG_GUARD_PARKED)
                host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, false);
        mg_guard_log(g, end == MG_PARK_END_THAW ? MG_LOG_INFO : MG_LOG_WARNING, "%s: park %" PRIu64 " ended after %"
                     PRIu64 " ms: %s", g->path, rep->park_id, (now - rep->park_usec) / 1000, mg_park_end_to_string(end));
        if (end != MG_PARK_END_THAW)
                return;
        g->state = MG_GUARD_WATCHING;
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_THAW, .time_usec = now, .kill = &sl->kill,
                                              .report = read });
}
