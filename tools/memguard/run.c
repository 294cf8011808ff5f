/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard run: CMD in a cgroup of its own, guarded for as long as it runs.
 *
 *   <parent>/memguard-run-<pid>     memory.max / memory.high if asked
 *
 * The cgroup exists before CMD does and CMD is born inside it
 * (clone3(CLONE_INTO_CGROUP)), so the guard sees its first page.  It is
 * emptied and removed afterwards, whatever CMD left running.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgdir.h"
#include "cli.h"
#include "config.h"
#include "events.h"
#include "loop.h"
#include "memguard/memguard.h"
#include "size.h"
#include "spawn.h"
#include "util.h"


/* 0 if name can be executed (PATH searched like execvp), else -ENOENT or
 * -EACCES, so "not found" is told before a cgroup is made. */
static int find_command(const char *name) {
        char path[PATH_MAX];
        const char *dirs = getenv("PATH");
        int r = -ENOENT;

        if (strchr(name, '/'))
                return access(name, X_OK) == 0 ? 0 : access(name, F_OK) == 0 ? -EACCES : -ENOENT;
        if (!dirs || !*dirs)
                dirs = "/bin:/usr/bin";
        for (const char *p = dirs; p;) {
                const char *colon = strchr(p, ':');
                int len = colon ? (int) (colon - p) : (int) strlen(p);
                snprintf(path, sizeof(path), "%.*s/%s", len, len ? p : ".", name);
                if (access(path, X_OK) == 0)
                        return 0;
                if (access(path, F_OK) == 0)
                        r = -EACCES;
                p = colon ? colon + 1 : NULL;
        }
        return r;
}

static bool is_percent(const char *s) {
        return s && *s && s[strlen(s) - 1] == '%';
}

static int write_limit(const char *cg, const char *file, uint64_t v) {
        char buf[32];
        if (v == MG_UNLIMITED)
                snprintf(buf, sizeof(buf), "max");
        else
                snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return mgt_cg_write(cg, file, buf);
}

struct run {
        const char *limit_s, *high_s, *max_s, *parent_s;
        char **cmd;
        uint64_t limit, high, max;
        struct mgt_out out;
        char *parent, *cg;
        mg_set *set;
        int sigfd, pidfd;
        pid_t pid;
        int status;
        bool exited;
};

static int parse(struct run *r, int argc, char **argv) {
        static const struct option opts[] = {
                { "limit", required_argument, NULL, 'l' },
                { "high", required_argument, NULL, 'H' },
                { "max", required_argument, NULL, 'M' },
                { "parent", required_argument, NULL, 'p' },
                { "json", no_argument, NULL, 'j' },
                { "dry-run", no_argument, NULL, 'd' },
                { "pre-kill-defer", required_argument, NULL, 'P' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        uint64_t v;
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (c) {
                case 'l': r->limit_s = optarg; break;
                case 'H': r->high_s = optarg; break;
                case 'M': r->max_s = optarg; break;
                case 'p': r->parent_s = optarg; break;
                case 'j': r->out.json = true; break;
                case 'd': r->out.dry_run = true; break;
                case 'P':
                        if (mgt_pre_kill_defer_parse(optarg, &r->out.pre_kill_defer_usec) < 0)
                                return mgt_usage_error("run", "--pre-kill-defer %s: not a duration of 1 ms to 60 s",
                                                       optarg);
                        break;
                case 'h': return -1;
                default: return mgt_getopt_error("run", c, argv);
                }
        }
        if (!r->limit_s)
                return mgt_usage_error("run", "missing --limit SIZE");
        if (optind >= argc)
                return mgt_usage_error("run", "missing command: memguard run --limit SIZE -- CMD [ARGS...]");
        r->cmd = argv + optind;
        /* Syntax first, against a stand-in base: bad arguments must fail
         * before anything is created.  The real bases come later. */
        if (mgt_size_arg("run", "--limit", r->limit_s, 1, "the parent's memory.max", MGT_SIZE_PERCENT, &v) ||
            (r->high_s &&
             mgt_size_arg("run", "--high", r->high_s, 1, "--limit", MGT_SIZE_PERCENT | MGT_SIZE_MAX, &v)) ||
            (r->max_s && mgt_size_arg("run", "--max", r->max_s, 1, "--limit", MGT_SIZE_PERCENT | MGT_SIZE_MAX, &v)))
                return MGT_EXIT_USAGE;
        return 0;
}

static int resolve_sizes(struct run *r) {
        uint64_t parent_max = MG_UNLIMITED;

        if (is_percent(r->limit_s) && mgt_cg_read_u64(r->parent, "memory.max", &parent_max) < 0)
                parent_max = MG_UNLIMITED; /* the root has no memory.max */
        if (mgt_size_arg("run", "--limit", r->limit_s, parent_max, "the parent's memory.max", MGT_SIZE_PERCENT,
                         &r->limit))
                return MGT_EXIT_USAGE;
        if (r->limit == 0)
                return mgt_usage_error("run", "--limit %s: the limit must be above 0 bytes", r->limit_s);
        r->high = r->max = MG_UNLIMITED;
        if (r->high_s && mgt_size_arg("run", "--high", r->high_s, r->limit, "--limit", MGT_SIZE_PERCENT | MGT_SIZE_MAX,
                                      &r->high))
                return MGT_EXIT_USAGE;
        if (r->max_s && mgt_size_arg("run", "--max", r->max_s, r->limit, "--limit", MGT_SIZE_PERCENT | MGT_SIZE_MAX,
                                     &r->max))
                return MGT_EXIT_USAGE;
        return 0;
}

static int find_parent(struct run *r) {
        int e;

        if (r->parent_s) {
                e = mgt_cg_resolve(r->parent_s, &r->parent);
                if (e == -ENOTSUP)
                        mgt_error(&r->out, "run", 0, "--parent %s: not a cgroup v2 directory", r->parent_s);
                else if (e < 0)
                        mgt_error(&r->out, "run", e, "--parent %s", r->parent_s);
                return e;
        }
        e = mgt_cg_default_parent(&r->parent);
        if (e == -ENOTSUP)
                mgt_error(&r->out, "run", 0, "no cgroup v2 at " MGT_CGROUP_ROOT " (a cgroup v1 or hybrid host?)");
        else if (e < 0)
                mgt_error(&r->out, "run", e, "cannot find this process's cgroup in /proc/self/cgroup");
        return e;
}

static int setup_cgroup(struct run *r) {
        int e = mgt_cg_enable_memory(r->parent);

        if (e == -ENOTSUP) {
                mgt_error(&r->out, "run", 0, "%s has no memory controller (not in its cgroup.controllers); "
                          "use --parent with a delegated cgroup", r->parent);
                return e;
        }
        if (e < 0) {
                mgt_error(&r->out, "run", e, "cannot enable the memory controller in %s/cgroup.subtree_control%s",
                          r->parent, e == -EBUSY ? " (it has processes of its own; use --parent)" : "");
                return e;
        }
        e = mgt_cg_make_child(r->parent, "memguard-run", &r->cg);
        if (e < 0) {
                mgt_error(&r->out, "run", e, "cannot create a cgroup in %s%s", r->parent,
                          e == -EACCES || e == -EPERM || e == -EROFS ? " (not delegated to us? use --parent)" : "");
                return e;
        }
        if (r->max != MG_UNLIMITED && (e = write_limit(r->cg, "memory.max", r->max)) < 0) {
                mgt_error(&r->out, "run", e, "writing %s/memory.max", r->cg);
                return e;
        }
        if (r->high != MG_UNLIMITED && (e = write_limit(r->cg, "memory.high", r->high)) < 0) {
                mgt_error(&r->out, "run", e, "writing %s/memory.high", r->cg);
                return e;
        }
        return 0;
}

/* Waits for CMD, forwarding what signals memguard itself gets. */
static int supervise(struct run *r) {
        unsigned signals = 0;

        for (;;) {
                struct pollfd fds[2] = {
                        { .fd = r->sigfd, .events = POLLIN },
                        { .fd = r->pidfd, .events = POLLIN },
                };
                int e = mgt_wait(r->set, fds, r->pidfd >= 0 ? 2 : 1, UINT64_MAX);
                if (e < 0) {
                        mgt_error(&r->out, "run", e, "guard set");
                        return e;
                }
                bool from_user;
                int sig;
                while ((sig = mgt_signals_next(r->sigfd, &from_user)) > 0) {
                        if (sig == SIGCHLD)
                                continue;
                        /* A terminal's ^C already reached CMD (same process
                         * group); a kill(1) to memguard did not.  A second
                         * one means "now": the whole cgroup goes. */
                        if (++signals >= 2)
                                (void) mgt_cg_kill_all(r->cg);
                        else if (from_user)
                                (void) kill(r->pid, sig);
                }
                pid_t w = waitpid(r->pid, &r->status, WNOHANG);
                if (w == r->pid) {
                        r->exited = true;
                        return 0;
                }
                if (w < 0 && errno != EINTR) {
                        e = -errno;
                        mgt_error(&r->out, "run", e, "waitpid");
                        return e;
                }
        }
}

/* Empties the cgroup while the guard still runs: a kill record is only
 * delivered once the cgroup is empty, and CMD's exit can be seen first. */
static void drain(struct run *r) {
        uint64_t end = mg_mono_usec() + 10 * MG_USEC_PER_SEC;
        int evfd = mgt_cg_open_events(r->cg);

        while (mgt_cg_populated(r->cg) > 0 && mg_mono_usec() < end) {
                (void) mgt_cg_kill_all(r->cg); /* what CMD left behind */
                struct pollfd p = { .fd = evfd, .events = POLLPRI };
                (void) mgt_wait(r->set, &p, evfd >= 0 ? 1 : 0, mg_mono_usec() + 100 * MG_USEC_PER_MSEC);
        }
        if (evfd >= 0)
                close(evfd);
        /* Killed, but no record yet: the guard sees "populated 0" on its
         * own cgroup.events poll or its next tick at the latest. */
        if (r->exited && WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL && r->out.kills == 0) {
                end = mg_mono_usec() + 500 * MG_USEC_PER_MSEC;
                while (r->out.kills == 0 && mg_mono_usec() < end)
                        (void) mgt_wait(r->set, NULL, 0, end);
        }
}

int mgt_cmd_run(int argc, char **argv) {
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD, 0 };
        struct run r = { .sigfd = -1, .pidfd = -1 };
        struct mg_guard_options o;
        int e, ret = MGT_EXIT_FAIL;

        e = parse(&r, argc, argv);
        if (e != 0)
                return e < 0 ? mgt_help("run") : e;
        /* parse() returns 0 only once r.cmd is set; the analyzer cannot see
         * that mgt_usage_error() (main.c) never returns 0. */
        e = find_command(r.cmd[0]); /* NOLINT(clang-analyzer-core.NullDereference) */
        if (e < 0) {
                mgt_error(&r.out, "run", 0, "%s: %s", r.cmd[0], e == -EACCES ? "not executable" : "command not found");
                return e == -EACCES ? MGT_EXIT_NOEXEC : MGT_EXIT_NOTFOUND;
        }
        if (find_parent(&r) < 0)
                goto out;
        e = resolve_sizes(&r);
        if (e != 0) {
                ret = e;
                goto out;
        }
        if (setup_cgroup(&r) < 0)
                goto out;

        r.sigfd = mgt_signals_open(sigs);
        if (r.sigfd < 0) {
                mgt_error(&r.out, "run", r.sigfd, "signal handlers");
                goto out;
        }
        /* Before the guard and the confinement: the output queue's writer
         * is a thread (events.h). */
        e = mgt_output_start(STDERR_FILENO, r.out.json);
        if (e < 0)
                mgt_error(&r.out, "run", e, "the output queue (lines are written directly)");
        e = mg_set_new(NULL, &r.set);
        if (e >= 0) {
                mg_guard_options_init(&o, r.limit);
                o.on_event = mgt_on_event;
                o.userdata = &r.out;
                o.log = mgt_on_log;
                o.log_userdata = &r.out;
                mgt_kill_options(&r.out, &o);
                e = mg_set_add(r.set, r.cg, &o, NULL);
        }
        if (e < 0) {
                mgt_error(&r.out, "run", e, "guarding %s", r.cg);
                goto out;
        }
        r.pid = mg_spawn_in_cgroup(r.cg, r.cmd, &r.pidfd);
        if (r.pid < 0) {
                mgt_error(&r.out, "run", r.pid, "starting %s in %s", r.cmd[0], r.cg);
                goto out;
        }
        /* CMD has its own credentials now; from here on memguard only
         * guards, waits, forwards signals and cleans up. */
        const char *what = NULL;
        unsigned keep = (mgt_all_have_cgroup_kill(&r.cg, 1) ? 0 : MGT_KEEP_KILL) |
                        (mgt_dir_writable_without_caps(r.parent) ? 0 : MGT_KEEP_DAC_OVERRIDE);
        e = mgt_drop_privileges(keep, MG_CONFINE_SUPERVISOR | MG_CONFINE_PATHS, &what);
        if (e == -EOPNOTSUPP)
                mgt_note(&r.out, "memguard: built without libseccomp: the thread is not confined");
        else if (e < 0) {
                mgt_error(&r.out, "run", e, "%s", what);
                goto out;
        }
        (void) supervise(&r);
        drain(&r);

        if (r.out.kills > 0)
                ret = MGT_EXIT_KILLED;
        else if (r.exited && WIFEXITED(r.status))
                ret = WEXITSTATUS(r.status);
        else if (r.exited && WIFSIGNALED(r.status))
                ret = 128 + WTERMSIG(r.status);
out:
        if (r.pid > 0 && !r.exited) {
                (void) mgt_cg_kill_all(r.cg);
                (void) waitpid(r.pid, NULL, 0);
        }
        mg_set_free(r.set);
        mgt_out_release(&r.out); /* after the guards' last event */
        if (r.pidfd >= 0)
                close(r.pidfd);
        if (r.cg) {
                e = mgt_cg_destroy(r.cg, 10 * MG_USEC_PER_SEC);
                if (e < 0)
                        mgt_error(&r.out, "run", e, "removing %s", r.cg);
        }
        free(r.cg);
        free(r.parent);
        mgt_output_stop(); /* after the last line */
        return ret;
}
