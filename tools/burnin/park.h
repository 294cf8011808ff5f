/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The worker's side of a park (--park): while a chaos actor is frozen, its
 * guest memory (a memfd the worker made and the actor maps) is saved with
 * mg_snapshot_write() in a lend of the worker's guard; after the kill, the
 * image is restored into a fresh memfd and checked against the pattern.
 * Each runs on a thread of its own, so the worker's loop (the set's
 * thread) never waits for the disk: the write takes the set's lock around
 * its calls on the guard (memguard.h "Threads", snapshot.h .lock), and the
 * thread wakes the loop through wake_fd when it is done.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "memguard/memguard.h"

enum bi_park_stage {
        BI_PARK_STAGE_SAVE = 1,         /* mg_snapshot_write of the memfd */
        BI_PARK_STAGE_CHECK = 2,        /* mg_snapshot_restore, img_verify, unlink */
};

struct bi_park_job {
        /* set by the caller before a start */
        int memfd;                      /* the job's own (a dup), closed by bi_park_job_join() after SAVE */
        int dirfd;
        char name[64];                  /* the image's name in dirfd */
        uint64_t len, seed;             /* the guest memory and its pattern's seed */
        uint64_t window_bytes, lend_deadline_usec;
        mg_guard *guard;                /* SAVE: the worker's guard of the actor */
        uint64_t park_id;               /* its park, to end once saved */
        pthread_mutex_t *set_lock;      /* held by the set's thread except while it polls */
        int wake_fd;                    /* a byte written here when a stage is done */
        /* the stage running or last run, and its results */
        enum bi_park_stage stage;
        pthread_t thread;
        bool running;
        atomic_bool done;
        int save_error;                 /* 0 or a negative errno */
        uint64_t save_begin_usec, save_end_usec;
        int check_error;                /* 0 or a negative errno (no image to check: lost) */
        int64_t bad_page;               /* the first page that differs from the pattern, or -1 */
        uint64_t restore_usec;
};

/* Starts stage on a thread.  Returns 0 or a negative errno (nothing
 * started). */
int bi_park_job_start(struct bi_park_job *j, enum bi_park_stage stage);

/* Waits for the running stage (done is set: it has returned or is about
 * to).  After SAVE the memfd is closed (the dead actor's pages go). */
void bi_park_job_join(struct bi_park_job *j);
