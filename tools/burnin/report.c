/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a run measured: per-slot percentile tables on stdout, the samples as
 * CSV and JSON, and a latency-over-time SVG (hand-written, no dependency).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burnin.h"
#include "json.h"
#include "memguard/snapshot.h"
#include "util.h"

enum { PH_SNAPSHOT, PH_WRITE, PH_SYNC, PH_LEND_END, PH_PUBLISH, PH_TEARDOWN, PH_RESTORE, PH_TOTAL, N_PHASES };
static const char *const phase_names[N_PHASES] = { "snapshot", "write", "sync", "lend_end", "publish",
                                                   "teardown", "restore", "total" };

static uint64_t phase(const struct bi_sample *x, int p) {
        switch (p) {
        case PH_SNAPSHOT:
                return x->snapshot_usec;
        case PH_WRITE:
                return x->write_usec;
        case PH_SYNC:
                return x->sync_usec;
        case PH_LEND_END:
                return x->lend_end_usec;
        case PH_PUBLISH:
                return x->publish_usec;
        case PH_TEARDOWN:
                return x->teardown_usec;
        case PH_RESTORE:
                return x->restore_usec;
        default:
                return x->downtime_usec;
        }
}

const char *bi_writer_to_string(enum bi_writer w) {
        switch (w) {
        case BI_WRITER_MEMGUARD:
                return "memguard";
        case BI_WRITER_BUFFERED:
                return "buffered";
        case BI_WRITER_BOTH:
                return "both";
        }
        return "?";
}

const char *bi_restore_to_string(enum bi_restore m) {
        switch (m) {
        case BI_RESTORE_DIRECT:
                return "direct";
        case BI_RESTORE_CACHED:
                return "cached";
        case BI_RESTORE_LENT:
                return "lent";
        case BI_RESTORE_ALTERNATE:
                return "alternate";
        case BI_RESTORE_ROTATE:
                return "rotate";
        }
        return "?";
}

static uint64_t slot_of(const struct bi_run *r, const struct bi_sample *x) {
        return (x->end_usec - r->start_usec) / r->slot_usec;
}

static void print_table(const struct bi_run *r, uint32_t writer) {
        uint64_t *v = malloc((r->n ? r->n : 1) * sizeof(*v));
        uint64_t last = 0, peak = 0, window = 0;
        size_t total = 0;
        if (!v)
                return;
        for (size_t i = 0; i < r->n; i++)
                if (r->samples[i].writer == writer) {
                        total++;
                        if (r->samples[i].peak_dirty_bytes > peak)
                                peak = r->samples[i].peak_dirty_bytes;
                        window = r->samples[i].window_bytes;
                        if (slot_of(r, &r->samples[i]) > last)
                                last = slot_of(r, &r->samples[i]);
                }
        printf("\nwriter %s: %zu cycles; ms per phase (snapshot = the write call: lend, write, sync, lend end, "
               "publish; total = snapshot + teardown + restore + check)\n",
               bi_writer_to_string((enum bi_writer) writer), total);
        printf("peak dirty + writeback charged to an actor during a write: %.2f MiB (window %.0f MiB)\n",
               (double) peak / MG_MIB, (double) window / MG_MIB);
        printf("%-13s %-9s %5s %8s %8s %8s %8s\n", "slot", "phase", "n", "p50", "p90", "p99", "max");
        for (uint64_t slot = 0; total && slot <= last; slot++) {
                char label[32];
                double a = (double) (slot * r->slot_usec) / 1e6, b = (double) ((slot + 1) * r->slot_usec) / 1e6;
                snprintf(label, sizeof(label), "%.0f-%.0fs", a, b);
                for (int p = 0; p < N_PHASES; p++) {
                        size_t n = 0;
                        for (size_t i = 0; i < r->n; i++) {
                                const struct bi_sample *x = &r->samples[i];
                                if (x->writer == writer && slot_of(r, x) == slot && !(x->flags & BI_FLAG_ERROR))
                                        v[n++] = phase(x, p);
                        }
                        if (n == 0) {
                                if (p == 0)
                                        printf("%-13s %-9s %5d\n", label, "-", 0);
                                break;
                        }
                        qsort(v, n, sizeof(*v), mg_cmp_u64);
                        printf("%-13s %-9s %5zu %8.1f %8.1f %8.1f %8.1f\n", p == 0 ? label : "", phase_names[p], n,
                               (double) mg_percentile_sorted_u64(v, n, 50) / 1e3,
                               (double) mg_percentile_sorted_u64(v, n, 90) / 1e3,
                               (double) mg_percentile_sorted_u64(v, n, 99) / 1e3, (double) v[n - 1] / 1e3);
                }
        }
        free(v);
}

void bi_print_tables(const struct bi_run *r) {
        if (r->writer != BI_WRITER_BUFFERED)
                print_table(r, BI_WRITER_MEMGUARD);
        if (r->writer != BI_WRITER_MEMGUARD)
                print_table(r, BI_WRITER_BUFFERED);
        fflush(stdout);
}

void bi_print_park_tables(const struct bi_run *r) {
        uint64_t *v = malloc((r->n_parks ? r->n_parks : 1) * sizeof(*v));
        uint64_t last = 0;
        size_t lost = 0, corrupted = 0;
        if (!v)
                return;
        for (size_t i = 0; i < r->n_parks; i++) {
                uint64_t slot = bi_park_slot(&r->parks[i], r->start_usec, r->slot_usec);
                last = slot > last ? slot : last;
                lost += r->parks[i].lost;
                corrupted += r->parks[i].corrupted;
        }
        printf("\nparks: %zu, images lost %zu, corrupted %zu; ms per phase (freeze = cgroup.freeze written to "
               "frozen; save = the worker's write of the guest memory while frozen; free = the park's kill to the "
               "cgroup empty)\n",
               r->n_parks, lost, corrupted);
        printf("%-13s %-9s %5s %8s %8s %8s %8s\n", "slot", "phase", "n", "p50", "p90", "p99", "max");
        for (uint64_t slot = 0; r->n_parks && slot <= last; slot++) {
                char label[32];
                struct bi_park_stats st[BI_PARK_PHASES];
                size_t any = 0;
                for (int p = 0; p < BI_PARK_PHASES; p++) {
                        (void) bi_park_slot_stats(r->parks, r->n_parks, r->start_usec, r->slot_usec, slot,
                                                  (enum bi_park_phase) p, v, &st[p]);
                        any += st[p].n;
                }
                if (!any)
                        continue; /* most slots hold no park */
                snprintf(label, sizeof(label), "%.0f-%.0fs", (double) (slot * r->slot_usec) / 1e6,
                         (double) ((slot + 1) * r->slot_usec) / 1e6);
                for (int p = 0; p < BI_PARK_PHASES; p++)
                        printf("%-13s %-9s %5zu %8.1f %8.1f %8.1f %8.1f\n", p == 0 ? label : "",
                               bi_park_phase_to_string((enum bi_park_phase) p), st[p].n, (double) st[p].p50 / 1e3,
                               (double) st[p].p90 / 1e3, (double) st[p].p99 / 1e3, (double) st[p].max / 1e3);
        }
        free(v);
        fflush(stdout);
}

static int close_file(FILE *f) {
        int bad = ferror(f);
        if (fclose(f) != 0 || bad)
                return -EIO;
        return 0;
}

#define CSV_FIELDS(X) \
        X(lend_begin_usec) X(write_usec) X(sync_usec) X(reclaim_usec) X(lend_end_usec) X(publish_usec) \
        X(snapshot_usec) X(teardown_usec) X(restore_usec) X(downtime_usec) X(work_usec) X(peak_dirty_bytes) \
        X(window_bytes) X(data_bytes) X(resident_bytes) X(actor_file_bytes) X(restore_high_events) \
        X(restore_method)

int bi_write_csv(const struct bi_run *r, const char *path) {
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        fputs("time_s,actor,cycle,writer,method,flags,error", f);
#define HEAD(n) fputs("," #n, f);
        CSV_FIELDS(HEAD)
        fputs(",what\n", f);
        for (size_t i = 0; i < r->n; i++) {
                const struct bi_sample *x = &r->samples[i];
                char what[sizeof(x->what)];
                size_t k = 0;
                for (const char *c = x->what; *c && k + 1 < sizeof(what); c++)
                        what[k++] = (char) (*c == ',' || *c == '"' || *c == '\n' ? ' ' : *c);
                what[k] = '\0';
                fprintf(f, "%.3f,%" PRIu32 ",%" PRIu32 ",%s,%s,%" PRIu32 ",%" PRId32,
                        (double) (x->end_usec - r->start_usec) / 1e6, x->actor, x->cycle,
                        bi_writer_to_string((enum bi_writer) x->writer),
                        mg_snapshot_method_to_string((enum mg_snapshot_method) x->method), x->flags, x->error);
#define ROW(n) fprintf(f, ",%" PRIu64, (uint64_t) x->n);
                CSV_FIELDS(ROW)
                fprintf(f, ",%s\n", what);
        }
        return close_file(f);
}

int bi_write_json(const struct bi_run *r, const char *path) {
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "{\"slot_usec\":%" PRIu64 ",\"writer\":\"%s\",\"samples\":[", r->slot_usec,
                bi_writer_to_string(r->writer));
        for (size_t i = 0; i < r->n; i++) {
                const struct bi_sample *x = &r->samples[i];
                struct mgt_json j;
                mgt_json_begin(&j);
                mgt_json_u64(&j, "time_usec", x->end_usec - r->start_usec);
                mgt_json_u64(&j, "actor", x->actor);
                mgt_json_u64(&j, "cycle", x->cycle);
                mgt_json_str(&j, "writer", bi_writer_to_string((enum bi_writer) x->writer));
                mgt_json_str(&j, "method", mg_snapshot_method_to_string((enum mg_snapshot_method) x->method));
                mgt_json_u64(&j, "flags", x->flags);
                mgt_json_i64(&j, "error", x->error);
#define JS(n) mgt_json_u64(&j, #n, (uint64_t) x->n);
                CSV_FIELDS(JS)
                mgt_json_str(&j, "what", x->what[0] ? x->what : NULL);
                const char *text = mgt_json_end(&j);
                fprintf(f, "%s\n%s", i ? "," : "", text ? text : "null");
                mgt_json_free(&j);
        }
        fputs("]}\n", f);
        return close_file(f);
}

/* ---- per-slot figures, the targets ------------------------------------------- */

struct slot_fig {
        size_t n;
        uint64_t p50, p90, p99, max;    /* of the total */
        uint64_t peak_dw, window;
};

/* The total of writer's cycles without error that ended in slot (slot
 * UINT64_MAX: all of them). */
static void slot_figures(const struct bi_run *r, uint32_t writer, uint64_t slot, struct slot_fig *f) {
        uint64_t *v = malloc((r->n ? r->n : 1) * sizeof(*v));
        *f = (struct slot_fig) { 0 };
        if (!v)
                return;
        for (size_t i = 0; i < r->n; i++) {
                const struct bi_sample *x = &r->samples[i];
                if (x->writer != writer || (slot != UINT64_MAX && slot_of(r, x) != slot))
                        continue;
                if (x->peak_dirty_bytes > f->peak_dw)
                        f->peak_dw = x->peak_dirty_bytes;
                if (x->window_bytes)
                        f->window = x->window_bytes;
                if (!(x->flags & BI_FLAG_ERROR))
                        v[f->n++] = x->downtime_usec;
        }
        if (f->n) {
                qsort(v, f->n, sizeof(*v), mg_cmp_u64);
                f->p50 = mg_percentile_sorted_u64(v, f->n, 50);
                f->p90 = mg_percentile_sorted_u64(v, f->n, 90);
                f->p99 = mg_percentile_sorted_u64(v, f->n, 99);
                f->max = v[f->n - 1];
        }
        free(v);
}

static uint64_t last_slot(const struct bi_run *r) {
        uint64_t last = 0;
        for (size_t i = 0; i < r->n; i++)
                if (slot_of(r, &r->samples[i]) > last)
                        last = slot_of(r, &r->samples[i]);
        return last;
}

/* The step that holds all of slot, or SIZE_MAX if the slot spans a change
 * of load or the end of the ladder. */
static size_t step_of_slot(const struct bi_run *r, uint64_t slot) {
        uint64_t a = slot * r->slot_usec, b = a + r->slot_usec, t = 0;
        for (size_t i = 0; i < r->n_steps; i++) {
                uint64_t e = t + r->steps[i].usec;
                if (a >= t && b <= e)
                        return i;
                t = e;
        }
        return SIZE_MAX;
}

static void slot_label(const struct bi_run *r, uint64_t slot, char *buf, size_t len) {
        snprintf(buf, len, "%.0f-%.0fs", (double) (slot * r->slot_usec) / 1e6,
                 (double) ((slot + 1) * r->slot_usec) / 1e6);
}

static double ms(uint64_t usec) {
        return (double) usec / 1e3;
}

static double ratio(uint64_t a, uint64_t b) {
        return b ? (double) a / (double) b : 0;
}

static unsigned check_slots(const struct bi_run *r) {
        unsigned fails = 0;
        uint64_t last = last_slot(r);
        printf("\ntargets for the memguard writer, total per slot (ms; the buffered writer beside it, no target):\n");
        printf("%-6s %-13s %6s | %5s %8s %8s %6s %8s | %5s %8s %8s %6s %8s\n", "", "slot", "actors", "n", "p50",
               "p99", "p99/50", "dw MiB", "n", "p50", "p99", "p99/50", "dw MiB");
        for (uint64_t slot = 0; slot <= last; slot++) {
                struct slot_fig m, b;
                char label[32], actors[16];
                size_t st = step_of_slot(r, slot);
                slot_figures(r, BI_WRITER_MEMGUARD, slot, &m);
                slot_figures(r, BI_WRITER_BUFFERED, slot, &b);
                slot_label(r, slot, label, sizeof(label));
                if (st == SIZE_MAX)
                        snprintf(actors, sizeof(actors), "mixed");
                else
                        snprintf(actors, sizeof(actors), "%" PRIu32, r->steps[st].actors);
                const char *verdict;
                bool loaded = st != SIZE_MAX && r->steps[st].actors > 0;
                if (m.n >= BI_MIN_SLOT_CYCLES)
                        verdict = m.p99 <= 2 * m.p50 ? "PASS" : "FAIL";
                else if (loaded)
                        verdict = "FAIL"; /* too few cycles for a p99: the run was too short for its targets */
                else
                        verdict = "-";
                fails += strcmp(verdict, "FAIL") == 0;
                printf("%-6s %-13s %6s | %5zu %8.1f %8.1f %6.2f %8.2f | %5zu %8.1f %8.1f %6.2f %8.2f\n", verdict,
                       label, actors, m.n, ms(m.p50), ms(m.p99), ratio(m.p99, m.p50), (double) m.peak_dw / MG_MIB,
                       b.n, ms(b.p50), ms(b.p99), ratio(b.p99, b.p50), (double) b.peak_dw / MG_MIB);
        }
        printf("(PASS/FAIL: memguard p99 <= 2 x p50 with >= %d cycles; a slot of one load step with fewer "
               "fails; '-': the slot spans a change of load; dw: peak dirty + writeback)\n", BI_MIN_SLOT_CYCLES);

        /* the last slot of a load against its first */
        for (size_t i = 0; i < r->n_steps; i++) {
                uint32_t c = r->steps[i].actors;
                uint64_t first = UINT64_MAX, lastc = UINT64_MAX;
                bool seen = false;
                for (size_t k = 0; k < i; k++)
                        seen = seen || r->steps[k].actors == c;
                if (c == 0 || seen)
                        continue;
                for (uint64_t slot = 0; slot <= last; slot++) {
                        size_t st = step_of_slot(r, slot);
                        if (st == SIZE_MAX || r->steps[st].actors != c)
                                continue;
                        if (first == UINT64_MAX)
                                first = slot;
                        lastc = slot;
                }
                if (first == UINT64_MAX || first == lastc)
                        continue;
                struct slot_fig m0, m1, b0, b1;
                char l0[32], l1[32];
                slot_figures(r, BI_WRITER_MEMGUARD, first, &m0);
                slot_figures(r, BI_WRITER_MEMGUARD, lastc, &m1);
                slot_figures(r, BI_WRITER_BUFFERED, first, &b0);
                slot_figures(r, BI_WRITER_BUFFERED, lastc, &b1);
                slot_label(r, first, l0, sizeof(l0));
                slot_label(r, lastc, l1, sizeof(l1));
                bool ok = m0.n >= BI_MIN_SLOT_CYCLES && m1.n >= BI_MIN_SLOT_CYCLES && 4 * m1.p99 <= 5 * m0.p99;
                fails += !ok;
                printf("%s %" PRIu32 " actors: memguard p99 last slot %s %.1f ms vs first %s %.1f ms: %.2fx (target "
                       "<= 1.25x, n %zu / %zu); buffered %.1f vs %.1f ms: %.2fx\n",
                       ok ? "PASS" : "FAIL", c, l1, ms(m1.p99), l0, ms(m0.p99), ratio(m1.p99, m0.p99), m1.n, m0.n,
                       ms(b1.p99), ms(b0.p99), ratio(b1.p99, b0.p99));
        }
        return fails;
}

/* ---- the neighbours of chaos kills ------------------------------------------ */

static unsigned check_neighbours(const struct bi_run *r) {
        unsigned fails = 0;
        size_t expected = 0;
        for (size_t k = 0; k < r->n_kills; k++)
                expected += r->kills[k].expected;
        if (r->n_kills == 0)
                return 0;
        printf("\nchaos kills told by the worker's guards (ms from the run's start; detect -> kill -> empty):\n");
        for (size_t k = 0; k < r->n_kills; k++) {
                const struct bi_kill *x = &r->kills[k];
                printf("  actor %" PRIu32 " %s, %s: at %.1f s, kill %.0f ms after detect, empty %.0f ms after kill, "
                       "used %.1f MiB\n",
                       x->actor, mg_kill_reason_to_string((enum mg_kill_reason) x->reason),
                       x->expected ? "asked" : "NOT ASKED", (double) (x->kill_usec - r->start_usec) / 1e6,
                       ms(x->kill_usec - x->detect_usec), x->empty_usec ? ms(x->empty_usec - x->kill_usec) : -1.0,
                       (double) x->used_bytes / MG_MIB);
        }
        for (uint32_t w = 0; w < 2; w++) {
                uint64_t *in = malloc((r->n ? r->n : 1) * sizeof(*in)), *out = malloc((r->n ? r->n : 1) * sizeof(*out));
                size_t ni = 0, no = 0, flagged = 0;
                if (!in || !out) {
                        free(in);
                        free(out);
                        return fails;
                }
                for (size_t i = 0; i < r->n; i++) {
                        const struct bi_sample *x = &r->samples[i];
                        bool spans = false, same_slot = false;
                        if (x->writer != w)
                                continue;
                        for (size_t k = 0; k < r->n_kills; k++) {
                                const struct bi_kill *y = &r->kills[k];
                                if (y->actor == x->actor)
                                        continue;
                                spans = spans || (y->kill_usec >= x->start_usec && y->kill_usec <= x->end_usec);
                                same_slot = same_slot || (y->kill_usec - r->start_usec) / r->slot_usec == slot_of(r, x);
                        }
                        if (spans) {
                                flagged += x->flags != 0;
                                if (!(x->flags & BI_FLAG_ERROR))
                                        in[ni++] = x->downtime_usec;
                        } else if (same_slot && !(x->flags & BI_FLAG_ERROR)) {
                                out[no++] = x->downtime_usec;
                        }
                }
                if (ni == 0)
                        printf("-    %s writer: no cycle of another actor spanned a chaos kill\n",
                               bi_writer_to_string((enum bi_writer) w));
                if (ni) {
                        qsort(in, ni, sizeof(*in), mg_cmp_u64);
                        if (no)
                                qsort(out, no, sizeof(*out), mg_cmp_u64);
                        printf("%s %s writer: %zu cycles of other actors spanned a chaos kill, %zu flagged; total "
                               "p50 %.1f p99 %.1f max %.1f ms; the other cycles of those slots (%zu): p50 %.1f p99 "
                               "%.1f ms\n",
                               flagged ? "FAIL" : "PASS", bi_writer_to_string((enum bi_writer) w), ni, flagged,
                               ms(mg_percentile_sorted_u64(in, ni, 50)), ms(mg_percentile_sorted_u64(in, ni, 99)), ms(in[ni - 1]), no,
                               no ? ms(mg_percentile_sorted_u64(out, no, 50)) : 0, no ? ms(mg_percentile_sorted_u64(out, no, 99)) : 0);
                        fails += flagged != 0;
                }
                free(in);
                free(out);
        }
        (void) expected;
        return fails;
}

/* ---- restores by residency ---------------------------------------------------- */

static void print_restores(const struct bi_run *r) {
        static const unsigned edges[] = { 0, 5, 25, 50, 75, 101 }; /* % of the data resident */
        bool any = false;
        for (size_t i = 0; i < r->n && !any; i++)
                any = r->samples[i].data_bytes != 0;
        if (!any)
                return;
        printf("\nrestores by how much of the snapshot was in the page cache just before (mincore), per writer "
               "and restore method:\n");
        printf("%-9s %-7s %-9s %5s %9s %9s %8s %8s %8s %7s %6s\n", "writer", "restore", "resident", "n", "res MiB",
               "file MiB", "p50 ms", "p90 ms", "p99 ms", "MB/s", "high");
        uint64_t *v = malloc(r->n * sizeof(*v)), *res = malloc(r->n * sizeof(*res)),
                 *file = malloc(r->n * sizeof(*file)), *hi = malloc(r->n * sizeof(*hi)),
                 *data = malloc(r->n * sizeof(*data));
        if (!v || !res || !file || !hi || !data)
                goto out;
        for (uint32_t w = 0; w < 2; w++)
                for (uint32_t m = 0; m <= BI_RESTORE_LENT; m++)
                        for (size_t b = 0; b + 1 < sizeof(edges) / sizeof(edges[0]); b++) {
                                size_t n = 0;
                                for (size_t i = 0; i < r->n; i++) {
                                        const struct bi_sample *x = &r->samples[i];
                                        if (x->writer != w || x->restore_method != m || x->flags || !x->data_bytes ||
                                            !x->restore_usec)
                                                continue;
                                        uint64_t p = x->resident_bytes * 100 / x->data_bytes;
                                        if (p < edges[b] || p >= edges[b + 1])
                                                continue;
                                        v[n] = x->restore_usec;
                                        res[n] = x->resident_bytes;
                                        file[n] = x->actor_file_bytes;
                                        hi[n] = x->restore_high_events;
                                        data[n] = x->data_bytes;
                                        n++;
                                }
                                if (n == 0)
                                        continue;
                                qsort(v, n, sizeof(*v), mg_cmp_u64);
                                qsort(res, n, sizeof(*res), mg_cmp_u64);
                                qsort(file, n, sizeof(*file), mg_cmp_u64);
                                qsort(hi, n, sizeof(*hi), mg_cmp_u64);
                                qsort(data, n, sizeof(*data), mg_cmp_u64);
                                char bucket[16];
                                snprintf(bucket, sizeof(bucket), "%u-%u%%", edges[b], edges[b + 1] > 100 ? 100 : edges[b + 1]);
                                uint64_t p50 = mg_percentile_sorted_u64(v, n, 50);
                                printf("%-9s %-7s %-9s %5zu %9.1f %9.1f %8.1f %8.1f %8.1f %7.1f %6" PRIu64 "\n",
                                       bi_writer_to_string((enum bi_writer) w), bi_restore_to_string((enum bi_restore) m),
                                       bucket, n, (double) mg_percentile_sorted_u64(res, n, 50) / MG_MIB, (double) mg_percentile_sorted_u64(file, n, 50) / MG_MIB,
                                       ms(p50), ms(mg_percentile_sorted_u64(v, n, 90)), ms(mg_percentile_sorted_u64(v, n, 99)),
                                       p50 ? (double) mg_percentile_sorted_u64(data, n, 50) / (double) p50 : 0, mg_percentile_sorted_u64(hi, n, 50));
                        }
        printf("(res: snapshot bytes resident, p50; file: the actor's memory.stat file at that moment, p50, the "
               "cache charged to the actor; MB/s: data p50 / restore p50; high: memory.events high during the "
               "restore, p50)\n");
out:
        free(v);
        free(res);
        free(file);
        free(hi);
        free(data);
}

unsigned bi_print_checks(const struct bi_run *r) {
        unsigned fails = 0;
        if (r->writer != BI_WRITER_BUFFERED)
                fails += check_slots(r);
        fails += check_neighbours(r);
        print_restores(r);
        fflush(stdout);
        return fails;
}

/* ---- the picture -------------------------------------------------------------- */

/* A tick step of 1, 2 or 5 x 10^k giving at most 6 ticks up to max. */
static double nice_step(double max) {
        double step = 1e-3;
        while (max / step > 6) {
                if (max / (step * 2) <= 6)
                        return step * 2;
                if (max / (step * 5) <= 6)
                        return step * 5;
                step *= 10;
        }
        return step;
}

/* The log axis of the lower panel: ticks at 1, 10 and 100 of KiB, MiB and
 * GiB.  Its label into buf. */
static const char *size_tick_label(uint64_t v, char *buf, size_t len) {
        static const char *const unit[] = { "KiB", "MiB", "GiB" };
        int u = 0;

        v /= 1024;
        while (v >= 1024 && u < 2) {
                v /= 1024;
                u++;
        }
        snprintf(buf, len, "%" PRIu64 " %s", v, unit[u]);
        return buf;
}

/* The tick after v: 1, 10, 100 KiB, then 1 MiB, and so on. */
static uint64_t next_size_tick(uint64_t v) {
        uint64_t u = 1024;

        while (u <= v / 1024)
                u *= 1024;
        return v / u >= 100 ? u * 1024 : v * 10;
}

/* A bar's figure, short enough for a bar a third of a slot wide: "12K",
 * "5.4M". */
static const char *size_short(uint64_t v, char *buf, size_t len) {
        if (v < MG_MIB)
                snprintf(buf, len, "%.0fK", (double) v / 1024);
        else
                snprintf(buf, len, "%.1fM", (double) v / MG_MIB);
        return buf;
}

/*
 * Two panels over the run's time (minutes): above, p50 (dashed) and p99
 * (solid) of the total per slot for each writer, in seconds, the ladder's
 * actor counts along the top and the chaos kills as marks; below, the peak
 * dirty + writeback charged to an actor during a write, per slot and
 * writer, and the window as a dashed line, on a log scale: memguard's
 * writer keeps tens of KiB where the buffered one reaches MiB, and a
 * linear axis up to the window drew the first as nothing.
 */
int bi_write_svg(const struct bi_run *r, const char *path) {
        static const char *const color[2] = { "#1f77b4", "#d62728" };
        const double W = 960, L = 80, R = 150, T1 = 60, H1 = 300, T2 = 420, H2 = 200, Hall = 690;
        uint64_t last = last_slot(r), tmax = (last + 1) * r->slot_usec, ymax = 1000, dmax = 0, dmin = UINT64_MAX,
                 window = 0;
        struct slot_fig *fig[2];
        uint64_t ladder = 0;
        FILE *f;

        for (size_t i = 0; i < r->n_steps; i++)
                ladder += r->steps[i].usec;
        if (ladder > tmax)
                tmax = ladder;
        fig[0] = calloc(last + 1, sizeof(**fig));
        fig[1] = calloc(last + 1, sizeof(**fig));
        if (!fig[0] || !fig[1]) {
                free(fig[0]);
                free(fig[1]);
                return -ENOMEM;
        }
        for (uint32_t w = 0; w < 2; w++)
                for (uint64_t slot = 0; slot <= last; slot++) {
                        slot_figures(r, w, slot, &fig[w][slot]);
                        if (fig[w][slot].p99 > ymax)
                                ymax = fig[w][slot].p99;
                        if (fig[w][slot].peak_dw > dmax)
                                dmax = fig[w][slot].peak_dw;
                        if (fig[w][slot].n && fig[w][slot].peak_dw && fig[w][slot].peak_dw < dmin)
                                dmin = fig[w][slot].peak_dw;
                        if (fig[w][slot].window > window)
                                window = fig[w][slot].window;
                }
        if (window > dmax)
                dmax = window;
        if (window && window < dmin)
                dmin = window;
        ymax += ymax / 10;
        /* the log axis: from a tick at most half the least figure (1 KiB
         * at the least), so that its bar shows, to a tick at least twice
         * the largest, room for the figures over the bars */
        uint64_t dlo = 1024, dhi = 1024;
        while (dmin != UINT64_MAX && next_size_tick(dlo) <= dmin / 2 && dlo < UINT64_C(1) << 40)
                dlo = next_size_tick(dlo);
        while (dhi < 2 * dmax && dhi < UINT64_C(1) << 40)
                dhi = next_size_tick(dhi);
        if (dhi <= dlo)
                dhi = next_size_tick(dlo);
        f = fopen(path, "we");
        if (!f) {
                free(fig[0]);
                free(fig[1]);
                return -errno;
        }
#define X(t) (L + (W - L - R) * (double) (t) / (double) tmax)
#define Y1(v) (T1 + H1 * (1 - (double) (v) / (double) ymax))
#define Y2(v) (T2 + H2 * (1 - (log10((double) ((v) < dlo ? dlo : (v) > dhi ? dhi : (v))) - log10((double) dlo)) / \
                                   (log10((double) dhi) - log10((double) dlo))))
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                   "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                W, Hall);
        fprintf(f, "<text x=\"%.0f\" y=\"18\" font-size=\"14\">memguard-burnin: checkpoint total (snapshot write + "
                   "teardown + restore) per %.0f s slot, p50 dashed, p99 solid</text>\n",
                L, (double) r->slot_usec / 1e6);
        /* the ladder: a band per step, its actor count on top */
        uint64_t t = 0;
        for (size_t i = 0; i < r->n_steps; i++) {
                double x0 = X(t), x1 = X(t + r->steps[i].usec);
                fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\"/>\n", x0, T1,
                        x1 - x0, H1, i % 2 ? "#f4f4f4" : "#fbfbfb");
                fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#555\">%" PRIu32 " actors</text>\n",
                        (x0 + x1) / 2, T1 - 8, r->steps[i].actors);
                t += r->steps[i].usec;
        }
        /* seconds above: the totals run from 1 to 40 s */
        double ys = nice_step((double) ymax / 1e6);
        for (int k = 0; k * ys <= (double) ymax / 1e6; k++) {
                double v = k * ys;
                fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                           "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                        L, Y1(v * 1e6), W - R, Y1(v * 1e6), L - 6, Y1(v * 1e6) + 4, v);
        }
        for (uint64_t v = dlo; v <= dhi; v = next_size_tick(v)) {
                char lab[16];
                fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                           "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                        L, Y2(v), W - R, Y2(v), L - 6, Y2(v) + 4, size_tick_label(v, lab, sizeof(lab)));
                if (v >= UINT64_C(1) << 40)
                        break;
        }
        bool minutes = tmax >= UINT64_C(300) * MG_USEC_PER_SEC;
        double unit = minutes ? 60e6 : 1e6, xs = nice_step((double) tmax / unit);
        for (int k = 0; k * xs <= (double) tmax / unit; k++) {
                double v = k * xs, x = X(v * unit);
                fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>"
                           "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
                        x, T1 + H1 + 16, v, x, T2 + H2 + 16, v);
        }
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2,
                T1 + H1 + 32, minutes ? "minutes" : "seconds");
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2,
                T2 + H2 + 32, minutes ? "minutes" : "seconds");
        fprintf(f, "<text transform=\"translate(16,%.0f) rotate(-90)\" text-anchor=\"middle\">seconds</text>\n",
                T1 + H1 / 2);
        fprintf(f, "<text transform=\"translate(16,%.0f) rotate(-90)\" text-anchor=\"middle\">bytes (log)</text>\n",
                T2 + H2 / 2);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\">peak dirty + writeback charged to the actor during "
                   "a write, per slot, log scale; dashed grey: the window</text>\n", L, T2 - 12);
        /* chaos kills */
        for (size_t k = 0; k < r->n_kills; k++) {
                double x = X(r->kills[k].kill_usec - r->start_usec);
                fprintf(f, "<path d=\"M%.1f %.0f l-5 -9 l10 0 z\" fill=\"%s\"/>\n", x, T1 + H1,
                        r->kills[k].expected ? "black" : "magenta");
        }
        for (uint32_t w = 0; w < 2; w++)
                for (int q = 0; q < 2; q++) {
                        bool open = false;
                        for (uint64_t slot = 0; slot <= last; slot++) {
                                const struct slot_fig *g = &fig[w][slot];
                                if (g->n == 0) {
                                        if (open)
                                                fputs("\"/>\n", f);
                                        open = false;
                                        continue;
                                }
                                double x = X((double) slot * (double) r->slot_usec + (double) r->slot_usec / 2),
                                       y = Y1(q ? g->p99 : g->p50);
                                if (!open)
                                        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                                                   "points=\"", color[w], q ? "" : " stroke-dasharray=\"6 4\"");
                                fprintf(f, "%.1f,%.1f ", x, y);
                                open = true;
                        }
                        if (open)
                                fputs("\"/>\n", f);
                        for (uint64_t slot = 0; slot <= last; slot++) {
                                const struct slot_fig *g = &fig[w][slot];
                                if (g->n)
                                        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                                                X((double) slot * (double) r->slot_usec + (double) r->slot_usec / 2),
                                                Y1(q ? g->p99 : g->p50),
                                                color[w]);
                        }
                }
        /* the lower panel: bars per slot, the two writers side by side */
        double bw = (W - L - R) * (double) r->slot_usec / (double) tmax / 3;
        for (uint32_t w = 0; w < 2; w++)
                for (uint64_t slot = 0; slot <= last; slot++) {
                        const struct slot_fig *g = &fig[w][slot];
                        if (g->n == 0)
                                continue;
                        double x = X(slot * r->slot_usec) + bw * (0.5 + w);
                        double top = g->peak_dw ? Y2(g->peak_dw) : T2 + H2, h = T2 + H2 - top;
                        char lab[16];
                        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x,
                                top - (h < 1 ? 1 : 0), bw, h < 1 ? 1 : h, color[w]);
                        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%s\">%s</text>\n",
                                x + bw / 2, top - 3, bw < 24 ? "8" : "10",
                                g->peak_dw ? size_short(g->peak_dw, lab, sizeof(lab)) : "0");
                }
        if (window)
                fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#777\" "
                           "stroke-dasharray=\"6 4\"/><text x=\"%.0f\" y=\"%.1f\" fill=\"#555\">window %.0f MiB</text>\n",
                        L, Y2(window), W - R, Y2(window), W - R - 90, Y2(window) - 4, (double) window / MG_MIB);
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", L,
                T1, W - L - R, H1);
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", L,
                T2, W - L - R, H2);
        /* legend */
        static const char *const names[2] = { "memguard", "buffered" };
        for (uint32_t w = 0; w < 2; w++) {
                double y = T1 + 20 + w * 44;
                fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>"
                           "<text x=\"%.0f\" y=\"%.0f\">%s p99</text>\n",
                        W - R + 8, y, W - R + 34, y, color[w], W - R + 40, y + 4, names[w]);
                fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\" "
                           "stroke-dasharray=\"6 4\"/><text x=\"%.0f\" y=\"%.0f\">%s p50</text>\n",
                        W - R + 8, y + 18, W - R + 34, y + 18, color[w], W - R + 40, y + 22, names[w]);
                fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%.0f\" "
                           "y=\"%.0f\">%s</text>\n",
                        W - R + 8, T2 + 40 + w * 20, color[w], W - R + 26, T2 + 49 + w * 20, names[w]);
        }
        fprintf(f, "<path d=\"M%.0f %.0f l-5 -9 l10 0 z\" fill=\"black\"/><text x=\"%.0f\" y=\"%.0f\">chaos kill</text>\n",
                W - R + 20, T1 + 120, W - R + 30, T1 + 118);
#undef X
#undef Y1
#undef Y2
        fputs("</svg>\n", f);
        free(fig[0]);
        free(fig[1]);
        return close_file(f);
}
