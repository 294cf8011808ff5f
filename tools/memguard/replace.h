/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/*
 * Replaces path with len bytes of data: written to tmp (created 0644, or
 * truncated; a symlink there is not followed), fsynced, closed, renamed
 * over path.  Without the fsync the rename may reach the disk before the
 * data, and a crash soon after leave path empty or short.  Returns 0, or
 * the first failure's negative errno (open, write, fsync, close, rename);
 * then tmp is removed and path is as it was.
 */
int mgt_file_replace(const char *tmp, const char *path, const void *data, size_t len);
