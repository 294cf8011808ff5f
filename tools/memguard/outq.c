/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The output queue and its writer thread (outq.h).  One mutex guards the
 * list and the counts; the writer never holds it across a write(2), so a
 * producer waits at most for another's list operation, never for the sink.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memguard/memguard.h"
#include "outq.h"

struct line {
        struct line *next;
        uint64_t dropped_before;        /* dropped just before it was queued: said first */
        size_t len;                     /* with the newline */
        char text[];
};

struct mgt_outq {
        int fd;
        struct mgt_outq_sink sink;      /* .write NULL: lines to fd */
        size_t max_bytes;
        mgt_outq_dropped_fn dropped_fn;
        void *userdata;
        pthread_t thread;

        pthread_mutex_t mu;             /* everything below */
        pthread_cond_t work;            /* for the writer: a line, a drop, or stop */
        pthread_cond_t idle;            /* for mgt_outq_flush(): nothing left to write */
        struct line *head, *tail;       /* oldest first; head stays queued while it is written */
        size_t bytes;                   /* what the queued lines count against max_bytes */
        uint64_t pending_dropped;       /* dropped since the last line queued, not said yet */
        uint64_t dropped;               /* since mgt_outq_new() */
        bool writing;                   /* the writer is out of the lock, writing */
        bool stop;                      /* mgt_outq_free(): the writer ends */
        bool orphaned;                  /* freed while writing: the writer frees q */
};

/* What a line counts against the bound: the heap block, not only the text,
 * so a flood of short lines is bounded in memory too. */
static size_t line_cost(size_t len_with_newline) {
        return sizeof(struct line) + len_with_newline;
}

static void outq_destroy(struct mgt_outq *q) {
        struct line *next;

        for (struct line *l = q->head; l; l = next) {
                next = l->next;
                free(l);
        }
        pthread_cond_destroy(&q->idle);
        pthread_cond_destroy(&q->work);
        pthread_mutex_destroy(&q->mu);
        free(q);
}

/* All of buf, in as many writes as the sink takes it in.  A sink someone
 * else made non-blocking (O_NONBLOCK is shared with every holder of the
 * open file) is waited for with poll().  Returns 0 or a negative errno
 * (EPIPE: nobody reads; the line is lost). */
static int write_all(int fd, const char *buf, size_t n) {
        while (n > 0) {
                ssize_t w = write(fd, buf, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN) {
                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                        if (poll(&p, 1, -1) < 0 && errno != EINTR)
                                return -errno;
                        continue;
                }
                if (w < 0)
                        return -errno;
                if (w == 0)
                        return -EIO;
                buf += w;
                n -= (size_t) w;
        }
        return 0;
}

/* One entry to the sink: buf[len] is its newline. */
static void write_entry(struct mgt_outq *q, const char *buf, size_t len) {
        if (q->sink.write)
                (void) q->sink.write(buf, len, q->sink.userdata);
        else
                (void) write_all(q->fd, buf, len + 1);
}

/* Writes the entry that says gap lines were dropped. */
static void write_dropped(struct mgt_outq *q, uint64_t gap) {
        char note[1024];
        size_t n = q->dropped_fn(gap, note, sizeof(note) - 1, q->userdata);

        if (n > sizeof(note) - 1)
                n = sizeof(note) - 1;
        note[n] = '\n';
        write_entry(q, note, n);
}

/* Confines itself before it touches a line (outq.h says what it calls).
 * A line the sink refuses (EPIPE, EIO) is lost and not counted: the count
 * would go to the same sink. */
static void *writer_main(void *userdata) {
        struct mgt_outq *q = userdata;
        bool owner;

        /* -EOPNOTSUPP without libseccomp, an error under valgrind: the
         * writer runs either way, as the set's restore worker does. */
        if (q->sink.confine)
                q->sink.confine(q->sink.userdata);
        else
                (void) mg_confine_thread(0);

        pthread_mutex_lock(&q->mu);
        while (!q->stop) {
                struct line *l = q->head;
                uint64_t gap;

                if (l) {
                        gap = l->dropped_before;
                        l->dropped_before = 0;
                } else if (q->pending_dropped) {
                        /* Nothing came after the drops: say them now
                         * that what came before is written. */
                        gap = q->pending_dropped;
                        q->pending_dropped = 0;
                } else {
                        pthread_cond_broadcast(&q->idle);
                        pthread_cond_wait(&q->work, &q->mu);
                        continue;
                }
                q->writing = true;
                pthread_mutex_unlock(&q->mu);

                if (gap)
                        write_dropped(q, gap);
                if (l)
                        write_entry(q, l->text, l->len - 1);

                pthread_mutex_lock(&q->mu);
                q->writing = false;
                if (l) {
                        /* Counted until now: the bound is what is not written yet. */
                        q->head = l->next;
                        if (!q->head)
                                q->tail = NULL;
                        q->bytes -= line_cost(l->len);
                        free(l);
                }
        }
        owner = q->orphaned;
        pthread_mutex_unlock(&q->mu);
        if (owner)
                outq_destroy(q);
        return NULL;
}

static int outq_new(int fd, const struct mgt_outq_sink *sink, size_t max_bytes, mgt_outq_dropped_fn dropped,
                    void *userdata, struct mgt_outq **ret) {
        struct mgt_outq *q = calloc(1, sizeof(*q));
        pthread_condattr_t ca;
        sigset_t all, old;
        int r;

        if (!q)
                return -ENOMEM;
        q->fd = fd;
        if (sink)
                q->sink = *sink;
        q->max_bytes = max_bytes;
        q->dropped_fn = dropped;
        q->userdata = userdata;
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->work, NULL);
        /* mgt_outq_flush() waits against CLOCK_MONOTONIC: a clock step
         * at shutdown neither cuts nor stretches it. */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&q->idle, &ca);
        pthread_condattr_destroy(&ca);

        /* The thread starts with its creator's mask: all blocked, so the
         * host's handlers run on its own thread, and a SIGPIPE of a sink
         * nobody reads stays pending here while write(2) says EPIPE. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(&q->thread, NULL, writer_main, q);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                outq_destroy(q);
                return -r;
        }
        *ret = q;
        return 0;
}

int mgt_outq_new(int fd, size_t max_bytes, mgt_outq_dropped_fn dropped, void *userdata, struct mgt_outq **ret) {
        return outq_new(fd, NULL, max_bytes, dropped, userdata, ret);
}

int mgt_outq_new_sink(const struct mgt_outq_sink *sink, size_t max_bytes, mgt_outq_dropped_fn dropped,
                      void *userdata, struct mgt_outq **ret) {
        return outq_new(-1, sink, max_bytes, dropped, userdata, ret);
}

int mgt_outq_push(struct mgt_outq *q, const char *s, size_t len) {
        struct line *l = NULL;
        bool queued = false;

        /* Copied before the lock: the writer and other producers wait for
         * list operations only. */
        if (len < q->max_bytes)
                l = malloc(sizeof(*l) + len + 1);
        if (l) {
                memcpy(l->text, s, len);
                l->text[len] = '\n';
                l->len = len + 1;
                l->next = NULL;
        }
        pthread_mutex_lock(&q->mu);
        if (l && line_cost(l->len) <= q->max_bytes - q->bytes) {
                l->dropped_before = q->pending_dropped;
                q->pending_dropped = 0;
                if (q->tail)
                        q->tail->next = l;
                else
                        q->head = l;
                q->tail = l;
                q->bytes += line_cost(l->len);
                queued = true;
        } else {
                q->pending_dropped++;
                q->dropped++;
        }
        pthread_cond_signal(&q->work);
        pthread_mutex_unlock(&q->mu);
        if (!queued)
                free(l);
        return queued;
}

uint64_t mgt_outq_dropped(struct mgt_outq *q) {
        uint64_t n;

        pthread_mutex_lock(&q->mu);
        n = q->dropped;
        pthread_mutex_unlock(&q->mu);
        return n;
}

int mgt_outq_flush(struct mgt_outq *q, uint64_t timeout_usec) {
        struct timespec until;
        int r = 0;

        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t) (timeout_usec / 1000000);
        until.tv_nsec += (long) (timeout_usec % 1000000 * 1000);
        if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&q->mu);
        while (q->head || q->pending_dropped || q->writing) {
                if (pthread_cond_timedwait(&q->idle, &q->mu, &until) == ETIMEDOUT &&
                    (q->head || q->pending_dropped || q->writing)) {
                        r = -ETIMEDOUT;
                        break;
                }
        }
        pthread_mutex_unlock(&q->mu);
        return r;
}

struct mgt_outq *mgt_outq_free(struct mgt_outq *q) {
        pthread_t t;
        bool orphan;

        if (!q)
                return NULL;
        pthread_mutex_lock(&q->mu);
        q->stop = true;
        /* Stuck in a write to a stalled sink: waiting for it could take
         * forever, so the writer keeps q and frees it when the write
         * returns.  From the unlock on, q may be gone: t is read first. */
        orphan = q->orphaned = q->writing;
        t = q->thread;
        pthread_cond_signal(&q->work);
        pthread_mutex_unlock(&q->mu);
        if (orphan) {
                pthread_detach(t);
                return NULL;
        }
        pthread_join(t, NULL);
        outq_destroy(q);
        return NULL;
}
