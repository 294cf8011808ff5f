/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mg_confine_thread(): in a forked child (a filter cannot be unloaded, and
 * Criterion's own reporting needs sockets), a guard set on a fixture tree is
 * made, the thread confined, and then:
 *  - calls outside the list fail with EPERM: socket, mkdir, fork, execve;
 *  - the guards keep working: ticks through the set (epoll, timerfd), a
 *    true overshoot killed (cgroup.kill), a lend begun and ended with its
 *    record (xattrs), a new guard added (opens), a lend recovered;
 *  - no_new_privs and seccomp mode 2 are set (/proc/self/status);
 *  - a thread started before is not confined (the calling thread only);
 *  - the set's restore worker, started by mg_set_new() before, confined
 *    itself: two threads in seccomp mode 2, and the lend's end, which it
 *    writes, works.
 * The child reports one bit per check through a pipe.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fixture.h"
#include "guard.h"
#include "set.h"
#include "util.h"


enum {
        C_CONFINED = 1 << 0,
        C_SOCKET_EPERM = 1 << 1,
        C_MKDIR_EPERM = 1 << 2,
        C_FORK_EPERM = 1 << 3,
        C_EXEC_EPERM = 1 << 4,
        C_TICKS = 1 << 5,
        C_KILLED = 1 << 6,
        C_LEND = 1 << 7,
        C_NEW_GUARD = 1 << 8,
        C_RECOVER = 1 << 9,
        C_STATUS = 1 << 10,
        C_OTHER_THREAD_FREE = 1 << 11,
        C_SUPERVISOR_OFF = 1 << 12,
        C_WORKER_CONFINED = 1 << 13,
        C_ALL = (1 << 14) - 1,
};
static const char *const names[] = {
        "confined",         "socket() EPERM",        "mkdir() EPERM",  "fork() EPERM",  "execve() EPERM",
        "set ticks",        "overshoot killed",      "lend and record", "guard added",  "lend recovered",
        "NoNewPrivs 1, Seccomp 2", "earlier thread not confined", "wait4 not allowed",
        "restore worker confined",
};

static int thread_pipe[2], thread_result[2];

static void *other_thread(void *ud) {
        char c;
        (void) ud;
        if (read(thread_pipe[0], &c, 1) != 1)
                return NULL;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        c = (char) (s >= 0);
        if (s >= 0)
                close(s);
        (void) !write(thread_result[1], &c, 1);
        return NULL;
}

static bool status_has(const char *key, const char *value) {
        char buf[4096], *p;
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        p = strstr(buf, key);
        return p && strncmp(p + strlen(key), value, strlen(value)) == 0;
}

/* Threads of this process in seccomp filter mode, from
 * /proc/self/task/TID/status (the set's worker among them: it confines
 * itself). */
static int confined_threads(void) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        int n = 0;
        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char p[300], buf[4096];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "/proc/self/task/%s/status", de->d_name);
                int fd = open(p, O_RDONLY | O_CLOEXEC);
                ssize_t k = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                if (fd >= 0)
                        close(fd);
                if (k <= 0)
                        continue;
                buf[k] = '\0';
                n += strstr(buf, "Seccomp:\t2") != NULL;
        }
        closedir(d);
        return n;
}

/* socket() refused with EPERM (one it did make is closed again). */
static bool socket_refused(int domain) {
        int s = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s >= 0) {
                close(s);
                return false;
        }
        return errno == EPERM;
}

/* Runs in the child; returns the bits of the checks that held.  No I/O
 * seam: the fixture's emulates kernfs writes with ftruncate(), which the
 * allowlist (rightly) refuses; plain overwrites end the same here. */
static unsigned child(struct fixture *fx, struct fixture *other) {
        uint64_t lend = 0;
        struct mg_guard_options o;
        unsigned ok = 0;
        mg_set *s;
        mg_guard *g, *g2 = NULL;
        pthread_t t;
        char c;

        if (pipe(thread_pipe) < 0 || pipe(thread_result) < 0 || pthread_create(&t, NULL, other_thread, NULL) != 0)
                return 0;
        mg_guard_options_init(&o, 256 * MG_MIB);
        if (mg_set_new(NULL, &s) < 0 || mg_guard_new_internal(fx->dir, &o, MG_CGROUP_ANY_FS, NULL, &g) < 0)
                return 0;
        mg_guard_set_clock(g, fixture_clock, fx);
        if (mg_set_add_guard(s, g) < 0)
                return 0;

        /* Unconfined (no seccomp here, or under valgrind, which does not
         * know seccomp(2)), the checks below would fork and exec for real.
         * The worker is read before: this thread's own /proc reads are
         * refused after (open below /proc is allowed, readdir is not). */
        int before = confined_threads();
        if (mg_confine_thread(0) != 0)
                return ok;
        ok |= C_CONFINED;
        if (before == 1)
                ok |= C_WORKER_CONFINED;
        if (socket_refused(AF_INET))
                ok |= C_SOCKET_EPERM;
        char p[512];
        snprintf(p, sizeof(p), "%s/evil", fx->dir);
        if (mkdir(p, 0700) < 0 && errno == EPERM)
                ok |= C_MKDIR_EPERM;
        if (fork() < 0 && errno == EPERM)
                ok |= C_FORK_EPERM;
        if (execve("/bin/true", (char *[]) { "true", NULL }, (char *[]) { NULL }) < 0 && errno == EPERM)
                ok |= C_EXEC_EPERM;
        if (waitpid(-1, NULL, WNOHANG) < 0 && errno == EPERM)
                ok |= C_SUPERVISOR_OFF;
        if (status_has("NoNewPrivs:\t", "1") && status_has("Seccomp:\t", "2"))
                ok |= C_STATUS;

        /* ticks through the set, at rest */
        int r = 0;
        for (int i = 0; i < 4 && r >= 0; i++) {
                fx->now_usec += 250 * MG_USEC_PER_MSEC;
                r = mg_set_process(s);
        }
        if (r >= 0)
                ok |= C_TICKS;
        /* a lend, with its record: 64 MiB more has as many digits, so
         * the plain overwrite reads back as kernfs would (the end of the
         * lend reads memory.high before it restores) */
        fixture_write(fx, "memory.high", "241172480\n");
        if (mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend) == 0 && mg_guard_lend_end(g, lend) == 1) {
                /* the worker writes, the set tells: up to 5 s */
                for (int i = 0; i < 500 && mg_guard_is_lent(g); i++) {
                        (void) mg_set_process(s);
                        (void) poll(NULL, 0, 10);
                }
                if (!mg_guard_is_lent(g) && strcmp(fixture_read(fx, "memory.high"), "241172480\n") == 0)
                        ok |= C_LEND;
        }
        /* a true overshoot is killed */
        fixture_current(fx, 300 * MG_MIB);
        fixture_stat(fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        fx->now_usec += 250 * MG_USEC_PER_MSEC;
        if (mg_set_process(s) == 1 && strcmp(fixture_read(fx, "cgroup.kill"), "1") == 0)
                ok |= C_KILLED;
        /* a crashed lend ended (the parent left the record: setxattr by
         * path is not in the list) */
        if (mg_guard_recover_internal(other->dir, 0, MG_CGROUP_ANY_FS, NULL) == 1 &&
            strcmp(fixture_read(other, "memory.high"), "241172480") == 0)
                ok |= C_RECOVER;
        /* guards come and go while confined */
        if (mg_guard_new_internal(other->dir, &o, MG_CGROUP_ANY_FS, NULL, &g2) == 0) {
                if (mg_set_add_guard(s, g2) == 0 && mg_set_remove(s, g2) == 0)
                        ok |= C_NEW_GUARD;
        }

        c = 1;
        if (write(thread_pipe[1], &c, 1) == 1 && read(thread_result[0], &c, 1) == 1 && c == 1)
                ok |= C_OTHER_THREAD_FREE;
        pthread_join(t, NULL);
        mg_set_free(s);
        return ok;
}

Test(confine, allowlist_in_a_child) {
        struct fixture fx, other;
        int res[2];
        unsigned ok = 0;

        cr_assert_eq(mg_confine_thread(1u << 31), -EINVAL);
        fixture_init(&fx);
        fixture_init(&other);
        if (setxattr(other.dir, "user.memguard.test", "1", 1, 0) < 0)
                cr_skip_test("%s has no user xattrs: the recovery check needs them", other.dir);
        /* the record a crashed lend left (the child may not setxattr by path) */
        const char *rec = "memguard-lend 1 high=241172480 deadline_boottime_usec=1 pid=1\n";
        cr_assert_eq(setxattr(other.dir, MG_LEND_XATTR, rec, strlen(rec), 0), 0);
        fixture_write(&other, "memory.high", "max\n");

        cr_assert_eq(pipe(res), 0);
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                close(res[0]);
                ok = child(&fx, &other);
                (void) !write(res[1], &ok, sizeof(ok));
                _exit(0);
        }
        close(res[1]);
        ssize_t n = read(res[0], &ok, sizeof(ok));
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        close(res[0]);
        cr_assert_eq(n, (ssize_t) sizeof(ok), "the child reported nothing (status %d)", status);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
        if (!(ok & C_CONFINED) && mg_confine_thread(0) == -EOPNOTSUPP) {
                fixture_cleanup(&fx);
                fixture_cleanup(&other);
                cr_skip_test("no seccomp: mg_confine_thread() returns -EOPNOTSUPP (built without libseccomp, or "
                             "under valgrind, which does not know seccomp(2))");
        }
        for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                cr_expect(ok & (1u << i), "confined child: %s failed", names[i]);
        cr_expect_eq(ok, C_ALL);
        fixture_cleanup(&fx);
        fixture_cleanup(&other);
}

/* MG_CONFINE_SUPERVISOR: what `memguard run` needs on top. */
Test(confine, supervisor_waits_and_signals) {
        int res[2];
        unsigned ok = 0;

        cr_assert_eq(pipe(res), 0);
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                close(res[0]);
                /* a child to supervise, started before (fork is not allowed after) */
                pid_t c = fork();
                if (c == 0) {
                        pause();
                        _exit(0);
                }
                if (mg_confine_thread(MG_CONFINE_SUPERVISOR) == 0)
                        ok |= 1;
                if (kill(c, SIGKILL) == 0)
                        ok |= 2;
                int st;
                if (waitpid(c, &st, 0) == c && WIFSIGNALED(st))
                        ok |= 4;
                if (socket_refused(AF_UNIX))
                        ok |= 8;
                (void) !write(res[1], &ok, sizeof(ok));
                _exit(0);
        }
        close(res[1]);
        ssize_t n = read(res[0], &ok, sizeof(ok));
        waitpid(pid, NULL, 0);
        close(res[0]);
        cr_assert_eq(n, (ssize_t) sizeof(ok));
        if (!(ok & 1) && mg_confine_thread(0) == -EOPNOTSUPP)
                cr_skip_test("no seccomp (built without libseccomp, or under valgrind)");
        cr_expect_eq(ok, 15, "supervisor checks: %#x (confined, kill, wait, socket EPERM)", ok);
}
