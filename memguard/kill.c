/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Killing an actor (kill.h): cgroup.kill, or the pidfd fallback over
 * cgroup.procs; and /proc/PID/stat's state letter for the report of members
 * that outlive a kill.  It signals nothing outside the cgroup and keeps no
 * state between calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kill.h"
#include "parse.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* The two system calls through the seam; each returns a negative errno on
 * failure.  pidfd_open() fds are always close-on-exec. */
static int io_pidfd_open(const struct mg_io *io, pid_t pid) {
        int fd = io && io->pidfd_open ? io->pidfd_open(io->userdata, pid, 0) : (int) syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : fd;
}

static int io_pidfd_send_signal(const struct mg_io *io, int pidfd, int sig) {
        int r = io && io->pidfd_send_signal ? io->pidfd_send_signal(io->userdata, pidfd, sig, 0)
                                            : (int) syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
        return r < 0 ? -errno : 0;
}

/* Is pid listed in buf (cgroup.procs: one decimal pid per line, whole
 * lines only: see read_procs)? */
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

/* A read that filled buf ends mid-line, and the digits it kept are another
 * pid's prefix ("12" of "123"): that line goes. */
int mg_cgroup_read_procs(struct mg_cgroup *cg, char *buf, size_t size, bool *ret_cut) {
        ssize_t n = mg_cgroup_read(cg, MG_CG_PROCS, buf, size);
        bool cut = n == -ENOBUFS;

        if (cut) {
                char *nl = strrchr(buf, '\n');
                if (nl)
                        nl[1] = '\0';
                else
                        buf[0] = '\0';
        } else if (n < 0) {
                return (int) n;
        }
        if (ret_cut)
                *ret_cut = cut;
        return 0;
}

static int read_procs(struct mg_cgroup *cg, char *buf, size_t size) {
        return mg_cgroup_read_procs(cg, buf, size, NULL);
}

char mg_proc_state(int32_t pid) {
        /* The state is within the first 30 bytes ("4194304 (" and a comm of
         * at most 15 bytes, then ") S "); the numbers after it are not read. */
        char path[32], buf[128], state;
        ssize_t n;
        int fd;

        if (pid <= 0)
                return '?';
        snprintf(path, sizeof(path), "/proc/%" PRId32 "/stat", pid);
        fd = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return '?'; /* gone, no /proc, or hidden (hidepid=) */
        n = pread(fd, buf, sizeof(buf), 0);
        close(fd);
        if (n <= 0 || mg_parse_proc_stat_state(buf, (size_t) n, &state) < 0)
                return '?';
        return state;
}

/*
 * The fallback.  A pid read from cgroup.procs may exit and be reused by a
 * process elsewhere before we open it, so: pin it with pidfd_open, then
 * re-read cgroup.procs.  If the pid is still listed, the pinned process is
 * that member (or it already died, and the signal fails with ESRCH); if it
 * is not, skip it.  Each pread of cgroup.procs sees at most one buffer of
 * pids, so go round until the file is empty or we stop making progress.
 *
 * ESRCH from either call is a member that exited meanwhile.  Any other
 * failure (EMFILE, ENFILE, ENOMEM; ENOSYS before 5.3 or under a seccomp
 * filter; EPERM from the signal for another user's process or an LSM)
 * leaves a member running: the kill fails with it, after signalling the
 * members it can.  Only the last round counts: a member that failed in one
 * round is listed again in the next, and tried again.
 */
static int kill_pidfd(struct mg_cgroup *cg) {
        char buf[4096], again[4096]; /* 4 KiB holds ~500 pids per round */
        int err = 0;

        for (int round = 0; round < 64; round++) {
                int signalled = 0, r;

                r = read_procs(cg, buf, sizeof(buf));
                if (r < 0)
                        return r;
                err = 0;
                for (char *p = buf; *p;) {
                        char *end;
                        long pid = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        p = *end == '\n' ? end + 1 : end;
                        int pfd = io_pidfd_open(cg->io, (pid_t) pid);
                        if (pfd < 0) {
                                if (pfd != -ESRCH && err == 0)
                                        err = pfd;
                                continue;
                        }
                        r = read_procs(cg, again, sizeof(again));
                        if (r == 0 && procs_contains(again, pid)) {
                                r = io_pidfd_send_signal(cg->io, pfd, SIGKILL);
                                if (r == 0)
                                        signalled++;
                                else if (r == -ESRCH)
                                        r = 0;
                        }
                        /* r == 0 without a signal: no longer listed, so the
                         * pinned process is not the member (left alone). */
                        if (r < 0 && err == 0)
                                err = r;
                        close(pfd);
                }
                if (signalled == 0)
                        break; /* the rest are dying; cgroup.events tells when */
        }
        return err < 0 ? err : 1;
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
