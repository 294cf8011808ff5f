/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgdir.h"
#include "config.h"
#include "hook.h"
#include "size.h"

/* The most a reclaim-some or reclaim-full threshold may be: the stall in
 * one window of a second does not exceed it. */
#define RECLAIM_STALL_MAX_USEC ((uint64_t) 1000000)

static const char *const key_names[_MGT_KEY_MAX] = {
        [MGT_KEY_LIMIT] = "limit",
        [MGT_KEY_TICK] = "tick",
        [MGT_KEY_MARGIN] = "margin",
        [MGT_KEY_STALL_WINDOW] = "stall-window",
        [MGT_KEY_STALL_PRESSURE] = "stall-pressure",
        [MGT_KEY_LEND_DEADLINE] = "lend-deadline",
        [MGT_KEY_KILL_WAIT] = "kill-wait",
        [MGT_KEY_POST_KILL_HOLDOFF] = "post-kill-holdoff",
        [MGT_KEY_REFAULT_WINDOW] = "refault-window",
        [MGT_KEY_REFAULT_MAPPED_WINDOW] = "refault-mapped-window",
        [MGT_KEY_RECLAIM_DOSE] = "reclaim-dose",
        [MGT_KEY_RECLAIM_CGROUP] = "reclaim-cgroup",
        [MGT_KEY_RECLAIM_SOME] = "reclaim-some",
        [MGT_KEY_RECLAIM_FULL] = "reclaim-full",
        [MGT_KEY_RECLAIM_WINDOWS] = "reclaim-windows",
        [MGT_KEY_RECLAIM_COOLDOWN] = "reclaim-cooldown",
        [MGT_KEY_RECLAIM_HEADROOM] = "reclaim-headroom",
        [MGT_KEY_PARENT] = "parent",
        [MGT_KEY_METRICS] = "metrics",
        [MGT_KEY_METRICS_INTERVAL] = "metrics-interval",
        [MGT_KEY_MLOCK] = "mlock",
        [MGT_KEY_JSON] = "json",
        [MGT_KEY_DRY_RUN] = "dry-run",
        [MGT_KEY_PRE_KILL_DEFER] = "pre-kill-defer",
        [MGT_KEY_METRICS_CGROUPS] = "metrics-cgroups",
        [MGT_KEY_PARK_HOOK] = "park-hook",
        [MGT_KEY_PARK_TIMEOUT] = "park-timeout",
};

/* The shortest metrics interval: a round reports on every guard. */
#define METRICS_INTERVAL_MIN_USEC ((uint64_t) 1000000)

int mgt_key_from_name(const char *name) {
        for (int k = 0; k < _MGT_KEY_MAX; k++)
                if (strcmp(name, key_names[k]) == 0)
                        return k;
        return -1;
}

const char *mgt_key_name(enum mgt_key k) {
        return k < _MGT_KEY_MAX ? key_names[k] : "?";
}

bool mgt_key_is_bool(enum mgt_key k) {
        return k == MGT_KEY_MLOCK || k == MGT_KEY_JSON || k == MGT_KEY_DRY_RUN;
}

/* Where a key whose value is a path keeps it; NULL for the others. */
static char *path_of(struct mgt_settings *s, enum mgt_key k) {
        switch (k) {
        case MGT_KEY_RECLAIM_CGROUP: return s->reclaim_cgroup;
        case MGT_KEY_PARENT: return s->parent;
        case MGT_KEY_METRICS: return s->metrics;
        case MGT_KEY_PARK_HOOK: return s->park_hook;
        default: return NULL;
        }
}

const char *mgt_setting_str(const struct mgt_settings *s, enum mgt_key k) {
        return k < _MGT_KEY_MAX && s->v[k].set ? path_of((struct mgt_settings *) s, k) : NULL;
}

int mgt_duration_parse(const char *s, uint64_t *ret_usec) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = { { "us", 1 }, { "ms", 1000 }, { "s", 1000000 }, { "m", 60000000 }, { "", 1000000 } };
        uint64_t whole = 0, frac = 0, frac_div = 1;
        const char *p = s;

        if (!s || *p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                uint64_t d = (uint64_t) (*p - '0');
                if (whole > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                whole = whole * 10 + d;
        }
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++)
                        if (frac_div < 1000000) { /* a microsecond of a second is as fine as it gets */
                                frac = frac * 10 + (uint64_t) (*p - '0');
                                frac_div *= 10;
                        }
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(p, units[i].suffix) == 0) {
                        /* frac < 10^6 and usec <= 6 * 10^7: part cannot overflow; the
                         * sum can ("307445734561.9m" wrapped to 4.4 s) */
                        uint64_t part = frac * units[i].usec / frac_div;
                        if (whole > UINT64_MAX / units[i].usec || whole * units[i].usec > UINT64_MAX - part)
                                return -ERANGE;
                        *ret_usec = whole * units[i].usec + part;
                        return 0;
                }
        return -EINVAL;
}

/* reclaim-cgroup's path: one in the cgroup2 mount as it is, any other
 * below it ("bg" and "/bg" are /sys/fs/cgroup/bg); trailing slashes
 * dropped.  Nothing is looked up: the value may come with a reload, on the
 * confined thread, and each guard made opens its target anyway (an error
 * of mg_guard_new() there).  Returns 0, -EINVAL (empty) or -ERANGE (too
 * long). */
static int cgroup_path(const char *val, char *out, size_t len) {
        size_t root = strlen(MGT_CGROUP_ROOT), n;
        int r;

        if (*val == '\0')
                return -EINVAL;
        if (strncmp(val, MGT_CGROUP_ROOT, root) == 0 && (val[root] == '/' || val[root] == '\0')) {
                r = snprintf(out, len, "%s", val);
        } else {
                while (*val == '/')
                        val++;
                r = snprintf(out, len, "%s%s%s", MGT_CGROUP_ROOT, *val ? "/" : "", val);
        }
        if (r < 0 || (size_t) r >= len)
                return -ERANGE;
        for (n = (size_t) r; n > root && out[n - 1] == '/'; n--)
                out[n - 1] = '\0';
        return 0;
}

/* A flag of the command line as a key: the words systemd takes for a
 * boolean.  Returns 0 or -EINVAL. */
static int bool_parse(const char *val, uint64_t *ret) {
        static const char *const words[][2] = { { "no", "yes" }, { "false", "true" }, { "off", "on" }, { "0", "1" } };

        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                for (int v = 0; v < 2; v++)
                        if (strcmp(val, words[i][v]) == 0) {
                                *ret = (uint64_t) v;
                                return 0;
                        }
        return -EINVAL;
}

/* A whole number of min to max, digits only.  Returns 0 or -EINVAL. */
static int count_parse(const char *val, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (*val == '\0')
                return -EINVAL;
        for (const char *p = val; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t) (*p - '0');
                if (v > max)
                        return -EINVAL;
        }
        if (v < min)
                return -EINVAL;
        *ret = v;
        return 0;
}

int mgt_setting_parse(enum mgt_key k, const char *val, struct mgt_settings *ret, char *err, size_t err_len) {
        struct mgt_setting s = { .set = true };
        char path[PATH_MAX];
        int r;

        switch (k) {
        case MGT_KEY_LIMIT:
        case MGT_KEY_MARGIN: {
                size_t n = strlen(val);
                if (k == MGT_KEY_MARGIN && n > 1 && val[n - 1] == '%') {
                        /* a share of each actor's limit: parsed as a percentage of 10000 */
                        r = mgt_size_parse(val, 10000, MGT_SIZE_PERCENT, &s.value);
                        s.percent = true;
                        if (r == 0 && s.value >= 10000)
                                r = -ERANGE;
                } else {
                        r = mgt_size_parse(val, 0, 0, &s.value);
                }
                if (r == 0 && k == MGT_KEY_LIMIT && s.value == 0)
                        r = -ERANGE;
                if (r < 0)
                        snprintf(err, err_len, "%s %s: %s", key_names[k], val,
                                 r == -ERANGE ? "out of range" :
                                 k == MGT_KEY_MARGIN ? "not a size or a percentage of the limit (16M, 6.25%)"
                                                     : "not a size (bytes, or with K, M, G, T: 64M, 1.5G)");
                break;
        }
        case MGT_KEY_RECLAIM_DOSE:
        case MGT_KEY_RECLAIM_HEADROOM:
                /* 0 would be the library's "off": the key unset says that */
                r = mgt_size_parse(val, 0, 0, &s.value);
                if (r == 0 && s.value == 0)
                        r = -EINVAL;
                if (r < 0)
                        snprintf(err, err_len, "%s %s: %s", key_names[k], val,
                                 r == -ERANGE ? "out of range"
                                              : "not a size above 0 (bytes, or with K, M, G, T: 64M, 1.5G)");
                break;
        case MGT_KEY_STALL_PRESSURE: {
                size_t n = strlen(val);
                r = n > 1 && val[n - 1] == '%' ? mgt_size_parse(val, 10000, MGT_SIZE_PERCENT, &s.value) : -EINVAL;
                if (r == 0 && (s.value == 0 || s.value > 10000))
                        r = -ERANGE;
                if (r < 0)
                        snprintf(err, err_len, "%s %s: not a percentage above 0 and at most 100 (10%%)",
                                 key_names[k], val);
                break;
        }
        case MGT_KEY_RECLAIM_CGROUP:
                r = cgroup_path(val, path, sizeof(path));
                if (r == 0)
                        s.value = strlen(path);
                else
                        snprintf(err, err_len, "%s %.64s: %s", key_names[k], val,
                                 r == -ERANGE ? "too long" : "not a cgroup (bg, /bg, /sys/fs/cgroup/bg)");
                break;
        case MGT_KEY_PARENT:
        case MGT_KEY_METRICS: {
                /* As given: the parent is resolved at start, as --parent
                 * is, and the metrics file is the writer's to open. */
                size_t n = strlen(val);
                r = n == 0 ? -EINVAL : n >= sizeof(path) ? -ERANGE : 0;
                if (r == 0) {
                        memcpy(path, val, n + 1);
                        s.value = n;
                } else {
                        snprintf(err, err_len, "%s %.64s: %s", key_names[k], val,
                                 r == -ERANGE ? "too long" : "empty");
                }
                break;
        }
        case MGT_KEY_MLOCK:
        case MGT_KEY_JSON:
        case MGT_KEY_DRY_RUN:
                r = bool_parse(val, &s.value);
                if (r < 0)
                        snprintf(err, err_len, "%s %.64s: not a boolean (yes or no)", key_names[k], val);
                break;
        case MGT_KEY_METRICS_INTERVAL:
                r = mgt_duration_parse(val, &s.value);
                if (r == 0 && s.value < METRICS_INTERVAL_MIN_USEC)
                        r = -ERANGE;
                if (r < 0)
                        snprintf(err, err_len, "%s %s: not a duration of 1 s or more", key_names[k], val);
                break;
        case MGT_KEY_PRE_KILL_DEFER:
                r = mgt_duration_parse(val, &s.value);
                if (r == 0 && (s.value < 1000 || s.value > MG_PRE_KILL_MAX_DEFER_USEC))
                        r = -ERANGE;
                if (r < 0)
                        snprintf(err, err_len, "%s %s: not a duration of 1 ms to 60 s", key_names[k], val);
                break;
        case MGT_KEY_PARK_HOOK: {
                /* Checked as the runner splits it; kept as given. */
                char *argv[MGT_HOOK_ARGS_MAX + 1], why[160];
                r = mgt_hook_split(val, path, sizeof(path), argv, why, sizeof(why));
                if (r >= 0) {
                        r = 0;
                        s.value = strlen(val);
                        memcpy(path, val, s.value + 1);
                } else {
                        snprintf(err, err_len, "%s %.64s: %s", key_names[k], val, why);
                }
                break;
        }
        case MGT_KEY_PARK_TIMEOUT:
                r = mgt_duration_parse(val, &s.value);
                if (r == 0 && (s.value < MGT_PARK_TIMEOUT_MIN_USEC || s.value > MGT_PARK_TIMEOUT_MAX_USEC))
                        r = -ERANGE;
                if (r < 0)
                        snprintf(err, err_len, "%s %s: not a duration of 100 ms to 30 min", key_names[k], val);
                break;
        case MGT_KEY_RECLAIM_WINDOWS:
                r = count_parse(val, 1, MG_RECLAIM_WINDOWS_MAX, &s.value);
                if (r < 0)
                        snprintf(err, err_len, "%s %s: not a whole number of windows, 1 to %d", key_names[k], val,
                                 MG_RECLAIM_WINDOWS_MAX);
                break;
        case MGT_KEY_METRICS_CGROUPS:
                r = 0;
                if (strcmp(val, "all") == 0)
                        s.value = UINT64_MAX;
                else if (strcmp(val, "none") == 0)
                        s.value = 0;
                else
                        r = count_parse(val, 0, 1000000, &s.value);
                if (r < 0)
                        snprintf(err, err_len, "%s %s: not none, all or a number of cgroups (0 to 1000000)",
                                 key_names[k], val);
                break;
        case MGT_KEY_RECLAIM_SOME:
        case MGT_KEY_RECLAIM_FULL:
                r = mgt_duration_parse(val, &s.value);
                if (r == 0 && (s.value == 0 || s.value > RECLAIM_STALL_MAX_USEC))
                        r = -ERANGE;
                if (r < 0)
                        snprintf(err, err_len,
                                 "%s %s: not a duration above 0 and at most 1s (a stall in a window of a second: "
                                 "1ms, 20ms)",
                                 key_names[k], val);
                break;
        default:
                r = mgt_duration_parse(val, &s.value);
                if (r == 0 && s.value == 0)
                        r = -ERANGE;
                if (r < 0)
                        snprintf(err, err_len, "%s %s: not a duration above 0 (250ms, 2s, 1.5s, 1m)", key_names[k],
                                 val);
        }
        if (r < 0)
                return r;
        ret->v[k] = s;
        if (path_of(ret, k))
                memcpy(path_of(ret, k), path, s.value + 1);
        return 0;
}

/* Trims spaces and tabs at both ends, in place. */
static char *trim(char *s) {
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = '\0';
        return s;
}

int mgt_config_parse(const char *buf, size_t len, struct mgt_settings *ret, char *err, size_t err_len) {
        struct mgt_settings s = {};
        char line[512], why[256];
        unsigned lineno = 0;
        size_t at = 0;

        while (at < len) {
                const char *nl = memchr(buf + at, '\n', len - at);
                size_t n = (nl ? (size_t) (nl - buf) : len) - at;
                char *eq, *key, *val;
                int k;

                lineno++;
                if (n >= sizeof(line)) {
                        snprintf(err, err_len, "line %u: longer than %zu bytes", lineno, sizeof(line) - 1);
                        return -EINVAL;
                }
                memcpy(line, buf + at, n);
                line[n] = '\0';
                at += n + 1;
                if (memchr(line, '\0', n)) {
                        snprintf(err, err_len, "line %u: a NUL byte", lineno);
                        return -EINVAL;
                }
                key = trim(line);
                if (*key == '\0' || *key == '#')
                        continue;
                eq = strchr(key, '=');
                if (!eq) {
                        snprintf(err, err_len, "line %u: not \"key = value\"", lineno);
                        return -EINVAL;
                }
                *eq = '\0';
                key = trim(key);
                val = trim(eq + 1);
                k = mgt_key_from_name(key);
                if (k < 0) {
                        snprintf(err, err_len, "line %u: unknown key \"%.64s\"", lineno, key);
                        return -EINVAL;
                }
                if (s.v[k].set) {
                        snprintf(err, err_len, "line %u: %s set twice", lineno, key);
                        return -EINVAL;
                }
                if (mgt_setting_parse((enum mgt_key) k, val, &s, why, sizeof(why)) < 0) {
                        snprintf(err, err_len, "line %u: %s", lineno, why);
                        return -EINVAL;
                }
        }
        *ret = s;
        return 0;
}

void mgt_settings_merge(struct mgt_settings *base, const struct mgt_settings *over) {
        for (int k = 0; k < _MGT_KEY_MAX; k++)
                if (over->v[k].set)
                        mgt_setting_copy(base, over, (enum mgt_key) k);
}

bool mgt_setting_equal(const struct mgt_settings *a, const struct mgt_settings *b, enum mgt_key k) {
        const char *x = mgt_setting_str(a, k), *y = mgt_setting_str(b, k);

        if (a->v[k].set != b->v[k].set)
                return false;
        if (!a->v[k].set)
                return true;
        if (x || y)
                return x && y && strcmp(x, y) == 0;
        return a->v[k].value == b->v[k].value && a->v[k].percent == b->v[k].percent;
}

void mgt_setting_copy(struct mgt_settings *dst, const struct mgt_settings *src, enum mgt_key k) {
        const char *p = mgt_setting_str(src, k);

        dst->v[k] = src->v[k];
        if (p)
                memcpy(path_of(dst, k), p, src->v[k].value + 1);
}

int mgt_settings_check(const struct mgt_settings *s, const char *dashes, char *err, size_t err_len) {
        static const enum mgt_key needs_dose[] = { MGT_KEY_RECLAIM_CGROUP,  MGT_KEY_RECLAIM_SOME,
                                                   MGT_KEY_RECLAIM_FULL,    MGT_KEY_RECLAIM_WINDOWS,
                                                   MGT_KEY_RECLAIM_COOLDOWN, MGT_KEY_RECLAIM_HEADROOM };
        static const enum mgt_key pressure_only[] = { MGT_KEY_RECLAIM_WINDOWS, MGT_KEY_RECLAIM_COOLDOWN };
        const struct mgt_setting *v = s->v;
        const char *d = dashes;

        if (v[MGT_KEY_PARK_TIMEOUT].set && !v[MGT_KEY_PARK_HOOK].set) {
                snprintf(err, err_len, "%spark-timeout without %spark-hook: parking is off until a hook is set", d, d);
                return -EINVAL;
        }
        for (size_t i = 0; i < sizeof(needs_dose) / sizeof(needs_dose[0]); i++)
                if (v[needs_dose[i]].set && !v[MGT_KEY_RECLAIM_DOSE].set) {
                        snprintf(err, err_len, "%s%s without %sreclaim-dose: the reclaim actuator is off until a dose "
                                 "is set", d, key_names[needs_dose[i]], d);
                        return -EINVAL;
                }
        if (v[MGT_KEY_RECLAIM_HEADROOM].set && v[MGT_KEY_RECLAIM_CGROUP].set) {
                snprintf(err, err_len, "%sreclaim-headroom with %sreclaim-cgroup: the headroom rule doses the actor's "
                         "own cgroup only", d, d);
                return -EINVAL;
        }
        /* With a headroom and no stall asked for, the pressure predicate is
         * off (the library arms it by default only without a headroom). */
        if (v[MGT_KEY_RECLAIM_HEADROOM].set && !v[MGT_KEY_RECLAIM_SOME].set && !v[MGT_KEY_RECLAIM_FULL].set)
                for (size_t i = 0; i < sizeof(pressure_only) / sizeof(pressure_only[0]); i++)
                        if (v[pressure_only[i]].set) {
                                snprintf(err, err_len, "%s%s is of the pressure predicate, which %sreclaim-headroom "
                                         "alone leaves off: set %sreclaim-some or %sreclaim-full too",
                                         d, key_names[pressure_only[i]], d, d, d);
                                return -EINVAL;
                        }
        return 0;
}

int mgt_settings_apply(const struct mgt_settings *s, uint64_t limit, struct mg_guard_options *o) {
        const struct mgt_setting *v = s->v;
        int r = mg_guard_options_init(o, limit);

        if (r < 0)
                return r;
        if (v[MGT_KEY_TICK].set)
                o->tick_usec = v[MGT_KEY_TICK].value;
        if (v[MGT_KEY_MARGIN].set)
                o->margin_bytes = v[MGT_KEY_MARGIN].percent
                                          ? (uint64_t) ((unsigned __int128) limit * v[MGT_KEY_MARGIN].value / 10000)
                                          : v[MGT_KEY_MARGIN].value;
        if (v[MGT_KEY_STALL_WINDOW].set)
                o->stall_window_usec = v[MGT_KEY_STALL_WINDOW].value;
        if (v[MGT_KEY_STALL_PRESSURE].set)
                o->stall_pressure_permyriad = (uint32_t) v[MGT_KEY_STALL_PRESSURE].value;
        if (v[MGT_KEY_LEND_DEADLINE].set)
                o->lend_deadline_usec = v[MGT_KEY_LEND_DEADLINE].value;
        if (v[MGT_KEY_KILL_WAIT].set)
                o->kill_wait_usec = v[MGT_KEY_KILL_WAIT].value;
        if (v[MGT_KEY_POST_KILL_HOLDOFF].set)
                o->post_kill_holdoff_usec = v[MGT_KEY_POST_KILL_HOLDOFF].value;
        if (v[MGT_KEY_REFAULT_WINDOW].set)
                o->refault_window_usec = v[MGT_KEY_REFAULT_WINDOW].value;
        if (v[MGT_KEY_REFAULT_MAPPED_WINDOW].set)
                o->refault_mapped_window_usec = v[MGT_KEY_REFAULT_MAPPED_WINDOW].value;
        if (v[MGT_KEY_RECLAIM_DOSE].set)
                o->reclaim_dose_bytes = v[MGT_KEY_RECLAIM_DOSE].value;
        if (v[MGT_KEY_RECLAIM_CGROUP].set)
                o->reclaim_cgroup = s->reclaim_cgroup;
        /* at most RECLAIM_STALL_MAX_USEC and MG_RECLAIM_WINDOWS_MAX: they fit */
        if (v[MGT_KEY_RECLAIM_SOME].set)
                o->reclaim_some_usec = (uint32_t) v[MGT_KEY_RECLAIM_SOME].value;
        if (v[MGT_KEY_RECLAIM_FULL].set)
                o->reclaim_full_usec = (uint32_t) v[MGT_KEY_RECLAIM_FULL].value;
        if (v[MGT_KEY_RECLAIM_WINDOWS].set)
                o->reclaim_windows = (uint32_t) v[MGT_KEY_RECLAIM_WINDOWS].value;
        if (v[MGT_KEY_RECLAIM_COOLDOWN].set)
                o->reclaim_cooldown_usec = v[MGT_KEY_RECLAIM_COOLDOWN].value;
        if (v[MGT_KEY_RECLAIM_HEADROOM].set)
                o->reclaim_headroom_bytes = v[MGT_KEY_RECLAIM_HEADROOM].value;
        if (v[MGT_KEY_PARK_HOOK].set) {
                uint64_t t = mgt_settings_park_timeout(s);
                uint64_t d = o->kill_wait_usec + t + mgt_hook_grace_usec(t) + MGT_PARK_SLACK_USEC;
                o->park_deadline_usec = d < MG_PARK_MAX_USEC ? d : MG_PARK_MAX_USEC;
        }
        return 0;
}

uint64_t mgt_settings_park_timeout(const struct mgt_settings *s) {
        if (!s->v[MGT_KEY_PARK_HOOK].set)
                return 0;
        return s->v[MGT_KEY_PARK_TIMEOUT].set ? s->v[MGT_KEY_PARK_TIMEOUT].value : MGT_PARK_TIMEOUT_DEFAULT_USEC;
}
