/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The demo on a host without a delegated cgroup v2 memory controller:
 * tests/vm/vmrun boots a Debian kernel under qemu and runs
 * `memguard demo --native` there, with this binary and mg-workload copied in.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "demo.h"
#include "events.h"
#include "memguard-tool-config.h"

/* Copies the VM's output through: our progress lines to stderr, the rest
 * (the table) to stdout, as they would go natively. */
static void relay(int fd) {
        static char buf[65536];
        size_t len = 0;
        ssize_t n;

        for (;;) {
                n = read(fd, buf + len, sizeof(buf) - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n > 0)
                        len += (size_t) n;
                char *start = buf, *nl;
                while ((nl = memchr(start, '\n', len - (size_t) (start - buf)))) {
                        size_t l = (size_t) (nl - start) + 1;
                        bool prog = l >= sizeof(DEMO_PROGRESS) - 1 &&
                                    memcmp(start, DEMO_PROGRESS, sizeof(DEMO_PROGRESS) - 1) == 0;
                        fwrite(start, 1, l, prog ? stderr : stdout);
                        fflush(prog ? stderr : stdout);
                        start = nl + 1;
                }
                len -= (size_t) (start - buf);
                memmove(buf, start, len);
                if (n <= 0 || len == sizeof(buf)) {
                        fwrite(buf, 1, len, stdout); /* a last line without newline, or a huge one */
                        fflush(stdout);
                        len = 0;
                        if (n <= 0)
                                return;
                }
        }
}

int demo_vm(const char *kernel, const char *why) {
        const char *vmrun = getenv("MEMGUARD_VMRUN");
        char *self = mgt_self_exe(), *workload = mgt_find_workload();
        char self_arg[PATH_MAX + 16], wl_arg[PATH_MAX + 16];
        int fds[2], status, ret = MGT_EXIT_FAIL;
        pid_t pid;

        if (!vmrun || !*vmrun || access(vmrun, X_OK) < 0) {
                mgt_error(NULL, "demo", 0,
                          "no delegated cgroup v2 memory controller here (%s), and no VM harness%s%s "
                          "(set MEMGUARD_VMRUN to a memguard source tree's tests/vm/vmrun)",
                          why, vmrun && *vmrun ? " at " : "", vmrun && *vmrun ? vmrun : "");
                goto out;
        }
        if (!self || !workload) {
                mgt_error(NULL, "demo", 0, "cannot find %s (set MEMGUARD_WORKLOAD)", self ? "mg-workload" : "myself");
                goto out;
        }
        snprintf(self_arg, sizeof(self_arg), "%s:/mg/memguard", self);
        snprintf(wl_arg, sizeof(wl_arg), "%s:/mg/mg-workload", workload);
        char *const argv[] = { (char *) vmrun, "--kernel", (char *) kernel, "--timeout", "600",
                               "--file", self_arg, "--file", wl_arg, "--env", "MEMGUARD_WORKLOAD=/mg/mg-workload",
                               "--", "/mg/memguard", "demo", "--native", NULL };
        demo_progress("no delegated cgroup v2 memory controller here (%s): booting Debian kernel %s under qemu", why,
                      kernel);
        if (pipe2(fds, O_CLOEXEC) < 0) {
                mgt_error(NULL, "demo", -errno, "pipe");
                goto out;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                mgt_error(NULL, "demo", -errno, "fork");
                close(fds[0]);
                close(fds[1]);
                goto out;
        }
        if (pid == 0) {
                dup2(fds[1], STDOUT_FILENO);
                execv(vmrun, argv);
                fprintf(stderr, "memguard demo: %s: %s\n", vmrun, strerror(errno));
                _exit(127);
        }
        close(fds[1]);
        /* ^C reaches vmrun too (same process group); it tears the VM down
         * and exits, and we report its status. */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        relay(fds[0]);
        close(fds[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        /* 0 or 1: the demo's verdict; 130 or 143: vmrun got SIGINT or SIGTERM */
        if (WIFEXITED(status) &&
            (WEXITSTATUS(status) <= 1 || WEXITSTATUS(status) == 130 || WEXITSTATUS(status) == 143))
                ret = WEXITSTATUS(status);
        else
                mgt_error(NULL, "demo", 0,
                          "the VM harness failed (%s %d; 124 timeout, 125 host problem, 126 guest died)",
                          WIFEXITED(status) ? "exit" : "signal",
                          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
out:
        free(self);
        free(workload);
        return ret;
}
