/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reclaim actuator (reclaim.h).  What it relies on in the kernel:
 *  - memory.reclaim (5.19+, mm/memcontrol.c memory_reclaim()) reclaims up
 *    to the bytes written from the cgroup and its children, in the
 *    writer's write(2), in rounds of try_to_free_mem_cgroup_pages(); it
 *    returns -EAGAIN when a few rounds in a row took nothing, and stops at
 *    a signal.  It takes clean file pages and, with swap, anon; dirty file
 *    pages are not written back by a cgroup's own reclaim (only kswapd
 *    writes them), so a swapless actor loses clean cache alone.
 *  - The writer's reclaim is counted in the target's pgsteal (memory.stat,
 *    pages), with every other reclaim from it meanwhile: what the dose
 *    achieved is at least what pgsteal rose by less the actor's own direct
 *    reclaim over the same time, which at the moments a dose fires is small.
 *  - memory.pressure's totals (usec) only grow while the cgroup lives.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reclaim.h"

struct mg_reclaim {
        struct mg_reclaim_rule rule;
        bool pressure;                  /* the predicate is armed (some or full asked) */
        bool stopped;                   /* the target went: no more doses */
        char *target;                   /* its path (the guard's opt points here) */
        struct mg_cgroup cg;            /* the target: memory.stat and memory.pressure kept open */
        int reclaim_fd;
        struct mg_reader rd;            /* the job's (stat_buf) and the tick's (small_buf) */
        struct mg_reclaim_windows win;
        uint64_t window_due_usec, cooldown_until_usec, headroom_due_usec;
        struct mg_reclaim_info info;    /* the dose in flight, then its event */
        struct mg_reclaim_job job;
        char bufs[MG_STAT_BUF_SIZE + MG_SMALL_BUF_SIZE];
};

int mg_reclaim_new(mg_guard *g, unsigned cg_flags, const struct mg_io *io) {
        struct mg_reclaim *rc;
        int r;

        if (g->opt.reclaim_dose_bytes == 0)
                return 0;
        rc = calloc(1, sizeof(*rc));
        if (!rc)
                return -ENOMEM;
        rc->reclaim_fd = -1;
        for (int i = 0; i < MG_CG_N; i++)
                rc->cg.fd[i] = -1;
        rc->cg.dirfd = -1;
        g->reclaim = rc;
        rc->target = strdup(g->opt.reclaim_cgroup ? g->opt.reclaim_cgroup : g->path);
        if (!rc->target)
                return -ENOMEM;
        g->opt.reclaim_cgroup = g->opt.reclaim_cgroup ? rc->target : NULL;
        rc->rd.stat_buf = rc->bufs;
        rc->rd.small_buf = rc->bufs + MG_STAT_BUF_SIZE;
        rc->rule = (struct mg_reclaim_rule) { .some_usec = g->opt.reclaim_some_usec,
                                              .full_usec = g->opt.reclaim_full_usec,
                                              .windows = g->opt.reclaim_windows };
        rc->pressure = g->opt.reclaim_some_usec || g->opt.reclaim_full_usec;

        r = mg_cgroup_open(&rc->cg, rc->target, cg_flags, io);
        if (r < 0)
                return r;
        rc->cg.path = rc->target;
        r = mg_cgroup_open_file(&rc->cg, "memory.reclaim", O_WRONLY | O_CLOEXEC);
        if (r < 0)
                return r == -ENOENT ? -EOPNOTSUPP : r;
        rc->reclaim_fd = r;
        if (rc->pressure && rc->cg.fd[MG_CG_PRESSURE] < 0)
                return -EOPNOTSUPP;
        /* What is kept open: the rest of the target's files go.  The job
         * is filled at each dose (dose()). */
        mg_cgroup_trim(&rc->cg, MG_CG_BIT(MG_CG_STAT) | MG_CG_BIT(MG_CG_PRESSURE));
        atomic_init(&rc->job.job.state, MG_JOB_IDLE);
        return 0;
}

void mg_reclaim_free(mg_guard *g) {
        struct mg_reclaim *rc = g->reclaim;

        if (!rc)
                return;
        if (rc->reclaim_fd >= 0)
                close(rc->reclaim_fd);
        mg_cgroup_close(&rc->cg);
        free(rc->target);
        free(rc);
        g->reclaim = NULL;
        g->opt.reclaim_cgroup = NULL;
}

static int read_pgsteal(struct mg_reclaim_job *j, uint64_t *ret) {
        struct mg_memstat ms;
        int r = mg_read_stat(j->rd, j->cg, true, &ms);

        if (r < 0)
                return r;
        *ret = ms.pgsteal;
        return 0;
}

void mg_reclaim_run(struct mg_reclaim_job *j) {
        uint64_t before = 0, after = 0, t0;
        int r;

        j->achieved_bytes = j->duration_usec = 0;
        j->read_failed = false;
        r = read_pgsteal(j, &before);
        if (r < 0) {
                j->r = r;
                j->read_failed = true;
                return;
        }
        t0 = mg_mono_usec();
        j->r = mg_cgroup_reclaim(j->cg, j->reclaim_fd, j->asked_bytes, j->cache_only);
        j->duration_usec = mg_mono_usec() - t0;
        r = read_pgsteal(j, &after);
        if (r < 0) {
                /* The target gone says more than the write's errno (it
                 * took less: the cgroup was emptied under it). */
                if (j->r >= 0 || mg_gone_errno(r)) {
                        j->r = r;
                        j->read_failed = true;
                }
                return;
        }
        if (after > before)
                j->achieved_bytes = (after - before) * j->page_bytes;
}

/* The target's files say it was removed: no more doses, said once. */
static void target_gone(mg_guard *g) {
        g->reclaim->stopped = true;
        mg_guard_log(g, MG_LOG_WARNING, "the reclaim target %s is gone: no more doses", g->reclaim->target);
}

/* The dose in flight is over: told, and what it says of the target. */
static void dose_told(mg_guard *g) {
        struct mg_reclaim *rc = g->reclaim;
        struct mg_reclaim_job *j = &rc->job;
        struct mg_reclaim_info *in = &rc->info;
        bool gone = mg_gone_errno(j->r);

        in->achieved_bytes = j->achieved_bytes;
        in->duration_usec = j->duration_usec;
        in->error = gone ? -ENODEV : j->r;
        in->counted = j->r == 0 && j->duration_usec <= MG_RECLAIM_DOSE_MAX_USEC &&
                      j->achieved_bytes >= in->asked_bytes / 5 * 4;
        atomic_store(&j->job.state, MG_JOB_IDLE);
        if (gone)
                target_gone(g);
        else if (j->r < 0 && j->r != -EAGAIN)
                mg_guard_log(g, MG_LOG_WARNING, "%s %s/memory.reclaim failed: %s",
                             j->read_failed ? "reading around a dose to" : "a dose to", rc->target, strerror(-j->r));
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_RECLAIM, .reclaim = in });
}

int mg_reclaim_done(mg_guard *g) {
        if (g->reclaim && atomic_load(&g->reclaim->job.job.state) == MG_JOB_DONE)
                dose_told(g);
        return 0;
}

/* A dose of bytes, its info zeroed and filled with what fired it. */
static void dose(mg_guard *g, uint64_t now, uint64_t bytes, enum mg_reclaim_why why) {
        struct mg_reclaim *rc = g->reclaim;
        struct mg_reclaim_job *j = &rc->job;

        rc->info.target = rc->target;
        rc->info.why = why;
        rc->info.asked_bytes = bytes;
        *j = (struct mg_reclaim_job) { .job = { .kind = MG_JOB_RECLAIM, .guard = g }, .cg = &rc->cg,
                                       .reclaim_fd = rc->reclaim_fd, .rd = &rc->rd, .page_bytes = g->page_bytes,
                                       .asked_bytes = bytes, .cache_only = why == MG_RECLAIM_HEADROOM };
        if (why == MG_RECLAIM_PRESSURE)
                rc->cooldown_until_usec = mg_usec_add(now, g->opt.reclaim_cooldown_usec);
        mg_guard_log(g, MG_LOG_INFO, "reclaim: a dose of %" PRIu64 " KiB to %s (%s)", MG_TO_KIB(bytes), rc->target,
                     why == MG_RECLAIM_PRESSURE ? "memory pressure" : "headroom");
        if (g->host) {
                atomic_store(&j->job.state, MG_JOB_QUEUED);
                mg_guard_hold(g);
                g->host->queue_job(g->host, &j->job);
                return;
        }
        atomic_store(&j->job.state, MG_JOB_CALLER);
        mg_reclaim_run(j);
        dose_told(g);
}

static bool busy(const struct mg_reclaim *rc) {
        return atomic_load(&rc->job.job.state) != MG_JOB_IDLE;
}

void mg_reclaim_tick(mg_guard *g, uint64_t now, uint64_t current) {
        struct mg_reclaim *rc = g->reclaim;
        bool ready = !g->lent && !busy(rc) && g->state == MG_GUARD_WATCHING;

        if (rc->stopped)
                return;
        if (rc->pressure && now >= rc->window_due_usec) {
                struct mg_psi psi;
                int r = busy(rc) ? -EBUSY : mg_read_parsed(&rc->rd, &rc->cg, MG_CG_PRESSURE, &psi);

                /* A window spans a second from the last read; one that ran
                 * long (a tick late) counts as one. */
                rc->window_due_usec = mg_usec_add(now, MG_USEC_PER_SEC);
                if (r == 0 && mg_policy_reclaim_window(&rc->rule, &rc->win, psi.some.total_usec, psi.full.total_usec,
                                                        psi.has_full, ready && now >= rc->cooldown_until_usec)) {
                        memset(&rc->info, 0, sizeof(rc->info));
                        rc->info.windows = rc->rule.windows;
                        memcpy(rc->info.some_usec, rc->win.some_usec, sizeof(rc->info.some_usec));
                        memcpy(rc->info.full_usec, rc->win.full_usec, sizeof(rc->info.full_usec));
                        rc->info.current_bytes = current;
                        dose(g, now, g->opt.reclaim_dose_bytes, MG_RECLAIM_PRESSURE);
                        return;
                }
                if (r < 0 && r != -EBUSY && mg_gone_errno(r))
                        target_gone(g);
        }
        if (g->opt.reclaim_headroom_bytes && ready && now >= rc->headroom_due_usec &&
            current + g->opt.reclaim_headroom_bytes > g->params.limit_bytes) {
                struct mg_memstat ms;
                uint64_t file, bytes;

                rc->headroom_due_usec = mg_usec_add(now, MG_USEC_PER_SEC);
                if (mg_read_stat(&rc->rd, &rc->cg, true, &ms) < 0)
                        return;
                file = ms.file > ms.file_dirty + ms.file_writeback ? ms.file - ms.file_dirty - ms.file_writeback : 0;
                bytes = mg_policy_reclaim_headroom(g->params.limit_bytes, g->opt.reclaim_headroom_bytes, current, file,
                                                   g->opt.reclaim_dose_bytes);
                if (bytes == 0)
                        return;
                memset(&rc->info, 0, sizeof(rc->info));
                rc->info.current_bytes = current;
                rc->info.file_bytes = file;
                dose(g, now, bytes, MG_RECLAIM_HEADROOM);
        }
}
