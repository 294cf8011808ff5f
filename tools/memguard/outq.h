/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The lines `run` and `watch` print, taken off the thread that runs the
 * guards.  Under systemd their standard error is a journald stream socket:
 * a journald that stalls (its own disk, its watchdog restarting it) would
 * stall, with a blocking write(2) in an event callback, every guard's tick.
 * A producer only copies its line into a bounded in-memory queue; a writer
 * thread writes the lines to the fd, one write(2) per line (lines of
 * several writers to the same fd do not interleave: run's CMD shares it),
 * in the order they were queued.
 *
 * A line that does not fit is dropped and counted.  The writer says how
 * many were dropped, in one line of its own (the caller's format), where
 * the gap was: before the first line queued after it, or, if none came,
 * as soon as everything queued before it is written.
 *
 * The writer is a thread made by mgt_outq_new(): make the queue before
 * the host confines its thread (mg_confine_thread() refuses clone).  It
 * blocks every signal and confines itself with mg_confine_thread(0), the
 * list of the guard thread: it needs write, poll (a sink left
 * non-blocking), futex and clock_gettime, and libc's thread exit.  The
 * queue is loop-free: nothing to poll, the writer wakes on a condition.
 *
 * An entry need not be a line: with a sink of its own (mgt_outq_new_sink())
 * the writer hands each entry to it, as bytes that may hold NULs (a journal
 * entry, journal.h), and the sink confines the writer as it needs.
 */

#include <stddef.h>
#include <stdint.h>

/* The tool's bound: queued bytes, each line counted with its newline and
 * the queue's own bookkeeping for it.  A JSON kill record is about 1.2 KB,
 * a text event line 100-400 bytes: some 800 kill records or a few thousand
 * lines, many seconds of the busiest watch.  A stall longer than that (a
 * journald restarted by its watchdog is out for minutes) would only be
 * held longer, not outlived, by more memory, which --mlock keeps locked. */
#define MGT_OUTQ_MAX_BYTES ((size_t) 1 << 20)

struct mgt_outq;

/* Writes into buf (len bytes) the entry, without its newline, that says n
 * lines were dropped; returns its length (at most len).  Runs on the
 * writer thread, confined: formatting only. */
typedef size_t (*mgt_outq_dropped_fn)(uint64_t n, char *buf, size_t len, void *userdata);

/* Where the writer puts each entry: buf[0..len), with at buf[len] the
 * newline the queue adds (a sink of lines writes len + 1 bytes).  Returns
 * 0 or a negative errno: the entry is lost, and not counted (the count
 * would go to the same sink). */
struct mgt_outq_sink {
        int (*write)(const char *buf, size_t len, void *userdata);
        /* On the writer thread, before it touches an entry: confines it. */
        void (*confine)(void *userdata);
        void *userdata;
};

/* A queue of at most max_bytes (MGT_OUTQ_MAX_BYTES for the tool) to fd,
 * which it does not own (it stays open until mgt_outq_free()), and its
 * writer.  Returns 0, -ENOMEM, or pthread_create()'s error (-EAGAIN). */
int mgt_outq_new(int fd, size_t max_bytes, mgt_outq_dropped_fn dropped, void *userdata, struct mgt_outq **ret);
/* The same with entries handed to sink (copied) instead of written to an
 * fd. */
int mgt_outq_new_sink(const struct mgt_outq_sink *sink, size_t max_bytes, mgt_outq_dropped_fn dropped,
                      void *userdata, struct mgt_outq **ret);

/* Queues s (len bytes; the newline is added) and returns at once: 1 if
 * queued, 0 if dropped because it did not fit (or its copy found no
 * memory), counted. */
int mgt_outq_push(struct mgt_outq *q, const char *s, size_t len);

/* The lines dropped since mgt_outq_new(). */
uint64_t mgt_outq_dropped(struct mgt_outq *q);

/* Waits up to timeout_usec for every queued line (and a pending "dropped"
 * line) to be written.  Returns 0, or -ETIMEDOUT with lines still queued:
 * the sink is stalled. */
int mgt_outq_flush(struct mgt_outq *q, uint64_t timeout_usec);

/* Ends the writer and frees the queue; lines not yet written are
 * discarded (mgt_outq_flush() first to keep them).  If the writer is
 * stuck in a write(2) to a stalled sink, it is not waited for: it is
 * detached, keeps the queue, and frees it once that write returns (at the
 * latest when the process exits, which ends it).  Accepts NULL; returns
 * NULL. */
struct mgt_outq *mgt_outq_free(struct mgt_outq *q);
