/* SPDX-License-Identifier: Apache-2.0 */
#ifndef MEMGUARD_MEMGUARD_H
#define MEMGUARD_MEMGUARD_H

/*
 * memguard: keeps sandbox and microVM workers alive under memory pressure on
 * cgroup v2.  One guard per actor cgroup; a guard set runs many guards from
 * one thread behind a single fd.
 *
 * Conventions: fallible calls return a negative errno on failure, 0 when
 * nothing was done and 1 when something was; output parameters come last
 * and are not written on failure.  The library never prints and never exits:
 * it reports through the event and log callbacks of the options.
 *
 * Structs with a .size (a uint64_t, first) grow at the end; the caller
 * sets .size to the sizeof it was built with, and the library reads or
 * fills only the part both know: min(.size, its own sizeof).  An input
 * with a larger .size and non-zero bytes this library does not know is
 * -E2BIG; an output gets what fits, zeros in the caller's fields this
 * library does not know, and nothing past .size (which stays as set).  A
 * .size below 8 (not even .size) is -EINVAL.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memguard/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version at run time, MG_VERSION_ENCODE(major, minor,
 * patch) of the library loaded, which may be newer than the headers a
 * program was built with (MG_VERSION_NUMBER).  Never fails. */
unsigned mg_version(void);

#define MG_UNLIMITED UINT64_MAX /* "max" in a cgroup limit file */

typedef struct mg_guard mg_guard;
typedef struct mg_set mg_set;

/* memory.stat, in bytes (counters: events).  Keys the kernel did not
 * print read as 0; mg_memstat.kernel_derived says "kernel" was summed from
 * its parts because the kernel (< 5.18) has no such key. */
struct mg_memstat {
        uint64_t anon, file, kernel, kernel_stack, pagetables, sec_pagetables;
        uint64_t percpu, sock, vmalloc, shmem, file_mapped, file_dirty;
        uint64_t file_writeback, slab, slab_reclaimable, slab_unreclaimable;
        uint64_t active_anon, inactive_anon, active_file, inactive_file;
        uint64_t unevictable;
        uint64_t workingset_refault_anon, workingset_refault_file;
        uint64_t workingset_activate_anon, workingset_activate_file;
        uint64_t workingset_restore_anon, workingset_restore_file;
        uint64_t pgscan, pgsteal, pgfault, pgmajfault;
        bool kernel_derived;
};

/* One PSI line: averages in hundredths of a percent, total in usec. */
struct mg_psi_line {
        uint32_t avg10_centipct, avg60_centipct, avg300_centipct;
        uint64_t total_usec;
};

struct mg_psi {
        struct mg_psi_line some, full;
        bool has_full; /* the cpu file had no "full" line before 5.13 */
};

/* memory.events / memory.events.local */
struct mg_mem_events {
        uint64_t low, high, max, oom, oom_kill, oom_group_kill;
};

enum mg_verdict {
        MG_VERDICT_OK = 0,      /* below limit - margin: fast path */
        MG_VERDICT_NEAR,        /* at the limit, but nothing to act on */
        MG_VERDICT_STALLING,    /* stall criteria met for part of the window */
        MG_VERDICT_OVERSHOOT,   /* kill: used above the limit */
        MG_VERDICT_STALL,       /* kill: stuck at its limit for the window */
};

/* Which share of time lost decided a stall (a bit mask). */
enum mg_stall_signal {
        MG_STALL_MEMORY = 1 << 0,       /* memory.pressure some */
        MG_STALL_IO = 1 << 1,           /* io.pressure some: refaults are reads */
        MG_STALL_REFAULT = 1 << 2,      /* the refault rule decided: re-reads, no restores booked */
};

/*
 * Everything one slow-path read saw; a kill record carries one.  Sized
 * like the options (the conventions above): a caller sets .size before
 * mg_guard_report(),
 *   struct mg_report rep = { .size = sizeof(rep) };
 * and gets what fits.  One the library hands out (a kill record's) has
 * .size = the library's sizeof: fields past it do not exist there.
 */
struct mg_report {
        uint64_t size;
        uint64_t time_usec;             /* CLOCK_MONOTONIC of the read */
        uint64_t limit_bytes, margin_bytes;
        uint64_t current_bytes;         /* memory.current */
        uint64_t used_bytes;            /* anon + shmem + kernel + sock, one memory.stat read */
        uint64_t high_bytes, max_bytes; /* memory.high / memory.max, MG_UNLIMITED for max */
        struct mg_memstat stat;
        struct mg_psi memory_pressure;  /* every slow-path read */
        struct mg_psi io_pressure;
        struct mg_mem_events events;    /* memory.events.local */
        uint64_t stall_usec;            /* how long the stall criteria have held */
        unsigned stall_signals;         /* enum mg_stall_signal, for a stall */
        enum mg_verdict verdict;
        uint64_t stall_refault_bytes;   /* MG_STALL_REFAULT: file pages re-read over stall_usec */
        uint64_t stall_reclaimed_bytes; /* MG_STALL_REFAULT: what reclaim took (pgsteal) over stall_usec */
        /* Added in 0.2 too: the park this read is about (a kill record's,
         * an MG_EVENT_PARK's or _THAW's; all 0 in any other read).  See
         * mg_guard_options.park_deadline_usec. */
        uint64_t park_id;               /* the id to give mg_guard_park_end(); 0: not parked */
        uint64_t park_usec;             /* CLOCK_MONOTONIC: cgroup.freeze written */
        uint64_t frozen_usec;           /* cgroup.events "frozen 1" seen; 0: never (see park_end) */
        uint64_t park_end_usec;         /* the park ended; 0: it has not */
        uint32_t park_end;              /* enum mg_park_end: how it ended */
};

/* How a park ended (mg_report.park_end).  All but MG_PARK_END_THAW end in
 * a kill, by the worker's choice or by the guard's promise. */
enum mg_park_end {
        MG_PARK_OPEN = 0,               /* still parked (MG_EVENT_PARK) */
        MG_PARK_END_KILL = 1,           /* the worker asked for the kill (mg_guard_park_end()) */
        MG_PARK_END_THAW = 2,           /* the worker thawed it (MG_EVENT_THAW) */
        MG_PARK_END_DEADLINE = 3,       /* not ended by park_deadline_usec: killed */
        MG_PARK_END_BOUND = 4,          /* used grew past the hard bound while frozen: killed */
        MG_PARK_END_NOT_FROZEN = 5,     /* not frozen within kill_wait_usec (at least 3 s): killed */
        MG_PARK_END_OVER_LIMIT = 6,     /* a thaw was asked, but used was above the limit: killed, still frozen */
        MG_PARK_END_NO_FREEZE = 7,      /* cgroup.freeze could not be written (before 5.2: none): killed at once */
};

enum mg_kill_reason {
        MG_KILL_OVERSHOOT = 1,
        MG_KILL_STALL = 2,
};

enum mg_kill_method {
        MG_KILL_CGROUP_KILL = 1,        /* cgroup.kill (5.14+) */
        MG_KILL_PIDFD = 2,              /* pidfd_send_signal per member */
};

/*
 * What MG_EVENT_KILL hands out.  .size is the library's sizeof, so a
 * caller built against a newer header can tell which fields this library
 * has (a field exists if it ends within .size, and a report field within
 * .report.size).  The report comes last: it grows at the end of the record
 * without moving the fields before it.  A copy kept in a struct of the
 * caller's own build is a whole struct assignment; one cut to an older
 * layout has its .size set to what it holds before mg_kill_record_format().
 */
struct mg_kill_record {
        uint64_t size;
        enum mg_kill_reason reason;
        enum mg_kill_method method;
        const char *cgroup;             /* the actor's cgroup path */
        uint64_t detect_usec;           /* first tick that saw the condition */
        uint64_t kill_usec;             /* signal sent */
        uint64_t empty_usec;            /* cgroup.events populated 0; 0 if not seen */
        bool empty_timed_out;           /* gave up waiting for populated 0 */
        struct mg_report report;        /* the read that decided */
};

enum mg_event_type {
        MG_EVENT_KILL = 1,      /* .kill valid; delivered once the cgroup is empty */
        MG_EVENT_LEND_BEGIN,    /* .lend valid */
        MG_EVENT_LEND_END,      /* .lend valid; .lend->restored: memory.high written back */
        MG_EVENT_LEND_EXPIRED,  /* the deadline ended the lend (.lend->restored, as for END) */
        MG_EVENT_ERROR,         /* .error valid; the guard keeps going */
        MG_EVENT_GONE,          /* the cgroup vanished; the guard stops */
        MG_EVENT_KERNEL_OOM,    /* memory.events.local oom_kill rose */
        MG_EVENT_THROTTLED,     /* .throttle valid: held over memory.high; not a kill */
        MG_EVENT_EMPTY_OVER_LIMIT, /* .report valid: over the limit with no process; not a kill */
        MG_EVENT_UNKILLABLE,    /* .unkillable and .kill valid: members outlived the kill wait */
        /* Added in 0.2 (a caller built against 0.1 ignores them, as it
         * does any type it does not know). */
        MG_EVENT_KILL_DRY_RUN,  /* .kill valid: a kill MG_GUARD_DRY_RUN did not make */
        MG_EVENT_PRE_KILL,      /* .kill valid: a kill about to be made; see mg_guard_defer_kill() */
        MG_EVENT_KILL_AVERTED,  /* .kill and .report valid: a deferred kill not made, the actor left its limit */
        /* Added in 0.2 too. */
        MG_EVENT_RECLAIM,       /* .reclaim valid: a dose of the reclaim actuator, done; not a kill */
        MG_EVENT_PARK,          /* .kill valid: the actor is frozen instead of killed (kill_usec 0) */
        MG_EVENT_THAW,          /* .kill and .report valid: the worker ended the park with a thaw */
};

/*
 * MG_EVENT_KILL_DRY_RUN: under MG_GUARD_DRY_RUN (mg_guard_options.flags)
 * every kill the guard would make is this event instead, with the record
 * MG_EVENT_KILL would carry (reason, method it would use, detect_usec,
 * kill_usec: when it would have been sent, the confirming read in
 * .report), except empty_usec 0 and empty_timed_out false: nothing was
 * signalled, nothing emptied.  It comes at once (there is no wait for the
 * cgroup to empty).  It is a type of its own, not MG_EVENT_KILL with a
 * flag, so that a caller that does not know it never takes it for a kill.
 * The same would-be kill is not told every tick: after one, the guard
 * holds off until the actor has stayed below its fast-path line for half
 * a stall window (its windows start over, as after a kill), or for
 * MG_DRY_RUN_HOLDOFF_USEC, whichever comes first; then a kill verdict is
 * told again.
 *
 * MG_EVENT_PRE_KILL: with mg_guard_options.pre_kill_max_defer_usec set
 * (0, the default, is off: no such event), a kill the guard has decided
 * and confirmed is told first, with the record it would carry (kill_usec
 * 0: not sent).  The callback may call mg_guard_defer_kill() on that
 * guard to put it off; if it does not, the kill follows in the same tick.
 * A deferred kill is made when the deferral ends unless a fresh read
 * (memory.current and memory.stat, as before any kill) shows the actor
 * has left its limit (an overshoot: used or memory.current at the limit
 * or below; a stall: memory.current below the fast-path line): then no
 * kill, MG_EVENT_KILL_AVERTED with the deferred record in .kill and that
 * read in .report, and a log line.  Ticks go on meanwhile, and a deferral
 * never covers an actor past the hard bound (mg_guard_defer_kill()): it
 * is killed at the first tick that sees it there.  A lend that begins
 * meanwhile ends the deferral (kills are paused); the kill is decided
 * anew after the lend.  Under MG_GUARD_DRY_RUN the same steps run and the
 * kill they end in is MG_EVENT_KILL_DRY_RUN.
 */
#define MG_DRY_RUN_HOLDOFF_USEC (60 * UINT64_C(1000000))

/*
 * MG_EVENT_EMPTY_OVER_LIMIT: used is above the limit (an overshoot, both
 * reads agree) but the cgroup has no process (cgroup.events "populated 0"),
 * so there is nothing to kill and a kill would free nothing.  Delivered
 * once per episode, with a log line; the episode ends when used is back at
 * the limit or below, or a process appears.  A process in the cgroup is
 * judged by the usual rule: one that joins while the memory is still
 * charged is in an overshoot, and is killed.
 * .report is the read that saw it; its parts say what holds the memory,
 * and freeing it is the caller's job:
 *  - shmem: files on a tmpfs (/dev/shm, a tmpfs the actor wrote to) and
 *    SysV shm segments: remove them; a memfd charged to the actor (a
 *    microVM's guest memory) that the worker still holds: close it and
 *    unmap it.  Neither goes with rmdir: the pages stay charged.
 *  - kernel: slab (dentries, inodes) and other kernel memory outlive the
 *    processes: rmdir the cgroup, which hands them to the parent and lets
 *    the kernel free the cgroup and its reclaimable slab.
 *  - sock: buffers of sockets still open in another process: close them.
 *  - anon: pages of processes moved out of the cgroup (cgroup v2 does not
 *    move charges with a process): freed when those processes exit.
 * Page cache (stat.file) is not in used; the kernel reclaims it.
 */

/* An actor held over memory.high with nothing left to reclaim: the kernel
 * makes each allocation sleep instead of failing it, and the program only
 * gets slower.  Delivered once per episode. */
struct mg_throttle_info {
        uint64_t high_bytes, current_bytes;
        uint32_t overage_permyriad;     /* (current - high) / high */
        uint64_t est_delay_usec;        /* the kernel's sleep per 64-page (256 KiB) charge batch */
        uint64_t high_events_per_sec;
        uint32_t memory_some_permyriad; /* share of the window stalled on memory */
        uint32_t cpu_permyriad;         /* CPU used, share of one CPU */
};

/*
 * MG_EVENT_UNKILLABLE: the kill wait (kill_wait_usec) ran out and
 * cgroup.procs still lists members: they did not die of SIGKILL.  A process
 * in uninterruptible sleep ('D'), stuck in I/O on a dead NFS server or a
 * hung device, takes the signal only when that I/O returns, and killing it
 * again changes nothing.  Delivered right after the kill record
 * (MG_EVENT_KILL with empty_timed_out; .kill points to it), in the same
 * tick, once: while cgroup.procs lists the same members, a verdict to kill
 * is not acted on (no cgroup.kill, no new record, no new report).  New
 * pids, or the cgroup emptying, bring back the usual rules: the next kill,
 * and its own report if it does not take either.  What frees them is
 * outside the guard (the I/O they wait for coming back, a forced unmount, a
 * reboot); their memory stays charged meanwhile.  Members are compared as a
 * 4 KiB read of cgroup.procs shows them (about 500 pids; more_members says
 * the read was cut, and a change within it counts as new members).
 * The pids are those first listed, in cgroup.procs order: at most this many.
 */
#define MG_UNKILLABLE_MAX 16
struct mg_unkillable_info {
        uint64_t kill_usec;             /* the kill they outlived */
        uint64_t wait_usec;             /* how long after it they were still there */
        uint32_t n_members;             /* pids cgroup.procs listed */
        bool more_members;              /* more than a 4 KiB read of cgroup.procs showed */
        uint32_t n_pids;                /* filled in pids[] and states[]: min(n_members, 16) */
        int32_t pids[MG_UNKILLABLE_MAX];
        /* /proc/PID/stat field 3, of the process's main thread: 'D'
         * (uninterruptible sleep, e.g. stuck in I/O), 'R', 'S', 'Z' ...;
         * '?' where it could not be read */
        char states[MG_UNKILLABLE_MAX];
};

/* The lend an MG_EVENT_LEND_* is about.  The library owns it; fields are
 * added at the end. */
struct mg_lend_info {
        uint64_t old_high_bytes;        /* MG_UNLIMITED for "max" */
        uint64_t new_high_bytes;
        uint64_t deadline_usec;         /* absolute CLOCK_MONOTONIC; UINT64_MAX: none */
        uint64_t id;                    /* mg_guard_lend_begin()'s *ret_lend_id; never 0 */
        /* MG_EVENT_LEND_END and _EXPIRED: memory.high as read at the end,
         * and whether it was written back to old_high_bytes.  Only if it
         * still held what the lend wrote (new_high_bytes): anything else is
         * someone else's change during the lend (an in-place resize), left
         * as found (restored false, found_high_bytes that value; the log
         * says so at warning level).  The lend is over either way. */
        uint64_t found_high_bytes;      /* MG_UNLIMITED for "max" */
        bool restored;
};

/* Why the reclaim actuator wrote a dose (mg_reclaim_info.why). */
enum mg_reclaim_why {
        MG_RECLAIM_PRESSURE = 1,        /* the pressure predicate held for reclaim_windows windows */
        MG_RECLAIM_HEADROOM = 2,        /* memory.current came within reclaim_headroom_bytes of the limit */
};

/* The most pressure windows a predicate spans (reclaim_windows). */
#define MG_RECLAIM_WINDOWS_MAX 8

/*
 * What MG_EVENT_RECLAIM tells: one dose written to memory.reclaim of
 * target, what the kernel reclaimed meanwhile (the target's pgsteal, which
 * counts every page reclaim took from it, the dose's and any other), how
 * long the write took, and what fired it.  The library owns it; fields are
 * added at the end.
 */
struct mg_reclaim_info {
        const char *target;             /* the cgroup dosed */
        enum mg_reclaim_why why;
        uint64_t asked_bytes;
        uint64_t achieved_bytes;        /* pgsteal's rise over the write, in bytes */
        uint64_t duration_usec;         /* the write(2), start to end */
        /* 0, or the write's negative errno: -EAGAIN, the kernel took less
         * than asked (memory.reclaim gives up after a few rounds);
         * -ENODEV, the target went (the actuator stops). */
        int error;
        /* A dose that counts (seed 002's eligibility): no error, done
         * within MG_RECLAIM_DOSE_MAX_USEC, at least 80 % achieved. */
        bool counted;
        /* MG_RECLAIM_PRESSURE: the memory stall in each window the
         * predicate saw, oldest first (some, and full if asked). */
        uint32_t windows;
        uint64_t some_usec[MG_RECLAIM_WINDOWS_MAX];
        uint64_t full_usec[MG_RECLAIM_WINDOWS_MAX];
        /* MG_RECLAIM_HEADROOM: memory.current and the file cache (memory.stat
         * file) that fired it. */
        uint64_t current_bytes;
        uint64_t file_bytes;
};

/* A dose that takes longer than this does not count (seed 002's rule). */
#define MG_RECLAIM_DOSE_MAX_USEC UINT64_C(1000000)

struct mg_event {
        enum mg_event_type type;
        const char *cgroup;
        uint64_t time_usec;
        const struct mg_kill_record *kill;
        const struct mg_lend_info *lend;
        int error;                      /* negative errno for MG_EVENT_ERROR */
        const char *what;               /* what failed, e.g. "memory.stat" */
        uint64_t count;                 /* MG_EVENT_KERNEL_OOM: kills since the last tick */
        const struct mg_throttle_info *throttle;
        const struct mg_report *report; /* MG_EVENT_EMPTY_OVER_LIMIT: the read that saw it */
        const struct mg_unkillable_info *unkillable;
        /* Added in 0.2 too. */
        const struct mg_reclaim_info *reclaim;
};

typedef void (*mg_event_fn)(mg_guard *g, const struct mg_event *ev, void *userdata);

enum mg_log_level { MG_LOG_ERR = 3, MG_LOG_WARNING = 4, MG_LOG_INFO = 6, MG_LOG_DEBUG = 7 };
typedef void (*mg_log_fn)(int level, const char *msg, void *userdata);

/*
 * Calls from a callback.  The event and log callbacks (a guard's, a set's)
 * run inside the library's own calls: mg_guard_tick(), mg_guard_report(),
 * mg_guard_lend_begin() and _end(), mg_guard_free(), and for a set
 * mg_set_process(), mg_set_add(), mg_set_remove() and mg_set_free().  A
 * callback may call any function on the guard it is told about and on its
 * set, with these rules:
 *  - mg_guard_free() of that guard, or mg_set_free() of its set, silences
 *    it (and the set's other guards) at once: nothing more is told, so the
 *    caller may free what its callbacks use.  The free is carried out when
 *    the call that runs the callback returns (the outermost, if calls
 *    nest); that call returns as usual, and the freed handle must not be
 *    used again.  A lend ended by that free is ended then, untold.
 *  - mg_set_remove() of a guard takes it out of the set at once and frees
 *    it the same way.
 *  - mg_guard_tick() of a guard from a callback of a call on it, and
 *    mg_set_process() of a set from a callback of a call on it or on one of
 *    its guards, return -EDEADLK and do nothing: the tick or the round
 *    under way is mid-step.
 *  - Every other call works as it does outside a callback.
 * A set's guard is never freed by mg_guard_free(), in a callback or not:
 * the set owns it.
 */

/*
 * Options of one guard.  The caller fills it after mg_guard_options_init(),
 * which records sizeof in .size and tunes every threshold to the limit (see
 * docs/tuning.md); a zero field means "the tuned default".  Fields may be
 * added at the end: a library that sees a larger .size with non-zero bytes
 * it does not know returns -E2BIG.
 */
struct mg_guard_options {
        uint64_t size;
        uint64_t limit_bytes;           /* required: what the actor paid for */
        uint64_t tick_usec;             /* default 250 ms; 10 ms to 1 h */
        uint64_t margin_bytes;          /* fast path below limit - margin (or the lower kernel
                                           limit less its share of it); default limit/16 */
        uint64_t stall_window_usec;     /* stall criteria must hold this long */
        uint32_t stall_pressure_permyriad; /* memory some stall share over the window */
        uint64_t lend_deadline_usec;    /* default lend deadline */
        uint64_t kill_wait_usec;        /* how long to wait for populated 0; then the record
                                           (timed out), and MG_EVENT_UNKILLABLE */
        uint64_t post_kill_holdoff_usec;/* ignore lagging counters after a kill */
        mg_event_fn on_event;
        void *userdata;
        mg_log_fn log;
        void *log_userdata;
        /* The refault stall rule (docs/design.md): how long an actor at its
         * limit must keep losing time while it re-reads what it had to be
         * killed; the mapped window applies while it faults its pages in
         * (half its cache mapped, or a major fault every 2 s). */
        uint64_t refault_window_usec;
        uint64_t refault_mapped_window_usec;
        /* Added in 0.2. */
        uint32_t flags;                 /* MG_GUARD_*; unknown bits are -EINVAL */
        /* The longest deferral mg_guard_defer_kill() may ask for, at most
         * MG_PRE_KILL_MAX_DEFER_USEC; 0 (the default): no MG_EVENT_PRE_KILL,
         * kills are made at once. */
        uint32_t pre_kill_max_defer_usec;
        /* Added in 0.2 too: the reclaim actuator (docs/design.md, "Reclaim
         * before pressure"), off unless reclaim_dose_bytes is set.  It
         * writes one dose of reclaim_dose_bytes to memory.reclaim (5.19+;
         * mg_guard_new() returns -EOPNOTSUPP without it) of the target
         * cgroup, on a set's worker thread (a guard alone writes it in its
         * tick), and tells MG_EVENT_RECLAIM with what it achieved.  Never
         * while a lend is open.  Two triggers, either or both:
         *  - pressure: the target's memory stall (memory.pressure totals)
         *    rose by at least reclaim_some_usec (and reclaim_full_usec, if
         *    set) in each of reclaim_windows consecutive one-second windows
         *    (seed 002: 1 ms, 3 windows, the defaults when both are 0 and no
         *    headroom is set); once per episode (the windows must break
         *    before it fires again) and at most once per
         *    reclaim_cooldown_usec (default 10 s);
         *  - headroom: memory.current came within reclaim_headroom_bytes of
         *    the limit while the actor holds file cache: a dose of what
         *    brings it back (at most reclaim_dose_bytes and its cache), at
         *    most once a second.  Only on the actor's own cgroup. */
        uint64_t reclaim_dose_bytes;
        /* The cgroup dosed and watched: NULL, the actor's own; else a path
         * (seed 002's background sibling), opened at mg_guard_new(). */
        const char *reclaim_cgroup;
        uint32_t reclaim_some_usec;
        uint32_t reclaim_full_usec;
        uint32_t reclaim_windows;       /* 1 to MG_RECLAIM_WINDOWS_MAX */
        uint64_t reclaim_cooldown_usec;
        uint64_t reclaim_headroom_bytes;
        /* Added in 0.2 too: park instead of kill (see MG_EVENT_PARK); 0,
         * the default, is off.  The longest a park may last before the
         * guard kills, at most MG_PARK_MAX_USEC. */
        uint64_t park_deadline_usec;
};

enum {
        /* Decide as usual, kill nothing: each kill is MG_EVENT_KILL_DRY_RUN
         * instead (see there), and cgroup.kill is never written. */
        MG_GUARD_DRY_RUN = 1 << 0,
};

/* The bound of mg_guard_options.pre_kill_max_defer_usec: a deferral is
 * for saving state before the kill (a checkpoint, a flush), not for
 * work that needs a lend. */
#define MG_PRE_KILL_MAX_DEFER_USEC UINT32_C(60000000)

/*
 * MG_EVENT_PARK: with mg_guard_options.park_deadline_usec set, every kill
 * the guard decides and confirms (after MG_EVENT_PRE_KILL and its
 * deferral, if asked for) is a park instead: the guard writes 1 to
 * cgroup.freeze (5.2+), and once cgroup.events says "frozen 1" (its
 * processes stopped: no growth, no more disk traffic) it tells this
 * event, with the record the kill would carry (kill_usec 0, not sent;
 * report.park_id, park_usec and frozen_usec set).  The worker saves the
 * actor meanwhile (its guest memory, through mg_snapshot_write() in a
 * lend) and ends the park with mg_guard_park_end(): a kill, or a thaw
 * with a new limit.  The guard keeps the promise a kill made, with a
 * deadline: it kills the actor (still frozen: SIGKILL reaches frozen
 * tasks) and tells MG_EVENT_KILL, report.park_end saying why, if
 *  - the park is not ended by park_deadline_usec after the freeze
 *    (MG_PARK_END_DEADLINE), a lend open or not;
 *  - cgroup.events does not say frozen within kill_wait_usec, and at
 *    least 3 s (a task in uninterruptible sleep holds the freeze back, and
 *    one throttled at memory.high sleeps up to 2 s before the freezer
 *    takes it: MG_PARK_END_NOT_FROZEN);
 *  - used grows while frozen (kernel and socket memory are charged
 *    without the tasks running: a socket's receive queue) by more than
 *    limit/64, to above limit + limit/8 or to within limit/32 of
 *    memory.max, where the kernel's OOM killer would act
 *    (MG_PARK_END_BOUND); what it held at the freeze does not count;
 *  - cgroup.freeze cannot be written (MG_PARK_END_NO_FREEZE, at once:
 *    then no MG_EVENT_PARK).
 * Under MG_GUARD_DRY_RUN nothing is frozen: a would-be park is
 * MG_EVENT_KILL_DRY_RUN as any other kill.  While parked, the guard
 * reads memory.current (and memory.stat near the bound) every tick and
 * nothing else.  mg_guard_free() and mg_set_remove() of a parked guard
 * thaw the actor (a log line says so): nothing else would.
 * A park outlives its worker: before cgroup.freeze the guard writes a
 * record (the user.memguard.park xattr of the cgroup directory: the
 * park's id, the kill's reason, a CLOCK_BOOTTIME deadline), removed once
 * the park has ended (the thaw written, or the kill sent), so that a
 * worker that crashes mid-park does not leave its actor frozen for good:
 * the next mg_guard_new() takes the park over (see there).  The rules are
 * the lend record's: only on a directory no one but root and this
 * process's user can write (elsewhere, and without user xattrs before
 * 5.7, the park goes on unrecorded; the log says so).  A park taken over
 * is never thawed by the guard's end: mg_guard_free() and mg_set_remove()
 * leave it frozen, record and all, for the next guard.
 */
#define MG_PARK_MAX_USEC (3600 * UINT64_C(1000000))

/* Fills *o with defaults tuned to limit_bytes.  Returns 0 or -EINVAL. */
int mg_guard_options_init(struct mg_guard_options *o, uint64_t limit_bytes);

/*
 * Opens the actor's cgroup v2 directory (absolute path, or relative to the
 * working directory), checks it is cgroup2, opens every file it reads.
 * Neither the directory (its last component) nor any file below it may be a
 * symlink.  Far below its limit the guard keeps memory.current open (and
 * memory.events.local in a set, which watches it); the rest is opened again
 * below the directory, found by its path and known by its inode, when it
 * reaches its limit, lends or reports (-ESTALE, reported: the path names
 * another directory now).  A lend record left on the directory (see mg_guard_recover()) is
 * taken over: the guard starts lent, kills paused, and restores memory.high
 * at the record's deadline, at most its own lend deadline away
 * (MG_EVENT_LEND_EXPIRED); the log says so.  A park record (see
 * MG_EVENT_PARK) on a cgroup whose cgroup.freeze reads 1 is taken over
 * too: the guard starts parked (mg_guard_get_park_id() is the record's
 * id), tells MG_EVENT_PARK at its first tick once cgroup.events says
 * frozen (the report from a fresh read) and kills at the record's
 * deadline, at most its own park deadline away; a deadline that passed
 * while nobody ran is a kill at the first tick (MG_PARK_END_DEADLINE,
 * no MG_EVENT_PARK); the log says it was taken over.  A park record on a
 * cgroup not frozen is stale and removed.  A record (lend or park) on a
 * directory someone other than root and this process's user can write
 * is the tenant's to forge: never taken over (a warning says so).
 * Returns 0, -ENOTSUP (not cgroup2), -ENOENT, -ELOOP (a symlink), -EACCES,
 * -EINVAL, -E2BIG, -ENOMEM.
 */
int mg_guard_new(const char *cgroup_path, const struct mg_guard_options *o, mg_guard **ret);
/*
 * Frees a guard; accepts NULL, returns NULL.  A lend the guard began
 * (mg_guard_lend_begin()) and has not ended is ended first, as
 * mg_guard_lend_end() does for a guard alone (MG_EVENT_LEND_END, in this
 * call, which waits for the write): memory.high back to its previous value
 * (unless changed from outside during the lend), the lend record removed.
 * Best effort: a write that
 * fails is logged, and the record stays for mg_guard_recover().  A lend
 * the guard took over from a record at mg_guard_new() is left as found,
 * record and all: its lender may still be running (mg_set_remove() ends
 * that one too).  A park the guard made and has not ended is thawed, its
 * record removed; one it took over from a record is left frozen, record
 * and all (see MG_EVENT_PARK).  A set's guard is not freed by this (its log says so):
 * mg_set_remove() and mg_set_free() free it.  A guard a snapshot write on
 * another thread still uses (see "Threads" at mg_set_options) is freed
 * when that write ends; no event or log comes from it meanwhile.  From one
 * of its callbacks: freed when the call that runs the callback returns,
 * silent meanwhile, its lend ended untold (see "Calls from a callback").
 */
mg_guard *mg_guard_free(mg_guard *g);

/*
 * One tick for callers running their own loop: call it every
 * mg_guard_get_tick_usec().  Returns 1 if it killed, parked or restored a lend,
 * 0 otherwise, -ENODEV once the cgroup is gone, -EDEADLK from a callback
 * of a call on g (nothing done), another negative errno on a read error
 * (reported as MG_EVENT_ERROR too; never a reason to kill).  A
 * guard alone restores memory.high at its lend deadline in this call (the
 * write may reclaim for seconds: see mg_guard_lend_end()); a set's guards
 * hand that write to the set's restore worker.
 */
int mg_guard_tick(mg_guard *g);
uint64_t mg_guard_get_tick_usec(const mg_guard *g);
/* The options in force, every default filled in, into a struct whose
 * .size the caller set (sizeof, or an older build's: what fits is filled,
 * see the conventions above).  Returns 0 or -EINVAL (also for a .size
 * below 8). */
int mg_guard_get_options(const mg_guard *g, struct mg_guard_options *ret);
/* Killed, and waiting for the cgroup to empty (MG_EVENT_KILL follows). */
bool mg_guard_is_killing(const mg_guard *g);
const char *mg_guard_get_path(const mg_guard *g);
void *mg_guard_get_userdata(const mg_guard *g);

/* Reads everything the slow path reads and the verdict it would give now,
 * without acting, into a struct whose .size the caller set (sizeof, or an
 * older build's: min(.size, the library's sizeof) is filled, fields the
 * library does not know are zeroed, nothing past .size is written, .size
 * keeps the caller's value).  Returns 0, -EINVAL (also for a .size below
 * 16, that is without time_usec: checked before anything is read), or
 * another negative errno. */
int mg_guard_report(mg_guard *g, struct mg_report *ret);

/*
 * Puts off the kill an MG_EVENT_PRE_KILL is telling, by usec (relative),
 * from inside that event's callback for g (and nowhere else); see
 * MG_EVENT_PRE_KILL for what follows.  Called again in the same callback,
 * the last call counts.
 * The hard bound: no deferral while anon + shmem (memory no reclaim frees
 * without swap) is above limit + limit/8, or within limit/32 of
 * memory.max.  An actor that keeps allocating meets memory.max, where the
 * kernel's memcg OOM killer acts instead of the guard (mm/memcontrol.c,
 * mem_cgroup_out_of_memory()): it kills the one task oom_badness() picks
 * (the whole cgroup only with memory.oom.group), and leaves the guard
 * nothing but a count in memory.events.local (MG_EVENT_KERNEL_OOM): no
 * record, no report.  So the guard kills at once there, deferral or not.
 * Returns 0; -EINVAL (g NULL, usec 0); -ENOENT outside an MG_EVENT_PRE_KILL
 * callback of g; -ERANGE for usec above the guard's
 * pre_kill_max_defer_usec; -EPERM if the actor is past the hard bound (the
 * kill is made when the callback returns).
 * The callback runs on the guard's thread, inside mg_guard_tick() or
 * mg_set_process() (see "Threads" at mg_set_options), and every other
 * guard of the set waits while it runs: start the saving elsewhere and
 * return.  It may call any function on g and its set, as "Calls from a
 * callback" says; mg_set_remove() of g (or mg_guard_free() of a guard
 * alone, or mg_set_free()) there means no kill by this guard.
 */
int mg_guard_defer_kill(mg_guard *g, uint64_t usec);

/*
 * Ends the park park_id (report.park_id of MG_EVENT_PARK's record), on the
 * guard's thread (a set's: see "Threads" at mg_set_options), from the
 * event's callback or later:
 *  - MG_PARK_KILL: the actor is killed, still frozen; MG_EVENT_KILL
 *    follows once it is empty (report.park_end MG_PARK_END_KILL).
 *  - MG_PARK_THAW: the actor is judged at once against new_limit_bytes
 *    (0: the limit it had; else the guard's limit from now on, its margin
 *    keeping its share of it: raise memory.max and memory.high first, the
 *    line follows the lower of them).  Used above that limit: killed,
 *    never thawed (MG_PARK_END_OVER_LIMIT).  Else cgroup.freeze 0,
 *    MG_EVENT_THAW (.report: the read that judged it), and the guard
 *    watches it as before; a stall is judged over a fresh window (the
 *    frozen time stalled nothing).  If the thaw cannot be written, the
 *    park goes on under the limit it had.
 * A park may be ended from the freeze on, before MG_EVENT_PARK (its id is
 * mg_guard_get_park_id()'s then).
 * Returns 0 (thawed), 1 (a kill made: MG_EVENT_KILL follows), -EINVAL (g
 * NULL, an unknown action, park_id 0, new_limit_bytes MG_UNLIMITED, or
 * not 0 with MG_PARK_KILL), -ENOENT (no park open: it ended, by its
 * deadline say), -ESTALE (another park is open), or the errno of a read
 * or write (the park goes on: try again; a kill that cannot be made is
 * retried at each tick).
 */
enum mg_park_action {
        MG_PARK_KILL = 1,
        MG_PARK_THAW = 2,
};
int mg_guard_park_end(mg_guard *g, uint64_t park_id, enum mg_park_action action, uint64_t new_limit_bytes);
/* The id of the open park (from the freeze on), 0 if none. */
uint64_t mg_guard_get_park_id(const mg_guard *g);

/*
 * What a guard, or a set, has counted.  Sized, out (the conventions
 * above): the caller sets .size, the library fills min(.size, its sizeof)
 * and zeroes the rest up to .size.  Counters only go up; a guard made anew
 * starts from 0.  Events count when they are delivered (a removed guard's
 * later ones are not, see mg_set_remove()).
 */
struct mg_stats {
        uint64_t size;
        uint64_t fast_ticks;            /* memory.current below the line: nothing else read */
        uint64_t slow_ticks;            /* at the limit: memory.stat and the pressure files read */
        uint64_t kills_overshoot;       /* MG_EVENT_KILL, by reason */
        uint64_t kills_stall;
        uint64_t dry_run_kills;         /* MG_EVENT_KILL_DRY_RUN */
        uint64_t kernel_oom_kills;      /* the .count of every MG_EVENT_KERNEL_OOM */
        uint64_t errors;                /* MG_EVENT_ERROR (once per streak of an error) */
        uint64_t lends;                 /* MG_EVENT_LEND_BEGIN (taken-over lends included) */
        uint64_t lend_expiries;         /* MG_EVENT_LEND_EXPIRED */
        uint64_t throttles;             /* MG_EVENT_THROTTLED */
        uint64_t kills_deferred;        /* MG_EVENT_PRE_KILLs deferred by mg_guard_defer_kill() */
        uint64_t kills_averted;         /* MG_EVENT_KILL_AVERTED */
        /* Added in 0.2 too. */
        uint64_t reclaims;              /* MG_EVENT_RECLAIM */
        uint64_t reclaimed_bytes;       /* their achieved_bytes */
        /* Parks begun (cgroup.freeze written; MG_EVENT_PARK follows once
         * frozen): each ends thawed (MG_EVENT_THAW), killed at the
         * worker's request or expired (the guard's kill: deadline, bound,
         * not frozen, over the limit at the thaw), counted as that
         * MG_EVENT_KILL is delivered.  parks = thawed + killed + expired +
         * those open or whose kill is under way. */
        uint64_t parks;
        uint64_t parks_thawed;
        uint64_t parks_killed;
        uint64_t parks_expired;
};

/* g's counts since it was made.  Returns 0, or -EINVAL (g or ret NULL, a
 * .size below 8).  Per guard the event counters are 32 bits wide and wrap
 * after 2^32 events of a kind; the ticks are 64 bits. */
int mg_guard_get_stats(const mg_guard *g, struct mg_stats *ret);

/*
 * Lends memory.high around a snapshot write: raises it by extra_bytes
 * (MG_UNLIMITED writes "max"), pauses kills.  deadline_usec is relative;
 * 0 takes the option's default, UINT64_MAX (or any past the clock's end)
 * means none.  After it the guard restores memory.high by itself
 * (MG_EVENT_LEND_EXPIRED; see mg_guard_lend_end() for when it does not, and
 * for where the write runs in a set: the event comes once it is done).
 * *ret_lend_id (may be NULL) gets the lend's id, to give to
 * mg_guard_lend_end(): ids count up from 1 for each guard and are never
 * reused, so a lend that expired cannot be mistaken for the next one.
 * Returns 0, -EBUSY if already lent, or the errno of the memory.high write
 * (then nothing changed, and *ret_lend_id is not written).
 */
int mg_guard_lend_begin(mg_guard *g, uint64_t extra_bytes, uint64_t deadline_usec, uint64_t *ret_lend_id);
/*
 * Ends the lend lend_id: restores the exact previous memory.high and
 * resumes at once.  Only that lend: a writer whose lend expired while it
 * wrote, and whose retry (or anyone else) began a new one since, must not
 * end the new one mid-write.
 * Where the write runs: writing memory.high below what the actor holds
 * makes the writer reclaim the difference in that write (6.1 and 6.12
 * ignore O_NONBLOCK on it; 661 ms and 3.3 s were measured).  For a guard
 * alone it runs here, and this call blocks that long.  For a guard in a set
 * it runs on the set's restore worker (see "Threads" at mg_set_options):
 * this call returns 1 once the restore is queued, and the set's thread
 * goes on ticking every guard.  The lend counts as open until the restore
 * is done: mg_guard_is_lent() and mg_guard_get_lend_id() say so,
 * mg_guard_lend_begin() is -EBUSY, kills stay paused and ticks go on
 * reading; MG_EVENT_LEND_END (with .lend->restored and found_high_bytes)
 * comes from the mg_set_process() that follows the write.  If the write
 * fails, it is reported once per streak (MG_EVENT_ERROR) and retried at
 * each of the guard's ticks.  A call while a restore of this lend is under
 * way already (its deadline's, or a snapshot write's) also returns 1; the
 * event is then the one of that restore (_EXPIRED for the deadline's).
 * Only its own value: memory.high is written back only if it still holds
 * what the lend wrote.  Changed from outside meanwhile (an in-place resize
 * of the actor), it is left as found and the lend ends all the same (0, or
 * 1 in a set; MG_EVENT_LEND_END with .lend->restored false and
 * .lend->found_high_bytes, a warning in the log).  In a set the worker
 * reads memory.high just before it would write, so the window for such a
 * change stays one read however long the job waited.  The deadline's end and mg_guard_free() follow the
 * same rule.
 * Returns 0 (a guard alone: done); 1 (a guard in a set: under way, told
 * by MG_EVENT_LEND_END or _EXPIRED); -ENOENT if no lend is open (this one
 * ended or expired, and none began since); -ESTALE if a lend is open but
 * lend_id is not its id (this one expired or ended and another began, or an
 * id the guard never gave): nothing is changed, the open lend goes on; or
 * the errno of the memory.high read or write (a guard alone), or of opening
 * memory.high for the worker (a guard in a set): the lend stays open, try
 * again.
 */
int mg_guard_lend_end(mg_guard *g, uint64_t lend_id);
bool mg_guard_is_lent(const mg_guard *g);
/* The id of the open lend, 0 if none.  For a lend the caller did not
 * begin, whose id it was never given: one mg_guard_new() took over from a
 * record.  A caller ending its own lend passes the id lend_begin gave it. */
uint64_t mg_guard_get_lend_id(const mg_guard *g);

/*
 * A lend outlives the process that made it: mg_guard_lend_begin() writes a
 * record (the user.memguard.lend xattr of the cgroup directory: the
 * memory.high text it read and a CLOCK_BOOTTIME deadline) before it raises
 * memory.high, and the end of the lend removes it after the restore.  A
 * lend whose process died (a crash, SIGKILL) leaves its record.  Without
 * user xattrs (cgroupfs before 5.7) lends are not recorded, and the log
 * says so at each one.
 *
 * mg_guard_recover() ends such a lend: it writes the recorded memory.high
 * back and removes the record.  A worker runs it on each of its cgroups at
 * start-up, before making guards.  It never raises memory.high: a record above the present
 * value is removed and nothing written.
 * flags: MG_RECOVER_EXPIRED only ends a lend whose deadline has passed
 * (-EBUSY otherwise: a live process may still be lending).
 * A park record (see MG_EVENT_PARK) is a guard's to end: on a frozen
 * cgroup, past its deadline or not, it is left for mg_guard_new(), which
 * takes the park over (and kills an expired one at its first tick, told
 * as MG_EVENT_KILL); recovery never thaws and never kills.  One on a
 * cgroup not frozen is stale: removed.
 * Returns 1 if it restored memory.high, 0 if there was nothing to restore
 * (no lend record, one it dropped, a park record left or removed),
 * -EBADMSG for a record (lend or park) it cannot read, -EPERM for a
 * record on a directory someone other than root and this process's user
 * can write (left alone), -ENOTSUP (not cgroup2), -ENOENT, -ELOOP,
 * -EINVAL, or the errno of a read or write.
 */
enum {
        MG_RECOVER_EXPIRED = 1 << 0,
};
int mg_guard_recover(const char *cgroup_path, unsigned flags);

/*
 * A guard set: many guards, one thread, one fd.  Poll mg_set_get_fd() for
 * reading (EPOLLIN), or sleep until mg_set_get_timeout(), then call
 * mg_set_process().
 *
 * Threads.  A set, its guards and their callbacks belong to one thread, the
 * one that calls mg_set_process(): call every function on them from it,
 * callbacks included (its guards share one memory.stat buffer).  One
 * exception: mg_snapshot_write() may run on another thread with a guard of
 * the set (memguard/snapshot.h), if the set's thread holds the write's .lock
 * around each mg_set_process() (and any other call on the set).  The write
 * takes that lock around each of its own calls on the guard, and holds the
 * guard from start to end: mg_set_remove() (or mg_set_free()) of it
 * meanwhile takes it out of the set at once (no more ticks, watches or
 * events, its callbacks never called again) but frees it only when the
 * write ends, and leaves the write's lend for the write to end.  The end
 * of the write's lend takes the lock for its checks and bookkeeping only,
 * not for the write of memory.high between them (which may reclaim for
 * seconds).
 * A set owns one thread of its own, its restore worker, started by
 * mg_set_new() and ended by mg_set_free(): it makes the write that
 * restores memory.high at the end of its guards' lends (the deadline's,
 * mg_guard_lend_end()'s, mg_set_remove()'s), one restore at a time, so that
 * no guard of the set waits for another guard's restore; a lend whose
 * restore waits behind another's stays open (kills paused) that long.  It
 * runs none of the caller's code, blocks every signal, and confines itself
 * with mg_confine_thread(0) where that works.  The write is handed back
 * through the set's fd: the set finishes the lend's end (the lend record,
 * errors, MG_EVENT_LEND_END or _EXPIRED) in the next mg_set_process().  A
 * child made by fork() has no worker: use a set in the process that made
 * it.
 * Options: .size = sizeof; fields may be added at the end, as for
 * mg_guard_options (-E2BIG, -EINVAL: see the conventions above).
 */
struct mg_set_options {
        uint64_t size;
        mg_log_fn log;
        void *log_userdata;
};
/* o may be NULL.  Starts the set's restore worker (a thread; call it
 * before mg_confine_thread(), which refuses clone).  Returns 0, -EINVAL,
 * -E2BIG, -ENOMEM, or the errno of epoll_create1(), timerfd_create(),
 * eventfd() or pthread_create(). */
int mg_set_new(const struct mg_set_options *o, mg_set **ret);
/* Frees the set and its guards; accepts NULL, returns NULL.  Lent guards
 * have their lends ended as mg_set_remove() does, and this waits until the
 * worker has made every restore still to make, then ends the worker: it
 * may block for as long as those writes reclaim (seconds on 6.1 and 6.12).
 * Nothing is told of those ends.  From a callback of a call on s or on one
 * of its guards: the guards are removed at once, silent, and the set is
 * freed (and waited for) when that call returns. */
mg_set *mg_set_free(mg_set *s);
/* Creates a guard and adds it; the set owns it.  Same errors as
 * mg_guard_new, or -ECANCELED if a callback this runs (the new guard's
 * log) freed s: nothing is added, and s goes as this returns. */
int mg_set_add(mg_set *s, const char *cgroup_path, const struct mg_guard_options *o, mg_guard **ret);
/* Removes a guard from the set at once (no more ticks, watches, events or
 * logs from it: the caller may free what its callbacks use) and frees it.
 * A lend it holds (one it took over from a record included) is ended as
 * mg_guard_free() does, but through the set's restore worker: the call
 * does not wait for the write, and the guard is freed when the write is
 * done (in a later mg_set_process(), or mg_set_free()).  Nothing is told of
 * that end (no MG_EVENT_LEND_END); a write that fails goes to the set's log,
 * and the lend record stays for mg_guard_recover().  A restore already
 * under way ends as it is.  From a callback (the guard's own included) of
 * a call on s or on one of its guards, the guard is freed when that call
 * returns.  Returns 0, -EINVAL (not a guard of s), or the errno of
 * re-arming the set's timer. */
int mg_set_remove(mg_set *s, mg_guard *g);
size_t mg_set_size(const mg_set *s);
/* The counts of every guard of s since s was made: those in it now
 * (mg_guard_get_stats() of each, summed: one pass over the set) and those
 * removed since, up to their removal.  Returns 0, or -EINVAL (s or ret
 * NULL, a .size below 8). */
int mg_set_get_stats(const mg_set *s, struct mg_stats *ret);
int mg_set_get_fd(const mg_set *s);
/* Absolute CLOCK_MONOTONIC usec of the next due tick, UINT64_MAX if none. */
int mg_set_get_timeout(const mg_set *s, uint64_t *ret_usec);
/* Runs every due tick and pending notification, and finishes the restores
 * the worker has written (each told as MG_EVENT_LEND_END or _EXPIRED).
 * Returns the number of guards that acted (a kill, a lend that ended), or a
 * negative errno of the set itself (never of a guard): -EDEADLK from a
 * callback of a call on s or on one of its guards (nothing done).  If a
 * callback freed s, s is gone when this returns. */
int mg_set_process(mg_set *s);

const char *mg_verdict_to_string(enum mg_verdict v);
const char *mg_kill_reason_to_string(enum mg_kill_reason r);
const char *mg_event_type_to_string(enum mg_event_type t);
const char *mg_park_end_to_string(enum mg_park_end e);

/* Formats a kill record as a short OOM-style report (no trailing newline).
 * Reads only what k->size and k->report.size say exists (a field beyond
 * them reads as 0).  Returns the length it needed, like snprintf, or
 * -EINVAL for a .size that does not reach the report. */
int mg_kill_record_format(const struct mg_kill_record *k, char *buf, size_t len);

/*
 * Confines the calling thread, and threads it starts afterwards, to the
 * system calls guards need once running: reading and writing the files
 * they hold, opening files below a cgroup directory (PSI triggers, new
 * guards, mg_guard_recover()) and /proc/PID/stat (MG_EVENT_UNKILLABLE),
 * listing a directory, lends and their records, kills (cgroup.kill,
 * pidfd_open, pidfd_send_signal), a set's epoll and timerfd, poll, clocks,
 * and libc's memory, locks and exit.  Any other call fails with EPERM: a
 * mistake in the list is an error the guard reports, not a crash.  So does
 * openat with O_CREAT, O_TRUNC or O_TMPFILE; openat2, whose flags seccomp
 * cannot see, fails with ENOSYS, and the library falls back to openat with
 * O_NOFOLLOW (for the whole process: RESOLVE_NO_XDEV is lost).  Sets
 * no_new_privs first.  Make sets before (mg_set_new() needs epoll_create1
 * and timerfd_create, and starts the set's restore worker, which needs
 * clone); guards may still be added and removed.  The sets' workers confine
 * themselves with the same list (flags 0) when they start, whether this is
 * called or not.  It cannot be undone.  See docs/security.md for the list
 * and why.
 * flags: MG_CONFINE_SUPERVISOR also allows wait4, waitid, kill, access and
 * rmdir, for a supervisor that runs a command in a cgroup it made and
 * removes it when the command ends.  MG_CONFINE_PATHS also restricts file
 * access with Landlock (5.13+): read and write below the cgroup2 mounts
 * (and remove directories there, with MG_CONFINE_SUPERVISOR), read below
 * /proc; any other open fails with EACCES.  Files opened before keep their
 * access.  Not for a thread that opens other files later (a config file
 * read again, a guard on a tree outside cgroupfs).
 * Returns 1 with MG_CONFINE_PATHS if Landlock restricts the thread, 0 if
 * confined by the list only (Landlock not asked for, or absent: a kernel
 * before 5.13 or without it enabled, a build without <linux/landlock.h>),
 * -EOPNOTSUPP if built without libseccomp (nothing is confined), -EINVAL,
 * or the errno of reading /proc/self/mountinfo, of Landlock or of loading
 * the filter (a filter that fails to load leaves Landlock's restriction in
 * place).
 */
enum {
        MG_CONFINE_SUPERVISOR = 1 << 0,
        MG_CONFINE_PATHS = 1 << 1,
};
int mg_confine_thread(unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
