/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard-test-commands: the command's pure parts, through a binary of
 * their own for the tests (tests/cli/memguard/test-cli.sh,
 * test-events-schema.py, test-metrics-format.py); not installed.
 *   size-parse SIZE [PERCENT_BASE]   the size parser and its errors
 *   json-escape STRING               one JSON string
 *   event-sample [--json]            one event of each type, as run and watch print them, and two
 *                                    guards' kill decisions interleaved
 *   metrics-sample [--cgroups none|all|N] [--dry-run] [--pre-kill-defer] [--park]
 *                                    the metrics text of made-up actors
 *   journal-sample [--json]          the same events as journal entries (MGT_JOURNAL_EXPORT: a
 *                                    "FIELD=value" line each, a blank line after each entry), with
 *                                    the library's log lines of every level
 *   journal-detect                   "journal" if stderr is the stream $JOURNAL_STREAM names, else
 *                                    "stream"; then "native" if this build sends entries, else
 *                                    "no-libsystemd"
 *   journal-ids                      each kind of entry: its event name, MESSAGE_ID and priority
 *   config-parse FILE                `memguard config-parse`, the same code
 *   config-keys                      every key a config file takes
 *   options LIMIT [--config FILE] [--KEY VALUE]...
 *                                    the guard options watch makes of them for a cgroup of LIMIT
 *   stat-dir DIR [LIMIT]             stat of a directory that need not be on cgroup2
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config-load.h"
#include "config.h"
#include "events.h"
#include "journal.h"
#include "json.h"
#include "memguard/memguard.h"
#include "metrics.h"
#include "size.h"
#include "util.h"

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
        /* A pressure dose to a sibling that counts, and a headroom dose
         * the kernel cut short. */
        struct mg_reclaim_info rp = { .target = "/sys/fs/cgroup/sample/background", .why = MG_RECLAIM_PRESSURE,
                                      .asked_bytes = 64u << 20, .achieved_bytes = 60u << 20, .duration_usec = 85250,
                                      .counted = true, .windows = 3, .some_usec = { 12000, 15300, 20100 },
                                      .full_usec = { 0, 1000, 2500 } };
        struct mg_reclaim_info rh = { .target = cg, .why = MG_RECLAIM_HEADROOM, .asked_bytes = 12u << 20,
                                      .achieved_bytes = 3u << 20, .duration_usec = 400000, .error = -EAGAIN,
                                      .current_bytes = 250u << 20, .file_bytes = 40u << 20 };

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
        /* A park (--park-hook): frozen 10 ms after the freeze, then thawed
         * 2 s later; another ended by the guard's deadline, a kill. */
        struct mg_kill_record park = pre, thawed, parkkill = k;
        park.report.park_id = 3;
        park.report.park_usec = now - 2000000;
        park.report.frozen_usec = now - 1990000;
        thawed = park;
        thawed.report.park_end = MG_PARK_END_THAW;
        thawed.report.park_end_usec = now;
        parkkill.report.park_id = 4;
        parkkill.report.park_usec = now - 34000000;
        parkkill.report.frozen_usec = now - 33995000;
        parkkill.report.park_end = MG_PARK_END_DEADLINE;
        parkkill.report.park_end_usec = k.kill_usec;
        out.park_hook_timeout_usec = 30000000;
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
                { .type = MG_EVENT_RECLAIM, .cgroup = cg, .time_usec = now, .reclaim = &rp },
                { .type = MG_EVENT_RECLAIM, .cgroup = cg, .time_usec = now, .reclaim = &rh },
                { .type = MG_EVENT_PARK, .cgroup = cg, .time_usec = now, .kill = &park },
                { .type = MG_EVENT_THAW, .cgroup = cg, .time_usec = now, .kill = &thawed },
                { .type = MG_EVENT_KILL, .cgroup = cg, .time_usec = now, .kill = &parkkill },
        };
        /* The park hook's runs: saved, a thaw into a raised limit, a
         * timeout, one cancelled by the guard's deadline, one not run
         * (the runner's bound of runs at once). */
        struct mgt_hook_reply saved = { .result = MGT_HOOK_SAVED, .duration_usec = 2150000, .output_bytes = 38,
                                        .output_len = 38 },
                              thaw = { .result = MGT_HOOK_THAW, .code = MGT_HOOK_THAW_STATUS, .duration_usec = 812000 },
                              late = { .result = MGT_HOOK_TIMEOUT, .duration_usec = 30000400, .output_bytes = 90000,
                                       .output_len = 24 },
                              cancelled = { .result = MGT_HOOK_CANCELLED, .duration_usec = 34000000 },
                              refused = { .result = MGT_HOOK_ERROR, .code = EUSERS };
        snprintf(saved.output, sizeof(saved.output), "snapshot written\nsaved to /var/snap/3\n");
        snprintf(late.output, sizeof(late.output), "copying page 81234 of 1\n");
        const struct mgt_park_hook_info hooks[] = {
                { .cgroup = cg, .park_id = 3, .kill_id = 9, .timeout_usec = 30000000, .reply = &saved, .action = "kill" },
                { .cgroup = cg, .park_id = 3, .kill_id = 9, .timeout_usec = 30000000, .reply = &thaw, .action = "thaw",
                  .limit_bytes = 512u << 20, .limit_source = "xattr" },
                { .cgroup = cg, .park_id = 3, .kill_id = 9, .timeout_usec = 30000000, .reply = &late, .action = "kill" },
                { .cgroup = cg, .park_id = 4, .kill_id = 10, .timeout_usec = 30000000, .reply = &cancelled,
                  .action = "none", .park_end = "deadline" },
                { .cgroup = cg, .park_id = 5, .kill_id = 11, .timeout_usec = 30000000, .reply = &refused,
                  .action = "kill" },
        };
        /* Two guards' decisions interleaved, as watch prints them: each
         * end carries the kill_id of its own guard's pre-kill.  The guards
         * are stand-in addresses: the printer only compares them. */
        static char guard_a, guard_b;
        mg_guard *ga = (mg_guard *) (void *) &guard_a, *gb = (mg_guard *) (void *) &guard_b;
        static const char cg_a[] = "/sys/fs/cgroup/sample/a", cg_b[] = "/sys/fs/cgroup/sample/b";
        struct mg_kill_record kill_a = k, kill_b = k; /* a kill's cgroup is its record's */
        kill_a.cgroup = cg_a;
        kill_b.cgroup = cg_b;
        const struct {
                mg_guard *g;
                struct mg_event ev;
        } linked[] = {
                { ga, { .type = MG_EVENT_PRE_KILL, .cgroup = cg_a, .time_usec = now, .kill = &pre } },
                { gb, { .type = MG_EVENT_PRE_KILL, .cgroup = cg_b, .time_usec = now, .kill = &pre } },
                { gb, { .type = MG_EVENT_KILL, .cgroup = cg_b, .time_usec = now, .kill = &kill_b } },
                { ga, { .type = MG_EVENT_KILL_AVERTED, .cgroup = cg_a, .time_usec = now, .kill = &pre,
                        .report = &k.report } },
                { ga, { .type = MG_EVENT_KILL, .cgroup = cg_a, .time_usec = now, .kill = &kill_a } },
        };
        lend.restored = true;
        for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
                mgt_on_event(NULL, &evs[i], &out);
        for (size_t i = 0; i < sizeof(linked) / sizeof(linked[0]); i++)
                mgt_on_event(linked[i].g, &linked[i].ev, &out);
        mgt_on_log(MG_LOG_ERR, "a log line of the library", &out);
        /* on a stream these are not printed; in the journal all but debug */
        mgt_on_log(MG_LOG_WARNING, "a warning of the library", &out);
        mgt_on_log(MG_LOG_INFO, "information of the library", &out);
        mgt_on_log(MG_LOG_DEBUG, "debugging of the library", &out);
        for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++)
                mgt_park_hook_event(&out, &hooks[i]);
        mgt_watch_event(&out, "watch", cg, 256u << 20, "xattr");
        mgt_unwatch_event(&out, cg, "removed");
        mgt_reload_event(&out, "/etc/memguard/watch.conf", 3, true);
        mgt_dropped_event(&out, 42);
        mgt_error(&out, "watch", -ENOENT, "%s", "/sys/fs/cgroup/missing");
        mgt_out_release(&out);
        return MGT_EXIT_OK;
}

/* The metrics text of made-up actors: one with a name that needs every
 * escape, lent; one whose report failed, its reclaim actuator armed; six
 * of a fleet (at their limit, acting a minute ago and twenty, quiet at
 * 70, 67 and 64 % of their limit, the last in the file before), for the
 * format checks of the tests and the choice of --metrics-cgroups.
 *   metrics-sample [--cgroups none|all|N] [--dry-run] [--pre-kill-defer] [--park]
 * (default: all; a, parked, has park series without --park). */
static int cmd_metrics_sample(int argc, char **argv) {
        const uint64_t now = UINT64_C(1000000000000), mib = 1u << 20;
        struct mg_stats s1 = { .size = sizeof(s1), .fast_ticks = 1200, .slow_ticks = 34, .kills_overshoot = 2,
                               .kills_stall = 1, .kernel_oom_kills = 3, .errors = 1, .throttles = 1, .lends = 4,
                               .lend_expiries = 1, .kills_deferred = 1, .kills_averted = 1, .reclaims = 3,
                               .reclaimed_bytes = 150u << 20, .parks = 2, .parks_thawed = 1 };
        struct mg_stats s2 = { .size = sizeof(s2), .fast_ticks = 1234, .dry_run_kills = 2 };
        struct mg_stats quiet = { .size = sizeof(quiet), .fast_ticks = 100 };
        struct mg_stats ns = { .size = sizeof(ns), .fast_ticks = 2434, .slow_ticks = 34, .kills_overshoot = 5,
                               .kills_stall = 1, .kernel_oom_kills = 3, .dry_run_kills = 2, .errors = 1,
                               .throttles = 1, .lends = 4, .lend_expiries = 1, .kills_deferred = 1,
                               .kills_averted = 1, .reclaims = 5, .reclaimed_bytes = 250u << 20, .parks = 2,
                               .parks_thawed = 1 };
        struct mgt_counts c1 = { .empty_over_limit = 1 }, c0 = {},
                          node = { .empty_over_limit = 1, .unkillable = 2, .park_ends = { [MG_PARK_END_THAW] = 1 } };
        /* the park hook's runs: a thaw after 0.8 s, one more open */
        struct mgt_hook_stats hooks = { .results = { [MGT_HOOK_THAW] = 1 }, .bucket = { [2] = 1 }, .count = 1,
                                        .sum_usec = 812000 };
        struct mg_report r = { .size = sizeof(r), .used_bytes = 60u << 20, .current_bytes = 100u << 20,
                               .stall_usec = 1500000, .high_bytes = 60397977, .max_bytes = MG_UNLIMITED,
                               .stat = { .file = 40u << 20 }, .verdict = MG_VERDICT_STALLING };
        /* the fleet's, of 100 MiB limits: used in MiB */
        static const char *const names[] = { "/fleet/near", "/fleet/acted", "/fleet/acted-long-ago", "/fleet/q70",
                                             "/fleet/q67", "/fleet/q64-shown" };
        static const unsigned used[] = { 99, 20, 30, 70, 67, 64 };
        struct mg_report fr[6];
        struct mgt_metrics_actor a[8] = {
                { .cgroup = "/sandboxes/a \"q\" \\ \n\xff", .limit_bytes = 64u << 20, .limit_source = "xattr",
                  .lent = true, .had_lend = true, .report = &r, .stats = &s1, .counts = &c1,
                  .last_event_usec = now - 1000000, .parked = true },
                { .cgroup = "/sandboxes/b", .limit_bytes = 1u << 30, .limit_source = "default", .stats = &s2,
                  .counts = &c0, .reclaim_armed = true },
        };
        struct mgt_kill_latency lat = {
                /* overshoot: 0.05 s, 0.3 s, 2.2 s; stall: 12 s, 31 s */
                .bucket = { { [0] = 1, [2] = 1, [5] = 1 }, { [9] = 1 } },
                .count = { 3, 2 },
                .sum_usec = { 2550000, 43000000 },
        };
        struct mgt_metrics_node n = { .stats = &ns, .counts = &node, .cgroups = 8, .reloads = 3, .reload_errors = 1,
                                      .time_usec = UINT64_C(1796164055123456), .version = mg_version(),
                                      .latency = &lat, .hooks = &hooks };
        uint64_t max = MGT_METRICS_CGROUPS_ALL;
        size_t len;
        char *text;

        for (int i = 1; i < argc; i++) {
                struct mgt_settings set = {};
                char err[256];
                if (strcmp(argv[i], "--dry-run") == 0) {
                        n.dry_run = true;
                } else if (strcmp(argv[i], "--pre-kill-defer") == 0) {
                        n.pre_kill_defer = true;
                } else if (strcmp(argv[i], "--park") == 0) {
                        n.park = true;
                } else if (strcmp(argv[i], "--cgroups") == 0 && i + 1 < argc) {
                        if (mgt_setting_parse(MGT_KEY_METRICS_CGROUPS, argv[++i], &set, err, sizeof(err)) < 0)
                                return mgt_usage_error("metrics-sample", "--%s", err);
                        max = set.v[MGT_KEY_METRICS_CGROUPS].value;
                } else {
                        return mgt_usage_error("metrics-sample", "usage: memguard metrics-sample [--cgroups "
                                               "none|all|N] [--dry-run] [--pre-kill-defer] [--park]");
                }
        }
        for (size_t i = 0; i < 6; i++) {
                fr[i] = (struct mg_report) { .size = sizeof(fr[i]), .used_bytes = used[i] * mib,
                                             .current_bytes = (used[i] + 1) * mib, .high_bytes = MG_UNLIMITED,
                                             .max_bytes = 200 * mib, .stat = { .file = mib },
                                             .verdict = i == 0 ? MG_VERDICT_NEAR : MG_VERDICT_OK };
                a[2 + i] = (struct mgt_metrics_actor) { .cgroup = names[i], .limit_bytes = 100 * mib,
                                                        .limit_source = "memory.max", .report = &fr[i],
                                                        .stats = &quiet, .counts = &c0 };
        }
        a[3].last_event_usec = now - UINT64_C(60000000);
        a[4].last_event_usec = now - UINT64_C(1200000000);
        a[7].was_selected = true;
        (void) mgt_metrics_select(a, 8, max, now);
        text = mgt_metrics_format(a, 8, &n, &len);
        if (!text)
                return MGT_EXIT_FAIL;
        fwrite(text, 1, len, stdout);
        free(text);
        return MGT_EXIT_OK;
}

/* `journal-sample [--json]`: event-sample's events as journal entries, in
 * the export form on stderr. */
static int cmd_journal_sample(int argc, char **argv) {
        if (mgt_output_journal(MGT_JOURNAL_EXPORT) < 0)
                return MGT_EXIT_FAIL;
        return cmd_event_sample(argc, argv);
}

/* `journal-detect`: what watch decides of its stderr. */
static int cmd_journal_detect(int argc, char **argv) {
        int r;

        (void) argv;
        if (argc != 1)
                return mgt_usage_error("journal-detect", "usage: memguard journal-detect");
        r = mgt_journal_stderr_is_journal();
        if (r < 0) {
                printf("error: %s\n", strerror(-r));
                return MGT_EXIT_FAIL;
        }
        printf("%s\n%s\n", r ? "journal" : "stream", mgt_journal_available() ? "native" : "no-libsystemd");
        return MGT_EXIT_OK;
}

/* `journal-ids`: "NAME MESSAGE_ID PRIORITY" for each kind of entry, for
 * the check against the catalog and memguard(1). */
static int cmd_journal_ids(int argc, char **argv) {
        (void) argv;
        if (argc != 1)
                return mgt_usage_error("journal-ids", "usage: memguard journal-ids");
        for (int m = MGT_MSG_NONE + 1; m < _MGT_MSG_MAX; m++)
                printf("%s %s %d\n", mgt_msg_name((enum mgt_msg) m), mgt_msg_id((enum mgt_msg) m),
                       mgt_msg_priority((enum mgt_msg) m));
        return MGT_EXIT_OK;
}

/* `config-keys`: every key of config.h, one a line. */
static int cmd_config_keys(int argc, char **argv) {
        (void) argv;
        if (argc != 1)
                return mgt_usage_error("config-keys", "usage: memguard config-keys");
        for (int k = 0; k < _MGT_KEY_MAX; k++)
                printf("%s\n", mgt_key_name((enum mgt_key) k));
        return MGT_EXIT_OK;
}

/* `memguard options LIMIT [--config FILE] [--KEY VALUE]...`: what watch
 * makes of a config file and its tuning flags (the keys' long options) for
 * a cgroup of LIMIT: the settings merged and checked as watch does at
 * start (the same messages and exit statuses), the mg_guard_options it
 * passes, one "field value" line each, then whether the library takes them
 * (mg_guard_new() checks the options before it opens the cgroup, here one
 * that does not exist). */
static int cmd_options(int argc, char **argv) {
        struct mgt_settings file = {}, cli = {}; /* the file's and the flags' */
        struct mg_guard_options o;
        const char *config = NULL;
        char err[1024];
        uint64_t limit;
        mg_guard *g = NULL;
        int r;

        if (argc < 2 || argc % 2 != 0)
                return mgt_usage_error("options", "usage: memguard options LIMIT [--config FILE] [--KEY VALUE]...");
        if (mgt_size_arg("options", "LIMIT", argv[1], 0, NULL, 0, &limit) != 0)
                return MGT_EXIT_USAGE;
        for (int i = 2; i < argc; i += 2) {
                int k = strncmp(argv[i], "--", 2) == 0 ? mgt_key_from_name(argv[i] + 2) : -1;
                if (strcmp(argv[i], "--config") == 0) {
                        config = argv[i + 1];
                        continue;
                }
                if (k < 0)
                        return mgt_usage_error("options", "unknown option %s", argv[i]);
                if (mgt_setting_parse((enum mgt_key) k, argv[i + 1], &cli, err, sizeof(err)) < 0)
                        return mgt_usage_error("options", "--%s", err);
        }
        if (!config && mgt_settings_check(&cli, "--", err, sizeof(err)) < 0)
                return mgt_usage_error("options", "%s", err);
        if (config && mgt_config_load(config, &file, err, sizeof(err)) < 0) {
                fprintf(stderr, "memguard options: %s\n", err);
                return MGT_EXIT_FAIL;
        }
        mgt_settings_merge(&file, &cli);
        if (mgt_settings_check(&file, "", err, sizeof(err)) < 0) {
                fprintf(stderr, "--config %s with the command line: %s\n", config, err);
                return MGT_EXIT_FAIL;
        }
        r = mgt_settings_apply(&file, limit, &o);
        if (r < 0) {
                fprintf(stderr, "%s\n", strerror(-r));
                return MGT_EXIT_FAIL;
        }
        printf("limit_bytes %" PRIu64 "\ntick_usec %" PRIu64 "\nmargin_bytes %" PRIu64 "\nstall_window_usec %" PRIu64
               "\nstall_pressure_permyriad %" PRIu32 "\nlend_deadline_usec %" PRIu64 "\nkill_wait_usec %" PRIu64
               "\npost_kill_holdoff_usec %" PRIu64 "\nrefault_window_usec %" PRIu64
               "\nrefault_mapped_window_usec %" PRIu64 "\n",
               o.limit_bytes, o.tick_usec, o.margin_bytes, o.stall_window_usec, o.stall_pressure_permyriad,
               o.lend_deadline_usec, o.kill_wait_usec, o.post_kill_holdoff_usec, o.refault_window_usec,
               o.refault_mapped_window_usec);
        printf("reclaim_dose_bytes %" PRIu64 "\nreclaim_cgroup %s\nreclaim_some_usec %" PRIu32
               "\nreclaim_full_usec %" PRIu32 "\nreclaim_windows %" PRIu32 "\nreclaim_cooldown_usec %" PRIu64
               "\nreclaim_headroom_bytes %" PRIu64 "\n",
               o.reclaim_dose_bytes, o.reclaim_cgroup ? o.reclaim_cgroup : "(none)", o.reclaim_some_usec,
               o.reclaim_full_usec, o.reclaim_windows, o.reclaim_cooldown_usec, o.reclaim_headroom_bytes);
        printf("park_deadline_usec %" PRIu64 "\npark_timeout_usec %" PRIu64 "\n", o.park_deadline_usec,
               mgt_settings_park_timeout(&file));
        r = mg_guard_new("/nonexistent/memguard-options", &o, &g);
        mg_guard_free(g);
        if (r == -EINVAL || r == -E2BIG) {
                printf("library refuses them: %s\n", strerror(-r));
                return MGT_EXIT_FAIL;
        }
        printf("library takes them\n");
        return MGT_EXIT_OK;
}

/* `stat-dir DIR [LIMIT]`: stat's report of DIR, any directory (a fixture
 * of files): what stat says past its cgroup v2 check, on any host. */
static int cmd_stat_dir(int argc, char **argv) {
        if (argc < 2 || argc > 3)
                return mgt_usage_error("stat-dir", "usage: memguard stat-dir DIR [LIMIT]");
        return mgt_stat_cgroup(argv[1], argc == 3 ? argv[2] : NULL, false);
}

static const struct {
        const char *name;
        int (*fn)(int, char **);
} commands[] = {
        { "stat-dir", cmd_stat_dir },
        { "size-parse", cmd_size_parse },
        { "json-escape", cmd_json_escape },
        { "event-sample", cmd_event_sample },
        { "metrics-sample", cmd_metrics_sample },
        { "journal-sample", cmd_journal_sample },
        { "journal-detect", cmd_journal_detect },
        { "journal-ids", cmd_journal_ids },
        { "config-parse", mgt_cmd_config_parse },
        { "config-keys", cmd_config_keys },
        { "options", cmd_options },
};

int main(int argc, char **argv) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        for (size_t i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].fn(argc - 1, argv + 1);
        fprintf(stderr, "usage: memguard-test-commands size-parse|json-escape|event-sample|metrics-sample|journal-sample|\n"
                        "    journal-detect|journal-ids|config-parse|config-keys|options|stat-dir ...\n");
        return MGT_EXIT_USAGE;
}
