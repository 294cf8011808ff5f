/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kill.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* Is pid listed in buf (cgroup.procs: one decimal pid per line)? */
static bool procs_contains(const char *buf, long pid) {
        for (const char *p = buf; *p;) {
                char *end;
                long v = strtol(p, &end, 10);
                if (end == p)
                        return false;
                if (v == pid)
                        return true;
                p = *end == '\n' ? end + 1 : end;
        }
        return false;
}

/*
 * The fallback.  A pid read from cgroup.procs may exit and be reused by a
 * process elsewhere before we open it, so: pin it with pidfd_open, then
 * re-read cgroup.procs.  If the pid is still listed, the pinned process is
 * that member (or it already died, and the signal fails with ESRCH); if it
 * is not, skip it.  Each pread of cgroup.procs sees at most one buffer of
 * pids, so go round until the file is empty or we stop making progress.
 */
static int kill_pidfd(struct mg_cgroup *cg) {
        char buf[4096], again[4096]; /* 4 KiB holds ~500 pids per round */

        for (int round = 0; round < 64; round++) {
                ssize_t n = mg_cgroup_read(cg, MG_CG_PROCS, buf, sizeof(buf));
                int signalled = 0;

                if (n == -ENOBUFS)
                        n = (ssize_t) sizeof(buf) - 1, buf[n] = '\0';
                else if (n < 0)
                        return (int) n;
                if (n == 0)
                        return 1;
                /* Cut a partial last line left by a full buffer. */
                char *nl = strrchr(buf, '\n');
                if (nl)
                        nl[1] = '\0';

                for (char *p = buf; *p;) {
                        char *end;
                        long pid = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        p = *end == '\n' ? end + 1 : end;
                        int pfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
                        if (pfd < 0)
                                continue; /* already gone */
                        ssize_t m = mg_cgroup_read(cg, MG_CG_PROCS, again, sizeof(again));
                        if ((m >= 0 || m == -ENOBUFS) && procs_contains(again, pid) &&
                            syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0)
                                signalled++;
                        close(pfd);
                }
                if (signalled == 0)
                        return 1; /* the rest are dying; cgroup.events tells when */
        }
        return 1;
}

int mg_cgroup_kill(struct mg_cgroup *cg, enum mg_kill_method *ret_method) {
        int r = mg_cgroup_write(cg, MG_CG_KILL, "1");
        if (r == 0) {
                *ret_method = MG_KILL_CGROUP_KILL;
                return 1;
        }
        if (r != -EOPNOTSUPP)
                return r;
        r = kill_pidfd(cg);
        if (r >= 0)
                *ret_method = MG_KILL_PIDFD;
        return r;
}
