/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard stat: one screen of what the guard reads for a cgroup and the
 * verdict it would give now (mg_guard_report(): it reads, never acts).  A
 * stall needs a window of ticks, so a single report can at most say
 * near-limit or overshoot.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cgdir.h"
#include "cli.h"
#include "events.h"
#include "json.h"
#include "memguard/memguard.h"
#include "size.h"

static const char *verdict_meaning(enum mg_verdict v) {
        switch (v) {
        case MG_VERDICT_OK: return "below limit - margin: only memory.current is read";
        case MG_VERDICT_NEAR: return "at the limit, nothing to act on";
        case MG_VERDICT_STALLING: return "stall criteria hold, not yet for a whole window";
        case MG_VERDICT_OVERSHOOT: return "used above the limit: a guard would kill now";
        case MG_VERDICT_STALL: return "stuck at the limit: a guard would kill now";
        }
        return "?";
}

static void print_json(const char *cg, const char *limit_source, const struct mg_report *r) {
        const struct mg_memstat *s = &r->stat;
        struct mgt_json j;
        const char *line;

        mgt_json_begin(&j);
        /* versioned as the events are (events.h): a field added keeps it */
        mgt_json_u64(&j, "format_version", MGT_EVENTS_FORMAT_VERSION);
        mgt_json_str(&j, "cgroup", cg);
        mgt_json_u64(&j, "limit_bytes", r->limit_bytes);
        mgt_json_str(&j, "limit_source", limit_source);
        mgt_json_u64(&j, "margin_bytes", r->margin_bytes);
        mgt_json_bytes(&j, "high_bytes", r->high_bytes);
        mgt_json_bytes(&j, "max_bytes", r->max_bytes);
        mgt_json_u64(&j, "current_bytes", r->current_bytes);
        mgt_json_u64(&j, "used_bytes", r->used_bytes);
        mgt_json_u64(&j, "anon_bytes", s->anon);
        mgt_json_u64(&j, "shmem_bytes", s->shmem);
        mgt_json_u64(&j, "kernel_bytes", s->kernel);
        mgt_json_u64(&j, "sock_bytes", s->sock);
        mgt_json_u64(&j, "file_bytes", s->file);
        mgt_json_u64(&j, "file_dirty_bytes", s->file_dirty);
        mgt_json_u64(&j, "file_writeback_bytes", s->file_writeback);
        mgt_json_u64(&j, "workingset_refault_file", s->workingset_refault_file);
        mgt_json_u64(&j, "workingset_refault_anon", s->workingset_refault_anon);
        mgt_json_centi(&j, "memory_some_avg10", r->memory_pressure.some.avg10_centipct);
        mgt_json_centi(&j, "memory_some_avg60", r->memory_pressure.some.avg60_centipct);
        mgt_json_u64(&j, "memory_some_total_usec", r->memory_pressure.some.total_usec);
        mgt_json_centi(&j, "memory_full_avg10", r->memory_pressure.full.avg10_centipct);
        mgt_json_centi(&j, "memory_full_avg60", r->memory_pressure.full.avg60_centipct);
        mgt_json_u64(&j, "memory_full_total_usec", r->memory_pressure.full.total_usec);
        mgt_json_centi(&j, "io_some_avg10", r->io_pressure.some.avg10_centipct);
        mgt_json_centi(&j, "io_some_avg60", r->io_pressure.some.avg60_centipct);
        mgt_json_u64(&j, "io_some_total_usec", r->io_pressure.some.total_usec);
        mgt_json_u64(&j, "events_low", r->events.low);
        mgt_json_u64(&j, "events_high", r->events.high);
        mgt_json_u64(&j, "events_max", r->events.max);
        mgt_json_u64(&j, "events_oom", r->events.oom);
        mgt_json_u64(&j, "events_oom_kill", r->events.oom_kill);
        mgt_json_u64(&j, "events_oom_group_kill", r->events.oom_group_kill);
        mgt_json_str(&j, "verdict", mg_verdict_to_string(r->verdict));
        line = mgt_json_end(&j);
        printf("%s\n", line ? line : "{}");
        mgt_json_free(&j);
}

/* Sizes for one printf: a few buffers in turn. */
static const char *sz(uint64_t v) {
        static char bufs[4][32];
        static unsigned n;
        char *b = bufs[n++ % 4];
        return mgt_size_format(v, b, sizeof(bufs[0]));
}
#define SZ(v) sz(v)

static void print_text(const char *cg, const char *limit_source, const struct mg_report *r) {
        const struct mg_memstat *s = &r->stat;
        const struct mg_psi *p = &r->memory_pressure;

        printf("cgroup          %s\n", cg);
        printf("limits          memory.high %s, memory.max %s\n", SZ(r->high_bytes), SZ(r->max_bytes));
        printf("guard limit     %s (%s); margin %s: slow path from %s\n", SZ(r->limit_bytes), limit_source,
               SZ(r->margin_bytes), SZ(r->limit_bytes - r->margin_bytes));
        printf("memory.current  %s\n", SZ(r->current_bytes));
        printf("used            %s  (%" PRIu64 "%% of the limit)\n", SZ(r->used_bytes),
               r->used_bytes * 100 / r->limit_bytes);
        printf("  anon          %s\n", SZ(s->anon));
        printf("  shmem         %s\n", SZ(s->shmem));
        printf("  kernel        %s%s\n", SZ(s->kernel), s->kernel_derived ? "  (summed: kernel < 5.18)" : "");
        printf("  sock          %s\n", SZ(s->sock));
        printf("page cache      %s  (not counted in used)\n", SZ(s->file));
        printf("  dirty         %s\n", SZ(s->file_dirty));
        printf("  writeback     %s\n", SZ(s->file_writeback));
        printf("  refaults      file %" PRIu64 ", anon %" PRIu64 "\n", s->workingset_refault_file,
               s->workingset_refault_anon);
        printf("memory pressure some avg10 %u.%02u%% avg60 %u.%02u%% total %" PRIu64 " ms\n",
               p->some.avg10_centipct / 100, p->some.avg10_centipct % 100, p->some.avg60_centipct / 100,
               p->some.avg60_centipct % 100, p->some.total_usec / 1000);
        printf("                full avg10 %u.%02u%% avg60 %u.%02u%% total %" PRIu64 " ms\n",
               p->full.avg10_centipct / 100, p->full.avg10_centipct % 100, p->full.avg60_centipct / 100,
               p->full.avg60_centipct % 100, p->full.total_usec / 1000);
        printf("io pressure     some avg10 %u.%02u%% avg60 %u.%02u%% total %" PRIu64 " ms\n",
               r->io_pressure.some.avg10_centipct / 100, r->io_pressure.some.avg10_centipct % 100,
               r->io_pressure.some.avg60_centipct / 100, r->io_pressure.some.avg60_centipct % 100,
               r->io_pressure.some.total_usec / 1000);
        printf("events.local    low %" PRIu64 ", high %" PRIu64 ", max %" PRIu64 ", oom %" PRIu64 ", oom_kill %" PRIu64
               ", oom_group_kill %" PRIu64 "\n",
               r->events.low, r->events.high, r->events.max, r->events.oom, r->events.oom_kill,
               r->events.oom_group_kill);
        printf("verdict         %s: %s\n", mg_verdict_to_string(r->verdict), verdict_meaning(r->verdict));
}

/* A percentage of zero is zero of any base: taken of 100 %, a percentage is
 * its own digits (to 10^-9 %), so "0.5%" passes and "0%" does not. */
#define ANY_PERCENT_BASE ((uint64_t) 100 * 1000000000)

int mgt_stat_cgroup(const char *cg, const char *limit_s, bool json) {
        struct mgt_out out = { .json = json };
        const char *limit_source = "--limit";
        struct mg_guard_options o;
        struct mg_report rep = { .size = sizeof(rep) };
        mg_guard *g = NULL;
        uint64_t limit = 0, max = MG_UNLIMITED, high = MG_UNLIMITED;
        char path[4096];
        int e, ret = MGT_EXIT_FAIL;

        /* Without the memory controller there is no memory.max or
         * memory.high either: say what is missing rather than ask for a
         * limit that would not help. */
        snprintf(path, sizeof(path), "%s/memory.current", cg);
        if (access(path, F_OK) < 0) {
                e = -errno;
                if (e == -ENOENT)
                        mgt_error(&out, "stat", 0,
                                  "%s: no memory.current: the memory controller is not enabled here (+memory "
                                  "in the parent's cgroup.subtree_control; the root cgroup has none)",
                                  cg);
                else
                        mgt_error(&out, "stat", e, "%s", path);
                return MGT_EXIT_FAIL;
        }
        (void) mgt_cg_read_u64(cg, "memory.max", &max);
        (void) mgt_cg_read_u64(cg, "memory.high", &high);
        if (limit_s) {
                if (mgt_size_arg("stat", "--limit", limit_s, max, "memory.max", MGT_SIZE_PERCENT, &limit))
                        return MGT_EXIT_USAGE;
                if (limit == 0) /* a small percentage of a small memory.max */
                        return mgt_usage_error("stat", "--limit %s: the limit must be above 0 bytes", limit_s);
        } else if (max != MG_UNLIMITED) {
                limit = max;
                limit_source = "memory.max";
        } else if (high != MG_UNLIMITED) {
                limit = high;
                limit_source = "memory.high";
        } else {
                return mgt_usage_error("stat", "%s has neither memory.max nor memory.high: give --limit SIZE", cg);
        }

        mg_guard_options_init(&o, limit);
        e = mg_guard_new(cg, &o, &g);
        if (e < 0) {
                mgt_error(&out, "stat", e, "%s", cg);
                goto out;
        }
        e = mg_guard_report(g, &rep);
        if (e < 0) {
                mgt_error(&out, "stat", e, "reading %s", cg);
                goto out;
        }
        if (out.json)
                print_json(cg, limit_source, &rep);
        else
                print_text(cg, limit_source, &rep);
        ret = MGT_EXIT_OK;
out:
        mg_guard_free(g);
        return ret;
}

int mgt_cmd_stat(int argc, char **argv) {
        static const struct option opts[] = {
                { "limit", required_argument, NULL, 'l' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct mgt_out out = {};
        const char *limit_s = NULL;
        uint64_t limit;
        char *cg = NULL;
        int c, e, ret;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (c) {
                case 'l': limit_s = optarg; break;
                case 'j': out.json = true; break;
                case 'h': return mgt_help("stat");
                default: return mgt_getopt_error("stat", c, argv);
                }
        }
        if (optind >= argc)
                return mgt_usage_error("stat", "missing CGROUP");
        if (optind + 1 < argc)
                return mgt_usage_error("stat", "one CGROUP only (got '%s' too)", argv[optind + 1]);
        /* The arguments before the path: a bad limit is a usage error
         * whatever CGROUP is, and is said without looking at it. */
        if (limit_s && mgt_size_arg("stat", "--limit", limit_s, ANY_PERCENT_BASE, NULL, MGT_SIZE_PERCENT, &limit))
                return MGT_EXIT_USAGE;
        if (limit_s && limit == 0)
                return mgt_usage_error("stat", "--limit %s: the limit must be above 0 bytes", limit_s);

        e = mgt_cg_resolve(argv[optind], &cg);
        if (e == -ENOTSUP) {
                mgt_error(&out, "stat", 0, "%s: not a cgroup v2 directory", argv[optind]);
                return MGT_EXIT_FAIL;
        }
        if (e < 0) {
                mgt_error(&out, "stat", e, "%s", argv[optind]);
                return MGT_EXIT_FAIL;
        }
        ret = mgt_stat_cgroup(cg, limit_s, out.json);
        free(cg);
        return ret;
}
