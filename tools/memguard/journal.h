/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * watch's lines as journal entries, when its standard error is the
 * journal: each with its PRIORITY=, a MESSAGE_ID= per kind of event (the
 * catalog, tools/systemd/memguard.catalog, explains each; memguard(1)
 * lists them), MESSAGE= the line it would have printed, and the event's
 * fields as MEMGUARD_* fields, the names of its JSON object in upper case
 * (MEMGUARD_CGROUP=, MEMGUARD_USED_BYTES=, MEMGUARD_KILL_ID=...), so that
 * `journalctl MEMGUARD_CGROUP=/sandboxes.slice/a` finds a tenant's kills
 * without parsing text.
 *
 * An entry is built with no allocation, in a fixed buffer: it is made in
 * the guards' event callbacks.  It goes out through the output queue's
 * writer thread (events.h, outq.h), never from the thread that ticks the
 * guards: sd_journal_sendv() is a sendmsg(2) on a blocking datagram socket
 * and blocks while journald's receive queue is full (journald stalled on
 * its disk, or rate-limiting a flood), which would stall every tick.
 *
 * Built without libsystemd (-Djournal=disabled, or none found) nothing
 * here sends: mgt_journal_available() is false and watch writes its lines
 * to standard error as it always did.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Whether this build sends entries natively (libsystemd). */
bool mgt_journal_available(void);

/* Whether text, $JOURNAL_STREAM's "DEVICE:INODE" in decimal, names the
 * file whose st_dev and st_ino are dev and ino.  Anything else (empty,
 * a sign, trailing bytes, a number past its type) is false. */
bool mgt_journal_stream_matches(const char *text, dev_t dev, ino_t ino);
/*
 * Whether standard error is the journal: systemd sets $JOURNAL_STREAM to
 * the device and inode of the stream socket it connected stdout or stderr
 * to (systemd.exec(5)).  The variable is inherited by every child, which
 * may have its standard error somewhere else (a shell's 2>file, a pipe to
 * another program), so the fd's own st_dev:st_ino must match it: only
 * then are lines the journal's to take, and only then are native entries
 * not lost to a reader of that file.  Returns 1, 0, or a negative errno
 * of fstat().
 */
int mgt_journal_stderr_is_journal(void);

/* The kinds of entry that carry a MESSAGE_ID: the library's events and
 * watch's own.  Log lines and notes carry none. */
enum mgt_msg {
        MGT_MSG_NONE,
        MGT_MSG_KILL,
        MGT_MSG_KILL_DRY_RUN,
        MGT_MSG_PRE_KILL,
        MGT_MSG_KILL_AVERTED,
        MGT_MSG_LEND_BEGIN,
        MGT_MSG_LEND_END,
        MGT_MSG_LEND_EXPIRED,
        MGT_MSG_THROTTLED,
        MGT_MSG_EMPTY_OVER_LIMIT,
        MGT_MSG_UNKILLABLE,
        MGT_MSG_KERNEL_OOM,
        MGT_MSG_ERROR,
        MGT_MSG_GONE,
        MGT_MSG_RECLAIM,
        MGT_MSG_WATCH,
        MGT_MSG_UNWATCH,
        MGT_MSG_RELOAD,
        MGT_MSG_DROPPED,
        MGT_MSG_PARK,
        MGT_MSG_THAW,
        MGT_MSG_PARK_HOOK,
        _MGT_MSG_MAX,
};

/* The event name ("kill", as in the JSON objects) of m, NULL for none. */
const char *mgt_msg_name(enum mgt_msg m);
/* Its MESSAGE_ID: 32 lower-case hex digits, fixed for good (the catalog
 * and readers' queries hold them), NULL for MGT_MSG_NONE. */
const char *mgt_msg_id(enum mgt_msg m);
/* The kind of the event name, MGT_MSG_NONE if it has none. */
enum mgt_msg mgt_msg_of(const char *event);
/* The priority of an event of this kind (syslog's LOG_*): a kill is a
 * warning, an error or a process that outlived SIGKILL an error, a lend
 * or a dose information. */
int mgt_msg_priority(enum mgt_msg m);

#define MGT_JOURNAL_ENTRY_BYTES ((size_t) 24 * 1024)
#define MGT_JOURNAL_FIELDS_MAX 64

/* One entry: fields "KEY=value", each ended by a NUL, in buf[0..len). */
struct mgt_journal_entry {
        size_t len;
        unsigned n;
        bool truncated;         /* a field did not fit, and was left out */
        char buf[MGT_JOURNAL_ENTRY_BYTES];
};

/* An empty entry with PRIORITY= and, but for MGT_MSG_NONE, MESSAGE_ID=. */
void mgt_journal_entry_init(struct mgt_journal_entry *e, int priority, enum mgt_msg m);
/* Adds KEY=value, the value as one line (mgt_line_escape(): a tenant's
 * cgroup name cannot start a field of its own, nor make journalctl show a
 * blob).  key: upper case, digits and '_', not first.  A field that does
 * not fit (MGT_JOURNAL_ENTRY_BYTES, MGT_JOURNAL_FIELDS_MAX) is left out. */
void mgt_journal_add(struct mgt_journal_entry *e, const char *key, const char *value);
/* A field of an event's JSON object: "used_bytes" as MEMGUARD_USED_BYTES;
 * "time" as MEMGUARD_TIME (when it happened: the entry may be written
 * later); "format_version" left out (the JSON stream's, not the fields'). */
void mgt_journal_add_event_field(struct mgt_journal_entry *e, const char *json_key, const char *value);

/* The fields of buf[0..len) (an entry's, or a copy of one) as iovecs,
 * without their NULs.  Returns how many, at most max. */
size_t mgt_journal_iovec(const char *buf, size_t len, struct iovec *iov, size_t max);

/* Sends the entry in buf[0..len) with sd_journal_sendv().  Blocks while
 * journald's queue is full: the output queue's writer thread calls it.
 * Returns 0 (journald not running is 0 too, as libsystemd has it) or a
 * negative errno; -EOPNOTSUPP built without libsystemd. */
int mgt_journal_send(const char *buf, size_t len);

/* Confines the calling thread (the output queue's writer) to what sending
 * takes: the seccomp allowlist of mg_confine_thread(), which has no
 * socket(2) or sendmsg(2), cannot be used.  Returns 0, -EOPNOTSUPP built
 * without libseccomp, or a negative errno (the writer then runs
 * unconfined, as the set's worker does). */
int mgt_journal_confine_thread(void);
