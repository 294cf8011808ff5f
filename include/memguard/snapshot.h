/* SPDX-License-Identifier: Apache-2.0 */
#ifndef MEMGUARD_SNAPSHOT_H
#define MEMGUARD_SNAPSHOT_H

/*
 * memguard snapshot: writes a guest memory image to a file and restores it,
 * without flooding the page cache charged to the actor, inside a lend of the
 * actor's guard.  See docs/snapshot.md for the file format and the write
 * path.
 *
 * Conventions as in memguard.h: negative errno on failure, 0 on success,
 * output parameters last and not written on failure, no printing (text goes
 * to the log callback of the options).
 *
 * Errors of mg_snapshot_write():
 *   -EINVAL    a bad source, name or option (name must be a plain file name)
 *   -E2BIG     options with non-zero fields this library does not know
 *   -ENODATA   the fd source is shorter than the length it declared
 *   -EOPNOTSUPP a forced method the file system or kernel cannot do
 *   -EBUSY     the guard is already lent
 *   -ENOSPC, -EIO, -EFBIG, -EDQUOT, -EROFS, -EACCES ...  the file system's
 *              answer; the partial file is gone and memory.high is restored
 * Errors of mg_snapshot_restore():
 *   -ENOENT    no such snapshot
 *   -EBADMSG   not a valid snapshot for this system: bad magic, unknown
 *              version, another page size, inconsistent lengths, a file
 *              truncated or extended, or a header, index or data checksum
 *              that does not match (the log callback says which)
 *   -EMSGSIZE  the target's length differs from the image's (checked
 *              before anything sized by the file's header is allocated)
 *   -ELOOP     a symbolic link at name: never followed
 *   -EINVAL, -E2BIG as above, and -EINVAL for a name that is not a
 *              regular file (a FIFO, a device, a directory: opened without
 *              blocking, then refused); the target's contents are
 *              unspecified after any failure past the header check
 */

#include <stdbool.h>
#include <stdint.h>

#include "memguard/memguard.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mg_snapshot_kind {
        MG_SNAPSHOT_MEMORY = 1,         /* .addr, .length: mapped guest RAM */
        MG_SNAPSHOT_FD = 2,             /* .fd at .offset, .length: memfd/shmem guest RAM */
};

/* What to write.  .length must be a multiple of the page size.  For an fd
 * the file offset is left as it was; holes (SEEK_HOLE) are not read. */
struct mg_snapshot_source {
        uint32_t kind;                  /* enum mg_snapshot_kind */
        int fd;
        const void *addr;
        uint64_t offset;                /* MG_SNAPSHOT_FD: where guest RAM starts in the file */
        uint64_t length;
};

/* Where to restore.  .length must equal the image's.  An fd target is
 * extended to .offset + .length if shorter; its zero ranges are punched
 * (FALLOC_FL_PUNCH_HOLE) where the file system can, written as zeros
 * elsewhere.  A memory target's pages that the image has as zeros are
 * cleared only if they are not zero already, so untouched guest memory
 * stays untouched. */
struct mg_snapshot_target {
        uint32_t kind;                  /* enum mg_snapshot_kind */
        int fd;
        void *addr;
        uint64_t offset;
        uint64_t length;
};

enum mg_snapshot_method {
        MG_SNAPSHOT_AUTO = 0,           /* direct, else dontcache, else windowed */
        MG_SNAPSHOT_DIRECT = 1,         /* O_DIRECT: no page cache at all */
        MG_SNAPSHOT_DONTCACHE = 2,      /* pwritev2(RWF_DONTCACHE), 6.14+, waited per window */
        MG_SNAPSHOT_WINDOWED = 3,       /* buffered; sync_file_range + DONTNEED per window */
        MG_SNAPSHOT_BUFFERED = 4,       /* plain write() + fsync, the baseline (Firecracker) */
};

enum {
        MG_SNAPSHOT_NO_SYNC = 1 << 0,   /* no fdatasync of the file nor fsync of the directory */
};

/* Called with true before and false after each call on .guard, so a guard
 * in a set ticked by another thread can be serialised with it. */
typedef void (*mg_snapshot_lock_fn)(void *userdata, bool lock);

/*
 * Options of one write or restore.  mg_snapshot_options_init() records
 * sizeof in .size; a zero field means "the default".  Fields may be added
 * at the end: a larger .size with non-zero bytes this library does not know
 * gives -E2BIG.  NULL options mean all defaults.
 */
struct mg_snapshot_options {
        uint64_t size;
        uint32_t flags;                 /* MG_SNAPSHOT_NO_SYNC */
        /* enum mg_snapshot_method.  Restore: AUTO (direct if it can) or
         * DIRECT; WINDOWED and DONTCACHE read through the page cache and
         * drop it behind each window; BUFFERED leaves it. */
        uint32_t method;
        /* The actor's guard: the write runs in a lend of it (restore ignores
         * it).  mg_guard_lend_begin()/_end() are called from the calling
         * thread; a guard whose set another thread runs needs .lock (see
         * "Threads" in memguard.h).  The write keeps the guard alive until
         * it returns, even if the set's thread removes it meanwhile. */
        mg_guard *guard;
        /* What the lend raises memory.high by: default window + buffers +
         * 4 MiB; MG_UNLIMITED removes memory.high for the write. */
        uint64_t lend_bytes;
        /* Relative; default the larger of the guard's own and the lend
         * rule for the image's length (mg_guard_options(3)). */
        uint64_t lend_deadline_usec;
        /* Bound on the dirty + writeback page cache the write makes: default
         * the guard's limit/16 clamped to [8 MiB, 64 MiB], 32 MiB without a
         * guard; at least 256 KiB.  Not a bound for MG_SNAPSHOT_BUFFERED. */
        uint64_t window_bytes;
        /* After the write and its sync, before memory.high comes back: write
         * this to the guard's memory.reclaim once (5.19+).  0: none. */
        uint64_t reclaim_bytes;
        uint32_t chunk_bytes;           /* checksum granularity, power of two; default 1 MiB */
        uint32_t mode;                  /* of the published file; default 0600 */
        /* Zero runs shorter than this are written rather than left as holes:
         * one I/O per hole costs more than writing a few pages.  Default
         * 64 KiB; a page size value skips every zero page. */
        uint64_t min_hole_bytes;
        mg_snapshot_lock_fn lock;
        void *lock_userdata;
        mg_log_fn log;
        void *log_userdata;
};

/* What a write or restore did.  The caller sets .size = sizeof before the
 * call; the library fills what fits and zeroes the rest (the fields of a
 * newer struct it does not know), writing nothing past .size, which stays
 * as set.  A .size below 8 is -EINVAL, before anything is done. */
struct mg_snapshot_stats {
        uint64_t size;
        uint32_t method;                /* enum mg_snapshot_method actually used */
        uint32_t page_size;
        uint64_t image_bytes;           /* the guest memory's length */
        uint64_t data_bytes;            /* written (write) or read (restore) as data */
        uint64_t skipped_bytes;         /* image_bytes - data_bytes */
        uint64_t hole_bytes;            /* of which holes of an fd source (SEEK_HOLE) */
        uint64_t zero_bytes;            /* of which zero pages found by reading */
        uint64_t file_bytes;            /* length of the snapshot file */
        uint64_t allocated_bytes;       /* its st_blocks * 512 */
        uint64_t window_bytes;          /* the dirty + writeback bound used */
        uint64_t lend_bytes;            /* memory.high raised by (MG_UNLIMITED: removed); 0: no lend */
        uint64_t reclaimed_request_bytes; /* written to memory.reclaim; 0: none */
        int32_t reclaim_error;          /* its result: 0, -EAGAIN (less reclaimed), ... */
        uint32_t ranges;                /* data ranges in the file */
        /* Phases, CLOCK_MONOTONIC usec.  write: the data and index; sync:
         * fdatasync; reclaim: memory.reclaim; lend_end: restoring memory.high;
         * publish: link, rename, directory fsync.  restore: read: the data;
         * zero: clearing what the image has as zeros. */
        uint64_t lend_begin_usec, write_usec, sync_usec, reclaim_usec, lend_end_usec, publish_usec;
        uint64_t read_usec, zero_usec;
        uint64_t total_usec;
};

/* Zeroes *o and records its size.  Returns 0 or -EINVAL. */
int mg_snapshot_options_init(struct mg_snapshot_options *o);

/*
 * Writes src to dirfd/name (dirfd may be AT_FDCWD), replacing it
 * atomically: the file is built unnamed (O_TMPFILE) or under a temporary
 * name, synced, renamed over name, and the directory synced.  With a guard
 * the whole write runs inside mg_guard_lend_begin()/mg_guard_lend_end(),
 * memory.high being back to its exact previous value before this returns,
 * on success and on failure (unless someone changed it during the write:
 * then it is left as they set it, see mg_guard_lend_end()).  The write ends its own lend only (by the id
 * its lend_begin gave): if that lend expired during the write and another
 * began since, the other is left open (logged; not an error).  No fd stays
 * open after it returns.
 */
int mg_snapshot_write(const struct mg_snapshot_source *src, int dirfd, const char *name,
                      const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret);

/* Reads dirfd/name into dst, verifying the header, the index and every
 * chunk's checksum.  See the error list above. */
int mg_snapshot_restore(int dirfd, const char *name, const struct mg_snapshot_target *dst,
                        const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret);

const char *mg_snapshot_method_to_string(enum mg_snapshot_method m);

#ifdef __cplusplus
}
#endif
#endif
