/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memguard command's pieces that need no cgroup (tools/memguard/
 * meson.build, mgt-parts): the duration parser at the edge of 2^64
 * microseconds in every unit; a refused value said once per streak (watch's
 * user.memguard.limit); the metrics file replaced through a temporary file,
 * in a temp dir.  The command itself: tests/cli/memguard/test-cli.sh.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fixture.h"
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
