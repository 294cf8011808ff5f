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
