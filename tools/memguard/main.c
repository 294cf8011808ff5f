/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard: the command-line face of the library.  Each subcommand lives in
 * its own file, the help texts in help.c; this one dispatches and owns the
 * conventions every subcommand shares (exit 2 with one line for bad
 * arguments).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if MG_HAVE_CAPNG
#include <cap-ng.h>
#endif

#include "cli.h"
#include "config.h"
#include "metrics.h"
#include "events.h"
#include "json.h"
#include "memguard/memguard.h"
#include "memguard-tool-config.h"
#include "size.h"
#include "util.h"

char *mgt_self_exe(void) {
        char buf[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        return strdup(buf);
}

char *mgt_find_workload(void) {
        const char *env = getenv("MEMGUARD_WORKLOAD");
        char *self, *dir, *p = NULL;

        if (env && *env)
                return access(env, X_OK) == 0 ? strdup(env) : NULL;
        self = mgt_self_exe();
        if (!self)
                return NULL;
        dir = dirname(self);
        /* build tree: tools/mg-workload beside tools/memguard/; installed:
         * in libexecdir/memguard */
        const char *const tries[] = { dir, MEMGUARD_LIBEXECDIR };
        for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
                if (asprintf(&p, "%s%s/mg-workload", tries[i], i == 0 ? "/.." : "") < 0) {
                        p = NULL;
                        break;
                }
                if (access(p, X_OK) == 0) {
                        char *real = realpath(p, NULL);
                        free(p);
                        p = real;
                        break;
                }
                free(p);
                p = NULL;
        }
        free(self);
        return p;
}

bool mgt_all_have_cgroup_kill(char *const *cgs, int n) {
        for (int i = 0; i < n; i++) {
                char p[PATH_MAX];
                snprintf(p, sizeof(p), "%s/cgroup.kill", cgs[i]);
                if (access(p, F_OK) < 0)
                        return false;
        }
        return true;
}

bool mgt_dir_writable_without_caps(const char *dir) {
        struct stat st;
        gid_t groups[64];
        int n;

        if (stat(dir, &st) < 0)
                return false;
        if (st.st_uid == geteuid())
                return (st.st_mode & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR);
        bool in_group = st.st_gid == getegid();
        n = getgroups(sizeof(groups) / sizeof(groups[0]), groups);
        for (int i = 0; i < n && !in_group; i++)
                in_group = groups[i] == st.st_gid;
        if (in_group)
                return (st.st_mode & (S_IWGRP | S_IXGRP)) == (S_IWGRP | S_IXGRP);
        return (st.st_mode & (S_IWOTH | S_IXOTH)) == (S_IWOTH | S_IXOTH);
}

/*
 * What the tool keeps after set-up, and why (docs/security.md):
 *  - no capability to read and write the cgroup files: the guards hold them
 *    open, and kernfs checks permission at open time; delegated cgroups are
 *    owned by the user the tool runs as, root-owned ones by root, whose uid
 *    stays 0.  Files opened later (PSI triggers at the limit) need write
 *    access as that owner; where it is refused, ticks alone do the work.
 *  - cgroup.kill (5.14+) is a write: no capability.  The fallback signals
 *    each pid through a pidfd, which needs CAP_KILL for another user's
 *    processes: kept only for cgroups without cgroup.kill.
 *  - PSI triggers with a window other than a multiple of 2 s need
 *    CAP_SYS_RESOURCE; the guard uses 2 s windows: dropped.
 *  - run removes the cgroup it made when CMD ends: nothing where the parent
 *    is delegated to us, but the cgroup2 root directory is mode 0555 and
 *    root writes it through CAP_DAC_OVERRIDE: kept only then.
 */
int mgt_drop_privileges(unsigned keep, unsigned confine_flags, const char **ret_what) {
        int r;

#if MG_HAVE_CAPNG
        capng_get_caps_process();
        if (capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE) {
                static const struct {
                        unsigned keep, cap;
                } kept[] = {
                        { MGT_KEEP_KILL, CAP_KILL },
                        { MGT_KEEP_DAC_OVERRIDE, CAP_DAC_OVERRIDE },
                };
                bool held[sizeof(kept) / sizeof(kept[0])];
                for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
                        held[i] = capng_have_capability(CAPNG_PERMITTED, kept[i].cap);
                capng_clear(CAPNG_SELECT_BOTH);
                for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
                        if ((keep & kept[i].keep) && held[i] &&
                            capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED, kept[i].cap) < 0) {
                                *ret_what = "keeping a capability";
                                return -EINVAL;
                        }
                /* The bounding set needs CAP_SETPCAP; without it (a
                 * process given a few capabilities) drop what it can, and
                 * no_new_privs stops anything being gained by exec. */
                if (capng_apply(CAPNG_SELECT_BOTH) < 0 && capng_apply(CAPNG_SELECT_CAPS) < 0) {
                        *ret_what = "dropping capabilities";
                        return -EPERM;
                }
        }
#else
        (void) keep;
#endif
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                *ret_what = "setting no_new_privs";
                return -errno;
        }
        r = mg_confine_thread(confine_flags);
        if (r < 0) {
                *ret_what = "confining the thread (seccomp)";
                return r;
        }
        return 0;
}

static const struct {
        const char *name;
        int (*fn)(int, char **);
} commands[] = {
        { "run", mgt_cmd_run },
        { "watch", mgt_cmd_watch },
        { "stat", mgt_cmd_stat },
        { "demo", mgt_cmd_demo },
        { "config-parse", mgt_cmd_config_parse },
};

int main(int argc, char **argv) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc < 2)
                return mgt_usage_error(NULL, "missing command");
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0)
                return argc > 2 ? mgt_help(argv[2]) : mgt_help("");
        if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
                printf("memguard %s\n", MEMGUARD_VERSION);
                return MGT_EXIT_OK;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].fn(argc - 1, argv + 1);
        if (argv[1][0] == '-')
                return mgt_usage_error(NULL, "unknown option %s", argv[1]);
        return mgt_usage_error(NULL, "unknown command '%s'", argv[1]);
}
