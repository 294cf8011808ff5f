/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The scenario library of `memguard demo` and the kernel suite
 * (tests/kernel): an actor cgroup, mg-workload processes started into it
 * (clone3(CLONE_INTO_CGROUP)) with their output kept in a file, a guard
 * set run with bounded waits, and what the guard told, counted.  The demo
 * turns the outcome into its table, the suite into TAP assertions.
 *
 * Fallible calls return 0 or a negative errno.  One thread per actor.
 */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memguard/memguard.h"
#include "ticker.h"

/* ---- what a guard told ------------------------------------------------- */

#define MGT_EVENT_N 32 /* above every enum mg_event_type */

struct mgt_events {
        int n[MGT_EVENT_N];             /* by enum mg_event_type */
        struct mg_kill_record kill;     /* the last kill (its cgroup string is the guard's) */
        uint64_t kill_time;             /* its event's time_usec */
        struct mg_throttle_info throttle; /* the last MG_EVENT_THROTTLED */
        struct mg_lend_info lend;       /* the last event with a lend */
        int gone;
        struct mg_report empty;         /* the last MG_EVENT_EMPTY_OVER_LIMIT */
        struct mg_reclaim_info reclaim; /* the first MG_EVENT_RECLAIM (its target string is the guard's) */
        struct mg_reclaim_info reclaim_last; /* and the last */
        uint64_t reclaim_time;          /* the first one's time_usec */
        struct mg_kill_record park;     /* the last MG_EVENT_PARK */
        struct mg_kill_record thaw;     /* the last MG_EVENT_THAW */
};

/* Counts ev and keeps what it carries. */
void mgt_events_record(struct mgt_events *e, const struct mg_event *ev);
/* For mgt_run(): ud is a struct mgt_events; true once a kill was told. */
bool mgt_events_killed(void *ud);
/* The same, true once a park was told. */
bool mgt_events_parked(void *ud);

/* ---- a workload process ------------------------------------------------- */

/* One process started into a cgroup; its stdout goes to a file (a pipe
 * nobody drains could stop it), read back by the calls below.
 * mgt_proc_end() keeps the start of it and its result line. */
struct mgt_proc {
        pid_t pid;                      /* -1: none */
        int pidfd;
        char out[PATH_MAX];             /* its stdout; removed by mgt_proc_end() */
        bool done;
        int status;                     /* its wait status, once done */
        char text[512], result[512];    /* kept by mgt_proc_end() */
};

/* Starts exe ARGS (NULL-terminated, at most 30) inside cg
 * (clone3(CLONE_INTO_CGROUP)), or with cg NULL where this process is (a
 * fixture run), stdout to a new file in dir.  *p is set up even on failure
 * (mgt_proc_end() accepts it). */
int mgt_proc_start(struct mgt_proc *p, const char *cg, const char *exe, const char *const args[], const char *dir);
/* Reaps it if it ended.  Returns p->done. */
bool mgt_proc_check(struct mgt_proc *p);
/* Waits (bounded) for it to end: its wait status, -ETIMEDOUT, or -ECHILD
 * if it is not (or no longer) a child to wait for. */
int mgt_proc_wait(struct mgt_proc *p, uint64_t timeout_usec);
/* SIGKILLs it if it still runs (it should be dead: its cgroup was
 * destroyed), reaps it, removes its output. */
void mgt_proc_end(struct mgt_proc *p);
/* sig (if it runs), then waits up to timeout_usec; SIGKILL after that.
 * Returns its wait status, or -ETIMEDOUT if even SIGKILL did not reap it. */
int mgt_proc_stop(struct mgt_proc *p, int sig, uint64_t timeout_usec);
/* Its whole output, malloc'd (NULL if none). */
char *mgt_proc_output_all(const struct mgt_proc *p);
/* What it printed so far, NUL-terminated, at most len - 1 bytes from the
 * start.  Returns the length. */
size_t mgt_proc_output(const struct mgt_proc *p, char *buf, size_t len);
/* Whether it printed a whole line yet. */
bool mgt_proc_printed(const struct mgt_proc *p);
/* Its last "workload=..." line, the result mg-workload prints at its
 * end, without the newline; "" if none yet.  Returns buf. */
const char *mgt_proc_result(const struct mgt_proc *p, char *buf, size_t len);
/* A KEY=value of that line: 0, -ENOENT if it has no such key, or -EBADMSG. */
int mgt_proc_result_value(const struct mgt_proc *p, const char *key, uint64_t *ret);
bool mgt_proc_exited_ok(const struct mgt_proc *p);
bool mgt_proc_sigkilled(const struct mgt_proc *p);
/* "exit 0", "signal 9", "still running".  Returns buf. */
const char *mgt_proc_status(const struct mgt_proc *p, char *buf, size_t len);

/* ---- running a guard set -------------------------------------------------- */

/* Runs s (NULL: nothing guarded, just waits) until stop(ud) is true or the
 * timeout; calls sample(ud) first and at least every 10 ms.  Either may be
 * NULL.  Returns whether stop() became true. */
bool mgt_run(mg_set *s, uint64_t timeout_usec, bool (*stop)(void *), void (*sample)(void *), void *ud);

/* ---- an actor --------------------------------------------------------------- */

#define MGT_ACTOR_PROCS 4

/*
 * One run of a scenario: a cgroup, maybe a guard on it in a set of its
 * own, the workloads in it, and what mgt_actor_run() sampled.  The demo's
 * actors; the snapshot actors of the kernel suite, the snapshot benchmark
 * and the burn-in, where the set is ticked by a second thread (tk,
 * started by the caller: mgt_ticker_start(&a->tk, a->cg, a->set)) and the
 * process may move itself in, to be charged for a guest image as a
 * microVM is (mgt_actor_enter()).  While tk runs, ev is under tk.mu.
 */
struct mgt_actor {
        char cg[PATH_MAX];
        char home[PATH_MAX];            /* where mgt_actor_enter() came from */
        bool inside;
        bool own_cg;                    /* mgt_actor_end() removes cg */
        bool ended;                     /* what it sampled and counted stays */
        mg_set *set;                    /* its own, freed by mgt_actor_end() */
        mg_guard *guard;
        struct mgt_events ev;           /* ev.kill.cgroup is cg */
        struct mgt_ticker tk;
        /* called after each event is recorded (may be NULL) */
        void (*on_event)(struct mgt_actor *a, const struct mg_event *ev);
        void *userdata;
        const char *workload;           /* mg-workload */
        const char *out_dir;            /* for the processes' output */
        struct mgt_proc proc[MGT_ACTOR_PROCS];
        unsigned n_proc;
        uint64_t start_usec;            /* when the actor was made */
        /* mgt_actor_run() samples, every 10 ms: */
        int current_fd;
        uint64_t peak;                  /* memory.current */
        uint64_t watch_bytes, crossed_usec; /* the first memory.current above watch_bytes */
        /* a thrash's onset (mgt_thrash_onset()), checked every 100 ms */
        bool watch_onset;
        uint64_t refaults0, onset_usec, last_onset_usec;
        /* the worst the guard would have said (mg_guard_report(), 250 ms) */
        bool sample_reports;
        uint64_t last_report_usec, max_used;
        enum mg_verdict worst;
};

/* Makes parent/name-n and opens its memory.current for sampling; *a is set
 * up even on failure (mgt_actor_end() accepts it). */
int mgt_actor_new(struct mgt_actor *a, const char *parent, const char *name, unsigned n);
/* The same over a cgroup that exists and that a caller removes. */
int mgt_actor_adopt(struct mgt_actor *a, const char *cg);
/* Writes a limit file (memory.max, memory.high) in bytes. */
int mgt_actor_limit(struct mgt_actor *a, const char *file, uint64_t bytes);
/* Guards it in a set of its own, with o (o->on_event and o->userdata are
 * the actor's), or the defaults for limit if o is NULL. */
int mgt_actor_guard(struct mgt_actor *a, uint64_t limit, struct mg_guard_options *o);
/* Starts a->workload ARGS inside; *ret (may be NULL) gets the process. */
int mgt_actor_start(struct mgt_actor *a, const char *const args[], struct mgt_proc **ret);
/* Reaps those that ended.  True if all did. */
bool mgt_actor_all_done(struct mgt_actor *a);
/*
 * Runs the actor's set and samples until stop(a, ud) (may be NULL) or the
 * timeout.  Once stop() holds, it keeps going while the guard still waits
 * for a killed cgroup to empty (its record comes then), within the
 * timeout.  Returns whether stop() became true.
 */
/*
 * A thrash's onset, as the kernel suite times every thrash: a MiB of file
 * pages read back since the start (workingset_refault_file; a restore of a
 * working-set page is a refault too).  Not the first restore: 6.12 books a
 * few dozen as the cache first fills, half a second before the thrash
 * (thrash-hot-file: 32, then 5,120 in the next half second), which no
 * rule can tell from a cache settling.
 */
#define MGT_ONSET_REFAULT_PAGES UINT64_C(256) /* 1 MiB of 4 KiB pages */
static inline bool mgt_thrash_onset(uint64_t refaults0, uint64_t refaults) {
        return refaults >= refaults0 + MGT_ONSET_REFAULT_PAGES;
}

bool mgt_actor_run(struct mgt_actor *a, uint64_t timeout_usec, bool (*stop)(struct mgt_actor *a, void *ud),
                   void *ud);
/* Moves the calling process into the actor's cgroup, from its cgroup
 * under root (the cgroup2 mount the actor is in), and back. */
int mgt_actor_enter(struct mgt_actor *a, const char *root);
int mgt_actor_leave(struct mgt_actor *a);
/* Leaves, stops tk, kills what is left and removes the cgroup if it made
 * it (not while the process could not leave: -EBUSY), reaps the processes,
 * frees the set.  Accepts a half-made or zeroed actor; 0 or a negative
 * errno. */
int mgt_actor_end(struct mgt_actor *a);

/* ---- the workloads the demo and the kernel suite share ------------------------ */

/*
 * A scenario's actor: the guard's limit, the kernel limits, the workload.
 * In args, "FILE" and "SECONDS" stand for the caller's file and run length
 * (the demo runs shorter than the suite); mgt_spec_args() fills them in.
 */
struct mgt_actor_spec {
        const char *name;
        uint64_t file_mib;              /* the size of FILE (0: none) */
        uint64_t limit, max, high;      /* guard limit; memory.max, memory.high (0: none) */
        const char *exe;                /* NULL: mg-workload */
        const char *const *args;
        uint64_t timeout_usec;          /* the suite's bound on a run */
};

/* No memory.max, guard limit 64 MiB; anon grows to 160 MiB in 256 KiB
 * steps and holds: an overshoot. */
extern const struct mgt_actor_spec mgt_spec_anon_overshoot;
/* A 96 MiB file read at random, 95 % of reads in its first 60 % (58 MiB),
 * memory.max = guard limit = 48 MiB: a thrash, the kernel books restores. */
extern const struct mgt_actor_spec mgt_spec_thrash_hot_file;
/* A 96 MiB file mapped and walked front to back, 200 ms between passes,
 * memory.max = guard limit = 48 MiB: a thrash without restores. */
extern const struct mgt_actor_spec mgt_spec_thrash_sequential;
/* 16 MiB of heap and a 128 MiB mapped file, 95 % of touches in its first
 * 80 MiB; memory.max = guard limit = 64 MiB, memory.high 90 % of it
 * (kubelet's MemoryQoS), below the guard's fast-path line. */
extern const struct mgt_actor_spec mgt_spec_thrash_under_high;

/* memory.max = guard limit = 64 MiB, all of it page cache: a writer of
 * 192 MiB without fsync (FILE: where it writes), and in the same cgroup a
 * reader looping over a 128 MiB FILE for SECONDS.  Nothing to kill. */
extern const struct mgt_actor_spec mgt_spec_page_cache_writer;
extern const struct mgt_actor_spec mgt_spec_page_cache_reader;
/* memory.high at 90 % of 64 MiB, no memory.max, guard limit 64 MiB: a
 * 256 MiB write without fsync to FILE, in a lend of memory.high; the dirty
 * cache it leaves is no reason to kill. */
extern const struct mgt_actor_spec mgt_spec_dirty_after_lend;

/* s->args with FILE and SECONDS replaced, into argv (n entries with the
 * terminating NULL).  0 or -E2BIG. */
int mgt_spec_args(const struct mgt_actor_spec *s, const char *file, const char *seconds, const char *argv[], size_t n);
/* Writes the spec's memory.max and memory.high (those not 0). */
int mgt_actor_apply(struct mgt_actor *a, const struct mgt_actor_spec *s);

/* Writes a file of mib MiB (from outside any actor: the caller's cgroup
 * pays for it) and drops it from the page cache. */
int mgt_make_file(const char *path, uint64_t mib);
void mgt_drop_cache(const char *path);
