/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `watch --metrics FILE`: the Prometheus text exposition format, as
 * node_exporter's textfile collector reads it, written atomically (a
 * temporary file renamed over FILE) at a fixed interval.
 *
 * The guard thread is confined to a seccomp allowlist without rename(), so
 * a writer process forked before the confinement does the file work: it
 * reads framed texts from a pipe and writes each to FILE.tmp, then renames
 * it over FILE.  It holds nothing of the guards (no cgroup fd, no
 * capability but CAP_DAC_OVERRIDE where held, to write a directory another
 * user owns), and ends when the pipe closes.  The guard thread never
 * blocks on it: the pipe is non-blocking, and a text the writer has not
 * taken by the next interval makes that interval's text wait (counted in
 * memguard_metrics_skipped_total).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook.h"
#include "memguard/memguard.h"

/* What watch counts itself from one actor's events (or, for the node, from
 * every actor's since it started, including actors since removed): the
 * episodes the library has no counter of.  Ticks, kills, errors, lends and
 * the rest come from the library (struct mg_stats: mg_guard_get_stats(),
 * mg_set_get_stats()). */
#define MGT_PARK_ENDS (MG_PARK_END_NO_FREEZE + 1)
struct mgt_counts {
        uint64_t empty_over_limit, unkillable;
        /* Parks ended, by how (enum mg_park_end; [MG_PARK_OPEN] unused):
         * the kill events that end one and the thaws.  The library counts
         * parks begun and these in four (struct mg_stats). */
        uint64_t park_ends[MGT_PARK_ENDS];
};

/* Adds what one event says to c. */
void mgt_counts_add(struct mgt_counts *c, const struct mg_event *ev);

/* memguard_detect_to_kill_seconds: from the first tick that saw the
 * condition to the kill's signal (the kill record's detect_usec to
 * kill_usec), by reason, every guard's since watch started.  The bounds
 * are ticks of 0.25 s (one, two, four) up to the 30 s a thrash is given;
 * the kills of a dry run (MG_EVENT_KILL_DRY_RUN, when the signal would
 * have gone) under --dry-run, where there are no others.  A kill that
 * ended a park is not one of them: it waited for the park hook. */
#define MGT_KILL_BUCKETS 12
extern const uint64_t mgt_kill_bucket_usec[MGT_KILL_BUCKETS];
struct mgt_kill_latency {
        uint64_t bucket[2][MGT_KILL_BUCKETS];   /* [overshoot, stall]: at most that bound, not cumulative */
        uint64_t count[2], sum_usec[2];
};

void mgt_kill_latency_add(struct mgt_kill_latency *h, const struct mg_event *ev);

/* --park-hook: the hooks' runs by result, and memguard_park_hook_seconds,
 * how long each ran (its request to its end), every one since watch
 * started.  The bounds: a tenth of a second to park-timeout's 30 min. */
#define MGT_HOOK_BUCKETS 10
extern const uint64_t mgt_hook_bucket_usec[MGT_HOOK_BUCKETS];
struct mgt_hook_stats {
        uint64_t results[_MGT_HOOK_RESULT_MAX];
        uint64_t bucket[MGT_HOOK_BUCKETS];      /* at most that bound, not cumulative */
        uint64_t count, sum_usec;
};
void mgt_hook_stats_add(struct mgt_hook_stats *h, const struct mgt_hook_reply *r);

/* --metrics-cgroups: which cgroups get series of their own (the node's
 * sums cover every one): none, all, or the N that matter most now
 * (mgt_metrics_select()). */
#define MGT_METRICS_CGROUPS_ALL UINT64_MAX
#define MGT_METRICS_CGROUPS_DEFAULT 10
/* A cgroup that acted (an event of its guard) ranks above the quiet ones
 * this long: a dashboard's rate() over [5m] sees its series whole. */
#define MGT_METRICS_ACTED_USEC ((uint64_t) 600 * 1000000)
/* A cgroup already in the file keeps its place over a quiet one less than
 * this much (in permyriad of its limit) nearer its limit: no churn of
 * series between scrapes for a wiggle. */
#define MGT_METRICS_STICKY_PERMYRIAD 500

struct mgt_metrics_actor {
        /* The labels cgroup and id: the path below the cgroup2 mount, "/a/b",
         * which is cAdvisor's id (the join with container_* series). */
        const char *cgroup;
        uint64_t limit_bytes;
        const char *limit_source;       /* "xattr", "memory.max", "default" */
        bool lent;
        const struct mg_report *report; /* NULL if the read failed */
        const struct mg_stats *stats;   /* the library's counts, the actor's guards made before included */
        const struct mgt_counts *counts;
        uint64_t last_event_usec;       /* CLOCK_MONOTONIC of its guard's last event; 0: none yet */
        bool reclaim_armed;             /* its guard has the reclaim actuator (--reclaim-dose) */
        bool had_lend;                  /* lent at some time (a lend taken over: watch begins none) */
        bool was_selected;              /* its series were in the last file */
        bool parked;                    /* frozen now, its park open (mg_guard_get_park_id()) */
        bool selected;                  /* out of mgt_metrics_select(): its series go in this one */
};

struct mgt_metrics_node {
        const struct mg_stats *stats;   /* mg_set_get_stats() */
        const struct mgt_counts *counts;
        uint64_t cgroups;               /* guarded now */
        uint64_t reloads, reload_errors, metrics_skipped;
        uint64_t output_dropped;        /* mgt_output_dropped() */
        uint64_t time_usec;             /* CLOCK_REALTIME of the scrape */
        unsigned version;               /* mg_version() */
        const struct mgt_kill_latency *latency;
        bool dry_run;                   /* --dry-run: kills are dry-run kills */
        bool pre_kill_defer;            /* --pre-kill-defer: kills may be deferred and averted */
        bool park;                      /* --park-hook: kills are parks first */
        const struct mgt_hook_stats *hooks; /* NULL: none run (all 0) */
};

/* Marks .selected the actors whose series go in the file: all if max >=
 * n, none if max is 0, else the max that matter most now, in this order:
 * those at their limit now (a verdict other than ok, or lent), nearest
 * it first; those whose guard told an event in the last
 * MGT_METRICS_ACTED_USEC, the latest first; the rest, nearest their limit
 * (used over limit) first, those in the last file by
 * MGT_METRICS_STICKY_PERMYRIAD ahead.  Returns how many. */
size_t mgt_metrics_select(struct mgt_metrics_actor *a, size_t n, uint64_t max, uint64_t now_usec);

/* The text of one scrape, malloc'd, *ret_len its length; NULL on ENOMEM.
 * The node's families sum over every actor of a; the per-cgroup ones are
 * of the actors marked .selected.  A per-cgroup counter that cannot move
 * under the options (kills under --dry-run, the dry-run kills without it,
 * deferrals without --pre-kill-defer, doses without the actuator, lends
 * where there was none to take over) is left out while it is 0: it comes
 * in at 0 when it can move (a reload arming the actuator) and stays once
 * it has moved, so rate() never misses a first count of it. */
char *mgt_metrics_format(const struct mgt_metrics_actor *a, size_t n, const struct mgt_metrics_node *node,
                         size_t *ret_len);
/* A label value: '\\', '"' and newline escaped, other bytes that are not
 * valid UTF-8 as U+FFFD.  Returns the length it needed, like snprintf. */
size_t mgt_metrics_escape(const char *s, char *out, size_t size);

struct mgt_metrics_writer {
        int fd;                         /* the pipe to the writer; -1: none */
        int pid;
        char *pending;                  /* header + text not yet taken */
        size_t pending_len, pending_off;
        bool failed;                    /* the writer is gone: reported once */
};

/* Forks the writer for path.  Returns 0 or a negative errno. */
int mgt_metrics_writer_start(struct mgt_metrics_writer *w, const char *path);
/* Queues text (taken over, freed by the writer code) unless one is
 * pending; then writes what the pipe takes.  Returns 1 if queued, 0 if the
 * previous one was still pending (text freed), a negative errno if the
 * writer is gone (-EPIPE). */
int mgt_metrics_writer_send(struct mgt_metrics_writer *w, char *text, size_t len);
/* Writes more of what is pending (on POLLOUT).  0, or -EPIPE. */
int mgt_metrics_writer_flush(struct mgt_metrics_writer *w);
bool mgt_metrics_writer_pending(const struct mgt_metrics_writer *w);
/* Closes the pipe: the writer exits (a text it had whole is written
 * first).  Not waited for: the confined thread has no wait4, and the
 * writer is reparented and reaped once watch exits. */
void mgt_metrics_writer_stop(struct mgt_metrics_writer *w);
