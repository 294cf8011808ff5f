/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the snapshot writer and restore share (internal.h): options and
 * their defaults, the log, page size and zero checks, the chunk checksums,
 * direct-I/O alignment, full preads, the stats out and the test seam's
 * faults.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "internal.h"
#include "sized.h"


int mg_snapshot_options_init(struct mg_snapshot_options *o) {
        if (!o)
                return -EINVAL;
        *o = (struct mg_snapshot_options) { .size = sizeof(*o) };
        return 0;
}

const char *mg_snapshot_method_to_string(enum mg_snapshot_method m) {
        switch (m) {
        case MG_SNAPSHOT_AUTO:
                return "auto";
        case MG_SNAPSHOT_DIRECT:
                return "direct";
        case MG_SNAPSHOT_DONTCACHE:
                return "dontcache";
        case MG_SNAPSHOT_WINDOWED:
                return "windowed";
        case MG_SNAPSHOT_BUFFERED:
                return "buffered";
        }
        return "?";
}

int mg_snap_options_resolve(const struct mg_snapshot_options *o, struct mg_snapshot_options *ret) {
        struct mg_snapshot_options r = { .size = sizeof(r) };
        uint32_t page = mg_snap_page_size();

        if (o) {
                /* the first version's fields: everything before .lock */
                int e = mg_sized_copy_in(&r, sizeof(r), o, offsetof(struct mg_snapshot_options, lock));
                if (e < 0)
                        return e;
        }
        if (r.flags & ~(uint32_t) MG_SNAPSHOT_NO_SYNC)
                return -EINVAL;
        if (r.method > MG_SNAPSHOT_BUFFERED)
                return -EINVAL;
        if (r.chunk_bytes == 0)
                r.chunk_bytes = (uint32_t) MG_MIB;
        if (r.chunk_bytes & (r.chunk_bytes - 1) || r.chunk_bytes < page || r.chunk_bytes > MG_SNAP_MAX_CHUNK)
                return -EINVAL;
        if (r.window_bytes && r.window_bytes < MG_SNAP_MIN_WINDOW)
                return -EINVAL;
        if (r.min_hole_bytes == 0)
                r.min_hole_bytes = 64 * UINT64_C(1024);
        if (r.min_hole_bytes > UINT64_MAX / 2)
                return -EINVAL;
        r.min_hole_bytes = (r.min_hole_bytes + page - 1) / page * page;
        if (r.mode == 0)
                r.mode = 0600;
        if (r.mode & ~07777u)
                return -EINVAL;
        *ret = r;
        return 0;
}

void mg_snap_log(const struct mg_snapshot_options *o, int level, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        if (!o->log)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        o->log(level, msg, o->log_userdata);
}

uint32_t mg_snap_page_size(void) {
        long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? (uint32_t) p : 4096;
}

bool mg_snap_is_zero(const void *p, size_t len) {
        const unsigned char *c = p;
        size_t i = 0;

        /* 64 bytes per step through a local copy: the compiler turns it into
         * vector loads, and the source need not be aligned. */
        for (; i + 64 <= len; i += 64) {
                uint64_t w[8];
                memcpy(w, c + i, sizeof(w));
                if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7])
                        return false;
        }
        for (; i < len; i++)
                if (c[i])
                        return false;
        return true;
}

void mg_snap_crc_feed(uint32_t *crcs, uint32_t chunk_bytes, uint64_t off, const uint8_t *p, size_t len) {
        while (len) {
                uint64_t c = off / chunk_bytes;
                size_t n = (size_t) ((c + 1) * chunk_bytes - off);
                if (n > len)
                        n = len;
                crcs[c] = mg_crc32c(crcs[c], p, n);
                off += n;
                p += n;
                len -= n;
        }
}

int mg_snap_dio_align(int fd, uint32_t *ret_mem_align, uint32_t *ret_offset_align) {
#ifdef STATX_DIOALIGN
        struct statx stx;

        if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) < 0)
                return -EOPNOTSUPP; /* ENOSYS before 4.11, or no such answer */
        if (!(stx.stx_mask & STATX_DIOALIGN))
                return -EOPNOTSUPP; /* kernel before 6.1, or the fs does not say */
        if (stx.stx_dio_offset_align == 0)
                return 0; /* the fs says: no direct I/O on this file */
        *ret_mem_align = stx.stx_dio_mem_align;
        *ret_offset_align = stx.stx_dio_offset_align;
        return 1;
#else
        (void) fd;
        (void) ret_mem_align;
        (void) ret_offset_align;
        return -EOPNOTSUPP;
#endif
}

ssize_t mg_snap_pread_full(int fd, void *buf, size_t len, uint64_t off) {
        size_t done = 0;

        while (done < len) {
                ssize_t n = pread(fd, (char *) buf + done, len - done, (off_t) (off + done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                done += (size_t) n;
        }
        return (ssize_t) done;
}

int mg_snap_stats_check(const struct mg_snapshot_stats *ret) {
        return ret ? mg_sized_check_out(ret) : 0;
}

void mg_snap_stats_out(const struct mg_snapshot_stats *st, struct mg_snapshot_stats *ret) {
        if (ret)
                (void) mg_sized_copy_out(ret, st, sizeof(*st)); /* .size checked before the work */
}

int mg_snap_fault(const struct mg_snap_seam *seam, enum mg_snap_op op, uint64_t off, uint64_t len) {
        return seam && seam->fault ? seam->fault(seam->userdata, op, off, len) : 0;
}

bool mg_snap_forced(const struct mg_snap_seam *seam, unsigned flag) {
        return seam && (seam->flags & flag);
}
