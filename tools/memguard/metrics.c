/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#if MG_HAVE_CAPNG
#include <cap-ng.h>
#endif

#include "json.h"
#include "metrics.h"
#include "replace.h"

void mgt_counts_add(struct mgt_counts *c, const struct mg_event *ev) {
        switch (ev->type) {
        case MG_EVENT_EMPTY_OVER_LIMIT: c->empty_over_limit++; break;
        case MG_EVENT_UNKILLABLE: c->unkillable++; break;
        default: break;
        }
}

/* '\\', '"' and newline; other bytes as they are. */
static const char *label_escape_byte(unsigned char c, char buf[8]) {
        (void) buf;
        return c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
}

size_t mgt_metrics_escape(const char *s, char *out, size_t size) {
        return mgt_escape(s, out, size, "\xef\xbf\xbd" /* U+FFFD */, label_escape_byte);
}

struct buf {
        char *s;
        size_t len, cap;
        bool failed;
};

__attribute__((format(printf, 2, 3))) static void put(struct buf *b, const char *fmt, ...) {
        va_list ap;
        int n;

        if (b->failed)
                return;
        for (;;) {
                va_start(ap, fmt);
                n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        b->failed = true;
                        return;
                }
                if (b->s && (size_t) n < b->cap - b->len) {
                        b->len += (size_t) n;
                        return;
                }
                size_t cap = b->cap ? b->cap : 4096;
                while (cap < b->len + (size_t) n + 1)
                        cap *= 2;
                char *s = realloc(b->s, cap);
                if (!s) {
                        b->failed = true;
                        return;
                }
                b->s = s;
                b->cap = cap;
        }
}

static void family(struct buf *b, const char *name, const char *type, const char *help) {
        put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The cgroup label of actor a, escaped. */
static void label(struct buf *b, const struct mgt_metrics_actor *a) {
        size_t n = mgt_metrics_escape(a->cgroup, NULL, 0);
        char *e = malloc(n + 1);

        if (!e) {
                b->failed = true;
                return;
        }
        mgt_metrics_escape(a->cgroup, e, n + 1);
        put(b, "cgroup=\"%s\"", e);
        free(e);
}

/* One sample per actor of a per-actor family: value(a) or skipped if
 * has(a) is false. */
#define PER_ACTOR(b, a, n, name, cond, fmt, ...)                                \
        do {                                                                    \
                for (size_t i_ = 0; i_ < (n); i_++) {                           \
                        const struct mgt_metrics_actor *x = &(a)[i_];           \
                        if (!(cond))                                            \
                                continue;                                       \
                        put(b, "%s{", name);                                    \
                        label(b, x);                                            \
                        put(b, "} " fmt "\n", __VA_ARGS__);                     \
                }                                                               \
        } while (0)

char *mgt_metrics_format(const struct mgt_metrics_actor *a, size_t n, const struct mgt_metrics_node *node,
                         size_t *ret_len) {
        const struct mg_stats *ns = node->stats;
        struct buf b = {};

        family(&b, "memguard_info", "gauge", "The memguard watch that wrote this file: 1, its version as a label.");
        put(&b, "memguard_info{version=\"%u.%u.%u\"} 1\n", node->version >> 16, (node->version >> 8) & 0xff,
            node->version & 0xff);
        family(&b, "memguard_last_update_timestamp_seconds", "gauge",
               "When this file was written (seconds since the epoch): stale if it stops moving.");
        put(&b, "memguard_last_update_timestamp_seconds %" PRIu64 ".%03" PRIu64 "\n", node->time_usec / 1000000,
            node->time_usec / 1000 % 1000);
        family(&b, "memguard_cgroups", "gauge", "Cgroups guarded now.");
        put(&b, "memguard_cgroups %" PRIu64 "\n", node->cgroups);
        family(&b, "memguard_reloads_total", "counter", "SIGHUP reloads, and of them those whose config had errors.");
        put(&b, "memguard_reloads_total{result=\"ok\"} %" PRIu64 "\n", node->reloads - node->reload_errors);
        put(&b, "memguard_reloads_total{result=\"error\"} %" PRIu64 "\n", node->reload_errors);
        family(&b, "memguard_metrics_skipped_total", "counter",
               "Intervals whose metrics waited because the writer had not taken the last ones.");
        put(&b, "memguard_metrics_skipped_total %" PRIu64 "\n", node->metrics_skipped);
        family(&b, "memguard_output_dropped_lines_total", "counter",
               "Event and log lines dropped because their reader (journald, a pipe) did not keep up.");
        put(&b, "memguard_output_dropped_lines_total %" PRIu64 "\n", node->output_dropped);
        family(&b, "memguard_node_kills_total", "counter",
               "Kills by every guard since watch started, cgroups since removed included.");
        put(&b, "memguard_node_kills_total{reason=\"overshoot\"} %" PRIu64 "\n", ns->kills_overshoot);
        put(&b, "memguard_node_kills_total{reason=\"stall\"} %" PRIu64 "\n", ns->kills_stall);
        family(&b, "memguard_node_kernel_oom_kills_total", "counter",
               "Kernel OOM kills seen in guarded cgroups since watch started.");
        put(&b, "memguard_node_kernel_oom_kills_total %" PRIu64 "\n", ns->kernel_oom_kills);
        family(&b, "memguard_node_dry_run_kills_total", "counter",
               "Kills a dry run (--dry-run) would have made, by every guard since watch started.");
        put(&b, "memguard_node_dry_run_kills_total %" PRIu64 "\n", ns->dry_run_kills);
        family(&b, "memguard_node_ticks_total", "counter",
               "Ticks of every guard since watch started: fast (memory.current alone) or slow (at the limit).");
        put(&b, "memguard_node_ticks_total{path=\"fast\"} %" PRIu64 "\n", ns->fast_ticks);
        put(&b, "memguard_node_ticks_total{path=\"slow\"} %" PRIu64 "\n", ns->slow_ticks);
        family(&b, "memguard_node_errors_total", "counter", "Errors every guard reported since watch started.");
        put(&b, "memguard_node_errors_total %" PRIu64 "\n", ns->errors);
        family(&b, "memguard_node_reclaims_total", "counter",
               "Doses the reclaim actuator (--reclaim-dose) wrote, by every guard since watch started.");
        put(&b, "memguard_node_reclaims_total %" PRIu64 "\n", ns->reclaims);
        family(&b, "memguard_node_reclaimed_bytes_total", "counter",
               "What those doses reclaimed, in bytes (the target's pgsteal over each write).");
        put(&b, "memguard_node_reclaimed_bytes_total %" PRIu64 "\n", ns->reclaimed_bytes);

        family(&b, "memguard_kills_total", "counter", "Kills of the cgroup's processes by its guard, by reason.");
        for (size_t i = 0; i < n; i++) {
                static const char *const reasons[] = { "overshoot", "stall" };
                for (int r = 0; r < 2; r++) {
                        put(&b, "memguard_kills_total{");
                        label(&b, &a[i]);
                        put(&b, ",reason=\"%s\"} %" PRIu64 "\n", reasons[r],
                            r == 0 ? a[i].stats->kills_overshoot : a[i].stats->kills_stall);
                }
        }
        family(&b, "memguard_dry_run_kills_total", "counter",
               "Kills a dry run (--dry-run) would have made in the cgroup: nothing was killed.");
        PER_ACTOR(&b, a, n, "memguard_dry_run_kills_total", true, "%" PRIu64, x->stats->dry_run_kills);
        family(&b, "memguard_kills_deferred_total", "counter",
               "Kills put off after a pre-kill event (--pre-kill-defer).");
        PER_ACTOR(&b, a, n, "memguard_kills_deferred_total", true, "%" PRIu64, x->stats->kills_deferred);
        family(&b, "memguard_kills_averted_total", "counter",
               "Deferred kills not made: the actor had left its limit when the deferral ended.");
        PER_ACTOR(&b, a, n, "memguard_kills_averted_total", true, "%" PRIu64, x->stats->kills_averted);
        family(&b, "memguard_ticks_total", "counter",
               "The guard's ticks: fast (memory.current alone, below the line) or slow (at the limit).");
        for (size_t i = 0; i < n; i++) {
                put(&b, "memguard_ticks_total{");
                label(&b, &a[i]);
                put(&b, ",path=\"fast\"} %" PRIu64 "\n", a[i].stats->fast_ticks);
                put(&b, "memguard_ticks_total{");
                label(&b, &a[i]);
                put(&b, ",path=\"slow\"} %" PRIu64 "\n", a[i].stats->slow_ticks);
        }
        family(&b, "memguard_kernel_oom_kills_total", "counter", "The kernel's OOM kills in the cgroup (memory.max).");
        PER_ACTOR(&b, a, n, "memguard_kernel_oom_kills_total", true, "%" PRIu64, x->stats->kernel_oom_kills);
        family(&b, "memguard_errors_total", "counter", "Errors the guard reported (reads that failed; never a kill).");
        PER_ACTOR(&b, a, n, "memguard_errors_total", true, "%" PRIu64, x->stats->errors);
        family(&b, "memguard_throttled_total", "counter", "Episodes held over memory.high with nothing to reclaim.");
        PER_ACTOR(&b, a, n, "memguard_throttled_total", true, "%" PRIu64, x->stats->throttles);
        family(&b, "memguard_empty_over_limit_total", "counter", "Episodes over the limit with no process to kill.");
        PER_ACTOR(&b, a, n, "memguard_empty_over_limit_total", true, "%" PRIu64, x->counts->empty_over_limit);
        family(&b, "memguard_unkillable_total", "counter", "Kills whose processes outlived the kill wait.");
        PER_ACTOR(&b, a, n, "memguard_unkillable_total", true, "%" PRIu64, x->counts->unkillable);
        family(&b, "memguard_reclaims_total", "counter",
               "Doses of the reclaim actuator (--reclaim-dose) written to memory.reclaim, failed ones included.");
        PER_ACTOR(&b, a, n, "memguard_reclaims_total", true, "%" PRIu64, x->stats->reclaims);
        family(&b, "memguard_reclaimed_bytes_total", "counter",
               "What the doses reclaimed, in bytes: the target's pgsteal over each write.");
        PER_ACTOR(&b, a, n, "memguard_reclaimed_bytes_total", true, "%" PRIu64, x->stats->reclaimed_bytes);
        family(&b, "memguard_lends_total", "counter", "Lends of memory.high begun.");
        PER_ACTOR(&b, a, n, "memguard_lends_total", true, "%" PRIu64, x->stats->lends);
        family(&b, "memguard_lend_expired_total", "counter", "Lends ended by their deadline.");
        PER_ACTOR(&b, a, n, "memguard_lend_expired_total", true, "%" PRIu64, x->stats->lend_expiries);
        family(&b, "memguard_lend_active", "gauge", "1 while memory.high is lent (kills paused).");
        PER_ACTOR(&b, a, n, "memguard_lend_active", true, "%d", x->lent ? 1 : 0);
        family(&b, "memguard_limit_bytes", "gauge", "The guard's limit: what the actor paid for.");
        for (size_t i = 0; i < n; i++) {
                put(&b, "memguard_limit_bytes{");
                label(&b, &a[i]);
                put(&b, ",source=\"%s\"} %" PRIu64 "\n", a[i].limit_source, a[i].limit_bytes);
        }
        family(&b, "memguard_used_bytes", "gauge", "anon + shmem + kernel + sock: what the guard compares to the limit.");
        PER_ACTOR(&b, a, n, "memguard_used_bytes", x->report, "%" PRIu64, x->report->used_bytes);
        family(&b, "memguard_current_bytes", "gauge", "memory.current (page cache included).");
        PER_ACTOR(&b, a, n, "memguard_current_bytes", x->report, "%" PRIu64, x->report->current_bytes);
        family(&b, "memguard_file_bytes", "gauge", "Page cache (memory.stat file): not counted in used.");
        PER_ACTOR(&b, a, n, "memguard_file_bytes", x->report, "%" PRIu64, x->report->stat.file);
        family(&b, "memguard_stall_seconds", "gauge", "How long the stall criteria have held (0: not stalling).");
        PER_ACTOR(&b, a, n, "memguard_stall_seconds", x->report, "%" PRIu64 ".%06" PRIu64,
                  x->report->stall_usec / 1000000, x->report->stall_usec % 1000000);
        family(&b, "memguard_memory_high_bytes", "gauge", "memory.high, where it is not max.");
        PER_ACTOR(&b, a, n, "memguard_memory_high_bytes", x->report && x->report->high_bytes != MG_UNLIMITED,
                  "%" PRIu64, x->report->high_bytes);
        family(&b, "memguard_memory_max_bytes", "gauge", "memory.max, where it is not max.");
        PER_ACTOR(&b, a, n, "memguard_memory_max_bytes", x->report && x->report->max_bytes != MG_UNLIMITED,
                  "%" PRIu64, x->report->max_bytes);
        family(&b, "memguard_verdict", "gauge", "The verdict a tick would give now: 1 for it, by verdict label.");
        for (size_t i = 0; i < n; i++) {
                if (!a[i].report)
                        continue;
                put(&b, "memguard_verdict{");
                label(&b, &a[i]);
                put(&b, ",verdict=\"%s\"} 1\n", mg_verdict_to_string(a[i].report->verdict));
        }
        if (b.failed) {
                free(b.s);
                return NULL;
        }
        *ret_len = b.len;
        return b.s;
}

/* ---- the writer process */

static bool read_all(int fd, void *p, size_t n) {
        char *c = p;

        while (n > 0) {
                ssize_t r = read(fd, c, n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return false;
                c += r;
                n -= (size_t) r;
        }
        return true;
}

/* The writer: keeps at most CAP_DAC_OVERRIDE, then one text per frame
 * (a uint64_t length, the bytes) to path.tmp, fsynced, renamed over path
 * (mgt_file_replace()).  A failure leaves the last good file and says so on
 * stderr, once per streak. */
static void __attribute__((noreturn)) writer_main(int fd, const char *path) {
        char tmp[4096];
        bool said = false;

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGHUP, SIG_IGN);
        signal(SIGINT, SIG_IGN); /* a terminal's ^C: the guard thread ends us by closing the pipe */
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
#if MG_HAVE_CAPNG
        capng_get_caps_process();
        bool dac = capng_have_capability(CAPNG_PERMITTED, CAP_DAC_OVERRIDE);
        capng_clear(CAPNG_SELECT_BOTH);
        if (dac)
                capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_DAC_OVERRIDE);
        if (capng_apply(CAPNG_SELECT_BOTH) < 0)
                (void) capng_apply(CAPNG_SELECT_CAPS);
#endif
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        for (;;) {
                uint64_t len;
                char *text;
                int r;

                if (!read_all(fd, &len, sizeof(len)) || len > (UINT64_C(1) << 32))
                        _exit(0);
                text = malloc((size_t) len);
                if (!text || !read_all(fd, text, (size_t) len))
                        _exit(1);
                r = mgt_file_replace(tmp, path, text, (size_t) len);
                if (r < 0 && !said)
                        fprintf(stderr, "memguard watch: --metrics %s: %s (the last good file stays)\n", path,
                                strerror(-r));
                said = r < 0;
                free(text);
        }
}

int mgt_metrics_writer_start(struct mgt_metrics_writer *w, const char *path) {
        int p[2];
        pid_t pid;

        *w = (struct mgt_metrics_writer) { .fd = -1 };
        if (strlen(path) + 5 > 4096)
                return -ENAMETOOLONG;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int e = -errno;
                close(p[0]);
                close(p[1]);
                return e;
        }
        if (pid == 0) {
                /* only the pipe and stdio: nothing of the guards */
                if (dup2(p[0], 3) < 0)
                        _exit(1);
                (void) close_range(4, ~0U, 0);
                writer_main(3, path);
        }
        close(p[0]);
        if (fcntl(p[1], F_SETFL, O_NONBLOCK) < 0) {
                int e = -errno;
                close(p[1]);
                return e;
        }
        w->fd = p[1];
        w->pid = pid;
        return 0;
}

bool mgt_metrics_writer_pending(const struct mgt_metrics_writer *w) {
        return w->pending != NULL;
}

int mgt_metrics_writer_flush(struct mgt_metrics_writer *w) {
        while (w->pending && w->pending_off < w->pending_len) {
                ssize_t n = write(w->fd, w->pending + w->pending_off, w->pending_len - w->pending_off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                if (n <= 0) {
                        w->failed = true;
                        free(w->pending);
                        w->pending = NULL;
                        return -EPIPE;
                }
                w->pending_off += (size_t) n;
        }
        free(w->pending);
        w->pending = NULL;
        return 0;
}

int mgt_metrics_writer_send(struct mgt_metrics_writer *w, char *text, size_t len) {
        uint64_t hdr = len;
        char *frame;

        if (w->fd < 0 || w->failed) {
                free(text);
                return -EPIPE;
        }
        if (w->pending) {
                free(text);
                return 0;
        }
        frame = realloc(text, len + sizeof(hdr));
        if (!frame) {
                free(text);
                return -ENOMEM;
        }
        memmove(frame + sizeof(hdr), frame, len);
        memcpy(frame, &hdr, sizeof(hdr));
        w->pending = frame;
        w->pending_len = len + sizeof(hdr);
        w->pending_off = 0;
        int r = mgt_metrics_writer_flush(w);
        return r < 0 ? r : 1;
}

void mgt_metrics_writer_stop(struct mgt_metrics_writer *w) {
        free(w->pending);
        w->pending = NULL;
        if (w->fd >= 0)
                close(w->fd);
        w->fd = -1;
}
