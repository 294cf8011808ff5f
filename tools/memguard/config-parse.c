/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard config-parse FILE: the check of watch's configuration before it
 * is used.  It reads FILE and its drop-ins as watch does (config-load.h),
 * checks the keys that go together as watch does with no key on its
 * command line, and prints the settings that result, one "key value" line
 * each, or the one line that says what is wrong and where (exit 1).  The
 * unit runs it as its ExecReload=, so a file with an error fails
 * `systemctl reload` instead of a reload that keeps the last good one
 * in silence.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config-load.h"
#include "config.h"

int mgt_cmd_config_parse(int argc, char **argv) {
        struct mgt_settings s;
        char err[1024];

        if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
                return mgt_help("config-parse");
        if (argc != 2)
                return mgt_usage_error("config-parse", argc < 2 ? "missing FILE" : "one FILE only");
        if (argv[1][0] == '-' && argv[1][1] != '\0')
                return mgt_usage_error("config-parse", "unknown option %s", argv[1]);
        if (mgt_config_load(argv[1], &s, err, sizeof(err)) < 0) {
                fprintf(stderr, "memguard config-parse: %s\n", err);
                return MGT_EXIT_FAIL;
        }
        if (mgt_settings_check(&s, "", err, sizeof(err)) < 0) {
                fprintf(stderr, "memguard config-parse: %s and its drop-ins: %s\n", argv[1], err);
                return MGT_EXIT_FAIL;
        }
        for (int i = 0; i < _MGT_KEY_MAX; i++) {
                enum mgt_key k = (enum mgt_key) i;
                const char *str = mgt_setting_str(&s, k);

                if (!s.v[k].set)
                        continue;
                if (str)
                        printf("%s %s\n", mgt_key_name(k), str);
                else if (mgt_key_is_bool(k))
                        printf("%s %s\n", mgt_key_name(k), s.v[k].value ? "yes" : "no");
                else
                        printf("%s %" PRIu64 "%s\n", mgt_key_name(k), s.v[k].value, s.v[k].percent ? "%" : "");
        }
        return MGT_EXIT_OK;
}
