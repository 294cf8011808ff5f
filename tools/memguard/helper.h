/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/types.h>

/*
 * watch's helper processes (the metrics writer, the park hook's runner)
 * are forked before its guards and its confinement, and keep nothing of
 * them: fork(), then in the child only stdio and fd, as fd 3.  Returns the
 * child's pid in the parent (which closes its copy of what the child
 * keeps), 0 in the child (which runs its loop and _exit()s), or a negative
 * errno.
 */
pid_t mgt_fork_helper(int fd);
