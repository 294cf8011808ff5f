/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <memguard/memguard.h>

/*
 * A second thread for a process that writes snapshots of an actor it
 * guards: every 20 ms it ticks the set (under mu, so a tick never runs
 * inside the library's lend: mgt_ticker_lock is the snapshot options' lock
 * callback) and, while measuring, samples file_dirty + file_writeback of
 * the actor's memory.stat, keeping the peak.  Used by the kernel snapshot
 * scenarios, the snapshot benchmark and the burn-in.
 */
struct mgt_ticker {
        const char *cg;                 /* memory.stat sampled here */
        mg_set *set;                    /* ticked, or NULL */
        pthread_mutex_t mu;
        pthread_t th;
        bool running;
        atomic_bool stop, measuring;
        uint64_t peak_dw, samples;      /* under mu */
};

/* Starts the thread.  t is zeroed first; cg must outlive it. */
int mgt_ticker_start(struct mgt_ticker *t, const char *cg, mg_set *set);
/* Joins the thread (if it runs) and destroys mu; the set is the caller's.
 * Safe on a zeroed ticker that was never started. */
void mgt_ticker_stop(struct mgt_ticker *t);
/* mg_snapshot_options.lock, with the ticker as its userdata. */
void mgt_ticker_lock(void *ticker, bool lock);
/* Resets the peak and starts sampling / stops sampling and returns it. */
void mgt_ticker_measure(struct mgt_ticker *t);
void mgt_ticker_measured(struct mgt_ticker *t, uint64_t *peak_dw, uint64_t *samples);
