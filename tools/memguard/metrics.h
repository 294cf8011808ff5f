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

#include "memguard/memguard.h"

/* What watch counts itself from one actor's events (or, for the node, from
 * every actor's since it started, including actors since removed): the
 * episodes the library has no counter of.  Ticks, kills, errors, lends and
 * the rest come from the library (struct mg_stats: mg_guard_get_stats(),
 * mg_set_get_stats()). */
struct mgt_counts {
        uint64_t empty_over_limit, unkillable;
};

/* Adds what one event says to c. */
void mgt_counts_add(struct mgt_counts *c, const struct mg_event *ev);

struct mgt_metrics_actor {
        const char *cgroup;             /* the label: the path below the cgroup2 mount, "/a/b" */
        uint64_t limit_bytes;
        const char *limit_source;       /* "xattr", "memory.max", "default" */
        bool lent;
        const struct mg_report *report; /* NULL if the read failed */
        const struct mg_stats *stats;   /* the library's counts, the actor's guards made before included */
        const struct mgt_counts *counts;
};

struct mgt_metrics_node {
        const struct mg_stats *stats;   /* mg_set_get_stats() */
        const struct mgt_counts *counts;
        uint64_t cgroups;               /* guarded now */
        uint64_t reloads, reload_errors, metrics_skipped;
        uint64_t output_dropped;        /* mgt_output_dropped() */
        uint64_t time_usec;             /* CLOCK_REALTIME of the scrape */
        unsigned version;               /* mg_version() */
};

/* The text of one scrape, malloc'd, *ret_len its length; NULL on ENOMEM. */
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
