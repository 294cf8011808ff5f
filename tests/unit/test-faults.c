/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A hostile or failing file system under the guard, on fixture trees.
 *
 * paths:  symlinks where the actor's directory or its files should be, and
 *         the openat2 seam with its openat fallback.
 * faults: through struct mg_io, every file operation the guard does (the
 *         opens, each read of the fast and slow paths, the lend's read and
 *         writes, the kill, the wait for the kill) fails with EINTR, EAGAIN,
 *         EIO, ENOMEM, ENOENT or ENODEV, once, three times or for good, or
 *         a read returns fewer bytes than the file has (cut mid-line, at a
 *         line boundary, or empty).  Expected every time: no kill because of
 *         an error (cgroup.kill never written), no crash (CI runs this under
 *         ASan+UBSan), each error reported once per streak as
 *         MG_EVENT_ERROR (ENODEV/ENOENT with cgroup.events failing too, a
 *         removed cgroup: MG_EVENT_GONE; a pressure file alone hidden: an
 *         error, the tick goes on), and a true
 *         overshoot acted on once the fault clears.  The kill's pidfd
 *         fallback runs on fake pidfd_open/pidfd_send_signal (never the
 *         system calls): a member it cannot signal fails the kill.
 * lend:   the lend record (user.memguard.lend): written before memory.high
 *         is raised, removed after the restore, ended by mg_guard_recover()
 *         or taken over by mg_guard_new() after a crash (a forked child
 *         that exits mid-lend), hostile records, and faults of the xattr
 *         calls.  Skips
 *         where the fixture's file system has no user xattrs.
 *
 * The actor in the fault runs sits at its limit with everything the slow
 * path reads in play: restores and memory.high events rise every tick, so
 * all seven files are read each tick, but no kill criterion holds.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fixture.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "kill.h"
#include "set.h"
#include "util.h"


static struct fixture fx;
static struct fixture_seen seen;

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) g;
        (void) ud;
        fixture_record(&seen, ev);
}

/* ---- the fault seam: wraps the fixture's seam (which counts, and writes
 * like kernfs) and fails what the armed fault says -------------------------- */

enum fop { FOP_OPEN, FOP_READ, FOP_WRITE, FOP_GETXATTR, FOP_SETXATTR, FOP_REMOVEXATTR };
enum shortmode { SHORT_NONE, SHORT_MID, SHORT_LINE, SHORT_EMPTY };
#define ANY_FILE (-1)
#define PERSISTENT (-1)

static struct {
        enum fop op;
        int file;               /* enum mg_cgfile, ANY_FILE */
        int err;
        int times;              /* failures left; PERSISTENT; 0: disarmed */
        enum shortmode shortmode;
        unsigned hits;
        unsigned writes_of[MG_CG_N];
        unsigned openat2_calls;
        bool openat2_enosys;
        /* ENODEV/ENOENT model a removed cgroup, as kernfs makes it: every
         * file of it fails so, cgroup.events included (the guard reads it to
         * tell a removed cgroup from one file taken away).  Off: only the
         * armed file is gone (cgroup.pressure 0 hides the pressure files). */
        bool removed;
} flt;
static struct mg_io fio;

static int file_of_fd(int fd) {
        for (int i = 0; i < MG_CG_N; i++)
                if (fx.fd_of[i] == fd && fd >= 0)
                        return i;
        return ANY_FILE;
}

static int file_of_name(const char *name) {
        for (int i = 0; i < MG_CG_N; i++)
                if (strcmp(mg_cgfile_name((enum mg_cgfile) i), name) == 0)
                        return i;
        return ANY_FILE;
}

static bool hit(enum fop op, int file) {
        if (flt.times == 0 || flt.op != op || (flt.file != ANY_FILE && flt.file != file))
                return false;
        if (flt.times > 0)
                flt.times--;
        flt.hits++;
        return true;
}

static void arm(enum fop op, int file, int err, int times, enum shortmode sm) {
        flt.op = op;
        flt.file = file;
        flt.err = err;
        flt.times = times;
        flt.shortmode = sm;
        flt.hits = 0;
        flt.removed = err == ENODEV || err == ENOENT;
}

static void disarm(void) {
        flt.times = 0;
        flt.removed = false;
}

static int ft_openat(void *ud, int dirfd, const char *name, int flags) {
        (void) ud;
        if (hit(FOP_OPEN, file_of_name(name))) {
                errno = flt.err;
                return -1;
        }
        return fx.io.openat(fx.io.userdata, dirfd, name, flags);
}

/* The resolving open, as the kernel does it, or ENOSYS like a kernel
 * before 5.6 when asked. */
static int ft_openat2(void *ud, int dirfd, const char *name, int flags, uint64_t resolve) {
        struct { uint64_t flags, mode, resolve; } how = { (uint64_t) flags, 0, resolve };
        (void) ud;
        flt.openat2_calls++;
        cr_expect_eq(resolve, MG_RESOLVE, "every file below the actor is opened with MG_RESOLVE");
        cr_expect(flags & O_NOFOLLOW);
        cr_expect(flags & O_CLOEXEC);
        if (flt.openat2_enosys) {
                errno = ENOSYS;
                return -1;
        }
        if (hit(FOP_OPEN, file_of_name(name))) {
                errno = flt.err;
                return -1;
        }
        int fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
        /* A system without openat2 (before 5.6; valgrind 3.19 does not know
         * it either): the library falls back to openat, which counts. */
        if (!(fd < 0 && errno == ENOSYS))
                fx.opens++;
        fixture_note_open(&fx, name, fd);
        return fd;
}

static ssize_t ft_pread(void *ud, int fd, void *buf, size_t len, off_t off) {
        int f = file_of_fd(fd);
        ssize_t n;
        (void) ud;

        if (flt.shortmode == SHORT_NONE && hit(FOP_READ, f)) {
                errno = flt.err;
                return -1;
        }
        if (flt.removed && f == MG_CG_EVENTS && flt.hits > 0) {
                errno = flt.err; /* the removal the armed fault stood for */
                return -1;
        }
        n = fx.io.pread(fx.io.userdata, fd, buf, len, off);
        if (flt.shortmode != SHORT_NONE && n > 0 && hit(FOP_READ, f)) {
                char *c = buf;
                if (flt.shortmode == SHORT_EMPTY)
                        n = 0;
                else if (flt.shortmode == SHORT_MID)
                        n = n / 2 > 0 ? n / 2 : 0;
                else {
                        /* at the last line boundary in the first half (0 if none) */
                        ssize_t cut = n / 2;
                        while (cut > 0 && c[cut - 1] != '\n')
                                cut--;
                        n = cut;
                }
        }
        return n;
}

static ssize_t ft_pwrite(void *ud, int fd, const void *buf, size_t len, off_t off) {
        int f = file_of_fd(fd);
        (void) ud;
        if (hit(FOP_WRITE, f)) {
                errno = flt.err;
                return -1;
        }
        if (f >= 0)
                flt.writes_of[f]++;
        return fx.io.pwrite(fx.io.userdata, fd, buf, len, off);
}

static ssize_t ft_fgetxattr(void *ud, int fd, const char *name, void *buf, size_t size) {
        (void) ud;
        if (hit(FOP_GETXATTR, ANY_FILE)) {
                errno = flt.err;
                return -1;
        }
        return fgetxattr(fd, name, buf, size);
}

static int ft_fsetxattr(void *ud, int fd, const char *name, const void *value, size_t size, int flags) {
        (void) ud;
        if (hit(FOP_SETXATTR, ANY_FILE)) {
                errno = flt.err;
                return -1;
        }
        return fsetxattr(fd, name, value, size, flags);
}

static int ft_fremovexattr(void *ud, int fd, const char *name) {
        (void) ud;
        if (hit(FOP_REMOVEXATTR, ANY_FILE)) {
                errno = flt.err;
                return -1;
        }
        return fremovexattr(fd, name);
}

/* The kill's fallback (no cgroup.kill): pidfd_open and pidfd_send_signal
 * are always these fakes here, never the system calls, since the fixture's
 * cgroup.procs lists made-up pids.  A pidfd is an fd on /dev/null that
 * remembers its pid; the hooks say what each call does for a pid (0, or an
 * errno to fail with). */
static struct {
        int (*on_open)(long pid);
        int (*on_signal)(long pid);
        struct { int fd; long pid; } pinned[16];
        long signalled[16];             /* each pid signalled, once */
        unsigned n_signalled, opens;
} pk;

static int fk_pidfd_open(void *ud, pid_t pid, unsigned flags) {
        int err = pk.on_open ? pk.on_open(pid) : 0, fd;
        (void) ud;
        cr_expect_eq(flags, 0);
        pk.opens++;
        if (err) {
                errno = err;
                return -1;
        }
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        for (size_t i = 0; i < 16; i++)
                if (pk.pinned[i].pid == 0) {
                        pk.pinned[i].fd = fd;
                        pk.pinned[i].pid = pid;
                        return fd;
                }
        cr_assert_fail("more than 16 fake pidfds open at once");
        return -1;
}

static int fk_pidfd_send_signal(void *ud, int pidfd, int sig, unsigned flags) {
        long pid = 0;
        (void) ud;
        cr_expect_eq(sig, SIGKILL);
        cr_expect_eq(flags, 0);
        for (size_t i = 0; i < 16; i++)
                if (pk.pinned[i].pid && pk.pinned[i].fd == pidfd) {
                        pid = pk.pinned[i].pid;
                        pk.pinned[i].pid = 0; /* one signal per pidfd: the fallback closes it after */
                }
        cr_assert_neq(pid, 0, "a signal through fd %d, which is no fake pidfd", pidfd);
        int err = pk.on_signal ? pk.on_signal(pid) : 0;
        if (err) {
                errno = err;
                return -1;
        }
        bool known = false;
        for (unsigned i = 0; i < pk.n_signalled; i++)
                known |= pk.signalled[i] == pid;
        if (!known && pk.n_signalled < 16)
                pk.signalled[pk.n_signalled++] = pid; /* each pid once */
        return 0;
}

static void setup(void) {
        memset(&seen, 0, sizeof(seen));
        memset(&flt, 0, sizeof(flt));
        memset(&pk, 0, sizeof(pk));
        fixture_init(&fx);
        fio = (struct mg_io) {
                .openat = ft_openat,
                .pread = ft_pread,
                .pwrite = ft_pwrite,
                .fgetxattr = ft_fgetxattr,
                .fsetxattr = ft_fsetxattr,
                .fremovexattr = ft_fremovexattr,
                .pidfd_open = fk_pidfd_open,
                .pidfd_send_signal = fk_pidfd_send_signal,
        };
}

static void teardown(void) {
        fixture_cleanup(&fx);
}

static mg_guard *new_guard(void) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_event;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fio, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        fixture_map_fds(&fx, &g->cg);
        fixture_reset_counts(&fx);
        return g;
}

/* At the limit, nothing to kill: 250 MiB current, 200 MiB used, memory.high
 * 230 MiB; each call moves the counters so every slow-path file is read. */
static uint64_t step;
static void at_limit(void) {
        step++;
        fixture_current(&fx, 250 * MG_MIB);
        fx.restore_file = step * 10;
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        fixture_events(&fx, step * 17, 0, 0);
        fixture_psi(&fx, "memory.pressure", step * 5 * MG_USEC_PER_MSEC); /* 2 %: no stall */
        fixture_psi(&fx, "io.pressure", step * 5 * MG_USEC_PER_MSEC);
}

static void overshoot(void) {
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
}

static int tick(mg_guard *g) {
        fx.now_usec += 250 * MG_USEC_PER_MSEC;
        return mg_guard_tick(g);
}

static bool killed(void) {
        const char *k = fixture_read(&fx, "cgroup.kill");
        return k && strcmp(k, "1") == 0;
}

/* ---- paths ------------------------------------------------------------------- */

TestSuite(paths, .init = setup, .fini = teardown);

Test(paths, symlinked_file_refused) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        char target[512], link[512];
        mg_guard_options_init(&o, 256 * MG_MIB);

        /* memory.current pointing elsewhere (here: a file the guard may read) */
        snprintf(target, sizeof(target), "%s/elsewhere", fx.dir);
        fixture_write(&fx, "elsewhere", "1\n");
        snprintf(link, sizeof(link), "%s/memory.current", fx.dir);
        cr_assert_eq(unlink(link), 0);
        cr_assert_eq(symlink(target, link), 0);
        int fds = fixture_open_fds();
        /* openat2 with RESOLVE_NO_SYMLINKS (no seam: the system call) */
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, NULL, &g), -ELOOP);
        cr_expect_null(g);
        /* the fixture's counting seam: openat with O_NOFOLLOW */
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -ELOOP);
        /* the fallback where openat2 is missing */
        flt.openat2_enosys = true;
        fio.openat2 = ft_openat2;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fio, &g), -ELOOP);
        cr_expect_eq(fixture_open_fds(), fds, "no fd left behind");

        /* an optional file too: a symlink is refused, not taken as absent */
        cr_assert_eq(unlink(link), 0);
        fixture_current(&fx, 16 * MG_MIB);
        snprintf(link, sizeof(link), "%s/cgroup.kill", fx.dir);
        cr_assert_eq(unlink(link), 0);
        cr_assert_eq(symlink("/dev/null", link), 0);
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, NULL, &g), -ELOOP);
        cr_assert_eq(unlink(link), 0);
        fixture_write(&fx, "cgroup.kill", "");
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, NULL, &g), 0);
        mg_guard_free(g);
}

Test(paths, symlinked_directory_refused) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        char link[512], slash[520];
        mg_guard_options_init(&o, 256 * MG_MIB);

        snprintf(link, sizeof(link), "%s-link", fx.dir);
        cr_assert_eq(symlink(fx.dir, link), 0);
        cr_expect_eq(mg_guard_new_internal(link, &o, MG_CGROUP_ANY_FS, NULL, &g), -ELOOP);
        cr_expect_eq(mg_guard_new_internal(link, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -ELOOP);
        /* a trailing slash would make the kernel follow it despite O_NOFOLLOW */
        snprintf(slash, sizeof(slash), "%s//", link);
        cr_expect_eq(mg_guard_new_internal(slash, &o, MG_CGROUP_ANY_FS, NULL, &g), -ELOOP);
        cr_expect_eq(mg_guard_recover_internal(link, 0, MG_CGROUP_ANY_FS, NULL), -ELOOP);
        cr_expect_null(g);
        /* the real directory, with a trailing slash, is fine */
        snprintf(slash, sizeof(slash), "%s/", fx.dir);
        cr_expect_eq(mg_guard_new_internal(slash, &o, MG_CGROUP_ANY_FS, NULL, &g), 0);
        mg_guard_free(g);
        unlink(link);
}

Test(paths, not_cgroup2_refused) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        mg_guard_options_init(&o, 256 * MG_MIB);
        /* the fixture is ext4 or tmpfs, not cgroup2 */
        cr_expect_eq(mg_guard_new(fx.dir, &o, &g), -ENOTSUP);
        cr_expect_eq(mg_guard_recover(fx.dir, 0), -ENOTSUP);
        cr_expect_null(g);
}

Test(paths, every_open_goes_through_openat2) {
        mg_guard *g;
        struct mg_guard_options o;
        mg_guard_options_init(&o, 256 * MG_MIB);
        fio.openat2 = ft_openat2;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fio, &g), 0);
        /* the directory by path (openat), then the 11 files below it */
        cr_expect_eq(flt.openat2_calls, MG_CG_N);
        cr_expect_eq(fx.opens, 1 + MG_CG_N, "opens still counted: %u", fx.opens);
        mg_guard_free(g);

        /* ENOSYS: every file falls back to openat (O_NOFOLLOW), counted too */
        flt.openat2_enosys = true;
        flt.openat2_calls = 0;
        fixture_reset_counts(&fx);
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fio, &g), 0);
        cr_expect_eq(flt.openat2_calls, MG_CG_N);
        cr_expect_eq(fx.opens, 1 + MG_CG_N);
        mg_guard_free(g);
}

Test(paths, file_names_are_one_component) {
        struct mg_cgroup cg;
        cr_assert_eq(mg_cgroup_open(&cg, fx.dir, MG_CGROUP_ANY_FS, NULL), 0);
        cr_expect_eq(mg_cgroup_open_file(&cg, "../etc", O_RDONLY), -EINVAL);
        cr_expect_eq(mg_cgroup_open_file(&cg, "..", O_RDONLY), -EINVAL);
        cr_expect_eq(mg_cgroup_open_file(&cg, "", O_RDONLY), -EINVAL);
        int fd = mg_cgroup_open_file(&cg, "memory.pressure", O_RDONLY);
        cr_expect_geq(fd, 0);
        close(fd);
        mg_cgroup_close(&cg);
}

/* ---- faults ------------------------------------------------------------------ */

TestSuite(faults, .init = setup, .fini = teardown);

static const int errnos[] = { EINTR, EAGAIN, EIO, ENOMEM, ENOENT, ENODEV };
static const int read_files[] = { MG_CG_CURRENT, MG_CG_STAT, MG_CG_EVENTS_LOCAL, MG_CG_PRESSURE,
                                  MG_CG_IO_PRESSURE, MG_CG_HIGH, MG_CG_CPU_STAT };
#define N(a) (sizeof(a) / sizeof((a)[0]))

static bool gone_errno(int e) {
        return e == ENOENT || e == ENODEV;
}

/* A fresh tree and guard for one combination; returns the guard. */
static mg_guard *fresh(void) {
        fixture_cleanup(&fx);
        setup();
        step = 0;
        return new_guard();
}

Test(faults, slow_path_reads_all_seven_files) {
        mg_guard *g = new_guard();
        /* the first slow tick has nothing to compare restores and high
         * events with: PSI, memory.high and cpu.stat join from the second */
        at_limit();
        cr_expect_eq(tick(g), 0);
        fixture_reset_counts(&fx);
        for (int i = 0; i < 3; i++) {
                at_limit();
                cr_expect_eq(tick(g), 0);
        }
        for (size_t i = 0; i < N(read_files); i++)
                cr_expect_eq(fx.reads_of[read_files[i]], 3, "%s read %u times", mg_cgfile_name(read_files[i]),
                             fx.reads_of[read_files[i]]);
        cr_expect_eq(seen.n[MG_EVENT_ERROR] + seen.n[MG_EVENT_KILL] + seen.n[MG_EVENT_GONE], 0);
        mg_guard_free(g);
}

/* times: 1 or 3 (transient) or PERSISTENT; after the fault, a true overshoot. */
static void run_read_fault(int file, int err, int times) {
        mg_guard *g = fresh();
        const char *name = mg_cgfile_name((enum mg_cgfile) file);
        bool eintr_absorbed = err == EINTR && times != PERSISTENT && times < MG_EINTR_RETRIES;

        arm(FOP_READ, file, err, times, SHORT_NONE);
        for (int i = 0; i < 12; i++) {
                at_limit();
                (void) tick(g);
        }
        cr_expect(flt.hits > 0, "%s %s x%d: fault never hit", name, strerror(err), times);
        cr_expect(!killed(), "%s %s x%d: killed because of an error", name, strerror(err), times);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        if (gone_errno(err)) {
                cr_expect_eq(seen.n[MG_EVENT_GONE], 1, "%s %s x%d: gone %d", name, strerror(err), times,
                             seen.n[MG_EVENT_GONE]);
                cr_expect_eq(seen.n[MG_EVENT_ERROR], 0);
        } else if (eintr_absorbed) {
                cr_expect_eq(seen.n[MG_EVENT_ERROR], 0, "%s: EINTR x%d is retried, not reported", name, times);
        } else {
                cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "%s %s x%d: %d error events", name, strerror(err), times,
                             seen.n[MG_EVENT_ERROR]);
                cr_expect_eq(seen.last_error, -err);
                cr_expect(seen.last_what && strcmp(seen.last_what, name) == 0, "what: %s", seen.last_what);
        }

        disarm();
        overshoot();
        int r1 = tick(g), r2 = r1 == 1 ? 1 : tick(g);
        if (gone_errno(err)) {
                cr_expect_eq(r1, -ENODEV, "a gone guard stays gone");
                cr_expect(!killed());
        } else {
                cr_expect(r1 == 1 || r2 == 1, "%s %s x%d: no recovery (%d, %d)", name, strerror(err), times, r1, r2);
                cr_expect(killed(), "%s %s x%d: the overshoot was not acted on", name, strerror(err), times);
        }
        mg_guard_free(g);
}

/* A file taken away from a live cgroup: writing 0 to cgroup.pressure hides
 * the pressure files, whose open fds then read ENODEV.  That is not the
 * cgroup gone: reported once, overshoots still judged, and the guard goes on
 * with pressure once the files come back. */
Test(faults, hidden_pressure_file_is_not_gone) {
        static const int files[] = { MG_CG_PRESSURE, MG_CG_IO_PRESSURE };
        for (size_t f = 0; f < N(files); f++) {
                mg_guard *g = fresh();
                arm(FOP_READ, files[f], ENODEV, PERSISTENT, SHORT_NONE);
                flt.removed = false;
                for (int i = 0; i < 12; i++) {
                        at_limit();
                        cr_expect_geq(tick(g), 0, "a hidden %s fails no tick", mg_cgfile_name(files[f]));
                }
                cr_expect_eq(seen.n[MG_EVENT_GONE], 0, "%s hidden: the guard ended", mg_cgfile_name(files[f]));
                cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "%s hidden: %d reports", mg_cgfile_name(files[f]),
                             seen.n[MG_EVENT_ERROR]);
                cr_expect_eq(seen.last_error, -ENODEV);
                overshoot();
                cr_expect_eq(tick(g), 1, "an overshoot is still acted on while %s is hidden",
                             mg_cgfile_name(files[f]));
                cr_expect(killed());
                disarm();
                mg_guard_free(g);
        }
}

/* mg_guard_report() acts on nothing: a read it makes that fails is reported
 * and returned, and the tick's window goes on as it was. */
Test(faults, a_report_that_fails_leaves_the_window) {
        static const int files[] = { MG_CG_CURRENT, MG_CG_STAT, MG_CG_EVENTS_LOCAL };
        for (size_t f = 0; f < N(files); f++) {
                mg_guard *g = fresh();
                struct mg_report rep = { .size = sizeof(rep) };
                unsigned count;
                for (int i = 0; i < 3; i++) {
                        at_limit();
                        cr_assert_eq(tick(g), 0);
                }
                cr_assert_not_null(g->slow_state);
                count = g->slow_state->policy.count;
                cr_assert_eq(count, 3);
                arm(FOP_READ, files[f], EIO, 1, SHORT_NONE);
                cr_expect_eq(mg_guard_report(g, &rep), -EIO, "%s", mg_cgfile_name(files[f]));
                cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "%s: the failed read is reported",
                             mg_cgfile_name(files[f]));
                cr_expect_eq(g->slow_state->policy.count, count, "%s: the window was cleared",
                             mg_cgfile_name(files[f]));
                disarm();
                at_limit();
                cr_expect_eq(tick(g), 0);
                cr_expect_eq(g->slow_state->policy.count, count + 1);
                mg_guard_free(g);
        }
}

Test(faults, reads_transient_and_persistent) {
        static const int times[] = { 1, 3, MG_EINTR_RETRIES, PERSISTENT };
        for (size_t f = 0; f < N(read_files); f++)
                for (size_t e = 0; e < N(errnos); e++)
                        for (size_t t = 0; t < N(times); t++)
                                run_read_fault(read_files[f], errnos[e], times[t]);
}

/* Short reads: what a pread that returned fewer bytes leaves in the buffer
 * must never read as a (smaller, larger, or missing) value. */
static void run_short_read(int file, enum shortmode sm, int times) {
        static const char *const modes[] = { "", "mid-line", "at a line boundary", "empty" };
        mg_guard *g = fresh();
        const char *name = mg_cgfile_name((enum mg_cgfile) file);

        /* warm up: a few good slow ticks, so the guard knows the files */
        for (int i = 0; i < 3; i++) {
                at_limit();
                (void) tick(g);
        }
        arm(FOP_READ, file, 0, times, sm);
        for (int i = 0; i < 12; i++) {
                at_limit();
                (void) tick(g);
        }
        cr_expect(!killed(), "%s cut %s: killed", name, modes[sm]);
        cr_expect_eq(seen.n[MG_EVENT_KERNEL_OOM], 0, "%s cut %s: a kernel OOM kill made up", name, modes[sm]);
        cr_expect_leq(seen.n[MG_EVENT_ERROR], 1, "%s cut %s: %d error events", name, modes[sm],
                      seen.n[MG_EVENT_ERROR]);
        disarm();
        overshoot();
        (void) tick(g);
        if (!killed())
                (void) tick(g);
        cr_expect(killed(), "%s cut %s: no recovery", name, modes[sm]);
        mg_guard_free(g);
}

Test(faults, short_reads) {
        for (size_t f = 0; f < N(read_files); f++)
                for (int sm = SHORT_MID; sm <= SHORT_EMPTY; sm++) {
                        run_short_read(read_files[f], (enum shortmode) sm, 1);
                        run_short_read(read_files[f], (enum shortmode) sm, PERSISTENT);
                }
}

/* A memory.stat cut at a line boundary still parses; the lines it lost
 * read as 0.  If that sample is the oldest of the window, the working-set
 * restores the actor made long ago look like a loss across the window, and
 * a writer stalled on writeback at its limit (limit events, pressure, no
 * restores) is killed as a stall.  It must be an error instead. */
Test(faults, truncated_stat_is_not_a_working_set_loss) {
        mg_guard *g = new_guard();
        fx.restore_file = 1000; /* restores from long ago, none now */
        fx.mapped = 40 * MG_MIB; /* its cache mapped: the restore rule would judge it */
        fixture_current(&fx, 255 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        for (int i = 1; i <= 40; i++) {
                /* limit events rise, so PSI is read from the second tick */
                fixture_events(&fx, (uint64_t) i * 17, (uint64_t) i * 3, 0);
                fixture_psi(&fx, "memory.pressure", (uint64_t) i * 150 * MG_USEC_PER_MSEC); /* 60 % */
                fixture_psi(&fx, "io.pressure", (uint64_t) i * 150 * MG_USEC_PER_MSEC);
                if (i == 3)
                        arm(FOP_READ, MG_CG_STAT, 0, 1, SHORT_LINE);
                int r = tick(g);
                cr_expect(r == 0 || (i == 3 && r == -EBADMSG), "tick %d: %d", i, r);
        }
        cr_expect(!killed(), "a truncated memory.stat made a stall");
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "the cut read is reported");
        mg_guard_free(g);
}

/* The same for memory.events.local: a cut that loses oom_kill must not make
 * the next full read look like new kernel OOM kills. */
Test(faults, truncated_events_are_not_kernel_ooms) {
        mg_guard *g;
        fixture_events(&fx, 0, 0, 4); /* four OOM kills before the guard */
        g = new_guard();
        fixture_current(&fx, 250 * MG_MIB);
        fixture_stat(&fx, 200 * MG_MIB, 40 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        arm(FOP_READ, MG_CG_EVENTS_LOCAL, 0, 1, SHORT_LINE);
        for (int i = 0; i < 4; i++)
                cr_expect_geq(tick(g), -EBADMSG);
        cr_expect_eq(seen.n[MG_EVENT_KERNEL_OOM], 0, "old OOM kills reported as new");
        mg_guard_free(g);
}

Test(faults, opens_fail_cleanly) {
        static const int files[] = { MG_CG_CURRENT, MG_CG_STAT, MG_CG_EVENTS, MG_CG_HIGH, MG_CG_KILL,
                                     MG_CG_EVENTS_LOCAL, MG_CG_PRESSURE };
        struct mg_guard_options o;
        mg_guard_options_init(&o, 256 * MG_MIB);
        int fds = fixture_open_fds();
        for (size_t f = 0; f < N(files); f++)
                for (size_t e = 0; e < N(errnos); e++)
                        for (int persistent = 0; persistent < 2; persistent++) {
                                mg_guard *g = NULL;
                                bool required = files[f] == MG_CG_CURRENT || files[f] == MG_CG_STAT ||
                                                files[f] == MG_CG_EVENTS;
                                int err = errnos[e];
                                arm(FOP_OPEN, files[f], err, persistent ? PERSISTENT : 1, SHORT_NONE);
                                int r = mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fio, &g);
                                const char *name = mg_cgfile_name((enum mg_cgfile) files[f]);
                                if (err == EINTR && !persistent)
                                        cr_expect_eq(r, 0, "%s: one EINTR on open is retried", name);
                                else if (err == ENOENT && !required)
                                        cr_expect_eq(r, 0, "%s: absent optional file", name);
                                else
                                        cr_expect_eq(r, -err, "%s %s: %d", name, strerror(err), r);
                                cr_expect((r == 0) == (g != NULL));
                                if (g && err == ENOENT && !required && persistent)
                                        cr_expect_lt(g->cg.fd[files[f]], 0);
                                mg_guard_free(g);
                                disarm();
                        }
        cr_expect_eq(fixture_open_fds(), fds, "fds leaked by failed opens");
}

/* The kill: cgroup.kill fails.  Reported once per streak, not each tick;
 * the kill happens once the fault clears; ENODEV ends the guard. */
Test(faults, kill_write_fails) {
        for (size_t e = 0; e < N(errnos); e++) {
                int err = errnos[e];
                mg_guard *g = fresh();
                overshoot();
                arm(FOP_WRITE, MG_CG_KILL, err, PERSISTENT, SHORT_NONE);
                for (int i = 0; i < 10; i++)
                        (void) tick(g);
                cr_expect(!killed());
                if (gone_errno(err)) {
                        cr_expect_eq(seen.n[MG_EVENT_GONE], 1, "kill %s", strerror(err));
                        cr_expect_eq(seen.n[MG_EVENT_ERROR], 0);
                } else {
                        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "kill %s: %d reports in 10 ticks", strerror(err),
                                     seen.n[MG_EVENT_ERROR]);
                        cr_expect_eq(seen.last_error, -err);
                }
                disarm();
                int r = tick(g);
                cr_expect_eq(r, gone_errno(err) ? -ENODEV : 1, "kill %s: after the fault %d", strerror(err), r);
                cr_expect_eq(killed(), !gone_errno(err));
                mg_guard_free(g);
        }
}

/* The pidfd fallback (no cgroup.kill): cgroup.procs cannot be read. */
Test(faults, fallback_kill_read_fails) {
        fixture_remove(&fx, "cgroup.kill");
        mg_guard *g = new_guard();
        overshoot();
        arm(FOP_READ, MG_CG_PROCS, EIO, PERSISTENT, SHORT_NONE);
        for (int i = 0; i < 10; i++)
                cr_expect_eq(tick(g), -EIO);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "%d reports", seen.n[MG_EVENT_ERROR]);
        disarm();
        cr_expect_eq(tick(g), 1, "the fallback kill works once cgroup.procs reads");
        mg_guard_free(g);
}

/* The fallback's verdicts for the members 101 and 102 of the tests below. */
static int fallback_errno;
static int open_102_fails(long pid) {
        return pid == 102 ? fallback_errno : 0;
}
static int signal_102_fails(long pid) {
        return pid == 102 ? fallback_errno : 0;
}

static bool signalled(long pid) {
        for (unsigned i = 0; i < pk.n_signalled; i++)
                if (pk.signalled[i] == pid)
                        return true;
        return false;
}

/* One kill of the fallback on the fixture tree, without a guard. */
static int fallback_kill(enum mg_kill_method *ret_method) {
        struct mg_cgroup cg;
        int r;
        cr_assert_eq(mg_cgroup_open(&cg, fx.dir, MG_CGROUP_ANY_FS, &fio), 0);
        cr_assert_lt(cg.fd[MG_CG_KILL], 0, "the fixture still has cgroup.kill");
        r = mg_cgroup_kill(&cg, ret_method);
        mg_cgroup_close(&cg);
        return r;
}

/* A member the fallback could not signal: pidfd_open failing with anything
 * but ESRCH (EMFILE, ENFILE: out of fds; ENOSYS: before 5.3, or a seccomp
 * filter; EPERM, ENOMEM), or pidfd_send_signal refused (EPERM: another
 * user's process, an LSM) means that member lives on.  The kill fails with
 * that errno; the guard reports it once per streak, delivers no kill record
 * (nothing says the cgroup is being emptied), and kills once the cause
 * clears. */
static void run_fallback_fails(int (**hook)(long), int err) {
        enum mg_kill_method method = 0;
        mg_guard *g = fresh();
        const char *how = hook == &pk.on_open ? "pidfd_open" : "pidfd_send_signal";

        fixture_remove(&fx, "cgroup.kill");
        fixture_write(&fx, "cgroup.procs", "101\n102\n");
        mg_guard_free(g);
        g = new_guard();
        fallback_errno = err;
        *hook = hook == &pk.on_open ? open_102_fails : signal_102_fails;

        cr_expect_eq(fallback_kill(&method), -err, "%s %s", how, strerror(err));
        cr_expect(signalled(101), "%s %s: the member that could be signalled was not", how, strerror(err));
        cr_expect_not(signalled(102));

        overshoot();
        for (int i = 0; i < 6; i++)
                cr_expect_eq(tick(g), -err, "%s %s: tick %d", how, strerror(err), i);
        cr_expect_not(mg_guard_is_killing(g), "%s %s: a failed kill taken for a kill", how, strerror(err));
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "%s %s: %d reports", how, strerror(err), seen.n[MG_EVENT_ERROR]);
        cr_expect_eq(seen.last_error, -err);
        cr_expect(seen.last_what && strcmp(seen.last_what, "kill") == 0, "what: %s", seen.last_what);
        /* 101 died, 102 lives on: whatever cgroup.events says, no record */
        fixture_write(&fx, "cgroup.procs", "102\n");
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        for (int i = 0; i < 3; i++)
                (void) tick(g);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 0, "%s %s: a kill record for a failed kill", how, strerror(err));

        *hook = NULL;
        fixture_write(&fx, "cgroup.events", "populated 1\nfrozen 0\n");
        cr_expect_eq(tick(g), 1, "%s %s: the kill once the cause cleared", how, strerror(err));
        cr_expect(signalled(102));
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        (void) tick(g);
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.method, MG_KILL_PIDFD);
        mg_guard_free(g);
}

Test(faults, fallback_kill_pidfd_open_fails) {
        static const int errs[] = { EMFILE, ENFILE, ENOSYS, EPERM, ENOMEM, EINVAL };
        for (size_t e = 0; e < N(errs); e++)
                run_fallback_fails(&pk.on_open, errs[e]);
}

Test(faults, fallback_kill_signal_refused) {
        static const int errs[] = { EPERM, EINVAL, ENOMEM };
        for (size_t e = 0; e < N(errs); e++)
                run_fallback_fails(&pk.on_signal, errs[e]);
}

/* ESRCH: the member exited between the read of cgroup.procs and its
 * pidfd_open, or between that and the signal.  A round in which every
 * member turned out gone is a kill that worked. */
static int esrch(long pid) {
        (void) pid;
        return ESRCH;
}

Test(faults, fallback_kill_members_gone) {
        enum mg_kill_method method = 0;
        fixture_remove(&fx, "cgroup.kill");
        fixture_write(&fx, "cgroup.procs", "101\n102\n");
        pk.on_open = esrch;
        cr_expect_eq(fallback_kill(&method), 1);
        cr_expect_eq(method, MG_KILL_PIDFD);
        cr_expect_eq(pk.opens, 2);
        pk.on_open = NULL;
        pk.on_signal = esrch;
        cr_expect_eq(fallback_kill(&method), 1);
        cr_expect_eq(pk.n_signalled, 0);
        /* one gone, one signalled */
        pk.on_signal = NULL;
        pk.on_open = open_102_fails;
        fallback_errno = ESRCH;
        cr_expect_eq(fallback_kill(&method), 1);
        cr_expect(signalled(101));

        mg_guard *g = new_guard();
        pk.on_open = esrch;
        overshoot();
        cr_expect_eq(tick(g), 1);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 0);
        mg_guard_free(g);
}

/*
 * The re-read of cgroup.procs that confirms a pinned pid is still a member
 * compares whole lines.  Member 12 exits after the first read, and an
 * outside process gets pid 12 before pidfd_open pins it; meanwhile the
 * cgroup grew, so the re-read fills its 4 KiB buffer and ends in "12", the
 * first two digits of member 123.  That is no line "12": the pinned process
 * is not signalled.
 */
static int member_12_recycled(long pid) {
        char list[8192];
        size_t n = 0;
        if (pid != 12)
                return ESRCH; /* the others below are dying */
        /* 681 lines of 6 bytes, one of 7: "123\n" starts at byte 4093, and
         * a read of 4095 bytes ends in "12" */
        for (int i = 0; i < 681; i++)
                n += (size_t) snprintf(list + n, sizeof(list) - n, "%d\n", 10000 + i);
        n += (size_t) snprintf(list + n, sizeof(list) - n, "100000\n123\n");
        cr_assert_eq(n, 4097);
        fixture_write(&fx, "cgroup.procs", list);
        return 0;
}

Test(faults, fallback_kill_whole_lines_only) {
        enum mg_kill_method method = 0;
        fixture_remove(&fx, "cgroup.kill");
        fixture_write(&fx, "cgroup.procs", "12\n");
        pk.on_open = member_12_recycled;
        cr_expect_eq(fallback_kill(&method), 1);
        cr_expect_eq(pk.opens, 1, "pid 12 pinned, nothing else to do");
        cr_expect_not(signalled(12), "signalled the outside process that got pid 12");
        cr_expect_eq(pk.n_signalled, 0);
}

/* cgroup.events cannot be read, before the kill and after it: a confirmed
 * overshoot is acted on all the same (an unreadable "populated" is not
 * taken for an empty cgroup), the guard still gives up after kill_wait and
 * delivers the record (timed out), instead of waiting for ever; the error
 * is reported once. */
Test(faults, killing_events_unreadable) {
        mg_guard *g = new_guard();
        overshoot();
        arm(FOP_READ, MG_CG_EVENTS, EIO, PERSISTENT, SHORT_NONE);
        cr_expect_eq(tick(g), 1);
        cr_expect(killed());
        for (int i = 0; i < 12; i++)
                (void) tick(g); /* 3 s > kill_wait (2 s) */
        cr_expect_eq(seen.n[MG_EVENT_KILL], 1, "no kill record while cgroup.events fails");
        cr_expect(seen.kill.empty_timed_out);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1);
        cr_expect_not(mg_guard_is_killing(g));
        mg_guard_free(g);
}

/* Lend: the read of memory.high and the write that raises it. */
Test(faults, lend_begin_fails_cleanly) {
        uint64_t lend = 0;
        for (size_t e = 0; e < N(errnos); e++)
                for (int op = FOP_READ; op <= FOP_WRITE; op++) {
                        int err = errnos[e];
                        mg_guard *g = fresh();
                        fixture_write(&fx, "memory.high", "241172480\n");
                        arm((enum fop) op, MG_CG_HIGH, err, PERSISTENT, SHORT_NONE);
                        int r = mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend);
                        const char *what = op == FOP_READ ? "read" : "write";
                        cr_expect_eq(r, gone_errno(err) ? -ENODEV : -err, "lend %s %s: %d", what, strerror(err), r);
                        cr_expect_not(mg_guard_is_lent(g));
                        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480\n", "memory.high changed");
                        char rec[256];
                        cr_expect_lt(getxattr(fx.dir, "user.memguard.lend", rec, sizeof(rec)), 0,
                                     "a lend record left behind (%s %s)", what, strerror(err));
                        cr_expect_eq(seen.n[MG_EVENT_GONE], gone_errno(err) ? 1 : 0);
                        disarm();
                        if (!gone_errno(err)) {
                                cr_expect_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend), 0, "lend after the fault");
                                cr_expect_eq(mg_guard_lend_end(g, lend), 0);
                                cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
                        }
                        mg_guard_free(g);
                }
}

/* A short read of memory.high must not become the value written back. */
Test(faults, lend_short_read_of_high) {
        uint64_t lend = 0;
        for (int sm = SHORT_MID; sm <= SHORT_EMPTY; sm++) {
                mg_guard *g = fresh();
                fixture_write(&fx, "memory.high", "241172480\n");
                arm(FOP_READ, MG_CG_HIGH, 0, 1, (enum shortmode) sm);
                int r = mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend);
                cr_expect_eq(r, -EBADMSG, "cut %d: lend_begin %d", sm, r);
                cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480\n");
                if (r == 0) {
                        (void) mg_guard_lend_end(g, lend);
                        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480", "restored a cut value");
                }
                mg_guard_free(g);
        }
}

Test(faults, lend_end_write_fails) {
        uint64_t lend = 0;
        for (size_t e = 0; e < N(errnos); e++) {
                int err = errnos[e];
                mg_guard *g = fresh();
                fixture_write(&fx, "memory.high", "241172480\n");
                cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
                arm(FOP_WRITE, MG_CG_HIGH, err, PERSISTENT, SHORT_NONE);
                int r = mg_guard_lend_end(g, lend);
                cr_expect_eq(r, gone_errno(err) ? -ENODEV : -err, "lend_end %s: %d", strerror(err), r);
                disarm();
                if (gone_errno(err)) {
                        cr_expect_not(mg_guard_is_lent(g));
                        cr_expect_eq(seen.n[MG_EVENT_GONE], 1);
                } else {
                        cr_expect(mg_guard_is_lent(g), "the lend stays open until memory.high is back");
                        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
                        cr_expect_eq(mg_guard_lend_end(g, lend), 0, "lend_end after the fault");
                        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
                }
                mg_guard_free(g);
        }
}

/* The end reads memory.high before it restores (is it still the lend's?):
 * a failing read leaves the lend open and memory.high as it is. */
Test(faults, lend_end_read_fails) {
        uint64_t lend = 0;
        for (size_t e = 0; e < N(errnos); e++) {
                int err = errnos[e];
                mg_guard *g = fresh();
                fixture_write(&fx, "memory.high", "241172480\n");
                cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
                arm(FOP_READ, MG_CG_HIGH, err, PERSISTENT, SHORT_NONE);
                int r = mg_guard_lend_end(g, lend);
                cr_expect_eq(r, gone_errno(err) ? -ENODEV : -err, "lend_end %s: %d", strerror(err), r);
                disarm();
                cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
                if (gone_errno(err)) {
                        cr_expect_not(mg_guard_is_lent(g));
                } else {
                        cr_expect(mg_guard_is_lent(g), "the lend stays open until memory.high is read");
                        cr_expect_eq(mg_guard_lend_end(g, lend), 0, "lend_end after the fault");
                        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
                }
                mg_guard_free(g);
        }
}

/* The deadline's restore fails for a while: reported once, retried each
 * tick, kills stay paused until memory.high is back, then the overshoot is
 * acted on. */
Test(faults, lend_deadline_restore_fails) {
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 1000 * MG_USEC_PER_MSEC, NULL), 0);
        arm(FOP_WRITE, MG_CG_HIGH, EIO, PERSISTENT, SHORT_NONE);
        overshoot();
        for (int i = 0; i < 12; i++)
                (void) tick(g);
        cr_expect(!killed(), "kills are paused while the lend is open");
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "%d reports of the failing restore", seen.n[MG_EVENT_ERROR]);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 0);
        disarm();
        (void) tick(g);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        if (!killed())
                (void) tick(g);
        cr_expect(killed(), "the overshoot after the restore");
        mg_guard_free(g);
}

/* ---- the lend record ------------------------------------------------------------
 * user.memguard.lend on the actor's directory: written before memory.high
 * is raised, removed after it is restored; a lend whose process died is
 * ended by mg_guard_recover() or taken over by the next mg_guard_new(). */

TestSuite(lend, .init = setup, .fini = teardown);

static char record[MG_LEND_RECORD_MAX + 1];
static bool record_at_raise;

/* Skips where the fixture's file system has no user xattrs (tmpfs before
 * 6.6); the fixture is on ext4 or a newer tmpfs otherwise. */
static void need_user_xattrs(void) {
        int r = fixture_user_xattrs(fx.dir);

        cr_assert_geq(r, 0, "setxattr: %s", strerror(-r));
        if (r == 0)
                cr_skip_test("%s has no user xattrs (tmpfs before 6.6?): lend records cannot be tested here", fx.dir);
}

static ssize_t get_record(void) {
        return fixture_get_xattr(fx.dir, MG_LEND_XATTR, record, sizeof(record));
}

/* A lender that dies mid-lend: a child lends and exits without ending it. */
static void lend_and_crash(uint64_t extra_bytes, uint64_t deadline_usec) {
        int st;
        pid_t pid = fork();
        cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
        if (pid == 0) {
                struct mg_guard_options o;
                mg_guard *g;
                int r = mg_guard_options_init(&o, 256 * MG_MIB);
                if (r == 0)
                        r = mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fio, &g);
                if (r == 0)
                        r = mg_guard_lend_begin(g, extra_bytes, deadline_usec, NULL);
                _exit(r == 0 ? 0 : 1);
        }
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child could not lend (status %d)", st);
}

/* pwrite that notes whether the record exists when memory.high is raised */
static ssize_t pwrite_checks_record(void *ud, int fd, const void *buf, size_t len, off_t off) {
        if (file_of_fd(fd) == MG_CG_HIGH && len >= 3 && memcmp(buf, "max", 3) == 0)
                record_at_raise = get_record() > 0;
        return ft_pwrite(ud, fd, buf, len, off);
}

Test(lend, record_before_raise_removed_after_restore) {
        uint64_t lend = 0;
        need_user_xattrs();
        fio.pwrite = pwrite_checks_record;
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        uint64_t bt = mg_boottime_usec();
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 60 * MG_USEC_PER_SEC, &lend), 0);
        cr_expect(record_at_raise, "memory.high was raised before the record existed");
        cr_assert_gt(get_record(), 0);
        struct mg_lend_record rec;
        cr_assert_eq(mg_lend_record_parse(record, strlen(record), &rec), 0, "%s", record);
        cr_expect_str_eq(rec.old_high, "241172480");
        cr_expect_eq(rec.old_high_bytes, 241172480);
        cr_expect_eq(rec.pid, (uint64_t) getpid());
        cr_expect_geq(rec.deadline_boottime_usec, bt + 60 * MG_USEC_PER_SEC);
        cr_expect_leq(rec.deadline_boottime_usec, mg_boottime_usec() + 60 * MG_USEC_PER_SEC);
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_lt(get_record(), 0, "record left after the lend: %s", record);
        cr_expect_eq(errno, ENODATA);
        /* the deadline's restore removes it too */
        cr_assert_eq(mg_guard_lend_begin(g, 64 * MG_MIB, 1000 * MG_USEC_PER_MSEC, &lend), 0);
        cr_expect_gt(get_record(), 0);
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(tick(g), 1);
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_lt(get_record(), 0);
        mg_guard_free(g);
}

/* The process that lent is gone (a child that exits mid-lend): memory.high
 * is still raised; recover restores the exact value and removes the
 * record; a second recover finds nothing. */
Test(lend, recover_after_a_crash) {
        need_user_xattrs();
        fixture_write(&fx, "memory.high", "241172480\n");
        lend_and_crash(MG_UNLIMITED, 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_expect_eq(mg_guard_recover_internal(fx.dir, MG_RECOVER_EXPIRED, MG_CGROUP_ANY_FS, &fio), -EBUSY,
                     "deadline ahead: a live lender may still end it");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_lt(get_record(), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), 0, "no record: 0");
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 4, MG_CGROUP_ANY_FS, &fio), -EINVAL);
        /* an expired record, with MG_RECOVER_EXPIRED */
        const char *old = "memguard-lend 1 high=300000000 deadline_boottime_usec=1 pid=1\n";
        fixture_write(&fx, "memory.high", "max\n");
        cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, old, strlen(old), 0), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, MG_RECOVER_EXPIRED, MG_CGROUP_ANY_FS, &fio), 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "300000000");
}

/* A record is only as trustworthy as whoever can write the directory's
 * xattrs.  Restoring never raises memory.high; malformed records are
 * reported, never acted on. */
Test(lend, hostile_records) {
        need_user_xattrs();
        static const char *const bad[] = {
                "memguard-lend 1 high=max deadline_boottime_usec=1 pid=1",     /* no newline */
                "memguard-lend 2 high=1 deadline_boottime_usec=1 pid=1\n",     /* version */
                "memguard-lend 1 high=0123 deadline_boottime_usec=1 pid=1\n",  /* leading zero */
                "memguard-lend 1 high=-1 deadline_boottime_usec=1 pid=1\n",
                "memguard-lend 1 high=18446744073709551615 deadline_boottime_usec=1 pid=1\n",
                "memguard-lend 1 high=1 deadline_boottime_usec=max pid=1\n",
                "memguard-lend 1 high=1 pid=1 deadline_boottime_usec=1\n",
                "memguard-lend 1 high=1 deadline_boottime_usec=1 pid=1\nx",
                "memguard-lend 1 high=1\n deadline_boottime_usec=1 pid=1\n",
                "",
        };
        for (size_t i = 0; i < N(bad); i++) {
                struct mg_lend_record rec;
                cr_expect_eq(mg_lend_record_parse(bad[i], strlen(bad[i]), &rec), -EBADMSG, "accepted: %s", bad[i]);
                cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, bad[i], strlen(bad[i]), 0), 0);
                cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), -EBADMSG);
                mg_guard *g = new_guard();
                cr_expect_not(mg_guard_is_lent(g), "adopted a malformed record: %s", bad[i]);
                mg_guard_free(g);
        }
        char big[300];
        memset(big, '1', sizeof(big));
        cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, big, sizeof(big), 0), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), -EBADMSG, "too long");

        /* a record that would raise memory.high: dropped, nothing written */
        const char *raise = "memguard-lend 1 high=max deadline_boottime_usec=1 pid=1\n";
        fixture_write(&fx, "memory.high", "100000000\n");
        cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, raise, strlen(raise), 0), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "100000000\n");
        cr_expect_lt(get_record(), 0, "the record is removed");

        /* the same record adopted by a new guard: dropped at its deadline */
        cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, raise, strlen(raise), 0), 0);
        mg_guard *g = new_guard();
        cr_expect(mg_guard_is_lent(g));
        (void) tick(g);
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "100000000\n");
        cr_expect_lt(get_record(), 0);
        mg_guard_free(g);
}

/* mg_guard_new() does not ignore a record: it takes the lend over, kills
 * paused, and restores memory.high at the record's deadline, cut to its own
 * lend deadline (a forged record cannot pause kills for long). */
Test(lend, new_guard_takes_the_lend_over) {
        need_user_xattrs();
        char text[MG_LEND_RECORD_MAX + 1];
        struct mg_lend_record rec = { .old_high = "241172480", .old_high_bytes = 241172480, .pid = 4242 };
        rec.deadline_boottime_usec = mg_boottime_usec() + 3600 * MG_USEC_PER_SEC; /* an hour */
        cr_assert_gt(mg_lend_record_format(&rec, text, sizeof(text)), 0);
        cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, text, strlen(text), 0), 0);
        fixture_write(&fx, "memory.high", "max\n");

        mg_guard *g = new_guard();
        cr_assert(mg_guard_is_lent(g));
        /* cut to 15 s (less the moment between mg_guard_new and the clock switch) */
        cr_expect_leq(g->lend.info.deadline_usec - fx.now_usec, g->opt.lend_deadline_usec);
        cr_expect_gt(g->lend.info.deadline_usec - fx.now_usec, g->opt.lend_deadline_usec - 200 * MG_USEC_PER_MSEC);
        cr_expect_eq(mg_guard_lend_begin(g, 1, 0, NULL), -EBUSY);
        overshoot();
        for (int i = 0; i < 59; i++)
                cr_expect_eq(tick(g), 0, "tick %d", i);
        cr_expect(!killed(), "kills are paused during the adopted lend");
        cr_expect_eq(tick(g), 1, "restored at the deadline");
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_lt(get_record(), 0);
        (void) tick(g);
        cr_expect(killed(), "the overshoot is acted on after the lend");
        mg_guard_free(g);

        /* lend_end on an adopted lend restores at once */
        fixture_write(&fx, "cgroup.kill", "");
        fixture_write(&fx, "memory.high", "max\n");
        cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, text, strlen(text), 0), 0);
        g = new_guard();
        cr_assert(mg_guard_is_lent(g));
        /* no one was given its id: it is the open lend's */
        cr_expect_eq(mg_guard_lend_end(g, mg_guard_get_lend_id(g) + 1), -ESTALE);
        cr_expect(mg_guard_is_lent(g));
        cr_expect_neq(mg_guard_get_lend_id(g), 0);
        cr_expect_eq(mg_guard_lend_end(g, mg_guard_get_lend_id(g)), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_lt(get_record(), 0);
        mg_guard_free(g);
}

/* On a directory someone other than root and this user can write (a
 * delegated cgroup, or one with a group or other write bit), a record may
 * be the tenant's own: no guard takes it over (kills go on), recovery
 * leaves it alone (-EPERM), and a lend there writes none. */
Test(lend, a_record_its_tenant_can_write_decides_nothing) {
        need_user_xattrs();
        char text[MG_LEND_RECORD_MAX + 1];
        struct mg_lend_record rec = { .old_high = "1048576", .old_high_bytes = 1048576, .pid = 4242 };
        struct stat st;
        rec.deadline_boottime_usec = mg_boottime_usec() + 3600 * MG_USEC_PER_SEC;
        cr_assert_gt(mg_lend_record_format(&rec, text, sizeof(text)), 0);
        cr_assert_eq(setxattr(fx.dir, MG_LEND_XATTR, text, strlen(text), 0), 0);
        fixture_write(&fx, "memory.high", "max\n");
        cr_assert_eq(stat(fx.dir, &st), 0);
        cr_assert_eq(chmod(fx.dir, (st.st_mode & 07777) | S_IWOTH), 0);

        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), -EPERM);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max\n", "the tenant's record restored memory.high");
        mg_guard *g = new_guard();
        cr_expect_not(mg_guard_is_lent(g), "the tenant's record was taken over");
        overshoot();
        (void) tick(g);
        cr_expect(killed(), "kills are not paused by it");
        mg_guard_free(g);

        /* a lend made there works, unrecorded */
        cr_assert_eq(removexattr(fx.dir, MG_LEND_XATTR), 0);
        fixture_write(&fx, "cgroup.kill", "");
        fixture_current(&fx, 10 * MG_MIB);
        g = new_guard();
        uint64_t id;
        cr_expect_eq(mg_guard_lend_begin(g, 1 << 20, 0, &id), 0);
        cr_expect_lt(get_record(), 0, "a record written where the tenant can forge one");
        cr_expect_eq(mg_guard_lend_end(g, id), 0);
        mg_guard_free(g);
        cr_assert_eq(chmod(fx.dir, st.st_mode & 07777), 0);
}

/* A lend taken over from a record: what that lend wrote is not recorded,
 * so memory.high as found at mg_guard_new() stands for it.  Changed from
 * outside after that (a resize), it is left as found at the end, and the
 * lend ends all the same: the record goes. */
Test(lend, taken_over_lend_keeps_an_outside_change) {
        need_user_xattrs();
        fixture_write(&fx, "memory.high", "241172480\n");
        lend_and_crash(MG_UNLIMITED, 60 * MG_USEC_PER_SEC);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        mg_guard *g = new_guard();
        cr_assert(mg_guard_is_lent(g));
        fixture_write(&fx, "memory.high", "268435456\n");
        cr_expect_eq(mg_guard_lend_end(g, mg_guard_get_lend_id(g)), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "268435456\n", "the resize was overwritten");
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_lt(get_record(), 0, "the record stays after the lend ended");
        cr_expect_eq(seen.n[MG_EVENT_LEND_END], 1);
        mg_guard_free(g);

        /* at its deadline likewise */
        fixture_write(&fx, "memory.high", "241172480\n");
        lend_and_crash(MG_UNLIMITED, 1 * MG_USEC_PER_SEC);
        g = new_guard();
        cr_assert(mg_guard_is_lent(g));
        fixture_write(&fx, "memory.high", "268435456\n");
        for (int i = 0; i < 8 && mg_guard_is_lent(g); i++)
                (void) tick(g);
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_eq(seen.n[MG_EVENT_LEND_EXPIRED], 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "268435456\n");
        cr_expect_lt(get_record(), 0);
        mg_guard_free(g);
}

/* mg_guard_free() of a guard that lent ends the lend: memory.high back,
 * the record removed.  Best effort: a restore that fails leaves the record
 * for mg_guard_recover().  A lend the guard took over from a record is left
 * as found, record and all: its lender may still be running (`memguard
 * stat` makes a guard for one read, and the kernel scenario lend-crash
 * frees a guard that took a lend over before it recovers). */
Test(lend, free_ends_its_own_lend) {
        need_user_xattrs();
        mg_guard *g = new_guard();
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, NULL), 0);
        cr_expect_gt(get_record(), 0);
        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect_lt(get_record(), 0, "record left after mg_guard_free: %s", record);

        g = new_guard();
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, NULL), 0);
        arm(FOP_WRITE, MG_CG_HIGH, EIO, PERSISTENT, SHORT_NONE);
        mg_guard_free(g);
        disarm();
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_expect_gt(get_record(), 0, "the record went with memory.high still raised");
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");

        lend_and_crash(MG_UNLIMITED, 60 * MG_USEC_PER_SEC);
        g = new_guard();
        cr_assert(mg_guard_is_lent(g));
        mg_guard_free(g);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max", "ended a lend it took over");
        cr_expect_gt(get_record(), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), 1);
}

/* One lend per cgroup, whichever process makes it: XATTR_CREATE. */
Test(lend, one_lend_per_cgroup) {
        uint64_t lend_a = 0, lend_b = 0;
        need_user_xattrs();
        mg_guard *a = new_guard(), *b = new_guard();
        cr_assert_eq(mg_guard_lend_begin(a, 64 * MG_MIB, 0, &lend_a), 0);
        cr_expect_eq(mg_guard_lend_begin(b, 64 * MG_MIB, 0, NULL), -EBUSY);
        cr_expect_not(mg_guard_is_lent(b));
        cr_assert_eq(mg_guard_lend_end(a, lend_a), 0);
        cr_expect_eq(mg_guard_lend_begin(b, 64 * MG_MIB, 0, &lend_b), 0);
        cr_expect_eq(mg_guard_lend_end(b, lend_b), 0);
        mg_guard_free(a);
        mg_guard_free(b);
}

/* The record's own operations fail. */
Test(lend, record_faults) {
        uint64_t lend = 0;
        need_user_xattrs();
        static const int errs[] = { EIO, ENOMEM, ENOSPC, EACCES, EINTR };
        for (size_t e = 0; e < N(errs); e++) {
                mg_guard *g = fresh();
                fixture_write(&fx, "memory.high", "241172480\n");
                arm(FOP_SETXATTR, ANY_FILE, errs[e], 1, SHORT_NONE);
                cr_expect_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, NULL), -errs[e], "setxattr %s", strerror(errs[e]));
                cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480\n", "raised without a record");
                cr_expect_not(mg_guard_is_lent(g));
                mg_guard_free(g);
        }
        /* no user xattrs (cgroupfs before 5.7): the lend goes on, unrecorded */
        mg_guard *g = fresh();
        fixture_write(&fx, "memory.high", "241172480\n");
        arm(FOP_SETXATTR, ANY_FILE, EOPNOTSUPP, PERSISTENT, SHORT_NONE);
        cr_expect_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
        cr_expect_lt(get_record(), 0);
        cr_expect_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        disarm();
        /* the record cannot be removed: the lend still ends; a later
         * recover writes the same value again, harmlessly */
        cr_assert_eq(mg_guard_lend_begin(g, MG_UNLIMITED, 0, &lend), 0);
        arm(FOP_REMOVEXATTR, ANY_FILE, EIO, PERSISTENT, SHORT_NONE);
        cr_expect_eq(mg_guard_lend_end(g, lend), 0);
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        disarm();
        cr_expect_gt(get_record(), 0);
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), 1);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        /* the record cannot be read at mg_guard_new: logged, not adopted;
         * recover reports the error */
        mg_guard_free(g);
        lend_and_crash(MG_UNLIMITED, 0);
        arm(FOP_GETXATTR, ANY_FILE, EIO, PERSISTENT, SHORT_NONE);
        g = new_guard();
        cr_expect_not(mg_guard_is_lent(g));
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), -EIO);
        disarm();
        cr_expect_eq(mg_guard_recover_internal(fx.dir, 0, MG_CGROUP_ANY_FS, &fio), 1);
        mg_guard_free(g);
}

Test(lend, record_format_round_trip) {
        struct mg_lend_record r = { .old_high = "max", .old_high_bytes = MG_UNLIMITED,
                                    .deadline_boottime_usec = UINT64_MAX, .pid = 4194304 }, back;
        char buf[MG_LEND_RECORD_MAX + 1];
        int n = mg_lend_record_format(&r, buf, sizeof(buf));
        cr_assert_gt(n, 0);
        cr_assert_eq(mg_lend_record_parse(buf, (size_t) n, &back), 0, "%s", buf);
        cr_expect_str_eq(back.old_high, "max");
        cr_expect_eq(back.deadline_boottime_usec, UINT64_MAX);
        strcpy(r.old_high, "18446744073709551614");
        r.old_high_bytes = UINT64_MAX - 1;
        n = mg_lend_record_format(&r, buf, sizeof(buf));
        cr_assert_gt(n, 0);
        cr_expect_leq(n, MG_LEND_RECORD_MAX, "the longest record fits");
        cr_assert_eq(mg_lend_record_parse(buf, (size_t) n, &back), 0);
        cr_expect_eq(back.old_high_bytes, UINT64_MAX - 1);
        cr_expect_eq(mg_lend_record_format(&r, buf, 20), -ENOBUFS);
}

/* ---- fds: a guard far below its limit keeps two ------------------------------ */

TestSuite(fds, .init = setup, .fini = teardown);

/* Below for half a stall window: the slow path's state goes back, and with
 * it the files only the slow path reads. */
static void below_for_a_while(mg_guard *g) {
        fixture_current(&fx, 100 * MG_MIB);
        for (uint64_t t = 0; t <= g->params.stall_window_usec / 2 + 250 * MG_USEC_PER_MSEC; t += 250 * MG_USEC_PER_MSEC)
                cr_expect_eq(tick(g), 0);
}

/* A guard alone reads nothing but memory.current far below its limit, and
 * keeps nothing else open.  (In a set on a real cgroup, memory.events.local
 * stays open too, for the set's watch: the kernel suite's fds check.) */
Test(fds, fast_path_keeps_memory_current) {
        int base = fixture_open_fds();
        mg_guard *g = new_guard();
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1);
        cr_expect_geq(g->cg.fd[MG_CG_CURRENT], 0);
        cr_expect_eq(fixture_open_fds(), base + 1, "the process holds what the guard says");
        /* the periodic re-read of the limits opens them and closes them again */
        const int period = (int) (MG_LIMITS_REREAD_USEC / (250 * MG_USEC_PER_MSEC));
        fixture_current(&fx, 100 * MG_MIB);
        for (int i = 0; i < period + 2; i++)
                cr_expect_eq(tick(g), 0);
        cr_expect_geq(fx.reads_of[MG_CG_MAX], 1, "memory.max re-read");
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1);

        at_limit();
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1 + MG_CG_N, "at the limit: the directory and every file");
        cr_expect_eq(fixture_open_fds(), base + 1 + MG_CG_N);
        below_for_a_while(g);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1, "back below: trimmed");
        cr_expect_eq(fixture_open_fds(), base + 1);
        cr_expect_eq(seen.n[MG_EVENT_ERROR] + seen.n[MG_EVENT_KILL] + seen.n[MG_EVENT_GONE], 0);
        mg_guard_free(g);
        cr_expect_eq(fixture_open_fds(), base);
}

/* In a set whose epoll cannot watch memory.events.local (a fixture's is a
 * plain file: EPERM), the guard does not keep it either; at its limit and
 * back the same as alone. */
Test(fds, set_guard_keeps_what_its_set_watches) {
        mg_set *s;
        mg_guard *g;
        struct mg_guard_options o;
        cr_assert_eq(mg_set_new(NULL, &s), 0);
        int base = fixture_open_fds();
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_event;
        cr_assert_eq(mg_set_add_internal(s, fx.dir, &o, MG_CGROUP_ANY_FS, &fio, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        cr_expect_null(g->own_bufs, "a set's guard reads into the set's buffers, from the start");
        fixture_current(&fx, 100 * MG_MIB);
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1);
        cr_expect_eq(fixture_open_fds(), base + 1);
        at_limit();
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1 + MG_CG_N);
        below_for_a_while(g);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1);
        mg_set_free(s);
}

/* No free fd when the actor reaches its limit: no decision (it needs
 * memory.stat), an error once, never a kill; the overshoot is killed once
 * the files open. */
Test(fds, slow_path_files_that_cannot_open) {
        mg_guard *g = new_guard();
        overshoot();
        arm(FOP_OPEN, ANY_FILE, EMFILE, PERSISTENT, SHORT_NONE);
        for (int i = 0; i < 4; i++)
                cr_expect_eq(tick(g), -EMFILE);
        cr_expect(!killed());
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "once per streak: %d", seen.n[MG_EVENT_ERROR]);
        cr_expect_eq(seen.last_error, -EMFILE);
        cr_expect_eq(seen.n[MG_EVENT_GONE], 0);
        disarm();
        cr_expect_eq(tick(g), 1);
        cr_expect(killed());
        mg_guard_free(g);
}

/* What the kill writes was opened when the guard reached its limit (and
 * cgroup.kill first): with no fd left, the kill and its record still happen. */
Test(fds, a_kill_needs_no_free_fd) {
        mg_guard *g = new_guard();
        at_limit();
        cr_expect_eq(tick(g), 0);
        arm(FOP_OPEN, ANY_FILE, EMFILE, PERSISTENT, SHORT_NONE);
        overshoot();
        cr_expect_eq(tick(g), 1);
        cr_expect(killed());
        cr_expect_eq(flt.hits, 0, "an open was tried for the kill");
        cr_expect(mg_guard_is_killing(g), "waiting for the cgroup to empty, the record filled");
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 0);
        disarm();
        mg_guard_free(g);
}

/* A trimmed guard finds its directory again by path.  Another cgroup made
 * at that path is not its own (not killed for its overshoot); its own,
 * removed, is gone. */
Test(fds, a_cgroup_made_again_at_the_path_is_not_the_guards) {
        char away[sizeof(fx.dir) + 8];
        mg_guard *g = new_guard();
        snprintf(away, sizeof(away), "%s.away", fx.dir);
        overshoot(); /* of its own, which moves away */
        cr_assert_eq(rename(fx.dir, away), 0);
        cr_assert_eq(mkdir(fx.dir, 0700), 0);
        cr_assert_eq(fixture_tree_make(fx.dir, NULL), 0);
        overshoot(); /* of the new one */
        int r = tick(g);
        cr_expect_lt(r, 0, "tick: %d, errors %d last %d", r, seen.n[MG_EVENT_ERROR], seen.last_error);
        cr_expect(!killed(), "the cgroup that took the path was killed");
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1);
        cr_expect_eq(seen.last_error, -ESTALE);
        cr_expect_eq(seen.n[MG_EVENT_GONE], 0, "its own cgroup still reads");
        /* its own removed: its memory.current reads ENODEV */
        arm(FOP_READ, MG_CG_CURRENT, ENODEV, PERSISTENT, SHORT_NONE);
        cr_expect_eq(tick(g), -ENODEV);
        cr_expect_eq(seen.n[MG_EVENT_GONE], 1);
        cr_expect(!killed());
        disarm();
        mg_guard_free(g);
        cr_expect_eq(fixture_remove_tree(away), 0);
}

/* A lend opens what it and its end need; the first fast tick after it
 * trims again. */
/* A report on a trimmed guard opens what it reads and closes it again: a
 * service reporting on thousands of guards every metrics interval would
 * otherwise hold a dozen fds each until their next fast tick.  One on a
 * guard at its limit leaves its files open for the slow path. */
Test(fds, a_report_closes_what_it_opened) {
        mg_guard *g = new_guard();
        struct mg_report r = { .size = sizeof(r) };
        int base = fixture_open_fds();
        fixture_current(&fx, 100 * MG_MIB);
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(mg_guard_report(g, &r), 0);
        cr_expect_eq(r.verdict, MG_VERDICT_OK);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1, "the report left %u fds open", mg_cgroup_fds_open(&g->cg));
        cr_expect_eq(fixture_open_fds(), base);
        at_limit();
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(mg_guard_report(g, &r), 0);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1 + MG_CG_N, "the slow path's files closed by a report");
        mg_guard_free(g);
}

Test(fds, a_lend_opens_its_files_and_the_end_trims) {
        mg_guard *g = new_guard();
        uint64_t id;
        cr_assert_eq(mg_guard_lend_begin(g, 16 * MG_MIB, 0, &id), 0);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1 + MG_CG_N);
        fixture_current(&fx, 100 * MG_MIB);
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1 + MG_CG_N, "kept while lent");
        cr_expect_eq(mg_guard_lend_end(g, id), 0);
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 1);
        mg_guard_free(g);
}

/* A pressure file hidden (cgroup.pressure 0) while the guard was trimmed:
 * opening again leaves it to its read, which reports it, and the overshoot
 * is killed all the same. */
Test(fds, a_hidden_pressure_file_does_not_stop_the_slow_path) {
        mg_guard *g = new_guard();
        fixture_remove(&fx, "memory.pressure");
        overshoot();
        cr_expect_eq(tick(g), 1);
        cr_expect(killed());
        cr_expect_eq(seen.n[MG_EVENT_GONE], 0);
        cr_expect_eq(seen.n[MG_EVENT_ERROR], 1, "the hidden file reported: %d", seen.n[MG_EVENT_ERROR]);
        mg_guard_free(g);
}

/* A host whose watch of memory.events.local works, as a set's does on a
 * real cgroup (a fixture's plain file cannot be polled). */
static int stub_watch(struct mg_guard_host *h, mg_guard *g, int fd, enum mg_watch what, bool on) {
        (void) h, (void) g, (void) fd, (void) what, (void) on;
        return 0;
}
static void stub_reschedule(struct mg_guard_host *h, mg_guard *g, uint64_t when_usec) {
        (void) h, (void) g, (void) when_usec;
}
static struct mg_slow *stub_slow_get(struct mg_guard_host *h) {
        (void) h;
        return calloc(1, sizeof(struct mg_slow));
}
static void stub_slow_put(struct mg_guard_host *h, struct mg_slow *sl) {
        (void) h;
        free(sl);
}

/* Watched: two fds far below the limit, and no open at all there, the
 * periodic re-read of the kernel limits included (a limit the actor hits
 * wakes the set); at the limit the re-read comes back. */
Test(fds, a_watched_guard_opens_nothing_on_its_fast_path) {
        static char stat_buf[MG_STAT_BUF_SIZE], small_buf[MG_SMALL_BUF_SIZE];
        struct mg_guard_host h = { .watch = stub_watch, .reschedule = stub_reschedule, .slow_get = stub_slow_get,
                                   .slow_put = stub_slow_put, .stat_buf = stat_buf, .small_buf = small_buf };
        mg_guard *g = new_guard();
        mg_guard_attach(g, &h);
        cr_expect(g->events_watched);
        cr_expect_eq(mg_cgroup_fds_open(&g->cg), 2, "memory.current and memory.events.local");
        fixture_current(&fx, 100 * MG_MIB);
        fixture_reset_counts(&fx);
        const int period = (int) (MG_LIMITS_REREAD_USEC / (250 * MG_USEC_PER_MSEC));
        for (int i = 0; i < period + 2; i++)
                cr_expect_eq(tick(g), 0);
        cr_expect_eq(fx.opens, 0, "%u opens on the fast path", fx.opens);
        cr_expect_eq(fx.reads, (unsigned) period + 2, "memory.current alone");
        at_limit();
        cr_expect_eq(tick(g), 0);
        cr_expect(!g->events_watched, "the slow path reads memory.events.local itself");
        cr_expect_eq(fx.reads_of[MG_CG_MAX], 0);
        at_limit();
        cr_expect_eq(tick(g), 0);
        cr_expect_eq(fx.reads_of[MG_CG_MAX], 1, "the limits re-read at the next slow tick, being due");
        cr_expect(mg_guard_detach(g));
        mg_guard_free(g);
}
