/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A guard set's worker: one thread that makes its guards' blocking writes,
 * the lend restores (mg_restore_run()) and the reclaim doses
 * (mg_reclaim_run()), so that no guard of the set waits for another's.
 * Jobs go in on the set's thread, come back done through an eventfd in the
 * set's epoll, and are finished there (mg_guard_restore_done(),
 * mg_reclaim_done()).  Loop-free: set.c owns it and its fd.
 */

#include <pthread.h>
#include <stdbool.h>

#include "guard.h"

struct mg_worker {
        pthread_t thread;
        pthread_mutex_t mu;             /* the queues, stop, ready */
        pthread_cond_t cond;
        struct mg_job *head, *tail;     /* queued, oldest first */
        struct mg_job *done, *done_tail; /* written, for the set's thread */
        bool stop, ready, started;
        int efd;                        /* eventfd: counts jobs done; -1 until started */
        int confine_result;             /* of mg_confine_thread() on the worker */
};

/*
 * Starts the thread, with every signal blocked (a host's handlers and
 * signalfd keep theirs: no signal is delivered to it), and waits until it
 * has confined itself with mg_confine_thread(0): it is made before the host
 * confines its own thread, so it could not inherit the filter, and it must
 * not need clone (see docs/security.md).  w->confine_result says how that
 * went (-EOPNOTSUPP without libseccomp; under valgrind, which does not know
 * seccomp(2), an error too): the worker runs either way.
 * Returns 0, or the errno of eventfd() or pthread_create() (w may then be
 * given to mg_worker_close()).
 */
int mg_worker_start(struct mg_worker *w);
/* Makes every queued job, then ends the thread (the jobs stay to take).
 * Blocks for as long as those writes take.  Accepts a worker never
 * started. */
void mg_worker_stop(struct mg_worker *w);
/* mg_worker_stop(), then closes the eventfd.  Accepts one whose start
 * failed, and one never started whose efd is -1. */
void mg_worker_close(struct mg_worker *w);
void mg_worker_queue(struct mg_worker *w, struct mg_job *j);
/* The jobs done since the last call, oldest first (linked by ->next), their
 * state MG_RESTORE_DONE; NULL if none.  Read the eventfd first: a job done
 * after this call writes it again. */
struct mg_job *mg_worker_take_done(struct mg_worker *w);
