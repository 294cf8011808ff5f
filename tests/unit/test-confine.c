/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mg_confine_thread(): each test forks a child (a filter cannot be unloaded,
 * and Criterion's own reporting needs sockets), which confines its thread
 * and reports one bit per check through a pipe.  A helper thread started
 * before stays unconfined: it makes the fixture's writes (O_CREAT|O_TRUNC),
 * which the confined thread may not.
 *  - allowlist_in_a_child, on a guard set on a fixture tree: calls outside
 *    the list fail with EPERM (socket, mkdir, fork, execve, wait4); the
 *    guards keep working: ticks through the set (epoll, timerfd), a true
 *    overshoot killed (cgroup.kill), a lend begun and ended with its record
 *    (xattrs), a new guard added (opens), a lend recovered; no_new_privs and
 *    seccomp mode 2 are set (/proc/self/status); a thread started before is
 *    not confined; the set's restore worker, started by mg_set_new()
 *    before, confined itself and writes the lend's end.
 *  - opens_never_create_or_truncate: openat with O_CREAT, O_TRUNC or
 *    O_TMPFILE, and creat(), fail with EPERM, openat2 with ENOSYS, and the
 *    tree is unchanged; O_RDONLY and O_WRONLY opens work; the library's
 *    openat fallback still refuses a symlinked memory.current (-ELOOP).
 *  - directories_can_be_listed: opendir, readdir, closedir of the tree.
 *  - MG_CONFINE_PATHS (skipped where the kernel has no Landlock): files
 *    outside the cgroup2 mounts and /proc cannot be opened (EACCES), /proc
 *    is read-only, a cgroup2 mount is readable, a file opened before still
 *    reads, the helper thread is not restricted; with
 *    MG_CONFINE_SUPERVISOR, rmdir outside the cgroup2 mounts is EACCES.
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
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/magic.h>

#include "fixture.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"
#include "util.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* ---- the unconfined helper thread ---- */

struct job {
        void (*fn)(void *);
        void *arg;
};

static int helper_req[2], helper_done[2];
static pthread_t helper;

static void *helper_main(void *ud) {
        struct job j;
        char c = 1;

        (void) ud;
        while (read(helper_req[0], &j, sizeof(j)) == (ssize_t) sizeof(j)) {
                j.fn(j.arg);
                if (write(helper_done[1], &c, 1) != 1)
                        break;
        }
        return NULL;
}

static bool helper_start(void) {
        return pipe(helper_req) == 0 && pipe(helper_done) == 0 &&
               pthread_create(&helper, NULL, helper_main, NULL) == 0;
}

/* Runs fn(arg) on the helper and waits for it. */
static void unconfined(void (*fn)(void *), void *arg) {
        struct job j = { fn, arg };
        char c;

        if (write(helper_req[1], &j, sizeof(j)) != (ssize_t) sizeof(j) || read(helper_done[0], &c, 1) != 1)
                abort();
}

static void helper_stop(void) {
        close(helper_req[1]);
        pthread_join(helper, NULL);
}

/* ---- a child that reports ---- */

struct report {
        int r;        /* what mg_confine_thread() returned */
        unsigned ok;  /* the checks that held */
        int probe;    /* where r < 0: mg_confine_thread(0), asked again */
};

/* Runs fn in a forked child and returns its report (the test fails if the
 * child reported nothing). */
static struct report in_child(struct report (*fn)(void *), void *arg) {
        struct report rep = { .r = -EIO };
        int res[2], status;

        cr_assert_eq(pipe(res), 0);
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                close(res[0]);
                rep = fn(arg);
                if (rep.r < 0)
                        rep.probe = mg_confine_thread(0);
                (void) !write(res[1], &rep, sizeof(rep));
                _exit(0);
        }
        close(res[1]);
        ssize_t n = read(res[0], &rep, sizeof(rep));
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        close(res[0]);
        cr_assert_eq(n, (ssize_t) sizeof(rep), "the child reported nothing (status %d)", status);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
        return rep;
}

/* Fails the checks that did not hold, by name. */
static void expect_all(const struct report *rep, const char *const *names, size_t n) {
        for (size_t i = 0; i < n; i++)
                cr_expect(rep->ok & (1u << i), "confined child: %s failed", names[i]);
        cr_expect_eq(rep->ok, (1u << n) - 1);
}

/* Without seccomp (built without libseccomp, or under valgrind, which does
 * not know seccomp(2)) nothing is confined: skip.  Asked in the child (the
 * test's own process must stay unconfined), after it could not confine
 * itself as asked. */
static void skip_without_seccomp(const struct report *rep, struct fixture *cleanup) {
        if (rep->r >= 0 || rep->probe != -EOPNOTSUPP)
                return;
        if (cleanup)
                fixture_cleanup(cleanup);
        cr_skip_test("no seccomp: mg_confine_thread() returns -EOPNOTSUPP (built without libseccomp, or under "
                     "valgrind, which does not know seccomp(2))");
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

/* An open that failed with err, closing one that did not. */
static bool open_fails(int fd, int err) {
        if (fd >= 0) {
                close(fd);
                return false;
        }
        return errno == err;
}

/* ---- the allowlist, with a guard set at work ---- */

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
};
static const char *const set_checks[] = {
        "confined",         "socket() EPERM",        "mkdir() EPERM",  "fork() EPERM",  "execve() EPERM",
        "set ticks",        "overshoot killed",      "lend and record", "guard added",  "lend recovered",
        "NoNewPrivs 1, Seccomp 2", "earlier thread not confined", "wait4 not allowed",
        "restore worker confined",
};

struct two_trees {
        struct fixture *fx, *other;
};

static void socket_allowed(void *ud) {
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        *(bool *) ud = s >= 0;
        if (s >= 0)
                close(s);
}

/* 64 MiB more has as many digits, so the plain overwrite of the library's
 * write reads back as kernfs would (the end of the lend reads memory.high
 * before it restores). */
static void lend_high(void *ud) {
        fixture_write(ud, "memory.high", "241172480\n");
}

static void overshoot(void *ud) {
        fixture_current(ud, 300 * MG_MIB);
        fixture_stat(ud, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
}

/* No I/O seam: the library's own system calls, as a host makes them,
 * openat2 refused and its openat fallback taken included. */
static struct report set_at_work(void *ud) {
        struct fixture *fx = ((struct two_trees *) ud)->fx, *other = ((struct two_trees *) ud)->other;
        struct report rep = { .r = -EIO };
        uint64_t lend = 0;
        struct mg_guard_options o;
        mg_set *s;
        mg_guard *g, *g2 = NULL;
        bool other_free = false;

        if (!helper_start())
                return rep;
        mg_guard_options_init(&o, 256 * MG_MIB);
        if (mg_set_new(NULL, &s) < 0 || mg_guard_new_internal(fx->dir, &o, MG_CGROUP_ANY_FS, NULL, &g) < 0)
                return rep;
        mg_guard_set_clock(g, fixture_clock, fx);
        if (mg_set_add_guard(s, g) < 0)
                return rep;

        /* Unconfined (no seccomp here, or under valgrind, which does not
         * know seccomp(2)), the checks below would fork and exec for real. */
        int before = confined_threads();
        rep.r = mg_confine_thread(0);
        if (rep.r != 0)
                return rep;
        rep.ok |= C_CONFINED;
        if (before == 1)
                rep.ok |= C_WORKER_CONFINED;
        if (socket_refused(AF_INET))
                rep.ok |= C_SOCKET_EPERM;
        char p[512];
        snprintf(p, sizeof(p), "%s/evil", fx->dir);
        if (mkdir(p, 0700) < 0 && errno == EPERM)
                rep.ok |= C_MKDIR_EPERM;
        if (fork() < 0 && errno == EPERM)
                rep.ok |= C_FORK_EPERM;
        if (execve("/bin/true", (char *[]) { "true", NULL }, (char *[]) { NULL }) < 0 && errno == EPERM)
                rep.ok |= C_EXEC_EPERM;
        if (waitpid(-1, NULL, WNOHANG) < 0 && errno == EPERM)
                rep.ok |= C_SUPERVISOR_OFF;
        if (status_has("NoNewPrivs:\t", "1") && status_has("Seccomp:\t", "2"))
                rep.ok |= C_STATUS;

        /* ticks through the set, at rest */
        int r = 0;
        for (int i = 0; i < 4 && r >= 0; i++) {
                fx->now_usec += 250 * MG_USEC_PER_MSEC;
                r = mg_set_process(s);
        }
        if (r >= 0)
                rep.ok |= C_TICKS;
        /* a lend, with its record */
        unconfined(lend_high, fx);
        if (mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend) == 0 && mg_guard_lend_end(g, lend) == 1) {
                /* the worker writes, the set tells: up to 5 s */
                for (int i = 0; i < 500 && mg_guard_is_lent(g); i++) {
                        (void) mg_set_process(s);
                        (void) poll(NULL, 0, 10);
                }
                if (!mg_guard_is_lent(g) && strcmp(fixture_read(fx, "memory.high"), "241172480\n") == 0)
                        rep.ok |= C_LEND;
        }
        /* a true overshoot is killed */
        unconfined(overshoot, fx);
        fx->now_usec += 250 * MG_USEC_PER_MSEC;
        if (mg_set_process(s) == 1 && strcmp(fixture_read(fx, "cgroup.kill"), "1") == 0)
                rep.ok |= C_KILLED;
        /* a crashed lend ended (the parent left the record: setxattr by
         * path is not in the list) */
        if (mg_guard_recover_internal(other->dir, 0, MG_CGROUP_ANY_FS, NULL) == 1 &&
            strcmp(fixture_read(other, "memory.high"), "241172480") == 0)
                rep.ok |= C_RECOVER;
        /* guards come and go while confined */
        if (mg_guard_new_internal(other->dir, &o, MG_CGROUP_ANY_FS, NULL, &g2) == 0) {
                if (mg_set_add_guard(s, g2) == 0 && mg_set_remove(s, g2) == 0)
                        rep.ok |= C_NEW_GUARD;
        }

        unconfined(socket_allowed, &other_free);
        if (other_free)
                rep.ok |= C_OTHER_THREAD_FREE;
        helper_stop();
        mg_set_free(s);
        return rep;
}

Test(confine, allowlist_in_a_child) {
        struct fixture fx, other;

        cr_assert_eq(mg_confine_thread(1u << 31), -EINVAL);
        fixture_init(&fx);
        fixture_init(&other);
        if (setxattr(other.dir, "user.memguard.test", "1", 1, 0) < 0)
                cr_skip_test("%s has no user xattrs: the recovery check needs them", other.dir);
        /* the record a crashed lend left (the child may not setxattr by path) */
        const char *rec = "memguard-lend 1 high=241172480 deadline_boottime_usec=1 pid=1\n";
        cr_assert_eq(setxattr(other.dir, MG_LEND_XATTR, rec, strlen(rec), 0), 0);
        fixture_write(&other, "memory.high", "max\n");

        struct report rep = in_child(set_at_work, &(struct two_trees) { &fx, &other });
        fixture_cleanup(&other);
        skip_without_seccomp(&rep, &fx);
        expect_all(&rep, set_checks, sizeof(set_checks) / sizeof(set_checks[0]));
        fixture_cleanup(&fx);
}

/* ---- opens: nothing created or truncated ---- */

static const char *const open_checks[] = {
        "openat O_CREAT EPERM",          "openat O_CREAT|O_EXCL EPERM", "openat O_TRUNC EPERM",
        "openat O_RDONLY|O_TRUNC EPERM", "openat O_TMPFILE EPERM",      "creat() EPERM",
        "openat2 ENOSYS",                "O_RDONLY open reads",         "O_WRONLY open writes",
        "symlinked memory.current -ELOOP", "guard opened on the fallback",
};

struct open_trees {
        struct fixture *fx, *linked;
};

static struct report opens(void *ud) {
        struct fixture *fx = ((struct open_trees *) ud)->fx, *linked = ((struct open_trees *) ud)->linked;
        struct report rep = { .r = -EIO };
        struct mg_guard_options o;
        char path[600], buf[64];
        unsigned bit = 1;
        mg_guard *g = NULL;
        int dfd = open(fx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

        if (dfd < 0)
                return rep;
        rep.r = mg_confine_thread(0);
        if (rep.r != 0) {
                close(dfd);
                return rep;
        }
        snprintf(path, sizeof(path), "%s/memory.max", fx->dir);
        rep.ok |= open_fails(openat(dfd, "new", O_WRONLY | O_CREAT | O_CLOEXEC, 0600), EPERM) ? bit : 0;
        bit <<= 1;
        rep.ok |= open_fails(openat(dfd, "new", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600), EPERM) ? bit : 0;
        bit <<= 1;
        rep.ok |= open_fails(open(path, O_WRONLY | O_TRUNC | O_CLOEXEC), EPERM) ? bit : 0;
        bit <<= 1;
        rep.ok |= open_fails(openat(dfd, "memory.stat", O_RDONLY | O_TRUNC | O_CLOEXEC), EPERM) ? bit : 0;
        bit <<= 1;
        rep.ok |= open_fails(openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), EPERM) ? bit : 0;
        bit <<= 1;
        snprintf(path, sizeof(path), "%s/new", fx->dir);
        rep.ok |= open_fails(creat(path, 0600), EPERM) ? bit : 0;
        bit <<= 1;
        /* struct open_how: flags, mode, resolve */
        uint64_t how[3] = { O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600, 0 };
        rep.ok |= open_fails((int) syscall(SYS_openat2, dfd, "memory.max", how, sizeof(how)), ENOSYS) ? bit : 0;
        bit <<= 1;
        fd = openat(dfd, "memory.max", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && pread(fd, buf, sizeof(buf), 0) == 4 && memcmp(buf, "max\n", 4) == 0)
                rep.ok |= bit;
        if (fd >= 0)
                close(fd);
        bit <<= 1;
        fd = openat(dfd, "memory.high", O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && pwrite(fd, "241172480\n", 10, 0) == 10)
                rep.ok |= bit;
        if (fd >= 0)
                close(fd);
        bit <<= 1;
        /* openat2 is ENOSYS: the library opens with openat(O_NOFOLLOW) */
        mg_guard_options_init(&o, 256 * MG_MIB);
        if (mg_guard_new_internal(linked->dir, &o, MG_CGROUP_ANY_FS, NULL, &g) == -ELOOP)
                rep.ok |= bit;
        bit <<= 1;
        if (mg_guard_new_internal(fx->dir, &o, MG_CGROUP_ANY_FS, NULL, &g) == 0) {
                rep.ok |= bit;
                mg_guard_free(g);
        }
        close(dfd);
        return rep;
}

Test(confine, opens_never_create_or_truncate) {
        struct fixture fx, linked;
        char target[600], link[600];
        struct stat st;

        fixture_init(&fx);
        fixture_init(&linked);
        snprintf(target, sizeof(target), "%s/memory.current", fx.dir);
        snprintf(link, sizeof(link), "%s/memory.current", linked.dir);
        cr_assert_eq(unlink(link), 0);
        cr_assert_eq(symlink(target, link), 0);

        struct report rep = in_child(opens, &(struct open_trees) { &fx, &linked });
        fixture_cleanup(&linked);
        skip_without_seccomp(&rep, &fx);
        expect_all(&rep, open_checks, sizeof(open_checks) / sizeof(open_checks[0]));
        /* nothing was made, nothing emptied; the plain write went through */
        snprintf(target, sizeof(target), "%s/new", fx.dir);
        cr_expect(stat(target, &st) < 0 && errno == ENOENT, "%s was created", target);
        cr_expect_str_eq(fixture_read(&fx, "memory.max"), "max\n");
        cr_expect_neq(strstr(fixture_read(&fx, "memory.stat"), "anon "), NULL, "memory.stat was truncated");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480\n");
        DIR *d = opendir(fx.dir);
        struct dirent *de;
        int n = 0;
        cr_assert_not_null(d);
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        cr_expect_eq(n, 12, "the tree has %d files, not the fixture's 12 (an O_TMPFILE file linked?)", n);
        fixture_cleanup(&fx);
}

/* ---- listing a directory ---- */

static const char *const list_checks[] = { "opendir", "readdir found memory.current", "readdir to the end",
                                           "closedir" };

static struct report list(void *ud) {
        struct fixture *fx = ud;
        struct report rep = { .r = mg_confine_thread(0) };
        struct dirent *de;
        bool found = false;
        DIR *d;

        if (rep.r != 0)
                return rep;
        d = opendir(fx->dir);
        if (!d)
                return rep;
        rep.ok |= 1;
        errno = 0;
        while ((de = readdir(d)))
                found = found || strcmp(de->d_name, "memory.current") == 0;
        rep.ok |= found ? 2 : 0;
        rep.ok |= errno == 0 ? 4 : 0;
        rep.ok |= closedir(d) == 0 ? 8 : 0;
        return rep;
}

Test(confine, directories_can_be_listed) {
        struct fixture fx;

        fixture_init(&fx);
        struct report rep = in_child(list, &fx);
        skip_without_seccomp(&rep, &fx);
        expect_all(&rep, list_checks, sizeof(list_checks) / sizeof(list_checks[0]));
        fixture_cleanup(&fx);
}

/* ---- MG_CONFINE_PATHS: Landlock ---- */

/* Skips unless the running kernel has Landlock (asked directly, not
 * through the library under test). */
static void need_landlock(void) {
#ifdef __NR_landlock_create_ruleset
        /* LANDLOCK_CREATE_RULESET_VERSION */
        if (syscall(__NR_landlock_create_ruleset, NULL, 0, 1u) >= 0)
                return;
#else
        errno = ENOSYS;
#endif
        struct utsname u;
        int e = errno;
        uname(&u);
        cr_skip_test("no Landlock here (kernel %s): landlock_create_ruleset() fails with %s (a kernel before "
                     "5.13, built without it or without it in lsm=; or valgrind, which does not know it)",
                     u.release, strerror(e));
}

/* The root of a cgroup2 mount, if there is one where systemd or a hybrid
 * set-up puts it (NULL otherwise: that check is left out). */
static const char *cgroup2_mount(void) {
        static const char *const where[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
        struct statfs sfs;

        for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
                if (statfs(where[i], &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
                        return where[i];
        return NULL;
}

static const char *const path_checks[] = {
        "confined with Landlock (1)",
        "a file outside: EACCES",
        "a directory outside: EACCES",
        "/dev/null: EACCES",
        "/proc/self/stat readable",
        "/proc/self/comm not writable: EACCES",
        "a file opened before still reads",
        "the helper thread is not restricted",
        "a cgroup2 mount readable and listable",
        "the guard's openat outside: -EACCES",
};

struct paths_arg {
        struct fixture *fx;
        const char *cg2;
        bool helper_opened;
};

static void open_outside(void *ud) {
        struct paths_arg *a = ud;
        char path[600];
        snprintf(path, sizeof(path), "%s/memory.max", a->fx->dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                close(fd);
        a->helper_opened = fd >= 0;
}

static struct report paths(void *ud) {
        struct paths_arg *a = ud;
        struct fixture *fx = a->fx;
        struct report rep = { .r = -EIO };
        struct mg_guard_options o;
        char path[600], buf[64];
        mg_guard *g = NULL;
        int before, fd;

        snprintf(path, sizeof(path), "%s/memory.max", fx->dir);
        before = open(path, O_RDONLY | O_CLOEXEC);
        if (before < 0)
                return rep;
        if (!helper_start()) {
                close(before);
                return rep;
        }
        rep.r = mg_confine_thread(MG_CONFINE_PATHS);
        if (rep.r != 1)
                goto out;
        rep.ok |= 1;
        rep.ok |= open_fails(open(path, O_RDONLY | O_CLOEXEC), EACCES) ? 2 : 0;
        rep.ok |= open_fails(open(fx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES) ? 4 : 0;
        rep.ok |= open_fails(open("/dev/null", O_RDWR | O_CLOEXEC), EACCES) ? 8 : 0;
        fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
                rep.ok |= 16;
        if (fd >= 0)
                close(fd);
        rep.ok |= open_fails(open("/proc/self/comm", O_WRONLY | O_CLOEXEC), EACCES) ? 32 : 0;
        if (pread(before, buf, sizeof(buf), 0) == 4)
                rep.ok |= 64;
        unconfined(open_outside, a);
        rep.ok |= a->helper_opened ? 128 : 0;
        if (a->cg2) {
                snprintf(path, sizeof(path), "%s/cgroup.controllers", a->cg2);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                DIR *d = opendir(a->cg2);
                if (fd >= 0 && read(fd, buf, sizeof(buf)) >= 0 && d && readdir(d))
                        rep.ok |= 256;
                if (fd >= 0)
                        close(fd);
                if (d)
                        closedir(d);
        } else {
                rep.ok |= 256; /* no cgroup2 mount here: nothing to read */
        }
        mg_guard_options_init(&o, 256 * MG_MIB);
        if (mg_guard_new_internal(fx->dir, &o, MG_CGROUP_ANY_FS, NULL, &g) == -EACCES)
                rep.ok |= 512;
out:
        helper_stop();
        close(before);
        return rep;
}

Test(confine, paths_keep_files_below_cgroupfs_and_proc) {
        struct paths_arg a;
        struct fixture fx;

        need_landlock();
        fixture_init(&fx);
        a = (struct paths_arg) { .fx = &fx, .cg2 = cgroup2_mount() };
        struct report rep = in_child(paths, &a);
        skip_without_seccomp(&rep, &fx);
        cr_expect_eq(rep.r, 1, "mg_confine_thread(MG_CONFINE_PATHS) = %d on a kernel with Landlock", rep.r);
        expect_all(&rep, path_checks, sizeof(path_checks) / sizeof(path_checks[0]));
        if (!a.cg2)
                cr_log_info("no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified: not read");
        fixture_cleanup(&fx);
}

static struct report rmdir_outside(void *ud) {
        struct fixture *fx = ud;
        struct report rep = { .r = mg_confine_thread(MG_CONFINE_SUPERVISOR | MG_CONFINE_PATHS) };
        char path[600];

        if (rep.r != 1)
                return rep;
        rep.ok |= 1;
        snprintf(path, sizeof(path), "%s/child", fx->dir);
        if (rmdir(path) < 0 && errno == EACCES)
                rep.ok |= 2;
        return rep;
}

Test(confine, paths_with_supervisor_remove_nothing_outside_cgroupfs) {
        static const char *const checks[] = { "confined with Landlock (1)", "rmdir outside: EACCES" };
        char path[600];
        struct fixture fx;
        struct stat st;

        need_landlock();
        fixture_init(&fx);
        snprintf(path, sizeof(path), "%s/child", fx.dir);
        cr_assert_eq(mkdir(path, 0700), 0);
        struct report rep = in_child(rmdir_outside, &fx);
        skip_without_seccomp(&rep, &fx);
        expect_all(&rep, checks, sizeof(checks) / sizeof(checks[0]));
        cr_expect(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "%s was removed", path);
        fixture_cleanup(&fx);
}

/* ---- MG_CONFINE_SUPERVISOR: what `memguard run` needs on top ---- */

static struct report supervise(void *ud) {
        struct report rep = { .r = -EIO };
        int st;

        (void) ud;
        /* a child to supervise, started before (fork is not allowed after) */
        pid_t c = fork();
        if (c == 0) {
                pause();
                _exit(0);
        }
        rep.r = mg_confine_thread(MG_CONFINE_SUPERVISOR);
        if (rep.r == 0)
                rep.ok |= 1;
        if (kill(c, SIGKILL) == 0)
                rep.ok |= 2;
        if (waitpid(c, &st, 0) == c && WIFSIGNALED(st))
                rep.ok |= 4;
        if (socket_refused(AF_UNIX))
                rep.ok |= 8;
        return rep;
}

Test(confine, supervisor_waits_and_signals) {
        static const char *const checks[] = { "confined", "kill", "wait", "socket EPERM" };

        struct report rep = in_child(supervise, NULL);
        skip_without_seccomp(&rep, NULL);
        expect_all(&rep, checks, sizeof(checks) / sizeof(checks[0]));
}
