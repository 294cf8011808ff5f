/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What `run` and `watch` print on stderr: one readable line per event, or
 * one JSON object per line with --json (the fields are in memguard(1)).
 * watch, when its stderr is the journal, sends each as a journal entry
 * instead (journal.h): the line in MESSAGE=, the object's fields as
 * MEMGUARD_* fields, whichever the format.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hook.h"
#include "json.h"
#include "memguard/memguard.h"

struct mgt_out {
        bool json;
        mg_set *remove_gone_from;       /* watch: drop guards whose cgroup vanished */
        unsigned kills, kernel_ooms, gone, errors;
        /* --pre-kill-defer: what mgt_on_event() asks mg_guard_defer_kill()
         * for at each MG_EVENT_PRE_KILL; 0: nothing. */
        uint64_t pre_kill_defer_usec;
        bool dry_run;                   /* --dry-run: said in pre-kill events */
        /* --park-hook: the hook's bound, said in park events; 0: no hook. */
        uint64_t park_hook_timeout_usec;
        /* The guards that printed a pre-kill event whose kill, kill-dry-run
         * or kill-averted event has not come yet, with the decision's
         * kill_id: the library's events of one decision carry nothing that
         * links them, and a reader of watch's stream sees thousands of
         * guards interleaved.  Few at a time; freed by mgt_out_release(). */
        struct mgt_pending_kill {
                const mg_guard *guard;
                uint64_t id;
        } *pending_kills;
        size_t n_pending_kills, cap_pending_kills;
};

/* What an mgt_out holds that needs freeing (the pending kill_ids). */
void mgt_out_release(struct mgt_out *o);
/* The kill_id of g's decision under way (a pre-kill or park told, its
 * kill, thaw or kill-averted not yet), 0 if none. */
uint64_t mgt_out_kill_id(const struct mgt_out *o, const mg_guard *g);
/* Before a guard is freed: its decision still pending is forgotten, so a
 * guard made later at the same address does not take its kill_id. */
void mgt_out_forget_guard(struct mgt_out *o, const mg_guard *g);

/* --pre-kill-defer DURATION: 1 ms to 60 s (MG_PRE_KILL_MAX_DEFER_USEC).
 * Returns 0 or -EINVAL. */
int mgt_pre_kill_defer_parse(const char *s, uint64_t *ret_usec);
/* --dry-run and --pre-kill-defer into a guard's options. */
void mgt_kill_options(const struct mgt_out *o, struct mg_guard_options *opt);

/* The "format_version" of every event object: raised when a field changes
 * meaning or goes away (adding one does not); the schema
 * (events.schema.json, installed in share/memguard) has it as a const. */
#define MGT_EVENTS_FORMAT_VERSION 1

/* A wall-clock time as RFC 3339 in UTC with milliseconds
 * ("2026-12-01T22:45:12.345Z").  Returns its length, 0 if it did not fit. */
size_t mgt_rfc3339(uint64_t realtime_usec, char *buf, size_t len);
/* Opens an event object: "event", "time" (the wall-clock time of
 * monotonic_usec, a CLOCK_MONOTONIC instant; 0: now) and "format_version". */
void mgt_event_json_begin(struct mgt_json *j, const char *event, uint64_t monotonic_usec);
/* The same, each field passed to tap too (json.h). */
void mgt_event_json_begin_tap(struct mgt_json *j, const struct mgt_json_tap *tap, const char *event,
                              uint64_t monotonic_usec);

struct mgt_journal_entry;
/* The journal entry of a library event, as watch sends it: PRIORITY= and
 * MESSAGE_ID= of its kind, each field of its JSON object as a MEMGUARD_*
 * field (kill_id as given; a pre-kill event as one not deferred), ERRNO=
 * for an error, and MESSAGE=message.  Pure: prints nothing. */
void mgt_event_journal(const struct mg_event *ev, uint64_t kill_id, const char *message, struct mgt_journal_entry *e);
/* mg_event_fn; userdata is a struct mgt_out. */
void mgt_on_event(mg_guard *g, const struct mg_event *ev, void *userdata);
/* mg_log_fn: errors only on a stream (the events already say the rest);
 * in the journal every level but debug, at its priority. */
void mgt_on_log(int level, const char *msg, void *userdata);

/* A failure of the tool itself: "memguard CMD: MESSAGE[: strerror]" or an
 * {"event":"error"} object.  err is a negative errno or 0. */
void mgt_error(const struct mgt_out *o, const char *cmd, int err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* A note for people; nothing with --json (in the journal: notice). */
void mgt_note(const struct mgt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The kill record's fields, added to an open object (the park's among
 * them: null for a kill that was no park's). */
void mgt_kill_json(struct mgt_json *j, const struct mg_kill_record *k);
/* The JSON name of how a park ended (enum mg_park_end): "open", "kill",
 * "thaw", "deadline", "bound", "not-frozen", "over-limit", "no-freeze". */
const char *mgt_park_end_name(uint32_t end);
/* ev's JSON object as the event line has it (kill_id given), malloc'd
 * without a newline: the park hook's record.  NULL on ENOMEM. */
char *mgt_event_record(const struct mgt_out *o, const struct mg_event *ev, uint64_t kill_id);
/* The kill line without the JSON: "memguard: kill: CGROUP killed: ...". */
void mgt_kill_text(const struct mg_kill_record *k, char *buf, size_t len);

/* Writes s and a newline to stderr with one write(), so lines of
 * concurrent writers do not interleave.  Between mgt_output_start() and
 * mgt_output_stop() the line is queued instead and this never blocks. */
void mgt_print_line(const char *s);

/*
 * run and watch: from here on every line of mgt_print_line() (and so every
 * event, log line, error and note) goes to fd through a bounded queue and
 * a writer thread (outq.h, MGT_OUTQ_MAX_BYTES), so the thread that runs
 * the guards never waits for a stalled journald.  A line that does not fit
 * is dropped; once there is room again one line says how many: the
 * "dropped" event with json, "memguard: dropped N lines ..." without.
 * Call it before mg_confine_thread() (it starts a thread).  Returns 0,
 * -EBUSY if started already, or -ENOMEM/-EAGAIN (lines are then written
 * directly, as before).  With MGT_JOURNAL_NATIVE (below) the queue holds
 * journal entries and its thread sends them (journal.h), fd taking only
 * what the journal refuses.
 */
int mgt_output_start(int fd, bool json);

/* How lines go out from here on (before mgt_output_start()): */
enum mgt_journal_mode {
        MGT_JOURNAL_OFF,        /* lines on the stream (stderr) */
        MGT_JOURNAL_NATIVE,     /* journal entries, through sd_journal_sendv() (journal.h) */
        /* The same entries as text on the stream, a "FIELD=value" line each
         * and a blank line after each entry (journalctl -o export's form
         * for text fields): what the tests read. */
        MGT_JOURNAL_EXPORT,
};
/* Returns 0, -EOPNOTSUPP for NATIVE in a build without libsystemd
 * (nothing changes), or -EBUSY once the queue is started. */
int mgt_output_journal(enum mgt_journal_mode mode);
enum mgt_journal_mode mgt_output_journal_mode(void);
/* At the end of run and watch, after their last line: waits up to
 * MGT_OUTPUT_FLUSH_USEC for the queued lines to be written, then ends the
 * writer.  Lines after it are written directly; after a flush that timed
 * out (the sink is stalled) they are dropped, as a blocking write would
 * hang the exit.  Nothing to do if never started. */
void mgt_output_stop(void);
#define MGT_OUTPUT_FLUSH_USEC ((uint64_t) 2 * 1000 * 1000)
/* The lines dropped since mgt_output_start() (kept after mgt_output_stop()). */
uint64_t mgt_output_dropped(void);
/* The line that says n lines were dropped, printed now (the sample of
 * `memguard event-sample`). */
void mgt_dropped_event(const struct mgt_out *o, uint64_t n);

/* watch's own events (memguard(1)): "watch" when it begins guarding a
 * cgroup (and "watch" again when a reload changes its limit), with the
 * limit and where it came from ("xattr", "memory.max", "default");
 * "unwatch" when it stops ("removed", "stopping"); "reload" after SIGHUP.
 * Text lines are notes (nothing with --json but the objects). */
void mgt_watch_event(const struct mgt_out *o, const char *event, const char *cg, uint64_t limit,
                     const char *source);
void mgt_unwatch_event(const struct mgt_out *o, const char *cg, const char *why);
void mgt_reload_event(const struct mgt_out *o, const char *config, uint64_t n_cgroups, bool ok);

/* watch --park-hook: how a park hook's run ended ("park-hook", after the
 * park event and before the kill or thaw it asks for). */
struct mgt_park_hook_info {
        const char *cgroup;
        uint64_t park_id, kill_id;
        uint64_t timeout_usec;
        const struct mgt_hook_reply *reply;
        const char *action;             /* "kill", "thaw", or "none" (cancelled: the park ended first) */
        uint64_t limit_bytes;           /* thaw: the limit it is thawed into; 0: the one it had */
        const char *limit_source;       /* thaw: where that limit came from, as the watch event says */
        const char *park_end;           /* cancelled: how the park ended (mgt_park_end_name()), else NULL */
};
void mgt_park_hook_event(const struct mgt_out *o, const struct mgt_park_hook_info *h);
