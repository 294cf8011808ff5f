/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Least privilege for the thread that runs guards: a seccomp allowlist of
 * what a guard set does once it is running, and with MG_CONFINE_PATHS a
 * Landlock domain that keeps its file access below the cgroup2 mounts and
 * /proc.  The guard holds the power to kill every process of the cgroups it
 * watches and runs next to untrusted tenants; if a parser bug ever let a
 * tenant's bytes run code in it, this is what that code could do
 * (docs/security.md).  A set's restore worker (worker.c) loads the same
 * list on itself when mg_set_new() starts it: it needs nothing the list
 * lacks (pread64, pwrite64, futex, write, and libc's thread exit), and the
 * list needs nothing for it (no clone: the worker exists before the host
 * confines its thread).  It asks for no Landlock domain: it opens no file
 * (the set's thread opens the memory.high it writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memguard/memguard.h"

#define CONFINE_FLAGS ((unsigned) (MG_CONFINE_SUPERVISOR | MG_CONFINE_PATHS))

#if MG_HAVE_SECCOMP
#include <seccomp.h>

#if __has_include(<linux/landlock.h>) && defined(__NR_landlock_create_ruleset)
#define MG_HAVE_LANDLOCK 1
#include <linux/landlock.h>
#endif

/* Grouped by who needs them; names, resolved at run time, so a syscall this
 * architecture or libseccomp lacks is skipped rather than a build error.
 * openat and openat2 have rules of their own (allow_open()). */
static const char *const steady_state[] = {
        /* guards: the files they hold open, opening files below a cgroup
         * directory (PSI triggers at the limit, new guards, recovery) and
         * /proc/PID/stat (the states in an unkillable report); listing a
         * directory, read-only (libc's opendir: openat with O_DIRECTORY,
         * newfstatat, getdents64, close) */
        "pread64", "pwrite64", "read", "write", "writev", "close", "fstatfs", "fstat", "newfstatat", "getdents64",
        /* lends and their records */
        "fgetxattr", "fsetxattr", "fremovexattr",
        /* kills: cgroup.kill is a write; the fallback pins and signals */
        "pidfd_open", "pidfd_send_signal",
        /* the set: one epoll fd, one timerfd; hosts poll it */
        "epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "timerfd_settime", "timerfd_gettime", "poll",
        "ppoll",
        /* clocks (the vDSO usually answers without a syscall) and sleeps */
        "clock_gettime", "gettimeofday", "clock_nanosleep", "nanosleep",
        /* libc: memory, locks, signals returning, leaving */
        "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "futex", "getrandom", "sched_yield",
        "rt_sigreturn", "rt_sigprocmask", "restart_syscall", "getpid", "gettid", "exit", "exit_group",
        /* whose files, besides root's, a guard trusts (mg_writable_by_others) */
        "geteuid",
        /* sanitizer runtimes (ASan, in CI) query it before every noreturn call */
        "sigaltstack",
};

/* MG_CONFINE_SUPERVISOR: a process that started a command in a cgroup of
 * its own waits for it, forwards signals to it, checks the cgroup is still
 * there and removes it. */
static const char *const supervisor[] = {
        "wait4", "waitid", "kill", "rmdir", "access", "faccessat", "faccessat2",
};

static int allow(scmp_filter_ctx ctx, const char *const *names, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int nr = seccomp_syscall_resolve_name(names[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* unknown to this libseccomp */
                int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                /* negative numbers are syscalls this architecture lacks */
                if (r < 0 && nr >= 0)
                        return r;
        }
        return 0;
}

#ifndef SYS_openat2
#define SYS_openat2 437 /* headers before 5.6 */
#endif

/*
 * Opening never creates or truncates a file: nothing a guard opens needs
 * O_CREAT, O_TRUNC or O_TMPFILE (cgroupfs makes no regular files, and each
 * write replaces an interface file's value), while a thread of uid 0 owns
 * root's files and needs no capability to empty them or make new ones.
 * openat with any of them falls to the default action, EPERM, as every
 * refused call does.  O_TMPFILE is __O_TMPFILE | O_DIRECTORY; its own bit
 * tells it from a directory open.
 *
 * openat2 takes its flags in struct open_how, which seccomp cannot read,
 * so it answers ENOSYS: the library then opens below the directory fd with
 * openat(name, O_NOFOLLOW), as on kernels before 5.6 (cgroup.c
 * open_beneath()).  That keeps the no-symlink guarantee: each name is one
 * component, never "." or "..", so O_NOFOLLOW covers the only component
 * resolved and a symlink there is ELOOP, magic links included; the actor's
 * directory was opened with O_NOFOLLOW either way.  What it loses is
 * RESOLVE_NO_XDEV (a file something was mounted over is not told), and
 * the library remembers ENOSYS for the whole process, its unconfined
 * threads included.
 */
static int allow_open(scmp_filter_ctx ctx) {
        const uint64_t refused = (uint64_t) (O_CREAT | O_TRUNC | (O_TMPFILE & ~O_DIRECTORY));
        int nr = seccomp_syscall_resolve_name("openat2");
        int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, refused, 0));

        if (r < 0)
                return r;
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr == __NR_SCMP_ERROR ? SYS_openat2 : nr, 0);
}

#if MG_HAVE_LANDLOCK
/* Rights of later ABIs that older headers lack; the values are the kernel's. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)    /* ABI 2, 5.19 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3, 6.2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5, 6.10 */
#endif

/* What the guards do below a cgroup2 mount: open files to read and write
 * them, open directories (an actor's, a parent to list); a supervisor also
 * removes its cgroup (checked on the parent directory). */
#define CGROUP_RIGHTS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* Each of the file system rights the running kernel knows is handled,
 * that is refused where no rule grants it; rights a later ABI adds stay
 * unhandled here, so allowed.  Network rights (ABI 4) are left alone: the
 * filter refuses socket().  So are scopes (ABI 6): signal scoping would
 * refuse the kill of a tenant's processes. */
static uint64_t handled_rights(int abi) {
        uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: EXECUTE to MAKE_SYM */

        if (abi >= 2)
                r |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                r |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return r;
}

/* Grants rights below path.  Returns 0, or the errno of the open (the
 * caller decides) or of landlock_add_rule. */
static int add_rule(int ruleset, const char *path, uint64_t rights) {
        struct landlock_path_beneath_attr pb = { .allowed_access = rights };
        int r = 0;

        pb.parent_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (pb.parent_fd < 0)
                return -errno;
        if (syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                r = -errno;
        close(pb.parent_fd);
        return r;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s) {
        char *out = s;

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
                    s[3] <= '7') {
                        *out++ = (char) ((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
                        s += 3;
                } else {
                        *out++ = *s;
                }
        }
        *out = '\0';
}

/*
 * Grants rights below every cgroup2 mount point of this mount namespace:
 * /sys/fs/cgroup usually, /sys/fs/cgroup/unified on hybrid systems, or
 * wherever a container put it.  A line is "ID PARENT MAJ:MIN ROOT
 * MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS".  A mount
 * point that cannot be opened now (a path over-mounted or gone) is not
 * granted.  Returns 0 or a negative errno.
 */
static int allow_cgroup2_mounts(int ruleset, uint64_t rights) {
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char *line = NULL;
        size_t cap = 0;
        int r = 0;

        if (!f)
                return -errno;
        while (r >= 0 && getline(&line, &cap, f) > 0) {
                char *sep = strstr(line, " - "), *save = NULL, *mnt;

                if (!sep || strncmp(sep + 3, "cgroup2 ", strlen("cgroup2 ")) != 0)
                        continue;
                *sep = '\0';
                mnt = strtok_r(line, " ", &save);
                for (int i = 0; mnt && i < 4; i++)
                        mnt = strtok_r(NULL, " ", &save);
                if (!mnt)
                        continue;
                unescape(mnt);
                r = add_rule(ruleset, mnt, rights);
                if (r == -ENOENT || r == -ENOTDIR || r == -EACCES)
                        r = 0;
        }
        if (r >= 0 && ferror(f))
                r = -EIO;
        free(line);
        fclose(f);
        return r;
}

/*
 * Restricts the calling thread (and threads it starts later) to reading
 * and writing files below the cgroup2 mounts and reading files below /proc
 * (/proc/PID/stat for MG_EVENT_UNKILLABLE); everything else the handled
 * rights cover (opening other files and directories, executing, making,
 * removing, renaming, linking, truncating, device ioctls) fails with
 * EACCES.  Files opened before keep the access they were opened with:
 * Landlock checks at open.  Needs no_new_privs.  Returns 1 if restricted,
 * 0 where the kernel has no Landlock (ENOSYS before 5.13 or without
 * CONFIG_SECURITY_LANDLOCK, EOPNOTSUPP where it is built in but not
 * enabled at boot), or a negative errno.
 */
static int restrict_paths(unsigned flags) {
        int abi = (int) syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        struct landlock_ruleset_attr attr;
        uint64_t cgroup_rights = CGROUP_RIGHTS;
        int ruleset, r;

        if (abi < 0)
                return errno == ENOSYS || errno == EOPNOTSUPP ? 0 : -errno;
        if (flags & MG_CONFINE_SUPERVISOR)
                cgroup_rights |= LANDLOCK_ACCESS_FS_REMOVE_DIR;
        /* Zeroed whole: later fields of a newer header (network, scopes)
         * stay unhandled, and older kernels accept a zero tail. */
        memset(&attr, 0, sizeof(attr));
        attr.handled_access_fs = handled_rights(abi);
        ruleset = (int) syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
        if (ruleset < 0)
                return -errno;
        r = allow_cgroup2_mounts(ruleset, cgroup_rights);
        if (r >= 0)
                r = add_rule(ruleset, "/proc", LANDLOCK_ACCESS_FS_READ_FILE);
        if (r >= 0 && syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
                r = -errno;
        close(ruleset);
        return r < 0 ? r : 1;
}
#else
static int restrict_paths(unsigned flags) {
        (void) flags;
        return 0; /* built without <linux/landlock.h> */
}
#endif

int mg_confine_thread(unsigned flags) {
        scmp_filter_ctx ctx;
        int r, paths = 0;

        if (flags & ~CONFINE_FLAGS)
                return -EINVAL;
        /* No execve can gain privileges from here on, and an unprivileged
         * thread may load a filter and restrict itself with Landlock. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        /* EPERM, not a kill: a call missing from the list is an error the
         * guard reports, not a dead worker.  Syscalls through a foreign ABI
         * (int 0x80 from x86_64) keep libseccomp's default, a kill: compiled
         * code never makes them. */
        ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return -ENOMEM;
        /* The calling thread only: the host's other threads keep theirs. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 0);
        if (r >= 0)
                r = allow(ctx, steady_state, sizeof(steady_state) / sizeof(steady_state[0]));
        if (r >= 0)
                r = allow_open(ctx);
        if (r >= 0 && (flags & MG_CONFINE_SUPERVISOR))
                r = allow(ctx, supervisor, sizeof(supervisor) / sizeof(supervisor[0]));
        /* Landlock first: the filter refuses its system calls.  A filter
         * that then fails to load leaves the Landlock domain in place. */
        if (r >= 0 && (flags & MG_CONFINE_PATHS))
                r = paths = restrict_paths(flags);
        if (r >= 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r < 0 ? r : paths;
}

#else

int mg_confine_thread(unsigned flags) {
        if (flags & ~CONFINE_FLAGS)
                return -EINVAL;
        return -EOPNOTSUPP; /* built without libseccomp (-Dhardening) */
}

#endif
