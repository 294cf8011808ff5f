/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The help texts: `memguard --help` is the overview of every command,
 * `memguard CMD --help` (and `memguard help CMD`) that command alone, with
 * each of its flags, what it does and its default, so a reader need not
 * open memguard(1) to tune one.  Here, not in main.c, so the subcommands'
 * own files link without main.c (memguard-test-commands).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* One flag: how it is written and what it does, with its default.  Lines
 * of what are broken by hand at 72 columns, printed indented by 8. */
struct flag {
        const char *name, *what;
};

#define MAX_FLAGS 32

/* What run and watch both take: how events are written, and how a kill is
 * made. */
#define FLAGS_EVENTS                                                                                    \
        { "--json", "Events on stderr as JSON objects, one a line (events.schema.json).\n"              \
                    "(default: text lines)" },                                                          \
        { "--dry-run", "Decide as usual, kill nothing: each kill is a kill-dry-run event.\n"             \
                       "(default: off)" },                                                              \
        { "--pre-kill-defer DURATION",                                                                  \
          "Tell each kill first (a pre-kill event) and put it off by DURATION,\n"                       \
          "1 ms to 60 s; it is not made if the actor leaves its limit meanwhile\n"                      \
          "(kill-averted).  (default: off: kills are made at once)" }

static const struct command_help {
        const char *name;
        const char *usage;      /* the synopses without "memguard ", one a line */
        const char *summary;    /* one line: the overview's and the description's */
        const char *more;       /* the command's help only, after the description, or NULL */
        struct flag flags[MAX_FLAGS];
        const char *tail;       /* after the flags, or NULL */
} commands[] = {
        {
                .name = "run",
                .usage = "run --limit SIZE [OPTIONS] -- CMD [ARGS...]",
                .summary = "Runs CMD in a new cgroup guarded at --limit; removes the cgroup afterwards.",
                .more = "Exits with CMD's status, 128+N if a signal N ended it, 137 if memguard killed it,\n"
                        "126 or 127 if CMD is not executable or not found, 2 for bad arguments.",
                .flags = {
                        { "--limit SIZE", "The guard limit: a kill when used memory (anon + shmem + kernel + sock)\n"
                                          "is above it, or on a stall at it.  A percentage is of the parent's\n"
                                          "memory.max.  (default: none; required)" },
                        { "--high SIZE", "Write memory.high of the new cgroup; a percentage is of --limit (90%),\n"
                                         "max writes \"max\".  (default: not written)" },
                        { "--max SIZE", "Write memory.max of the new cgroup, as --high.  (default: not written)" },
                        { "--parent CGROUP", "Create the cgroup below CGROUP.  (default: the parent of memguard's own\n"
                                             "cgroup)" },
                        FLAGS_EVENTS,
                        { "-h, --help", "This text." },
                },
        },
        {
                .name = "watch",
                .usage = "watch --limit SIZE [OPTIONS] CGROUP...\n"
                         "watch --parent DIR [--limit SIZE] [OPTIONS]",
                .summary = "Guards existing cgroups, or each child of DIR as it appears, until stopped.",
                .more = "Each cgroup's limit: its user.memguard.limit xattr, else its memory.max, else\n"
                        "--limit.  SIGHUP re-reads the config and the limits.  SIGINT or SIGTERM\n"
                        "restores any lent memory.high and exits 0; a cgroup that vanishes is dropped.\n"
                        "Every flag but --config is also a config key (memguard config-parse checks a\n"
                        "file).  With stderr the journal, events are journal entries with fields.",
                .flags = {
                        { "--limit SIZE", "The default limit, for a cgroup that neither its xattr nor its\n"
                                          "memory.max gives one.  (default: the config file's limit; required\n"
                                          "with CGROUPs listed if the config gives none)" },
                        { "--parent DIR", "Guard every child cgroup of DIR as it comes and goes, instead of\n"
                                          "CGROUPs listed.  (default: none)" },
                        { "--config FILE", "Read settings at start and on SIGHUP: \"key = value\" lines, a key\n"
                                           "for every flag here but --config, then FILE.d/*.conf in lexical\n"
                                           "order, a later file winning; the command line wins.  (default: none)" },
                        { "--metrics FILE", "Write Prometheus text metrics to FILE (node_exporter's textfile\n"
                                            "collector) every --metrics-interval.  (default: none)" },
                        { "--metrics-interval DURATION", "How often --metrics is written; at least 1 s.  (default: 15s)" },
                        { "--metrics-cgroups none|all|N", "Which cgroups get series of their own in --metrics: the N at their\n"
                                                          "limit, then acting lately, then nearest it; the node's sums cover\n"
                                                          "all.  (default: 10)" },
                        { "--mlock", "Lock memguard's memory (mlockall), so reclaim of its own pages does not\n"
                                     "slow it while the host thrashes.  (default: off)" },
                        FLAGS_EVENTS,
                        { "--park-hook CMD",
                          "Park instead of kill: freeze the cgroup (cgroup.freeze) and run CMD,\n"
                          "an absolute path and words split at blanks (no shell), with the\n"
                          "cgroup's path as its last argument and the park event's JSON on\n"
                          "stdin.  Exit 0: saved, kill it; exit 10: thaw it at its limit read\n"
                          "again; anything else, a signal or the timeout: kill it.  Read at\n"
                          "start only.  (default: off: kills are made at once)" },
                        { "--park-timeout DURATION",
                          "The hook's time, 100 ms to 30 min; then its process group gets\n"
                          "SIGTERM, and SIGKILL a quarter of it later (at most 2 s), and the\n"
                          "actor is killed.  The guard's own deadline is the kill wait, the\n"
                          "grace and 2 s above it.  (default: 30s)" },
                        { "--tick DURATION", "How often the fast path reads memory.current; 10 ms to 1 h.\n"
                                             "(default: 250ms)" },
                        { "--margin SIZE|PERCENT", "The fast path runs below the limit minus the margin; a percentage is\n"
                                                   "of each cgroup's own limit.  (default: 6.25%, a sixteenth of the\n"
                                                   "limit)" },
                        { "--stall-window DURATION",
                          "How long the stall criteria must hold before a stall is a kill.\n"
                          "(default: tuned to the limit, watch.conf(5): 2 s at 64 MiB, 3 s at\n"
                          "256 MiB, +0.5 s per doubling, up to 8 s)" },
                        { "--stall-pressure PERCENT",
                          "The share of time lost to memory or io stalls, in each half of the\n"
                          "stall window, that a stall needs; above 0, at most 100%.  (default: 10%)" },
                        { "--lend-deadline DURATION",
                          "The deadline of a memory.high lend that asks for none; kills are paused\n"
                          "while it lasts.  (default: tuned to the limit, watch.conf(5): 10 s +\n"
                          "the limit at 50 MiB/s)" },
                        { "--kill-wait DURATION",
                          "How long to wait for a killed cgroup to empty before its record goes\n"
                          "out and it is reported unkillable.  (default: tuned to the limit,\n"
                          "watch.conf(5): 2 s + 1 s per GiB, up to 30 s)" },
                        { "--post-kill-holdoff DURATION",
                          "How long after a kill the guard ignores counters that lag (PSI, the\n"
                          "memory.stat flush).  (default: 2.25s: 2 s and a tick)" },
                        { "--refault-window DURATION",
                          "The refault rule for an actor that re-reads through read(2): how long\n"
                          "it must keep losing time at its limit while it re-reads to be killed.\n"
                          "(default: tuned to the limit, watch.conf(5): 20 s up to 256 MiB, +2 s\n"
                          "per doubling, up to 30 s)" },
                        { "--refault-mapped-window DURATION",
                          "The same for an actor that faults its pages in (mapped data, program\n"
                          "text).  (default: tuned to the limit, watch.conf(5): 4 stall windows,\n"
                          "8 s to 20 s)" },
                        { "--reclaim-dose SIZE",
                          "Arm the reclaim actuator: on memory pressure, write SIZE to the\n"
                          "cgroup's memory.reclaim (Linux 5.19+); with --reclaim-headroom, up to\n"
                          "SIZE near the limit.  Each dose is a reclaim event.  The other\n"
                          "--reclaim flags need it.  (default: off)" },
                        { "--reclaim-cgroup CGROUP",
                          "The cgroup dosed, whose pressure is watched: a sibling that holds\n"
                          "background work, the same for every cgroup guarded; not with\n"
                          "--reclaim-headroom.  (default: each guarded cgroup itself)" },
                        { "--reclaim-some DURATION",
                          "The pressure predicate: a window of a second counts when the memory\n"
                          "stall (some) grew by DURATION in it, at most 1 s.  (default: 1ms if\n"
                          "neither --reclaim-full nor --reclaim-headroom is set, else off)" },
                        { "--reclaim-full DURATION",
                          "The same for the full stall (every task of the cgroup stalled at\n"
                          "once); with --reclaim-some too, a window needs both.  (default: off)" },
                        { "--reclaim-windows N",
                          "How many windows in a row must count before a dose, 1 to 8; one dose\n"
                          "per run of them.  (default: 3)" },
                        { "--reclaim-cooldown DURATION",
                          "The least time from one pressure dose to the next.\n"
                          "(default: 10s)" },
                        { "--reclaim-headroom SIZE",
                          "When memory.current comes within SIZE of the limit, a dose of page\n"
                          "cache that brings it back, at most one a second.  (default: off)" },
                        { "-h, --help", "This text." },
                },
                .tail = "DURATION: 250ms, 2s, 1.5s, 1m, 500us, or plain seconds.",
        },
        {
                .name = "config-parse",
                .usage = "config-parse FILE",
                .summary = "Checks watch's config FILE and its drop-ins, and prints the settings.",
                .more = "Reads FILE, then FILE.d/*.conf in lexical order, a later file winning, as\n"
                        "watch does at start and on SIGHUP, and checks the keys that go together as\n"
                        "watch does with no key on its command line.  Prints a \"key value\" line\n"
                        "per setting and exits 0, or one line naming the file and line at fault and\n"
                        "exits 1.",
                .flags = {
                        { "-h, --help", "This text." },
                },
        },
        {
                .name = "stat",
                .usage = "stat [--limit SIZE] [--json] CGROUP",
                .summary = "Prints what a guard reads for CGROUP and the verdict it would give now.",
                .more = "Limits, memory.current, used (anon shmem kernel sock), page cache, memory\n"
                        "pressure and memory.events.local; exit 1 if CGROUP is not a cgroup v2\n"
                        "directory with the memory controller.",
                .flags = {
                        { "--limit SIZE", "The guard limit to judge by, above 0; a percentage is of memory.max.\n"
                                          "(default: memory.max, else memory.high; without either, required)" },
                        { "--json", "One JSON object on stdout (\"format_version\":1).  (default: text)" },
                        { "-h, --help", "This text." },
                },
        },
        {
                .name = "demo",
                .usage = "demo [--kernel 6.1|6.12|7] [--native]",
                .summary = "Runs the signature scenarios with the kernel alone and with memguard.",
                .more = "Prints what each did: natively on a delegated cgroup v2 memory controller,\n"
                        "otherwise inside a Debian kernel under qemu ($MEMGUARD_VMRUN, tests/vm/vmrun).",
                .flags = {
                        { "--kernel 6.1|6.12|7", "The Debian kernel the VM boots; ignored natively.  (default: 6.1)" },
                        { "--native", "Run on this host's cgroup v2, without a VM.  (default: natively only\n"
                                      "where the default parent has a writable memory controller)" },
                        { "-h, --help", "This text." },
                },
        },
};

static const char size_note[] = "SIZE is bytes, or a number with K, M, G or T (powers of 1024; Ki, KiB... too),\n"
                                "e.g. 64M or 1.5G.";

/* s with each line after a newline indented by indent spaces. */
static void put_indented(FILE *f, const char *s, int indent) {
        for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
                fprintf(f, "%.*s\n%*s", (int) (nl - s), s, indent, "");
        fprintf(f, "%s\n", s);
}

/* Each line of a synopsis after first (its first line) or next (the rest). */
static void put_usage(FILE *f, const char *usage, const char *first, const char *next) {
        const char *s = usage;

        for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
                fprintf(f, "%s%.*s\n", s == usage ? first : next, (int) (nl - s), s);
        fprintf(f, "%s%s\n", s == usage ? first : next, s);
}

static void print_overview(FILE *f) {
        fprintf(f, "usage: memguard COMMAND [OPTIONS]\n\n"
                   "Guards memory actors on cgroup v2: kills on a true overshoot (anon + shmem + kernel\n"
                   "+ sock above the limit) or a stall at the limit, never for page cache.\n\n"
                   "Commands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                put_usage(f, commands[i].usage, "  ", "  ");
                fprintf(f, "        %s\n", commands[i].summary);
        }
        fprintf(f, "  help, --help\n"
                   "        This text; memguard COMMAND --help: that command's flags and defaults.\n"
                   "  --version\n"
                   "        The version.\n\n"
                   "%s\n"
                   "See memguard(1).\n",
                size_note);
}

static void print_command(FILE *f, const struct command_help *c) {
        put_usage(f, c->usage, "usage: memguard ", "       memguard ");
        fprintf(f, "\n%s\n", c->summary);
        if (c->more) {
                fprintf(f, "\n");
                put_indented(f, c->more, 0);
        }
        fprintf(f, "\nOptions:\n");
        for (size_t i = 0; i < MAX_FLAGS && c->flags[i].name; i++) {
                fprintf(f, "  %s\n        ", c->flags[i].name);
                put_indented(f, c->flags[i].what, 8);
        }
        fprintf(f, "\n%s\n", size_note);
        if (c->tail)
                fprintf(f, "%s\n", c->tail);
        fprintf(f, "See memguard(1).\n");
}

int mgt_help(const char *cmd) {
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(commands[i].name, cmd) == 0) {
                        print_command(stdout, &commands[i]);
                        return MGT_EXIT_OK;
                }
        print_overview(stdout);
        return MGT_EXIT_OK;
}
