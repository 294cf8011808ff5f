/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * memguard-burnin: N actor cgroups cycling work -> snapshot write (in a lend
 * of the actor's guard) -> teardown -> restore, timed per phase.
 *
 * One process per actor, living in the actor's cgroup (cgroup v2 moves whole
 * processes, not threads, into a memory-controlled cgroup, so concurrent
 * actors cannot be threads of one process).  The actor process runs its own
 * mg_set in a ticking thread and sends one struct bi_sample per cycle to the
 * main process over a pipe.
 */

#include <stdbool.h>
#include <stdint.h>

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

#define BI_PAGECACHE_TOLERANCE (4 * MG_MIB)

/* One cycle.  Fixed size below PIPE_BUF, so a write to the pipe is atomic. */
struct bi_sample {
        uint32_t actor, cycle;
        uint32_t writer;                /* BI_WRITER_MEMGUARD or _BUFFERED */
        uint32_t method;                /* enum mg_snapshot_method used */
        uint32_t flags;
        int32_t error;                  /* first negative errno of the cycle */
        uint64_t end_usec;              /* CLOCK_MONOTONIC at the end of the cycle */
        uint64_t lend_begin_usec, write_usec, sync_usec, reclaim_usec, lend_end_usec, publish_usec;
        uint64_t snapshot_usec;         /* mg_snapshot_write total */
        uint64_t teardown_usec;         /* kill the helper, free the region */
        uint64_t restore_usec;          /* mg_snapshot_restore total */
        uint64_t downtime_usec;         /* snapshot + teardown + restore + verify */
        uint64_t work_usec;
        uint64_t peak_dirty_bytes;      /* file_dirty + file_writeback during the write */
        uint64_t window_bytes;
        char what[96];                  /* what failed, for the first error */
};

struct bi_actor_config {
        uint32_t id;
        const char *cgroup;
        int dirfd;
        const char *dir;
        uint64_t actor_bytes;
        enum bi_writer writer;
        uint64_t seed;
        int sample_fd;                  /* write end of the sample pipe */
        int control_fd;                 /* read end: EOF means stop after this cycle */
};

/* Runs in the forked actor process; never returns. */
_Noreturn void bi_actor_main(const struct bi_actor_config *c);

/* The /proc/self/fd entries that point at a deleted file.  Returns the
 * count or a negative errno. */
int bi_count_deleted_fds(void);

/* ---- report.c: slot tables, CSV, JSON, SVG ---- */
struct bi_run {
        struct bi_sample *samples;
        size_t n;
        uint64_t start_usec, slot_usec;
        enum bi_writer writer;
};

void bi_print_tables(const struct bi_run *r);
int bi_write_csv(const struct bi_run *r, const char *path);
int bi_write_json(const struct bi_run *r, const char *path);
int bi_write_svg(const struct bi_run *r, const char *path);

const char *bi_writer_to_string(enum bi_writer w);
