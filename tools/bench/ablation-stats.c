/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The canaries' traces into figures, and the CSV line of a case
 * (ablation.h).  Percentiles are nearest-rank (with 300 requests in a
 * 30 s pressure phase, p99 is the third slowest); a request belongs to the
 * phase its scheduled start falls in.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablation.h"
#include "util.h"

const char *const abl_canary_names[ABL_CANARY_N] = { "compute", "sqlite" };

int abl_parse_trace(const char *text, struct abl_rec *recs, size_t max) {
        size_t n = 0;

        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                unsigned long long v[6];
                if (strncmp(p, "rec ", 4) != 0)
                        continue;
                /* NOLINTNEXTLINE(cert-err34-c): six counts, the count checked */
                if (sscanf(p + 4, "%llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
                        return -EBADMSG;
                if (n == max)
                        return -E2BIG;
                recs[n++] = (struct abl_rec) { .sched = v[0], .wake = v[1], .done = v[2], .majflt = v[3],
                                               .nvcsw = v[4], .nivcsw = v[5] };
        }
        return (int) n;
}

void abl_lat_compute(const struct abl_rec *recs, size_t n, uint64_t period_usec, uint64_t warm_from,
                     uint64_t pressure_from, uint64_t pressure_to, uint64_t rec_to, struct abl_lat *ret) {
        uint64_t *resp = calloc(n + 1, sizeof(uint64_t)), *wake = calloc(n + 1, sizeof(uint64_t));
        uint64_t *svc = calloc(n + 1, sizeof(uint64_t)), *warm = calloc(n + 1, sizeof(uint64_t));
        uint64_t *rec = calloc(n + 1, sizeof(uint64_t));
        size_t m = 0, nw = 0, nr = 0;
        const struct abl_rec *first = NULL, *last = NULL;

        memset(ret, 0, sizeof(*ret));
        if (!resp || !wake || !svc || !warm || !rec)
                goto out;
        for (size_t i = 0; i < n; i++) {
                const struct abl_rec *r = &recs[i];
                uint64_t rs = r->done > r->sched ? r->done - r->sched : 0;
                if (r->sched >= warm_from && r->sched < pressure_from)
                        warm[nw++] = rs;
                if (r->sched >= pressure_to && r->sched < rec_to)
                        rec[nr++] = rs;
                if (r->sched < pressure_from || r->sched >= pressure_to)
                        continue;
                if (!first)
                        first = i ? &recs[i - 1] : r;
                last = r;
                resp[m] = rs;
                wake[m] = r->wake > r->sched ? r->wake - r->sched : 0;
                svc[m] = r->done > r->wake ? r->done - r->wake : 0;
                ret->misses += r->done >= r->sched + period_usec;
                m++;
        }
        ret->n = (unsigned) m;
        ret->p50 = mg_percentile_u64(resp, m, 50);
        ret->p95 = mg_percentile_u64(resp, m, 95);
        ret->p99 = mg_percentile_u64(resp, m, 99);
        ret->wake50 = mg_percentile_u64(wake, m, 50);
        ret->wake95 = mg_percentile_u64(wake, m, 95);
        ret->wake99 = mg_percentile_u64(wake, m, 99);
        ret->svc50 = mg_percentile_u64(svc, m, 50);
        ret->svc95 = mg_percentile_u64(svc, m, 95);
        ret->svc99 = mg_percentile_u64(svc, m, 99);
        ret->warm_p99 = mg_percentile_u64(warm, nw, 99);
        ret->rec_p99 = mg_percentile_u64(rec, nr, 99);
        /* the counters after the request before the phase, to after its last */
        if (first && last && last->majflt >= first->majflt) {
                ret->majflt = last->majflt - first->majflt;
                ret->nvcsw = last->nvcsw - first->nvcsw;
                ret->nivcsw = last->nivcsw - first->nivcsw;
        }
out:
        free(resp);
        free(wake);
        free(svc);
        free(warm);
        free(rec);
}

void abl_csv_header(FILE *f) {
        fprintf(f, "mode,arm,regime,repeat,pos,kernel,contents,rate_mibps,status,warmup_s,pressure_s,recovery_s,"
                   "bg_limit_mib,dose_mib,fg_limit_mib,headroom_mib");
        for (int c = 0; c < ABL_CANARY_N; c++) {
                const char *n = abl_canary_names[c];
                fprintf(f,
                        ",%s_n,%s_p50_us,%s_p95_us,%s_p99_us,%s_wake_p50_us,%s_wake_p95_us,%s_wake_p99_us,"
                        "%s_service_p50_us,%s_service_p95_us,%s_service_p99_us,%s_misses,%s_warmup_p99_us,"
                        "%s_recovery_p99_us,%s_majflt,%s_nvcsw,%s_nivcsw",
                        n, n, n, n, n, n, n, n, n, n, n, n, n, n, n, n);
        }
        fprintf(f, ",psi_some_us,psi_full_us,fg_some_us,fg_full_us,refaults,pgscan_direct,pgsteal_direct,"
                   "pgscan_proactive,pgsteal_proactive,swapout_kib,swap_peak_kib,zram_orig_kib,zram_compr_kib,trigger_ms,doses,doses_counted,"
                   "dose_asked_kib,dose_achieved_kib,dose_max_us,dose_first_ms,dose_error,written_mib,"
                   "oom_kills,dry_kills\n");
}

void abl_csv_line(FILE *f, const struct abl_cfg *c, enum abl_arm arm, const struct abl_regime *g, unsigned repeat,
                  const struct abl_result *r) {
        fprintf(f,
                "%s,%s,%s,%u,%u,%s,%c,%" PRIu32 ",%s,%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%" PRIu64
                ",%" PRIu64 ",%" PRIu64,
                c->swapless ? "swapless" : "swap", abl_arm_names[arm], g->name, repeat, r->pos, c->kernel, g->contents,
                g->rate_mibps, r->status, c->warmup_s, c->pressure_s, c->recovery_s,
                c->swapless ? 0 : c->bg_limit_mib, c->swapless ? c->headroom_dose_mib : c->dose_mib,
                c->swapless ? c->fg_limit_mib : 0, c->swapless ? c->headroom_mib : 0);
        for (int k = 0; k < ABL_CANARY_N; k++) {
                const struct abl_lat *l = &r->lat[k];
                fprintf(f,
                        ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                        ",%" PRIu64 ",%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
                        l->n, l->p50, l->p95, l->p99, l->wake50, l->wake95, l->wake99, l->svc50, l->svc95, l->svc99,
                        l->misses, l->warm_p99, l->rec_p99, l->majflt, l->nvcsw, l->nivcsw);
        }
        fprintf(f,
                ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64
                ",%d,%" PRIu64 ",%" PRIu64 ",%u\n",
                r->psi_some_us, r->psi_full_us, r->fg_some_us, r->fg_full_us, r->refaults, r->pgscan_direct,
                r->pgsteal_direct, r->pgscan_proactive, r->pgsteal_proactive, r->swapout_kib, r->swap_peak_kib, r->zram_orig_kib, r->zram_compr_kib,
                r->trigger_ms, r->doses, r->doses_counted, r->dose_asked_kib, r->dose_achieved_kib, r->dose_max_us,
                r->dose_first_ms, r->dose_error, r->bg_written_mib, r->oom_kills, r->dry_kills);
        fflush(f);
}
