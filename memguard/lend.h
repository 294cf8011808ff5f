/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Lends of memory.high (lend.c), as the guard's other units and the set's
 * worker use them: the record a lend leaves on the cgroup, the takeover of
 * one a crashed lender left, the tick's part, the end as the guard goes,
 * and the restore job.
 */

#include <stdbool.h>
#include <stdint.h>

#include "borrow.h"
#include "guard.h"

/*
 * The lend record: the user.memguard.lend xattr of the actor's cgroup
 * directory, written before memory.high is raised and removed after it is
 * restored, so a lend outlives the process that made it (a crash, a
 * SIGKILL) and mg_guard_recover() or the next mg_guard_new() can end it.
 * One line:
 *   "memguard-lend 1 high=<memory.high as read> deadline_boottime_usec=<N> pid=<N>\n"
 * The deadline is CLOCK_BOOTTIME: one clock for every process of the boot,
 * never stepped by NTP or settimeofday, counting suspend like the lend's
 * own deadline should; and cgroupfs is in memory, so no record outlives the
 * boot its clock belongs to.
 */
#define MG_LEND_XATTR "user.memguard.lend"
#define MG_LEND_RECORD_MAX 128  /* longest: a 20-digit high, deadline and pid */

struct mg_lend_record {
        char old_high[24];              /* "max" or decimal digits, no newline */
        uint64_t old_high_bytes;        /* MG_UNLIMITED for "max" */
        uint64_t deadline_boottime_usec;
        uint64_t pid;                   /* of the lender, for the log only */
};

/* Formats r; returns the length (< size) or -ENOBUFS. */
int mg_lend_record_format(const struct mg_lend_record *r, char *buf, size_t size);
/* Parses exactly what mg_lend_record_format() writes (anyone who can write
 * the directory's xattrs can write one: see docs/security.md).  Returns 0
 * or -EBADMSG; *ret is written only on success. */
int mg_lend_record_parse(const char *buf, size_t len, struct mg_lend_record *ret);

/* mg_guard_recover()'s part for the lend record, on cg (opened by it):
 * returns 1 if it restored memory.high, 0 if there was no record (or one
 * it dropped), -EPERM for a directory its tenant can write, -EBUSY (an
 * unexpired record and MG_RECOVER_EXPIRED), -EBADMSG, or the errno of
 * the read or write. */
int mg_lend_recover(struct mg_cgroup *cg, unsigned flags);

/* mg_guard_lend_begin() and mg_guard_lend_end() inside the call's
 * mg_guard_enter() (tick.c's public entries). */
int mg_lend_begin(mg_guard *g, uint64_t extra_bytes, uint64_t deadline_usec, uint64_t *ret_lend_id);
int mg_lend_end(mg_guard *g, uint64_t lend_id);
/* A lend record on the directory at mg_guard_new(): taken over. */
void mg_lend_adopt(mg_guard *g);
/* The tick's part: the end of a lend past its deadline, or asked for and
 * not done yet.  Returns 1 if a lone guard restored memory.high, 0, or
 * -ENODEV once the cgroup is gone. */
int mg_lend_tick(mg_guard *g, uint64_t now);

/*
 * The end of a guard's lend as the guard goes away, for mg_guard_free()
 * and mg_set_remove(): memory.high back, the record removed; best effort:
 * a failure is logged, and a record stays for mg_guard_recover().  A lone
 * guard ends it in place (mg_guard_lend_end()); a set's guard hands it to
 * the set's worker, whose job holds the guard until it is done (a guard
 * that cannot queue it gives the lend up: never the blocking write on the
 * set's thread).  A restore already under way is left to end as it is.  A
 * lend taken over from a record at mg_guard_new() is ended only with
 * taken_over_too (a set's guard); a lone guard leaves it as found, since
 * its lender may still run (a tool may make a guard for one report).
 */
void mg_guard_release_lend(mg_guard *g, bool taken_over_too);

/*
 * A restore the set's worker made is done (MG_RESTORE_DONE): ends the lend
 * on the set's thread, as the end would have in place (the lend record
 * removed, errors cleared or reported, MG_EVENT_LEND_END or _EXPIRED, the
 * fast-path line, the window reset), and closes the job's fd.  The caller
 * then drops the job's hold (mg_guard_release()).  Returns 1 if the lend
 * ended, 0 if there was nothing left to end (the cgroup went meanwhile), or
 * the restore's negative errno (the lend stays open: a guard in a set
 * retries it at its next tick).  A guard that left host meanwhile and
 * whose last restore this was gives the lend up (the lend record stays,
 * for mg_guard_recover()) and host's log says so.
 */
int mg_guard_restore_done(mg_guard *g, struct mg_guard_host *host);

/* The blocking part of a restore: reads memory.high through j->cg, compares
 * it with what the lend wrote and writes j->text back if it still holds
 * that.  Touches j and the kernel (through the seam) only: safe on any
 * thread while nobody else uses j.  Fills j->r, read_ok, outcome and
 * found_high_bytes. */
void mg_restore_run(struct mg_restore *j);
