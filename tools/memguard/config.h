/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * watch's settings: every option of its command line but --config (the
 * default limit, the guard tuning that mg_guard_options exposes, the
 * reclaim actuator's, and how watch runs: its parent, metrics, output),
 * from the command line and from a config file of "key = value" lines and
 * its drop-ins (memguard(1), CONFIGURATION; config-load.h reads them).
 * Keys are the long options' names; the command line wins over the files.
 * Parsing is pure (a buffer in, settings out) so the tests drive it through
 * `memguard config-parse` and `memguard-test-commands options`.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memguard/memguard.h"

/* One setting: set or not (unset: the library's tuned default). */
struct mgt_setting {
        bool set;
        uint64_t value;         /* bytes, usec, permyriad, a count, 0 or 1 (a path: its length;
                                 * metrics-cgroups: 0 none, UINT64_MAX all) */
        bool percent;           /* margin: value is permyriad of each actor's limit */
};

enum mgt_key {
        MGT_KEY_LIMIT,
        MGT_KEY_TICK,
        MGT_KEY_MARGIN,
        MGT_KEY_STALL_WINDOW,
        MGT_KEY_STALL_PRESSURE,
        MGT_KEY_LEND_DEADLINE,
        MGT_KEY_KILL_WAIT,
        MGT_KEY_POST_KILL_HOLDOFF,
        MGT_KEY_REFAULT_WINDOW,
        MGT_KEY_REFAULT_MAPPED_WINDOW,
        MGT_KEY_RECLAIM_DOSE,
        MGT_KEY_RECLAIM_CGROUP,
        MGT_KEY_RECLAIM_SOME,
        MGT_KEY_RECLAIM_FULL,
        MGT_KEY_RECLAIM_WINDOWS,
        MGT_KEY_RECLAIM_COOLDOWN,
        MGT_KEY_RECLAIM_HEADROOM,
        /* How watch runs rather than how a guard decides.  parent, metrics,
         * mlock and json take effect at start only: a reload that changes
         * them says so and keeps the values in force (watch.c). */
        MGT_KEY_PARENT,
        MGT_KEY_METRICS,
        MGT_KEY_METRICS_INTERVAL,
        MGT_KEY_MLOCK,
        MGT_KEY_JSON,
        MGT_KEY_DRY_RUN,
        MGT_KEY_PRE_KILL_DEFER,
        MGT_KEY_METRICS_CGROUPS,        /* which cgroups --metrics gives series (metrics.h) */
        /* Park instead of kill (hook.h): park-hook is read at start only
         * (its runner is a process forked before the guards), park-timeout
         * on every reload. */
        MGT_KEY_PARK_HOOK,
        MGT_KEY_PARK_TIMEOUT,
        _MGT_KEY_MAX,
};

struct mgt_settings {
        struct mgt_setting v[_MGT_KEY_MAX];
        /* reclaim-cgroup, when set: below the cgroup2 mount ("bg" and "/bg"
         * are /sys/fs/cgroup/bg; a path in the mount is taken as it is).
         * A copy of the settings is a copy of the path. */
        char reclaim_cgroup[PATH_MAX];
        /* parent and metrics, when set: as given (watch resolves the
         * parent at start, as it does --parent). */
        char parent[PATH_MAX];
        char metrics[PATH_MAX];
        /* park-hook, when set: the command as given (hook.h checks it). */
        char park_hook[PATH_MAX];
};

/* park-timeout's bounds and default: the hook's time, from the park event
 * to its end.  A microVM's snapshot to a local disk takes seconds; the
 * actor stays frozen at its memory meanwhile. */
#define MGT_PARK_TIMEOUT_MIN_USEC ((uint64_t) 100 * 1000)
#define MGT_PARK_TIMEOUT_MAX_USEC ((uint64_t) 30 * 60 * 1000000)
#define MGT_PARK_TIMEOUT_DEFAULT_USEC ((uint64_t) 30 * 1000000)
/* The guard's own park deadline (mg_guard_options.park_deadline_usec) is
 * the backstop, above the hook's bound: it counts from the freeze, which
 * may take up to kill_wait_usec to hold (a task in D state), then the
 * hook's timeout and its grace from SIGTERM to SIGKILL
 * (mgt_hook_grace_usec()), then this for watch to hear the hook's end and
 * end the park itself. */
#define MGT_PARK_SLACK_USEC ((uint64_t) 2 * 1000000)
/* The park-timeout in force (the default when unset); 0 without park-hook. */
uint64_t mgt_settings_park_timeout(const struct mgt_settings *s);

/* The key of a long option or config key name ("stall-window"), or -1. */
int mgt_key_from_name(const char *name);
const char *mgt_key_name(enum mgt_key k);
/* Whether k is a flag without a value on the command line (--json): in a
 * file it takes a boolean (yes, no, true, false, on, off, 1, 0). */
bool mgt_key_is_bool(enum mgt_key k);
/* The text of a key whose value is a path (reclaim-cgroup, parent,
 * metrics) or a command (park-hook), NULL for any other key or one not set. */
const char *mgt_setting_str(const struct mgt_settings *s, enum mgt_key k);

/* Parses one value for key into s->v[k] (and s->reclaim_cgroup).  Returns
 * 0 or a negative errno, the message in err: -EINVAL not a value of its
 * kind, -ERANGE.  s is not written on failure. */
int mgt_setting_parse(enum mgt_key k, const char *val, struct mgt_settings *s, char *err, size_t err_len);

/* Parses a config file's text: "key = value" lines, '#' comments, blank
 * lines.  Returns 0, or -EINVAL with "LINE: what is wrong" in err; *ret is
 * written only on success. */
int mgt_config_parse(const char *buf, size_t len, struct mgt_settings *ret, char *err, size_t err_len);

/* over's settings that are set replace base's (the paths with them). */
void mgt_settings_merge(struct mgt_settings *base, const struct mgt_settings *over);
/* Whether a and b say the same of k (both unset, or the same value). */
bool mgt_setting_equal(const struct mgt_settings *a, const struct mgt_settings *b, enum mgt_key k);
/* dst's k as src's (unset if src's is). */
void mgt_setting_copy(struct mgt_settings *dst, const struct mgt_settings *src, enum mgt_key k);

/* Whether the settings fit together, checked on the merged ones (the
 * reclaim keys need reclaim-dose, which may come from the other source):
 * the reclaim actuator's rules of mg_guard_new() that no limit decides.
 * Returns 0, or -EINVAL with the message in err, its keys written with
 * dashes in front ("--" for the command line, "" for a config file). */
int mgt_settings_check(const struct mgt_settings *s, const char *dashes, char *err, size_t err_len);

/* Options for an actor with this limit: mg_guard_options_init() and what
 * the settings set (a margin in percent taken of limit; with park-hook,
 * park_deadline_usec: kill_wait_usec + park-timeout + its grace +
 * MGT_PARK_SLACK_USEC).
 * reclaim_cgroup points into s. */
int mgt_settings_apply(const struct mgt_settings *s, uint64_t limit, struct mg_guard_options *o);

/* A duration: "250ms", "2s", "1.5s", "1m", "500us", or plain seconds;
 * digits of a fraction past the microsecond are ignored.  Returns 0,
 * -EINVAL, or -ERANGE for any value above UINT64_MAX microseconds. */
int mgt_duration_parse(const char *s, uint64_t *ret_usec);
