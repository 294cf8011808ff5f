/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memguard command's pieces that need no cgroup (tools/memguard/
 * meson.build, mgt-parts): the duration parser at the edge of 2^64
 * microseconds in every unit; a refused value said once per streak (watch's
 * user.memguard.limit); the metrics file replaced through a temporary file,
 * in a temp dir; watch's config file and its drop-ins, in a temp dir;
 * the journal: $JOURNAL_STREAM's match with stderr, a kill record as the
 * list of its entry's fields, an entry's bounds.  The command itself:
 * tests/cli/memguard/test-cli.sh and test-watch-reload.sh.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "config-load.h"
#include "config.h"
#include "events.h"
#include "fixture.h"
#include "journal.h"
#include "replace.h"
#include "streak.h"

static uint64_t dur(const char *s, int want) {
        uint64_t v = 12345;
        int r = mgt_duration_parse(s, &v);
        cr_expect_eq(r, want, "\"%s\": %d, not %d", s, r, want);
        if (r < 0)
                cr_expect_eq(v, 12345, "\"%s\": the output written on failure", s);
        return v;
}

TestSuite(duration);

Test(duration, units) {
        cr_expect_eq(dur("250ms", 0), 250000);
        cr_expect_eq(dur("2s", 0), 2000000);
        cr_expect_eq(dur("1.5s", 0), 1500000);
        cr_expect_eq(dur("1m", 0), 60000000);
        cr_expect_eq(dur("500us", 0), 500);
        cr_expect_eq(dur("3", 0), 3000000);
        cr_expect_eq(dur("0.0000019s", 0), 1, "past the microsecond: cut");
        cr_expect_eq(dur("0", 0), 0);
        dur("", -EINVAL);
        dur("1.s", -EINVAL);
        dur(".5s", -EINVAL);
        dur("-1s", -EINVAL);
        dur("1h", -EINVAL);
        dur("1 s", -EINVAL);
        dur(NULL, -EINVAL);
}

/* 2^64 - 1 us = 18446744073709551615 us = 18446744073709551.615 ms
 * = 18446744073709.551615 s = 307445734561 m + 49551615 us (.825860 m and
 * 15 us).  Each is the largest value; one more unit of its last digit is
 * -ERANGE, in the whole part or in the fraction. */
Test(duration, largest_valid_and_first_overflowing) {
        cr_expect_eq(dur("18446744073709551615us", 0), UINT64_MAX);
        dur("18446744073709551616us", -ERANGE);
        dur("18446744073709551620us", -ERANGE);
        dur("99999999999999999999us", -ERANGE);
        dur("184467440737095516150us", -ERANGE);

        cr_expect_eq(dur("18446744073709551ms", 0), UINT64_MAX - 615);
        dur("18446744073709552ms", -ERANGE);
        cr_expect_eq(dur("18446744073709551.615ms", 0), UINT64_MAX);
        dur("18446744073709551.616ms", -ERANGE);

        cr_expect_eq(dur("18446744073709s", 0), UINT64_MAX - 551615);
        dur("18446744073710s", -ERANGE);
        cr_expect_eq(dur("18446744073709.551615s", 0), UINT64_MAX);
        dur("18446744073709.551616s", -ERANGE);
        cr_expect_eq(dur("18446744073709.551615", 0), UINT64_MAX, "plain seconds");
        dur("18446744073709.551616", -ERANGE);

        cr_expect_eq(dur("307445734561m", 0), UINT64_C(307445734561) * 60000000);
        dur("307445734562m", -ERANGE);
        cr_expect_eq(dur("307445734561.825860m", 0), UINT64_C(307445734561) * 60000000 + 49551600);
        dur("307445734561.825861m", -ERANGE);
}

/* A fraction that takes a whole part at its largest over the edge: this
 * one wrapped to 4.4 s and was taken as a 4.4 s --pre-kill-defer. */
Test(duration, fractional_overflow) {
        dur("307445734561.9m", -ERANGE);
        dur("307445734561.83m", -ERANGE);
        cr_expect_eq(dur("307445734561.8m", 0), UINT64_C(307445734561) * 60000000 + 48000000);
        dur("18446744073709.6s", -ERANGE);
        dur("18446744073709551.7ms", -ERANGE);
        cr_expect_eq(dur("18446744073709551615.9us", 0), UINT64_MAX, "a fraction of a microsecond is cut");
}

TestSuite(streak);

Test(streak, said_once_until_good_or_another_value) {
        struct mgt_streak s = { 0 };

        cr_expect(mgt_streak_bad(&s, "lots"), "the first bad value is said");
        for (int i = 0; i < 100; i++)
                cr_expect(!mgt_streak_bad(&s, "lots"), "not at every inotify event");
        cr_expect(mgt_streak_bad(&s, "0"), "another bad value is said");
        cr_expect(!mgt_streak_bad(&s, "0"));
        cr_expect(mgt_streak_bad(&s, "lots"), "and the first one again after it");
        mgt_streak_end(&s);
        cr_expect(mgt_streak_bad(&s, "lots"), "bad again after a good value");
        cr_expect(!mgt_streak_bad(&s, "lots"));
        mgt_streak_end(&s);
        mgt_streak_end(&s);
        cr_expect(mgt_streak_bad(&s, ""), "an empty value is a value");
        cr_expect(!mgt_streak_bad(&s, ""));
}

Test(streak, long_values_compare_by_what_is_kept) {
        struct mgt_streak s = { 0 };
        char a[200], b[200];

        memset(a, 'x', sizeof(a) - 1);
        a[sizeof(a) - 1] = '\0';
        memcpy(b, a, sizeof(b));
        b[10] = 'y';
        cr_expect(mgt_streak_bad(&s, a));
        cr_expect(!mgt_streak_bad(&s, a));
        cr_expect(mgt_streak_bad(&s, b), "differs within the kept bytes");
        cr_expect(mgt_streak_bad(&s, a));
        b[10] = 'x';
        b[150] = 'y';
        cr_expect(!mgt_streak_bad(&s, b), "differs only past them: the same value as said");
}

/* ---- the metrics file ---------------------------------------------------- */

static char dir[256], file[300], tmp[300];

static void replace_setup(void) {
        snprintf(dir, sizeof(dir), "%s/mgt-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        cr_assert_not_null(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/metrics.prom", dir);
        snprintf(tmp, sizeof(tmp), "%s/metrics.prom.tmp", dir);
}

static void replace_teardown(void) {
        if (fixture_remove_tree(dir) < 0)
                abort();
}

static const char *slurp(const char *path) {
        static char buf[256];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;
        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        cr_assert_geq(n, 0);
        buf[n] = '\0';
        return buf;
}

TestSuite(replace, .init = replace_setup, .fini = replace_teardown);

Test(replace, replaces_and_leaves_no_temporary) {
        struct stat s;

        cr_expect_eq(mgt_file_replace(tmp, file, "a 1\n", 4), 0);
        cr_expect_str_eq(slurp(file), "a 1\n");
        cr_expect_eq(mgt_file_replace(tmp, file, "a 22\n", 5), 0);
        cr_expect_str_eq(slurp(file), "a 22\n");
        cr_expect_eq(stat(file, &s), 0);
        cr_expect_eq(s.st_mode & 0777 & ~0644, 0, "at most 0644 (the umask may take more)");
        cr_expect_eq(access(tmp, F_OK), -1, "the temporary file is gone");
        cr_expect_eq(mgt_file_replace(tmp, file, "", 0), 0, "an empty text");
        cr_expect_str_eq(slurp(file), "");
}

/* A failure keeps the last good file and removes the temporary one: here
 * the rename fails (a directory at the name), and a symlink planted at the
 * temporary name is neither followed nor written through. */
Test(replace, a_failure_keeps_the_last_good_file) {
        char victim[320];
        int fd;

        cr_assert_eq(mgt_file_replace(tmp, file, "good\n", 5), 0);
        cr_assert_eq(unlink(file), 0);
        cr_assert_eq(mkdir(file, 0700), 0);
        cr_expect_eq(mgt_file_replace(tmp, file, "new\n", 4), -EISDIR);
        cr_expect_eq(access(tmp, F_OK), -1, "the temporary file is gone");
        cr_assert_eq(rmdir(file), 0);

        cr_assert_eq(mgt_file_replace(tmp, file, "good\n", 5), 0);
        snprintf(victim, sizeof(victim), "%s/victim", dir);
        fd = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, "mine\n", 5), 5);
        close(fd);
        cr_assert_eq(symlink(victim, tmp), 0);
        cr_expect_eq(mgt_file_replace(tmp, file, "new\n", 4), -ELOOP);
        cr_expect_str_eq(slurp(victim), "mine\n");
        cr_expect_str_eq(slurp(file), "good\n");
        cr_expect_eq(access(tmp, F_OK), -1, "the symlink is removed: the next interval writes");
        cr_expect_eq(mgt_file_replace(tmp, file, "new\n", 4), 0);
        cr_expect_str_eq(slurp(file), "new\n");
}

/* ---- watch's config file and its drop-ins ---------------------------------- */

static char cdir[256], conf[300], dropins[310];

static void put_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
}

static void put_dropin(const char *name, const char *text) {
        char path[400];
        snprintf(path, sizeof(path), "%s/%s", dropins, name);
        put_file(path, text);
}

static void config_setup(void) {
        snprintf(cdir, sizeof(cdir), "%s/mgt-conf-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        cr_assert_not_null(mkdtemp(cdir));
        snprintf(conf, sizeof(conf), "%s/watch.conf", cdir);
        snprintf(dropins, sizeof(dropins), "%s.d", conf);
}

static void config_teardown(void) {
        if (fixture_remove_tree(cdir) < 0)
                abort();
}

TestSuite(config, .init = config_setup, .fini = config_teardown);

Test(config, dropins_in_lexical_order_later_files_win) {
        struct mgt_settings s;
        char err[512];

        put_file(conf, "limit = 1G\ntick = 100ms\njson = yes\n");
        cr_assert_eq(mgt_config_load(conf, &s, err, sizeof(err)), 0, "%s", err);
        cr_expect_eq(s.v[MGT_KEY_LIMIT].value, 1u << 30, "no drop-in directory: the file alone");
        cr_assert_eq(mkdir(dropins, 0755), 0);
        /* byte order, not the locale's: "B" before "a", "10" before "9" */
        put_dropin("a.conf", "limit = 3G\n");
        put_dropin("B.conf", "limit = 2G\nmargin = 8M\n");
        put_dropin("10-x.conf", "tick = 200ms\nparent = first\n");
        put_dropin("9-x.conf", "tick = 300ms\nparent = second\n");
        put_dropin("z.conf~", "limit = 9G\n");
        put_dropin(".hidden.conf", "limit = 9G\n");
        cr_assert_eq(mgt_config_load(conf, &s, err, sizeof(err)), 0, "%s", err);
        cr_expect_eq(s.v[MGT_KEY_LIMIT].value, UINT64_C(3) << 30, "a.conf, the last, wins");
        cr_expect_eq(s.v[MGT_KEY_MARGIN].value, 8u << 20, "a key of an earlier drop-in stays");
        cr_expect_eq(s.v[MGT_KEY_TICK].value, 300000, "9-x.conf after 10-x.conf");
        cr_expect_str_eq(mgt_setting_str(&s, MGT_KEY_PARENT), "second", "a path key too");
        cr_expect(s.v[MGT_KEY_JSON].set && s.v[MGT_KEY_JSON].value == 1, "the file's key, no drop-in's");
}

/* Whether a and b say the same of every key. */
static bool same_settings(const struct mgt_settings *a, const struct mgt_settings *b) {
        for (int k = 0; k < _MGT_KEY_MAX; k++)
                if (!mgt_setting_equal(a, b, (enum mgt_key) k))
                        return false;
        return true;
}

/* What a reload does with the files: a bad one is refused whole, with
 * its path and line, and the settings in force are not touched. */
Test(config, a_bad_dropin_is_refused_and_the_last_good_settings_stay) {
        struct mgt_settings good, s;
        char err[512];

        cr_assert_eq(mkdir(dropins, 0755), 0);
        put_file(conf, "limit = 1G\n");
        put_dropin("50-site.conf", "stall-pressure = 20%\n");
        cr_assert_eq(mgt_config_load(conf, &good, err, sizeof(err)), 0, "%s", err);
        s = good;
        put_dropin("70-bad.conf", "stall-pressure = 30%\nstall-window = soon\n");
        cr_expect_eq(mgt_config_load(conf, &s, err, sizeof(err)), -EINVAL);
        cr_expect(strstr(err, "/watch.conf.d/70-bad.conf: line 2: stall-window soon: not a duration") != NULL, "%s",
                  err);
        cr_expect(strchr(err, '\n') == NULL, "one line");
        cr_expect(same_settings(&s, &good), "*ret untouched on failure");
        cr_expect_eq(s.v[MGT_KEY_STALL_PRESSURE].value, 2000);

        put_dropin("70-bad.conf", "stall-pressure = 30%\n");
        cr_assert_eq(mgt_config_load(conf, &s, err, sizeof(err)), 0, "%s", err);
        cr_expect_eq(s.v[MGT_KEY_STALL_PRESSURE].value, 3000, "fixed: the later file wins");

        cr_assert_eq(unlink(conf), 0);
        s = good;
        cr_expect_eq(mgt_config_load(conf, &s, err, sizeof(err)), -ENOENT, "drop-ins without their file");
        cr_expect(strstr(err, "watch.conf: No such file or directory") != NULL, "%s", err);
        cr_expect(same_settings(&s, &good));
}

Test(config, every_key_merges_and_compares) {
        struct mgt_settings a = {}, b = {};
        char err[256];

        cr_assert_eq(mgt_setting_parse(MGT_KEY_METRICS, "/var/lib/m.prom", &a, err, sizeof(err)), 0, "%s", err);
        cr_assert_eq(mgt_setting_parse(MGT_KEY_DRY_RUN, "yes", &a, err, sizeof(err)), 0, "%s", err);
        cr_expect(!mgt_setting_equal(&a, &b, MGT_KEY_METRICS));
        mgt_settings_merge(&b, &a);
        cr_expect(mgt_setting_equal(&a, &b, MGT_KEY_METRICS));
        cr_expect_str_eq(mgt_setting_str(&b, MGT_KEY_METRICS), "/var/lib/m.prom");
        cr_expect(b.v[MGT_KEY_DRY_RUN].set && b.v[MGT_KEY_DRY_RUN].value == 1);
        cr_assert_eq(mgt_setting_parse(MGT_KEY_METRICS, "/other.prom", &b, err, sizeof(err)), 0, "%s", err);
        cr_expect(!mgt_setting_equal(&a, &b, MGT_KEY_METRICS), "same length, another path");
        mgt_setting_copy(&b, &a, MGT_KEY_METRICS);
        cr_expect_str_eq(mgt_setting_str(&b, MGT_KEY_METRICS), "/var/lib/m.prom");
        for (int k = 0; k < _MGT_KEY_MAX; k++)
                cr_expect_eq(mgt_key_from_name(mgt_key_name((enum mgt_key) k)), k, "%s", mgt_key_name((enum mgt_key) k));
        cr_expect_eq(mgt_setting_parse(MGT_KEY_MLOCK, "maybe", &b, err, sizeof(err)), -EINVAL);
        cr_expect_str_eq(err, "mlock maybe: not a boolean (yes or no)");
}

/* ---- the journal ------------------------------------------------------------ */

TestSuite(journal);

/* systemd.exec(5): "DEVICE:INODE", both in decimal. */
Test(journal, stream_matches_device_and_inode_only) {
        cr_expect(mgt_journal_stream_matches("8:1234", makedev(0, 8), 1234));
        cr_expect(mgt_journal_stream_matches("65025:18446744073709551615", 65025, (ino_t) -1));
        cr_expect(!mgt_journal_stream_matches("8:1235", 8, 1234), "another inode: stderr redirected by a child");
        cr_expect(!mgt_journal_stream_matches("9:1234", 8, 1234), "another device");
        cr_expect(!mgt_journal_stream_matches(NULL, 8, 1234));
        cr_expect(!mgt_journal_stream_matches("", 8, 1234));
        cr_expect(!mgt_journal_stream_matches("8:", 8, 0));
        cr_expect(!mgt_journal_stream_matches(":1234", 0, 1234));
        cr_expect(!mgt_journal_stream_matches("8:1234x", 8, 1234));
        cr_expect(!mgt_journal_stream_matches("8:1234 ", 8, 1234));
        cr_expect(!mgt_journal_stream_matches("+8:1234", 8, 1234));
        cr_expect(!mgt_journal_stream_matches("8:-1234", 8, (ino_t) -1234));
        cr_expect(!mgt_journal_stream_matches("8 1234", 8, 1234));
        cr_expect(!mgt_journal_stream_matches("8:18446744073709551616", 8, 0), "past 2^64: not wrapped to 0");
}

/* The process's own stderr: a file whose st_dev:st_ino the test sets. */
Test(journal, stderr_is_the_journal_when_its_stream_is_named) {
        char path[256], env[64];
        struct stat st;
        int fd, saved = dup(STDERR_FILENO);

        snprintf(path, sizeof(path), "%s/mgt-stderr-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        fd = mkstemp(path);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fstat(fd, &st), 0);
        cr_assert_geq(dup2(fd, STDERR_FILENO), 0);
        unsetenv("JOURNAL_STREAM");
        cr_expect_eq(mgt_journal_stderr_is_journal(), 0, "unset");
        snprintf(env, sizeof(env), "%lu:%lu", (unsigned long) st.st_dev, (unsigned long) st.st_ino);
        setenv("JOURNAL_STREAM", env, 1);
        cr_expect_eq(mgt_journal_stderr_is_journal(), 1, "%s", env);
        snprintf(env, sizeof(env), "%lu:%lu", (unsigned long) st.st_dev, (unsigned long) st.st_ino + 1);
        setenv("JOURNAL_STREAM", env, 1);
        cr_expect_eq(mgt_journal_stderr_is_journal(), 0, "inherited, stderr elsewhere");
        close(STDERR_FILENO);
        cr_expect_eq(mgt_journal_stderr_is_journal(), 0, "no stderr at all");
        cr_assert_geq(dup2(saved, STDERR_FILENO), 0);
        unsetenv("JOURNAL_STREAM");
        close(saved);
        close(fd);
        unlink(path);
}

/* The fields of an entry, "KEY=value" each. */
static size_t fields(const struct mgt_journal_entry *e, const char **f, size_t max) {
        struct iovec iov[MGT_JOURNAL_FIELDS_MAX];
        static char copy[MGT_JOURNAL_ENTRY_BYTES];
        size_t n = mgt_journal_iovec(e->buf, e->len, iov, MGT_JOURNAL_FIELDS_MAX);

        memcpy(copy, e->buf, e->len);
        for (size_t i = 0; i < n && i < max; i++)
                f[i] = copy + ((const char *) iov[i].iov_base - e->buf);
        return n < max ? n : max;
}

static const char *field(const char *const *f, size_t n, const char *key) {
        size_t k = strlen(key);
        for (size_t i = 0; i < n; i++)
                if (strncmp(f[i], key, k) == 0 && f[i][k] == '=')
                        return f[i] + k + 1;
        return NULL;
}

/* A kill record, the entry's list of fields: what `journalctl
 * MEMGUARD_CGROUP=...` and an alert on MESSAGE_ID read. */
Test(journal, a_kill_record_as_its_fields) {
        static const char cg[] = "/sys/fs/cgroup/t/a\nb\xff";
        struct mg_kill_record k = {
                .size = sizeof(k), .reason = MG_KILL_OVERSHOOT, .method = MG_KILL_CGROUP_KILL, .cgroup = cg,
                .detect_usec = 1000000, .kill_usec = 1250000, .empty_usec = 1300000,
                .report = { .size = sizeof(k.report), .limit_bytes = 64u << 20, .used_bytes = 80u << 20,
                            .current_bytes = 81u << 20, .stat = { .anon = 79u << 20, .kernel = 1u << 20 } },
        };
        struct mg_event ev = { .type = MG_EVENT_KILL, .cgroup = cg, .kill = &k };
        static struct mgt_journal_entry e;
        const char *f[MGT_JOURNAL_FIELDS_MAX];
        size_t n;

        mgt_event_journal(&ev, 7, "memguard: kill: ...", &e);
        cr_expect(!e.truncated);
        n = fields(&e, f, MGT_JOURNAL_FIELDS_MAX);
        cr_assert_eq(n, e.n);
        cr_assert_geq(n, 3);
        cr_expect_str_eq(f[0], "PRIORITY=4", "a kill is a warning");
        cr_expect_str_eq(f[1], "MESSAGE_ID=1637127293384b0a969f4bec559c87d0");
        cr_expect_str_eq(f[n - 1], "MESSAGE=memguard: kill: ...", "the line last");
        cr_expect_str_eq(field(f, n, "MEMGUARD_EVENT"), "kill");
        cr_expect_str_eq(field(f, n, "MEMGUARD_REASON"), "overshoot");
        cr_expect_str_eq(field(f, n, "MEMGUARD_CGROUP"), "/sys/fs/cgroup/t/a\\x0ab\xef\xbf\xbd",
                         "a tenant's name stays one field of text");
        cr_expect_str_eq(field(f, n, "MEMGUARD_LIMIT_BYTES"), "67108864");
        cr_expect_str_eq(field(f, n, "MEMGUARD_USED_BYTES"), "83886080");
        cr_expect_str_eq(field(f, n, "MEMGUARD_ANON_BYTES"), "82837504");
        cr_expect_str_eq(field(f, n, "MEMGUARD_METHOD"), "cgroup.kill");
        cr_expect_str_eq(field(f, n, "MEMGUARD_DETECT_TO_KILL_MS"), "250");
        cr_expect_str_eq(field(f, n, "MEMGUARD_KILL_TO_EMPTY_MS"), "50");
        cr_expect_str_eq(field(f, n, "MEMGUARD_DRY_RUN"), "false");
        cr_expect_str_eq(field(f, n, "MEMGUARD_KILL_ID"), "7");
        cr_expect_not_null(field(f, n, "MEMGUARD_TIME"));
        cr_expect_null(field(f, n, "MEMGUARD_STALL_ON"), "null in JSON: no field");
        cr_expect_null(field(f, n, "MEMGUARD_STALL_REFAULT_BYTES"));
        cr_expect_null(field(f, n, "MEMGUARD_FORMAT_VERSION"), "the JSON stream's, not the journal's");
        for (size_t i = 0; i < n; i++) {
                const char *eq = strchr(f[i], '=');
                cr_assert_not_null(eq, "%s", f[i]);
                cr_expect(f[i][0] >= 'A' && f[i][0] <= 'Z', "%s", f[i]);
                for (const char *c = f[i]; c < eq; c++)
                        cr_expect((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_', "%s", f[i]);
                cr_expect(eq - f[i] <= 64, "journald's longest field name: %s", f[i]);
                cr_expect(strchr(eq, '\n') == NULL, "%s", f[i]);
        }
}

Test(journal, an_error_carries_errno) {
        struct mg_event ev = { .type = MG_EVENT_ERROR, .cgroup = "/sys/fs/cgroup/t", .error = -EACCES,
                               .what = "memory.stat" };
        static struct mgt_journal_entry e;
        const char *f[MGT_JOURNAL_FIELDS_MAX];
        size_t n;

        mgt_event_journal(&ev, 0, "x", &e);
        n = fields(&e, f, MGT_JOURNAL_FIELDS_MAX);
        cr_assert_geq(n, 3);
        cr_expect_str_eq(f[0], "PRIORITY=3");
        cr_expect_str_eq(field(f, n, "MESSAGE_ID"), "3c1f1815cf0942e2a36c6890df777d95");
        cr_expect_str_eq(field(f, n, "ERRNO"), "13", "systemd's own field for it");
        cr_expect_str_eq(field(f, n, "MEMGUARD_WHAT"), "memory.stat");
}

/* Every kind of entry has its own id, 128 bits in hex. */
Test(journal, message_ids_are_distinct_and_well_formed) {
        for (int m = MGT_MSG_NONE + 1; m < _MGT_MSG_MAX; m++) {
                const char *id = mgt_msg_id((enum mgt_msg) m);
                cr_assert_not_null(id);
                cr_expect_eq(strlen(id), 32, "%s", id);
                cr_expect_eq(strspn(id, "0123456789abcdef"), 32, "%s", id);
                cr_expect_eq(mgt_msg_of(mgt_msg_name((enum mgt_msg) m)), m);
                for (int o = m + 1; o < _MGT_MSG_MAX; o++)
                        cr_expect_str_neq(id, mgt_msg_id((enum mgt_msg) o));
        }
        cr_expect_null(mgt_msg_id(MGT_MSG_NONE));
        cr_expect_eq(mgt_msg_of("log"), MGT_MSG_NONE);
}

/* A field that does not fit is left out whole, the entry stays well formed. */
Test(journal, an_entry_is_bounded) {
        static struct mgt_journal_entry e;
        static char big[MGT_JOURNAL_ENTRY_BYTES];
        char key[16];

        memset(big, 'x', sizeof(big) - 1);
        mgt_journal_entry_init(&e, 6, MGT_MSG_NONE);
        cr_expect_eq(e.n, 1, "PRIORITY= alone");
        mgt_journal_add(&e, "MESSAGE", big);
        cr_expect(e.truncated);
        cr_expect_eq(e.n, 1, "left out whole");
        cr_expect_eq(e.len, strlen("PRIORITY=6") + 1);
        mgt_journal_entry_init(&e, 6, MGT_MSG_NONE);
        for (int i = 0; i < MGT_JOURNAL_FIELDS_MAX + 5; i++) {
                snprintf(key, sizeof(key), "F%d", i);
                mgt_journal_add(&e, key, "v");
        }
        cr_expect_eq(e.n, MGT_JOURNAL_FIELDS_MAX);
        cr_expect(e.truncated);
        cr_expect_lt(e.len, sizeof(e.buf), "a byte spare for a newline");
}
