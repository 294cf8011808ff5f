/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "events.h"
#include "journal.h"
#include "json.h"
#include "outq.h"
#include "size.h"
#include "util.h"

/* The queue between mgt_output_start() and mgt_output_stop(); NULL: lines
 * are written here, blocking (stat, demo, and run and watch before their
 * guards and after them). */
static struct mgt_outq *out_queue;
static bool out_json;                   /* the format of the "dropped" line */
static bool out_stalled;                /* stopped with lines it could not write */
static uint64_t out_dropped;            /* the queue's count when it was stopped */
static enum mgt_journal_mode out_journal; /* lines as journal entries (mgt_output_journal()) */
static int out_fd = STDERR_FILENO;      /* the stream: lines, and a line the journal refused */

/* n bytes of b (b[n] must be writable: the newline goes there) to the
 * queue, or written here with one write() so lines of concurrent writers
 * do not interleave. */
static void put(char *b, size_t n) {
        if (out_queue) {
                (void) mgt_outq_push(out_queue, b, n);
        } else if (out_stalled) {
                out_dropped++;
        } else {
                b[n] = '\n';
                for (size_t off = 0; off < n + 1;) {
                        ssize_t w = write(out_fd, b + off, n + 1 - off);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                break;
                        off += (size_t) w;
                }
        }
}

/* A line stays one line whatever went into it (mgt_line_escape()); a JSON
 * line, escaped already, passes as it is. */
void mgt_print_line(const char *s) {
        char stack[4096], *b = stack;
        /* room for the newline after the escaper's text */
        size_t n = mgt_line_escape(s, stack, sizeof(stack) - 1);

        if (n >= sizeof(stack) - 1) {
                char *big = malloc(n + 2);
                if (big) {
                        (void) mgt_line_escape(s, big, n + 1);
                        b = big;
                } else {
                        n = sizeof(stack) - 2; /* out of memory: the line cut where the escaper stopped */
                }
        }
        put(b, n);
        if (b != stack)
                free(b);
}

/* The MESSAGE= of an entry's fields, written to the stream: what the
 * journal refused is not lost.  One writev(), as a line is one write(). */
static void write_message(int fd, const char *buf, size_t len) {
        static const char key[] = "MESSAGE=";
        struct iovec f[MGT_JOURNAL_FIELDS_MAX];
        size_t n = mgt_journal_iovec(buf, len, f, MGT_JOURNAL_FIELDS_MAX);

        for (size_t i = 0; i < n; i++)
                if (f[i].iov_len >= sizeof(key) - 1 && memcmp(f[i].iov_base, key, sizeof(key) - 1) == 0) {
                        struct iovec line[2] = {
                                { .iov_base = (char *) f[i].iov_base + sizeof(key) - 1,
                                  .iov_len = f[i].iov_len - (sizeof(key) - 1) },
                                { .iov_base = (void *) "\n", .iov_len = 1 },
                        };
                        ssize_t w;
                        do
                                w = writev(fd, line, 2);
                        while (w < 0 && errno == EINTR);
                        return;
                }
}

/* The queue's sink in MGT_JOURNAL_NATIVE: on its writer thread, which
 * journald may block (journal.h).  A refused entry (not journald's
 * absence, which libsystemd calls a success) goes to the stream. */
static int journal_sink(const char *buf, size_t len, void *userdata) {
        int r = mgt_journal_send(buf, len);

        if (r < 0)
                write_message(*(const int *) userdata, buf, len);
        return r;
}

static void journal_sink_confine(void *userdata) {
        (void) userdata;
        /* -EOPNOTSUPP without libseccomp, an error under valgrind: the
         * writer runs either way, as the set's restore worker does. */
        (void) mgt_journal_confine_thread();
}

/* An entry out: its fields (MESSAGE= the last) to the journal, through
 * the queue once it runs; in MGT_JOURNAL_EXPORT one "FIELD=value" line
 * each and a blank line, to the stream. */
static void put_entry(struct mgt_journal_entry *e) {
        if (out_journal == MGT_JOURNAL_EXPORT) {
                /* The values are escaped: no field holds a newline. */
                for (size_t i = 0; i < e->len; i++)
                        if (e->buf[i] == '\0')
                                e->buf[i] = '\n';
                put(e->buf, e->len); /* the line's newline after the last field's: the blank line */
        } else if (out_queue) {
                (void) mgt_outq_push(out_queue, e->buf, e->len);
        } else if (out_stalled) {
                out_dropped++;
        } else if (mgt_journal_send(e->buf, e->len) < 0) {
                write_message(out_fd, e->buf, e->len);
        }
}

/* One line out: as it is, or in an entry's MESSAGE= (e: the entry with
 * its other fields; NULL without the journal). */
static void emit(struct mgt_journal_entry *e, const char *line) {
        if (!e || out_journal == MGT_JOURNAL_OFF) {
                mgt_print_line(line);
                return;
        }
        mgt_journal_add(e, "MESSAGE", line);
        put_entry(e);
}

int mgt_output_journal(enum mgt_journal_mode mode) {
        if (out_queue)
                return -EBUSY;
        if (mode == MGT_JOURNAL_NATIVE && !mgt_journal_available())
                return -EOPNOTSUPP;
        out_journal = mode;
        return 0;
}

enum mgt_journal_mode mgt_output_journal_mode(void) {
        return out_journal;
}

/* The entry each field of a JSON object also goes to. */
static void tap_field(const char *key, const char *value, void *userdata) {
        mgt_journal_add_event_field(userdata, key, value);
}

/* With the journal on: e as an entry of priority and kind m, and the tap
 * that fills it with the fields of the object built with it (its JSON
 * text built only for --json).  NULL, with the journal off. */
static const struct mgt_json_tap *journal_begin(struct mgt_journal_entry *e, struct mgt_json_tap *t, int priority,
                                                enum mgt_msg m, bool json) {
        if (out_journal == MGT_JOURNAL_OFF)
                return NULL;
        mgt_journal_entry_init(e, priority, m);
        *t = (struct mgt_json_tap) { .field = tap_field, .userdata = e, .no_text = !json };
        return t;
}

static uint64_t realtime_of(uint64_t monotonic_usec);

/* The line that says n lines were dropped, without its newline.  On the
 * queue's writer thread too (outq.h): a fixed buffer, no allocation. */
static void dropped_line(bool json, uint64_t n, char *buf, size_t len) {
        char t[40];

        if (!json) {
                snprintf(buf, len, "memguard: dropped %" PRIu64 " line%s: the output did not keep up", n,
                         n == 1 ? "" : "s");
                return;
        }
        if (!mgt_rfc3339(realtime_of(0), t, sizeof(t)))
                snprintf(t, sizeof(t), "1970-01-01T00:00:00.000Z");
        snprintf(buf, len, "{\"event\":\"dropped\",\"time\":\"%s\",\"format_version\":%d,\"lines\":%" PRIu64 "}", t,
                 MGT_EVENTS_FORMAT_VERSION, n);
}

/* The journal entry of the same (the "dropped" event's fields). */
static void dropped_entry(bool json, uint64_t n, struct mgt_journal_entry *e) {
        char line[256], num[24], t[40];

        dropped_line(json, n, line, sizeof(line));
        snprintf(num, sizeof(num), "%" PRIu64, n);
        mgt_journal_entry_init(e, mgt_msg_priority(MGT_MSG_DROPPED), MGT_MSG_DROPPED);
        mgt_journal_add_event_field(e, "event", "dropped");
        if (mgt_rfc3339(realtime_of(0), t, sizeof(t)))
                mgt_journal_add_event_field(e, "time", t);
        mgt_journal_add_event_field(e, "lines", num);
        mgt_journal_add(e, "MESSAGE", line);
}

static size_t on_dropped(uint64_t n, char *buf, size_t len, void *userdata) {
        struct mgt_journal_entry e;

        if (out_journal == MGT_JOURNAL_OFF) {
                dropped_line(*(const bool *) userdata, n, buf, len);
                return strnlen(buf, len);
        }
        dropped_entry(*(const bool *) userdata, n, &e);
        if (out_journal == MGT_JOURNAL_EXPORT)
                for (size_t i = 0; i < e.len; i++)
                        if (e.buf[i] == '\0')
                                e.buf[i] = '\n';
        if (e.len > len)
                e.len = len;
        memcpy(buf, e.buf, e.len);
        return e.len;
}

int mgt_output_start(int fd, bool json) {
        if (out_queue)
                return -EBUSY;
        out_json = json;
        out_stalled = false;
        out_dropped = 0;
        out_fd = fd;
        if (out_journal == MGT_JOURNAL_NATIVE) {
                const struct mgt_outq_sink sink = { .write = journal_sink, .confine = journal_sink_confine,
                                                    .userdata = &out_fd };
                return mgt_outq_new_sink(&sink, MGT_OUTQ_MAX_BYTES, on_dropped, &out_json, &out_queue);
        }
        return mgt_outq_new(fd, MGT_OUTQ_MAX_BYTES, on_dropped, &out_json, &out_queue);
}

void mgt_output_stop(void) {
        struct mgt_outq *q = out_queue;

        if (!q)
                return;
        /* A sink stalled at exit: what is still queued is lost, and so is
         * the line that would have said so; the writer, stuck in its
         * write(2), is left to the process's exit (mgt_outq_free()). */
        out_stalled = mgt_outq_flush(q, MGT_OUTPUT_FLUSH_USEC) < 0;
        out_dropped = mgt_outq_dropped(q);
        out_queue = NULL;
        mgt_outq_free(q);
        out_fd = STDERR_FILENO; /* lines after it are written directly, as before it */
}

uint64_t mgt_output_dropped(void) {
        return out_queue ? mgt_outq_dropped(out_queue) : out_dropped;
}

void mgt_dropped_event(const struct mgt_out *o, uint64_t n) {
        struct mgt_journal_entry e;
        char line[256];

        if (out_journal != MGT_JOURNAL_OFF) {
                dropped_entry(o && o->json, n, &e);
                put_entry(&e);
                return;
        }
        dropped_line(o && o->json, n, line, sizeof(line));
        mgt_print_line(line);
}

/* The object's text, or, out of memory, an error object in its place
 * from the stack (oom: 160 bytes). */
static const char *json_text(struct mgt_json *j, char *oom, size_t oom_len) {
        const char *s = mgt_json_end(j);
        char t[40];

        if (s)
                return s;
        if (!mgt_rfc3339(realtime_of(0), t, sizeof(t)))
                snprintf(t, sizeof(t), "1970-01-01T00:00:00.000Z");
        snprintf(oom, oom_len,
                 "{\"event\":\"error\",\"time\":\"%s\",\"format_version\":%d,\"what\":\"json\","
                 "\"message\":\"out of memory: an event was not printed\"}",
                 t, MGT_EVENTS_FORMAT_VERSION);
        return oom;
}

/* An object out (e: its entry, or NULL), then freed. */
static void emit_json(struct mgt_journal_entry *e, struct mgt_json *j) {
        char oom[160];

        emit(e, json_text(j, oom, sizeof(oom)));
        mgt_json_free(j);
}

size_t mgt_rfc3339(uint64_t realtime_usec, char *buf, size_t len) {
        time_t secs = (time_t) (realtime_usec / 1000000);
        struct tm tm;
        size_t n;

        if (!gmtime_r(&secs, &tm) || (n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
                return 0;
        int m = snprintf(buf + n, len - n, ".%03uZ", (unsigned) (realtime_usec / 1000 % 1000));
        return m < 0 || (size_t) m >= len - n ? 0 : n + (size_t) m;
}

/* The wall-clock time of a CLOCK_MONOTONIC instant: now, less how long ago
 * it was (the library times events on the monotonic clock). */
static uint64_t realtime_of(uint64_t monotonic_usec) {
        struct timespec rt;
        uint64_t rt_usec, mono_usec;

        clock_gettime(CLOCK_REALTIME, &rt);
        mono_usec = mg_mono_usec();
        rt_usec = (uint64_t) rt.tv_sec * 1000000 + (uint64_t) rt.tv_nsec / 1000;
        if (monotonic_usec == 0 || monotonic_usec > mono_usec || mono_usec - monotonic_usec > rt_usec)
                return rt_usec;
        return rt_usec - (mono_usec - monotonic_usec);
}

void mgt_event_json_begin_tap(struct mgt_json *j, const struct mgt_json_tap *tap, const char *event,
                              uint64_t monotonic_usec) {
        char t[40];

        mgt_json_begin_tap(j, tap);
        mgt_json_str(j, "event", event);
        mgt_json_str(j, "time", mgt_rfc3339(realtime_of(monotonic_usec), t, sizeof(t)) ? t : NULL);
        mgt_json_u64(j, "format_version", MGT_EVENTS_FORMAT_VERSION);
}

void mgt_event_json_begin(struct mgt_json *j, const char *event, uint64_t monotonic_usec) {
        mgt_event_json_begin_tap(j, NULL, event, monotonic_usec);
}

static uint64_t ms_between(uint64_t from, uint64_t to) {
        return to > from ? (to - from) / 1000 : 0;
}

/* Which share of time lost decided a stall; NULL (null) for an overshoot. */
static const char *stall_on(unsigned signals) {
        switch (signals & (MG_STALL_MEMORY | MG_STALL_IO)) {
        case MG_STALL_MEMORY: return "memory";
        case MG_STALL_IO: return "io";
        case MG_STALL_MEMORY | MG_STALL_IO: return "memory+io";
        }
        return NULL;
}

const char *mgt_park_end_name(uint32_t end) {
        switch (end) {
        case MG_PARK_OPEN: return "open";
        case MG_PARK_END_KILL: return "kill";
        case MG_PARK_END_THAW: return "thaw";
        case MG_PARK_END_DEADLINE: return "deadline";
        case MG_PARK_END_BOUND: return "bound";
        case MG_PARK_END_NOT_FROZEN: return "not-frozen";
        case MG_PARK_END_OVER_LIMIT: return "over-limit";
        case MG_PARK_END_NO_FREEZE: return "no-freeze";
        }
        return "?";
}

/* The park a kill, park or thaw record is about; null for a kill that
 * was no park's.  parked_ms: from the freeze to the park's end (null while
 * it is open); frozen_after_ms: from the freeze to cgroup.events "frozen
 * 1" (null: never frozen). */
static void park_json(struct mgt_json *j, const struct mg_report *r) {
        if (!r->park_id) {
                mgt_json_null(j, "park_id");
                mgt_json_null(j, "park_end");
                mgt_json_null(j, "parked_ms");
                mgt_json_null(j, "frozen_after_ms");
                return;
        }
        mgt_json_u64(j, "park_id", r->park_id);
        mgt_json_str(j, "park_end", mgt_park_end_name(r->park_end));
        if (r->park_end_usec)
                mgt_json_u64(j, "parked_ms", ms_between(r->park_usec, r->park_end_usec));
        else
                mgt_json_null(j, "parked_ms");
        if (r->frozen_usec)
                mgt_json_u64(j, "frozen_after_ms", ms_between(r->park_usec, r->frozen_usec));
        else
                mgt_json_null(j, "frozen_after_ms");
}

void mgt_kill_json(struct mgt_json *j, const struct mg_kill_record *k) {
        const struct mg_report *r = &k->report;

        mgt_json_str(j, "reason", mg_kill_reason_to_string(k->reason));
        mgt_json_str(j, "cgroup", k->cgroup);
        mgt_json_u64(j, "limit_bytes", r->limit_bytes);
        mgt_json_u64(j, "used_bytes", r->used_bytes);
        mgt_json_u64(j, "anon_bytes", r->stat.anon);
        mgt_json_u64(j, "shmem_bytes", r->stat.shmem);
        mgt_json_u64(j, "kernel_bytes", r->stat.kernel);
        mgt_json_u64(j, "sock_bytes", r->stat.sock);
        mgt_json_u64(j, "current_bytes", r->current_bytes);
        mgt_json_u64(j, "file_bytes", r->stat.file);
        mgt_json_u64(j, "file_dirty_bytes", r->stat.file_dirty);
        mgt_json_u64(j, "file_writeback_bytes", r->stat.file_writeback);
        mgt_json_u64(j, "memory_some_total_usec", r->memory_pressure.some.total_usec);
        mgt_json_u64(j, "io_some_total_usec", r->io_pressure.some.total_usec);
        mgt_json_u64(j, "events_high", r->events.high);
        mgt_json_u64(j, "events_max", r->events.max);
        mgt_json_u64(j, "oom_kill", r->events.oom_kill);
        mgt_json_u64(j, "stall_ms", r->stall_usec / 1000);
        mgt_json_str(j, "stall_on", stall_on(r->stall_signals));
        /* which rule: pages of the working set read back (restores), or
         * what it had re-read, or its cache turned over, on and on (refaults) */
        mgt_json_str(j, "stall_rule", k->reason != MG_KILL_STALL            ? NULL
                                      : r->stall_signals & MG_STALL_REFAULT ? "refault"
                                                                            : "restore");
        if (r->stall_signals & MG_STALL_REFAULT) {
                mgt_json_u64(j, "stall_refault_bytes", r->stall_refault_bytes);
                mgt_json_u64(j, "stall_reclaimed_bytes", r->stall_reclaimed_bytes);
        } else {
                mgt_json_null(j, "stall_refault_bytes");
                mgt_json_null(j, "stall_reclaimed_bytes");
        }
        mgt_json_u64(j, "file_mapped_bytes", r->stat.file_mapped);
        mgt_json_str(j, "method", k->method == MG_KILL_CGROUP_KILL ? "cgroup.kill" : "pidfd");
        mgt_json_u64(j, "detect_to_kill_ms", ms_between(k->detect_usec, k->kill_usec));
        if (k->empty_timed_out)
                mgt_json_null(j, "kill_to_empty_ms"); /* it did not empty in kill_wait */
        else
                mgt_json_u64(j, "kill_to_empty_ms", ms_between(k->kill_usec, k->empty_usec));
        park_json(j, r);
}

void mgt_kill_text(const struct mg_kill_record *k, char *buf, size_t len) {
        static const char lib_prefix[] = "memguard: ";
        char rec[2048];
        const char *p = rec;

        mg_kill_record_format(k, rec, sizeof(rec));
        /* The record reads like a kernel OOM report and carries its own
         * "memguard: " already; ours says which event it is. */
        if (strncmp(p, lib_prefix, sizeof(lib_prefix) - 1) == 0)
                p += sizeof(lib_prefix) - 1;
        snprintf(buf, len, "memguard: kill: %s", p);
}

static void lend_text(const struct mg_event *ev, char *buf, size_t len) {
        char a[32], b[32], f[32], what[160];
        const struct mg_lend_info *l = ev->lend;

        mgt_size_format(l->old_high_bytes, a, sizeof(a));
        mgt_size_format(l->new_high_bytes, b, sizeof(b));
        mgt_size_format(l->found_high_bytes, f, sizeof(f));
        if (l->restored)
                snprintf(what, sizeof(what), "memory.high restored to %s", a);
        else
                snprintf(what, sizeof(what), "memory.high left at %s (changed during the lend), not restored to %s",
                         f, a);
        if (ev->type == MG_EVENT_LEND_BEGIN)
                snprintf(buf, len, "memguard: lend-begin: %s: memory.high %s -> %s, kills paused", ev->cgroup, a, b);
        else if (ev->type == MG_EVENT_LEND_END)
                snprintf(buf, len, "memguard: lend-end: %s: %s", ev->cgroup, what);
        else
                snprintf(buf, len, "memguard: lend-expired: %s: lend deadline passed, %s", ev->cgroup, what);
}

/* Over the limit with no process: what holds the memory, in the kill
 * record's terms. */
static void empty_text(const struct mg_event *ev, char *buf, size_t len) {
        const struct mg_report *r = ev->report;
        const struct mg_memstat *s = &r->stat;

        snprintf(buf, len,
                 "memguard: empty-over-limit: %s: used %" PRIu64 "kB of limit %" PRIu64 "kB held by no process "
                 "(anon %" PRIu64 "kB shmem %" PRIu64 "kB kernel %" PRIu64 "kB sock %" PRIu64 "kB), memory.current %" PRIu64
                 "kB, page cache %" PRIu64 "kB (not counted): nothing to kill",
                 ev->cgroup, MG_TO_KIB(r->used_bytes), MG_TO_KIB(r->limit_bytes), MG_TO_KIB(s->anon), MG_TO_KIB(s->shmem), MG_TO_KIB(s->kernel),
                 MG_TO_KIB(s->sock), MG_TO_KIB(r->current_bytes), MG_TO_KIB(s->file));
}

/* Members that outlived the kill: "1234 (D) 5678 (D)". */
static void unkillable_text(const struct mg_event *ev, char *buf, size_t len) {
        const struct mg_unkillable_info *u = ev->unkillable;
        char list[MG_UNKILLABLE_MAX * 16] = "";
        size_t at = 0;

        for (uint32_t i = 0; i < u->n_pids && i < MG_UNKILLABLE_MAX; i++)
                at += (size_t) snprintf(list + at, sizeof(list) - at, "%s%" PRId32 " (%c)", i ? " " : "", u->pids[i],
                                        u->states[i] ? u->states[i] : '?');
        snprintf(buf, len,
                 "memguard: unkillable: %s: %" PRIu32 " process%s still there %" PRIu64 " ms after SIGKILL: %s%s; "
                 "not killed again while the same ones are there",
                 ev->cgroup, u->n_members, u->n_members == 1 ? "" : "es", u->wait_usec / 1000, list,
                 u->n_members > u->n_pids || u->more_members ? " ..." : "");
}

/* Held over memory.high: the figures of struct mg_throttle_info. */
static void throttle_text(const struct mg_event *ev, char *buf, size_t len) {
        const struct mg_throttle_info *t = ev->throttle;
        char high[32], cur[32];

        snprintf(buf, len,
                 "memguard: throttled: %s: memory.current %s over memory.high %s by %" PRIu32 ".%02" PRIu32
                 " %%, the kernel sleeps about %" PRIu64 " ms per 256 KiB charged; %" PRIu64
                 " high events/s, %" PRIu32 ".%02" PRIu32 " %% stalled on memory, %" PRIu32 ".%02" PRIu32
                 " %% of a CPU: slowed down, not killed",
                 ev->cgroup, mgt_size_format(t->current_bytes, cur, sizeof(cur)),
                 mgt_size_format(t->high_bytes, high, sizeof(high)), t->overage_permyriad / 100,
                 t->overage_permyriad % 100, t->est_delay_usec / 1000, t->high_events_per_sec,
                 t->memory_some_permyriad / 100, t->memory_some_permyriad % 100, t->cpu_permyriad / 100,
                 t->cpu_permyriad % 100);
}

/* What mgt_on_event() did with an MG_EVENT_PRE_KILL: the deferral it asked
 * for (0: none) and mg_guard_defer_kill()'s answer; and the kill_id of a
 * pre-kill, kill, kill-dry-run or kill-averted event (0: another event). */
struct pre_kill_answer {
        uint64_t usec;
        int r;
        bool dry_run;
        uint64_t kill_id;
        uint64_t hook_timeout_usec;     /* a park event: the park hook's bound (0: no hook) */
};

/* The last kill_id given: one counter per process, so ids are unique over
 * every guard of a watch, counting from 1. */
static uint64_t last_kill_id;

static void pending_kill_drop(struct mgt_out *o, size_t i) {
        o->pending_kills[i] = o->pending_kills[--o->n_pending_kills];
}

/*
 * The kill_id of ev, an event of guard g: a pre-kill event opens a decision
 * with a new id, and the kill, kill-dry-run or kill-averted event that ends
 * it (the same guard's next one) carries that id; one without a pre-kill
 * before it (no --pre-kill-defer, or a kill made at once past the hard
 * bound) is a decision of its own.  0 for every other event.
 */
static uint64_t kill_id_of(struct mgt_out *o, const mg_guard *g, enum mg_event_type type) {
        size_t i = 0;
        uint64_t id;

        /* Only a kill decision's events (and the guard's end) look in the
         * table of pending kills; every other event passes it by. */
        if (type != MG_EVENT_PRE_KILL && type != MG_EVENT_KILL && type != MG_EVENT_KILL_DRY_RUN &&
            type != MG_EVENT_KILL_AVERTED && type != MG_EVENT_GONE && type != MG_EVENT_PARK &&
            type != MG_EVENT_THAW)
                return 0;
        while (i < o->n_pending_kills && o->pending_kills[i].guard != g)
                i++;
        switch (type) {
        case MG_EVENT_PARK:
                /* A park continues the decision (its pre-kill's id, if it
                 * had one), which its kill or thaw ends. */
                if (i < o->n_pending_kills)
                        return o->pending_kills[i].id;
                /* a decision of its own, pending */
                __attribute__((fallthrough));
        case MG_EVENT_PRE_KILL:
                id = ++last_kill_id;
                if (i < o->n_pending_kills) { /* a second pre-kill: the first decision's end was never told */
                        o->pending_kills[i].id = id;
                        return id;
                }
                if (o->n_pending_kills == o->cap_pending_kills) {
                        size_t cap = o->cap_pending_kills ? 2 * o->cap_pending_kills : 8;
                        struct mgt_pending_kill *p = realloc(o->pending_kills, cap * sizeof(*p));
                        if (!p)
                                return id; /* out of memory: the kill gets an id of its own, unlinked */
                        o->pending_kills = p;
                        o->cap_pending_kills = cap;
                }
                o->pending_kills[o->n_pending_kills++] = (struct mgt_pending_kill) { .guard = g, .id = id };
                return id;
        case MG_EVENT_KILL:
        case MG_EVENT_KILL_DRY_RUN:
        case MG_EVENT_KILL_AVERTED:
        case MG_EVENT_THAW:
                if (i == o->n_pending_kills)
                        return ++last_kill_id;
                id = o->pending_kills[i].id;
                pending_kill_drop(o, i);
                return id;
        case MG_EVENT_GONE: /* the guard goes with its cgroup */
                if (i < o->n_pending_kills)
                        pending_kill_drop(o, i);
                return 0;
        default:
                return 0;
        }
}

uint64_t mgt_out_kill_id(const struct mgt_out *o, const mg_guard *g) {
        for (size_t i = 0; i < o->n_pending_kills; i++)
                if (o->pending_kills[i].guard == g)
                        return o->pending_kills[i].id;
        return 0;
}

void mgt_out_forget_guard(struct mgt_out *o, const mg_guard *g) {
        for (size_t i = 0; i < o->n_pending_kills; i++)
                if (o->pending_kills[i].guard == g) {
                        pending_kill_drop(o, i);
                        return;
                }
}

void mgt_out_release(struct mgt_out *o) {
        free(o->pending_kills);
        o->pending_kills = NULL;
        o->n_pending_kills = o->cap_pending_kills = 0;
}

static void pre_kill_text(const struct mg_event *ev, const struct pre_kill_answer *a, char *buf, size_t len) {
        const struct mg_report *r = &ev->kill->report;
        char how[96];

        if (a->usec == 0)
                snprintf(how, sizeof(how), "the kill follows");
        else if (a->r == 0)
                snprintf(how, sizeof(how), "deferred %" PRIu64 " ms", a->usec / 1000);
        else
                snprintf(how, sizeof(how), "not deferred (%s): the kill follows", strerror(-a->r));
        snprintf(buf, len,
                 "memguard: pre-kill: %s: about to kill (%s): used %" PRIu64 "kB of limit %" PRIu64 "kB, anon %" PRIu64
                 "kB; %s",
                 ev->cgroup, mg_kill_reason_to_string(ev->kill->reason), MG_TO_KIB(r->used_bytes), MG_TO_KIB(r->limit_bytes),
                 MG_TO_KIB(r->stat.anon), how);
}

/* s at buf + *at, cut to what fits; buf stays a string. */
static void append(char *buf, size_t len, size_t *at, const char *s) {
        size_t n = strlen(s);

        if (len == 0 || *at >= len - 1)
                return;
        if (n > len - 1 - *at)
                n = len - 1 - *at;
        memcpy(buf + *at, s, n);
        *at += n;
        buf[*at] = '\0';
}

/* usec as milliseconds to a tenth: "12.3". */
static const char *ms_text(uint64_t usec, char *buf, size_t len) {
        snprintf(buf, len, "%" PRIu64 ".%" PRIu64, usec / 1000, usec / 100 % 10);
        return buf;
}

/* The windows of a pressure dose, oldest first: " 1.2 3.4 5.6". */
static void windows_text(const uint64_t *usec, uint32_t n, char *buf, size_t len) {
        char ms[32];
        size_t at = 0;

        buf[0] = '\0';
        for (uint32_t i = 0; i < n; i++) {
                append(buf, len, &at, " ");
                append(buf, len, &at, ms_text(usec[i], ms, sizeof(ms)));
        }
}

static const char *reclaim_why(enum mg_reclaim_why why) {
        switch (why) {
        case MG_RECLAIM_PRESSURE: return "pressure";
        case MG_RECLAIM_HEADROOM: return "headroom";
        }
        return NULL;
}

/* The windows a pressure dose carries (struct mg_reclaim_info). */
static uint32_t reclaim_windows(const struct mg_reclaim_info *r) {
        return r->why != MG_RECLAIM_PRESSURE ? 0 : r->windows < MG_RECLAIM_WINDOWS_MAX ? r->windows : MG_RECLAIM_WINDOWS_MAX;
}

/* A dose of the reclaim actuator: what fired it, what the kernel took,
 * and whether it counts. */
static void reclaim_text(const struct mg_event *ev, char *buf, size_t len) {
        const struct mg_reclaim_info *r = ev->reclaim;
        uint32_t n = reclaim_windows(r);
        char asked[32], got[32], cur[32], file[32], took[32], some[MG_RECLAIM_WINDOWS_MAX * 24],
                full[MG_RECLAIM_WINDOWS_MAX * 24], why[sizeof(some) + sizeof(full) + 96], end[192];

        if (r->why == MG_RECLAIM_PRESSURE) {
                windows_text(r->some_usec, n, some, sizeof(some));
                windows_text(r->full_usec, n, full, sizeof(full));
                snprintf(why, sizeof(why), "on memory pressure (stalled some%s ms, full%s ms in %" PRIu32
                         " window%s of a second)", some, full, n, n == 1 ? "" : "s");
        } else if (r->why == MG_RECLAIM_HEADROOM) {
                snprintf(why, sizeof(why), "on headroom (memory.current %s, file cache %s)",
                         mgt_size_format(r->current_bytes, cur, sizeof(cur)),
                         mgt_size_format(r->file_bytes, file, sizeof(file)));
        } else {
                snprintf(why, sizeof(why), "(why %d)", (int) r->why);
        }
        if (r->error < 0)
                snprintf(end, sizeof(end), "not counted: %s%s", strerror(-r->error),
                         r->error == -EAGAIN   ? " (the kernel took less than asked)"
                         : r->error == -ENODEV ? " (the target is gone: no more doses)"
                                               : "");
        else
                snprintf(end, sizeof(end), "%s", r->counted ? "counted" : "not counted (under 80 % of it, or over 1 s)");
        snprintf(buf, len, "memguard: reclaim: %s: a dose of %s to %s %s: %s reclaimed in %s ms, %s", ev->cgroup,
                 mgt_size_format(r->asked_bytes, asked, sizeof(asked)), r->target ? r->target : "?", why,
                 mgt_size_format(r->achieved_bytes, got, sizeof(got)), ms_text(r->duration_usec, took, sizeof(took)),
                 end);
}

/* usec as seconds to a tenth: "2.1 s" (a hook's time is seconds). */
static const char *sec_text(uint64_t usec, char *buf, size_t len) {
        snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " s", usec / 1000000, usec / 100000 % 10);
        return buf;
}

/* A park begun (frozen instead of killed) or ended in a thaw. */
static void park_text(const struct mg_event *ev, const struct pre_kill_answer *a, char *buf, size_t len) {
        const struct mg_report *r = &ev->kill->report;
        char hook[96] = "", t[32];

        if (ev->type == MG_EVENT_THAW) {
                snprintf(buf, len,
                         "memguard: thaw: %s: park %" PRIu64 " ended after %" PRIu64 " ms: thawed, guarded again "
                         "(used %" PRIu64 "kB when parked, limit then %" PRIu64 "kB)",
                         ev->cgroup, r->park_id, ms_between(r->park_usec, r->park_end_usec), MG_TO_KIB(r->used_bytes),
                         MG_TO_KIB(r->limit_bytes));
                return;
        }
        if (a->hook_timeout_usec)
                snprintf(hook, sizeof(hook), "; the park hook runs, at most %s",
                         sec_text(a->hook_timeout_usec, t, sizeof(t)));
        snprintf(buf, len,
                 "memguard: park: %s: frozen instead of killed (%s): used %" PRIu64 "kB of limit %" PRIu64
                 "kB, anon %" PRIu64 "kB; frozen %" PRIu64 " ms after the freeze; park %" PRIu64 "%s",
                 ev->cgroup, mg_kill_reason_to_string(ev->kill->reason), MG_TO_KIB(r->used_bytes),
                 MG_TO_KIB(r->limit_bytes), MG_TO_KIB(r->stat.anon), ms_between(r->park_usec, r->frozen_usec),
                 r->park_id, hook);
}

static void event_text(const struct mg_event *ev, const struct pre_kill_answer *a, char *buf, size_t len) {
        switch (ev->type) {
        case MG_EVENT_KILL:
                mgt_kill_text(ev->kill, buf, len);
                break;
        case MG_EVENT_KILL_DRY_RUN: {
                /* "memguard: kill: ..." as "memguard: kill-dry-run: ...":
                 * a dry run's line must not read as a kill */
                static const char kill_prefix[] = "memguard: kill: ";
                char rec[4096];
                size_t at = 0;
                mgt_kill_text(ev->kill, rec, sizeof(rec));
                append(buf, len, &at, "memguard: kill-dry-run: ");
                append(buf, len, &at, rec + sizeof(kill_prefix) - 1);
                append(buf, len, &at, " (dry run: nothing was killed)");
                break;
        }
        case MG_EVENT_PRE_KILL:
                pre_kill_text(ev, a, buf, len);
                break;
        case MG_EVENT_KILL_AVERTED:
                snprintf(buf, len,
                         "memguard: kill-averted: %s: the deferred kill (%s) is not made: used %" PRIu64
                         "kB, memory.current %" PRIu64 "kB of limit %" PRIu64 "kB",
                         ev->cgroup, mg_kill_reason_to_string(ev->kill->reason), MG_TO_KIB(ev->report->used_bytes),
                         MG_TO_KIB(ev->report->current_bytes), MG_TO_KIB(ev->report->limit_bytes));
                break;
        case MG_EVENT_KERNEL_OOM:
                snprintf(buf, len, "memguard: kernel-oom: %s: the kernel OOM-killed %" PRIu64 " process%s (memory.max)",
                         ev->cgroup, ev->count, ev->count == 1 ? "" : "es");
                break;
        case MG_EVENT_LEND_BEGIN:
        case MG_EVENT_LEND_END:
        case MG_EVENT_LEND_EXPIRED:
                lend_text(ev, buf, len);
                break;
        case MG_EVENT_ERROR:
                snprintf(buf, len, "memguard: error: %s: %s: %s", ev->cgroup, ev->what ? ev->what : "?",
                         strerror(-ev->error));
                break;
        case MG_EVENT_GONE:
                snprintf(buf, len, "memguard: gone: %s: the cgroup was removed", ev->cgroup);
                break;
        case MG_EVENT_EMPTY_OVER_LIMIT:
                empty_text(ev, buf, len);
                break;
        case MG_EVENT_UNKILLABLE:
                unkillable_text(ev, buf, len);
                break;
        case MG_EVENT_THROTTLED:
                throttle_text(ev, buf, len);
                break;
        case MG_EVENT_RECLAIM:
                reclaim_text(ev, buf, len);
                break;
        case MG_EVENT_PARK:
        case MG_EVENT_THAW:
                park_text(ev, a, buf, len);
                break;
        default:
                snprintf(buf, len, "memguard: %s: %s", mg_event_type_to_string(ev->type), ev->cgroup);
        }
}

static void event_json(const struct mg_event *ev, const struct pre_kill_answer *a, struct mgt_json *j,
                       const struct mgt_json_tap *tap) {
        mgt_event_json_begin_tap(j, tap, mg_event_type_to_string(ev->type), ev->time_usec);
        switch (ev->type) {
        case MG_EVENT_KILL:
        case MG_EVENT_KILL_DRY_RUN:
                mgt_kill_json(j, ev->kill);
                mgt_json_bool(j, "dry_run", ev->type == MG_EVENT_KILL_DRY_RUN);
                mgt_json_u64(j, "kill_id", a->kill_id);
                return;
        case MG_EVENT_PRE_KILL: {
                const struct mg_report *r = &ev->kill->report;
                mgt_json_str(j, "reason", mg_kill_reason_to_string(ev->kill->reason));
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_u64(j, "limit_bytes", r->limit_bytes);
                mgt_json_u64(j, "used_bytes", r->used_bytes);
                mgt_json_u64(j, "anon_bytes", r->stat.anon);
                mgt_json_u64(j, "shmem_bytes", r->stat.shmem);
                mgt_json_u64(j, "current_bytes", r->current_bytes);
                mgt_json_bool(j, "dry_run", a->dry_run);
                mgt_json_u64(j, "deferred_ms", a->usec && a->r == 0 ? a->usec / 1000 : 0);
                mgt_json_str(j, "defer_error", a->usec && a->r < 0 ? strerror(-a->r) : NULL);
                mgt_json_u64(j, "kill_id", a->kill_id);
                return;
        }
        case MG_EVENT_PARK:
        case MG_EVENT_THAW:
                /* the record the kill would carry (kill_usec 0: not sent) */
                mgt_kill_json(j, ev->kill);
                mgt_json_u64(j, "kill_id", a->kill_id);
                if (ev->type != MG_EVENT_PARK)
                        return;
                if (a->hook_timeout_usec)
                        mgt_json_u64(j, "hook_timeout_ms", a->hook_timeout_usec / 1000);
                else
                        mgt_json_null(j, "hook_timeout_ms");
                mgt_json_u64(j, "detect_to_park_ms", ms_between(ev->kill->detect_usec, ev->kill->report.park_usec));
                return;
        case MG_EVENT_KILL_AVERTED:
                mgt_json_str(j, "reason", mg_kill_reason_to_string(ev->kill->reason));
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_u64(j, "limit_bytes", ev->report->limit_bytes);
                mgt_json_u64(j, "used_bytes", ev->report->used_bytes);
                mgt_json_u64(j, "current_bytes", ev->report->current_bytes);
                mgt_json_u64(j, "detect_to_averted_ms", ms_between(ev->kill->detect_usec, ev->time_usec));
                mgt_json_u64(j, "kill_id", a->kill_id);
                return;
        case MG_EVENT_KERNEL_OOM:
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_u64(j, "count", ev->count);
                return;
        case MG_EVENT_LEND_BEGIN:
        case MG_EVENT_LEND_END:
        case MG_EVENT_LEND_EXPIRED:
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_bytes(j, "old_high_bytes", ev->lend->old_high_bytes);
                mgt_json_bytes(j, "new_high_bytes", ev->lend->new_high_bytes);
                mgt_json_u64(j, "lend_id", ev->lend->id);
                if (ev->type != MG_EVENT_LEND_BEGIN) {
                        mgt_json_bool(j, "restored", ev->lend->restored);
                        mgt_json_bytes(j, "found_high_bytes", ev->lend->found_high_bytes);
                }
                return;
        case MG_EVENT_ERROR:
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_str(j, "what", ev->what);
                mgt_json_str(j, "error", strerror(-ev->error));
                mgt_json_i64(j, "errno", -ev->error);
                return;
        case MG_EVENT_EMPTY_OVER_LIMIT:
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_u64(j, "limit_bytes", ev->report->limit_bytes);
                mgt_json_u64(j, "used_bytes", ev->report->used_bytes);
                mgt_json_u64(j, "anon_bytes", ev->report->stat.anon);
                mgt_json_u64(j, "shmem_bytes", ev->report->stat.shmem);
                mgt_json_u64(j, "kernel_bytes", ev->report->stat.kernel);
                mgt_json_u64(j, "sock_bytes", ev->report->stat.sock);
                mgt_json_u64(j, "current_bytes", ev->report->current_bytes);
                mgt_json_u64(j, "file_bytes", ev->report->stat.file);
                return;
        case MG_EVENT_THROTTLED: {
                const struct mg_throttle_info *t = ev->throttle;
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_bytes(j, "high_bytes", t->high_bytes);
                mgt_json_u64(j, "current_bytes", t->current_bytes);
                mgt_json_u64(j, "overage_permyriad", t->overage_permyriad);
                mgt_json_u64(j, "est_delay_usec", t->est_delay_usec);
                mgt_json_u64(j, "high_events_per_sec", t->high_events_per_sec);
                mgt_json_u64(j, "memory_some_permyriad", t->memory_some_permyriad);
                mgt_json_u64(j, "cpu_permyriad", t->cpu_permyriad);
                return;
        }
        case MG_EVENT_UNKILLABLE: {
                const struct mg_unkillable_info *u = ev->unkillable;
                size_t n = u->n_pids < MG_UNKILLABLE_MAX ? u->n_pids : MG_UNKILLABLE_MAX;
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_u64(j, "members", u->n_members);
                mgt_json_bool(j, "more_members", u->more_members);
                mgt_json_i32_array(j, "pids", u->pids, n);
                mgt_json_char_array(j, "states", u->states, n, '?');
                mgt_json_u64(j, "kill_to_report_ms", u->wait_usec / 1000);
                return;
        }
        case MG_EVENT_RECLAIM: {
                const struct mg_reclaim_info *r = ev->reclaim;
                uint32_t n = reclaim_windows(r);
                mgt_json_str(j, "cgroup", ev->cgroup);
                mgt_json_str(j, "target", r->target);
                mgt_json_str(j, "why", reclaim_why(r->why));
                mgt_json_u64(j, "asked_bytes", r->asked_bytes);
                mgt_json_u64(j, "achieved_bytes", r->achieved_bytes);
                mgt_json_u64(j, "duration_usec", r->duration_usec);
                mgt_json_str(j, "error", r->error < 0 ? strerror(-r->error) : NULL);
                if (r->error < 0)
                        mgt_json_i64(j, "errno", -r->error);
                else
                        mgt_json_null(j, "errno");
                mgt_json_bool(j, "counted", r->counted);
                /* the figures of what fired it; null for the other rule */
                if (r->why == MG_RECLAIM_PRESSURE) {
                        mgt_json_u64(j, "windows", n);
                        mgt_json_u64_array(j, "some_usec", r->some_usec, n);
                        mgt_json_u64_array(j, "full_usec", r->full_usec, n);
                } else {
                        mgt_json_null(j, "windows");
                        mgt_json_null(j, "some_usec");
                        mgt_json_null(j, "full_usec");
                }
                if (r->why == MG_RECLAIM_HEADROOM) {
                        mgt_json_u64(j, "current_bytes", r->current_bytes);
                        mgt_json_u64(j, "file_bytes", r->file_bytes);
                } else {
                        mgt_json_null(j, "current_bytes");
                        mgt_json_null(j, "file_bytes");
                }
                return;
        }
        default:
                mgt_json_str(j, "cgroup", ev->cgroup);
        }
}

/* The journal's own field for the errno of an error event. */
static void event_errno(const struct mg_event *ev, struct mgt_journal_entry *e) {
        char num[16];

        if (ev->type != MG_EVENT_ERROR || ev->error >= 0)
                return;
        snprintf(num, sizeof(num), "%d", -ev->error);
        mgt_journal_add(e, "ERRNO", num);
}

void mgt_event_journal(const struct mg_event *ev, uint64_t kill_id, const char *message, struct mgt_journal_entry *e) {
        struct pre_kill_answer a = { .kill_id = kill_id };
        enum mgt_msg m = mgt_msg_of(mg_event_type_to_string(ev->type));
        struct mgt_json_tap t = { .field = tap_field, .userdata = e, .no_text = true };
        struct mgt_json j;

        mgt_journal_entry_init(e, mgt_msg_priority(m), m);
        event_json(ev, &a, &j, &t);
        mgt_json_free(&j);
        event_errno(ev, e);
        mgt_journal_add(e, "MESSAGE", message);
}

char *mgt_event_record(const struct mgt_out *o, const struct mg_event *ev, uint64_t kill_id) {
        struct pre_kill_answer a = { .dry_run = o->dry_run, .kill_id = kill_id,
                                     .hook_timeout_usec = o->park_hook_timeout_usec };
        struct mgt_json j;
        const char *t;
        char *copy;

        event_json(ev, &a, &j, NULL);
        t = mgt_json_end(&j);
        copy = t ? strdup(t) : NULL;
        mgt_json_free(&j);
        return copy;
}

void mgt_on_event(mg_guard *g, const struct mg_event *ev, void *userdata) {
        struct mgt_out *o = userdata;
        struct pre_kill_answer a = { .dry_run = o->dry_run, .hook_timeout_usec = o->park_hook_timeout_usec };
        enum mgt_msg m = mgt_msg_of(mg_event_type_to_string(ev->type));
        struct mgt_journal_entry e;
        struct mgt_json_tap t;
        const struct mgt_json_tap *tap = journal_begin(&e, &t, mgt_msg_priority(m), m, o->json);
        struct mgt_json j;
        char line[4096];

        switch (ev->type) {
        case MG_EVENT_KILL:
                o->kills++;
                break;
        case MG_EVENT_KERNEL_OOM:
                o->kernel_ooms++;
                break;
        case MG_EVENT_ERROR:
                o->errors++;
                break;
        case MG_EVENT_GONE:
                o->gone++;
                break;
        case MG_EVENT_PRE_KILL:
                /* From inside the callback, as the library asks. */
                if (o->pre_kill_defer_usec && g) {
                        a.usec = o->pre_kill_defer_usec;
                        a.r = mg_guard_defer_kill(g, a.usec);
                }
                break;
        default:
                break;
        }
        a.kill_id = kill_id_of(o, g, ev->type);
        /* One walk of the fields: the JSON text, the entry's fields, or both. */
        if (o->json || tap)
                event_json(ev, &a, &j, tap);
        if (tap)
                event_errno(ev, &e);
        if (o->json) {
                emit_json(tap ? &e : NULL, &j);
        } else {
                if (tap)
                        mgt_json_free(&j);
                event_text(ev, &a, line, sizeof(line));
                emit(tap ? &e : NULL, line);
        }
        /* The set allows removing a guard from its own callback. */
        if (ev->type == MG_EVENT_GONE && o->remove_gone_from)
                (void) mg_set_remove(o->remove_gone_from, g);
}

int mgt_pre_kill_defer_parse(const char *s, uint64_t *ret_usec) {
        uint64_t v;

        if (mgt_duration_parse(s, &v) < 0 || v < 1000 || v > MG_PRE_KILL_MAX_DEFER_USEC)
                return -EINVAL;
        *ret_usec = v;
        return 0;
}

void mgt_kill_options(const struct mgt_out *o, struct mg_guard_options *opt) {
        if (o->dry_run)
                opt->flags |= MG_GUARD_DRY_RUN;
        /* the bound is what the callback asks for: it asks for all of it */
        opt->pre_kill_max_defer_usec = (uint32_t) o->pre_kill_defer_usec;
}

/*
 * The library's log.  On a stream only its errors: its warnings and
 * information say again what the events say.  In the journal every level
 * but debug, at its priority (the library's levels are syslog's), so
 * `journalctl -p warning` filters them and nothing is lost to a reader
 * who wants the detail; they have no JSON form, so their MESSAGE= is the
 * text line whatever the format.
 */
void mgt_on_log(int level, const char *msg, void *userdata) {
        const struct mgt_out *o = userdata;
        struct mgt_journal_entry e;
        struct mgt_json_tap t;
        const struct mgt_json_tap *tap;
        char line[1024];

        if (level > (out_journal != MGT_JOURNAL_OFF ? MG_LOG_INFO : MG_LOG_ERR))
                return;
        tap = journal_begin(&e, &t, level, level <= MG_LOG_ERR ? MGT_MSG_ERROR : MGT_MSG_NONE, o->json);
        if (level <= MG_LOG_ERR && (o->json || tap)) {
                struct mgt_json j;
                mgt_event_json_begin_tap(&j, tap, "error", 0);
                mgt_json_str(&j, "what", "log");
                mgt_json_str(&j, "message", msg);
                if (o->json) {
                        emit_json(tap ? &e : NULL, &j);
                        return;
                }
                mgt_json_free(&j);
        }
        snprintf(line, sizeof(line), "memguard: %s", msg);
        emit(tap ? &e : NULL, line);
}

void mgt_error(const struct mgt_out *o, const char *cmd, int err, const char *fmt, ...) {
        struct mgt_journal_entry e;
        struct mgt_json_tap t;
        const struct mgt_json_tap *tap = journal_begin(&e, &t, LOG_ERR, MGT_MSG_ERROR, o && o->json);
        char msg[1024], line[1200], num[16];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if ((o && o->json) || tap) {
                struct mgt_json j;
                mgt_event_json_begin_tap(&j, tap, "error", 0);
                mgt_json_str(&j, "what", cmd);
                mgt_json_str(&j, "message", msg);
                if (err) {
                        mgt_json_str(&j, "error", strerror(-err));
                        mgt_json_i64(&j, "errno", -err);
                        if (tap) {
                                snprintf(num, sizeof(num), "%d", -err);
                                mgt_journal_add(&e, "ERRNO", num);
                        }
                }
                if (o && o->json) {
                        emit_json(tap ? &e : NULL, &j);
                        return;
                }
                mgt_json_free(&j);
        }
        if (err)
                snprintf(line, sizeof(line), "memguard %s: %s: %s", cmd, msg, strerror(-err));
        else
                snprintf(line, sizeof(line), "memguard %s: %s", cmd, msg);
        emit(tap ? &e : NULL, line);
}

/* A note for people at a priority, nothing with --json. */
static void note(const struct mgt_out *o, int priority, enum mgt_msg m, const char *msg) {
        struct mgt_journal_entry e;
        struct mgt_json_tap t;

        if (o && o->json)
                return;
        emit(journal_begin(&e, &t, priority, m, false) ? &e : NULL, msg);
}

void mgt_note(const struct mgt_out *o, const char *fmt, ...) {
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        note(o, LOG_NOTICE, MGT_MSG_NONE, msg);
}

/* One of watch's own events: its object begun (for --json, the journal's
 * fields, or both), NULL when neither wants it. */
static struct mgt_json *own_event(const struct mgt_out *o, struct mgt_json *j, struct mgt_journal_entry *e,
                                  struct mgt_json_tap *t, int priority, const char *event) {
        const struct mgt_json_tap *tap = journal_begin(e, t, priority, mgt_msg_of(event), o->json);

        if (!o->json && !tap)
                return NULL;
        mgt_event_json_begin_tap(j, tap, event, 0);
        return j;
}

/* Its end: the object for --json, else the text line (for people:
 * nothing more with --json). */
static void own_event_end(const struct mgt_out *o, struct mgt_json *j, struct mgt_journal_entry *e, int priority,
                          const char *text) {
        bool journal = out_journal != MGT_JOURNAL_OFF;

        if (o->json) {
                emit_json(journal ? e : NULL, j);
                return;
        }
        if (journal) {
                mgt_json_free(j);
                emit(e, text);
                return;
        }
        note(o, priority, MGT_MSG_NONE, text);
}

void mgt_watch_event(const struct mgt_out *o, const char *event, const char *cg, uint64_t limit,
                     const char *source) {
        struct mgt_journal_entry e;
        struct mgt_json_tap t;
        struct mgt_json j, *jp = own_event(o, &j, &e, &t, LOG_INFO, event);
        char lim[32], text[PATH_MAX + 128];

        if (jp) {
                mgt_json_str(jp, "cgroup", cg);
                mgt_json_u64(jp, "limit_bytes", limit);
                mgt_json_str(jp, "limit_source", source);
        }
        snprintf(text, sizeof(text), "memguard: %s %s, limit %s (%s)", strcmp(event, "watch") == 0 ? "watching" : event,
                 cg, mgt_size_format(limit, lim, sizeof(lim)), source);
        own_event_end(o, jp, &e, LOG_INFO, text);
}

void mgt_unwatch_event(const struct mgt_out *o, const char *cg, const char *why) {
        struct mgt_journal_entry e;
        struct mgt_json_tap t;
        struct mgt_json j, *jp = own_event(o, &j, &e, &t, LOG_INFO, "unwatch");
        char text[PATH_MAX + 128];

        if (jp) {
                mgt_json_str(jp, "cgroup", cg);
                mgt_json_str(jp, "why", why);
        }
        snprintf(text, sizeof(text), "memguard: no longer watching %s (%s)", cg, why);
        own_event_end(o, jp, &e, LOG_INFO, text);
}

void mgt_reload_event(const struct mgt_out *o, const char *config, uint64_t n_cgroups, bool ok) {
        int priority = ok ? LOG_INFO : LOG_WARNING;
        struct mgt_journal_entry e;
        struct mgt_json_tap t;
        struct mgt_json j, *jp = own_event(o, &j, &e, &t, priority, "reload");
        char text[PATH_MAX + 128];

        if (jp) {
                mgt_json_str(jp, "config", config);
                mgt_json_u64(jp, "cgroups", n_cgroups);
                mgt_json_bool(jp, "ok", ok);
        }
        snprintf(text, sizeof(text), "memguard: reloaded%s%s%s: %" PRIu64 " cgroups%s", config ? " " : "",
                 config ? config : "", config ? "" : " (no config file)", n_cgroups,
                 ok ? "" : "; the config has errors, kept the last good one");
        own_event_end(o, jp, &e, priority, text);
}

/* The last line of a hook's output with text on it, cut to fit: what an
 * operator reads first (a script's error is its last line). */
static void last_line(const char *out, char *buf, size_t len) {
        const char *end = out + strlen(out), *start;
        size_t n;

        while (end > out && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r' || end[-1] == '\t'))
                end--;
        start = end;
        while (start > out && start[-1] != '\n')
                start--;
        n = (size_t) (end - start);
        if (n >= len)
                n = len - 1;
        memcpy(buf, start, n);
        buf[n] = '\0';
}

void mgt_park_hook_event(const struct mgt_out *o, const struct mgt_park_hook_info *h) {
        const struct mgt_hook_reply *r = h->reply;
        enum mgt_hook_result res = (enum mgt_hook_result) r->result;
        bool bad = res == MGT_HOOK_FAILED || res == MGT_HOOK_SIGNALED || res == MGT_HOOK_TIMEOUT ||
                   res == MGT_HOOK_ERROR;
        int priority = bad ? LOG_WARNING : LOG_NOTICE;
        struct mgt_journal_entry e;
        struct mgt_json_tap t;
        struct mgt_json j, *jp = own_event(o, &j, &e, &t, priority, "park-hook");
        char took[32], bound[32], grace[32], how[256], then[160], line[200], out[320], lim[32], text[PATH_MAX + 1024];

        if (jp) {
                mgt_json_str(jp, "cgroup", h->cgroup);
                mgt_json_u64(jp, "park_id", h->park_id);
                mgt_json_u64(jp, "kill_id", h->kill_id);
                mgt_json_str(jp, "result", mgt_hook_result_name(res));
                if (res == MGT_HOOK_SAVED || res == MGT_HOOK_THAW || res == MGT_HOOK_FAILED)
                        mgt_json_i64(jp, "exit_status", r->code);
                else
                        mgt_json_null(jp, "exit_status");
                if (res == MGT_HOOK_SIGNALED)
                        mgt_json_i64(jp, "signal", r->code);
                else
                        mgt_json_null(jp, "signal");
                if (res == MGT_HOOK_ERROR) {
                        mgt_json_str(jp, "error", strerror(r->code));
                        mgt_json_i64(jp, "errno", r->code);
                        if (out_journal != MGT_JOURNAL_OFF) {
                                char num[16];
                                snprintf(num, sizeof(num), "%d", r->code);
                                mgt_journal_add(&e, "ERRNO", num);
                        }
                } else {
                        mgt_json_null(jp, "error");
                        mgt_json_null(jp, "errno");
                }
                mgt_json_u64(jp, "duration_ms", r->duration_usec / 1000);
                mgt_json_u64(jp, "timeout_ms", h->timeout_usec / 1000);
                mgt_json_str(jp, "output", r->output);
                mgt_json_u64(jp, "output_bytes", r->output_bytes);
                mgt_json_str(jp, "action", h->action);
                if (strcmp(h->action, "thaw") == 0 && h->limit_bytes) {
                        mgt_json_u64(jp, "limit_bytes", h->limit_bytes);
                        mgt_json_str(jp, "limit_source", h->limit_source);
                } else {
                        mgt_json_null(jp, "limit_bytes");
                        mgt_json_null(jp, "limit_source");
                }
                mgt_json_str(jp, "park_end", h->park_end);
        }
        sec_text(r->duration_usec, took, sizeof(took));
        switch (res) {
        case MGT_HOOK_SAVED: snprintf(how, sizeof(how), "exited 0 (saved) after %s", took); break;
        case MGT_HOOK_THAW: snprintf(how, sizeof(how), "exited %d (thaw) after %s", r->code, took); break;
        case MGT_HOOK_FAILED: snprintf(how, sizeof(how), "failed: exited %d after %s", r->code, took); break;
        case MGT_HOOK_SIGNALED:
                snprintf(how, sizeof(how), "failed: killed by signal %d (%s) after %s", r->code, strsignal(r->code),
                         took);
                break;
        case MGT_HOOK_TIMEOUT:
                snprintf(how, sizeof(how), "timed out after %s (park-timeout %s): SIGTERM to its process group, "
                         "then SIGKILL (at the hook's exit, at most %s later)", took,
                         sec_text(h->timeout_usec, bound, sizeof(bound)),
                         sec_text(mgt_hook_grace_usec(h->timeout_usec), grace, sizeof(grace)));
                break;
        case MGT_HOOK_ERROR:
                /* The runner's bound (hook.h), which no errno's text
                 * says; the park ends in the kill that follows, as for any
                 * run that did not start. */
                if (r->code == EUSERS)
                        snprintf(how, sizeof(how), "was not run: %d hooks run already, the most at once",
                                 MGT_HOOK_RUNNING_MAX);
                else
                        snprintf(how, sizeof(how), "was not run: %s", strerror(r->code));
                break;
        case MGT_HOOK_CANCELLED:
                snprintf(how, sizeof(how), "was cancelled after %s, its process group killed: the park ended first "
                         "(%s)", took, h->park_end ? h->park_end : "?");
                break;
        default: snprintf(how, sizeof(how), "result %u", (unsigned) res);
        }
        if (strcmp(h->action, "thaw") == 0 && h->limit_bytes)
                snprintf(then, sizeof(then), "thawing it at a limit of %s (%s)",
                         mgt_size_format(h->limit_bytes, lim, sizeof(lim)), h->limit_source ? h->limit_source : "?");
        else if (strcmp(h->action, "thaw") == 0)
                snprintf(then, sizeof(then), "thawing it at the limit it had");
        else if (strcmp(h->action, "kill") == 0)
                snprintf(then, sizeof(then), "killing it");
        else if (res != MGT_HOOK_CANCELLED && h->park_end)
                snprintf(then, sizeof(then), "nothing to do, the park had ended (%s)", h->park_end);
        else
                snprintf(then, sizeof(then), "nothing to do");
        last_line(r->output, line, sizeof(line));
        if (line[0])
                snprintf(out, sizeof(out), "; its output ends \"%s\"%s", line,
                         r->output_bytes > r->output_len ? " (of more)" : "");
        else
                out[0] = '\0';
        snprintf(text, sizeof(text), "memguard: park-hook: %s: park %" PRIu64 ": the hook %s: %s%s", h->cgroup,
                 h->park_id, how, then, out);
        own_event_end(o, jp, &e, priority, text);
}
