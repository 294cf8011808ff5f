/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command line's errors: a usage error says what was wrong and points
 * at --help (exit MGT_EXIT_USAGE), for every command and for the test
 * commands (test-commands.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "size.h"

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
