/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The O_DIRECT I/O queue of aio.h over Linux native AIO, for the snapshot
 * writer and restore.  It owns its context and iocbs, nothing else.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aio.h"

int mg_snap_aio_open(struct mg_snap_aio *a, unsigned depth) {
        memset(a, 0, sizeof(*a));
        if (depth == 0 || depth > MG_SNAP_AIO_MAX)
                return -EINVAL;
        if (syscall(SYS_io_setup, depth, &a->ctx) < 0) {
                a->ctx = 0;
                return -errno;
        }
        a->depth = depth;
        return 0;
}

void mg_snap_aio_close(struct mg_snap_aio *a) {
        if (!a->ctx)
                return;
        /* The buffers stay the caller's until the kernel is done with them. */
        while (a->count) {
                unsigned before = a->count;
                (void) mg_snap_aio_pop(a, NULL, NULL);
                if (a->count == before)
                        break; /* io_getevents failed: nothing more to wait for */
        }
        (void) syscall(SYS_io_destroy, a->ctx);
        a->ctx = 0;
}

int mg_snap_aio_submit(struct mg_snap_aio *a, int fd, bool write, void *buf, size_t len, uint64_t off,
                       uint64_t tag) {
        unsigned i = mg_snap_aio_next_slot(a);
        struct iocb *cbs[1];

        if (a->count == a->depth)
                return -EBUSY;
        a->slot[i].cb = (struct iocb) {
                .aio_data = i,
                .aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD,
                .aio_fildes = (uint32_t) fd,
                .aio_buf = (uint64_t) (uintptr_t) buf,
                .aio_nbytes = len,
                .aio_offset = (int64_t) off,
        };
        a->slot[i].done = false;
        a->slot[i].tag = tag;
        cbs[0] = &a->slot[i].cb;
        for (;;) {
                long r = syscall(SYS_io_submit, a->ctx, 1, cbs);
                if (r == 1)
                        break;
                if (r < 0 && errno == EINTR)
                        continue;
                return r < 0 ? -errno : -EIO;
        }
        a->count++;
        return 0;
}

int64_t mg_snap_aio_pop(struct mg_snap_aio *a, struct iocb *ret_cb, uint64_t *ret_tag) {
        unsigned i = a->head;
        struct io_event ev[MG_SNAP_AIO_MAX];
        int64_t res;

        if (a->count == 0)
                return -EINVAL;
        if (ret_cb)
                *ret_cb = a->slot[i].cb;
        if (ret_tag)
                *ret_tag = a->slot[i].tag;
        while (!a->slot[i].done) {
                long n = syscall(SYS_io_getevents, a->ctx, 1, (long) a->depth, ev, NULL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno; /* cannot happen with a valid context */
                for (long k = 0; k < n; k++) {
                        unsigned s = (unsigned) ev[k].data;
                        if (s < a->depth) {
                                a->slot[s].done = true;
                                a->slot[s].res = ev[k].res;
                        }
                }
        }
        res = a->slot[i].res;
        a->head = (a->head + 1) % a->depth;
        a->count--;
        return res;
}
