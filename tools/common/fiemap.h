/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A file's layout on the disk, counted with FIEMAP as filefrag(8) counts
 * its extents: for the snapshot's unit test and its benchmark.
 */

#include <stdint.h>

/* The pieces the bytes [from, to) of fd lie in on the disk (to UINT64_MAX:
 * to the file's end).  An extent starts a new piece unless it continues
 * the previous one on the disk, across a hole between them too (the
 * physical gap equal to the logical one); the extents that overlap the
 * range count, the first even where it begins before from.  Returns the
 * count (0: the range is all holes) or a negative errno: -EOPNOTSUPP where
 * the file system has no FIEMAP. */
int mgt_fiemap_pieces(int fd, uint64_t from, uint64_t to);
