/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ablation's children (ablation.h): started into their cgroup with
 * clone3(CLONE_INTO_CGROUP), so every page they touch is charged there from
 * the first (a process moved in after fork leaves its early pages charged
 * where it came from: cgroup v2 does not move charges), stdout to a file
 * read back when they end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ablation.h"
#include "spawn.h"
#include "util.h"

/* A fixture run's children stay where this process is: a fake cgroup
 * directory is no cgroup for clone3. */
static pid_t spawn_here(char *const argv[]) {
        pid_t pid = fork();

        if (pid == 0) {
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                execv(argv[0], argv);
                _exit(127);
        }
        return pid < 0 ? -errno : pid;
}

int abl_proc_start(struct abl_proc *p, const char *cg, char *const argv[], const char *dir, const char *tag) {
        static unsigned counter;
        int out, saved, r;

        *p = (struct abl_proc) { .pid = -1, .pidfd = -1 };
        if ((size_t) snprintf(p->out, sizeof(p->out), "%s/ablation-%s-%d-%u", dir, tag, (int) getpid(),
                              counter++) >= sizeof(p->out)) {
                p->out[0] = '\0';
                return -ENAMETOOLONG;
        }
        out = open(p->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0) {
                r = -errno;
                p->out[0] = '\0';
                return r;
        }
        /* The child inherits fd 1 (dup2 drops O_CLOEXEC on it); ours is
         * put back after. */
        fflush(stdout);
        saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (saved < 0) {
                r = -errno;
                close(out);
                return r;
        }
        dup2(out, STDOUT_FILENO);
        if (cg)
                p->pid = mg_spawn_in_cgroup(cg, argv, &p->pidfd);
        else
                p->pid = spawn_here(argv);
        dup2(saved, STDOUT_FILENO);
        close(saved);
        close(out);
        if (p->pid < 0) {
                r = p->pid;
                p->pid = -1;
                p->pidfd = -1;
                return r;
        }
        if (!cg)
                p->pidfd = (int) syscall(SYS_pidfd_open, p->pid, 0);
        return 0;
}

char *abl_proc_output(const struct abl_proc *p) {
        struct stat st;
        char *buf;
        ssize_t n;
        int fd;

        if (!p->out[0])
                return NULL;
        fd = open(p->out, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        if (fstat(fd, &st) < 0 || !(buf = malloc((size_t) st.st_size + 1))) {
                close(fd);
                return NULL;
        }
        n = pread(fd, buf, (size_t) st.st_size, 0);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

bool abl_proc_ready(const struct abl_proc *p) {
        char buf[256];
        ssize_t n = -1;
        int fd = p->out[0] ? open(p->out, O_RDONLY | O_CLOEXEC) : -1;

        if (fd >= 0) {
                n = pread(fd, buf, sizeof(buf) - 1, 0);
                close(fd);
        }
        if (n <= 0)
                return false;
        buf[n] = '\0';
        return strncmp(buf, "ready\n", 6) == 0 || strstr(buf, "\nready\n") != NULL;
}

bool abl_proc_check(struct abl_proc *p) {
        if (p->pid > 0 && !p->done && waitpid(p->pid, &p->status, WNOHANG) == p->pid)
                p->done = true;
        return p->done;
}

int abl_proc_stop(struct abl_proc *p, int sig, uint64_t timeout_usec) {
        uint64_t end = mg_mono_usec() + timeout_usec;

        if (p->pid <= 0)
                return -ECHILD;
        if (!abl_proc_check(p) && sig)
                (void) kill(p->pid, sig);
        while (!abl_proc_check(p)) {
                if (mg_mono_usec() >= end) {
                        (void) kill(p->pid, SIGKILL);
                        if (waitpid(p->pid, &p->status, 0) != p->pid)
                                return -ETIMEDOUT;
                        p->done = true;
                        break;
                }
                struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
                (void) poll(&pfd, p->pidfd >= 0 ? 1 : 0, 20);
        }
        return p->status;
}

void abl_proc_end(struct abl_proc *p) {
        if (p->pid > 0 && !p->done)
                (void) abl_proc_stop(p, SIGKILL, 5 * MG_USEC_PER_SEC);
        if (p->pidfd >= 0)
                close(p->pidfd);
        p->pidfd = -1;
        if (p->out[0])
                (void) unlink(p->out);
        p->out[0] = '\0';
}
