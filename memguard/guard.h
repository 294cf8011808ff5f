/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A guard as its units see it: the struct and what guard.c offers the
 * others.  The units, bottom up: read.c (reads, as data and errnos),
 * guard.c (the guard's clock, voice and judged reads), decide.c (the kill
 * decision and the kill), lend.c (lends), reclaim.c (the reclaim
 * actuator), park.c (freezing and thawing), tick.c (its life: new, attach, the tick, reports, free);
 * set.c hosts many.  Each uses only those below it.
 */

#include <errno.h>
#include <stdatomic.h>

#include "cgroup.h"
#include "parse.h"
#include "memguard/memguard.h"
#include "policy.h"
#include "read.h"
#include "util.h"

enum mg_guard_state {
        MG_GUARD_WATCHING,
        MG_GUARD_KILLING,       /* signalled; waiting for populated 0 */
        MG_GUARD_HOLDOFF,       /* after a kill, until lagging counters settle */
        MG_GUARD_PARKED,        /* frozen instead of killed: park.c's, until mg_guard_park_end() or its deadline */
        MG_GUARD_GONE,          /* the cgroup vanished */
};

typedef uint64_t (*mg_clock_fn)(void *userdata);

/* What an error is reported against, once per streak each: the read of a
 * file (enum mg_cgfile), or an action. */
enum {
        MG_ERR_WRITE_HIGH = MG_CG_N,    /* restoring memory.high */
        MG_ERR_KILL,                    /* cgroup.kill, or the pidfd fallback */
        MG_ERR_NOMEM,                   /* the slow path's state */
        MG_ERR_OPEN,                    /* the files a trimmed guard opens again */
        MG_ERR_FREEZE,                  /* cgroup.freeze (a park) */
        MG_ERR_N,               /* at most 32: a bit each in mg_guard.erring */
};

/* How often memory.high and memory.max are re-read for the fast-path line:
 * an outside change is seen within this (at once, in a set, when the actor
 * hits the new limit: memory.events.local changes; a set's guard on its
 * fast path waits for that).  Two preads every 120 ticks, 1.017 per tick. */
#define MG_LIMITS_REREAD_USEC (30 * UINT64_C(1000000))

/*
 * The restore of memory.high at the end of a lend, as a job: everything the
 * blocking part needs (mg_restore_run()), so that part can run on another
 * thread than the guard's, and what it found.  Writing memory.high below
 * memory.current makes the writer reclaim the difference synchronously
 * (mm/memcontrol.c memory_high_write(): a reclaim loop with retries; 6.1 and
 * 6.12 ignore O_NONBLOCK there, and the kernel suite measured 661 ms and
 * 3.3 s), so in a set it runs on the set's restore worker (memguard/worker.c),
 * or, for a snapshot write, on the write's own thread without its lock.  The
 * kernel stores the new value before it reclaims: memory.high reads the
 * restored value while the write still runs.
 * One per guard (mg_guard_lend.restore): at most one restore in flight.
 */
enum mg_job_state {
        MG_JOB_IDLE = 0,
        MG_JOB_QUEUED,          /* the set's worker has it: waiting, or writing */
        MG_JOB_CALLER,          /* a caller's thread runs it (mg_guard_lend_end_serialised()) */
        MG_JOB_DONE,            /* the worker is done; mg_set_process() finishes it */
};

/* What the set's worker runs: a guard's blocking write, a restore or a
 * reclaim dose, embedded in what it needs.  state is read without the
 * set's lock (a snapshot write waiting for the worker); the rest is the
 * guard's thread's, or the worker's while it has the job. */
enum mg_job_kind { MG_JOB_RESTORE, MG_JOB_RECLAIM };
struct mg_job {
        enum mg_job_kind kind;
        atomic_int state;               /* enum mg_job_state */
        struct mg_guard *guard;
        struct mg_job *next;            /* the worker's queues */
};

enum mg_restore_outcome {
        MG_RESTORE_WRITTEN = 1, /* memory.high written back */
        MG_RESTORE_CHANGED,     /* memory.high was not what the lend wrote: left as found */
        MG_RESTORE_NOT_RAISED,  /* a taken-over record would raise it: dropped */
};

struct mg_restore {
        /* Filled on the guard's thread before the job is handed on; only
         * read while it runs. */
        struct mg_cgroup cg;            /* memory.high alone: fd[MG_CG_HIGH], through the guard's seam */
        bool own_fd;                    /* cg's fd was opened for this restore: closed after it */
        char text[32];                  /* written back verbatim: the lend's lend_old_high */
        uint64_t lend_high_bytes;       /* what the lend wrote, in whole pages as the kernel keeps it */
        uint64_t old_high_bytes;
        uint32_t page_bytes;
        bool any_high;                  /* what the lend wrote is unknown (taken over, unread) */
        bool no_raise;                  /* a taken-over record: never raise memory.high */
        /* What it did: r is 0 or a negative errno (of the read if !read_ok,
         * else of the write); outcome and found_high_bytes when r is 0. */
        int r;
        bool read_ok;
        enum mg_restore_outcome outcome;
        uint64_t found_high_bytes;
        enum mg_event_type why;         /* MG_EVENT_LEND_END or MG_EVENT_LEND_EXPIRED */
        struct mg_job job;              /* kind MG_JOB_RESTORE */
};


/*
 * A guard's lend, all of it but the one bit a fast tick reads (mg_guard.lent,
 * in the guard's first cache line): what lend.c begins, ends, restores and
 * takes over.  Only lend.c writes it, but for mg_guard_set_clock() moving the
 * deadline with the clock and mg_guard_gone() ending it with the cgroup.
 */
struct mg_guard_lend {
        struct mg_lend_info info;       /* what its events carry */
        char old_high[32];              /* memory.high as read, written back verbatim */
        bool recorded;                  /* our lend record is on the directory */
        bool adopted;                   /* the lend came from a record found at mg_guard_new() */
        bool high_unknown;              /* taken over, memory.high unread: what the lend wrote is unknown */
        bool ending;                    /* the caller ended it, the restore is not done: ticks retry it */
        uint64_t last_id;               /* the id of the last lend begun or taken over; 0: none yet */
        struct mg_restore restore;      /* the restore in flight, if its job.state is not IDLE */
};

/* What a guard counts besides its fast ticks (mg_guard_get_stats()): the
 * events as they are delivered, 32 bits each to keep thousands of guards
 * small. */
struct mg_guard_counts {
        uint64_t slow_ticks;
        uint32_t kills_overshoot, kills_stall, dry_run_kills, kernel_oom_kills, errors;
        uint32_t lends, lend_expiries, throttles, kills_deferred, kills_averted, reclaims;
        uint32_t parks, parks_thawed, parks_killed, parks_expired;
        uint64_t reclaimed_bytes;
};

struct mg_guard {
        /* What a fast tick touches comes first, in four cache lines: this
         * one, the hot part of cg, params' line and window, and the host
         * with opt's tick (a set checks the host before and after a tick).
         * With thousands of guards, the kernel's work for each read evicts
         * the last guard's lines, and a tick costs the lines it touches. */
        enum mg_guard_state state;
        bool lent;                      /* a lend is open: the rest of it is in lend */
        bool slow;                      /* on the slow path (at its limit) since the last tick */
        bool events_watched;            /* the host watches memory.events.local (the fast path's) */
        bool empty_over;                /* see below */
        bool unkillable;                /* see below */
        bool pre_kill_open;             /* an MG_EVENT_PRE_KILL callback runs: mg_guard_defer_kill() may */
        uint32_t erring;                /* a bit per error_streak slot that is not 0 */
        mg_clock_fn clock;
        void *clock_userdata;
        uint64_t limits_due_usec;       /* next re-read of the kernel limits (see max_bytes) */
        uint64_t below_since_usec;      /* first fast tick of a stay below the line; 0 on the slow path */
        uint64_t detect_usec;           /* first slow tick with a kill verdict */
        struct mg_slow *slow_state;     /* while at its limit, or an episode is open: mg_guard_slow_get() */
        struct mg_cgroup cg;            /* its first 64 bytes: the fds and the seam */
        struct mg_policy_params params;
        struct mg_guard_host *host;     /* the set that runs it, or NULL (mg_guard_attach()) */
        /* mg_guard_get_stats(): the one count a fast tick makes, in the
         * line it shares with params' end, the host and opt's tick. */
        uint64_t fast_ticks;
        /* The options as resolved, less what params holds alone (the
         * limit, its margin, the windows and the pressure share: zero
         * here; mg_guard_get_options() puts them back). */
        struct mg_guard_options opt;

        int error_streak[MG_ERR_N];     /* the error last reported for each; 0 once it works again */
        unsigned holds;                 /* mg_guard_hold()s not released yet */
        bool detached;                  /* freed, or removed: silent; if held, freed by the last release */
        unsigned busy;                  /* calls on it under way on its thread (mg_guard_enter()) */
        bool free_pending;              /* freed by a callback: the outermost call's mg_guard_leave() frees it */

        char *path;
        uint64_t holdoff_until_usec;
        uint64_t park_last_id;          /* the id of the last park begun; 0: none yet */

        struct mg_guard_lend lend;      /* lend.c's */
        struct mg_reclaim *reclaim;     /* reclaim.c's; NULL unless armed (its checks are on the tick) */

        struct mg_mem_events last_events;
        bool have_last_events;
        uint64_t last_high_events;      /* memory.events.local high at the last slow tick, or UINT64_MAX */
        uint64_t throttle_until_usec;   /* read memory.high and cpu.stat until then (at memory.high) */
        /* The fast-path line follows memory.high and memory.max: read at
         * mg_guard_new() and every MG_LIMITS_REREAD_USEC (on the fast path
         * only where no set watches memory.events.local), at once when
         * memory.events.local changes on the fast path, and written by the
         * guard's own lends.  memory.max, MG_UNLIMITED for "max", is kept
         * for when only memory.high moves. */
        uint64_t max_bytes;
        uint32_t page_bytes;
        bool throttled;                 /* MG_EVENT_THROTTLED sent for this episode */
        int trigger_fd[2];              /* PSI triggers on memory and io.pressure while slow, in a set */
        struct mg_throttle_info throttle;
        /* Over the limit with no process in the cgroup: MG_EVENT_EMPTY_OVER_LIMIT
         * sent for this episode, which ends when used is back at the limit
         * or below, or a process appears; empty_report is its payload
         * (empty_over, above). */
        /* Members that outlived a kill: MG_EVENT_UNKILLABLE sent, and while
         * cgroup.procs lists the same ones (count and digest, and whether
         * the read was cut) no new kill and no new report.  Forgotten when
         * the list changes or the cgroup empties (unkillable, above). */
        bool unkillable_cut;

        /* Every read lands in a buffer the guard holds: no allocation per
         * tick.  The reader's buffers are own_bufs, or in a set the set's. */
        struct mg_reader rd;
        char *own_bufs;

        struct mg_guard_counts counts;  /* the rest of mg_guard_get_stats() */
};

/*
 * What only a guard at its limit needs, about 6 KiB where the rest of a
 * guard is under 1 KiB: the policy's window, the kill record, and the
 * reports of an open episode.  Taken when the guard enters the slow path,
 * from its host's pool (a lone guard allocates its own), and given back
 * once it has stayed below its line long enough for its windows to go
 * (half a stall window) with no kill and no episode open.  With thousands
 * of actors, most of them far from their limits, a guard costs what its
 * fast path touches.
 */
struct mg_slow {
        struct mg_policy_state policy;
        struct mg_kill_record kill;             /* the last kill, for its events */
        struct mg_report empty_report;          /* MG_EVENT_EMPTY_OVER_LIMIT's payload */
        struct mg_procs unkillable_procs;       /* the members that outlived the kill */
        struct mg_unkillable_info unkillable_info;
        /* A kill put off by mg_guard_defer_kill() (kill holds its
         * record): made, or averted, at this time; 0: none. */
        uint64_t defer_until_usec;
        /* MG_GUARD_DRY_RUN: no would-be kill is told again before this
         * (or before the actor has stayed below its line, which gives this
         * state back); 0: none. */
        uint64_t dry_hold_until_usec;
        /* MG_GUARD_PARKED: the park's clock (its times are in
         * kill.report's park fields): the deadline, and whether
         * MG_EVENT_PARK went out (once frozen). */
        uint64_t park_deadline_usec;
        bool park_told;
        bool park_recorded;     /* the park record is on the directory (park.h): removed at its end */
        bool park_taken_over;   /* the park came from a record found at mg_guard_new() */
        struct mg_slow *next_free;              /* the pool's */
};

/*
 * What guard.c offers the guard's other units (tick.c, decide.c, lend.c):
 * the guard's clock, its voice (events, logs, errors once per streak) and
 * its reads, judged.
 */
/* CLOCK_MONOTONIC in usec: a guard's clock unless a test gives another. */
uint64_t mg_guard_default_clock(void *userdata);
/* CLOCK_BOOTTIME in usec: the clock of the records a guard leaves on the
 * directory (lend.h, park.h), one for every process of the boot. */
uint64_t mg_boottime_usec(void);
void mg_guard_set_clock(mg_guard *g, mg_clock_fn clock, void *userdata);
uint64_t mg_guard_now(const mg_guard *g);
void mg_guard_log(const mg_guard *g, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Delivers ev to the guard's callback (nothing once detached): the cgroup
 * and, if 0, the time are filled in. */
void mg_guard_emit(mg_guard *g, struct mg_event *ev);
/* An error, reported once per streak of it on the same file or action
 * (slot: enum mg_cgfile or MG_ERR_*), never acted on.  The log says
 * "<verb> <what>: <error>", or "<what> failed: <error>" without a verb.
 * Returns err. */
int mg_guard_error(mg_guard *g, unsigned slot, int level, const char *verb, const char *what, int err);
/* The slot works again: its next error is reported. */
static inline void mg_guard_error_clear(mg_guard *g, unsigned slot) {
        if (g->erring & (1u << slot)) {
                g->erring &= ~(1u << slot);
                g->error_streak[slot] = 0;
        }
}
/* The cgroup is gone: MG_EVENT_GONE once (what: the file that said so),
 * and the lend with it.  Returns -ENODEV. */
int mg_guard_gone(mg_guard *g, const char *what);
/* Opens again what a trimmed guard closed (mg_cgroup_open_all()): before
 * the slow path, a lend, a report.  Returns 0, -ENODEV once the cgroup is
 * gone, or the (reported) error of an open. */
int mg_guard_files_open(mg_guard *g);
/* The stall windows start over (a gap in the samples, a kill, a lend). */
void mg_guard_window_reset(mg_guard *g);
/* The slow path's PSI triggers go (a hidden pressure file, the end of the
 * slow path, the guard leaving its set). */
void mg_guard_triggers_close(mg_guard *g);
/* A hold keeps g from being freed while another thread uses it (lend.c's
 * restore job, a snapshot write): mg_guard_release() (tick.c) drops it. */
void mg_guard_hold(mg_guard *g);
/* g's counts added into *sum (mg_set_get_stats(), and a set keeping a
 * removed guard's). */
void mg_guard_stats_add(const mg_guard *g, struct mg_stats *sum);

/*
 * The guard's reads: read.c reads and says what it found; these judge a
 * failure (the cgroup gone, an error to report once, a window to start
 * over) and clear the error of a file that reads again.
 */
enum mg_read_mode {
        MG_READ_TICK,           /* a slow tick: memory.stat's decision lines; memory.high and
                                 * cpu.stat while a throttle window is open */
        MG_READ_CONFIRM,        /* the fresh read before a kill: memory.stat whole, for the record */
        MG_READ_REPORT,         /* mg_guard_report(): everything, whole, and nothing the tick keeps
                                 * (high events seen, throttle window, the line, and the stall
                                 * window when a read fails) moves */
};
/* A read or parse error of a file the decision needs (f, err: what
 * mg_read_*() returned): -ENODEV once the cgroup is gone, else reported,
 * and the stall window starts over (a gap in it says nothing) unless
 * keep_window (a report's read leaves the tick's window as it was).
 * Returns err or -ENODEV. */
int mg_guard_read_failed(mg_guard *g, enum mg_cgfile f, int err, bool keep_window);
/* memory.current, on every tick; returns 0 or the (reported) error. */
MG_HOT static inline int mg_guard_read_current(mg_guard *g, uint64_t *ret) {
        int r = mg_cgroup_read_u64(&g->cg, MG_CG_CURRENT, ret);

        if (r < 0)
                return mg_guard_read_failed(g, MG_CG_CURRENT, r, false);
        mg_guard_error_clear(g, MG_CG_CURRENT);
        return 0;
}
/* mg_read_parsed(); an error is the caller's to judge. */
int mg_guard_read_parsed(mg_guard *g, enum mg_cgfile f, void *ret);
/* The slow path's sample, judged; memory.high and cpu.stat too while the
 * actor hits memory.high (and a window after).  Returns 0 or the error of
 * a file the decision needs. */
int mg_guard_read_sample(mg_guard *g, uint64_t current, enum mg_read_mode mode, struct mg_report *rep,
                         struct mg_sample *x);
/* cgroup.events "populated" just before acting: 1 or 0; -ENODEV once
 * gone; another error is reported and returned (act as if populated). */
int mg_guard_read_populated(mg_guard *g);
/* cgroup.procs, parsed; 0, -ENODEV once gone, or a reported error. */
int mg_guard_read_members(mg_guard *g, struct mg_procs *ret, bool *ret_cut);
/* The fast-path line follows the lower of the kernel limits: the one place
 * it is drawn (mg_policy_line()). */
void mg_guard_line_follow(mg_guard *g, uint64_t high, uint64_t max);
/* memory.high and memory.max for the line, now; the next periodic re-read
 * is due in MG_LIMITS_REREAD_USEC. */
void mg_guard_limits_read(mg_guard *g);
/* Both, into a report or a kill record ("max" where unreadable). */
void mg_guard_report_limits(mg_guard *g, struct mg_report *rep);

/* a + b for points in time, saturated: UINT64_MAX is "never" (a deadline,
 * a next tick) and stays so, rather than wrapping into the past. */
static inline uint64_t mg_usec_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* What a host's wakeup stands for, when it watches an fd for a guard. */
enum mg_watch {
        MG_WATCH_CGROUP_EVENTS = 0,     /* cgroup.events: tick (waiting for empty) */
        MG_WATCH_MEM_EVENTS = 1,        /* memory.events.local: mg_guard_events_changed() */
        MG_WATCH_TRIGGER = 2,           /* a PSI trigger fired: tick now */
};

/*
 * A guard's host: what runs it besides its caller, a set (set.c).  A guard
 * asks its host for these and nothing else, and the host reaches the guard
 * only through functions; a lone guard has no host, and does without
 * (no watches, its restores on the caller's thread, its own buffer).
 */
struct mg_guard_host {
        /* Start (on) or stop waking the host when fd signals EPOLLPRI.
         * Returns 0 or a negative errno (-EPERM: fd cannot be polled). */
        int (*watch)(struct mg_guard_host *h, mg_guard *g, int fd, enum mg_watch what, bool on);
        /* The guard's next tick is due at when_usec. */
        void (*reschedule)(struct mg_guard_host *h, mg_guard *g, uint64_t when_usec);
        /* Runs the filled job (mg_restore_run(), mg_reclaim_run()) on
         * another thread and hands it back: mg_guard_restore_done() or
         * mg_reclaim_done() on the host's thread. */
        void (*queue_job)(struct mg_guard_host *h, struct mg_job *j);
        /* Speaks for a guard that left it and is silent (a removed
         * guard's last restore failed). */
        void (*log)(struct mg_guard_host *h, int level, const char *msg);
        /* Takes a zeroed struct mg_slow (NULL: out of memory) and gives
         * one back. */
        struct mg_slow *(*slow_get)(struct mg_guard_host *h);
        void (*slow_put)(struct mg_guard_host *h, struct mg_slow *sl);
        /* A call on one of its guards begins and ends (mg_guard_enter()):
         * the host frees nothing a callback removes or frees meanwhile
         * until the last ends.  May be NULL (a host that frees nothing). */
        void (*enter)(struct mg_guard_host *h);
        void (*leave)(struct mg_guard_host *h);
        /* MG_STAT_BUF_SIZE and MG_SMALL_BUF_SIZE bytes for the reads,
         * shared by the host's guards (they tick one at a time, each
         * parsing what it read before the next reads). */
        char *stat_buf;
        char *small_buf;
};

static inline struct mg_guard_host *mg_guard_get_host(const mg_guard *g) {
        return g->host;
}

/* g's open file f, or -1 (a trimmed guard keeps only memory.current and
 * memory.events.local open): for a benchmark that reads the same files. */
static inline int mg_guard_file_fd(const mg_guard *g, enum mg_cgfile f) {
        return g->cg.fd[f];
}

static inline bool mg_guard_is_gone(const mg_guard *g) {
        return g->state == MG_GUARD_GONE;
}

/* The host's hooks, for a guard that may have none. */
static inline int host_watch(mg_guard *g, int fd, enum mg_watch what, bool on) {
        if (!g->host || fd < 0)
                return -EBADF;
        return g->host->watch(g->host, g, fd, what, on);
}

static inline void host_reschedule(mg_guard *g, uint64_t when_usec) {
        if (g->host)
                g->host->reschedule(g->host, g, when_usec);
}
