/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lines of run and watch go out through a bounded queue and a writer
 * thread (tools/memguard/outq.h), so the thread that runs the guards never
 * blocks on a stalled sink.  Each test fills a pipe that nobody reads
 * first: the writer then blocks in its first write(2), as it would on a
 * stalled journald.  Expected:
 *  - producing thousands of lines returns (a producer that blocked would
 *    hang the test into its timeout); the lines queued are the first ones,
 *    no more than the bound holds, every other one is dropped and counted;
 *  - once the test reads the pipe: the filler, the queued lines in order,
 *    one line with the dropped count, then the lines produced after it;
 *  - a line queued right after a drop comes after the count;
 *  - at exit, a flush gives up on a stalled sink and freeing the queue
 *    does not wait for the stuck writer;
 *  - through the tool's printer (events.c): the same, with the count as a
 *    {"event":"dropped"} object with --json and as a text line without;
 *  - a sink of its own (the journal's: entries that hold NULs, sent by a
 *    call that blocks while journald does not read): the same, each entry
 *    handed over whole, the sink's confinement run on the writer thread.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "outq.h"

/* Fills a new pipe until a write would block, then makes its write end
 * blocking again, as a stream socket is.  Returns the bytes it holds. */
static size_t stalled_pipe(int p[2]) {
        char chunk[4096];
        size_t filler = 0;
        ssize_t w;

        memset(chunk, 'f', sizeof(chunk));
        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        cr_assert_eq(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
        /* Chunks, then bytes: a write of up to PIPE_BUF needs all its room. */
        while ((w = write(p[1], chunk, sizeof(chunk))) > 0)
                filler += (size_t) w;
        while ((w = write(p[1], chunk, 1)) > 0)
                filler += (size_t) w;
        cr_assert_eq(errno, EAGAIN);
        cr_assert_eq(fcntl(p[1], F_SETFL, 0), 0);
        return filler;
}

struct text {
        char *s;
        size_t len, cap, at; /* at: where the next unread line starts */
};

/* Reads fd into t until it holds n more lines past t->at (10 s without a
 * byte fails the test). */
static void read_lines(int fd, struct text *t, size_t n) {
        for (;;) {
                size_t have = 0;
                for (size_t i = t->at; i < t->len; i++)
                        have += t->s[i] == '\n';
                if (have >= n)
                        return;
                if (t->cap - t->len < 65536) {
                        t->cap = t->cap ? 2 * t->cap : 1 << 20;
                        t->s = realloc(t->s, t->cap + 1);
                        cr_assert_not_null(t->s);
                }
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                cr_assert_eq(poll(&pfd, 1, 10000), 1, "no output for 10 s (%zu of %zu lines)", have, n);
                ssize_t r = read(fd, t->s + t->len, t->cap - t->len);
                cr_assert_gt(r, 0);
                t->len += (size_t) r;
                t->s[t->len] = '\0';
        }
}

/* The next line of t, without its newline, NUL-terminated in place. */
static const char *next_line(struct text *t) {
        char *s = t->s + t->at, *nl = memchr(s, '\n', t->len - t->at);

        cr_assert_not_null(nl, "a line was expected");
        *nl = '\0';
        t->at = (size_t) (nl - t->s) + 1;
        return s;
}

static void skip_filler(struct text *t, size_t filler) {
        cr_assert_geq(t->len, filler);
        for (size_t i = 0; i < filler; i++)
                cr_assert_eq(t->s[i], 'f', "the filler, then the lines: byte %zu", i);
        t->at = filler;
}

static size_t say_dropped(uint64_t n, char *buf, size_t len, void *userdata) {
        (void) userdata;
        snprintf(buf, len, "dropped %" PRIu64, n);
        return strlen(buf);
}

#define N_LINES 10000
#define BOUND ((size_t) 64 * 1024)

TestSuite(outq);

Test(outq, a_stalled_sink_drops_counts_and_says_so_in_order, .timeout = 60) {
        struct text t = {};
        struct mgt_outq *q;
        char line[32];
        int p[2];
        size_t filler = stalled_pipe(p), queued = 0;
        bool gap = false, queued_after_gap = false;

        cr_assert_eq(mgt_outq_new(p[1], BOUND, say_dropped, NULL, &q), 0);
        for (int i = 0; i < N_LINES; i++) {
                snprintf(line, sizeof(line), "line %05d", i);
                int r = mgt_outq_push(q, line, strlen(line));
                cr_assert(r == 0 || r == 1);
                queued += (size_t) r;
                queued_after_gap |= r == 1 && gap;
                gap |= r == 0;
        }
        /* Each line costs its 11 bytes and some bookkeeping. */
        cr_expect_gt(queued, 0);
        cr_expect_leq(queued, BOUND / 11, "%zu lines queued: more than the bound holds", queued);
        cr_expect(!queued_after_gap, "the sink took nothing: no line fits after the first dropped");
        cr_expect_eq(mgt_outq_dropped(q), N_LINES - queued);
        cr_expect_eq(mgt_outq_flush(q, (uint64_t) 100 * 1000), -ETIMEDOUT, "nothing can be written yet");
        cr_expect_eq(mgt_outq_push(q, "late", 4), 0, "still full");

        read_lines(p[0], &t, queued + 1);
        skip_filler(&t, filler);
        for (size_t i = 0; i < queued; i++) {
                snprintf(line, sizeof(line), "line %05zu", i);
                cr_assert_str_eq(next_line(&t), line);
        }
        snprintf(line, sizeof(line), "dropped %zu", N_LINES - queued + 1);
        cr_assert_str_eq(next_line(&t), line, "the count, once all before it is out");

        for (int i = 0; i < 10; i++) {
                snprintf(line, sizeof(line), "after %d", i);
                cr_expect_eq(mgt_outq_push(q, line, strlen(line)), 1);
        }
        read_lines(p[0], &t, 10);
        for (int i = 0; i < 10; i++) {
                snprintf(line, sizeof(line), "after %d", i);
                cr_expect_str_eq(next_line(&t), line);
        }
        cr_expect_eq(mgt_outq_flush(q, (uint64_t) 5 * 1000 * 1000), 0);
        cr_expect_eq(t.at, t.len, "nothing more: the count is said once");
        cr_expect_eq(mgt_outq_dropped(q), N_LINES - queued + 1);
        mgt_outq_free(q);
        close(p[0]);
        close(p[1]);
        free(t.s);
}

/* A line that fits where a larger one did not: the count goes before it. */
Test(outq, a_line_queued_after_a_drop_comes_after_the_count, .timeout = 60) {
        static char big[BOUND];
        const size_t len = 40000; /* one fits in the bound, two do not */
        struct text t = {};
        struct mgt_outq *q;
        int p[2];
        size_t filler = stalled_pipe(p);

        memset(big, 'b', sizeof(big));
        cr_assert_eq(mgt_outq_new(p[1], BOUND, say_dropped, NULL, &q), 0);
        cr_expect_eq(mgt_outq_push(q, big, len), 1);
        cr_expect_eq(mgt_outq_push(q, big, len), 0);
        cr_expect_eq(mgt_outq_push(q, big, len), 0);
        cr_expect_eq(mgt_outq_push(q, "small", 5), 1);
        cr_expect_eq(mgt_outq_push(q, big, BOUND), 0, "never fits");

        read_lines(p[0], &t, 4);
        skip_filler(&t, filler);
        const char *l = next_line(&t);
        cr_expect_eq(strlen(l), len, "the big line whole, through partial writes");
        cr_expect_eq(strspn(l, "b"), len);
        cr_expect_str_eq(next_line(&t), "dropped 2");
        cr_expect_str_eq(next_line(&t), "small");
        cr_expect_str_eq(next_line(&t), "dropped 1", "the last drop, with nothing after it");
        mgt_outq_free(q);
        close(p[0]);
        close(p[1]);
        free(t.s);
}

/* At exit with the sink still stalled: neither the flush nor the free
 * waits for it. */
Test(outq, a_sink_stalled_at_exit_is_left_behind, .timeout = 60) {
        struct mgt_outq *q;
        int p[2];

        (void) stalled_pipe(p);
        cr_assert_eq(mgt_outq_new(p[1], BOUND, say_dropped, NULL, &q), 0);
        for (int i = 0; i < 100; i++)
                cr_expect_eq(mgt_outq_push(q, "line", 4), 1);
        cr_expect_eq(mgt_outq_flush(q, (uint64_t) 200 * 1000), -ETIMEDOUT);
        cr_expect_null(mgt_outq_free(q));
        /* The reader gone: the stuck write fails (EPIPE; SIGPIPE stays
         * blocked on the writer) and the writer frees the queue.  p[1]
         * stays open: the writer may not be out of write(2) yet. */
        close(p[0]);
}

/* A sink as the journal's is: it hands each entry on with a call that
 * blocks (here a write to a pipe nobody reads yet), framed by its length
 * since an entry holds NULs. */
struct blocking_sink {
        int fd;
        pthread_t confined_on;
        bool confined;
};

static int sink_write(const char *buf, size_t len, void *userdata) {
        struct blocking_sink *b = userdata;
        uint32_t n = (uint32_t) len;
        cr_assert_eq(buf[len], '\n', "the queue's newline after the entry");
        if (write(b->fd, &n, sizeof(n)) != sizeof(n) || write(b->fd, buf, len) != (ssize_t) len)
                return -errno;
        return 0;
}

static void sink_confine(void *userdata) {
        struct blocking_sink *b = userdata;
        b->confined_on = pthread_self();
        b->confined = true;
}

static size_t entry_dropped(uint64_t n, char *buf, size_t len, void *userdata) {
        (void) userdata;
        int m = snprintf(buf, len, "PRIORITY=4%cLINES=%" PRIu64, '\0', n);
        return m > 0 && (size_t) m < len ? (size_t) m + 1 : 0;
}

/* The next framed entry of fd (10 s without it fails the test). */
static size_t read_entry(int fd, char *buf, size_t cap) {
        uint32_t n;
        size_t got = 0;
        struct pollfd pfd = { .fd = fd, .events = POLLIN };

        cr_assert_eq(poll(&pfd, 1, 10000), 1, "no entry for 10 s");
        cr_assert_eq(read(fd, &n, sizeof(n)), (ssize_t) sizeof(n));
        cr_assert_leq(n, cap);
        while (got < n) {
                ssize_t r = read(fd, buf + got, n - got);
                cr_assert_gt(r, 0);
                got += (size_t) r;
        }
        return n;
}

Test(outq, a_sink_of_its_own_gets_whole_entries_and_never_blocks_the_producer, .timeout = 60) {
        static char buf[BOUND];
        struct blocking_sink b = { 0 };
        struct mgt_outq_sink sink = { .write = sink_write, .confine = sink_confine, .userdata = &b };
        struct mgt_outq *q;
        char entry[64];
        int p[2];
        size_t queued = 0, len, filler = stalled_pipe(p);

        b.fd = p[1];
        cr_assert_eq(mgt_outq_new_sink(&sink, BOUND, entry_dropped, NULL, &q), 0);
        for (int i = 0; i < N_LINES; i++) {
                len = (size_t) snprintf(entry, sizeof(entry), "PRIORITY=6%cMESSAGE=entry %05d%c", '\0', i, '\0');
                queued += (size_t) mgt_outq_push(q, entry, len);
        }
        cr_expect_gt(queued, 0);
        cr_expect_lt(queued, (size_t) N_LINES, "the sink blocks: entries are dropped, the producer is not held");
        cr_expect_eq(mgt_outq_dropped(q), N_LINES - queued);

        /* the filler first, then the entries */
        for (size_t left = filler; left > 0;) {
                ssize_t r = read(p[0], buf, left < sizeof(buf) ? left : sizeof(buf));
                cr_assert_gt(r, 0);
                left -= (size_t) r;
        }
        for (size_t i = 0; i < queued; i++) {
                char want[64];
                size_t wl = (size_t) snprintf(want, sizeof(want), "PRIORITY=6%cMESSAGE=entry %05zu%c", '\0', i, '\0');
                len = read_entry(p[0], buf, sizeof(buf));
                cr_assert_eq(len, wl, "entry %zu whole", i);
                cr_assert_eq(memcmp(buf, want, wl), 0, "entry %zu, its NULs kept", i);
        }
        len = read_entry(p[0], buf, sizeof(buf));
        snprintf(entry, sizeof(entry), "LINES=%zu", N_LINES - queued);
        cr_expect_eq(len, strlen("PRIORITY=4") + 1 + strlen(entry) + 1);
        cr_expect_str_eq(buf + strlen("PRIORITY=4") + 1, entry, "the dropped entry, from dropped_fn");
        cr_expect_eq(mgt_outq_flush(q, (uint64_t) 5 * 1000 * 1000), 0);
        cr_expect(b.confined, "the sink's confinement ran");
        cr_expect(!pthread_equal(b.confined_on, pthread_self()), "on the writer thread");
        mgt_outq_free(q);
        close(p[0]);
        close(p[1]);
}

/* The tool's printer, with the tool's bound (MGT_OUTQ_MAX_BYTES). */
static void printer(bool json) {
        static char pad[200];
        struct mgt_out o = { .json = json };
        struct text t = {};
        char want[64];
        int p[2];
        size_t filler = stalled_pipe(p);
        const int n = 20000; /* some 2.5 MiB of lines */

        memset(pad, 'p', sizeof(pad) - 1);
        cr_assert_eq(mgt_output_start(p[1], json), 0);
        cr_expect_eq(mgt_output_start(p[1], json), -EBUSY);
        for (int i = 0; i < n; i++)
                mgt_error(&o, "watch", 0, "line %d %s", i, pad);
        uint64_t dropped = mgt_output_dropped();
        cr_expect_gt(dropped, 0);
        cr_expect_lt(dropped, (uint64_t) n);
        cr_expect_leq((uint64_t) n - dropped, MGT_OUTQ_MAX_BYTES / sizeof(pad), "more queued than the bound holds");

        size_t queued = (size_t) (n - (int) dropped);
        read_lines(p[0], &t, queued + 1);
        skip_filler(&t, filler);
        for (size_t i = 0; i < queued; i++) {
                snprintf(want, sizeof(want), json ? "\"message\":\"line %zu p" : "memguard watch: line %zu p", i);
                const char *l = next_line(&t);
                cr_assert_not_null(strstr(l, want), "line %zu: %s", i, l);
        }
        const char *l = next_line(&t);
        if (json) {
                cr_expect_eq(strncmp(l, "{\"event\":\"dropped\",\"time\":\"", 27), 0, "%s", l);
                snprintf(want, sizeof(want), ",\"format_version\":1,\"lines\":%" PRIu64 "}", dropped);
                cr_expect(strlen(l) > strlen(want) && strcmp(l + strlen(l) - strlen(want), want) == 0, "%s", l);
        } else {
                snprintf(want, sizeof(want), "memguard: dropped %" PRIu64 " lines: the output did not keep up", dropped);
                cr_expect_str_eq(l, want);
        }

        mgt_error(&o, "watch", 0, "after");
        read_lines(p[0], &t, 1);
        l = next_line(&t);
        cr_expect_not_null(strstr(l, json ? "\"message\":\"after\"" : "memguard watch: after"), "%s", l);
        mgt_output_stop();
        cr_expect_eq(mgt_output_dropped(), dropped, "the count stays after the stop");
        close(p[0]);
        close(p[1]);
        free(t.s);
}

TestSuite(output);

Test(output, json_events_never_block_and_the_count_is_an_event, .timeout = 60) {
        printer(true);
}

Test(output, text_lines_never_block_and_the_count_is_a_line, .timeout = 60) {
        printer(false);
}

/* A tenant's bytes (an xattr value, a cgroup's name) in a text line: a
 * newline or another control byte is written as \xNN, a byte that is not
 * UTF-8 as U+FFFD, so one line stays one line; a JSON line is as it was. */
Test(output, a_line_stays_one_line_whatever_went_into_it, .timeout = 60) {
        struct text t = {};
        int p[2];

        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        cr_assert_eq(mgt_output_start(p[1], false), 0);
        mgt_error(&(struct mgt_out) { .json = false }, "watch", 0, "limit \"%s\" ignored", "1G\nmemguard watch: forged\x01\xff");
        mgt_error(&(struct mgt_out) { .json = true }, "watch", 0, "limit \"%s\"", "1G\n\x01");
        read_lines(p[0], &t, 2);
        cr_expect_str_eq(next_line(&t), "memguard watch: limit \"1G\\x0amemguard watch: forged\\x01\xef\xbf\xbd\" ignored");
        const char *j = next_line(&t);
        cr_expect_not_null(strstr(j, "\"message\":\"limit \\\"1G\\n\\u0001\\\"\""), "%s", j);
        mgt_output_stop();
        close(p[0]);
        close(p[1]);
        free(t.s);
}
