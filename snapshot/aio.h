/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A small FIFO over Linux native AIO (io_setup/io_submit/io_getevents), for
 * O_DIRECT only: there the kernel really runs the I/O in the background, so
 * the next block is scanned and checksummed while the previous ones are on
 * the disk, and the disk sees several requests at once.  (Buffered AIO is
 * synchronous, and so is an O_DIRECT write that extends the file on ext4,
 * which is why the writer sets the file's size first.)  Completions are
 * taken in submission order, which the restore needs to chain checksums.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/aio_abi.h>

#define MG_SNAP_AIO_MAX 8

struct mg_snap_aio {
        aio_context_t ctx;
        unsigned depth, head, count;
        struct {
                struct iocb cb;
                bool done;
                int64_t res;
                uint64_t tag;           /* the caller's */
        } slot[MG_SNAP_AIO_MAX];
};

/* Takes the context the process's last close kept, else makes one.
 * Returns 0, or -ENOSYS (no CONFIG_AIO), -EAGAIN (fs.aio-max-nr reached),
 * -EINVAL: the caller then does synchronous I/O. */
int mg_snap_aio_open(struct mg_snap_aio *a, unsigned depth);
/* Waits for everything in flight, then keeps the context for the next open
 * (one per process; aio.c says why) or frees it.  Safe on a zeroed
 * struct. */
void mg_snap_aio_close(struct mg_snap_aio *a);

static inline bool mg_snap_aio_full(const struct mg_snap_aio *a) {
        return a->count == a->depth;
}

/* The slot the next submission will use (to pick its buffer). */
static inline unsigned mg_snap_aio_next_slot(const struct mg_snap_aio *a) {
        return (a->head + a->count) % a->depth;
}

/* Queues one read or write; the FIFO must not be full.  Returns 0 or a
 * negative errno of io_submit. */
int mg_snap_aio_submit(struct mg_snap_aio *a, int fd, bool write, void *buf, size_t len, uint64_t off,
                       uint64_t tag);

/* Waits for the oldest request and removes it.  Returns its result (bytes
 * done, or a negative errno), its iocb and tag through the pointers (set
 * even if the wait itself fails, which leaves it queued). */
int64_t mg_snap_aio_pop(struct mg_snap_aio *a, struct iocb *ret_cb, uint64_t *ret_tag);
