/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a run measured: per-slot percentile tables on stdout, the samples as
 * CSV and JSON, and a latency-over-time SVG (hand-written, no dependency).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../memguard/json.h"
#include "burnin.h"
#include "memguard/snapshot.h"

enum { PH_WRITE, PH_SYNC, PH_TEARDOWN, PH_RESTORE, PH_TOTAL, N_PHASES };
static const char *const phase_names[N_PHASES] = { "write", "sync", "teardown", "restore", "total" };

static uint64_t phase(const struct bi_sample *x, int p) {
        switch (p) {
        case PH_WRITE:
                return x->write_usec;
        case PH_SYNC:
                return x->sync_usec;
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

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* Nearest rank over n sorted values. */
static uint64_t pct(const uint64_t *v, size_t n, unsigned p) {
        size_t rank = (n * p + 99) / 100;
        return v[rank ? rank - 1 : 0];
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
        printf("\nwriter %s: %zu cycles; ms per phase (total = write call + teardown + restore + check)\n",
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
                        qsort(v, n, sizeof(*v), cmp_u64);
                        printf("%-13s %-9s %5zu %8.1f %8.1f %8.1f %8.1f\n", p == 0 ? label : "", phase_names[p], n,
                               (double) pct(v, n, 50) / 1e3, (double) pct(v, n, 90) / 1e3,
                               (double) pct(v, n, 99) / 1e3, (double) v[n - 1] / 1e3);
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

static int close_file(FILE *f) {
        int bad = ferror(f);
        if (fclose(f) != 0 || bad)
                return -EIO;
        return 0;
}

#define CSV_FIELDS(X) \
        X(lend_begin_usec) X(write_usec) X(sync_usec) X(reclaim_usec) X(lend_end_usec) X(publish_usec) \
        X(snapshot_usec) X(teardown_usec) X(restore_usec) X(downtime_usec) X(work_usec) X(peak_dirty_bytes) \
        X(window_bytes)

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
#define ROW(n) fprintf(f, ",%" PRIu64, x->n);
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
#define JS(n) mgt_json_u64(&j, #n, x->n);
                CSV_FIELDS(JS)
                mgt_json_str(&j, "what", x->what[0] ? x->what : NULL);
                const char *text = mgt_json_end(&j);
                fprintf(f, "%s\n%s", i ? "," : "", text ? text : "null");
                mgt_json_free(&j);
        }
        fputs("]}\n", f);
        return close_file(f);
}

/* Latency over time: one dot per cycle for the write call and the restore,
 * per writer; slot boundaries as grid lines. */
int bi_write_svg(const struct bi_run *r, const char *path) {
        static const char *const colors[2][2] = { { "#1f77b4", "#2ca02c" }, { "#d62728", "#ff7f0e" } };
        const double W = 900, H = 420, L = 70, R = 20, T = 30, B = 50;
        uint64_t tmax = r->slot_usec, ymax = 1000;
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        for (size_t i = 0; i < r->n; i++) {
                const struct bi_sample *x = &r->samples[i];
                if (x->end_usec - r->start_usec > tmax)
                        tmax = x->end_usec - r->start_usec;
                if (x->snapshot_usec > ymax)
                        ymax = x->snapshot_usec;
                if (x->restore_usec > ymax)
                        ymax = x->restore_usec;
        }
        ymax = ymax + ymax / 10;
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                   "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
        fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
        fprintf(f, "<text x=\"%.0f\" y=\"18\">memguard-burnin: snapshot write and restore latency (ms) over time "
                   "(s)</text>\n", L);
        for (int k = 0; k <= 5; k++) {
                double y = T + (H - T - B) * (1 - k / 5.0);
                fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                           "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n",
                        L, y, W - R, y, L - 6, y + 4, (double) ymax * k / 5 / 1e3);
        }
        for (uint64_t t = 0; t <= tmax; t += r->slot_usec) {
                double x = L + (W - L - R) * (double) t / (double) tmax;
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eee\"/>"
                           "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n",
                        x, T, x, H - B, x, H - B + 16, (double) t / 1e6);
        }
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n",
                L, T, W - L - R, H - T - B);
        for (size_t i = 0; i < r->n; i++) {
                const struct bi_sample *x = &r->samples[i];
                double px = L + (W - L - R) * (double) (x->end_usec - r->start_usec) / (double) tmax;
                uint64_t v[2] = { x->snapshot_usec, x->restore_usec };
                for (int k = 0; k < 2; k++) {
                        if (v[k] == 0)
                                continue;
                        double py = T + (H - T - B) * (1 - (double) v[k] / (double) ymax);
                        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"%s/>\n", px, py,
                                colors[x->writer & 1][k], x->flags ? " stroke=\"black\"" : "");
                }
        }
        static const char *const labels[2][2] = { { "memguard write", "memguard restore" },
                                                  { "buffered write", "buffered restore" } };
        for (int w = 0, row = 0; w < 2; w++)
                for (int k = 0; k < 2; k++, row++)
                        fprintf(f, "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"4\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s"
                                   "</text>\n",
                                L + 10 + row * 190.0, H - 14, colors[w][k], L + 18 + row * 190.0, H - 10,
                                labels[w][k]);
        fputs("</svg>\n", f);
        return close_file(f);
}
