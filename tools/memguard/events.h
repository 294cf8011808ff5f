/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What `run` and `watch` print on stderr: one readable line per event, or
 * one JSON object per line with --json (the fields are in memguard(1)).
 */

#include <stdbool.h>

#include "json.h"
#include "memguard/memguard.h"

struct mgt_out {
        bool json;
        mg_set *remove_gone_from;       /* watch: drop guards whose cgroup vanished */
        unsigned kills, kernel_ooms, gone, errors;
};

/* mg_event_fn; userdata is a struct mgt_out. */
void mgt_on_event(mg_guard *g, const struct mg_event *ev, void *userdata);
/* mg_log_fn: errors only (the events already say the rest). */
void mgt_on_log(int level, const char *msg, void *userdata);

/* A failure of the tool itself: "memguard CMD: MESSAGE[: strerror]" or an
 * {"event":"error"} object.  err is a negative errno or 0. */
void mgt_error(const struct mgt_out *o, const char *cmd, int err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* A note for people; nothing with --json. */
void mgt_note(const struct mgt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The kill record's fields, added to an open object. */
void mgt_kill_json(struct mgt_json *j, const struct mg_kill_record *k);
/* The kill line without the JSON: "memguard: kill: CGROUP killed: ...". */
void mgt_kill_text(const struct mg_kill_record *k, char *buf, size_t len);

/* Writes s and a newline to stderr with one write(), so lines of
 * concurrent writers do not interleave. */
void mgt_print_line(const char *s);
