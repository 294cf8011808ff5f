/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The names of verdicts, kill reasons and event types, and the kill
 * record's text (modelled on the kernel's OOM report).  Pure: no state, no
 * I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "memguard/memguard.h"
#include "sized.h"
#include "util.h"

const char *mg_verdict_to_string(enum mg_verdict v) {
        switch (v) {
        case MG_VERDICT_OK: return "ok";
        case MG_VERDICT_NEAR: return "near-limit";
        case MG_VERDICT_STALLING: return "stalling";
        case MG_VERDICT_OVERSHOOT: return "overshoot";
        case MG_VERDICT_STALL: return "stall";
        }
        return "?";
}

const char *mg_kill_reason_to_string(enum mg_kill_reason r) {
        switch (r) {
        case MG_KILL_OVERSHOOT: return "overshoot";
        case MG_KILL_STALL: return "stall";
        }
        return "?";
}

const char *mg_event_type_to_string(enum mg_event_type t) {
        switch (t) {
        case MG_EVENT_KILL: return "kill";
        case MG_EVENT_LEND_BEGIN: return "lend-begin";
        case MG_EVENT_LEND_END: return "lend-end";
        case MG_EVENT_LEND_EXPIRED: return "lend-expired";
        case MG_EVENT_ERROR: return "error";
        case MG_EVENT_GONE: return "gone";
        case MG_EVENT_KERNEL_OOM: return "kernel-oom";
        case MG_EVENT_THROTTLED: return "throttled";
        case MG_EVENT_EMPTY_OVER_LIMIT: return "empty-over-limit";
        case MG_EVENT_UNKILLABLE: return "unkillable";
        case MG_EVENT_KILL_DRY_RUN: return "kill-dry-run";
        case MG_EVENT_PRE_KILL: return "pre-kill";
        case MG_EVENT_KILL_AVERTED: return "kill-averted";
        case MG_EVENT_RECLAIM: return "reclaim";
        case MG_EVENT_PARK: return "park";
        case MG_EVENT_THAW: return "thaw";
        }
        return "?";
}

const char *mg_park_end_to_string(enum mg_park_end e) {
        switch (e) {
        case MG_PARK_OPEN: return "parked";
        case MG_PARK_END_KILL: return "killed at the worker's request";
        case MG_PARK_END_THAW: return "thawed";
        case MG_PARK_END_DEADLINE: return "killed at the park's deadline";
        case MG_PARK_END_BOUND: return "killed: used grew past the bound while frozen";
        case MG_PARK_END_NOT_FROZEN: return "killed: not frozen within the kill wait";
        case MG_PARK_END_OVER_LIMIT: return "killed: over its limit at the thaw";
        case MG_PARK_END_NO_FREEZE: return "not parked: cgroup.freeze cannot be written";
        }
        return "?";
}

/* Modelled on the kernel's "Memory cgroup out of memory" report: what the
 * limit was, what was charged and what of it the tenant could not give back. */
/* The part of *src that its .size (and its report's) says exists, into
 * *dst, zeros for the rest: a record made by another build of this
 * library, or cut short in a caller's copy, is read no further than it
 * goes.  0 or -EINVAL (no room for the report's .size). */
static int kill_record_in(struct mg_kill_record *dst, const struct mg_kill_record *src) {
        const size_t at = offsetof(struct mg_kill_record, report);
        uint64_t size = src->size, rsize;

        if (size < at + MG_SIZED_MIN)
                return -EINVAL;
        if (size > sizeof(*dst))
                size = sizeof(*dst);
        memset(dst, 0, sizeof(*dst));
        memcpy(dst, src, (size_t) size);
        rsize = mg_sized_size(&src->report);
        if (rsize < size - at)
                memset((char *) dst + at + rsize, 0, (size_t) (size - at - rsize));
        return 0;
}

int mg_kill_record_format(const struct mg_kill_record *kr, char *buf, size_t len) {
        struct mg_kill_record kc;
        const struct mg_kill_record *k = &kc;
        const struct mg_report *r = &kc.report;
        const struct mg_memstat *s = &r->stat;
        char reread[200] = "", park[200] = "";

        if (!kr || kill_record_in(&kc, kr) < 0)
                return -EINVAL;

        if (r->stall_signals & MG_STALL_REFAULT)
                snprintf(reread, sizeof(reread),
                         ", re-read %" PRIu64 "kB of file pages while reclaim took %" PRIu64 "kB in %" PRIu64
                         "ms (page cache %" PRIu64 "kB, %" PRIu64 "%% of it mapped)",
                         MG_TO_KIB(r->stall_refault_bytes), MG_TO_KIB(r->stall_reclaimed_bytes), r->stall_usec / 1000,
                         MG_TO_KIB(s->file), s->file ? s->file_mapped * 100 / s->file : 0);
        /* A park's record: still open (MG_EVENT_PARK), thawed, or the
         * kill it ended in. */
        if (r->park_id && r->park_end == MG_PARK_OPEN)
                snprintf(park, sizeof(park), ", frozen %" PRIu64 "ms after cgroup.freeze",
                         r->frozen_usec > r->park_usec ? (r->frozen_usec - r->park_usec) / 1000 : 0);
        else if (r->park_id && r->park_end != MG_PARK_END_NO_FREEZE)
                snprintf(park, sizeof(park), ", parked %" PRIu64 "ms (%s), %s",
                         r->park_end_usec > r->park_usec ? (r->park_end_usec - r->park_usec) / 1000 : 0,
                         r->frozen_usec ? "frozen" : "never frozen", mg_park_end_to_string(r->park_end));
        else if (r->park_id)
                snprintf(park, sizeof(park), ", %s", mg_park_end_to_string(r->park_end));
        return snprintf(buf, len,
                        "memguard: %s %s: %s; limit %" PRIu64 "kB, used %" PRIu64 "kB "
                        "(anon %" PRIu64 "kB shmem %" PRIu64 "kB kernel %" PRIu64 "kB sock %" PRIu64 "kB), "
                        "memory.current %" PRIu64 "kB, page cache %" PRIu64 "kB (dirty %" PRIu64 "kB "
                        "writeback %" PRIu64 "kB, not counted), memory.high events %" PRIu64 " max %" PRIu64
                        " oom_kill %" PRIu64 ", pressure some memory %" PRIu64 "ms io %" PRIu64
                        "ms total, stalled %" PRIu64 "ms%s%s%s%s, verdict to empty %" PRIu64 "ms%s",
                        k->cgroup ? k->cgroup : "?",
                        !r->park_id || r->park_end == MG_PARK_END_NO_FREEZE ? "killed"
                        : r->park_end == MG_PARK_OPEN ? "parked"
                        : r->park_end == MG_PARK_END_THAW ? "thawed" : "killed",
                        k->reason == MG_KILL_OVERSHOOT
                                                         ? "used memory above its limit"
                                                         : "stuck at its memory limit (stall)",
                        MG_TO_KIB(r->limit_bytes), MG_TO_KIB(r->used_bytes), MG_TO_KIB(s->anon), MG_TO_KIB(s->shmem), MG_TO_KIB(s->kernel),
                        MG_TO_KIB(s->sock), MG_TO_KIB(r->current_bytes), MG_TO_KIB(s->file), MG_TO_KIB(s->file_dirty),
                        MG_TO_KIB(s->file_writeback), r->events.high, r->events.max, r->events.oom_kill,
                        r->memory_pressure.some.total_usec / 1000, r->io_pressure.some.total_usec / 1000,
                        r->stall_usec / 1000, r->stall_signals & MG_STALL_MEMORY ? " on memory" : "",
                        r->stall_signals & MG_STALL_IO ? " on io" : "", reread, park,
                        k->empty_usec > k->detect_usec ? (k->empty_usec - k->detect_usec) / 1000 : 0,
                        k->empty_timed_out ? " (cgroup not empty yet)" : "");
}
