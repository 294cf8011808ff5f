/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Least privilege for the thread that runs guards: a seccomp allowlist of
 * what a guard set does once it is running.  The guard holds the power to
 * kill every process of the cgroups it watches and runs next to untrusted
 * tenants; if a parser bug ever let a tenant's bytes run code in it, this is
 * what that code could do (docs/security.md).  A set's restore worker
 * (worker.c) loads the same list on itself when mg_set_new() starts it: it
 * needs nothing the list lacks (pread64, pwrite64, futex, write, and libc's
 * thread exit), and the list needs nothing for it (no clone: the worker
 * exists before the host confines its thread).
 */
#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>

#include "memguard/memguard.h"

#if MG_HAVE_SECCOMP
#include <seccomp.h>

/* Grouped by who needs them; names, resolved at run time, so a syscall this
 * architecture or libseccomp lacks is skipped rather than a build error. */
static const char *const steady_state[] = {
        /* guards: the files they hold open, opening files below a cgroup
         * directory (PSI triggers at the limit, new guards, recovery) and
         * /proc/PID/stat (the states in an unkillable report) */
        "pread64", "pwrite64", "read", "write", "writev", "close", "openat", "openat2", "fstatfs", "fstat",
        "newfstatat",
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

int mg_confine_thread(unsigned flags) {
        scmp_filter_ctx ctx;
        int r;

        if (flags & ~(unsigned) MG_CONFINE_SUPERVISOR)
                return -EINVAL;
        /* No execve can gain privileges from here on, and an unprivileged
         * thread may load a filter. */
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
        if (r >= 0 && (flags & MG_CONFINE_SUPERVISOR))
                r = allow(ctx, supervisor, sizeof(supervisor) / sizeof(supervisor[0]));
        if (r >= 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r < 0 ? r : 0;
}

#else

int mg_confine_thread(unsigned flags) {
        if (flags & ~(unsigned) MG_CONFINE_SUPERVISOR)
                return -EINVAL;
        return -EOPNOTSUPP; /* built without libseccomp (-Dhardening) */
}

#endif
