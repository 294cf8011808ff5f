/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard: the command-line face of the library.  Each subcommand lives in
 * its own file; this one dispatches, prints help and owns the conventions
 * every subcommand shares (exit 2 with one line for bad arguments).
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

static const struct {
        const char *name, *usage;
} usages[] = {
        { "run", "run --limit SIZE [--high SIZE] [--max SIZE] [--parent CGROUP] [--json] [--dry-run]\n"
                 "      [--pre-kill-defer DURATION] -- CMD [ARGS...]\n"
                 "        Runs CMD in a new cgroup below CGROUP (default: the parent of memguard's own\n"
                 "        cgroup), guarded at --limit; removes the cgroup afterwards.  Exits with CMD's\n"
                 "        status, 128+N if a signal N ended it, 137 if memguard killed it." },
        { "watch", "watch --limit SIZE [OPTIONS] CGROUP...\n"
                   "  watch --parent DIR [--limit SIZE] [--config FILE] [--metrics FILE] [--mlock] [OPTIONS]\n"
                   "        Guards existing cgroups, or every child of DIR as it appears, until SIGINT or\n"
                   "        SIGTERM, then restores any lent memory.high and exits 0; a cgroup that\n"
                   "        vanishes is dropped.  Each one's limit: its user.memguard.limit xattr, else\n"
                   "        its memory.max, else --limit.  SIGHUP re-reads the config and the limits.\n"
                   "        OPTIONS: --json, --metrics-interval DURATION, --dry-run (report kills, make\n"
                   "        none), --pre-kill-defer DURATION (a pre-kill event, the kill put off that\n"
                   "        long unless the actor leaves its limit), and the tuning: --tick,\n"
                   "        --margin, --stall-window, --stall-pressure, --lend-deadline, --kill-wait,\n"
                   "        --post-kill-holdoff, --refault-window, --refault-mapped-window." },
        { "stat", "stat [--limit SIZE] [--json] CGROUP\n"
                  "        Limits, memory.current, used (anon shmem kernel sock), page cache, memory\n"
                  "        pressure, memory.events.local and the verdict the guard would give now.\n"
                  "        The limit defaults to memory.max, else memory.high." },
        { "demo", "demo [--kernel 6.1|6.12|7] [--native]\n"
                  "        Runs the signature scenarios with the kernel alone and with memguard and\n"
                  "        prints what each did; natively on a delegated cgroup v2 memory controller,\n"
                  "        otherwise inside a Debian kernel under qemu (tests/vm/vmrun)." },
};

static void print_usage(FILE *f) {
        fprintf(f, "usage: memguard COMMAND [OPTIONS]\n\n"
                   "Guards memory actors on cgroup v2: kills on a true overshoot (anon + shmem + kernel\n"
                   "+ sock above the limit) or a stall at the limit, never for page cache.\n\n"
                   "Commands:\n");
        for (size_t i = 0; i < sizeof(usages) / sizeof(usages[0]); i++)
                fprintf(f, "  %s\n", usages[i].usage);
        fprintf(f, "  help, --help\n"
                   "        This text.\n"
                   "  --version\n"
                   "        The version.\n\n"
                   "SIZE is bytes, or a number with K, M, G or T (powers of 1024; Ki, KiB... too),\n"
                   "e.g. 64M or 1.5G; --high and --max also take a percentage of --limit (90%%).\n"
                   "See memguard(1).\n");
}

int mgt_help(const char *cmd) {
        for (size_t i = 0; i < sizeof(usages) / sizeof(usages[0]); i++)
                if (strcmp(usages[i].name, cmd) == 0) {
                        printf("usage: memguard %s\n", usages[i].usage);
                        return MGT_EXIT_OK;
                }
        print_usage(stdout);
        return MGT_EXIT_OK;
}

int mgt_usage_error(const char *cmd, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "memguard%s%s: %s (see memguard --help)\n", cmd ? " " : "", cmd ? cmd : "", msg);
        return MGT_EXIT_USAGE;
}

int mgt_getopt_error(const char *cmd, int c, char **argv) {
        const char *arg = optind > 0 ? argv[optind - 1] : "?";
        if (c == ':')
                return mgt_usage_error(cmd, "option %s needs a value", arg);
        if (optopt && strncmp(arg, "--", 2) != 0)
                return mgt_usage_error(cmd, "unknown option -%c", optopt);
        return mgt_usage_error(cmd, "unknown option %s", arg);
}

int mgt_size_arg(const char *cmd, const char *opt, const char *val, uint64_t base, const char *base_what,
                 unsigned flags, uint64_t *ret) {
        int r = mgt_size_parse(val, base, flags, ret);
        if (r == 0)
                return 0;
        if (r == -ERANGE)
                return mgt_usage_error(cmd, "%s %s: too large", opt, val);
        if (r == -EDOM && base_what)
                return mgt_usage_error(cmd, "%s %s: %s gives no size to take a percentage of", opt, val, base_what);
        if (r == -EDOM)
                return mgt_usage_error(cmd, "%s %s: a percentage is not allowed here", opt, val);
        return mgt_usage_error(cmd, "%s %s: not a size (bytes, or with K, M, G, T: 64M, 1.5G, 512Mi)", opt, val);
}

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

/* Debug subcommands for the tests: the pure parsers, through the binary. */
static int cmd_size_parse(int argc, char **argv) {
        uint64_t base = 0, v;
        char buf[32];
        int r;

        if (argc < 2 || argc > 3)
                return mgt_usage_error("size-parse", "usage: memguard size-parse SIZE [PERCENT_BASE]");
        if (argc == 3 && mgt_size_arg("size-parse", "base", argv[2], 0, NULL, 0, &base) != 0)
                return MGT_EXIT_USAGE;
        r = mgt_size_arg("size-parse", "size", argv[1], base, argc == 3 ? "the base" : NULL,
                         MGT_SIZE_MAX | (argc == 3 ? MGT_SIZE_PERCENT : 0), &v);
        if (r != 0)
                return r;
        printf("%" PRIu64 " %s\n", v, mgt_size_format(v, buf, sizeof(buf)));
        return MGT_EXIT_OK;
}

static int cmd_json_escape(int argc, char **argv) {
        struct mgt_json j;
        const char *s;

        if (argc != 2)
                return mgt_usage_error("json-escape", "usage: memguard json-escape STRING");
        mgt_json_begin(&j);
        mgt_json_str(&j, "s", argv[1]);
        s = mgt_json_end(&j);
        if (s)
                printf("%s\n", s);
        mgt_json_free(&j);
        return s ? MGT_EXIT_OK : MGT_EXIT_FAIL;
}

/* One event of each type, with made-up figures, through the printer run
 * and watch use (text, or --json): the tests check the lines against
 * events.schema.json without a cgroup. */
static int cmd_event_sample(int argc, char **argv) {
        struct mgt_out out = { .json = argc == 2 && strcmp(argv[1], "--json") == 0 };
        static const char cg[] = "/sys/fs/cgroup/sample/\"actor\"";
        uint64_t now;
        struct mg_kill_record k = {
                .size = sizeof(k), .reason = MG_KILL_OVERSHOOT, .method = MG_KILL_CGROUP_KILL, .cgroup = cg,
                .report = { .size = sizeof(k.report), .limit_bytes = 64u << 20, .used_bytes = 80u << 20,
                            .current_bytes = 81u << 20, .stat = { .anon = 79u << 20, .kernel = 1u << 20 },
                            .high_bytes = MG_UNLIMITED, .max_bytes = MG_UNLIMITED, .verdict = MG_VERDICT_OVERSHOOT },
        };
        struct mg_kill_record stall = k;
        struct mg_lend_info lend = { .old_high_bytes = 60u << 20, .new_high_bytes = MG_UNLIMITED,
                                     .deadline_usec = UINT64_MAX, .id = 1, .found_high_bytes = MG_UNLIMITED };
        struct mg_throttle_info thr = { .high_bytes = 60397977, .current_bytes = 65011712, .overage_permyriad = 764,
                                        .est_delay_usec = 414000, .high_events_per_sec = 52,
                                        .memory_some_permyriad = 9512, .cpu_permyriad = 250 };
        struct mg_unkillable_info u = { .kill_usec = 1, .wait_usec = 3000000, .n_members = 2, .n_pids = 2,
                                        .pids = { 1234, 1235 }, .states = { 'D', '?' } };

        if (argc > 2 || (argc == 2 && !out.json))
                return mgt_usage_error("event-sample", "usage: memguard event-sample [--json]");
        now = mg_mono_usec();
        k.detect_usec = now - 300000;
        k.kill_usec = now - 250000;
        k.empty_usec = now - 200000;
        stall.reason = MG_KILL_STALL;
        stall.report.stall_usec = 20000000;
        stall.report.stall_signals = MG_STALL_MEMORY | MG_STALL_IO | MG_STALL_REFAULT;
        stall.report.stall_refault_bytes = 900u << 20;
        stall.report.stall_reclaimed_bytes = 1000u << 20;
        stall.report.verdict = MG_VERDICT_STALL;
        stall.empty_timed_out = true;
        struct mg_kill_record dry = k, pre = k;
        dry.empty_usec = 0;
        pre.kill_usec = pre.empty_usec = 0;
        const struct mg_event evs[] = {
                { .type = MG_EVENT_KILL, .cgroup = cg, .time_usec = k.empty_usec, .kill = &k },
                { .type = MG_EVENT_KILL, .cgroup = cg, .time_usec = now, .kill = &stall },
                { .type = MG_EVENT_UNKILLABLE, .cgroup = cg, .time_usec = now, .kill = &stall, .unkillable = &u },
                { .type = MG_EVENT_LEND_BEGIN, .cgroup = cg, .time_usec = now, .lend = &lend },
                { .type = MG_EVENT_LEND_END, .cgroup = cg, .time_usec = now, .lend = &lend },
                { .type = MG_EVENT_LEND_EXPIRED, .cgroup = cg, .time_usec = now, .lend = &lend },
                { .type = MG_EVENT_ERROR, .cgroup = cg, .time_usec = now, .error = -EACCES, .what = "memory.stat" },
                { .type = MG_EVENT_KERNEL_OOM, .cgroup = cg, .time_usec = now, .count = 2 },
                { .type = MG_EVENT_THROTTLED, .cgroup = cg, .time_usec = now, .throttle = &thr },
                { .type = MG_EVENT_EMPTY_OVER_LIMIT, .cgroup = cg, .time_usec = now, .report = &k.report },
                { .type = MG_EVENT_GONE, .cgroup = cg, .time_usec = now },
                { .type = MG_EVENT_KILL_DRY_RUN, .cgroup = cg, .time_usec = now, .kill = &dry },
                { .type = MG_EVENT_PRE_KILL, .cgroup = cg, .time_usec = now, .kill = &pre },
                { .type = MG_EVENT_KILL_AVERTED, .cgroup = cg, .time_usec = now, .kill = &pre, .report = &k.report },
        };
        lend.restored = true;
        for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
                mgt_on_event(NULL, &evs[i], &out);
        mgt_on_log(MG_LOG_ERR, "a log line of the library", &out);
        mgt_watch_event(&out, "watch", cg, 256u << 20, "xattr");
        mgt_unwatch_event(&out, cg, "removed");
        mgt_reload_event(&out, "/etc/memguard/watch.conf", 3, true);
        mgt_dropped_event(&out, 42);
        mgt_error(&out, "watch", -ENOENT, "%s", "/sys/fs/cgroup/missing");
        return MGT_EXIT_OK;
}

/* The metrics text of two made-up actors (one with a name that needs every
 * escape, one whose report failed), for the format checks of the tests. */
static int cmd_metrics_sample(int argc, char **argv) {
        struct mg_stats s1 = { .size = sizeof(s1), .fast_ticks = 1200, .slow_ticks = 34, .kills_overshoot = 2,
                               .kills_stall = 1, .kernel_oom_kills = 3, .errors = 1, .throttles = 1, .lends = 4,
                               .lend_expiries = 1, .kills_deferred = 1, .kills_averted = 1 };
        struct mg_stats s2 = { .size = sizeof(s2), .fast_ticks = 1234, .dry_run_kills = 2 };
        struct mg_stats ns = { .size = sizeof(ns), .fast_ticks = 2434, .slow_ticks = 34, .kills_overshoot = 5,
                               .kills_stall = 1, .kernel_oom_kills = 3, .dry_run_kills = 2, .errors = 1 };
        struct mgt_counts c1 = { .empty_over_limit = 1 }, c2 = {}, node = { .empty_over_limit = 1 };
        struct mg_report r = { .size = sizeof(r), .used_bytes = 60u << 20, .current_bytes = 100u << 20,
                               .stall_usec = 1500000, .high_bytes = 60397977, .max_bytes = MG_UNLIMITED,
                               .stat = { .file = 40u << 20 }, .verdict = MG_VERDICT_STALLING };
        const struct mgt_metrics_actor a[] = {
                { .cgroup = "/sandboxes/a \"q\" \\ \n\xff", .limit_bytes = 64u << 20, .limit_source = "xattr",
                  .lent = true, .report = &r, .stats = &s1, .counts = &c1 },
                { .cgroup = "/sandboxes/b", .limit_bytes = 1u << 30, .limit_source = "default", .stats = &s2,
                  .counts = &c2 },
        };
        struct mgt_metrics_node n = { .stats = &ns, .counts = &node, .cgroups = 2, .reloads = 3, .reload_errors = 1,
                                      .time_usec = UINT64_C(1796164055123456), .version = mg_version() };
        size_t len;
        char *text;

        (void) argv;
        if (argc != 1)
                return mgt_usage_error("metrics-sample", "usage: memguard metrics-sample");
        text = mgt_metrics_format(a, 2, &n, &len);
        if (!text)
                return MGT_EXIT_FAIL;
        fwrite(text, 1, len, stdout);
        free(text);
        return MGT_EXIT_OK;
}

/* `memguard config-parse FILE`: the settings a config file gives, one
 * "key value" line each (value in bytes, usec or permyriad, "NNN%" for a
 * margin in permyriad of the limit), or the error and exit 1. */
static int cmd_config_parse(int argc, char **argv) {
        struct mgt_settings s;
        char buf[65536], err[320];
        size_t n;
        FILE *f;

        if (argc != 2)
                return mgt_usage_error("config-parse", "usage: memguard config-parse FILE");
        f = fopen(argv[1], "re");
        if (!f)
                return mgt_usage_error("config-parse", "%s: %s", argv[1], strerror(errno));
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        if (mgt_config_parse(buf, n, &s, err, sizeof(err)) < 0) {
                fprintf(stderr, "%s\n", err);
                return MGT_EXIT_FAIL;
        }
        for (int k = 0; k < _MGT_KEY_MAX; k++)
                if (s.v[k].set)
                        printf("%s %" PRIu64 "%s\n", mgt_key_name((enum mgt_key) k), s.v[k].value, s.v[k].percent ? "%" : "");
        return MGT_EXIT_OK;
}

static const struct {
        const char *name;
        int (*fn)(int, char **);
} commands[] = {
        { "run", mgt_cmd_run },
        { "watch", mgt_cmd_watch },
        { "stat", mgt_cmd_stat },
        { "demo", mgt_cmd_demo },
        { "size-parse", cmd_size_parse },
        { "json-escape", cmd_json_escape },
        { "event-sample", cmd_event_sample },
        { "metrics-sample", cmd_metrics_sample },
        { "config-parse", cmd_config_parse },
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
