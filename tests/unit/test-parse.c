/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "policy.h"

#define S(lit) lit, sizeof(lit) - 1

/* memory.stat as Debian's 6.1 prints it (abridged only in the middle). */
static const char stat_61[] =
        "anon 104857600\nfile 52428800\nkernel 3145728\nkernel_stack 65536\npagetables 360448\n"
        "sec_pagetables 0\npercpu 0\nsock 4096\nvmalloc 0\nshmem 8192\nzswap 0\nzswapped 0\n"
        "file_mapped 1048576\nfile_dirty 2097152\nfile_writeback 1048576\nswapcached 0\nanon_thp 0\n"
        "file_thp 0\nshmem_thp 0\ninactive_anon 104857600\nactive_anon 8192\ninactive_file 50000000\n"
        "active_file 2428800\nunevictable 0\nslab_reclaimable 100000\nslab_unreclaimable 200000\n"
        "slab 300000\nworkingset_refault_anon 0\nworkingset_refault_file 1234\n"
        "workingset_activate_anon 0\nworkingset_activate_file 12\nworkingset_restore_anon 0\n"
        "workingset_restore_file 3\nworkingset_nodereclaim 0\npgscan 999\npgsteal 888\n"
        "pgscan_kswapd 0\npgscan_direct 999\npgfault 5000\npgmajfault 7\nthp_fault_alloc 0\n";

Test(memstat, kernel_61) {
        struct mg_memstat st;
        cr_assert_eq(mg_parse_memstat(stat_61, strlen(stat_61), &st), 0);
        cr_expect_eq(st.anon, 104857600);
        cr_expect_eq(st.file, 52428800);
        cr_expect_eq(st.kernel, 3145728);
        cr_expect_eq(st.sock, 4096);
        cr_expect_eq(st.shmem, 8192);
        cr_expect_eq(st.file_dirty, 2097152);
        cr_expect_eq(st.file_writeback, 1048576);
        cr_expect_eq(st.workingset_refault_file, 1234);
        cr_expect_eq(st.pgscan, 999);
        cr_expect_eq(st.pgsteal, 888);
        cr_expect_eq(st.pgmajfault, 7);
        cr_expect_not(st.kernel_derived);
}

/* The tick's parse agrees with the full one on the keys it reads. */
static void expect_tick_fields(const struct mg_memstat *a, const struct mg_memstat *b) {
        cr_expect_eq(a->anon, b->anon);
        cr_expect_eq(a->shmem, b->shmem);
        cr_expect_eq(a->kernel, b->kernel);
        cr_expect_eq(a->sock, b->sock);
        cr_expect_eq(a->workingset_restore_anon, b->workingset_restore_anon);
        cr_expect_eq(a->workingset_restore_file, b->workingset_restore_file);
        cr_expect_eq(a->file, b->file);
        cr_expect_eq(a->file_mapped, b->file_mapped);
        cr_expect_eq(a->workingset_refault_file, b->workingset_refault_file);
        cr_expect_eq(a->pgmajfault, b->pgmajfault);
        cr_expect_eq(a->pgsteal, b->pgsteal);
        cr_expect_eq(a->file_dirty, b->file_dirty);
        cr_expect_eq(a->file_writeback, b->file_writeback);
        cr_expect_eq(a->kernel_derived, b->kernel_derived);
        cr_expect_eq(mg_used_bytes(a), mg_used_bytes(b));
}

Test(memstat_tick, learns_and_reads_only_what_it_needs) {
        struct mg_memstat_layout l = {};
        struct mg_memstat full, tick;
        uint64_t keys;

        cr_expect_eq(mg_parse_memstat_tick(stat_61, strlen(stat_61), &l, &tick), -ESTALE, "nothing learnt yet");
        cr_assert_eq(mg_parse_memstat_keys(stat_61, strlen(stat_61), &full, &keys, &l), 0);
        cr_expect_eq(l.n, 13, "anon kernel sock shmem, the two restores, file file_mapped refault_file, "
                              "pgmajfault pgsteal file_dirty file_writeback");
        cr_assert_eq(mg_parse_memstat_tick(stat_61, strlen(stat_61), &l, &tick), 0);
        expect_tick_fields(&tick, &full);
        cr_expect_eq(tick.active_file, 0, "lines it steps over are not read");
        cr_expect_eq(tick.pgfault, 0);
}

Test(memstat_tick, derives_kernel_before_5_18) {
        static const char s[] = "anon 100\nfile 200\nkernel_stack 10\npagetables 20\npercpu 30\nsock 5\n"
                                "shmem 1\nslab_reclaimable 40\nslab_unreclaimable 60\nslab 100\n"
                                "workingset_restore_file 9\n";
        struct mg_memstat_layout l = {};
        struct mg_memstat full, tick;
        cr_assert_eq(mg_parse_memstat_keys(S(s), &full, NULL, &l), 0);
        cr_assert_eq(mg_parse_memstat_tick(S(s), &l, &tick), 0);
        cr_expect(tick.kernel_derived);
        cr_expect_eq(tick.kernel, 10 + 20 + 30 + 100);
        expect_tick_fields(&tick, &full);
}

Test(memstat_tick, values_change_lines_stay) {
        static const char a[] = "anon 1\nfile 2\nkernel 3\nsock 4\nshmem 5\nworkingset_restore_file 6\n";
        static const char b[] = "anon 1000000\nfile 2\nkernel 30\nsock 4000\nshmem 5\nworkingset_restore_file 66\n";
        struct mg_memstat_layout l = {};
        struct mg_memstat full, tick;
        cr_assert_eq(mg_parse_memstat_keys(S(a), &full, NULL, &l), 0);
        cr_assert_eq(mg_parse_memstat_tick(S(b), &l, &tick), 0);
        cr_assert_eq(mg_parse_memstat(S(b), &full), 0);
        expect_tick_fields(&tick, &full);
}

Test(memstat_tick, another_layout_is_stale) {
        static const char a[] = "anon 1\nfile 2\nkernel 3\nsock 4\nshmem 5\nworkingset_restore_file 6\n";
        struct mg_memstat_layout l = {};
        struct mg_memstat st = { .anon = 77 };
        cr_assert_eq(mg_parse_memstat_keys(S(a), &st, NULL, &l), 0);
        st.anon = 77;
        /* a line more above a key, a key gone, a read cut at a line end */
        cr_expect_eq(mg_parse_memstat_tick(S("new_key 0\nanon 1\nfile 2\nkernel 3\nsock 4\nshmem 5\n"
                                             "workingset_restore_file 6\n"), &l, &st), -ESTALE);
        cr_expect_eq(mg_parse_memstat_tick(S("anon 1\nfile 2\nkernel 3\nsock 4\nshmem 5\nworkingset_x 6\n"),
                                           &l, &st), -ESTALE);
        cr_expect_eq(mg_parse_memstat_tick(S("anon 1\nfile 2\nkernel 3\n"), &l, &st), -ESTALE);
        cr_expect_eq(mg_parse_memstat_tick(S("anon 1\nfile 2\nkernel 3\nsockets 4\nshmem 5\n"
                                             "workingset_restore_file 6\n"), &l, &st), -ESTALE);
        /* the lines it reads are checked as the full parse checks them */
        cr_expect_eq(mg_parse_memstat_tick(S("anon 1x\nfile 2\nkernel 3\nsock 4\nshmem 5\n"
                                             "workingset_restore_file 6\n"), &l, &st), -EBADMSG);
        cr_expect_eq(mg_parse_memstat_tick(S("anon 99999999999999999999\nfile 2\nkernel 3\nsock 4\n"
                                             "shmem 5\nworkingset_restore_file 6\n"), &l, &st), -EBADMSG);
        cr_expect_eq(mg_parse_memstat_tick(S("anon 1\nfile 2\nkernel 3\nsock 4\nshmem 5\n"
                                             "workingset_restore_file 6"), &l, &st), -EBADMSG);
        cr_expect_eq(st.anon, 77, "ret untouched on failure");
        cr_expect_eq(mg_parse_memstat_tick(NULL, 0, &l, &st), -EINVAL);
}

Test(memstat, kernel_derived_on_old_kernels) {
        /* 5.10 has no "kernel" key: it is the sum of the kmem parts. */
        static const char s[] = "anon 100\nfile 200\nkernel_stack 10\npagetables 20\npercpu 30\nsock 5\n"
                                "shmem 1\nslab_reclaimable 40\nslab_unreclaimable 60\nslab 100\n";
        struct mg_memstat st;
        cr_assert_eq(mg_parse_memstat(S(s), &st), 0);
        cr_expect(st.kernel_derived);
        cr_expect_eq(st.kernel, 10 + 20 + 30 + 100);
}

Test(memstat, unknown_keys_tolerated) {
        static const char s[] = "anon 1\nsomething_new_in_8_0 42\nkernel 2\nzzz 3\n";
        struct mg_memstat st;
        cr_assert_eq(mg_parse_memstat(S(s), &st), 0);
        cr_expect_eq(st.anon, 1);
        cr_expect_eq(st.kernel, 2);
}

Test(memstat, hostile) {
        static const struct {
                const char *in;
                const char *why;
        } bad[] = {
                { "", "empty" },
                { "anon 1", "truncated: no final newline" },
                { "anon 1\nfile 2", "truncated mid file" },
                { "anon 1\nanon 2\n", "duplicate key" },
                { "anon -1\n", "negative" },
                { "anon 1x\n", "trailing garbage" },
                { "anon  1\n", "two spaces" },
                { "anon\n", "no value" },
                { " 1\n", "no key" },
                { "Anon 1\n", "upper case key" },
                { "anon 18446744073709551616\n", "u64 overflow" },
                { "anon 1\n\n", "empty line" },
                { "file 1\n", "no anon line" },
                { "anon 1\0\n", "NUL inside" },
        };
        struct mg_memstat st = { .anon = 77 };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                size_t len = strlen(bad[i].in);
                if (i == 13)
                        len = 8;
                cr_expect_eq(mg_parse_memstat(bad[i].in, len, &st), -EBADMSG, "%s", bad[i].why);
        }
        cr_expect_eq(st.anon, 77, "ret written on failure");
}

Test(memstat, overlong_line) {
        char buf[600];
        memset(buf, 'a', sizeof(buf));
        /* bytes into a buffer that is not a string (length given below) */
        memcpy(buf, "anon 1\nx", 8);             /* NOLINT(bugprone-not-null-terminated-result) */
        memcpy(buf + sizeof(buf) - 4, " 1\n", 3); /* NOLINT(bugprone-not-null-terminated-result) */
        struct mg_memstat st;
        cr_expect_eq(mg_parse_memstat(buf, sizeof(buf) - 1, &st), -EBADMSG);
}

Test(memstat, max_u64) {
        static const char s[] = "anon 18446744073709551615\n";
        struct mg_memstat st;
        cr_assert_eq(mg_parse_memstat(S(s), &st), 0);
        cr_expect_eq(st.anon, UINT64_MAX);
}

Test(u64, values) {
        uint64_t v;
        cr_expect_eq(mg_parse_u64_value(S("max\n"), &v), 0);
        cr_expect_eq(v, MG_UNLIMITED);
        cr_expect_eq(mg_parse_u64_value(S("268435456\n"), &v), 0);
        cr_expect_eq(v, 268435456);
        cr_expect_eq(mg_parse_u64_value(S("0"), &v), 0);
        cr_expect_eq(v, 0);
        cr_expect_eq(mg_parse_u64_value(S(""), &v), -EBADMSG);
        cr_expect_eq(mg_parse_u64_value(S("\n"), &v), -EBADMSG);
        cr_expect_eq(mg_parse_u64_value(S("maxx\n"), &v), -EBADMSG);
        cr_expect_eq(mg_parse_u64_value(S("12 \n"), &v), -EBADMSG);
        cr_expect_eq(mg_parse_u64_value(S("12\n\n"), &v), -EBADMSG);
        cr_expect_eq(mg_parse_u64_value(S("99999999999999999999\n"), &v), -EBADMSG);
        cr_expect_eq(mg_parse_u64_value(S("-1\n"), &v), -EBADMSG);
}

/* Eight digits at a time, then one by one: every length up to the longest
 * value, a non-digit at every place of it, and the largest u64 and one
 * past it, against strtoull. */
Test(u64, every_length_and_place) {
        char buf[32];
        uint64_t v;

        for (size_t len = 1; len <= 20; len++) {
                for (size_t i = 0; i < len; i++)
                        buf[i] = (char) ('0' + (len * 7 + i * 3) % 10);
                if (len == 20)
                        buf[0] = '1';
                buf[len] = '\n';
                cr_expect_eq(mg_parse_u64_value(buf, len + 1, &v), 0, "%zu digits", len);
                buf[len] = '\0';
                cr_expect_eq(v, strtoull(buf, NULL, 10), "%s", buf);
                for (size_t bad = 0; bad < len; bad++) {
                        char keep = buf[bad];
                        /* a newline only where it is not the last byte,
                         * which ends the value */
                        static const char nondigits[] = { '/', ':', 'a', ' ', '\0', '\n' };
                        for (size_t c = 0; c < sizeof(nondigits) - (bad + 1 == len); c++) {
                                buf[bad] = nondigits[c];
                                cr_expect_eq(mg_parse_u64_value(buf, len, &v), -EBADMSG, "%zu digits, byte %zu is %d",
                                             len, bad, nondigits[c]);
                        }
                        buf[bad] = keep;
                }
        }
        cr_expect_eq(mg_parse_u64_value(S("18446744073709551615\n"), &v), 0);
        cr_expect_eq(v, UINT64_MAX);
        cr_expect_eq(mg_parse_u64_value(S("18446744073709551616\n"), &v), -EBADMSG);
        cr_expect_eq(mg_parse_u64_value(S("000000000000000000000042\n"), &v), 0, "leading zeros: long, no overflow");
        cr_expect_eq(v, 42);
}

Test(psi, some_and_full) {
        static const char s[] = "some avg10=12.34 avg60=0.50 avg300=100.00 total=123456789\n"
                                "full avg10=0.00 avg60=0.00 avg300=0.00 total=42\n";
        struct mg_psi p;
        cr_assert_eq(mg_parse_psi(S(s), &p), 0);
        cr_expect_eq(p.some.avg10_centipct, 1234);
        cr_expect_eq(p.some.avg60_centipct, 50);
        cr_expect_eq(p.some.avg300_centipct, 10000);
        cr_expect_eq(p.some.total_usec, 123456789);
        cr_expect(p.has_full);
        cr_expect_eq(p.full.total_usec, 42);
}

Test(psi, full_missing) {
        static const char s[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n";
        struct mg_psi p;
        cr_assert_eq(mg_parse_psi(S(s), &p), 0);
        cr_expect_not(p.has_full);
        cr_expect_eq(p.some.total_usec, 7);
}

Test(psi, hostile) {
        static const char *bad[] = {
                "",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=7",
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n",
                "some avg10=0.0 avg60=0.00 avg300=0.00 total=7\n",
                "some avg10=101.00 avg60=0.00 avg300=0.00 total=7\n",
                "some avg10=0.00 avg60=0.00 total=7\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=7\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\nx",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=99999999999999999999\n",
        };
        struct mg_psi p;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_eq(mg_parse_psi(bad[i], strlen(bad[i]), &p), -EBADMSG, "case %zu", i);
}

Test(events, all_and_some) {
        static const char s[] = "low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\noom_group_kill 6\n";
        struct mg_mem_events e;
        cr_assert_eq(mg_parse_mem_events(S(s), &e), 0);
        cr_expect(e.low == 1 && e.high == 2 && e.max == 3 && e.oom == 4 && e.oom_kill == 5 && e.oom_group_kill == 6);
        /* 5.x kernels have no oom_group_kill; sock_throttled is new in 6.x */
        static const char s2[] = "low 0\nhigh 17\nmax 0\noom 0\noom_kill 0\nsock_throttled 3\n";
        cr_assert_eq(mg_parse_mem_events(S(s2), &e), 0);
        cr_expect_eq(e.high, 17);
        cr_expect_eq(e.oom_group_kill, 0);
        cr_expect_eq(mg_parse_mem_events(S("high 1\nhigh 2\n"), &e), -EBADMSG);
        cr_expect_eq(mg_parse_mem_events(S("high 1"), &e), -EBADMSG);
}

Test(cgroup_events, populated) {
        int p;
        cr_assert_eq(mg_parse_populated(S("populated 1\nfrozen 0\n"), &p), 0);
        cr_expect_eq(p, 1);
        cr_assert_eq(mg_parse_populated(S("populated 0\nfrozen 1\n"), &p), 0);
        cr_expect_eq(p, 0);
        cr_expect_eq(mg_parse_populated(S("frozen 0\n"), &p), -EBADMSG);
        cr_expect_eq(mg_parse_populated(S("populated 2\n"), &p), -EBADMSG);
}

Test(cpu_stat, usage) {
        uint64_t u;
        cr_assert_eq(mg_parse_cpu_usage(S("usage_usec 123\nuser_usec 100\nsystem_usec 23\nnr_periods 0\n"), &u), 0);
        cr_expect_eq(u, 123);
        cr_expect_eq(mg_parse_cpu_usage(S("user_usec 100\n"), &u), -EBADMSG);
        cr_expect_eq(mg_parse_cpu_usage(S("usage_usec 1\nusage_usec 2\n"), &u), -EBADMSG);
}

Test(procs, list) {
        struct mg_procs a, b, c;
        cr_assert_eq(mg_parse_procs(S("12\n345\n"), &a), 0);
        cr_expect_eq(a.n, 2);
        cr_expect_eq(a.pid[0], 12);
        cr_expect_eq(a.pid[1], 345);
        cr_assert_eq(mg_parse_procs(S("345\n12\n"), &b), 0);
        cr_expect_eq(a.digest, b.digest, "the same set in another order");
        cr_assert_eq(mg_parse_procs(S("12\n346\n"), &c), 0);
        cr_expect_neq(a.digest, c.digest);
        /* a plain sum would not tell these apart: 1 + 4 == 2 + 3 */
        cr_assert_eq(mg_parse_procs(S("1\n4\n"), &b), 0);
        cr_assert_eq(mg_parse_procs(S("2\n3\n"), &c), 0);
        cr_expect_neq(b.digest, c.digest);
        cr_assert_eq(mg_parse_procs(S(""), &a), 0);
        cr_expect_eq(a.n, 0);
        cr_assert_eq(mg_parse_procs(S("2147483647\n"), &a), 0);
        cr_expect_eq(a.pid[0], INT32_MAX);

        char many[256];
        size_t n = 0;
        for (int i = 1; i <= 20; i++)
                n += (size_t) snprintf(many + n, sizeof(many) - n, "%d\n", 100 + i);
        cr_assert_eq(mg_parse_procs(many, n, &a), 0);
        cr_expect_eq(a.n, 20, "all counted");
        cr_expect_eq(a.pid[MG_PROCS_KEEP - 1], 100 + MG_PROCS_KEEP, "the first %d kept", MG_PROCS_KEEP);
}

Test(procs, hostile) {
        static const char *const bad[] = { "12", "0\n", "012\n", "-1\n", "+1\n", "2147483648\n",
                                           "99999999999999999999999\n", "12 \n", " 12\n", "\n", "12\n\n",
                                           "a\n", "12\n13" };
        struct mg_procs p = { .n = 77 };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_eq(mg_parse_procs(bad[i], strlen(bad[i]), &p), -EBADMSG, "accepted \"%s\"", bad[i]);
        cr_expect_eq(p.n, 77, "written on failure");
        cr_expect_eq(mg_parse_procs(NULL, 1, &p), -EINVAL);
}

Test(proc_stat, state) {
        char st = 0;
        cr_assert_eq(mg_parse_proc_stat_state(S("1234 (bash) S 1 1234 1234 0 -1 4194560 100"), &st), 0);
        cr_expect_eq(st, 'S');
        cr_assert_eq(mg_parse_proc_stat_state(S("77 (dd) D 1 77 77 0\n"), &st), 0);
        cr_expect_eq(st, 'D');
        /* the process names itself: earlyoom's "foo) Z ", a newline, parentheses */
        cr_assert_eq(mg_parse_proc_stat_state(S("1234 (foo) Z ) R 1 2 3"), &st), 0);
        cr_expect_eq(st, 'R', "took %c from the name", st);
        cr_assert_eq(mg_parse_proc_stat_state(S("5 (a\nb) D 0"), &st), 0);
        cr_expect_eq(st, 'D');
        cr_assert_eq(mg_parse_proc_stat_state(S("5 ((x) (y)) t 0"), &st), 0);
        cr_expect_eq(st, 't');
        cr_assert_eq(mg_parse_proc_stat_state(S("6 () I 0"), &st), 0);
        cr_expect_eq(st, 'I');
        /* the start of the file is enough: 4194304, a 15-byte name, the state */
        cr_assert_eq(mg_parse_proc_stat_state(S("4194304 ()))))))))))))))) D "), &st), 0);
        cr_expect_eq(st, 'D');
}

Test(proc_stat, hostile) {
        static const char *const bad[] = { "", "1234", "1234 (bash)", "1234 (bash) S", "1234 (bash) 5 1",
                                           "bash (bash) S 1", "(bash) S 1", "1234 bash S 1", "1234  (bash) S 1",
                                           "1234 (bash)S 1", "1234 (bash) SS 1", "1234 (bash) ) 1" };
        char st = 'x';
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_eq(mg_parse_proc_stat_state(bad[i], strlen(bad[i]), &st), -EBADMSG, "accepted \"%s\"",
                             bad[i]);
        cr_expect_eq(st, 'x', "written on failure");
}

Test(args, null) {
        struct mg_memstat st;
        cr_expect_eq(mg_parse_memstat(NULL, 0, &st), -EBADMSG);
        cr_expect_eq(mg_parse_memstat(S("anon 1\n"), NULL), -EINVAL);
        cr_expect_eq(mg_parse_u64_value(NULL, 0, NULL), -EINVAL);
}
