/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by write.c and restore.c, and the seams the unit tests use. */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format.h"
#include "util.h"
#include "memguard/snapshot.h"

/* One read or write call moves at most this much: big enough that the block
 * layer keeps several requests in flight for one O_DIRECT call, small
 * enough to bound the bounce buffer charged to the actor. */
#define MG_SNAP_IO_BYTES (4 * MG_MIB)
#define MG_SNAP_MIN_WINDOW (UINT64_C(256) * 1024)
/* Direct writes allocate the file this much of the image at a time, ahead
 * of the data, and punch the gaps back after (reserve() in write.c): large
 * enough that a restore reads long extents, small enough that the gaps a
 * region holds for a while cost little disk. */
#define MG_SNAP_RESERVE_BYTES (64 * MG_MIB)
#define MG_SNAP_TMP_PREFIX ".mgsnap-tmp-"
/* A temporary file nobody holds a lock on and that has not been written for
 * this long belongs to a writer that died (see cleanup_stale in write.c). */
#define MG_SNAP_STALE_USEC (2 * UINT64_C(1000000))

/* Test seams: a fault injected before a write, a sync or a read (return a
 * negative errno to fail it, 0 to go on); switches that make the writer use
 * a named temporary file as on a file system without O_TMPFILE, and direct
 * I/O synchronous as where io_setup fails.  Not exported from the shared
 * library. */
enum mg_snap_op {
        MG_SNAP_OP_WRITE,       /* a write of the file (data, index, header) */
        MG_SNAP_OP_SYNC,        /* sync_file_range of a window */
        MG_SNAP_OP_FSYNC,       /* the final fdatasync */
        MG_SNAP_OP_READ,        /* a data read of a restore */
        MG_SNAP_OP_RESERVE,     /* the fallocate of a region ahead of its direct writes */
};
enum {
        MG_SNAP_SEAM_NO_TMPFILE = 1 << 0,       /* a named temporary file, as without O_TMPFILE */
        MG_SNAP_SEAM_NO_AIO = 1 << 1,           /* direct I/O one call at a time, as without io_submit */
};
/* The image file's seam.  The guard's cgroup files a write lends from go
 * through the guard's own struct mg_io (memguard/cgroup.h), not this. */
struct mg_snap_seam {
        /* Called before each write, sync or read of the image file (op), a
         * negative errno fails that call as the kernel would; NULL: none. */
        int (*fault)(void *userdata, enum mg_snap_op op, uint64_t file_offset, uint64_t len);
        void *userdata;
        unsigned flags;                 /* MG_SNAP_SEAM_*: paths a test forces */
};
/* mg_snapshot_write() and mg_snapshot_restore() through the seam (NULL:
 * none, as the public calls), for tests. */
int mg_snapshot_write_internal(const struct mg_snapshot_source *src, int dirfd, const char *name,
                               const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret,
                               const struct mg_snap_seam *seam);
int mg_snapshot_restore_internal(int dirfd, const char *name, const struct mg_snapshot_target *dst,
                                 const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret,
                                 const struct mg_snap_seam *seam);
/* The seam's fault before op on the image file: 0 or a negative errno. */
int mg_snap_fault(const struct mg_snap_seam *seam, enum mg_snap_op op, uint64_t off, uint64_t len);
bool mg_snap_forced(const struct mg_snap_seam *seam, unsigned flag);

/* Resolves *o (NULL: all defaults) into *ret with every default filled in
 * that does not depend on the guard or the image.  Returns 0, -EINVAL or
 * -E2BIG. */
int mg_snap_options_resolve(const struct mg_snapshot_options *o, struct mg_snapshot_options *ret);

void mg_snap_log(const struct mg_snapshot_options *o, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

uint32_t mg_snap_page_size(void);
bool mg_snap_is_zero(const void *p, size_t len);
/* Feeds len bytes at image offset off into the per-chunk crcs. */
void mg_snap_crc_feed(uint32_t *crcs, uint32_t chunk_bytes, uint64_t off, const uint8_t *p, size_t len);

/* Direct I/O alignment of fd from statx(STATX_DIOALIGN) (6.1+).  Returns 1
 * and the alignments if the kernel reported them and the file system does
 * direct I/O, 0 if it reported that it does not, -EOPNOTSUPP if statx has no
 * answer (older kernels). */
int mg_snap_dio_align(int fd, uint32_t *ret_mem_align, uint32_t *ret_offset_align);

/* pread/pwrite of exactly len bytes, EINTR retried.  Return len, fewer only
 * at end of file (pread), or a negative errno. */
ssize_t mg_snap_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* The caller's stats (NULL: none wanted) can take a result: 0, or -EINVAL
 * for a .size below 8.  Checked before the work it would report. */
int mg_snap_stats_check(const struct mg_snapshot_stats *ret);
/* Copies the stats into the caller's struct of ret->size bytes, what fits
 * (memguard/sized.h); a NULL ret takes nothing. */
void mg_snap_stats_out(const struct mg_snapshot_stats *st, struct mg_snapshot_stats *ret);
