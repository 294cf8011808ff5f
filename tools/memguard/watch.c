/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard watch: guards cgroups someone else made, until SIGINT/SIGTERM.
 * Either a fixed list (exits when none is left), or with --parent DIR every
 * child of DIR, as it appears (inotify on the cgroupfs directory, and a
 * scan at start) until it goes.  Each cgroup's limit: the user.memguard.limit
 * xattr of its directory, else its memory.max, else the default (--limit or
 * the config's limit).  Every option but --config is also a key of the
 * config file and its drop-ins (config-load.h); the command line wins.
 * SIGHUP re-reads them and every cgroup's limit, with the service
 * manager's reload protocol around it (notify.h); a guard whose options
 * change is made anew (once its lend is over and no kill is under way).
 * One guard set and one poll() with the signal pipe, the inotify fd and
 * the metrics writer's pipe; removing the guards at the end restores any
 * memory.high a lend left raised.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cgdir.h"
#include "util.h"
#include "cli.h"
#include "config-load.h"
#include "config.h"
#include "events.h"
#include "hook.h"
#include "journal.h"
#include "loop.h"
#include "memguard/memguard.h"
#include "metrics.h"
#include "notify.h"
#include "size.h"
#include "streak.h"

#define LIMIT_XATTR "user.memguard.limit"
/* A new child's limit is read again this long after it appeared: platforms
 * mkdir the cgroup, then write memory.max or the xattr. */
#define RECHECK_USEC ((uint64_t) 1000 * 1000)
/* Every xattr write and chmod of a child is an IN_ATTRIB: its limit is read
 * again this long after the first of a burst, once (a tenant writing its
 * xattrs in a loop costs one read per actor per interval). */
#define ATTRIB_COALESCE_USEC ((uint64_t) 100 * 1000)
/* Descriptors: a guard far below its limit holds 2 (memory.current,
 * memory.events.local), one on its slow path or reporting about a dozen
 * more for as long as it is there.  A new child is guarded only while room
 * is left for that many of them at once, and the service's own. */
#define FDS_PER_GUARD 2
#define FDS_SLOW_PATH 12
/* A guard whose reclaim actuator is armed holds 3 more: the target's
 * memory.stat, memory.pressure and memory.reclaim. */
#define FDS_RECLAIM 3
#define FDS_SLOW_GUARDS 64
#define FDS_OWN 64
#define METRICS_INTERVAL_USEC ((uint64_t) 15 * 1000000)

struct watch;

struct actor {
        char *path;                     /* as the guard opened it */
        const char *label;              /* below the cgroup2 mount: "/a/b" */
        char *name;                     /* --parent: the child's name; NULL for a listed cgroup */
        mg_guard *g;                    /* NULL: not guarded (no limit, or mg_set_add failed) */
        uint64_t limit;
        const char *source;
        struct mg_guard_options opt;    /* what g was made with */
        char *reclaim_cgroup;           /* opt.reclaim_cgroup's own copy: a reload rewrites the settings' */
        struct mgt_counts counts;       /* what the library does not count */
        uint64_t last_event_usec;       /* its guard's last event (--metrics-cgroups ranks by it); 0: none */
        bool had_lend;                  /* its guard took a lend over: the lend series are its */
        bool metrics_shown;             /* its series were in the last metrics file */
        struct mg_stats before;         /* the library's counts of the guards made anew since */
        uint64_t recheck_usec;          /* read the limit again then; 0: no */
        struct mgt_streak bad_xattr;    /* a refused LIMIT_XATTR, said once */
        struct mgt_streak bad_max;      /* a memory.max others can write, said once */
        bool readd;                     /* options changed: make g anew when it is not lent, killing or parked */
        bool dead;
        struct watch *w;
};

/* A run of the park hook under way: the runner answers by seq.  The
 * actor goes NULL when it is freed first (its reply is still told). */
struct hook_run {
        uint64_t seq, park_id, kill_id;
        struct actor *a;
        char *cgroup;                   /* as the park event said it */
        uint32_t park_end;              /* the park ended first (cancelled): how; else MG_PARK_OPEN */
};

struct metrics_round {
        struct mgt_metrics_actor *ma;
        struct actor **who;             /* ma[k]'s actor */
        struct mg_report *reps;
        struct mg_stats *stats;
        size_t n, next, k;              /* the actors w->a[0..n) at its start, the next to report, reported */
        bool on;
};

struct watch {
        struct mgt_out out;
        mg_set *set;
        struct actor **a;
        size_t n, cap;
        struct actor **index;           /* --parent: the children by name (find_child) */
        size_t index_cap;               /* a power of 2, or 0 */
        const char *parent;             /* --parent, resolved */
        uid_t euid;                     /* whose files, besides root's, are the platform's word */
        uint64_t nofile;                /* the soft RLIMIT_NOFILE */
        size_t n_guarded;               /* actors with a guard */
        size_t options_refused;         /* children whose limit the options did not fit */
        size_t reclaim_refused;         /* children refused the reclaim actuator (-EOPNOTSUPP) */
        uint64_t next_recheck;          /* the earliest actor's recheck_usec; UINT64_MAX: none */
        size_t readd_n, dead_n;         /* actors marked readd, dead: the loop's work, skipped at 0 */
        struct mgt_streak no_fds;       /* children left unguarded for want of descriptors, said once */
        int ino;                        /* inotify fd, -1 */
        const char *config;
        bool listed;                    /* CGROUPs on the command line: a config's parent is not used */
        /* The command line's settings, and the config merged under them:
         * the settings in force (a failed reload keeps them). */
        struct mgt_settings cli, eff;
        struct mgt_counts node;
        struct mgt_kill_latency latency;
        uint64_t reloads, reload_errors, metrics_skipped;
        struct mgt_metrics_writer mw;
        struct metrics_round mr;        /* the round under way (metrics_step()) */
        uint64_t metrics_interval, next_metrics;
        int notify;
        uint64_t watchdog_interval, next_watchdog;
        /* --park-hook: its runner (fd -1 without), the runs under way,
         * park-timeout in force. */
        struct mgt_hook_runner hook;
        struct hook_run *runs;
        size_t n_runs, cap_runs;
        uint64_t last_seq, park_timeout_usec;
        struct mgt_hook_stats hook_stats;
        bool hook_gone_said;
};

/* Adds the counts of x into *sum. */
static void add_stats(struct mg_stats *sum, const struct mg_stats *x) {
        sum->fast_ticks += x->fast_ticks;
        sum->slow_ticks += x->slow_ticks;
        sum->kills_overshoot += x->kills_overshoot;
        sum->kills_stall += x->kills_stall;
        sum->dry_run_kills += x->dry_run_kills;
        sum->kernel_oom_kills += x->kernel_oom_kills;
        sum->errors += x->errors;
        sum->lends += x->lends;
        sum->lend_expiries += x->lend_expiries;
        sum->throttles += x->throttles;
        sum->kills_deferred += x->kills_deferred;
        sum->kills_averted += x->kills_averted;
        sum->reclaims += x->reclaims;
        sum->reclaimed_bytes += x->reclaimed_bytes;
        sum->parks += x->parks;
        sum->parks_thawed += x->parks_thawed;
        sum->parks_killed += x->parks_killed;
        sum->parks_expired += x->parks_expired;
}

/* Adds a guard's counts into a->before, before the guard goes. */
static void actor_keep_stats(struct actor *a) {
        struct mg_stats st = { .size = sizeof(st) };

        if (a->g && mg_guard_get_stats(a->g, &st) == 0)
                add_stats(&a->before, &st);
}

static void park_ended(struct watch *w, struct actor *a, const struct mg_event *ev);

/* Removes a's guard, if it has one.  A park it had open is thawed by the
 * library (mg_set_remove()); the hook serving it is cancelled. */
static void actor_unguard(struct actor *a) {
        if (!a->g)
                return;
        if (a->w->n_runs)
                park_ended(a->w, a, &(struct mg_event) { .type = MG_EVENT_GONE });
        mgt_out_forget_guard(&a->w->out, a->g);
        (void) mg_set_remove(a->w->set, a->g);
        a->g = NULL;
        a->w->n_guarded--;
}

static struct hook_run *find_run(struct watch *w, uint64_t seq) {
        for (size_t i = 0; i < w->n_runs; i++)
                if (w->runs[i].seq == seq)
                        return &w->runs[i];
        return NULL;
}

/* The run serving a's open park, NULL if none. */
static struct hook_run *run_of(struct watch *w, const struct actor *a) {
        for (size_t i = 0; i < w->n_runs; i++)
                if (w->runs[i].a == a)
                        return &w->runs[i];
        return NULL;
}

static void run_drop(struct watch *w, struct hook_run *x) {
        free(x->cgroup);
        *x = w->runs[--w->n_runs];
}

/* A park's end told for want of the hook's answer: a kill, at once (the
 * record then says park_end "kill"), and the park-hook event that says
 * why (result "error"). */
static void park_unhooked(struct watch *w, mg_guard *g, const char *cg, uint64_t park_id, uint64_t kill_id, int err) {
        struct mgt_hook_reply r = { .result = MGT_HOOK_ERROR, .code = -err };
        struct mgt_park_hook_info h = { .cgroup = cg, .park_id = park_id, .kill_id = kill_id,
                                        .timeout_usec = w->park_timeout_usec, .reply = &r, .action = "kill" };

        mgt_hook_stats_add(&w->hook_stats, &r);
        mgt_park_hook_event(&w->out, &h);
        (void) mg_guard_park_end(g, park_id, MG_PARK_KILL, 0);
}

/*
 * MG_EVENT_PARK: the hook runs with the park's record (the event's JSON
 * object) on its stdin; its answer ends the park (hook_answer()).  A
 * request the runner cannot take (it is gone, or stuck with its socket
 * full) ends the park in a kill now: the guard's deadline would only make
 * the same kill later.
 */
static void park_begin(struct watch *w, struct actor *a, mg_guard *g, const struct mg_event *ev) {
        uint64_t park_id = ev->kill->report.park_id, kill_id = mgt_out_kill_id(&w->out, g);
        char *record = mgt_event_record(&w->out, ev, kill_id), *cg = strdup(ev->cgroup ? ev->cgroup : a->path);
        int e = -ENOMEM;

        if (record && cg && w->n_runs == w->cap_runs) {
                size_t cap = w->cap_runs ? 2 * w->cap_runs : 8;
                struct hook_run *more = reallocarray(w->runs, cap, sizeof(*more));
                if (more) {
                        w->runs = more;
                        w->cap_runs = cap;
                }
        }
        if (record && cg && w->n_runs < w->cap_runs) {
                uint64_t seq = ++w->last_seq;
                e = mgt_hook_request(&w->hook, seq, park_id, cg, record, w->park_timeout_usec);
                if (e == 0) {
                        w->runs[w->n_runs++] = (struct hook_run) { .seq = seq, .park_id = park_id, .kill_id = kill_id,
                                                                   .a = a, .cgroup = cg };
                        cg = NULL;
                }
        }
        free(record);
        if (e < 0) {
                if (e == -EPIPE && !w->hook_gone_said) {
                        w->hook_gone_said = true;
                        mgt_error(&w->out, "watch", 0, "--park-hook: its runner is gone: a new park is killed at "
                                  "once until watch restarts");
                }
                park_unhooked(w, g, cg ? cg : a->path, park_id, kill_id, e);
        }
        free(cg);
}

/* The park a run serves ended without the hook (the guard's deadline or
 * bound, the cgroup gone): the hook is cancelled, its answer told. */
static void park_ended(struct watch *w, struct actor *a, const struct mg_event *ev) {
        struct hook_run *x = run_of(w, a);

        if (!x || (ev->type != MG_EVENT_GONE && ev->kill->report.park_id != x->park_id))
                return;
        x->park_end = ev->type == MG_EVENT_GONE ? MG_PARK_OPEN : ev->kill->report.park_end;
        x->a = NULL;
        (void) mgt_hook_cancel(&w->hook, x->seq);
}

static void actor_on_event(mg_guard *g, const struct mg_event *ev, void *userdata) {
        struct actor *a = userdata;
        struct watch *w = a->w;

        mgt_counts_add(&a->counts, ev);
        mgt_counts_add(&w->node, ev);
        mgt_kill_latency_add(&w->latency, ev);
        if (ev->type != MG_EVENT_GONE)
                a->last_event_usec = mg_mono_usec();
        /* A park's end not through its hook's answer cancels the hook
         * (an answer's own end finds its run gone already). */
        if (w->n_runs && (ev->type == MG_EVENT_GONE || ev->type == MG_EVENT_THAW ||
                          (ev->type == MG_EVENT_KILL && ev->kill->report.park_id)))
                park_ended(w, a, ev);
        mgt_on_event(g, ev, &w->out);
        if (ev->type == MG_EVENT_PARK && w->hook.fd >= 0)
                park_begin(w, a, g, ev);
        /* The set allows removing a guard from its own callback. */
        if (ev->type == MG_EVENT_GONE) {
                actor_unguard(a);
                a->dead = true;
                w->dead_n++;
                mgt_unwatch_event(&w->out, a->path, "removed");
        }
}

/* The limit of a's cgroup, by the order above.  Returns 0 with *ret_limit
 * and *ret_source, or -ENOENT if none applies.  A tenant must not set its
 * own limit: the xattr counts only on a directory no one but root and
 * watch's user can write, memory.max only if the same holds for the file
 * (cgroup delegation chowns the directory, never the parent's limits on
 * it).  A refused value is said once per streak (streak.h): every
 * IN_ATTRIB of the directory reads it again. */
static int resolve_limit(struct watch *w, struct actor *a, uint64_t *ret_limit, const char **ret_source) {
        const char *path = a->path;
        char v[64];
        uint64_t max;
        struct stat st;
        bool max_ok = true;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd >= 0) {
                bool tenant = fstat(fd, &st) < 0 || mg_writable_by_others(st.st_uid, st.st_mode, w->euid);
                ssize_t n = fgetxattr(fd, LIMIT_XATTR, v, sizeof(v) - 1);
                bool too_long = n < 0 && errno == ERANGE; /* no size is 63 bytes long */
                struct stat mst;
                max_ok = fstatat(fd, "memory.max", &mst, AT_SYMLINK_NOFOLLOW) == 0 &&
                         !mg_writable_by_others(mst.st_uid, mst.st_mode, w->euid);
                close(fd);
                if (too_long) {
                        snprintf(v, sizeof(v), "(longer than %zu bytes)", sizeof(v) - 1);
                        n = (ssize_t) strlen(v);
                } else if (n >= 0) {
                        v[n] = '\0';
                }
                if (n > 0) {
                        uint64_t l;
                        while (n > 0 && (v[n - 1] == '\n' || v[n - 1] == ' '))
                                v[--n] = '\0';
                        if (tenant) {
                                if (mgt_streak_bad(&a->bad_xattr, v))
                                        mgt_error(&w->out, "watch", 0,
                                                  "%s: " LIMIT_XATTR " \"%.32s\" ignored: uid %u can write the "
                                                  "directory (mode %04o), so its tenant may have set it",
                                                  path, v, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
                        } else if (!too_long && mgt_size_parse(v, 0, 0, &l) == 0 && l > 0) {
                                mgt_streak_end(&a->bad_xattr);
                                *ret_limit = l;
                                *ret_source = "xattr";
                                return 0;
                        } else if (mgt_streak_bad(&a->bad_xattr, v)) {
                                mgt_error(&w->out, "watch", 0,
                                          "%s: " LIMIT_XATTR " \"%.32s\" is not a size above 0; ignored", path, v);
                        }
                } else {
                        /* ENODATA: none; ENOTSUP: no user xattrs on cgroupfs before 5.7 */
                        mgt_streak_end(&a->bad_xattr);
                }
        }
        if (!max_ok) {
                if (mgt_streak_bad(&a->bad_max, "memory.max"))
                        mgt_error(&w->out, "watch", 0,
                                  "%s/memory.max: ignored: someone other than root and watch's user can write it",
                                  path);
        } else if (mgt_cg_read_u64(path, "memory.max", &max) == 0 && max != MG_UNLIMITED && max > 0) {
                mgt_streak_end(&a->bad_max);
                *ret_limit = max;
                *ret_source = "memory.max";
                return 0;
        }
        if (w->eff.v[MGT_KEY_LIMIT].set) {
                *ret_limit = w->eff.v[MGT_KEY_LIMIT].value;
                *ret_source = "default";
                return 0;
        }
        return -ENOENT;
}

static const char *label_of(const char *path) {
        size_t n = strlen(MGT_CGROUP_ROOT);
        return strncmp(path, MGT_CGROUP_ROOT, n) == 0 && path[n] == '/' ? path + n : path;
}

/* a's limit read again at `at` (or earlier, if it was due sooner). */
static void schedule_recheck(struct actor *a, uint64_t at) {
        if (!a->recheck_usec || a->recheck_usec > at)
                a->recheck_usec = at;
        if (a->recheck_usec < a->w->next_recheck)
                a->w->next_recheck = a->recheck_usec;
}

/* Room for one more guard within the soft RLIMIT_NOFILE (see FDS_*).
 * Returns 0, or -EMFILE with a refusal said once per streak and a's limit
 * read again in a second (a guard gone since may have made room). */
static int fd_room(struct watch *w, struct actor *a) {
        uint64_t n = w->n_guarded + 1;
        uint64_t per_guard = FDS_PER_GUARD + (w->eff.v[MGT_KEY_RECLAIM_DOSE].set ? FDS_RECLAIM : 0);
        uint64_t need = n * per_guard + (n < FDS_SLOW_GUARDS ? n : FDS_SLOW_GUARDS) * FDS_SLOW_PATH + FDS_OWN;

        if (w->nofile == 0 || need <= w->nofile)
                return 0;
        if (mgt_streak_bad(&w->no_fds, "nofile"))
                mgt_error(&w->out, "watch", -EMFILE,
                          "%s: not guarded, nor any further child until room is made: %zu guards and the slow "
                          "paths of %d need more than the %" PRIu64 " descriptors RLIMIT_NOFILE allows (raise "
                          "LimitNOFILE)",
                          a->path, w->n_guarded, FDS_SLOW_GUARDS, w->nofile);
        schedule_recheck(a, mg_mono_usec() + RECHECK_USEC);
        return -EMFILE;
}

/*
 * A cgroup frozen when its guard is made.  A park whose record is on the
 * directory (a watch, or any worker, that died mid-park) was taken over by
 * the guard (mg_guard_new(), memguard/park.h): it goes the way of any park
 * of watch's own, MG_EVENT_PARK once frozen, the park hook with its record
 * (or, without --park-hook, the kill at the record's deadline); the
 * library's log line says it was taken over.  Any other frozen cgroup is a
 * park left unrecorded (no user xattrs on cgroupfs before 5.7, or a
 * directory its tenant can write) by a watch that stopped without ending
 * it, or the platform's own pause, or the tenant's: none of them watch's to
 * thaw; said as the guard is made, so an actor frozen within its limit,
 * which no park will come for, is not a mystery.  With --park-hook only:
 * without it watch freezes nothing.
 */
static void frozen_note(struct watch *w, struct actor *a) {
        uint64_t v, park_id = mg_guard_get_park_id(a->g);

        if (park_id) {
                mgt_note(&w->out, "%s: found frozen with the record of park %" PRIu64 ": taken over, %s", a->path,
                         park_id, w->hook.fd >= 0 ? "the park hook runs for it once it reads frozen"
                                                  : "killed at its deadline (no --park-hook to end it)");
                return;
        }
        if (w->hook.fd < 0 || mgt_cg_read_u64(a->path, "cgroup.freeze", &v) < 0 || v != 1)
                return;
        mgt_error(&w->out, "watch", 0, "%s: found frozen (cgroup.freeze 1): a park left open, unrecorded, by a watch "
                  "that stopped without ending it, or the platform's own pause; watch thaws nothing it did not "
                  "freeze (over its limit, it is parked again)", a->path);
}

/* Makes a's guard with its limit as resolved now.  Errors are reported;
 * a stays, unguarded, for the next reload.  Returns 0 or a negative errno. */
static int guard_actor(struct actor *a, bool announce) {
        struct watch *w = a->w;
        uint64_t limit;
        const char *source;
        char hint[PATH_MAX + 160];
        int e;

        e = resolve_limit(w, a, &limit, &source);
        if (e < 0) {
                mgt_error(&w->out, "watch", 0,
                          "%s: no limit (no " LIMIT_XATTR ", memory.max is max, no --limit): not guarded", a->path);
                return e;
        }
        e = mgt_settings_apply(&w->eff, limit, &a->opt);
        if (e < 0) {
                w->options_refused++;
                mgt_error(&w->out, "watch", e, "%s: options", a->path);
                return e;
        }
        free(a->reclaim_cgroup);
        a->reclaim_cgroup = NULL;
        if (a->opt.reclaim_cgroup && !(a->reclaim_cgroup = strdup(a->opt.reclaim_cgroup))) {
                mgt_error(&w->out, "watch", -ENOMEM, "%s: options", a->path);
                return -ENOMEM;
        }
        a->opt.reclaim_cgroup = a->reclaim_cgroup;
        e = fd_room(w, a);
        if (e < 0)
                return e;
        mgt_kill_options(&w->out, &a->opt);
        a->opt.on_event = actor_on_event;
        a->opt.userdata = a;
        a->opt.log = mgt_on_log;
        a->opt.log_userdata = &w->out;
        e = mg_set_add(w->set, a->path, &a->opt, &a->g);
        if (e < 0) {
                a->g = NULL;
                if (e == -EINVAL)
                        w->options_refused++;
                /* In list mode and under --parent the cgroup is on cgroup2
                 * (ENOTSUP is EOPNOTSUPP): that one is the reclaim target's. */
                if (e == -EOPNOTSUPP && a->opt.reclaim_dose_bytes)
                        w->reclaim_refused++;
                if (e == -ENOENT)
                        snprintf(hint, sizeof(hint), " (no memory controller: enable +memory in its parent%s%s)",
                                 a->opt.reclaim_cgroup ? "; or no --reclaim-cgroup " : "",
                                 a->opt.reclaim_cgroup ? a->opt.reclaim_cgroup : "");
                else if (e == -EOPNOTSUPP && a->opt.reclaim_dose_bytes)
                        snprintf(hint, sizeof(hint), " (--reclaim-dose: %s has no memory.reclaim, Linux 5.19+, or no "
                                 "memory.pressure for the pressure predicate, or is not on cgroup2)",
                                 a->opt.reclaim_cgroup ? a->opt.reclaim_cgroup : "it");
                else
                        snprintf(hint, sizeof(hint), "%s",
                                 e == -EMFILE   ? " (out of descriptors: raise LimitNOFILE; tried again in a second)"
                                 : e == -EINVAL ? " (the options do not fit its limit)"
                                                : "");
                mgt_error(&w->out, "watch", e, "%s%s", a->path, hint);
                if (e == -EMFILE || e == -ENFILE)
                        schedule_recheck(a, mg_mono_usec() + RECHECK_USEC);
                return e;
        }
        w->n_guarded++;
        mgt_streak_end(&w->no_fds);
        if (mg_guard_is_lent(a->g)) /* a dead process's lend, taken over */
                a->had_lend = true;
        a->limit = limit;
        a->source = source;
        if (announce)
                mgt_watch_event(&w->out, "watch", a->path, limit, source);
        frozen_note(w, a);
        return 0;
}

/* The children by name: an inotify event names one, and a tenant can send
 * tens of thousands a second.  Open addressing over w->a's children, at
 * most half full; rebuilt when it grows and when the dead are reaped (a
 * dead child stays findable until then, and find_child() skips it). */
static uint64_t name_hash(const char *name) {
        uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
        for (; *name; name++)
                h = (h ^ (unsigned char) *name) * UINT64_C(1099511628211);
        return h;
}

static void index_put(struct watch *w, struct actor *a) {
        size_t i = (size_t) name_hash(a->name) & (w->index_cap - 1);
        while (w->index[i])
                i = (i + 1) & (w->index_cap - 1);
        w->index[i] = a;
}

/* Fills the index again from w->a. */
static void index_refill(struct watch *w) {
        if (!w->index_cap)
                return;
        memset(w->index, 0, w->index_cap * sizeof(struct actor *));
        for (size_t i = 0; i < w->n; i++)
                if (w->a[i]->name)
                        index_put(w, w->a[i]);
}

/* Makes room for n children.  Returns 0 or -ENOMEM (the old index stays). */
static int index_grow(struct watch *w, size_t n) {
        size_t cap = 16;
        struct actor **x;

        while (cap < 2 * n)
                cap *= 2;
        x = calloc(cap, sizeof(struct actor *));
        if (!x)
                return -ENOMEM;
        free(w->index);
        w->index = x;
        w->index_cap = cap;
        index_refill(w);
        return 0;
}

static struct actor *find_child(struct watch *w, const char *name) {
        if (!w->index_cap)
                return NULL;
        for (size_t i = (size_t) name_hash(name) & (w->index_cap - 1); w->index[i]; i = (i + 1) & (w->index_cap - 1))
                if (!w->index[i]->dead && strcmp(w->index[i]->name, name) == 0)
                        return w->index[i];
        return NULL;
}

static void actor_free(struct actor *a) {
        if (!a)
                return;
        free(a->path);
        free(a->name);
        free(a->reclaim_cgroup);
        free(a);
}

/* A new actor for path (name: the child's, --parent).  Recovers a lend its
 * process left open, then guards it.  Returns the actor or NULL (ENOMEM,
 * or in list mode a failure, reported). */
static struct actor *add_actor(struct watch *w, char *path, const char *name, bool required) {
        struct actor *a = calloc(1, sizeof(*a));
        int e;

        if (a && w->n == w->cap) {
                size_t cap = w->cap ? 2 * w->cap : 16;
                struct actor **more = reallocarray(w->a, cap, sizeof(struct actor *));
                if (more) {
                        w->a = more;
                        w->cap = cap;
                }
        }
        if (!a || (name && !(a->name = strdup(name))) || w->n == w->cap) {
                free(path);
                actor_free(a);
                mgt_error(&w->out, "watch", -ENOMEM, "adding a cgroup");
                return NULL;
        }
        a->path = path;
        a->label = label_of(path);
        a->w = w;
        if (name && 2 * (w->n + 1) > w->index_cap && index_grow(w, w->n + 1) < 0) {
                actor_free(a);
                mgt_error(&w->out, "watch", -ENOMEM, "adding a cgroup");
                return NULL;
        }
        /* A lend whose process died left memory.high raised: the new
         * guard takes its record over (mg_guard_new) and restores it at the
         * record's deadline, at once if that has passed, through the set's
         * worker.  mg_guard_recover() here would write memory.high on this
         * thread, which reclaims down to it for seconds. */
        e = guard_actor(a, true);
        if (e < 0 && required) {
                actor_free(a);
                return NULL;
        }
        w->a[w->n++] = a;
        if (name)
                index_put(w, a);
        return a;
}

static void add_child(struct watch *w, const char *name) {
        char *path;
        struct actor *a;

        if (find_child(w, name))
                return;
        if (asprintf(&path, "%s/%s", w->parent, name) < 0) {
                mgt_error(&w->out, "watch", -ENOMEM, "%s/%s", w->parent, name);
                return;
        }
        a = add_actor(w, path, name, false);
        if (a)
                schedule_recheck(a, mg_mono_usec() + RECHECK_USEC);
}

static void drop_actor(struct actor *a, const char *why) {
        if (a->dead)
                return;
        actor_unguard(a);
        a->dead = true;
        a->w->dead_n++;
        mgt_unwatch_event(&a->w->out, a->path, why);
}

static bool same_path(const char *x, const char *y) {
        return x == y || (x && y && strcmp(x, y) == 0);
}

static bool same_tuning(const struct mg_guard_options *x, const struct mg_guard_options *y) {
        return x->limit_bytes == y->limit_bytes && x->tick_usec == y->tick_usec && x->margin_bytes == y->margin_bytes &&
               x->stall_window_usec == y->stall_window_usec &&
               x->stall_pressure_permyriad == y->stall_pressure_permyriad &&
               x->lend_deadline_usec == y->lend_deadline_usec && x->kill_wait_usec == y->kill_wait_usec &&
               x->post_kill_holdoff_usec == y->post_kill_holdoff_usec &&
               x->refault_window_usec == y->refault_window_usec &&
               x->refault_mapped_window_usec == y->refault_mapped_window_usec && x->flags == y->flags &&
               x->pre_kill_max_defer_usec == y->pre_kill_max_defer_usec &&
               x->reclaim_dose_bytes == y->reclaim_dose_bytes && same_path(x->reclaim_cgroup, y->reclaim_cgroup) &&
               x->reclaim_some_usec == y->reclaim_some_usec && x->reclaim_full_usec == y->reclaim_full_usec &&
               x->reclaim_windows == y->reclaim_windows && x->reclaim_cooldown_usec == y->reclaim_cooldown_usec &&
               x->reclaim_headroom_bytes == y->reclaim_headroom_bytes &&
               x->park_deadline_usec == y->park_deadline_usec;
}

/* Reads a's limit again; a guard whose options would change is made anew
 * now, or once its lend is over and no kill is under way. */
static void recheck_actor(struct actor *a) {
        struct watch *w = a->w;
        struct mg_guard_options o;
        uint64_t limit;
        const char *source;

        if (a->dead)
                return;
        if (!a->g) {
                (void) guard_actor(a, true);
                return;
        }
        if (resolve_limit(w, a, &limit, &source) < 0 || mgt_settings_apply(&w->eff, limit, &o) < 0)
                return; /* no limit any more: keep the one in force, said at the next add */
        mgt_kill_options(&w->out, &o);
        if ((!same_tuning(&o, &a->opt) || strcmp(source, a->source) != 0) && !a->readd) {
                a->readd = true;
                w->readd_n++;
        }
}

/* Re-makes the guards marked readd that are free to go. */
static void readd_pending(struct watch *w) {
        if (!w->readd_n)
                return;
        w->readd_n = 0;
        for (size_t i = 0; i < w->n; i++) {
                struct actor *a = w->a[i];
                if (!a->readd || a->dead)
                        continue;
                /* a parked guard removed would thaw its actor (mg_set_remove()) */
                if (a->g && (mg_guard_is_lent(a->g) || mg_guard_is_killing(a->g) || mg_guard_get_park_id(a->g))) {
                        w->readd_n++;
                        continue;
                }
                a->readd = false;
                actor_keep_stats(a);
                actor_unguard(a);
                (void) guard_actor(a, true);
        }
}

/*
 * The hook's answer: its park-hook event, then the park's end it asks for
 * (whose kill or thaw event follows).  A thaw takes the cgroup's limit as
 * read now, the usual way (resolve_limit(): the xattr, memory.max, the
 * default), so a hook that raised it thaws the actor into the bigger
 * limit; the guard is made anew with that limit's tuning after
 * (recheck_actor()).  Any other answer is a kill: the kill's promise
 * stands when the hook could not save the actor.
 */
static void hook_answer(struct watch *w, const struct mgt_hook_reply *r) {
        struct hook_run *x = find_run(w, r->seq);
        struct actor *a;
        struct mgt_park_hook_info h = { .reply = r, .timeout_usec = w->park_timeout_usec, .action = "none" };
        const char *source = NULL;
        uint64_t limit = 0;
        char *cg;
        int e = 0;

        mgt_hook_stats_add(&w->hook_stats, r);
        if (!x)
                return; /* not ours */
        a = x->a;
        h.cgroup = cg = x->cgroup;
        x->cgroup = NULL;
        h.park_id = x->park_id;
        h.kill_id = x->kill_id;
        if (r->result == MGT_HOOK_CANCELLED || !a || !a->g || a->dead) {
                /* gone: the cgroup removed, or watch stopping its guard */
                h.park_end = x->park_end != MG_PARK_OPEN ? mgt_park_end_name(x->park_end) : "gone";
                mgt_park_hook_event(&w->out, &h);
                run_drop(w, x);
                free(cg);
                return;
        }
        if (r->result == MGT_HOOK_THAW) {
                h.action = "thaw";
                if (resolve_limit(w, a, &limit, &source) == 0) {
                        h.limit_bytes = limit;
                        h.limit_source = source;
                }
        } else {
                h.action = "kill";
        }
        mgt_park_hook_event(&w->out, &h);
        run_drop(w, x); /* before the kill or thaw event: theirs find no run to cancel */
        if (r->result == MGT_HOOK_THAW) {
                e = mg_guard_park_end(a->g, h.park_id, MG_PARK_THAW, limit);
                if (e == 0 && limit) {
                        /* its tuning for the new limit: made anew unless equal */
                        a->limit = limit;
                        a->source = source;
                        schedule_recheck(a, mg_mono_usec());
                }
        } else {
                e = mg_guard_park_end(a->g, h.park_id, MG_PARK_KILL, 0);
        }
        if (e == -ENOENT || e == -ESTALE)
                mgt_error(&w->out, "watch", 0, "%s: park %" PRIu64 " had ended already (its kill or thaw event "
                          "says how): the hook's answer changes nothing", cg, h.park_id);
        else if (e < 0)
                mgt_error(&w->out, "watch", e, "%s: ending park %" PRIu64 " (%s): it stays frozen until its deadline "
                          "kills it", cg, h.park_id, h.action);
        free(cg);
}

/* The runner's answers, all there are. */
static void read_hook(struct watch *w) {
        struct mgt_hook_reply r;
        int e;

        while ((e = mgt_hook_read(&w->hook, &r)) == 1)
                hook_answer(w, &r);
        if (e < 0 && !w->hook_gone_said) {
                size_t open = 0;
                for (size_t i = 0; i < w->n_runs; i++)
                        open += w->runs[i].a != NULL;
                w->hook_gone_said = true;
                mgt_error(&w->out, "watch", 0, "--park-hook: its runner is gone: parks under way (%zu) end at "
                          "their deadline, and a new park is killed at once until watch restarts", open);
                /* no answer will come for them */
                while (w->n_runs)
                        run_drop(w, &w->runs[w->n_runs - 1]);
        }
}

static void reap_dead(struct watch *w) {
        size_t j = 0;

        if (!w->dead_n || w->mr.on)
                return;
        w->dead_n = 0;
        for (size_t i = 0; i < w->n; i++) {
                if (w->a[i]->dead)
                        actor_free(w->a[i]);
                else
                        w->a[j++] = w->a[i];
        }
        if (j < w->n) {
                w->n = j;
                index_refill(w);
        }
}

/* The settings of the config file and its drop-ins (none without
 * --config) with the command line's over them.  Returns 0, or a negative
 * errno with the reason reported and in err. */
static int load_settings(struct watch *w, struct mgt_settings *ret, char *err, size_t err_len) {
        struct mgt_settings s = {};
        char why[512];
        int r;

        if (w->config) {
                r = mgt_config_load(w->config, &s, err, err_len);
                if (r < 0) {
                        mgt_error(&w->out, "watch", 0, "%s", err);
                        return r;
                }
        }
        mgt_settings_merge(&s, &w->cli);
        /* CGROUPs listed on the command line win over a config's parent. */
        if (w->listed)
                s.v[MGT_KEY_PARENT].set = false;
        if (mgt_settings_check(&s, w->config ? "" : "--", why, sizeof(why)) < 0) {
                if (w->config)
                        snprintf(err, err_len, "--config %s with the command line: %s", w->config, why);
                else
                        snprintf(err, err_len, "%s", why);
                mgt_error(&w->out, "watch", 0, "%s", err);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

/* What the settings say of watch itself, not of a guard: a change of
 * dry-run or pre-kill-defer reaches each guard as it is made anew
 * (recheck_actor()). */
static void apply_run_settings(struct watch *w, const struct mgt_settings *s) {
        const struct mgt_setting *v = s->v;
        uint64_t interval = v[MGT_KEY_METRICS_INTERVAL].set ? v[MGT_KEY_METRICS_INTERVAL].value : METRICS_INTERVAL_USEC;

        w->out.dry_run = v[MGT_KEY_DRY_RUN].set && v[MGT_KEY_DRY_RUN].value;
        w->out.pre_kill_defer_usec = v[MGT_KEY_PRE_KILL_DEFER].set ? v[MGT_KEY_PRE_KILL_DEFER].value : 0;
        /* the runs asked for from now on; the guards' deadlines as each is made anew */
        w->park_timeout_usec = mgt_settings_park_timeout(s);
        w->out.park_hook_timeout_usec = w->park_timeout_usec;
        if (interval != w->metrics_interval && w->next_metrics != UINT64_MAX)
                w->next_metrics = mg_mono_usec() + interval;
        w->metrics_interval = interval;
}

/* The keys read at start only: the parent is the inotify watch made then,
 * the metrics writer and the park hook's runner processes forked before
 * the guards, mlockall and the output's format a set-up the confined
 * thread cannot redo. */
static const enum mgt_key start_only[] = { MGT_KEY_PARENT, MGT_KEY_METRICS, MGT_KEY_MLOCK, MGT_KEY_JSON,
                                           MGT_KEY_PARK_HOOK };

/* A reload's settings keep the start-only values in force, and say each
 * one the config changes, until a restart takes it. */
static void keep_start_only(struct watch *w, struct mgt_settings *next) {
        for (size_t i = 0; i < sizeof(start_only) / sizeof(start_only[0]); i++) {
                enum mgt_key k = start_only[i];
                if (mgt_setting_equal(next, &w->eff, k))
                        continue;
                mgt_error(&w->out, "watch", 0, "--config %s: %s changed: watch reads it at start only, the value in "
                          "force stays until a restart", w->config, mgt_key_name(k));
                mgt_setting_copy(next, &w->eff, k);
        }
}

/*
 * SIGHUP: the config again, then every cgroup's limit.  Under systemd's
 * Type=notify-reload the manager waits for RELOADING=1, with a
 * MONOTONIC_USEC= later than its request (so an earlier reload's answer is
 * not taken for this one's), then READY=1.  A config with an error keeps
 * the last good settings; STATUS= says why.  The reload of systemd's
 * protocol cannot fail (READY=1 ends it either way): the unit's
 * ExecReload=, `memguard config-parse`, is what fails `systemctl reload`
 * on such a file.
 */
static void reload(struct watch *w) {
        struct mgt_settings next;
        char status[1400], err[1024];
        bool ok;

        snprintf(status, sizeof(status), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=reloading", mg_mono_usec());
        (void) mgt_notify(w->notify, status);
        w->reloads++;
        ok = load_settings(w, &next, err, sizeof(err)) == 0;
        if (ok) {
                keep_start_only(w, &next);
                apply_run_settings(w, &next);
                w->eff = next;
        } else {
                w->reload_errors++;
        }
        for (size_t i = 0; i < w->n; i++)
                recheck_actor(w->a[i]);
        readd_pending(w);
        mgt_reload_event(&w->out, w->config, w->n_guarded, ok);
        snprintf(status, sizeof(status), "READY=1\nSTATUS=guarding %zu cgroups%s%s", w->n_guarded,
                 ok ? "" : "; reload failed, the last good config is in force: ", ok ? "" : err);
        (void) mgt_notify(w->notify, status);
}

/* The children there are, at start (the inotify watch is set first, so
 * none made meanwhile is missed; one seen twice is added once) and after
 * the queue overflowed. */
static int scan_parent(struct watch *w) {
        DIR *d = opendir(w->parent);
        struct dirent *de;

        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        add_child(w, de->d_name);
        closedir(d);
        return 0;
}

/* Events were lost (the queue holds 16384 by default: two tenants writing
 * xattrs in a loop fill it in tens of milliseconds).  The parent is listed
 * again: children made meanwhile are added, and every child's limit is
 * read again, once the queue is drained.  A child removed meanwhile is
 * dropped by its guard (MG_EVENT_GONE). */
static int rescan(struct watch *w) {
        uint64_t now = mg_mono_usec();
        size_t before = w->n;
        int e;

        for (size_t i = 0; i < w->n; i++)
                schedule_recheck(w->a[i], now);
        e = scan_parent(w);
        if (e < 0) {
                mgt_error(&w->out, "watch", e, "%s: inotify queue overflowed, and listing the parent again failed",
                          w->parent);
                return e;
        }
        mgt_error(&w->out, "watch", 0,
                  "%s: inotify queue overflowed: listed again, %zu new children, every limit read again", w->parent,
                  w->n - before);
        return 0;
}

/* inotify events of the parent: children made, removed, their xattrs. */
static int read_inotify(struct watch *w) {
        char buf[16 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool overflowed = false;

        for (;;) {
                ssize_t n = read(w->ino, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return overflowed ? rescan(w) : 0;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        p += sizeof(*ev) + ev->len;
                        if (ev->mask & IN_Q_OVERFLOW) {
                                overflowed = true;
                                continue;
                        }
                        if (ev->mask & (IN_DELETE_SELF | IN_IGNORED | IN_UNMOUNT)) {
                                mgt_error(&w->out, "watch", 0, "%s: the parent cgroup was removed", w->parent);
                                return -ENOENT;
                        }
                        if (!(ev->mask & IN_ISDIR) || ev->len == 0)
                                continue;
                        if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
                                add_child(w, ev->name);
                        } else if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
                                struct actor *a = find_child(w, ev->name);
                                if (a)
                                        drop_actor(a, "removed");
                        } else if (ev->mask & IN_ATTRIB) {
                                struct actor *a = find_child(w, ev->name);
                                if (a)
                                        schedule_recheck(a, mg_mono_usec() + ATTRIB_COALESCE_USEC);
                        }
                }
        }
}

/* The soft RLIMIT_NOFILE up to the hard one (systemd's soft default is
 * 1024: about 500 guards), kept in w->nofile for fd_room(). */
static void raise_nofile(struct watch *w) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        if (rl.rlim_cur < rl.rlim_max) {
                rlim_t was = rl.rlim_cur;
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        rl.rlim_cur = was;
        }
        w->nofile = rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t) rl.rlim_cur;
}

/* A metrics round: a report on every guard (each opens and reads a dozen
 * files: about 1 ms under emulation, 10,000 of them 12 s), made
 * METRICS_BATCH at a time between the set's due ticks, then the file. */
#define METRICS_BATCH 32

static void metrics_round_free(struct metrics_round *m) {
        free(m->ma);
        free(m->who);
        free(m->reps);
        free(m->stats);
        *m = (struct metrics_round) {};
}

static void metrics_begin(struct watch *w) {
        size_t n = w->n ? w->n : 1;

        w->mr = (struct metrics_round) {
                .ma = calloc(n, sizeof(struct mgt_metrics_actor)),
                .who = calloc(n, sizeof(struct actor *)),
                .reps = calloc(n, sizeof(struct mg_report)),
                .stats = calloc(n, sizeof(struct mg_stats)),
                .n = w->n,
                .on = true,
        };
        if (!w->mr.ma || !w->mr.who || !w->mr.reps || !w->mr.stats) {
                metrics_round_free(&w->mr);
                w->metrics_skipped++;
        }
}

/* Reports on up to batch more actors.  Returns true once every actor of
 * the round is done.  No actor is reaped while a round is on: a child made
 * meanwhile waits for the next round. */
static bool metrics_step(struct watch *w, size_t batch) {
        struct metrics_round *m = &w->mr;

        for (; m->next < m->n && batch > 0; m->next++) {
                struct actor *a = w->a[m->next];
                size_t k = m->k;
                if (!a->g || a->dead)
                        continue;
                batch--;
                m->reps[k].size = sizeof(m->reps[k]);
                m->stats[k].size = sizeof(m->stats[k]);
                if (mg_guard_get_stats(a->g, &m->stats[k]) < 0)
                        m->stats[k] = (struct mg_stats) { .size = sizeof(m->stats[k]) };
                add_stats(&m->stats[k], &a->before);
                m->ma[k] = (struct mgt_metrics_actor) {
                        .cgroup = a->label,
                        .limit_bytes = a->limit,
                        .limit_source = a->source,
                        .lent = mg_guard_is_lent(a->g),
                        .report = mg_guard_report(a->g, &m->reps[k]) == 0 ? &m->reps[k] : NULL,
                        .stats = &m->stats[k],
                        .counts = &a->counts,
                        .last_event_usec = a->last_event_usec,
                        .reclaim_armed = a->opt.reclaim_dose_bytes != 0,
                        .had_lend = a->had_lend,
                        .was_selected = a->metrics_shown,
                        .parked = mg_guard_get_park_id(a->g) != 0,
                };
                m->who[k] = a;
                m->k++;
        }
        return m->next >= m->n;
}

static void metrics_finish(struct watch *w) {
        struct mg_stats node_stats = { .size = sizeof(node_stats) };
        struct timespec ts;
        size_t len;
        char *text;
        int r;

        clock_gettime(CLOCK_REALTIME, &ts);
        struct mgt_metrics_node node = {
                .stats = &node_stats,
                .counts = &w->node,
                .cgroups = w->mr.k,
                .reloads = w->reloads,
                .reload_errors = w->reload_errors,
                .metrics_skipped = w->metrics_skipped,
                .output_dropped = mgt_output_dropped(),
                .time_usec = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000,
                .version = mg_version(),
                .latency = &w->latency,
                .dry_run = w->out.dry_run,
                .pre_kill_defer = w->out.pre_kill_defer_usec != 0,
                .park = w->hook.fd >= 0,
                .hooks = &w->hook_stats,
        };
        const struct mgt_setting *cap = &w->eff.v[MGT_KEY_METRICS_CGROUPS];
        struct metrics_round m = w->mr;
        w->mr = (struct metrics_round) {};
        (void) mgt_metrics_select(m.ma, m.k, cap->set ? cap->value : MGT_METRICS_CGROUPS_DEFAULT, mg_mono_usec());
        for (size_t k = 0; k < m.k; k++)
                m.who[k]->metrics_shown = m.ma[k].selected;
        text = mg_set_get_stats(w->set, &node_stats) == 0 ? mgt_metrics_format(m.ma, m.k, &node, &len) : NULL;
        metrics_round_free(&m);
        if (!text)
                return;
        r = mgt_metrics_writer_send(&w->mw, text, len);
        if (r == 0)
                w->metrics_skipped++;
        else if (r < 0 && !w->mw.failed)
                mgt_error(&w->out, "watch", r, "--metrics");
}

/* A whole round at once (at the end: the last figures). */
static void write_metrics(struct watch *w) {
        if (!w->mr.on)
                metrics_begin(w);
        if (w->mr.on) {
                (void) metrics_step(w, SIZE_MAX);
                metrics_finish(w);
        }
}

int mgt_cmd_watch(int argc, char **argv) {
        enum { OPT_CONFIG = 0x100, OPT_KEY };
        /* Every option but --config is a key (config.h): the file may say
         * anything the command line can. */
        static const struct option opts[] = {
                { "limit", required_argument, NULL, OPT_KEY + MGT_KEY_LIMIT },
                { "tick", required_argument, NULL, OPT_KEY + MGT_KEY_TICK },
                { "margin", required_argument, NULL, OPT_KEY + MGT_KEY_MARGIN },
                { "stall-window", required_argument, NULL, OPT_KEY + MGT_KEY_STALL_WINDOW },
                { "stall-pressure", required_argument, NULL, OPT_KEY + MGT_KEY_STALL_PRESSURE },
                { "lend-deadline", required_argument, NULL, OPT_KEY + MGT_KEY_LEND_DEADLINE },
                { "kill-wait", required_argument, NULL, OPT_KEY + MGT_KEY_KILL_WAIT },
                { "post-kill-holdoff", required_argument, NULL, OPT_KEY + MGT_KEY_POST_KILL_HOLDOFF },
                { "refault-window", required_argument, NULL, OPT_KEY + MGT_KEY_REFAULT_WINDOW },
                { "refault-mapped-window", required_argument, NULL, OPT_KEY + MGT_KEY_REFAULT_MAPPED_WINDOW },
                { "reclaim-dose", required_argument, NULL, OPT_KEY + MGT_KEY_RECLAIM_DOSE },
                { "reclaim-cgroup", required_argument, NULL, OPT_KEY + MGT_KEY_RECLAIM_CGROUP },
                { "reclaim-some", required_argument, NULL, OPT_KEY + MGT_KEY_RECLAIM_SOME },
                { "reclaim-full", required_argument, NULL, OPT_KEY + MGT_KEY_RECLAIM_FULL },
                { "reclaim-windows", required_argument, NULL, OPT_KEY + MGT_KEY_RECLAIM_WINDOWS },
                { "reclaim-cooldown", required_argument, NULL, OPT_KEY + MGT_KEY_RECLAIM_COOLDOWN },
                { "reclaim-headroom", required_argument, NULL, OPT_KEY + MGT_KEY_RECLAIM_HEADROOM },
                { "metrics-cgroups", required_argument, NULL, OPT_KEY + MGT_KEY_METRICS_CGROUPS },
                { "parent", required_argument, NULL, OPT_KEY + MGT_KEY_PARENT },
                { "config", required_argument, NULL, OPT_CONFIG },
                { "metrics", required_argument, NULL, OPT_KEY + MGT_KEY_METRICS },
                { "metrics-interval", required_argument, NULL, OPT_KEY + MGT_KEY_METRICS_INTERVAL },
                { "mlock", no_argument, NULL, OPT_KEY + MGT_KEY_MLOCK },
                { "dry-run", no_argument, NULL, OPT_KEY + MGT_KEY_DRY_RUN },
                { "pre-kill-defer", required_argument, NULL, OPT_KEY + MGT_KEY_PRE_KILL_DEFER },
                { "park-hook", required_argument, NULL, OPT_KEY + MGT_KEY_PARK_HOOK },
                { "park-timeout", required_argument, NULL, OPT_KEY + MGT_KEY_PARK_TIMEOUT },
                { "json", no_argument, NULL, OPT_KEY + MGT_KEY_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, 0 };
        struct watch w = { .ino = -1, .euid = geteuid(), .next_recheck = UINT64_MAX, .mw = { .fd = -1 },
                           .next_metrics = UINT64_MAX, .hook = { .fd = -1 } };
        const char *parent_arg, *metrics, *park_hook, *what = NULL;
        bool mlock, have_kill = true;
        char err[1024], status[160];
        int c, e, sigfd, ret = MGT_EXIT_FAIL;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (c) {
                case 'h': return mgt_help("watch");
                case OPT_CONFIG: w.config = optarg; break;
                default:
                        if (c >= OPT_KEY && c < OPT_KEY + _MGT_KEY_MAX) {
                                enum mgt_key k = (enum mgt_key) (c - OPT_KEY);
                                /* --json is "json = yes" */
                                if (mgt_setting_parse(k, mgt_key_is_bool(k) ? "yes" : optarg, &w.cli, err,
                                                      sizeof(err)) < 0)
                                        return mgt_usage_error("watch", "--%s", err);
                                break;
                        }
                        return mgt_getopt_error("watch", c, argv);
                }
        }
        parent_arg = mgt_setting_str(&w.cli, MGT_KEY_PARENT);
        w.listed = optind < argc;
        if (parent_arg && w.listed)
                return mgt_usage_error("watch", "--parent %s and a list of CGROUPs: one or the other", parent_arg);
        /* Without a config what is missing is known now; with one, once
         * it is read (it may give the parent and the limit). */
        if (!w.config && !parent_arg && !w.listed && !w.cli.v[MGT_KEY_LIMIT].set)
                return mgt_usage_error("watch", "missing --limit SIZE");
        if (!w.config && !parent_arg && !w.listed)
                return mgt_usage_error("watch", "missing CGROUP (or --parent DIR)");
        if (!w.config && mgt_settings_check(&w.cli, "--", err, sizeof(err)) < 0)
                return mgt_usage_error("watch", "%s", err);

        /* Before anything is said: the config's errors at start are the
         * journal's entries too, with their priority, and in the command
         * line's format (the files' json is known once they are read). */
        if (mgt_journal_stderr_is_journal() > 0)
                (void) mgt_output_journal(MGT_JOURNAL_NATIVE);
        w.out.json = w.cli.v[MGT_KEY_JSON].set && w.cli.v[MGT_KEY_JSON].value;

        /* The config, at start: an error is fatal here, a kept setting on SIGHUP. */
        if (load_settings(&w, &w.eff, err, sizeof(err)) < 0)
                return MGT_EXIT_FAIL;
        parent_arg = mgt_setting_str(&w.eff, MGT_KEY_PARENT);
        if (!parent_arg && !w.listed)
                return mgt_usage_error("watch", "missing CGROUP (or --parent DIR)");
        if (!parent_arg && !w.eff.v[MGT_KEY_LIMIT].set)
                return mgt_usage_error("watch", "missing --limit SIZE");
        metrics = mgt_setting_str(&w.eff, MGT_KEY_METRICS);
        park_hook = mgt_setting_str(&w.eff, MGT_KEY_PARK_HOOK);
        mlock = w.eff.v[MGT_KEY_MLOCK].set && w.eff.v[MGT_KEY_MLOCK].value;
        w.out.json = w.eff.v[MGT_KEY_JSON].set && w.eff.v[MGT_KEY_JSON].value;
        apply_run_settings(&w, &w.eff);

        signal(SIGPIPE, SIG_IGN); /* the metrics writer gone is an EPIPE, not our death */
        /* Before any thread: the writer is forked from a process with one. */
        if (metrics) {
                e = mgt_metrics_writer_start(&w.mw, metrics);
                if (e < 0) {
                        mgt_error(&w.out, "watch", e, "--metrics %s: starting its writer", metrics);
                        return MGT_EXIT_FAIL;
                }
        }
        /* The park hook's runner likewise (hook.h): the confined thread
         * cannot fork or exec. */
        if (park_hook) {
                e = mgt_hook_runner_start(&w.hook, park_hook);
                if (e < 0) {
                        mgt_error(&w.out, "watch", e, "--park-hook %s: starting its runner", park_hook);
                        mgt_metrics_writer_stop(&w.mw);
                        return MGT_EXIT_FAIL;
                }
        }
        /* After the metrics writer's fork, before mg_set_new() and the
         * confinement: the output queue's writer is a thread (events.h). */
        e = mgt_output_start(STDERR_FILENO, w.out.json);
        if (e < 0)
                mgt_error(&w.out, "watch", e, "the output queue (lines are written directly)");
        w.notify = mgt_notify_open();
        if (w.notify < 0) {
                mgt_error(&w.out, "watch", w.notify, "$NOTIFY_SOCKET");
                w.notify = 0;
        }
        raise_nofile(&w);
        sigfd = mgt_signals_open(sigs);
        e = sigfd < 0 ? sigfd : mg_set_new(NULL, &w.set);
        if (e < 0) {
                mgt_error(&w.out, "watch", e, "setting up");
                goto out;
        }

        if (parent_arg) {
                char *p;
                e = mgt_cg_resolve(parent_arg, &p);
                if (e == -ENOTSUP) {
                        mgt_error(&w.out, "watch", 0, "--parent %s: not a cgroup v2 directory", parent_arg);
                        goto out;
                }
                if (e < 0) {
                        mgt_error(&w.out, "watch", e, "--parent %s", parent_arg);
                        goto out;
                }
                w.parent = p;
                w.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (w.ino < 0 || inotify_add_watch(w.ino, p, IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                                                                     IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR) < 0) {
                        mgt_error(&w.out, "watch", -errno, "--parent %s: inotify", p);
                        goto out;
                }
                e = scan_parent(&w);
                if (e < 0) {
                        mgt_error(&w.out, "watch", e, "--parent %s", p);
                        goto out;
                }
                /* Options no child's limit accepts, or a reclaim actuator
                 * this kernel cannot arm, would leave the node unguarded
                 * while the service looks up. */
                if (w.n_guarded == 0 && w.options_refused > 0) {
                        mgt_error(&w.out, "watch", 0, "--parent %s: the options fit none of the %zu children's limits",
                                  p, w.options_refused);
                        goto out;
                }
                if (w.n_guarded == 0 && w.reclaim_refused > 0) {
                        mgt_error(&w.out, "watch", -EOPNOTSUPP,
                                  "--parent %s: none of the %zu children is guarded: --reclaim-dose needs "
                                  "memory.reclaim (Linux 5.19+), and memory.pressure for the pressure predicate",
                                  p, w.reclaim_refused);
                        goto out;
                }
                char *one[] = { p };
                have_kill = mgt_all_have_cgroup_kill(one, 1);
        } else {
                for (int i = optind; i < argc; i++) {
                        char *cg;
                        e = mgt_cg_resolve(argv[i], &cg);
                        if (e == -ENOTSUP) {
                                mgt_error(&w.out, "watch", 0, "%s: not a cgroup v2 directory", argv[i]);
                                goto out;
                        }
                        if (e < 0) {
                                mgt_error(&w.out, "watch", e, "%s", argv[i]);
                                goto out;
                        }
                        if (!add_actor(&w, cg, NULL, true))
                                goto out;
                        have_kill = have_kill && mgt_all_have_cgroup_kill(&cg, 1);
                }
        }

        /* As earlyoom does: the guard's own pages stay in memory while the
         * host thrashes.  MCL_ONFAULT (4.4+) locks what is touched, not
         * every reservation (the restore worker's stack). */
        if (mlock) {
                struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
                /* Locked pages past RLIMIT_MEMLOCK need CAP_IPC_LOCK, which goes below. */
                if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
                        mgt_note(&w.out, "memguard: RLIMIT_MEMLOCK stays as it is (%s): allocations past it will fail",
                                 strerror(errno));
                if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0 && mlockall(MCL_CURRENT | MCL_FUTURE) < 0) {
                        mgt_error(&w.out, "watch", -errno, "--mlock: mlockall");
                        goto out;
                }
        }

        /* Set up: from here on only the guards' own work. */
        /* Landlock keeps the thread's opens below cgroupfs and /proc, unless
         * a config file is read again on SIGHUP (it may be anywhere). */
        e = mgt_drop_privileges(have_kill ? 0 : MGT_KEEP_KILL, w.config ? 0 : MG_CONFINE_PATHS, &what);
        if (e == -EOPNOTSUPP)
                mgt_note(&w.out, "memguard: built without libseccomp: the thread is not confined");
        else if (e < 0) {
                mgt_error(&w.out, "watch", e, "%s", what);
                goto out;
        }
        snprintf(status, sizeof(status), "READY=1\nSTATUS=guarding %zu cgroups", w.n_guarded);
        (void) mgt_notify(w.notify, status);
        w.watchdog_interval = mgt_notify_watchdog_usec() / 2;
        w.next_watchdog = w.watchdog_interval ? mg_mono_usec() : UINT64_MAX;
        w.next_metrics = metrics ? mg_mono_usec() : UINT64_MAX;

        for (;;) {
                struct pollfd p[4] = {
                        { .fd = sigfd, .events = POLLIN },
                        { .fd = w.ino, .events = POLLIN },
                        { .fd = mgt_metrics_writer_pending(&w.mw) ? w.mw.fd : -1, .events = POLLOUT },
                        { .fd = w.hook_gone_said ? -1 : w.hook.fd, .events = POLLIN },
                };
                uint64_t deadline = w.next_metrics < w.next_watchdog ? w.next_metrics : w.next_watchdog, now;
                int sig;

                if (w.next_recheck < deadline)
                        deadline = w.next_recheck;
                if (w.mr.on) /* the next batch once the due ticks are done */
                        deadline = 0;
                e = mgt_wait(w.set, p, 4, deadline);
                if (e < 0) {
                        mgt_error(&w.out, "watch", e, "guard set");
                        goto out;
                }
                while ((sig = mgt_signals_next(sigfd, NULL)) > 0) {
                        if (sig == SIGHUP) {
                                reload(&w);
                                continue;
                        }
                        mgt_note(&w.out, "memguard: stopping (signal %d)", sig);
                        ret = MGT_EXIT_OK;
                        goto out;
                }
                if (p[1].revents && read_inotify(&w) < 0)
                        goto out;
                if (p[3].revents)
                        read_hook(&w);
                if (p[2].revents && mgt_metrics_writer_flush(&w.mw) < 0)
                        mgt_error(&w.out, "watch", -EPIPE, "--metrics: the writer is gone; no more metrics");
                now = mg_mono_usec();
                if (now >= w.next_recheck) {
                        w.next_recheck = UINT64_MAX;
                        for (size_t i = 0; i < w.n; i++) {
                                struct actor *a = w.a[i];
                                if (a->recheck_usec && a->recheck_usec <= now) {
                                        a->recheck_usec = 0;
                                        recheck_actor(a);
                                } else if (a->recheck_usec && a->recheck_usec < w.next_recheck) {
                                        w.next_recheck = a->recheck_usec;
                                }
                        }
                }
                readd_pending(&w);
                reap_dead(&w);
                if (now >= w.next_metrics && !w.mr.on) {
                        metrics_begin(&w);
                        w.next_metrics += w.metrics_interval;
                        if (w.next_metrics <= now) /* a long stall of this thread: no burst of catch-ups */
                                w.next_metrics = now + w.metrics_interval;
                }
                if (w.mr.on && metrics_step(&w, METRICS_BATCH))
                        metrics_finish(&w);
                if (now >= w.next_watchdog) {
                        (void) mgt_notify(w.notify, "WATCHDOG=1");
                        w.next_watchdog = now + w.watchdog_interval;
                }
                if (!w.parent && w.n == 0) {
                        mgt_note(&w.out, "memguard: no cgroups left to watch");
                        ret = MGT_EXIT_OK;
                        goto out;
                }
        }
out:
        (void) mgt_notify(w.notify, "STOPPING=1");
        for (size_t i = 0; i < w.n; i++)
                if (w.a[i]->g && !w.a[i]->dead)
                        mgt_unwatch_event(&w.out, w.a[i]->path, "stopping");
        if (w.mw.fd >= 0 && ret == MGT_EXIT_OK && metrics) {
                write_metrics(&w); /* the last figures; the writer takes them before it sees the pipe close */
                (void) mgt_metrics_writer_flush(&w.mw);
        }
        metrics_round_free(&w.mr); /* a round cut short by an error */
        mg_set_free(w.set); /* restores lent memory.high */
        mgt_out_release(&w.out); /* after the guards' last event */
        mgt_metrics_writer_stop(&w.mw);
        /* After the guards: a park still open was thawed with them.  The
         * runner kills the groups of the hooks still running. */
        mgt_hook_runner_stop(&w.hook);
        for (size_t i = 0; i < w.n_runs; i++)
                free(w.runs[i].cgroup);
        free(w.runs);
        for (size_t i = 0; i < w.n; i++)
                actor_free(w.a[i]);
        free(w.a);
        free(w.index);
        free((char *) w.parent);
        if (w.ino >= 0)
                close(w.ino);
        mgt_output_stop(); /* after the last line */
        return ret;
}
