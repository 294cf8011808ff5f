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
 * cgroup.freeze is the cgroup's state, not its writer's: a worker that
 * dies mid-park leaves its actor frozen, with nothing to thaw or kill it.
 * Hence the park record (park.h), its takeover by the next guard, and
 * mg_guard_recover()'s part in it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "decide.h"
#include "park.h"
#include "parse.h"

int mg_park_record_format(const struct mg_park_record *r, char *buf, size_t size) {
        int n;

        if (r->id == 0 || (r->reason != MG_KILL_OVERSHOOT && r->reason != MG_KILL_STALL))
                return -EINVAL;
        n = snprintf(buf, size, "memguard-park 1 id=%" PRIu64 " reason=%s deadline_boottime_usec=%" PRIu64
                     " pid=%" PRIu64 "\n", r->id, mg_kill_reason_to_string(r->reason), r->deadline_boottime_usec,
                     r->pid);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

/* "reason=<name> " as mg_kill_reason_to_string() names it; advances *p. */
static bool reason_field(const char **p, const char *end, enum mg_kill_reason *ret) {
        static const enum mg_kill_reason reasons[] = { MG_KILL_OVERSHOOT, MG_KILL_STALL };
        static const char key[] = "reason=";

        if ((size_t) (end - *p) < sizeof(key) - 1 || memcmp(*p, key, sizeof(key) - 1) != 0)
                return false;
        for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
                const char *name = mg_kill_reason_to_string(reasons[i]);
                size_t nl = strlen(name);
                const char *v = *p + sizeof(key) - 1;

                if ((size_t) (end - v) > nl && memcmp(v, name, nl) == 0 && v[nl] == ' ') {
                        *ret = reasons[i];
                        *p = v + nl + 1;
                        return true;
                }
        }
        return false;
}

int mg_park_record_parse(const char *buf, size_t len, struct mg_park_record *ret) {
        static const char head[] = "memguard-park 1 ";
        struct mg_park_record r = {};
        const char *p, *end;

        if (!buf || !ret)
                return -EINVAL;
        if (len > MG_PARK_RECORD_MAX || len < sizeof(head) - 1 || memcmp(buf, head, sizeof(head) - 1) != 0)
                return -EBADMSG;
        p = buf + sizeof(head) - 1;
        end = buf + len;
        if (!mg_parse_record_field(&p, end, "id=", ' ', &r.id) || r.id == 0 || !reason_field(&p, end, &r.reason) ||
            !mg_parse_record_field(&p, end, "deadline_boottime_usec=", ' ', &r.deadline_boottime_usec) ||
            !mg_parse_record_field(&p, end, "pid=", '\n', &r.pid) || p != end)
                return -EBADMSG;
        *ret = r;
        return 0;
}

/*
 * The record before the freeze: a crash between the two leaves a record
 * on a cgroup that is not frozen, which the next guard removes as stale;
 * a crash after it leaves both, and the next guard takes the park over.
 * Where it cannot be written (no user xattrs: cgroupfs before 5.7; a
 * directory its tenant can write, where no guard would trust it) the park
 * goes on unrecorded, and dies with this process: a crash leaves the actor
 * frozen.  Returns whether it is there.
 */
static bool record_write(mg_guard *g, uint64_t id) {
        struct mg_slow *sl = g->slow_state;
        struct mg_park_record rec = {
                .id = id,
                .reason = sl->kill.reason,
                .deadline_boottime_usec = mg_usec_add(mg_boottime_usec(), g->opt.park_deadline_usec),
                .pid = (uint64_t) getpid(),
        };
        char text[MG_PARK_RECORD_MAX + 1];
        int r = mg_park_record_format(&rec, text, sizeof(text));

        if (r >= 0)
                r = mg_cgroup_tenant_writes(&g->cg) ? -EPERM
                                                    : mg_cgroup_set_xattr(&g->cg, MG_PARK_XATTR, text, (size_t) r, 0);
        if (r >= 0)
                return true;
        mg_guard_log(g, MG_LOG_WARNING, "%s: %s: this park is not recorded, a crash of this process leaves the actor "
                     "frozen", g->path, r == -EPERM ? "its tenant can write this directory"
                                         : r == -EOPNOTSUPP ? "no user xattrs here" : strerror(-r));
        return false;
}

/* The park is over (or never began): its record goes.  One that cannot be
 * removed is found by the next guard; on a cgroup thawed since, it is
 * stale and removed then. */
static void record_remove(mg_guard *g) {
        struct mg_slow *sl = g->slow_state;
        int r;

        if (!sl->park_recorded)
                return;
        sl->park_recorded = false;
        r = mg_cgroup_remove_xattr(&g->cg, MG_PARK_XATTR);
        if (r < 0 && r != -ENODATA && !mg_gone_errno(r))
                mg_guard_log(g, MG_LOG_WARNING, "%s: removing the park record: %s", g->path, strerror(-r));
}

int mg_park_begin(mg_guard *g, uint64_t now) {
        struct mg_slow *sl = g->slow_state;
        struct mg_report *rep = &sl->kill.report;
        int r;

        sl->park_recorded = record_write(g, g->park_last_id + 1);
        sl->park_taken_over = false;
        r = mg_cgroup_write_file(&g->cg, "cgroup.freeze", "1");
        if (r < 0) {
                record_remove(g);
                return r;
        }
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

/* cgroup.events "frozen": 1, 0, or the read's or parse's errno. */
static int events_frozen(mg_guard *g) {
        char buf[128];
        ssize_t n = mg_cgroup_read(&g->cg, MG_CG_EVENTS, buf, sizeof(buf));
        int frozen, r;

        r = n < 0 ? (int) n : mg_parse_frozen(buf, (size_t) n, &frozen);
        return r < 0 ? r : frozen;
}

int mg_park_frozen(mg_guard *g, uint64_t now) {
        struct mg_slow *sl = g->slow_state;
        int frozen;

        if (sl->park_told)
                return 1;
        frozen = events_frozen(g);
        if (frozen < 0)
                return mg_guard_read_failed(g, MG_CG_EVENTS, frozen, true);
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
        /* After the thaw, or once the kill is sent: a crash before this
         * leaves the record, and the next guard finds the actor thawed
         * (stale: removed) or frozen and dying (taken over: its kill). */
        record_remove(g);
        sl->park_taken_over = false;
        mg_guard_log(g, end == MG_PARK_END_THAW ? MG_LOG_INFO : MG_LOG_WARNING, "%s: park %" PRIu64 " ended after %"
                     PRIu64 " ms: %s", g->path, rep->park_id, (now - rep->park_usec) / 1000, mg_park_end_to_string(end));
        if (end != MG_PARK_END_THAW)
                return;
        g->state = MG_GUARD_WATCHING;
        mg_guard_emit(g, &(struct mg_event) { .type = MG_EVENT_THAW, .time_usec = now, .kill = &sl->kill,
                                              .report = read });
}

/* cgroup.freeze, the cgroup's own setting (cgroup.events "frozen" is
 * whether it took, and also says 1 under a frozen parent): 1, 0, or a
 * negative errno (-ENOENT: no freezer, before 5.2). */
static int freeze_read(struct mg_cgroup *cg) {
        char buf[16];
        uint64_t v;
        ssize_t n = mg_cgroup_read_file(cg, "cgroup.freeze", buf, sizeof(buf));

        if (n < 0)
                return (int) n;
        if (mg_parse_u64_value(buf, (size_t) n, &v) < 0 || v > 1)
                return -EBADMSG;
        return (int) v;
}

int mg_park_record_find(mg_guard *g, struct mg_park_record *ret) {
        char buf[MG_PARK_RECORD_MAX + 1];
        struct mg_park_record rec;
        ssize_t n;
        int r;

        n = mg_cgroup_get_xattr(&g->cg, MG_PARK_XATTR, buf, sizeof(buf) - 1);
        if (n == -ENODATA || n == -EOPNOTSUPP)
                return 0;
        /* A tenant can freeze itself (cgroup.freeze is its to write in a
         * delegated cgroup) and write a record: neither is the guard's
         * word, and a takeover must never thaw what it did not freeze. */
        if (mg_cgroup_tenant_writes(&g->cg)) {
                mg_guard_log(g, MG_LOG_WARNING, "%s: a park record is there, on a directory uid %u can write (mode "
                             "%04o): not taken over, nothing decided from it", g->path, (unsigned) g->cg.dir_uid,
                             (unsigned) (g->cg.dir_mode & 07777));
                return 0;
        }
        if (n < 0 || mg_park_record_parse(buf, (size_t) n, &rec) < 0) {
                mg_guard_log(g, MG_LOG_WARNING, "%s: a park record is there but %s: not taken over, left as found",
                             g->path, n == -ERANGE ? "too long" : n < 0 ? strerror((int) -n) : "malformed");
                return 0;
        }
        r = freeze_read(&g->cg);
        if (r < 0 && r != -ENOENT) {
                mg_guard_log(g, MG_LOG_WARNING, "%s: a park record is there, but cgroup.freeze: %s: not taken over",
                             g->path, strerror(-r));
                return 0;
        }
        if (r <= 0) {
                /* Thawed since (by hand, or the park ended and the record
                 * was not removed): nothing to take over. */
                r = mg_cgroup_remove_xattr(&g->cg, MG_PARK_XATTR);
                mg_guard_log(g, MG_LOG_INFO, "%s: the record of park %" PRIu64 " (pid %" PRIu64 ") is there, but the "
                             "cgroup is not frozen: stale, %s", g->path, rec.id, rec.pid,
                             r < 0 && r != -ENODATA ? "cannot be removed" : "removed");
                return 0;
        }
        *ret = rec;
        return 1;
}

void mg_park_adopt(mg_guard *g, const struct mg_park_record *rec) {
        struct mg_slow *sl = g->slow_state;
        struct mg_report rep = { .size = sizeof(rep) };
        struct mg_sample x;
        uint64_t now, bt = mg_boottime_usec(), left, cap, current = 0;

        /* A fresh read for the record the park's events carry: the one
         * that decided died with the process that parked. */
        if (mg_guard_files_open(g) < 0 || mg_guard_read_current(g, &current) < 0 ||
            mg_guard_read_sample(g, current, MG_READ_REPORT, &rep, &x) < 0) {
                if (g->state == MG_GUARD_GONE)
                        return;
                rep = (struct mg_report) { .size = sizeof(rep), .used_bytes = current,
                                           .limit_bytes = g->params.limit_bytes,
                                           .margin_bytes = g->params.margin_bytes };
        }
        mg_guard_kill_record_set(g, rec->reason, &rep);
        now = mg_guard_now(g);
        left = rec->deadline_boottime_usec > bt ? rec->deadline_boottime_usec - bt : 0;
        /* The deadline the parker promised, no longer than this guard's
         * own park deadline (or MG_PARK_MAX_USEC without one). */
        cap = g->opt.park_deadline_usec ? g->opt.park_deadline_usec : MG_PARK_MAX_USEC;
        if (left > cap)
                left = cap;
        /* When the parker detected it died with it: the takeover stands
         * for it, so the record's spans (detection to kill, to empty)
         * start here rather than at the clock's zero. */
        sl->kill.detect_usec = now;
        sl->kill.report.park_id = rec->id;
        sl->kill.report.park_usec = now;
        sl->kill.report.frozen_usec = sl->kill.report.park_end_usec = 0;
        sl->kill.report.park_end = MG_PARK_OPEN;
        sl->park_deadline_usec = mg_usec_add(now, left);
        /* Past its deadline: the first tick kills it (MG_PARK_END_DEADLINE),
         * with no MG_EVENT_PARK first, which would ask for a save there is
         * no time for. */
        sl->park_told = left == 0;
        if (left == 0 && events_frozen(g) == 1)
                sl->kill.report.frozen_usec = now; /* the kill record says it was frozen */
        sl->park_recorded = sl->park_taken_over = true;
        if (g->park_last_id < rec->id)
                g->park_last_id = rec->id;
        g->counts.parks++;
        g->state = MG_GUARD_PARKED;
        host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, true);
        if (left == 0)
                mg_guard_log(g, MG_LOG_WARNING, "%s: found park %" PRIu64 " of pid %" PRIu64 " (%s), frozen, its "
                             "deadline passed: taken over, killed at the first tick", g->path, rec->id, rec->pid,
                             mg_kill_reason_to_string(rec->reason));
        else
                mg_guard_log(g, MG_LOG_WARNING, "%s: found park %" PRIu64 " of pid %" PRIu64 " (%s), frozen: taken "
                             "over (MG_EVENT_PARK once frozen), killed in %" PRIu64 " ms unless ended", g->path,
                             rec->id, rec->pid, mg_kill_reason_to_string(rec->reason), left / 1000);
}

void mg_park_release(mg_guard *g) {
        struct mg_slow *sl = g->slow_state;
        int r;

        if (g->state != MG_GUARD_PARKED)
                return;
        host_watch(g, g->cg.fd[MG_CG_EVENTS], MG_WATCH_CGROUP_EVENTS, false);
        g->state = MG_GUARD_WATCHING;
        if (sl->park_taken_over) {
                /* Not this process's to thaw: the record says another
                 * froze it, and it stays for the next guard, whose
                 * deadline is the same. */
                sl->park_recorded = sl->park_taken_over = false;
                mg_guard_log(g, MG_LOG_WARNING, "%s: park %" PRIu64 " (taken over) left open by the guard's end: left "
                             "frozen, its record for the next guard", g->path, sl->kill.report.park_id);
                return;
        }
        r = mg_cgroup_write_file(&g->cg, "cgroup.freeze", "0");
        if (r == 0) {
                record_remove(g);
                mg_guard_log(g, MG_LOG_WARNING, "%s: park %" PRIu64 " left open by the guard's end: thawed", g->path,
                             sl->kill.report.park_id);
        } else if (!mg_gone_errno(r)) {
                /* still frozen: the record stays for the next guard */
                sl->park_recorded = false;
                mg_guard_log(g, MG_LOG_ERR, "%s: park %" PRIu64 " left open by the guard's end: cannot thaw: %s",
                             g->path, sl->kill.report.park_id, strerror(-r));
        }
}

int mg_park_recover(struct mg_cgroup *cg) {
        char buf[MG_PARK_RECORD_MAX + 1];
        struct mg_park_record rec;
        ssize_t n;
        int r;

        n = mg_cgroup_get_xattr(cg, MG_PARK_XATTR, buf, sizeof(buf) - 1);
        if (n == -ENODATA || n == -EOPNOTSUPP)
                return 0;
        if (mg_cgroup_tenant_writes(cg))
                return -EPERM; /* the tenant's own words: left as they are */
        if (n < 0)
                return n == -ERANGE ? -EBADMSG : (int) n;
        r = mg_park_record_parse(buf, (size_t) n, &rec);
        if (r < 0)
                return r;
        r = freeze_read(cg);
        if (r < 0 && r != -ENOENT)
                return r;
        /* Frozen: a park, live or past its deadline, is a guard's to end
         * (mg_guard_new() takes it over; past its deadline its first tick
         * kills, with the kill record and MG_EVENT_KILL a worker counts).
         * Not frozen, or no freezer: stale. */
        if (r <= 0)
                (void) mg_cgroup_remove_xattr(cg, MG_PARK_XATTR);
        return 0;
}
