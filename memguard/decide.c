/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kill decision and the kill: from a verdict of the policy (policy.c)
 * over the slow tick's sample to cgroup.kill (kill.c) and the kill record,
 * through the confirming reads, the caller's pre-kill deferral and a dry
 * run, or a park in its place; the wait for the cgroup to empty; and the
 * episodes that hold a kill back (over the limit with no process, members
 * that outlived a kill).  It
 * uses guard.c's voice and reads, and writes only the guard's kill state
 * (state, detect_usec, the slow path's record and episode fields).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "decide.h"
#include "kill.h"
#include "park.h"

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
        mg_guard_report_limits(g, &g->slow_state->empty_report);
        mg_guard_log(g, MG_LOG_WARNING,
             "%s: used %" PRIu64 " of limit %" PRIu64 " bytes held by no process (shmem %" PRIu64 ", kernel %" PRIu64
             ", anon %" PRIu64 ", sock %" PRIu64 "): not killed; tmpfs files and memfds charged to it, or its slab "
             "until rmdir, keep it",
             g->path, rep->used_bytes, rep->limit_bytes, st->shmem, st->kernel, st->anon, st->sock);
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_EMPTY_OVER_LIMIT, .report = &g->slow_state->empty_report });
}

void mg_guard_end_empty(mg_guard *g, const char *why) {
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
        int r = mg_guard_read_members(g, &p, &cut);

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
        int populated = mg_guard_read_populated(g), r;

        if (g->state == MG_GUARD_GONE)
                return -ENODEV;
        if (populated == 0) {
                end_unkillable(g, "the cgroup emptied");
                return g->empty_over;
        }
        if (populated > 0)
                mg_guard_end_empty(g, "a process appeared");
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

        if (mg_guard_read_members(g, &p, &cut) < 0 || p.n == 0)
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
        mg_guard_report_limits(g, &g->slow_state->kill.report);
}

/* The method a kill would use: cgroup.kill where the kernel has it. */
static enum mg_kill_method kill_method(const mg_guard *g) {
        return g->cg.have & MG_CG_BIT(MG_CG_KILL) ? MG_KILL_CGROUP_KILL : MG_KILL_PIDFD;
}

void mg_guard_kill_record_set(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep) {
        record_fill(g, reason, kill_method(g), rep, 0);
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
void mg_guard_defer_drop(mg_guard *g, const char *why) {
        if (!g->slow_state || !g->slow_state->defer_until_usec)
                return;
        g->slow_state->defer_until_usec = 0;
        g->detect_usec = 0;
        mg_guard_log(g, MG_LOG_INFO, "%s: the deferred kill is dropped: %s", g->path, why);
}

/* cgroup.kill, and the record of rep.  From a park, cgroup.events is
 * watched already (and the record is rep's source: copied first). */
static int start_kill(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep) {
        struct mg_report copy = *rep;
        bool watched = g->state == MG_GUARD_PARKED;
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
        record_fill(g, reason, method, &copy, mg_guard_now(g));
        g->state = MG_GUARD_KILLING;
        mg_guard_log(g, MG_LOG_WARNING, "%s: killed (%s): used %" PRIu64 " of limit %" PRIu64, g->path,
             mg_kill_reason_to_string(reason), copy.used_bytes, copy.limit_bytes);
        if (!watched)
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
int mg_guard_tick_killing(mg_guard *g, uint64_t now) {
        int populated, r;

        r = mg_guard_read_parsed(g, MG_CG_EVENTS, &populated);
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

/* The kill of rep, and the first look for the cgroup emptying.  Returns 1
 * or a negative errno. */
static int kill_now(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep) {
        int r = start_kill(g, reason, rep);

        if (r < 0)
                return r;
        /* cgroup.kill is synchronous for signalling; the group may already be empty. */
        mg_guard_tick_killing(g, mg_guard_now(g));
        return 1;
}

/* A park ends in a kill (end says why): the record's report, or a fresher
 * read (rep), with the park's fields, is the kill's.  A kill that fails
 * leaves the park open, and the next tick tries again. */
static int park_kill(mg_guard *g, enum mg_park_end end, const struct mg_report *rep, uint64_t now) {
        const struct mg_report *pr = &g->slow_state->kill.report;
        struct mg_report r = *rep;
        int e;

        r.park_id = pr->park_id;
        r.park_usec = pr->park_usec;
        r.frozen_usec = pr->frozen_usec;
        r.park_end = end;
        r.park_end_usec = now;
        r.verdict = pr->verdict;
        r.stall_usec = pr->stall_usec;
        r.stall_signals = pr->stall_signals;
        r.stall_refault_bytes = pr->stall_refault_bytes;
        r.stall_reclaimed_bytes = pr->stall_reclaimed_bytes;
        /* The detection is the park's: a lend meanwhile (the worker's save)
         * started the guard's windows, and its detection, over. */
        g->detect_usec = g->slow_state->kill.detect_usec;
        e = start_kill(g, g->slow_state->kill.reason, &r);
        if (e < 0)
                return e;
        mg_park_close(g, end, now, NULL);
        mg_guard_tick_killing(g, mg_guard_now(g));
        return 1;
}

/* The kill, a park instead (mg_guard_options.park_deadline_usec), or under
 * MG_GUARD_DRY_RUN what it would be.  Returns 1 if it killed or parked, 0
 * (a dry run) or a negative errno. */
static int act(mg_guard *g, enum mg_kill_reason reason, const struct mg_report *rep, uint64_t now) {
        int r;

        if (g->opt.flags & MG_GUARD_DRY_RUN) {
                dry_kill(g, reason, rep, now);
                return 0;
        }
        if (!g->opt.park_deadline_usec)
                return kill_now(g, reason, rep);
        record_fill(g, reason, kill_method(g), rep, 0);
        r = mg_park_begin(g, now);
        if (r < 0) {
                /* No freezer (before 5.2), or it cannot be written: the
                 * kill the park stood for, at once. */
                mg_guard_log(g, MG_LOG_ERR, "%s: cannot park (cgroup.freeze: %s): killed instead", g->path,
                             strerror(-r));
                g->slow_state->kill.report.park_id = ++g->park_last_id;
                g->slow_state->kill.report.park_usec = now;
                g->slow_state->kill.report.park_end = MG_PARK_END_NO_FREEZE;
                g->slow_state->kill.report.park_end_usec = now;
                return kill_now(g, reason, &g->slow_state->kill.report);
        }
        /* An empty cgroup, or one whose tasks were all in user space,
         * reads frozen at once. */
        r = mg_park_frozen(g, now);
        return r < 0 && g->state == MG_GUARD_GONE ? r : 1;
}

/*
 * MG_GUARD_PARKED: the park's promise.  Until MG_EVENT_PARK went out,
 * cgroup.events is read for "frozen 1", for at most the freeze wait
 * (mg_park_freeze_wait_usec()); then the deadline; then the hard bound
 * (mg_policy_park_past_bound()), on memory.current first and on used
 * (memory.stat) only where memory.current passes it.  Returns 1 if it
 * killed, 0, or a negative errno.
 */
int mg_guard_tick_parked(mg_guard *g, uint64_t now) {
        struct mg_slow *sl = g->slow_state;
        struct mg_report rep;
        struct mg_sample x;
        uint64_t current;
        int r;

        if (!sl->park_told) {
                r = mg_park_frozen(g, now);
                if (g->state != MG_GUARD_PARKED)
                        return r < 0 ? r : 0; /* gone, or ended by its callback */
                if (r == 0 && now - sl->kill.report.park_usec >= mg_park_freeze_wait_usec(g))
                        return park_kill(g, MG_PARK_END_NOT_FROZEN, &sl->kill.report, now);
        }
        if (now >= sl->park_deadline_usec)
                return park_kill(g, MG_PARK_END_DEADLINE, &sl->kill.report, now);
        r = mg_guard_read_current(g, &current);
        if (r < 0)
                return r;
        /* memory.current holds used and more: below the bound, so is used */
        if (!mg_policy_park_past_bound(&g->params, current, sl->kill.report.used_bytes, g->max_bytes))
                return 0;
        r = mg_guard_read_sample(g, current, MG_READ_CONFIRM, &rep, &x);
        if (r < 0)
                return r;
        if (!mg_policy_park_past_bound(&g->params, rep.used_bytes, sl->kill.report.used_bytes, g->max_bytes))
                return 0;
        mg_guard_report_limits(g, &rep);
        return park_kill(g, MG_PARK_END_BOUND, &rep, now);
}

/* The guard's limit and margin from now on (a thaw's new limit); the line
 * follows them and the kernel limits read now. */
static void limit_set(mg_guard *g, const struct mg_policy_params *p) {
        g->params.limit_bytes = p->limit_bytes;
        g->params.margin_bytes = p->margin_bytes;
        mg_guard_limits_read(g);
}

int mg_guard_park_finish(mg_guard *g, uint64_t park_id, enum mg_park_action action, uint64_t new_limit_bytes) {
        struct mg_slow *sl = g->slow_state;
        struct mg_policy_params p = g->params;
        uint64_t now = mg_guard_now(g), current;
        struct mg_report rep;
        struct mg_sample x;
        int r;

        if ((action != MG_PARK_KILL && action != MG_PARK_THAW) || park_id == 0 || new_limit_bytes == MG_UNLIMITED ||
            (action == MG_PARK_KILL && new_limit_bytes))
                return -EINVAL;
        if (g->state != MG_GUARD_PARKED)
                return -ENOENT;
        if (park_id != sl->kill.report.park_id)
                return -ESTALE;
        if (action == MG_PARK_KILL)
                return park_kill(g, MG_PARK_END_KILL, &sl->kill.report, now);
        if (new_limit_bytes) {
                /* The margin keeps its share of the limit. */
                p.margin_bytes = (uint64_t) ((unsigned __int128) p.margin_bytes * new_limit_bytes / p.limit_bytes);
                p.limit_bytes = new_limit_bytes;
        }
        /* Judged at once, still frozen: a thaw into an overshoot would
         * only let it grow until the next window. */
        r = mg_guard_read_current(g, &current);
        if (r < 0)
                return r;
        r = mg_guard_read_sample(g, current, MG_READ_CONFIRM, &rep, &x);
        if (r < 0)
                return r;
        mg_guard_report_limits(g, &rep);
        rep.limit_bytes = p.limit_bytes;
        rep.margin_bytes = p.margin_bytes;
        if (mg_policy_overshoot(&p, rep.current_bytes, rep.used_bytes)) {
                limit_set(g, &p);
                return park_kill(g, MG_PARK_END_OVER_LIMIT, &rep, now);
        }
        r = mg_park_thaw(g);
        if (r < 0)
                return r; /* still parked, under the limit it had */
        limit_set(g, &p);
        mg_guard_window_reset(g);
        g->detect_usec = 0;
        mg_park_close(g, MG_PARK_END_THAW, now, &rep);
        host_reschedule(g, now);
        return 0;
}

/*
 * Steps 4 and 5 of the kill decision (mg_guard_kill_decide()), for a verdict v a
 * fresh read confirmed, rep its record.  cgroup.events is read last, just
 * before acting: an empty cgroup is never killed (an overshoot there is
 * reported).  Then the kill, told first (MG_EVENT_PRE_KILL) unless it was
 * already.  A stall needs tasks to stall: what is left of its window is
 * not acted on, and a process that appears later is detected anew.
 * Returns 1 if it killed, 0 if not, or a negative errno.
 */
static int kill_if_populated(mg_guard *g, enum mg_verdict v, struct mg_report *rep, uint64_t now, bool told) {
        enum mg_kill_reason reason = v == MG_VERDICT_OVERSHOOT ? MG_KILL_OVERSHOOT : MG_KILL_STALL;
        int r = mg_guard_read_populated(g);

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
int mg_guard_defer_end(mg_guard *g, uint64_t now, uint64_t current) {
        struct mg_slow *sl = g->slow_state;
        enum mg_verdict v = sl->kill.reason == MG_KILL_STALL ? MG_VERDICT_STALL : MG_VERDICT_OVERSHOOT;
        struct mg_report rep;
        struct mg_sample x;
        int r;

        sl->defer_until_usec = 0;
        r = mg_guard_files_open(g); /* open since the deferral began (its state keeps them): cheap */
        if (r < 0)
                return r;
        r = mg_guard_read_sample(g, current, MG_READ_CONFIRM, &rep, &x);
        if (r < 0) {
                g->detect_usec = 0;
                return r;
        }
        mg_guard_report_limits(g, &rep);
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
 *     mg_guard_defer_end() runs steps 3 to 5 again when that time is up), and
 *     cgroup.kill (start_kill()), or a park where the options ask for one
 *     (act(): the freeze, park.c; its end, mg_guard_tick_parked() and
 *     mg_guard_park_finish()).
 * Returns 1 if it killed, 0 if not, or a negative errno.
 */
int mg_guard_kill_decide(mg_guard *g, enum mg_verdict v, uint64_t now, struct mg_report *rep, uint64_t stall_usec,
                         unsigned signals) {
        struct mg_slow *sl = g->slow_state;
        struct mg_sample fresh;
        uint64_t current;
        bool told = false; /* MG_EVENT_PRE_KILL went out for this kill already */
        int r;

        if (g->lent) {
                mg_guard_defer_drop(g, "a lend began (kills are paused)");
                return 0;
        }
        if (sl->defer_until_usec) {
                /* Put off until mg_guard_defer_end(), unless past the hard bound. */
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

        r = mg_guard_read_current(g, &current);
        if (r < 0)
                return r;
        if (v == MG_VERDICT_OVERSHOOT) {
                r = mg_guard_read_sample(g, current, MG_READ_CONFIRM, rep, &fresh);
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
