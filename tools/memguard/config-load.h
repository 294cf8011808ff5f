/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * watch's configuration as files: the file --config names, then its
 * drop-ins, every FILE.d/ *.conf in lexical (byte) order, as systemd
 * reads its own (a package or an admin adds one setting in a file of its
 * own instead of editing the main one).  Within a file a key is given
 * once; across files a later one wins.  Each file is parsed as
 * mgt_config_parse() parses a buffer.  Used by watch at start and on
 * SIGHUP (on the confined thread: open, read, fstat, getdents64, close,
 * all in the guard's allowlist) and by `memguard config-parse`.
 */

#include <stddef.h>

#include "config.h"

/* The most a file may hold, and the most drop-ins read. */
#define MGT_CONFIG_MAX_BYTES ((size_t) 64 * 1024)
#define MGT_CONFIG_MAX_DROPINS 256

/* Reads path and its drop-ins, merged, into *ret (written only on
 * success).  Returns 0, or a negative errno with one line in err that
 * names the file and says what is wrong ("FILE: line 3: unknown key
 * \"limits\"", "FILE: No such file or directory"): -EINVAL a file's text,
 * -EFBIG a file of MGT_CONFIG_MAX_BYTES or more, -E2BIG more drop-ins
 * than MGT_CONFIG_MAX_DROPINS, or the errno of an open or read.  The
 * drop-in directory may be missing. */
int mgt_config_load(const char *path, struct mgt_settings *ret, char *err, size_t err_len);

/* The drop-in names of dir that are read, sorted: "*.conf", not hidden
 * (".#x.conf", an editor's), regular files (or links to them).  Returns
 * their number (0 for a missing directory) with *ret_names malloc'd (each
 * name and the array; NULL for none), or a negative errno. */
int mgt_config_dropins(const char *dir, char ***ret_names);
void mgt_config_dropins_free(char **names, int n);
