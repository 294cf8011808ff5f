/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The O_DIRECT I/O queue of aio.h over Linux native AIO, for the snapshot
 * writer and restore.  It owns its context and iocbs, nothing else.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aio.h"

/*
 * io_destroy() returns only once the context's last references are gone,
 * which takes RCU grace periods even with nothing in flight: 30-45 ms on a
 * 2-core host, more than a 64 MiB restore spends on its header, index and
 * holes together, and nearly all of a small image's restore.  So a context
 * with nothing in flight is kept at close, one per process, for the next
 * write or restore to take instead of io_setup(); every context is made
 * MG_SNAP_AIO_MAX deep, so any use fits it.  The process's exit frees it.
 * The kernel does not copy contexts to a child: after fork() the kept one is
 * forgotten in the child (pthread_atfork), and it is taken only by the
 * process that kept it (a child of a raw clone() runs no atfork handler).
 */
static _Atomic(aio_context_t) kept_ctx;
static _Atomic(pid_t) kept_pid;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void forget_kept(void) {
        atomic_store(&kept_ctx, 0);
}

static void register_atfork(void) {
        (void) pthread_atfork(NULL, NULL, forget_kept);
}

static void destroy(aio_context_t ctx) {
        (void) syscall(SYS_io_destroy, ctx);
}

int mg_snap_aio_open(struct mg_snap_aio *a, unsigned depth) {
        aio_context_t ctx;

        memset(a, 0, sizeof(*a));
        if (depth == 0 || depth > MG_SNAP_AIO_MAX)
                return -EINVAL;
        pthread_once(&atfork_once, register_atfork);
        ctx = atomic_exchange(&kept_ctx, 0);
        if (ctx && atomic_load(&kept_pid) != getpid())
                ctx = 0; /* another process's id: not ours to use or destroy */
        if (!ctx && syscall(SYS_io_setup, MG_SNAP_AIO_MAX, &ctx) < 0)
                return -errno;
        a->ctx = ctx;
        a->depth = depth;
        return 0;
}

void mg_snap_aio_close(struct mg_snap_aio *a) {
        aio_context_t old;

        if (!a->ctx)
                return;
        /* The buffers stay the caller's until the kernel is done with them. */
        while (a->count) {
                unsigned before = a->count;
                (void) mg_snap_aio_pop(a, NULL, NULL);
                if (a->count == before)
                        break; /* io_getevents failed: nothing more to wait for */
        }
        if (a->count) {
                destroy(a->ctx); /* never keep a context with requests of its own */
        } else {
                atomic_store(&kept_pid, getpid());
                old = atomic_exchange(&kept_ctx, a->ctx);
                if (old)
                        destroy(old); /* one kept per process: the other goes */
        }
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
