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

#include "events.h"
#include "helper.h"
#include "json.h"
#include "metrics.h"
#include "replace.h"

void mgt_counts_add(struct mgt_counts *c, const struct mg_event *ev) {
        switch (ev->type) {
        case MG_EVENT_EMPTY_OVER_LIMIT: c->empty_over_limit++; break;
        case MG_EVENT_UNKILLABLE: c->unkillable++; break;
        case MG_EVENT_THAW: c->park_ends[MG_PARK_END_THAW]++; break;
        case MG_EVENT_KILL:
                if (ev->kill && ev->kill->report.park_id && ev->kill->report.park_end < MGT_PARK_ENDS)
                        c->park_ends[ev->kill->report.park_end]++;
                break;
        default: break;
        }
}

const uint64_t mgt_hook_bucket_usec[MGT_HOOK_BUCKETS] = {
        100000, 500000, 1000000, 2000000, 5000000, 10000000, 30000000, 60000000, 300000000, 1800000000,
};
static const char *const hook_le[MGT_HOOK_BUCKETS] = {
        "0.1", "0.5", "1", "2", "5", "10", "30", "60", "300", "1800",
};

void mgt_hook_stats_add(struct mgt_hook_stats *h, const struct mgt_hook_reply *r) {
        if (r->result < _MGT_HOOK_RESULT_MAX)
                h->results[r->result]++;
        if (r->result == MGT_HOOK_ERROR)
                return; /* not run: no duration */
        h->count++;
        h->sum_usec += r->duration_usec;
        for (int i = 0; i < MGT_HOOK_BUCKETS; i++)
                if (r->duration_usec <= mgt_hook_bucket_usec[i]) {
                        h->bucket[i]++;
                        break;
                }
}

const uint64_t mgt_kill_bucket_usec[MGT_KILL_BUCKETS] = {
        100000, 250000, 500000, 1000000, 2000000, 3000000, 5000000, 7500000, 10000000, 15000000, 20000000, 30000000,
};
/* The same bounds as the le label writes them. */
static const char *const bucket_le[MGT_KILL_BUCKETS] = {
        "0.1", "0.25", "0.5", "1", "2", "3", "5", "7.5", "10", "15", "20", "30",
};
static const char *const kill_reasons[2] = { "overshoot", "stall" };

void mgt_kill_latency_add(struct mgt_kill_latency *h, const struct mg_event *ev) {
        const struct mg_kill_record *k = ev->kill;
        uint64_t d;
        int r;

        if ((ev->type != MG_EVENT_KILL && ev->type != MG_EVENT_KILL_DRY_RUN) || !k ||
            k->size < offsetof(struct mg_kill_record, empty_usec))
                return;
        /* A kill that ended a park waited for the hook, not for the guard:
         * memguard_park_hook_seconds has that time. */
        if (k->report.park_id && k->report.park_end != MG_PARK_END_NO_FREEZE)
                return;
        r = k->reason == MG_KILL_STALL ? 1 : 0;
        d = k->kill_usec > k->detect_usec ? k->kill_usec - k->detect_usec : 0;
        h->count[r]++;
        h->sum_usec[r] += d;
        for (int i = 0; i < MGT_KILL_BUCKETS; i++)
                if (d <= mgt_kill_bucket_usec[i]) {
                        h->bucket[r][i]++;
                        break;
                }
}

struct rank {
        size_t i;
        unsigned cls;   /* 0: at its limit now, 1: acted lately, 2: the rest */
        uint64_t key;   /* higher first */
};

static int rank_cmp(const void *x, const void *y) {
        const struct rank *p = x, *q = y;

        if (p->cls != q->cls)
                return p->cls < q->cls ? -1 : 1;
        if (p->key != q->key)
                return p->key > q->key ? -1 : 1;
        return p->i < q->i ? -1 : p->i > q->i;
}

/* used over the limit, in permyriad; 0 without a report. */
static uint64_t nearness(const struct mgt_metrics_actor *x) {
        unsigned __int128 r;

        if (!x->report || x->limit_bytes == 0)
                return 0;
        r = (unsigned __int128) x->report->used_bytes * 10000 / x->limit_bytes;
        return r > UINT32_MAX ? UINT32_MAX : (uint64_t) r;
}

size_t mgt_metrics_select(struct mgt_metrics_actor *a, size_t n, uint64_t max, uint64_t now_usec) {
        struct rank *r;

        for (size_t i = 0; i < n; i++)
                a[i].selected = max >= n;
        if (max >= n)
                return n;
        if (max == 0)
                return 0;
        r = malloc(n * sizeof(*r));
        if (!r) { /* the first ones, as they come */
                for (size_t i = 0; i < max; i++)
                        a[i].selected = true;
                return (size_t) max;
        }
        for (size_t i = 0; i < n; i++) {
                const struct mgt_metrics_actor *x = &a[i];
                r[i] = (struct rank) { .i = i, .cls = 2, .key = nearness(x) };
                if ((x->report && x->report->verdict != MG_VERDICT_OK) || x->lent) {
                        r[i].cls = 0;
                } else if (x->last_event_usec && x->last_event_usec <= now_usec &&
                           now_usec - x->last_event_usec < MGT_METRICS_ACTED_USEC) {
                        r[i].cls = 1;
                        r[i].key = x->last_event_usec;
                } else if (x->was_selected) {
                        r[i].key += MGT_METRICS_STICKY_PERMYRIAD;
                }
        }
        qsort(r, n, sizeof(*r), rank_cmp);
        for (size_t k = 0; k < max; k++)
                a[r[k].i].selected = true;
        free(r);
        return (size_t) max;
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

/* A per-cgroup family: its HELP and TYPE go out before its first sample,
 * and not at all without one. */
struct fam {
        const char *name, *type, *help;
        bool said;
};

/* "NAME{cgroup="...",id="..."": the caller adds its own labels and the
 * value.  lab: the actor's label value, escaped. */
static void open_sample(struct buf *b, struct fam *f, const char *lab) {
        if (!f->said) {
                family(b, f->name, f->type, f->help);
                f->said = true;
        }
        put(b, "%s{cgroup=\"%s\",id=\"%s\"", f->name, lab, lab);
}

static void u64_sample(struct buf *b, struct fam *f, const char *lab, uint64_t v) {
        open_sample(b, f, lab);
        put(b, "} %" PRIu64 "\n", v);
}

/* A gauge of bytes where MG_UNLIMITED ("max") is +Inf. */
static void bytes_or_inf(struct buf *b, struct fam *f, const char *lab, uint64_t v) {
        open_sample(b, f, lab);
        if (v == MG_UNLIMITED)
                put(b, "} +Inf\n");
        else
                put(b, "} %" PRIu64 "\n", v);
}

/* The label values of the actors sel[0..m), escaped; NULL on ENOMEM. */
static char **escape_labels(const struct mgt_metrics_actor *const *sel, size_t m) {
        char **lab = calloc(m ? m : 1, sizeof(char *));

        for (size_t k = 0; lab && k < m; k++) {
                size_t len = mgt_metrics_escape(sel[k]->cgroup, NULL, 0);
                lab[k] = malloc(len + 1);
                if (!lab[k]) {
                        for (size_t j = 0; j < k; j++)
                                free(lab[j]);
                        free(lab);
                        return NULL;
                }
                mgt_metrics_escape(sel[k]->cgroup, lab[k], len + 1);
        }
        return lab;
}

static void node_counter(struct buf *b, const char *name, const char *help, uint64_t v) {
        family(b, name, "counter", help);
        put(b, "%s %" PRIu64 "\n", name, v);
}

static void node_gauge(struct buf *b, const char *name, const char *help, uint64_t v) {
        family(b, name, "gauge", help);
        put(b, "%s %" PRIu64 "\n", name, v);
}

/* The families of the node: watch's own, then the sums over every cgroup
 * (the library's since watch started, the gauges over those guarded now),
 * then the detect-to-kill histogram. */
static void format_node(struct buf *b, const struct mgt_metrics_actor *a, size_t n,
                        const struct mgt_metrics_node *node, size_t selected) {
        const struct mg_stats *ns = node->stats;
        uint64_t limit = 0, used = 0, current = 0, file = 0, lent = 0, parked = 0, verdicts[MG_VERDICT_STALL + 1] = {};

        for (size_t i = 0; i < n; i++) {
                limit += a[i].limit_bytes;
                lent += a[i].lent;
                parked += a[i].parked;
                if (!a[i].report)
                        continue;
                used += a[i].report->used_bytes;
                current += a[i].report->current_bytes;
                file += a[i].report->stat.file;
                if ((unsigned) a[i].report->verdict <= MG_VERDICT_STALL)
                        verdicts[a[i].report->verdict]++;
        }
        family(b, "memguard_info", "gauge", "The memguard watch that wrote this file: 1, its version as a label.");
        put(b, "memguard_info{version=\"%u.%u.%u\"} 1\n", node->version >> 16, (node->version >> 8) & 0xff,
            node->version & 0xff);
        family(b, "memguard_last_update_timestamp_seconds", "gauge",
               "When this file was written (seconds since the epoch): stale if it stops moving.");
        put(b, "memguard_last_update_timestamp_seconds %" PRIu64 ".%03" PRIu64 "\n", node->time_usec / 1000000,
            node->time_usec / 1000 % 1000);
        node_gauge(b, "memguard_cgroups", "Cgroups guarded now.", node->cgroups);
        node_gauge(b, "memguard_metrics_cgroups",
                   "Cgroups with series of their own in this file (--metrics-cgroups); the memguard_node_ sums "
                   "cover every one.",
                   selected);
        family(b, "memguard_reloads_total", "counter", "SIGHUP reloads, and of them those whose config had errors.");
        put(b, "memguard_reloads_total{result=\"ok\"} %" PRIu64 "\n", node->reloads - node->reload_errors);
        put(b, "memguard_reloads_total{result=\"error\"} %" PRIu64 "\n", node->reload_errors);
        node_counter(b, "memguard_metrics_skipped_total",
                     "Intervals whose metrics waited because the writer had not taken the last ones.",
                     node->metrics_skipped);
        node_counter(b, "memguard_output_dropped_lines_total",
                     "Event and log lines dropped because their reader (journald, a pipe) did not keep up.",
                     node->output_dropped);
        family(b, "memguard_node_kills_total", "counter",
               "Kills by every guard since watch started, cgroups since removed included.");
        put(b, "memguard_node_kills_total{reason=\"overshoot\"} %" PRIu64 "\n", ns->kills_overshoot);
        put(b, "memguard_node_kills_total{reason=\"stall\"} %" PRIu64 "\n", ns->kills_stall);
        node_counter(b, "memguard_node_kernel_oom_kills_total",
                     "Kernel OOM kills seen in guarded cgroups since watch started.", ns->kernel_oom_kills);
        node_counter(b, "memguard_node_dry_run_kills_total",
                     "Kills a dry run (--dry-run) would have made, by every guard since watch started.",
                     ns->dry_run_kills);
        node_counter(b, "memguard_node_kills_deferred_total",
                     "Kills put off after a pre-kill event (--pre-kill-defer), by every guard since watch started.",
                     ns->kills_deferred);
        node_counter(b, "memguard_node_kills_averted_total",
                     "Deferred kills not made, by every guard since watch started.", ns->kills_averted);
        family(b, "memguard_node_ticks_total", "counter",
               "Ticks of every guard since watch started: fast (memory.current alone) or slow (at the limit).");
        put(b, "memguard_node_ticks_total{path=\"fast\"} %" PRIu64 "\n", ns->fast_ticks);
        put(b, "memguard_node_ticks_total{path=\"slow\"} %" PRIu64 "\n", ns->slow_ticks);
        node_counter(b, "memguard_node_errors_total", "Errors every guard reported since watch started.", ns->errors);
        node_counter(b, "memguard_node_throttled_total",
                     "Episodes held over memory.high with nothing to reclaim, every guard's since watch started.",
                     ns->throttles);
        node_counter(b, "memguard_node_empty_over_limit_total",
                     "Episodes over the limit with no process to kill, every guard's since watch started.",
                     node->counts->empty_over_limit);
        node_counter(b, "memguard_node_unkillable_total",
                     "Kills whose processes outlived the kill wait, every guard's since watch started.",
                     node->counts->unkillable);
        node_counter(b, "memguard_node_reclaims_total",
                     "Doses the reclaim actuator (--reclaim-dose) wrote, by every guard since watch started.",
                     ns->reclaims);
        node_counter(b, "memguard_node_reclaimed_bytes_total",
                     "What those doses reclaimed, in bytes (the target's pgsteal over each write).",
                     ns->reclaimed_bytes);
        node_counter(b, "memguard_node_lends_total", "Lends of memory.high begun, every guard's since watch started.",
                     ns->lends);
        node_counter(b, "memguard_node_lend_expired_total",
                     "Lends ended by their deadline, every guard's since watch started.", ns->lend_expiries);
        node_gauge(b, "memguard_node_lend_active", "Cgroups whose memory.high is lent now (kills paused).", lent);
        node_counter(b, "memguard_node_parks_total",
                     "Actors frozen instead of killed (--park-hook), by every guard since watch started.", ns->parks);
        family(b, "memguard_node_park_ends_total", "counter",
               "Parks ended, by how: thaw, or a kill asked by the hook (kill) or made by the guard's promise "
               "(deadline, bound, not-frozen, over-limit); no-freeze: a kill made at once, cgroup.freeze unwritable.");
        for (int e = MG_PARK_END_KILL; e < MGT_PARK_ENDS; e++)
                put(b, "memguard_node_park_ends_total{end=\"%s\"} %" PRIu64 "\n", mgt_park_end_name((uint32_t) e),
                    node->counts->park_ends[e]);
        node_gauge(b, "memguard_node_parked", "Actors frozen now, their park open.", parked);
        family(b, "memguard_park_hooks_total", "counter",
               "Runs of the park hook by result: saved (exit 0), thaw (exit 10), failed, signal, timeout, error "
               "(not run), cancelled (the park ended first).");
        for (int r = 0; r < _MGT_HOOK_RESULT_MAX; r++)
                put(b, "memguard_park_hooks_total{result=\"%s\"} %" PRIu64 "\n",
                    mgt_hook_result_name((enum mgt_hook_result) r), node->hooks ? node->hooks->results[r] : 0);
        family(b, "memguard_park_hook_seconds", "histogram",
               "How long each run of the park hook took, from the park event to its end (its timeout included).");
        {
                const struct mgt_hook_stats *h = node->hooks;
                uint64_t cum = 0, count = h ? h->count : 0, sum = h ? h->sum_usec : 0;
                for (int i = 0; i < MGT_HOOK_BUCKETS; i++) {
                        cum += h ? h->bucket[i] : 0;
                        put(b, "memguard_park_hook_seconds_bucket{le=\"%s\"} %" PRIu64 "\n", hook_le[i], cum);
                }
                put(b, "memguard_park_hook_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", count);
                put(b, "memguard_park_hook_seconds_sum %" PRIu64 ".%06" PRIu64 "\n", sum / 1000000, sum % 1000000);
                put(b, "memguard_park_hook_seconds_count %" PRIu64 "\n", count);
        }
        node_gauge(b, "memguard_node_limit_bytes", "The guards' limits added up: what the guarded cgroups paid for.",
                   limit);
        node_gauge(b, "memguard_node_used_bytes",
                   "anon + shmem + kernel + sock of every guarded cgroup read at the interval, added up.", used);
        node_gauge(b, "memguard_node_current_bytes",
                   "memory.current of every guarded cgroup read at the interval, added up.", current);
        node_gauge(b, "memguard_node_file_bytes",
                   "Page cache of every guarded cgroup read at the interval, added up.", file);
        family(b, "memguard_node_verdict", "gauge", "Guarded cgroups by the verdict a tick would give now.");
        for (int v = MG_VERDICT_OK; v <= MG_VERDICT_STALL; v++)
                put(b, "memguard_node_verdict{verdict=\"%s\"} %" PRIu64 "\n", mg_verdict_to_string((enum mg_verdict) v),
                    verdicts[v]);
        family(b, "memguard_detect_to_kill_seconds", "histogram",
               "From the first tick that saw the condition to the kill's signal, every guard's kills since "
               "watch started (under --dry-run the kills it would have made).");
        for (int r = 0; r < 2; r++) {
                const struct mgt_kill_latency *h = node->latency;
                uint64_t cum = 0, count = h ? h->count[r] : 0, sum = h ? h->sum_usec[r] : 0;
                for (int i = 0; i < MGT_KILL_BUCKETS; i++) {
                        cum += h ? h->bucket[r][i] : 0;
                        put(b, "memguard_detect_to_kill_seconds_bucket{reason=\"%s\",le=\"%s\"} %" PRIu64 "\n",
                            kill_reasons[r], bucket_le[i], cum);
                }
                put(b, "memguard_detect_to_kill_seconds_bucket{reason=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
                    kill_reasons[r], count);
                put(b, "memguard_detect_to_kill_seconds_sum{reason=\"%s\"} %" PRIu64 ".%06" PRIu64 "\n",
                    kill_reasons[r], sum / 1000000, sum % 1000000);
                put(b, "memguard_detect_to_kill_seconds_count{reason=\"%s\"} %" PRIu64 "\n", kill_reasons[r], count);
        }
}

/* watch begins no lend: a guard has one only if it took over the record
 * of a process that died (at mg_guard_new()). */
static bool had_lend(const struct mgt_metrics_actor *x) {
        return x->had_lend || x->lent || x->stats->lends || x->stats->lend_expiries;
}

char *mgt_metrics_format(const struct mgt_metrics_actor *a, size_t n, const struct mgt_metrics_node *node,
                         size_t *ret_len) {
        bool dry = node->dry_run, defer = node->pre_kill_defer, park = node->park;
        const struct mgt_metrics_actor **sel = calloc(n ? n : 1, sizeof(const struct mgt_metrics_actor *));
        struct buf b = {};
        size_t m = 0;
        char **lab;

        if (!sel)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (a[i].selected)
                        sel[m++] = &a[i];
        lab = escape_labels(sel, m);
        if (!lab) {
                free(sel);
                return NULL;
        }
        format_node(&b, a, n, node, m);

        struct fam kills = { "memguard_kills_total", "counter", "Kills of the cgroup's processes by its guard, by reason." };
        for (size_t k = 0; k < m; k++) {
                const struct mg_stats *s = sel[k]->stats;
                if (dry && !s->kills_overshoot && !s->kills_stall)
                        continue; /* a dry run kills nothing */
                for (int r = 0; r < 2; r++) {
                        open_sample(&b, &kills, lab[k]);
                        put(&b, ",reason=\"%s\"} %" PRIu64 "\n", kill_reasons[r],
                            r == 0 ? s->kills_overshoot : s->kills_stall);
                }
        }
        struct fam dry_kills = { "memguard_dry_run_kills_total", "counter",
                                 "Kills a dry run (--dry-run) would have made in the cgroup: nothing was killed." };
        for (size_t k = 0; k < m; k++)
                if (dry || sel[k]->stats->dry_run_kills)
                        u64_sample(&b, &dry_kills, lab[k], sel[k]->stats->dry_run_kills);
        struct fam deferred = { "memguard_kills_deferred_total", "counter",
                                "Kills put off after a pre-kill event (--pre-kill-defer)." };
        for (size_t k = 0; k < m; k++)
                if (defer || sel[k]->stats->kills_deferred || sel[k]->stats->kills_averted)
                        u64_sample(&b, &deferred, lab[k], sel[k]->stats->kills_deferred);
        struct fam averted = { "memguard_kills_averted_total", "counter",
                               "Deferred kills not made: the actor had left its limit when the deferral ended." };
        for (size_t k = 0; k < m; k++)
                if (defer || sel[k]->stats->kills_deferred || sel[k]->stats->kills_averted)
                        u64_sample(&b, &averted, lab[k], sel[k]->stats->kills_averted);
        struct fam parks = { "memguard_parks_total", "counter",
                             "Times the actor was frozen instead of killed (--park-hook)." };
        for (size_t k = 0; k < m; k++)
                if (park || sel[k]->stats->parks)
                        u64_sample(&b, &parks, lab[k], sel[k]->stats->parks);
        struct fam parked = { "memguard_parked", "gauge", "1 while the actor is frozen, its park open." };
        for (size_t k = 0; k < m; k++)
                if (park || sel[k]->stats->parks)
                        u64_sample(&b, &parked, lab[k], sel[k]->parked ? 1 : 0);
        struct fam ticks = { "memguard_ticks_total", "counter",
                             "The guard's ticks: fast (memory.current alone, below the line) or slow (at the limit)." };
        for (size_t k = 0; k < m; k++) {
                open_sample(&b, &ticks, lab[k]);
                put(&b, ",path=\"fast\"} %" PRIu64 "\n", sel[k]->stats->fast_ticks);
                open_sample(&b, &ticks, lab[k]);
                put(&b, ",path=\"slow\"} %" PRIu64 "\n", sel[k]->stats->slow_ticks);
        }
        struct fam oom = { "memguard_kernel_oom_kills_total", "counter",
                           "The kernel's OOM kills in the cgroup (memory.max)." };
        for (size_t k = 0; k < m; k++)
                u64_sample(&b, &oom, lab[k], sel[k]->stats->kernel_oom_kills);
        struct fam errors = { "memguard_errors_total", "counter",
                              "Errors the guard reported (reads that failed; never a kill)." };
        for (size_t k = 0; k < m; k++)
                u64_sample(&b, &errors, lab[k], sel[k]->stats->errors);
        struct fam throttled = { "memguard_throttled_total", "counter",
                                 "Episodes held over memory.high with nothing to reclaim." };
        for (size_t k = 0; k < m; k++)
                u64_sample(&b, &throttled, lab[k], sel[k]->stats->throttles);
        struct fam empty = { "memguard_empty_over_limit_total", "counter",
                             "Episodes over the limit with no process to kill." };
        for (size_t k = 0; k < m; k++)
                u64_sample(&b, &empty, lab[k], sel[k]->counts->empty_over_limit);
        struct fam unkillable = { "memguard_unkillable_total", "counter",
                                  "Kills whose processes outlived the kill wait." };
        for (size_t k = 0; k < m; k++)
                u64_sample(&b, &unkillable, lab[k], sel[k]->counts->unkillable);
        struct fam reclaims = { "memguard_reclaims_total", "counter",
                                "Doses of the reclaim actuator (--reclaim-dose) written to memory.reclaim, failed "
                                "ones included." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->reclaim_armed || sel[k]->stats->reclaims || sel[k]->stats->reclaimed_bytes)
                        u64_sample(&b, &reclaims, lab[k], sel[k]->stats->reclaims);
        struct fam reclaimed = { "memguard_reclaimed_bytes_total", "counter",
                                 "What the doses reclaimed, in bytes: the target's pgsteal over each write." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->reclaim_armed || sel[k]->stats->reclaims || sel[k]->stats->reclaimed_bytes)
                        u64_sample(&b, &reclaimed, lab[k], sel[k]->stats->reclaimed_bytes);
        struct fam lends = { "memguard_lends_total", "counter", "Lends of memory.high begun." };
        for (size_t k = 0; k < m; k++)
                if (had_lend(sel[k]))
                        u64_sample(&b, &lends, lab[k], sel[k]->stats->lends);
        struct fam expired = { "memguard_lend_expired_total", "counter", "Lends ended by their deadline." };
        for (size_t k = 0; k < m; k++)
                if (had_lend(sel[k]))
                        u64_sample(&b, &expired, lab[k], sel[k]->stats->lend_expiries);
        struct fam lend_active = { "memguard_lend_active", "gauge", "1 while memory.high is lent (kills paused)." };
        for (size_t k = 0; k < m; k++)
                if (had_lend(sel[k]))
                        u64_sample(&b, &lend_active, lab[k], sel[k]->lent ? 1 : 0);
        struct fam limit = { "memguard_limit_bytes", "gauge", "The guard's limit: what the actor paid for." };
        for (size_t k = 0; k < m; k++) {
                open_sample(&b, &limit, lab[k]);
                put(&b, ",source=\"%s\"} %" PRIu64 "\n", sel[k]->limit_source, sel[k]->limit_bytes);
        }
        struct fam used = { "memguard_used_bytes", "gauge",
                            "anon + shmem + kernel + sock: what the guard compares to the limit." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->report)
                        u64_sample(&b, &used, lab[k], sel[k]->report->used_bytes);
        struct fam current = { "memguard_current_bytes", "gauge", "memory.current (page cache included)." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->report)
                        u64_sample(&b, &current, lab[k], sel[k]->report->current_bytes);
        struct fam file = { "memguard_file_bytes", "gauge", "Page cache (memory.stat file): not counted in used." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->report)
                        u64_sample(&b, &file, lab[k], sel[k]->report->stat.file);
        struct fam stall = { "memguard_stall_seconds", "gauge",
                             "How long the stall criteria have held (0: not stalling)." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->report) {
                        open_sample(&b, &stall, lab[k]);
                        put(&b, "} %" PRIu64 ".%06" PRIu64 "\n", sel[k]->report->stall_usec / 1000000,
                            sel[k]->report->stall_usec % 1000000);
                }
        struct fam high = { "memguard_memory_high_bytes", "gauge", "memory.high (+Inf: max)." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->report)
                        bytes_or_inf(&b, &high, lab[k], sel[k]->report->high_bytes);
        struct fam max = { "memguard_memory_max_bytes", "gauge", "memory.max (+Inf: max)." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->report)
                        bytes_or_inf(&b, &max, lab[k], sel[k]->report->max_bytes);
        struct fam verdict = { "memguard_verdict", "gauge",
                               "The verdict a tick would give now: 1 for it, by verdict label." };
        for (size_t k = 0; k < m; k++)
                if (sel[k]->report) {
                        open_sample(&b, &verdict, lab[k]);
                        put(&b, ",verdict=\"%s\"} 1\n", mg_verdict_to_string(sel[k]->report->verdict));
                }
        for (size_t k = 0; k < m; k++)
                free(lab[k]);
        free(lab);
        free(sel);
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
        pid = mgt_fork_helper(p[0]);
        if (pid < 0) {
                close(p[0]);
                close(p[1]);
                return pid;
        }
        if (pid == 0)
                writer_main(3, path);
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
