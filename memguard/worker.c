/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker of a guard set (worker.h).  Why a thread: writing memory.high
 * below memory.current reclaims the difference in the writer's write(2)
 * (mm/memcontrol.c memory_high_write(), with retries), as a write to
 * memory.reclaim does (memory_reclaim()); 6.1 and 6.12 ignore O_NONBLOCK
 * there, and the kernel suite measured 661 ms and 3.3 s for one restore.
 * Made on the set's thread, every other guard's tick and kill waited that
 * long.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lend.h"
#include "reclaim.h"
#include "worker.h"

/* What runs on the thread once it is confined: pread64 and pwrite64 (the
 * restore, the dose: clock_gettime is the vDSO's), futex (the mutex and the condition), write (the eventfd),
 * and, at its end, what libc's thread exit makes (madvise, munmap,
 * rt_sigprocmask, exit): all in mg_confine_thread()'s list. */
static void *worker_main(void *userdata) {
        struct mg_worker *w = userdata;
        int r = mg_confine_thread(0);

        pthread_mutex_lock(&w->mu);
        w->confine_result = r;
        w->ready = true;
        pthread_cond_broadcast(&w->cond);
        for (;;) {
                struct mg_job *j = w->head;
                uint64_t one = 1;

                if (!j) {
                        if (w->stop)
                                break;
                        pthread_cond_wait(&w->cond, &w->mu);
                        continue;
                }
                w->head = j->next;
                if (!w->head)
                        w->tail = NULL;
                pthread_mutex_unlock(&w->mu);

                if (j->kind == MG_JOB_RESTORE)
                        mg_restore_run(mg_container_of(j, struct mg_restore, job));
                else
                        mg_reclaim_run(mg_container_of(j, struct mg_reclaim_job, job));

                pthread_mutex_lock(&w->mu);
                j->next = NULL;
                if (w->done_tail)
                        w->done_tail->next = j;
                else
                        w->done = j;
                w->done_tail = j;
                /* Under the mutex, last: from here on the set's thread may
                 * finish the job and free its guard. */
                atomic_store(&j->state, MG_JOB_DONE);
                pthread_mutex_unlock(&w->mu);
                /* EAGAIN only when the counter is full (2^64 - 2): then it is
                 * readable anyway. */
                (void) !write(w->efd, &one, sizeof(one));
                pthread_mutex_lock(&w->mu);
        }
        pthread_mutex_unlock(&w->mu);
        return NULL;
}

int mg_worker_start(struct mg_worker *w) {
        sigset_t all, old;
        int r;

        *w = (struct mg_worker) { .efd = -1 };
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                r = -errno;
                pthread_cond_destroy(&w->cond);
                pthread_mutex_destroy(&w->mu);
                return r;
        }
        /* The thread starts with the mask of its creator: all blocked. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(&w->thread, NULL, worker_main, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0)
                return -r;
        w->started = true;
        pthread_mutex_lock(&w->mu);
        while (!w->ready)
                pthread_cond_wait(&w->cond, &w->mu);
        pthread_mutex_unlock(&w->mu);
        return 0;
}

void mg_worker_stop(struct mg_worker *w) {
        if (!w->started)
                return;
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        w->started = false;
}

void mg_worker_close(struct mg_worker *w) {
        mg_worker_stop(w);
        if (w->efd < 0)
                return;
        close(w->efd);
        w->efd = -1;
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->mu);
}

void mg_worker_queue(struct mg_worker *w, struct mg_job *j) {
        pthread_mutex_lock(&w->mu);
        j->next = NULL;
        if (w->tail)
                w->tail->next = j;
        else
                w->head = j;
        w->tail = j;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->mu);
}

struct mg_job *mg_worker_take_done(struct mg_worker *w) {
        struct mg_job *j;

        pthread_mutex_lock(&w->mu);
        j = w->done;
        w->done = w->done_tail = NULL;
        pthread_mutex_unlock(&w->mu);
        return j;
}
