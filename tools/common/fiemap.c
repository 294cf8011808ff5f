/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FIEMAP's pieces (fiemap.h).  Kernel behaviour:
 *  - FS_IOC_FIEMAP fills at most fm_extent_count extents of those that
 *    overlap [fm_start, fm_start + fm_length), in file order, and says how
 *    many in fm_mapped_extents; the rest is asked for again from the end
 *    of the last one.  The file's last extent carries FIEMAP_EXTENT_LAST.
 *  - FIEMAP_FLAG_SYNC writes the file's dirty pages first: a delayed
 *    allocation (ext4, XFS) has no blocks, and no extent, until then.
 *  - A file system without ->fiemap answers EOPNOTSUPP.
 */
#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "fiemap.h"

int mgt_fiemap_pieces(int fd, uint64_t from, uint64_t to) {
        enum { N = 256 };
        struct fiemap *fm = calloc(1, sizeof(*fm) + N * sizeof(struct fiemap_extent));
        uint64_t next_log = 0, next_phys = 0, start = from;
        bool last = false;
        int n = 0;

        if (!fm)
                return -ENOMEM;
        while (!last && start < to) {
                memset(fm, 0, sizeof(*fm));
                fm->fm_start = start;
                fm->fm_length = to - start;
                fm->fm_flags = FIEMAP_FLAG_SYNC;
                fm->fm_extent_count = N;
                if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
                        n = -errno;
                        break;
                }
                if (fm->fm_mapped_extents == 0)
                        break;
                for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
                        const struct fiemap_extent *e = &fm->fm_extents[i];
                        if (!n || e->fe_logical < next_log || e->fe_physical != next_phys + (e->fe_logical - next_log))
                                n++;
                        next_log = e->fe_logical + e->fe_length;
                        next_phys = e->fe_physical + e->fe_length;
                        last = e->fe_flags & FIEMAP_EXTENT_LAST;
                }
                if (next_log <= start)
                        break; /* no progress: an extent of no length */
                start = next_log;
        }
        free(fm);
        return n;
}
