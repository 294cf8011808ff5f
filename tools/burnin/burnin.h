/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * memguard-burnin: N actor cgroups cycling work -> snapshot write (in a lend
 * of the actor's guard) -> teardown -> restore, timed per phase.
 *
 * One process per actor, living in the actor's cgroup (cgroup v2 moves whole
 * processes, not threads, into a memory-controlled cgroup, so concurrent
 * actors cannot be threads of one process).  The actor process runs its own
 * mg_set in a ticking thread, for the lends of its snapshot writes, and
 * sends one struct bi_sample per cycle to the main process over a pipe.
 *
 * The main process is the worker: one mg_set with a guard per actor at the
 * actor's size, the guard that kills.  cgroup.kill takes every process of
 * the cgroup, the actor's own guard with it, and a kill record is told only
 * once the cgroup is empty, so only a guard outside the cgroup can tell it.
 * The actor's own guard kills nothing: a dry run, its limit at memory.max
 * (guards.h).
 */

#include <stdbool.h>
#include <stdint.h>

#include "parks.h"
#include "util.h"

enum bi_writer {
        BI_WRITER_MEMGUARD = 0, /* MG_SNAPSHOT_AUTO */
        BI_WRITER_BUFFERED = 1, /* MG_SNAPSHOT_BUFFERED, the baseline */
        BI_WRITER_BOTH = 2,     /* alternate per cycle */
};

/* Regression flags of one cycle (a bit mask). */
enum {
        BI_FLAG_KILL = 1 << 0,          /* MG_EVENT_KILL or MG_EVENT_KERNEL_OOM */
        BI_FLAG_ERROR = 1 << 1,         /* a failed call or MG_EVENT_ERROR / LEND_EXPIRED */
        BI_FLAG_HIGH = 1 << 2,          /* memory.high not back to its exact text */
        BI_FLAG_DELETED_FD = 1 << 3,    /* an fd of a deleted file open after the cycle */
        BI_FLAG_PAGECACHE = 1 << 4,     /* dirty + writeback above window + tolerance */
        BI_FLAG_VERIFY = 1 << 5,        /* restored pages differ */
};

/* How the buffered writer's cycles restore (the memguard writer's always
 * restore with the library's AUTO, O_DIRECT). */
enum bi_restore {
        BI_RESTORE_DIRECT = 0,          /* MG_SNAPSHOT_AUTO: O_DIRECT, the cache is not used */
        BI_RESTORE_CACHED = 1,          /* MG_SNAPSHOT_BUFFERED: through the page cache */
        /* CACHED inside a lend of memory.high ("max") of the actor's own guard,
         * what the restore brought in dropped before the lend ends: what a
         * cache hit could save with memory.high out of the way */
        BI_RESTORE_LENT = 2,
        BI_RESTORE_ALTERNATE = 3,       /* DIRECT and CACHED, every other buffered cycle */
        BI_RESTORE_ROTATE = 4,          /* DIRECT, CACHED, LENT in turn */
};

/* A byte on the control pipe: overshoot in the next cycle's work phase. */
/* How long an actor asked to overshoot waits to be killed; an overshoot
 * held at memory.high takes tens of seconds to pass the actor size. */
#define BI_CHAOS_WAIT_USEC (300 * MG_USEC_PER_SEC)
#define BI_CONTROL_CHAOS 'C'

#define BI_PAGECACHE_TOLERANCE (4 * MG_MIB)

/* One cycle.  Fixed size below PIPE_BUF, so a write to the pipe is atomic. */
struct bi_sample {
        uint32_t actor, cycle;
        uint32_t writer;                /* BI_WRITER_MEMGUARD or _BUFFERED */
        uint32_t method;                /* enum mg_snapshot_method used */
        uint32_t flags;
        int32_t error;                  /* first negative errno of the cycle */
        uint32_t restore_method;        /* BI_RESTORE_DIRECT or _CACHED */
        uint32_t kind;                  /* BI_SAMPLE_CYCLE, or _GUEST: a notice, not a cycle */
        uint64_t start_usec;            /* CLOCK_MONOTONIC at the start of the cycle (work) */
        uint64_t end_usec;              /* CLOCK_MONOTONIC at the end of the cycle */
        uint64_t lend_begin_usec, write_usec, sync_usec, reclaim_usec, lend_end_usec, publish_usec;
        uint64_t snapshot_usec;         /* mg_snapshot_write total */
        uint64_t teardown_usec;         /* kill the helper, free the region */
        uint64_t restore_usec;          /* mg_snapshot_restore total */
        uint64_t downtime_usec;         /* snapshot + teardown + restore + verify */
        uint64_t work_usec;
        uint64_t peak_dirty_bytes;      /* file_dirty + file_writeback during the write */
        uint64_t window_bytes;
        uint64_t data_bytes;            /* the snapshot's data (what a restore reads) */
        /* just before the restore (after teardown): the snapshot file's pages
         * resident in the page cache (mincore), the actor's memory.stat file,
         * and memory.events high during the restore */
        uint64_t resident_bytes, actor_file_bytes, restore_high_events;
        /* BI_SAMPLE_GUEST: the pattern's seed of the guest memory the
         * actor's memfd holds from now on (sent before a chaos overshoot,
         * so that the worker can check a park's image) */
        uint64_t guest_seed;
        char what[96];                  /* what failed, for the first error */
};

enum {
        BI_SAMPLE_CYCLE = 0,
        BI_SAMPLE_GUEST = 1,
};

struct bi_actor_config {
        uint32_t id;
        const char *cgroup;
        int dirfd;
        const char *dir;
        uint64_t actor_bytes;
        uint64_t window_bytes;          /* of its snapshot writes */
        uint64_t lend_deadline_usec;    /* of its snapshot writes; 0: the library's */
        enum bi_writer writer;
        enum bi_restore restore;
        uint64_t seed;
        int sample_fd;                  /* write end of the sample pipe */
        int control_fd;                 /* read end: EOF means stop after this cycle */
        /* the guest memory: a memfd of actor_bytes the worker made, so
         * that it can save it while the actor is parked (park.h) */
        int guest_fd;
};

/* Runs in the forked actor process; never returns. */
_Noreturn void bi_actor_main(const struct bi_actor_config *c);

/* The /proc/self/fd entries that point at a deleted file.  Returns the
 * count or a negative errno. */
int bi_count_deleted_fds(void);

/* ---- report.c: slot tables, checks, CSV, JSON, SVG ---- */

/* A kill the worker's guards told. */
struct bi_kill {
        uint32_t actor;
        uint32_t reason;                /* enum mg_kill_reason */
        bool expected;                  /* chaos asked this actor to overshoot */
        uint64_t detect_usec, kill_usec, empty_usec; /* CLOCK_MONOTONIC */
        uint64_t used_bytes;            /* the record's used */
};

struct bi_step {
        uint32_t actors;
        uint64_t usec;
};

struct bi_run {
        struct bi_sample *samples;
        size_t n;
        uint64_t start_usec, slot_usec;
        enum bi_writer writer;
        const struct bi_step *steps;
        size_t n_steps;
        const struct bi_kill *kills;
        size_t n_kills;
        const struct bi_park *parks;    /* --park: every park, parks.h */
        size_t n_parks;
};

#define BI_MIN_SLOT_CYCLES 20   /* fewer cycles than this make no p99 */

void bi_print_tables(const struct bi_run *r);
/* Per slot, the parks' time to freeze, to save and to free (parks.h). */
void bi_print_park_tables(const struct bi_run *r);
/* The targets for the memguard writer (p99/p50 of the total per slot, the
 * last slot of a load against the first), the buffered writer's figures
 * beside them, the neighbours of chaos kills and the restores by
 * residency.  Prints PASS/FAIL lines; returns the number of FAILs. */
unsigned bi_print_checks(const struct bi_run *r);
int bi_write_csv(const struct bi_run *r, const char *path);
int bi_write_json(const struct bi_run *r, const char *path);
int bi_write_svg(const struct bi_run *r, const char *path);

const char *bi_writer_to_string(enum bi_writer w);
const char *bi_restore_to_string(enum bi_restore m);
