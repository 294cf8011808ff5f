/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mg_snapshot_write(): guest memory written to a snapshot file inside a lend
 * of memory.high, without flooding the page cache (O_DIRECT where the file
 * system takes it, else RWF_DONTCACHE or buffered writes flushed behind a
 * window: the methods below), the file made unnamed (O_TMPFILE) or under a
 * temporary name and put in place only once whole.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "aio.h"
#include "internal.h"
#include "borrow.h"
#include "tune.h"

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080 /* include/uapi/linux/fs.h, 6.14 */
#endif

/*
 * The write path.  One pass over the source: an fd source is asked for its
 * data extents (SEEK_DATA/SEEK_HOLE) so holes are never read; what is read
 * is scanned page by page for zeros; runs of non-zero pages (with zero gaps
 * shorter than min_hole_bytes folded in) are written at data_offset + their
 * image offset, so the file is as sparse as the image.  The index (ranges
 * and chunk checksums) and the header go last.
 *
 * Page cache, per method:
 *   direct     O_DIRECT writes from the source (or a bounce buffer if it is
 *              not aligned): nothing is cached.  Up to 4 writes are in
 *              flight through native AIO (aio.h) while the next block is
 *              scanned.  The file's size is set up front and its blocks are
 *              fallocated before they are written, a region of the image at
 *              a time with the gaps punched back after (reserve()), so no
 *              write extends the file (ext4 runs extending direct writes
 *              synchronously, even through AIO), the data lies in long
 *              extents, the file stays sparse, and ENOSPC comes before the
 *              I/O.
 *   dontcache  pwritev2(RWF_DONTCACHE): buffered, the kernel starts writeback
 *              after each call and drops the pages once written.  Nothing
 *              waits for that writeback, so the window wait below still
 *              bounds what is in flight.
 *   windowed   buffered writes in windows of window/2: start writeback of
 *              the current window (SYNC_FILE_RANGE_WRITE), wait for the
 *              previous one (WAIT_BEFORE|WRITE|WAIT_AFTER), drop it
 *              (POSIX_FADV_DONTNEED).  Dirty + writeback <= 2 windows of
 *              window/2 = window.
 *   buffered   plain writes and one fdatasync at the end: the baseline.
 *
 * Then: fdatasync; bounce buffers and the index freed; one memory.reclaim if
 * asked; the lend ended (memory.high back); the file linked and renamed over
 * the name; the directory fsynced.  Any failure before the rename drops the
 * unpublished file (closed at once) and ends the lend.
 */

struct writer {
        const struct mg_snapshot_source *src;
        const struct mg_snap_seam *seam; /* the test seam, or NULL */
        struct mg_snapshot_options o;
        int dfd;                        /* our own fd of the directory */
        int fd;                         /* the file */
        char tmpname[64];               /* linked under this name while tmp_linked */
        bool tmp_linked;
        uint32_t page;
        uint64_t data_offset;
        enum mg_snapshot_method method;
        bool dio_guessed;               /* statx gave no alignment: 4 KiB assumed */
        bool fallocate_ok;
        bool reserve_ok;                /* regions are fallocated ahead (reserve()) */
        uint64_t res_start, res_end;    /* image bytes fallocated whose gaps are not punched yet */
        uint64_t punch_range;           /* ranges below this index lie below what is left to punch */
        uint32_t dio_mem_align;
        uint8_t *buf;                   /* two bounce buffers of io_bytes, page-aligned */
        size_t io_bytes;
        uint64_t block;                 /* blocks fetched so far: tags the writes of the current one */
        struct mg_snap_aio aio;         /* direct writes in flight */
        bool use_aio;
        uint64_t piece_bytes;
        struct mg_snap_range *ranges;
        uint64_t n_ranges, cap_ranges;
        uint32_t *crcs;
        uint64_t n_chunks;
        bool have_prev;
        uint64_t prev_off, prev_len;    /* file range of the previous window */
        struct mg_snapshot_stats st;
        uint64_t lend_id;               /* the guard's lend this write runs in */
};

static void guard_lock(struct writer *w, bool lock) {
        if (w->o.lock)
                w->o.lock(w->o.lock_userdata, lock);
}

static int check_source(const struct mg_snapshot_source *src, uint32_t page) {
        struct stat s;

        if (!src || src->length == 0 || src->length % page)
                return -EINVAL;
        switch (src->kind) {
        case MG_SNAPSHOT_MEMORY:
                return src->addr && (uintptr_t) src->addr <= UINTPTR_MAX - src->length ? 0 : -EINVAL;
        case MG_SNAPSHOT_FD:
                if (src->fd < 0 || src->offset % page || src->offset > UINT64_MAX - src->length)
                        return -EINVAL;
                if (fstat(src->fd, &s) < 0)
                        return -errno;
                if (!S_ISREG(s.st_mode))
                        return -EINVAL;
                if ((uint64_t) s.st_size < src->offset + src->length)
                        return -ENODATA;
                return 0;
        }
        return -EINVAL;
}

static bool plain_name(const char *name) {
        return name && name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
               strlen(name) < 256;
}

static void random_name(char *buf, size_t size) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t) sizeof(r))
                r = mg_mono_usec() ^ ((uint64_t) getpid() << 32);
        snprintf(buf, size, "%s%016" PRIx64, MG_SNAP_TMP_PREFIX, r);
}

/*
 * A writer that crashed with a named temporary file leaves it behind (an
 * O_TMPFILE one vanishes by itself).  Each writer holds flock(LOCK_EX) on its
 * file from before the name exists (O_TMPFILE, linked later) or from right
 * after creating it; a lock dies with its process.  So a temporary file we
 * can lock, and that nobody wrote for a while (the gap between a named
 * create and its flock), is an orphan: remove it.
 */
static void cleanup_stale(struct writer *w) {
        struct timespec now;
        struct dirent *de;
        DIR *d;
        int dup_fd;

        dup_fd = openat(w->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dup_fd < 0)
                return;
        d = fdopendir(dup_fd);
        if (!d) {
                close(dup_fd);
                return;
        }
        clock_gettime(CLOCK_REALTIME, &now);
        while ((de = readdir(d))) {
                struct stat a, b;
                int fd;

                if (strncmp(de->d_name, MG_SNAP_TMP_PREFIX, strlen(MG_SNAP_TMP_PREFIX)) != 0)
                        continue;
                if (fstatat(w->dfd, de->d_name, &a, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(a.st_mode))
                        continue;
                int64_t age_usec = ((int64_t) now.tv_sec - (int64_t) a.st_mtim.tv_sec) * 1000000 +
                                   ((int64_t) now.tv_nsec - (int64_t) a.st_mtim.tv_nsec) / 1000;
                if (age_usec < (int64_t) MG_SNAP_STALE_USEC)
                        continue;
                fd = openat(w->dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0)
                        continue;
                if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &b) == 0 &&
                    fstatat(w->dfd, de->d_name, &a, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
                    a.st_dev == b.st_dev) {
                        if (unlinkat(w->dfd, de->d_name, 0) == 0)
                                mg_snap_log(&w->o, MG_LOG_INFO, "snapshot: removed %s left by a dead writer",
                                            de->d_name);
                }
                close(fd); /* at once: never hold a deleted file open */
        }
        closedir(d);
}

static int open_tmp(struct writer *w) {
        int fd, r;

        if (!mg_snap_forced(w->seam, MG_SNAP_SEAM_NO_TMPFILE)) {
                fd = openat(w->dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, (mode_t) w->o.mode);
                if (fd >= 0) {
                        w->fd = fd;
                        (void) flock(fd, LOCK_EX);
                        return 0;
                }
                /* EOPNOTSUPP: the fs has no O_TMPFILE; EISDIR: the kernel
                 * predates it (3.11) and saw O_DIRECTORY; anything else
                 * (EACCES, EROFS, ENOSPC) is the answer. */
                if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
                        return -errno;
        }
        for (int i = 0; i < 16; i++) {
                random_name(w->tmpname, sizeof(w->tmpname));
                fd = openat(w->dfd, w->tmpname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            (mode_t) w->o.mode);
                if (fd >= 0) {
                        w->fd = fd;
                        w->tmp_linked = true;
                        (void) flock(fd, LOCK_EX);
                        return 0;
                }
                if (errno != EEXIST)
                        break;
        }
        r = -errno;
        return r;
}

/* Gives an O_TMPFILE file a (temporary) name. */
static int link_tmp(struct writer *w) {
        char proc[64];

        if (w->tmp_linked)
                return 0;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
        for (int i = 0; i < 16; i++) {
                random_name(w->tmpname, sizeof(w->tmpname));
                /* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc link
                 * does the same for anyone. */
                if (linkat(w->fd, "", w->dfd, w->tmpname, AT_EMPTY_PATH) == 0 ||
                    (errno != EEXIST &&
                     linkat(AT_FDCWD, proc, w->dfd, w->tmpname, AT_SYMLINK_FOLLOW) == 0)) {
                        w->tmp_linked = true;
                        return 0;
                }
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

/* shmem's fallocate allocates the pages themselves, charged to the writer's
 * cgroup: a region's gaps would be the actor's memory until punched, and a
 * tmpfs file has no disk layout to keep together. */
static bool on_tmpfs(int fd) {
        struct statfs s;
        return fstatfs(fd, &s) == 0 && s.f_type == TMPFS_MAGIC;
}

static int set_direct(int fd, bool on) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return -errno;
        fl = on ? fl | O_DIRECT : fl & ~O_DIRECT;
        return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

/* Picks the method: direct if the file system does direct I/O at page
 * alignment, else dontcache (tried on the first write), else windowed. */
static int choose_method(struct writer *w) {
        uint32_t mem_align = 0, off_align = 0;
        enum mg_snapshot_method want = w->o.method;
        int r;

        w->method = want;
        if (want == MG_SNAPSHOT_AUTO || want == MG_SNAPSHOT_DIRECT) {
                r = mg_snap_dio_align(w->fd, &mem_align, &off_align);
                if (r == -EOPNOTSUPP) {
                        /* statx predates STATX_DIOALIGN: try O_DIRECT with
                         * page alignment, which every block size up to the
                         * page satisfies; a first write refused with EINVAL
                         * falls back (see write_run). */
                        mem_align = off_align = w->page;
                        w->dio_guessed = true;
                        r = 1;
                }
                if (r == 1 && off_align <= w->page && mem_align <= w->page && set_direct(w->fd, true) == 0) {
                        w->method = MG_SNAPSHOT_DIRECT;
                        w->dio_mem_align = mem_align ? mem_align : 1;
                        return 0;
                }
                if (want == MG_SNAPSHOT_DIRECT)
                        return -EOPNOTSUPP;
                w->dio_guessed = false;
                w->method = MG_SNAPSHOT_DONTCACHE; /* confirmed or dropped by the first write */
        }
        return 0;
}

static void set_piece(struct writer *w) {
        if (w->method == MG_SNAPSHOT_WINDOWED || w->method == MG_SNAPSHOT_DONTCACHE)
                w->piece_bytes = w->o.window_bytes / 2;
        else
                w->piece_bytes = w->io_bytes;
}

/* Falls back from a method the kernel refused on the first try.  Returns 0
 * to retry the write, or the error if the method was forced. */
static int fall_back(struct writer *w, int err) {
        if (w->method == MG_SNAPSHOT_DIRECT && err == -EINVAL && w->dio_guessed) {
                int r = set_direct(w->fd, false);
                if (r < 0)
                        return r;
                mg_snap_log(&w->o, MG_LOG_INFO, "snapshot: O_DIRECT refused, writing through the page cache");
                w->dio_guessed = false;
                w->method = w->o.method == MG_SNAPSHOT_AUTO ? MG_SNAPSHOT_DONTCACHE : MG_SNAPSHOT_WINDOWED;
                set_piece(w);
                return 0;
        }
        if (w->method == MG_SNAPSHOT_DONTCACHE && err == -EOPNOTSUPP && w->o.method == MG_SNAPSHOT_AUTO) {
                /* RWF_DONTCACHE is 6.14+ and needs the fs to opt in; older
                 * kernels reject the unknown flag with EOPNOTSUPP. */
                w->method = MG_SNAPSHOT_WINDOWED;
                set_piece(w);
                return 0;
        }
        return err;
}

static int write_sync(struct writer *w, const uint8_t *p, uint64_t file_off, size_t len);

/* Takes the oldest write in flight off the queue.  A short completion is
 * where the disk filled up: the rest is written synchronously, which says
 * why. */
static int reap_one(struct writer *w) {
        struct iocb cb;
        int64_t res = mg_snap_aio_pop(&w->aio, &cb, NULL);
        if (res < 0)
                return (int) res;
        if ((uint64_t) res < cb.aio_nbytes)
                return write_sync(w, (const uint8_t *) (uintptr_t) cb.aio_buf + res, (uint64_t) cb.aio_offset + (uint64_t) res,
                                  (size_t) (cb.aio_nbytes - (uint64_t) res));
        return 0;
}

/* Waits for direct writes of blocks up to last (all with UINT64_MAX), so
 * their bounce buffer can be reused. */
static int reap_upto(struct writer *w, uint64_t last) {
        while (w->aio.count && w->aio.slot[w->aio.head].tag <= last) {
                int r = reap_one(w);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Punches image bytes [from, to) that no range covers: blocks reserve()
 * allocated that no data went to.  Every range below to is final (runs are
 * written in image order) but the last, which may still grow. */
static int punch_gaps(struct writer *w, uint64_t from, uint64_t to) {
        uint64_t x = from, i = w->punch_range;

        while (x < to) {
                uint64_t end = to;
                while (i < w->n_ranges && w->ranges[i].offset + w->ranges[i].length <= x)
                        i++;
                if (i < w->n_ranges && w->ranges[i].offset <= x) {
                        x = w->ranges[i].offset + w->ranges[i].length;
                        continue;
                }
                if (i < w->n_ranges && w->ranges[i].offset < to)
                        end = w->ranges[i].offset;
                if (fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) (w->data_offset + x),
                              (off_t) (end - x)) < 0)
                        return -errno;
                x = end;
        }
        w->punch_range = i < w->n_ranges ? i : w->n_ranges ? w->n_ranges - 1 : 0;
        return 0;
}

/* The gaps of the reserved region go back; nothing is reserved after. */
static int unreserve(struct writer *w) {
        int r = 0;

        if (w->res_end > w->res_start)
                r = punch_gaps(w, w->res_start, w->res_end);
        if (r == -EOPNOTSUPP) {
                /* allocated but not punchable: the gaps stay allocated
                 * (unwritten: they read as zeros), reserve no more */
                mg_snap_log(&w->o, MG_LOG_INFO, "snapshot: cannot punch holes here, the file is less sparse");
                w->reserve_ok = false;
                r = 0;
        }
        w->res_start = w->res_end = 0;
        return r;
}

/*
 * Allocates the blocks of image bytes [a, b) before their direct write.
 * Fallocated run by run (runs of 2-6 MiB between the holes of a guest
 * image), a file ends up in as many pieces as runs, out of order: ext4's
 * fallocate asks mballoc for exactly the run (no normalisation, no
 * preallocation), mballoc puts a power-of-two request on a free chunk
 * aligned to its size rather than right after the file's previous extent,
 * and writers allocating at the same time take the blocks in between: six
 * writers at once on one ext4, as in the burn-in, left 10-18 extents per
 * 64 MiB image where the buffered writer's delayed allocation left 1-3
 * (filefrag).  So the image is allocated MG_SNAP_RESERVE_BYTES at
 * a time, in one call, ahead of the runs that land there, and the gaps
 * between the runs are punched back once the writes have moved past the
 * region (and at the end): the data lies in long extents, the file is as
 * sparse as before.  A region that does not fit (ENOSPC, EDQUOT: it holds
 * the gaps too) is punched back and the runs are allocated one by one as
 * before, so whatever fitted before still fits.  Returns 1 if [a, b) is
 * allocated, 0 if the caller is to allocate the run, or a negative errno.
 */
static int reserve(struct writer *w, uint64_t a, uint64_t b) {
        uint64_t start, end;
        int r;

        if (b <= w->res_end)
                return 1;
        if (a >= w->res_end) {
                r = unreserve(w);
                if (r < 0)
                        return r;
                if (!w->reserve_ok)
                        return 0;
                start = a / MG_SNAP_RESERVE_BYTES * MG_SNAP_RESERVE_BYTES;
        } else {
                start = w->res_end; /* a run that crosses the region's end */
        }
        end = b / MG_SNAP_RESERVE_BYTES * MG_SNAP_RESERVE_BYTES;
        if (end < b)
                end += MG_SNAP_RESERVE_BYTES;
        if (end > w->src->length)
                end = w->src->length;
        r = mg_snap_fault(w->seam, MG_SNAP_OP_RESERVE, w->data_offset + start, end - start);
        if (r == 0 && fallocate(w->fd, 0, (off_t) (w->data_offset + start), (off_t) (end - start)) < 0)
                r = -errno;
        if (r == 0) {
                if (w->res_end == w->res_start)
                        w->res_start = start;
                w->res_end = end;
                return 1;
        }
        if (r != -ENOSPC && r != -EDQUOT)
                return r;
        /* What it took before it failed: nothing is written there yet. */
        (void) fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) (w->data_offset + start),
                         (off_t) (end - start));
        mg_snap_log(&w->o, MG_LOG_INFO, "snapshot: no room to allocate ahead, allocating run by run");
        w->reserve_ok = false;
        return 0;
}

static int write_run(struct writer *w, const uint8_t *p, uint64_t file_off, size_t len) {
        int r;

        if (w->method == MG_SNAPSHOT_DIRECT && w->fallocate_ok) {
                uint64_t a = file_off - w->data_offset;
                r = w->reserve_ok ? reserve(w, a, a + len) : 0;
                if (r == 0 && fallocate(w->fd, 0, (off_t) file_off, (off_t) len) < 0)
                        r = -errno;
                if (r == -EOPNOTSUPP) {
                        w->fallocate_ok = false;
                        w->reserve_ok = false;
                } else if (r < 0) {
                        return r;
                }
        }
        if (w->use_aio) {
                r = mg_snap_fault(w->seam, MG_SNAP_OP_WRITE, file_off, len);
                if (r < 0)
                        return r;
                if (mg_snap_aio_full(&w->aio)) {
                        r = reap_one(w);
                        if (r < 0)
                                return r;
                }
                r = mg_snap_aio_submit(&w->aio, w->fd, true, (void *) (uintptr_t) p, len, file_off, w->block);
                if (r != -EAGAIN)
                        return r;
                /* out of kernel AIO resources for now: write it here */
        }
        return write_sync(w, p, file_off, len);
}

static int write_sync(struct writer *w, const uint8_t *p, uint64_t file_off, size_t len) {
        size_t done = 0;
        int r;

        while (done < len) {
                ssize_t n;
                r = mg_snap_fault(w->seam, MG_SNAP_OP_WRITE, file_off + done, len - done);
                if (r < 0)
                        return r;
                if (w->method == MG_SNAPSHOT_DONTCACHE) {
                        struct iovec iov = { .iov_base = (void *) (p + done), .iov_len = len - done };
                        n = pwritev2(w->fd, &iov, 1, (off_t) (file_off + done), RWF_DONTCACHE);
                } else {
                        n = pwrite(w->fd, p + done, len - done, (off_t) (file_off + done));
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = fall_back(w, -errno);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n == 0)
                        return -EIO;
                /* A short write is where the disk filled up; the next call
                 * says why. */
                done += (size_t) n;
        }
        if (w->method == MG_SNAPSHOT_DIRECT)
                w->dio_guessed = false; /* the guess held */
        return 0;
}

static int add_range(struct writer *w, uint64_t off, uint64_t len) {
        if (w->n_ranges && w->ranges[w->n_ranges - 1].offset + w->ranges[w->n_ranges - 1].length == off) {
                w->ranges[w->n_ranges - 1].length += len;
                return 0;
        }
        if (w->n_ranges == w->cap_ranges) {
                uint64_t cap = w->cap_ranges ? w->cap_ranges * 2 : 64;
                struct mg_snap_range *n = realloc(w->ranges, (size_t) cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                w->ranges = n;
                w->cap_ranges = cap;
        }
        w->ranges[w->n_ranges++] = (struct mg_snap_range) { off, len };
        return 0;
}

/* Writes image bytes [a, b) found at p. */
static int emit(struct writer *w, const uint8_t *p, uint64_t a, uint64_t b) {
        int r;

        mg_snap_crc_feed(w->crcs, w->o.chunk_bytes, a, p, (size_t) (b - a));
        r = add_range(w, a, b - a);
        if (r < 0)
                return r;
        w->st.data_bytes += b - a;
        return write_run(w, p, w->data_offset + a, (size_t) (b - a));
}

/* Where image bytes [a, a + n) can be read: the source itself, or one of
 * two bounce buffers (fd sources; memory sources not aligned for O_DIRECT),
 * used in turn: the one of the block before last is free again once its
 * direct writes completed. */
static int get_block(struct writer *w, uint64_t a, size_t n, const uint8_t **ret) {
        const struct mg_snapshot_source *s = w->src;
        uint8_t *b = w->buf + (w->block % 2) * w->io_bytes;
        int r;

        w->block++;
        if (s->kind == MG_SNAPSHOT_MEMORY && (w->method != MG_SNAPSHOT_DIRECT ||
                                              (uintptr_t) ((const uint8_t *) s->addr + a) % w->dio_mem_align == 0)) {
                *ret = (const uint8_t *) s->addr + a;
                return 0;
        }
        /* Writes are tagged with w->block as it is now (1-based): the block
         * that used buffer b before was tagged w->block - 2. */
        if (w->block >= 3) {
                r = reap_upto(w, w->block - 2);
                if (r < 0)
                        return r;
        }
        if (s->kind == MG_SNAPSHOT_MEMORY) {
                memcpy(b, (const uint8_t *) s->addr + a, n);
                *ret = b;
                return 0;
        }
        ssize_t k = mg_snap_pread_full(s->fd, b, n, s->offset + a);
        if (k < 0)
                return (int) k;
        if ((size_t) k < n)
                return -ENODATA; /* the source shrank under us */
        *ret = b;
        return 0;
}

/* Scans image bytes [a, a + n) page by page and writes its non-zero runs. */
static int write_block(struct writer *w, uint64_t a, size_t n) {
        const uint8_t *p = NULL;
        uint64_t run = UINT64_MAX, zeros = UINT64_MAX, end = a + n;
        int r;

        r = get_block(w, a, n, &p);
        if (r < 0)
                return r;
        for (uint64_t pg = a; pg < end; pg += w->page) {
                bool z = mg_snap_is_zero(p + (pg - a), w->page);
                if (!z) {
                        if (run == UINT64_MAX) {
                                run = pg;
                        } else if (zeros != UINT64_MAX && pg - zeros >= w->o.min_hole_bytes) {
                                r = emit(w, p + (run - a), run, zeros);
                                if (r < 0)
                                        return r;
                                w->st.zero_bytes += pg - zeros;
                                run = pg;
                        }
                        zeros = UINT64_MAX;
                } else if (run == UINT64_MAX) {
                        w->st.zero_bytes += w->page;
                } else if (zeros == UINT64_MAX) {
                        zeros = pg;
                }
        }
        if (run != UINT64_MAX) {
                r = emit(w, p + (run - a), run, zeros != UINT64_MAX ? zeros : end);
                if (r < 0)
                        return r;
        }
        if (run != UINT64_MAX && zeros != UINT64_MAX)
                w->st.zero_bytes += end - zeros;
        return 0;
}

static int write_extent(struct writer *w, uint64_t a, uint64_t b) {
        for (uint64_t x = a; x < b; x += w->io_bytes) {
                size_t n = (size_t) (b - x < w->io_bytes ? b - x : w->io_bytes);
                int r = write_block(w, x, n);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Image bytes [p0, p1) of an fd source: its data extents only.  A file
 * system without SEEK_DATA reports the whole file as data (the generic
 * llseek), which is what we want. */
static int write_fd_piece(struct writer *w, uint64_t p0, uint64_t p1) {
        const struct mg_snapshot_source *s = w->src;
        uint64_t x = p0;
        int r;

        while (x < p1) {
                off_t d = lseek(s->fd, (off_t) (s->offset + x), SEEK_DATA);
                uint64_t ds, de;
                if (d < 0 && errno == ENXIO) {
                        w->st.hole_bytes += p1 - x; /* holes to the end of the file */
                        return 0;
                }
                if (d < 0) {
                        ds = x;
                        de = p1;
                } else {
                        off_t h = lseek(s->fd, d, SEEK_HOLE);
                        if (h < 0)
                                return -errno;
                        /* Extents are in blocks, maybe smaller than a page. */
                        ds = ((uint64_t) d - s->offset) / w->page * w->page;
                        de = ((uint64_t) h - s->offset + w->page - 1) / w->page * w->page;
                        if (ds < x)
                                ds = x;
                        if (ds > p1)
                                ds = p1;
                        if (de > p1)
                                de = p1;
                }
                w->st.hole_bytes += ds - x;
                if (ds < de) {
                        r = write_extent(w, ds, de);
                        if (r < 0)
                                return r;
                }
                x = de > ds ? de : ds + w->page; /* always forward, whatever lseek said */
        }
        return 0;
}

static int sync_range(struct writer *w, uint64_t off, uint64_t len, unsigned flags) {
        int r = mg_snap_fault(w->seam, MG_SNAP_OP_SYNC, off, len);
        if (r < 0)
                return r;
        return sync_file_range(w->fd, (off_t) off, (off_t) len, flags) < 0 ? -errno : 0;
}

/* After window [off, off + len) was written: start its writeback, wait for
 * the previous window's and drop it from the cache. */
static int window_done(struct writer *w, uint64_t off, uint64_t len) {
        int r;

        if (w->method != MG_SNAPSHOT_WINDOWED && w->method != MG_SNAPSHOT_DONTCACHE)
                return 0;
        r = sync_range(w, off, len, SYNC_FILE_RANGE_WRITE);
        if (r < 0)
                return r;
        if (w->have_prev) {
                r = sync_range(w, w->prev_off, w->prev_len,
                               SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
                if (r < 0)
                        return r;
                /* Clean now, so DONTNEED drops it (dontcache pages are gone already). */
                if (w->method == MG_SNAPSHOT_WINDOWED)
                        (void) posix_fadvise(w->fd, (off_t) w->prev_off, (off_t) w->prev_len, POSIX_FADV_DONTNEED);
        }
        w->have_prev = true;
        w->prev_off = off;
        w->prev_len = len;
        return 0;
}

static int write_data(struct writer *w) {
        uint64_t len = w->src->length;
        int r;

        for (uint64_t p0 = 0; p0 < len;) {
                uint64_t p1 = p0 + w->piece_bytes < len ? p0 + w->piece_bytes : len;
                r = w->src->kind == MG_SNAPSHOT_FD ? write_fd_piece(w, p0, p1) : write_extent(w, p0, p1);
                if (r < 0)
                        return r;
                r = window_done(w, w->data_offset + p0, p1 - p0);
                if (r < 0)
                        return r;
                p0 = p1;
        }
        r = reap_upto(w, UINT64_MAX);
        if (r < 0)
                return r;
        if (w->have_prev && (w->method == MG_SNAPSHOT_WINDOWED || w->method == MG_SNAPSHOT_DONTCACHE)) {
                r = sync_range(w, w->prev_off, w->prev_len,
                               SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
                if (r < 0)
                        return r;
                if (w->method == MG_SNAPSHOT_WINDOWED)
                        (void) posix_fadvise(w->fd, (off_t) w->prev_off, (off_t) w->prev_len, POSIX_FADV_DONTNEED);
        }
        return unreserve(w);
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

/* The index after the data area, then the header: small, written through
 * the page cache (O_DIRECT off again) and synced with the rest. */
static int write_index(struct writer *w) {
        struct mg_snap_header h = {
                .version = MG_SNAP_VERSION,
                .page_size = w->page,
                .chunk_bytes = w->o.chunk_bytes,
                .image_bytes = w->src->length,
                .data_offset = w->data_offset,
                .index_offset = w->data_offset + w->src->length,
                .n_ranges = w->n_ranges,
                .data_bytes = w->st.data_bytes,
        };
        uint8_t hdr[MG_SNAP_HEADER_BYTES];
        uint64_t n = mg_snap_index_bytes(&h);
        uint8_t *idx;
        int r;

        if (w->method == MG_SNAPSHOT_DIRECT) {
                r = set_direct(w->fd, false);
                if (r < 0)
                        return r;
        }
        idx = malloc((size_t) n);
        if (!idx)
                return -ENOMEM;
        h.index_crc = mg_snap_index_encode(&h, w->ranges, w->crcs, idx);
        r = mg_snap_fault(w->seam, MG_SNAP_OP_WRITE, h.index_offset, n);
        if (r == 0)
                r = pwrite_all(w->fd, idx, (size_t) n, h.index_offset);
        free(idx);
        if (r < 0)
                return r;
        mg_snap_header_encode(&h, hdr);
        r = mg_snap_fault(w->seam, MG_SNAP_OP_WRITE, 0, sizeof(hdr));
        if (r == 0)
                r = pwrite_all(w->fd, hdr, sizeof(hdr), 0);
        w->st.file_bytes = h.index_offset + n;
        w->st.ranges = (uint32_t) (w->n_ranges > UINT32_MAX ? UINT32_MAX : w->n_ranges);
        return r;
}

/* One bounded memory.reclaim of the actor's cgroup, before memory.high
 * comes back (mg_guard_reclaim()). */
static void reclaim(struct writer *w, mg_guard *g) {
        uint64_t t = mg_mono_usec();
        int r = mg_guard_reclaim(g, w->o.reclaim_bytes);

        w->st.reclaimed_request_bytes = w->o.reclaim_bytes;
        w->st.reclaim_error = r;
        w->st.reclaim_usec = mg_mono_usec() - t;
        if (r < 0 && r != -EAGAIN)
                mg_snap_log(&w->o, MG_LOG_WARNING, "snapshot: memory.reclaim: %s", strerror(-r));
}

/* The lend's end takes the lock only around its checks and bookkeeping:
 * the write of memory.high, which reclaims what the actor holds above the
 * old value (seconds on 6.1 and 6.12), runs without it, so the set's thread
 * goes on ticking meanwhile (mg_guard_lend_end_serialised()).  Back, memory.high
 * holds the old value (or what someone else wrote during the lend). */
static int lend_end(struct writer *w, mg_guard *g) {
        uint64_t t = mg_mono_usec();
        int r;

        r = mg_guard_lend_end_serialised(g, w->lend_id, w->o.lock, w->o.lock_userdata);
        w->st.lend_end_usec = mg_mono_usec() - t;
        if (r == -ENOENT || r == -ESTALE || r == -ENODEV) {
                /* The deadline restored memory.high already (and, for
                 * -ESTALE, someone lent again since: that lend is not ours
                 * to end), or the actor's cgroup is gone: nothing left to
                 * restore. */
                mg_snap_log(&w->o, MG_LOG_WARNING, "snapshot: lend already over: %s", strerror(-r));
                return 0;
        }
        if (r < 0)
                mg_snap_log(&w->o, MG_LOG_ERR, "snapshot: restoring memory.high: %s", strerror(-r));
        return r;
}

/* Removes the unpublished file: an O_TMPFILE file vanishes on close, a
 * named one is unlinked first.  Closed at once either way. */
static void discard(struct writer *w) {
        if (w->fd < 0)
                return;
        if (w->tmp_linked)
                (void) unlinkat(w->dfd, w->tmpname, 0);
        w->tmp_linked = false;
        close(w->fd);
        w->fd = -1;
}

static int publish(struct writer *w, const char *name) {
        struct stat s;
        int r;

        r = link_tmp(w);
        if (r < 0) {
                mg_snap_log(&w->o, MG_LOG_ERR, "snapshot: linking the file for %s: %s", name, strerror(-r));
                return r;
        }
        if (fstat(w->fd, &s) == 0)
                w->st.allocated_bytes = (uint64_t) s.st_blocks * 512;
        if (renameat(w->dfd, w->tmpname, w->dfd, name) < 0) {
                r = -errno;
                mg_snap_log(&w->o, MG_LOG_ERR, "snapshot: renaming to %s: %s", name, strerror(-r));
                return r;
        }
        w->tmp_linked = false;
        close(w->fd); /* published: the name holds it now */
        w->fd = -1;
        if (!(w->o.flags & MG_SNAPSHOT_NO_SYNC) && fsync(w->dfd) < 0) {
                r = -errno;
                mg_snap_log(&w->o, MG_LOG_ERR, "snapshot: %s renamed but the directory sync failed: %s", name,
                            strerror(-r));
                return r;
        }
        return 0;
}

static uint64_t default_window(const mg_guard *g) {
        if (!g)
                return 32 * MG_MIB;
        return mg_clamp_u64(mg_guard_get_limit_bytes(g) / 16, 8 * MG_MIB, 64 * MG_MIB);
}

int mg_snapshot_write(const struct mg_snapshot_source *src, int dirfd, const char *name,
                      const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret) {
        return mg_snapshot_write_internal(src, dirfd, name, o, ret, NULL);
}

int mg_snapshot_write_internal(const struct mg_snapshot_source *src, int dirfd, const char *name,
                               const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret,
                               const struct mg_snap_seam *seam) {
        struct writer w = { .src = src, .seam = seam, .dfd = -1, .fd = -1, .fallocate_ok = true };
        mg_guard *g;
        bool lent = false;
        off_t saved_pos = -1;
        uint64_t t0 = mg_mono_usec(), t;
        int r;

        w.page = mg_snap_page_size();
        r = mg_snap_options_resolve(o, &w.o);
        if (r < 0)
                return r;
        r = mg_snap_stats_check(ret);
        if (r < 0)
                return r;
        if (!plain_name(name) || strncmp(name, MG_SNAP_TMP_PREFIX, strlen(MG_SNAP_TMP_PREFIX)) == 0)
                return -EINVAL;
        r = check_source(src, w.page);
        if (r < 0)
                return r;
        g = w.o.guard;
        if (g) {
                /* Alive until the write is over, whatever the set's thread
                 * does meanwhile (a removal on MG_EVENT_GONE). */
                guard_lock(&w, true);
                mg_guard_hold(g);
                guard_lock(&w, false);
        }
        /* SEEK_DATA moves the fd's offset; the caller's is put back. */
        if (src->kind == MG_SNAPSHOT_FD)
                saved_pos = lseek(src->fd, 0, SEEK_CUR);

        if (w.o.window_bytes == 0)
                w.o.window_bytes = default_window(g);
        w.o.window_bytes = w.o.window_bytes / (2 * (uint64_t) w.page) * (2 * (uint64_t) w.page);
        w.io_bytes = (size_t) (MG_SNAP_IO_BYTES < w.o.window_bytes / 2 ? MG_SNAP_IO_BYTES : w.o.window_bytes / 2);
        w.data_offset = w.page > 4096 ? w.page : 4096;
        w.n_chunks = src->length / w.o.chunk_bytes + (src->length % w.o.chunk_bytes != 0);
        w.st = (struct mg_snapshot_stats) {
                .size = sizeof(w.st),
                .page_size = w.page,
                .image_bytes = src->length,
                .window_bytes = w.o.window_bytes,
        };

        int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                r = -errno;
                goto out;
        }
        w.dfd = dfd;
        w.crcs = calloc((size_t) w.n_chunks, sizeof(*w.crcs));
        /* Touched only if used: a memory source needs none. */
        w.buf = mmap(NULL, 2 * w.io_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (!w.crcs || w.buf == MAP_FAILED) {
                w.buf = NULL;
                r = -ENOMEM;
                goto out;
        }
        cleanup_stale(&w);
        r = open_tmp(&w);
        if (r < 0) {
                mg_snap_log(&w.o, MG_LOG_ERR, "snapshot: cannot create a file next to %s: %s", name, strerror(-r));
                goto out;
        }
        r = choose_method(&w);
        if (r < 0)
                goto out;
        set_piece(&w);
        w.reserve_ok = w.method == MG_SNAPSHOT_DIRECT && !on_tmpfs(w.fd);
        /* Direct writes go through a queue of 4 when the alignment is known
         * (a guessed one is tried synchronously first). */
        if (w.method == MG_SNAPSHOT_DIRECT && !w.dio_guessed && !mg_snap_forced(w.seam, MG_SNAP_SEAM_NO_AIO))
                w.use_aio = mg_snap_aio_open(&w.aio, 4) == 0;
        /* The whole data area at once: no data write extends the file. */
        if (ftruncate(w.fd, (off_t) (w.data_offset + src->length)) < 0) {
                r = -errno;
                goto out;
        }

        if (g) {
                uint64_t extra = w.o.lend_bytes ? w.o.lend_bytes : w.o.window_bytes + 2 * w.io_bytes + 4 * MG_MIB;
                /* The lend rule for the image, never shorter than the
                 * guard's own deadline (by default the same rule for its
                 * limit). */
                uint64_t deadline = w.o.lend_deadline_usec;
                if (!deadline) {
                        struct mg_guard_options go = { .size = sizeof(go) };
                        deadline = mg_lend_deadline_usec(src->length);
                        if (mg_guard_get_options(g, &go) == 0 && go.lend_deadline_usec > deadline)
                                deadline = go.lend_deadline_usec;
                }
                t = mg_mono_usec();
                guard_lock(&w, true);
                r = mg_guard_lend_begin(g, extra, deadline, &w.lend_id);
                guard_lock(&w, false);
                w.st.lend_begin_usec = mg_mono_usec() - t;
                if (r < 0) {
                        mg_snap_log(&w.o, MG_LOG_ERR, "snapshot: lending memory.high: %s", strerror(-r));
                        goto out;
                }
                lent = true;
                w.st.lend_bytes = extra;
        }

        t = mg_mono_usec();
        r = write_data(&w);
        if (r == 0)
                r = write_index(&w);
        w.st.write_usec = mg_mono_usec() - t;
        if (r < 0) {
                mg_snap_log(&w.o, MG_LOG_ERR, "snapshot: writing %s: %s", name, strerror(-r));
                goto out;
        }
        /* Give back what the write itself was charged (bounce buffers,
         * the index) before memory.high comes back: an actor left above it
         * would be throttled, or reclaimed by the lend's end. */
        mg_snap_aio_close(&w.aio);
        munmap(w.buf, 2 * w.io_bytes);
        w.buf = NULL;
        free(w.ranges);
        w.ranges = NULL;

        t = mg_mono_usec();
        if (!(w.o.flags & MG_SNAPSHOT_NO_SYNC)) {
                r = mg_snap_fault(w.seam, MG_SNAP_OP_FSYNC, 0, 0);
                if (r == 0 && fdatasync(w.fd) < 0)
                        r = -errno;
                if (r < 0) {
                        mg_snap_log(&w.o, MG_LOG_ERR, "snapshot: syncing %s: %s", name, strerror(-r));
                        goto out;
                }
        }
        /* Whatever is still cached (the index, the header, the last
         * window if unsynced) is clean once synced; the baseline keeps its
         * cache as a plain write would. */
        if (w.method != MG_SNAPSHOT_BUFFERED)
                (void) posix_fadvise(w.fd, 0, 0, POSIX_FADV_DONTNEED);
        w.st.sync_usec = mg_mono_usec() - t;

        if (g && w.o.reclaim_bytes)
                reclaim(&w, g);
        if (lent) {
                lent = false;
                r = lend_end(&w, g);
                if (r < 0)
                        goto out;
        }

        t = mg_mono_usec();
        r = publish(&w, name);
        w.st.publish_usec = mg_mono_usec() - t;
        if (r < 0)
                goto out;
        w.st.method = w.method;
        w.st.skipped_bytes = src->length - w.st.data_bytes;
        w.st.total_usec = mg_mono_usec() - t0;
        mg_snap_stats_out(&w.st, ret);
        r = 0;
out:
        mg_snap_aio_close(&w.aio); /* before the file and the buffers go */
        discard(&w);
        if (lent)
                (void) lend_end(&w, g); /* after discard: the file's dirty pages are gone */
        if (src->kind == MG_SNAPSHOT_FD && saved_pos >= 0)
                (void) lseek(src->fd, saved_pos, SEEK_SET);
        if (w.dfd >= 0)
                close(w.dfd);
        if (w.buf)
                munmap(w.buf, 2 * w.io_bytes);
        free(w.crcs);
        free(w.ranges);
        if (g) {
                guard_lock(&w, true);
                mg_guard_release(g);
                guard_lock(&w, false);
        }
        return r;
}
