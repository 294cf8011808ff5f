/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "cgroup.h"
#include "memguard/memguard.h"

/*
 * Kills every process of the cgroup: cgroup.kill where the kernel has it
 * (5.14+: atomic, also takes tasks forked meanwhile), else SIGKILL through a
 * pidfd to each member of cgroup.procs.  Nothing outside the cgroup is ever
 * signalled.  Returns 1 and the method used, or a negative errno: that of
 * cgroup.kill or of reading cgroup.procs, or, for the fallback, of a member
 * it could not signal (pidfd_open or pidfd_send_signal failing other than
 * with ESRCH, which is a member already gone), though it signalled the
 * others.
 */
int mg_cgroup_kill(struct mg_cgroup *cg, enum mg_kill_method *ret_method);

/* Reads cgroup.procs into buf (NUL-terminated), whole lines only: a read
 * that did not fit (4 KiB holds about 500 pids) drops its cut last line
 * and says so in *ret_cut (may be NULL).  Returns 0 or a negative errno. */
int mg_cgroup_read_procs(struct mg_cgroup *cg, char *buf, size_t size, bool *ret_cut);

/* The state letter of /proc/PID/stat ('D', 'R', 'S', 'Z' ...), or '?' if
 * it cannot be read (the process is gone, /proc is not mounted or hides
 * it).  /proc is outside the cgroup directory: opened with a plain openat
 * by path, not through the cgroup's seam; one open and one read a call. */
char mg_proc_state(int32_t pid);
