/* SPDX-License-Identifier: Apache-2.0 */
/* watch's helper processes (helper.h). */
#include <errno.h>
#include <unistd.h>

#include "helper.h"

pid_t mgt_fork_helper(int fd) {
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                /* only the fd and stdio: nothing of the guards */
                if (dup2(fd, 3) < 0)
                        _exit(1);
                (void) close_range(4, ~0U, 0);
        }
        return pid;
}
