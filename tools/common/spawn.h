/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/types.h>

/*
 * Starts argv[0] (PATH searched) inside the cgroup directory cgroup_path:
 * clone3(CLONE_INTO_CGROUP) on 5.7+, so the child is charged to the cgroup
 * from its first page; elsewhere fork, write the pid to cgroup.procs from
 * the child, then exec.  Returns the pid or a negative errno.  If pidfd is
 * not NULL it gets a pidfd of the child (or -1 where there is none).
 */
pid_t mg_spawn_in_cgroup(const char *cgroup_path, char *const argv[], int *ret_pidfd);
