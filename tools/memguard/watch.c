/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard watch: guards cgroups someone else made, until SIGINT/SIGTERM.
 * One guard set, one poll() with the signal pipe; removing the guards at
 * the end restores any memory.high a lend left raised.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cgdir.h"
#include "cli.h"
#include "events.h"
#include "loop.h"
#include "memguard/memguard.h"
#include "size.h"

int mgt_cmd_watch(int argc, char **argv) {
        static const struct option opts[] = {
                { "limit", required_argument, NULL, 'l' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, 0 };
        struct mgt_out out = {};
        const char *limit_s = NULL;
        mg_set *set = NULL;
        char **cgs = NULL;
        int n_cgs = 0;
        const char *what = NULL;
        uint64_t limit;
        int c, e, sigfd, ret = MGT_EXIT_FAIL;
        char lim[32];

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (c) {
                case 'l': limit_s = optarg; break;
                case 'j': out.json = true; break;
                case 'h': return mgt_help("watch");
                default: return mgt_getopt_error("watch", c, argv);
                }
        }
        if (!limit_s)
                return mgt_usage_error("watch", "missing --limit SIZE");
        if (optind >= argc)
                return mgt_usage_error("watch", "missing CGROUP");
        if (mgt_size_arg("watch", "--limit", limit_s, 0, NULL, 0, &limit))
                return MGT_EXIT_USAGE;
        if (limit == 0)
                return mgt_usage_error("watch", "--limit %s: the limit must be above 0 bytes", limit_s);

        sigfd = mgt_signals_open(sigs);
        e = sigfd < 0 ? sigfd : mg_set_new(NULL, &set);
        if (e < 0) {
                mgt_error(&out, "watch", e, "setting up");
                return MGT_EXIT_FAIL;
        }
        out.remove_gone_from = set;
        cgs = calloc((size_t) (argc - optind), sizeof(*cgs));
        if (!cgs) {
                mgt_error(&out, "watch", -ENOMEM, "setting up");
                goto out;
        }
        for (int i = optind; i < argc; i++) {
                struct mg_guard_options o;
                char *cg;

                e = mgt_cg_resolve(argv[i], &cg);
                if (e == -ENOTSUP) {
                        mgt_error(&out, "watch", 0, "%s: not a cgroup v2 directory", argv[i]);
                        goto out;
                }
                if (e < 0) {
                        mgt_error(&out, "watch", e, "%s", argv[i]);
                        goto out;
                }
                /* A lend whose process died left memory.high raised: end
                 * it if its deadline has passed; one still running is
                 * taken over by the guard and ended at its deadline. */
                e = mg_guard_recover(cg, MG_RECOVER_EXPIRED);
                if (e == 1)
                        mgt_note(&out, "memguard: %s: ended a lend its process left open (memory.high restored)", cg);
                else if (e == -EBUSY)
                        mgt_note(&out, "memguard: %s: a lend is open; the guard takes it over until its deadline", cg);
                else if (e < 0)
                        mgt_error(&out, "watch", e, "%s: the lend record", cg);
                mg_guard_options_init(&o, limit);
                o.on_event = mgt_on_event;
                o.userdata = &out;
                o.log = mgt_on_log;
                o.log_userdata = &out;
                e = mg_set_add(set, cg, &o, NULL);
                if (e < 0)
                        mgt_error(&out, "watch", e, "%s%s", cg,
                                  e == -ENOENT ? " (no memory controller: enable +memory in its parent)" : "");
                else
                        mgt_note(&out, "memguard: watching %s, limit %s", cg, mgt_size_format(limit, lim, sizeof(lim)));
                if (e < 0) {
                        free(cg);
                        goto out;
                }
                cgs[n_cgs++] = cg;
        }

        /* Set up: from here on only the guards' own work. */
        e = mgt_drop_privileges(mgt_all_have_cgroup_kill(cgs, n_cgs) ? 0 : MGT_KEEP_KILL, 0, &what);
        if (e == -EOPNOTSUPP)
                mgt_note(&out, "memguard: built without libseccomp: the thread is not confined");
        else if (e < 0) {
                mgt_error(&out, "watch", e, "%s", what);
                goto out;
        }

        for (;;) {
                struct pollfd p = { .fd = sigfd, .events = POLLIN };
                int sig;

                e = mgt_wait(set, &p, 1, UINT64_MAX);
                if (e < 0) {
                        mgt_error(&out, "watch", e, "guard set");
                        goto out;
                }
                while ((sig = mgt_signals_next(sigfd, NULL)) > 0)
                        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
                                mgt_note(&out, "memguard: stopping (signal %d)", sig);
                                ret = MGT_EXIT_OK;
                                goto out;
                        }
                if (mg_set_size(set) == 0) {
                        mgt_note(&out, "memguard: no cgroups left to watch");
                        ret = MGT_EXIT_OK;
                        goto out;
                }
        }
out:
        mg_set_free(set); /* restores lent memory.high */
        for (int i = 0; i < n_cgs; i++)
                free(cgs[i]);
        free(cgs);
        return ret;
}
