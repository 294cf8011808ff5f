/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mg_snapshot_restore(): a snapshot file read back into guest memory, its
 * header and index checked against the target before anything is read or
 * allocated, every chunk's checksum verified; the file opened without
 * following links or blocking on a FIFO.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aio.h"
#include "internal.h"

/*
 * The restore path: header and index are checked before the target is
 * touched; then each range is read (O_DIRECT straight into a memory target
 * where the file system allows it, else through the page cache, dropped
 * behind each window), fed to its chunk's checksum, and the gaps between
 * ranges are made zero in the target.  Checksums are compared at the end:
 * a corrupt file fails with -EBADMSG after the target was written.
 */

struct reader {
        const struct mg_snapshot_target *dst;
        const struct mg_snap_seam *seam; /* the test seam, or NULL */
        struct mg_snapshot_options o;
        int fd;
        uint32_t page;
        struct mg_snap_header h;
        struct mg_snap_range *ranges;
        uint32_t *crcs, *want;
        bool direct;
        uint32_t dio_mem_align;
        uint8_t *buf;                   /* n_bufs buffers of io_bytes */
        unsigned n_bufs;
        size_t io_bytes;
        struct mg_snap_aio aio;         /* direct reads in flight */
        bool use_aio;
        struct {
                uint64_t x;             /* image offset */
                size_t n;
                uint8_t *p;
        } inflight[MG_SNAP_AIO_MAX];
        uint64_t dropped;               /* file offset up to which the cache was dropped */
        uint8_t *zeros;                 /* io_bytes of zeros for fd targets without hole punching */
        struct mg_snapshot_stats st;
};

static int check_target(const struct mg_snapshot_target *t, uint32_t page) {
        struct stat s;

        if (!t || t->length == 0 || t->length % page)
                return -EINVAL;
        switch (t->kind) {
        case MG_SNAPSHOT_MEMORY:
                return t->addr && (uintptr_t) t->addr <= UINTPTR_MAX - t->length ? 0 : -EINVAL;
        case MG_SNAPSHOT_FD:
                if (t->fd < 0 || t->offset % page || t->offset > UINT64_MAX - t->length)
                        return -EINVAL;
                if (fstat(t->fd, &s) < 0)
                        return -errno;
                return S_ISREG(s.st_mode) ? 0 : -EINVAL;
        }
        return -EINVAL;
}

static int pwrite_all(int fd, const void *p, size_t len, uint64_t off) {
        size_t done = 0;
        while (done < len) {
                ssize_t n = pwrite(fd, (const char *) p + done, len - done, (off_t) (off + done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                done += (size_t) n;
        }
        return 0;
}

/* Sets or clears a file status flag (O_DIRECT, O_NONBLOCK) of fd. */
static int set_flag(int fd, int flag, bool on) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return -errno;
        fl = on ? fl | flag : fl & ~flag;
        return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

/* Opens the snapshot for reading: a regular file only.  O_NOFOLLOW: a
 * symlink at the name is -ELOOP, never followed.  O_NONBLOCK: a FIFO at the
 * name would block open() until a writer came; with it the open returns
 * and fstat() refuses it (a device node, a socket, a directory too).
 * O_NONBLOCK is then cleared: reads of a regular file ignore it, but the
 * O_DIRECT toggle and AIO below should see the flags of a plain open.
 * Returns the fd or a negative errno. */
static int open_snapshot(int dirfd, const char *name) {
        struct stat s;
        int fd, r;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &s) < 0)
                r = -errno;
        else if (!S_ISREG(s.st_mode))
                r = -EINVAL;
        else
                r = set_flag(fd, O_NONBLOCK, false);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

/* Reads and checks the header, against the file's length and the target's,
 * then reads and checks the index.  Everything sized by the header is
 * allocated only after that: the parser bounds the index by the file's
 * length (fstat), and the image must be the target's length, so a header
 * cannot make us allocate more than 44 bytes per page of the target (the
 * index read, 20; the ranges, 16; two checksums per chunk, 8), about 1 % of
 * memory the caller already has at 4 KiB pages.  A sparse file's length
 * costs its writer nothing: without the target check first, 4 KiB on disk
 * claiming 64 GiB made a restore allocate and read a 320 MiB index before
 * refusing the target. */
static int load_index(struct reader *rd, const char *name) {
        uint8_t hdr[MG_SNAP_HEADER_BYTES];
        const char *why = NULL;
        struct stat s;
        uint8_t *idx;
        uint64_t n;
        ssize_t k;
        int r;

        if (fstat(rd->fd, &s) < 0)
                return -errno;
        if (!S_ISREG(s.st_mode))
                return -EINVAL;
        k = mg_snap_pread_full(rd->fd, hdr, sizeof(hdr), 0);
        if (k < 0)
                return (int) k;
        r = mg_snap_header_parse(hdr, (size_t) k, (uint64_t) s.st_size, rd->page, &rd->h, &why);
        if (r < 0) {
                mg_snap_log(&rd->o, MG_LOG_ERR, "snapshot: %s: %s", name, why);
                return r;
        }
        if (rd->dst->length != rd->h.image_bytes) {
                mg_snap_log(&rd->o, MG_LOG_ERR, "snapshot: %s holds %" PRIu64 " bytes, the target %" PRIu64, name,
                            rd->h.image_bytes, rd->dst->length);
                return -EMSGSIZE;
        }
        n = mg_snap_index_bytes(&rd->h);
        if (n > SIZE_MAX / 2)
                return -ENOMEM;
        idx = malloc(n ? (size_t) n : 1);
        rd->ranges = calloc((size_t) (rd->h.n_ranges ? rd->h.n_ranges : 1), sizeof(*rd->ranges));
        rd->want = calloc((size_t) mg_snap_n_chunks(&rd->h), sizeof(*rd->want));
        rd->crcs = calloc((size_t) mg_snap_n_chunks(&rd->h), sizeof(*rd->crcs));
        if (!idx || !rd->ranges || !rd->want || !rd->crcs) {
                free(idx);
                return -ENOMEM;
        }
        k = mg_snap_pread_full(rd->fd, idx, (size_t) n, rd->h.index_offset);
        if (k < 0) {
                free(idx);
                return (int) k;
        }
        r = mg_snap_index_parse(&rd->h, idx, (size_t) k, rd->ranges, rd->want, &why);
        free(idx);
        if (r < 0)
                mg_snap_log(&rd->o, MG_LOG_ERR, "snapshot: %s: %s", name, why);
        return r;
}

static int choose_method(struct reader *rd) {
        uint32_t mem_align = 0, off_align = 0;
        int r;

        /* Reads have no window to wait for: dontcache reads like windowed. */
        if (rd->o.method == MG_SNAPSHOT_DONTCACHE)
                rd->o.method = MG_SNAPSHOT_WINDOWED;
        if (rd->o.method == MG_SNAPSHOT_WINDOWED || rd->o.method == MG_SNAPSHOT_BUFFERED)
                return 0;
        if (rd->o.method != MG_SNAPSHOT_AUTO && rd->o.method != MG_SNAPSHOT_DIRECT)
                return -EINVAL;
        r = mg_snap_dio_align(rd->fd, &mem_align, &off_align);
        if (r == -EOPNOTSUPP)
                return rd->o.method == MG_SNAPSHOT_DIRECT ? -EOPNOTSUPP : 0; /* no guessing for reads */
        if (r == 1 && off_align <= rd->page && mem_align <= rd->page && rd->h.data_offset % off_align == 0 &&
            set_flag(rd->fd, O_DIRECT, true) == 0) {
                rd->direct = true;
                rd->dio_mem_align = mem_align ? mem_align : 1;
                return 0;
        }
        return rd->o.method == MG_SNAPSHOT_DIRECT ? -EOPNOTSUPP : 0;
}

/* Makes target bytes [a, b) zero.  A memory target's pages are written only
 * if they are not zero already: reading an untouched anonymous page maps
 * the shared zero page, writing it would allocate (and charge) memory. */
static int zero_fill(struct reader *rd, uint64_t a, uint64_t b) {
        const struct mg_snapshot_target *t = rd->dst;

        if (a >= b)
                return 0;
        if (t->kind == MG_SNAPSHOT_MEMORY) {
                uint8_t *p = (uint8_t *) t->addr;
                for (uint64_t x = a; x < b; x += rd->page)
                        if (!mg_snap_is_zero(p + x, rd->page))
                                memset(p + x, 0, rd->page);
                return 0;
        }
        if (fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) (t->offset + a), (off_t) (b - a)) ==
            0)
                return 0;
        if (errno != EOPNOTSUPP)
                return -errno;
        if (!rd->zeros) {
                rd->zeros = calloc(1, rd->io_bytes);
                if (!rd->zeros)
                        return -ENOMEM;
        }
        for (uint64_t x = a; x < b; x += rd->io_bytes) {
                size_t n = (size_t) (b - x < rd->io_bytes ? b - x : rd->io_bytes);
                int r = pwrite_all(t->fd, rd->zeros, n, t->offset + x);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Drops what buffered reads cached, once a window's worth has piled up. */
static void drop_behind(struct reader *rd, uint64_t upto, bool force) {
        if (rd->direct || rd->o.method == MG_SNAPSHOT_BUFFERED)
                return;
        if (force || upto - rd->dropped >= rd->o.window_bytes) {
                (void) posix_fadvise(rd->fd, (off_t) rd->dropped, (off_t) (upto - rd->dropped), POSIX_FADV_DONTNEED);
                rd->dropped = upto;
        }
}

/* Image bytes [x, x + n) were read to p, k of them (a negative errno):
 * checksum them and put them where they belong. */
static int block_done(struct reader *rd, uint64_t x, size_t n, uint8_t *p, ssize_t k) {
        const struct mg_snapshot_target *t = rd->dst;
        uint64_t foff = rd->h.data_offset + x;
        int r;

        if (k >= 0 && (size_t) k < n) {
                /* a short direct read: finish it here, to tell EOF from an error */
                ssize_t more = mg_snap_pread_full(rd->fd, p + k, n - (size_t) k, foff + (uint64_t) k);
                k = more < 0 ? more : k + more;
        }
        if (k < 0)
                return (int) k;
        if ((size_t) k < n) {
                mg_snap_log(&rd->o, MG_LOG_ERR, "snapshot: data ends early at %" PRIu64, foff + (uint64_t) k);
                return -EBADMSG; /* the length was checked: the file shrank meanwhile */
        }
        mg_snap_crc_feed(rd->crcs, rd->h.chunk_bytes, x, p, n);
        if (t->kind == MG_SNAPSHOT_MEMORY) {
                if (p != (uint8_t *) t->addr + x)
                        memcpy((uint8_t *) t->addr + x, p, n); /* bounced: not aligned for O_DIRECT */
        } else {
                r = pwrite_all(t->fd, p, n, t->offset + x);
                if (r < 0)
                        return r;
        }
        rd->st.data_bytes += n;
        drop_behind(rd, foff + n, false);
        return 0;
}

static int reap_one(struct reader *rd) {
        struct iocb cb;
        int64_t res = mg_snap_aio_pop(&rd->aio, &cb, NULL);
        unsigned i = (unsigned) cb.aio_data;

        return block_done(rd, rd->inflight[i].x, rd->inflight[i].n, rd->inflight[i].p, (ssize_t) res);
}

static int read_range(struct reader *rd, const struct mg_snap_range *rg) {
        const struct mg_snapshot_target *t = rd->dst;
        uint64_t end = rg->offset + rg->length;
        int r;

        for (uint64_t x = rg->offset; x < end; x += rd->io_bytes) {
                size_t n = (size_t) (end - x < rd->io_bytes ? end - x : rd->io_bytes);
                uint64_t foff = rd->h.data_offset + x;
                unsigned slot = rd->use_aio ? mg_snap_aio_next_slot(&rd->aio) : 0;
                uint8_t *p;

                if (rd->use_aio && mg_snap_aio_full(&rd->aio)) {
                        r = reap_one(rd);
                        if (r < 0)
                                return r;
                        slot = mg_snap_aio_next_slot(&rd->aio);
                }
                if (t->kind == MG_SNAPSHOT_MEMORY &&
                    (!rd->direct || (uintptr_t) ((uint8_t *) t->addr + x) % rd->dio_mem_align == 0))
                        p = (uint8_t *) t->addr + x;
                else
                        p = rd->buf + (size_t) (slot % rd->n_bufs) * rd->io_bytes;
                r = mg_snap_fault(rd->seam, MG_SNAP_OP_READ, foff, n);
                if (r < 0)
                        return r;
                if (rd->use_aio) {
                        rd->inflight[slot].x = x;
                        rd->inflight[slot].n = n;
                        rd->inflight[slot].p = p;
                        r = mg_snap_aio_submit(&rd->aio, rd->fd, false, p, n, foff, x);
                        if (r == 0)
                                continue;
                        if (r != -EAGAIN)
                                return r;
                        /* out of kernel AIO resources for now: read it here, in
                         * order after what is in flight */
                        while (rd->aio.count) {
                                r = reap_one(rd);
                                if (r < 0)
                                        return r;
                        }
                }
                r = block_done(rd, x, n, p, mg_snap_pread_full(rd->fd, p, n, foff));
                if (r < 0)
                        return r;
        }
        return 0;
}

int mg_snapshot_restore(int dirfd, const char *name, const struct mg_snapshot_target *dst,
                        const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret) {
        return mg_snapshot_restore_internal(dirfd, name, dst, o, ret, NULL);
}

int mg_snapshot_restore_internal(int dirfd, const char *name, const struct mg_snapshot_target *dst,
                                 const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret,
                                 const struct mg_snap_seam *seam) {
        struct reader rd = { .dst = dst, .seam = seam, .fd = -1 };
        uint64_t t0 = mg_mono_usec(), t, zero_usec = 0, prev_end = 0;
        struct stat s;
        int r;

        rd.page = mg_snap_page_size();
        r = mg_snap_options_resolve(o, &rd.o);
        if (r < 0)
                return r;
        r = mg_snap_stats_check(ret);
        if (r < 0)
                return r;
        if (!name || !name[0])
                return -EINVAL;
        r = check_target(dst, rd.page);
        if (r < 0)
                return r;
        if (rd.o.window_bytes == 0)
                rd.o.window_bytes = 32 * MG_MIB;
        rd.io_bytes = (size_t) (MG_SNAP_IO_BYTES < rd.o.window_bytes / 2 ? MG_SNAP_IO_BYTES : rd.o.window_bytes / 2);
        rd.io_bytes = rd.io_bytes / rd.page * rd.page;

        r = open_snapshot(dirfd, name);
        if (r == -ELOOP || r == -EINVAL)
                mg_snap_log(&rd.o, MG_LOG_ERR, "snapshot: %s: %s", name,
                            r == -ELOOP ? "a symbolic link (not followed)" : "not a regular file");
        if (r < 0)
                return r;
        rd.fd = r;
        r = load_index(&rd, name);
        if (r < 0)
                goto out;
        r = choose_method(&rd);
        if (r < 0)
                goto out;
        /* Direct reads straight into aligned guest memory need no buffer and
         * go 4 deep; anything else bounces through one buffer per request,
         * 2 deep (touched only if used). */
        bool bounce = !rd.direct || dst->kind == MG_SNAPSHOT_FD ||
                      (uintptr_t) dst->addr % rd.dio_mem_align != 0;
        rd.n_bufs = rd.direct && bounce ? 2 : 1;
        if (rd.direct && !mg_snap_forced(rd.seam, MG_SNAP_SEAM_NO_AIO))
                rd.use_aio = mg_snap_aio_open(&rd.aio, bounce ? 2 : 4) == 0;
        rd.buf = mmap(NULL, rd.n_bufs * rd.io_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (rd.buf == MAP_FAILED) {
                rd.buf = NULL;
                r = -ENOMEM;
                goto out;
        }
        if (dst->kind == MG_SNAPSHOT_FD) {
                if (fstat(dst->fd, &s) < 0) {
                        r = -errno;
                        goto out;
                }
                if ((uint64_t) s.st_size < dst->offset + dst->length &&
                    ftruncate(dst->fd, (off_t) (dst->offset + dst->length)) < 0) {
                        r = -errno;
                        goto out;
                }
        }
        if (!rd.direct)
                (void) posix_fadvise(rd.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        rd.dropped = rd.h.data_offset;

        t = mg_mono_usec();
        for (uint64_t i = 0; i < rd.h.n_ranges; i++) {
                uint64_t z = mg_mono_usec();
                r = zero_fill(&rd, prev_end, rd.ranges[i].offset);
                zero_usec += mg_mono_usec() - z;
                if (r == 0)
                        r = read_range(&rd, &rd.ranges[i]);
                if (r < 0)
                        goto out;
                prev_end = rd.ranges[i].offset + rd.ranges[i].length;
        }
        while (rd.aio.count) {
                r = reap_one(&rd);
                if (r < 0)
                        goto out;
        }
        {
                uint64_t z = mg_mono_usec();
                r = zero_fill(&rd, prev_end, rd.h.image_bytes);
                zero_usec += mg_mono_usec() - z;
                if (r < 0)
                        goto out;
        }
        drop_behind(&rd, rd.h.index_offset, true);
        rd.st.read_usec = mg_mono_usec() - t - zero_usec;
        rd.st.zero_usec = zero_usec;

        for (uint64_t c = 0; c < mg_snap_n_chunks(&rd.h); c++) {
                if (rd.crcs[c] != rd.want[c]) {
                        mg_snap_log(&rd.o, MG_LOG_ERR,
                                    "snapshot: %s: chunk %" PRIu64 " (image bytes %" PRIu64 "+%u) checksum mismatch",
                                    name, c, c * rd.h.chunk_bytes, rd.h.chunk_bytes);
                        r = -EBADMSG;
                        goto out;
                }
        }
        if (fstat(rd.fd, &s) == 0)
                rd.st.allocated_bytes = (uint64_t) s.st_blocks * 512;
        rd.st.size = sizeof(rd.st);
        rd.st.method = rd.direct ? MG_SNAPSHOT_DIRECT
                       : rd.o.method == MG_SNAPSHOT_BUFFERED ? MG_SNAPSHOT_BUFFERED
                                                             : MG_SNAPSHOT_WINDOWED;
        rd.st.page_size = rd.page;
        rd.st.image_bytes = rd.h.image_bytes;
        rd.st.skipped_bytes = rd.h.image_bytes - rd.st.data_bytes;
        rd.st.zero_bytes = rd.st.skipped_bytes;
        rd.st.file_bytes = rd.h.index_offset + mg_snap_index_bytes(&rd.h);
        rd.st.window_bytes = rd.direct || rd.o.method == MG_SNAPSHOT_BUFFERED ? 0 : rd.o.window_bytes;
        rd.st.ranges = (uint32_t) (rd.h.n_ranges > UINT32_MAX ? UINT32_MAX : rd.h.n_ranges);
        rd.st.total_usec = mg_mono_usec() - t0;
        mg_snap_stats_out(&rd.st, ret);
        r = 0;
out:
        mg_snap_aio_close(&rd.aio); /* before the file and the buffers go */
        if (rd.fd >= 0)
                close(rd.fd);
        if (rd.buf)
                munmap(rd.buf, rd.n_bufs * rd.io_bytes);
        free(rd.zeros);
        free(rd.ranges);
        free(rd.crcs);
        free(rd.want);
        return r;
}
