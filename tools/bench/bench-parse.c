/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-parse: the pure parts of a tick, no I/O: the parsers over
 * memory.stat buffers as 7.2 and 6.1 print them, the small files, the
 * policy's decision on a full ring; and the same memory.stat parsed the way
 * the baselines do (sscanf per line; memchr + strncmp + strtoull).
 *
 *   bench-parse [--iters N] [--rounds R]
 *
 * One "result" line per case: median ns per call over the rounds (each
 * round runs N calls, N = 200000 by default).  Under callgrind (tools/bench/run)
 * each case runs N calls once and is dumped as "parse:CASE".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "bench.h"
#include "parse.h"
#include "policy.h"

static volatile uint64_t sink;
static size_t len_7x, len_7x_captured, len_61; /* set in main(), outside the measure */

static const char psi_buf[] = "some avg10=1.23 avg60=0.45 avg300=0.10 total=123456789\n"
                              "full avg10=0.50 avg60=0.20 avg300=0.05 total=23456789\n";
static const char events_buf[] = "low 0\nhigh 1234\nmax 56\noom 0\noom_kill 0\noom_group_kill 0\n";
static const char current_buf[] = "268435456\n";

static void c_memstat_7x(void) {
        struct mg_memstat st;
        (void) mg_parse_memstat(bench_memstat_7x, len_7x, &st);
        sink += mg_used_bytes(&st);
}

/* The tick's parse of the same buffer, with the layout a full parse learnt. */
static struct mg_memstat_layout layout_7x, layout_61;

static void c_memstat_7x_tick(void) {
        struct mg_memstat st;
        (void) mg_parse_memstat_tick(bench_memstat_7x, len_7x, &layout_7x, &st);
        sink += mg_used_bytes(&st);
}

static void c_memstat_61_tick(void) {
        struct mg_memstat st;
        (void) mg_parse_memstat_tick(bench_memstat_61, len_61, &layout_61, &st);
        sink += mg_used_bytes(&st);
}

static void c_memstat_7x_captured(void) {
        struct mg_memstat st;
        (void) mg_parse_memstat(bench_memstat_7x_captured, len_7x_captured, &st);
        sink += mg_used_bytes(&st);
}

static void c_memstat_61(void) {
        struct mg_memstat st;
        (void) mg_parse_memstat(bench_memstat_61, len_61, &st);
        sink += mg_used_bytes(&st);
}

static void c_u64(void) {
        uint64_t v;
        (void) mg_parse_u64_value(current_buf, sizeof(current_buf) - 1, &v);
        sink += v;
}

static void c_psi(void) {
        struct mg_psi p;
        (void) mg_parse_psi(psi_buf, sizeof(psi_buf) - 1, &p);
        sink += p.some.total_usec;
}

static void c_events(void) {
        struct mg_mem_events e;
        (void) mg_parse_mem_events(events_buf, sizeof(events_buf) - 1, &e);
        sink += e.high;
}

/* The stdio baseline's parse, on the buffer: sscanf per line. */
static void c_base_sscanf_7x(void) {
        char key[64];
        uint64_t v, used = 0;

        for (const char *p = bench_memstat_7x; *p;) {
                const char *nl = strchr(p, '\n');
                /* NOLINTNEXTLINE(cert-err34-c): the stdio baseline's sscanf, measured on purpose */
                if (sscanf(p, "%63s %" SCNu64, key, &v) == 2 &&
                    (strcmp(key, "anon") == 0 || strcmp(key, "shmem") == 0 || strcmp(key, "kernel") == 0 ||
                     strcmp(key, "sock") == 0))
                        used += v;
                if (!nl)
                        break;
                p = nl + 1;
        }
        sink += used;
}

static void c_base_scan_7x(void) {
        sink += base_used_scan(bench_memstat_7x, len_7x);
}

/* The policy on a ring kept full of steady at-the-limit samples. */
static struct mg_policy_params params = {
        .limit_bytes = 256 * MG_MIB,
        .margin_bytes = 16 * MG_MIB,
        .line_bytes = 240 * MG_MIB,
        .stall_window_usec = 3000000,
        .stall_pressure_permyriad = 1000,
        .refault_window_usec = 20000000,
        .refault_mapped_window_usec = 12000000,
};
static struct mg_policy_state pstate;
static struct mg_sample psample = {
        .time_usec = 1000000,
        .current_bytes = 250 * MG_MIB,
        .used_bytes = 200 * MG_MIB,
        .have_events = true,
        .have_pressure = true,
        .high_bytes = UINT64_MAX,
};

static void c_policy_decide(void) {
        uint64_t stall;
        unsigned sig;
        psample.time_usec += 250000;
        sink += mg_policy_decide(&params, &pstate, &psample, &stall, &sig);
}

static void c_policy_fast(void) {
        sink += mg_policy_fast(&params, 16 * MG_MIB + sink % 2);
}

static const struct {
        const char *name;
        void (*fn)(void);
        const char *input; /* for the table's size column */
} cases[] = {
        { "memstat_7x", c_memstat_7x, bench_memstat_7x },
        { "memstat_7x_captured", c_memstat_7x_captured, bench_memstat_7x_captured },
        { "memstat_61", c_memstat_61, bench_memstat_61 },
        { "memstat_7x_tick", c_memstat_7x_tick, bench_memstat_7x },
        { "memstat_61_tick", c_memstat_61_tick, bench_memstat_61 },
        { "u64_value", c_u64, current_buf },
        { "psi", c_psi, psi_buf },
        { "mem_events", c_events, events_buf },
        { "policy_fast", c_policy_fast, "" },
        { "policy_decide", c_policy_decide, "" },
        { "baseline_sscanf_memstat_7x", c_base_sscanf_7x, bench_memstat_7x },
        { "baseline_scan_memstat_7x", c_base_scan_7x, bench_memstat_7x },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv) {
        uint64_t iters = 200000;
        unsigned rounds = 5;
        double ns[N_CASES][16];

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
                        iters = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
                        rounds = (unsigned) strtoul(argv[++i], NULL, 10);
                else {
                        fprintf(stderr, "usage: bench-parse [--iters N] [--rounds R (1-16)]\n");
                        return 2;
                }
        }
        if (rounds < 1 || rounds > 16 || iters == 0) {
                fprintf(stderr, "bench-parse: rounds must be 1-16 and iters > 0\n");
                return 2;
        }
        if (bench_under_valgrind())
                rounds = 1;
        setvbuf(stdout, NULL, _IOLBF, 0);

        len_7x = strlen(bench_memstat_7x);
        len_7x_captured = strlen(bench_memstat_7x_captured);
        len_61 = strlen(bench_memstat_61);
        struct mg_memstat st;
        if (mg_parse_memstat_keys(bench_memstat_7x, len_7x, &st, NULL, &layout_7x) < 0 ||
            mg_parse_memstat_keys(bench_memstat_61, len_61, &st, NULL, &layout_61) < 0 ||
            mg_parse_memstat_tick(bench_memstat_7x, len_7x, &layout_7x, &st) < 0 ||
            mg_parse_memstat_tick(bench_memstat_61, len_61, &layout_61, &st) < 0) {
                fprintf(stderr, "bench-parse: the memory.stat buffers do not parse\n");
                return 1;
        }
        /* A full ring, as after 16 s at the limit. */
        for (int i = 0; i < MG_POLICY_RING; i++)
                c_policy_decide();

        printf("env bench=parse iters=%" PRIu64 " rounds=%u callgrind=%d\n", iters, rounds, bench_under_valgrind());
        for (unsigned r = 0; r < rounds; r++) {
                for (size_t c = 0; c < N_CASES; c++) {
                        uint64_t t0 = mg_mono_nsec();
                        bench_cg_on();
                        for (uint64_t i = 0; i < iters; i++)
                                cases[c].fn();
                        bench_cg_off();
                        ns[c][r] = (double) (mg_mono_nsec() - t0) / (double) iters;
                        if (bench_under_valgrind()) {
                                char name[64];
                                snprintf(name, sizeof(name), "parse:%s", cases[c].name);
                                bench_cg_dump(name);
                        }
                }
        }
        for (size_t c = 0; c < N_CASES; c++)
                printf("result bench=parse case=%s bytes=%zu iters=%" PRIu64 " ns_per_call=%.1f\n", cases[c].name,
                       strlen(cases[c].input), iters, bench_median(ns[c], rounds));
        return 0;
}
