/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

struct clone_args_v2 {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
        uint64_t set_tid, set_tid_size, cgroup;
};

/* Only async-signal-safe calls between fork and exec.  exec resets caught
 * signals but keeps the mask and ignored ones: a child must not inherit the
 * guard's blocked SIGCHLD or an ignored SIGPIPE. */
static void exec_child(char *const argv[]) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++)
                signal(sig, SIG_DFL);
        execvp(argv[0], argv); /* returns only on failure, errno set */
}

pid_t mg_spawn_in_cgroup(const char *cgroup_path, char *const argv[], int *ret_pidfd) {
        int cgfd, pidfd = -1;
        pid_t pid;

        cgfd = open(cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cgfd < 0)
                return -errno;
        struct clone_args_v2 args = {
                .flags = CLONE_INTO_CGROUP | CLONE_PIDFD,
                .pidfd = (uint64_t) (uintptr_t) &pidfd,
                .exit_signal = SIGCHLD,
                .cgroup = (uint64_t) cgfd,
        };
        pid = (pid_t) syscall(SYS_clone3, &args, sizeof(args));
        if (pid == 0) {
                exec_child(argv);
                _exit(127);
        }
        if (pid > 0) {
                close(cgfd);
                if (ret_pidfd)
                        *ret_pidfd = pidfd;
                else
                        close(pidfd);
                return pid;
        }
        if (errno != ENOSYS && errno != E2BIG && errno != EINVAL) {
                int r = -errno;
                close(cgfd);
                return r;
        }

        /* Before 5.7: join the cgroup from the child, before exec.  The
         * pipe reports a failed join (or exec) to the parent. */
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                int r = -errno;
                close(cgfd);
                return r;
        }
        pid = fork();
        if (pid == 0) {
                int procs = openat(cgfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                int err = 0;
                if (procs < 0 || write(procs, "0", 1) != 1)
                        err = errno;
                if (!err) {
                        exec_child(argv);
                        err = errno;
                }
                (void) !write(pipefd[1], &err, sizeof(err));
                _exit(127);
        }
        close(cgfd);
        close(pipefd[1]);
        if (pid < 0) {
                int r = -errno;
                close(pipefd[0]);
                return r;
        }
        int err = 0;
        ssize_t n = read(pipefd[0], &err, sizeof(err));
        close(pipefd[0]);
        if (n == sizeof(err) && err) {
                (void) waitpid(pid, NULL, 0);
                return -err;
        }
        if (ret_pidfd)
                *ret_pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        return pid;
}
